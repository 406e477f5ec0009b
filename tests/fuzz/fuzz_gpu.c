/* A GPU JSON file: refused with one line, or a GPU with positive memory. */
#include "fuzz_common.h"
#include "kvsim/gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  kvsim_gpu_t g;
  kvsim_err err = {0};
  if (kvsim_gpu_parse(text, "fuzz: gpu.json", &g, &err) == KVSIM_OK && !(g.memory_total_bytes > 0))
    fuzz_fail("a GPU without memory was accepted", err.msg);
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  free(text);
  return 0;
}
