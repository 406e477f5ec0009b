/* kvsim calc (vLLM V1 and V0): vLLM's serve flags, the plan, reverse mode,
 * and the start-up lines in vLLM's words (the plan's own lines are
 * plan_report.c's). */
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/sched.h"
#include "kvsim/spec.h"
#include "plan_report_calc.h"

typedef struct {
  kvsim_calc_common_t c;
  const char *kv_dtype, *dtype, *quant, *vllm_version, *mml_s, *seq_len_s, *spec;
  double util, mem_gib, w, act, nt, cg, swap, offload;
  int64_t bs, tp, pp, seqs, mbt, kvbytes, blocks_override, target, kv_group, kv_residual;
  int64_t max_loras, max_lora_rank, max_cpu_loras;
  bool chunked, no_chunked, eager, est_cg, no_hma, pc, no_pc, lora, lora_sharded;
} vllm_args;

#define F(name, kind, field, help) KVSIM__CALC_FLAG(vllm_args, name, kind, field, help)
#define R(id, kind, field) KVSIM__CALC_PARAM(vllm_args, id, kind, field)
/* The registry's parameters take their flag and help from it (R rows). */
static kvsim_calc_flag_t flags[] = {
    F("--model", STR, c.model, "catalog name, HF id or path to config.json (default llama-3.1-8b)"),
    F("--gpu", STR, c.gpu, "catalog name or path to a GPU JSON (default h100-sxm)"),
    R(GPU_MEMORY_GIB, NUM, mem_gib),
    F("--engine", STR, c.engine,
      "vllm-v1 (default), vllm-v0; sglang, tgi, hf-transformers (see --engine E --help); "
      "--compare-engines"),
    R(VLLM_VERSION, STR, vllm_version),
    R(GPU_MEMORY_UTILIZATION, NUM, util),
    R(MAX_MODEL_LEN, STR, mml_s),
    R(BLOCK_SIZE, INT, bs),
    R(KV_CACHE_DTYPE, STR, kv_dtype),
    R(KV_QUANT_GROUP, INT, kv_group),
    R(KV_RESIDUAL_TOKENS, INT, kv_residual),
    R(DTYPE, STR, dtype),
    R(QUANTIZATION, STR, quant),
    R(TENSOR_PARALLEL_SIZE, INT, tp),
    R(PIPELINE_PARALLEL_SIZE, INT, pp),
    R(MAX_NUM_SEQS, INT, seqs),
    R(MAX_NUM_BATCHED_TOKENS, INT, mbt),
    R(ENABLE_CHUNKED_PREFILL, FLAG, chunked),
    F("--no-enable-chunked-prefill", FLAG, no_chunked, "disable chunked prefill"),
    R(ENABLE_PREFIX_CACHING, FLAG, pc),
    F("--no-enable-prefix-caching", FLAG, no_pc, "accepted for pasted serve commands"),
    R(ENFORCE_EAGER, FLAG, eager),
    R(ESTIMATE_CUDAGRAPHS, FLAG, est_cg),
    R(DISABLE_HYBRID_KV_CACHE_MANAGER, FLAG, no_hma),
    R(SWAP_SPACE, NUM, swap),
    R(KV_OFFLOADING_SIZE, NUM, offload),
    R(KV_CACHE_MEMORY_BYTES, INT, kvbytes),
    R(NUM_GPU_BLOCKS_OVERRIDE, INT, blocks_override),
    R(ENABLE_LORA, FLAG, lora),
    R(MAX_LORAS, INT, max_loras),
    R(MAX_LORA_RANK, INT, max_lora_rank),
    R(MAX_CPU_LORAS, INT, max_cpu_loras),
    R(FULLY_SHARDED_LORAS, FLAG, lora_sharded),
    F("--speculative-config", STR, spec,
      "vLLM's JSON, e.g. '{\"method\": \"eagle3\", \"model\": "
      "\"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B\", \"num_speculative_tokens\": 3}' (methods eagle, "
      "eagle3, mtp, ngram, draft_model)"),
    R(WEIGHTS_GIB, NUM, w),
    R(ACTIVATION_GIB, NUM, act),
    R(NON_TORCH_GIB, NUM, nt),
    R(CUDA_GRAPH_GIB, NUM, cg),
    F("--target-concurrency", INT, target, "reverse mode: concurrent requests to hold"),
    F("--seq-len", STR, seq_len_s, "reverse mode: tokens per request (8192, 8k)"),
    F("--json", FLAG, c.json, "print one JSON object"),
    F("--strict", FLAG, c.strict, "exit 1 when the plan does not fit"),
    {NULL, 0, 0, NULL, 0}};
#undef F
#undef R

static void defaults(kvsim_calc_args_t *a) {
  _Static_assert(sizeof(vllm_args) <= sizeof(kvsim_calc_args_t), "vllm_args fits kvsim_calc_args_t");
  *a = (kvsim_calc_args_t){0}; /* no flag given */
  *(vllm_args *)a->bytes = (vllm_args){
      .c = {"llama-3.1-8b", "h100-sxm", "vllm-v1", false, false}, .kv_dtype = "auto", .dtype = "auto", .quant = "",
      .mml_s = "0", .seq_len_s = "0", .util = 0.9, .mem_gib = -1, .w = -1, .act = -1, .nt = -1, .cg = -1,
      .tp = 1, .pp = 1, .kv_group = 64, .kv_residual = 128};
}

/* --dtype onto the model (weights and an auto KV cache), as engine.dtype. */
static int set_dtype(const char *dtype, kvsim_model_t *m, kvsim_err *err) {
  if (kvsim_model_set_dtype(m, dtype) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--dtype: unknown dtype '%s' (expected " KVSIM_MODEL_DTYPES ")", dtype);
  return KVSIM_OK;
}

/* The ranges calc checks itself (the plan checks the rest). A flag's
 * default (0: the engine's, -1: predict) is never a value to give: an
 * explicit --block-size 0 or --weights-gib -1 is an error naming the flag,
 * and every integer is checked before it narrows to the plan's int fields
 * (--block-size 4294967312 once wrapped to 16). */
static int check(const kvsim_calc_args_t *args, int64_t mml, int64_t seq_len, kvsim_err *err) {
  const vllm_args *a = (const vllm_args *)args->bytes;
#define GIVEN(field) kvsim__calc_given(args, flags, offsetof(vllm_args, field))
  /* The registry's ranges, named by the flag; every integer is checked
   * before it narrows to the plan's int fields. TP, PP and the int8/int4
   * settings always (their defaults are in range), the rest when given
   * (0 is the engine's default, not a value to give). */
  const struct {
    bool given;
    int64_t v;
    int id;
  } params[] = {
      {true, a->tp, KVSIM_PARAM_TENSOR_PARALLEL_SIZE},
      {true, a->pp, KVSIM_PARAM_PIPELINE_PARALLEL_SIZE},
      {GIVEN(mml_s), mml, KVSIM_PARAM_MAX_MODEL_LEN},
      {GIVEN(bs), a->bs, KVSIM_PARAM_BLOCK_SIZE},
      {GIVEN(seqs), a->seqs, KVSIM_PARAM_MAX_NUM_SEQS},
      {GIVEN(mbt), a->mbt, KVSIM_PARAM_MAX_NUM_BATCHED_TOKENS},
      {GIVEN(kvbytes), a->kvbytes, KVSIM_PARAM_KV_CACHE_MEMORY_BYTES},
      {GIVEN(blocks_override), a->blocks_override, KVSIM_PARAM_NUM_GPU_BLOCKS_OVERRIDE},
      {true, a->kv_group, KVSIM_PARAM_KV_QUANT_GROUP},
      {true, a->kv_residual, KVSIM_PARAM_KV_RESIDUAL_TOKENS},
      /* Narrowed to int: the plan checks vLLM's own rules (lora.c). */
      {GIVEN(max_loras), a->max_loras, KVSIM_PARAM_MAX_LORAS},
      {GIVEN(max_lora_rank), a->max_lora_rank, KVSIM_PARAM_MAX_LORA_RANK},
      {GIVEN(max_cpu_loras), a->max_cpu_loras, KVSIM_PARAM_MAX_CPU_LORAS},
  };
  for (size_t i = 0; i < sizeof params / sizeof *params; i++)
    if (params[i].given && kvsim_param_check_int(params[i].id, params[i].v,
                                                 kvsim_param_get(params[i].id)->flag, err) < 0)
      return err->code;
  /* calc's own flags: kvsim_plan_reverse's bounds. */
  const int64_t max_tokens = KVSIM_MODEL_MAX_CONTEXT;
  if (kvsim__calc_int_range(GIVEN(target), a->target, 1, INT64_C(1) << 30, "--target-concurrency",
                            err) < 0 ||
      kvsim__calc_int_range(GIVEN(seq_len_s), seq_len, 1, max_tokens, "--seq-len", err) < 0)
    return err->code;
  const struct {
    bool given;
    double v;
    const char *flag;
  } gibs[] = {{GIVEN(w), a->w, "--weights-gib"},
              {GIVEN(act), a->act, "--activation-gib"},
              {GIVEN(nt), a->nt, "--non-torch-gib"},
              {GIVEN(cg), a->cg, "--cuda-graph-gib"}};
  for (size_t i = 0; i < sizeof gibs / sizeof *gibs; i++)
    if (kvsim__calc_gib(gibs[i].given, gibs[i].v, gibs[i].flag, err) < 0)
      return err->code;
#undef GIVEN
  return KVSIM_OK;
}

/* The plan's parameters from the flags (engine, version and dtypes set by
 * the caller). */
static void fill(const vllm_args *a, int64_t mml, kvsim_plan_params_t *p) {
  p->tp = (int)a->tp;
  p->tp_flag = "--tensor-parallel-size";
  p->pp = (int)a->pp;
  p->gpu_memory_utilization = a->util;
  p->max_model_len = mml;
  p->block_size = (int)a->bs;
  p->kv_quant_group = (int)a->kv_group;
  p->kv_residual_tokens = (int)a->kv_residual;
  p->max_num_seqs = a->seqs;
  p->max_num_batched_tokens = a->mbt;
  p->enable_chunked_prefill = a->no_chunked ? 0 : a->chunked ? 1 : -1;
  p->enforce_eager = a->eager;
  p->estimate_cudagraphs = a->est_cg;
  p->disable_hybrid_kv_cache_manager = a->no_hma;
  p->weights_gib = a->w;
  p->activation_gib = a->act;
  p->non_torch_gib = a->nt;
  p->cuda_graph_gib = a->cg;
  p->kv_cache_memory_bytes = a->kvbytes;
  p->num_gpu_blocks_override = a->blocks_override;
  p->swap_space_gib = a->swap; /* range-checked by the plan */
  p->kv_offloading_gib = a->offload;
  p->lora = (kvsim_plan_lora_params_t){a->lora, (int)a->max_loras, (int)a->max_lora_rank,
                                       (int)a->max_cpu_loras, a->lora_sharded};
}

static int compute(const kvsim_calc_args_t *args, kvsim_calc_t *c, kvsim_err *err) {
  const vllm_args *a = (const vllm_args *)args->bytes;
  int64_t mml = 0, seq_len = 0, target = a->target;
  if (kvsim__parse_human_int(a->mml_s, &mml, "--max-model-len", err) < 0 ||
      kvsim__parse_human_int(a->seq_len_s, &seq_len, "--seq-len", err) < 0)
    return err->code;
  if (kvsim__calc_load(&a->c, c, err) < 0)
    return err->code;
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  const kvsim_sched_ops_t *profile = kvsim_sched_find(a->c.engine);
  if (!profile) {
    char names[256];
    kvsim_sched_names(names, sizeof names);
    return kvsim_err_set(err, KVSIM_EINVAL, "--engine: unknown engine '%s' (expected %s)", a->c.engine, names);
  }
  p.engine = profile->plan_engine; /* the profile's memory-plan rules */
  if (a->vllm_version && kvsim_plan_parse_version(a->vllm_version, "--vllm-version", &p.vllm_version, err) < 0)
    return err->code;
  if (kvsim_kv_dtype_parse(a->kv_dtype, &p.kv_dtype) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--kv-cache-dtype: unknown dtype '%s' (expected auto, bfloat16, float16, fp8, "
                         "fp8_e4m3, fp8_e5m2, int8, int4)",
                         a->kv_dtype);
  if (set_dtype(a->dtype, &c->m, err) < 0)
    return err->code;
  if (kvsim__calc_given(args, flags, offsetof(vllm_args, mem_gib))) {
    /* The plan's bound, checked before the GiB -> bytes conversion (1e12
     * GiB overflows int64). */
    double max_gib = (double)KVSIM_GPU_MAX_MEMORY_BYTES / KVSIM_GIB;
    if (!(a->mem_gib >= KVSIM_GPU_MEMORY_MIN_GIB && a->mem_gib <= max_gib))
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "--gpu-memory-gib (hardware.gpu_memory_gib): %g GiB is outside " KVSIM_GPU_MEMORY_RANGE,
                           a->mem_gib);
    p.total_memory_bytes = (int64_t)(a->mem_gib * KVSIM_GIB + 0.5);
  }
  if (check(args, mml, seq_len, err) < 0)
    return err->code;
  fill(a, mml, &p);
  if (a->spec && kvsim_spec_parse_text(a->spec, &p.spec, "--speculative-config", err) < 0)
    return err->code;
  if (kvsim__calc_quant(args, flags, offsetof(vllm_args, quant), p.quantization,
                        sizeof p.quantization, err) < 0)
    return err->code;

  /* Reverse mode: --seq-len is also the plan's max_model_len (unless
   * given), so "Maximum concurrency" and the answer describe one length;
   * without --seq-len the answer is the longest length N requests fit in. */
  c->reverse = target > 0 || seq_len > 0;
  c->seq_len = seq_len;
  if (c->reverse && target <= 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--seq-len needs --target-concurrency");
  if (seq_len > 0 && mml > 0 && mml < seq_len)
    return kvsim_err_set(err, KVSIM_EINVAL, "--seq-len %lld is longer than --max-model-len %lld", (long long)seq_len,
                         (long long)mml);
  if (seq_len > 0 && c->m.max_position_embeddings > 0 && seq_len > c->m.max_position_embeddings)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--seq-len: %lld is greater than the model's max_position_embeddings (%lld)",
                         (long long)seq_len, (long long)c->m.max_position_embeddings);
  if (kvsim_plan_compute(&c->m, &c->g, &p, &c->pl, err) < 0 ||
      (c->reverse && kvsim_plan_reverse(&c->m, &c->g, &p, target, seq_len, &c->rev, err) < 0))
    return err->code;
  if (c->reverse && !mml && (seq_len || c->rev.max_seq_len) && c->rev.seq_len != c->pl.p.max_model_len) {
    p.max_model_len = c->rev.seq_len;
    if (kvsim_plan_compute(&c->m, &c->g, &p, &c->pl, err) < 0)
      return err->code;
  }
  c->answer[0] = '\0';
  if (c->reverse && seq_len > 0)
    kvsim_plan_reverse_answer(&c->rev, c->g.name, c->pl.p.pp, target, c->answer, sizeof c->answer);
  return KVSIM_OK;
}

static void print_json(const vllm_args *a, const kvsim_calc_t *c, const char *ver, FILE *out) {
  const kvsim_plan_t *pl = &c->pl;
  const kvsim_plan_reverse_t *rev = &c->rev;
  cJSON *o = cJSON_CreateObject();
  kvsim_report_plan_json(pl, &c->m, &c->g, o);
  cJSON_AddStringToObject(o, "vllm_version", ver);
  if (a->swap > 0)
    cJSON_AddNumberToObject(o, "num_cpu_blocks", (double)pl->swap_blocks);
  if (a->offload > 0)
    cJSON_AddNumberToObject(o, "num_cpu_offload_blocks", (double)pl->offload_blocks);
  if (c->reverse) {
    cJSON_AddNumberToObject(o, "target_concurrency", (double)a->target);
    cJSON_AddNumberToObject(o, "seq_len", (double)rev->seq_len);
    cJSON_AddNumberToObject(o, "required_kv_bytes", (double)rev->required_kv_bytes);
    cJSON_AddNumberToObject(o, "required_memory_bytes", (double)rev->required_memory_bytes);
    cJSON_AddNumberToObject(o, "min_gpus", rev->min_gpus);
    cJSON_AddNumberToObject(o, "layout_tensor_parallel_size", rev->layout_tp);
    cJSON_AddNumberToObject(o, "layout_replicas", rev->layout_replicas);
    cJSON_AddNumberToObject(o, "requests_per_replica", (double)rev->per_replica);
    cJSON_AddNumberToObject(o, "min_tensor_parallel_size", rev->min_tp);
    if (!c->seq_len)
      cJSON_AddNumberToObject(o, "max_model_len_for_target", (double)rev->max_seq_len);
    else if (!pl->fits) /* one answer: the advice is the reverse answer */
      cJSON_ReplaceItemInObject(o, "advice", cJSON_CreateString(c->answer));
    if (c->seq_len)
      cJSON_AddStringToObject(o, "answer", c->answer);
  }
  kvsim__calc_print_json(o, out);
}

static void print_reverse(const vllm_args *a, const kvsim_calc_t *c, FILE *out) {
  const kvsim_plan_t *pl = &c->pl;
  const kvsim_plan_reverse_t *rev = &c->rev;
  char n[32];
  if (!c->seq_len && rev->max_seq_len > 0)
    fprintf(out, "Reverse: %lld requests fit in max_model_len <= %s tokens each at TP %d on %s%s\n",
            (long long)a->target, kvsim__commas(rev->max_seq_len, n, sizeof n), pl->p.tp, c->g.name,
            rev->max_seq_len == c->m.max_position_embeddings ? " (the model's limit)" : "");
  else if (!c->seq_len)
    fprintf(out, "Reverse: %lld requests do not fit at TP %d on %s at any length\n", (long long)a->target, pl->p.tp,
            c->g.name);
  else {
    fprintf(out, "Reverse: %lld requests x %s tokens need %.2f GiB of KV cache per GPU at TP %d; "
            "a GPU of %.2f GiB total at utilization %.2f\n",
            (long long)a->target, kvsim__commas(c->seq_len, n, sizeof n), (double)rev->required_kv_bytes / KVSIM_GIB,
            pl->p.tp, (double)rev->required_memory_bytes / KVSIM_GIB, pl->p.gpu_memory_utilization);
    if (pl->fits) /* else the "To fit:" line above says it */
      fprintf(out, "Smallest fit: %s\n", c->answer);
  }
}

/* Speculative decoding: the start-up lines vLLM logs while it loads the
 * drafter (gpu_model_runner.py load_model "Loading drafter model...";
 * eagle.py EagleProposer.load_model on sharing the target's embedding and
 * lm_head), then what the drafter costs. */
static void print_spec(const kvsim_plan_t *pl, FILE *out) {
  const kvsim_plan_spec_params_t *sp = &pl->p.spec;
  const bool eagle = sp->method == KVSIM_SPEC_EAGLE || sp->method == KVSIM_SPEC_EAGLE3;
  if (sp->method != KVSIM_SPEC_NGRAM)
    fprintf(out, "Loading drafter model...\n");
  if (eagle)
    fprintf(out, "%s\n", pl->spec_embed_shared
                             ? "Assuming the EAGLE head shares the same vocab embedding with the target model."
                             : "The EAGLE head's vocab embedding will be loaded separately from the target model.");
  if (eagle && pl->spec_lm_head_shared)
    fprintf(out, "Loading EAGLE LM head weights from the target model.\n");
  char a[32], b[32];
  const int64_t target = pl->per_token_kv_bytes - pl->spec_per_token_bytes;
  fprintf(out, "Speculative decoding: %s%s%s%s, %d draft tokens per step", kvsim_spec_method_name(sp->method),
          sp->model[0] ? " (" : "", sp->model, sp->model[0] ? ")" : "", sp->num_speculative_tokens);
  if (sp->method == KVSIM_SPEC_NGRAM) {
    fprintf(out, ": prompt lookup %d-%d on the host, nothing on the GPU, no lookahead slots\n",
            sp->prompt_lookup_min, sp->prompt_lookup_max);
    return;
  }
  fprintf(out, ": drafter weights %.2f GiB per GPU (in the model weights); %d drafter layer%s in every KV "
          "block (KV per token %s -> %s bytes, +%.2f %%); %d lookahead slots per running request\n",
          (double)pl->spec_weights_bytes / KVSIM_GIB, pl->spec_draft_layers, pl->spec_draft_layers == 1 ? "" : "s",
          kvsim__commas(target, a, sizeof a), kvsim__commas(pl->per_token_kv_bytes, b, sizeof b),
          target > 0 ? 100.0 * (double)pl->spec_per_token_bytes / (double)target : 0.0, pl->num_lookahead_tokens);
}

static void print(const kvsim_calc_args_t *args, const kvsim_calc_t *c, FILE *out) {
  const vllm_args *a = (const vllm_args *)args->bytes;
  const kvsim_plan_t *pl = &c->pl;
  char ver[16];
  kvsim_vllm_version_format(pl->p.vllm_version, ver, sizeof ver);
  if (a->c.json) {
    print_json(a, c, ver, out);
    return;
  }
  kvsim_report_plan_text_fit(pl, &c->m, &c->g, c->answer[0] ? c->answer : NULL, out);
  fprintf(out, "vLLM %s sizing rules: %s\n", ver, kvsim_plan_version_rules(pl->p.engine, pl->p.vllm_version));
  if (pl->p.lora.enable)
    fprintf(out, "LoRA: %d slots of rank %d on every qkv_proj, o_proj, gate_up_proj and down_proj: %.2f GiB "
            "per GPU, loaded with the weights (max_cpu_loras %d in host memory)\n",
            pl->p.lora.max_loras, pl->p.lora.max_lora_rank, (double)pl->lora_bytes / KVSIM_GIB,
            pl->p.lora.max_cpu_loras);
  if (pl->p.spec.method != KVSIM_SPEC_NONE)
    print_spec(pl, out);
  if (a->swap > 0)
    fprintf(out, "# CPU blocks: %lld (swap space %.2f GiB)\n", (long long)pl->swap_blocks, a->swap);
  if (a->offload > 0)
    fprintf(out, "CPU offload: %lld blocks of %lld tokens (%.2f GiB over %d GPUs)\n", (long long)pl->offload_blocks,
            (long long)pl->p.block_size, a->offload, pl->p.tp * pl->p.pp);
  if (c->reverse)
    print_reverse(a, c, out);
}

const kvsim_calc_engine_t kvsim__calc_vllm = {"[flags]", flags, defaults, compute, print};
