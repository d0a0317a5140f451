//===- FuzzCpuBlob.cpp - a CPU EP blob through its verifier ---------------===//
//
// openCpuBlob is what stands between a blob's bytes and the plan executor.
// The envelope's checksum would turn away almost every mutation before the
// plan is read, so the target writes the checksum the mutated bytes should
// carry (an input of at least the 32-byte header): what is fuzzed is every
// check after it. The bytes are copied to 64-byte aligned memory, as a mapped
// sidecar would be.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/blob/CpuBlob.h"
#include "providers/cpu/runtime/HostCpu.h"
#include "runtime/support/BlobContainer.h"

#include <cstdlib>
#include <cstring>
#include <memory>

namespace {
struct AlignedFree {
  void operator()(char *p) const { std::free(p); }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string architecture = ortc::cpu::hostArchitecture();
  static const std::vector<std::string> features = ortc::cpu::hostCpuFeatures();
  std::unique_ptr<char, AlignedFree> copy(
      static_cast<char *>(std::aligned_alloc(64, (size + 63) / 64 * 64 + 64)));
  if (size)
    std::memcpy(copy.get(), data, size);
  if (size >= 32) {
    std::memset(copy.get() + 24, 0, 8);
    uint64_t checksum = ortc::blobEnvelopeChecksum(copy.get(), size);
    std::memcpy(copy.get() + 24, &checksum, 8);
  }
  (void)ortc::cpu::openCpuBlob(copy.get(), size, "fuzz blob", architecture, features);
  return 0;
}
