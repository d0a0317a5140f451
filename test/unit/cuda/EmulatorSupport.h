//===- EmulatorSupport.h - helpers for tests on the emulated device -*- C++ -*-===//

#ifndef ORTC_TEST_UNIT_CUDA_EMULATORSUPPORT_H
#define ORTC_TEST_UNIT_CUDA_EMULATORSUPPORT_H

#include "providers/cuda/runtime/CudaDevice.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ortc::cuda::testing {

#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    Status status_ = (expr);                                                                       \
    ASSERT_TRUE(status_.isOk()) << status_.message();                                              \
  } while (0)

inline ModuleImage sourceImage(const std::string &source, const std::string &what) {
  ModuleImage image;
  image.source = source;
  image.what = what;
  return image;
}

inline std::unique_ptr<CudaDevice> emulator(const std::string &compiler = "") {
  Result<std::unique_ptr<CudaDevice>> device = openEmulatedDevice(compiler);
  EXPECT_TRUE(device.isOk()) << device.status().message();
  return device.isOk() ? device.takeValue() : nullptr;
}

/// Device memory holding `values` (freed by the caller through the device).
template <typename T> void *upload(CudaDevice &device, const std::vector<T> &values) {
  Result<void *> memory = device.allocate(values.size() * sizeof(T));
  EXPECT_TRUE(memory.isOk()) << memory.status().message();
  if (!memory.isOk())
    return nullptr;
  Status copied = device.copyToDevice(memory.value(), values.data(), values.size() * sizeof(T));
  EXPECT_TRUE(copied.isOk()) << copied.message();
  return memory.value();
}

template <typename T> std::vector<T> download(CudaDevice &device, const void *memory, size_t n) {
  std::vector<T> values(n);
  Status copied = device.copyToHost(values.data(), memory, n * sizeof(T));
  EXPECT_TRUE(copied.isOk()) << copied.message();
  return values;
}

inline Status launch(CudaDevice &device, void *function, std::array<unsigned, 3> grid,
              std::array<unsigned, 3> block, std::vector<void *> args, unsigned sharedBytes = 0) {
  KernelLaunch launch;
  launch.function = function;
  for (int i = 0; i < 3; ++i) {
    launch.grid[i] = grid[i];
    launch.block[i] = block[i];
  }
  launch.sharedBytes = sharedBytes;
  launch.args = args.data();
  return device.launch(launch);
}

/// The module of `source` on `device` and its kernels `names`.
struct Loaded {
  std::unique_ptr<CudaModule> module;
  std::vector<void *> functions;
};
inline std::optional<Loaded> load(CudaDevice &device, const std::string &source,
                           std::vector<std::string> names) {
  Result<std::unique_ptr<CudaModule>> module = device.loadModule(sourceImage(source, "test"));
  EXPECT_TRUE(module.isOk()) << module.status().message();
  if (!module.isOk())
    return std::nullopt;
  Loaded loaded{module.takeValue(), {}};
  for (const std::string &name : names) {
    Result<void *> function = loaded.module->function(name);
    EXPECT_TRUE(function.isOk()) << function.status().message();
    if (!function.isOk())
      return std::nullopt;
    loaded.functions.push_back(function.value());
  }
  return loaded;
}

} // namespace ortc::cuda::testing

#endif // ORTC_TEST_UNIT_CUDA_EMULATORSUPPORT_H
