//===- FuzzPaths.cpp - external-data and sidecar path resolution ----------===//
//
// Both the importer (external data) and the runtime (EPContext sidecars)
// resolve a model's file names with resolveFileBesideModel. Each input is a
// location, tried against a model folder holding what a hostile model might
// point at: plain and nested files, an empty file, a folder, a FIFO, a
// symlink out of the folder, a symlink inside it and a symlink loop. A
// location that resolves must name a regular file inside the folder.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/ExternalData.h"
#include "test/fuzz/FuzzSupport.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

std::string makeModelFolder() {
  std::string root = ortc::fuzz::scratchFolder("paths");
  std::string model = root + "/model";
  fs::create_directories(model + "/sub/deeper");
  fs::create_directories(model + "/folder");
  const uint8_t bytes[16] = {1, 2, 3, 4};
  ortc::fuzz::writeWholeFile(model + "/weights.bin", bytes, sizeof(bytes));
  ortc::fuzz::writeWholeFile(model + "/sub/deeper/w.bin", bytes, sizeof(bytes));
  ortc::fuzz::writeWholeFile(model + "/empty.bin", bytes, 0);
  ortc::fuzz::writeWholeFile(root + "/outside.bin", bytes, sizeof(bytes));
  mkfifo((model + "/pipe").c_str(), 0600);
  fs::create_symlink("../outside.bin", model + "/out.bin");
  fs::create_symlink(root + "/outside.bin", model + "/absolute_out.bin");
  fs::create_symlink("sub/deeper/w.bin", model + "/inside.bin");
  fs::create_symlink("loop.bin", model + "/loop.bin");
  return model;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string modelDir = makeModelFolder();
  static const std::string canonicalDir = fs::canonical(modelDir).string();
  std::string location(reinterpret_cast<const char *>(data), size);
  std::string resolved, error;
  if (!ortc::resolveFileBesideModel(modelDir, location, resolved, error))
    return 0;
  // What resolves must be a regular file inside the folder.
  struct stat info;
  if (resolved.compare(0, canonicalDir.size() + 1, canonicalDir + "/") != 0 ||
      stat(resolved.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    std::fprintf(stderr, "'%s' resolved to '%s', which is not a file inside '%s'\n",
                 location.c_str(), resolved.c_str(), canonicalDir.c_str());
    std::abort();
  }
  auto mapped = ortc::MappedFile::open(resolved, error);
  if (mapped && mapped->size() && mapped->data()[0] != 1 && mapped->data()[0] != 0)
    std::abort(); // not one of the files above
  return 0;
}
