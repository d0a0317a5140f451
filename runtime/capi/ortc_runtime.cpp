//===- ortc_runtime.cpp - the runtime's C API over ortc::Session ----------===//
//
// Every entry point catches everything: no exception crosses the C ABI. A
// failure stores its message in a thread-local string and returns a status.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/ortc_runtime.h"

#include "runtime/session/Session.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <vector>

using namespace ortc;

struct OrtcSessionOptions {
  SessionOptions options;
};

struct OrtcSession {
  std::unique_ptr<Session> session;
};

struct OrtcTensor {
  TensorView view; // a container: data is `sequence`, the shape empty
  /// The storage when the library allocated it; empty for a wrapped buffer.
  std::shared_ptr<char> owned;
  /// A sequence or optional: its value, and a handle per tensor it holds.
  ValueKind kind = ValueKind::Tensor;
  std::shared_ptr<SequenceValue> sequence;
  std::vector<std::unique_ptr<OrtcTensor>> tensors;
};

namespace {

/// A handle over a container (its tensors' handles made once, here).
std::unique_ptr<OrtcTensor> containerHandle(ValueKind kind, ElementType type,
                                            std::shared_ptr<SequenceValue> value) {
  auto handle = std::make_unique<OrtcTensor>();
  handle->kind = kind;
  handle->sequence = std::move(value);
  handle->view = TensorView{handle->sequence.get(), type, {}};
  for (const OwnedTensor &t : handle->sequence->elements) {
    auto element = std::make_unique<OrtcTensor>();
    element->view = t.view();
    element->owned = t.data;
    handle->tensors.push_back(std::move(element));
  }
  return handle;
}

thread_local std::string lastError;

/// Records this thread's last error, the concatenation of `parts`. Never
/// throws: without memory for the message, it keeps what fits in the storage
/// the old one held.
void setLastError(std::initializer_list<const char *> parts) noexcept {
  try {
    std::string message;
    for (const char *part : parts)
      message += part;
    lastError = std::move(message);
  } catch (...) {
    lastError.clear();
    for (const char *part : parts)
      lastError.append(part, std::min(std::strlen(part), lastError.capacity() - lastError.size()));
  }
}

OrtcStatus fail(OrtcStatus status, const std::string &message) noexcept {
  setLastError({message.c_str()});
  return status;
}

OrtcStatus toOrtcStatus(StatusCode code) {
  switch (code) {
  case StatusCode::Ok:
    return ORTC_OK;
  case StatusCode::InvalidArgument:
    return ORTC_INVALID_ARGUMENT;
  case StatusCode::NotFound:
    return ORTC_NOT_FOUND;
  case StatusCode::AlreadyExists:
    return ORTC_ALREADY_EXISTS;
  case StatusCode::Unsupported:
    return ORTC_UNSUPPORTED;
  case StatusCode::FailedPrecondition:
    return ORTC_FAILED_PRECONDITION;
  case StatusCode::Internal:
    return ORTC_INTERNAL;
  }
  return ORTC_INTERNAL;
}

OrtcStatus fail(const Status &status) {
  return fail(toOrtcStatus(status.code()), status.message());
}

/// ORTC_INVALID_ARGUMENT with "<function>: <what>".
OrtcStatus invalidArgument(const char *function, const std::string &what) {
  return fail(ORTC_INVALID_ARGUMENT, std::string(function) + ": " + what);
}

OrtcStatus nullArgument(const char *function, const char *argument) {
  return invalidArgument(function, std::string(argument) + " is NULL");
}

/// Runs `body(function)`, turning any exception into ORTC_INTERNAL. (The
/// body gets the entry point's name: __func__ inside a lambda is not it.)
template <typename Body> OrtcStatus guarded(const char *function, Body &&body) noexcept {
  try {
    return body(function);
  } catch (const std::bad_alloc &) {
    setLastError({function, ": out of memory"});
  } catch (const std::exception &error) {
    setLastError({function, ": internal error: ", error.what()});
  } catch (...) {
    setLastError({function, ": internal error (unknown exception)"});
  }
  return ORTC_INTERNAL;
}

/// Checks a tensor description and returns its byte size in `bytes`.
OrtcStatus checkTensor(const char *function, int32_t elementType, const int64_t *shape, size_t rank,
                       size_t &bytes) {
  if (!shape && rank > 0)
    return nullArgument(function, "shape");
  size_t bits = elementBits(ElementType(elementType));
  if (bits == 0)
    return invalidArgument(function, "element type " + std::to_string(elementType) +
                                         " is not one the runtime handles");
  // Bytes per element, or elements for the packed sub-byte types.
  size_t size = bits >= 8 ? bits / 8 : 1;
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] < 0)
      return invalidArgument(function, "dim " + std::to_string(d) + " is " +
                                           std::to_string(shape[d]) +
                                           "; a tensor's dims cannot be negative");
    if (__builtin_mul_overflow(size, size_t(shape[d]), &size))
      return invalidArgument(function, "the shape needs more bytes than fit in size_t");
  }
  bytes = bits >= 8 ? size : (size / 8) * bits + ((size % 8) * bits + 7) / 8;
  return ORTC_OK;
}

/// The index of the signature named `name`, or signatures.size().
size_t findByName(const std::vector<TensorSignature> &signatures, const char *name) {
  for (size_t i = 0; i < signatures.size(); ++i)
    if (signatures[i].name == name)
      return i;
  return signatures.size();
}

std::string listNames(const std::vector<TensorSignature> &signatures) {
  std::string names;
  for (const TensorSignature &sig : signatures)
    names += (names.empty() ? "'" : ", '") + sig.name + "'";
  return names.empty() ? "none" : names;
}

/// The signature that slot `i` of a run names: its position without `names`,
/// else the signature of that name. A NULL or unknown name, or one given
/// twice (`seen`), is refused; `kind` is "input" or "output".
OrtcStatus slotIndex(const char *fn, const std::string &model, const std::string &kind,
                     const char *const *names, size_t i,
                     const std::vector<TensorSignature> &signatures, std::vector<bool> &seen,
                     size_t &index) {
  index = i;
  if (names) {
    if (!names[i])
      return invalidArgument(fn, kind + "_names[" + std::to_string(i) + "] is NULL");
    index = findByName(signatures, names[i]);
    if (index == signatures.size())
      return fail(ORTC_NOT_FOUND, model + " has no " + kind + " named '" + names[i] + "' (" + kind +
                                      "s: " + listNames(signatures) + ")");
    if (seen[index])
      return fail(ORTC_INVALID_ARGUMENT,
                  model + ": " + kind + " '" + signatures[index].name + "' is given twice");
  }
  seen[index] = true;
  return ORTC_OK;
}

OrtcStatus signatureInfo(const char *function, const Session &session,
                         const std::vector<TensorSignature> &signatures, const char *what,
                         size_t index, const char **name, int32_t *elementType,
                         const int64_t **shape, size_t *rank) {
  if (index >= signatures.size())
    return invalidArgument(function, std::string(what) + " index " + std::to_string(index) +
                                         " is out of range; " + session.model().path + " has " +
                                         std::to_string(signatures.size()));
  const TensorSignature &sig = signatures[index];
  if (name)
    *name = sig.name.c_str();
  if (elementType)
    *elementType = int32_t(sig.type);
  if (shape)
    *shape = sig.shape.data();
  if (rank)
    *rank = sig.shape.size();
  return ORTC_OK;
}

OrtcStatus finishLoad(Result<std::unique_ptr<Session>> loaded, OrtcSession **out) {
  if (!loaded.isOk())
    return fail(loaded.status());
  *out = new OrtcSession{loaded.takeValue()};
  return ORTC_OK;
}

} // namespace

extern "C" {

const char *ortc_last_error(void) { return lastError.c_str(); }

const char *ortc_version(void) { return "0.1.0"; }

int ortc_api_version(void) { return ORTC_RUNTIME_API_VERSION; }

OrtcStatus ortc_session_options_create(OrtcSessionOptions **out) {
  return guarded(__func__, [&](const char *fn) {
    if (!out)
      return nullArgument(fn, "out");
    *out = new OrtcSessionOptions();
    return ORTC_OK;
  });
}

void ortc_session_options_release(OrtcSessionOptions *options) { delete options; }

OrtcStatus ortc_session_options_set_intra_op_threads(OrtcSessionOptions *options, int threads) {
  return guarded(__func__, [&](const char *fn) {
    if (!options)
      return nullArgument(fn, "options");
    if (threads < 0)
      return invalidArgument(fn, "threads is " + std::to_string(threads) +
                                     "; use 0 for one per core, or a positive count");
    options->options.intraOpThreads = threads;
    return ORTC_OK;
  });
}

OrtcStatus ortc_session_options_set_ep_option(OrtcSessionOptions *options, const char *ep,
                                              const char *key, const char *value) {
  return guarded(__func__, [&](const char *fn) {
    if (!options)
      return nullArgument(fn, "options");
    if (!ep)
      return nullArgument(fn, "ep");
    if (!key)
      return nullArgument(fn, "key");
    if (!value)
      return nullArgument(fn, "value");
    // The EP and the key are known without starting anything.
    Result<EpRegistry> registry = createBuiltinEpRegistry();
    if (!registry.isOk())
      return fail(registry.status());
    EpOptionsByEp one{{ep, EpOptionMap{{key, value}}}};
    Status known = registry.value().checkOptions(one);
    if (!known.isOk())
      return invalidArgument(fn, known.message());
    // Under the EP's own name, so that an alias replaces the value too.
    options->options.epOptions[registry.value().findByName(ep)->name()][key] = value;
    return ORTC_OK;
  });
}

OrtcStatus ortc_session_create(const char *path, const OrtcSessionOptions *options,
                               OrtcSession **out) {
  return guarded(__func__, [&](const char *fn) {
    if (!out)
      return nullArgument(fn, "out");
    *out = nullptr;
    if (!path)
      return nullArgument(fn, "path");
    Result<EpRegistry> registry = createBuiltinEpRegistry();
    if (!registry.isOk())
      return fail(registry.status());
    return finishLoad(
        Session::load(path, registry.takeValue(), options ? options->options : SessionOptions()),
        out);
  });
}

OrtcStatus ortc_session_create_from_buffer(const void *data, size_t size, const char *base_dir,
                                           const OrtcSessionOptions *options, OrtcSession **out) {
  return guarded(__func__, [&](const char *fn) {
    if (!out)
      return nullArgument(fn, "out");
    *out = nullptr;
    if (!data)
      return nullArgument(fn, "data");
    // Session takes "" as "no sidecars"; an empty base_dir is more likely a
    // mistake than a request for that.
    if (base_dir && !*base_dir)
      return invalidArgument(fn, "base_dir is empty; pass NULL to refuse sidecars, or \".\"");
    Result<EpRegistry> registry = createBuiltinEpRegistry();
    if (!registry.isOk())
      return fail(registry.status());
    std::string baseDir = base_dir ? base_dir : "";
    std::string displayName =
        "in-memory model" + (baseDir.empty() ? std::string() : " (base_dir " + baseDir + ")");
    return finishLoad(Session::loadFromBuffer(data, size, displayName, baseDir,
                                              registry.takeValue(),
                                              options ? options->options : SessionOptions()),
                      out);
  });
}

void ortc_session_release(OrtcSession *session) { delete session; }

size_t ortc_session_input_count(const OrtcSession *session) {
  return session ? session->session->inputs().size() : 0;
}

size_t ortc_session_output_count(const OrtcSession *session) {
  return session ? session->session->outputs().size() : 0;
}

OrtcStatus ortc_session_input_info(const OrtcSession *session, size_t index, const char **name,
                                   int32_t *element_type, const int64_t **shape, size_t *rank) {
  return guarded(__func__, [&](const char *fn) {
    if (!session)
      return nullArgument(fn, "session");
    const Session &s = *session->session;
    return signatureInfo(fn, s, s.inputs(), "input", index, name, element_type, shape, rank);
  });
}

OrtcStatus ortc_session_output_info(const OrtcSession *session, size_t index, const char **name,
                                    int32_t *element_type, const int64_t **shape, size_t *rank) {
  return guarded(__func__, [&](const char *fn) {
    if (!session)
      return nullArgument(fn, "session");
    const Session &s = *session->session;
    return signatureInfo(fn, s, s.outputs(), "output", index, name, element_type, shape, rank);
  });
}

OrtcStatus ortc_tensor_create(int32_t element_type, const int64_t *shape, size_t rank,
                              OrtcTensor **out) {
  return guarded(__func__, [&](const char *fn) {
    if (!out)
      return nullArgument(fn, "out");
    *out = nullptr;
    size_t bytes = 0;
    if (OrtcStatus status = checkTensor(fn, element_type, shape, rank, bytes))
      return status;
    // aligned_alloc wants a multiple of the alignment, and never 0.
    size_t rounded = bytes / 64 * 64 + 64;
    char *data = rounded > bytes ? static_cast<char *>(std::aligned_alloc(64, rounded)) : nullptr;
    if (!data)
      return fail(ORTC_INTERNAL,
                  std::string(fn) + ": out of memory for " + std::to_string(bytes) + " bytes");
    std::shared_ptr<char> owned(data, [](char *p) { std::free(p); });
    std::memset(data, 0, bytes);
    auto tensor = std::make_unique<OrtcTensor>();
    tensor->view =
        TensorView{data, ElementType(element_type), std::vector<int64_t>(shape, shape + rank)};
    tensor->owned = std::move(owned);
    *out = tensor.release();
    return ORTC_OK;
  });
}

OrtcStatus ortc_tensor_wrap(int32_t element_type, const int64_t *shape, size_t rank, void *data,
                            size_t byte_size, OrtcTensor **out) {
  return guarded(__func__, [&](const char *fn) {
    if (!out)
      return nullArgument(fn, "out");
    *out = nullptr;
    size_t bytes = 0;
    if (OrtcStatus status = checkTensor(fn, element_type, shape, rank, bytes))
      return status;
    if (!data && bytes > 0)
      return nullArgument(fn, "data");
    if (byte_size != bytes)
      return invalidArgument(fn, "byte_size is " + std::to_string(byte_size) + " but " +
                                     elementTypeName(ElementType(element_type)) +
                                     shapeToString(std::vector<int64_t>(shape, shape + rank)) +
                                     " needs " + std::to_string(bytes));
    *out = new OrtcTensor{
        TensorView{data, ElementType(element_type), std::vector<int64_t>(shape, shape + rank)},
        nullptr};
    return ORTC_OK;
  });
}

void ortc_tensor_release(OrtcTensor *tensor) { delete tensor; }

int32_t ortc_session_input_kind(const OrtcSession *session, size_t index) {
  if (!session || index >= session->session->inputs().size())
    return -1;
  return int32_t(session->session->inputs()[index].kind);
}

int32_t ortc_session_output_kind(const OrtcSession *session, size_t index) {
  if (!session || index >= session->session->outputs().size())
    return -1;
  return int32_t(session->session->outputs()[index].kind);
}

OrtcStatus ortc_value_create(int32_t kind, int32_t element_type, int present,
                             const OrtcTensor *const *tensors, size_t count, OrtcTensor **out) {
  return guarded(__func__, [&](const char *fn) {
    if (!out)
      return nullArgument(fn, "out");
    if (!tensors && count > 0)
      return nullArgument(fn, "tensors");
    if (kind < int32_t(ValueKind::Sequence) || kind > int32_t(ValueKind::OptionalSequence))
      return invalidArgument(fn, "kind " + std::to_string(kind) +
                                     " is not a sequence or optional kind (1, 2 or 3)");
    ElementType type = ElementType(element_type);
    if (elementSize(type) == 0)
      return invalidArgument(fn, "element type " + std::to_string(element_type) +
                                     " is not a whole-byte tensor type");
    ValueKind k = ValueKind(kind);
    auto value = std::make_shared<SequenceValue>();
    value->present = k == ValueKind::Sequence || present != 0;
    if (!value->present && count > 0)
      return invalidArgument(fn, "an empty optional holds no tensors (count " +
                                     std::to_string(count) + ")");
    if (k == ValueKind::OptionalTensor && value->present && count != 1)
      return invalidArgument(fn, "an optional tensor holds one tensor, not " +
                                     std::to_string(count));
    for (size_t i = 0; i < count; ++i) {
      const OrtcTensor *t = tensors[i];
      if (!t)
        return invalidArgument(fn, "tensors[" + std::to_string(i) + "] is NULL");
      if (t->kind != ValueKind::Tensor || t->view.type != type)
        return invalidArgument(fn, "tensors[" + std::to_string(i) + "] is not a " +
                                       elementTypeName(type) + " tensor");
      OwnedTensor copy = OwnedTensor::copyOf(t->view);
      if (!copy.data)
        return fail(ORTC_INTERNAL, std::string(fn) + ": out of memory copying tensors[" +
                                       std::to_string(i) + "]");
      value->elements.push_back(std::move(copy));
    }
    *out = containerHandle(k, type, std::move(value)).release();
    return ORTC_OK;
  });
}

int32_t ortc_value_kind(const OrtcTensor *value) { return value ? int32_t(value->kind) : -1; }

int ortc_value_present(const OrtcTensor *value) {
  if (!value)
    return 0;
  return value->kind == ValueKind::Tensor || value->sequence->present ? 1 : 0;
}

size_t ortc_value_count(const OrtcTensor *value) { return value ? value->tensors.size() : 0; }

const OrtcTensor *ortc_value_tensor(const OrtcTensor *value, size_t index) {
  if (!value || index >= value->tensors.size())
    return nullptr;
  return value->tensors[index].get();
}

int32_t ortc_tensor_element_type(const OrtcTensor *tensor) {
  return tensor ? int32_t(tensor->view.type) : 0;
}

size_t ortc_tensor_rank(const OrtcTensor *tensor) { return tensor ? tensor->view.shape.size() : 0; }

const int64_t *ortc_tensor_shape(const OrtcTensor *tensor) {
  return tensor ? tensor->view.shape.data() : nullptr;
}

void *ortc_tensor_data(OrtcTensor *tensor) {
  return tensor && tensor->kind == ValueKind::Tensor ? tensor->view.data : nullptr;
}

size_t ortc_tensor_byte_size(const OrtcTensor *tensor) {
  return tensor && tensor->kind == ValueKind::Tensor ? tensor->view.byteSize() : 0;
}

OrtcStatus ortc_session_run(OrtcSession *session, const char *const *input_names,
                            const OrtcTensor *const *inputs, size_t num_inputs,
                            const char *const *output_names, OrtcTensor **outputs,
                            size_t num_outputs) {
  return guarded(__func__, [&](const char *fn) {
    if (!session)
      return nullArgument(fn, "session");
    if (!inputs && num_inputs > 0)
      return nullArgument(fn, "inputs");
    if (!outputs && num_outputs > 0)
      return nullArgument(fn, "outputs");
    const Session &s = *session->session;
    const std::string &model = s.model().path;

    // Inputs, into the order of Session::inputs().
    const std::vector<TensorSignature> &inputSigs = s.inputs();
    if (!input_names && num_inputs != inputSigs.size())
      return fail(ORTC_INVALID_ARGUMENT, model + ": expected " + std::to_string(inputSigs.size()) +
                                             " inputs, got " + std::to_string(num_inputs));
    std::vector<const OrtcTensor *> ordered(inputSigs.size(), nullptr);
    std::vector<bool> given(inputSigs.size(), false);
    for (size_t i = 0; i < num_inputs; ++i) {
      size_t index;
      if (OrtcStatus st = slotIndex(fn, model, "input", input_names, i, inputSigs, given, index))
        return st;
      if (!inputs[i])
        return invalidArgument(fn, "inputs[" + std::to_string(i) + "] ('" + inputSigs[index].name +
                                       "') is NULL");
      ordered[index] = inputs[i];
    }
    std::vector<TensorView> views;
    for (size_t i = 0; i < ordered.size(); ++i) {
      if (!ordered[i])
        return fail(ORTC_INVALID_ARGUMENT,
                    model + ": input '" + inputSigs[i].name + "' is missing");
      if (ordered[i]->kind != inputSigs[i].kind)
        return fail(ORTC_INVALID_ARGUMENT,
                    model + ": input '" + inputSigs[i].name + "' must be " +
                        valueKindText(inputSigs[i].kind, inputSigs[i].type) + ", got " +
                        valueKindText(ordered[i]->kind, ordered[i]->view.type));
      views.push_back(ordered[i]->view);
    }

    // Outputs: a slot holding a tensor is written in place.
    const std::vector<TensorSignature> &outputSigs = s.outputs();
    if (!output_names && num_outputs != outputSigs.size())
      return fail(ORTC_INVALID_ARGUMENT, model + ": expected " + std::to_string(outputSigs.size()) +
                                             " output slots, got " + std::to_string(num_outputs));
    std::vector<RunOutput> requests(num_outputs);
    std::vector<bool> requested(outputSigs.size(), false);
    for (size_t i = 0; i < num_outputs; ++i) {
      size_t index;
      if (OrtcStatus st =
              slotIndex(fn, model, "output", output_names, i, outputSigs, requested, index))
        return st;
      requests[i].index = index;
      if (outputs[i])
        requests[i].into = outputs[i]->view;
    }

    if (Status status = s.run(views, requests); !status.isOk())
      return fail(status);

    // Wrap the new tensors first, so that running out of memory here leaves
    // every NULL slot NULL.
    std::vector<std::unique_ptr<OrtcTensor>> created(num_outputs);
    for (size_t i = 0; i < num_outputs; ++i) {
      if (outputs[i])
        continue;
      const TensorSignature &sig = outputSigs[requests[i].index];
      if (sig.kind != ValueKind::Tensor) {
        created[i] = containerHandle(sig.kind, sig.type, std::move(requests[i].sequence));
        continue;
      }
      OwnedTensor &result = requests[i].result;
      created[i] = std::make_unique<OrtcTensor>();
      created[i]->view = result.view();
      created[i]->owned = std::move(result.data);
    }
    for (size_t i = 0; i < num_outputs; ++i)
      if (created[i])
        outputs[i] = created[i].release();
    return ORTC_OK;
  });
}

} // extern "C"
