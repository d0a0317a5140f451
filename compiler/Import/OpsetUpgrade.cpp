//===- OpsetUpgrade.cpp ----------------------------------------------------===//

#include "compiler/Import/OpsetUpgrade.h"

#include <optional>
#include <set>
#include <string>

namespace ortc {
namespace {

const onnx::AttributeProto *findAttr(const onnx::NodeProto &node, const std::string &name) {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

/// Copies `node` without the named attributes.
onnx::NodeProto withoutAttrs(const onnx::NodeProto &node, const std::set<std::string> &names) {
  onnx::NodeProto copy = node;
  copy.clear_attribute();
  for (const auto &a : node.attribute())
    if (!names.count(a.name()))
      *copy.add_attribute() = a;
  return copy;
}

/// Whether every attribute of `node` is one of `names`.
bool onlyAttrs(const onnx::NodeProto &node, const std::set<std::string> &names) {
  for (const auto &a : node.attribute())
    if (!names.count(a.name()))
      return false;
  return true;
}

/// The value of STRING attribute `name`, `fallback` when absent, nullopt when
/// it is of another type.
std::optional<std::string> stringAttr(const onnx::NodeProto &node, const std::string &name,
                                      const std::string &fallback) {
  const onnx::AttributeProto *a = findAttr(node, name);
  if (!a)
    return fallback;
  if (a->type() != onnx::AttributeProto::STRING)
    return std::nullopt;
  return a->s();
}

void setStringAttr(onnx::NodeProto &node, const std::string &name, const std::string &value) {
  for (auto &a : *node.mutable_attribute()) {
    if (a.name() == name) {
      a.set_s(value);
      return;
    }
  }
  auto *a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(value);
}

template <typename Range> onnx::TensorProto int64Vector(const Range &values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(values.size());
  for (int64_t v : values)
    t.add_int64_data(v);
  return t;
}

onnx::TensorProto f32Vector(const google::protobuf::RepeatedField<float> &values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(values.size());
  for (float v : values)
    t.add_float_data(v);
  return t;
}

onnx::TensorProto f32Scalar(float value) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_float_data(value);
  return t;
}

onnx::TensorProto int64Scalar(int64_t value) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_int64_data(value);
  return t;
}

/// Moves INTS attribute `attr` (when present) into input `index`.
bool moveIntsToInput(const onnx::NodeProto &node, const char *attr, int index,
                     onnx::NodeProto &upgraded, std::vector<UpgradeConstant> &constants) {
  if (node.input_size() > index)
    return false; // the input is already there: not the old form
  const onnx::AttributeProto *a = findAttr(node, attr);
  upgraded = withoutAttrs(node, {attr});
  if (a)
    constants.push_back({index, int64Vector(a->ints())});
  return true;
}

bool isReduce(const std::string &op) {
  static const std::set<std::string> reduces = {"ReduceL1",        "ReduceL2",   "ReduceLogSum",
                                                "ReduceLogSumExp", "ReduceMax",  "ReduceMean",
                                                "ReduceMin",       "ReduceProd", "ReduceSumSquare"};
  return reduces.count(op) > 0;
}

/// BatchNormalization 7 to 13 for inference (only Y is used) is
/// BatchNormalization-15 with training_mode 0. `spatial` (7 and 8) must be 1:
/// spatial 0 normalizes per activation, with scale, B, mean and var of shape
/// [C, D1, ...], which the later versions cannot express.
bool upgradeBatchNormalization(const onnx::NodeProto &node, int64_t opset,
                               onnx::NodeProto &upgraded) {
  for (int i = 1; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      return false; // training outputs (mean, var, saved_mean, saved_var)
  std::set<std::string> known = {"epsilon", "momentum"};
  if (opset < 9)
    known.insert("spatial");
  if (opset < 7) {
    // Before 7, is_test 0 (the default) normalizes by the batch's statistics.
    const auto *isTest = findAttr(node, "is_test");
    if (!isTest || isTest->type() != onnx::AttributeProto::INT || isTest->i() != 1)
      return false;
    known.insert({"is_test", "consumed_inputs"});
  }
  if (node.input_size() != 5 || !onlyAttrs(node, known))
    return false;
  if (const auto *spatial = findAttr(node, "spatial"))
    if (spatial->type() != onnx::AttributeProto::INT || spatial->i() != 1)
      return false;
  upgraded = withoutAttrs(node, {"spatial", "is_test", "consumed_inputs"});
  upgraded.mutable_output()->DeleteSubrange(1, upgraded.output_size() - 1);
  return true;
}

/// GridSample 16 to 19 is GridSample-20 with the modes renamed: bilinear is
/// linear, bicubic is cubic (16 takes 4-D X only, which 20 also accepts).
bool upgradeGridSample(const onnx::NodeProto &node, onnx::NodeProto &upgraded) {
  if (!onlyAttrs(node, {"align_corners", "mode", "padding_mode"}))
    return false;
  std::optional<std::string> mode = stringAttr(node, "mode", "bilinear");
  if (!mode)
    return false;
  std::string renamed;
  if (*mode == "bilinear")
    renamed = "linear";
  else if (*mode == "bicubic")
    renamed = "cubic";
  else if (*mode == "nearest")
    renamed = "nearest";
  else
    return false;
  upgraded = node;
  if (findAttr(node, "mode"))
    setStringAttr(upgraded, "mode", renamed);
  return true;
}

/// Upsample 7 to 9 and Resize-10 are Resize with roi left out, the scales as
/// input 2 and the coordinate rule x_in = x_out / scale ("asymmetric"); nearest
/// takes the floor. onnxruntime agrees except for Resize-10 nearest with a
/// scale below 1, where it takes the ceiling (Upsample requires scales >= 1):
/// that node is rewritten only when its scales are constants of at least 1.
bool upgradeUpsample(const onnx::NodeProto &node, int64_t opset, const UpgradeInputInfo &input,
                     onnx::NodeProto &upgraded, std::vector<UpgradeConstant> &constants) {
  bool isResize = node.op_type() == "Resize";
  bool scalesAttr = !isResize && opset < 9; // Upsample-7
  if (!onlyAttrs(node, scalesAttr ? std::set<std::string>{"mode", "scales"}
                                  : std::set<std::string>{"mode"}))
    return false;
  if (node.input_size() != (scalesAttr ? 1 : 2) || node.input(0).empty())
    return false;
  std::optional<std::string> mode = stringAttr(node, "mode", "nearest");
  if (!mode || (*mode != "nearest" && *mode != "linear"))
    return false;
  std::optional<std::vector<float>> scales;
  const onnx::AttributeProto *scalesValue = nullptr;
  if (scalesAttr) {
    scalesValue = findAttr(node, "scales");
    if (!scalesValue || scalesValue->type() != onnx::AttributeProto::FLOATS)
      return false;
    scales.emplace(scalesValue->floats().begin(), scalesValue->floats().end());
  } else {
    if (node.input(1).empty())
      return false;
    if (input.f32Constants.size() > 1)
      scales = input.f32Constants[1];
  }
  if (*mode == "nearest") {
    if (isResize && !scales)
      return false; // a scale below 1 would round differently
    if (scales)
      for (float s : *scales)
        if (!(s >= 1))
          return false;
  }
  upgraded = withoutAttrs(node, {"scales", "mode"});
  upgraded.set_op_type("Resize");
  upgraded.mutable_input()->DeleteSubrange(1, upgraded.input_size() - 1);
  upgraded.add_input(""); // roi
  if (scalesAttr)
    constants.push_back({2, f32Vector(scalesValue->floats())});
  else
    upgraded.add_input(node.input(1));
  setStringAttr(upgraded, "mode", *mode);
  setStringAttr(upgraded, "coordinate_transformation_mode", "asymmetric");
  if (*mode == "nearest")
    setStringAttr(upgraded, "nearest_mode", "floor");
  return true;
}

} // namespace

/// A binary op before 7 with `broadcast` and `axis` (OpsetUpgrade.h).
bool upgradeLegacyBroadcast(const onnx::NodeProto &node, const UpgradeInputInfo &input,
                            onnx::NodeProto &upgraded, std::vector<UpgradeUnsqueeze> &unsqueezes) {
  if (node.input_size() != 2 || !onlyAttrs(node, {"broadcast", "axis", "consumed_inputs"}))
    return false;
  const auto *broadcast = findAttr(node, "broadcast");
  const auto *axis = findAttr(node, "axis");
  bool broadcasts = broadcast && broadcast->type() == onnx::AttributeProto::INT && broadcast->i();
  upgraded = withoutAttrs(node, {"broadcast", "axis", "consumed_inputs"});
  if (!broadcasts || !axis)
    return true; // equal shapes, or B's dims trailing A's: numpy reads both so
  if (axis->type() != onnx::AttributeProto::INT || input.ranks.size() != 2 || !input.ranks[0] ||
      !input.ranks[1])
    return false;
  int64_t rankA = *input.ranks[0], rankB = *input.ranks[1];
  int64_t start = axis->i() < 0 ? axis->i() + rankA : axis->i();
  if (start < 0 || start + rankB > rankA)
    return false;
  std::vector<int64_t> trailing;
  for (int64_t d = rankB; d < rankA - start; ++d)
    trailing.push_back(d);
  if (!trailing.empty())
    unsqueezes.push_back({1, trailing});
  return true;
}

bool upgradeOlderNode(const onnx::NodeProto &node, int64_t opset, const UpgradeInputInfo &input,
                      onnx::NodeProto &upgraded, std::vector<UpgradeConstant> &constants,
                      std::vector<UpgradeUnsqueeze> &unsqueezes) {
  const std::string &op = node.op_type();
  static const std::set<std::string> legacyBroadcast = {
      "Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"};
  if (legacyBroadcast.count(op) && opset < 7)
    return upgradeLegacyBroadcast(node, input, upgraded, unsqueezes);
  if (op == "Gemm" && opset < 7) {
    if (!onlyAttrs(node, {"alpha", "beta", "transA", "transB", "broadcast"}))
      return false;
    upgraded = withoutAttrs(node, {"broadcast"});
    return true;
  }
  // Versions 1 and 11 of these differ only in accepting negative axes.
  if ((isReduce(op) && opset < 18) || (op == "ReduceSum" && opset < 13))
    return moveIntsToInput(node, "axes", 1, upgraded, constants);
  if ((op == "Squeeze" || op == "Unsqueeze") && opset < 13)
    return moveIntsToInput(node, "axes", 1, upgraded, constants);
  if (op == "Split" && opset >= 2 && opset < 13)
    return moveIntsToInput(node, "split", 1, upgraded, constants);
  if (op == "Slice" && opset < 10) {
    if (node.input_size() != 1 || !findAttr(node, "starts") || !findAttr(node, "ends"))
      return false;
    upgraded = withoutAttrs(node, {"starts", "ends", "axes"});
    constants.push_back({1, int64Vector(findAttr(node, "starts")->ints())});
    constants.push_back({2, int64Vector(findAttr(node, "ends")->ints())});
    if (const auto *axes = findAttr(node, "axes"))
      constants.push_back({3, int64Vector(axes->ints())});
    return true;
  }
  if (op == "Clip" && opset >= 6 && opset < 11) {
    // min and max become inputs of the input's type: only f32 is handled.
    const auto *min = findAttr(node, "min");
    const auto *max = findAttr(node, "max");
    if ((min || max) && !input.isF32)
      return false;
    upgraded = withoutAttrs(node, {"min", "max"});
    if (min)
      constants.push_back({1, f32Scalar(min->f())});
    if (max)
      constants.push_back({2, f32Scalar(max->f())});
    return true;
  }
  if (op == "Pad" && opset >= 2 && opset < 11) {
    const auto *pads = findAttr(node, "pads");
    const auto *value = findAttr(node, "value");
    if (!pads || (value && value->f() != 0 && !input.isF32))
      return false;
    upgraded = withoutAttrs(node, {"pads", "value"});
    constants.push_back({1, int64Vector(pads->ints())});
    if (value && value->f() != 0)
      constants.push_back({2, f32Scalar(value->f())});
    return true;
  }
  if (op == "Dropout" && opset >= 7 && opset < 12) {
    // Inference: the ratio does not matter, but keep it for the record.
    const auto *ratio = findAttr(node, "ratio");
    upgraded = withoutAttrs(node, {"ratio"});
    if (ratio)
      constants.push_back({1, f32Scalar(ratio->f())});
    return true;
  }
  if (op == "DFT" && opset >= 17 && opset < 20) {
    // DFT-20 takes the axis (default 1 before, counted the same way) as input 2.
    if (node.input_size() > 2)
      return false;
    const auto *axis = findAttr(node, "axis");
    upgraded = withoutAttrs(node, {"axis"});
    constants.push_back({2, int64Scalar(axis ? axis->i() : 1)});
    return true;
  }
  if (op == "ScatterElements" && opset >= 9 && opset < 11) {
    // A Scatter-9 node, renamed by the importer: the same inputs and axis.
    upgraded = node;
    return true;
  }
  if (op == "BatchNormalization" && opset < 14)
    return upgradeBatchNormalization(node, opset, upgraded);
  if (op == "GridSample" && opset >= 16 && opset < 20)
    return upgradeGridSample(node, upgraded);
  if (op == "TopK" && opset < 10) {
    // TopK-1's k attribute is TopK-10's input K (int64, shape [1]).
    const auto *k = findAttr(node, "k");
    if (node.input_size() != 1 || !k || k->type() != onnx::AttributeProto::INT ||
        !onlyAttrs(node, {"axis", "k"}))
      return false;
    upgraded = withoutAttrs(node, {"k"});
    constants.push_back({1, int64Vector(std::vector<int64_t>{k->i()})});
    return true;
  }
  if ((op == "Upsample" && opset >= 7 && opset < 10) || (op == "Resize" && opset == 10))
    return upgradeUpsample(node, opset, input, upgraded, constants);
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13) {
    // Before 13 these flatten to 2-D at `axis` (default 1); over the last
    // axis that is the same as the per-axis form.
    const auto *axisAttr = findAttr(node, "axis");
    int64_t axis = axisAttr ? axisAttr->i() : 1;
    if (!input.rank)
      return false;
    if (axis < 0)
      axis += *input.rank;
    if (axis != *input.rank - 1)
      return false;
    upgraded = withoutAttrs(node, {"axis"});
    auto *a = upgraded.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(-1);
    return true;
  }
  return false;
}

} // namespace ortc
