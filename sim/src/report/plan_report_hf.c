/* kvsim calc --engine hf-transformers: the memory of a Transformers cache
 * class, the seeds' 2 x B x L x T x Hkv x D x S plus what the class adds. */
#include <stdio.h>

#include "core/util.h"
#include "plan_report_calc.h"

typedef struct {
  kvsim_calc_common_t c;
  const char *cache, *quant, *kv_dtype;
  double mem_gib, w, act, nt;
  int64_t batch, len, nbits, group, residual;
} hf_args;

#define F(name, kind, field, help) KVSIM__CALC_FLAG(hf_args, name, kind, field, help)
#define R(id, kind, field) KVSIM__CALC_PARAM(hf_args, id, kind, field)
/* The registry's parameters take their flag and help from it (R rows). */
static kvsim_calc_flag_t flags[] = {
    F("--model", STR, c.model, "catalog name, HF id or path to config.json"),
    F("--gpu", STR, c.gpu, "catalog name or path to a GPU JSON (default h100-sxm)"),
    F("--gpu-memory-gib", NUM, mem_gib, "override the GPU's total memory"),
    F("--engine", STR, c.engine, "hf-transformers"),
    R(CACHE, STR, cache),
    R(BATCH, INT, batch),
    R(MAX_CACHE_LEN, INT, len),
    R(NBITS, INT, nbits),
    R(Q_GROUP_SIZE, INT, group),
    R(RESIDUAL_LENGTH, INT, residual),
    F("--kv-cache-dtype", STR, kv_dtype, "auto (the model dtype), bfloat16, float16"),
    F("--quantization", STR, quant, "weight quantization: fp8, awq, gptq, ..."),
    F("--weights-gib", NUM, w, "measured weights (GiB)"),
    F("--activation-gib", NUM, act, "measured prefill activation peak (GiB)"),
    F("--non-torch-gib", NUM, nt, "measured CUDA context and non-torch memory (GiB)"),
    F("--json", FLAG, c.json, "print one JSON object"),
    F("--strict", FLAG, c.strict, "exit 1 when the cache does not fit"),
    {NULL, 0, 0, NULL, 0}};
#undef F
#undef R

static void defaults(kvsim_calc_args_t *a) {
  _Static_assert(sizeof(hf_args) <= sizeof(kvsim_calc_args_t), "hf_args fits kvsim_calc_args_t");
  *a = (kvsim_calc_args_t){0}; /* no flag given */
  *(hf_args *)a->bytes = (hf_args){{"llama-3.1-8b", "h100-sxm", "hf-transformers", false, false},
                                   "dynamic", "", "auto", -1, -1, -1, -1, 1, 0, 4, 64, 128};
}

static int compute(const kvsim_calc_args_t *args, kvsim_calc_t *c, kvsim_err *err) {
  const hf_args *a = (const hf_args *)args->bytes;
  if (kvsim__calc_load(&a->c, c, err) < 0)
    return err->code;
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_HF;
  if (kvsim_hf_cache_parse(a->cache, &p.hf.cache) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--cache: '%s' (expected dynamic, static, quantized or offloaded)",
                         a->cache);
  if (kvsim_kv_dtype_parse(a->kv_dtype, &p.kv_dtype) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--kv-cache-dtype: unknown dtype '%s' (expected auto, bfloat16, float16)",
                         a->kv_dtype);
  if (kvsim__calc_memory(kvsim__calc_given(args, flags, offsetof(hf_args, mem_gib)), a->mem_gib,
                         &p.total_memory_bytes, err) < 0)
    return err->code;
  /* Each names its flag and the registry's range. --max-cache-len 0 is
   * only the default (absent: max_position_embeddings), never a value to
   * type; given, it was silently that default. The others' defaults are
   * values (1, 64, 128). */
  const struct {
    bool given;
    int64_t v;
    int id;
  } ints[] = {
      {true, a->batch, KVSIM_PARAM_BATCH},
      {kvsim__calc_given(args, flags, offsetof(hf_args, len)), a->len, KVSIM_PARAM_MAX_CACHE_LEN},
      {true, a->group, KVSIM_PARAM_Q_GROUP_SIZE},
      {true, a->residual, KVSIM_PARAM_RESIDUAL_LENGTH},
  };
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
    if (ints[i].given &&
        kvsim_param_check_int(ints[i].id, ints[i].v, kvsim_param_get(ints[i].id)->flag, err) < 0)
      return err->code;
  /* transformers' QuantizedCache with the quanto backend takes nbits 2 or 4
   * (QuantoQuantizedLayer; HQQ's other widths are not modelled). Checked
   * whatever --cache is: a given 0 or 3 was silently kept or ignored. */
  if (a->nbits != 2 && a->nbits != 4)
    return kvsim_err_set(
        err, KVSIM_EINVAL,
        "--nbits: %lld is out of range (2 or 4: transformers' quanto QuantizedCache)",
        (long long)a->nbits);
  const double gibs[] = {a->w, a->act, a->nt};
  const bool given[] = {kvsim__calc_given(args, flags, offsetof(hf_args, w)),
                        kvsim__calc_given(args, flags, offsetof(hf_args, act)),
                        kvsim__calc_given(args, flags, offsetof(hf_args, nt))};
  if (kvsim__calc_measured(gibs, given, err) < 0)
    return err->code;
  p.hf.batch = a->batch;
  p.hf.max_cache_len = a->len;
  p.hf.nbits = (int)a->nbits;
  p.hf.q_group_size = (int)a->group;
  p.hf.residual_length = (int)a->residual;
  if (kvsim__calc_quant(args, flags, offsetof(hf_args, quant), p.quantization,
                        sizeof p.quantization, err) < 0)
    return err->code;
  p.weights_gib = a->w;
  p.activation_gib = a->act;
  p.non_torch_gib = a->nt;
  return kvsim_plan_compute(&c->m, &c->g, &p, &c->pl, err);
}

static void bytes_line(FILE *out, const char *what, int64_t b) {
  char a[32];
  fprintf(out, "%s: %s bytes = %.2f GiB (%.2f GB)\n", what, kvsim__commas(b, a, sizeof a), (double)b / KVSIM_GIB,
          (double)b / 1e9);
}

static void print_text(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g, FILE *out) {
  const kvsim_plan_hf_params_t *h = &pl->p.hf;
  const kvsim_plan_hf_t *o = &pl->hf;
  char a[32], b[32], f[160];
  /* src/transformers/cache_utils.py class names. */
  static const char *const cls[] = {"DynamicCache", "StaticCache", "QuantizedCache",
                                    "DynamicCache(offloading=True)"};
  fprintf(out, "Model %s on %s: engine hf-transformers, cache %s (%s), batch %lld, max_cache_len %s, dtype %s\n",
          m->name, g->name, kvsim_hf_cache_name(h->cache), cls[h->cache], (long long)h->batch,
          kvsim__commas(h->max_cache_len, a, sizeof a), m->dtype);
  if (h->cache == KVSIM_HF_QUANTIZED)
    snprintf(f, sizeof f, "%d bits / 8", h->nbits);
  else
    snprintf(f, sizeof f, "%d bytes", (int)pl->kv_bytes_per_element);
  fprintf(out, "KV cache = 2 x B %lld x L %d x T %s x Hkv %lld x D %lld x S %s%s\n", (long long)h->batch,
          pl->num_layers, kvsim__commas(h->max_cache_len, b, sizeof b), (long long)pl->kv_heads_per_rank,
          (long long)pl->head_dim, f,
          m->num_sliding_layers && m->sliding_window ? " (sliding-window layers hold only their window)" : "");
  bytes_line(out, h->cache == KVSIM_HF_QUANTIZED ? "Quantized KV" : "KV cache", o->kv_bytes);
  if (h->cache == KVSIM_HF_QUANTIZED) {
    fprintf(out, "Scales and zero points: one of each (%s) per %d elements\n", m->dtype, h->q_group_size);
    bytes_line(out, "Scale and zero-point bytes", o->scale_bytes);
    fprintf(out, "Residual: up to %d tokens per sequence kept in %s\n", h->residual_length, m->dtype);
    bytes_line(out, "Residual bytes", o->residual_bytes);
    bytes_line(out, "Quantized cache total", o->kv_bytes + o->scale_bytes + o->residual_bytes);
  }
  if (h->cache == KVSIM_HF_OFFLOADED) {
    bytes_line(out, "On the GPU (two layers: the one updated and the one prefetched)", o->gpu_bytes);
    bytes_line(out, "In host memory", o->host_bytes);
    double s = (double)(o->gpu_bytes + o->host_bytes) / (g->host_link_GBps * 1e9);
    fprintf(out, "Each step streams the cache over the host link (%.0f GB/s): %.1f ms at full length\n",
            g->host_link_GBps, s * 1e3);
  }
  fprintf(out, "GPU: %.2f GiB total - weights %.2f - prefill activation peak %.2f - CUDA context and "
          "non-torch %.2f = %.2f GiB free for the cache\n",
          (double)pl->total_memory_bytes / KVSIM_GIB, (double)pl->weights_bytes / KVSIM_GIB,
          (double)pl->activation_bytes / KVSIM_GIB, (double)pl->non_torch_bytes / KVSIM_GIB,
          (double)pl->available_kv_bytes / KVSIM_GIB);
  fprintf(out, "Per token: %s bytes; sequences of %s tokens that fit: %.0f; %s\n",
          kvsim__commas(o->per_token_bytes, a, sizeof a), kvsim__commas(h->max_cache_len, b, sizeof b),
          pl->max_concurrency, pl->fits ? "the cache fits" : "the cache does not fit");
  if (!pl->fits)
    fprintf(out, "%s\nLargest max_cache_len that fits at batch %lld: %lld\n", pl->error, (long long)h->batch,
            (long long)pl->max_model_len_fit);
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

const kvsim_calc_engine_t kvsim__calc_hf = {"--engine hf-transformers [flags]", flags, defaults, compute, print};
