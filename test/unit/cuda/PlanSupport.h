//===- PlanSupport.h - hand-written CUDA plans for tests --------*- C++ -*-===//

#ifndef ORTC_TEST_UNIT_CUDA_PLANSUPPORT_H
#define ORTC_TEST_UNIT_CUDA_PLANSUPPORT_H

#include "providers/cuda/blob/CudaBlob.h"

#include <initializer_list>
#include <memory>

namespace ortc::cuda::testing {

/// A plan of partition `name` with one f32 input and one f32 output
/// [n, 4] (symbol n), and a buffer of that shape for each of `kinds`, in
/// order; no kernels, steps or cubins yet.
inline fb::PlanT nByFourPlan(const char *name, std::initializer_list<fb::BufferKind> kinds) {
  fb::PlanT plan;
  plan.format_version = kCudaPlanFormatVersion;
  plan.kernel_abi = kCudaKernelAbi;
  plan.ep_name = kCudaEpName;
  plan.ep_version = kCudaEpVersion;
  plan.partition_name = name;
  plan.symbols = {"n"};
  plan.dims.push_back(fb::DimNode(1, 0, 0)); // symbol 0
  for (auto *list : {&plan.inputs, &plan.outputs}) {
    auto s = std::make_unique<fb::TensorSignatureT>();
    s->name = list == &plan.inputs ? "input0" : "output0";
    s->element_type = 1;
    s->shape = {-1, 4};
    list->push_back(std::move(s));
  }
  for (fb::BufferKind kind : kinds) {
    auto b = std::make_unique<fb::BufferT>();
    b->kind = kind;
    b->element_type = 1;
    b->shape = {-1, 4};
    plan.buffers.push_back(std::move(b));
  }
  plan.memory = std::make_unique<fb::MemoryPlanT>();
  return plan;
}

} // namespace ortc::cuda::testing

#endif // ORTC_TEST_UNIT_CUDA_PLANSUPPORT_H
