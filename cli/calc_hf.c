/* kvsim calc --engine hf-transformers: the memory of a Transformers cache
 * class, the seeds' 2 x B x L x T x Hkv x D x S plus what the class adds. */
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

static void bytes_line(const char *what, int64_t b) {
  char a[32];
  printf("%s: %s bytes = %.2f GiB (%.2f GB)\n", what, kvsim__commas(b, a, sizeof a),
         (double)b / KVSIM_GIB, (double)b / 1e9);
}

static void print_text(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g) {
  const kvsim_plan_params_t *p = &pl->p;
  const kvsim_plan_hf_params_t *h = &p->hf;
  const kvsim_plan_hf_t *o = &pl->hf;
  char a[32], b[32], f[160];
  static const char *const cls[] = {"DynamicCache", "StaticCache", "QuantizedCache",
                                    "DynamicCache(offloading=True)"};
  printf("Model %s on %s: engine hf-transformers, cache %s (%s), batch %lld, max_cache_len %s, "
         "dtype %s\n",
         m->name, g->name, kvsim_hf_cache_name(h->cache), cls[h->cache], (long long)h->batch,
         kvsim__commas(h->max_cache_len, a, sizeof a), m->dtype);
  if (h->cache == KVSIM_HF_QUANTIZED)
    snprintf(f, sizeof f, "%d bits / 8", h->nbits);
  else
    snprintf(f, sizeof f, "%d bytes", (int)pl->kv_bytes_per_element);
  printf("KV cache = 2 x B %lld x L %d x T %s x Hkv %lld x D %lld x S %s%s\n", (long long)h->batch,
         pl->num_layers, kvsim__commas(h->max_cache_len, b, sizeof b), (long long)pl->kv_heads_per_rank,
         (long long)pl->head_dim, f,
         m->num_sliding_layers && m->sliding_window
             ? " (sliding-window layers hold only their window)"
             : "");
  bytes_line(h->cache == KVSIM_HF_QUANTIZED ? "Quantized KV" : "KV cache", o->kv_bytes);
  if (h->cache == KVSIM_HF_QUANTIZED) {
    printf("Scales and zero points: one of each (%s) per %d elements\n", m->dtype, h->q_group_size);
    bytes_line("Scale and zero-point bytes", o->scale_bytes);
    printf("Residual: up to %d tokens per sequence kept in %s\n", h->residual_length, m->dtype);
    bytes_line("Residual bytes", o->residual_bytes);
    bytes_line("Quantized cache total", o->kv_bytes + o->scale_bytes + o->residual_bytes);
  }
  if (h->cache == KVSIM_HF_OFFLOADED) {
    bytes_line("On the GPU (two layers: the one updated and the one prefetched)", o->gpu_bytes);
    bytes_line("In host memory", o->host_bytes);
    double s = (double)(o->gpu_bytes + o->host_bytes) / (g->host_link_GBps * 1e9);
    printf("Each step streams the cache over the host link (%.0f GB/s): %.1f ms at full length\n",
           g->host_link_GBps, s * 1e3);
  }
  printf("GPU: %.2f GiB total - weights %.2f - prefill activation peak %.2f - CUDA context and "
         "non-torch %.2f = %.2f GiB free for the cache\n",
         (double)pl->total_memory_bytes / KVSIM_GIB, (double)pl->weights_bytes / KVSIM_GIB,
         (double)pl->activation_bytes / KVSIM_GIB, (double)pl->non_torch_bytes / KVSIM_GIB,
         (double)pl->available_kv_bytes / KVSIM_GIB);
  printf("Per token: %s bytes; sequences of %s tokens that fit: %.0f; %s\n",
         kvsim__commas(o->per_token_bytes, a, sizeof a), kvsim__commas(h->max_cache_len, b, sizeof b),
         pl->max_concurrency, pl->fits ? "the cache fits" : "the cache does not fit");
  if (!pl->fits)
    printf("%s\nLargest max_cache_len that fits at batch %lld: %lld\n", pl->error, (long long)h->batch,
           (long long)pl->max_model_len_fit);
}

static void print_json(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g) {
  cJSON *o = cJSON_CreateObject();
  kvsim_report_plan_json(pl, m, g, o);
  char *s = kvsim_report_json_string(o);
  puts(s);
  free(s);
  cJSON_Delete(o);
}

int calc_hf(int argc, char **argv) {
  const char *model = "llama-3.1-8b", *gpu = "h100-sxm", *engine = "hf-transformers";
  const char *cache = "dynamic", *quant = "", *kv_dtype = "auto";
  double mem_gib = -1, w = -1, act = -1, nt = -1;
  int64_t batch = 1, len = 0, nbits = 4, group = 64, residual = 128;
  bool json = false, strict = false;
  const cli_arg args[] = {
      {"--model", ARG_STR, &model, "catalog name, HF id or path to config.json", NULL},
      {"--gpu", ARG_STR, &gpu, "catalog name or path to a GPU JSON (default h100-sxm)", NULL},
      {"--gpu-memory-gib", ARG_NUM, &mem_gib, "override the GPU's total memory", NULL},
      {"--engine", ARG_STR, &engine, "hf-transformers", NULL},
      {"--cache", ARG_STR, &cache, "dynamic (default), static, quantized, offloaded", NULL},
      {"--batch", ARG_INT, &batch, "sequences per generate() batch (default 1)", NULL},
      {"--max-cache-len", ARG_INT, &len, "cache length in tokens (default: max_position_embeddings)", NULL},
      {"--nbits", ARG_INT, &nbits, "quantized: 2 or 4 (default 4)", NULL},
      {"--q-group-size", ARG_INT, &group, "quantized: elements per scale/zero point (default 64)", NULL},
      {"--residual-length", ARG_INT, &residual, "quantized: tokens kept unquantized (default 128)", NULL},
      {"--kv-cache-dtype", ARG_STR, &kv_dtype, "auto (the model dtype), bfloat16, float16", NULL},
      {"--quantization", ARG_STR, &quant, "weight quantization: fp8, awq, gptq, ...", NULL},
      {"--weights-gib", ARG_NUM, &w, "measured weights (GiB)", NULL},
      {"--activation-gib", ARG_NUM, &act, "measured prefill activation peak (GiB)", NULL},
      {"--non-torch-gib", ARG_NUM, &nt, "measured CUDA context and non-torch memory (GiB)", NULL},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--strict", ARG_FLAG, &strict, "exit 1 when the cache does not fit", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("calc", "--engine hf-transformers [flags]", args, argc, argv, 2, pos, 0, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  kvsim_err err = {0};
  kvsim_model_t m;
  kvsim_gpu_t g;
  if (kvsim_model_load(model, &m, &err) < 0)
    return cli_fail("calc", "--model: %s", err.msg);
  if (kvsim_gpu_load(gpu, &g, &err) < 0)
    return cli_fail("calc", "--gpu: %s", err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_HF;
  if (kvsim_hf_cache_parse(cache, &p.hf.cache) < 0)
    return cli_fail("calc", "--cache: '%s' (expected dynamic, static, quantized or offloaded)", cache);
  if (kvsim_kv_dtype_parse(kv_dtype, &p.kv_dtype) < 0)
    return cli_fail("calc", "--kv-cache-dtype: unknown dtype '%s' (expected auto, bfloat16, float16)", kv_dtype);
  double max_gib = (double)KVSIM_GPU_MAX_MEMORY_BYTES / KVSIM_GIB;
  if (mem_gib != -1 && !(mem_gib > 0 && mem_gib <= max_gib))
    return cli_fail("calc", "--gpu-memory-gib: %g GiB is out of range (0, %g]", mem_gib, max_gib);
  if (mem_gib > 0)
    p.total_memory_bytes = (int64_t)(mem_gib * KVSIM_GIB + 0.5);
  if (batch < 1 || batch > KVSIM_PLAN_MAX_SEQS)
    return cli_fail("calc", "--batch: %lld is out of range [1, %lld]", (long long)batch, (long long)KVSIM_PLAN_MAX_SEQS);
  if (len < 0 || group < 1 || group > 1 << 20 || residual < 0 || residual > KVSIM_MODEL_MAX_CONTEXT)
    return cli_fail("calc", "--max-cache-len, --q-group-size and --residual-length must be >= 0 (group >= 1) "
                            "and at most 2^30 (group 2^20)");
  const double gibs[] = {w, act, nt};
  for (int i = 0; i < 3; i++)
    if (gibs[i] != -1 && !(gibs[i] >= 0 && gibs[i] <= KVSIM_PLAN_MAX_GIB))
      return cli_fail("calc", "%s: %g GiB is out of range [0, %g]",
                      i == 0 ? "--weights-gib" : i == 1 ? "--activation-gib" : "--non-torch-gib", gibs[i],
                      KVSIM_PLAN_MAX_GIB);
  p.hf.batch = batch;
  p.hf.max_cache_len = len;
  p.hf.nbits = (int)(nbits < -1 || nbits > 64 ? -1 : nbits);
  p.hf.q_group_size = (int)group;
  p.hf.residual_length = (int)residual;
  snprintf(p.quantization, sizeof p.quantization, "%s", quant);
  p.weights_gib = w;
  p.activation_gib = act;
  p.non_torch_gib = nt;
  kvsim_plan_t pl;
  if (kvsim_plan_compute(&m, &g, &p, &pl, &err) < 0)
    return cli_fail("calc", "%s", err.msg);
  if (json)
    print_json(&pl, &m, &g);
  else
    print_text(&pl, &m, &g);
  return strict && !pl.fits ? 1 : 0;
}
