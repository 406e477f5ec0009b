/* vLLM's LoRA adapter slots (sim/src/memory/lora.c): the stacked A and B
 * tensors create_lora_weights preallocates on every qkv_proj, o_proj,
 * gate_up_proj and down_proj (vllm/lora/layers), written out here by hand
 * for Llama-3.1-8B (hidden 4096, 32 q heads and 8 KV heads of 128,
 * intermediate 14336, 32 layers, bf16), and their place in the plan. */
#include <criterion/criterion.h>

#include <string.h>

#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

static kvsim_plan_t plan_of(const char *mname, kvsim_plan_params_t *p, kvsim_err *err, int *rc) {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err e = {0};
  cr_assert_eq(kvsim_model_load(mname, &m, &e), KVSIM_OK, "model: %s", e.msg);
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &e), KVSIM_OK, "gpu: %s", e.msg);
  kvsim_plan_t pl;
  *rc = kvsim_plan_compute(&m, &g, p, &pl, err);
  return pl;
}

static kvsim_plan_t plan(kvsim_plan_params_t *p) {
  kvsim_err err = {0};
  int rc;
  kvsim_plan_t pl = plan_of("llama-3.1-8b", p, &err, &rc);
  cr_assert_eq(rc, KVSIM_OK, "plan: %s", err.msg);
  return pl;
}

static kvsim_plan_params_t lora(int tp, int slots, int rank, bool sharded) {
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.tp = tp;
  p.lora = (kvsim_plan_lora_params_t){true, slots, rank, 0, sharded};
  return p;
}

/* Elements of one layer's slot at rank 16: A rows x inputs and B outputs
 * x rank of each wrapped projection. */
Test(lora, llama_8b_rank_16_one_slot_by_hand) {
  kvsim_plan_params_t p = lora(1, 0, 0, false); /* vLLM's defaults: 1 slot, rank 16 */
  kvsim_plan_t pl = plan(&p);
  int64_t qkv = 3 * 16 * 4096 + (4096 + 1024 + 1024) * 16;
  int64_t o = 16 * 4096 + 4096 * 16;
  int64_t gate_up = 2 * 16 * 4096 + 2 * 14336 * 16;
  int64_t down = 16 * 14336 + 4096 * 16;
  int64_t want = (qkv + o + gate_up + down) * 32 * 2;
  cr_assert_eq(pl.lora_bytes, want, "%lld bytes, want %lld (80 MiB)", (long long)pl.lora_bytes,
               (long long)want);
  cr_assert_eq(want, 83886080, "the hand sum is 80 MiB");
  cr_assert(pl.p.lora.max_loras == 1 && pl.p.lora.max_lora_rank == 16 &&
                pl.p.lora.max_cpu_loras == 1,
            "defaults 1 / 16 / max_loras");
}

Test(lora, tp_splits_the_column_outputs_and_the_row_inputs) {
  kvsim_plan_params_t p = lora(2, 1, 16, false);
  kvsim_plan_t pl = plan(&p);
  int64_t per_layer = 3 * 16 * 4096 + (2048 + 512 + 512) * 16 /* qkv */
                      + 16 * 2048 + 4096 * 16                 /* o: A over q/2, B whole */
                      + 2 * 16 * 4096 + 2 * 7168 * 16         /* gate_up */
                      + 16 * 7168 + 4096 * 16;                /* down */
  cr_assert_eq(pl.lora_bytes, per_layer * 32 * 2, "TP 2: %lld", (long long)pl.lora_bytes);
  p = lora(2, 1, 16, true);
  pl = plan(&p);
  int64_t sharded = 3 * 8 * 4096 + (2048 + 512 + 512) * 16 + 16 * 2048 + 2048 * 16 +
                    2 * 8 * 4096 + 2 * 7168 * 16 + 16 * 7168 + 2048 * 16;
  cr_assert_eq(pl.lora_bytes, sharded * 32 * 2, "fully sharded: %lld", (long long)pl.lora_bytes);
}

Test(lora, slots_and_rank_scale_linearly_and_come_out_of_the_pool) {
  kvsim_plan_params_t base;
  kvsim_plan_params_default(&base);
  kvsim_plan_t off = plan(&base);
  cr_assert_eq(off.lora_bytes, 0, "off: no slots");
  kvsim_plan_params_t p = lora(1, 4, 64, false);
  kvsim_plan_t on = plan(&p);
  cr_assert_eq(on.lora_bytes, 16 * 83886080LL, "4 slots x rank 64 = 16 x the rank-16 slot");
  cr_assert_eq(on.weights_bytes - off.weights_bytes, on.lora_bytes, "counted with the weights");
  cr_assert_eq(off.available_kv_bytes - on.available_kv_bytes, on.lora_bytes,
               "the KV budget shrinks by exactly the slots");
  /* A measured "Model loading took" already holds the slots. */
  p.weights_gib = 16;
  base.weights_gib = 16;
  cr_assert_eq(plan(&p).weights_bytes, plan(&base).weights_bytes, "measured weights: as given");
}

Test(lora, vllm_rules_refused_with_the_flag) {
  const struct {
    const char *model;
    kvsim_plan_params_t p;
    const char *says;
  } bad[] = {
      {"llama-3.1-8b", lora(1, 1, 24, false), "--max-lora-rank"},
      {"llama-3.1-8b", lora(2, 1, 1, true), "--fully-sharded-loras"},
      {"qwen3-30b-a3b", lora(1, 1, 16, false), "MoE"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_plan_params_t p = bad[i].p;
    kvsim_err err = {0};
    int rc;
    plan_of(bad[i].model, &p, &err, &rc);
    cr_assert_eq(rc, KVSIM_EINVAL, "%s refused", bad[i].says);
    cr_assert(strstr(err.msg, bad[i].says), "names %s: %s", bad[i].says, err.msg);
  }
  kvsim_plan_params_t p = lora(1, 4, 16, false);
  p.lora.max_cpu_loras = 2;
  kvsim_err err = {0};
  int rc;
  plan_of("llama-3.1-8b", &p, &err, &rc);
  cr_assert(rc == KVSIM_EINVAL && strstr(err.msg, "--max-cpu-loras"), "cpu < gpu slots: %s", err.msg);
  p = lora(1, 4, 16, false);
  p.lora.enable = false;
  plan_of("llama-3.1-8b", &p, &err, &rc);
  cr_assert(rc == KVSIM_EINVAL && strstr(err.msg, "--enable-lora"), "slots without LoRA: %s",
            err.msg);
  p = lora(1, 1, 16, false);
  p.engine = KVSIM_PLAN_SGLANG;
  plan_of("llama-3.1-8b", &p, &err, &rc);
  cr_assert(rc == KVSIM_EINVAL && strstr(err.msg, "sglang"), "other engines: %s", err.msg);
}
