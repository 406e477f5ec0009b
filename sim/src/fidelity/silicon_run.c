/* Reproducing one row of the silicon table (kvsim/fidelity.h): a
 * closed-loop run whose mean TTFT and TPOT are compared with the measured
 * ones. AIConfigurator's replay of these measurements sends concurrency x
 * 10 requests, which we copy. The table's comparison is
 * silicon_compare.c. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kvsim/fidelity.h"

/* ---- reproducing a row ---- */

/* A length: fixed, or uniform in [int(len x ratio), len]. */
static void length_json(int64_t len, double ratio, char *out, size_t cap) {
  int64_t lo = (int64_t)((double)len * ratio);
  if (lo < 1)
    lo = 1;
  if (ratio >= 1 || lo >= len)
    snprintf(out, cap, "{\"dist\": \"fixed\", \"value\": %lld}", (long long)len);
  else
    snprintf(out, cap, "{\"dist\": \"uniform\", \"min\": %lld, \"max\": %lld}", (long long)lo,
             (long long)len);
}

double kvsim_fidelity_sil_range_ratio(const kvsim_fid_sil_row_t *r, double range_ratio) {
  if (range_ratio >= 0)
    return range_ratio;
  if (r->range_ratio > 0)
    return r->range_ratio;
  return !strcasecmp(r->backend, "sglang") ? KVSIM_FID_SIL_RANGE_RATIO_SGLANG : KVSIM_FID_SIL_RANGE_RATIO;
}

/* The engine keys a row sets beyond its profile: fp8 weights and the KV
 * cache the precision implies (fp8) unless the campaign's launch says
 * otherwise, the campaign's max_num_seqs, SGLang scheduler options and
 * radix cache (silicon_launch.c), and the release the row ran (its host
 * time per step and its sizing rules differ: perf.h, plan.h); a nightly
 * or an empty version runs as the newest. */
static void engine_keys(const kvsim_fid_sil_row_t *r, bool sglang, char *out, size_t cap) {
  const bool fp8 = !strcasecmp(r->precision, "fp8");
  const char *kv = r->kv_cache_dtype[0] ? r->kv_cache_dtype : fp8 ? "fp8" : "";
  size_t n = 0;
  out[0] = '\0';
  if (fp8)
    n += (size_t)snprintf(out + n, cap - n, ", \"quantization\": \"fp8\"");
  if (kv[0] && n < cap)
    n += (size_t)snprintf(out + n, cap - n, ", \"kv_cache_dtype\": \"%s\"", kv);
  if (r->max_num_seqs > 0 && n < cap)
    n += (size_t)snprintf(out + n, cap - n, ", \"max_num_seqs\": %lld", (long long)r->max_num_seqs);
  const struct {
    const char *key;
    int64_t v;
  } sgl[] = {{"max_running_requests", r->max_running_requests},
             {"chunked_prefill_size", r->chunked_prefill_size},
             {"max_prefill_tokens", r->max_prefill_tokens},
             {"scheduler_recv_interval", r->scheduler_recv_interval}};
  for (size_t i = 0; sglang && i < sizeof sgl / sizeof *sgl; i++)
    if (sgl[i].v > 0 && n < cap)
      n += (size_t)snprintf(out + n, cap - n, ", \"%s\": %lld", sgl[i].key, (long long)sgl[i].v);
  if (sglang && r->mem_fraction_static > 0 && n < cap)
    n += (size_t)snprintf(out + n, cap - n, ", \"mem_fraction_static\": %.17g",
                          r->mem_fraction_static);
  if (r->no_radix_cache && n < cap)
    n += (size_t)snprintf(out + n, cap - n, ", \"enable_prefix_caching\": false");
  int v;
  if (!sglang && r->version[0] && kvsim_vllm_version_parse(r->version, &v) == KVSIM_OK && n < cap)
    snprintf(out + n, cap - n, ", \"vllm_version\": \"%s\"", r->version);
}

int kvsim_fidelity_silicon_scenario(const kvsim_fid_sil_row_t *r, const kvsim_gpu_t *gpus, int ngpus,
                                    double range_ratio, kvsim_scenario_t *sc, kvsim_err *err) {
  range_ratio = kvsim_fidelity_sil_range_ratio(r, range_ratio);
  char text[2048], in[128], out[128], engine[512];
  const bool sglang = !strcasecmp(r->backend, "sglang");
  engine_keys(r, sglang, engine, sizeof engine);
  length_json(r->isl, range_ratio, in, sizeof in);
  length_json(r->osl, range_ratio, out, sizeof out);
  /* The engine's own defaults for everything the row does not say (vLLM
   * rows: profile vllm-v1, chunked prefill, the GPU's default max_num_seqs
   * and max_num_batched_tokens, gpu_memory_utilization 0.9, the model's
   * max_model_len; SGLang rows: profile sglang and its defaults). The
   * benchmark's random prompts share no prefix. */
  snprintf(text, sizeof text,
           "{\"name\": \"silicon-%d\", \"seed\": 1, \"model\": \"%s\","
           " \"hardware\": {\"gpu\": \"%s\", \"tensor_parallel_size\": %lld, \"pipeline_parallel_size\": %lld},"
           " \"engine\": {\"profile\": \"%s\"%s},"
           " \"workload\": {\"synthetic\": {\"requests\": %lld,"
           " \"arrival\": {\"process\": \"closed_loop\", \"clients\": %lld, \"think_s\": 0},"
           " \"prompt_tokens\": %s, \"output_tokens\": %s}}}",
           r->line, r->model, r->gpu, (long long)r->tp, (long long)r->pp, sglang ? "sglang" : "vllm-v1", engine,
           (long long)(10 * r->batch), (long long)r->batch, in, out);
  int rc = kvsim_scenario_parse(text, r->id, ".", NULL, 0, sc, err);
  if (rc < 0)
    return rc;
  for (int i = 0; i < ngpus; i++)
    if (!strcmp(gpus[i].name, sc->gpu.name))
      sc->gpu = gpus[i];
  /* The rows' TTFT is the benchmark client's: the client latency fitted
   * on every silicon row (kvsim validate --all). */
  sc->gpu.perf.frontend_us = KVSIM_FID_CLIENT_US;
  return KVSIM_OK;
}

/* The row's scenario with the coefficients (and kernel profile) given,
 * if any; on an error nothing is left to free. */
static int row_scenario(const kvsim_fid_sil_row_t *r, const kvsim_gpu_t *gpus, int ngpus, double range_ratio,
                        const kvsim_gpu_perf_t *perf, kvsim_scenario_t *sc, kvsim_err *err) {
  int rc = kvsim_fidelity_silicon_scenario(r, gpus, ngpus, range_ratio, sc, err);
  if (rc < 0)
    return rc;
  if (perf && perf->kernels[0] && (rc = kvsim_gpu_use_kernels(&sc->gpu, perf->kernels, err)) < 0) {
    kvsim_scenario_fini(sc);
    return rc;
  }
  if (perf)
    kvsim_fidelity_apply_coefs(&sc->gpu.perf, perf);
  return KVSIM_OK;
}

int kvsim_fidelity_silicon_simulate(const kvsim_fid_sil_row_t *r, const kvsim_gpu_t *gpus, int ngpus,
                                    double range_ratio, const kvsim_gpu_perf_t *perf, double *ttft_ms,
                                    double *tpot_ms, kvsim_err *err) {
  kvsim_scenario_t sc;
  int rc = row_scenario(r, gpus, ngpus, range_ratio, perf, &sc, err);
  if (rc < 0)
    return rc;
  kvsim_fid_lat_t lat;
  kvsim_fidelity_lat_init(&lat);
  /* The rows' TTFT is the benchmark client's (mean_ttft of vllm bench). */
  if (rc == KVSIM_OK)
    rc = kvsim_fidelity_simulate_client(&sc, &lat, NULL, NULL, err);
  if (rc == KVSIM_OK && (lat.ttft.n == 0 || lat.tpot.n == 0))
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no request finished", r->id);
  if (rc == KVSIM_OK) {
    *ttft_ms = kvsim_dist_mean(&lat.ttft) * 1e3;
    *tpot_ms = kvsim_dist_mean(&lat.tpot) * 1e3;
  }
  kvsim_fidelity_lat_fini(&lat);
  kvsim_scenario_fini(&sc);
  return rc;
}

int kvsim_fidelity_sil_decode_step(const kvsim_fid_sil_row_t *r, const kvsim_gpu_t *gpus, int ngpus,
                                   double range_ratio, const kvsim_gpu_perf_t *perf, kvsim_step_cost_t *cost,
                                   kvsim_err *err) {
  memset(cost, 0, sizeof *cost);
  kvsim_scenario_t sc;
  int rc = row_scenario(r, gpus, ngpus, range_ratio, perf, &sc, err);
  if (rc < 0)
    return rc;
  kvsim_resolved_t res;
  kvsim_perf_t pf;
  if (rc == KVSIM_OK && (rc = kvsim_scenario_resolve(&sc, &res, err)) == KVSIM_OK &&
      (rc = kvsim_perf_init(&pf, &sc.model, &sc.gpu, &res.plan, err)) == KVSIM_OK) {
    /* The mean context of a decode step, as the bandwidth floor takes it
     * (physical.c): the mean prompt (uniform in [len x ratio, len]) plus
     * half the mean output. Past max_num_seqs the clients queue. */
    const double rr = kvsim_fidelity_sil_range_ratio(r, range_ratio);
    const double in = (double)r->isl * (1 + rr) / 2, out = (double)r->osl * (1 + rr) / 2;
    const int64_t cap = res.sched.max_num_seqs;
    const int64_t seqs = cap > 0 && r->batch > cap ? cap : r->batch;
    kvsim_batch_shape_t b;
    memset(&b, 0, sizeof b);
    for (int64_t i = 0; i < seqs; i++)
      kvsim_batch_shape_add(&b, (int64_t)(in + out / 2), 1, sc.model.sliding_window);
    (void)kvsim_perf_step_time(&pf, &b, cost);
  }
  kvsim_scenario_fini(&sc);
  return rc;
}
