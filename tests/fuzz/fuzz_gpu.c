/* A GPU JSON file: refused with one line, or a GPU with positive memory
 * whose kernel profile loads (its own tables or a neighbour's, named in
 * "perf.kernels" or chosen by its compute capability) and whose step-time
 * model composes a finite, positive step. The same bytes as a kernel
 * profile name (kvsim validate --perf): a profile, or one line naming
 * why not. */
#include "fuzz_common.h"
#include <math.h>
#include <stdbool.h>

#include "kvsim/gpu.h"
#include "kvsim/kernels.h"

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
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  if (have_gpu) {
    /* Its profile loads (a name the parser accepted is a catalog one or
     * a path: a path may not exist, and says so in one line). */
    const kvsim_kernels_t *k;
    kvsim_err e = {0};
    if (kvsim_kernels_get(g.perf.kernels, &k, &e) == KVSIM_OK) {
      if (!(kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, 8, 4096, 4096) > 0))
        fuzz_fail("a profile's GEMM is not positive", g.perf.kernels);
    } else if (strchr(e.msg, '\n') || !e.msg[0]) {
      fuzz_fail("a profile that does not load says so on one line", e.msg);
    }
    double t, d;
    kvsim_gpu_band(&g.perf, &t, &d);
    if (!(t > 0 && d > 0 && isfinite(t) && isfinite(d)))
      fuzz_fail("a band that is not positive", g.name);
  }
  /* The bytes as a profile name for another GPU. */
  kvsim_gpu_t probe;
  memset(&probe, 0, sizeof probe);
  kvsim_err e2 = {0};
  char name[96];
  snprintf(name, sizeof name, "%s", text);
  if (kvsim_gpu_use_kernels(&probe, name, &e2) < 0 && (strchr(e2.msg, '\n') || !e2.msg[0]))
    fuzz_fail("an unknown profile's error is not one line", e2.msg);
  free(text);
  return 0;
}
