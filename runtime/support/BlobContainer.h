//===- BlobContainer.h - the versioned, checksummed blob envelope -*- C++ -*-===//
//
// Every EPContext blob ortc writes has the same envelope, whatever the EP:
//
//   offset 0   magic "ORTCBLOB" (8 bytes)
//          8   container version (u32, little endian), section count (u32)
//         16   total size in bytes (u64)
//         24   checksum (u64), over the blob with these 8 bytes read as zero:
//              version 2, XXH3-64 of a list of little-endian u64 leaves, the
//              XXH3-64 of the 32-byte header and then of each 1 MiB chunk of
//              the bytes after it (the last chunk shorter); version 1, which
//              is still read, XXH3-64 of the whole blob
//         32   section directory: per section tag (4 chars), alignment (u16),
//              flags (u16), offset (u64), size (u64); versions 1 and 2 have no
//              flags and read the four bytes after the tag as the alignment
//   then the sections, each at an offset that is a multiple of its alignment.
//
// The one flag, "read sparsely" (kBlobSectionReadSparsely), marks a section
// whose bytes are read a few at a time, a table gathered row by row: a loader
// that uses a file's map in place gives its pages back as soon as the
// checksum has hashed them (openBlob() with BlobBacking::ReadOnlyFileMapping),
// so that the load never holds it whole and a run maps back only the rows it
// reads; and writers store it in small pieces (blobWritePieces()), because
// the kernel maps a page-cache folio whole on a fault and a file written in
// one piece may be cached in folios of MiBs. (Hashing the section from the
// file with pread() instead, which maps nothing, was slower: 25 against 15 ms
// for GPT-2's 157 MB table, AMD EPYC, one thread.)
//
// An EP defines its own sections (the CPU EP: "META" a FlatBuffer plan, "CODE"
// a shared object, "WGHT" the packed weights). openBlob() verifies everything
// the envelope promises before it hands out a byte: size, magic, version,
// checksum, and that every section lies inside the blob, aligned and
// overlapping no other. Section offsets are relative to the blob's start, so a
// blob mapped at a page boundary keeps its 64-byte aligned sections aligned.
//
// The chunks of version 2 hash independently, so a loader verifies a blob of
// hundreds of MiB on all the threads it has (ParallelChunks): the checksum is
// most of a load's time, and one core reads memory at a fraction of what two
// do.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SUPPORT_BLOBCONTAINER_H
#define ORTC_RUNTIME_SUPPORT_BLOBCONTAINER_H

#include "runtime/ep/Status.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ortc {

/// The version writeBlob() writes; openBlob() reads it and every older one.
constexpr uint32_t kBlobContainerVersion = 3;
constexpr uint32_t kOldestBlobContainerVersion = 1;

/// The bytes one leaf of a version 2 checksum covers.
constexpr size_t kBlobChecksumChunk = size_t(1) << 20;

/// Calls body(i) for every i in [0, count), in any order and on any threads,
/// and returns when every call has returned: how a loader lends its threads to
/// verifying a blob. An empty one runs them in order on the caller.
using ParallelChunks = std::function<void(size_t count, const std::function<void(size_t)> &body)>;

/// Section flags (version 3 on).
enum : uint16_t {
  /// Read a few bytes at a time (rows of a gathered table); see above.
  kBlobSectionReadSparsely = 1,
};

struct BlobSection {
  std::string tag; // exactly four characters
  uint32_t alignment = 64;
  const char *data = nullptr; // writer: the bytes to copy; reader: into the blob
  size_t size = 0;
  uint16_t flags = 0;
};

/// Lays the sections out in order, each at its alignment, and fills in the
/// checksum. Tags must be four characters and distinct; alignments powers of
/// two no larger than 4096.
Result<std::vector<char>> writeBlob(const std::vector<BlobSection> &sections);

/// The bytes before the first section of a blob that writeBlobAround() writes:
/// a page, room for the header and a directory of up to 169 sections.
constexpr size_t kBlobHeadRoom = 4096;

/// writeBlob() for a blob whose first section the caller has laid down in
/// place: `storage` holds kBlobHeadRoom bytes (any values) and then section
/// 0's bytes (sections[0].data and .size are taken from there). The other sections are appended and
/// the header and directory written over the head room, so the first section, hundreds of MiB of
/// weights, is never copied (unless storage must grow to hold the rest: reserve room for them).
Result<std::vector<char>> writeBlobAround(std::vector<char> storage,
                                          std::vector<BlobSection> sections);

/// A verified view of a blob; the sections point into the caller's bytes,
/// which must outlive it.
struct BlobView {
  uint32_t version = 0;
  std::vector<BlobSection> sections;

  /// The section with `tag`, or nullptr.
  const BlobSection *find(const std::string &tag) const;
};

/// What the bytes handed to openBlob() are.
enum class BlobBacking {
  Memory,
  /// A read-only map of a file that stays unchanged while it is used: pages
  /// given back (madvise) come back from the file when next read.
  ReadOnlyFileMapping,
};

/// Verifies and opens `size` bytes at `data`. `what` names the blob in errors
/// ("partition cpu_ep_p0 (model_ctx_cpu_ep.bin)"). Refuses, with one line
/// saying what is wrong: a blob shorter than its header or than its declared
/// size, a wrong magic, an unknown version, a checksum mismatch, a section out
/// of bounds, misaligned relative to the blob, overlapping another, or with
/// unknown flags. `parallel` spreads the checksum over the caller's threads.
/// With a file mapping, the pages of sections read sparsely are given back
/// as soon as their chunk is hashed, so that the peak RSS never holds them.
Result<BlobView> openBlob(const char *data, size_t size, const std::string &what,
                          const ParallelChunks &parallel = {},
                          BlobBacking backing = BlobBacking::Memory);

/// The pieces [offset, offset + length) to write a blob's `size` bytes in,
/// in order: sections read sparsely in 64 KiB pieces on 64 KiB file offsets
/// (so that the page cache holds them in folios no larger), the rest in as
/// few pieces as there are. Bytes that are no blob are one piece.
std::vector<std::pair<size_t, size_t>> blobWritePieces(const char *data, size_t size);

/// What a blob's header and section directory say, read without trusting
/// them: `ortc inspect` shows a corrupted blob instead of refusing it.
struct BlobDescription {
  struct Section {
    std::string tag; // as printed: the four characters, or 0x<hex> if unprintable
    uint32_t alignment = 0;
    uint16_t flags = 0;
    uint64_t offset = 0;
    uint64_t size = 0;
  };
  uint32_t version = 0;
  uint64_t declaredSize = 0; // the header's total size; the blob may differ
  uint64_t storedChecksum = 0;
  uint64_t computedChecksum = 0; // over the bytes as they are
  std::vector<Section> sections;

  bool checksumMatches() const { return storedChecksum == computedChecksum; }
};

/// Reads the header and directory of `size` bytes at `data`, checking only
/// what reading them needs: refuses (one line, prefixed by `what`) a blob
/// shorter than its header, a wrong magic, or a directory that runs past the
/// end. Everything else, the checksum included, is for the caller to judge
/// (openBlob() verifies it all).
Result<BlobDescription> describeBlob(const char *data, size_t size, const std::string &what);

/// XXH3-64 of a byte range (exposed for tests and for `ortc inspect`).
uint64_t blobChecksum(const char *data, size_t size);

/// The checksum the header of the `size` bytes at `data` (at least the 32 of
/// the header) should hold: by the version the header names (version 1's
/// for version 1, else version 2's), with the checksum field read as zero.
uint64_t blobEnvelopeChecksum(const char *data, size_t size, const ParallelChunks &parallel = {});

/// Fresh memory that holds a copy of a blob: page aligned (so every section
/// keeps its alignment), on 2 MiB boundaries and advised for transparent huge
/// pages when the blob is at least that large. Move-only; unmapped when
/// destroyed.
class OwnedBlobBytes {
public:
  OwnedBlobBytes() = default;
  ~OwnedBlobBytes();
  OwnedBlobBytes(OwnedBlobBytes &&other) noexcept;
  OwnedBlobBytes &operator=(OwnedBlobBytes &&other) noexcept;
  OwnedBlobBytes(const OwnedBlobBytes &) = delete;
  OwnedBlobBytes &operator=(const OwnedBlobBytes &) = delete;

  const char *data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return data_ == nullptr; }

private:
  friend Result<BlobView> copyAndOpenBlob(const char *data, size_t size, const std::string &what,
                                          OwnedBlobBytes &storage, const ParallelChunks &parallel);
  Status allocate(size_t size, const std::string &what);
  void reset();

  char *data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;
};

/// openBlob() for bytes that cannot be used where they lie (an inline blob
/// inside a protobuf string starts at no particular alignment): copies them
/// into `storage` and verifies the copy exactly as openBlob() does, with the
/// checksum computed over each piece of the copy as it is written, so the
/// bytes are read once and what is verified is what the caller uses. The
/// header is checked on the source before anything is allocated. On failure
/// `storage` is left empty. `parallel` spreads the copy and the checksum over
/// the caller's threads.
Result<BlobView> copyAndOpenBlob(const char *data, size_t size, const std::string &what,
                                 OwnedBlobBytes &storage, const ParallelChunks &parallel = {});

} // namespace ortc

#endif // ORTC_RUNTIME_SUPPORT_BLOBCONTAINER_H
