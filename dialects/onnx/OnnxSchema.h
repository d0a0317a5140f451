//===- OnnxSchema.h - what the importer knows of each typed op --*- C++ -*-===//
//
// A plain table generated from the ONNX schemas together with the typed ops
// (utils/gen_onnx_dialect.py), so that the importer can map a NodeProto onto
// a typed op without including the heavy op headers.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_DIALECTS_ONNX_ONNXSCHEMA_H
#define ORTC_DIALECTS_ONNX_ONNXSCHEMA_H

#include <string_view>

namespace ortc::onnx_dialect {

enum class ParamKind { Single, Optional, Variadic };

enum class AttrKind {
  Int,
  Float,
  String,
  Ints,
  Floats,
  Strings,
  Tensor,
  SparseTensor,
  TypeProto,
  Graph
};

struct OnnxParamInfo {
  const char *name; // nullptr ends a list
  ParamKind kind;
  // For outputs: the input whose type this output shares in the schema, or -1.
  int sameTypeAsInput;
  // For outputs: the TensorProto.DataType the schema fixes, or 0.
  int fixedElemType;
};

struct OnnxAttrInfo {
  const char *name; // nullptr ends a list
  AttrKind kind;
  bool required;
};

struct OnnxOpSchema {
  const char *opType;
  const char *domain;   // "" for the default domain
  const char *mlirName; // e.g. "onnx.Add"
  int sinceVersion;     // the schema version the typed op follows
  int compatibleSince;  // oldest opset with the same inputs, outputs, attributes
  const OnnxParamInfo *inputs;
  const OnnxParamInfo *outputs;
  const OnnxAttrInfo *attributes;

  const OnnxAttrInfo *findAttribute(std::string_view name) const;
};

/// The typed op for (domain, opType), or nullptr. "ai.onnx" is the default domain.
const OnnxOpSchema *lookupOnnxSchema(std::string_view domain, std::string_view opType);

/// Name of a TensorProto.DataType code ("FLOAT", ...), or nullptr if unknown.
const char *onnxDataTypeName(int code);

} // namespace ortc::onnx_dialect

#endif // ORTC_DIALECTS_ONNX_ONNXSCHEMA_H
