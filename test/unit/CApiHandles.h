//===- CApiHandles.h - owning handles for the C API's objects ---*- C++ -*-===//
//
// unique_ptr types that release sessions, tensors and options through the C
// API, and a whole-file reader: what the C API's tests share. Only the public
// header and the standard library, like the tests themselves.
//
//===----------------------------------------------------------------------===//
#ifndef ORTC_TEST_UNIT_CAPIHANDLES_H
#define ORTC_TEST_UNIT_CAPIHANDLES_H

#include "ortc_runtime.h"

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace ortc::testutil {

struct SessionDeleter {
  void operator()(OrtcSession *s) const { ortc_session_release(s); }
};
struct TensorDeleter {
  void operator()(OrtcTensor *t) const { ortc_tensor_release(t); }
};
struct OptionsDeleter {
  void operator()(OrtcSessionOptions *o) const { ortc_session_options_release(o); }
};
using SessionPtr = std::unique_ptr<OrtcSession, SessionDeleter>;
using TensorPtr = std::unique_ptr<OrtcTensor, TensorDeleter>;
using OptionsPtr = std::unique_ptr<OrtcSessionOptions, OptionsDeleter>;

inline std::vector<char> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

} // namespace ortc::testutil

#endif // ORTC_TEST_UNIT_CAPIHANDLES_H
