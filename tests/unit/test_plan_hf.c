/* HF Transformers cache classes (src/transformers/cache_utils.py
 * DynamicCache, StaticCache, QuantizedCache, offloading): the seeds'
 * 2 x B x L x T x Hkv x D x S plus what each class adds. */
#include <criterion/criterion.h>

#include <string.h>

#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

#define GIB (1024LL * 1024 * 1024)

static kvsim_plan_t plan_of(const char *name, kvsim_hf_cache c, int64_t batch, int64_t len,
                            kvsim_plan_params_t *p) {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load(name, &m, &err), KVSIM_OK, "load %s: %s", name, err.msg);
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &err), KVSIM_OK, "gpu: %s", err.msg);
  p->engine = KVSIM_PLAN_HF;
  p->hf.cache = c;
  p->hf.batch = batch;
  p->hf.max_cache_len = len;
  kvsim_plan_t pl;
  cr_assert_eq(kvsim_plan_compute(&m, &g, p, &pl, &err), KVSIM_OK, "plan: %s", err.msg);
  return pl;
}

static kvsim_plan_t plan(const char *name, kvsim_hf_cache c, int64_t batch, int64_t len) {
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  return plan_of(name, c, batch, len, &p);
}

Test(plan_hf, static_cache_is_the_seeds_formula) {
  kvsim_plan_t pl = plan("llama-3.1-8b", KVSIM_HF_STATIC, 8, 8192);
  int64_t want = 2LL * 8 * 32 * 8192 * 8 * 128 * 2;
  cr_assert_eq(pl.hf.kv_bytes, want, "2 x 8 x 32 x 8192 x 8 x 128 x 2 = %lld, got %lld",
               (long long)want, (long long)pl.hf.kv_bytes);
  cr_assert_eq(pl.hf.kv_bytes, 8 * GIB, "8 GiB at batch 8 x 8,192");
  cr_assert_eq(pl.hf.gpu_bytes, want, "all of it on the GPU");
  cr_assert_eq(pl.hf.scale_bytes + pl.hf.residual_bytes + pl.hf.host_bytes, 0, "nothing else");
  cr_assert(pl.fits, "8 GiB fit an H100 beside 16 GB of weights");
  cr_assert_eq(pl.p.max_model_len, 8192, "rows of max_cache_len");
  cr_assert_eq(pl.p.max_num_seqs, 8, "batch rows");
}

Test(plan_hf, sliding_layers_keep_their_window) {
  /* Gemma-2-9B: 42 layers, every other one a 4,096-token window. */
  kvsim_plan_t st = plan("gemma-2-9b", KVSIM_HF_STATIC, 1, 8192);
  kvsim_plan_t dy = plan("gemma-2-9b", KVSIM_HF_DYNAMIC, 1, 8192);
  int64_t per_tok_layer = 2LL * st.kv_heads_per_rank * st.head_dim * 2;
  int64_t full = 21 * 8192 * per_tok_layer;
  cr_assert_eq(st.hf.kv_bytes, full + 21 * 4096 * per_tok_layer,
               "static: min(window, len) = 4,096");
  cr_assert_eq(dy.hf.kv_bytes, full + 21 * 4095 * per_tok_layer, "dynamic: the last window - 1");
  kvsim_plan_t short_ = plan("gemma-2-9b", KVSIM_HF_DYNAMIC, 1, 1000);
  cr_assert_eq(short_.hf.kv_bytes, 42 * 1000 * per_tok_layer,
               "shorter than the window: all layers hold it");
}

Test(plan_hf, quantized_bits_scales_and_residual) {
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  kvsim_plan_t pl = plan_of("llama-3.1-8b", KVSIM_HF_QUANTIZED, 4, 4096, &p);
  int64_t elems = 2LL * 4 * 32 * 4096 * 8 * 128; /* K and V elements at T */
  cr_assert_eq(pl.hf.kv_bytes, elems / 2, "4 bits per element");
  cr_assert_eq(pl.hf.scale_bytes, elems / 64 * 2 * 2,
               "a bf16 scale and zero point per 64 elements");
  cr_assert_eq(pl.hf.residual_bytes, 2LL * 4 * 32 * 128 * 8 * 128 * 2,
               "128 residual tokens in bf16");
  cr_assert_eq(pl.residual_bytes_per_request, pl.hf.residual_bytes / 4, "per row");
  cr_assert_eq(pl.kv_scale_bytes_per_token, 32 * 2 * 8 * 2 * 2 * 2, "scale bytes per token");
  kvsim_plan_params_default(&p);
  p.hf.nbits = 2;
  p.hf.q_group_size = 32;
  p.hf.residual_length = 0;
  pl = plan_of("llama-3.1-8b", KVSIM_HF_QUANTIZED, 4, 4096, &p);
  cr_assert_eq(pl.hf.kv_bytes, elems / 4, "2 bits");
  cr_assert_eq(pl.hf.scale_bytes, elems / 32 * 4, "groups of 32");
  cr_assert_eq(pl.hf.residual_bytes, 0, "no residual");
}

Test(plan_hf, offloading_keeps_two_layers_on_the_gpu) {
  kvsim_plan_t pl = plan("llama-3.1-8b", KVSIM_HF_OFFLOADED, 8, 8192);
  int64_t layer = 2LL * 8 * 8192 * 8 * 128 * 2;
  cr_assert_eq(pl.hf.gpu_bytes, 2 * layer, "the updated and the prefetched layer");
  cr_assert_eq(pl.hf.host_bytes, 30 * layer, "the other 30 in host memory");
  cr_assert_eq(pl.num_gpu_blocks, 8 * 8192, "the run's pool: the whole batch's cache");
}

Test(plan_hf, a_batch_too_large_does_not_fit) {
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.activation_gib = 1; /* measured: the prefill's peak */
  kvsim_plan_t pl = plan_of("llama-3.1-8b", KVSIM_HF_STATIC, 64, 16384, &p);
  cr_assert(!pl.fits, "64 x 16,384 tokens are 128 GiB");
  cr_assert(strstr(pl.error, "out of memory"), "torch's words: %s", pl.error);
  int64_t per_len = 64LL * 131072; /* one more token of cache length */
  cr_assert_eq(pl.max_model_len_fit, pl.available_kv_bytes / per_len,
               "the longest cache that fits");
  cr_assert_lt(pl.max_model_len_fit, 16384, "shorter than asked");
  kvsim_plan_params_default(&p);
  p.activation_gib = 1;
  kvsim_plan_t off = plan_of("llama-3.1-8b", KVSIM_HF_OFFLOADED, 64, 16384, &p);
  cr_assert(off.fits, "offloaded, two layers (8 GiB) fit");
}

Test(plan_hf, refused_settings) {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load("llama-3.1-8b", &m, &err), KVSIM_OK, "model");
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &err), KVSIM_OK, "gpu");
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_HF;
  p.hf.cache = KVSIM_HF_QUANTIZED;
  p.hf.nbits = 3;
  kvsim_plan_t pl;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "quanto: 2 or 4 bits");
  cr_assert(strstr(err.msg, "--nbits"), "names the flag: %s", err.msg);
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_HF;
  p.tp = 2;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "one process");
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_HF;
  p.hf.max_cache_len = 1 << 20;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "past the model's context");
  /* The range named is the one checked: 0 is the default, so [0, N] (it
   * once said [1, N] while taking 0). */
  p.hf.max_cache_len = -1;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "a negative length");
  cr_assert_str_eq(err.msg,
                   "--max-cache-len (engine.max_cache_len): -1 is out of range [0, 1073741824] "
                   "(0: max_model_len, else the model's max_position_embeddings)",
                   "names the range checked");
  p.hf.max_cache_len = 0;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_OK, "0 is the default: %s",
               err.msg);
  cr_assert_eq(pl.p.hf.max_cache_len, 131072, "the model's max_position_embeddings");
  p.hf.batch = -1;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "a negative batch");
  cr_assert_str_eq(err.msg, "--batch (engine.batch): -1 is out of range [0, 1048576] (0: one row)",
                   "names the range checked");
  p.hf.batch = 0;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_OK, "0 is one row: %s", err.msg);
  cr_assert_eq(pl.p.hf.batch, 1, "one row");
  /* vLLM's pool-size override is no Transformers option. */
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_HF;
  p.kv_cache_memory_bytes = 1 << 30;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "kv_cache_memory_bytes");
  cr_assert(strstr(err.msg, "is vLLM's; hf-transformers has no such option"), "%s", err.msg);
  kvsim_hf_cache c;
  cr_assert_lt(kvsim_hf_cache_parse("sliding", &c), 0, "unknown class");
  cr_assert_eq(kvsim_hf_cache_parse("offloaded", &c), KVSIM_OK, "offloaded parses");
  cr_assert_eq(c, KVSIM_HF_OFFLOADED, "to its value");
}

Test(plan_hf, compare_engines_lists_every_engine_once) {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load("llama-3.1-8b", &m, &err), KVSIM_OK, "model");
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &err), KVSIM_OK, "gpu");
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  kvsim_plan_compare_row_t rows[8];
  int n = 0;
  cr_assert_eq(kvsim_plan_compare(&m, &g, &p, 0.9, 8192, rows, 8, &n, &err), KVSIM_OK, "%s",
               err.msg);
  int want = 0;
  for (const kvsim_plan_engine_info_t *e = kvsim_plan_engines; e->name; e++)
    want += e->compare;
  cr_assert_eq(n, want, "one row per compared engine");
  for (int i = 0; i < n; i++) {
    cr_assert_eq(rows[i].rc, KVSIM_OK, "%s: %s", rows[i].engine->name, rows[i].error);
    cr_assert_gt(rows[i].plan.kv_cache_tokens, 0, "%s has a pool", rows[i].engine->name);
    cr_assert(rows[i].settings[0], "%s names its settings", rows[i].engine->name);
    cr_assert_str_eq(kvsim_plan_engine_name(rows[i].plan.p.engine), rows[i].engine->name,
                     "names agree");
  }
  cr_assert_eq(rows[0].plan.p.engine, KVSIM_PLAN_V1, "vLLM first");
  cr_assert_float_eq(rows[0].plan.p.gpu_memory_utilization, 0.9, 1e-12, "vLLM at the fraction");
  cr_assert_eq(kvsim_plan_compare(&m, &g, &p, 1.5, 8192, rows, 8, &n, &err), KVSIM_EINVAL,
               "bad fraction");
}
