/* kvsim calc --engine tgi: TGI's warmup sizing, with the launcher's flags
 * and its start-up lines. */
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

static void print_text(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g) {
  const kvsim_plan_params_t *p = &pl->p;
  const kvsim_plan_tgi_t *t = &pl->tgi;
  char a[32], b[32], c[32];
  printf("Model %s on %s: engine tgi 3.%d, --num-shard %d, --attention %s (BLOCK_SIZE %lld, prefix "
         "caching %s), kv_cache_dtype %s\n",
         m->name, g->name, p->tgi.version_minor, p->tp, kvsim_tgi_attention_name(p->tgi.attention),
         (long long)t->block_size, t->prefix_caching ? "on" : "off", kvsim_kv_dtype_name(p->kv_dtype));
  printf("KV cache per block: %s bytes (%d layers x BLOCK_SIZE %lld x %lld KV heads x %lld "
         "head_size x %d x %lld bytes); per token %s bytes\n",
         kvsim__commas(pl->block_bytes, a, sizeof a), pl->num_layers, (long long)t->block_size,
         (long long)pl->kv_heads_per_rank, (long long)pl->head_dim, m->mla ? 1 : 2,
         (long long)pl->kv_bytes_per_element, kvsim__commas(pl->per_token_kv_bytes, b, sizeof b));
  if (!p->tgi.max_batch_prefill_tokens)
    printf("Default `max_batch_prefill_tokens` to %lld\n", (long long)t->max_batch_prefill_tokens);
  if (t->total_tokens_flag_ignored)
    printf("WARN `--max-batch-total-tokens` is deprecated for Flash Attention models.\n");
  printf("free memory after warmup: %.2f GiB total - weights %.2f - warmup activation peak %.2f - "
         "CUDA context and non-torch %.2f - warmup batch KV %.2f GiB; keeps (1 - "
         "cuda_memory_fraction %.2f x TGI_WIGGLE_ROOM %.2f) x total = %.2f GiB\n",
         gib(pl->total_memory_bytes), gib(pl->weights_bytes), gib(pl->activation_bytes),
         gib(pl->non_torch_bytes), gib(t->warmup_blocks * pl->block_bytes), p->tgi.cuda_memory_fraction,
         t->wiggle_room, (1 - p->tgi.cuda_memory_fraction * t->wiggle_room) * gib(pl->total_memory_bytes));
  /* flash_causal_lm.py warmup and backends/v3/src/lib.rs, in their words. */
  printf("KV-cache blocks: %lld, size: %lld\n", (long long)t->num_blocks, (long long)t->block_size);
  printf("Setting max batch total tokens to %lld\n", (long long)t->max_batch_total_tokens);
  printf("max_total_tokens %s, max_input_tokens %s%s\n", kvsim__commas(t->max_total_tokens, a, sizeof a),
         kvsim__commas(t->max_input_tokens, b, sizeof b),
         p->tgi.max_total_tokens ? "" : " (defaults from warmup)");
  printf("Maximum concurrency for %s tokens per request: %.2fx (%s usable blocks; block 0 is kept "
         "for health checks)\n",
         kvsim__commas(t->max_total_tokens, a, sizeof a), pl->max_concurrency,
         kvsim__commas(t->num_blocks > 0 ? t->num_blocks - 1 : 0, c, sizeof c));
  if (!pl->fits)
    printf("Error: %s\n", pl->error);
}

static void print_json(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g) {
  cJSON *o = cJSON_CreateObject();
  kvsim_report_plan_json(pl, m, g, o);
  char *s = kvsim_report_json_string(o);
  puts(s);
  free(s);
  cJSON_Delete(o);
}

int calc_tgi(int argc, char **argv) {
  const char *model = "llama-3.1-8b", *gpu = "h100-sxm", *engine = "tgi", *kv_dtype = "auto";
  const char *quant = "", *version = "3.3", *attention = "flashinfer";
  double frac = 1.0, mem_gib = -1, w = -1, act = -1, nt = -1;
  int64_t shard = 1, in = 0, total = 0, prefill = 0, batch_total = 0;
  bool json = false, strict = false;
  const cli_arg args[] = {
      {"--model", ARG_STR, &model, "catalog name, HF id or path to config.json", NULL},
      {"--gpu", ARG_STR, &gpu, "catalog name or path to a GPU JSON (default h100-sxm)", NULL},
      {"--gpu-memory-gib", ARG_NUM, &mem_gib, "override the GPU's total memory", NULL},
      {"--engine", ARG_STR, &engine, "tgi", NULL},
      {"--tgi-version", ARG_STR, &version, "TGI 3.x version: 3.0 (wiggle room 0.95), 3.1-3.2 (0.93), 3.3+ (0.90; default)", NULL},
      {"--cuda-memory-fraction", ARG_NUM, &frac, "fraction of total memory TGI may use (default 1.0)", NULL},
      {"--num-shard", ARG_INT, &shard, "tensor-parallel shards (default 1)", NULL},
      {"--attention", ARG_STR, &attention, "flashinfer (default, BLOCK_SIZE 1), flashdecoding (256), paged (16)", NULL},
      {"--max-input-tokens", ARG_INT, &in, "default: max_total_tokens - 1", NULL},
      {"--max-total-tokens", ARG_INT, &total, "default: min(max batch total tokens, max_position_embeddings)", NULL},
      {"--max-batch-prefill-tokens", ARG_INT, &prefill, "warmup prefill budget (default 4096)", NULL},
      {"--max-batch-total-tokens", ARG_INT, &batch_total, "ignored by flash models (as TGI warns)", NULL},
      {"--kv-cache-dtype", ARG_STR, &kv_dtype, "auto, fp8_e4m3fn, fp8_e5m2", NULL},
      {"--quantization", ARG_STR, &quant, "weight quantization: fp8, awq, gptq, ...", NULL},
      {"--weights-gib", ARG_NUM, &w, "measured weights (GiB)", NULL},
      {"--activation-gib", ARG_NUM, &act, "measured warmup activation peak (GiB)", NULL},
      {"--non-torch-gib", ARG_NUM, &nt, "measured CUDA context and non-torch memory (GiB)", NULL},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--strict", ARG_FLAG, &strict, "exit 1 when the plan does not fit", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("calc", "--engine tgi [flags]", args, argc, argv, 2, pos, 0, &npos);
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
  p.engine = KVSIM_PLAN_TGI;
  if (kvsim_tgi_version_parse(version, &p.tgi.version_minor) < 0)
    return cli_fail("calc", "--tgi-version: '%s' (expected a TGI 3.x version, e.g. 3.3)", version);
  if (kvsim_tgi_attention_parse(attention, &p.tgi.attention) < 0)
    return cli_fail("calc", "--attention: '%s' (expected flashinfer, flashdecoding or paged)", attention);
  /* TGI spells its FP8 caches fp8_e4m3fn / fp8_e5m2. */
  if (!strcmp(kv_dtype, "fp8_e4m3fn"))
    kv_dtype = "fp8_e4m3";
  if (kvsim_kv_dtype_parse(kv_dtype, &p.kv_dtype) < 0)
    return cli_fail("calc", "--kv-cache-dtype: unknown dtype '%s' (expected auto, fp8_e4m3fn, fp8_e5m2)", kv_dtype);
  double max_gib = (double)KVSIM_GPU_MAX_MEMORY_BYTES / KVSIM_GIB;
  if (mem_gib != -1 && !(mem_gib > 0 && mem_gib <= max_gib))
    return cli_fail("calc", "--gpu-memory-gib: %g GiB is out of range (0, %g]", mem_gib, max_gib);
  if (mem_gib > 0)
    p.total_memory_bytes = (int64_t)(mem_gib * KVSIM_GIB + 0.5);
  if (shard < 1 || shard > KVSIM_PLAN_MAX_PARALLEL)
    return cli_fail("calc", "--num-shard: %lld must be in [1, %d]", (long long)shard, KVSIM_PLAN_MAX_PARALLEL);
  const double gibs[] = {w, act, nt};
  for (int i = 0; i < 3; i++)
    if (gibs[i] != -1 && !(gibs[i] >= 0 && gibs[i] <= KVSIM_PLAN_MAX_GIB))
      return cli_fail("calc", "%s: %g GiB is out of range [0, %g]",
                      i == 0 ? "--weights-gib" : i == 1 ? "--activation-gib" : "--non-torch-gib", gibs[i],
                      KVSIM_PLAN_MAX_GIB);
  p.tp = (int)shard;
  p.tgi.cuda_memory_fraction = frac;
  p.tgi.max_input_tokens = in;
  p.tgi.max_total_tokens = total;
  p.tgi.max_batch_prefill_tokens = prefill;
  p.tgi.max_batch_total_tokens = batch_total;
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
