//===- FuzzSupport.cpp - what the libFuzzer targets share -----------------===//

#include "test/fuzz/FuzzSupport.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <unistd.h>
#include <vector>

namespace ortc::fuzz {
namespace {

struct ScratchFolders {
  std::map<std::string, std::string> byName;
  ~ScratchFolders() {
    std::error_code ignored;
    for (auto &entry : byName)
      std::filesystem::remove_all(entry.second, ignored);
  }
};

} // namespace

std::string scratchFolder(const std::string &name) {
  static ScratchFolders folders;
  auto found = folders.byName.find(name);
  if (found != folders.byName.end())
    return found->second;
  const char *tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ortc-fuzz-" + name + "-XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::perror(("ortc fuzz: mkdtemp " + pattern).c_str());
    std::abort();
  }
  folders.byName[name] = pattern;
  return pattern;
}

void writeWholeFile(const std::string &path, const uint8_t *data, size_t size) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file || (size && std::fwrite(data, 1, size, file) != size) || std::fclose(file) != 0) {
    std::perror(("ortc fuzz: writing " + path).c_str());
    std::abort();
  }
}

std::string modelInScratchFolder(const std::string &name) {
  std::string dir = scratchFolder(name);
  std::vector<uint8_t> weights(4096);
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = uint8_t(i * 7);
  writeWholeFile(dir + "/weights.bin", weights.data(), weights.size());
  return dir + "/model.onnx";
}

} // namespace ortc::fuzz

// The options scripts/test.sh gives every ASan run, built into the targets so
// that replaying an input by hand behaves the same (ASAN_OPTIONS overrides).
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1:use_sigaltstack=0:allow_user_poisoning=0";
}
