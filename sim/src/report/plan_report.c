#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"
#include "kvsim/report.h"
#include "kvsim/spec.h"

/* The engine's own names beside the common keys (kv_cache_tokens is
 * TGI's max_batch_total_tokens; HF's cache bytes by part). */
static void engine_json(const kvsim_plan_t *pl, cJSON *o) {
  if (pl->p.engine == KVSIM_PLAN_TGI) {
    const kvsim_plan_tgi_t *t = &pl->tgi;
    char ver[16];
    kvsim_tgi_release_format(pl->p.tgi.version_major, pl->p.tgi.version_minor,
                             pl->p.tgi.version_patch, ver, sizeof ver);
    cJSON_AddStringToObject(o, "tgi_version", ver);
    cJSON_AddStringToObject(o, "attention", kvsim_tgi_attention_name(pl->p.tgi.attention));
    cJSON_AddNumberToObject(o, "cuda_memory_fraction", pl->p.tgi.cuda_memory_fraction);
    cJSON_AddNumberToObject(o, "wiggle_room", t->wiggle_room);
    cJSON_AddNumberToObject(o, "num_shard", pl->p.tp);
    cJSON_AddNumberToObject(o, "kv_cache_blocks", (double)t->num_blocks);
    cJSON_AddNumberToObject(o, "max_batch_total_tokens", (double)t->max_batch_total_tokens);
    cJSON_AddNumberToObject(o, "max_total_tokens", (double)t->max_total_tokens);
    cJSON_AddNumberToObject(o, "max_input_tokens", (double)t->max_input_tokens);
    cJSON_AddNumberToObject(o, "max_batch_prefill_tokens", (double)t->max_batch_prefill_tokens);
    cJSON_AddNumberToObject(o, "warmup_blocks", (double)t->warmup_blocks);
    if (t->room_on_free) { /* TGI 2.x: what its warmup charges beyond 3.x's */
      cJSON_AddNumberToObject(o, "warmup_requests", (double)t->warmup_requests);
      cJSON_AddNumberToObject(o, "prefill_logits_bytes", (double)t->prefill_logits_bytes);
    }
    cJSON_AddBoolToObject(o, "prefix_caching", t->prefix_caching);
  } else if (pl->p.engine == KVSIM_PLAN_HF) {
    const kvsim_plan_hf_params_t *h = &pl->p.hf;
    cJSON_AddStringToObject(o, "cache", kvsim_hf_cache_name(h->cache));
    cJSON_AddNumberToObject(o, "batch", (double)h->batch);
    cJSON_AddNumberToObject(o, "max_cache_len", (double)h->max_cache_len);
    if (h->cache == KVSIM_HF_QUANTIZED) {
      cJSON_AddNumberToObject(o, "nbits", h->nbits);
      cJSON_AddNumberToObject(o, "q_group_size", h->q_group_size);
      cJSON_AddNumberToObject(o, "residual_length", h->residual_length);
    }
    cJSON_AddNumberToObject(o, "cache_kv_bytes", (double)pl->hf.kv_bytes);
    cJSON_AddNumberToObject(o, "cache_scale_bytes", (double)pl->hf.scale_bytes);
    cJSON_AddNumberToObject(o, "cache_residual_bytes", (double)pl->hf.residual_bytes);
    cJSON_AddNumberToObject(o, "cache_gpu_bytes", (double)pl->hf.gpu_bytes);
    cJSON_AddNumberToObject(o, "cache_host_bytes", (double)pl->hf.host_bytes);
  }
}

void kvsim_report_plan_json(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g,
                            cJSON *o) {
  const kvsim_plan_params_t *p = &pl->p;
  kvsim_model_params_t mp;
  kvsim_model_count_params(m, &mp);
  cJSON_AddStringToObject(o, "model", m->name);
  cJSON_AddStringToObject(o, "gpu", g->name);
  cJSON_AddStringToObject(o, "engine", kvsim_plan_engine_name(p->engine));
  cJSON_AddNumberToObject(o, "tensor_parallel_size", p->tp);
  cJSON_AddNumberToObject(o, "pipeline_parallel_size", p->pp);
  cJSON_AddNumberToObject(o, "gpu_memory_utilization", p->gpu_memory_utilization);
  cJSON_AddNumberToObject(o, "max_model_len", (double)p->max_model_len);
  cJSON_AddNumberToObject(o, "block_size", p->block_size);
  cJSON_AddStringToObject(o, "kv_cache_dtype", kvsim_kv_dtype_name(p->kv_dtype));
  cJSON_AddNumberToObject(o, "max_num_batched_tokens", (double)p->max_num_batched_tokens);
  cJSON_AddNumberToObject(o, "max_num_seqs", (double)p->max_num_seqs);
  cJSON_AddNumberToObject(o, "params_total", (double)mp.total);
  cJSON_AddNumberToObject(o, "params_active", (double)mp.active);
  cJSON_AddNumberToObject(o, "num_layers", pl->num_layers);
  cJSON_AddNumberToObject(o, "kv_heads_per_rank", (double)pl->kv_heads_per_rank);
  cJSON_AddNumberToObject(o, "head_dim", (double)pl->head_dim);
  cJSON_AddNumberToObject(o, "kv_bytes_per_element", pl->kv_bytes_per_element);
  cJSON_AddNumberToObject(o, "per_token_kv_bytes", (double)pl->per_token_kv_bytes);
  cJSON_AddNumberToObject(o, "block_bytes", (double)pl->block_bytes);
  cJSON_AddNumberToObject(o, "num_kv_cache_groups", pl->num_groups);
  cJSON_AddNumberToObject(o, "total_memory_bytes", (double)pl->total_memory_bytes);
  cJSON_AddNumberToObject(o, "requested_bytes", (double)pl->requested_bytes);
  cJSON_AddNumberToObject(o, "weights_bytes", (double)pl->weights_bytes);
  if (pl->p.spec.method != KVSIM_SPEC_NONE) { /* only then: other plans' JSON is unchanged */
    cJSON_AddStringToObject(o, "speculative_method", kvsim_spec_method_name(pl->p.spec.method));
    cJSON_AddNumberToObject(o, "num_speculative_tokens", pl->p.spec.num_speculative_tokens);
    cJSON_AddNumberToObject(o, "spec_weights_bytes", (double)pl->spec_weights_bytes);
    cJSON_AddNumberToObject(o, "spec_draft_layers", pl->spec_draft_layers);
    cJSON_AddNumberToObject(o, "spec_kv_bytes_per_token", (double)pl->spec_per_token_bytes);
    cJSON_AddNumberToObject(o, "num_lookahead_tokens", pl->num_lookahead_tokens);
  }
  if (pl->p.lora.enable) { /* only then, so that other plans' JSON is unchanged */
    cJSON_AddNumberToObject(o, "lora_bytes", (double)pl->lora_bytes);
    cJSON_AddNumberToObject(o, "max_loras", pl->p.lora.max_loras);
    cJSON_AddNumberToObject(o, "max_lora_rank", pl->p.lora.max_lora_rank);
    cJSON_AddNumberToObject(o, "max_cpu_loras", pl->p.lora.max_cpu_loras);
    cJSON_AddBoolToObject(o, "fully_sharded_loras", pl->p.lora.fully_sharded);
  }
  cJSON_AddNumberToObject(o, "activation_bytes", (double)pl->activation_bytes);
  cJSON_AddNumberToObject(o, "non_torch_bytes", (double)pl->non_torch_bytes);
  cJSON_AddNumberToObject(o, "cuda_graph_bytes", (double)pl->cuda_graph_bytes);
  cJSON_AddBoolToObject(o, "cuda_graph_subtracted", pl->cuda_graph_subtracted);
  cJSON_AddNumberToObject(o, "available_kv_bytes", (double)pl->available_kv_bytes);
  cJSON_AddNumberToObject(o, "num_gpu_blocks", (double)pl->num_gpu_blocks);
  cJSON_AddNumberToObject(o, "kv_cache_tokens", (double)pl->kv_cache_tokens);
  cJSON_AddNumberToObject(o, "blocks_per_request", (double)pl->blocks_per_request_max);
  cJSON_AddNumberToObject(o, "max_concurrency", pl->max_concurrency);
  if (pl->kv_scale_bytes_per_token)
    cJSON_AddNumberToObject(o, "kv_scale_bytes_per_token", (double)pl->kv_scale_bytes_per_token);
  if (pl->residual_bytes_per_request)
    cJSON_AddNumberToObject(o, "kv_residual_bytes_per_request",
                            (double)pl->residual_bytes_per_request);
  cJSON_AddBoolToObject(o, "fits", pl->fits);
  if (!pl->fits) {
    cJSON_AddStringToObject(o, "error", pl->error);
    char advice[512];
    kvsim_plan_advice(m, g, pl, advice, sizeof advice);
    cJSON_AddStringToObject(o, "advice", advice);
  }
  cJSON_AddNumberToObject(o, "max_model_len_fit", (double)pl->max_model_len_fit);
  engine_json(pl, o);
}

static double gib(int64_t b) { return (double)b / KVSIM_GIB; }

/* "131,072 bytes (32 layers x 8 KV heads x 128 head_dim x 2 (K,V) x 2
 * bytes)": the factors multiply out to the total. int8/int4 head vectors
 * carry one fp16 scale and one fp16 zero point per group (HF
 * QuantizedCache), so the bytes per head are shown with that overhead;
 * MLA caches one latent of kv_lora_rank + qk_rope_head_dim per layer
 * (vLLM MLAAttentionSpec). */
static void per_token_line(const kvsim_plan_t *pl, const kvsim_model_t *m, FILE *out) {
  const kvsim_plan_params_t *p = &pl->p;
  char a[32], b[32];
  int factor = m->mla ? 1 : 2;
  const char *kv = m->mla ? "1 (latent)" : "2 (K,V)";
  /* The target's layers; a drafter's follow ("+ N drafter bytes"). vLLM
   * puts the drafter's layers in every block; SGLang's EAGLE draft has a
   * pool of its own (plan.sglang), outside the target's per-token bytes. */
  const int64_t drafter = p->engine == KVSIM_PLAN_SGLANG ? 0 : pl->spec_per_token_bytes;
  int64_t per_head = (pl->per_token_kv_bytes - drafter) /
                     (pl->num_layers * pl->kv_heads_per_rank * factor);
  fprintf(out, "KV cache per token: %s bytes (%d layers x ",
          kvsim__commas(pl->per_token_kv_bytes, a, sizeof a), pl->num_layers);
  if (p->kv_dtype == KVSIM_KV_INT8 || p->kv_dtype == KVSIM_KV_INT4) {
    bool int4 = p->kv_dtype == KVSIM_KV_INT4;
    int64_t groups = (pl->head_dim + p->kv_quant_group - 1) / p->kv_quant_group;
    if (!m->mla)
      fprintf(out, "%lld KV heads x ", (long long)pl->kv_heads_per_rank);
    fprintf(out, "%s x %lld bytes per %s vector: %lld %s x %s + %lld scale group%s (of %d) x 4 "
            "bytes (fp16 scale, zero point))",
            kv, (long long)per_head, m->mla ? "latent" : "head", (long long)pl->head_dim,
            m->mla ? "latent width" : "head_dim", int4 ? "0.5 byte" : "1 byte", (long long)groups,
            groups == 1 ? "" : "s", p->kv_quant_group);
  } else {
    if (m->mla)
      fprintf(out, "%lld latent width", (long long)pl->head_dim);
    else
      fprintf(out, "%lld KV heads x %lld head_dim", (long long)pl->kv_heads_per_rank,
              (long long)pl->head_dim);
    /* V0 pads the MLA latent to 256 bytes (cache_engine.py _align_cache). */
    int64_t elem = (int64_t)pl->kv_bytes_per_element, width = per_head / (elem ? elem : 1);
    if (width != pl->head_dim)
      fprintf(out, " padded to %lld", (long long)width);
    fprintf(out, " x %s x %lld byte%s", kv, (long long)elem, elem == 1 ? "" : "s");
    if (drafter)
      fprintf(out, " + %s bytes of %d drafter layer%s",
              kvsim__commas(drafter, b, sizeof b), pl->spec_draft_layers,
              pl->spec_draft_layers == 1 ? "" : "s");
    fprintf(out, ")");
  }
  fprintf(out, "; block: %s bytes\n", kvsim__commas(pl->block_bytes, b, sizeof b));
}

/* The estimate the serving articles teach, total x utilization / KV of
 * one max_model_len request, beside the engine's figure, and where the
 * difference goes. */
static void naive_line(const kvsim_plan_t *pl, FILE *out) {
  const kvsim_plan_params_t *p = &pl->p;
  double per_req = (double)pl->per_token_kv_bytes * (double)p->max_model_len;
  if (per_req <= 0)
    return;
  char a[32];
  fprintf(out,
          "Naive estimate: %.2f GiB (total x utilization) / %.2f GiB of KV per %s-token request = "
          "~%.0f requests; the engine's pool is smaller by weights %.2f GiB, activation peak "
          "%.2f GiB, non-torch memory %.2f GiB, CUDA graphs %.2f GiB%s\n",
          gib(pl->requested_bytes), per_req / KVSIM_GIB, kvsim__commas(p->max_model_len, a, sizeof a),
          floor((double)pl->requested_bytes / per_req), gib(pl->weights_bytes),
          gib(pl->activation_bytes), gib(pl->non_torch_bytes),
          pl->cuda_graph_subtracted ? gib(pl->cuda_graph_bytes) : 0.0,
          pl->cuda_graph_subtracted ? "" : " (not subtracted)");
}

void kvsim_report_plan_text(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g,
                            FILE *out) {
  kvsim_report_plan_text_fit(pl, m, g, NULL, out);
}

void kvsim_report_plan_text_fit(const kvsim_plan_t *pl, const kvsim_model_t *m,
                                const kvsim_gpu_t *g, const char *to_fit, FILE *out) {
  const kvsim_plan_params_t *p = &pl->p;
  char a[32], c[32];
  /* The weights' precision when they are quantized (by the flag, the
   * config.json or the checkpoint's name): what makes the weights line. */
  const char *wq = p->quantization[0] ? p->quantization : m->quant.method;
  bool quantized = p->quantization[0] ? strcasecmp(wq, "none") != 0
                                      : m->quant.kind != KVSIM_QUANT_NONE;
  fprintf(out, "Model %s on %s: TP %d, PP %d, engine %s, max_model_len %s, block_size %d, kv_cache_dtype %s%s%s\n",
          m->name, g->name, p->tp, p->pp, kvsim_plan_engine_name(p->engine),
          kvsim__commas(p->max_model_len, a, sizeof a), p->block_size,
          kvsim_kv_dtype_name(p->kv_dtype), quantized ? ", quantization " : "",
          quantized ? wq : "");
  per_token_line(pl, m, out);
  fprintf(out,
          "the current vLLM instance can use total_gpu_memory (%.2fGiB) x gpu_memory_utilization "
          "(%.2f) = %.2fGiB\n",
          gib(pl->total_memory_bytes), p->gpu_memory_utilization, gib(pl->requested_bytes));
  fprintf(out,
          "model weights take %.2fGiB; non_torch_memory takes %.2fGiB; PyTorch activation peak "
          "memory takes %.2fGiB; the rest of the memory reserved for KV Cache is %.2fGiB.\n",
          gib(pl->weights_bytes), gib(pl->non_torch_bytes), gib(pl->activation_bytes),
          gib(pl->available_kv_bytes));
  if (pl->cuda_graph_subtracted)
    fprintf(out, "Estimated CUDA graph memory: %.2f GiB total (subtracted from the KV budget)\n",
            gib(pl->cuda_graph_bytes));
  /* V0 logs the block count (executor_base.py "# cuda blocks: N, # CPU
   * blocks: M"; the CPU part needs --swap-space and is printed by calc).
   * The three lines below are V1's own words and kvsim's contract for both
   * engines (docs/GUIDE.md, "The memory plan: kvsim calc"). */
  if (p->engine == KVSIM_PLAN_V0)
    fprintf(out, "# cuda blocks: %lld\n", (long long)pl->num_gpu_blocks);
  fprintf(out, "Available KV cache memory: %.2f GiB\n", gib(pl->available_kv_bytes));
  fprintf(out, "GPU KV cache size: %s tokens\n", kvsim__commas(pl->kv_cache_tokens, a, sizeof a));
  fprintf(out, "Maximum concurrency for %s tokens per request: %.2fx\n",
          kvsim__commas(p->max_model_len, c, sizeof c), pl->max_concurrency);
  naive_line(pl, out);
  if (!pl->fits) {
    fprintf(out, "ValueError: %s\n", pl->error);
    fprintf(out, "Largest max_model_len that fits: %s\n",
            kvsim__commas(pl->max_model_len_fit, a, sizeof a));
    char advice[512];
    if (!to_fit)
      kvsim_plan_advice(m, g, pl, advice, sizeof advice);
    fprintf(out, "To fit: %s\n", to_fit ? to_fit : advice);
  }
}
