/* SGLang's benchmark result (python/sglang/bench_serving.py benchmark():
 * one JSON line appended to --output-file per run): "request_rate" (inf
 * written by Python as the bare word Infinity), "max_concurrency",
 * "duration", "completed", "total_input_tokens", "total_output_tokens",
 * "random_input_len", "random_output_len", "random_range_ratio",
 * mean_/median_/std_/p99_ of ttft_ms, tpot_ms, itl_ms (and p95_itl_ms) and
 * of e2e_latency_ms; with --output-details the per-request lists
 * "input_lens", "output_lens", "ttfts", "itls", "errors" (no start times).
 * Arrivals are Poisson at request_rate (get_request's exponential gaps),
 * all at once for inf. The last run of the file is read. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fidelity/bench.h"

static bool has(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key) != NULL; }

static bool detect(const cJSON *o) {
  return has(o, "mean_e2e_latency_ms") || has(o, "median_e2e_latency_ms") ||
         has(o, "total_output_tokens_retokenized");
}

static int read(const cJSON *o, const char *path, kvsim_fid_lat_t *lat, kvsim_fid_measured_t *m,
                kvsim_err *err) {
  double rate = NAN, conc = 0, done = 0, in = NAN, out = NAN;
  int rc, got;
  if ((got = kvsim__bench_num(o, "request_rate", path, 1e-9, INFINITY, &rate, err)) < 0 ||
      (rc = kvsim__bench_num(o, "max_concurrency", path, 1, 1e9, &conc, err)) < 0 ||
      (rc = kvsim__bench_num(o, "completed", path, 0, 1e15, &done, err)) < 0 ||
      (rc = kvsim__bench_num(o, "total_input_tokens", path, 0, 1e18, &in, err)) < 0 ||
      (rc = kvsim__bench_num(o, "total_output_tokens", path, 0, 1e18, &out, err)) < 0)
    return got < 0 ? got : rc;
  /* The file keeps no count of failed requests: completed ones are replayed. */
  m->drive = (kvsim_fid_drive_t){got == 1, rate, 1, (int64_t)conc, (int64_t)done,
                                 done > 0 ? in / done : NAN, done > 0 ? out / done : NAN};
  rc = kvsim__bench_lists(o, path, lat, &m->has_arrivals, err);
  if (rc != 0)
    return rc < 0 ? rc : KVSIM_OK;
  static const char *const stems[3] = {"ttft", "tpot", "e2e_latency"};
  rc = kvsim__bench_aggregates(o, path, stems, m, err);
  snprintf(m->not_compared, sizeof m->not_compared,
           "p90 (not written by bench_serving), queueing delay; ITL (kvsim times each request's "
           "TPOT, not each gap)");
  return rc;
}

const kvsim__bench_fmt_t kvsim__bench_sglang = {KVSIM_FID_FMT_SGLANG_BENCH, detect, read};
