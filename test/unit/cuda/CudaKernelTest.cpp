//===- CudaKernelTest.cpp - every claimed elementwise op compiles for sm_90 ===//
//
// Claim honesty for the CUDA EP's generated kernels: every op and element
// type of ElementwiseCases.h that onnx-lower-to-linalg accepts (what the CUDA
// EP claims) goes through the lowering and the CUDA C++ emitter and compiles
// with NVRTC for sm_90, in one translation unit: the cubin holds every
// kernel's symbol, and ptxas reports no local-memory spills. No GPU needed.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/compile/KernelEmitter.h"
#include "providers/cuda/compile/Nvrtc.h"
#include "providers/cuda/compile/Passes.h"

#include "compiler/Lowering/LowerToLinalg.h"
#include "compiler/Lowering/Passes.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/ortc/OrtcDialect.h"
#include "test/unit/common/ElementwiseCases.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace {

using ortc::testing::ElementwiseCase;

TEST(CudaKernels, EveryClaimedOpAndTypeCompilesWithoutSpills) {
  std::vector<ElementwiseCase> cases = ortc::testing::elementwiseCases();
  std::string all;
  for (const ElementwiseCase &c : cases) {
    std::string sig;
    for (int i = 0; i < c.inputs; ++i)
      sig += (i ? ", %a" : "%a") + std::to_string(i) + ": " + c.tensorType(i);
    all += "func.func private @" + c.kernel + "(" + sig + ") -> tensor<?x5x" + c.resultType +
           "> attributes {ortc.cuda.kernel} {\n" + c.opText("a", "r") + "  return %r : tensor<?x5x" +
           c.resultType + ">\n}\n";
  }
  mlir::DialectRegistry registry;
  registry.insert<mlir::func::FuncDialect, ortc::onnx_dialect::OnnxDialect,
                  ortc::fused::OrtcDialect>();
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(all, &context);
  ASSERT_TRUE(module);

  // The claim: what the lowering accepts. Drop the rest before lowering.
  std::set<std::string> claimed;
  std::vector<mlir::func::FuncOp> refused;
  for (auto fn : module->getOps<mlir::func::FuncOp>()) {
    mlir::Operation *op = &fn.getBody().front().front();
    if (ortc::isLowerableElementwiseOp(op))
      claimed.insert(fn.getSymName().str());
    else
      refused.push_back(fn);
  }
  for (mlir::func::FuncOp fn : refused)
    fn.erase();
  std::printf("[ claims ] %zu of %zu op/type combinations\n", claimed.size(), cases.size());
  ASSERT_GT(claimed.size(), 600u);

  mlir::PassManager pm(&context);
  ortc::OnnxLowerToLinalgOptions lower;
  lower.failOnUnlowered = true;
  pm.addNestedPass<mlir::func::FuncOp>(ortc::createOnnxLowerToLinalg(lower));
  pm.addPass(ortc::cuda::createCudaEmitKernelSource());
  ASSERT_TRUE(mlir::succeeded(pm.run(*module)));

  std::string source = ortc::cuda::kernelPrelude();
  for (auto fn : module->getOps<mlir::func::FuncOp>()) {
    auto text = fn->getAttrOfType<mlir::StringAttr>("ortc.cuda.source");
    ASSERT_TRUE(text) << fn.getSymName().str();
    source += "\n" + text.getValue().str();
  }
  ortc::cuda::CudaBinary binary;
  std::string error;
  ASSERT_TRUE(ortc::cuda::compileCuda(source, "elementwise_cases.cu", ortc::cuda::CudaArch{9, 0},
                                      binary, error))
      << error;
  std::optional<std::vector<std::string>> symbols =
      ortc::cuda::cubinFunctionSymbols(binary.cubin, error);
  ASSERT_TRUE(symbols) << error;
  std::set<std::string> inCubin(symbols->begin(), symbols->end());
  for (const std::string &kernel : claimed)
    EXPECT_TRUE(inCubin.count(kernel)) << kernel << " is not in the cubin";
  std::vector<ortc::cuda::KernelResources> report = ortc::cuda::parsePtxasReport(binary.log);
  EXPECT_EQ(report.size(), claimed.size());
  int maxRegisters = 0;
  for (const ortc::cuda::KernelResources &r : report) {
    EXPECT_EQ(r.spillStores + r.spillLoads, 0) << r.kernel << " spills";
    maxRegisters = std::max(maxRegisters, r.registers);
  }
  std::printf("[ ptxas  ] %zu kernels, at most %d registers, no spills\n", report.size(),
              maxRegisters);
}

} // namespace
