/* What a deployment search hands a planner (kvsim/deploy.h): the
 * engine's launch command, the Pareto frontier and the order of cost. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/deploy.h"

/* A flag and its value, appended when there is room. */
static void add(char *buf, size_t cap, const char *flag, const char *value) {
  size_t n = strlen(buf);
  if (n < cap)
    snprintf(buf + n, cap - n, " %s %s", flag, value);
}

static bool given(const char *q) { return q[0] && strcmp(q, "none"); }

/* The flags of `vllm serve` (vllm/engine/arg_utils.py, EngineArgs). */
static void vllm(const kvsim_serve_args_t *a, char *buf, size_t cap) {
  char v[64];
  snprintf(buf, cap, "vllm serve %s", a->model);
  snprintf(v, sizeof v, "%d", a->tp);
  add(buf, cap, "--tensor-parallel-size", v);
  snprintf(v, sizeof v, "%lld", (long long)a->max_num_seqs);
  add(buf, cap, "--max-num-seqs", v);
  snprintf(v, sizeof v, "%lld", (long long)a->max_num_batched_tokens);
  add(buf, cap, "--max-num-batched-tokens", v);
  add(buf, cap, "--kv-cache-dtype", a->kv_cache_dtype[0] ? a->kv_cache_dtype : "auto");
  if (given(a->quantization))
    add(buf, cap, "--quantization", a->quantization);
  snprintf(v, sizeof v, "%g", a->gpu_memory_utilization);
  add(buf, cap, "--gpu-memory-utilization", v);
  snprintf(v, sizeof v, "%lld", (long long)a->max_model_len);
  add(buf, cap, "--max-model-len", v);
  /* Both sides of a disaggregated deployment load the NIXL connector as
   * kv_both; the proxy in front decides which one prefills
   * (docs.vllm.ai/en/stable/features/nixl_connector_usage.html). */
  if (a->role != KVSIM_SERVE_ROLE_NONE)
    add(buf, cap, "--kv-transfer-config",
        "'{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'");
}

/* The flags of SGLang's server (python/sglang/srt/server_args.py,
 * ServerArgs): --max-running-requests is its max_num_seqs,
 * --chunked-prefill-size its prefill budget per step, and its FP8 cache is
 * named by format (fp8_e4m3, the format vLLM's "fp8" means). */
static void sglang(const kvsim_serve_args_t *a, char *buf, size_t cap) {
  char v[64];
  snprintf(buf, cap, "python -m sglang.launch_server --model-path %s", a->model);
  snprintf(v, sizeof v, "%d", a->tp);
  add(buf, cap, "--tp-size", v);
  snprintf(v, sizeof v, "%lld", (long long)a->max_num_seqs);
  add(buf, cap, "--max-running-requests", v);
  snprintf(v, sizeof v, "%lld", (long long)a->max_num_batched_tokens);
  add(buf, cap, "--chunked-prefill-size", v);
  add(buf, cap, "--kv-cache-dtype", !strcmp(a->kv_cache_dtype, "fp8") ? "fp8_e4m3"
                                     : a->kv_cache_dtype[0]            ? a->kv_cache_dtype
                                                                       : "auto");
  if (given(a->quantization))
    add(buf, cap, "--quantization", a->quantization);
  snprintf(v, sizeof v, "%g", a->gpu_memory_utilization);
  add(buf, cap, "--mem-fraction-static", v);
  snprintf(v, sizeof v, "%lld", (long long)a->max_model_len);
  add(buf, cap, "--context-length", v);
  /* A side of a PD deployment names its role; Mooncake is the default
   * transfer engine (server_args.py disaggregation_mode,
   * disaggregation_transfer_backend; docs.sglang.io
   * advanced_features/pd_disaggregation). */
  if (a->role != KVSIM_SERVE_ROLE_NONE) {
    add(buf, cap, "--disaggregation-mode",
        a->role == KVSIM_SERVE_ROLE_PREFILL ? "prefill" : "decode");
    add(buf, cap, "--disaggregation-transfer-backend", "mooncake");
  }
}

int kvsim_serve_command(const kvsim_serve_args_t *a, char *buf, size_t cap) {
  if (!cap)
    return KVSIM_EINVAL;
  buf[0] = '\0';
  switch (a->engine) {
  case KVSIM_PLAN_V1:
  case KVSIM_PLAN_V0:
    vllm(a, buf, cap);
    return KVSIM_OK;
  case KVSIM_PLAN_SGLANG:
    sglang(a, buf, cap);
    return KVSIM_OK;
  default:
    snprintf(buf, cap, "no serve command for the %s engine (vLLM and SGLang only)",
             kvsim_plan_engine_name(a->engine));
    return KVSIM_EINVAL;
  }
}

int kvsim_pareto_front(const double *x, const double *y, int n, bool *on) {
  int count = 0;
  for (int i = 0; i < n; i++) {
    on[i] = !isnan(x[i]) && !isnan(y[i]);
    for (int j = 0; j < n && on[i]; j++)
      if (j != i && !isnan(x[j]) && !isnan(y[j]) && x[j] >= x[i] && y[j] >= y[i] &&
          (x[j] > x[i] || y[j] > y[i]))
        on[i] = false;
    count += on[i];
  }
  return count;
}

static double per_gpu(const kvsim_deploy_row_t *r) {
  const kvsim_deploy_point_t *p = &r->points[r->best];
  return p->output_tokens_per_s / (p->replicas * r->gpus_per_replica);
}

bool kvsim_deploy_cheaper(const kvsim_deploy_row_t *a, const kvsim_deploy_row_t *b) {
  bool pa = !isnan(a->cost_per_hour), pb = !isnan(b->cost_per_hour);
  if (pa && pb && a->cost_per_hour != b->cost_per_hour)
    return a->cost_per_hour < b->cost_per_hour;
  if (pa != pb)
    return pa; /* a known price before an unknown one */
  int ga = a->points[a->best].replicas * a->gpus_per_replica;
  int gb = b->points[b->best].replicas * b->gpus_per_replica;
  if (ga != gb)
    return ga < gb;
  if (!isnan(a->margin) && !isnan(b->margin) && a->margin != b->margin)
    return a->margin > b->margin;
  if (per_gpu(a) != per_gpu(b))
    return per_gpu(a) > per_gpu(b);
  return a->points[a->best].replicas < b->points[b->best].replicas;
}
