/* kvsim calc --compare-engines: each engine's pool for one model, GPU and
 * memory fraction, side by side; and calc's choice of flag table. */
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
#include "kvsim/sched.h"

int calc_engine_dispatch(int argc, char **argv) {
  for (int i = 2; i < argc; i++)
    if (!strcmp(argv[i], "--compare-engines"))
      return calc_compare(argc, argv);
  const char *name = cli_flag_value(argc, argv, 2, "--engine");
  const kvsim_sched_ops_t *ops = name ? kvsim_sched_find(name) : NULL;
  if (ops && ops->plan_engine == KVSIM_PLAN_SGLANG)
    return cmd_calc_sglang(argc, argv);
  if (ops && ops->plan_engine == KVSIM_PLAN_TGI)
    return calc_tgi(argc, argv);
  if (ops && ops->plan_engine == KVSIM_PLAN_HF)
    return calc_hf(argc, argv);
  return -1;
}

static void print_json(const kvsim_plan_compare_row_t *rows, int n, const kvsim_model_t *m,
                       const kvsim_gpu_t *g, double frac, int64_t seq_len) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "model", m->name);
  cJSON_AddStringToObject(o, "gpu", g->name);
  cJSON_AddNumberToObject(o, "memory_fraction", frac);
  cJSON_AddNumberToObject(o, "seq_len", (double)seq_len);
  cJSON *a = cJSON_AddArrayToObject(o, "engines");
  for (int i = 0; i < n; i++) {
    const kvsim_plan_compare_row_t *r = &rows[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "engine", r->engine->name);
    if (r->rc < 0) {
      cJSON_AddStringToObject(e, "error", r->error);
    } else {
      cJSON_AddStringToObject(e, "settings", r->settings);
      cJSON_AddNumberToObject(e, "kv_cache_tokens", (double)r->plan.kv_cache_tokens);
      cJSON_AddNumberToObject(e, "available_kv_bytes", (double)r->plan.available_kv_bytes);
      cJSON_AddNumberToObject(e, "max_concurrency", r->plan.max_concurrency);
      cJSON_AddBoolToObject(e, "fits", r->plan.fits);
    }
    cJSON_AddItemToArray(a, e);
  }
  char *s = kvsim_report_json_string(o);
  puts(s);
  free(s);
  cJSON_Delete(o);
}

int calc_compare(int argc, char **argv) {
  const char *model = "llama-3.1-8b", *gpu = "h100-sxm", *kv_dtype = "auto", *quant = "";
  const char *seq_s = "8192";
  double frac = 0.9, mem_gib = -1;
  int64_t tp = 1, seq_len = 0;
  bool json = false, cmp = false;
  const cli_arg args[] = {
      {"--compare-engines", ARG_FLAG, &cmp, "each engine's pool side by side", NULL},
      {"--model", ARG_STR, &model, "catalog name, HF id or path to config.json", NULL},
      {"--gpu", ARG_STR, &gpu, "catalog name or path to a GPU JSON (default h100-sxm)", NULL},
      {"--gpu-memory-gib", ARG_NUM, &mem_gib, "override the GPU's total memory", NULL},
      {"--tensor-parallel-size", ARG_INT, &tp, "TP degree (TGI --num-shard; default 1)", NULL},
      {"--memory-fraction", ARG_NUM, &frac, "each engine's own fraction (vLLM gpu_memory_utilization, TGI cuda_memory_fraction, ...; default 0.9)", NULL},
      {"--seq-len", ARG_STR, &seq_s, "tokens per request for max concurrency (default 8192, at most the model's)", NULL},
      {"--kv-cache-dtype", ARG_STR, &kv_dtype, "auto, bfloat16, float16, fp8", NULL},
      {"--quantization", ARG_STR, &quant, "weight quantization: fp8, awq, gptq, ...", NULL},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("calc", "--compare-engines [flags]", args, argc, argv, 2, pos, 0, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  kvsim_err err = {0};
  if (kvsim__parse_human_int(seq_s, &seq_len, "--seq-len", &err) < 0)
    return cli_fail("calc", "%s", err.msg);
  kvsim_model_t m;
  kvsim_gpu_t g;
  if (kvsim_model_load(model, &m, &err) < 0)
    return cli_fail("calc", "--model: %s", err.msg);
  if (kvsim_gpu_load(gpu, &g, &err) < 0)
    return cli_fail("calc", "--gpu: %s", err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  if (kvsim_kv_dtype_parse(kv_dtype, &p.kv_dtype) < 0)
    return cli_fail("calc", "--kv-cache-dtype: unknown dtype '%s' (expected auto, bfloat16, float16, fp8)", kv_dtype);
  double max_gib = (double)KVSIM_GPU_MAX_MEMORY_BYTES / KVSIM_GIB;
  if (mem_gib != -1 && !(mem_gib > 0 && mem_gib <= max_gib))
    return cli_fail("calc", "--gpu-memory-gib: %g GiB is out of range (0, %g]", mem_gib, max_gib);
  if (mem_gib > 0)
    p.total_memory_bytes = (int64_t)(mem_gib * KVSIM_GIB + 0.5);
  if (tp < 1 || tp > KVSIM_PLAN_MAX_PARALLEL)
    return cli_fail("calc", "--tensor-parallel-size: %lld must be in [1, %d]", (long long)tp, KVSIM_PLAN_MAX_PARALLEL);
  p.tp = (int)tp;
  snprintf(p.quantization, sizeof p.quantization, "%s", quant);
  if (m.max_position_embeddings > 0 && seq_len > m.max_position_embeddings)
    seq_len = m.max_position_embeddings;
  kvsim_plan_compare_row_t rows[16];
  int n = 0;
  if (kvsim_plan_compare(&m, &g, &p, frac, seq_len, rows, 16, &n, &err) < 0)
    return cli_fail("calc", "%s", err.msg);
  if (json) {
    print_json(rows, n, &m, &g, frac, seq_len);
    return 0;
  }
  char a[32], b[32];
  printf("Engines on %s, %s x TP %d, memory fraction %.2f, requests of %s tokens:\n", m.name, g.name,
         p.tp, frac, kvsim__commas(seq_len, a, sizeof a));
  printf("%-16s %14s %12s %16s  %s\n", "engine", "pool tokens", "pool GiB", "max concurrency",
         "settings");
  for (int i = 0; i < n; i++) {
    const kvsim_plan_compare_row_t *r = &rows[i];
    if (r->rc < 0) {
      printf("%-16s %14s %12s %16s  %s\n", r->engine->name, "-", "-", "-", r->error);
      continue;
    }
    snprintf(b, sizeof b, "%.2f", (double)r->plan.available_kv_bytes / KVSIM_GIB);
    printf("%-16s %14s %12s %15.2fx  %s%s\n", r->engine->name,
           kvsim__commas(r->plan.kv_cache_tokens, a, sizeof a), b, r->plan.max_concurrency,
           r->settings, r->plan.fits ? "" : " (does not fit)");
  }
  return 0;
}
