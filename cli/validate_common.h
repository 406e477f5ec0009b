/* Shared by `kvsim validate --measured`, `kvsim validate --silicon` and
 * `kvsim calibrate`: per-request latency samples (measured or simulated)
 * and their statistics, running a scenario in memory, the measured-file
 * readers, and the AIConfigurator silicon table. CLI-internal: nothing
 * here is part of the library's public API. */
#ifndef KVSIM_CLI_VALIDATE_COMMON_H
#define KVSIM_CLI_VALIDATE_COMMON_H

#include <stdbool.h>
#include <stdint.h>

#include "args.h"
#include "kvsim/engine.h"
#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/scenario.h"
#include "kvsim/stats.h"

/* ---- latency samples ---- */

/* Per-request latencies of one run, seconds. Both sides (measured and
 * simulated) go through the same kvsim_dist_t, so percentiles use one
 * convention (GSL's, rank q x (n - 1)). */
typedef struct fid_lat {
  kvsim_dist_t ttft, tpot, e2e, queue;
  bool has_queue;           /* the source knows when requests were first scheduled */
  double t_first, t_last;   /* first arrival, last finish (s): the makespan */
  int64_t finished;
  int64_t output_tokens, prompt_tokens;
} fid_lat;

void fid_lat_init(fid_lat *l);
void fid_lat_fini(fid_lat *l);
/* Adds one finished request: arrival, first scheduled (< 0: unknown),
 * first token, last token (s, any common origin), output tokens. TPOT is
 * (last - first) / (out - 1), only for out > 1. */
int fid_lat_add(fid_lat *l, double arrival, double scheduled, double first, double last,
                int64_t prompt, int64_t out);

typedef struct fid_stat {
  double mean, p50, p90, p99;
  int64_t n;
} fid_stat;

fid_stat fid_stat_of(kvsim_dist_t *d);

/* ---- time series: running, waiting, KV usage over time ---- */

typedef struct fid_series {
  double *t, *running, *waiting, *kv; /* kv: fraction in [0, 1] */
  int64_t n, cap;
  bool has_kv;              /* false when the source did not record KV usage */
} fid_series;

void fid_series_fini(fid_series *s);
int fid_series_push(fid_series *s, double t, double running, double waiting, double kv);

/* Mean absolute difference of the simulated series against the measured
 * one at the measured time points (the simulated value at the last tick at
 * or before t). Over t in the measured series' range; n = points compared. */
typedef struct fid_series_cmp {
  double running_mad, waiting_mad, kv_mad; /* kv in percentage points; NAN when not recorded */
  double running_mean_meas, running_mean_sim, waiting_mean_meas, waiting_mean_sim;
  double kv_mean_meas, kv_mean_sim;        /* percent */
  int64_t n;
} fid_series_cmp;

void fid_series_compare(const fid_series *meas, const fid_series *sim, fid_series_cmp *out);

/* ---- running a scenario in memory ---- */

/* Runs sc with no files: finished requests' latencies into lat (times on
 * the simulated clock), the per-tick time series summed over replicas
 * (running, waiting; KV usage averaged) into ser (may be NULL), totals
 * into st (may be NULL). */
int fid_simulate(const kvsim_scenario_t *sc, fid_lat *lat, fid_series *ser, kvsim_run_stats_t *st,
                 kvsim_err *err);

/* The same for comparison with client-side measurements: the GPU's
 * frontend_us (gpu.h) is added to every TTFT and E2E. */
int fid_simulate_client(const kvsim_scenario_t *sc, fid_lat *lat, fid_series *ser,
                        kvsim_run_stats_t *st, kvsim_err *err);

/* Overrides the step-time coefficients of a loaded scenario's GPU. */
void fid_apply_perf(kvsim_scenario_t *sc, const kvsim_gpu_perf_t *p);

/* ---- the start-up log table (validate_startup.c) ---- */

/* kvsim validate --startup FILE [--meta FILE]...: logged vs planned KV
 * budget per row; returns the exit code. */
int fid_cmd_startup(const char *file, const cli_list *metas, bool json, double max_error);

/* ---- measured per-request files (validate_measured.c) ---- */

typedef enum {
  FID_FMT_LLMSERVINGSIM = 1, /* requests.jsonl: queued_ts, scheduled_ts, first/last_token_ts */
  FID_FMT_KVSIM,             /* kvsim's own requests.csv */
  FID_FMT_VLLM_BENCH,        /* vllm bench serve --save-result --save-detailed JSON */
} fid_fmt;

const char *fid_fmt_name(fid_fmt f);

/* Reads a measured per-request file, detecting its format. Bad input:
 * KVSIM_EINVAL / KVSIM_EIO with the file (and line) in the message. */
int fid_read_measured(const char *path, fid_lat *lat, fid_fmt *fmt, kvsim_err *err);

/* Reads a measured time series: LLMServingSim's vllm/timeseries.csv
 * (t, running, waiting, kv_cache_pct) or kvsim's own timeseries.csv. */
int fid_read_series(const char *path, fid_series *s, kvsim_err *err);

/* The comparison of one measured run with its simulation. */
typedef struct fid_measured_cmp {
  fid_stat meas[4], sim[4]; /* ttft, tpot, e2e, queue */
  bool has_queue;
  double makespan_meas, makespan_sim;
  double tput_meas, tput_sim;       /* output tokens per second over the makespan */
  int64_t n_meas, n_sim;
  bool has_series;
  fid_series_cmp series;
  kvsim_run_stats_t st;
} fid_measured_cmp;

/* The measured side: the per-request file and, when there is one, its time
 * series (`series`, or NULL: the vllm/timeseries.csv beside an
 * LLMServingSim requests.jsonl). Loaded once, compared with as many
 * simulations as wanted (calibration loops). KVSIM_EINVAL / KVSIM_EIO name
 * the file for bad input. */
typedef struct fid_measured {
  fid_lat lat;
  fid_fmt fmt;
  fid_series series;
  bool has_series;
  char path[4096], series_path[4096];
} fid_measured;

int fid_measured_load(const char *measured, const char *series, fid_measured *m, kvsim_err *err);
void fid_measured_fini(fid_measured *m);
/* Simulates sc against an already loaded measurement. */
int fid_measured_compare(fid_measured *m, const kvsim_scenario_t *sc, fid_measured_cmp *cmp,
                         kvsim_err *err);

/* ---- the AIConfigurator silicon table (validate_silicon.c) ---- */

typedef struct fid_sil_row {
  int line;                 /* 1-based line of the CSV */
  char id[160];
  char model_path[128], system[32], precision[16], mode[16], backend[16], version[48];
  int64_t isl, osl, batch, tp, pp, attn_dp, moe_ep;
  double ttft_ms, tpot_ms;  /* measured */
  /* Resolved (when not skipped). */
  char model[64], gpu[64];
  bool skipped;
  char reason[128];
} fid_sil_row;

typedef struct fid_sil_table {
  fid_sil_row *rows;
  int n, cap;
} fid_sil_table;

/* Reads the CSV, keeping rows that match every KEY=VALUE filter (column
 * name = value, case-insensitive; model= matches the catalog name too).
 * Resolves each kept row's catalog model and GPU, marking the ones kvsim
 * cannot reproduce as skipped with a reason. */
int fid_sil_read(const char *path, const char *const *filters, int nfilters, fid_sil_table *t,
                 kvsim_err *err);
void fid_sil_free(fid_sil_table *t);

/* Replaces the GPU of matching rows: a GPU JSON file whose "name" is the
 * catalog name a row maps to (its "perf" coefficients then apply). */
typedef struct fid_gpu_override {
  kvsim_gpu_t gpu;
  char path[4096];
} fid_gpu_override;

/* The benchmark's length spread: prompt and output lengths uniform in
 * [int(len x ratio), len] (bench_serving's random dataset, legacy
 * `--random-range-ratio` semantics, as used by InferenceX's fixed_seq_len
 * runs; AIConfigurator's replay of these rows uses 0.8). 1 = fixed. */
#define FID_SIL_RANGE_RATIO 0.8

/* The scenario that reproduces a row: a closed loop of `batch` clients
 * with think time 0 and 10 x batch requests (the concurrency x 10 request
 * count of AIConfigurator's replay, ai-dynamo/aiconfigurator tools), the
 * row's tp and precision, lengths per range_ratio. */
int fid_sil_scenario(const fid_sil_row *r, const fid_gpu_override *ov, int nov, double range_ratio,
                     kvsim_scenario_t *sc, kvsim_err *err);

/* Simulated mean TTFT and TPOT of a row (ms). */
int fid_sil_simulate(const fid_sil_row *r, const fid_gpu_override *ov, int nov, double range_ratio,
                     const kvsim_gpu_perf_t *perf /* NULL: the GPU's */, double *ttft_ms,
                     double *tpot_ms, kvsim_err *err);

/* Median of |x| over n values (n > 0), NAN when n = 0. */
double fid_median_abs(const double *x, int n);

/* ---- the validate modes (exit codes: 0 ok, 1 --max-error exceeded, 2 bad input) ---- */

/* perf: NULL, or step-time coefficients that replace every GPU's own
 * (--perf FILE: e.g. one GPU's calibration tried on another). */
int fid_cmd_measured(const char *file, const char *scenario, const cli_list *sets, const char *series,
                     const kvsim_gpu_perf_t *perf, bool json, double max_error);
int fid_cmd_silicon(const char *file, const cli_list *filters, const cli_list *gpus, double range_ratio,
                    const kvsim_gpu_perf_t *perf, bool json, double max_error);

#endif
