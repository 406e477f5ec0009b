/* kvsim calc --engine sglang: SGLang's pool with SGLang's launch flags,
 * printed in its start-up words, next to vLLM V1's for the same model and
 * GPUs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "core/util.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
#include "kvsim/report.h"

static double gib(int64_t b) { return (double)b / KVSIM_GIB; }

static void print_text(const kvsim_plan_t *pl, const kvsim_plan_t *v1, const kvsim_model_t *m,
                       const kvsim_gpu_t *g, const char *quant, bool measured) {
  const kvsim_plan_sglang_t *o = &pl->sglang;
  const kvsim_plan_params_t *p = &pl->p;
  char a[32], b[32], c[32];
  printf("SGLang plan: %s on %d x %s (TP %d, PP %d), weights %s, KV %s, page_size %d\n", m->name,
         p->tp * p->pp, g->name, p->tp, p->pp,
         quant[0] ? quant : m->quant.method[0] ? m->quant.method : m->dtype,
         p->kv_dtype == KVSIM_KV_AUTO ? m->dtype : kvsim_kv_dtype_name(p->kv_dtype), p->block_size);
  if (o->fraction_auto)
    printf("mem_fraction_static=%.3f (automatic: %.0f MB reserved of %.0f MB, "
           "chunked_prefill_size %lld, cuda_graph_max_bs %lld)\n",
           o->mem_fraction_static, o->reserved_mb, (double)pl->total_memory_bytes / (1 << 20),
           (long long)o->chunked_prefill_size, (long long)o->cuda_graph_max_bs);
  else
    printf("mem_fraction_static=%.3f\n", o->mem_fraction_static);
  const char *src = measured ? "measured" : "predicted";
  printf("Init torch distributed ends. avail mem=%.2f GB (%s)\n", o->avail_gib_before_load, src);
  printf("Load weight end. avail mem=%.2f GB, mem usage=%.2f GB (%s)\n", o->avail_gib_after_load,
         o->avail_gib_before_load - o->avail_gib_after_load, src);
  int64_t k = o->cell_size / (m->mla ? 1 : 2);
  if (m->mla)
    printf("Cell size: %s bytes per token per rank (%d layers x latent %lld x %g bytes)\n",
           kvsim__commas(o->cell_size, a, sizeof a), pl->num_layers, (long long)pl->head_dim,
           pl->kv_bytes_per_element);
  else
    printf("Cell size: %s bytes per token per rank (K %s + V %s: %d layers x %lld KV heads x %lld "
           "head_dim x %g bytes each)\n",
           kvsim__commas(o->cell_size, a, sizeof a), kvsim__commas(k, b, sizeof b),
           kvsim__commas(k, c, sizeof c), pl->num_layers, (long long)pl->kv_heads_per_rank,
           (long long)pl->head_dim, pl->kv_bytes_per_element);
  printf("KV budget: rest_memory = %.2f - %.2f x (1 - %.3f) = %.2f GB\n", o->avail_gib_after_load,
         o->avail_gib_before_load, o->mem_fraction_static, o->rest_gib);
  if (!pl->fits) {
    char advice[512];
    kvsim_plan_advice(m, g, pl, advice, sizeof advice);
    printf("RuntimeError: %s\nTo fit: %s\n", pl->error, advice);
    return;
  }
  if (m->mla)
    printf("KV Cache is allocated. #tokens: %lld, KV size: %.2f GB\n",
           (long long)o->max_total_num_tokens, gib(o->k_size_bytes));
  else
    printf("KV Cache is allocated. #tokens: %lld, K size: %.2f GB, V size: %.2f GB\n",
           (long long)o->max_total_num_tokens, gib(o->k_size_bytes), gib(o->v_size_bytes));
  printf("Memory pool end. avail mem=%.2f GB\n",
         o->avail_gib_after_load - gib(o->k_size_bytes + o->v_size_bytes));
  printf("max_total_num_tokens=%lld, chunked_prefill_size=%lld, max_prefill_tokens=%lld, "
         "max_running_requests=%lld, context_len=%lld\n",
         (long long)o->max_total_num_tokens, (long long)o->chunked_prefill_size,
         (long long)o->max_prefill_tokens, (long long)o->max_running_requests,
         (long long)o->context_len);
  printf("Maximum concurrency for %s tokens per request: %.2fx\n",
         kvsim__commas(o->context_len, a, sizeof a), pl->max_concurrency);
  if (v1 && o->max_total_num_tokens > 0)
    printf("vLLM V1, same model and GPUs at gpu_memory_utilization %.2f: GPU KV cache size: %s "
           "tokens (%.2f GiB), %.2fx SGLang's\n",
           v1->p.gpu_memory_utilization, kvsim__commas(v1->kv_cache_tokens, a, sizeof a),
           gib(v1->available_kv_bytes),
           (double)v1->kv_cache_tokens / (double)o->max_total_num_tokens);
}

static void print_json(const kvsim_plan_t *pl, const kvsim_plan_t *v1, const kvsim_model_t *m,
                       const kvsim_gpu_t *g, const char *policy) {
  const kvsim_plan_sglang_t *o = &pl->sglang;
  cJSON *j = cJSON_CreateObject();
  kvsim_report_plan_json(pl, m, g, j);
  /* Every engine's calc keys stay (kvsim's contract: block_size is the
   * page, max_num_seqs max_running_requests); vLLM's utilization is not
   * SGLang's. */
  cJSON_DeleteItemFromObjectCaseSensitive(j, "gpu_memory_utilization");
  cJSON_ReplaceItemInObjectCaseSensitive(j, "engine", cJSON_CreateString("sglang"));
  cJSON_AddNumberToObject(j, "mem_fraction_static", o->mem_fraction_static);
  cJSON_AddBoolToObject(j, "mem_fraction_static_auto", o->fraction_auto);
  cJSON_AddNumberToObject(j, "page_size", pl->p.block_size);
  cJSON_AddNumberToObject(j, "context_len", (double)o->context_len);
  cJSON_AddNumberToObject(j, "avail_gib_before_load", o->avail_gib_before_load);
  cJSON_AddNumberToObject(j, "avail_gib_after_load", o->avail_gib_after_load);
  cJSON_AddNumberToObject(j, "rest_memory_gib", o->rest_gib);
  cJSON_AddNumberToObject(j, "cell_size", (double)o->cell_size);
  cJSON_AddNumberToObject(j, "k_size_bytes", (double)o->k_size_bytes);
  cJSON_AddNumberToObject(j, "v_size_bytes", (double)o->v_size_bytes);
  cJSON_AddNumberToObject(j, "max_total_num_tokens", (double)o->max_total_num_tokens);
  cJSON_AddNumberToObject(j, "max_running_requests", (double)o->max_running_requests);
  cJSON_AddNumberToObject(j, "req_to_token_pool_size", (double)o->req_to_token_size);
  cJSON_AddNumberToObject(j, "chunked_prefill_size", (double)o->chunked_prefill_size);
  cJSON_AddNumberToObject(j, "max_prefill_tokens", (double)o->max_prefill_tokens);
  cJSON_AddNumberToObject(j, "cuda_graph_max_bs", (double)o->cuda_graph_max_bs);
  cJSON_AddStringToObject(j, "schedule_policy", policy);
  if (v1) {
    cJSON_AddNumberToObject(j, "vllm_v1_gpu_memory_utilization", v1->p.gpu_memory_utilization);
    cJSON_AddNumberToObject(j, "vllm_v1_kv_cache_tokens", (double)v1->kv_cache_tokens);
  }
  char *s = kvsim_report_json_string(j);
  puts(s);
  free(s);
  cJSON_Delete(j);
}

int cmd_calc_sglang(int argc, char **argv) {
  const char *model = "llama-3.1-8b", *gpu = "h100-sxm", *engine = "sglang", *quant = "";
  const char *kv_dtype = "auto", *policy = "fcfs";
  double mfs = -1, mem_gib = -1, before = -1, after = -1, util = 0.9;
  int64_t tp = 1, pp = 1, ctx = 0, page = 0, mtt = 0, mrr = 0, cps = 0, mpt = 0;
  bool json = false, strict = false;
  const cli_arg args[] = {
      {"--engine", ARG_STR, &engine, "sglang", NULL},
      {"--model", ARG_STR, &model, "catalog name, HF id or path to config.json (default llama-3.1-8b)", NULL},
      {"--gpu", ARG_STR, &gpu, "catalog name or path to a GPU JSON (default h100-sxm)", NULL},
      {"--gpu-memory-gib", ARG_NUM, &mem_gib, "override the GPU's total memory", NULL},
      {"--tensor-parallel-size", ARG_INT, &tp, "TP degree (default 1; SGLang's --tp-size)", NULL},
      {"--tp-size", ARG_INT, &tp, "the same", NULL},
      {"--pipeline-parallel-size", ARG_INT, &pp, "PP degree (default 1)", NULL},
      {"--quantization", ARG_STR, &quant, "weight quantization: none, fp8, int8, awq, gptq, int4, mxfp4", NULL},
      {"--kv-cache-dtype", ARG_STR, &kv_dtype, "auto, bfloat16, float16, fp8_e4m3, fp8_e5m2", NULL},
      {"--context-length", ARG_INT, &ctx, "default: the model's max_position_embeddings", NULL},
      {"--mem-fraction-static", ARG_NUM, &mfs, "weights + KV pool as a fraction of the free memory (default: automatic)", NULL},
      {"--page-size", ARG_INT, &page, "tokens per page (default 1)", NULL},
      {"--max-total-tokens", ARG_INT, &mtt, "cap on the pool in tokens", NULL},
      {"--max-running-requests", ARG_INT, &mrr, "default: min(pool // 2, req_to_token pool)", NULL},
      {"--chunked-prefill-size", ARG_INT, &cps, "default: by GPU memory; -1 disables chunking", NULL},
      {"--max-prefill-tokens", ARG_INT, &mpt, "prefill budget per batch (default 16384)", NULL},
      {"--schedule-policy", ARG_STR, &policy, "fcfs (default), lpm, lof, random (a run's; no effect on the plan)", NULL},
      {"--avail-gib-before-load", ARG_NUM, &before, "measured: the \"avail mem\" GB before weights", NULL},
      {"--avail-gib-after-load", ARG_NUM, &after, "measured: the \"Load weight end. avail mem\" GB", NULL},
      {"--gpu-memory-utilization", ARG_NUM, &util, "vLLM's fraction for the side-by-side (default 0.9)", NULL},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--strict", ARG_FLAG, &strict, "exit 1 when the plan does not fit", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("calc", "--engine sglang [flags]", args, argc, argv, 2, pos, 0, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (strcmp(policy, "fcfs") && strcmp(policy, "lpm") && strcmp(policy, "lof") &&
      strcmp(policy, "random"))
    return cli_fail("calc", "--schedule-policy: unknown policy '%s' (expected fcfs, lpm, lof, random)",
                    policy);
  kvsim_err err = {0};
  kvsim_model_t m;
  kvsim_gpu_t g;
  if (kvsim_model_load(model, &m, &err) < 0)
    return cli_fail("calc", "--model: %s", err.msg);
  if (kvsim_gpu_load(gpu, &g, &err) < 0)
    return cli_fail("calc", "--gpu: %s", err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_SGLANG;
  if (kvsim_kv_dtype_parse(kv_dtype, &p.kv_dtype) < 0)
    return cli_fail("calc", "--kv-cache-dtype: unknown dtype '%s' (expected auto, bfloat16, "
                    "float16, fp8_e4m3, fp8_e5m2)", kv_dtype);
  if (mem_gib != -1) {
    if (!(mem_gib > 0 && mem_gib <= (double)KVSIM_GPU_MAX_MEMORY_BYTES / KVSIM_GIB))
      return cli_fail("calc", "--gpu-memory-gib: %g GiB is out of range", mem_gib);
    p.total_memory_bytes = (int64_t)(mem_gib * KVSIM_GIB + 0.5);
  }
  if (tp < 1 || tp > 1024 || pp < 1 || pp > 1024)
    return cli_fail("calc", "--tensor-parallel-size and --pipeline-parallel-size must be in [1, 1024]");
  if (mfs != -1 && !(mfs > 0 && mfs < 1))
    return cli_fail("calc", "--mem-fraction-static: %g is outside (0, 1)", mfs);
  if ((before != -1 && before < 0) || (after != -1 && after < 0))
    return cli_fail("calc", "--avail-gib-before-load / --avail-gib-after-load must be >= 0");
  if (ctx < 0 || page < 0 || mtt < 0 || mrr < 0 || mpt < 0 || cps < -1)
    return cli_fail("calc", "lengths, sizes and counts must be >= 0 (--chunked-prefill-size: -1 is off)");
  p.tp = (int)tp;
  p.pp = (int)pp;
  snprintf(p.quantization, sizeof p.quantization, "%s", quant);
  p.max_model_len = ctx;
  p.block_size = page > 4096 ? 4097 : (int)page; /* the plan names the range */
  p.sglang = (kvsim_plan_sglang_params_t){mfs, mtt, mrr, cps, mpt, before, after};
  kvsim_plan_t pl, v1;
  if (kvsim_plan_compute(&m, &g, &p, &pl, &err) < 0)
    return cli_fail("calc", "%s", err.msg);
  /* vLLM V1 with the same model, GPUs, context and weights. */
  kvsim_plan_params_t q;
  kvsim_plan_params_default(&q);
  q.tp = p.tp;
  q.pp = p.pp;
  q.total_memory_bytes = p.total_memory_bytes;
  q.max_model_len = pl.p.max_model_len;
  q.gpu_memory_utilization = util;
  q.kv_dtype = p.kv_dtype;
  snprintf(q.quantization, sizeof q.quantization, "%s", quant);
  bool have_v1 = kvsim_plan_compute(&m, &g, &q, &v1, &err) == KVSIM_OK;
  if (json)
    print_json(&pl, have_v1 ? &v1 : NULL, &m, &g, policy);
  else
    print_text(&pl, have_v1 ? &v1 : NULL, &m, &g, quant, before >= 0);
  return strict && !pl.fits ? 1 : 0;
}
