/* SGLang's pool sizing (plan_sglang.c): the cell size per token (GQA, TP
 * replication, MLA), profile_max_num_token's formula on measured "avail
 * mem" figures, --max-total-tokens and page rounding, max_running_requests,
 * the automatic mem_fraction_static, and the logged K/V sizes. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

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

static kvsim_plan_params_t sgl(int tp, double mfs) {
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_SGLANG;
  p.tp = tp;
  p.sglang.mem_fraction_static = mfs;
  return p;
}

static kvsim_plan_t plan(const char *mname, const char *gname, const kvsim_plan_params_t *p) {
  kvsim_model_t m = model(mname);
  kvsim_gpu_t g = gpu(gname);
  kvsim_plan_t pl;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_plan_compute(&m, &g, p, &pl, &err), KVSIM_OK, "plan: %s", err.msg);
  return pl;
}

Test(plan_sglang, qwen3_235b_cell_is_24064_bytes_of_k_per_rank) {
  /* 94 layers x max(1, 4 // 4) KV head x 128 x 2 bytes: the vllm#21348
   * log's "K size: 8.23 GB" for "#tokens: 367404". */
  kvsim_plan_params_t p = sgl(4, 0.95); /* a predicted pool above the log's, then capped */
  snprintf(p.quantization, sizeof p.quantization, "fp8");
  p.sglang.max_total_tokens = 367404;
  kvsim_plan_t pl = plan("qwen3-235b-a22b", "h100-sxm", &p);
  cr_assert_eq(pl.sglang.cell_size, 2 * 24064, "K + V cell: %lld", (long long)pl.sglang.cell_size);
  cr_assert_eq(pl.sglang.max_total_num_tokens, 367404, "capped pool");
  cr_assert_eq(pl.kv_cache_tokens, 367404, "kv_cache_tokens is max_total_num_tokens");
  /* (size + page_size) x 24,064 bytes, in GiB to two decimals. */
  cr_assert_eq(pl.sglang.k_size_bytes, (int64_t)367405 * 24064, "K buffer bytes");
  cr_assert(fabs((double)pl.sglang.k_size_bytes / (1 << 30) - 8.23) < 0.005, "8.23 GB of K");
  cr_assert_eq(pl.sglang.v_size_bytes, pl.sglang.k_size_bytes, "V as K");
}

Test(plan_sglang, measured_avail_mem_gives_the_formula) {
  /* rest = after - before x (1 - mfs); tokens = int(rest x 2^30) // cell. */
  kvsim_plan_params_t p = sgl(1, 0.85);
  p.sglang.avail_gib_before_load = 78.5;
  p.sglang.avail_gib_after_load = 63.2;
  kvsim_plan_t pl = plan("llama-3.1-8b", "h100-sxm", &p);
  double rest = 63.2 - 78.5 * (1 - 0.85);
  int64_t want = (int64_t)trunc(rest * 1073741824.0) / 131072;
  cr_assert_eq(pl.sglang.cell_size, 131072, "32 x 8 x 128 x 2 x 2 bytes");
  cr_assert_eq(pl.sglang.max_total_num_tokens, want, "tokens %lld, want %lld",
               (long long)pl.sglang.max_total_num_tokens, (long long)want);
  cr_assert(fabs(pl.sglang.rest_gib - rest) < 1e-9, "rest_memory");
  /* max_num_reqs = min(max(int(T / 131072 x 512), 2048), 4096) = 2048;
   * max_running_requests = min(T // 2, that). */
  cr_assert_eq(pl.sglang.req_to_token_size, 2048, "req_to_token pool");
  cr_assert_eq(pl.sglang.max_running_requests, 2048, "max_running_requests");
  cr_assert_eq(pl.p.max_num_seqs, 2048, "the scheduler's limit");
}

Test(plan_sglang, page_rounding_and_user_limits) {
  kvsim_plan_params_t p = sgl(1, 0.85);
  p.sglang.avail_gib_before_load = 78.5;
  p.sglang.avail_gib_after_load = 63.2;
  p.block_size = 64;
  p.sglang.max_running_requests = 100;
  kvsim_plan_t pl = plan("llama-3.1-8b", "h100-sxm", &p);
  cr_assert_eq(pl.sglang.max_total_num_tokens % 64, 0, "whole pages");
  cr_assert(pl.sglang.profiled_tokens - pl.sglang.max_total_num_tokens < 64, "rounded down");
  cr_assert_eq(pl.num_gpu_blocks, pl.sglang.max_total_num_tokens / 64, "pages");
  cr_assert_eq(pl.sglang.max_running_requests, 100, "user's max_running_requests");
  cr_assert_eq(pl.sglang.req_to_token_size, 100, "req_to_token pool of the user's size");
}

Test(plan_sglang, mla_cell_is_the_latent_on_every_rank) {
  kvsim_plan_params_t p = sgl(8, 0.8);
  snprintf(p.quantization, sizeof p.quantization, "fp8");
  kvsim_plan_t pl = plan("deepseek-v3", "h200", &p);
  /* (kv_lora_rank 512 + qk_rope_head_dim 64) x 61 layers x 2 bytes. */
  cr_assert_eq(pl.sglang.cell_size, 576 * 61 * 2, "MLA cell %lld", (long long)pl.sglang.cell_size);
  cr_assert_eq(pl.sglang.v_size_bytes, 0, "one latent buffer");
}

Test(plan_sglang, tp_beyond_kv_heads_replicates_them) {
  /* Llama-3.1-70B: 8 KV heads; TP 16 keeps 1 head per rank. */
  kvsim_plan_params_t p = sgl(16, 0.9);
  kvsim_plan_t pl = plan("llama-3.1-70b", "h100-sxm", &p);
  cr_assert_eq(pl.kv_heads_per_rank, 1, "max(1, 8 // 16)");
  cr_assert_eq(pl.sglang.cell_size, 80 * 1 * 256 * 2, "80 layers x 1 head x (128 + 128) x 2");
}

Test(plan_sglang, automatic_fraction_by_gpu_memory) {
  int64_t chunk = 0, bs = 0;
  double reserved = 0;
  /* 80 GB class at TP 1: 512 + 1.5 x 8192 + 2 x 256 + 1024 / 8 = 13440 MB. */
  double f = kvsim_plan_sglang_auto_fraction(81106, 1, 1, &chunk, 16384, &bs, &reserved);
  cr_assert_eq(chunk, 8192, "chunked_prefill_size");
  cr_assert_eq(bs, 256, "cuda_graph_max_bs");
  cr_assert(fabs(reserved - 13440) < 1e-9, "reserve %g", reserved);
  cr_assert(fabs(f - 0.834) < 1e-9, "round((81106 - 13440) / 81106, 3) = %g", f);
  /* A 24 GB card: no 10 GB floor, 2048-token chunks. */
  chunk = 0;
  f = kvsim_plan_sglang_auto_fraction(24000, 2, 1, &chunk, 16384, &bs, &reserved);
  cr_assert_eq(chunk, 2048, "chunk on 24 GB");
  cr_assert(fabs(reserved - (512 + 3072 + 48 + 256)) < 1e-9, "reserve %g", reserved);
  /* Chunking off: max_prefill_tokens stands in. */
  chunk = -1;
  kvsim_plan_sglang_auto_fraction(24000, 1, 1, &chunk, 32768, &bs, &reserved);
  cr_assert_eq(chunk, -1, "kept off");
  cr_assert(fabs(reserved - (512 + 1.5 * 32768 + 48 + 128)) < 1e-9, "reserve %g", reserved);
}

Test(plan_sglang, not_enough_memory_is_the_engines_error) {
  kvsim_plan_params_t p = sgl(1, 0.15);
  kvsim_plan_t pl = plan("llama-3.1-8b", "h100-sxm", &p);
  cr_assert(!pl.fits, "0.15 of free memory does not hold 15 GiB of weights");
  cr_assert(strstr(pl.error, "Not enough memory") != NULL, "error: %s", pl.error);
  cr_assert_eq(pl.kv_cache_tokens, 0, "no pool");
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  char advice[512];
  kvsim_plan_advice(&m, &g, &pl, advice, sizeof advice);
  cr_assert(strstr(advice, "mem_fraction_static 0.") != NULL, "SGLang's own knob first: %s", advice);
}

Test(plan_sglang, bad_parameters_are_errors) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_t pl;
  kvsim_err err = {0};
  kvsim_plan_params_t p = sgl(1, 1.5);
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "fraction 1.5");
  cr_assert(strstr(err.msg, "--mem-fraction-static") != NULL, "names the flag: %s", err.msg);
  p = sgl(1, 0.8);
  p.sglang.avail_gib_before_load = 70;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "one override alone");
  p.sglang.avail_gib_after_load = 75;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "after > before");
  p = sgl(1, 0.8);
  p.kv_dtype = KVSIM_KV_INT4;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "int4 KV");
  p = sgl(3, 0.8);
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "TP 3 on 32 heads");
}

Test(plan_sglang, vllm_plans_do_not_move) {
  /* The SGLang fields default to "predict" and the V1 plan ignores them. */
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  cr_assert(p.sglang.avail_gib_before_load < 0 && p.sglang.avail_gib_after_load < 0,
            "overrides default to predicted");
  kvsim_plan_t a = plan("llama-3.1-8b", "h100-sxm", &p);
  p.sglang.mem_fraction_static = 0.5;
  p.sglang.max_total_tokens = 10;
  kvsim_plan_t b = plan("llama-3.1-8b", "h100-sxm", &p);
  cr_assert_eq(a.kv_cache_tokens, b.kv_cache_tokens, "vLLM V1 ignores SGLang's parameters");
  cr_assert_eq(a.sglang.max_total_num_tokens, 0, "and fills none of SGLang's numbers");
}

/* Regression: vLLM's pool overrides were ignored without a word under the
 * sglang profile (the profiled pool ran instead). */
Test(plan_sglang, vllm_pool_overrides_are_refused_naming_the_sglang_option) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_params_t p = sgl(1, 0.85);
  p.num_gpu_blocks_override = 1000;
  kvsim_plan_t pl;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "the override is refused");
  cr_assert(strstr(err.msg, "--num-gpu-blocks-override (engine.num_gpu_blocks_override): 1000 is "
                            "vLLM's; SGLang has no such option") &&
                strstr(err.msg, "engine.max_total_tokens (--max-total-tokens"),
            "names the key, the value and the SGLang option: %s", err.msg);
  p = sgl(1, 0.85);
  p.kv_cache_memory_bytes = 1LL << 33;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "the budget is refused");
  cr_assert(strstr(err.msg, "(engine.kv_cache_memory_bytes): 8589934592 is vLLM's") &&
                strstr(err.msg, "engine.mem_fraction_static"),
            "names the key, the value and the SGLang option: %s", err.msg);
  p = sgl(1, 0.85);
  p.sglang.max_total_tokens = 16000;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_OK, "the cap works: %s", err.msg);
  cr_assert_eq(pl.sglang.max_total_num_tokens, 16000, "capped to 16000, got %lld",
               (long long)pl.sglang.max_total_num_tokens);
}

/* QwQ-32B (Qwen2.5-32B's geometry) on 4 x L4, TP 4, mem_fraction_static
 * 0.85, SGLang of March 2025 (github.com/didier-durand/llms-in-clouds
 * docs/sglang.md): "Load weight begin. avail mem=21.63 GB", "Load weight
 * end. ... avail mem=6.09 GB", "KV Cache is allocated. #tokens: 46611".
 * 64 layers x 2 KV heads x 128 x 2 x 2 bytes = 65,536 bytes per token. */
static kvsim_plan_params_t qwq_l4(void) {
  kvsim_plan_params_t p = sgl(4, 0.85);
  p.max_model_len = 131072;
  return p;
}

Test(plan_sglang, l4_tp4_log_measured_to_its_rounding) {
  kvsim_plan_params_t p = qwq_l4();
  p.sglang.avail_gib_before_load = 21.63;
  p.sglang.avail_gib_after_load = 6.09;
  kvsim_plan_t pl = plan("qwen2.5-32b", "l4", &p);
  cr_assert_eq(pl.sglang.cell_size, 65536, "cell %lld", (long long)pl.sglang.cell_size);
  /* Each logged figure is rounded to 0.005 GB: rest moves by up to
   * 0.005 x (1 + 0.15) GiB, i.e. 94 tokens. */
  double slack = 0.005 * 1.15 * 1073741824.0 / 65536;
  cr_assert_leq(fabs((double)pl.sglang.max_total_num_tokens - 46611), slack,
                "measured: %lld tokens against the log's 46,611",
                (long long)pl.sglang.max_total_num_tokens);
}

Test(plan_sglang, l4_tp4_log_predicted_within_its_spread) {
  /* Predicted: the context before the distributed init (0.50 GiB, the
   * median of SGLang's own logs) and PCIe NCCL buffers, then the weights.
   * The previous 1.08 GiB (a ktransformers log against nvidia-smi's total)
   * came out 15.9 % under the log. */
  kvsim_plan_params_t p = qwq_l4();
  kvsim_plan_t pl = plan("qwen2.5-32b", "l4", &p);
  double err = ((double)pl.sglang.max_total_num_tokens - 46611) / 46611;
  cr_assert_lt(fabs(err), 0.03, "predicted %lld tokens, %+.1f %% against 46,611",
               (long long)pl.sglang.max_total_num_tokens, 100 * err);
  cr_assert_lt(fabs(pl.sglang.avail_gib_before_load - 21.63), 0.3,
               "avail before the weights %.2f against the log's 21.63 GiB",
               pl.sglang.avail_gib_before_load);
}

Test(plan_sglang, preload_is_the_context_plus_the_nccl_share) {
  /* TP 1: no communicator, the rank has lost only the 0.50 GiB context. */
  kvsim_plan_params_t p = sgl(1, 0.85);
  kvsim_plan_t pl = plan("llama-3.1-8b", "h100-sxm", &p);
  double total = (double)pl.total_memory_bytes / 1073741824.0;
  cr_assert_float_eq(pl.sglang.avail_gib_before_load, total - 0.50, 1e-9,
                     "TP 1: %.4f of %.4f GiB", pl.sglang.avail_gib_before_load, total);
  /* TP 2 on NVLink Hopper adds the NVLS buffers, as vLLM V0 charges them. */
  p = sgl(2, 0.85);
  kvsim_plan_t pl2 = plan("llama-3.1-8b", "h100-sxm", &p);
  cr_assert_float_eq(pl.sglang.avail_gib_before_load - pl2.sglang.avail_gib_before_load, 1.79,
                     1e-6, "the NCCL share at TP 2");
}

Test(plan_sglang, automatic_fraction_reads_nvidia_smis_total) {
  /* L4 at TP 4: reserved 512 + 2048 x 1.5 + 80 x 2 + 4 / 8 x 1024 = 4,256
   * MB; of nvidia-smi's 23,034 MiB that is round(18778 / 23034, 3) = 0.815,
   * of the runtime's 22,478 MiB 0.811. */
  kvsim_plan_params_t p = sgl(4, 0);
  p.max_model_len = 131072;
  kvsim_plan_t rt = plan("qwen2.5-32b", "l4", &p);
  cr_assert_float_eq(rt.sglang.mem_fraction_static, 0.811, 1e-12, "runtime total: %.3f",
                     rt.sglang.mem_fraction_static);
  p.sglang.gpu_memory_capacity_mib = 23034;
  kvsim_plan_t smi = plan("qwen2.5-32b", "l4", &p);
  cr_assert_float_eq(smi.sglang.reserved_mb, 4256, 1e-9, "reserve");
  cr_assert_float_eq(smi.sglang.mem_fraction_static, 0.815, 1e-12, "nvidia-smi total: %.3f",
                     smi.sglang.mem_fraction_static);
  cr_assert_gt(smi.sglang.max_total_num_tokens, rt.sglang.max_total_num_tokens,
               "a larger fraction, a larger pool");
  p.sglang.gpu_memory_capacity_mib = NAN;
  kvsim_model_t m = model("qwen2.5-32b");
  kvsim_gpu_t g = gpu("l4");
  kvsim_err err = {0};
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &rt, &err), KVSIM_EINVAL, "NaN is refused");
  cr_assert(strstr(err.msg, "gpu_memory_capacity_mib"), "names it: %s", err.msg);
}
