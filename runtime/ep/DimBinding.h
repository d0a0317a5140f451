//===- DimBinding.h - a plan's symbolic dims bound from its inputs -*- C++ -*-===//
//
// A compiled plan writes every dim as a size (>= 0) or -(k + 1) for node k
// of its DimExpr table. At load, DimBinding records which input dim binds
// each symbol (the first input dim that is that symbol alone) and refuses a
// plan in which some symbol has no such dim; at each run it checks the
// inputs against their signatures, binds the symbols, evaluates every node
// and checks the dims the kernels take as equal. Plain C++17.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_DIMBINDING_H
#define ORTC_RUNTIME_EP_DIMBINDING_H

#include "runtime/ep/DimExpr.h"
#include "runtime/ep/Status.h"
#include "runtime/ep/Tensor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ortc {

class DimBinding {
public:
  /// A symbol bound from element `element` of input `input` (a small
  /// integer input: a computed shape).
  struct ValueSource {
    uint32_t symbol = 0, input = 0, element = 0;
  };
  /// Reads element `element` of input `input` of a run (device EPs copy it
  /// back); the integer input's values.
  using ValueReader = std::function<Result<int64_t>(size_t input, size_t element)>;

  /// Two dims (codes) a run must find equal, and what they are for messages.
  struct Check {
    int64_t a = 0, b = 0;
    std::string what;
  };

  /// `inputs` hold the dim codes of each input's shape, `used` every other
  /// code the plan reads (its buffers' shapes, grids); `what` names the
  /// partition in errors. Nodes no used code reaches are not evaluated
  /// (the table holds the whole graph's expressions, and symbols standing
  /// for values of inputs the plan never sizes by). Fails when a symbol a
  /// used node reads is no input's dim.
  static Result<DimBinding> create(std::vector<DimNode> nodes, std::vector<std::string> symbols,
                                   std::vector<TensorSignature> inputs,
                                   std::vector<std::vector<int64_t>> inputDims,
                                   std::vector<Check> checks, const std::vector<int64_t> &used,
                                   std::string what, std::vector<ValueSource> values = {});

  /// Checks `views` against the inputs' signatures (element type, rank,
  /// static dims, dims that repeat a symbol or derive from others), binds
  /// the symbols and evaluates every node into `values`.
  Status bind(const std::vector<TensorView> &views, std::vector<int64_t> &values,
              const ValueReader &read = nullptr) const;

  /// A dim code's size under `values`.
  static int64_t size(int64_t code, const std::vector<int64_t> &values) {
    return code >= 0 ? code : values[size_t(-(code + 1))];
  }
  static std::vector<int64_t> shape(const std::vector<int64_t> &codes,
                                    const std::vector<int64_t> &values) {
    std::vector<int64_t> out;
    out.reserve(codes.size());
    for (int64_t c : codes)
      out.push_back(size(c, values));
    return out;
  }

  /// Input signatures as a LoadedPartition reports them: a dim of a symbol
  /// is -1, named in dimNames.
  const std::vector<TensorSignature> &inputs() const { return inputs_; }

private:
  std::string describe(size_t input) const;

  std::vector<DimNode> nodes_;
  std::vector<std::string> symbols_;
  std::vector<TensorSignature> inputs_;
  std::vector<std::vector<int64_t>> inputDims_;
  std::vector<Check> checks_;
  std::vector<std::pair<int, int>> sources_; // input and dim binding each symbol
  std::vector<ValueSource> valueSources_;    // symbols bound from input data
  std::string what_;
};

/// A signature from its dim codes: symbolic dims become -1 and, when they
/// are a symbol alone, carry its name in dimNames.
TensorSignature signatureFromDims(std::string name, ElementType type,
                                  const std::vector<int64_t> &dims,
                                  const std::vector<DimNode> &nodes,
                                  const std::vector<std::string> &symbols);

} // namespace ortc

#endif // ORTC_RUNTIME_EP_DIMBINDING_H
