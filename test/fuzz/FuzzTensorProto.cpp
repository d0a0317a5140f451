//===- FuzzTensorProto.cpp - the TensorProto/SequenceProto readers --------===//
//
// The same bytes go to each reader `ortc run` has for .pb files: a tensor, a
// sequence, an optional tensor and an optional sequence, of the element type
// the first byte picks.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/TensorFile.h"
#include "test/fuzz/FuzzSupport.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = ortc::fuzz::scratchFolder("tensor-proto") + "/input.pb";
  ortc::fuzz::writeWholeFile(path, data, size);
  std::string name;
  (void)ortc::readTensorProto(path, &name);
  auto element = static_cast<ortc::ElementType>(size ? data[0] % 24 : 1);
  for (ortc::ValueKind kind : {ortc::ValueKind::Sequence, ortc::ValueKind::OptionalTensor,
                               ortc::ValueKind::OptionalSequence})
    (void)ortc::readContainerProto(path, kind, element, &name);
  return 0;
}
