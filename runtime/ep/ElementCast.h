//===- ElementCast.h - ONNX Cast between every element type -----*- C++ -*-===//
//
// Reading and writing single elements of every type the runtime knows, and
// converting between them as ONNX's Cast does (opset 25; onnx.reference's
// op_cast.py and ml_dtypes are the reference):
//
//  - Every float type (float64/32/16, bfloat16, the 8-bit floats, float4e2m1,
//    float8e8m0) is read exactly as a double; integers as int64 or uint64;
//    bool as 0 or 1.
//  - Into float64, float32 and float16: one rounding (as C and numpy do).
//    Into bfloat16, the 8-bit floats and float4e2m1: through float32 first,
//    as ml_dtypes (onnx's reference) and onnxruntime convert, so a float64
//    or int64 source rounds twice (1.0625 + 2^-40 in float64 becomes 1.0 in
//    float8e4m3fn, not 1.125) and the results match theirs bit for bit.
//  - Into a float type: round to nearest, ties to even. NaN stays NaN; a
//    value too large overflows to Inf (float64/32/16, bfloat16; float8e5m2
//    with saturate 0), to NaN (float8e4m3fn, and the FNUZ types, with
//    saturate 0), or to the largest finite value of its sign (the four
//    float8 types with saturate 1; float4e2m1 always, as it has neither Inf
//    nor NaN). Inf saturates the same way. Negative zero and values that
//    round to zero keep their sign except in the FNUZ types (no -0).
//    float4e2m1 has no NaN: ml_dtypes writes positive NaN as -0 and
//    negative NaN as +0, and so does this.
//  - Into float8e8m0 (a power of two 2^(e-127), 0xFF = NaN, no sign): the
//    value is first rounded to float32, then its exponent is taken as the
//    reference's to_float8e8m0 does: the sign is dropped, NaN and Inf become
//    0xFF, `round_mode` up (the default) rounds any fraction up, down drops
//    it, nearest rounds up from half (ties away from zero for normal
//    float32s); saturate 1 keeps 2^127 from rounding up into NaN.
//  - Into an integer: floats are truncated toward zero, through int32 for
//    targets of up to 32 bits (int64 for uint32 and the 64-bit types) with
//    NaN and out-of-range values giving that type's minimum, as x86 and
//    numpy do (ONNX leaves them undefined); the result then wraps to the
//    target's width (two's complement), as integers do (int4: -9 -> 7).
//  - Into bool: value != 0 (NaN is true).
//
// Plain C++17: the runtime and the CPU kernels use it, never MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_ELEMENTCAST_H
#define ORTC_RUNTIME_EP_ELEMENTCAST_H

#include "runtime/ep/Tensor.h"

#include <cstdint>

namespace ortc {

/// float8e8m0's `round_mode`.
enum class E8M0Rounding { Up, Down, Nearest };

struct CastOptions {
  /// Cast's `saturate`: applies to the four float8 types with a mantissa.
  bool saturate = true;
  E8M0Rounding e8m0Rounding = E8M0Rounding::Up;
};

/// One element's value, exactly.
struct ElementValue {
  enum Kind : uint8_t { Float, Signed, Unsigned };
  Kind kind = Float;
  double f = 0;   // kind Float
  int64_t i = 0;  // kind Signed
  uint64_t u = 0; // kind Unsigned (bool too)

  static ElementValue ofFloat(double v) { return {Float, v, 0, 0}; }
  static ElementValue ofSigned(int64_t v) { return {Signed, 0, v, 0}; }
  static ElementValue ofUnsigned(uint64_t v) { return {Unsigned, 0, 0, v}; }
  /// The value as a double (integers beyond 2^53 rounded).
  double toDouble() const;
};

/// Element `index` of a tensor of `type` at `data` (packed sub-byte types
/// included). `type` must be known (isKnownElementType).
ElementValue readElement(ElementType type, const void *data, int64_t index);

/// The bits of `value` cast to `type` (the low elementBits bits are used).
uint64_t encodeElement(ElementType type, const ElementValue &value, const CastOptions &options);

/// Stores `bits` (from encodeElement) as element `index` of a tensor of
/// `type` at `data`; a packed element leaves its byte's other bits alone.
void writeElementBits(ElementType type, void *data, int64_t index, uint64_t bits);

/// Casts elements [begin, end) of `src` (of type `from`) into the same
/// elements of `dst` (of type `to`). When `to` is a sub-byte type, `begin`
/// must be a multiple of the elements per byte, and the last byte written is
/// completed with zero bits when `end` is not (so `end` should be the
/// tensor's element count or a multiple too). Both types must be known.
void castElements(ElementType from, const void *src, ElementType to, void *dst, int64_t begin,
                  int64_t end, const CastOptions &options);

} // namespace ortc

#endif // ORTC_RUNTIME_EP_ELEMENTCAST_H
