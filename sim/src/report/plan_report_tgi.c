/* kvsim calc --engine tgi: TGI's warmup sizing, with the launcher's flags
 * and its start-up lines. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "plan_report_calc.h"

typedef struct {
  kvsim_calc_common_t c;
  const char *kv_dtype, *quant, *version, *attention;
  double frac, mem_gib, w, act, nt;
  int64_t shard, in, total, prefill, batch_total;
} tgi_args;

#define F(name, kind, field, help) KVSIM__CALC_FLAG(tgi_args, name, kind, field, help)
#define R(id, kind, field) KVSIM__CALC_PARAM(tgi_args, id, kind, field)
/* The registry's parameters take their flag and help from it (R rows). */
static kvsim_calc_flag_t flags[] = {
    F("--model", STR, c.model, "catalog name, HF id or path to config.json"),
    F("--gpu", STR, c.gpu, "catalog name or path to a GPU JSON (default h100-sxm)"),
    F("--gpu-memory-gib", NUM, mem_gib, "override the GPU's total memory"),
    F("--engine", STR, c.engine, "tgi"),
    R(TGI_VERSION, STR, version),
    R(CUDA_MEMORY_FRACTION, NUM, frac),
    F("--num-shard", INT, shard, "tensor-parallel shards (default 1)"),
    R(ATTENTION, STR, attention),
    R(MAX_INPUT_TOKENS, INT, in),
    F("--max-total-tokens", INT, total,
      "default: min(max batch total tokens, max_position_embeddings)"),
    R(MAX_BATCH_PREFILL_TOKENS, INT, prefill),
    R(MAX_BATCH_TOTAL_TOKENS, INT, batch_total),
    F("--kv-cache-dtype", STR, kv_dtype, "auto, fp8_e4m3fn, fp8_e5m2"),
    F("--quantization", STR, quant, "weight quantization: fp8, awq, gptq, ..."),
    F("--weights-gib", NUM, w, "measured weights (GiB)"),
    F("--activation-gib", NUM, act, "measured warmup activation peak (GiB)"),
    F("--non-torch-gib", NUM, nt, "measured CUDA context and non-torch memory (GiB)"),
    F("--json", FLAG, c.json, "print one JSON object"),
    F("--strict", FLAG, c.strict, "exit 1 when the plan does not fit"),
    {NULL, 0, 0, NULL, 0}};
#undef F
#undef R

static void defaults(kvsim_calc_args_t *a) {
  _Static_assert(sizeof(tgi_args) <= sizeof(kvsim_calc_args_t), "tgi_args fits kvsim_calc_args_t");
  *a = (kvsim_calc_args_t){0}; /* no flag given */
  *(tgi_args *)a->bytes = (tgi_args){{"llama-3.1-8b", "h100-sxm", "tgi", false, false}, "auto", "", "3.3",
                                     "flashinfer", 1.0, -1, -1, -1, -1, 1, 0, 0, 0, 0};
}

/* The release, its attention backend and the KV dtype as TGI spells them. */
static int release_flags(const kvsim_calc_args_t *args, const tgi_args *a, kvsim_plan_params_t *p,
                         kvsim_err *err) {
  if (kvsim_tgi_release_parse(a->version, &p->tgi.version_major, &p->tgi.version_minor,
                              &p->tgi.version_patch) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--tgi-version: '%s' (expected a TGI release 2.0.0 to 2.4.1 or 3.x, e.g. 3.3)",
                         a->version);
  /* Left out, the backend the release's launcher picks. */
  if (!kvsim__calc_given(args, flags, offsetof(tgi_args, attention)))
    p->tgi.attention = kvsim_tgi_default_attention(p->tgi.version_major, p->tgi.version_minor);
  else if (kvsim_tgi_attention_parse(a->attention, &p->tgi.attention) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--attention: '%s' (expected flashinfer, flashdecoding or paged)",
                         a->attention);
  /* TGI spells its FP8 caches fp8_e4m3fn / fp8_e5m2 (launcher/src/main.rs
   * KVCacheDtype). */
  const char *kv_dtype = strcmp(a->kv_dtype, "fp8_e4m3fn") ? a->kv_dtype : "fp8_e4m3";
  if (kvsim_kv_dtype_parse(kv_dtype, &p->kv_dtype) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--kv-cache-dtype: unknown dtype '%s' (expected auto, fp8_e4m3fn, fp8_e5m2)", kv_dtype);
  return KVSIM_OK;
}

/* The token limits: the registry's ranges (0 is only the launcher's
 * default, absent, never a value to type: a given 0 was once silently that
 * default), then text-generation-launcher's argument validation:
 * max_input_tokens < max_total_tokens, and the server's default input
 * limit is max_total_tokens - 1 (0 for a total of 1, which the plan took
 * as fitting). The flags' errors, before any memory is planned. */
static int token_limits(const kvsim_calc_args_t *args, const tgi_args *a, kvsim_err *err) {
  const struct {
    size_t field;
    int64_t v;
    int id;
  } ints[] = {
      {offsetof(tgi_args, in), a->in, KVSIM_PARAM_MAX_INPUT_TOKENS},
      {offsetof(tgi_args, total), a->total, KVSIM_PARAM_MAX_TOTAL_TOKENS},
      {offsetof(tgi_args, prefill), a->prefill, KVSIM_PARAM_MAX_BATCH_PREFILL_TOKENS},
      {offsetof(tgi_args, batch_total), a->batch_total, KVSIM_PARAM_MAX_BATCH_TOTAL_TOKENS},
  };
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
    if (kvsim__calc_given(args, flags, ints[i].field) &&
        kvsim_param_check_int(ints[i].id, ints[i].v,
                              kvsim__calc_flag_name(args, flags, ints[i].field), err) < 0)
      return err->code;
  bool in_given = kvsim__calc_given(args, flags, offsetof(tgi_args, in));
  if (!kvsim__calc_given(args, flags, offsetof(tgi_args, total)))
    return KVSIM_OK;
  if (in_given && a->in >= a->total)
    return kvsim_err_set(err, KVSIM_EINVAL, "--max-input-tokens: %lld must be < --max-total-tokens %lld",
                         (long long)a->in, (long long)a->total);
  if (!in_given && a->total < 2)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--max-total-tokens: %lld leaves max_input_tokens (max_total_tokens - 1) at %lld; "
                         "it must be >= 1 and < max_total_tokens",
                         (long long)a->total, (long long)a->total - 1);
  return KVSIM_OK;
}

static int compute(const kvsim_calc_args_t *args, kvsim_calc_t *c, kvsim_err *err) {
  const tgi_args *a = (const tgi_args *)args->bytes;
  if (kvsim__calc_load(&a->c, c, err) < 0)
    return err->code;
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_TGI;
  if (release_flags(args, a, &p, err) < 0 ||
      kvsim__calc_memory(kvsim__calc_given(args, flags, offsetof(tgi_args, mem_gib)), a->mem_gib,
                         &p.total_memory_bytes, err) < 0)
    return err->code;
  /* TGI's name for the TP degree, the registry's range. */
  if (kvsim_param_check_int(KVSIM_PARAM_TENSOR_PARALLEL_SIZE, a->shard, "--num-shard", err) < 0)
    return err->code;
  const double gibs[] = {a->w, a->act, a->nt};
  const bool given[] = {kvsim__calc_given(args, flags, offsetof(tgi_args, w)),
                        kvsim__calc_given(args, flags, offsetof(tgi_args, act)),
                        kvsim__calc_given(args, flags, offsetof(tgi_args, nt))};
  if (kvsim__calc_measured(gibs, given, err) < 0 || token_limits(args, a, err) < 0)
    return err->code;
  p.tp = (int)a->shard;
  p.tp_flag = "--num-shard"; /* as typed: the plan's default adds the scenario key */
  p.tgi.cuda_memory_fraction = a->frac;
  p.tgi.max_input_tokens = a->in;
  p.tgi.max_total_tokens = a->total;
  p.tgi.max_batch_prefill_tokens = a->prefill;
  p.tgi.max_batch_total_tokens = a->batch_total;
  if (kvsim__calc_quant(args, flags, offsetof(tgi_args, quant), p.quantization,
                        sizeof p.quantization, err) < 0)
    return err->code;
  p.weights_gib = a->w;
  p.activation_gib = a->act;
  p.non_torch_gib = a->nt;
  return kvsim_plan_compute(&c->m, &c->g, &p, &c->pl, err);
}

static double gib(int64_t b) { return (double)b / KVSIM_GIB; }

/* TGI 2.x: the free memory after warmup, then the room times what the
 * fraction leaves of it (flash_causal_lm.py warmup at v2.0.0-v2.4.1). */
static void print_free_2x(const kvsim_plan_t *pl, FILE *out) {
  const kvsim_plan_params_t *p = &pl->p;
  const kvsim_plan_tgi_t *t = &pl->tgi;
  double total = gib(pl->total_memory_bytes),
         warm = (double)t->warmup_blocks * (double)pl->block_bytes / KVSIM_GIB;
  double free_now = total - gib(pl->weights_bytes) - gib(pl->activation_bytes) - gib(pl->non_torch_bytes) - warm;
  int64_t per = t->warmup_requests > 0 ? t->warmup_blocks / t->warmup_requests : 0;
  /* Predicted: the forward's segments plus the logits' (plan_tgi.c warmup_peak). */
  char split[96] = "";
  if (t->prefill_logits_bytes > 0 && p->activation_gib < 0)
    snprintf(split, sizeof split, " (forward %.2f + prefill logprob logits %.2f)",
             gib(pl->activation_bytes - t->prefill_logits_bytes), gib(t->prefill_logits_bytes));
  fprintf(
      out,
      "free memory after warmup: %.2f GiB total - weights %.2f - warmup activation peak %.2f%s - "
      "CUDA context and non-torch %.2f - warmup batch KV %.2f GiB (%lld requests x %lld blocks) = "
      "%.2f GiB\n",
      total, gib(pl->weights_bytes), gib(pl->activation_bytes), split, gib(pl->non_torch_bytes),
      warm, (long long)t->warmup_requests, (long long)per, free_now);
  double left = free_now - (1 - p->tgi.cuda_memory_fraction) * total;
  fprintf(out, "KV budget: TGI_WIGGLE_ROOM %.2f x (free - (1 - cuda_memory_fraction %.2f) x total) = %.2f GiB, "
          "plus the warmup batch's %lld blocks\n",
          t->wiggle_room, p->tgi.cuda_memory_fraction, t->wiggle_room * fmax(0, left),
          (long long)t->warmup_blocks);
}

static void print_text(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g, FILE *out) {
  const kvsim_plan_params_t *p = &pl->p;
  const kvsim_plan_tgi_t *t = &pl->tgi;
  char a[32], b[32], c[32];
  char v[16];
  kvsim_tgi_release_format(p->tgi.version_major, p->tgi.version_minor, p->tgi.version_patch, v,
                           sizeof v);
  fprintf(out, "Model %s on %s: engine tgi %s, --num-shard %d, --attention %s (BLOCK_SIZE %lld, prefix "
          "caching %s), kv_cache_dtype %s\n",
          m->name, g->name, v, p->tp, kvsim_tgi_attention_name(p->tgi.attention),
          (long long)t->block_size, t->prefix_caching ? "on" : "off", kvsim_kv_dtype_name(p->kv_dtype));
  fprintf(out, "KV cache per block: %s bytes (%d layers x BLOCK_SIZE %lld x %lld KV heads x %lld "
          "head_size x %d x %lld bytes); per token %s bytes\n",
          kvsim__commas(pl->block_bytes, a, sizeof a), pl->num_layers, (long long)t->block_size,
          (long long)pl->kv_heads_per_rank, (long long)pl->head_dim, m->mla ? 1 : 2,
          (long long)pl->kv_bytes_per_element, kvsim__commas(pl->per_token_kv_bytes, b, sizeof b));
  /* launcher/src/main.rs, in its words (2.x prints all three defaults). */
  if (t->input_defaulted)
    fprintf(out, "Default `max_input_tokens` to %lld\n", (long long)t->max_input_tokens);
  if (t->total_defaulted)
    fprintf(out, "Default `max_total_tokens` to %lld\n", (long long)t->max_total_tokens);
  if (!p->tgi.max_batch_prefill_tokens)
    fprintf(out, "Default `max_batch_prefill_tokens` to %lld\n", (long long)t->max_batch_prefill_tokens);
  if (t->total_tokens_flag_ignored)
    fprintf(out, "WARN `--max-batch-total-tokens` is deprecated for Flash Attention models.\n");
  if (t->room_on_free)
    print_free_2x(pl, out);
  else
    fprintf(out, "free memory after warmup: %.2f GiB total - weights %.2f - warmup activation peak %.2f - "
            "CUDA context and non-torch %.2f - warmup batch KV %.2f GiB; keeps (1 - "
            "cuda_memory_fraction %.2f x TGI_WIGGLE_ROOM %.2f) x total = %.2f GiB\n",
            gib(pl->total_memory_bytes), gib(pl->weights_bytes), gib(pl->activation_bytes),
            gib(pl->non_torch_bytes), (double)t->warmup_blocks * (double)pl->block_bytes / KVSIM_GIB, p->tgi.cuda_memory_fraction,
            t->wiggle_room, (1 - p->tgi.cuda_memory_fraction * t->wiggle_room) * gib(pl->total_memory_bytes));
  /* server/text_generation_server/models/flash_causal_lm.py
   * FlashCausalLM.warmup and backends/v3/src/lib.rs, in their words. */
  /* The server logs its block count from v2.4.0 on. */
  bool logged = p->tgi.version_major != 2 || p->tgi.version_minor >= 4;
  fprintf(out, "KV-cache blocks%s: %lld, size: %lld\n", logged ? "" : " (not logged before 2.4.0)",
          (long long)t->num_blocks, (long long)t->block_size);
  fprintf(out, "Setting max batch total tokens to %lld\n", (long long)t->max_batch_total_tokens);
  fprintf(out, "max_total_tokens %s, max_input_tokens %s%s\n", kvsim__commas(t->max_total_tokens, a, sizeof a),
          kvsim__commas(t->max_input_tokens, b, sizeof b),
          t->launcher_fixed_defaults ? "" : p->tgi.max_total_tokens ? "" : " (defaults from warmup)");
  fprintf(out, "Maximum concurrency for %s tokens per request: %.2fx (%s usable blocks; block 0 is kept "
          "for health checks)\n",
          kvsim__commas(t->max_total_tokens, a, sizeof a), pl->max_concurrency,
          kvsim__commas(t->num_blocks > 0 ? t->num_blocks - 1 : 0, c, sizeof c));
  if (!pl->fits)
    fprintf(out, "Error: %s\n", pl->error);
}

static void print(const kvsim_calc_args_t *a, const kvsim_calc_t *c, FILE *out) {
  if (!a->common.json) {
    print_text(&c->pl, &c->m, &c->g, out);
    return;
  }
  cJSON *o = cJSON_CreateObject();
  kvsim_report_plan_json(&c->pl, &c->m, &c->g, o);
  kvsim__calc_print_json(o, out);
}

const kvsim_calc_engine_t kvsim__calc_tgi = {"--engine tgi [flags]", flags, defaults, compute, print};
