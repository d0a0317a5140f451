//===- OpsetUpgrade.cpp ----------------------------------------------------===//

#include "compiler/Import/OpsetUpgrade.h"

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

onnx::TensorProto int64Vector(const google::protobuf::RepeatedField<int64_t> &values) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(values.size());
  for (int64_t v : values)
    t.add_int64_data(v);
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

} // namespace

bool upgradeOlderNode(const onnx::NodeProto &node, int64_t opset, const UpgradeInputInfo &input,
                      onnx::NodeProto &upgraded, std::vector<UpgradeConstant> &constants) {
  const std::string &op = node.op_type();
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
