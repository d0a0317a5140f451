//===- MatMulKernels.cpp - MatMul and Gemm over sgemmPacked ---------------===//
//
// Both kernels reduce to sgemmPacked: B is packed into scratch per call unless
// the plan already stores it packed (attribute packed_b = 1, constant weights
// packed at compile time). MatMul also runs ortc.matmul_bias: a bias over the
// last dim (input 2) and an activation (`activation`) applied by the GEMM to
// each tile before it is stored, B maybe stored [N,K] (`trans_b`, a torch
// Linear's Gemm).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <cstring>

namespace ortc::cpu::kernels {

namespace {

/// Output 0 present, then A, B, the optional C and the output all float32, in
/// that order (the order decides which error a bad call reports).
Status checkOperands(const char *op, const KernelCall &call, const TensorView *A,
                     const TensorView *B, const TensorView *C) {
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  if (Status s = checkFloats(op, {{A, "input A"}, {B, "input B"}}); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, C, "input C"); !s.isOk())
    return s;
  return checkFloat(op, &call.outputs[0], "output");
}

/// ortc.matmul_bias's epilogue: the bias [N] (input 2, float32) per column,
/// the residual of Y's shape `yShape` (input 3, rows of N) and the
/// activation; none for a plain MatMul.
Status matMulEpilogue(const char *op, const KernelCall &call, int64_t N,
                      const std::vector<int64_t> &yShape, GemmEpilogue &e) {
  using A = GemmEpilogue::Activation;
  const TensorView *bias = call.input(2), *residual = call.input(3);
  if (Status s = checkOptionalFloat(op, bias, "input bias"); !s.isOk())
    return s;
  if (bias && bias->shape != std::vector<int64_t>{N})
    return invalid(op, "the bias must be [" + std::to_string(N) + "], got " +
                           shapeToString(bias->shape));
  e.colBias = bias ? static_cast<const float *>(bias->data) : nullptr;
  if (Status s = checkOptionalFloat(op, residual, "residual"); !s.isOk())
    return s;
  if (residual && residual->shape != yShape)
    return invalid(op, "the residual " + shapeToString(residual->shape) + " differs from Y " +
                           shapeToString(yShape));
  e.residual = residual ? static_cast<const float *>(residual->data) : nullptr;
  e.ldr = N;
  std::string name = call.attrs.getString("activation", "none");
  if (name == "none")
    e.activation = A::None;
  else if (name == "relu")
    e.activation = A::Relu;
  else if (name == "gelu")
    e.activation = A::Gelu;
  else if (name == "gelu_tanh")
    e.activation = A::GeluTanh;
  else
    return invalid(op, "unknown activation '" + name + "'");
  return Status::ok();
}

/// C[M] = A[M,K] * b[K]: a packed panel would be 16x wider than the work.
void gemv(int64_t M, int64_t K, const float *A, const float *b, float *c) {
  for (int64_t m = 0; m < M; ++m) {
    const float *a = A + m * K;
    // Eight partial sums: vector lanes without reassociation flags.
    float lanes[8] = {};
    int64_t k = 0;
    for (; k + 8 <= K; k += 8)
      for (int l = 0; l < 8; ++l)
        lanes[l] += a[k + l] * b[k + l];
    float acc = 0.f;
    for (; k < K; ++k)
      acc += a[k] * b[k];
    for (float l : lanes)
      acc += l;
    c[m] = acc;
  }
}

} // namespace

Status matMul(const KernelCall &call) {
  const char *op = "MatMul";
  const TensorView *A = call.input(0), *B = call.input(1);
  if (Status s = checkOperands(op, call, A, B, nullptr); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  bool prepacked = call.attrs.getInt("packed_b", 0) != 0;
  bool transB = call.attrs.getInt("trans_b", 0) != 0;
  if (A->shape.empty() || B->shape.empty())
    return invalid(op, "operands must have rank >= 1");
  if ((prepacked || transB) && B->shape.size() != 2)
    return invalid(op, std::string(prepacked ? "packed_b" : "trans_b") + " needs a 2-D B, got " +
                           shapeToString(B->shape));

  // numpy: a 1-D A is a row [1,K], a 1-D B a column [K,1]; both extra dims
  // are dropped from the result. A trans_b B [N,K] is B^T's [K,N]; a packed
  // one's view is [K,N] already (the packing applied the transpose).
  std::vector<int64_t> a = A->shape, b = B->shape;
  if (transB && !prepacked)
    std::swap(b[0], b[1]);
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec)
    a.insert(a.begin(), 1);
  if (bVec)
    b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (b[b.size() - 2] != K)
    return invalid(op, "inner dimensions differ: " + shapeToString(A->shape) + " x " +
                           shapeToString(B->shape));

  // Broadcast the leading (batch) dims, right-aligned.
  size_t aBatchRank = a.size() - 2, bBatchRank = b.size() - 2;
  size_t batchRank = std::max(aBatchRank, bBatchRank);
  std::vector<int64_t> batch(batchRank), aStride(batchRank, 0), bStride(batchRank, 0);
  int64_t aMat = M * K, bMat = K * N;
  int64_t aStep = aMat, bStep = bMat;
  for (size_t i = batchRank; i-- > 0;) {
    size_t back = batchRank - 1 - i;
    int64_t ad = back < aBatchRank ? a[aBatchRank - 1 - back] : 1;
    int64_t bd = back < bBatchRank ? b[bBatchRank - 1 - back] : 1;
    if (ad != bd && ad != 1 && bd != 1)
      return invalid(op, "batch dimensions do not broadcast: " + shapeToString(A->shape) + " x " +
                             shapeToString(B->shape));
    batch[i] = std::max(ad, bd);
    if (ad == 0 || bd == 0)
      batch[i] = 0;
    aStride[i] = ad == 1 ? 0 : aStep;
    bStride[i] = bd == 1 ? 0 : bStep;
    aStep *= ad;
    bStep *= bd;
  }
  std::vector<int64_t> expect = batch;
  if (!aVec)
    expect.push_back(M);
  if (!bVec)
    expect.push_back(N);
  if (Status s = checkOutputShape(op, Y, expect); !s.isOk())
    return s;
  GemmEpilogue epilogue;
  if (Status s = matMulEpilogue(op, call, N, expect, epilogue); !s.isOk())
    return s;
  const GemmEpilogue *finish = epilogue.any() ? &epilogue : nullptr;

  int64_t batchCount = product(batch, 0, batchRank);
  int64_t aCount = product(a, 0, aBatchRank), bCount = product(b, 0, bBatchRank);
  float *y = static_cast<float *>(Y.data);
  if (batchCount == 0 || M == 0 || N == 0)
    return Status::ok();
  if (K == 0) {
    std::fill(y, y + batchCount * M * N, 0.f);
    if (finish)
      finish->apply(y, N, batchCount * M, N);
    return Status::ok();
  }
  const float *aData = static_cast<const float *>(A->data);
  const float *bData = static_cast<const float *>(B->data);

  // One B for every batch and A not broadcast: the batches stack into rows.
  bool foldRows = bCount == 1 && aCount == batchCount;
  if (foldRows && N == 1 && !prepacked && !transB) {
    gemv(batchCount * M, K, aData, bData, y);
    if (finish)
      finish->apply(y, 1, batchCount * M, 1);
    return Status::ok();
  }

  size_t packedSize = packedGemmBSize(K, N);
  const float *packed = bData;
  if (!prepacked) {
    float *buf;
    if (Status s = allocScratch(call, op, packedSize * bCount, buf); !s.isOk())
      return s;
    for (int64_t i = 0; i < bCount; ++i)
      packGemmB(bData + i * bMat, transB ? K : N, transB, K, N, 1.f, buf + i * packedSize);
    packed = buf;
  }
  if (foldRows) {
    sgemmPackedParallel(call.pool, batchCount * M, N, K, aData, K, false, packed, y, N, false,
                        finish);
    return Status::ok();
  }
  // Strides over B's own batch index in packed units.
  std::vector<int64_t> bPackedStride(batchRank, 0);
  for (size_t i = 0; i < batchRank; ++i)
    bPackedStride[i] = bStride[i] / std::max<int64_t>(bMat, 1) * int64_t(packedSize);
  for (int64_t n = 0; n < batchCount; ++n) {
    int64_t rem = n, aOff = 0, bOff = 0;
    for (size_t i = batchRank; i-- > 0;) {
      int64_t idx = rem % batch[i];
      rem /= batch[i];
      aOff += idx * aStride[i];
      bOff += idx * bPackedStride[i];
    }
    // The epilogue at this batch's rows (the residual's, stacked as Y's).
    GemmEpilogue part = finish ? finish->at(n * M, 0) : GemmEpilogue();
    sgemmPackedParallel(call.pool, M, N, K, aData + aOff, K, false, packed + bOff, y + n * M * N, N,
                        false, finish ? &part : nullptr);
  }
  return Status::ok();
}

Status gemm(const KernelCall &call) {
  const char *op = "Gemm";
  const TensorView *A = call.input(0), *B = call.input(1), *C = call.input(2);
  if (Status s = checkOperands(op, call, A, B, C); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  bool transA = call.attrs.getInt("transA", 0) != 0;
  bool transB = call.attrs.getInt("transB", 0) != 0;
  float alpha = call.attrs.getFloat("alpha", 1.f);
  float beta = call.attrs.getFloat("beta", 1.f);
  bool prepacked = call.attrs.getInt("packed_b", 0) != 0;
  if (A->shape.size() != 2 || B->shape.size() != 2)
    return invalid(op, "A and B must be 2-D, got " + shapeToString(A->shape) + " and " +
                           shapeToString(B->shape));
  int64_t M = transA ? A->shape[1] : A->shape[0];
  int64_t K = transA ? A->shape[0] : A->shape[1];
  int64_t N;
  if (prepacked) {
    // The view keeps B's original shape, [K,N] or [N,K] (transB); the packing
    // already applied transB and alpha.
    if (Y.shape.size() != 2)
      return invalid(op, "output must be 2-D, got " + shapeToString(Y.shape));
    N = Y.shape[1];
    std::vector<int64_t> kn = {K, N}, nk = {N, K};
    if (B->shape != (transB ? nk : kn) && B->shape != kn)
      return invalid(op, "packed B of shape " + shapeToString(B->shape) + " does not match A " +
                             shapeToString(A->shape) + " and output " + shapeToString(Y.shape));
  } else {
    int64_t kb = transB ? B->shape[1] : B->shape[0];
    N = transB ? B->shape[0] : B->shape[1];
    if (kb != K)
      return invalid(op, "inner dimensions differ: A " + shapeToString(A->shape) + " B " +
                             shapeToString(B->shape));
  }
  std::vector<int64_t> expect = {M, N};
  if (Status s = checkOutputShape(op, Y, expect); !s.isOk())
    return s;

  // C broadcasts one way to [M,N]: a scalar, [N], [1,N], [M,1], [M,N], ...
  int64_t cRowStride = 0, cColStride = 0;
  if (C) {
    const std::vector<int64_t> &cs = C->shape;
    if (cs.size() > 2)
      return invalid(op, "C must have rank <= 2, got " + shapeToString(cs));
    int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs.back();
    if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
      return invalid(op, "C of shape " + shapeToString(cs) + " does not broadcast to " +
                             shapeToString(expect));
    cColStride = cn == 1 ? 0 : 1;
    cRowStride = cm == 1 ? 0 : cn;
  }

  float *y = static_cast<float *>(Y.data);
  if (M == 0 || N == 0)
    return Status::ok();
  bool accumulate = C && beta != 0.f;
  if (accumulate) {
    const float *c = static_cast<const float *>(C->data);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        y[i * N + j] = beta * c[i * cRowStride + j * cColStride];
  }
  if (K == 0) {
    if (!accumulate)
      std::fill(y, y + M * N, 0.f);
    return Status::ok();
  }
  const float *packed = static_cast<const float *>(B->data);
  if (!prepacked) {
    float *buf;
    if (Status s = allocScratch(call, op, packedGemmBSize(K, N), buf); !s.isOk())
      return s;
    packGemmB(static_cast<const float *>(B->data), B->shape[1], transB, K, N, alpha, buf);
    packed = buf;
  }
  sgemmPackedParallel(call.pool, M, N, K, static_cast<const float *>(A->data), A->shape[1], transA,
                      packed, y, N, accumulate);
  return Status::ok();
}

} // namespace ortc::cpu::kernels
