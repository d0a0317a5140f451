//===- FuzzSupport.h - what the libFuzzer targets share ---------*- C++ -*-===//
#ifndef ORTC_TEST_FUZZ_FUZZSUPPORT_H
#define ORTC_TEST_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace ortc::fuzz {

/// A fresh folder of this process's own under $TMPDIR (or /tmp), made once
/// per `name` and removed at exit.
std::string scratchFolder(const std::string &name);

/// Writes `size` bytes to `path`, replacing it; aborts on failure (a target
/// that cannot write its scratch file tests nothing).
void writeWholeFile(const std::string &path, const uint8_t *data, size_t size);

/// `model.onnx` in the scratch folder `name`, beside the `weights.bin` (4 KiB)
/// that the model seeds with external data point into.
std::string modelInScratchFolder(const std::string &name);

} // namespace ortc::fuzz

#endif // ORTC_TEST_FUZZ_FUZZSUPPORT_H
