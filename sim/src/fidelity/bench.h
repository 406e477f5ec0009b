/* Benchmark result files read as measured runs (kvsim/fidelity.h): one
 * reader a file (bench_vllm.c, bench_sglang.c) behind one registry
 * (bench_registry.c), each telling its files from their first object and
 * reading per-request lists when the file has them, else the stated
 * aggregates, and how the benchmark drove its load. bench_common.c holds
 * what they share. Internal: not part of the public API. */
#ifndef KVSIM_FIDELITY_BENCH_H
#define KVSIM_FIDELITY_BENCH_H

#include <stdbool.h>

#include <cJSON.h>

#include "kvsim/fidelity.h"

typedef struct kvsim__bench_fmt {
  kvsim_fid_fmt_t fmt;
  /* Is this object (the file's run) one of ours? */
  bool (*detect)(const cJSON *run);
  /* Reads the run: per-request rows into lat, or the aggregates into m
   * (m->aggregates_only); m->drive, m->has_arrivals. Errors name path. */
  int (*read)(const cJSON *run, const char *path, kvsim_fid_lat_t *lat, kvsim_fid_measured_t *m,
              kvsim_err *err);
} kvsim__bench_fmt_t;

extern const kvsim__bench_fmt_t kvsim__bench_vllm, kvsim__bench_sglang;

/* Reads the benchmark file text (path names it in errors): the format is
 * the first whose detect accepts the run. KVSIM_EINVAL when none does. */
int kvsim__bench_read(const char *text, const char *path, kvsim_fid_lat_t *lat, kvsim_fid_measured_t *m,
                      kvsim_err *err);

/* ---- shared by the readers (bench_common.c) ---- */

/* The run of a result file: the file as one JSON object, or, when the
 * benchmark appended one object a line, the last line's (*run of *runs).
 * Python's json writes inf and nan as the bare words Infinity and NaN,
 * which JSON lacks: they are read as infinity and null. *out is the
 * caller's (cJSON_Delete); where[cap] names the run in errors (the path,
 * and its line when appended). */
int kvsim__bench_parse(const char *text, const char *path, cJSON **out, int *run, int *runs,
                       char *where, size_t cap, kvsim_err *err);

/* A number under key: 1 (into *out), 0 when absent or null, or KVSIM_EINVAL
 * naming path and key when it is not a number in [lo, hi]. The string "inf"
 * and a bare Infinity read as INFINITY (allowed when hi is). */
int kvsim__bench_num(const cJSON *o, const char *key, const char *path, double lo, double hi,
                     double *out, kvsim_err *err);

/* The per-request lists (vLLM --save-detailed, SGLang --output-details):
 * "ttfts" and one of "itls", "tpots", "e2els" / "latencies"; optional
 * "output_lens", "input_lens", "start_times" (*starts), "errors". 1 when
 * read into lat, 0 when the file has no lists, or an error. */
int kvsim__bench_lists(const cJSON *o, const char *path, kvsim_fid_lat_t *lat, bool *starts,
                       kvsim_err *err);

/* The aggregates: mean_S_ms, median_S_ms, p90_S_ms, p99_S_ms for the stems
 * S of TTFT, TPOT and E2E (stems[0..3)), "completed", "duration",
 * "total_output_tokens". KVSIM_EINVAL when nothing of them is there. */
int kvsim__bench_aggregates(const cJSON *o, const char *path, const char *const stems[3],
                            kvsim_fid_measured_t *m, kvsim_err *err);

#endif
