//===- DimExprTest.cpp - symbolic dims: normal forms, evaluation ----------===//

#include "runtime/ep/DimExpr.h"
#include "runtime/ep/WindowGeometry.h"

#include <gtest/gtest.h>

using namespace ortc;

namespace {

int64_t evaluate(const DimTable &table, int32_t id, std::vector<int64_t> symbols) {
  std::vector<int64_t> values(table.nodes().size());
  std::string why;
  EXPECT_TRUE(evaluateDimNodes(table.nodes().data(), table.nodes().size(), symbols.data(),
                               symbols.size(), values.data(), why))
      << why;
  return values[size_t(id)];
}

TEST(DimExprTest, EqualExpressionsShareAnId) {
  DimTable t;
  SymDim x{&t, t.symbol(0)}, y{&t, t.symbol(1)};
  EXPECT_EQ((x + 1) + 1, x + 2);
  EXPECT_EQ(x + y, y + x);
  EXPECT_EQ(x * y, y * x);
  EXPECT_EQ((x + 1) * 2, x * 2 + 2);
  EXPECT_EQ(x + x, x * 2);
  EXPECT_EQ((x - x).constant(), 0);
  EXPECT_EQ((x + y) - y, x);
  EXPECT_NE(x, y);
  EXPECT_NE(x + 1, x);
}

TEST(DimExprTest, ExactDivisionsCancel) {
  DimTable t;
  SymDim b{&t, t.symbol(0)}, s{&t, t.symbol(1)};
  // Reshape [b, s, 128] to [b, s, 2, -1]: the -1 is 64.
  EXPECT_EQ(floorDiv(b * s * 128, b * s * 2).constant(), 64);
  EXPECT_EQ(floorDiv(s * 4 + 8, 2), s * 2 + 4);
  EXPECT_EQ(floorDiv(b * s, s), b);
  // Not exact: kept as a division, which evaluates with floor semantics.
  SymDim q = floorDiv(s + 1, 2);
  EXPECT_FALSE(q.constant());
  EXPECT_EQ(evaluate(t, q.id, {1, 6}), 3);
  EXPECT_EQ(evaluate(t, ceilDiv(s, 4).id, {1, 9}), 3);
}

TEST(DimExprTest, ASumOverASumThatDividesItIsTheQuotient) {
  DimTable t;
  SymDim w{&t, t.symbol(0)}, b{&t, t.symbol(1)};
  // A Reshape target computed as numel / (w + 1), where numel = (w + 1) * 1024.
  SymDim h = floorDiv(w - 1, 2) + 1;
  EXPECT_EQ(floorDiv((h + 1) * 1024, h + 1).constant(), 1024);
  // The quotient may be a product: (w b + b) / (w + 1) is b, and
  // (2 w b + 2 b + 4 w + 4) / (w + 1) is 2 b + 4 only as a sum, which is left.
  EXPECT_EQ(floorDiv(w * b + b, w + 1), b);
  EXPECT_EQ(floorDiv(w * b * 3 + b * 3, w + 1), b * 3);
  EXPECT_EQ(t.constantValue(t.mod(((w + 1) * 8).id, (w + 1).id)), 0);
  // Not a multiple: kept as a division.
  SymDim q = floorDiv(w * 4 + 6, w + 1);
  EXPECT_FALSE(q.constant());
  EXPECT_EQ(evaluate(t, q.id, {1, 0}), 5);
  EXPECT_NE(floorDiv(w * b + 1, w + 1), b);
}

TEST(DimExprTest, CommonFactorsCancelFromAFloorOfAQuotient) {
  DimTable t;
  SymDim b{&t, t.symbol(0)}, s{&t, t.symbol(1)};
  // Reshape [b, s] to [0, 2, -1]: the -1 is (b * s) floordiv (2 * b).
  EXPECT_EQ(floorDiv(b * s, b * 2), floorDiv(s, 2));
  EXPECT_EQ(floorDiv(s * 4, 6), floorDiv(s * 2, 3));
  EXPECT_EQ(evaluate(t, floorDiv(s * 4, 6).id, {1, 5}), 3);
  // A modulo keeps its factors: (b s) mod (2 b) is b (s mod 2), not s mod 2.
  EXPECT_NE(t.mod((b * s).id, (b * 2).id), t.mod(s.id, t.constant(2)));
}

// Sizes are never negative, which is what lets the clamps of Slice and Range
// fold away: max(s, 0) is s.
TEST(DimExprTest, ExtremaUseThatSizesAreNotNegative) {
  DimTable t;
  int32_t s = t.symbol(0), b = t.symbol(1), zero = t.constant(0), c512 = t.constant(512);
  EXPECT_EQ(t.max(s, zero), s);
  EXPECT_EQ(t.min(zero, s), zero);
  EXPECT_EQ(t.max(t.add(s, t.constant(3)), t.constant(2)), t.add(s, t.constant(3)));
  // s - 1 may be -1: the clamp stays.
  int32_t sMinus1 = t.sub(s, t.constant(1));
  EXPECT_NE(t.max(sMinus1, zero), sMinus1);
  int32_t clamped = t.min(s, c512);
  EXPECT_EQ(t.max(clamped, zero), clamped);
  EXPECT_EQ(t.lowerBound(clamped), 0);
  // Absorption and idempotence.
  EXPECT_EQ(t.max(s, clamped), s);
  EXPECT_EQ(t.min(s, t.max(s, b)), s);
  EXPECT_EQ(t.max(s, t.max(s, b)), t.max(s, b));
  EXPECT_EQ(t.max(t.max(b, s), s), t.max(s, b));
  EXPECT_EQ(t.lowerBound(t.floorDiv(t.add(s, t.constant(7)), t.constant(2))), 3);
  EXPECT_EQ(t.lowerBound(t.mul(t.constant(-2), s)), std::nullopt);
  EXPECT_EQ(evaluate(t, t.max(sMinus1, zero), {0, 0}), 0);
}

TEST(DimExprTest, WindowRuleAgreesWithIntegers) {
  // The same template, over symbols and over integers, at every input size.
  for (AutoPad pad : {AutoPad::NotSet, AutoPad::SameUpper, AutoPad::Valid})
    for (bool ceil : {false, true})
      for (int64_t stride : {1, 2, 3}) {
        DimTable t;
        SymDim in{&t, t.symbol(0)};
        SymDim out = windowOutputSize(in, 3, stride, 1, 1, 0, pad, ceil);
        for (int64_t n = 3; n < 40; ++n)
          EXPECT_EQ(evaluate(t, out.id, {n}),
                    windowOutputSize<int64_t>(n, 3, stride, 1, 1, 0, pad, ceil))
              << "in " << n << " stride " << stride << " ceil " << ceil;
      }
}

TEST(DimExprTest, PrintsReadably) {
  DimTable t;
  SymDim h{&t, t.symbol(0)};
  EXPECT_EQ(t.print(floorDiv(h - 1, 2).id, {"height"}), "(height + -1) floordiv 2");
  EXPECT_EQ(t.print((h * 3).id, {}), "3 * s0");
}

TEST(DimExprTest, VerifyAndEvaluateRefuseBadTables) {
  std::string why;
  DimNode forward[] = {{DimOp::Add, 0, 1}, {DimOp::Const, 1, 0}};
  EXPECT_FALSE(verifyDimNodes(forward, 2, 0, why));
  EXPECT_NE(why.find("does not precede"), std::string::npos);
  DimNode badSymbol[] = {{DimOp::Symbol, 3, 0}};
  EXPECT_FALSE(verifyDimNodes(badSymbol, 1, 2, why));
  DimNode badOp[] = {{DimOp(77), 0, 0}};
  EXPECT_FALSE(verifyDimNodes(badOp, 1, 0, why));
  DimNode divZero[] = {{DimOp::Symbol, 0, 0}, {DimOp::Const, 0, 0}, {DimOp::FloorDiv, 0, 1}};
  ASSERT_TRUE(verifyDimNodes(divZero, 3, 1, why));
  int64_t symbols[] = {5}, out[3];
  EXPECT_FALSE(evaluateDimNodes(divZero, 3, symbols, 1, out, why));
  EXPECT_EQ(why, "a dim divides by zero");
  DimNode overflow[] = {{DimOp::Symbol, 0, 0}, {DimOp::Mul, 0, 0}};
  int64_t big[] = {int64_t(1) << 40};
  EXPECT_FALSE(evaluateDimNodes(overflow, 2, big, 1, out, why));
}

} // namespace
