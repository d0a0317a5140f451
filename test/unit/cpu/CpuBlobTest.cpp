//===- CpuBlobTest.cpp - the blob envelope and the CPU EP's plan section --===//
//
// The envelope: round trips, its byte layout, and refusal of corrupted,
// truncated and structurally broken blobs (the structural cases recompute the
// checksum so that the structure check, not the checksum, is what refuses).
// The CPU blob: a round trip of every plan field, then one valid plan broken
// one way at a time, each expecting its own error from reader and writer.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/blob/CpuBlob.h"
#include "providers/cpu/kernels/Gemm.h"
#include "runtime/ep/DimExpr.h"
#include "runtime/support/BlobContainer.h"
#include "runtime/support/ExternalData.h"
#include "test/unit/ScratchDir.h"
#include "test/unit/common/MappedPages.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace ortc;
using namespace ortc::cpu;

namespace {

const std::string kWhat = "partition p0 (test.bin)";

uint32_t get32(const std::vector<char> &b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = v << 8 | uint8_t(b[at + i]);
  return v;
}

uint64_t get64(const std::vector<char> &b, size_t at) {
  return uint64_t(get32(b, at)) | uint64_t(get32(b, at + 4)) << 32;
}

void put32(std::vector<char> &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = char(v >> (8 * i));
}

void put64(std::vector<char> &b, size_t at, uint64_t v) {
  put32(b, at, uint32_t(v));
  put32(b, at + 4, uint32_t(v >> 32));
}

// Recomputes the checksum as the header documents it, after an edit.
void reseal(std::vector<char> &blob) {
  put64(blob, 24, blobEnvelopeChecksum(blob.data(), blob.size()));
}

// Directory entry i: tag at 32 + 24 i, alignment +4 (u16), flags +6 (u16),
// offset +8, size +16.
size_t entry(size_t i) { return 32 + 24 * i; }

std::vector<char> pattern(size_t size, int seed) {
  std::vector<char> bytes(size);
  for (size_t i = 0; i < size; ++i)
    bytes[i] = char(seed * 31 + i * 7 + 1);
  return bytes;
}

Status openStatus(const std::vector<char> &blob) {
  Result<BlobView> view = openBlob(blob.data(), blob.size(), kWhat);
  return view.isOk() ? Status::ok() : view.status();
}

void expectError(const Status &status, const std::string &needle) {
  ASSERT_FALSE(status.isOk()) << "expected an error containing: " << needle;
  EXPECT_NE(status.message().find(needle), std::string::npos) << status.message();
  EXPECT_EQ(status.message().rfind(kWhat + ": ", 0), 0u) << status.message();
  EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
}

// Two sections of 100 and 40 bytes, both 64-aligned.
std::vector<char> twoSectionBlob() {
  std::vector<char> a = pattern(100, 1), b = pattern(40, 2);
  Result<std::vector<char>> blob =
      writeBlob({{"AAAA", 64, a.data(), a.size()}, {"BBBB", 64, b.data(), b.size()}});
  EXPECT_TRUE(blob.isOk()) << blob.status().message();
  return blob.takeValue();
}

//===----------------------------------------------------------------------===//
// The envelope
//===----------------------------------------------------------------------===//

TEST(BlobContainerTest, RoundTripsSectionsWithAlignmentsAndEmptyOnes) {
  std::vector<char> a = pattern(3, 1), c = pattern(100, 3), d = pattern(17, 4);
  std::vector<BlobSection> sections = {{"AAAA", 1, a.data(), a.size()},
                                       {"BBBB", 64, nullptr, 0},
                                       {"CCCC", 4096, c.data(), c.size()},
                                       {"DDDD", 8, d.data(), d.size()},
                                       {"EEEE", 16, nullptr, 0}};
  Result<std::vector<char>> blob = writeBlob(sections);
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  const std::vector<char> &bytes = blob.value();
  Result<BlobView> view = openBlob(bytes.data(), bytes.size(), kWhat);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view.value().version, kBlobContainerVersion);
  ASSERT_EQ(view.value().sections.size(), sections.size());
  for (size_t i = 0; i < sections.size(); ++i) {
    const BlobSection &got = view.value().sections[i];
    SCOPED_TRACE(sections[i].tag);
    EXPECT_EQ(got.tag, sections[i].tag);
    EXPECT_EQ(got.alignment, sections[i].alignment);
    ASSERT_EQ(got.size, sections[i].size);
    size_t offset = size_t(got.data - bytes.data());
    EXPECT_EQ(offset, get64(bytes, entry(i) + 8));
    EXPECT_EQ(offset % sections[i].alignment, 0u);
    EXPECT_LE(offset + got.size, bytes.size());
    if (got.size) {
      EXPECT_EQ(std::memcmp(got.data, sections[i].data, got.size), 0);
    }
    EXPECT_EQ(view.value().find(sections[i].tag), &got);
  }
  EXPECT_EQ(view.value().find("ZZZZ"), nullptr);
}

// The first section laid down by the caller after the head room: the blob is
// that storage (the section never copied) and reads back like writeBlob's.
TEST(BlobContainerTest, WritesAroundAFirstSectionInPlace) {
  std::vector<char> first = pattern(5000, 7), code = pattern(100, 3);
  std::vector<char> storage(kBlobHeadRoom, 'x');
  storage.insert(storage.end(), first.begin(), first.end());
  storage.reserve(storage.size() + 8192);
  const char *laidDown = storage.data() + kBlobHeadRoom;
  Result<std::vector<char>> blob =
      writeBlobAround(std::move(storage), {{"WGHT", 64, nullptr, 0},
                                           {"CODE", 64, code.data(), code.size()},
                                           {"ROWS", 4096, first.data(), 10}});
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  const std::vector<char> &bytes = blob.value();
  EXPECT_EQ(bytes.data() + kBlobHeadRoom, laidDown);
  Result<BlobView> view = openBlob(bytes.data(), bytes.size(), kWhat);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  const BlobSection *weights = view.value().find("WGHT");
  ASSERT_NE(weights, nullptr);
  EXPECT_EQ(weights->data, laidDown);
  ASSERT_EQ(weights->size, first.size());
  EXPECT_EQ(std::memcmp(weights->data, first.data(), first.size()), 0);
  const BlobSection *codeSection = view.value().find("CODE");
  ASSERT_NE(codeSection, nullptr);
  ASSERT_EQ(codeSection->size, code.size());
  EXPECT_EQ(std::memcmp(codeSection->data, code.data(), code.size()), 0);
  const BlobSection *rows = view.value().find("ROWS");
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ((rows->data - bytes.data()) % 4096, 0);
  ASSERT_EQ(rows->size, 10u);
  EXPECT_EQ(std::memcmp(rows->data, first.data(), 10), 0);
  // The head room's old bytes are not left between the directory and WGHT.
  size_t directoryEnd = 32 + 3 * 24;
  EXPECT_EQ(std::count(bytes.begin() + directoryEnd, bytes.begin() + kBlobHeadRoom, 'x'), 0);
}

TEST(BlobContainerTest, WriteAroundRefusesNoHeadRoomOrADirectoryPastIt) {
  auto expectWriteError = [](const Result<std::vector<char>> &blob, const std::string &needle) {
    ASSERT_FALSE(blob.isOk()) << needle;
    EXPECT_NE(blob.status().message().find(needle), std::string::npos) << blob.status().message();
  };
  expectWriteError(writeBlobAround(std::vector<char>(kBlobHeadRoom - 1), {{"WGHT", 64}}),
                   "no first section after the 4096-byte head room");
  std::vector<BlobSection> many;
  for (int i = 0; i < 170; ++i) {
    char tag[5];
    std::snprintf(tag, sizeof tag, "S%03d", i);
    many.push_back({tag, 64, nullptr, 0});
  }
  expectWriteError(writeBlobAround(std::vector<char>(kBlobHeadRoom), many),
                   "170 sections: the directory ends at 4112, after the head room of 4096 bytes");
  many.pop_back();
  EXPECT_TRUE(writeBlobAround(std::vector<char>(kBlobHeadRoom), many).isOk());
  // The sections are checked as writeBlob checks them, the first included.
  expectWriteError(writeBlobAround(std::vector<char>(kBlobHeadRoom + 8), {{"WGH", 64}}),
                   "tag 'WGH' is not four printable characters");
}

TEST(BlobContainerTest, RoundTripsNoSections) {
  Result<std::vector<char>> blob = writeBlob({});
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  EXPECT_EQ(blob.value().size(), 32u);
  Result<BlobView> view = openBlob(blob.value().data(), blob.value().size(), kWhat);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_TRUE(view.value().sections.empty());
}

TEST(BlobContainerTest, HeaderAndDirectoryHaveTheDocumentedLayout) {
  std::vector<char> blob = twoSectionBlob();
  EXPECT_EQ(std::string(blob.data(), 8), "ORTCBLOB");
  EXPECT_EQ(get32(blob, 8), kBlobContainerVersion);
  EXPECT_EQ(get32(blob, 12), 2u);
  EXPECT_EQ(get64(blob, 16), blob.size());
  // Version 2: the leaves are the zeroed header's hash and the rest's (one
  // chunk here).
  std::vector<char> header(blob.begin(), blob.begin() + 32);
  put64(header, 24, 0);
  std::vector<char> leaves(16);
  put64(leaves, 0, blobChecksum(header.data(), 32));
  put64(leaves, 8, blobChecksum(blob.data() + 32, blob.size() - 32));
  EXPECT_EQ(get64(blob, 24), blobChecksum(leaves.data(), leaves.size()));
  EXPECT_EQ(std::string(&blob[entry(0)], 4), "AAAA");
  EXPECT_EQ(get32(blob, entry(0) + 4), 64u);
  EXPECT_EQ(get64(blob, entry(0) + 8), 128u); // the directory ends at 80
  EXPECT_EQ(get64(blob, entry(0) + 16), 100u);
  EXPECT_EQ(std::string(&blob[entry(1)], 4), "BBBB");
  EXPECT_EQ(get64(blob, entry(1) + 8), 256u);
  EXPECT_EQ(get64(blob, entry(1) + 16), 40u);
  EXPECT_EQ(blob.size(), 296u);
  EXPECT_EQ(std::memcmp(&blob[128], pattern(100, 1).data(), 100), 0);
}

TEST(BlobContainerTest, SectionsAre64AlignedRelativeToTheBlobAtAnyAddress) {
  std::vector<std::vector<char>> payloads;
  std::vector<BlobSection> sections;
  for (int i = 0; i < 6; ++i) {
    payloads.push_back(pattern(size_t(i * 37 + 1), i));
    sections.push_back(
        {std::string("SEC") + char('0' + i), 64, payloads.back().data(), payloads.back().size()});
  }
  Result<std::vector<char>> blob = writeBlob(sections);
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  // The reader uses memcpy only, so an odd base address works too.
  for (size_t shift : {0, 1, 3, 8}) {
    std::vector<char> storage(blob.value().size() + 16);
    char *base = storage.data() + shift;
    std::memcpy(base, blob.value().data(), blob.value().size());
    Result<BlobView> view = openBlob(base, blob.value().size(), kWhat);
    ASSERT_TRUE(view.isOk()) << view.status().message();
    for (size_t i = 0; i < sections.size(); ++i) {
      const BlobSection &got = view.value().sections[i];
      EXPECT_EQ(size_t(got.data - base) % 64, 0u) << got.tag << " shift " << shift;
      EXPECT_EQ(std::memcmp(got.data, payloads[i].data(), got.size), 0);
    }
  }
}

TEST(BlobContainerTest, RefusesACorruptedByteAnywhere) {
  std::vector<char> blob = twoSectionBlob();
  for (size_t at = 0; at < blob.size(); ++at) {
    SCOPED_TRACE("byte " + std::to_string(at));
    std::vector<char> bad = blob;
    bad[at] ^= 0x5a;
    Status status = openStatus(bad);
    if (at < 8)
      expectError(status, "wrong magic");
    else if (at < 12)
      expectError(status, "container version");
    else if (at >= 16 && at < 24)
      ASSERT_FALSE(status.isOk()); // the declared size: truncated or trailing bytes
    else
      expectError(status, "checksum mismatch");
  }
}

TEST(BlobContainerTest, RefusesEveryTruncation) {
  std::vector<char> blob = twoSectionBlob();
  for (size_t length = 0; length < blob.size(); ++length) {
    SCOPED_TRACE("length " + std::to_string(length));
    Result<BlobView> view = openBlob(blob.data(), length, kWhat);
    expectError(view.isOk() ? Status::ok() : view.status(), "truncated");
  }
  Result<BlobView> none = openBlob(nullptr, 0, kWhat);
  expectError(none.isOk() ? Status::ok() : none.status(), "truncated");
}

TEST(BlobContainerTest, RefusesTrailingBytes) {
  std::vector<char> blob = twoSectionBlob();
  blob.push_back(0);
  expectError(openStatus(blob), "1 trailing bytes");
}

TEST(BlobContainerTest, RefusesAWrongMagic) {
  std::vector<char> blob = twoSectionBlob();
  std::memcpy(blob.data(), "ORTCBLOC", 8);
  reseal(blob);
  expectError(openStatus(blob), "not an ortc blob (wrong magic)");
}

TEST(BlobContainerTest, RefusesAnUnknownContainerVersion) {
  std::vector<char> blob = twoSectionBlob();
  put32(blob, 8, kBlobContainerVersion + 1);
  reseal(blob);
  Status status = openStatus(blob);
  expectError(status, "blob container version " + std::to_string(kBlobContainerVersion + 1) +
                          " is not supported (this build reads versions 1 to " +
                          std::to_string(kBlobContainerVersion) + ")");
  EXPECT_EQ(status.code(), StatusCode::Unsupported);
  put32(blob, 8, 0);
  reseal(blob);
  expectError(openStatus(blob), "blob container version 0 is not supported");
}

TEST(BlobContainerTest, SectionFlagsRoundTripAndUnknownOnesAreRefused) {
  std::vector<char> a = pattern(100, 1), b = pattern(40, 2);
  Result<std::vector<char>> written =
      writeBlob({{"AAAA", 64, a.data(), a.size()},
                 {"BBBB", 4096, b.data(), b.size(), kBlobSectionReadSparsely}});
  ASSERT_TRUE(written.isOk()) << written.status().message();
  std::vector<char> blob = written.takeValue();
  EXPECT_EQ(get32(blob, entry(1) + 4), 4096u | uint32_t(kBlobSectionReadSparsely) << 16);
  Result<BlobView> view = openBlob(blob.data(), blob.size(), kWhat);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view.value().sections[0].flags, 0);
  EXPECT_EQ(view.value().sections[1].flags, kBlobSectionReadSparsely);
  EXPECT_EQ(view.value().sections[1].alignment, 4096u);
  Result<BlobDescription> described = describeBlob(blob.data(), blob.size(), kWhat);
  ASSERT_TRUE(described.isOk()) << described.status().message();
  EXPECT_EQ(described.value().sections[1].flags, kBlobSectionReadSparsely);

  Result<std::vector<char>> unknown = writeBlob({{"AAAA", 64, a.data(), a.size(), 2}});
  ASSERT_FALSE(unknown.isOk());
  EXPECT_NE(unknown.status().message().find("'AAAA': unknown flags 2"), std::string::npos)
      << unknown.status().message();
  blob[entry(0) + 6] = 4;
  reseal(blob);
  expectError(openStatus(blob), "section 0 'AAAA': unknown flags 4");
}

TEST(BlobContainerTest, Version2EntriesHoldTheAlignmentInFourBytesAndNoFlags) {
  std::vector<char> blob = twoSectionBlob();
  put32(blob, 8, 2); // the layouts agree while the flags are 0
  reseal(blob);
  Result<BlobView> view = openBlob(blob.data(), blob.size(), kWhat);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view.value().sections[0].alignment, 64u);
  EXPECT_EQ(view.value().sections[0].flags, 0);
  // What would be a flag is a version 2 alignment's high half.
  blob[entry(0) + 6] = 1;
  reseal(blob);
  expectError(openStatus(blob), "alignment 65600 is not a power of two");
}

TEST(BlobContainerTest, SparseSectionsAreWrittenInSmallAlignedPieces) {
  std::vector<char> dense = pattern(100 << 10, 1), sparse = pattern((300 << 10) + 5, 2);
  Result<std::vector<char>> blob =
      writeBlob({{"DENS", 64, dense.data(), dense.size()},
                 {"ROWS", 4096, sparse.data(), sparse.size(), kBlobSectionReadSparsely},
                 {"TAIL", 64, dense.data(), 10}});
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  const std::vector<char> &bytes = blob.value();
  Result<BlobView> view = openBlob(bytes.data(), bytes.size(), kWhat);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  const BlobSection &rows = view.value().sections[1];
  size_t begin = size_t(rows.data - bytes.data()), end = begin + rows.size;
  std::vector<std::pair<size_t, size_t>> pieces = blobWritePieces(bytes.data(), bytes.size());
  size_t at = 0, inside = 0;
  for (auto [offset, length] : pieces) {
    EXPECT_EQ(offset, at); // in order, nothing left out or written twice
    at = offset + length;
    if (offset >= begin && at <= end) {
      ++inside;
      EXPECT_LE(length, size_t(64 << 10));
      // No piece crosses a 64 KiB boundary of the file.
      EXPECT_EQ(offset / (64 << 10), (at - 1) / (64 << 10));
    } else {
      EXPECT_TRUE(at <= begin || offset >= end) << "a piece straddles the sparse section";
    }
  }
  EXPECT_EQ(at, bytes.size());
  EXPECT_GE(inside, 5u);
  EXPECT_EQ(pieces.size(), inside + 2); // the dense bytes before and after, whole

  // Bytes that are no blob, and a blob without sparse sections: one piece.
  std::vector<char> notBlob = pattern(1000, 3);
  EXPECT_EQ(blobWritePieces(notBlob.data(), notBlob.size()),
            (std::vector<std::pair<size_t, size_t>>{{0, 1000}}));
  std::vector<char> plain = twoSectionBlob();
  EXPECT_EQ(blobWritePieces(plain.data(), plain.size()),
            (std::vector<std::pair<size_t, size_t>>{{0, plain.size()}}));
}

TEST(BlobContainerTest, AFileMappingGivesBackTheSparseSectionsPagesAsTheyAreHashed) {
  std::vector<char> dense = pattern(3 << 20, 1), sparse = pattern(4 << 20, 2);
  Result<std::vector<char>> blob =
      writeBlob({{"DENS", 64, dense.data(), dense.size()},
                 {"ROWS", 4096, sparse.data(), sparse.size(), kBlobSectionReadSparsely}});
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  testutil::ScratchDir scratch("ortc-blob-container");
  std::string path = scratch.file("blob.bin");
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  for (auto [offset, length] : blobWritePieces(blob.value().data(), blob.value().size()))
    ASSERT_EQ(::write(fd, blob.value().data() + offset, length), ssize_t(length));
  ::close(fd);

  for (BlobBacking backing : {BlobBacking::ReadOnlyFileMapping, BlobBacking::Memory}) {
    bool mapping = backing == BlobBacking::ReadOnlyFileMapping;
    SCOPED_TRACE(mapping ? "file mapping" : "memory");
    std::string error;
    std::shared_ptr<MappedFile> file = MappedFile::open(path, error);
    ASSERT_TRUE(file) << error;
    Result<BlobView> view = openBlob(file->data(), file->size(), kWhat, {}, backing);
    ASSERT_TRUE(view.isOk()) << view.status().message();
    const BlobSection &d = view.value().sections[0], &r = view.value().sections[1];
    long densePages = testutil::presentPages(d.data, d.size);
    long sparsePages = testutil::presentPages(r.data, r.size);
    if (densePages < 0)
      GTEST_SKIP() << "/proc/self/pagemap cannot be read here";
    long pages = long(r.size / size_t(::sysconf(_SC_PAGESIZE)));
    EXPECT_GE(densePages, long(d.size / size_t(::sysconf(_SC_PAGESIZE))) - 1);
    if (mapping) // only the pages across a 1 MiB checksum chunk's edge stay
      EXPECT_LE(sparsePages, long(r.size >> 20) + 2) << "of " << pages;
    else
      EXPECT_EQ(sparsePages, pages);
    // Pages given back come back from the file, the same bytes.
    EXPECT_EQ(std::memcmp(r.data, sparse.data(), sparse.size()), 0);
  }
}

// A blob of several checksum chunks, the last one short: 2.5 MiB of payload.
std::vector<char> chunkedBlob() {
  static const std::vector<char> a = pattern((2 << 20) + 1000, 3), b = pattern(300 << 10, 4);
  Result<std::vector<char>> blob =
      writeBlob({{"AAAA", 64, a.data(), a.size()}, {"BBBB", 4096, b.data(), b.size()}});
  EXPECT_TRUE(blob.isOk()) << blob.status().message();
  return blob.isOk() ? blob.takeValue() : std::vector<char>();
}

TEST(BlobContainerTest, ChecksumIsXxh3OfTheHeaderAndChunkLeaves) {
  std::vector<char> blob = chunkedBlob();
  ASSERT_GT(blob.size(), 2 * kBlobChecksumChunk + 32);
  std::vector<char> header(blob.begin(), blob.begin() + 32);
  put64(header, 24, 0);
  std::vector<char> leaves(8);
  put64(leaves, 0, blobChecksum(header.data(), 32));
  for (size_t at = 32; at < blob.size(); at += kBlobChecksumChunk) {
    leaves.resize(leaves.size() + 8);
    size_t length = std::min(kBlobChecksumChunk, blob.size() - at);
    put64(leaves, leaves.size() - 8, blobChecksum(blob.data() + at, length));
  }
  EXPECT_EQ(leaves.size(), 4u * 8);
  EXPECT_EQ(get64(blob, 24), blobChecksum(leaves.data(), leaves.size()));
}

TEST(BlobContainerTest, VersionOneBlobsStillOpen) {
  // Version 1's checksum: XXH3-64 of the whole blob, its field zero.
  std::vector<char> blob = chunkedBlob();
  put32(blob, 8, 1);
  put64(blob, 24, 0);
  put64(blob, 24, blobChecksum(blob.data(), blob.size()));
  EXPECT_EQ(get64(blob, 24), blobEnvelopeChecksum(blob.data(), blob.size()));
  Result<BlobView> view = openBlob(blob.data(), blob.size(), kWhat);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view.value().version, 1u);
  OwnedBlobBytes storage;
  ASSERT_TRUE(copyAndOpenBlob(blob.data(), blob.size(), kWhat, storage).isOk());
  blob[blob.size() - 5] ^= 1;
  expectError(openStatus(blob), "checksum mismatch");
}

// The chunks handed to a ParallelChunks may run in any order: run them
// backwards and check that every one ran once.
TEST(BlobContainerTest, ParallelChecksumMatchesAndCoversEveryChunk) {
  std::vector<char> blob = chunkedBlob();
  size_t calls = 0, chunksRun = 0;
  ParallelChunks backwards = [&](size_t count, const std::function<void(size_t)> &body) {
    ++calls;
    for (size_t i = count; i-- > 0;) {
      body(i);
      ++chunksRun;
    }
  };
  EXPECT_EQ(blobEnvelopeChecksum(blob.data(), blob.size(), backwards), get64(blob, 24));
  EXPECT_EQ(calls, 1u);
  EXPECT_EQ(chunksRun, 3u);
  ASSERT_TRUE(openBlob(blob.data(), blob.size(), kWhat, backwards).isOk());
  std::vector<char> source(blob.size() + 1);
  std::memcpy(source.data() + 1, blob.data(), blob.size());
  OwnedBlobBytes storage;
  Result<BlobView> copied =
      copyAndOpenBlob(source.data() + 1, blob.size(), kWhat, storage, backwards);
  ASSERT_TRUE(copied.isOk()) << copied.status().message();
  EXPECT_EQ(std::memcmp(storage.data(), blob.data(), blob.size()), 0);
  // A flipped byte in any chunk, the last one included, is caught either way.
  for (size_t at :
       {size_t(40), kBlobChecksumChunk + 31, kBlobChecksumChunk + 32, blob.size() - 1}) {
    SCOPED_TRACE("byte " + std::to_string(at));
    std::vector<char> bad = blob;
    bad[at] ^= 0x10;
    Result<BlobView> view = openBlob(bad.data(), bad.size(), kWhat, backwards);
    expectError(view.isOk() ? Status::ok() : view.status(), "checksum mismatch");
    OwnedBlobBytes scratch;
    Result<BlobView> copy = copyAndOpenBlob(bad.data(), bad.size(), kWhat, scratch, backwards);
    expectError(copy.isOk() ? Status::ok() : copy.status(), "checksum mismatch");
    EXPECT_TRUE(scratch.empty());
  }
}

TEST(BlobContainerTest, RefusesASectionOutOfBounds) {
  struct Case {
    uint64_t offset, size;
  };
  // Past the end; ending past the end; a size that would wrap; inside the
  // directory; inside the header.
  for (Case c : std::vector<Case>{
           {320, 8}, {256, 41}, {256, UINT64_MAX - 200}, {64, 8}, {0, 8}, {UINT64_MAX - 63, 64}}) {
    SCOPED_TRACE(std::to_string(c.offset) + "+" + std::to_string(c.size));
    std::vector<char> blob = twoSectionBlob();
    put64(blob, entry(1) + 8, c.offset);
    put64(blob, entry(1) + 16, c.size);
    reseal(blob);
    expectError(openStatus(blob), "section 1 'BBBB': bytes [");
    expectError(openStatus(blob), "lie outside the blob's 80..296 data area");
  }
}

TEST(BlobContainerTest, RefusesOverlappingSections) {
  std::vector<char> blob = twoSectionBlob();
  put64(blob, entry(1) + 8, 192); // inside AAAA's [128, 228)
  reseal(blob);
  expectError(openStatus(blob), "section 1 'BBBB' overlaps section 0 'AAAA'");

  // Empty sections take no bytes, so they overlap nothing.
  std::vector<char> empty = twoSectionBlob();
  put64(empty, entry(1) + 8, 192);
  put64(empty, entry(1) + 16, 0);
  reseal(empty);
  EXPECT_TRUE(openStatus(empty).isOk()) << openStatus(empty).message();
}

TEST(BlobContainerTest, RefusesAMisalignedSection) {
  std::vector<char> blob = twoSectionBlob();
  put64(blob, entry(1) + 8, 264); // 8-aligned, not 64
  put64(blob, entry(1) + 16, 32);
  reseal(blob);
  expectError(openStatus(blob), "section 1 'BBBB': offset 264 is not a multiple of its "
                                "alignment 64");
}

TEST(BlobContainerTest, RefusesBadAlignmentFields) {
  for (uint32_t alignment : {0u, 3u, 48u, 8192u}) {
    std::vector<char> blob = twoSectionBlob();
    put32(blob, entry(0) + 4, alignment);
    reseal(blob);
    expectError(openStatus(blob), "section 0 'AAAA': alignment " + std::to_string(alignment) +
                                      " is not a power of two");
  }
}

TEST(BlobContainerTest, RefusesADirectoryPastTheEnd) {
  for (uint32_t count : {12u, 1000u, UINT32_MAX}) {
    std::vector<char> blob = twoSectionBlob();
    put32(blob, 12, count);
    reseal(blob);
    expectError(openStatus(blob),
                "section directory of " + std::to_string(count) + " entries runs past the end");
  }
}

TEST(BlobContainerTest, RefusesDuplicateAndUnprintableTags) {
  std::vector<char> blob = twoSectionBlob();
  std::memcpy(&blob[entry(1)], "AAAA", 4);
  reseal(blob);
  expectError(openStatus(blob), "sections 0 and 1 share the tag 'AAAA'");

  std::vector<char> binary = twoSectionBlob();
  binary[entry(1) + 2] = '\n';
  reseal(binary);
  expectError(openStatus(binary), "section 1 0x42420a42: tag is not four printable");
}

TEST(BlobContainerTest, WriterRefusesBadSections) {
  char byte = 0;
  struct Case {
    std::vector<BlobSection> sections;
    std::string needle;
  };
  std::vector<Case> cases = {
      {{{"ABC", 64, &byte, 1}}, "tag 'ABC' is not four printable characters"},
      {{{"ABCDE", 64, &byte, 1}}, "tag 'ABCDE' is not four"},
      {{{"AB\tC", 64, &byte, 1}}, "is not four printable"},
      {{{"ABCD", 64, &byte, 1}, {"ABCD", 64, &byte, 1}}, "tag 'ABCD' appears twice"},
      {{{"ABCD", 0, &byte, 1}}, "alignment 0 is not a power of two"},
      {{{"ABCD", 24, &byte, 1}}, "alignment 24 is not a power of two"},
      {{{"ABCD", 8192, &byte, 1}}, "alignment 8192 is not a power of two up to 4096"},
      {{{"ABCD", 64, nullptr, 5}}, "5 bytes but no data"},
  };
  for (const Case &c : cases) {
    Result<std::vector<char>> blob = writeBlob(c.sections);
    ASSERT_FALSE(blob.isOk()) << c.needle;
    EXPECT_NE(blob.status().message().find(c.needle), std::string::npos) << blob.status().message();
  }
}

// copyAndOpenBlob: the same view as openBlob, over a page-aligned copy, for
// a source at any address; the same refusals, and nothing kept on failure.
TEST(BlobContainerTest, CopyAndOpenGivesTheSameViewOverAnAlignedCopy) {
  // Sections larger than the copy's 256 KiB pieces, so that the checksum is
  // taken over several of them.
  std::vector<char> a = pattern(600 << 10, 1), b = pattern(3, 2);
  Result<std::vector<char>> blob =
      writeBlob({{"AAAA", 64, a.data(), a.size()}, {"BBBB", 4096, b.data(), b.size()}});
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  const std::vector<char> &bytes = blob.value();
  for (size_t shift : {0, 1, 16, 63}) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    std::vector<char> source(bytes.size() + 64);
    std::memcpy(source.data() + shift, bytes.data(), bytes.size());
    OwnedBlobBytes storage;
    Result<BlobView> view = copyAndOpenBlob(source.data() + shift, bytes.size(), kWhat, storage);
    ASSERT_TRUE(view.isOk()) << view.status().message();
    ASSERT_FALSE(storage.empty());
    EXPECT_EQ(storage.size(), bytes.size());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(storage.data()) % 4096, 0u);
    EXPECT_EQ(std::memcmp(storage.data(), bytes.data(), bytes.size()), 0);
    ASSERT_EQ(view.value().sections.size(), 2u);
    const BlobSection &got = view.value().sections[0];
    EXPECT_EQ(got.data - storage.data(), int64_t(get64(bytes, entry(0) + 8)));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(view.value().sections[1].data) % 4096, 0u);
    EXPECT_EQ(std::memcmp(got.data, a.data(), a.size()), 0);
    // Moving the storage keeps the bytes where they are.
    const char *where = storage.data();
    OwnedBlobBytes moved = std::move(storage);
    EXPECT_TRUE(storage.empty());
    EXPECT_EQ(moved.data(), where);
  }
}

TEST(BlobContainerTest, CopyAndOpenRefusesWhatOpenRefuses) {
  std::vector<char> blob = twoSectionBlob();
  auto copyStatus = [](const std::vector<char> &bytes, size_t size) {
    OwnedBlobBytes storage;
    Result<BlobView> view = copyAndOpenBlob(bytes.data(), size, kWhat, storage);
    EXPECT_EQ(storage.empty(), !view.isOk());
    return view.isOk() ? Status::ok() : view.status();
  };
  for (size_t at = 0; at < blob.size(); ++at) {
    SCOPED_TRACE("byte " + std::to_string(at));
    std::vector<char> bad = blob;
    bad[at] ^= 0x5a;
    Status copied = copyStatus(bad, bad.size());
    Status opened = openStatus(bad);
    ASSERT_FALSE(copied.isOk());
    EXPECT_EQ(copied.message(), opened.message());
  }
  for (size_t length : {size_t(0), size_t(31), blob.size() - 1})
    expectError(copyStatus(blob, length), "truncated");
  std::vector<char> trailing = blob;
  trailing.push_back(0);
  expectError(copyStatus(trailing, trailing.size()), "1 trailing bytes");
  // A structural error found after the checksum also leaves nothing behind.
  std::vector<char> overlapping = blob;
  put64(overlapping, entry(1) + 8, get64(overlapping, entry(0) + 8));
  reseal(overlapping);
  expectError(copyStatus(overlapping, overlapping.size()), "overlaps");
}

TEST(BlobContainerTest, ChecksumIsXxh3OfTheBytes) {
  // Known XXH3-64 values pin the algorithm (a change would orphan every blob).
  EXPECT_EQ(blobChecksum("", 0), 0x2D06800538D394C2ull);
  EXPECT_EQ(blobChecksum("a", 1), 0xE6C632B61E964E1Full);
  EXPECT_NE(blobChecksum("ab", 2), blobChecksum("ba", 2));
}

//===----------------------------------------------------------------------===//
// The CPU blob
//===----------------------------------------------------------------------===//

const std::string kHostArch = "x86_64";
const std::vector<std::string> kHostFeatures = {"sse4.2", "avx2", "fma"};

std::unique_ptr<fb::TensorSignatureT> signature(std::string name, int32_t type,
                                                std::vector<int64_t> shape) {
  auto sig = std::make_unique<fb::TensorSignatureT>();
  sig->name = std::move(name);
  sig->element_type = type;
  sig->shape = std::move(shape);
  return sig;
}

std::unique_ptr<fb::BufferT> buffer(fb::BufferKind kind, int32_t type, std::vector<int64_t> shape,
                                    uint64_t size, std::string name) {
  auto b = std::make_unique<fb::BufferT>();
  b->kind = kind;
  b->element_type = type;
  b->shape = std::move(shape);
  b->size = size;
  b->name = std::move(name);
  return b;
}

constexpr int32_t kF32 = 1, kI64 = 7;
constexpr size_t kWeightsSize = 320;

// Every field set, and set away from its default, so that a field the writer
// or the reader drops shows in the round trip.
fb::PlanT validPlan() {
  fb::PlanT plan;
  plan.format_version = kCpuPlanFormatVersion;
  plan.ep_name = kCpuEpName;
  plan.ep_version = "0.1.0";
  plan.hardware_architecture = "x86_64+avx2+fma";
  plan.cpu_features = {"avx2", "fma"};
  plan.compiler_versions = "ortc 0.1.0, LLVM 22.1.8";
  plan.kernel_abi = kCpuKernelAbi;
  plan.partition_name = "cpu_ep_p0";
  plan.inputs.push_back(signature("x", kF32, {-1, 4}));
  plan.inputs.push_back(signature("ids", kI64, {3}));
  plan.outputs.push_back(signature("y", kF32, {-1, 2}));
  // Dim node 0 is symbol 0, "batch": -1 in a shape.
  plan.symbols = {"batch"};
  plan.dims.push_back(fb::DimNode(uint8_t(DimOp::Symbol), 0, 0));

  // Buffers: 0 x, 1 ids (inputs); 2 W, 3 B (weights); 4 t0, 5 t1 (arena);
  // 6 t0v (a view of t0); 7 y (output).
  using K = fb::BufferKind;
  plan.buffers.push_back(buffer(K::Input, kF32, {-1, 4}, 0, "x"));
  plan.buffers.push_back(buffer(K::Input, kI64, {3}, 24, "ids"));
  plan.buffers.back()->index = 1;
  plan.buffers.push_back(buffer(K::Weight, kF32, {4, 2}, 256, "W"));
  plan.buffers.back()->packing = "gemm_b"; // one 16-float panel per row: 4 * 16 * 4 bytes
  plan.buffers.push_back(buffer(K::Weight, kF32, {2}, 8, "B"));
  plan.buffers.back()->offset = 256;
  plan.buffers.push_back(buffer(K::Arena, kF32, {2, 2}, 16, "t0"));
  plan.buffers.push_back(buffer(K::Arena, kI64, {3}, 24, "t1"));
  plan.buffers.back()->offset = 128;
  plan.buffers.push_back(buffer(K::Alias, kF32, {2, 1, 2}, 16, "t0v"));
  plan.buffers.back()->alias_of = 4;
  plan.buffers.push_back(buffer(K::Output, kF32, {-1, 2}, 0, "y"));

  auto gemm = std::make_unique<fb::StepT>();
  gemm->kind = fb::StepKind::Library;
  gemm->callee = "Gemm";
  gemm->node = "gemm0";
  gemm->inputs = {0, 2, 3};
  gemm->outputs = {4};
  auto transB = std::make_unique<fb::IntsAttrT>();
  transB->name = "transB";
  transB->values = {1};
  gemm->ints.push_back(std::move(transB));
  auto perm = std::make_unique<fb::IntsAttrT>();
  perm->name = "perm";
  perm->values = {1, 0, -7};
  gemm->ints.push_back(std::move(perm));
  auto packedB = std::make_unique<fb::IntsAttrT>(); // W is packed as "gemm_b"
  packedB->name = "packed_b";
  packedB->values = {1};
  gemm->ints.push_back(std::move(packedB));
  auto alpha = std::make_unique<fb::FloatsAttrT>();
  alpha->name = "alpha";
  alpha->values = {1.5f, -0.25f};
  gemm->floats.push_back(std::move(alpha));
  auto mode = std::make_unique<fb::StringAttrT>();
  mode->name = "auto_pad";
  mode->value = "SAME_UPPER";
  gemm->strings.push_back(std::move(mode));
  plan.steps.push_back(std::move(gemm));

  auto add = std::make_unique<fb::StepT>();
  add->kind = fb::StepKind::Kernel;
  add->callee = "ortc_kernel_1";
  add->node = "add0,relu0";
  add->inputs = {6, -1, 5, 1};
  add->outputs = {7};
  plan.steps.push_back(std::move(add));

  plan.memory = std::make_unique<fb::MemoryPlanT>();
  plan.memory->alignment = 128;
  plan.memory->fixed_bytes = 256;
  plan.memory->naive_fixed_bytes = 384;
  return plan;
}

std::vector<char> elfCode() {
  std::vector<char> code = pattern(200, 9);
  const char magic[4] = {0x7f, 'E', 'L', 'F'};
  std::memcpy(code.data(), magic, 4);
  return code;
}

std::vector<char> packMeta(const fb::PlanT &plan) {
  flatbuffers::FlatBufferBuilder builder;
  fb::FinishPlanBuffer(builder, fb::Plan::Pack(builder, &plan));
  const char *p = reinterpret_cast<const char *>(builder.GetBufferPointer());
  return std::vector<char>(p, p + builder.GetSize());
}

// The envelope around any META, CODE and WGHT, bypassing writeCpuBlob's checks.
std::vector<char> rawCpuBlob(const std::vector<char> &meta,
                             const std::vector<char> &code = elfCode(),
                             const std::vector<char> &weights = pattern(kWeightsSize, 5)) {
  Result<std::vector<char>> blob = writeBlob({{"META", 64, meta.data(), meta.size()},
                                              {"CODE", 64, code.data(), code.size()},
                                              {"WGHT", 64, weights.data(), weights.size()}});
  EXPECT_TRUE(blob.isOk()) << blob.status().message();
  return blob.takeValue();
}

Status openCpuStatus(const std::vector<char> &blob,
                     const std::vector<std::string> &features = kHostFeatures,
                     const std::string &arch = kHostArch) {
  Result<CpuBlobView> view = openCpuBlob(blob.data(), blob.size(), kWhat, arch, features);
  return view.isOk() ? Status::ok() : view.status();
}

void expectSameShape(const std::vector<int64_t> &want, const flatbuffers::Vector<int64_t> *got) {
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(std::vector<int64_t>(got->begin(), got->end()), want);
}

void expectSameSignatures(
    const std::vector<std::unique_ptr<fb::TensorSignatureT>> &want,
    const flatbuffers::Vector<flatbuffers::Offset<fb::TensorSignature>> *got) {
  ASSERT_EQ(got->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got->Get(i)->name()->str(), want[i]->name);
    EXPECT_EQ(got->Get(i)->element_type(), want[i]->element_type);
    expectSameShape(want[i]->shape, got->Get(i)->shape());
  }
}

// Field by field, through the reader's accessors.
void expectSamePlan(const fb::PlanT &want, const fb::Plan &got) {
  EXPECT_EQ(got.format_version(), want.format_version);
  EXPECT_EQ(got.ep_name()->str(), want.ep_name);
  EXPECT_EQ(got.ep_version()->str(), want.ep_version);
  EXPECT_EQ(got.hardware_architecture()->str(), want.hardware_architecture);
  ASSERT_NE(got.cpu_features(), nullptr);
  ASSERT_EQ(got.cpu_features()->size(), want.cpu_features.size());
  for (size_t i = 0; i < want.cpu_features.size(); ++i)
    EXPECT_EQ(got.cpu_features()->Get(i)->str(), want.cpu_features[i]);
  EXPECT_EQ(got.compiler_versions()->str(), want.compiler_versions);
  EXPECT_EQ(got.kernel_abi(), want.kernel_abi);
  EXPECT_EQ(got.partition_name()->str(), want.partition_name);
  expectSameSignatures(want.inputs, got.inputs());
  expectSameSignatures(want.outputs, got.outputs());

  ASSERT_EQ(got.buffers()->size(), want.buffers.size());
  for (size_t i = 0; i < want.buffers.size(); ++i) {
    SCOPED_TRACE("buffer " + std::to_string(i));
    const fb::BufferT &w = *want.buffers[i];
    const fb::Buffer &g = *got.buffers()->Get(i);
    EXPECT_EQ(g.kind(), w.kind);
    EXPECT_EQ(g.element_type(), w.element_type);
    expectSameShape(w.shape, g.shape());
    EXPECT_EQ(g.index(), w.index);
    EXPECT_EQ(g.offset(), w.offset);
    EXPECT_EQ(g.size(), w.size);
    EXPECT_EQ(g.alias_of(), w.alias_of);
    EXPECT_EQ(g.name()->str(), w.name);
    EXPECT_EQ(g.packing() ? g.packing()->str() : std::string(), w.packing);
  }

  ASSERT_EQ(got.steps()->size(), want.steps.size());
  for (size_t i = 0; i < want.steps.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    const fb::StepT &w = *want.steps[i];
    const fb::Step &g = *got.steps()->Get(i);
    EXPECT_EQ(g.kind(), w.kind);
    EXPECT_EQ(g.callee()->str(), w.callee);
    EXPECT_EQ(g.node()->str(), w.node);
    EXPECT_EQ(std::vector<int32_t>(g.inputs()->begin(), g.inputs()->end()), w.inputs);
    EXPECT_EQ(std::vector<int32_t>(g.outputs()->begin(), g.outputs()->end()), w.outputs);
    size_t ints = g.ints() ? g.ints()->size() : 0;
    ASSERT_EQ(ints, w.ints.size());
    for (size_t a = 0; a < ints; ++a) {
      EXPECT_EQ(g.ints()->Get(a)->name()->str(), w.ints[a]->name);
      const auto *values = g.ints()->Get(a)->values();
      EXPECT_EQ(std::vector<int64_t>(values->begin(), values->end()), w.ints[a]->values);
    }
    size_t floats = g.floats() ? g.floats()->size() : 0;
    ASSERT_EQ(floats, w.floats.size());
    for (size_t a = 0; a < floats; ++a) {
      EXPECT_EQ(g.floats()->Get(a)->name()->str(), w.floats[a]->name);
      const auto *values = g.floats()->Get(a)->values();
      EXPECT_EQ(std::vector<float>(values->begin(), values->end()), w.floats[a]->values);
    }
    size_t strings = g.strings() ? g.strings()->size() : 0;
    ASSERT_EQ(strings, w.strings.size());
    for (size_t a = 0; a < strings; ++a) {
      EXPECT_EQ(g.strings()->Get(a)->name()->str(), w.strings[a]->name);
      EXPECT_EQ(g.strings()->Get(a)->value()->str(), w.strings[a]->value);
    }
  }

  EXPECT_EQ(got.memory()->alignment(), want.memory->alignment);
  EXPECT_EQ(got.memory()->fixed_bytes(), want.memory->fixed_bytes);
  ASSERT_EQ(got.symbols()->size(), want.symbols.size());
  EXPECT_EQ(got.symbols()->Get(0)->str(), want.symbols[0]);
  ASSERT_EQ(got.dims()->size(), want.dims.size());
  EXPECT_EQ(got.dims()->Get(0)->op(), want.dims[0].op());
  EXPECT_EQ(got.memory()->naive_fixed_bytes(), want.memory->naive_fixed_bytes);
}

TEST(CpuBlobTest, RoundTripsEveryPlanField) {
  fb::PlanT plan = validPlan();
  std::vector<char> code = elfCode(), weights = pattern(kWeightsSize, 5);
  Result<std::vector<char>> blob =
      writeCpuBlob(plan, code.data(), code.size(), weights.data(), weights.size());
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  const std::vector<char> &bytes = blob.value();
  Result<CpuBlobView> view =
      openCpuBlob(bytes.data(), bytes.size(), kWhat, kHostArch, kHostFeatures);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  const CpuBlobView &v = view.value();
  expectSamePlan(plan, *v.plan);

  // Unpacked and packed again, the plan is the same bytes: nothing was lost
  // that the field list above might have missed.
  std::unique_ptr<fb::PlanT> unpacked(v.plan->UnPack());
  EXPECT_EQ(packMeta(*unpacked), packMeta(plan));

  ASSERT_EQ(v.codeSize, code.size());
  EXPECT_EQ(std::memcmp(v.code, code.data(), code.size()), 0);
  ASSERT_EQ(v.weightsSize, weights.size());
  EXPECT_EQ(std::memcmp(v.weights, weights.data(), weights.size()), 0);
  EXPECT_EQ(size_t(v.weights - bytes.data()) % 64, 0u);
  EXPECT_EQ(size_t(v.code - bytes.data()) % 64, 0u);
  EXPECT_EQ(size_t(reinterpret_cast<const char *>(v.plan) - bytes.data()) < bytes.size(), true);
}

TEST(CpuBlobTest, RoundTripsEmptyWeightsAndNoFeatures) {
  fb::PlanT plan = validPlan();
  plan.cpu_features.clear();
  plan.hardware_architecture = "x86_64";
  plan.buffers.resize(2); // only the inputs: no weights, no arena
  plan.steps.clear();
  std::vector<char> code = elfCode();
  Result<std::vector<char>> blob = writeCpuBlob(plan, code.data(), code.size(), nullptr, 0);
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  Result<CpuBlobView> view =
      openCpuBlob(blob.value().data(), blob.value().size(), kWhat, kHostArch, {});
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view.value().weightsSize, 0u);
  EXPECT_EQ(view.value().plan->buffers()->size(), 2u);
}

// FlatBuffers does not align an empty vector's data, so a scalar's shape or an
// empty int list may sit off 8-byte alignment; nothing reads it, so it passes.
TEST(CpuBlobTest, AcceptsScalarsAndEmptyIntLists) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    fb::PlanT plan = validPlan();
    plan.inputs[1]->shape = {};
    plan.buffers[1]->shape = {};
    plan.buffers[1]->size = 8;
    plan.steps[0]->ints[variant % 2]->values = {};
    if (variant >= 2)
      plan.partition_name += "_"; // shifts the layout by a word or so
    std::vector<char> meta = packMeta(plan);
    Status status = openCpuStatus(rawCpuBlob(meta));
    EXPECT_TRUE(status.isOk()) << status.message();
  }
}

struct BreakCase {
  std::string name;
  std::function<void(fb::PlanT &)> breakIt;
  std::vector<std::string> needles;
  StatusCode code = StatusCode::InvalidArgument;
  bool writerRefuses = true; // false for the host checks
};

void runBreakCases(const std::vector<BreakCase> &cases) {
  // The unbroken plan must pass, or every case below proves nothing.
  ASSERT_TRUE(openCpuStatus(rawCpuBlob(packMeta(validPlan()))).isOk());
  for (const BreakCase &c : cases) {
    SCOPED_TRACE(c.name);
    fb::PlanT plan = validPlan();
    c.breakIt(plan);
    Status status = openCpuStatus(rawCpuBlob(packMeta(plan)));
    ASSERT_FALSE(status.isOk());
    EXPECT_EQ(status.code(), c.code) << status.message();
    for (const std::string &needle : c.needles)
      expectError(status, needle);

    std::vector<char> code = elfCode(), weights = pattern(kWeightsSize, 5);
    Result<std::vector<char>> written =
        writeCpuBlob(plan, code.data(), code.size(), weights.data(), weights.size());
    EXPECT_EQ(!written.isOk(), c.writerRefuses);
    if (!written.isOk()) {
      for (const std::string &needle : c.needles)
        EXPECT_NE(written.status().message().find(needle), std::string::npos)
            << written.status().message();
    }
  }
}

TEST(CpuBlobTest, RefusesAnotherEpOrVersion) {
  runBreakCases({
      {"ep", [](fb::PlanT &p) { p.ep_name = "cuda_ep"; }, {"blob belongs to EP 'cuda_ep'"}},
      {"format",
       [](fb::PlanT &p) { p.format_version = kCpuPlanFormatVersion + 1; },
       {"plan format_version " + std::to_string(kCpuPlanFormatVersion + 1) +
        " is not supported (this build reads " + std::to_string(kCpuPlanFormatVersion) + ")"},
       StatusCode::Unsupported},
      {"format 0",
       [](fb::PlanT &p) { p.format_version = 0; },
       {"format_version 0"},
       StatusCode::Unsupported},
      {"kernel abi",
       [](fb::PlanT &p) { p.kernel_abi = 99; },
       {"kernel_abi 99 is not supported"},
       StatusCode::Unsupported},
  });
}

TEST(CpuBlobTest, RefusesAnotherArchitectureOrMissingFeatures) {
  runBreakCases({
      {"arch",
       [](fb::PlanT &p) { p.hardware_architecture = "aarch64+neon"; },
       {"compiled for 'aarch64+neon', but the host is 'x86_64'"},
       StatusCode::Unsupported,
       false},
      {"arch prefix",
       [](fb::PlanT &p) { p.hardware_architecture = "x86_64h+avx2"; },
       {"but the host is 'x86_64'"},
       StatusCode::Unsupported,
       false},
      {"features",
       [](fb::PlanT &p) {
         p.cpu_features = {"avx2", "avx512f", "fma", "avx512bw"};
       },
       {"the host CPU lacks: avx512f, avx512bw"},
       StatusCode::Unsupported,
       false},
  });
  // The same blob opens on a host that has them.
  fb::PlanT plan = validPlan();
  plan.cpu_features = {"avx2", "avx512f"};
  EXPECT_TRUE(openCpuStatus(rawCpuBlob(packMeta(plan)), {"avx512f", "avx2"}).isOk());
  EXPECT_FALSE(openCpuStatus(rawCpuBlob(packMeta(plan)), {"avx512f", "avx2"}, "aarch64").isOk());
}

/// A sub-plan taking an f32 [2,2] and giving an i64 [3] (what the If step
/// below reads and writes); its header fields as the compiler fills them.
std::unique_ptr<fb::PlanT> branchPlan() {
  auto sub = std::make_unique<fb::PlanT>(validPlan());
  sub->inputs.clear();
  sub->outputs.clear();
  sub->buffers.clear();
  sub->steps.clear();
  sub->symbols.clear();
  sub->dims.clear();
  sub->inputs.push_back(signature("a", kF32, {2, 2}));
  sub->outputs.push_back(signature("b", kI64, {3}));
  using K = fb::BufferKind;
  sub->buffers.push_back(buffer(K::Input, kF32, {2, 2}, 16, "a"));
  sub->buffers.push_back(buffer(K::Output, kI64, {3}, 24, "b"));
  auto copy = std::make_unique<fb::StepT>();
  copy->kind = fb::StepKind::Library;
  copy->callee = "Copy";
  copy->inputs = {0};
  copy->outputs = {1};
  sub->steps.push_back(std::move(copy));
  sub->memory->fixed_bytes = 0;
  sub->memory->naive_fixed_bytes = 0;
  return sub;
}

/// A Loop body taking (iter, cond, a float32 [2,2]) and giving (cond, a
/// sequence of int64 holding iter).
std::unique_ptr<fb::PlanT> loopBodyMakingASequence() {
  auto body = branchPlan();
  body->inputs.clear();
  body->outputs.clear();
  body->buffers.clear();
  body->steps.clear();
  using K = fb::BufferKind;
  body->inputs.push_back(signature("iter", kI64, {}));
  body->inputs.push_back(signature("cond", 9, {}));
  body->inputs.push_back(signature("a", kF32, {2, 2}));
  body->outputs.push_back(signature("cond_out", 9, {}));
  body->outputs.push_back(signature("seq", kI64, {}));
  body->outputs.back()->container = fb::ContainerKind::Sequence;
  body->buffers.push_back(buffer(K::Input, kI64, {}, 8, "iter"));
  body->buffers.push_back(buffer(K::Input, 9, {}, 1, "cond"));
  body->buffers.back()->index = 1;
  body->buffers.push_back(buffer(K::Input, kF32, {2, 2}, 16, "a"));
  body->buffers.back()->index = 2;
  body->buffers.push_back(buffer(K::Output, 9, {}, 1, "cond_out"));
  body->buffers.push_back(buffer(K::Output, kI64, {}, 0, "seq"));
  body->buffers.back()->index = 1;
  body->buffers.back()->container = fb::ContainerKind::Sequence;
  auto copy = std::make_unique<fb::StepT>();
  copy->kind = fb::StepKind::Library;
  copy->callee = "Copy";
  copy->inputs = {1};
  copy->outputs = {3};
  body->steps.push_back(std::move(copy));
  auto make = std::make_unique<fb::StepT>();
  make->kind = fb::StepKind::Sequence;
  make->callee = "SequenceConstruct";
  make->inputs = {0};
  make->outputs = {4};
  body->steps.push_back(std::move(make));
  return body;
}

/// validPlan with an If step after the Gemm: condition `ids`, reading t0,
/// writing t1, its branches two sub-plans.
fb::PlanT planWithIf() {
  fb::PlanT plan = validPlan();
  plan.subplans.push_back(branchPlan());
  plan.subplans.push_back(branchPlan());
  auto step = std::make_unique<fb::StepT>();
  step->kind = fb::StepKind::If;
  step->callee = "If";
  step->node = "if0";
  step->inputs = {1, 4};
  step->outputs = {5};
  auto subplans = std::make_unique<fb::IntsAttrT>();
  subplans->name = "subplans";
  subplans->values = {0, 1};
  step->ints.push_back(std::move(subplans));
  plan.steps.insert(plan.steps.begin() + 1, std::move(step));
  return plan;
}

/// A checker of plans made by `make` and broken by each case: the verifier
/// must refuse each with `needle` in its message.
auto refuserOf(fb::PlanT (*make)()) {
  return [make](const char *name, std::function<void(fb::PlanT &)> breakIt,
                const std::string &needle) {
    SCOPED_TRACE(name);
    fb::PlanT plan = make();
    breakIt(plan);
    Status status = openCpuStatus(rawCpuBlob(packMeta(plan)));
    ASSERT_FALSE(status.isOk());
    expectError(status, needle);
  };
}

TEST(CpuBlobTest, RefusesBadControlFlowSteps) {
  auto refuses = refuserOf(planWithIf);
  // The unbroken plan passes, or the cases prove nothing.
  ASSERT_TRUE(openCpuStatus(rawCpuBlob(packMeta(planWithIf()))).isOk());
  refuses("no sub-plans attribute", [](fb::PlanT &p) { p.steps[1]->ints.clear(); },
          "an If step needs two sub-plans (then, else)");
  refuses("sub-plan out of range", [](fb::PlanT &p) { p.steps[1]->ints[0]->values = {0, 5}; },
          "sub-plan 5 of 2");
  refuses("no condition", [](fb::PlanT &p) { p.steps[1]->inputs = {-1, 4}; },
          "needs its condition (a tensor) as input 0");
  refuses("arity",
          [](fb::PlanT &p) { p.subplans[1]->inputs.push_back(signature("z", kF32, {1})); },
          "sub-plan 1 takes 2 inputs and gives 1 outputs, the step has 1 and 1");
  refuses("input type",
          [](fb::PlanT &p) {
            p.subplans[0]->inputs[0]->element_type = kI64;
            p.subplans[0]->buffers[0]->element_type = kI64;
            p.subplans[0]->buffers[0]->size = 32;
          },
          "sub-plan 0 input 0 differs in element type or container kind from the step's");
  refuses("output type",
          [](fb::PlanT &p) {
            p.subplans[0]->outputs[0]->element_type = kF32;
            p.subplans[0]->buffers[1]->element_type = kF32;
            p.subplans[0]->buffers[1]->size = 12;
          },
          "sub-plan 0 output 0 differs in element type or container kind from the step's");
  refuses("container kind",
          [](fb::PlanT &p) {
            // A branch that copies a sequence, under an If that passes tensors.
            fb::PlanT &branch = *p.subplans[0];
            for (auto *sig : {branch.inputs[0].get(), branch.outputs[0].get()}) {
              sig->container = fb::ContainerKind::Sequence;
              sig->shape.clear();
            }
            for (int b : {0, 1}) {
              branch.buffers[b]->container = fb::ContainerKind::Sequence;
              branch.buffers[b]->shape.clear();
              branch.buffers[b]->size = 0;
            }
            branch.steps[0]->kind = fb::StepKind::Sequence;
            branch.steps[0]->callee = "Identity";
          },
          "sub-plan 0 input 0 differs in element type or container kind from the step's");
  refuses("bad sub-plan buffer", [](fb::PlanT &p) { p.subplans[1]->buffers[1]->index = 3; },
          "sub-plan 1: buffer 1 'b' (Output): index 3 is out of range");
  refuses("data symbol", [](fb::PlanT &p) { p.data_symbols = {7}; },
          "data symbol 7 of 1 symbols");
  refuses("loop carrying a tensor into a container",
          [](fb::PlanT &p) {
            // Loop(M = ids, no cond, carried t0) whose body gives the carried
            // value back as a sequence (of its iteration number).
            p.steps[1]->kind = fb::StepKind::Loop;
            p.steps[1]->callee = "Loop";
            p.steps[1]->ints[0]->values = {0};
            auto carried = std::make_unique<fb::IntsAttrT>();
            carried->name = "carried";
            carried->values = {1};
            p.steps[1]->ints.push_back(std::move(carried));
            p.steps[1]->inputs = {1, -1, 4};
            p.buffers[5]->container = fb::ContainerKind::Sequence;
            p.buffers[5]->shape.clear();
            p.buffers[5]->size = 0;
            p.subplans[0] = loopBodyMakingASequence();
          },
          "carried value 0 starts and ends as different kinds");
  refuses("loop without carried count",
          [](fb::PlanT &p) {
            p.steps[1]->kind = fb::StepKind::Loop;
            p.steps[1]->ints[0]->values = {0};
          },
          "a Loop step needs one sub-plan and its carried count");
  refuses("nested too deep",
          [](fb::PlanT &p) {
            fb::PlanT *at = p.subplans[0].get();
            for (int depth = 0; depth < 40; ++depth) {
              at->subplans.push_back(branchPlan());
              at = at->subplans.back().get();
            }
          },
          "sub-plans nest deeper than 32");
}

/// validPlan with sequence steps after it: a sequence (buffer 8) made of
/// t0, its length (buffer 9), and t0 inserted again at position `ids`.
fb::PlanT planWithSequence() {
  fb::PlanT plan = validPlan();
  plan.buffers.push_back(buffer(fb::BufferKind::Arena, kF32, {}, 0, "seq"));
  plan.buffers.back()->container = fb::ContainerKind::Sequence;
  plan.buffers.push_back(buffer(fb::BufferKind::Arena, kI64, {}, 8, "len"));
  plan.buffers.back()->offset = 128;
  plan.buffers.push_back(buffer(fb::BufferKind::Arena, kF32, {}, 0, "seq2"));
  plan.buffers.back()->container = fb::ContainerKind::Sequence;
  auto step = [&](const char *op, std::vector<int32_t> in, std::vector<int32_t> out) {
    auto s = std::make_unique<fb::StepT>();
    s->kind = fb::StepKind::Sequence;
    s->callee = op;
    s->node = std::string(op) + "0";
    s->inputs = std::move(in);
    s->outputs = std::move(out);
    plan.steps.push_back(std::move(s));
  };
  step("SequenceConstruct", {4}, {8});
  step("SequenceLength", {8}, {9});
  step("SequenceInsert", {8, 4, 1}, {10});
  return plan;
}

// A container is only ever an operand where its op takes one: the executor
// reads a container's view as a SequenceValue.
// A buffer whose dims read a symbol that nothing binds (no input dim is that
// symbol alone, no input value or step gives it) could never run: the
// writer refuses it, so the compiler fails instead of writing a blob every
// load would refuse; the reader refuses it too, naming the buffer and the
// symbol.
TEST(CpuBlobTest, RefusesBuffersReadingUnboundSymbols) {
  auto unbound = [](fb::PlanT &p) {
    p.symbols.push_back("free");
    p.dims.push_back(fb::DimNode(uint8_t(DimOp::Symbol), 1, 0)); // code -2
    p.dims.push_back(fb::DimNode(uint8_t(DimOp::Add), 0, 1));    // batch + free: code -3
    p.buffers[5]->shape = {-3};
    p.buffers[5]->size = 0;
  };
  // Bound: the same sum over a symbol an input's dim gives.
  {
    fb::PlanT plan = validPlan();
    unbound(plan);
    plan.inputs[1]->shape = {-2};
    plan.buffers[1]->shape = {-2};
    plan.buffers[1]->size = 0;
    Status bound = openCpuStatus(rawCpuBlob(packMeta(plan)));
    ASSERT_TRUE(bound.isOk()) << "the bound case must pass: " << bound.message();
  }
  refuserOf(validPlan)("unbound", unbound,
                       "buffer 5 't1' reads symbol 'free', which is no input's dim or value, so "
                       "no run can bind it");
  fb::PlanT plan = validPlan();
  unbound(plan);
  std::vector<char> code = elfCode(), weights = pattern(kWeightsSize, 5);
  Result<std::vector<char>> written =
      writeCpuBlob(plan, code.data(), code.size(), weights.data(), weights.size());
  ASSERT_FALSE(written.isOk());
  EXPECT_NE(written.status().message().find("reads symbol 'free'"), std::string::npos)
      << written.status().message();
}

TEST(CpuBlobTest, RefusesMisusedContainers) {
  auto refuses = refuserOf(planWithSequence);
  ASSERT_TRUE(openCpuStatus(rawCpuBlob(packMeta(planWithSequence()))).isOk());
  refuses("a kernel reads a container", [](fb::PlanT &p) { p.steps[1]->inputs[0] = 8; },
          "buffer 8 'seq' is a container, which only sequence and control-flow steps take");
  refuses("a sequence made into a tensor", [](fb::PlanT &p) { p.steps[2]->outputs = {9}; },
          "SequenceConstruct output 0 is None, not Sequence");
  refuses("a tensor read as a sequence", [](fb::PlanT &p) { p.steps[3]->inputs = {4}; },
          "SequenceLength input 0 is None, not Sequence");
  refuses("a float position", [](fb::PlanT &p) { p.steps[4]->inputs[2] = 4; },
          "SequenceInsert input 2 is float32; positions and splits are int32 or int64");
  refuses("arity", [](fb::PlanT &p) { p.steps[3]->inputs = {8, 8}; },
          "SequenceLength takes 1 inputs and gives 1; the step has 2 and 1");
  // Every op's checks run on a step of any arity without reading past its
  // operands (a fuzzed blob: a SequenceConstruct with no outputs).
  refuses(
      "no outputs", [](fb::PlanT &p) { p.steps[2]->outputs.clear(); },
      "SequenceConstruct takes 1-N inputs and gives 1; the step has 1 and 0");
  refuses(
      "no operands",
      [](fb::PlanT &p) {
        p.steps[4]->inputs.clear();
        p.steps[4]->outputs.clear();
      },
      "SequenceInsert takes 2-3 inputs and gives 1; the step has 0 and 0");
  refuses("a container with a shape", [](fb::PlanT &p) { p.buffers[8]->shape = {2}; },
          "buffer 8 'seq' (Arena): a container (Sequence) has an empty shape, not [2]");
  refuses("a container in the weights",
          [](fb::PlanT &p) { p.buffers[8]->kind = fb::BufferKind::Weight; },
          "a container is an Input, an Output or an Arena buffer");
  refuses("a container of packed int4",
          [](fb::PlanT &p) { p.buffers[8]->element_type = 22; },
          "a container's elements are whole-byte tensors, not int4");
  refuses("an unknown container kind",
          [](fb::PlanT &p) { p.buffers[8]->container = fb::ContainerKind(9); },
          "unknown container kind 9");
}

TEST(CpuBlobTest, RefusesBadSignatures) {
  runBreakCases({
      {"input type",
       [](fb::PlanT &p) { p.inputs[0]->element_type = 0; },
       {"input 0 'x': element type 0 is not supported"}},
      {"output type",
       [](fb::PlanT &p) { p.outputs[0]->element_type = 8; },
       {"output 0 'y': element type 8 is not supported"}},
      {"input dim",
       [](fb::PlanT &p) {
         p.inputs[1]->shape = {3, -2};
       },
       {"input 1 'ids': dim 1 is -2"}},
      {"dim node out of range",
       [](fb::PlanT &p) {
         p.outputs[0]->shape = {-2, 2};
       },
       {"output 0 'y': dim 0 is -2 (dims are >= 0, or -(k + 1) for dim node k of 1)"}},
      {"bad dim table",
       [](fb::PlanT &p) { p.dims.push_back(fb::DimNode(uint8_t(DimOp::Add), 0, 1)); },
       {"dims: dim node 1 reads a node that does not precede it"}},
      {"unnamed symbol",
       [](fb::PlanT &p) { p.symbols.clear(); },
       {"dims: dim node 0 names symbol 0 of 0"}},
      {"check of a missing dim node",
       [](fb::PlanT &p) {
         auto check = std::make_unique<fb::DimCheckT>();
         check->a = -1;
         check->b = -3;
         check->what = "node 'add' input 1 dim 0";
         p.checks.push_back(std::move(check));
       },
       {"check 'node 'add' input 1 dim 0' names dim node 2 of 1"}},
      {"value symbol of a float input",
       [](fb::PlanT &p) { p.value_symbols.emplace_back(0, 0, 0); },
       {"value symbol 0 reads input 0, whose shape is not static and small"}},
      {"value symbol past the input's elements",
       [](fb::PlanT &p) { p.value_symbols.emplace_back(0, 1, 3); },
       {"value symbol 0 reads element 3 of input 1 (int64 [3]), not an int32 or int64 element"}},
      {"value symbol of a missing symbol",
       [](fb::PlanT &p) { p.value_symbols.emplace_back(1, 1, 0); },
       {"value symbol 1 names symbol 1 of 1 or input 1 of 2"}},
      {"element symbol of a symbol no step binds",
       [](fb::PlanT &p) { p.element_symbols.emplace_back(0, 5, 0); },
       {"element symbol 0 names no data symbol of 1 or buffer 5 of 8"}},
      {"element symbol past the buffer's elements",
       [](fb::PlanT &p) {
         p.data_symbols = {0};
         p.element_symbols.emplace_back(0, 5, 3);
       },
       {"element symbol 0 reads element 3 of buffer 5, not an int32 or int64 element of a "
        "static computed tensor"}},
      {"element symbol of a float input",
       [](fb::PlanT &p) {
         p.data_symbols = {0};
         p.element_symbols.emplace_back(0, 0, 0);
       },
       {"element symbol 0 reads element 0 of buffer 0, not an int32 or int64 element of a "
        "static computed tensor"}},
  });
}

TEST(CpuBlobTest, RefusesBuffersInconsistentWithTheirShapes) {
  using K = fb::BufferKind;
  runBreakCases({
      {"kind", [](fb::PlanT &p) { p.buffers[3]->kind = K(7); }, {"buffer 3 'B': unknown kind 7"}},
      {"negative kind",
       [](fb::PlanT &p) { p.buffers[3]->kind = K(-1); },
       {"buffer 3 'B': unknown kind -1"}},
      {"type",
       [](fb::PlanT &p) { p.buffers[4]->element_type = 99; },
       {"buffer 4 't0' (Arena): element type 99 is not supported"}},
      {"dim",
       [](fb::PlanT &p) { p.buffers[5]->shape = {-3}; },
       {"buffer 5 't1' (Arena): dim 0 is -3"}},
      {"size",
       [](fb::PlanT &p) { p.buffers[5]->size = 20; },
       {"buffer 5 't1' (Arena): size 20 bytes, but int64 [3] needs 24"}},
      {"symbolic size",
       [](fb::PlanT &p) { p.buffers[0]->size = 16; },
       {"buffer 0 'x' (Input): size 16 bytes, but float32 [d0,4] needs 0 (0: its size is known "
        "at run time)"}},
      {"long shape in a message",
       [](fb::PlanT &p) { p.buffers[5]->shape.assign(40, 1); },
       {"buffer 5 't1' (Arena): size 24 bytes, but int64 [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,...] "
        "needs 8"}},
      {"overflow",
       [](fb::PlanT &p) {
         p.buffers[5]->shape = {int64_t(1) << 40, int64_t(1) << 40};
       },
       {"buffer 5 't1' (Arena): shape [1099511627776,1099511627776] overflows 64 bits"}},
  });
}

TEST(CpuBlobTest, RefusesInputsAndOutputsThatDisagreeWithTheSignature) {
  runBreakCases({
      {"input index",
       [](fb::PlanT &p) { p.buffers[1]->index = 2; },
       {"buffer 1 'ids' (Input): index 2 is out of range (the partition has 2 inputs)"}},
      {"output index",
       [](fb::PlanT &p) { p.buffers[7]->index = 1; },
       {"buffer 7 'y' (Output): index 1 is out of range (the partition has 1 outputs)"}},
      {"input type",
       [](fb::PlanT &p) {
         p.buffers[1]->element_type = 6; // int32
         p.buffers[1]->size = 12;
       },
       {"buffer 1 'ids' (Input): int32 [3] differs from input 1 'ids', int64 [3]"}},
      {"input shape",
       [](fb::PlanT &p) {
         p.buffers[0]->shape = {-1, 5};
         p.buffers[0]->size = 0;
       },
       {"buffer 0 'x' (Input): float32 [d0,5] differs from input 0 'x', float32 [d0,4]"}},
      {"output rank",
       [](fb::PlanT &p) {
         p.buffers[7]->shape = {-1, 2, 1};
       },
       {"buffer 7 'y' (Output): float32 [d0,2,1] differs from output 0 'y', float32 [d0,2]"}},
  });
}

TEST(CpuBlobTest, RefusesWeightsOutsideWghtOrMisaligned) {
  runBreakCases({
      {"misaligned",
       [](fb::PlanT &p) { p.buffers[3]->offset = 32; },
       {"buffer 3 'B' (Weight): offset 32 in WGHT is not 64-byte aligned"}},
      {"outside",
       [](fb::PlanT &p) { p.buffers[3]->offset = 320; },
       {"buffer 3 'B' (Weight): bytes [320, +8) lie outside WGHT (320 bytes)"}},
      {"wraps",
       [](fb::PlanT &p) { p.buffers[3]->offset = UINT64_MAX - 63; },
       {"buffer 3 'B' (Weight): bytes [18446744073709551552, +8) lie outside WGHT"}},
      {"batched",
       [](fb::PlanT &p) {
         p.buffers[3]->shape = {-1, 2};
         p.buffers[3]->size = 0;
       },
       {"buffer 3 'B' (Weight): a weight cannot have a symbolic dim"}},
      {"row table without ROWS",
       [](fb::PlanT &p) { p.buffers[3]->row_table = true; },
       {"buffer 3 'B' (Weight): bytes [256, +8) lie outside ROWS (0 bytes)"}},
      {"row table that is no weight",
       [](fb::PlanT &p) { p.buffers[5]->row_table = true; },
       {"buffer 5 't1' (Arena): row_table applies to Weight buffers only"}},
  });
  // A weight that ends exactly at WGHT's end is fine.
  fb::PlanT plan = validPlan();
  plan.buffers[3]->shape = {16};
  plan.buffers[3]->size = 64;
  EXPECT_TRUE(openCpuStatus(rawCpuBlob(packMeta(plan))).isOk());
}

TEST(CpuBlobTest, RefusesBadPackings) {
  runBreakCases({
      {"unpacked size",
       [](fb::PlanT &p) { p.buffers[2]->size = 32; },
       {"buffer 2 'W' (Weight): size 32 bytes, but float32 [4,2] packed as 'gemm_b' needs 256"}},
      {"unknown",
       [](fb::PlanT &p) { p.buffers[2]->packing = "conv_w"; },
       {"buffer 2 'W' (Weight): unknown packing 'conv_w'"}},
      {"not a weight",
       [](fb::PlanT &p) { p.buffers[5]->packing = "gemm_b"; },
       {"buffer 5 't1' (Arena): packing 'gemm_b' applies to Weight buffers only"}},
      {"rank",
       [](fb::PlanT &p) {
         p.buffers[2]->shape = {4, 2, 1};
       },
       {"buffer 2 'W' (Weight): packing 'gemm_b' needs a float32 [K,N] weight, not float32 "
        "[4,2,1]"}},
      {"type",
       [](fb::PlanT &p) { p.buffers[2]->element_type = 11; },
       {"packing 'gemm_b' needs a float32 [K,N] weight, not float64 [4,2]"}},
      {"overflow",
       // 2^61 floats fit in 64 bits of bytes row-major, not once N is padded
       // to a 16-float panel; 2^59 rows overflow only at the bytes.
       [](fb::PlanT &p) {
         p.buffers[2]->shape = {int64_t(1) << 61, 1};
       },
       {"buffer 2 'W' (Weight): packed shape [2305843009213693952,1] overflows 64 bits"}},
      {"overflow in bytes",
       [](fb::PlanT &p) {
         p.buffers[2]->shape = {int64_t(1) << 59, 1};
       },
       {"buffer 2 'W' (Weight): packed shape [576460752303423488,1] overflows 64 bits"}},
  });
}

// The reader's size rule for 'gemm_b' must agree with the kernels' packer.
TEST(CpuBlobTest, GemmPackingSizeAgreesWithTheKernels) {
  for (int64_t K : {0, 1, 3, 64, 257})
    for (int64_t N : {0, 1, 15, 16, 17, 100, 1000}) {
      SCOPED_TRACE("K=" + std::to_string(K) + " N=" + std::to_string(N));
      fb::PlanT plan = validPlan();
      plan.buffers[2]->shape = {K, N};
      plan.buffers[2]->size = packedGemmBSize(K, N) * sizeof(float);
      plan.buffers[3]->offset = (plan.buffers[2]->size + 63) / 64 * 64;
      std::vector<char> weights(plan.buffers[3]->offset + 64);
      Status status = openCpuStatus(rawCpuBlob(packMeta(plan), elfCode(), weights));
      EXPECT_TRUE(status.isOk()) << status.message();
    }
}

// Packed weights are read only as what they are: "gemm_b" by a step with
// packed_b, "gemm_a" (Conv's W, packedGemmASize of [M, K]) by one with
// packed_w = 1, "gemm_bt" (Conv's W^T, packedGemmBSize of [K, M]) by one
// with packed_w = 2, "winograd_f2x3" (a 3x3 W as 16 gemm_a matrices [M, C])
// by one with packed_w = 4, "winograd_f4x3_bt" (36 gemm_b matrices [C, M])
// by one with packed_w = 7, each as input 1.
TEST(CpuBlobTest, PackedWeightsAndTheirReaders) {
  auto asConvWeight = [](fb::PlanT &p, std::vector<int64_t> shape, uint64_t bytes,
                         const char *packing = "gemm_a", int64_t flag = 1) {
    p.buffers[2]->packing = packing;
    p.buffers[2]->shape = std::move(shape);
    p.buffers[2]->size = bytes;
    p.steps[0]->ints[2]->name = "packed_w";
    p.steps[0]->ints[2]->values = {flag};
  };
  // W [7, 2, 3, 3] as W^T panels: 7 columns round up to 16, K = 18.
  fb::PlanT transposed = validPlan();
  asConvWeight(transposed, {7, 2, 3, 3}, packedGemmBSize(18, 7) * sizeof(float), "gemm_bt", 2);
  transposed.buffers[3]->offset = (transposed.buffers[2]->size + 63) / 64 * 64;
  std::vector<char> transposedWeights(transposed.buffers[3]->offset + 64);
  Status opened = openCpuStatus(rawCpuBlob(packMeta(transposed), elfCode(), transposedWeights));
  EXPECT_TRUE(opened.isOk()) << opened.message();
  EXPECT_EQ(packedGemmBSize(18, 7), 16u * 18);
  fb::PlanT ok = validPlan();
  // W [7, 2, 3, 3]: K = 18, 7 rows round up to 12.
  asConvWeight(ok, {7, 2, 3, 3}, packedGemmASize(7, 18) * sizeof(float));
  ok.buffers[3]->offset = (ok.buffers[2]->size + 63) / 64 * 64;
  std::vector<char> weights(ok.buffers[3]->offset + 64);
  EXPECT_TRUE(openCpuStatus(rawCpuBlob(packMeta(ok), elfCode(), weights)).isOk());
  EXPECT_EQ(packedGemmASize(7, 18), 12u * 18);
  // W [7, 2, 3, 3] for Winograd: 16 matrices of 7 rows rounded up to 12, C = 2.
  fb::PlanT winograd = validPlan();
  asConvWeight(winograd, {7, 2, 3, 3}, packedWinogradSize(7, 2, 2) * sizeof(float), "winograd_f2x3",
               4);
  winograd.buffers[3]->offset = (winograd.buffers[2]->size + 63) / 64 * 64;
  std::vector<char> winogradWeights(winograd.buffers[3]->offset + 64);
  opened = openCpuStatus(rawCpuBlob(packMeta(winograd), elfCode(), winogradWeights));
  EXPECT_TRUE(opened.isOk()) << opened.message();
  EXPECT_EQ(packedWinogradSize(7, 2, 2), 16u * 12 * 2);
  EXPECT_EQ(packedWinogradSize(7, 2, 4), 36u * 12 * 2);
  // The channels-last form, "winograd_f4x3_bt": 36 matrices U_xi^T [C, M]
  // as B panels, 7 columns rounded up to 16, read by packed_w = 7.
  fb::PlanT winogradBt = validPlan();
  asConvWeight(winogradBt, {7, 2, 3, 3}, packedWinogradChannelsLastSize(7, 2, 4) * sizeof(float),
               "winograd_f4x3_bt", 7);
  winogradBt.buffers[3]->offset = (winogradBt.buffers[2]->size + 63) / 64 * 64;
  std::vector<char> winogradBtWeights(winogradBt.buffers[3]->offset + 64);
  opened = openCpuStatus(rawCpuBlob(packMeta(winogradBt), elfCode(), winogradBtWeights));
  EXPECT_TRUE(opened.isOk()) << opened.message();
  EXPECT_EQ(packedWinogradChannelsLastSize(7, 2, 4), 36u * 2 * 16);
  EXPECT_EQ(packedWinogradChannelsLastSize(7, 2, 2), 16u * 2 * 16);
  winogradBt.steps[0]->ints[2]->values = {6};
  opened = openCpuStatus(rawCpuBlob(packMeta(winogradBt), elfCode(), winogradBtWeights));
  EXPECT_NE(opened.message().find("input 1 is packed as 'winograd_f4x3_bt', the step reads it as "
                                  "'winograd_f2x3_bt'"),
            std::string::npos)
      << opened.message();
  winogradBt.steps[0]->ints[2]->values = {7};
  winogradBt.buffers[2]->size -= 4;
  opened = openCpuStatus(rawCpuBlob(packMeta(winogradBt), elfCode(), winogradBtWeights));
  EXPECT_NE(opened.message().find("packed as 'winograd_f4x3_bt' needs 4608"), std::string::npos)
      << opened.message();
  // ... and read only by a step with packed_w = 4.
  winograd.steps[0]->ints[2]->values = {1};
  opened = openCpuStatus(rawCpuBlob(packMeta(winograd), elfCode(), winogradWeights));
  EXPECT_NE(opened.message().find("input 1 is packed as 'winograd_f2x3', the step reads it as "
                                  "'gemm_a'"),
            std::string::npos)
      << opened.message();

  runBreakCases({
      {"gemm_a of the wrong size",
       [&](fb::PlanT &p) {
         asConvWeight(p, {7, 2, 3, 3}, 7 * 18 * sizeof(float));
       },
       {"buffer 2 'W' (Weight): size 504 bytes, but float32 [7,2,3,3] packed as 'gemm_a' needs "
        "864"}},
      {"packed weight read unpacked",
       [](fb::PlanT &p) { p.steps[0]->ints.pop_back(); },
       {"step 0 'Gemm' (node 'gemm0'): input 1 is packed as 'gemm_b', which this step does not "
        "read"}},
      {"read as the other packing",
       [](fb::PlanT &p) { p.steps[0]->ints.back()->name = "packed_w"; },
       {"input 1 is packed as 'gemm_b', the step reads it as 'gemm_a'"}},
      {"gemm_bt of the wrong size",
       [&](fb::PlanT &p) {
         asConvWeight(p, {7, 2, 3, 3}, packedGemmASize(7, 18) * sizeof(float), "gemm_bt", 2);
       },
       {"buffer 2 'W' (Weight): size 864 bytes, but float32 [7,2,3,3] packed as 'gemm_bt' needs "
        "1152"}},
      {"gemm_bt read as gemm_a",
       [&](fb::PlanT &p) {
         asConvWeight(p, {2, 2, 1, 1}, packedGemmBSize(2, 2) * sizeof(float), "gemm_bt", 1);
       },
       {"input 1 is packed as 'gemm_bt', the step reads it as 'gemm_a'"}},
      {"winograd_f2x3 of the wrong size",
       [&](fb::PlanT &p) {
         asConvWeight(p, {7, 2, 3, 3}, packedGemmASize(7, 18) * sizeof(float), "winograd_f2x3", 4);
       },
       {"buffer 2 'W' (Weight): size 864 bytes, but float32 [7,2,3,3] packed as "
        "'winograd_f2x3' needs 1536"}},
      {"winograd_f2x3 of a 5x5 W",
       [&](fb::PlanT &p) {
         asConvWeight(p, {7, 2, 5, 5}, 4096, "winograd_f2x3", 4);
       },
       {"packing 'winograd_f2x3' needs a float32 [M,C,3,3] weight, not float32 [7,2,5,5]"}},
      {"packed flag on an unpacked weight",
       [](fb::PlanT &p) {
         p.buffers[2]->packing.clear();
         p.buffers[2]->size = 32;
       },
       {"input 1 is not packed, the step reads it as 'gemm_b'"}},
      // packed_inputs (a depthwise block's two weights) moves the packed
      // input; the one it leaves is read as it is.
      {"packed_inputs naming another input",
       [](fb::PlanT &p) {
         auto listed = std::make_unique<fb::IntsAttrT>();
         listed->name = "packed_inputs";
         listed->values = {0};
         p.steps[0]->ints.push_back(std::move(listed));
       },
       {"input 0 is not packed, the step reads it as 'gemm_b'"}},
      {"packed_inputs naming no input present",
       [](fb::PlanT &p) {
         p.buffers[2]->packing.clear();
         p.buffers[2]->size = 32;
         auto listed = std::make_unique<fb::IntsAttrT>();
         listed->name = "packed_inputs";
         listed->values = {5, 9};
         p.steps[0]->ints.push_back(std::move(listed));
       },
       {"a step that reads a packed weight takes it as input 5 or 9"}},
  });
  // Listed inputs past the step's own are absent, not packed.
  fb::PlanT listed = validPlan();
  auto inputs = std::make_unique<fb::IntsAttrT>();
  inputs->name = "packed_inputs";
  inputs->values = {1, 5};
  listed.steps[0]->ints.push_back(std::move(inputs));
  Status status = openCpuStatus(rawCpuBlob(packMeta(listed)));
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST(CpuBlobTest, RefusesArenaSlotsOutsideTheMemoryPlan) {
  runBreakCases({
      {"misaligned",
       [](fb::PlanT &p) { p.buffers[5]->offset = 64; },
       {"buffer 5 't1' (Arena): arena offset 64 is not a multiple of the alignment 128"}},
      {"fixed region",
       [](fb::PlanT &p) { p.buffers[5]->offset = 256; },
       {"buffer 5 't1' (Arena): arena bytes [256, +24) lie outside the fixed_bytes region "
        "(256 bytes)"}},
      {"wraps",
       [](fb::PlanT &p) { p.buffers[5]->offset = UINT64_MAX - 127; },
       {"buffer 5 't1' (Arena): arena bytes [18446744073709551488, +24) lie outside"}},
      {"alignment 0",
       [](fb::PlanT &p) { p.memory->alignment = 0; },
       {"memory plan: alignment 0 is not a power of two up to 4096"}},
      {"alignment 48",
       [](fb::PlanT &p) { p.memory->alignment = 48; },
       {"memory plan: alignment 48 is not a power of two"}},
      {"alignment 8192",
       [](fb::PlanT &p) { p.memory->alignment = 8192; },
       {"memory plan: alignment 8192 is not a power of two up to 4096"}},
  });
}

TEST(CpuBlobTest, RefusesBadAliases) {
  runBreakCases({
      {"none",
       [](fb::PlanT &p) { p.buffers[6]->alias_of = -1; },
       {"buffer 6 't0v' (Alias): alias_of -1 is not an earlier buffer"}},
      {"itself",
       [](fb::PlanT &p) { p.buffers[6]->alias_of = 6; },
       {"buffer 6 't0v' (Alias): alias_of 6 is not an earlier buffer"}},
      {"later",
       [](fb::PlanT &p) { p.buffers[6]->alias_of = 7; },
       {"buffer 6 't0v' (Alias): alias_of 7 is not an earlier buffer"}},
      {"size",
       [](fb::PlanT &p) {
         p.buffers[6]->shape = {2, 1, 3};
         p.buffers[6]->size = 24;
       },
       {"buffer 6 't0v' (Alias): 24 bytes differs from buffer 4, its alias_of, with 16"}},
      {"symbolic view of a static buffer",
       [](fb::PlanT &p) {
         p.buffers[6]->shape = {-1, 2};
         p.buffers[6]->size = 0;
       },
       {"buffer 6 't0v' (Alias): 0 bytes differs from buffer 4, its alias_of, with 16"}},
  });
}

TEST(CpuBlobTest, RefusesBadSteps) {
  runBreakCases({
      {"kind",
       [](fb::PlanT &p) { p.steps[0]->kind = fb::StepKind(6); },
       {"step 0 'Gemm' (node 'gemm0'): unknown kind 6"}},
      {"sequence step of an unknown op",
       [](fb::PlanT &p) { p.steps[0]->kind = fb::StepKind::Sequence; },
       {"step 0 'Gemm' (node 'gemm0'): no sequence step 'Gemm'"}},
      {"callee",
       [](fb::PlanT &p) { p.steps[1]->callee = ""; },
       {"step 1 '' (node 'add0,relu0'): empty callee"}},
      {"input past end",
       [](fb::PlanT &p) { p.steps[1]->inputs[1] = 8; },
       {"step 1 'ortc_kernel_1' (node 'add0,relu0'): input 1 is buffer 8, out of range [-1, "
        "8)"}},
      {"input below -1",
       [](fb::PlanT &p) { p.steps[0]->inputs[2] = -2; },
       {"step 0 'Gemm' (node 'gemm0'): input 2 is buffer -2, out of range"}},
      {"omitted output",
       [](fb::PlanT &p) { p.steps[0]->outputs[0] = -1; },
       {"step 0 'Gemm' (node 'gemm0'): output 0 is buffer -1, out of range [0, 8)"}},
      {"output past end",
       [](fb::PlanT &p) {
         p.steps[1]->outputs = {7, 8};
       },
       {"step 1 'ortc_kernel_1' (node 'add0,relu0'): output 1 is buffer 8, out of range"}},
      {"writes an input",
       [](fb::PlanT &p) { p.steps[0]->outputs[0] = 1; },
       {"step 0 'Gemm' (node 'gemm0'): output 0 is buffer 1 'ids', an Input: inputs and "
        "weights are read-only"}},
      {"writes a weight",
       [](fb::PlanT &p) { p.steps[1]->outputs[0] = 2; },
       {"output 0 is buffer 2 'W', a Weight: inputs and weights are read-only"}},
      {"writes through an alias of an input",
       [](fb::PlanT &p) {
         p.buffers.push_back(buffer(fb::BufferKind::Alias, kF32, {-1, 2, 2}, 0, "xv"));
         p.buffers.back()->alias_of = 0;
         p.steps[1]->outputs = {7, 8};
       },
       {"output 1 is buffer 8 'xv', a view of buffer 0 'x', an Input"}},
  });
}

TEST(CpuBlobTest, RefusesBadCodeMetaAndMissingSections) {
  std::vector<char> meta = packMeta(validPlan());
  std::vector<char> notElf = elfCode();
  notElf[1] = 'X';
  expectError(openCpuStatus(rawCpuBlob(meta, notElf)), "CODE section is not an ELF shared object");
  expectError(openCpuStatus(rawCpuBlob(meta, {})), "CODE section is not an ELF shared object");
  expectError(openCpuStatus(rawCpuBlob(meta, {'\x7f', 'E', 'L'})), "no ELF magic");

  expectError(openCpuStatus(rawCpuBlob(pattern(300, 7))), "META section is not a valid CPU plan");
  expectError(openCpuStatus(rawCpuBlob({})), "META section is not a valid CPU plan");
  // A valid FlatBuffer with another file identifier.
  std::vector<char> otherId = meta;
  std::memcpy(&otherId[4], "OGPU", 4);
  expectError(openCpuStatus(rawCpuBlob(otherId)), "FlatBuffer 'OCPU' verification failed");

  // A weight range the reader checks against the real WGHT size.
  expectError(openCpuStatus(rawCpuBlob(meta, elfCode(), pattern(64, 1))),
              "buffer 2 'W' (Weight): bytes [0, +256) lie outside WGHT (64 bytes)");

  std::vector<char> code = elfCode();
  Result<std::vector<char>> noWeights =
      writeBlob({{"META", 64, meta.data(), meta.size()}, {"CODE", 64, code.data(), code.size()}});
  ASSERT_TRUE(noWeights.isOk());
  expectError(openCpuStatus(noWeights.value()), "blob lacks the section(s) WGHT of a cpu_ep blob");
  Result<std::vector<char>> misaligned = writeBlob({{"META", 64, meta.data(), meta.size()},
                                                    {"CODE", 64, code.data(), code.size()},
                                                    {"WGHT", 8, code.data(), 8}});
  ASSERT_TRUE(misaligned.isOk());
  expectError(openCpuStatus(misaligned.value()),
              "section 'WGHT' is aligned to 8 bytes, a cpu_ep blob needs 64");
  Result<std::vector<char>> onlyCode = writeBlob({{"CODE", 64, code.data(), code.size()}});
  ASSERT_TRUE(onlyCode.isOk());
  expectError(openCpuStatus(onlyCode.value()), "lacks the section(s) META, WGHT");

  // The writer refuses code that is not a shared object.
  fb::PlanT plan = validPlan();
  std::vector<char> weights = pattern(kWeightsSize, 5);
  Result<std::vector<char>> written =
      writeCpuBlob(plan, notElf.data(), notElf.size(), weights.data(), weights.size());
  ASSERT_FALSE(written.isOk());
  EXPECT_NE(written.status().message().find("no ELF magic"), std::string::npos);
}

TEST(CpuBlobTest, EnvelopeErrorsNameTheBlob) {
  std::vector<char> blob = rawCpuBlob(packMeta(validPlan()));
  std::vector<char> truncated(blob.begin(), blob.begin() + blob.size() / 2);
  expectError(openCpuStatus(truncated), "truncated");
  std::vector<char> corrupted = blob;
  corrupted[blob.size() - 1] ^= 1;
  expectError(openCpuStatus(corrupted), "checksum mismatch");
}

TEST(CpuBlobTest, RefusesAnUnalignedBaseAddress) {
  std::vector<char> blob = rawCpuBlob(packMeta(validPlan()));
  std::vector<char> storage(blob.size() + 8);
  std::memcpy(storage.data() + 1, blob.data(), blob.size());
  Result<CpuBlobView> view =
      openCpuBlob(storage.data() + 1, blob.size(), kWhat, kHostArch, kHostFeatures);
  ASSERT_FALSE(view.isOk());
  expectError(view.status(), "blob bytes are not 8-byte aligned in memory");
}

TEST(CpuBlobTest, CopyOpensAnUnalignedBlobAndRefusesACorruptedOne) {
  fb::PlanT plan = validPlan();
  std::vector<char> code = elfCode(), weights = pattern(kWeightsSize, 5);
  Result<std::vector<char>> blob =
      writeCpuBlob(plan, code.data(), code.size(), weights.data(), weights.size());
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  std::vector<char> source(blob.value().size() + 8);
  std::memcpy(source.data() + 1, blob.value().data(), blob.value().size());
  OwnedBlobBytes storage;
  Result<CpuBlobView> view = openCpuBlobCopy(source.data() + 1, blob.value().size(), kWhat,
                                             kHostArch, kHostFeatures, storage);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  expectSamePlan(plan, *view.value().plan);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(view.value().weights) % 64, 0u);
  EXPECT_GE(view.value().weights, storage.data());
  EXPECT_LE(view.value().weights + view.value().weightsSize, storage.data() + storage.size());
  EXPECT_EQ(std::memcmp(view.value().weights, weights.data(), weights.size()), 0);

  // A corrupted byte, and a plan this host cannot run: refused, nothing kept.
  source[1 + blob.value().size() / 2] ^= 1;
  Result<CpuBlobView> corrupted = openCpuBlobCopy(source.data() + 1, blob.value().size(), kWhat,
                                                  kHostArch, kHostFeatures, storage);
  ASSERT_FALSE(corrupted.isOk());
  expectError(corrupted.status(), "checksum mismatch");
  EXPECT_TRUE(storage.empty());
  Result<CpuBlobView> elsewhere = openCpuBlobCopy(blob.value().data(), blob.value().size(), kWhat,
                                                  "aarch64", kHostFeatures, storage);
  ASSERT_FALSE(elsewhere.isOk());
  expectError(elsewhere.status(), "but the host is 'aarch64'");
  EXPECT_TRUE(storage.empty());
}

TEST(CpuBlobTest, WriterRefusesMissingTables) {
  std::vector<char> code = elfCode();
  fb::PlanT plan = validPlan();
  plan.memory.reset();
  Result<std::vector<char>> blob = writeCpuBlob(plan, code.data(), code.size(), nullptr, 0);
  ASSERT_FALSE(blob.isOk());
  EXPECT_NE(blob.status().message().find("cpu_ep blob of partition 'cpu_ep_p0': the plan has no "
                                         "memory plan"),
            std::string::npos)
      << blob.status().message();
  fb::PlanT nullStep = validPlan();
  nullStep.steps.emplace_back();
  blob = writeCpuBlob(nullStep, code.data(), code.size(), nullptr, 0);
  ASSERT_FALSE(blob.isOk());
  EXPECT_NE(blob.status().message().find("null step"), std::string::npos);
}

using Fbb = flatbuffers::FlatBufferBuilder;

// Hooks to build parts of META by hand, for layouts Pack() never writes.
struct HandBuilt {
  // A null offset: the plan's buffer `id`, packed.
  std::function<flatbuffers::Offset<fb::Buffer>(Fbb &, size_t id)> buffer;
  // Empty: the plan's steps, packed.
  std::function<std::vector<flatbuffers::Offset<fb::Step>>(Fbb &)> steps;
};

std::vector<char> handBuiltMeta(const fb::PlanT &plan, const HandBuilt &hooks) {
  Fbb fbb;
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  if (hooks.steps)
    steps = hooks.steps(fbb);
  if (steps.empty())
    for (const auto &step : plan.steps)
      steps.push_back(fb::Step::Pack(fbb, step.get()));
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers;
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    flatbuffers::Offset<fb::Buffer> b = hooks.buffer ? hooks.buffer(fbb, id) : 0;
    buffers.push_back(b.IsNull() ? fb::Buffer::Pack(fbb, plan.buffers[id].get()) : b);
  }
  std::vector<flatbuffers::Offset<fb::TensorSignature>> ins, outs;
  for (const auto &sig : plan.inputs)
    ins.push_back(fb::TensorSignature::Pack(fbb, sig.get()));
  for (const auto &sig : plan.outputs)
    outs.push_back(fb::TensorSignature::Pack(fbb, sig.get()));
  auto root = fb::CreatePlan(
      fbb, plan.format_version, fbb.CreateString(plan.ep_name), fbb.CreateString(plan.ep_version),
      fbb.CreateString(plan.hardware_architecture), fbb.CreateVectorOfStrings(plan.cpu_features),
      fbb.CreateString(plan.compiler_versions), plan.kernel_abi,
      fbb.CreateString(plan.partition_name), fbb.CreateVector(ins), fbb.CreateVector(outs),
      fbb.CreateVector(buffers), fbb.CreateVector(steps),
      fb::MemoryPlan::Pack(fbb, plan.memory.get()), fbb.CreateVectorOfStrings(plan.symbols),
      fbb.CreateVectorOfStructs(plan.dims));
  fb::FinishPlanBuffer(fbb, root);
  const char *p = reinterpret_cast<const char *>(fbb.GetBufferPointer());
  return std::vector<char>(p, p + fbb.GetSize());
}

// An int64 vector whose elements sit 4 bytes off 8-byte alignment: the
// verifier only checks the 4-byte length word. The finished buffer's size is
// a multiple of 8, so alignment from its end is alignment in the buffer.
flatbuffers::Offset<flatbuffers::Vector<int64_t>> misalignedInt64s(Fbb &fbb,
                                                                   std::vector<int64_t> values) {
  fbb.StartVector(values.size() * 2, sizeof(int32_t));
  if ((fbb.GetSize() + values.size() * 8) % 8 == 0)
    fbb.PushElement<int32_t>(0); // padding before the data, outside the vector
  for (size_t i = values.size(); i-- > 0;) {
    fbb.PushElement(int32_t(uint64_t(values[i]) >> 32));
    fbb.PushElement(int32_t(uint64_t(values[i])));
  }
  return flatbuffers::Offset<flatbuffers::Vector<int64_t>>(fbb.EndVector(values.size()));
}

TEST(CpuBlobTest, RefusesMisalignedInt64Vectors) {
  fb::PlanT plan = validPlan();
  // The hand builder itself is faithful: the unmodified plan passes.
  ASSERT_TRUE(openCpuStatus(rawCpuBlob(handBuiltMeta(plan, {}))).isOk());

  HandBuilt shape;
  shape.buffer = [&](Fbb &fbb, size_t id) -> flatbuffers::Offset<fb::Buffer> {
    if (id != 5)
      return 0;
    const fb::BufferT &b = *plan.buffers[id];
    auto dims = misalignedInt64s(fbb, b.shape);
    return fb::CreateBuffer(fbb, b.kind, b.element_type, dims, b.index, b.offset, b.size,
                            b.alias_of, fbb.CreateString(b.name));
  };
  std::vector<char> meta = handBuiltMeta(plan, shape);
  const auto *dims = fb::GetPlan(meta.data())->buffers()->Get(5)->shape();
  ASSERT_EQ(dims->size(), 1u);
  ASSERT_NE(reinterpret_cast<uintptr_t>(dims->data()) % 8, 0u); // the test's own premise
  expectError(openCpuStatus(rawCpuBlob(meta)),
              "buffer 5 't1' (Arena): shape vector is not 8-byte aligned in META");

  HandBuilt attr;
  attr.steps = [&](Fbb &fbb) {
    auto values = misalignedInt64s(fbb, {1, 2});
    std::vector<flatbuffers::Offset<fb::IntsAttr>> ints = {
        fb::CreateIntsAttr(fbb, fbb.CreateString("perm"), values)};
    auto intsVector = fbb.CreateVector(ints);
    const fb::StepT &s = *plan.steps[0];
    std::vector<flatbuffers::Offset<fb::Step>> steps = {
        fb::CreateStep(fbb, s.kind, fbb.CreateString(s.callee), fbb.CreateString(s.node),
                       fbb.CreateVector(s.inputs), fbb.CreateVector(s.outputs), intsVector)};
    return steps;
  };
  meta = handBuiltMeta(plan, attr);
  const auto *perm = fb::GetPlan(meta.data())->steps()->Get(0)->ints()->Get(0)->values();
  ASSERT_EQ(perm->size(), 2u);
  ASSERT_NE(reinterpret_cast<uintptr_t>(perm->data()) % 8, 0u);
  expectError(openCpuStatus(rawCpuBlob(meta)),
              "step 0 'Gemm' (node 'gemm0'): attribute 'perm' values are not 8-byte aligned");
}

// Many steps sharing one long inputs vector: legal for FlatBuffers' verifier,
// but quadratic to walk; the reader refuses instead of spinning.
TEST(CpuBlobTest, RefusesSharedVectorsThatOutgrowMeta) {
  fb::PlanT plan = validPlan();
  HandBuilt shared;
  shared.steps = [](Fbb &fbb) {
    auto inputs = fbb.CreateVector(std::vector<int32_t>(20000, 0));
    auto outputs = fbb.CreateVector(std::vector<int32_t>{4});
    auto callee = fbb.CreateString("k");
    std::vector<flatbuffers::Offset<fb::Step>> steps;
    for (int i = 0; i < 2000; ++i)
      steps.push_back(fb::CreateStep(fbb, fb::StepKind::Kernel, callee, 0, inputs, outputs));
    return steps;
  };
  expectError(openCpuStatus(rawCpuBlob(handBuiltMeta(plan, shared))), "shared vectors");

  // The same with one long shared attribute.
  HandBuilt sharedAttr;
  sharedAttr.steps = [](Fbb &fbb) {
    auto values = fbb.CreateVector(std::vector<float>(20000, 1.0f));
    std::vector<flatbuffers::Offset<fb::FloatsAttr>> floats = {
        fb::CreateFloatsAttr(fbb, fbb.CreateString("alpha"), values)};
    auto floatsVector = fbb.CreateVector(floats);
    auto inputs = fbb.CreateVector(std::vector<int32_t>{0});
    auto outputs = fbb.CreateVector(std::vector<int32_t>{4});
    auto callee = fbb.CreateString("k");
    std::vector<flatbuffers::Offset<fb::Step>> steps;
    for (int i = 0; i < 2000; ++i)
      steps.push_back(
          fb::CreateStep(fbb, fb::StepKind::Kernel, callee, 0, inputs, outputs, 0, floatsVector));
    return steps;
  };
  expectError(openCpuStatus(rawCpuBlob(handBuiltMeta(plan, sharedAttr))), "shared vectors");
}

// Random edits to META, checksum recomputed: the reader must answer, never
// crash (run under ASan/UBSan to see more than a crash).
TEST(CpuBlobTest, SurvivesRandomlyEditedMeta) {
  // Plans with sub-plans and containers too: the recursion and the
  // per-op container checks must hold up as well.
  for (const fb::PlanT &plan : {validPlan(), planWithIf(), planWithSequence()}) {
    std::vector<char> meta = packMeta(plan);
    std::mt19937 rng(1234);
    int refused = 0;
    for (int iteration = 0; iteration < 3000; ++iteration) {
      std::vector<char> edited = meta;
      int edits = 1 + int(rng() % 4);
      for (int e = 0; e < edits; ++e)
        edited[rng() % edited.size()] = char(rng());
      Status status = openCpuStatus(rawCpuBlob(edited));
      if (!status.isOk()) {
        ++refused;
        EXPECT_EQ(status.message().find('\n'), std::string::npos) << status.message();
        EXPECT_EQ(status.message().rfind(kWhat + ": ", 0), 0u) << status.message();
      }
    }
    EXPECT_GT(refused, 1000);
  }
}

} // namespace
