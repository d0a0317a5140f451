//===- CastKernelsTest.cpp - Cast between every element type --------------===//
//
// The Cast library kernel against onnx's reference Cast: the expected bytes
// in CastReferenceVectors.inc come from onnx.reference (numpy, ml_dtypes),
// written by cast_reference_vectors.py, and cover NaN, Inf, the largest
// values and the ties above them, subnormals, rounding ties, saturate on and
// off, float8e8m0's round modes and the packed sub-byte layouts. Then the
// scalar conversions on every bit pattern (decode/encode round trips), the
// packing at chunk boundaries on a thread pool, the kernel's errors, the
// claims, and a compiled partition with sub-byte buffers and weights.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/OnnxImporter.h"
#include "providers/cpu/compile/CpuCompileEp.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/ThreadPool.h"
#include "providers/cpu/runtime/PlanExecutor.h"
#include "runtime/ep/ElementCast.h"
#include "runtime/support/TensorFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "onnx/onnx_pb.h"

#include "test/unit/ScratchDir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace ortc;

namespace {

struct ReferenceInput {
  ElementType type;
  int64_t count;
  std::vector<uint8_t> bytes;
};

struct ReferenceCase {
  ElementType to;
  int saturate;
  const char *roundMode;
  std::vector<uint8_t> bytes;
};

#include "test/unit/cpu/CastReferenceVectors.inc"

/// Runs the registered Cast kernel; `out` gets the output bytes.
Status runCast(const TensorView &x, ElementType to, std::vector<uint8_t> &out,
               int64_t saturate = 1, const std::string &roundMode = "up",
               cpu::ThreadPool *pool = nullptr, std::vector<int64_t> outShape = {}) {
  cpu::LibraryKernelFn fn = cpu::findLibraryKernel("Cast");
  if (!fn)
    return Status::error(StatusCode::NotFound, "no Cast kernel");
  cpu::StepAttributes attrs;
  attrs.ints["saturate"] = {saturate};
  attrs.strings["round_mode"] = roundMode;
  TensorView y;
  y.type = to;
  y.shape = outShape.empty() ? x.shape : outShape;
  // Guard bytes after the payload catch writes past the end.
  out.assign(y.byteSize() + 16, 0xCD);
  y.data = out.data();
  cpu::Scratch scratch;
  cpu::KernelCall call{attrs, &x, 1, &y, 1, scratch, pool};
  Status status = fn(call);
  for (size_t i = y.byteSize(); i < out.size(); ++i)
    if (out[i] != 0xCD)
      return Status::error(StatusCode::Internal, "wrote past the output");
  out.resize(y.byteSize());
  return status;
}

std::string hex(const std::vector<uint8_t> &bytes) {
  static const char *digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s += digits[b >> 4];
    s += digits[b & 15];
    s += ' ';
  }
  return s;
}

void checkAgainstReference(const ReferenceInput &input, const ReferenceCase *begin,
                           const ReferenceCase *end) {
  TensorView x;
  x.type = input.type;
  x.shape = {input.count};
  x.data = const_cast<uint8_t *>(input.bytes.data());
  ASSERT_EQ(x.byteSize(), input.bytes.size());
  for (const ReferenceCase *c = begin; c != end; ++c) {
    std::vector<uint8_t> out;
    Status status = runCast(x, c->to, out, c->saturate, c->roundMode);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(hex(out), hex(c->bytes))
        << elementTypeName(input.type) << " -> " << elementTypeName(c->to) << " saturate "
        << c->saturate << " round_mode " << c->roundMode;
  }
}

#define CHECK_REFERENCE(name)                                                                     \
  checkAgainstReference(k##name##Input, std::begin(k##name##Cases), std::end(k##name##Cases))

TEST(CastKernel, Float32MatchesTheOnnxReference) { CHECK_REFERENCE(Float); }
TEST(CastKernel, Float32ToIntegersMatchesTheOnnxReference) { CHECK_REFERENCE(FloatToInt); }
TEST(CastKernel, Float64MatchesTheOnnxReference) { CHECK_REFERENCE(Double); }
TEST(CastKernel, Int64MatchesTheOnnxReference) { CHECK_REFERENCE(Int64); }
TEST(CastKernel, PackedInt4MatchesTheOnnxReference) { CHECK_REFERENCE(Int4); }

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

const ElementType kByteFloats[] = {ElementType::Float8E4M3FN, ElementType::Float8E4M3FNUZ,
                                   ElementType::Float8E5M2, ElementType::Float8E5M2FNUZ,
                                   ElementType::Float8E8M0};

double decode(ElementType type, uint8_t bits) {
  return readElement(type, &bits, 0).f;
}

TEST(ElementCast, EveryByteFloatPatternRoundTripsThroughDouble) {
  CastOptions saturating, exact;
  exact.saturate = false;
  exact.e8m0Rounding = E8M0Rounding::Down;
  for (ElementType type : kByteFloats)
    for (int b = 0; b < 256; ++b) {
      double v = decode(type, uint8_t(b));
      uint64_t again = encodeElement(type, ElementValue::ofFloat(v), exact);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(decode(type, uint8_t(again)))) << elementTypeName(type) << " " << b;
        continue;
      }
      EXPECT_EQ(again, uint64_t(b)) << elementTypeName(type) << " bits " << b << " = " << v;
      // Saturation leaves finite values alone (float8e8m0 rounds up by default,
      // and its 2^-127 is a float32 subnormal with a fraction: it becomes 2^-126
      // as in the reference).
      if (std::isfinite(v) && type != ElementType::Float8E8M0) {
        EXPECT_EQ(encodeElement(type, ElementValue::ofFloat(v), saturating), uint64_t(b))
            << elementTypeName(type) << " " << b;
      }
      if (std::isinf(v)) {
        EXPECT_EQ(decode(type, uint8_t(encodeElement(type, ElementValue::ofFloat(v), saturating))),
                  std::copysign(57344.0, v)); // only float8e5m2 has Inf: its max
      }
    }
  {
    uint8_t smallest = 0;
    EXPECT_EQ(encodeElement(ElementType::Float8E8M0,
                            readElement(ElementType::Float8E8M0, &smallest, 0), CastOptions()),
              1u);
  }
  // float4e2m1: all 16 patterns.
  for (uint8_t b = 0; b < 16; ++b) {
    double v = readElement(ElementType::Float4E2M1, &b, 0).f;
    EXPECT_EQ(encodeElement(ElementType::Float4E2M1, ElementValue::ofFloat(v), exact), b);
  }
}

TEST(ElementCast, EveryHalfAndBFloat16PatternRoundTrips) {
  for (ElementType type : {ElementType::Float16, ElementType::BFloat16})
    for (uint32_t b = 0; b < 65536; ++b) {
      uint16_t bits = uint16_t(b);
      double v = readElement(type, &bits, 0).f;
      uint64_t again = encodeElement(type, ElementValue::ofFloat(v), CastOptions());
      if (std::isnan(v))
        EXPECT_EQ(again & 0x8000, b & 0x8000); // the sign survives
      else
        ASSERT_EQ(again, b) << elementTypeName(type) << " " << v;
    }
}

TEST(ElementCast, Float32FastPathsAgreeWithTheGenericConversions) {
  // float16/bfloat16 -> float32: every pattern.
  std::vector<uint16_t> halves(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    halves[b] = uint16_t(b);
  std::vector<float> wide(65536);
  for (ElementType type : {ElementType::Float16, ElementType::BFloat16}) {
    castElements(type, halves.data(), ElementType::Float, wide.data(), 0, 65536, CastOptions());
    for (uint32_t b = 0; b < 65536; ++b) {
      float want = float(readElement(type, halves.data(), b).f);
      if (std::isnan(want)) // payloads may differ (bfloat16's keeps its bits)
        ASSERT_TRUE(std::isnan(wide[b]) && std::signbit(wide[b]) == std::signbit(want)) << b;
      else
        ASSERT_EQ(std::memcmp(&wide[b], &want, 4), 0) << elementTypeName(type) << " " << b;
    }
  }
  // float32 -> float16/bfloat16: a stride through every exponent and sign.
  std::vector<float> floats;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4093) {
    uint32_t b = uint32_t(bits);
    float f;
    std::memcpy(&f, &b, 4);
    floats.push_back(f);
  }
  for (float f : {65504.0f, 65519.996f, 65520.0f, 6.1035156e-05f, 6.1035152e-05f, 3.4028235e38f})
    for (float sign : {1.0f, -1.0f})
      floats.push_back(f * sign);
  std::vector<uint16_t> narrow(floats.size());
  for (ElementType type : {ElementType::Float16, ElementType::BFloat16}) {
    castElements(ElementType::Float, floats.data(), type, narrow.data(), 0,
                 int64_t(floats.size()), CastOptions());
    for (size_t i = 0; i < floats.size(); ++i)
      ASSERT_EQ(narrow[i],
                encodeElement(type, ElementValue::ofFloat(floats[i]), CastOptions()))
          << elementTypeName(type) << " " << floats[i];
  }
}

TEST(ElementCast, DecodesTheLandmarksOfEachFormat) {
  // Largest finite, smallest subnormal, NaN patterns (ONNX's Cast tables).
  EXPECT_EQ(decode(ElementType::Float8E4M3FN, 0x7e), 448.0);
  EXPECT_EQ(decode(ElementType::Float8E4M3FN, 0x01), std::ldexp(1.0, -9));
  EXPECT_TRUE(std::isnan(decode(ElementType::Float8E4M3FN, 0x7f)));
  EXPECT_TRUE(std::isnan(decode(ElementType::Float8E4M3FN, 0xff)));
  EXPECT_EQ(decode(ElementType::Float8E4M3FN, 0x80), 0.0);
  EXPECT_TRUE(std::signbit(decode(ElementType::Float8E4M3FN, 0x80)));
  EXPECT_EQ(decode(ElementType::Float8E4M3FNUZ, 0x7f), 240.0);
  EXPECT_EQ(decode(ElementType::Float8E4M3FNUZ, 0x01), std::ldexp(1.0, -10));
  EXPECT_TRUE(std::isnan(decode(ElementType::Float8E4M3FNUZ, 0x80)));
  EXPECT_EQ(decode(ElementType::Float8E5M2, 0x7b), 57344.0);
  EXPECT_EQ(decode(ElementType::Float8E5M2, 0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(decode(ElementType::Float8E5M2, 0x7c), std::numeric_limits<double>::infinity());
  EXPECT_EQ(decode(ElementType::Float8E5M2, 0xfc), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(decode(ElementType::Float8E5M2, 0x7d)));
  EXPECT_EQ(decode(ElementType::Float8E5M2FNUZ, 0x7f), 57344.0);
  EXPECT_EQ(decode(ElementType::Float8E5M2FNUZ, 0x01), std::ldexp(1.0, -17));
  EXPECT_TRUE(std::isnan(decode(ElementType::Float8E5M2FNUZ, 0x80)));
  EXPECT_EQ(decode(ElementType::Float8E8M0, 0x7f), 1.0);
  EXPECT_EQ(decode(ElementType::Float8E8M0, 0x00), std::ldexp(1.0, -127));
  EXPECT_EQ(decode(ElementType::Float8E8M0, 0xfe), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(decode(ElementType::Float8E8M0, 0xff)));
  uint8_t six = 0x07, minusHalf = 0x09;
  EXPECT_EQ(readElement(ElementType::Float4E2M1, &six, 0).f, 6.0);
  EXPECT_EQ(readElement(ElementType::Float4E2M1, &minusHalf, 0).f, -0.5);
}

TEST(ElementCast, SubBytePackingIsLowBitsFirst) {
  // int2 [1, -2, -1, 0, 1] packs to 0b00111001, then 0b01 (padding zero).
  const uint8_t packed[] = {0x39, 0x01};
  const int64_t want[] = {1, -2, -1, 0, 1};
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(readElement(ElementType::Int2, packed, i).i, want[i]) << i;
  EXPECT_EQ(readElement(ElementType::UInt2, packed, 1).u, 2u);
  uint8_t bytes[2] = {0xff, 0xff};
  writeElementBits(ElementType::Int4, bytes, 1, 0x3);
  writeElementBits(ElementType::Int4, bytes, 2, 0x0);
  EXPECT_EQ(bytes[0], 0x3f);
  EXPECT_EQ(bytes[1], 0xf0);
  EXPECT_EQ(tensorBytes(ElementType::Int4, 5), 3u);
  EXPECT_EQ(tensorBytes(ElementType::UInt2, 5), 2u);
  EXPECT_EQ(tensorBytes(ElementType::Float8E5M2, 5), 5u);
  EXPECT_EQ(elementSize(ElementType::Int4), 0u);
  EXPECT_EQ(elementBits(ElementType::Float4E2M1), 4u);
}

TEST(ElementCast, IntegersWrapAndBoolsAreZeroOrOne) {
  CastOptions o;
  EXPECT_EQ(encodeElement(ElementType::UInt16, ElementValue::ofSigned(-1), o), 0xffffu);
  EXPECT_EQ(encodeElement(ElementType::Int4, ElementValue::ofSigned(-9), o), 7u);
  EXPECT_EQ(encodeElement(ElementType::UInt2, ElementValue::ofUnsigned(6), o), 2u);
  EXPECT_EQ(encodeElement(ElementType::Int64, ElementValue::ofUnsigned(~uint64_t(0)), o),
            ~uint64_t(0));
  EXPECT_EQ(encodeElement(ElementType::Bool, ElementValue::ofFloat(std::nan("")), o), 1u);
  EXPECT_EQ(encodeElement(ElementType::Bool, ElementValue::ofFloat(-0.0), o), 0u);
  EXPECT_EQ(encodeElement(ElementType::Bool, ElementValue::ofSigned(-8), o), 1u);
  uint8_t two = 2;
  EXPECT_EQ(readElement(ElementType::Bool, &two, 0).u, 1u);
  // uint64 beyond int64, into float64 and float16 (overflow to Inf).
  double big = 0;
  uint64_t bits = encodeElement(ElementType::Double, ElementValue::ofUnsigned(~uint64_t(0)), o);
  std::memcpy(&big, &bits, 8);
  EXPECT_EQ(big, 18446744073709551616.0);
  EXPECT_EQ(encodeElement(ElementType::Float16, ElementValue::ofUnsigned(~uint64_t(0)), o),
            0x7c00u);
}

//===----------------------------------------------------------------------===//
// TensorProto files
//===----------------------------------------------------------------------===//

std::string writeProto(const testutil::ScratchDir &dir, const onnx::TensorProto &proto,
                       const std::string &stem) {
  std::string path = dir.file(stem + ".pb");
  std::ofstream out(path, std::ios::binary);
  proto.SerializeToOstream(&out);
  return path;
}

TEST(CastTensorFiles, SubByteAndFloat8TensorsReadAndWrite) {
  testutil::ScratchDir dir("ortc-cast");
  // int4 [3] in int32_data: packed bytes, one per int32 (ONNX's layout).
  onnx::TensorProto proto;
  proto.set_data_type(22); // INT4
  proto.add_dims(3);
  proto.add_int32_data(0x21);
  proto.add_int32_data(0x03);
  std::string path = writeProto(dir, proto, "int4_typed");
  Result<NpyArray> read = readTensorProto(path);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  EXPECT_EQ(read.value().type, ElementType::Int4);
  EXPECT_EQ(read.value().data, (std::vector<char>{0x21, 0x03}));

  // raw_data must be the packed size.
  proto.clear_int32_data();
  proto.set_raw_data(std::string("\x21\x03\x00", 3));
  path = writeProto(dir, proto, "int4_raw");
  read = readTensorProto(path);
  ASSERT_FALSE(read.isOk());
  EXPECT_NE(read.status().message().find(
                "is int4[3] (3 elements packed in 2 bytes) but its raw_data holds 3 bytes"),
            std::string::npos)
      << read.status().message();

  // float8 in int32_data: one value per element.
  onnx::TensorProto f8;
  f8.set_data_type(19); // FLOAT8E5M2
  f8.add_dims(2);
  f8.add_int32_data(0x7b);
  f8.add_int32_data(0xfc);
  path = writeProto(dir, f8, "f8_typed");
  read = readTensorProto(path);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  EXPECT_EQ(read.value().data, (std::vector<char>{0x7b, char(0xfc)}));

  // Written as raw_data, packed, and read back.
  uint8_t packed[2] = {0x39, 0x01};
  TensorView uint2{packed, ElementType::UInt2, {5}};
  path = dir.file("uint2.pb");
  ASSERT_TRUE(writeTensorProto(path, "y", uint2).isOk());
  std::string name;
  read = readTensorProto(path, &name);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  EXPECT_EQ(name, "y");
  EXPECT_EQ(read.value().shape, (std::vector<int64_t>{5}));
  EXPECT_EQ(read.value().data, (std::vector<char>{0x39, 0x01}));
}

//===----------------------------------------------------------------------===//
// The kernel
//===----------------------------------------------------------------------===//

TEST(CastKernel, PacksAcrossChunksOnAThreadPool) {
  // 3 chunks of the kernel's 16384 elements and a ragged end: every byte of
  // the packed output must come out as one thread's whole work.
  const int64_t n = 3 * 16384 + 7;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = float(i % 23) - 11.0f;
  TensorView view{x.data(), ElementType::Float, {n}};
  cpu::ThreadPool pool(3);
  for (ElementType to : {ElementType::Int4, ElementType::Int2, ElementType::Float4E2M1}) {
    std::vector<uint8_t> out;
    ASSERT_TRUE(runCast(view, to, out, 1, "up", &pool).isOk());
    ASSERT_EQ(out.size(), tensorBytes(to, n));
    size_t bits = elementBits(to);
    for (int64_t i = 0; i < n; ++i) {
      uint64_t want = encodeElement(to, ElementValue::ofFloat(x[i]), CastOptions());
      uint32_t got = (out[i * bits / 8] >> (i * bits % 8)) & ((1u << bits) - 1);
      ASSERT_EQ(got, want) << elementTypeName(to) << " element " << i;
    }
    // The unused bits of the last byte are zero.
    EXPECT_EQ(out.back() >> ((n * bits) % 8), 0) << elementTypeName(to);
  }
}

TEST(CastKernel, NarrowSourcesThroughTheTableMatchElementByElement) {
  // Long tensors of at most 8-bit elements are cast through a table of every
  // pattern; it must agree with the element-by-element conversion.
  const int64_t n = 2048 + 3;
  std::vector<uint8_t> bytes(n);
  for (int64_t i = 0; i < n; ++i)
    bytes[i] = uint8_t(i * 37 + 11);
  const ElementType sources[] = {ElementType::Float8E4M3FN, ElementType::Float8E5M2FNUZ,
                                 ElementType::Float8E8M0,   ElementType::Int8,
                                 ElementType::Bool,         ElementType::Int4,
                                 ElementType::Float4E2M1,   ElementType::UInt2};
  const ElementType targets[] = {ElementType::Float, ElementType::Float16, ElementType::Int64,
                                 ElementType::Int4, ElementType::Float8E5M2};
  for (ElementType from : sources)
    for (ElementType to : targets) {
      TensorView x{bytes.data(), from, {n}};
      std::vector<uint8_t> out;
      ASSERT_TRUE(runCast(x, to, out).isOk());
      for (int64_t i = 0; i < n; ++i) {
        uint64_t want = encodeElement(to, readElement(from, bytes.data(), i), CastOptions());
        ElementValue got = readElement(to, out.data(), i);
        std::vector<uint8_t> one(8, 0);
        writeElementBits(to, one.data(), 0, want);
        ElementValue expect = readElement(to, one.data(), 0);
        ASSERT_TRUE(got.kind == expect.kind && got.i == expect.i && got.u == expect.u &&
                    (got.f == expect.f || (std::isnan(got.f) && std::isnan(expect.f))))
            << elementTypeName(from) << " -> " << elementTypeName(to) << " element " << i;
      }
    }
}

TEST(CastKernel, SameTypeCopiesAndEmptyTensorsPass) {
  uint8_t bits[] = {0x7f, 0x80, 0x01};
  TensorView x{bits, ElementType::Float8E4M3FN, {3}};
  std::vector<uint8_t> out;
  ASSERT_TRUE(runCast(x, ElementType::Float8E4M3FN, out, 0).isOk());
  EXPECT_EQ(out, std::vector<uint8_t>(bits, bits + 3));
  TensorView empty{nullptr, ElementType::Float, {0, 4}};
  ASSERT_TRUE(runCast(empty, ElementType::Int4, out).isOk());
  EXPECT_TRUE(out.empty());
}

TEST(CastKernel, RefusesBadCalls) {
  float x[4] = {1, 2, 3, 4};
  TensorView view{x, ElementType::Float, {4}};
  std::vector<uint8_t> out;
  Status s = runCast(view, ElementType::Float16, out, 2);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("saturate 2"), std::string::npos) << s.message();
  s = runCast(view, ElementType::Float8E8M0, out, 1, "sideways");
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("round_mode 'sideways'"), std::string::npos) << s.message();
  s = runCast(view, ElementType::Float16, out, 1, "up", nullptr, {2, 2});
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("output shape [2,2] should be [4]"), std::string::npos)
      << s.message();
  s = runCast(view, ElementType(27), out); // float6e2m3: not a runtime type
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  TensorView absent{nullptr, ElementType::Float, {4}};
  s = runCast(absent, ElementType::Float16, out);
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("missing input"), std::string::npos) << s.message();
}

//===----------------------------------------------------------------------===//
// Claims and a compiled partition
//===----------------------------------------------------------------------===//

// Casts around a dynamic batch: f32 -> int4 (a batch-scaled packed arena
// buffer and an output), int4 weight -> f32, f16 -> f8e4m3fn without
// saturation, and Cast to float8e8m0 rounding down.
constexpr const char *kCastPartition = R"mlir(
func.func @cpu_ep_p0(%x: tensor<?x3xf32>, %h: tensor<?x3xf16>) -> (tensor<?x3xi4>, tensor<5xf32>, tensor<?x3xf8E4M3FN>, tensor<?x3xf8E8M0FNU>) attributes {ortc.ep = "cpu_ep"} {
  %w = "onnx.Constant"() {value = dense<[7, -8, -1, 0, 3]> : tensor<5xi4>} : () -> tensor<5xi4>
  %0 = "onnx.Cast"(%x) {to = 22 : i64} : (tensor<?x3xf32>) -> tensor<?x3xi4> loc("to_int4")
  %1 = "onnx.Cast"(%w) {to = 1 : i64} : (tensor<5xi4>) -> tensor<5xf32> loc("from_int4")
  %2 = "onnx.Cast"(%h) {to = 17 : i64, saturate = 0 : i64} : (tensor<?x3xf16>) -> tensor<?x3xf8E4M3FN> loc("to_f8")
  %3 = "onnx.Cast"(%x) {to = 24 : i64, round_mode = "down"} : (tensor<?x3xf32>) -> tensor<?x3xf8E8M0FNU> loc("to_e8m0")
  return %0, %1, %2, %3 : tensor<?x3xi4>, tensor<5xf32>, tensor<?x3xf8E4M3FN>, tensor<?x3xf8E8M0FNU>
}
)mlir";

class CastPartition : public testing::Test {
protected:
  void SetUp() override {
    ortc::loadImportDialects(context);
    context.loadDialect<mlir::func::FuncDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(kCastPartition, &context);
    ASSERT_TRUE(module);
    std::string error;
    ep = ortc::cpu::createCpuCompileEp({}, error);
    ASSERT_TRUE(ep) << error;
  }
  mlir::func::FuncOp fn() { return *module->getOps<mlir::func::FuncOp>().begin(); }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::unique_ptr<ortc::CompileEp> ep;
};

TEST_F(CastPartition, EveryCastIsClaimed) {
  int casts = 0;
  fn().walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() != "onnx.Cast")
      return;
    ++casts;
    KernelMatch match = ep->supportsOp(NodeQuery::fromOp(op));
    EXPECT_TRUE(match.isSupported()) << match.reason().format();
  });
  EXPECT_EQ(casts, 4);
}

TEST_F(CastPartition, CompilesAndRunsAtSeveralBatches) {
  auto compiled = ep->compilePartition(fn());
  ASSERT_TRUE(mlir::succeeded(compiled));
  auto blob = ep->saveContext(std::move(**compiled));
  ASSERT_TRUE(mlir::succeeded(blob));
  ortc::EpContextView view;
  view.source = "ortc_cpu";
  view.partitionName = "cpu_ep_p0";
  view.data = blob->bytes.data();
  view.size = blob->bytes.size();
  auto loaded = ortc::cpu::PlanExecutor::load(view);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  for (int64_t batch : {1, 3, 2}) {
    int64_t n = batch * 3;
    std::vector<float> x(n);
    std::vector<uint16_t> h(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = float(i) * 1.5f - 4.0f;
      h[i] = uint16_t(encodeElement(ElementType::Float16,
                                    ElementValue::ofFloat(i == 1 ? 1e4 : double(i) - 2), {}));
    }
    std::vector<uint8_t> y0(tensorBytes(ElementType::Int4, n), 0xAA), y2(n), y3(n);
    std::vector<float> y1(5);
    std::vector<TensorView> in{{x.data(), ElementType::Float, {batch, 3}},
                               {h.data(), ElementType::Float16, {batch, 3}}};
    std::vector<TensorView> out{{y0.data(), ElementType::Int4, {batch, 3}},
                                {y1.data(), ElementType::Float, {5}},
                                {y2.data(), ElementType::Float8E4M3FN, {batch, 3}},
                                {y3.data(), ElementType::Float8E8M0, {batch, 3}}};
    Status status = loaded.value()->run(in, out);
    ASSERT_TRUE(status.isOk()) << status.message();
    for (int64_t i = 0; i < n; ++i) {
      // Toward zero, then wrapped to 4 bits.
      int64_t want = int64_t(std::trunc(x[i]));
      EXPECT_EQ(readElement(ElementType::Int4, y0.data(), i).i, ((want + 8) & 15) - 8) << i;
      // 1e4 overflows float8e4m3fn without saturation: NaN.
      double f8 = readElement(ElementType::Float8E4M3FN, y2.data(), i).f;
      if (i == 1)
        EXPECT_TRUE(std::isnan(f8));
      else
        EXPECT_EQ(f8, double(i) - 2);
      // round_mode down: the power of two at or below |x| (0 -> 2^-127).
      double e8 = readElement(ElementType::Float8E8M0, y3.data(), i).f;
      double ax = std::fabs(x[i]);
      EXPECT_EQ(e8, ax == 0 ? std::ldexp(1.0, -127) : std::ldexp(1.0, std::ilogb(ax))) << x[i];
    }
    EXPECT_EQ(y1, (std::vector<float>{7, -8, -1, 0, 3}));
  }
}

// Declines: float8 and sub-byte values outside Cast, `to` disagreeing with
// the result, a round_mode the kernel does not know.
constexpr const char *kDeclined = R"mlir(
module attributes {onnx.opset_import = {ai.onnx = 25 : i64}} {
func.func @main_graph(%x: tensor<4xf8E5M2>, %y: tensor<4xf32>, %z: tensor<4xi4>) -> (tensor<4xf8E5M2>, tensor<4xf16>, tensor<4xf8E8M0FNU>, tensor<4xi4>) {
  %0 = "onnx.Add"(%x, %x) : (tensor<4xf8E5M2>, tensor<4xf8E5M2>) -> tensor<4xf8E5M2> loc("add_f8")
  %1 = "onnx.Cast"(%y) {to = 16 : i64} : (tensor<4xf32>) -> tensor<4xf16> loc("to_mismatch")
  %2 = "onnx.Cast"(%y) {to = 24 : i64, round_mode = "sideways"} : (tensor<4xf32>) -> tensor<4xf8E8M0FNU> loc("bad_round")
  %3 = "onnx.Identity"(%z) : (tensor<4xi4>) -> tensor<4xi4> loc("identity_i4")
  return %0, %1, %2, %3 : tensor<4xf8E5M2>, tensor<4xf16>, tensor<4xf8E8M0FNU>, tensor<4xi4>
}
}
)mlir";

TEST(CastClaims, DeclinesPrecisely) {
  mlir::MLIRContext context;
  ortc::loadImportDialects(context);
  context.loadDialect<mlir::func::FuncDialect>();
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kDeclined, &context);
  ASSERT_TRUE(module);
  std::string error;
  auto ep = ortc::cpu::createCpuCompileEp({}, error);
  ASSERT_TRUE(ep) << error;
  std::map<std::string, std::string> declines;
  module->walk([&](mlir::Operation *op) {
    if (!op->getName().getStringRef().starts_with("onnx."))
      return;
    KernelMatch match = ep->supportsOp(NodeQuery::fromOp(op));
    ASSERT_FALSE(match.isSupported()) << op->getName().getStringRef().str();
    EXPECT_TRUE(match.reason().isComplete()) << match.reason().format();
    declines[match.reason().node] = match.reason().rejected + "; " + match.reason().accepts;
  });
  EXPECT_EQ(declines["add_f8"],
            "input 0 has element type f8E5M2; numeric and bool tensors (float8, float4 and 2- "
            "and 4-bit integers only in Cast, CastLike)");
  EXPECT_EQ(declines["to_mismatch"],
            "to 16 with result element type f16; 'to' naming the result's element type");
  EXPECT_EQ(declines["bad_round"], "round_mode 'sideways'; round_mode in {up, down, nearest}");
  EXPECT_EQ(declines["identity_i4"].substr(0, 29), "input 0 has element type i4; ");
}

} // namespace
