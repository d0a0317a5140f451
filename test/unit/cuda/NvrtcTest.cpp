//===- NvrtcTest.cpp - CUDA C++ to cubin and PTX, without a GPU -----------===//
//
// providers/cuda/compile/Nvrtc.h: a kernel compiles for sm_90 into a CUDA
// ELF that holds its symbol, PTX for compute_90, and a ptxas report without
// spills; a broken kernel gives NVRTC's error line; hostile cubins are
// refused, not read past their end.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/compile/Nvrtc.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using ortc::cuda::CudaArch;
using ortc::cuda::CudaBinary;

const char *kAddKernel = R"(
extern "C" __global__ void add_f32(const float *a, const float *b, float *y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a[i] + b[i];
}
)";

TEST(CudaArch, ParsesNvrtcNames) {
  std::optional<CudaArch> arch = ortc::cuda::parseCudaArch("sm_90");
  ASSERT_TRUE(arch);
  EXPECT_EQ(arch->major, 9);
  EXPECT_EQ(arch->minor, 0);
  EXPECT_EQ(arch->name(), "sm_90");
  EXPECT_EQ(arch->virtualName(), "compute_90");
  EXPECT_EQ(ortc::cuda::parseCudaArch("86")->name(), "sm_86");
  EXPECT_EQ(ortc::cuda::parseCudaArch("sm_100")->name(), "sm_100");
  for (const char *bad : {"", "sm_", "sm_9", "sm_3x", "compute_90", "sm_35", "sm_1000"})
    EXPECT_FALSE(ortc::cuda::parseCudaArch(bad)) << bad;
}

TEST(Nvrtc, CompilesAKernelToCubinAndPtx) {
  CudaBinary binary;
  std::string error;
  ASSERT_TRUE(ortc::cuda::compileCuda(kAddKernel, "add_f32.cu", *ortc::cuda::parseCudaArch("sm_90"),
                                      binary, error))
      << error;
  std::cout << "NVRTC " << ortc::cuda::nvrtcVersion() << ": cubin " << binary.cubin.size()
            << " bytes, PTX " << binary.ptx.size() << " bytes\n";
  std::optional<std::vector<std::string>> symbols =
      ortc::cuda::cubinFunctionSymbols(binary.cubin, error);
  ASSERT_TRUE(symbols) << error;
  EXPECT_NE(std::find(symbols->begin(), symbols->end(), "add_f32"), symbols->end());
  EXPECT_NE(binary.ptx.find(".entry add_f32"), std::string::npos);
  EXPECT_NE(binary.ptx.find(".target sm_90"), std::string::npos);

  std::vector<ortc::cuda::KernelResources> report = ortc::cuda::parsePtxasReport(binary.log);
  ASSERT_EQ(report.size(), 1u) << binary.log;
  EXPECT_EQ(report[0].kernel, "add_f32");
  EXPECT_GT(report[0].registers, 0) << binary.log;
  EXPECT_EQ(report[0].spillStores, 0);
  EXPECT_EQ(report[0].spillLoads, 0);
}

TEST(Nvrtc, ABrokenKernelGivesTheErrorLine) {
  CudaBinary binary;
  std::string error;
  EXPECT_FALSE(ortc::cuda::compileCuda("extern \"C\" __global__ void k() { undeclared = 1; }",
                                       "broken.cu", CudaArch{}, binary, error));
  EXPECT_EQ(error, "broken.cu (sm_90): broken.cu(1): error: identifier \"undeclared\" is undefined");
  EXPECT_NE(binary.log.find("1 error detected"), std::string::npos) << binary.log;
}

TEST(Nvrtc, ParsesPtxasReports) {
  std::string log = "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n"
                    "ptxas info    : Function properties for k1\n"
                    "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
                    "ptxas info    : Used 40 registers, 2048 bytes smem, 380 bytes cmem[0]\n"
                    "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
                    "ptxas info    : Used 6 registers, 380 bytes cmem[0]\n";
  std::vector<ortc::cuda::KernelResources> report = ortc::cuda::parsePtxasReport(log);
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(report[0].kernel, "k1");
  EXPECT_EQ(report[0].registers, 40);
  EXPECT_EQ(report[0].stackBytes, 16);
  EXPECT_EQ(report[0].spillStores, 8);
  EXPECT_EQ(report[0].spillLoads, 4);
  EXPECT_EQ(report[0].sharedBytes, 2048);
  EXPECT_EQ(report[1].kernel, "k2");
  EXPECT_EQ(report[1].registers, 6);
  EXPECT_EQ(report[1].spillStores, 0);
}

TEST(Nvrtc, RefusesWhatIsNotACudaElf) {
  std::string error;
  EXPECT_FALSE(ortc::cuda::cubinFunctionSymbols({}, error));
  std::vector<uint8_t> host(64, 0);
  std::copy_n("\x7f" "ELF\x02", 5, host.begin());
  host[18] = 62; // EM_X86_64
  EXPECT_FALSE(ortc::cuda::cubinFunctionSymbols(host, error));
  EXPECT_NE(error.find("EM_CUDA"), std::string::npos) << error;

  // A real cubin cut short, and one whose section table points past the
  // end: refused, never read out of bounds.
  CudaBinary binary;
  ASSERT_TRUE(ortc::cuda::compileCuda(kAddKernel, "add_f32.cu", CudaArch{}, binary, error)) << error;
  std::vector<uint8_t> cut(binary.cubin.begin(), binary.cubin.begin() + 80);
  EXPECT_FALSE(ortc::cuda::cubinFunctionSymbols(cut, error));
  std::vector<uint8_t> bad = binary.cubin;
  bad[40] = 0xff; // e_shoff
  bad[47] = 0x7f;
  EXPECT_FALSE(ortc::cuda::cubinFunctionSymbols(bad, error));
}

} // namespace
