//===- TileAndVectorize.cpp - cpu-tile-and-vectorize ----------------------===//
//
// Bufferized, all-parallel linalg ops to vector code sized for the target's
// registers. The innermost dim is split at the last whole tile so that the
// main part is tiled and vectorized at full width and the remainder is one
// smaller vector (no masks, no scalar epilogue); what the vectorizer would
// not handle the way we want becomes scalar loops. Vector transfers are then
// lowered to 1-D loads, stores and broadcasts for the LLVM conversion.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUTILEANDVECTORIZE
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;

namespace {

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
  if (llvm::any_of(ranges, [](int64_t r) { return r == 0; }))
    return false;
  // A dynamic innermost dim is vectorized in whole tiles (lowerOne); the
  // vectorizer's own check then runs on the tiles.
  if (ShapedType::isDynamic(ranges.back()))
    return true;
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
    // A broadcast size-1 dim reads as the constant 0 in its operand's map;
    // collapsing across it would fold the operand's dims wrongly (or crash).
    for (AffineMap map : maps)
      for (AffineExpr result : map.getResults())
        if (!isa<AffineDimExpr>(result))
          return op;
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
  /// vectorizes the tile (static shape 1x..x1x`tile`). With `wholeTiles`, the
  /// tiles' dynamic sizes are known to be 1 and `tile` (the innermost range
  /// is a multiple of it), and are vectorized as such, without masks.
  LogicalResult tileAndVectorize(RewriterBase &rewriter, TilingInterface op, int64_t tile,
                                 bool wholeTiles = false) {
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
    SmallVector<int64_t> vectorSizes;
    if (wholeTiles) {
      vectorSizes.assign(n, 1);
      vectorSizes.back() = tile;
    }
    FailureOr<linalg::VectorizationResult> vectorized = linalg::vectorize(
        rewriter, tileOp, vectorSizes, /*inputScalableVecDims=*/{}, /*vectorizeNDExtract=*/false,
        /*flatten1DDepthwiseConv=*/false, /*assumeDynamicDimsMatchVecSizes=*/wholeTiles);
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
    if (!ShapedType::isDynamic(op.getStaticLoopRanges().back()))
      op = collapseTrailing(rewriter, op);
    int64_t n = op.getNumLoops();
    int64_t size = op.getStaticLoopRanges().back();
    unsigned maxBits = 8;
    for (OpOperand &operand : op->getOpOperands())
      maxBits = std::max(maxBits, getElementTypeOrSelf(operand.get().getType())
                                      .getIntOrFloatBitWidth());
    int64_t lanes = std::max<int64_t>(1, vectorWidth * 32 / maxBits);
    int64_t tile = lanes * std::max<int64_t>(1, unroll);
    ++numVectorized;
    auto tiling = cast<TilingInterface>(op.getOperation());
    if (ShapedType::isDynamic(size)) {
      // [0, main) in whole tiles, main = size floordiv tile * tile, then the
      // remainder (under one tile) as scalar loops.
      rewriter.setInsertionPoint(op);
      Location loc = op.getLoc();
      OpFoldResult extent = op.createLoopRanges(rewriter, loc).back().size;
      AffineExpr s0 = rewriter.getAffineSymbolExpr(0);
      OpFoldResult main = affine::makeComposedFoldedAffineApply(
          rewriter, loc, AffineMap::get(0, 1, s0.floorDiv(tile) * tile), {extent});
      auto [first, second] = linalg::splitOp(rewriter, tiling, n - 1, main);
      if (!first || !second)
        return op->emitError("cpu-tile-and-vectorize: cannot split the dynamic innermost dim");
      if (failed(tileAndVectorize(rewriter, first, tile, /*wholeTiles=*/true)))
        return failure();
      return toLoops(rewriter, cast<linalg::LinalgOp>(second.getOperation()));
    }
    int64_t main = size / tile * tile;
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

} // namespace
