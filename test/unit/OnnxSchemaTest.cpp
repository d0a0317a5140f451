//===- OnnxSchemaTest.cpp - the generated schema table --------------------===//

#include "dialects/onnx/OnnxSchema.h"

#include <gtest/gtest.h>

#include <string>

using namespace ortc::onnx_dialect;

namespace {

int count(const OnnxParamInfo *p) {
  int n = 0;
  for (; p->name; ++p)
    ++n;
  return n;
}

TEST(OnnxSchemaTest, FindsDefaultDomainOps) {
  const OnnxOpSchema *conv = lookupOnnxSchema("", "Conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_STREQ(conv->mlirName, "onnx.Conv");
  EXPECT_EQ(count(conv->inputs), 3);
  EXPECT_EQ(conv->inputs[2].kind, ParamKind::Optional);
  ASSERT_NE(conv->findAttribute("strides"), nullptr);
  EXPECT_EQ(conv->findAttribute("strides")->kind, AttrKind::Ints);
  EXPECT_EQ(conv->findAttribute("nonexistent"), nullptr);
  EXPECT_EQ(lookupOnnxSchema("ai.onnx", "Conv"), conv);
}

TEST(OnnxSchemaTest, RecordsVariadicsGraphsAndVersions) {
  const OnnxOpSchema *concat = lookupOnnxSchema("", "Concat");
  ASSERT_NE(concat, nullptr);
  EXPECT_EQ(concat->inputs[0].kind, ParamKind::Variadic);
  EXPECT_TRUE(concat->findAttribute("axis")->required);

  const OnnxOpSchema *loop = lookupOnnxSchema("", "Loop");
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->findAttribute("body")->kind, AttrKind::Graph);

  // Softmax-13 changed the meaning of `axis`: 11 and older are not typed.
  const OnnxOpSchema *softmax = lookupOnnxSchema("", "Softmax");
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->compatibleSince, 13);
  EXPECT_GE(softmax->sinceVersion, 13);
}

TEST(OnnxSchemaTest, TypeHints) {
  // Shape always returns int64; Relu returns its input's type.
  const OnnxOpSchema *shape = lookupOnnxSchema("", "Shape");
  EXPECT_EQ(shape->outputs[0].fixedElemType, 7);
  const OnnxOpSchema *relu = lookupOnnxSchema("", "Relu");
  EXPECT_EQ(relu->outputs[0].sameTypeAsInput, 0);
}

TEST(OnnxSchemaTest, MlDomainAndUnknowns) {
  const OnnxOpSchema *enc = lookupOnnxSchema("ai.onnx.ml", "LabelEncoder");
  ASSERT_NE(enc, nullptr);
  EXPECT_STREQ(enc->mlirName, "onnx.ml.LabelEncoder");
  EXPECT_EQ(lookupOnnxSchema("", "LabelEncoder"), nullptr);
  EXPECT_EQ(lookupOnnxSchema("com.microsoft", "FusedMatMul"), nullptr);
  EXPECT_EQ(lookupOnnxSchema("", "NoSuchOp"), nullptr);
  // Deprecated ops stay generic.
  EXPECT_EQ(lookupOnnxSchema("", "Upsample"), nullptr);
  EXPECT_STREQ(onnxDataTypeName(1), "FLOAT");
  EXPECT_EQ(onnxDataTypeName(999), nullptr);
}

} // namespace
