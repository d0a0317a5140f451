//===- LowerToLinalg.h - which ops onnx-lower-to-linalg lowers ---*- C++ -*-===//
//
// The CPU EP claims an elementwise node for a generated kernel exactly when
// this predicate accepts it: whatever it accepts, onnx-lower-to-linalg lowers
// and the kernel pipeline compiles (test/unit/cpu/KernelLoweringTest.cpp
// compiles every accepted op and element type). isLowerableStructuredOp
// answers the same for Transpose, the Reduce ops, Softmax and LogSoftmax,
// which are not elementwise (each goes in a kernel of its own).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_LOWERING_LOWERTOLINALG_H
#define ORTC_COMPILER_LOWERING_LOWERTOLINALG_H

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Operation;
}

namespace ortc {

class SymbolicShapes;

/// Whether onnx-lower-to-linalg lowers `op` (an onnx or ortc op, with the
/// operand and result types it has now). Summary (LowerToLinalg.cpp has the
/// table):
///  - operands and result are ranked tensors; each input broadcasts to the
///    result by numpy rules (aligned right; a dim is equal, or 1 in the
///    input); a `?` dim of an input must be `?` in the result, and a `?` dim
///    of the result must be `?` in some input at that position (the lowering
///    takes the size from there: the kernels' `?` is the batch);
///  - element types: f32, f64, f16, bf16, i8, i16, i32, i64, ui8, ui16,
///    ui32, ui64, i1 (bool), as each op allows (f16 and bf16 compute in f32
///    and round back to nearest even): float math (Sqrt, Exp, Log,
///    Reciprocal, Floor, Ceil, Round, Sigmoid, Tanh, Erf, Sin, Cos, Tan, the
///    inverse and hyperbolic trig functions, Softplus, Softsign, Elu, Celu,
///    Selu, LeakyRelu, ThresholdedRelu, Shrink, HardSigmoid, HardSwish,
///    Swish, SwiGLU, Mish, Gelu, ortc.gelu, Mean, IsInf, IsNaN) on floats; Add, Sub,
///    Mul, Div, Max, Min, Sum, Clip, Neg, Abs, Sign, Relu, Mod and the
///    comparisons on floats and integers (Neg and Relu: signed only); Pow
///    with a float, i32 or i64 base and any numeric exponent; PRelu on
///    floats, i32, i64, ui32, ui64 (the slope broadcasts to X); BitShift and
///    Bitwise{And,Or,Xor,Not} on integers; Not/And/Or/Xor on i1; Where,
///    Identity and Cast on all of them; BitCast between types of one width
///    (bool as a byte; to bool from bool only);
///  - onnx.Constant with a dense `value` (or value_float(s)/value_int(s)).
bool isLowerableElementwiseOp(mlir::Operation *op);

/// Like isLowerableElementwiseOp; when it refuses, `why` (if given) says
/// what is wrong in one phrase, e.g. "element type i16 of operand 0 is not
/// one of f32, f64, i8, i32, i64, ui8, i1", suitable for a decline reason.
bool isLowerableElementwiseOp(mlir::Operation *op, std::string *why);

/// Which dims Reduce{Sum,Mean,Max,Min,...} `op` reduces, over its input's
/// rank: the dims of its constant `axes` (negative from the end), or every
/// dim when axes is absent or empty; nullopt, with `why`, for axes that are
/// not a 1-D i64 constant, out of range or repeated, or empty with
/// noop_with_empty_axes=1.
std::optional<llvm::SmallVector<bool>> reduceAxesMask(mlir::Operation *op, std::string &why);

/// Whether the generated kernel of elementwise `op` reads each input dim as
/// the output's dim it lines up with (numpy broadcasting, right-aligned):
/// every elementwise op but SwiGLU (it halves the last dim) and BitCast.
bool readsInputDimsAsOutputs(mlir::Operation *op);

/// An input dim the lowering reads as the output dim it lines up with
/// (it is not a static 1 that broadcasts) although the symbolic shapes do not
/// prove the two equal: an EP's plan checks them at run time, or, for an op
/// whose dims do not line up so (readsInputDimsAsOutputs is false), a
/// dynamic input dim is refused by the claim.
struct AssumedEqualDims {
  unsigned operand = 0;
  size_t inputDim = 0, outputDim = 0;
  int32_t input = -1, output = -1; // dim ids in the SymbolicShapes table
  /// "node 'add' input 1 dim 1 (min(s, 512)) and output dim 1 (s)"
  std::string describe(mlir::Operation *op, const SymbolicShapes &shapes) const;
};

/// The dims elementwise `op`'s kernel takes as equal without proof (empty
/// for an op that is not elementwise, or whose dims do not line up).
std::vector<AssumedEqualDims> assumedEqualDims(mlir::Operation *op, const SymbolicShapes &shapes);

enum class ElementwiseRefusalKind { Op, DType, Shape, Attribute };

/// Why isLowerableElementwiseOp refuses an op its table names: what is
/// refused (e.g. "operand 0 has element type bf16; onnx.Neg takes ...") and
/// what it accepts instead, for a decline reason.
struct ElementwiseRefusal {
  ElementwiseRefusalKind kind = ElementwiseRefusalKind::Op;
  std::string rejected, accepts;
};

/// False when `op` is accepted or is not an op of the elementwise table;
/// otherwise fills `out` and returns true.
bool explainElementwiseRefusal(mlir::Operation *op, ElementwiseRefusal &out);

/// Whether onnx-lower-to-linalg lowers `op` as a structured (not
/// elementwise) op; each is a kernel of its own. Exactly these, all f32
/// (operand 0 and the result), input of rank >= 1, ranked tensors:
///  - onnx.Transpose: `perm` (default reversed) a permutation of the input's
///    dims; the result's shape is the input's permuted -> linalg.transpose;
///  - onnx.ReduceMean/ReduceSum/ReduceMax/ReduceMin: `axes` absent
///    (onnx.NoValue) or an onnx.Constant with a dense 1-D i64 value, each in
///    [-rank, rank) with no dim named twice; absent or empty axes reduce all
///    dims, and are refused with noop_with_empty_axes=1; keepdims 0 or 1;
///    the result's shape is the input's without the reduced dims (keepdims
///    0) or with them as 1 (keepdims 1) -> linalg.fill (0, -inf, +inf) and a
///    linalg.generic with reduction iterators (Mean: then a divide by the
///    count; keepdims: then tensor.expand_shape). Max/Min propagate NaN;
///  - onnx.Softmax/onnx.LogSoftmax (opset 13): `axis` in [-rank, rank);
///    the result's shape equals the input's -> max, exp(x - max), sum and
///    divide (LogSoftmax: x - max - log(sum)) as linalg.generic ops.
/// The result's shape must be exactly the computed one (a `?` only where the
/// input has it).
bool isLowerableStructuredOp(mlir::Operation *op);

/// Like isLowerableStructuredOp; when it refuses, `why` (if given) says why
/// in one phrase.
bool isLowerableStructuredOp(mlir::Operation *op, std::string *why);

/// The permutation of an onnx.Transpose (its `perm`, or the reversed dims),
/// nullopt for any other op or a perm that is not one.
std::optional<llvm::SmallVector<int64_t>> transposePermutation(mlir::Operation *op);

/// The op names ("onnx.Add", "ortc.gelu", ...) the elementwise lowering has a
/// rule for (each still subject to its element types and attributes).
std::vector<std::string> elementwiseOpNames();

} // namespace ortc

#endif // ORTC_COMPILER_LOWERING_LOWERTOLINALG_H
