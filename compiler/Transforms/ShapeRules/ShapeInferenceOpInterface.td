//===- ShapeInferenceOpInterface.td - an op's shape rule ---*- tablegen -*-===//
//
// The one place an op says what shape its results have. Shape inference (the
// result types) and the symbolic shape analysis (every dim as an expression,
// read by the claims, the CPU plan and the runtime's shape program) both walk
// a function and ask each op through this interface.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_SHAPE_INFERENCE_OP_INTERFACE
#define ORTC_SHAPE_INFERENCE_OP_INTERFACE

include "mlir/IR/OpBase.td"

def ShapeInferenceOpInterface : OpInterface<"ShapeInferenceOpInterface"> {
  let cppNamespace = "::ortc";
  let description = [{
    An op's shape rule: from its operands' dims (expressions over symbols in
    a DimTable, with kUnknownDim where nothing is known), the elements of
    small integer operands (shape values), constants and attributes, it sets
    each result's element type and dims, and the elements of a result that
    is itself a shape value. The rules are attached as external models from
    per-family files (ShapeRules/*Shapes.cpp), so the generated ops stay
    untouched.
  }];
  let methods = [
    InterfaceMethod<[{
        Sets what `ctx` should know of the results. Fails (with `ctx.fail`)
        only when the inputs cannot be valid: inference reports it on the op.
      }],
      "::mlir::LogicalResult", "inferShapes",
      (ins "::ortc::ShapeRuleContext &":$ctx)>,
  ];
}

#endif // ORTC_SHAPE_INFERENCE_OP_INTERFACE
