//===- Passes.td - the CPU EP's passes ---------------------*- tablegen -*-===//
//
// cpu-fuse-conv-epilogue, cpu-conv-channels-last and cpu-fuse-matmul-epilogue
// run on the CPU EP's partitions after partitioning
// (CompileEp::addCustomPasses). The others take the CPU EP's generated
// kernels (func.func with the
// `ortc.kernel` attribute, destination-passing on memrefs, onnx/ortc
// elementwise ops inside) to LLVM IR, after the generic onnx-lower-to-linalg
// (compiler/Lowering/Passes.td). KernelPipeline.cpp strings them
// together with the upstream passes; lit tests in test/lit/cpu/.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_PASSES
#define ORTC_PROVIDERS_CPU_COMPILE_PASSES

include "mlir/Pass/PassBase.td"

def CpuFuseConvEpilogue : Pass<"cpu-fuse-conv-epilogue", "mlir::func::FuncOp"> {
  let summary = "Fold a Conv's residual Add and activation into ortc.fused_conv";
  let description = [{
    A float32 onnx.Conv whose only reader is an onnx.Add of a value with the
    Conv output's dims (proven by the symbolic shape analysis, so nothing
    broadcasts), or an activation (Relu, LeakyRelu, Clip with constant or
    omitted bounds), or an Add whose only reader is such an activation,
    becomes one ortc.fused_conv: y = activation(Conv(x, w, b) + residual).
    The library Conv applies this epilogue to each block of its output while
    it is in cache. A Conv whose output anything else reads, an Add that
    broadcasts, and a Clip with computed bounds stay as they are.
  }];
  let dependentDialects = ["ortc::fused::OrtcDialect", "ortc::onnx_dialect::OnnxDialect"];
  let statistics = [
    Statistic<"numFused", "num-fused", "Number of Convs given an epilogue">
  ];
}

def CpuConvChannelsLast : Pass<"cpu-conv-channels-last", "mlir::func::FuncOp"> {
  let summary = "Run chains of 2-D convolutions on channels-last tensors";
  let description = [{
    A float32 2-D onnx.Conv or ortc.fused_conv with a constant W and group 1,
    or depthwise with one output channel per input channel, that reads or
    feeds another such conv directly, becomes an ortc.fused_conv with
    `channels_last` (x [N, H, W, C], y and the residual [N, OH, OW, M])
    between an onnx.Transpose into that layout (perm [0, 2, 3, 1]) and one
    out of it ([0, 3, 1, 2]). A Transpose that undoes the Transpose it reads
    is then replaced by that Transpose's input, so inside a chain the convs
    (and the residuals they add) meet in the same layout with no copy; the
    chain keeps a Transpose where it meets anything else. A conv alone stays
    as it is: two Transposes would cost more than its layout saves. A 2-D
    float32 onnx.MaxPool with no Indices read that reads or feeds such a
    conv becomes ortc.max_pool the same way, so that ResNet's stem conv,
    its MaxPool and the blocks after them form one chain. A chain's last
    Transpose read only by a global mean (onnx.ReduceMean over axes 2 and 3,
    or onnx.GlobalAveragePool: a CNN's head) goes too: the mean becomes an
    onnx.ReduceMean over axes 1 and 2 of the channels-last tensor, with
    keepdims followed by an onnx.Reshape of [N, 1, 1, C] to [N, C, 1, 1]
    (the same bytes). The CPU EP runs this pass for AVX-512 targets only.
  }];
  let dependentDialects = ["ortc::fused::OrtcDialect", "ortc::onnx_dialect::OnnxDialect"];
  let statistics = [
    Statistic<"numConverted", "num-converted", "Number of convs made channels-last">,
    Statistic<"numPools", "num-pools", "Number of MaxPools made channels-last">,
    Statistic<"numCancelled", "num-cancelled", "Number of Transposes that undid their input">,
    Statistic<"numMeans", "num-means", "Number of global means that read the channels-last tensor">
  ];
}

def CpuFuseDepthwiseBlock : Pass<"cpu-fuse-depthwise-block", "mlir::func::FuncOp"> {
  let summary = "Run a depthwise conv and the pointwise convs next to it as one kernel";
  let description = [{
    A depthwise ortc.fused_conv (group = channels, one output channel per
    group, at most 8 rows of taps, no residual) becomes one
    ortc.depthwise_block with the pointwise convs of its layout (1x1,
    group 1, stride 1, no padding) next to it: the one whose output only
    it reads (the expansion, without a residual) and the one that alone
    reads its output (the projection, with the residual it adds), with
    every conv's weights, bias and activation and the depthwise window.
    It needs one of the two.
    Channels-last (after cpu-conv-channels-last), both: the library kernel
    makes the expansion a band of rows at a time into a ring in cache, the
    depthwise rows of the band from it, and the band's projection from
    those, so MobileNet's widest tensors (6x the block's channels) never go
    to memory. Channels-first (the block is marked without
    `channels_last`), where the depthwise conv's static input is at least
    1 MiB an image (planarDepthwiseBlockPays) and the pointwise convs have
    constant weights: the kernel runs the convs image by image, so that
    each image's tensors between them stay in cache; a plain 1x1 onnx.Conv
    that alone reads such a depthwise conv (cpu-fuse-conv-epilogue leaves
    a conv with nothing to fold as it is) becomes its projection.
    A pointwise conv with another reader, a strided or padded one, an
    expansion with a residual, a depthwise conv with a residual, a dense
    conv next to the depthwise one and convs of two layouts stay as they
    are; a pointwise conv between two depthwise convs is the first one's
    projection.
  }];
  let dependentDialects = ["ortc::fused::OrtcDialect", "ortc::onnx_dialect::OnnxDialect"];
  let statistics = [
    Statistic<"numFused", "num-fused", "Number of depthwise blocks made">
  ];
}

def CpuFuseMatMulEpilogue : Pass<"cpu-fuse-matmul-epilogue", "mlir::func::FuncOp"> {
  let summary = "Fold a MatMul's bias Add and activation into ortc.matmul_bias";
  let description = [{
    A float32 onnx.MatMul by a matrix B [K, N] whose only reader is an
    onnx.Add of a bias [N] (either operand order, the sum of the product's
    type), and the Relu or ortc.gelu (either form) that alone reads the sum,
    becomes one ortc.matmul_bias: y = activation(MatMul(a, B) + bias). The
    library MatMul applies this epilogue to each tile of its output while it
    is in cache. A product anything else reads, a bias of another shape and
    a batched B stay as they are. A plain onnx.Gemm (A not transposed, alpha
    and beta 1, C absent or [N]) whose only reader is such an activation,
    directly or through one onnx.Reshape (GPT-2's Conv1D), becomes one too,
    C its bias (zeros where absent), the Reshape reading it; a transB Gemm
    (torch's Linear) gives trans_b, which the library MatMul packs in. Last, a
    matmul_bias with no activation whose only reader is an onnx.Add of a
    value of its own type (a skip connection) takes that value as its
    residual, added in the same epilogue.
  }];
  let dependentDialects = ["ortc::fused::OrtcDialect", "ortc::onnx_dialect::OnnxDialect"];
  let statistics = [
    Statistic<"numFused", "num-fused", "Number of MatMuls and Gemms given an epilogue">,
    Statistic<"numResiduals", "num-residuals", "Number of residual Adds folded in">
  ];
}

def CpuFuseElementwise : Pass<"cpu-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuse producer/consumer elementwise linalg.generic ops";
  let description = [{
    Upstream elementwise fusion (with splat-constant folding) where a
    producer is fused into a consumer when every use of the producer's result
    is in that consumer, so a chain (or a DAG whose intermediates are used
    only inside it) becomes one loop nest and no intermediate is duplicated.
    A producer that is also used elsewhere (a kernel output, or a value two
    separate consumers read) stays its own loop nest.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def CpuTileAndVectorize : Pass<"cpu-tile-and-vectorize", "mlir::func::FuncOp"> {
  let summary = "Tile and vectorize parallel linalg ops on memrefs for the CPU";
  let description = [{
    For each all-parallel linalg op on buffers (after bufferization):
    trailing static dims that every operand reads contiguously are collapsed
    into one; then, when the innermost dim is static and no operand has
    element type i1 (bytes in memory, bits in a vector), the op is split at
    the largest multiple of the tile width, the main part tiled by 1 on the
    outer dims and by the tile width on the innermost one and vectorized, and
    the remainder (fewer than a tile) vectorized whole. The tile width is
    `vector-width` f32 lanes scaled to the widest element type, times
    `unroll`. Everything else becomes scalar loops. Vector transfers are
    then lowered to 1-D loads, stores and broadcasts.
  }];
  let options = [
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"8",
           "f32 lanes of a vector register (8: AVX2, 16: AVX-512)">,
    Option<"unroll", "unroll", "int64_t", /*default=*/"2",
           "Vector registers per tile of the innermost dim">,
  ];
  let dependentDialects = [
    "mlir::affine::AffineDialect", "mlir::arith::ArithDialect",
    "mlir::memref::MemRefDialect", "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect"
  ];
  let statistics = [
    Statistic<"numVectorized", "num-vectorized", "Number of ops vectorized">,
    Statistic<"numLooped", "num-looped", "Number of ops lowered to scalar loops">
  ];
}

def CpuApproximateMath : Pass<"cpu-approximate-math", "mlir::ModuleOp"> {
  let summary = "Polynomial approximations for f32 math; libm for the rest that needs it";
  let description = [{
    Rewrites f32 (scalar or vector) `math.exp`, `math.expm1`, `math.log`,
    `math.log1p`, `math.tanh`, `math.erf` and `math.erfc` into MLIR's
    polynomial approximations (measured against double precision in
    test/unit/cpu/KernelLoweringTest.cpp: at most 2.3e-7 relative), so that
    they vectorize and need no library call. Then every `math.fma` becomes
    `arith.mulf` + `arith.addf` with the `contract` flag, so that LLVM fuses
    them where the target has FMA and never calls `fmaf`. The remaining
    (f64) `expm1`, `log1p`, `erf` and `erfc` become libm calls (vectors
    unrolled): math-to-llvm would turn the first two into exp(x) - 1 and
    log(1 + x), which lose all precision near 0. What is left (sin, cos, pow,
    f64 exp/log/tanh, floor, sqrt, ...) is for math-to-llvm: LLVM intrinsics,
    which become instructions or libm calls at code generation.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::func::FuncDialect",
    "mlir::math::MathDialect", "mlir::vector::VectorDialect"
  ];
}

def CpuEmitKernelEntries : Pass<"cpu-emit-kernel-entries", "mlir::ModuleOp"> {
  let summary = "Packed `void name(void **args)` entries for the kernels";
  let description = [{
    Runs after bufferization and before the conversion to the LLVM dialect.
    Every `func.func @name` with `ortc.kernel` (memref arguments with
    identity layouts, no results) is renamed `__ortc_kernel_impl_name` and
    made internal, and a new `func.func @name(%args: !llvm.ptr)` loads
    `args[i]`, a pointer to the i-th argument's memref descriptor
    {allocated, aligned, offset, sizes[rank], strides[rank]} (rank 0: the
    first three), loads the descriptor and calls the kernel with it. After
    the conversion this is an exported `void name(void **args)`. Every other
    function definition gets internal linkage (`llvm.linkage`), so that only
    the entries are exported.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect", "mlir::func::FuncDialect"];
}

#endif // ORTC_PROVIDERS_CPU_COMPILE_PASSES
