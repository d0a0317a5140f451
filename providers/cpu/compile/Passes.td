//===- Passes.td - the CPU EP's passes ---------------------*- tablegen -*-===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_PASSES
#define ORTC_PROVIDERS_CPU_COMPILE_PASSES

include "mlir/Pass/PassBase.td"

#endif // ORTC_PROVIDERS_CPU_COMPILE_PASSES
