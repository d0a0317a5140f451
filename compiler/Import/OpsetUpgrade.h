//===- OpsetUpgrade.h - older node signatures onto the typed ops -*- C++ -*-===//
//
// Some operators changed signature without changing meaning: an attribute
// became an input (ReduceMean axes at opset 18, Squeeze axes at 13, Clip
// min/max at 11, ...), or a default changed in a way that does not matter for
// the node at hand (Softmax-11 over the last axis). Such nodes are rewritten
// here into the latest signature, so that they import as typed ops instead of
// onnx.Generic and every pass and EP sees one form.
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

/// What the importer knows of the node's first input.
struct UpgradeInputInfo {
  std::optional<int64_t> rank; // when the type is a ranked tensor
  bool isF32 = false;
};

/// If `node`, of default-domain opset `opset`, has an older signature that maps
/// onto the latest one, writes the rewritten node to `upgraded` and the
/// constants to add to `constants`, and returns true.
bool upgradeOlderNode(const onnx::NodeProto &node, int64_t opset, const UpgradeInputInfo &input,
                      onnx::NodeProto &upgraded, std::vector<UpgradeConstant> &constants);

} // namespace ortc

#endif // ORTC_COMPILER_IMPORT_OPSETUPGRADE_H
