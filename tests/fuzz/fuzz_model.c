/* A Hugging Face config.json, then the memory plan on an H100 at two TP
 * degrees: whatever the file says, the loader and the plan either refuse
 * it with one line or give a plan whose numbers are not negative. */
#include "fuzz_common.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  static kvsim_gpu_t gpu;
  static int have_gpu;
  kvsim_err err = {0};
  if (!have_gpu)
    have_gpu = kvsim_gpu_load("h100-sxm", &gpu, &err) == KVSIM_OK;
  kvsim_model_t m;
  if (kvsim_model_parse(text, "fuzz", "fuzz: config.json", &m, &err) == KVSIM_OK && have_gpu) {
    kvsim_model_params_t pc;
    kvsim_model_count_params(&m, &pc);
    for (int tp = 1; tp <= 2; tp++) {
      kvsim_plan_params_t p;
      kvsim_plan_params_default(&p);
      p.tp = tp;
      kvsim_plan_t pl;
      if (kvsim_plan_compute(&m, &gpu, &p, &pl, &err) == KVSIM_OK &&
          (pl.weights_bytes < 0 || pl.num_gpu_blocks < 0 || pl.per_token_kv_bytes < 0))
        fuzz_fail("a plan with negative bytes or blocks", err.msg);
    }
  }
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  free(text);
  return 0;
}
