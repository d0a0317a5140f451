//===- ExternalDataTest.cpp - path safety for external data and sidecars --===//

#include "runtime/support/ExternalData.h"

#include "test/unit/ScratchDir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

class ExternalDataTest : public ::testing::Test {
protected:
  void SetUp() override {
    root = scratch.path();
    modelDir = root + "/model";
    ASSERT_EQ(::mkdir(modelDir.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((modelDir + "/sub").c_str(), 0755), 0);
    write(modelDir + "/weights.bin", "abcdefgh");
    write(modelDir + "/sub/w.bin", "1234");
    write(root + "/outside.bin", "secret");
  }
  static void write(const std::string &path, const std::string &text) {
    std::ofstream(path) << text;
  }
  bool resolve(const std::string &location, std::string &resolved, std::string &error) {
    return ortc::resolveFileBesideModel(modelDir, location, resolved, error);
  }
  ortc::testutil::ScratchDir scratch{"ortc-extdata"};
  std::string root, modelDir;
};

TEST_F(ExternalDataTest, AcceptsPlainRelativeNames) {
  std::string resolved, error;
  EXPECT_TRUE(resolve("weights.bin", resolved, error)) << error;
  EXPECT_EQ(resolved.substr(resolved.size() - 11), "weights.bin");
  EXPECT_TRUE(resolve("sub/w.bin", resolved, error)) << error;
  EXPECT_TRUE(resolve("./weights.bin", resolved, error)) << error;
}

TEST_F(ExternalDataTest, RefusesAbsolutePaths) {
  std::string resolved, error;
  EXPECT_FALSE(resolve(root + "/outside.bin", resolved, error));
  EXPECT_NE(error.find("absolute"), std::string::npos) << error;
}

TEST_F(ExternalDataTest, RefusesDotDotComponents) {
  std::string resolved, error;
  EXPECT_FALSE(resolve("../outside.bin", resolved, error));
  EXPECT_NE(error.find(".."), std::string::npos) << error;
  EXPECT_FALSE(resolve("sub/../../outside.bin", resolved, error));
  // A name that merely contains dots is fine.
  write(modelDir + "/w..bin", "x");
  EXPECT_TRUE(resolve("w..bin", resolved, error)) << error;
}

TEST_F(ExternalDataTest, RefusesSymlinksThatLeaveTheFolder) {
  ASSERT_EQ(::symlink((root + "/outside.bin").c_str(), (modelDir + "/link.bin").c_str()), 0);
  ASSERT_EQ(::symlink(root.c_str(), (modelDir + "/up").c_str()), 0);
  std::string resolved, error;
  EXPECT_FALSE(resolve("link.bin", resolved, error));
  EXPECT_NE(error.find("outside"), std::string::npos) << error;
  EXPECT_FALSE(resolve("up/outside.bin", resolved, error));
  // A symlink that stays inside is followed.
  ASSERT_EQ(::symlink("weights.bin", (modelDir + "/inside.bin").c_str()), 0);
  EXPECT_TRUE(resolve("inside.bin", resolved, error)) << error;
}

TEST_F(ExternalDataTest, RefusesMissingEmptyAndNonRegular) {
  std::string resolved, error;
  EXPECT_FALSE(resolve("missing.bin", resolved, error));
  EXPECT_NE(error.find("missing.bin"), std::string::npos) << error;
  EXPECT_FALSE(resolve("", resolved, error));
  EXPECT_FALSE(resolve("sub", resolved, error));
  EXPECT_NE(error.find("regular"), std::string::npos) << error;
  EXPECT_FALSE(resolve(std::string("weights.bin\0x", 13), resolved, error));
  EXPECT_FALSE(resolve("sub\\w.bin", resolved, error));
}

TEST_F(ExternalDataTest, MapsWholeFilesReadOnly) {
  std::string error;
  auto file = ortc::MappedFile::open(modelDir + "/weights.bin", error);
  ASSERT_TRUE(file) << error;
  ASSERT_EQ(file->size(), 8u);
  EXPECT_EQ(std::string(file->data(), 8), "abcdefgh");
  EXPECT_FALSE(ortc::MappedFile::open(modelDir + "/nope.bin", error));
  EXPECT_NE(error.find("nope.bin"), std::string::npos);
}

} // namespace
