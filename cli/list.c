/* kvsim list models|gpus|params: what the built-in catalog holds, so that a
 * user can pick a --model or --gpu name without reading configs/, and the
 * parameter registry as the Markdown table of docs/scenario.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "core/catalog.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/params.h"
#include "kvsim/plan.h"
#include "kvsim/report.h"

/* "8.03B", "671B" */
static const char *billions(int64_t n, char *buf, size_t cap) {
  double b = (double)n / 1e9;
  snprintf(buf, cap, b >= 100 ? "%.0fB" : b >= 10 ? "%.1fB" : "%.2fB", b);
  return buf;
}

/* Prints and frees arr when the listing is JSON (arr NULL: text, done). */
static int print_json(cJSON *arr) {
  if (arr) {
    char *s = kvsim_report_json_string(arr);
    puts(s);
    free(s);
    cJSON_Delete(arr);
  }
  return 0;
}

static int list_models(bool json) {
  cJSON *arr = json ? cJSON_CreateArray() : NULL;
  if (!json)
    printf("%-17s %-36s %6s %8s %8s %s\n", "name", "HF id", "layers", "KV heads", "head_dim",
           "params");
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind; e++) {
    if (e->kind != KVSIM_CATALOG_MODEL)
      continue;
    kvsim_model_t m;
    kvsim_err err = {0};
    if (kvsim_model_load(e->name, &m, &err) < 0) {
      cJSON_Delete(arr);
      return cli_fail("list", "%s", err.msg);
    }
    kvsim_model_params_t p;
    kvsim_model_count_params(&m, &p);
    const char *id = kvsim_model_hf_id(e->name);
    /* MLA caches one latent per token: one "head" of the latent width. */
    int64_t heads = kvsim_model_kv_heads_per_rank(&m, 1), dim = kvsim_model_kv_head_size(&m);
    if (json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", e->name);
      if (id)
        cJSON_AddStringToObject(o, "hf_id", id);
      else
        cJSON_AddNullToObject(o, "hf_id");
      cJSON_AddStringToObject(o, "model_type", m.model_type);
      cJSON_AddNumberToObject(o, "num_layers", m.num_layers);
      cJSON_AddNumberToObject(o, "num_kv_heads", (double)heads);
      cJSON_AddNumberToObject(o, "head_dim", (double)dim);
      cJSON_AddBoolToObject(o, "mla", m.mla);
      cJSON_AddNumberToObject(o, "params_total", (double)p.total);
      cJSON_AddNumberToObject(o, "params_active", (double)p.active);
      cJSON_AddNumberToObject(o, "max_position_embeddings", (double)m.max_position_embeddings);
      cJSON_AddItemToArray(arr, o);
      continue;
    }
    char kv[32], tot[32], act[32], par[80];
    snprintf(kv, sizeof kv, m.mla ? "%lld MLA" : "%lld", (long long)heads);
    billions(p.total, tot, sizeof tot);
    if (m.num_experts > 0) /* a dense model's "active" only drops the embedding */
      snprintf(par, sizeof par, "%s (%s active)", tot, billions(p.active, act, sizeof act));
    else
      snprintf(par, sizeof par, "%s", tot);
    printf("%-17s %-36s %6d %8s %8lld %s\n", e->name, id ? id : "-", m.num_layers, kv,
           (long long)dim, par);
  }
  return print_json(arr);
}

static int list_gpus(bool json) {
  cJSON *arr = json ? cJSON_CreateArray() : NULL;
  if (!json)
    printf("%-13s %-38s %10s %10s %9s %9s %9s %s\n", "name", "description", "memory", "bandwidth",
           "BF16 TF", "FP8 TF", "meas. TF", "perf model");
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind; e++) {
    if (e->kind != KVSIM_CATALOG_GPU)
      continue;
    kvsim_gpu_t g;
    kvsim_err err = {0};
    if (kvsim_gpu_load(e->name, &g, &err) < 0) {
      cJSON_Delete(arr);
      return cli_fail("list", "%s", err.msg);
    }
    if (json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", e->name);
      cJSON_AddStringToObject(o, "description", g.description);
      cJSON_AddStringToObject(o, "generation", g.generation);
      cJSON_AddNumberToObject(o, "memory_total_bytes", (double)g.memory_total_bytes);
      cJSON_AddNumberToObject(o, "hbm_bandwidth_GBps", g.hbm_bandwidth_GBps);
      cJSON_AddNumberToObject(o, "bf16_tflops", g.bf16_tflops);
      cJSON_AddNumberToObject(o, "fp8_tflops", g.fp8_tflops);
      cJSON_AddNumberToObject(o, "fp4_tflops", g.fp4_tflops);
      cJSON_AddNumberToObject(o, "achieved_bf16_tflops", g.achieved_bf16_tflops);
      cJSON_AddNumberToObject(o, "achieved_fp8_tflops", g.achieved_fp8_tflops);
      cJSON_AddNumberToObject(o, "achieved_copy_GBps", g.achieved_copy_GBps);
      cJSON_AddStringToObject(o, "kernels", g.perf.kernels);
      cJSON_AddStringToObject(o, "perf_source", g.perf.source);
      double t, d;
      kvsim_gpu_band(&g.perf, &t, &d);
      cJSON_AddStringToObject(o, "status", kvsim_cal_status_name(g.perf.status));
      cJSON_AddNumberToObject(o, "band_ttft_rel", t);
      cJSON_AddNumberToObject(o, "band_tpot_rel", d);
      cJSON_AddItemToArray(arr, o);
      continue;
    }
    char mem[32], bw[32];
    snprintf(mem, sizeof mem, "%.2f GiB", (double)g.memory_total_bytes / KVSIM_GIB);
    snprintf(bw, sizeof bw, "%.0f GB/s", g.hbm_bandwidth_GBps);
    char fp8[32] = "-";
    if (g.fp8_tflops > 0)
      snprintf(fp8, sizeof fp8, "%.1f", g.fp8_tflops);
    char meas[32] = "-";
    if (g.achieved_bf16_tflops > 0)
      snprintf(meas, sizeof meas, "%.1f", g.achieved_bf16_tflops);
    printf("%-13s %-38.38s %10s %10s %9.1f %9s %9s %s\n", e->name, g.description, mem, bw,
           g.bf16_tflops, fp8, meas,
           kvsim_cal_status_name(g.perf.status));
  }
  return print_json(arr);
}

int cmd_list(int argc, char **argv) {
  bool json = false;
  const cli_arg args[] = {{"--json", ARG_FLAG, &json, "print one JSON array", NULL},
                          {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("list", "models|gpus [--json] | params\n\n"
                     "The built-in catalog: models (HF id, KV geometry, parameters) or GPUs "
                     "(memory, bandwidth, peak FLOPs, the measured bf16 matmul peak, whether the step-time model is "
                     "calibrated); or the scenario parameters (key, type, range, default, profiles, calc flag) as "
                     "the Markdown table of docs/scenario.md.",
                     args, argc, argv, 2, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos == 1 && !strcmp(pos[0], "models"))
    return list_models(json);
  if (npos == 1 && !strcmp(pos[0], "gpus"))
    return list_gpus(json);
  if (npos == 1 && !strcmp(pos[0], "params")) {
    if (json)
      return cli_fail("list", "params: --json: the parameters are listed as a Markdown table only");
    kvsim_param_markdown(stdout);
    return 0;
  }
  return cli_fail("list", "expected 'models', 'gpus' or 'params'%s%s%s", npos ? ", got '" : "",
                  npos ? pos[0] : "", npos ? "'" : "");
}
