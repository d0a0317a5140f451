//===- FuzzSession.cpp - an EPContext model through the C API -------------===//
//
// What an application embedding the runtime does with a model_ctx.onnx it
// was handed: ortc_session_create_from_buffer, then one run on zero-filled
// inputs (a dynamic dim bound to 1). Sidecars resolve in an empty scratch
// folder (resolution has its own target). Inputs too large to make (over 2^20 elements
// in all) are not run: the session's own limits are what is fuzzed, not this
// process's memory.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/ortc_runtime.h"
#include "test/fuzz/FuzzSupport.h"

#include <cstdlib>
#include <vector>

namespace {

constexpr int64_t kMaxRunElements = int64_t(1) << 20;

struct Tensors {
  std::vector<OrtcTensor *> list;
  ~Tensors() {
    for (OrtcTensor *t : list)
      ortc_tensor_release(t);
  }
};

void runOnZeros(OrtcSession *session) {
  Tensors inputs, outputs;
  int64_t total = 0;
  for (size_t i = 0; i < ortc_session_input_count(session); ++i) {
    if (ortc_session_input_kind(session, i) != ORTC_VALUE_TENSOR)
      return; // containers are made by the caller: not this target's business
    int32_t type = 0;
    const int64_t *shape = nullptr;
    size_t rank = 0;
    if (ortc_session_input_info(session, i, nullptr, &type, &shape, &rank) != ORTC_OK)
      return;
    std::vector<int64_t> dims(shape, shape + rank);
    int64_t count = 1;
    for (int64_t &d : dims) {
      if (d < 0)
        d = 1;
      if (d > kMaxRunElements || (count *= d) > kMaxRunElements)
        return;
    }
    if ((total += count) > kMaxRunElements)
      return;
    OrtcTensor *tensor = nullptr;
    if (ortc_tensor_create(type, dims.data(), dims.size(), &tensor) != ORTC_OK)
      return;
    inputs.list.push_back(tensor);
  }
  outputs.list.assign(ortc_session_output_count(session), nullptr);
  (void)ortc_session_run(session, nullptr, inputs.list.data(), inputs.list.size(), nullptr,
                         outputs.list.data(), outputs.list.size());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string baseDir = ortc::fuzz::scratchFolder("session");
  static OrtcSessionOptions *options = [] {
    OrtcSessionOptions *o = nullptr;
    if (ortc_session_options_create(&o) != ORTC_OK ||
        ortc_session_options_set_intra_op_threads(o, 1) != ORTC_OK)
      std::abort();
    return o;
  }();
  OrtcSession *session = nullptr;
  if (ortc_session_create_from_buffer(data, size, baseDir.c_str(), options, &session) != ORTC_OK)
    return 0;
  runOnZeros(session);
  ortc_session_release(session);
  return 0;
}
