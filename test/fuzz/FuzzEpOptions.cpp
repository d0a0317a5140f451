//===- FuzzEpOptions.cpp - EP options through the C API -------------------===//
//
// The per-EP options an application passes as strings
// (ortc_session_options_set_ep_option): each input is a list of
// "ep\0key\0value\0" triples (the first byte, mod 5, is the intra-op thread
// count), applied to fresh options, and then a session of a small compiled
// model (the session corpus' `add`) is created with them and run once.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/ortc_runtime.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<char> readModel() {
  std::string path = std::string(ORTC_SOURCE_DIR) + "/test/fuzz/corpus/session/add";
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.empty()) {
    std::fprintf(stderr, "fuzz_ep_options: cannot read %s\n", path.c_str());
    std::abort();
  }
  return bytes;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::vector<char> model = readModel();
  OrtcSessionOptions *options = nullptr;
  if (ortc_session_options_create(&options) != ORTC_OK)
    std::abort();
  if (size)
    (void)ortc_session_options_set_intra_op_threads(options, int(data[0] % 5) - 1);
  std::vector<std::string> fields;
  std::string field;
  for (size_t i = 1; i < size; ++i) {
    if (data[i] == 0) {
      fields.push_back(field);
      field.clear();
    } else {
      field.push_back(char(data[i]));
    }
  }
  for (size_t i = 0; i + 2 < fields.size(); i += 3)
    (void)ortc_session_options_set_ep_option(options, fields[i].c_str(), fields[i + 1].c_str(),
                                             fields[i + 2].c_str());
  OrtcSession *session = nullptr;
  if (ortc_session_create_from_buffer(model.data(), model.size(), nullptr, options, &session) ==
      ORTC_OK) {
    // add: y = x + w over float32[2].
    OrtcTensor *x = nullptr;
    int64_t shape[] = {2};
    if (ortc_tensor_create(1, shape, 1, &x) == ORTC_OK) {
      const OrtcTensor *inputs[] = {x};
      OrtcTensor *outputs[] = {nullptr};
      if (ortc_session_input_count(session) == 1 && ortc_session_output_count(session) == 1 &&
          ortc_session_run(session, nullptr, inputs, 1, nullptr, outputs, 1) == ORTC_OK)
        ortc_tensor_release(outputs[0]);
      ortc_tensor_release(x);
    }
    ortc_session_release(session);
  }
  ortc_session_options_release(options);
  return 0;
}
