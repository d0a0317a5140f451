//===- OnnxBase.td - the onnx dialect and its op base class -*- tablegen -*-===//
//
// Included by every op file of the dialect. Holds only classes and the dialect
// record, so that each op shard emits just its own ops.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_ONNX_BASE
#define ORTC_ONNX_BASE

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Onnx_Dialect : Dialect {
  let name = "onnx";
  let cppNamespace = "::ortc::onnx_dialect";
  let summary = "ONNX operators as imported from a ModelProto";
  let description = [{
    One typed op per operator of the ONNX default domain and `ai.onnx.ml`
    (generated from the operator schemas by utils/gen_onnx_dialect.py), plus
    `onnx.Generic` for everything else, `onnx.NoValue` for omitted optional
    inputs and `onnx.Yield` to end subgraph regions.
  }];
  let useDefaultTypePrinterParser = 1;
  let extraClassDeclaration = [{
    void registerTypes();
    void registerOps();
  public:
    // Lets the op shards (one translation unit each) register themselves.
    template <typename... Ops> void addOpsFromShard() { addOperations<Ops...>(); }
  }];
}

class ONNX_Op<string mnemonic, list<Trait> traits = []>
    : Op<Onnx_Dialect, mnemonic, traits>;

#endif // ORTC_ONNX_BASE
