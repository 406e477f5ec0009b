/* kvsim calc --engine sglang: SGLang's pool with SGLang's launch flags
 * (python/sglang/srt/server_args.py ServerArgs), printed in its start-up
 * words, next to vLLM V1's for the same model and GPUs. */
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/spec.h"
#include "plan_report_calc.h"

typedef struct {
  kvsim_calc_common_t c;
  const char *quant, *kv_dtype, *policy;
  double mfs, mem_gib, before, after, util, cap_mib;
  int64_t tp, pp, ctx, page, mtt, mrr, cps, mpt;
  const char *spec;             /* --speculative-config: method eagle / eagle3 and the draft */
  int64_t steps, topk, drafts;  /* SGLang's tree */
} sglang_args;

#define F(name, kind, field, help) KVSIM__CALC_FLAG(sglang_args, name, kind, field, help)
#define R(id, kind, field) KVSIM__CALC_PARAM(sglang_args, id, kind, field)
/* The registry's parameters take their flag and help from it (R rows). */
static kvsim_calc_flag_t flags[] = {
    F("--engine", STR, c.engine, "sglang"),
    F("--model", STR, c.model, "catalog name, HF id or path to config.json (default llama-3.1-8b)"),
    F("--gpu", STR, c.gpu, "catalog name or path to a GPU JSON (default h100-sxm)"),
    F("--gpu-memory-gib", NUM, mem_gib, "override the GPU's total memory"),
    F("--tensor-parallel-size", INT, tp, "TP degree (default 1; SGLang's --tp-size)"),
    F("--tp-size", INT, tp, "the same"),
    F("--pipeline-parallel-size", INT, pp, "PP degree (default 1)"),
    F("--quantization", STR, quant, "weight quantization: none, fp8, int8, awq, gptq, int4, mxfp4"),
    F("--kv-cache-dtype", STR, kv_dtype, "auto, bfloat16, float16, fp8_e4m3, fp8_e5m2"),
    F("--context-length", INT, ctx, "default: the model's max_position_embeddings"),
    R(MEM_FRACTION_STATIC, NUM, mfs),
    R(PAGE_SIZE, INT, page),
    F("--max-total-tokens", INT, mtt, "cap on the pool in tokens"),
    R(MAX_RUNNING_REQUESTS, INT, mrr),
    R(CHUNKED_PREFILL_SIZE, INT, cps),
    R(MAX_PREFILL_TOKENS, INT, mpt),
    R(SCHEDULE_POLICY, STR, policy),
    F("--avail-gib-before-load", NUM, before, "measured: the \"avail mem\" GB before weights"),
    F("--avail-gib-after-load", NUM, after, "measured: the \"Load weight end. avail mem\" GB"),
    R(GPU_MEMORY_CAPACITY_MIB, NUM, cap_mib),
    F("--speculative-config", STR, spec,
      "EAGLE: {\"method\": \"eagle3\", \"model\": DRAFT} (SGLang's --speculative-algorithm, "
      "--speculative-draft-model-path)"),
    R(SPECULATIVE_NUM_STEPS, INT, steps),
    R(SPECULATIVE_EAGLE_TOPK, INT, topk),
    R(SPECULATIVE_NUM_DRAFT_TOKENS, INT, drafts),
    F("--gpu-memory-utilization", NUM, util, "vLLM's fraction for the side-by-side (default 0.9)"),
    F("--json", FLAG, c.json, "print one JSON object"),
    F("--strict", FLAG, c.strict, "exit 1 when the plan does not fit"),
    {NULL, 0, 0, NULL, 0}};
#undef F
#undef R

static void defaults(kvsim_calc_args_t *a) {
  _Static_assert(sizeof(sglang_args) <= sizeof(kvsim_calc_args_t), "sglang_args fits kvsim_calc_args_t");
  *a = (kvsim_calc_args_t){0}; /* no flag given */
  *(sglang_args *)a->bytes = (sglang_args){{"llama-3.1-8b", "h100-sxm", "sglang", false, false}, "", "auto", "fcfs",
                                           -1, -1, -1, -1, 0.9, 0, 1, 1, 0, 0, 0, 0, 0, 0,
                                           NULL, 0, 0, 0};
}

/* The memory flags: the registry's ranges, named as typed (--tp-size is
 * SGLang's own spelling); -1 is "automatic" / "not measured", never a
 * value to give. */
static int memory_flags(const kvsim_calc_args_t *args, const sglang_args *a, kvsim_plan_params_t *p,
                        kvsim_err *err) {
#define GIVEN(field) kvsim__calc_given(args, flags, offsetof(sglang_args, field))
  if (kvsim__calc_memory(GIVEN(mem_gib), a->mem_gib, &p->total_memory_bytes, err) < 0)
    return err->code;
  if (kvsim_param_check_int(KVSIM_PARAM_TENSOR_PARALLEL_SIZE, a->tp,
                            kvsim__calc_flag_name(args, flags, offsetof(sglang_args, tp)),
                            err) < 0 ||
      kvsim_param_check_int(KVSIM_PARAM_PIPELINE_PARALLEL_SIZE, a->pp,
                            kvsim__calc_flag_name(args, flags, offsetof(sglang_args, pp)), err) < 0)
    return err->code;
  if (GIVEN(mfs) && kvsim_param_check_num(KVSIM_PARAM_MEM_FRACTION_STATIC, a->mfs,
                                          "--mem-fraction-static", err) < 0)
    return err->code;
  /* vLLM's own range: outside it the side-by-side plan failed and was
   * silently left out. */
  if (kvsim_param_check_num(KVSIM_PARAM_GPU_MEMORY_UTILIZATION, a->util, "--gpu-memory-utilization",
                            err) < 0)
    return err->code;
  if (kvsim__calc_gib(GIVEN(before), a->before, "--avail-gib-before-load", err) < 0 ||
      kvsim__calc_gib(GIVEN(after), a->after, "--avail-gib-after-load", err) < 0)
    return err->code;
  const kvsim_param_t *cap = kvsim_param_get(KVSIM_PARAM_GPU_MEMORY_CAPACITY_MIB);
  if (GIVEN(cap_mib) && !kvsim_param_in_range(cap, a->cap_mib))
    return kvsim_err_set_param(err, KVSIM_EINVAL, cap->id, cap->flag, "%g is out of range [%g, %g]",
                               a->cap_mib, cap->min, cap->max);
#undef GIVEN
  return KVSIM_OK;
}

/* The token counts: given, each names its flag and the registry's range (0
 * is only the automatic value, never one to type); --chunked-prefill-size
 * -1 is "off". */
static int token_flags(const kvsim_calc_args_t *args, const sglang_args *a, kvsim_err *err) {
  const int64_t tok = KVSIM_MODEL_MAX_CONTEXT;
  const struct {
    size_t field;
    int64_t v;
    int id;
  } ints[] = {
      {offsetof(sglang_args, ctx), a->ctx, KVSIM_PARAM_MAX_MODEL_LEN},
      {offsetof(sglang_args, page), a->page, KVSIM_PARAM_PAGE_SIZE},
      {offsetof(sglang_args, mtt), a->mtt, KVSIM_PARAM_MAX_TOTAL_TOKENS},
      {offsetof(sglang_args, mrr), a->mrr, KVSIM_PARAM_MAX_RUNNING_REQUESTS},
      {offsetof(sglang_args, mpt), a->mpt, KVSIM_PARAM_MAX_PREFILL_TOKENS},
      {offsetof(sglang_args, steps), a->steps, KVSIM_PARAM_SPECULATIVE_NUM_STEPS},
      {offsetof(sglang_args, topk), a->topk, KVSIM_PARAM_SPECULATIVE_EAGLE_TOPK},
      {offsetof(sglang_args, drafts), a->drafts, KVSIM_PARAM_SPECULATIVE_NUM_DRAFT_TOKENS},
  };
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
    if (kvsim__calc_given(args, flags, ints[i].field) &&
        kvsim_param_check_int(ints[i].id, ints[i].v,
                              kvsim__calc_flag_name(args, flags, ints[i].field), err) < 0)
      return err->code;
  if (kvsim__calc_given(args, flags, offsetof(sglang_args, cps)) && a->cps != -1 &&
      !(a->cps >= 1 && a->cps <= tok))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--chunked-prefill-size: %lld is out of range (-1 for off, or [1, %lld])",
                         (long long)a->cps, (long long)tok);
  return KVSIM_OK;
}

/* vLLM V1 with the same model, GPUs, context and weights, beside SGLang's. */
static void vllm_side_by_side(const sglang_args *a, const kvsim_plan_params_t *p, kvsim_calc_t *c) {
  kvsim_plan_params_t q;
  kvsim_plan_params_default(&q);
  q.tp = p->tp;
  q.tp_flag = p->tp_flag;
  q.pp = p->pp;
  q.total_memory_bytes = p->total_memory_bytes;
  q.max_model_len = c->pl.p.max_model_len;
  q.gpu_memory_utilization = a->util;
  q.kv_dtype = p->kv_dtype;
  snprintf(q.quantization, sizeof q.quantization, "%s", a->quant);
  kvsim_err e2 = {0};
  c->have_v1 = kvsim_plan_compute(&c->m, &c->g, &q, &c->v1, &e2) == KVSIM_OK;
}

static int compute(const kvsim_calc_args_t *args, kvsim_calc_t *c, kvsim_err *err) {
  const sglang_args *a = (const sglang_args *)args->bytes;
  /* python/sglang/srt/server_args.py: --schedule-policy's choices. */
  static const char *const policies[] = {"fcfs", "lpm", "lof", "random"};
  bool known = false;
  for (int i = 0; i < 4; i++)
    known = known || !strcmp(a->policy, policies[i]);
  if (!known)
    return kvsim_err_set(err, KVSIM_EINVAL, "--schedule-policy: unknown policy '%s' (expected fcfs, lpm, lof, random)",
                         a->policy);
  if (kvsim__calc_load(&a->c, c, err) < 0)
    return err->code;
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_SGLANG;
  if (kvsim_kv_dtype_parse(a->kv_dtype, &p.kv_dtype) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--kv-cache-dtype: unknown dtype '%s' (expected auto, bfloat16, "
                         "float16, fp8_e4m3, fp8_e5m2)", a->kv_dtype);
  if (memory_flags(args, a, &p, err) < 0 || token_flags(args, a, err) < 0)
    return err->code;
  p.tp = (int)a->tp;
  /* The plan's TP errors name the spelling typed (--tp-size is SGLang's). */
  p.tp_flag = kvsim__calc_flag_name(args, flags, offsetof(sglang_args, tp));
  p.pp = (int)a->pp;
  if (kvsim__calc_quant(args, flags, offsetof(sglang_args, quant), p.quantization,
                        sizeof p.quantization, err) < 0)
    return err->code;
  p.max_model_len = a->ctx;
  p.block_size = a->page > KVSIM_MAX_BLOCK_SIZE ? KVSIM_MAX_BLOCK_SIZE + 1
                                                : (int)a->page; /* the plan names the range */
  p.sglang = (kvsim_plan_sglang_params_t){a->mfs, a->mtt, a->mrr, a->cps, a->mpt, a->before, a->after, a->cap_mib, 0};
  if (a->spec && kvsim_spec_parse_sglang_text(a->spec, &p.spec, "--speculative-config", err) < 0)
    return err->code;
  if (!a->spec && (a->steps || a->topk || a->drafts))
    return kvsim_err_set(err, KVSIM_EINVAL, "--speculative-num-steps, --speculative-eagle-topk, "
                         "--speculative-num-draft-tokens: give --speculative-config too (the EAGLE "
                         "method and draft)");
  p.spec.sgl_num_steps = (int)a->steps;
  p.spec.sgl_eagle_topk = (int)a->topk;
  p.spec.sgl_num_draft_tokens = (int)a->drafts;
  if (kvsim_plan_compute(&c->m, &c->g, &p, &c->pl, err) < 0)
    return err->code;
  vllm_side_by_side(a, &p, c);
  return KVSIM_OK;
}

static double gib(int64_t b) { return (double)b / KVSIM_GIB; }

/* The EAGLE draft worker's lines (EAGLEWorker.__init__ loads it after the
 * target's pool) and the tree the scheduler runs. */
static void print_draft(const kvsim_plan_t *pl, double left, FILE *out) {
  const kvsim_plan_sglang_t *o = &pl->sglang;
  const kvsim_plan_spec_params_t *s = &pl->p.spec;
  char a[32];
  fprintf(out, "EAGLE (%s): speculative_num_steps=%d, speculative_eagle_topk=%d, "
          "speculative_num_draft_tokens=%d; %lld KV slots per request per decode step\n",
          kvsim_spec_method_name(s->method), s->sgl_num_steps, s->sgl_eagle_topk,
          s->sgl_num_draft_tokens, (long long)o->alloc_len_per_decode);
  fprintf(out, "Draft cell size: %s bytes per token per rank (%d draft layer%s)\n",
          kvsim__commas(pl->spec_per_token_bytes, a, sizeof a), pl->spec_draft_layers,
          pl->spec_draft_layers == 1 ? "" : "s");
  left -= gib(pl->spec_weights_bytes);
  fprintf(out, "Draft load weight end. avail mem=%.2f GB, mem usage=%.2f GB (embedding%s shared)\n",
          left, gib(pl->spec_weights_bytes), pl->spec_lm_head_shared ? " and lm_head" : "");
  if (o->draft_v_size_bytes)
    fprintf(out, "Draft KV Cache is allocated. #tokens: %lld, K size: %.2f GB, V size: %.2f GB\n",
            (long long)o->max_total_num_tokens, gib(o->draft_k_size_bytes), gib(o->draft_v_size_bytes));
  else
    fprintf(out, "Draft KV Cache is allocated. #tokens: %lld, KV size: %.2f GB\n",
            (long long)o->max_total_num_tokens, gib(o->draft_k_size_bytes));
  fprintf(out, "Draft memory pool end. avail mem=%.2f GB\n",
          left - gib(o->draft_k_size_bytes + o->draft_v_size_bytes));
}

static void print_text(const kvsim_plan_t *pl, const kvsim_plan_t *v1, const kvsim_model_t *m,
                       const kvsim_gpu_t *g, const char *quant, bool measured, FILE *out) {
  const kvsim_plan_sglang_t *o = &pl->sglang;
  const kvsim_plan_params_t *p = &pl->p;
  char a[32], b[32], c[32];
  fprintf(out, "SGLang plan: %s on %d x %s (TP %d, PP %d), weights %s, KV %s, page_size %d\n", m->name,
         p->tp * p->pp, g->name, p->tp, p->pp,
         quant[0] ? quant : m->quant.method[0] ? m->quant.method : m->dtype,
         p->kv_dtype == KVSIM_KV_AUTO ? m->dtype : kvsim_kv_dtype_name(p->kv_dtype), p->block_size);
  if (o->fraction_auto)
    fprintf(out, "mem_fraction_static=%.3f (automatic: %.0f MB reserved of %.0f MB%s, "
           "chunked_prefill_size %lld, cuda_graph_max_bs %lld)\n",
           o->mem_fraction_static, o->reserved_mb,
           p->sglang.gpu_memory_capacity_mib > 0 ? p->sglang.gpu_memory_capacity_mib
                                                 : (double)pl->total_memory_bytes / (1 << 20),
           p->sglang.gpu_memory_capacity_mib > 0 ? " (nvidia-smi)" : "",
           (long long)o->chunked_prefill_size, (long long)o->cuda_graph_max_bs);
  else
    fprintf(out, "mem_fraction_static=%.3f\n", o->mem_fraction_static);
  const char *src = measured ? "measured" : "predicted";
  fprintf(out, "Init torch distributed ends. avail mem=%.2f GB (%s)\n", o->avail_gib_before_load, src);
  fprintf(out, "Load weight end. avail mem=%.2f GB, mem usage=%.2f GB (%s)\n", o->avail_gib_after_load,
         o->avail_gib_before_load - o->avail_gib_after_load, src);
  int64_t k = o->cell_size / (m->mla ? 1 : 2);
  if (m->mla)
    fprintf(out, "Cell size: %s bytes per token per rank (%d layers x latent %lld x %g bytes)\n",
           kvsim__commas(o->cell_size, a, sizeof a), pl->num_layers, (long long)pl->head_dim,
           pl->kv_bytes_per_element);
  else
    fprintf(out, "Cell size: %s bytes per token per rank (K %s + V %s: %d layers x %lld KV heads x %lld "
           "head_dim x %g bytes each)\n",
           kvsim__commas(o->cell_size, a, sizeof a), kvsim__commas(k, b, sizeof b),
           kvsim__commas(k, c, sizeof c), pl->num_layers, (long long)pl->kv_heads_per_rank,
           (long long)pl->head_dim, pl->kv_bytes_per_element);
  fprintf(out, "KV budget: rest_memory = %.2f - %.2f x (1 - %.3f) = %.2f GB\n", o->avail_gib_after_load,
         o->avail_gib_before_load, o->mem_fraction_static, o->rest_gib);
  if (!pl->fits && o->max_total_num_tokens > 0) {
    /* The target's pool fit; the EAGLE draft after it did not: the error
     * names the one remedy (a lower fraction), which the search below
     * does not try. */
    fprintf(out, "RuntimeError: %s\n", pl->error);
    return;
  }
  if (!pl->fits) {
    char advice[512];
    kvsim_plan_advice(m, g, pl, advice, sizeof advice);
    fprintf(out, "RuntimeError: %s\nTo fit: %s\n", pl->error, advice);
    return;
  }
  if (m->mla)
    fprintf(out, "KV Cache is allocated. #tokens: %lld, KV size: %.2f GB\n",
           (long long)o->max_total_num_tokens, gib(o->k_size_bytes));
  else
    fprintf(out, "KV Cache is allocated. #tokens: %lld, K size: %.2f GB, V size: %.2f GB\n",
           (long long)o->max_total_num_tokens, gib(o->k_size_bytes), gib(o->v_size_bytes));
  double left = o->avail_gib_after_load - gib(o->k_size_bytes + o->v_size_bytes);
  fprintf(out, "Memory pool end. avail mem=%.2f GB\n", left);
  if (p->spec.method != KVSIM_SPEC_NONE)
    print_draft(pl, left, out);
  fprintf(out, "max_total_num_tokens=%lld, chunked_prefill_size=%lld, max_prefill_tokens=%lld, "
         "max_running_requests=%lld, context_len=%lld\n",
         (long long)o->max_total_num_tokens, (long long)o->chunked_prefill_size,
         (long long)o->max_prefill_tokens, (long long)o->max_running_requests,
         (long long)o->context_len);
  fprintf(out, "Maximum concurrency for %s tokens per request: %.2fx\n",
         kvsim__commas(o->context_len, a, sizeof a), pl->max_concurrency);
  if (v1 && o->max_total_num_tokens > 0)
    fprintf(out, "vLLM V1, same model and GPUs at gpu_memory_utilization %.2f: GPU KV cache size: %s "
           "tokens (%.2f GiB), %.2fx SGLang's\n",
           v1->p.gpu_memory_utilization, kvsim__commas(v1->kv_cache_tokens, a, sizeof a),
           gib(v1->available_kv_bytes),
           (double)v1->kv_cache_tokens / (double)o->max_total_num_tokens);
}

static void print_json(const kvsim_plan_t *pl, const kvsim_plan_t *v1, const kvsim_model_t *m,
                       const kvsim_gpu_t *g, const char *policy, FILE *out) {
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
  if (pl->p.spec.method != KVSIM_SPEC_NONE) { /* only then: other plans' JSON is unchanged */
    cJSON_AddNumberToObject(j, "speculative_num_steps", pl->p.spec.sgl_num_steps);
    cJSON_AddNumberToObject(j, "speculative_eagle_topk", pl->p.spec.sgl_eagle_topk);
    cJSON_AddNumberToObject(j, "speculative_num_draft_tokens", pl->p.spec.sgl_num_draft_tokens);
    cJSON_AddNumberToObject(j, "alloc_len_per_decode", (double)o->alloc_len_per_decode);
    cJSON_AddNumberToObject(j, "draft_k_size_bytes", (double)o->draft_k_size_bytes);
    cJSON_AddNumberToObject(j, "draft_v_size_bytes", (double)o->draft_v_size_bytes);
  }
  if (v1) {
    cJSON_AddNumberToObject(j, "vllm_v1_gpu_memory_utilization", v1->p.gpu_memory_utilization);
    cJSON_AddNumberToObject(j, "vllm_v1_kv_cache_tokens", (double)v1->kv_cache_tokens);
  }
  kvsim__calc_print_json(j, out);
}

static void print(const kvsim_calc_args_t *args, const kvsim_calc_t *c, FILE *out) {
  const sglang_args *a = (const sglang_args *)args->bytes;
  const kvsim_plan_t *v1 = c->have_v1 ? &c->v1 : NULL;
  if (a->c.json)
    print_json(&c->pl, v1, &c->m, &c->g, a->policy, out);
  else
    print_text(&c->pl, v1, &c->m, &c->g, a->quant, a->before >= 0, out);
}

const kvsim_calc_engine_t kvsim__calc_sglang = {"--engine sglang [flags]", flags, defaults, compute, print};
