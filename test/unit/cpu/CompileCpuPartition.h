//===- CompileCpuPartition.h - a partition in MLIR text to a loaded blob -*- C++ -*-===//
//
// What the CPU EP tests that go through both halves share: parse an outlined
// partition, compile it with CpuCompileEp, save its blob, and load the blob
// with the executor (header-only: ortc-run-allocation-tests is a binary of
// its own).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TEST_UNIT_CPU_COMPILECPUPARTITION_H
#define ORTC_TEST_UNIT_CPU_COMPILECPUPARTITION_H

#include "compiler/Import/OnnxImporter.h"
#include "dialects/ortc/OrtcDialect.h"
#include "providers/cpu/compile/CpuCompileEp.h"
#include "providers/cpu/runtime/PlanExecutor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace ortc::cputest {

/// The blob of the first function in `source`; nullopt (with a test
/// failure) when it does not parse or compile.
inline std::optional<EpContextBlob> compileCpuPartition(const char *source) {
  mlir::MLIRContext context;
  loadImportDialects(context);
  context.loadDialect<mlir::func::FuncDialect, fused::OrtcDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  EXPECT_TRUE(module);
  if (!module)
    return std::nullopt;
  std::string error;
  auto ep = cpu::createCpuCompileEp({}, error);
  EXPECT_TRUE(ep) << error;
  if (!ep)
    return std::nullopt;
  auto compiled = ep->compilePartition(*module->getOps<mlir::func::FuncOp>().begin());
  EXPECT_TRUE(mlir::succeeded(compiled));
  if (mlir::failed(compiled))
    return std::nullopt;
  auto blob = ep->saveContext(std::move(**compiled));
  EXPECT_TRUE(mlir::succeeded(blob));
  if (mlir::failed(blob))
    return std::nullopt;
  return *blob;
}

/// `bytes` loaded by the executor as partition cpu_ep_p0.
inline Result<std::unique_ptr<cpu::PlanExecutor>> loadCpuBlob(const std::vector<char> &bytes) {
  EpContextView view;
  view.source = "ortc_cpu";
  view.partitionName = "cpu_ep_p0";
  view.data = bytes.data();
  view.size = bytes.size();
  return cpu::PlanExecutor::load(view);
}

} // namespace ortc::cputest

#endif // ORTC_TEST_UNIT_CPU_COMPILECPUPARTITION_H
