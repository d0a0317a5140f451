//===- KernelPipeline.cpp - CPU kernels from onnx ops to LLVM IR ----------===//
//
// The kernel pipeline (see KernelPipeline.h for its input and output) and
// the passes it uses besides cpu-lower-to-linalg (LowerToLinalg.cpp):
//
//   cpu-fuse-elementwise      elementwise fusion without duplicating work
//   cpu-tile-and-vectorize    tile, split off the remainder, vectorize
//   cpu-approximate-math      f32 polynomials, fma as contractible mul+add
//   cpu-emit-kernel-entries   `void name(void **args)` wrappers, linkage
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/KernelPipeline.h"
#include "providers/cpu/compile/Passes.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/IR/Module.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUFUSEELEMENTWISE
#define GEN_PASS_DEF_CPUTILEANDVECTORIZE
#define GEN_PASS_DEF_CPUAPPROXIMATEMATH
#define GEN_PASS_DEF_CPUEMITKERNELENTRIES
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kKernelAttr = "ortc.kernel";
constexpr llvm::StringLiteral kImplPrefix = "__ortc_kernel_impl_";

//===----------------------------------------------------------------------===//
// cpu-fuse-elementwise
//===----------------------------------------------------------------------===//

struct CpuFuseElementwisePass
    : ortc::cpu::impl::CpuFuseElementwiseBase<CpuFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    // Fuse only a producer whose every use is in the consumer: it then dies,
    // so nothing is computed twice.
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      Operation *consumer = fused->getOwner();
      return producer && llvm::all_of(producer->getUsers(),
                                      [&](Operation *user) { return user == consumer; });
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::DimOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

//===----------------------------------------------------------------------===//
// cpu-tile-and-vectorize
//===----------------------------------------------------------------------===//

/// Whether the vectorizer handles `op` the way we want: all loops parallel,
/// a scalar elementwise body on int/float values, no i1 or unsigned buffers
/// (an i1 buffer holds bytes, a vector<Nxi1> bits).
bool isVectorizable(linalg::LinalgOp op) {
  if (!isa<linalg::GenericOp>(op) || op.getNumLoops() == 0 ||
      op.getNumParallelLoops() != op.getNumLoops())
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      return false;
    Type elem = type.getElementType();
    if (!elem.isIntOrFloat() || elem.isInteger(1) ||
        (isa<IntegerType>(elem) && !elem.isSignlessInteger()))
      return false;
  }
  for (Operation &inner : op.getBlock()->getOperations()) {
    if (isa<linalg::YieldOp, arith::ConstantOp>(inner))
      continue;
    if (!inner.hasTrait<OpTrait::Elementwise>() || inner.getNumRegions() != 0)
      return false;
    for (Type t : inner.getResultTypes())
      if (!t.isIntOrFloat())
        return false;
  }
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (ShapedType::isDynamic(ranges.back()))
    return false;
  if (llvm::any_of(ranges, [](int64_t r) { return r == 0; }))
    return false;
  return succeeded(linalg::vectorizeOpPrecondition(op));
}

struct CpuTileAndVectorizePass
    : ortc::cpu::impl::CpuTileAndVectorizeBase<CpuTileAndVectorizePass> {
  using CpuTileAndVectorizeBase::CpuTileAndVectorizeBase;

  LogicalResult toLoops(RewriterBase &rewriter, linalg::LinalgOp op) {
    rewriter.setInsertionPoint(op);
    if (failed(linalg::linalgOpToLoops(rewriter, op)))
      return op->emitError("cpu-tile-and-vectorize: cannot lower to loops");
    rewriter.eraseOp(op);
    ++numLooped;
    return success();
  }

  /// Collapses the trailing static dims that every operand reads
  /// contiguously into one (identity-layout buffers only).
  linalg::LinalgOp collapseTrailing(RewriterBase &rewriter, linalg::LinalgOp op) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t n = ranges.size(), k = n - 1;
    for (OpOperand &operand : op->getOpOperands())
      if (!cast<MemRefType>(operand.get().getType()).getLayout().isIdentity())
        return op;
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    while (k > 0 && !ShapedType::isDynamic(ranges[k - 1])) {
      ReassociationIndices group;
      for (int64_t d = k - 1; d < n; ++d)
        group.push_back(d);
      if (!linalg::areDimSequencesPreserved(maps, {group}))
        break;
      --k;
    }
    if (k == n - 1)
      return op;
    ReassociationIndices group;
    for (int64_t d = k; d < n; ++d)
      group.push_back(d);
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::CollapseResult> collapsed =
        linalg::collapseOpIterationDims(op, {group}, rewriter);
    if (failed(collapsed))
      return op;
    rewriter.replaceOp(op, collapsed->results);
    return collapsed->collapsedOp;
  }

  /// Tiles `op` by 1 on the outer dims and `tile` on the innermost one and
  /// vectorizes the tile (static shape 1x..x1x`tile`).
  LogicalResult tileAndVectorize(RewriterBase &rewriter, TilingInterface op, int64_t tile) {
    int64_t n = cast<linalg::LinalgOp>(op.getOperation()).getNumLoops();
    SmallVector<OpFoldResult> sizes(n, rewriter.getIndexAttr(1));
    sizes.back() = rewriter.getIndexAttr(tile);
    scf::SCFTilingOptions options;
    options.setTileSizes(sizes);
    options.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(rewriter, op, options);
    if (failed(tiled))
      return toLoops(rewriter, cast<linalg::LinalgOp>(op.getOperation()));
    rewriter.eraseOp(op);
    Operation *tileOp = tiled->tiledOps.back();
    rewriter.setInsertionPoint(tileOp);
    FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(rewriter, tileOp);
    if (failed(vectorized))
      return toLoops(rewriter, cast<linalg::LinalgOp>(tileOp));
    if (vectorized->replacements.empty())
      rewriter.eraseOp(tileOp);
    else
      rewriter.replaceOp(tileOp, vectorized->replacements);
    return success();
  }

  LogicalResult lowerOne(RewriterBase &rewriter, linalg::LinalgOp op) {
    if (!isVectorizable(op))
      return toLoops(rewriter, op);
    op = collapseTrailing(rewriter, op);
    int64_t n = op.getNumLoops();
    int64_t size = op.getStaticLoopRanges().back();
    unsigned maxBits = 8;
    for (OpOperand &operand : op->getOpOperands())
      maxBits = std::max(maxBits, getElementTypeOrSelf(operand.get().getType())
                                      .getIntOrFloatBitWidth());
    int64_t lanes = std::max<int64_t>(1, vectorWidth * 32 / maxBits);
    int64_t tile = lanes * std::max<int64_t>(1, unroll);
    int64_t main = size / tile * tile;
    ++numVectorized;
    auto tiling = cast<TilingInterface>(op.getOperation());
    if (main == 0 || main == size)
      return tileAndVectorize(rewriter, tiling, std::min(tile, size));
    // [0, main) in whole tiles, [main, size) as one smaller vector.
    rewriter.setInsertionPoint(op);
    auto [first, second] =
        linalg::splitOp(rewriter, tiling, n - 1, rewriter.getIndexAttr(main));
    if (!first || !second)
      return op->emitError("cpu-tile-and-vectorize: cannot split the innermost dim");
    if (failed(tileAndVectorize(rewriter, first, tile)))
      return failure();
    return tileAndVectorize(rewriter, second, size - main);
  }

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    SmallVector<linalg::LinalgOp> ops;
    fn.walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : ops)
      if (failed(lowerOne(rewriter, op)))
        return signalPassFailure();

    // n-D transfers on tiles to 1-D loads, stores and broadcasts.
    RewritePatternSet patterns(&getContext());
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    vector::populateVectorTransferDropUnitDimsPatterns(patterns);
    vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
    vector::populateDropUnitDimWithShapeCastPatterns(patterns);
    vector::populateVectorTransferLoweringPatterns(patterns, /*maxTransferRank=*/1);
    vector::populateVectorBroadcastLoweringPatterns(patterns);
    vector::populateVectorShapeCastLoweringPatterns(patterns);
    vector::TransferReadOp::getCanonicalizationPatterns(patterns, &getContext());
    vector::TransferWriteOp::getCanonicalizationPatterns(patterns, &getContext());
    vector::ShapeCastOp::getCanonicalizationPatterns(patterns, &getContext());
    vector::BroadcastOp::getCanonicalizationPatterns(patterns, &getContext());
    memref::SubViewOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(fn, std::move(patterns))))
      return signalPassFailure();
  }
};

//===----------------------------------------------------------------------===//
// cpu-approximate-math
//===----------------------------------------------------------------------===//

/// math.fma(a, b, c) -> a * b + c with `contract`: LLVM fuses it when the
/// target has FMA instead of calling fmaf.
struct FmaToContractedMulAdd : OpRewritePattern<math::FmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FmaOp op, PatternRewriter &rewriter) const override {
    auto contract = arith::FastMathFlagsAttr::get(getContext(), arith::FastMathFlags::contract);
    Value mul = arith::MulFOp::create(rewriter, op.getLoc(), op.getA(), op.getB(), contract);
    rewriter.replaceOpWithNewOp<arith::AddFOp>(op, mul, op.getC(), contract);
    return success();
  }
};

struct CpuApproximateMathPass
    : ortc::cpu::impl::CpuApproximateMathBase<CpuApproximateMathPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet approximations(ctx);
    populateMathPolynomialApproximationPatterns(approximations, [](StringRef name) {
      return llvm::is_contained(
          {math::ExpOp::getOperationName(), math::ExpM1Op::getOperationName(),
           math::LogOp::getOperationName(), math::Log1pOp::getOperationName(),
           math::TanhOp::getOperationName(), math::ErfOp::getOperationName(),
           math::ErfcOp::getOperationName()},
          name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(approximations))))
      return signalPassFailure();
    RewritePatternSet fma(ctx);
    fma.add<FmaToContractedMulAdd>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(fma))))
      return signalPassFailure();

    // What no LLVM intrinsic computes accurately goes to libm.
    ConversionTarget target(*ctx);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalOp<math::ExpM1Op, math::Log1pOp, math::ErfOp, math::ErfcOp>();
    target.addLegalDialect<func::FuncDialect, vector::VectorDialect, arith::ArithDialect>();
    RewritePatternSet libm(ctx);
    populateMathToLibmConversionPatterns(libm);
    if (failed(applyPartialConversion(getOperation(), target, std::move(libm))))
      return signalPassFailure();
  }
};

//===----------------------------------------------------------------------===//
// cpu-emit-kernel-entries
//===----------------------------------------------------------------------===//

/// The LLVM struct of a memref descriptor, as the LLVM type converter makes it.
Type descriptorType(MLIRContext *ctx, MemRefType type) {
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = IntegerType::get(ctx, 64);
  SmallVector<Type> fields{ptr, ptr, i64};
  if (type.getRank() > 0) {
    Type array = LLVM::LLVMArrayType::get(i64, type.getRank());
    fields.push_back(array);
    fields.push_back(array);
  }
  return LLVM::LLVMStructType::getLiteral(ctx, fields);
}

struct CpuEmitKernelEntriesPass
    : ortc::cpu::impl::CpuEmitKernelEntriesBase<CpuEmitKernelEntriesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto internal = LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal);
    SmallVector<func::FuncOp> kernels;
    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn->hasAttr(kKernelAttr))
        kernels.push_back(fn);
      else if (!fn.isDeclaration())
        fn->setAttr("llvm.linkage", internal);
    }
    // Names something refers to (one walk; kernels are rarely called).
    llvm::StringSet<> referenced;
    if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *uses)
        referenced.insert(use.getSymbolRef().getRootReference().getValue());
    OpBuilder b(ctx);
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    for (func::FuncOp fn : kernels) {
      if (fn.isDeclaration() || fn.getNumResults() != 0) {
        fn.emitError("cpu kernel '") << fn.getSymName() << "' must have a body and no results";
        return signalPassFailure();
      }
      for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
        auto memref = dyn_cast<MemRefType>(t);
        if (!memref || !memref.getLayout().isIdentity() || memref.getMemorySpace()) {
          fn.emitError("cpu kernel '")
              << fn.getSymName() << "': argument " << i << " has type " << t
              << "; the packed entry takes memrefs with identity layouts";
          return signalPassFailure();
        }
      }
      std::string name = fn.getSymName().str();
      auto implName = StringAttr::get(ctx, kImplPrefix + name);
      if (referenced.contains(name) &&
          failed(SymbolTable::replaceAllSymbolUses(fn, implName, module)))
        return signalPassFailure();
      fn.setSymName(implName);
      fn.setPrivate();
      fn->setAttr("llvm.linkage", internal);

      Location loc = fn.getLoc();
      b.setInsertionPointAfter(fn);
      auto entry = func::FuncOp::create(b, loc, name, b.getFunctionType({ptr}, {}));
      entry->setAttr("ortc.kernel_entry", UnitAttr::get(ctx));
      Block *block = entry.addEntryBlock();
      b.setInsertionPointToStart(block);
      SmallVector<Value> args;
      for (auto [i, t] : llvm::enumerate(fn.getArgumentTypes())) {
        auto memref = cast<MemRefType>(t);
        Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, block->getArgument(0),
                                         ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        Value descriptorPtr = LLVM::LoadOp::create(b, loc, ptr, slot);
        Value descriptor =
            LLVM::LoadOp::create(b, loc, descriptorType(ctx, memref), descriptorPtr);
        args.push_back(UnrealizedConversionCastOp::create(b, loc, memref, descriptor).getResult(0));
      }
      func::CallOp::create(b, loc, fn, args);
      func::ReturnOp::create(b, loc);
    }
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// The pipeline
//===----------------------------------------------------------------------===//

void ortc::cpu::registerKernelPipelineDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect, bufferization::BufferizationDialect,
                  cf::ControlFlowDialect, func::FuncDialect, index::IndexDialect,
                  linalg::LinalgDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect, tensor::TensorDialect,
                  ub::UBDialect, vector::VectorDialect, onnx_dialect::OnnxDialect,
                  fused::OrtcDialect>();
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerAllDialectInterfaceImplementations(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  tensor::registerTilingInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  vector::registerSubsetOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void ortc::cpu::buildCpuKernelLoweringPipeline(OpPassManager &pm,
                                               const KernelPipelineOptions &options) {
  {
    OpPassManager &fn = pm.nest<func::FuncOp>();
    CpuLowerToLinalgOptions lower;
    lower.failOnUnlowered = true;
    fn.addPass(createCpuLowerToLinalg(lower));
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createCSEPass());
    fn.addPass(createCpuFuseElementwise());
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createCSEPass());
  }
  // Outputs are written in place: the tensor.empty of a value that goes to
  // an output becomes that output's buffer.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = false; // kernels take memrefs already
  bufferize.unknownTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  // Temporaries that survive fusion are freed.
  bufferization::buildBufferDeallocationPipeline(pm);
  {
    OpPassManager &fn = pm.nest<func::FuncOp>();
    CpuTileAndVectorizeOptions tiling;
    tiling.vectorWidth = options.vectorWidth;
    tiling.unroll = options.unroll;
    fn.addPass(createCpuTileAndVectorize(tiling));
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createCSEPass());
    fn.addPass(createConvertLinalgToLoopsPass());
    fn.addPass(memref::createFoldMemRefAliasOpsPass());
    fn.addPass(createCanonicalizerPass());
  }
  pm.addPass(createCpuApproximateMath());
  pm.addPass(createCpuEmitKernelEntries());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Math before vectors: libm calls unroll vectors with vector ops.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

FailureOr<std::unique_ptr<llvm::Module>>
ortc::cpu::lowerKernelsToLLVMIR(ModuleOp kernels, llvm::LLVMContext &llvmContext,
                                const KernelPipelineOptions &options) {
  MLIRContext *ctx = kernels->getContext();
  DialectRegistry registry;
  registerKernelPipelineDialects(registry);
  ctx->appendDialectRegistry(registry);

  // Count the errors the passes report (they still reach the caller's
  // handler), so that a failure without one still says something.
  int errors = 0;
  ScopedDiagnosticHandler counter(ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    return failure();
  });

  PassManager pm(ctx, kernels->getName().getStringRef());
  buildCpuKernelLoweringPipeline(pm, options);
  if (failed(pm.run(kernels))) {
    if (errors == 0)
      emitError(kernels.getLoc(), "cpu kernel lowering pipeline failed");
    return failure();
  }
  std::unique_ptr<llvm::Module> module = translateModuleToLLVMIR(kernels, llvmContext, "ortc_cpu_kernels");
  if (!module) {
    if (errors == 0)
      emitError(kernels.getLoc(), "cpu kernels: translation to LLVM IR failed");
    return failure();
  }
  return module;
}
