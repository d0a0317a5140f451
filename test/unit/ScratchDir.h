//===- ScratchDir.h - a directory a test removes when it ends ---*- C++ -*-===//
//
// Every unit test that writes files writes them into a ScratchDir: a fresh
// directory made with mkdtemp under testing::TempDir() and removed, with all
// it holds, by the destructor, so a test leaves nothing behind whether it
// passes, fails an EXPECT or returns early from a failed ASSERT. Only the
// standard library, POSIX and gtest: the C API tests include it too.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TEST_UNIT_SCRATCHDIR_H
#define ORTC_TEST_UNIT_SCRATCHDIR_H

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <stdlib.h>
#include <string>
#include <system_error>
#include <vector>

namespace ortc::testutil {

class ScratchDir {
public:
  /// A new directory `<TempDir>/<tag>-XXXXXX`; throws (which gtest reports as
  /// a failure of the test) when it cannot be made.
  explicit ScratchDir(const std::string &tag = "ortc") {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / (tag + "-XXXXXX")).string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!::mkdtemp(buffer.data()))
      throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
    path_ = buffer.data();
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  /// The directory, without a trailing slash.
  const std::string &path() const { return path_; }
  /// `name` inside the directory.
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

} // namespace ortc::testutil

#endif // ORTC_TEST_UNIT_SCRATCHDIR_H
