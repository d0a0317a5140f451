//===- CpuCompilePlugin.cpp - the CPU EP in the compiler's registry -------===//
//
// What the compile-side registry knows of the CPU EP: its names, its one
// option (target), the factory, and its passes for ortc-opt.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/CpuCompileEp.h"

#include "providers/cpu/compile/KernelPipeline.h"
#include "providers/cpu/compile/Passes.h"

#include "compiler/EP/CompileEpRegistry.h"

#include "mlir/Pass/PassRegistry.h"

namespace ortc::cpu {

CompileEpPlugin cpuCompileEpPlugin() {
  CompileEpPlugin plugin;
  plugin.name = "cpu_ep";
  plugin.aliases = {"cpu"};
  plugin.summary = "x86-64 code from LLVM, library kernels, one blob per partition";
  plugin.options = {
      {"target", "NAME",
       "The CPU to generate code for: host (this machine's CPU and features), x86-64, "
       "x86-64-v2, x86-64-v3, x86-64-v4, or an LLVM CPU name such as znver3. The blob "
       "records the features its code needs; the runtime refuses it on a CPU without "
       "them. --cpu=NAME is an alias.",
       "host"},
  };
  plugin.create = [](const EpOptionMap &options, std::string &error) -> std::unique_ptr<CompileEp> {
    CpuCompileOptions cpuOptions;
    auto target = options.find("target");
    if (target != options.end())
      cpuOptions.cpu = target->second;
    std::unique_ptr<CompileEp> ep = createCpuCompileEp(cpuOptions, error);
    if (!ep)
      error = "cpu_ep: option target='" + cpuOptions.cpu + "': " + error;
    return ep;
  };
  plugin.registerPasses = [](mlir::DialectRegistry &dialects) {
    registerKernelPipelineDialects(dialects);
    registerCpuPasses();
    // The whole kernel pipeline, as one pass name.
    mlir::PassPipelineRegistration<>(
        "cpu-kernel-pipeline", "Lower CPU EP kernels from the onnx dialect to the LLVM dialect",
        [](mlir::OpPassManager &pm) { buildCpuKernelLoweringPipeline(pm); });
  };
  return plugin;
}

} // namespace ortc::cpu
