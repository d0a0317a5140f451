//===- LowerToLinalg.h - which ops cpu-lower-to-linalg lowers ---*- C++ -*-===//
//
// The CPU EP claims an elementwise node for a generated kernel exactly when
// this predicate accepts it: whatever it accepts, cpu-lower-to-linalg lowers
// and the kernel pipeline compiles (test/unit/cpu/KernelLoweringTest.cpp
// compiles every accepted op and element type).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_LOWERTOLINALG_H
#define ORTC_PROVIDERS_CPU_COMPILE_LOWERTOLINALG_H

#include <string>

namespace mlir {
class Operation;
}

namespace ortc::cpu {

/// Whether cpu-lower-to-linalg lowers `op` (an onnx or ortc op, with the
/// operand and result types it has now). Summary (LowerToLinalg.cpp has the
/// table):
///  - operands and result are ranked tensors; each input broadcasts to the
///    result by numpy rules (aligned right; a dim is equal, or 1 in the
///    input); a `?` dim of an input must be `?` in the result, and a `?` dim
///    of the result must be `?` in some input at that position (the lowering
///    takes the size from there: the kernels' `?` is the batch);
///  - element types: f32, f64, i8, i32, i64, ui8, i1 (bool), as each op allows:
///    float math (Sqrt, Exp, Log, Reciprocal, Floor, Ceil, Sigmoid, Tanh,
///    Erf, Sin, Cos, Softplus, Elu, Selu, LeakyRelu, HardSigmoid, HardSwish,
///    Gelu, ortc.gelu, Mean, Pow with a float base) on f32/f64; Add, Sub,
///    Mul, Div, Max, Min, Sum, Clip, Neg, Abs, Relu, Mod and the comparisons
///    on floats and integers (Neg and Relu: signed only); Not/And/Or/Xor on
///    i1; Where, Identity and Cast on all of them;
///  - onnx.Constant with a dense `value` (or value_float(s)/value_int(s)).
bool isLowerableElementwiseOp(mlir::Operation *op);

/// Like isLowerableElementwiseOp; when it refuses, `why` (if given) says
/// what is wrong in one phrase, e.g. "element type i16 of operand 0 is not
/// one of f32, f64, i8, i32, i64, ui8, i1", suitable for a decline reason.
bool isLowerableElementwiseOp(mlir::Operation *op, std::string *why);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_COMPILE_LOWERTOLINALG_H
