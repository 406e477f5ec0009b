/* vLLM's benchmark result (`vllm bench serve --save-result`, written by
 * vllm/benchmarks/serve.py main(); benchmarks/benchmark_serving.py
 * before it): one JSON object, or one a line with --append-result.
 * - Always: "request_rate" (a number or "inf"), "burstiness",
 *   "max_concurrency", "num_prompts", "duration", "completed", "failed",
 *   "total_input_tokens", "total_output_tokens", and for each of ttft,
 *   tpot, itl, e2el: mean_/median_/std_ and p<N>_<metric>_ms for the
 *   --metric-percentiles (default 99), in milliseconds.
 * - With --save-detailed, the per-request lists too ("ttfts", "itls",
 *   "latencies", "input_lens", "output_lens", "start_times", "errors";
 *   bench_common.c reads them).
 * Without the lists the run is compared on its aggregates. The mean ITL
 * is not compared (kvsim times each request's TPOT, not each gap). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fidelity/bench.h"

static bool has(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key) != NULL; }

static bool detect(const cJSON *o) {
  return has(o, "ttfts") || has(o, "mean_e2el_ms") || has(o, "burstiness") ||
         (has(o, "mean_ttft_ms") && !has(o, "mean_e2e_latency_ms"));
}

/* get_request(): Gamma gaps of shape burstiness at request_rate, or all
 * at once for inf; max_concurrency caps the requests in flight. */
static int drive(const cJSON *o, const char *path, kvsim_fid_measured_t *m, kvsim_err *err) {
  kvsim_fid_drive_t *d = &m->drive;
  double rate = NAN, b = 1, conc = 0, done = 0, failed = 0, in = NAN, out = NAN;
  int rc, got;
  if ((got = kvsim__bench_num(o, "request_rate", path, 1e-9, INFINITY, &rate, err)) < 0 ||
      (rc = kvsim__bench_num(o, "burstiness", path, 1e-9, INFINITY, &b, err)) < 0 ||
      (rc = kvsim__bench_num(o, "max_concurrency", path, 1, 1e9, &conc, err)) < 0 ||
      (rc = kvsim__bench_num(o, "completed", path, 0, 1e15, &done, err)) < 0 ||
      (rc = kvsim__bench_num(o, "failed", path, 0, 1e15, &failed, err)) < 0 ||
      (rc = kvsim__bench_num(o, "total_input_tokens", path, 0, 1e18, &in, err)) < 0 ||
      (rc = kvsim__bench_num(o, "total_output_tokens", path, 0, 1e18, &out, err)) < 0)
    return got < 0 ? got : rc;
  /* --ramp-up-strategy moves the rate during the run: not replayed. */
  bool ramp = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "ramp_up_strategy"));
  *d = (kvsim_fid_drive_t){got == 1 && !ramp, rate, b, (int64_t)conc, (int64_t)(done + failed),
                           done > 0 ? in / done : NAN, done > 0 ? out / done : NAN};
  return KVSIM_OK;
}

static int read(const cJSON *o, const char *path, kvsim_fid_lat_t *lat, kvsim_fid_measured_t *m,
                kvsim_err *err) {
  int rc = drive(o, path, m, err);
  if (rc < 0)
    return rc;
  rc = kvsim__bench_lists(o, path, lat, &m->has_arrivals, err);
  if (rc != 0)
    return rc < 0 ? rc : KVSIM_OK;
  static const char *const stems[3] = {"ttft", "tpot", "e2el"};
  rc = kvsim__bench_aggregates(o, path, stems, m, err);
  snprintf(m->not_compared, sizeof m->not_compared,
           "%s; ITL (kvsim times each request's TPOT, not each gap)%s",
           isfinite(m->stated[0].p90) ? "queueing delay (no per-request lists)"
                                      : "p90 (not among --metric-percentiles), queueing delay",
           cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "ramp_up_strategy"))
               ? "; the ramp-up's arrivals (not replayed)"
               : "");
  return rc;
}

const kvsim__bench_fmt_t kvsim__bench_vllm = {KVSIM_FID_FMT_VLLM_BENCH, detect, read};
