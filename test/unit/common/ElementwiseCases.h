//===- ElementwiseCases.h - every elementwise op at every element type -*- C++ -*-===//
//
// The claim-honesty tests of the EPs that generate elementwise kernels (CPU,
// CUDA) ask onnx-lower-to-linalg's predicate about the same cases: every op
// form at every element type (Cast and BitCast: every pair), each as one op
// with inputs ?x5 except the last, 5 (a broadcast), Clip's bounds scalars,
// and a ?x5 result. Each EP wraps the op in its own kernel form.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TEST_UNIT_COMMON_ELEMENTWISECASES_H
#define ORTC_TEST_UNIT_COMMON_ELEMENTWISECASES_H

#include <string>
#include <vector>

namespace ortc::testing {

struct OpForm {
  const char *name;
  int inputs; // -1: variadic (tried with 3)
  const char *attrs;
  enum { Same, Compare, Where, Cast, Clip, PowMixed, Classify } kind;
};

// The last, float8, is a type the lowering refuses.
inline const char *typeName(int t) {
  static const char *names[] = {"f32", "f64", "i8",   "i32",  "i64",  "ui8",  "i1",
                                "i16", "f16", "ui16", "ui32", "ui64", "bf16", "f8E4M3FN"};
  return names[t];
}
inline int onnxCode(int t) {
  static const int codes[] = {1, 11, 3, 6, 7, 2, 9, 5, 10, 4, 12, 13, 16, 17};
  return codes[t];
}
constexpr int kTypes = 14;
constexpr int kF8 = 13;


inline const std::vector<OpForm> &elementwiseForms() {
  static const std::vector<OpForm> forms = {
      {"Add", 2, "", OpForm::Same},          {"Sub", 2, "", OpForm::Same},
      {"Mul", 2, "", OpForm::Same},          {"Div", 2, "", OpForm::Same},
      {"Pow", 2, "", OpForm::Same},          {"Pow", 2, "", OpForm::PowMixed},
      {"Sqrt", 1, "", OpForm::Same},         {"Exp", 1, "", OpForm::Same},
      {"Log", 1, "", OpForm::Same},          {"Neg", 1, "", OpForm::Same},
      {"Abs", 1, "", OpForm::Same},          {"Reciprocal", 1, "", OpForm::Same},
      {"Floor", 1, "", OpForm::Same},        {"Ceil", 1, "", OpForm::Same},
      {"Relu", 1, "", OpForm::Same},         {"LeakyRelu", 1, " {alpha = 0.2 : f32}", OpForm::Same},
      {"Elu", 1, "", OpForm::Same},          {"Selu", 1, "", OpForm::Same},
      {"Sigmoid", 1, "", OpForm::Same},      {"HardSigmoid", 1, "", OpForm::Same},
      {"HardSwish", 1, "", OpForm::Same},    {"Softplus", 1, "", OpForm::Same},
      {"Tanh", 1, "", OpForm::Same},         {"Erf", 1, "", OpForm::Same},
      {"Sin", 1, "", OpForm::Same},          {"Cos", 1, "", OpForm::Same},
      {"Gelu", 1, "", OpForm::Same},         {"Gelu", 1, " {approximate = \"tanh\"}", OpForm::Same},
      {"Clip", 3, "", OpForm::Clip},         {"Max", -1, "", OpForm::Same},
      {"Min", -1, "", OpForm::Same},         {"Sum", -1, "", OpForm::Same},
      {"Mean", -1, "", OpForm::Same},        {"Mod", 2, "", OpForm::Same},
      {"Mod", 2, " {fmod = 1 : i64}", OpForm::Same},
      {"Equal", 2, "", OpForm::Compare},     {"Less", 2, "", OpForm::Compare},
      {"Greater", 2, "", OpForm::Compare},   {"LessOrEqual", 2, "", OpForm::Compare},
      {"GreaterOrEqual", 2, "", OpForm::Compare},
      {"Not", 1, "", OpForm::Same},          {"And", 2, "", OpForm::Same},
      {"Or", 2, "", OpForm::Same},           {"Xor", 2, "", OpForm::Same},
      {"Where", 3, "", OpForm::Where},       {"Identity", 1, "", OpForm::Same},
      {"Cast", 1, "", OpForm::Cast},
      {"BitShift", 2, " {direction = \"LEFT\"}", OpForm::Same},
      {"BitShift", 2, " {direction = \"RIGHT\"}", OpForm::Same},
      {"BitwiseAnd", 2, "", OpForm::Same},   {"BitwiseOr", 2, "", OpForm::Same},
      {"BitwiseXor", 2, "", OpForm::Same},   {"BitwiseNot", 1, "", OpForm::Same},
      {"Sign", 1, "", OpForm::Same},         {"Round", 1, "", OpForm::Same},
      {"Tan", 1, "", OpForm::Same},          {"Asin", 1, "", OpForm::Same},
      {"Acos", 1, "", OpForm::Same},         {"Atan", 1, "", OpForm::Same},
      {"Sinh", 1, "", OpForm::Same},         {"Cosh", 1, "", OpForm::Same},
      {"Asinh", 1, "", OpForm::Same},        {"Acosh", 1, "", OpForm::Same},
      {"Atanh", 1, "", OpForm::Same},        {"Celu", 1, "", OpForm::Same},
      {"ThresholdedRelu", 1, "", OpForm::Same}, {"Shrink", 1, "", OpForm::Same},
      {"Softsign", 1, "", OpForm::Same},     {"Mish", 1, "", OpForm::Same},
      {"Swish", 1, "", OpForm::Same},        {"PRelu", 2, "", OpForm::Same},
      {"IsInf", 1, "", OpForm::Classify},    {"IsNaN", 1, "", OpForm::Classify},
      {"BitCast", 1, "", OpForm::Cast},      {"SwiGLU", 2, "", OpForm::Same},
  };
  return forms;
}

struct ElementwiseCase {
  std::string kernel, opName, attrs;
  std::vector<std::string> inTypes, inShapes; // shapes as "?x5x", "5x" or "" (scalar)
  std::string resultType;                     // the result is ?x5
  int inType = 0, outType = 0, inputs = 0;    // indices for typeName
  /// `"onnx.Op"(%t0, ...) attrs : (tensor<...>, ...) -> tensor<?x5xT>` for
  /// operands named %<prefix>0, %<prefix>1, ...
  std::string opText(const std::string &prefix, const std::string &result) const {
    std::string operands, types;
    for (int i = 0; i < inputs; ++i) {
      operands += (i ? ", %" : "%") + prefix + std::to_string(i);
      types += (i ? ", " : "") + tensorType(i);
    }
    return "  %" + result + " = \"" + opName + "\"(" + operands + ")" + attrs + " : (" + types +
           ") -> tensor<?x5x" + resultType + ">\n";
  }
  std::string tensorType(int i) const { return "tensor<" + inShapes[i] + inTypes[i] + ">"; }
};

inline std::vector<ElementwiseCase> elementwiseCases() {
  std::vector<ElementwiseCase> cases;
  int id = 0;
  for (const OpForm &form : elementwiseForms()) {
    for (int t = 0; t < kTypes; ++t) {
      for (int u = 0; u < (form.kind == OpForm::Cast ? kTypes : 1); ++u) {
        ElementwiseCase c;
        c.kernel = "k" + std::to_string(id++) + "_" + form.name;
        c.opName = std::string("onnx.") + form.name;
        c.inputs = form.inputs < 0 ? 3 : form.inputs;
        std::string T = typeName(t);
        c.resultType = form.kind == OpForm::Compare || form.kind == OpForm::Classify ? "i1"
                       : form.kind == OpForm::Cast ? std::string(typeName(u))
                                                   : T;
        c.inTypes.assign(c.inputs, T);
        if (form.kind == OpForm::Where)
          c.inTypes[0] = "i1";
        if (form.kind == OpForm::PowMixed)
          c.inTypes[1] = "i32";
        c.attrs = form.attrs;
        if (form.kind == OpForm::Cast)
          c.attrs = " {to = " + std::to_string(onnxCode(u)) + " : i64}";
        for (int i = 0; i < c.inputs; ++i)
          c.inShapes.push_back(form.kind == OpForm::Clip && i > 0 ? ""
                               : (i + 1 == c.inputs && c.inputs > 1) ? "5x"
                                                                     : "?x5x");
        c.inType = t;
        c.outType = form.kind == OpForm::Compare || form.kind == OpForm::Classify ? 6
                    : form.kind == OpForm::Cast                                  ? u
                                                                                 : t;
        cases.push_back(c);
      }
    }
  }
  return cases;
}

} // namespace ortc::testing

#endif // ORTC_TEST_UNIT_COMMON_ELEMENTWISECASES_H
