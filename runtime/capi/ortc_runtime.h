/*===- ortc_runtime.h - the ortc runtime's C API ------------------*- C -*-===//
 *
 * Loads a model compiled by `ortc compile` (model_ctx.onnx: one
 * com.microsoft::EPContext node per partition) and runs it. Nothing is
 * recompiled: each partition's blob goes to the execution provider that wrote
 * it. The library links protobuf and the EPs' runtime halves only.
 *
 * Conventions:
 *  - Every call that can fail returns an OrtcStatus; ORTC_OK is 0. The message
 *    of the last failed call on the calling thread is ortc_last_error(); it is
 *    one line and names the file, node or input at fault.
 *  - Objects are opaque and released by their own *_release function, which
 *    accepts NULL. Strings and shape arrays the library returns stay valid
 *    while the object they came from lives.
 *  - Element types are ONNX TensorProto.DataType codes (1 = float32, 7 = int64).
 *    Sub-byte types are packed as ONNX stores them, low bits first: int4,
 *    uint4 and float4e2m1 two per byte, int2 and uint2 four per byte; a
 *    tensor's size is rounded up to whole bytes.
 *    A dim of -1 in a signature is dynamic, bound by the inputs of a run.
 *  - A session may be run from several threads at once.
 *
 *===----------------------------------------------------------------------===*/

#ifndef ORTC_RUNTIME_H
#define ORTC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ORTC_API __attribute__((visibility("default")))
#else
#define ORTC_API
#endif

/* Bumped when a signature in this header changes incompatibly. */
#define ORTC_RUNTIME_API_VERSION 3 /* 2: ortc_session_options_set_ep_option;
                                      3: sequences and optionals (ortc_value_*) */

typedef enum OrtcStatus {
  ORTC_OK = 0,
  ORTC_INVALID_ARGUMENT = 1, /* bad model, blob, input, shape or dtype */
  ORTC_NOT_FOUND = 2,        /* no file, input, output or EP of that name */
  ORTC_ALREADY_EXISTS = 3,
  ORTC_UNSUPPORTED = 4, /* e.g. a blob for a CPU this machine is not */
  ORTC_FAILED_PRECONDITION = 5,
  ORTC_INTERNAL = 6, /* a bug, or memory exhausted */
} OrtcStatus;

typedef struct OrtcSessionOptions OrtcSessionOptions;
typedef struct OrtcSession OrtcSession;
typedef struct OrtcTensor OrtcTensor;

/* The message of the last failed call on this thread ("" if none). A
 * successful call leaves it as it is; the text stays valid until the next
 * failed call on this thread. */
ORTC_API const char *ortc_last_error(void);
/* "0.1.0"; and ORTC_RUNTIME_API_VERSION of the library. */
ORTC_API const char *ortc_version(void);
ORTC_API int ortc_api_version(void);

/* --- Session options ---------------------------------------------------- */
ORTC_API OrtcStatus ortc_session_options_create(OrtcSessionOptions **out);
ORTC_API void ortc_session_options_release(OrtcSessionOptions *options);
/* Threads one run may use inside an operator; 0 (the default) = one per core,
 * 1 = no extra threads. Negative values are refused. */
ORTC_API OrtcStatus ortc_session_options_set_intra_op_threads(OrtcSessionOptions *options,
                                                              int threads);
/* An option of one EP, e.g. ("cpu", "threads", "2"); `ep` is the EP's name
 * or alias. An EP this library lacks or a key that EP does not take is
 * refused here; the value is checked by the EP when a session starts it
 * (ortc_session_create fails with a message naming the EP and the key).
 * Setting a key again replaces its value. */
ORTC_API OrtcStatus ortc_session_options_set_ep_option(OrtcSessionOptions *options, const char *ep,
                                                       const char *key, const char *value);

/* --- Sessions ----------------------------------------------------------- */
/* Loads model_ctx.onnx at `path`; sidecar blobs are resolved beside it.
 * `options` may be NULL. */
ORTC_API OrtcStatus ortc_session_create(const char *path, const OrtcSessionOptions *options,
                                        OrtcSession **out);
/* Loads a model held in memory (copied; the caller may free it on return).
 * Sidecars are resolved in `base_dir`; with base_dir NULL a model that needs a
 * sidecar is refused (an empty base_dir is refused too: pass NULL or "."). */
ORTC_API OrtcStatus ortc_session_create_from_buffer(const void *data, size_t size,
                                                    const char *base_dir,
                                                    const OrtcSessionOptions *options,
                                                    OrtcSession **out);
ORTC_API void ortc_session_release(OrtcSession *session);

ORTC_API size_t ortc_session_input_count(const OrtcSession *session);
ORTC_API size_t ortc_session_output_count(const OrtcSession *session);
/* The signature of input (or output) `index`: name, element type and shape
 * (-1 for a dynamic dim). Any out pointer may be NULL. */
ORTC_API OrtcStatus ortc_session_input_info(const OrtcSession *session, size_t index,
                                            const char **name, int32_t *element_type,
                                            const int64_t **shape, size_t *rank);
ORTC_API OrtcStatus ortc_session_output_info(const OrtcSession *session, size_t index,
                                             const char **name, int32_t *element_type,
                                             const int64_t **shape, size_t *rank);

/* --- Tensors ------------------------------------------------------------ */
/* A tensor whose storage the library allocates (64-byte aligned, zeroed). */
ORTC_API OrtcStatus ortc_tensor_create(int32_t element_type, const int64_t *shape, size_t rank,
                                       OrtcTensor **out);
/* A tensor over the caller's `data` of `byte_size` bytes, which must be what
 * the type and shape need. The tensor borrows the memory; it never frees it. */
ORTC_API OrtcStatus ortc_tensor_wrap(int32_t element_type, const int64_t *shape, size_t rank,
                                     void *data, size_t byte_size, OrtcTensor **out);
ORTC_API void ortc_tensor_release(OrtcTensor *tensor);
ORTC_API int32_t ortc_tensor_element_type(const OrtcTensor *tensor);
ORTC_API size_t ortc_tensor_rank(const OrtcTensor *tensor);
ORTC_API const int64_t *ortc_tensor_shape(const OrtcTensor *tensor);
ORTC_API void *ortc_tensor_data(OrtcTensor *tensor);
ORTC_API size_t ortc_tensor_byte_size(const OrtcTensor *tensor);

/* --- Sequences and optionals ------------------------------------------- */
/* A graph input or output may be an ONNX sequence of tensors, an optional
 * tensor or an optional sequence. Such a value is an OrtcTensor handle too
 * (passed to and returned by ortc_session_run like a tensor) whose kind says
 * so; it holds tensors of one element type, which it owns. On such a handle
 * ortc_tensor_element_type gives the tensors' element type, ortc_tensor_rank
 * 0, ortc_tensor_data NULL and ortc_tensor_byte_size 0. */
typedef enum OrtcValueKind {
  ORTC_VALUE_TENSOR = 0,
  ORTC_VALUE_SEQUENCE = 1,          /* seq(tensor) */
  ORTC_VALUE_OPTIONAL_TENSOR = 2,   /* optional(tensor) */
  ORTC_VALUE_OPTIONAL_SEQUENCE = 3, /* optional(seq(tensor)) */
} OrtcValueKind;
/* The kind of graph input (or output) `index`; -1 for an index out of range
 * or a NULL session. */
ORTC_API int32_t ortc_session_input_kind(const OrtcSession *session, size_t index);
ORTC_API int32_t ortc_session_output_kind(const OrtcSession *session, size_t index);
/* A sequence or optional of copies of `tensors` (`count` of them, each of
 * `element_type`). An optional with `present` 0 is empty (count must be 0);
 * an optional tensor that is present holds exactly one tensor; a sequence is
 * always present. */
ORTC_API OrtcStatus ortc_value_create(int32_t kind, int32_t element_type, int present,
                                      const OrtcTensor *const *tensors, size_t count,
                                      OrtcTensor **out);
/* The kind of `value` (ORTC_VALUE_TENSOR for a tensor; -1 for NULL). */
ORTC_API int32_t ortc_value_kind(const OrtcTensor *value);
/* Whether an optional holds its value (1 for a sequence or a tensor, 0 for
 * an empty optional or NULL). */
ORTC_API int ortc_value_present(const OrtcTensor *value);
/* The number of tensors a sequence or optional holds (0 for a tensor). */
ORTC_API size_t ortc_value_count(const OrtcTensor *value);
/* Tensor `index` of a sequence or optional, valid while `value` lives (do not
 * release it); NULL when out of range. */
ORTC_API const OrtcTensor *ortc_value_tensor(const OrtcTensor *value, size_t index);

/* --- Running ------------------------------------------------------------ */
/* Runs the model once.
 *  inputs:  num_inputs tensors; input_names[i] names inputs[i]. Every graph
 *           input must be given once. input_names NULL: inputs are in the
 *           order of ortc_session_input_info.
 *  outputs: num_outputs slots; output_names[i] names the graph output that
 *           goes to outputs[i] (a subset, any order). output_names NULL:
 *           every output, in order, and num_outputs must be the output count.
 *           A slot holding NULL receives a new tensor the caller releases; a
 *           slot holding a tensor is written in place, and its element type
 *           and shape must be exactly the output's. A sequence or optional
 *           output needs a NULL slot.
 * On failure no slot that held NULL is left holding a tensor (a caller's
 * tensor may have been written in part). */
ORTC_API OrtcStatus ortc_session_run(OrtcSession *session, const char *const *input_names,
                                     const OrtcTensor *const *inputs, size_t num_inputs,
                                     const char *const *output_names, OrtcTensor **outputs,
                                     size_t num_outputs);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ORTC_RUNTIME_H */
