//===- SequenceValue.h - ONNX sequences and optionals at run time -*- C++ -*-===//
//
// A sequence of tensors, or an optional holding a tensor or a sequence, as an
// EP keeps it while a partition runs. ONNX gives these values value
// semantics: SequenceInsert makes a new sequence. The elements are never
// written once made and are shared between the sequences that hold them, so
// that copying a sequence (Identity, a Loop's carried value, an insert)
// copies pointers, not tensors.
//
// At an EP's boundary (LoadedPartition, a sub-plan) a container travels as a
// TensorView whose `data` is the SequenceValue and whose shape is empty; the
// signature's `kind` says which views are containers.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_SEQUENCEVALUE_H
#define ORTC_RUNTIME_EP_SEQUENCEVALUE_H

#include "runtime/ep/Tensor.h"

#include <vector>

namespace ortc {

/// A sequence (`present` always true) or an optional (`present` false when
/// it holds nothing; an optional tensor holds one element).
struct SequenceValue {
  bool present = true;
  std::vector<OwnedTensor> elements;

  void clear() {
    present = true;
    elements.clear();
  }
};

} // namespace ortc

#endif // ORTC_RUNTIME_EP_SEQUENCEVALUE_H
