//===- FuzzNpy.cpp - the .npy reader of `ortc run` ------------------------===//
//
// readNpy reads a path, so each input becomes a scratch file first.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/Npy.h"
#include "test/fuzz/FuzzSupport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = ortc::fuzz::scratchFolder("npy") + "/input.npy";
  ortc::fuzz::writeWholeFile(path, data, size);
  (void)ortc::readNpy(path);
  return 0;
}
