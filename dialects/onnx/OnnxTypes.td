//===- OnnxTypes.td - types of the onnx dialect ------------*- tablegen -*-===//
//
// ONNX values that are not plain tensors. Tensors use the builtin tensor type;
// strings are the element type !onnx.string.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_ONNX_TYPES
#define ORTC_ONNX_TYPES

include "OnnxBase.td"

class ONNX_Type<string name, string typeMnemonic>
    : TypeDef<Onnx_Dialect, name> {
  let mnemonic = typeMnemonic;
}

def ONNX_StringType : ONNX_Type<"String", "string"> {
  let summary = "ONNX string element (tensor(string))";
}

def ONNX_UnknownType : ONNX_Type<"Unknown", "unknown"> {
  let summary = "a value whose type the model does not state and import could not derive";
  let description = [{
    Given to node outputs that carry no value_info and whose schema does not tie
    the type to an input; shape and type inference replaces it.
  }];
}

def ONNX_SeqType : ONNX_Type<"Seq", "seq"> {
  let summary = "ONNX sequence";
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def ONNX_OptType : ONNX_Type<"Opt", "opt"> {
  let summary = "ONNX optional";
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
}

def ONNX_MapType : ONNX_Type<"Map", "map"> {
  let summary = "ONNX map";
  let parameters = (ins "::mlir::Type":$keyType, "::mlir::Type":$valueType);
  let assemblyFormat = "`<` $keyType `,` $valueType `>`";
}

#endif // ORTC_ONNX_TYPES
