//===- OnnxCoreOps.td - hand-written ops of the onnx dialect -*- tablegen -*-===//

#ifndef ORTC_ONNX_CORE_OPS
#define ORTC_ONNX_CORE_OPS

include "OnnxBase.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def ONNX_NoValueOp : ONNX_Op<"NoValue", [Pure]> {
  let summary = "stands for an optional input that a node leaves out";
  let description = [{
    ONNX marks an omitted optional input with an empty name. Typed ops keep a
    fixed operand list, so the importer passes the result of this op there.
  }];
  let results = (outs NoneType:$none);
}

def ONNX_YieldOp : ONNX_Op<"Yield", [Pure, ReturnLike, Terminator]> {
  let summary = "returns the outputs of a subgraph region (If, Loop, Scan bodies)";
  let arguments = (ins Variadic<AnyType>:$results);
}

def ONNX_GenericOp : ONNX_Op<"Generic"> {
  let summary = "any ONNX node that has no typed op";
  let description = [{
    Carries nodes of other domains (`com.microsoft`, custom ops), operators or
    versions that the typed set lacks, and model-local functions, so that import
    never fails merely because an op is unknown. `onnx_attrs` holds the node's
    attributes under their ONNX names; each graph attribute becomes one region,
    named in `region_names` in order.
  }];
  let arguments = (ins
    Variadic<AnyType>:$inputs,
    StrAttr:$op_type,
    StrAttr:$domain,
    I64Attr:$since_version,
    DictionaryAttr:$onnx_attrs,
    OptionalAttr<StrArrayAttr>:$region_names);
  let results = (outs Variadic<AnyType>:$outputs);
  let regions = (region VariadicRegion<AnyRegion>:$graphs);
  let hasVerifier = 1;
}

#endif // ORTC_ONNX_CORE_OPS
