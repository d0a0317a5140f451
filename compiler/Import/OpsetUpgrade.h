//===- OpsetUpgrade.h - older node signatures onto the typed ops -*- C++ -*-===//
//
// Some operators changed signature without changing meaning: an attribute
// became an input (ReduceMean axes at opset 18, Squeeze axes at 13, Clip
// min/max at 11, ...), or a default changed in a way that does not matter for
// the node at hand (Softmax-11 over the last axis). Such nodes are rewritten
// here into the latest signature, so that they import as typed ops instead of
// onnx.Generic and every pass and EP sees one form. Rewritten:
//
//   Reduce* before 18 (ReduceSum before 13), Squeeze/Unsqueeze before 13:
//     the axes attribute becomes input 1
//   Split 2 to 12: split becomes input 1
//   Slice-1: starts, ends, axes become inputs 1 to 3
//   Clip 6 to 10: min, max become inputs 1, 2 (f32 input only)
//   Pad 2 to 10: pads, value become inputs 1, 2 (value only for f32)
//   Dropout 7 to 11: ratio becomes input 1
//   DFT 17 to 19: axis becomes input 2
//   Scatter 9 to 10 (renamed ScatterElements by the importer): unchanged
//   Softmax/LogSoftmax/Hardmax before 13 over the last axis: axis -1
//   BatchNormalization 7 to 13, inference only (no training output named),
//     spatial absent or 1: spatial dropped, trailing outputs dropped
//   GridSample 16 to 19: mode bilinear -> linear, bicubic -> cubic
//   TopK 1 to 9: k becomes input 1 (int64 [1])
//   Add, Sub, Mul, Div, Pow, And, Or, Xor, Equal, Greater, Less before 7:
//     `broadcast` and `axis` dropped. Without broadcast the shapes are equal;
//     with it, B's dims are a run of A's starting at `axis` (default: the
//     trailing ones), which numpy broadcasting reads the same once B has the
//     dims after the run as 1s: the importer unsqueezes B by them. An axis
//     with an unranked A or B stays generic.
//   Gemm before 7: `broadcast` dropped (7 always broadcasts C one way)
//   BatchNormalization 1 to 6 with is_test 1: is_test and consumed_inputs
//     dropped, then as 7 to 13
//   Upsample 7 to 9 and Resize-10, mode nearest or linear: Resize with roi
//     left out, the scales (attribute at 7 and 8) as input 2,
//     coordinate_transformation_mode asymmetric, nearest_mode floor; a nearest
//     Resize-10 only with constant scales >= 1 (onnxruntime rounds up when one
//     downsamples)
//
// Anything else stays onnx.Generic. test/e2e/old_opsets.py checks the newer
// rewrites against onnxruntime.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_IMPORT_OPSETUPGRADE_H
#define ORTC_COMPILER_IMPORT_OPSETUPGRADE_H

#include "onnx/onnx_pb.h"

#include <optional>
#include <vector>

namespace ortc {

/// A constant input that an upgrade adds, at position `index`.
struct UpgradeConstant {
  int index;
  onnx::TensorProto value;
};

/// An input that an upgrade gives more trailing dims: the importer inserts
/// Unsqueeze(input `index`, `axes`) before the node.
struct UpgradeUnsqueeze {
  int index;
  std::vector<int64_t> axes;
};

/// What the importer knows of the node's inputs.
struct UpgradeInputInfo {
  std::optional<int64_t> rank; // of the first input, when it is a ranked tensor
  /// Per input: its rank, when it is a ranked tensor.
  std::vector<std::optional<int64_t>> ranks;
  bool isF32 = false;          // whether the first input is a float32 tensor
  /// Per input: the values of a small float32 constant (an initializer or a
  /// Constant node), nullopt for anything else.
  std::vector<std::optional<std::vector<float>>> f32Constants;
};

/// If `node`, of default-domain opset `opset`, has an older signature that maps
/// onto the latest one, writes the rewritten node to `upgraded` and the
/// constants to add to `constants`, and returns true. The rewritten node may be
/// of another op type (Upsample becomes Resize); the importer looks up its
/// schema under that name.
bool upgradeOlderNode(const onnx::NodeProto &node, int64_t opset, const UpgradeInputInfo &input,
                      onnx::NodeProto &upgraded, std::vector<UpgradeConstant> &constants,
                      std::vector<UpgradeUnsqueeze> &unsqueezes);

} // namespace ortc

#endif // ORTC_COMPILER_IMPORT_OPSETUPGRADE_H
