//===- CpuCompileEp.h - the compile half of the CPU EP ----------*- C++ -*-===//
//
// The CPU EP claims fp32 MLP, CNN and transformer ops (and data movement of
// any element type), with at most one dynamic dimension per tensor, the
// leading batch. A partition compiles into:
//  - generated kernels: chains of elementwise ops fused into one loop nest
//    each, lowered onnx -> linalg -> LLVM (KernelPipeline.h) and linked into a
//    shared object (SharedObjectEmitter.h);
//  - library steps: MatMul, Gemm, Conv, pools, normalizations, attention,
//    data movement, reductions (kernels/README.md), with constant GEMM
//    weights packed at compile time;
//  - views: Reshape and friends share their input's bytes;
//  - a memory plan placing every intermediate in one arena (MemoryPlanner.h);
// all in one blob (blob/CpuBlob.h). Claims (supportsOp) are exactly what these
// accept, so compilePartition never finds an ordinary limit after claiming.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_CPUCOMPILEEP_H
#define ORTC_PROVIDERS_CPU_COMPILE_CPUCOMPILEEP_H

#include "compiler/EP/CompileEpRegistry.h"

#include <memory>
#include <string>

namespace ortc::cpu {

struct CpuCompileOptions {
  std::string cpu = "host"; // --cpu: host, x86-64-v3, x86-64-v4, an LLVM CPU name
};

/// The CPU EP for `options`, or null with a one-line `error` (an unknown
/// --cpu name, a host LLVM cannot target).
std::unique_ptr<CompileEp> createCpuCompileEp(const CpuCompileOptions &options, std::string &error);

/// The CPU EP as the compiler's registry holds it (name cpu_ep, alias cpu,
/// option target=NAME); the leaf providers/CompileEps.cpp lists it when
/// ORTC_ENABLE_CPU is on.
CompileEpPlugin cpuCompileEpPlugin();

/// What `ortc compile --report` prints for one compiled CPU partition.
struct CpuPartitionSummary {
  bool arenaPlannedAtRunTime = false; // a symbolic dim: laid out per input shape
  uint64_t arenaBytes = 0, naiveBytes = 0;
  uint64_t weightBytes = 0, codeBytes = 0;
  int kernelSteps = 0, librarySteps = 0; // the sub-plans' included
  int subplans = 0;                        // bodies of If, Loop and Scan steps
  std::string describe() const;
};

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_COMPILE_CPUCOMPILEEP_H
