//===- GemmCall.cpp - what every device checks of a GEMM ------------------===//
//
// One set of checks for the driver (before cuBLAS sees the call) and the
// emulator (before its host GEMM reads memory), so that a plan the GPU would
// refuse fails the same way without one.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/runtime/CudaDevice.h"

#include <algorithm>
#include <cstdint>

namespace ortc::cuda {

const char *gemmTypeName(GemmCall::Type type) {
  switch (type) {
  case GemmCall::Type::F32:
    return "f32";
  case GemmCall::Type::F16:
    return "f16";
  case GemmCall::Type::BF16:
    return "bf16";
  }
  return "an unknown type";
}

const char *gemmEpilogueName(GemmCall::Epilogue epilogue) {
  switch (epilogue) {
  case GemmCall::Epilogue::None:
    return "none";
  case GemmCall::Epilogue::Bias:
    return "BIAS";
  case GemmCall::Epilogue::BiasRelu:
    return "RELU_BIAS";
  case GemmCall::Epilogue::BiasGeluTanh:
    return "GELU_BIAS";
  }
  return "unknown";
}

const char *gemmComputeName(GemmCall::Compute compute) {
  switch (compute) {
  case GemmCall::Compute::F32:
    return "32F";
  case GemmCall::Compute::F32Tf32:
    return "32F_FAST_TF32";
  case GemmCall::Compute::F32F16:
    return "32F_FAST_16F";
  case GemmCall::Compute::F32Bf16:
    return "32F_FAST_16BF";
  }
  return "an unknown compute type";
}

size_t gemmElementBytes(GemmCall::Type type) { return type == GemmCall::Type::F32 ? 4 : 2; }

Status checkGemmCall(const GemmCall &g, const std::string &who) {
  auto bad = [&](const std::string &why) {
    return Status::error(StatusCode::InvalidArgument, who + ": " + why);
  };
  auto str = [](int64_t value) { return std::to_string(value); };
  if (g.type != GemmCall::Type::F32 && g.type != GemmCall::Type::F16 &&
      g.type != GemmCall::Type::BF16)
    return bad("unknown element type " + str(static_cast<int>(g.type)));
  if (g.compute != GemmCall::Compute::F32 && g.compute != GemmCall::Compute::F32Tf32 &&
      g.compute != GemmCall::Compute::F32F16 && g.compute != GemmCall::Compute::F32Bf16)
    return bad("unknown compute type " + str(static_cast<int>(g.compute)));
  if (g.compute != GemmCall::Compute::F32 && g.type != GemmCall::Type::F32)
    return bad(std::string("compute ") + gemmComputeName(g.compute) + " with " +
               gemmTypeName(g.type) +
               " elements (cuBLAS takes the fast compute types for f32 only)");
  if (g.m < 0 || g.n < 0 || g.k < 0)
    return bad("negative size (m " + str(g.m) + ", n " + str(g.n) + ", k " + str(g.k) + ")");
  if (g.batch < 1)
    return bad("batch " + str(g.batch) + " (at least 1)");
  int64_t rowsA = g.transA ? g.k : g.m, rowsB = g.transB ? g.n : g.k;
  if (g.lda < std::max<int64_t>(1, rowsA))
    return bad("lda " + str(g.lda) + " < " + str(std::max<int64_t>(1, rowsA)) +
               " (the rows of A as stored: " + (g.transA ? "k, A is transposed)" : "m)"));
  if (g.ldb < std::max<int64_t>(1, rowsB))
    return bad("ldb " + str(g.ldb) + " < " + str(std::max<int64_t>(1, rowsB)) +
               " (the rows of B as stored: " + (g.transB ? "n, B is transposed)" : "k)"));
  if (g.ldc < std::max<int64_t>(1, g.m))
    return bad("ldc " + str(g.ldc) + " < " + str(std::max<int64_t>(1, g.m)) + " (m)");
  if (g.strideA < 0 || g.strideB < 0 || g.strideC < 0)
    return bad("negative stride (strideA " + str(g.strideA) + ", strideB " + str(g.strideB) +
               ", strideC " + str(g.strideC) + ")");
  if (g.batch > 1 && g.strideC == 0 && g.m > 0 && g.n > 0)
    return bad("strideC 0 with batch " + str(g.batch) + ": every problem would write the same C");
  size_t bytes = gemmElementBytes(g.type);
  auto pointer = [&](const void *p, const char *name, bool used, int64_t rows, int64_t cols) {
    if (!used)
      return Status::ok();
    if (!p)
      return bad(std::string(name) + " is null for a " + str(rows) + "x" + str(cols) + " matrix");
    if (reinterpret_cast<uintptr_t>(p) % bytes)
      return bad(std::string(name) + " is not aligned to its " + std::to_string(bytes) +
                 "-byte elements");
    return Status::ok();
  };
  if (Status s = pointer(g.a, "A", g.m > 0 && g.k > 0, g.m, g.k); !s.isOk())
    return s;
  if (Status s = pointer(g.b, "B", g.k > 0 && g.n > 0, g.k, g.n); !s.isOk())
    return s;
  if (Status s = pointer(g.c, "C", g.m > 0 && g.n > 0, g.m, g.n); !s.isOk())
    return s;
  if (g.epilogue != GemmCall::Epilogue::None && g.epilogue != GemmCall::Epilogue::Bias &&
      g.epilogue != GemmCall::Epilogue::BiasRelu && g.epilogue != GemmCall::Epilogue::BiasGeluTanh)
    return bad("unknown epilogue " + str(static_cast<int>(g.epilogue)));
  if (g.epilogue == GemmCall::Epilogue::None)
    return g.bias ? bad("a bias without an epilogue") : Status::ok();
  return pointer(g.bias, "the bias", g.m > 0 && g.n > 0, g.m, 1);
}

} // namespace ortc::cuda
