/* Runs a compiled model once through the ortc C API: every input filled with
 * ones (a dynamic dim set to 1), every output printed.
 *
 *   cc capi_example.c -I runtime/capi -L build/runtime/capi -lortc_runtime
 *   ./a.out model_ctx.onnx
 */
#include "ortc_runtime.h"

#include <stdio.h>
#include <stdlib.h>

/* Prints the failed call and the library's message for it. */
static int failed(OrtcStatus status, const char *call) {
  if (status == ORTC_OK)
    return 0;
  fprintf(stderr, "%s failed (status %d): %s\n", call, (int)status, ortc_last_error());
  return 1;
}

int main(int argc, char **argv) {
  OrtcSession *session = NULL;
  OrtcTensor **inputs = NULL, **outputs = NULL;
  size_t num_inputs = 0, num_outputs = 0, i, j;
  int exit_code = 1;

  if (argc != 2) {
    fprintf(stderr, "usage: %s model_ctx.onnx\n", argv[0]);
    return 2;
  }
  if (failed(ortc_session_create(argv[1], NULL, &session), "ortc_session_create"))
    return 1;

  /* Inputs: the signature's shape with -1 (dynamic) as 1; float32 filled
     with ones, other types left at zero. */
  num_inputs = ortc_session_input_count(session);
  num_outputs = ortc_session_output_count(session);
  inputs = calloc(num_inputs, sizeof *inputs);
  outputs = calloc(num_outputs, sizeof *outputs); /* NULL slots: the library allocates */
  if ((num_inputs && !inputs) || (num_outputs && !outputs))
    goto done;
  for (i = 0; i < num_inputs; ++i) {
    const char *name;
    int32_t type;
    const int64_t *signature;
    size_t rank;
    int64_t shape[8];
    if (failed(ortc_session_input_info(session, i, &name, &type, &signature, &rank),
               "ortc_session_input_info"))
      goto done;
    if (rank > 8) {
      fprintf(stderr, "input '%s' has rank %zu; this example handles 8\n", name, rank);
      goto done;
    }
    for (j = 0; j < rank; ++j)
      shape[j] = signature[j] < 0 ? 1 : signature[j];
    if (failed(ortc_tensor_create(type, shape, rank, &inputs[i]), "ortc_tensor_create"))
      goto done;
    if (type == 1) {
      float *data = ortc_tensor_data(inputs[i]);
      for (j = 0; j < ortc_tensor_byte_size(inputs[i]) / sizeof(float); ++j)
        data[j] = 1.0f;
    }
  }

  /* Inputs in signature order (no names), every output. */
  if (failed(ortc_session_run(session, NULL, (const OrtcTensor *const *)inputs, num_inputs, NULL,
                              outputs, num_outputs),
             "ortc_session_run"))
    goto done;

  for (i = 0; i < num_outputs; ++i) {
    const char *name;
    const int64_t *shape = ortc_tensor_shape(outputs[i]);
    size_t rank = ortc_tensor_rank(outputs[i]);
    ortc_session_output_info(session, i, &name, NULL, NULL, NULL);
    printf("%s: [", name);
    for (j = 0; j < rank; ++j)
      printf(j ? ",%lld" : "%lld", (long long)shape[j]);
    printf("]");
    if (ortc_tensor_element_type(outputs[i]) == 1) {
      const float *data = ortc_tensor_data(outputs[i]);
      for (j = 0; j < ortc_tensor_byte_size(outputs[i]) / sizeof(float); ++j)
        printf(" %g", data[j]);
    }
    printf("\n");
  }
  exit_code = 0;

done:
  for (i = 0; inputs && i < num_inputs; ++i)
    ortc_tensor_release(inputs[i]);
  for (i = 0; outputs && i < num_outputs; ++i)
    ortc_tensor_release(outputs[i]);
  free(inputs);
  free(outputs);
  ortc_session_release(session);
  return exit_code;
}
