//===- EinsumKernel.cpp - Einsum as one loop nest over its labels ---------===//
//
// A general, simple Einsum: the equation is resolved against the input
// shapes (Einsum.h), then every output element sums, over the labels missing
// from the output, the product of the inputs read through per-label strides.
// A label repeated within a term adds its axes' strides (the diagonal); a
// broadcast dim of size 1 gets stride 0. Floats accumulate in float64 and are
// rounded once; integers accumulate in int64 with wrap-around.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Einsum.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/NumericTypes.h"

#include <algorithm>
#include <cctype>

namespace ortc::cpu {

namespace {

constexpr int kLetters = 52;

int letterLabel(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return 26 + (c - 'a');
  return -1;
}

struct Term {
  std::vector<int> letters;
  int ellipsisAt = -1; // index into letters where "..." stands, or -1
};

bool parseTerm(const std::string &s, Term &t, std::string &error) {
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 3, "...") == 0) {
      if (t.ellipsisAt >= 0) {
        error = "term '" + s + "' has more than one ellipsis";
        return false;
      }
      t.ellipsisAt = int(t.letters.size());
      i += 3;
      continue;
    }
    int label = letterLabel(s[i]);
    if (label < 0) {
      error = "unexpected character '" + std::string(1, s[i]) + "' in term '" + s + "'";
      return false;
    }
    t.letters.push_back(label);
    ++i;
  }
  return true;
}

} // namespace

bool planEinsum(const std::string &equation, const std::vector<std::vector<int64_t>> &shapes,
                EinsumPlan &plan, std::string &error) {
  plan = EinsumPlan();
  std::string eq;
  for (char c : equation)
    if (!std::isspace(static_cast<unsigned char>(c)))
      eq += c;
  size_t arrow = eq.find("->");
  bool explicitOutput = arrow != std::string::npos;
  std::string lhs = eq.substr(0, arrow), rhs = explicitOutput ? eq.substr(arrow + 2) : "";
  if (rhs.find("->") != std::string::npos) {
    error = "equation '" + equation + "' has more than one '->'";
    return false;
  }
  std::vector<Term> terms(1);
  std::string part;
  for (size_t i = 0; i <= lhs.size(); ++i) {
    if (i == lhs.size() || lhs[i] == ',') {
      if (!parseTerm(part, terms.back(), error))
        return false;
      if (i < lhs.size())
        terms.emplace_back();
      part.clear();
    } else {
      part += lhs[i];
    }
  }
  if (terms.size() != shapes.size()) {
    error = "equation '" + equation + "' has " + std::to_string(terms.size()) + " terms for " +
            std::to_string(shapes.size()) + " inputs";
    return false;
  }
  // The dims each ellipsis stands for, right-aligned across the inputs.
  std::vector<int64_t> ellipsisDims(terms.size(), 0);
  int64_t E = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t rank = int64_t(shapes[i].size()), letters = int64_t(terms[i].letters.size());
    if (terms[i].ellipsisAt >= 0 ? rank < letters : rank != letters) {
      error = "term " + std::to_string(i) + " has " + std::to_string(letters) +
              " labels for an input of rank " + std::to_string(rank);
      return false;
    }
    ellipsisDims[i] = rank - letters;
    E = std::max(E, ellipsisDims[i]);
  }
  plan.labelSizes.assign(size_t(kLetters + E), -1);
  std::vector<int> uses(size_t(kLetters + E), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term &t = terms[i];
    std::vector<int> labels;
    for (int j = 0; j <= int(t.letters.size()); ++j) {
      if (j == t.ellipsisAt)
        for (int64_t e = 0; e < ellipsisDims[i]; ++e)
          labels.push_back(int(kLetters + E - ellipsisDims[i] + e));
      if (j < int(t.letters.size()))
        labels.push_back(t.letters[size_t(j)]);
    }
    std::vector<int64_t> own(plan.labelSizes.size(), -1);
    for (size_t a = 0; a < labels.size(); ++a) {
      int l = labels[a];
      int64_t d = shapes[i][a];
      if (own[size_t(l)] >= 0 && own[size_t(l)] != d) {
        error = "input " + std::to_string(i) + " repeats a label over dims " +
                std::to_string(own[size_t(l)]) + " and " + std::to_string(d);
        return false;
      }
      if (own[size_t(l)] < 0)
        ++uses[size_t(l)];
      own[size_t(l)] = d;
      int64_t &size = plan.labelSizes[size_t(l)];
      if (size < 0 || size == 1)
        size = d;
      else if (d != 1 && d != size) {
        error = "a label has dims " + std::to_string(size) + " and " + std::to_string(d) +
                " in different inputs";
        return false;
      }
    }
    plan.inputLabels.push_back(std::move(labels));
  }
  if (explicitOutput) {
    Term out;
    if (!parseTerm(rhs, out, error))
      return false;
    if (out.ellipsisAt < 0 && E > 0) {
      error = "the output has no '...' for the inputs' ellipsis dims";
      return false;
    }
    std::vector<bool> seen(size_t(kLetters), false);
    for (int j = 0; j <= int(out.letters.size()); ++j) {
      if (j == out.ellipsisAt)
        for (int64_t e = 0; e < E; ++e)
          plan.outputLabels.push_back(int(kLetters + e));
      if (j == int(out.letters.size()))
        break;
      int l = out.letters[size_t(j)];
      if (seen[size_t(l)] || plan.labelSizes[size_t(l)] < 0) {
        error = "output label " + std::to_string(j) + " is repeated or in no input";
        return false;
      }
      seen[size_t(l)] = true;
      plan.outputLabels.push_back(l);
    }
  } else {
    for (int64_t e = 0; e < E; ++e)
      plan.outputLabels.push_back(int(kLetters + e));
    for (int l = 0; l < kLetters; ++l)
      if (uses[size_t(l)] == 1 && plan.labelSizes[size_t(l)] >= 0) {
        // Used by one input; once there unless that input repeats it.
        int count = 0;
        for (const Term &t : terms)
          count += int(std::count(t.letters.begin(), t.letters.end(), l));
        if (count == 1)
          plan.outputLabels.push_back(l);
      }
  }
  for (int l : plan.outputLabels)
    plan.outputShape.push_back(plan.labelSizes[size_t(l)]);
  return true;
}

namespace kernels {

namespace {

bool isFloatType(ElementType t) {
  return t == ElementType::Float || t == ElementType::Double || t == ElementType::Float16 ||
         t == ElementType::BFloat16;
}

double loadFloat(const TensorView &t, int64_t i) {
  switch (t.type) {
  case ElementType::Float:
    return static_cast<const float *>(t.data)[i];
  case ElementType::Double:
    return static_cast<const double *>(t.data)[i];
  case ElementType::Float16:
    return halfToFloat(static_cast<const uint16_t *>(t.data)[i]);
  default:
    return bf16ToFloat(static_cast<const uint16_t *>(t.data)[i]);
  }
}

void storeFloat(const TensorView &t, int64_t i, double v) {
  switch (t.type) {
  case ElementType::Float:
    static_cast<float *>(t.data)[i] = float(v);
    break;
  case ElementType::Double:
    static_cast<double *>(t.data)[i] = v;
    break;
  case ElementType::Float16:
    static_cast<uint16_t *>(t.data)[i] = floatToHalf(float(v));
    break;
  default:
    static_cast<uint16_t *>(t.data)[i] = floatToBf16(float(v));
  }
}

/// The loop nest: `in[i]` holds input i's values, read through
/// strides[i][label]; out gets one value per output element in order.
template <typename Acc>
void contract(const std::vector<std::vector<Acc>> &in,
              const std::vector<std::vector<int64_t>> &strides, const EinsumPlan &plan,
              std::vector<Acc> &out) {
  std::vector<int> reduce;
  for (int l = 0; l < int(plan.labelSizes.size()); ++l)
    if (plan.labelSizes[size_t(l)] >= 0 &&
        std::find(plan.outputLabels.begin(), plan.outputLabels.end(), l) == plan.outputLabels.end())
      reduce.push_back(l);
  size_t n = in.size();
  int64_t outCount = product(plan.outputShape, 0, plan.outputShape.size());
  std::vector<int64_t> redSizes;
  for (int l : reduce)
    redSizes.push_back(plan.labelSizes[size_t(l)]);
  int64_t redCount = product(redSizes, 0, redSizes.size());
  out.assign(size_t(outCount), Acc(0));
  std::vector<int64_t> oIdx(plan.outputLabels.size(), 0), rIdx(reduce.size(), 0);
  std::vector<int64_t> base(n), off(n);
  for (int64_t o = 0; o < outCount; ++o) {
    for (size_t i = 0; i < n; ++i) {
      base[i] = 0;
      for (size_t d = 0; d < oIdx.size(); ++d)
        base[i] += oIdx[d] * strides[i][size_t(plan.outputLabels[d])];
    }
    Acc acc = Acc(0);
    std::fill(rIdx.begin(), rIdx.end(), 0);
    off = base;
    for (int64_t r = 0; r < redCount; ++r) {
      Acc p = Acc(1);
      for (size_t i = 0; i < n; ++i)
        p = wrapMul(p, in[i][size_t(off[i])]);
      acc = wrapAdd(acc, p);
      // Next reduction index, moving the offsets along.
      for (size_t d = reduce.size(); d-- > 0;) {
        int l = reduce[d];
        if (++rIdx[d] < redSizes[d]) {
          for (size_t i = 0; i < n; ++i)
            off[i] += strides[i][size_t(l)];
          break;
        }
        rIdx[d] = 0;
        for (size_t i = 0; i < n; ++i)
          off[i] -= (redSizes[d] - 1) * strides[i][size_t(l)];
      }
    }
    out[size_t(o)] = acc;
    for (size_t d = oIdx.size(); d-- > 0;) {
      if (++oIdx[d] < plan.outputShape[d])
        break;
      oIdx[d] = 0;
    }
  }
}

} // namespace

Status einsum(const KernelCall &call) {
  const char *op = "Einsum";
  if (!call.attrs.has("equation"))
    return invalid(op, "missing attribute equation");
  std::string equation = call.attrs.getString("equation", "");
  if (call.numInputs == 0)
    return invalid(op, "needs at least one input");
  std::vector<std::vector<int64_t>> shapes;
  ElementType type = call.inputs[0].type;
  for (size_t i = 0; i < call.numInputs; ++i) {
    const TensorView *t = dataInput(call, i);
    if (!t)
      return invalid(op, "missing input " + std::to_string(i));
    if (t->type != type)
      return invalid(op, "input " + std::to_string(i) + " is " + elementTypeName(t->type) +
                             ", input 0 is " + elementTypeName(type));
    shapes.push_back(t->shape);
  }
  bool floats = isFloatType(type);
  bool ints = !floats && type != ElementType::Bool && visitArithmetic(type, [](auto) {});
  if (!floats && !ints)
    return invalid(op, "inputs must be floats or integers, got " + elementTypeName(type));
  EinsumPlan plan;
  std::string error;
  if (!planEinsum(equation, shapes, plan, error))
    return invalid(op, error);
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Y.type != type)
    return invalid(op, "output is " + elementTypeName(Y.type) + ", inputs are " +
                           elementTypeName(type));
  if (Status s = checkOutputShape(op, Y, plan.outputShape); !s.isOk())
    return s;

  size_t n = shapes.size();
  std::vector<std::vector<int64_t>> strides(n, std::vector<int64_t>(plan.labelSizes.size(), 0));
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> dense = denseStrides(shapes[i]);
    for (size_t a = 0; a < shapes[i].size(); ++a)
      if (shapes[i][a] != 1)
        strides[i][size_t(plan.inputLabels[i][a])] += dense[a];
  }
  if (floats) {
    std::vector<std::vector<double>> in(n);
    for (size_t i = 0; i < n; ++i) {
      const TensorView &t = call.inputs[i];
      in[i].resize(size_t(t.numElements()));
      for (int64_t j = 0; j < t.numElements(); ++j)
        in[i][size_t(j)] = loadFloat(t, j);
    }
    std::vector<double> out;
    contract(in, strides, plan, out);
    for (size_t j = 0; j < out.size(); ++j)
      storeFloat(Y, int64_t(j), out[j]);
  } else {
    std::vector<std::vector<int64_t>> in(n);
    for (size_t i = 0; i < n; ++i) {
      const TensorView &t = call.inputs[i];
      in[i].resize(size_t(t.numElements()));
      visitArithmetic(type, [&](auto tag) {
        using T = decltype(tag);
        for (int64_t j = 0; j < t.numElements(); ++j)
          in[i][size_t(j)] = int64_t(static_cast<const T *>(t.data)[j]);
      });
    }
    std::vector<int64_t> out;
    contract(in, strides, plan, out);
    visitArithmetic(type, [&](auto tag) {
      using T = decltype(tag);
      for (size_t j = 0; j < out.size(); ++j)
        static_cast<T *>(Y.data)[j] = T(out[j]);
    });
  }
  return Status::ok();
}

} // namespace kernels

} // namespace ortc::cpu
