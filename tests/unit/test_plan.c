/* The memory plan: the seeds' worked numbers, the engine's sizing rules
 * (vllm/v1/worker/gpu_worker.py Worker.determine_available_memory,
 * vllm/v1/core/kv_cache_utils.py get_kv_cache_configs; V0
 * vllm/worker/worker.py Worker.determine_num_available_blocks), the
 * verdict and the reverse mode. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

#define MIB (1024LL * 1024)
#define GIB (1024LL * 1024 * 1024)

static kvsim_model_t model(const char *name) {
  kvsim_model_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load(name, &m, &err), KVSIM_OK, "load %s: %s", name, err.msg);
  return m;
}

static kvsim_gpu_t gpu(const char *name) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load(name, &g, &err), KVSIM_OK, "load %s: %s", name, err.msg);
  return g;
}

static kvsim_plan_t plan(const kvsim_model_t *m, const kvsim_gpu_t *g,
                         const kvsim_plan_params_t *p) {
  kvsim_plan_t pl;
  kvsim_err err = {0};
  int rc = kvsim_plan_compute(m, g, p, &pl, &err);
  cr_assert_eq(rc, KVSIM_OK, "plan %s on %s failed: %s", m->name, g->name, err.msg);
  return pl;
}

static kvsim_plan_params_t params(kvsim_plan_engine e, int64_t max_model_len) {
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = e;
  p.max_model_len = max_model_len;
  return p;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- the seeds' worked numbers ---- */

Test(plan_seeds, llama_8b_bytes_per_token_and_per_request) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert_eq(pl.per_token_kv_bytes, 131072, "Llama-3.1-8B bf16: 131,072 B/token, got %lld",
               (long long)pl.per_token_kv_bytes);
  cr_assert_eq(pl.block_bytes, 16 * 131072, "a 16-token block is 2 MiB, got %lld",
               (long long)pl.block_bytes);
  int64_t req = kvsim_plan_blocks_for_tokens(&pl, 4096) * pl.block_bytes;
  cr_assert_eq(req, 512 * MIB, "a 4,096-token request holds 512 MiB, got %lld", (long long)req);
  int64_t full = kvsim_plan_blocks_for_tokens(&pl, 8192) * pl.block_bytes;
  cr_assert_eq(full, GIB, "32 layers x 8 KV heads x 128 at 8,192 tokens = 1 GiB, got %lld",
               (long long)full);
}

Test(plan_seeds, query_heads_by_mistake_is_four_times) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_t right = plan(&m, &g, &p);
  /* The classic mistake: sizing the cache with the 32 query heads. */
  kvsim_model_t wrong_m = m;
  wrong_m.num_kv_heads = m.num_heads;
  kvsim_plan_t wrong = plan(&wrong_m, &g, &p);
  int64_t r = right.per_token_kv_bytes * 8192, w = wrong.per_token_kv_bytes * 8192;
  cr_assert_eq(r, GIB, "8 KV heads: 1 GiB at 8,192 tokens, got %lld", (long long)r);
  cr_assert_eq(w, 4 * GIB, "32 heads by mistake: 4 GiB, got %lld", (long long)w);
  cr_assert_eq(w / r, 4, "the mistake costs 4x");
}

Test(plan_seeds, fp8_halves_the_bytes) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_t bf16 = plan(&m, &g, &p);
  cr_assert_eq(kvsim_kv_dtype_parse("fp8_e4m3", &p.kv_dtype), KVSIM_OK, "fp8_e4m3 parses");
  kvsim_plan_t fp8 = plan(&m, &g, &p);
  cr_assert_eq(fp8.per_token_kv_bytes * 2, bf16.per_token_kv_bytes,
               "fp8 %lld B/token should be half of %lld", (long long)fp8.per_token_kv_bytes,
               (long long)bf16.per_token_kv_bytes);
  cr_assert_eq(fp8.available_kv_bytes, bf16.available_kv_bytes, "the KV dtype leaves the budget alone");
  cr_assert(fp8.num_gpu_blocks >= 2 * bf16.num_gpu_blocks, "twice the blocks (%lld vs %lld)",
            (long long)fp8.num_gpu_blocks, (long long)bf16.num_gpu_blocks);
  kvsim_kv_dtype d;
  cr_assert_lt(kvsim_kv_dtype_parse("fp7", &d), 0, "an unknown KV dtype is rejected");
}

/* ---- geometry under parallelism ---- */

Test(plan_geometry, kv_heads_split_by_tp_and_replicated_beyond) {
  kvsim_model_t m = model("llama-3.1-70b");
  kvsim_gpu_t g = gpu("h100-sxm");
  static const struct {
    int tp;
    int64_t heads;
  } want[] = {{2, 4}, {4, 2}, {8, 1}, {16, 1}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
    p.tp = want[i].tp;
    kvsim_plan_t pl = plan(&m, &g, &p);
    cr_assert_eq(pl.kv_heads_per_rank, want[i].heads, "TP %d: %lld KV heads per rank, want %lld",
                 want[i].tp, (long long)pl.kv_heads_per_rank, (long long)want[i].heads);
    cr_assert_eq(pl.per_token_kv_bytes, 80 * want[i].heads * 128 * 2 * 2,
                 "TP %d per-token bytes", want[i].tp);
  }
}

Test(plan_geometry, pp_splits_layers_and_takes_the_smallest_stage) {
  kvsim_model_t m = model("deepseek-v3");
  kvsim_gpu_t g = gpu("h200");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  p.tp = 8;
  p.pp = 4;
  kvsim_plan_t pl = plan(&m, &g, &p);
  int first, last;
  kvsim_model_pp_layers(61, 4, pl.binding_stage, &first, &last);
  cr_assert_eq(pl.num_layers, last - first, "the plan holds the binding stage's %d layers, got %d",
               last - first, pl.num_layers);
  cr_assert(pl.num_layers == 15 || pl.num_layers == 16, "61 layers over PP4 are 15 or 16 a stage");
  /* The per-token bytes are those of the binding stage's layers only. */
  cr_assert_eq(pl.per_token_kv_bytes, (int64_t)pl.num_layers * 576 * 2,
               "per-token bytes of %d layers", pl.num_layers);
}

Test(plan_geometry, mla_one_latent_and_v0_padding) {
  kvsim_model_t m = model("deepseek-v3");
  kvsim_gpu_t g = gpu("h200");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  p.tp = 8;
  kvsim_plan_t v1 = plan(&m, &g, &p);
  cr_assert_eq(v1.kv_heads_per_rank, 1, "MLA caches one latent per token");
  cr_assert_eq(v1.head_dim, 576, "kv_lora_rank + qk_rope_head_dim = 576");
  cr_assert_eq(v1.per_token_kv_bytes, 61 * 576 * 2, "V1: 61 layers x 576 x 2 B, no V; got %lld",
               (long long)v1.per_token_kv_bytes);
  cr_assert_eq(v1.p.block_size, 64, "V1 MLA on Hopper: FlashMLA forces 64-token blocks");
  kvsim_gpu_t b = gpu("b200");
  kvsim_plan_t bw = plan(&m, &b, &p);
  cr_assert_eq(bw.p.block_size, 128, "V1 MLA on Blackwell: CUTLASS_MLA forces 128");
  p.engine = KVSIM_PLAN_V0;
  kvsim_plan_t v0 = plan(&m, &g, &p);
  cr_assert_eq(v0.per_token_kv_bytes, 61 * 640 * 2,
               "V0 pads the latent to 256 bytes: 576 -> 640 bf16 elements; got %lld",
               (long long)v0.per_token_kv_bytes);
}

/* ---- hybrid allocator ---- */

Test(plan_hybrid, v1_group_counts) {
  kvsim_gpu_t g = gpu("h200");
  static const struct {
    const char *name;
    int groups, group_size;
  } want[] = {{"gpt-oss-120b", 2, 18}, {"gemma-3-27b", 7, 10}, {"gemma-2-9b", 2, 21}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_model_t m = model(want[i].name);
    kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
    kvsim_plan_t pl = plan(&m, &g, &p);
    cr_assert_eq(pl.num_groups, want[i].groups, "%s: %d KV cache groups, got %d", want[i].name,
                 want[i].groups, pl.num_groups);
    cr_assert_eq(pl.group_size, want[i].group_size, "%s: groups of %d layers, got %d",
                 want[i].name, want[i].group_size, pl.group_size);
    cr_assert_eq(pl.block_bytes, pl.page_bytes * pl.group_size,
                 "%s: a block spans one layer of each group slot", want[i].name);
    cr_assert_eq(pl.kv_cache_tokens, pl.num_gpu_blocks / pl.num_groups * pl.p.block_size,
                 "%s: tokens = blocks // groups x block_size", want[i].name);
    p.disable_hybrid_kv_cache_manager = true;
    kvsim_plan_t off = plan(&m, &g, &p);
    cr_assert_eq(off.num_groups, 1, "%s: one group with the hybrid manager off", want[i].name);
  }
}

Test(plan_hybrid, sliding_layers_hold_less_of_the_pool) {
  kvsim_model_t m = model("gpt-oss-120b");
  kvsim_gpu_t g = gpu("h200");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 131072);
  kvsim_plan_t hyb = plan(&m, &g, &p);
  p.disable_hybrid_kv_cache_manager = true;
  kvsim_plan_t off = plan(&m, &g, &p);
  double share_h = (double)kvsim_plan_blocks_for_tokens(&hyb, 131072) / (double)hyb.num_gpu_blocks;
  double share_o = (double)kvsim_plan_blocks_for_tokens(&off, 131072) / (double)off.num_gpu_blocks;
  cr_assert_lt(share_h, share_o,
               "a 131,072-token request holds %.4f of the hybrid pool but %.4f without it",
               share_h, share_o);
  cr_assert_gt(hyb.max_concurrency, off.max_concurrency,
               "hybrid concurrency %.2f should beat %.2f", hyb.max_concurrency,
               off.max_concurrency);
  /* A sliding group holds the window plus one step, plus one block. */
  int64_t want = cdiv(131072, 16) + cdiv(128 - 1 + hyb.p.max_num_batched_tokens, 16) + 1;
  cr_assert_eq(kvsim_plan_blocks_for_tokens(&hyb, 131072), want,
               "full group + sliding group blocks = %lld", (long long)want);
}

/* ---- start-up numbers per engine ---- */

Test(plan_engine, v1_tokens_and_concurrency) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 10000); /* not a multiple of 16 */
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert_eq(pl.num_gpu_blocks, pl.available_kv_bytes / pl.block_bytes,
               "blocks = floor(available / block bytes)");
  cr_assert_eq(pl.kv_cache_tokens, pl.num_gpu_blocks * 16, "V1 tokens = blocks x block_size");
  double want = (double)pl.num_gpu_blocks / (double)cdiv(10000, 16);
  cr_assert(fabs(pl.max_concurrency - want) < 1e-12,
            "V1 concurrency = blocks / cdiv(max_model_len, 16) = %.6f, got %.6f", want,
            pl.max_concurrency);
  cr_assert_eq(pl.requested_bytes, (int64_t)ceil((double)g.memory_total_bytes * 0.9),
               "V1 requested = ceil(total x utilization)");
}

Test(plan_engine, v0_concurrency_is_a_plain_ratio) {
  kvsim_model_t m = model("llama-3-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V0, 8000);
  kvsim_plan_t pl = plan(&m, &g, &p);
  double want = (double)pl.num_gpu_blocks * 16 / 8000.0;
  cr_assert(fabs(pl.max_concurrency - want) < 1e-12,
            "V0 concurrency = blocks x block_size / max_model_len = %.6f, got %.6f", want,
            pl.max_concurrency);
}

Test(plan_engine, v0_profiles_the_long_context_batch) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V0, 16384);
  kvsim_plan_t no_chunk = plan(&m, &g, &p);
  cr_assert_eq(no_chunk.p.max_num_batched_tokens, 16384,
               "V0 without chunked prefill profiles max(max_model_len, 2048) tokens");
  p.max_model_len = 8192;
  kvsim_plan_t shorter = plan(&m, &g, &p);
  cr_assert_gt(no_chunk.activation_bytes, shorter.activation_bytes,
               "the V0 activation peak grows with max_model_len");
  p.max_model_len = 65536; /* > 32000: chunked prefill on by default */
  kvsim_plan_t chunked = plan(&m, &g, &p);
  cr_assert_eq(chunked.p.enable_chunked_prefill, 1, "V0 chunks long-context models by default");
  cr_assert_eq(chunked.p.max_num_batched_tokens, 2048, "and then profiles 2048 tokens");
}

Test(plan_engine, v1_profile_batch_sets_the_activation) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_t def = plan(&m, &g, &p);
  cr_assert_eq(def.p.max_num_batched_tokens, 8192, "H100 (>= 70 GiB, not A100): 8192 tokens");
  cr_assert_eq(def.p.max_num_seqs, 1024, "and 1024 sequences");
  p.max_num_seqs = 256;
  kvsim_plan_t fewer = plan(&m, &g, &p);
  cr_assert_lt(fewer.activation_bytes, def.activation_bytes,
               "fewer dummy requests, a smaller sampler peak (%lld vs %lld)",
               (long long)fewer.activation_bytes, (long long)def.activation_bytes);
  kvsim_gpu_t a = gpu("a100-80g");
  kvsim_plan_params_t q = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_t a100 = plan(&m, &a, &q);
  cr_assert_eq(a100.p.max_num_batched_tokens, 2048, "A100 keeps the small defaults");
  cr_assert_eq(a100.p.max_num_seqs, 256, "A100: 256 sequences");
}

Test(plan_engine, kv_cache_memory_bytes_bypasses_the_budget) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  p.kv_cache_memory_bytes = 10 * GIB;
  p.gpu_memory_utilization = 0.5;
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert_eq(pl.available_kv_bytes, 10 * GIB, "available = the given bytes");
  cr_assert_eq(pl.num_gpu_blocks, 10 * GIB / (2 * MIB), "5120 blocks of 2 MiB");
  p.engine = KVSIM_PLAN_V0;
  kvsim_plan_t out;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &out, &err), KVSIM_EINVAL,
               "V0 has no --kv-cache-memory-bytes");
  cr_assert(strstr(err.msg, "--kv-cache-memory-bytes") != NULL, "names the flag: %s", err.msg);
}

Test(plan_engine, num_gpu_blocks_override) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  p.num_gpu_blocks_override = 1000;
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert_eq(pl.num_gpu_blocks, 1000, "the override sets the block count");
  cr_assert_eq(pl.kv_cache_tokens, 16000, "and the logged tokens");
  cr_assert(fabs(pl.max_concurrency - 1000.0 / 512) < 1e-12, "and the concurrency");
}

Test(plan_engine, cuda_graphs_only_where_the_engine_charges_them) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_t base = plan(&m, &g, &p);
  p.cuda_graph_gib = 1.0;
  kvsim_plan_t measured = plan(&m, &g, &p);
  cr_assert(!measured.cuda_graph_subtracted, "a measured value alone is not subtracted");
  cr_assert_eq(measured.available_kv_bytes, base.available_kv_bytes, "budget unchanged");
  cr_assert_eq(measured.cuda_graph_bytes, GIB, "but the value is reported");
  p.estimate_cudagraphs = true;
  kvsim_plan_t est = plan(&m, &g, &p);
  cr_assert(est.cuda_graph_subtracted, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS subtracts it");
  cr_assert_eq(est.available_kv_bytes, base.available_kv_bytes - GIB, "by exactly 1 GiB");
  p.engine = KVSIM_PLAN_V0;
  kvsim_plan_t out;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &out, &err), KVSIM_EINVAL,
               "V0 never charges CUDA graphs");
}

Test(plan_engine, overrides_replace_predictions) {
  /* vllm#10511: 79.22 GiB x 0.90 - 14.96 - 1.79 - 1.26 = 53.29 GiB. */
  kvsim_model_t m = model("llama-3-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V0, 0);
  p.total_memory_bytes = (int64_t)llround(79.22 * GIB);
  p.weights_gib = 14.96;
  p.non_torch_gib = 1.79;
  p.activation_gib = 1.26;
  kvsim_plan_t pl = plan(&m, &g, &p);
  double avail = (double)pl.available_kv_bytes / GIB;
  cr_assert(fabs(avail - 53.29) < 0.005, "available %.4f GiB should print as 53.29", avail);
}

/* ---- verdict ---- */

Test(plan_verdict, too_long_for_the_pool) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("rtx4090");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 131072);
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert(!pl.fits, "128k tokens of Llama-3.1-8B do not fit a 24 GB card");
  cr_assert(strstr(pl.error, "To serve at least one request with the models's max seq len (131072)") ==
                pl.error,
            "the engine's own words: %s", pl.error);
  char est[96];
  snprintf(est, sizeof est, "the estimated maximum model length is %lld.",
           (long long)pl.max_model_len_fit);
  cr_assert(strstr(pl.error, est) != NULL, "the message carries the estimate: %s", pl.error);
  cr_assert_gt(pl.max_model_len_fit, 0, "something fits");
  kvsim_plan_params_t q = p;
  q.max_model_len = pl.max_model_len_fit;
  kvsim_plan_t at = plan(&m, &g, &q);
  cr_assert(at.fits, "max_model_len_fit %lld fits", (long long)q.max_model_len);
  q.max_model_len = pl.max_model_len_fit + 1;
  kvsim_plan_t above = plan(&m, &g, &q);
  cr_assert(!above.fits, "one token more (%lld) does not", (long long)q.max_model_len);
}

Test(plan_verdict, v0_words_and_no_memory) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("rtx4090");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V0, 131072);
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert(!pl.fits, "V0: does not fit");
  cr_assert(strstr(pl.error, "is larger than the maximum number of tokens that can be stored in KV cache") !=
                NULL,
            "V0 raise_if_cache_size_invalid words: %s", pl.error);
  kvsim_model_t big = model("llama-3.1-70b");
  kvsim_gpu_t h = gpu("h100-sxm");
  kvsim_plan_params_t q = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_t none = plan(&big, &h, &q);
  cr_assert(!none.fits, "70B bf16 on one H100 does not fit");
  cr_assert(strstr(none.error, "No available memory for the cache blocks") == none.error,
            "no memory at all: %s", none.error);
}

Test(plan_verdict, invalid_parameters_are_errors) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_t out;
  kvsim_err err = {0};
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  p.gpu_memory_utilization = 1.5;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &out, &err), KVSIM_EINVAL, "utilization 1.5");
  cr_assert(strstr(err.msg, "--gpu-memory-utilization") != NULL, "names the flag: %s", err.msg);
  p.gpu_memory_utilization = 0;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &out, &err), KVSIM_EINVAL, "utilization 0");
  p = params(KVSIM_PLAN_V1, 8192);
  p.tp = 3;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &out, &err), KVSIM_EINVAL, "TP 3 of 32 heads");
  cr_assert(strstr(err.msg, "--tensor-parallel-size") != NULL, "names the flag: %s", err.msg);
}

/* ---- reverse mode ---- */

Test(plan_reverse, concurrency_times_length_to_memory) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_reverse_t r;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_plan_reverse(&m, &g, &p, 64, 8192, &r, &err), KVSIM_OK, "reverse: %s",
               err.msg);
  cr_assert_eq(r.required_kv_bytes, 64 * GIB, "64 requests x 8,192 tokens x 128 KiB = 64 GiB");
  kvsim_plan_t pl = plan(&m, &g, &p);
  int64_t other = pl.weights_bytes + pl.activation_bytes + pl.non_torch_bytes;
  int64_t want = (int64_t)ceil((double)(64 * GIB + other) / 0.9);
  cr_assert_eq(r.required_memory_bytes, want, "required total = (KV + the rest) / utilization");
  /* TP1 holds ~54 GiB of KV: not enough; TP2 needs 32 GiB a rank. */
  cr_assert_lt(pl.available_kv_bytes, 64 * GIB, "one H100 is short");
  cr_assert_eq(r.min_gpus, 2, "two H100s hold it, got %d", r.min_gpus);
  /* Two replicas of TP 1 hold half each; on a tie the smaller TP wins. */
  cr_assert_eq(r.layout_tp, 1, "layout TP, got %d", r.layout_tp);
  cr_assert_eq(r.layout_replicas, 2, "layout replicas, got %d", r.layout_replicas);
  cr_assert_eq(r.min_tp, 2, "a single replica needs TP 2, got %d", r.min_tp);
  int64_t holds = pl.available_kv_bytes / (8192 / 16 * pl.block_bytes);
  cr_assert_eq(r.per_replica, holds, "one replica holds pool / request bytes: %lld vs %lld",
               (long long)r.per_replica, (long long)holds);
  cr_assert(holds < 64 && 2 * holds >= 64, "two replicas are needed and enough (%lld)", (long long)holds);
}

/* The layout choice: the fewest GPUs over TP degrees and replicas. */
Test(plan_reverse, replicas_or_tp_whichever_needs_fewer_gpus) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("l40s");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 4000);
  kvsim_plan_reverse_t r;
  kvsim_err err = {0};
  /* One L40S holds 48 requests of 4,000 tokens: 2 replicas hold 96, TP 2 ~127. */
  cr_assert_eq(kvsim_plan_reverse(&m, &g, &p, 90, 4000, &r, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(r.per_replica >= 45 && r.per_replica < 50, 1, "one L40S holds ~48, got %lld",
               (long long)r.per_replica);
  cr_assert(r.min_gpus == 2 && r.layout_tp == 1 && r.layout_replicas == 2,
            "90 requests: 2 replicas of TP 1, got %d GPUs TP %d x %d", r.min_gpus, r.layout_tp,
            r.layout_replicas);
  cr_assert_eq(kvsim_plan_reverse(&m, &g, &p, 100, 4000, &r, &err), KVSIM_OK, "%s", err.msg);
  cr_assert(r.min_gpus == 2 && r.layout_tp == 2 && r.layout_replicas == 1,
            "100 requests: TP 2 (one copy of the weights), got %d GPUs TP %d x %d", r.min_gpus,
            r.layout_tp, r.layout_replicas);
  char buf[256];
  kvsim_plan_reverse_answer(&r, g.name, 1, 100, buf, sizeof buf);
  cr_assert(strstr(buf, "2 x l40s as TP 2") == buf, "answer sentence: %s", buf);
  /* Qwen2.5-7B's 28 heads stop TP at 4: past that, only replicas scale. */
  m = model("qwen2.5-7b");
  g = gpu("h100-sxm");
  p = params(KVSIM_PLAN_V1, 32768);
  cr_assert_eq(kvsim_plan_reverse(&m, &g, &p, 2000, 32768, &r, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(r.min_tp, -1, "no single replica holds 2,000 x 32k, got TP %d", r.min_tp);
  cr_assert(r.layout_replicas > 1 && r.min_gpus == r.layout_tp * r.layout_replicas,
            "replicas carry it: %d GPUs = TP %d x %d", r.min_gpus, r.layout_tp, r.layout_replicas);
  cr_assert_geq(r.per_replica * r.layout_replicas, 2000, "the replicas hold them all");
  cr_assert_lt(r.per_replica * (r.layout_replicas - 1), 2000, "one replica fewer does not");
}

/* seq_len 0: the longest max_model_len N requests fit in at the plan's TP. */
Test(plan_reverse, longest_length_for_a_concurrency) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 0);
  kvsim_plan_reverse_t r;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_plan_reverse(&m, &g, &p, 64, 0, &r, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_gt(r.max_seq_len, 0, "64 requests fit some length");
  cr_assert_eq(r.seq_len, r.max_seq_len, "the fields describe that length");
  kvsim_plan_reverse_t at, past;
  cr_assert_eq(kvsim_plan_reverse(&m, &g, &p, 64, r.max_seq_len, &at, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(at.min_gpus, 1, "at the answer one GPU holds them, got %d", at.min_gpus);
  cr_assert_eq(kvsim_plan_reverse(&m, &g, &p, 64, r.max_seq_len + 16, &past, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_gt(past.min_gpus, 1, "one block longer does not fit one GPU");
  /* A concurrency no length fits. */
  cr_assert_eq(kvsim_plan_reverse(&m, &g, &p, INT64_C(1) << 30, 0, &r, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(r.max_seq_len, 0, "2^30 requests fit no length, got %lld", (long long)r.max_seq_len);
}

/* ---- parameter ranges and checked arithmetic (values a fuzzer found) ---- */

/* Computes with `p` and expects KVSIM_EINVAL whose message holds `want`. */
static void expect_invalid(const kvsim_model_t *m, const kvsim_gpu_t *g,
                           const kvsim_plan_params_t *p, const char *what, const char *want) {
  kvsim_plan_t out;
  kvsim_err err = {0};
  int rc = kvsim_plan_compute(m, g, p, &out, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "%s must be refused, got %d (fits %d, blocks %lld)", what, rc,
               out.fits, (long long)out.num_gpu_blocks);
  cr_assert(strstr(err.msg, want) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, want);
}

Test(plan_ranges, every_parameter_is_range_checked_with_its_names) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  p.weights_gib = 1e10; /* was -8589934592 GiB of weights */
  expect_invalid(&m, &g, &p, "--weights-gib 1e10",
                 "--weights-gib (engine.weights_gib): 1e+10 GiB is out of range [0, 4096]");
  p = params(KVSIM_PLAN_V1, 8192);
  p.activation_gib = 1e12;
  expect_invalid(&m, &g, &p, "--activation-gib 1e12", "--activation-gib (engine.activation_gib)");
  p = params(KVSIM_PLAN_V1, 8192);
  p.non_torch_gib = 1e12;
  expect_invalid(&m, &g, &p, "--non-torch-gib 1e12", "--non-torch-gib (engine.non_torch_gib)");
  p = params(KVSIM_PLAN_V1, 8192);
  p.cuda_graph_gib = 1e12;
  expect_invalid(&m, &g, &p, "--cuda-graph-gib 1e12", "--cuda-graph-gib (engine.cuda_graph_gib)");
  p = params(KVSIM_PLAN_V1, 8192);
  p.weights_gib = NAN;
  expect_invalid(&m, &g, &p, "--weights-gib nan", "--weights-gib");
  p = params(KVSIM_PLAN_V1, 8192);
  p.num_gpu_blocks_override = INT64_MAX; /* was "GPU KV cache size: -16 tokens" */
  expect_invalid(&m, &g, &p, "--num-gpu-blocks-override INT64_MAX",
                 "--num-gpu-blocks-override (engine.num_gpu_blocks_override): "
                 "9223372036854775807 is out of range [0, 2147483647]");
  p = params(KVSIM_PLAN_V1, 8192);
  p.kv_cache_memory_bytes = INT64_MAX;
  expect_invalid(&m, &g, &p, "--kv-cache-memory-bytes INT64_MAX",
                 "--kv-cache-memory-bytes (engine.kv_cache_memory_bytes)");
  p = params(KVSIM_PLAN_V0, 8192);
  p.swap_space_gib = 1e12; /* was "CPU tier of -4398046511104 blocks" */
  expect_invalid(&m, &g, &p, "--swap-space 1e12",
                 "--swap-space (engine.swap_space): 1e+12 GiB is out of range [0, 4096]");
  p = params(KVSIM_PLAN_V1, 8192);
  p.kv_offloading_gib = 1e12;
  expect_invalid(&m, &g, &p, "--kv-offloading-size 1e12",
                 "--kv-offloading-size (engine.kv_offloading_size): 1e+12 GiB is out of range "
                 "[0, 16384]");
  p = params(KVSIM_PLAN_V1, 8192);
  p.max_num_seqs = INT64_C(1) << 40;
  expect_invalid(&m, &g, &p, "--max-num-seqs 2^40", "--max-num-seqs (engine.max_num_seqs)");
  p = params(KVSIM_PLAN_V1, 8192);
  p.max_num_batched_tokens = INT64_MAX;
  expect_invalid(&m, &g, &p, "--max-num-batched-tokens INT64_MAX",
                 "--max-num-batched-tokens (engine.max_num_batched_tokens)");
  p = params(KVSIM_PLAN_V1, INT64_MAX);
  expect_invalid(&m, &g, &p, "--max-model-len INT64_MAX",
                 "--max-model-len (engine.max_model_len): 9223372036854775807 is out of range "
                 "[0, 1073741824]");
  p = params(KVSIM_PLAN_V1, 8192);
  p.kv_dtype = KVSIM_KV_INT4;
  p.kv_residual_tokens = INT32_MAX;
  expect_invalid(&m, &g, &p, "--kv-residual-tokens 2^31", "--kv-residual-tokens");
  p = params(KVSIM_PLAN_V1, 8192);
  p.tp = 1 << 20;
  expect_invalid(&m, &g, &p, "--tensor-parallel-size 2^20",
                 "--tensor-parallel-size (hardware.tensor_parallel_size)");
}

Test(plan_ranges, gpu_memory_override_is_bounded_not_replaced) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  /* 1e5 GiB used to size a pool of ~50 M blocks (a 1.6 GB process). */
  p.total_memory_bytes = (int64_t)(1e5 * KVSIM_GIB);
  expect_invalid(&m, &g, &p, "--gpu-memory-gib 1e5",
                 "--gpu-memory-gib (hardware.gpu_memory_gib): 100000 GiB is outside [1/1024, 4096]");
  /* 1e12 GiB does not convert to bytes (llround gives a negative value):
   * it used to be silently replaced by the GPU's own memory. */
  p.total_memory_bytes = INT64_MIN;
  expect_invalid(&m, &g, &p, "an overflowed --gpu-memory-gib", "--gpu-memory-gib");
  /* The bound itself is accepted. */
  p.total_memory_bytes = KVSIM_GPU_MAX_MEMORY_BYTES;
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert_eq(pl.total_memory_bytes, KVSIM_GPU_MAX_MEMORY_BYTES, "4 TiB is kept as given");
  cr_assert_leq(pl.num_gpu_blocks, KVSIM_GPU_MAX_MEMORY_BYTES / pl.block_bytes,
                "the pool is bounded by the memory bound: %lld blocks",
                (long long)pl.num_gpu_blocks);
}

Test(plan_ranges, cpu_tiers_in_blocks) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V0, 8192);
  p.swap_space_gib = 4;
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert_eq(pl.swap_blocks, 4 * GIB / (2 * MIB), "4 GiB of 2 MiB blocks, got %lld",
               (long long)pl.swap_blocks);
  p = params(KVSIM_PLAN_V1, 8192);
  p.tp = 2;
  p.kv_offloading_gib = 16;
  pl = plan(&m, &g, &p);
  cr_assert_eq(pl.offload_blocks, 16 * GIB / (pl.block_bytes * 2),
               "the offload size is the total over the TP ranks, got %lld",
               (long long)pl.offload_blocks);
  cr_assert_eq(pl.swap_blocks, 0, "no swap space, no swap blocks");
}

/* Regression: 1e-310 GiB (or any size under one block) turned the
 * offloading connector on with a tier of 0 blocks, without a word. */
Test(plan_ranges, a_cpu_tier_smaller_than_one_block_is_an_error) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  const double tiny[] = {1e-310, 1e-6, 2.0 * MIB / GIB - 1e-9};
  for (size_t i = 0; i < sizeof tiny / sizeof *tiny; i++) {
    kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
    p.tp = 2; /* one block over two ranks: 2 x 1 MiB */
    p.kv_offloading_gib = tiny[i];
    kvsim_plan_t pl;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "%g GiB refused",
                 tiny[i]);
    cr_assert(strstr(err.msg, "--kv-offloading-size (engine.kv_offloading_size): ") &&
                  strstr(err.msg, "is smaller than the one KV block it must hold (16 tokens, "
                                  "2097152 bytes over the TP 2 x PP 1 ranks"),
              "names the key and the block: %s", err.msg);
  }
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  p.tp = 2;
  p.kv_offloading_gib = 2.0 * MIB / GIB;
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert_eq(pl.offload_blocks, 1, "exactly one block fits, got %lld",
               (long long)pl.offload_blocks);
  p.kv_offloading_gib = 0;
  pl = plan(&m, &g, &p);
  cr_assert_eq(pl.offload_blocks, 0, "0 is no tier, not an error");
}

/* Regression: a V0 swap space under one block (0.0001 GiB) gave 0 CPU
 * blocks without a word, so swap preemption found no room. It is an error
 * as a CPU offloading tier that small is; one block exactly is a tier. */
Test(plan_ranges, a_swap_space_smaller_than_one_block_is_an_error) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  const double tiny[] = {1e-310, 1e-4, 2.0 * MIB / GIB - 1e-9};
  for (size_t i = 0; i < sizeof tiny / sizeof *tiny; i++) {
    kvsim_plan_params_t p = params(KVSIM_PLAN_V0, 8192);
    p.swap_space_gib = tiny[i];
    kvsim_plan_t pl;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "%g GiB refused",
                 tiny[i]);
    cr_assert(strstr(err.msg, "--swap-space (engine.swap_space): ") &&
                  strstr(err.msg, "GiB is smaller than the one KV block it must hold (16 tokens, "
                                  "2097152 bytes per GPU, 0.00195 GiB)"),
              "names the key, the value and the block: %s", err.msg);
  }
  kvsim_plan_params_t p = params(KVSIM_PLAN_V0, 8192);
  p.swap_space_gib = 2.0 * MIB / GIB;
  kvsim_plan_t pl = plan(&m, &g, &p);
  cr_assert_eq(pl.swap_blocks, 1, "exactly one block fits, got %lld", (long long)pl.swap_blocks);
}

Test(plan_ranges, extreme_geometry_overflows_into_an_error) {
  /* Each field of this model is within its range, but one 2^30-token
   * request of it holds 2^30 x 2^14 heads x 2^14 dims x 2 x 2 bytes x 8
   * layers = 2^63 bytes: an error (or a plan that does not fit), never a
   * wrapped "fits". */
  kvsim_model_t m;
  kvsim_err err = {0};
  const char *cfg = "{\"model_type\": \"llama\", \"hidden_size\": 16384, "
                    "\"num_attention_heads\": 16384, \"num_key_value_heads\": 16384, "
                    "\"head_dim\": 16384, \"intermediate_size\": 16, \"vocab_size\": 16, "
                    "\"num_hidden_layers\": 8, \"max_position_embeddings\": 1073741824}";
  int rc = kvsim_model_parse(cfg, "wide", "wide.json", &m, &err);
  cr_assert_eq(rc, KVSIM_OK, "the model parses: %s", err.msg);
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, INT64_C(1) << 30);
  p.block_size = 4096;
  p.total_memory_bytes = KVSIM_GPU_MAX_MEMORY_BYTES;
  kvsim_plan_t pl;
  rc = kvsim_plan_compute(&m, &g, &p, &pl, &err);
  if (rc == KVSIM_OK)
    cr_assert(!pl.fits, "a 2^63-byte request cannot fit (available %lld)",
              (long long)pl.available_kv_bytes);
  else
    cr_assert(strstr(err.msg, "overflows") != NULL, "the error says why: %s", err.msg);
}

Test(plan_ranges, reverse_mode_products_are_checked) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_reverse_t r;
  kvsim_err err = {0};
  int rc = kvsim_plan_reverse(&m, &g, &p, INT64_MAX, 8192, &r, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "INT64_MAX requests must be refused, got %d", rc);
  cr_assert(strstr(err.msg, "--target-concurrency: 9223372036854775807 is out of range") != NULL,
            "message names the flag and range: %s", err.msg);
  /* 2^30 requests of 131,072 tokens x 128 KiB: 2^64 bytes, past int64. */
  rc = kvsim_plan_reverse(&m, &g, &p, INT64_C(1) << 30, 131072, &r, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "a 2^64-byte requirement must be refused, got %d (%lld)", rc,
               (long long)r.required_kv_bytes);
  cr_assert(strstr(err.msg, "overflows") != NULL, "message says why: %s", err.msg);
}

Test(plan_ranges, blocks_for_huge_token_counts_do_not_wrap) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_plan_t pl = plan(&m, &g, &p);
  int64_t b = kvsim_plan_blocks_for_tokens(&pl, INT64_MAX);
  cr_assert_eq(b, INT64_MAX / 16 + 1, "ceil(INT64_MAX / 16) without wrapping, got %lld",
               (long long)b);
}

/* vLLM picks the MLA backend by compute capability (vllm/platforms/cuda.py):
 * CUTLASS_MLA's 128 on 10.x, FlashMLA's 64 on 9.x, Triton MLA's 16 elsewhere. */
Test(plan, mla_block_size_follows_the_backend_of_the_gpu) {
  kvsim_model_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load("deepseek-v2-lite", &m, &err), KVSIM_OK, "%s", err.msg);
  const struct {
    const char *gpu;
    int block;
  } want[] = {{"l4", 16}, {"a100-80g", 16}, {"h100-sxm", 64}, {"h20", 64},
              {"b200", 128}, {"gb200", 128}, {"rtx5090", 16}, {"mi300x", 16}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_gpu_t g;
    cr_assert_eq(kvsim_gpu_load(want[i].gpu, &g, &err), KVSIM_OK, "%s", err.msg);
    kvsim_plan_params_t p;
    kvsim_plan_params_default(&p);
    p.max_model_len = 8192;
    kvsim_plan_t pl;
    cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_OK, "%s", err.msg);
    cr_assert_eq(pl.p.block_size, want[i].block, "%s: block %d, want %d", want[i].gpu,
                 pl.p.block_size, want[i].block);
  }
  /* A dense model keeps the default, and a block size given is kept. */
  kvsim_model_t dense;
  kvsim_gpu_t b200;
  cr_assert_eq(kvsim_model_load("llama-3.1-8b", &dense, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("b200", &b200, &err), KVSIM_OK, "%s", err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.max_model_len = 8192;
  kvsim_plan_t pl;
  cr_assert_eq(kvsim_plan_compute(&dense, &b200, &p, &pl, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(pl.p.block_size, 16, "dense model on b200: 16");
  p.block_size = 32;
  cr_assert_eq(kvsim_plan_compute(&m, &b200, &p, &pl, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(pl.p.block_size, 32, "a block size given is kept");
}

/* A GPU file without compute_capability takes its generation's. */
Test(plan, gpu_without_compute_capability_takes_the_generation) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  const char *text = "{\"name\": \"x\", \"generation\": \"hopper\", \"memory_total_bytes\": 85520809984,"
                     " \"hbm_bandwidth_GBps\": 3350, \"bf16_tflops\": 989}";
  cr_assert_eq(kvsim_gpu_parse(text, "x.json", &g, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_float_eq(g.compute_capability, 9.0, 1e-9, "hopper -> 9.0");
}

/* ---- engine.vllm_version: the release's sizing rules ---- */

Test(plan_version, releases_parse_with_their_suffixes) {
  const struct {
    const char *s;
    int v;
  } ok[] = {{"0.11.0", KVSIM_VLLM_VERSION(0, 11, 0)},   {"v0.6.5", KVSIM_VLLM_VERSION(0, 6, 5)},
            {"0.9", KVSIM_VLLM_VERSION(0, 9, 0)},       {"0.6.4.post1", KVSIM_VLLM_VERSION(0, 6, 4)},
            {"0.10.1rc1", KVSIM_VLLM_VERSION(0, 10, 1)}, {"0.11.0+cu128", KVSIM_VLLM_VERSION(0, 11, 0)},
            {"0.19.0", KVSIM_VLLM_VERSION(0, 19, 0)}};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    int v = -1;
    cr_assert_eq(kvsim_vllm_version_parse(ok[i].s, &v), KVSIM_OK, "'%s' parses", ok[i].s);
    cr_assert_eq(v, ok[i].v, "'%s' -> %d, want %d", ok[i].s, v, ok[i].v);
    char buf[16], again[16];
    kvsim_vllm_version_format(v, buf, sizeof buf);
    int w = -1;
    cr_assert_eq(kvsim_vllm_version_parse(buf, &w), KVSIM_OK, "formatted '%s' parses", buf);
    kvsim_vllm_version_format(w, again, sizeof again);
    cr_assert_str_eq(buf, again, "format round-trips");
  }
  const char *bad[] = {"", "abc", "0", "0.", ".6.4", "0,6,4", "100.0.0", "0.100.0", "~0.6.5", "0.6.4 ",
                       "0.6.123"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int v = 0;
    cr_assert_eq(kvsim_vllm_version_parse(bad[i], &v), KVSIM_EINVAL, "'%s' refused", bad[i]);
  }
  kvsim_err err = {0};
  int v;
  cr_assert_eq(kvsim_plan_parse_version("0.x", "engine.vllm_version", &v, &err), KVSIM_EINVAL, "refused");
  cr_assert(strstr(err.msg, "engine.vllm_version: '0.x'") && strstr(err.msg, "0.8.0 to 0.20.x") &&
                strstr(err.msg, "0.6.4 to 0.10.x"),
            "names the key, the value and the modelled releases: %s", err.msg);
}

/* The non-torch term by release (vllm#9352, #10511, #19312, #25359): at TP 2
 * on H100 the NCCL buffers (1.79 GiB) are charged before V1 0.11, the
 * CUDA context (0.44 - 0.18 GiB) only where everything outside PyTorch is
 * (V0 0.6.4, V1 0.8.0-0.9.1). The KV budget moves by exactly that. */
Test(plan_version, non_torch_by_release) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  const struct {
    kvsim_plan_engine e;
    int v;
    double gib;
  } want[] = {{KVSIM_PLAN_V1, 0, 0.18},
              {KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(0, 20, 0), 0.18},
              {KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(0, 11, 0), 0.18},
              {KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(0, 10, 1), 0.18 + 1.79},
              {KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(0, 9, 2), 0.18 + 1.79},
              {KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(0, 9, 1), 0.44 + 1.79},
              {KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(0, 8, 0), 0.44 + 1.79},
              {KVSIM_PLAN_V0, 0, 0.18 + 1.79},
              {KVSIM_PLAN_V0, KVSIM_VLLM_VERSION(0, 6, 5), 0.18 + 1.79},
              {KVSIM_PLAN_V0, KVSIM_VLLM_VERSION(0, 6, 4), 0.44 + 1.79}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_plan_params_t p = params(want[i].e, 8192);
    p.tp = 2;
    p.vllm_version = want[i].v;
    kvsim_plan_t pl = plan(&m, &g, &p);
    int64_t expect = (int64_t)(want[i].gib * GIB + 0.5);
    cr_assert_eq(pl.non_torch_bytes, expect, "row %zu: non-torch %lld, want %lld", i,
                 (long long)pl.non_torch_bytes, (long long)expect);
    cr_assert(kvsim_plan_version_rules(want[i].e, pl.p.vllm_version) != NULL,
              "row %zu: resolved release %d is modelled", i, pl.p.vllm_version);
    kvsim_plan_params_t q = params(want[i].e, 8192);
    q.tp = 2;
    q.non_torch_gib = 0;
    q.vllm_version = want[i].v;
    kvsim_plan_t base = plan(&m, &g, &q);
    cr_assert_eq(base.available_kv_bytes - pl.available_kv_bytes, expect,
                 "row %zu: the budget shrinks by the non-torch term", i);
  }
  /* The default is the newest release modelled, resolved into the plan. */
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  cr_assert_eq(plan(&m, &g, &p).p.vllm_version, KVSIM_VLLM_VERSION(0, 20, 0), "V1 default 0.20.0");
  p = params(KVSIM_PLAN_V0, 8192);
  cr_assert_eq(plan(&m, &g, &p).p.vllm_version, KVSIM_VLLM_VERSION(0, 10, 0), "V0 default 0.10.0");
  /* TP 1: no communicator, only the context differs. */
  p = params(KVSIM_PLAN_V1, 8192);
  p.vllm_version = KVSIM_VLLM_VERSION(0, 9, 0);
  cr_assert_eq(plan(&m, &g, &p).non_torch_bytes, (int64_t)(0.44 * GIB + 0.5), "0.9.0 at TP 1");
}

Test(plan_version, unmodelled_releases_are_errors_naming_flag_key_and_range) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  const struct {
    kvsim_plan_engine e;
    int v;
    const char *range, *why;
  } bad[] = {{KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(0, 7, 3), "0.8.0 to 0.20.x", NULL},
             {KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(0, 21, 0), "0.8.0 to 0.20.x", "CUDA-graph estimate"},
             {KVSIM_PLAN_V1, KVSIM_VLLM_VERSION(1, 0, 0), "0.8.0 to 0.20.x", "CUDA-graph estimate"},
             {KVSIM_PLAN_V0, KVSIM_VLLM_VERSION(0, 6, 3), "0.6.4 to 0.10.x", NULL},
             {KVSIM_PLAN_V0, KVSIM_VLLM_VERSION(0, 11, 0), "0.6.4 to 0.10.x", "removed in 0.11"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_plan_params_t p = params(bad[i].e, 8192);
    p.vllm_version = bad[i].v;
    kvsim_plan_t pl;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "row %zu refused", i);
    cr_assert(strstr(err.msg, "--vllm-version (engine.vllm_version)") && strstr(err.msg, bad[i].range),
              "row %zu names flag, key and range: %s", i, err.msg);
    cr_assert(!bad[i].why || strstr(err.msg, bad[i].why), "row %zu says why: %s", i, err.msg);
    cr_assert_null(kvsim_plan_version_rules(bad[i].e, bad[i].v), "row %zu has no rules", i);
  }
}

/* ---- checkpoints named by their HF id ---- */

/* The weights a checkpoint id implies: the embedding and lm_head stay in
 * the model dtype (vLLM quantizes LinearBase layers only), every other
 * weight takes the quantized layout's bytes. */
static double expected_weights(const char *name, double bytes_per_linear_param) {
  kvsim_model_t m = model(name);
  kvsim_model_params_t pp;
  kvsim_model_count_params(&m, &pp);
  double embed = (double)pp.embedding + (double)pp.lm_head;
  return embed * m.dtype_bytes + ((double)pp.total - embed) * bytes_per_linear_param;
}

Test(plan_checkpoint, awq_and_fp8_ids_plan_their_quantized_weights) {
  kvsim_gpu_t l40s = gpu("l40s");
  kvsim_plan_params_t p = params(KVSIM_PLAN_V1, 8192);
  kvsim_model_t awq = model("Qwen/Qwen2.5-32B-Instruct-AWQ");
  kvsim_plan_t pl = plan(&awq, &l40s, &p);
  /* AWQ group 128: 4-bit weights, a float16 scale and a 4-bit zero per
   * group (awq.py AWQLinearMethod.create_weights) = 0.5 + 2.5 / 128. */
  double want = expected_weights("qwen2.5-32b", 0.5 + 2.5 / 128);
  cr_assert(fabs((double)pl.weights_bytes - want) < 0.01 * want,
            "Qwen2.5-32B-Instruct-AWQ weights %.3f GB, want ~%.3f GB (about 19)",
            pl.weights_bytes / 1e9, want / 1e9);
  cr_assert(pl.fits, "the AWQ checkpoint fits an L40S at 8k: %s", pl.error);

  kvsim_model_t fp8 = model("meta-llama/Llama-3.1-8B-Instruct-FP8");
  kvsim_gpu_t h100 = gpu("h100-sxm");
  pl = plan(&fp8, &h100, &p);
  want = expected_weights("llama-3.1-8b", 1.0);
  cr_assert(fabs((double)pl.weights_bytes - want) < 0.01 * want,
            "Llama-3.1-8B-Instruct-FP8 weights %.3f GiB, want ~%.3f GiB",
            (double)pl.weights_bytes / GIB, want / GIB);
}
