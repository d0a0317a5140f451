//===- BlobContainer.cpp - the versioned, checksummed blob envelope -------===//
//
// Every field is read with memcpy from little-endian bytes: the blob may sit at
// any address (a protobuf string, a memory map) and comes from a file we do
// not trust until the checksum and the structure have been verified.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/BlobContainer.h"

#include "runtime/support/Xxh3.h"

#include <algorithm>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace ortc {
namespace {

constexpr char kMagic[8] = {'O', 'R', 'T', 'C', 'B', 'L', 'O', 'B'};
constexpr size_t kHeaderSize = 32;
constexpr size_t kChecksumOffset = 24;
constexpr size_t kEntrySize = 24;
constexpr uint32_t kMaxAlignment = 4096;
constexpr uint16_t kKnownSectionFlags = kBlobSectionReadSparsely;
constexpr uint32_t kFirstVersionWithFlags = 3;
constexpr size_t kSparseWritePiece = 64 << 10;

uint32_t readU32(const char *p) {
  unsigned char b[4];
  std::memcpy(b, p, 4);
  return uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
}

uint64_t readU64(const char *p) { return uint64_t(readU32(p)) | uint64_t(readU32(p + 4)) << 32; }

void writeU32(char *p, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  std::memcpy(p, b, 4);
}

void writeU64(char *p, uint64_t v) {
  writeU32(p, uint32_t(v));
  writeU32(p + 4, uint32_t(v >> 32));
}

uint16_t readU16(const char *p) {
  unsigned char b[2];
  std::memcpy(b, p, 2);
  return uint16_t(b[0] | b[1] << 8);
}

void writeU16(char *p, uint16_t v) {
  unsigned char b[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
  std::memcpy(p, b, 2);
}

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// A directory entry's alignment and flags, by the blob's version.
struct EntryLayout {
  uint32_t alignment;
  uint16_t flags;
};
EntryLayout readEntryLayout(uint32_t version, const char *entry) {
  if (version < kFirstVersionWithFlags)
    return {readU32(entry + 4), 0};
  return {readU16(entry + 4), readU16(entry + 6)};
}

// The byte ranges of the sections flagged read-sparsely, read from a header
// and directory that are not verified yet, clamped to the blob: what they are
// used for (giving pages back, choosing write sizes) is harmless whatever the
// bytes say.
std::vector<std::pair<size_t, size_t>> sparseSectionRanges(const char *data, size_t size) {
  std::vector<std::pair<size_t, size_t>> ranges;
  if (!data || size < kHeaderSize || readU32(data + 8) < kFirstVersionWithFlags)
    return ranges;
  uint64_t count = std::min<uint64_t>(readU32(data + 12), (size - kHeaderSize) / kEntrySize);
  for (uint64_t i = 0; i < count; ++i) {
    const char *entry = data + kHeaderSize + i * kEntrySize;
    if (!(readU16(entry + 6) & kBlobSectionReadSparsely))
      continue;
    uint64_t offset = readU64(entry + 8), length = readU64(entry + 16);
    if (offset < size && length)
      ranges.push_back({size_t(offset), size_t(std::min<uint64_t>(length, size - offset))});
  }
  return ranges;
}

// Gives back the whole pages inside [begin, end) of a read-only file mapping;
// they come back from the file when read again.
void releasePages(const char *begin, const char *end) {
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  uintptr_t first = (uintptr_t(begin) + page - 1) & ~(page - 1);
  uintptr_t last = uintptr_t(end) & ~(page - 1);
  if (first < last)
    (void)::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

bool isPrintableTag(const char *tag) {
  for (int i = 0; i < 4; ++i)
    if (tag[i] < 0x20 || tag[i] > 0x7e)
      return false;
  return true;
}

// Tags in messages: printable ones as they are, others as hex, so that hostile
// bytes never reach a terminal.
std::string tagForMessage(const char *tag) {
  if (isPrintableTag(tag))
    return "'" + std::string(tag, 4) + "'";
  static const char digits[] = "0123456789abcdef";
  std::string text = "0x";
  for (int i = 0; i < 4; ++i) {
    text += digits[(unsigned char)tag[i] >> 4];
    text += digits[(unsigned char)tag[i] & 15];
  }
  return text;
}

// Version 1: XXH3-64 of the whole blob with its own field read as zero,
// hashed in three pieces to avoid copying the blob.
uint64_t wholeBlobChecksum(const char *data, size_t size) {
  static const char zeros[8] = {};
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, data, kChecksumOffset);
  XXH3_64bits_update(&state, zeros, 8);
  XXH3_64bits_update(&state, data + kHeaderSize, size - kHeaderSize);
  return XXH3_64bits_digest(&state);
}

void runChunks(const ParallelChunks &parallel, size_t count,
               const std::function<void(size_t)> &body) {
  if (parallel && count > 1)
    parallel(count, body);
  else
    for (size_t i = 0; i < count; ++i)
      body(i);
}

// Version 2: the leaves are the header's hash, then each chunk's after it
// (BlobContainer.h); `chunkLeaf(i)` hashes chunk i, on whichever thread.
uint64_t chunkedChecksum(const char *header, size_t size, const ParallelChunks &parallel,
                         const std::function<uint64_t(size_t)> &chunkLeaf) {
  char zeroed[kHeaderSize];
  std::memcpy(zeroed, header, kHeaderSize);
  std::memset(zeroed + kChecksumOffset, 0, 8);
  size_t chunks = (size - kHeaderSize + kBlobChecksumChunk - 1) / kBlobChecksumChunk;
  std::vector<uint64_t> leaves(chunks + 1);
  leaves[0] = xxh3(zeroed, kHeaderSize);
  runChunks(parallel, chunks, [&](size_t i) { leaves[i + 1] = chunkLeaf(i); });
  std::vector<char> bytes(leaves.size() * 8);
  for (size_t i = 0; i < leaves.size(); ++i)
    writeU64(bytes.data() + 8 * i, leaves[i]);
  return xxh3(bytes.data(), bytes.size());
}

// Chunk i of the bytes after the header: [begin, begin + length).
std::pair<size_t, size_t> chunkRange(size_t i, size_t size) {
  size_t begin = kHeaderSize + i * kBlobChecksumChunk;
  return {begin, std::min(kBlobChecksumChunk, size - begin)};
}

// The checksum the header should hold, by the version it names. With
// `sparse` ranges of a file mapping, each chunk's pages inside them are given
// back right after the chunk is hashed.
uint64_t envelopeChecksum(const char *data, size_t size, const ParallelChunks &parallel = {},
                          const std::vector<std::pair<size_t, size_t>> &sparse = {}) {
  if (readU32(data + 8) == 1)
    return wholeBlobChecksum(data, size);
  return chunkedChecksum(data, size, parallel, [&](size_t i) {
    auto [begin, length] = chunkRange(i, size);
    uint64_t leaf = xxh3(data + begin, length);
    for (auto [offset, bytes] : sparse) {
      size_t from = std::max(begin, offset), to = std::min(begin + length, offset + bytes);
      if (from < to)
        releasePages(data + from, data + to);
    }
    return leaf;
  });
}

Status invalid(const std::string &what, const std::string &message) {
  return Status::error(StatusCode::InvalidArgument, what + ": " + message);
}

} // namespace

uint64_t blobChecksum(const char *data, size_t size) { return xxh3(data, size); }

uint64_t blobEnvelopeChecksum(const char *data, size_t size, const ParallelChunks &parallel) {
  return envelopeChecksum(data, size, parallel);
}

const BlobSection *BlobView::find(const std::string &tag) const {
  for (const BlobSection &section : sections)
    if (section.tag == tag)
      return &section;
  return nullptr;
}

namespace {

// Checks `sections` and lays them out in order after the header and
// directory, each at its alignment: their offsets, and the blob's size. With
// `firstAt` (a multiple of every alignment), section 0 begins there instead.
Status layOutSections(const std::vector<BlobSection> &sections, const uint64_t *firstAt,
                      std::vector<uint64_t> &offsets, uint64_t &blobSize) {
  const std::string what = "writing a blob";
  if (sections.size() > (SIZE_MAX - kHeaderSize) / kEntrySize)
    return invalid(what, "too many sections");
  uint64_t cursor = kHeaderSize + sections.size() * kEntrySize;
  for (size_t i = 0; i < sections.size(); ++i) {
    const BlobSection &s = sections[i];
    std::string name = "section " + std::to_string(i);
    if (s.tag.size() != 4 || !isPrintableTag(s.tag.data()))
      return invalid(what, name + ": tag '" + s.tag + "' is not four printable characters");
    for (size_t j = 0; j < i; ++j)
      if (sections[j].tag == s.tag)
        return invalid(what, name + ": tag '" + s.tag + "' appears twice");
    if (!isPowerOfTwo(s.alignment) || s.alignment > kMaxAlignment)
      return invalid(what, name + " '" + s.tag + "': alignment " + std::to_string(s.alignment) +
                               " is not a power of two up to 4096");
    if (s.flags & ~kKnownSectionFlags)
      return invalid(what, name + " '" + s.tag + "': unknown flags " + std::to_string(s.flags));
    uint64_t offset = (cursor + s.alignment - 1) & ~uint64_t(s.alignment - 1);
    if (i == 0 && firstAt) {
      if (*firstAt < cursor)
        return invalid(what, std::to_string(sections.size()) + " sections: the directory ends at " +
                                 std::to_string(cursor) + ", after the head room of " +
                                 std::to_string(*firstAt) + " bytes");
      offset = *firstAt;
    } else if (s.size && !s.data) {
      return invalid(what,
                     name + " '" + s.tag + "': " + std::to_string(s.size) + " bytes but no data");
    }
    if (offset < cursor || s.size > SIZE_MAX - offset)
      return invalid(what, name + " '" + s.tag + "': the blob would exceed the address space");
    offsets.push_back(offset);
    cursor = offset + s.size;
  }
  blobSize = cursor;
  return Status::ok();
}

// Writes the header and directory over the first bytes of `blob`, appends
// sections [from, end) each after its padding, and fills in the checksum.
void finishBlob(std::vector<char> &blob, const std::vector<BlobSection> &sections,
                const std::vector<uint64_t> &offsets, uint64_t blobSize, size_t from) {
  char *p = blob.data();
  std::memcpy(p, kMagic, 8);
  writeU32(p + 8, kBlobContainerVersion);
  writeU32(p + 12, uint32_t(sections.size()));
  writeU64(p + 16, blobSize);
  writeU64(p + kChecksumOffset, 0);
  for (size_t i = 0; i < sections.size(); ++i) {
    char *entry = p + kHeaderSize + i * kEntrySize;
    std::memcpy(entry, sections[i].tag.data(), 4);
    writeU16(entry + 4, uint16_t(sections[i].alignment));
    writeU16(entry + 6, sections[i].flags);
    writeU64(entry + 8, offsets[i]);
    writeU64(entry + 16, sections[i].size);
  }
  for (size_t i = from; i < sections.size(); ++i) {
    blob.resize(offsets[i], 0); // the padding before the section
    blob.insert(blob.end(), sections[i].data, sections[i].data + sections[i].size);
  }
  writeU64(blob.data() + kChecksumOffset, envelopeChecksum(blob.data(), blob.size()));
}

} // namespace

Result<std::vector<char>> writeBlob(const std::vector<BlobSection> &sections) {
  // Lay out first, so that a bad section fails before anything is allocated.
  std::vector<uint64_t> offsets;
  uint64_t blobSize = 0;
  if (Status s = layOutSections(sections, nullptr, offsets, blobSize); !s.isOk())
    return s;
  // Appended section by section: only the header and the padding are zeroed
  // first (a blob of hundreds of MiB of weights is written once, not twice).
  std::vector<char> blob;
  blob.reserve(blobSize);
  blob.resize(kHeaderSize + sections.size() * kEntrySize, 0);
  finishBlob(blob, sections, offsets, blobSize, 0);
  return blob;
}

Result<std::vector<char>> writeBlobAround(std::vector<char> storage,
                                          std::vector<BlobSection> sections) {
  if (sections.empty() || storage.size() < kBlobHeadRoom)
    return invalid("writing a blob", "no first section after the " + std::to_string(kBlobHeadRoom) +
                                         "-byte head room");
  sections[0].data = storage.data() + kBlobHeadRoom;
  sections[0].size = storage.size() - kBlobHeadRoom;
  std::vector<uint64_t> offsets;
  uint64_t blobSize = 0, firstAt = kBlobHeadRoom;
  if (Status s = layOutSections(sections, &firstAt, offsets, blobSize); !s.isOk())
    return s;
  storage.reserve(blobSize); // one move of the first section at most
  std::fill(storage.begin(), storage.begin() + kBlobHeadRoom, 0);
  finishBlob(storage, sections, offsets, blobSize, 1);
  return storage;
}

Result<BlobDescription> describeBlob(const char *data, size_t size, const std::string &what) {
  if (!data || size < kHeaderSize)
    return invalid(what, "blob truncated: " + std::to_string(size) +
                             " bytes, shorter than the 32-byte header");
  if (std::memcmp(data, kMagic, 8) != 0)
    return invalid(what, "not an ortc blob (wrong magic)");
  BlobDescription blob;
  blob.version = readU32(data + 8);
  blob.declaredSize = readU64(data + 16);
  blob.storedChecksum = readU64(data + kChecksumOffset);
  blob.computedChecksum = envelopeChecksum(data, size);
  uint32_t count = readU32(data + 12);
  if (kHeaderSize + uint64_t(count) * kEntrySize > size)
    return invalid(what, "section directory of " + std::to_string(count) +
                             " entries runs past the end of the blob");
  for (uint32_t i = 0; i < count; ++i) {
    const char *entry = data + kHeaderSize + size_t(i) * kEntrySize;
    BlobDescription::Section section;
    section.tag = isPrintableTag(entry) ? std::string(entry, 4) : tagForMessage(entry);
    EntryLayout layout = readEntryLayout(blob.version, entry);
    section.alignment = layout.alignment;
    section.flags = layout.flags;
    section.offset = readU64(entry + 8);
    section.size = readU64(entry + 16);
    blob.sections.push_back(std::move(section));
  }
  return blob;
}

namespace {

// What can be checked before the checksum: the header's size, magic, version
// and declared length.
Status checkHeader(const char *data, size_t size, const std::string &what) {
  if (!data || size < kHeaderSize)
    return invalid(what, "blob truncated: " + std::to_string(size) +
                             " bytes, shorter than the 32-byte header");
  if (std::memcmp(data, kMagic, 8) != 0)
    return invalid(what, "not an ortc blob (wrong magic)");
  uint32_t version = readU32(data + 8);
  if (version < kOldestBlobContainerVersion || version > kBlobContainerVersion)
    return Status::error(StatusCode::Unsupported,
                         what + ": blob container version " + std::to_string(version) +
                             " is not supported (this build reads versions " +
                             std::to_string(kOldestBlobContainerVersion) + " to " +
                             std::to_string(kBlobContainerVersion) + "); recompile the model");
  uint64_t declared = readU64(data + 16);
  if (declared > size)
    return invalid(what, "blob truncated: " + std::to_string(size) + " bytes of the " +
                             std::to_string(declared) + " its header declares");
  if (declared < size)
    return invalid(what, "blob has " + std::to_string(size - declared) +
                             " trailing bytes after the " + std::to_string(declared) +
                             " its header declares");
  return Status::ok();
}

// openBlob(), with the checksum of `data` computed already when `computed`
// is given (copyAndOpenBlob hashes the bytes as it copies them).
Result<BlobView> openChecked(const char *data, size_t size, const std::string &what,
                             const uint64_t *computed, const ParallelChunks &parallel,
                             BlobBacking backing) {
  if (Status header = checkHeader(data, size, what); !header.isOk())
    return header;
  uint32_t version = readU32(data + 8);
  uint64_t stored = readU64(data + kChecksumOffset);
  std::vector<std::pair<size_t, size_t>> release;
  if (backing == BlobBacking::ReadOnlyFileMapping)
    release = sparseSectionRanges(data, size);
  if ((computed ? *computed : envelopeChecksum(data, size, parallel, release)) != stored)
    return invalid(what, "blob checksum mismatch: the bytes are corrupted");

  // The checksum only proves the bytes are what some writer wrote; the
  // structure is checked as if they were hostile all the same.
  uint32_t count = readU32(data + 12);
  uint64_t directoryEnd = kHeaderSize + uint64_t(count) * kEntrySize;
  if (directoryEnd > size)
    return invalid(what, "section directory of " + std::to_string(count) +
                             " entries runs past the end of the blob");

  BlobView view;
  view.version = version;
  view.sections.reserve(count);
  struct Range {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Range> ranges;
  for (uint32_t i = 0; i < count; ++i) {
    const char *entry = data + kHeaderSize + size_t(i) * kEntrySize;
    std::string name = "section " + std::to_string(i) + " " + tagForMessage(entry);
    if (!isPrintableTag(entry))
      return invalid(what, name + ": tag is not four printable characters");
    auto [alignment, flags] = readEntryLayout(version, entry);
    uint64_t offset = readU64(entry + 8);
    uint64_t length = readU64(entry + 16);
    if (!isPowerOfTwo(alignment) || alignment > kMaxAlignment)
      return invalid(what, name + ": alignment " + std::to_string(alignment) +
                               " is not a power of two up to 4096");
    if (flags & ~kKnownSectionFlags)
      return invalid(what, name + ": unknown flags " + std::to_string(flags) +
                               " (this build knows " + std::to_string(kKnownSectionFlags) + ")");
    if (offset < directoryEnd || offset > size || length > size - offset)
      return invalid(what, name + ": bytes [" + std::to_string(offset) + ", +" +
                               std::to_string(length) + ") lie outside the blob's " +
                               std::to_string(directoryEnd) + ".." + std::to_string(size) +
                               " data area");
    if (offset % alignment != 0)
      return invalid(what, name + ": offset " + std::to_string(offset) +
                               " is not a multiple of its alignment " + std::to_string(alignment));
    BlobSection section;
    section.tag.assign(entry, 4);
    section.alignment = alignment;
    section.data = data + offset;
    section.size = size_t(length);
    section.flags = flags;
    view.sections.push_back(std::move(section));
    if (length)
      ranges.push_back({offset, offset + length, i});
  }
  // Sorted, not pairwise: the count comes from the blob.
  std::vector<std::pair<std::string, size_t>> tags;
  for (size_t i = 0; i < view.sections.size(); ++i)
    tags.push_back({view.sections[i].tag, i});
  std::sort(tags.begin(), tags.end());
  for (size_t i = 1; i < tags.size(); ++i)
    if (tags[i].first == tags[i - 1].first)
      return invalid(what, "sections " + std::to_string(tags[i - 1].second) + " and " +
                               std::to_string(tags[i].second) + " share the tag '" + tags[i].first +
                               "'");
  std::sort(ranges.begin(), ranges.end(),
            [](const Range &a, const Range &b) { return a.begin < b.begin; });
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end)
      return invalid(what, "section " + std::to_string(ranges[i].index) + " '" +
                               view.sections[ranges[i].index].tag + "' overlaps section " +
                               std::to_string(ranges[i - 1].index) + " '" +
                               view.sections[ranges[i - 1].index].tag + "'");
  return view;
}

// Copies `size` bytes and returns the envelope checksum of the copy, hashing
// each piece right after writing it, while it is still in cache: the bytes
// cross the memory bus once, and the checksum is of the bytes that stay. The
// header has been checked, so the version is one this build reads.
uint64_t copyAndChecksum(char *dst, const char *src, size_t size, const ParallelChunks &parallel) {
  std::memcpy(dst, src, kHeaderSize);
  if (readU32(dst + 8) != 1)
    return chunkedChecksum(dst, size, parallel, [&](size_t i) {
      auto [begin, length] = chunkRange(i, size);
      std::memcpy(dst + begin, src + begin, length);
      return xxh3(dst + begin, length);
    });
  constexpr size_t kPiece = 256 << 10; // well inside L2
  static const char zeros[8] = {};
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset(&state);
  XXH3_64bits_update(&state, dst, kChecksumOffset);
  XXH3_64bits_update(&state, zeros, 8);
  for (size_t at = kHeaderSize; at < size; at += kPiece) {
    size_t n = std::min(kPiece, size - at);
    std::memcpy(dst + at, src + at, n);
    XXH3_64bits_update(&state, dst + at, n);
  }
  return XXH3_64bits_digest(&state);
}

} // namespace

Result<BlobView> openBlob(const char *data, size_t size, const std::string &what,
                          const ParallelChunks &parallel, BlobBacking backing) {
  return openChecked(data, size, what, nullptr, parallel, backing);
}

std::vector<std::pair<size_t, size_t>> blobWritePieces(const char *data, size_t size) {
  std::vector<std::pair<size_t, size_t>> sparse = sparseSectionRanges(data, size);
  std::sort(sparse.begin(), sparse.end());
  std::vector<std::pair<size_t, size_t>> pieces;
  size_t at = 0;
  for (auto [offset, length] : sparse) {
    if (offset < at) // overlapping ranges (not a valid blob): write as they come
      continue;
    if (offset > at)
      pieces.push_back({at, offset - at});
    for (at = offset; at < offset + length;) {
      size_t next = std::min((at / kSparseWritePiece + 1) * kSparseWritePiece, offset + length);
      pieces.push_back({at, next - at});
      at = next;
    }
  }
  if (at < size)
    pieces.push_back({at, size - at});
  return pieces;
}

OwnedBlobBytes::~OwnedBlobBytes() { reset(); }

OwnedBlobBytes::OwnedBlobBytes(OwnedBlobBytes &&other) noexcept { *this = std::move(other); }

OwnedBlobBytes &OwnedBlobBytes::operator=(OwnedBlobBytes &&other) noexcept {
  if (this != &other) {
    reset();
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(mapped_, other.mapped_);
  }
  return *this;
}

void OwnedBlobBytes::reset() {
  if (data_)
    ::munmap(data_, mapped_);
  data_ = nullptr;
  size_ = mapped_ = 0;
}

Status OwnedBlobBytes::allocate(size_t size, const std::string &what) {
  reset();
  // A large blob goes on 2 MiB boundaries so that the kernel can back it with
  // transparent huge pages (where it offers them for madvise()d ranges):
  // faulting in 4 KiB pages one by one costs more than the copy itself.
  constexpr size_t kPage = 4096, kHuge = size_t(2) << 20;
  size_t align = size >= kHuge ? kHuge : kPage;
  size_t length = (std::max<size_t>(size, 1) + align - 1) / align * align;
  if (length < size || length > SIZE_MAX - align)
    return invalid(what, "cannot copy a blob of " + std::to_string(size) + " bytes");
  size_t reserve = length + (align - kPage);
  void *raw = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED)
    return Status::error(StatusCode::Internal, what + ": out of memory copying the " +
                                                   std::to_string(size) + "-byte blob");
  char *base = static_cast<char *>(raw);
  char *start = reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(base) + align - 1) &
                                         ~uintptr_t(align - 1));
  // Give back the unaligned head and the tail beyond `length`.
  if (start != base)
    ::munmap(base, size_t(start - base));
  char *end = base + reserve;
  if (start + length != end)
    ::munmap(start + length, size_t(end - (start + length)));
#ifdef MADV_HUGEPAGE
  if (align == kHuge)
    (void)::madvise(start, length, MADV_HUGEPAGE); // a hint; 4 KiB pages work too
#endif
  data_ = start;
  size_ = size;
  mapped_ = length;
  return Status::ok();
}

Result<BlobView> copyAndOpenBlob(const char *data, size_t size, const std::string &what,
                                 OwnedBlobBytes &storage, const ParallelChunks &parallel) {
  storage = OwnedBlobBytes();
  // Refuse what the header alone refuses before allocating its size.
  if (Status header = checkHeader(data, size, what); !header.isOk())
    return header;
  if (Status allocated = storage.allocate(size, what); !allocated.isOk())
    return allocated;
  uint64_t checksum = copyAndChecksum(storage.data_, data, size, parallel);
  // Everything is verified again on the copy: the source may change meanwhile.
  Result<BlobView> view =
      openChecked(storage.data_, size, what, &checksum, parallel, BlobBacking::Memory);
  if (!view.isOk())
    storage = OwnedBlobBytes();
  return view;
}

} // namespace ortc
