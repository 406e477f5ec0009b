/* A GPU JSON file: refused with one line, or a GPU with positive memory
 * and efficiencies in (0, 1] (borrowed ones at its measured peaks).
 * The same bytes after "default:" as kvsim validate --perf: a generation
 * default with its efficiencies in (0, 1], or one line that names the
 * catalog's generations (tests/fuzz/corpus/fuzz_gpu/perf-named-empty-
 * generation: an empty one listed none). No file is read: the spec always
 * starts with "default:". */
#include "fuzz_common.h"
#include <stdbool.h>

#include "kvsim/gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  kvsim_gpu_t g;
  kvsim_err err = {0};
  const bool have_gpu = kvsim_gpu_parse(text, "fuzz: gpu.json", &g, &err) == KVSIM_OK;
  if (have_gpu && !(g.memory_total_bytes > 0))
    fuzz_fail("a GPU without memory was accepted", err.msg);
  /* Borrowed at the file's measured peaks (hw/borrow.c) or its own. */
  if (have_gpu && !(g.perf.mfu > 0 && g.perf.mfu <= 1 && g.perf.mbu > 0 && g.perf.mbu <= 1))
    fuzz_fail("a GPU's efficiencies out of (0, 1]", g.name);
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  char spec[96], label[96];
  snprintf(spec, sizeof spec, "default:%s", text);
  kvsim_gpu_perf_t p;
  kvsim_err e2 = {0};
  if (kvsim_gpu_perf_named(spec, have_gpu ? &g : NULL, &p, label, sizeof label, &e2) == KVSIM_OK) {
    if (!(p.mbu > 0 && p.mbu <= 1 && p.mfu > 0 && p.mfu <= 1 && p.moe_efficiency > 0 && p.moe_efficiency <= 1))
      fuzz_fail("a generation default out of (0, 1]", label);
    if (p.status == KVSIM_CAL_FITTED)
      fuzz_fail("a generation default labelled fitted", label);
  } else if (!strstr(e2.msg, "hopper") || strchr(e2.msg, '\n')) {
    fuzz_fail("an unknown generation's error does not list the known ones on one line", e2.msg);
  }
  free(text);
  return 0;
}
