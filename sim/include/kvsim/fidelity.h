/* Fidelity: how close kvsim comes to what real engines did, and fitting
 * the step-time model so that it comes closer.
 *
 * - Latency samples and their comparison: per-request TTFT / TPOT / E2E /
 *   queueing delay of a measured and a simulated run, their mean and
 *   percentiles, and the error of one against the other.
 * - Time series (running, waiting, KV usage over time) and their mean
 *   absolute difference.
 * - Measured-run readers: LLMServingSim requests.jsonl (+ its
 *   vllm/timeseries.csv), kvsim's own requests.csv / timeseries.csv,
 *   aiperf's profile_export.jsonl, and the benchmark results of vLLM
 *   (vllm bench serve --save-result) and SGLang (bench_serving), with or
 *   without per-request lists, and how those benchmarks drove their load.
 * - The AIConfigurator silicon table: fixed-concurrency benchmark rows,
 *   each reproduced by a closed-loop run.
 * - The start-up log table: what vLLM logged as its KV budget against the
 *   memory plan.
 * - Calibration: the step-time coefficients of one GPU fitted to all of
 *   the above by nonlinear least squares (GSL), and the GPU JSON that
 *   carries them.
 *
 * Conventions: functions that can fail return KVSIM_OK or a negative
 * KVSIM_E* code with a one-line message in *err naming the file (and line
 * or field) and the bad value. Structures filled by a function are owned
 * by the caller and released with the matching _fini / _free. The
 * `..._to_json` functions return a NUL-terminated, indented JSON text the
 * caller releases with free(); NULL when out of memory. */
#ifndef KVSIM_FIDELITY_H
#define KVSIM_FIDELITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kvsim/engine.h"
#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/perf.h"
#include "kvsim/plan.h"
#include "kvsim/scenario.h"
#include "kvsim/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ======================= latency samples ======================= */

/* Per-request latencies of one run, seconds. Both sides (measured and
 * simulated) go through the same kvsim_dist_t, so percentiles use one
 * convention (GSL's, rank q x (n - 1)). */
typedef struct kvsim_fid_lat {
  kvsim_dist_t ttft, tpot, e2e, queue;
  bool has_queue;           /* the source knows when requests were first scheduled */
  double t_first, t_last;   /* first arrival, last finish (s): the makespan */
  int64_t finished;
  int64_t output_tokens, prompt_tokens;
  double first_arrival_unix_s; /* the first arrival on the wall clock; NAN when the file does not stamp it */
} kvsim_fid_lat_t;

/* Empty samples (no allocation until the first add). */
void kvsim_fidelity_lat_init(kvsim_fid_lat_t *l);
void kvsim_fidelity_lat_fini(kvsim_fid_lat_t *l);
/* Adds one finished request: arrival, first scheduled (< 0: unknown),
 * first token, last token (s, any common origin), prompt and output
 * tokens. TPOT is (last - first) / (out - 1), only for out > 1; the
 * queueing delay only when l->has_queue. KVSIM_ENOMEM (err not set). */
int kvsim_fidelity_lat_add(kvsim_fid_lat_t *l, double arrival, double scheduled, double first,
                           double last, int64_t prompt, int64_t out);

typedef struct kvsim_fid_stat {
  double mean, p50, p90, p99; /* NAN when n = 0 */
  int64_t n;
} kvsim_fid_stat_t;

/* Mean and percentiles of d (sorts d in place). */
kvsim_fid_stat_t kvsim_fidelity_stat_of(kvsim_dist_t *d);

/* The four compared latencies, in this order everywhere. */
enum { KVSIM_FID_TTFT, KVSIM_FID_TPOT, KVSIM_FID_E2E, KVSIM_FID_QUEUE, KVSIM_FID_NLAT };

/* "ttft", "tpot", "e2e", "queue". */
const char *kvsim_fidelity_lat_name(int k);

/* The percentile comparison of two runs. */
typedef struct kvsim_fid_lat_cmp {
  kvsim_fid_stat_t meas[KVSIM_FID_NLAT], sim[KVSIM_FID_NLAT];
  bool has_queue;                   /* the measured side knows the queueing delay */
  double makespan_meas, makespan_sim;
  double tput_meas, tput_sim;       /* output tokens per second over the makespan */
  int64_t n_meas, n_sim;            /* finished requests */
} kvsim_fid_lat_cmp_t;

/* Fills out from two sets of samples (sorts them in place). */
void kvsim_fidelity_lat_compare(kvsim_fid_lat_t *meas, kvsim_fid_lat_t *sim, kvsim_fid_lat_cmp_t *out);

/* (sim - meas) / meas in percent; NAN when meas is 0 or either is not finite. */
double kvsim_fidelity_err_pct(double sim, double meas);

/* The largest |error| (percent) over the nine contract metrics, mean, p50
 * and p99 of TTFT, TPOT and E2E; INFINITY when one of them cannot be
 * compared. Its name ("tpot_p99") goes into which[cap]. */
double kvsim_fidelity_lat_worst(const kvsim_fid_lat_cmp_t *c, char *which, size_t cap);

/* Median of |x| over n values (n > 0); NAN when n = 0 or out of memory. */
double kvsim_fidelity_median_abs(const double *x, int n);

/* ======================= time series ======================= */

typedef struct kvsim_fid_point {
  double t, running, waiting, kv; /* kv: fraction in [0, 1] */
} kvsim_fid_point_t;

/* A zero-initialised series is empty and valid. */
typedef struct kvsim_fid_series {
  kvsim_fid_point_t *v;
  int64_t n, cap;
  bool has_kv;              /* false when the source did not record KV usage */
} kvsim_fid_series_t;

void kvsim_fidelity_series_fini(kvsim_fid_series_t *s);
/* Appends a point; KVSIM_ENOMEM leaves the series as it was (err not set). */
int kvsim_fidelity_series_push(kvsim_fid_series_t *s, double t, double running, double waiting,
                               double kv);

/* Mean absolute difference of the simulated series against the measured
 * one at the measured time points (the simulated value at the last tick
 * at or before t; idle past the simulated run's end). n = points compared. */
typedef struct kvsim_fid_series_cmp {
  double running_mad, waiting_mad, kv_mad; /* kv in percentage points; NAN when not recorded */
  double running_mean_meas, running_mean_sim, waiting_mean_meas, waiting_mean_sim;
  double kv_mean_meas, kv_mean_sim;        /* percent */
  int64_t n;
} kvsim_fid_series_cmp_t;

void kvsim_fidelity_series_compare(const kvsim_fid_series_t *meas, const kvsim_fid_series_t *sim,
                                   kvsim_fid_series_cmp_t *out);

/* ======================= running a scenario in memory ======================= */

/* Runs sc with no files: finished requests' latencies into lat (times on
 * the simulated clock), the per-tick time series summed over replicas
 * (running, waiting; KV usage averaged) into ser (may be NULL), totals
 * into st (may be NULL). Errors are kvsim_run's. */
int kvsim_fidelity_simulate(const kvsim_scenario_t *sc, kvsim_fid_lat_t *lat, kvsim_fid_series_t *ser,
                            kvsim_run_stats_t *st, kvsim_err *err);

/* The same for comparison with client-side measurements: the GPU's
 * frontend_us (gpu.h) is added to every TTFT and E2E. */
int kvsim_fidelity_simulate_client(const kvsim_scenario_t *sc, kvsim_fid_lat_t *lat,
                                   kvsim_fid_series_t *ser, kvsim_run_stats_t *st, kvsim_err *err);

/* ======================= measured runs ======================= */

typedef enum kvsim_fid_fmt {
  KVSIM_FID_FMT_LLMSERVINGSIM = 1, /* requests.jsonl: queued_ts, scheduled_ts, first/last_token_ts */
  KVSIM_FID_FMT_KVSIM,             /* kvsim's own requests.csv */
  KVSIM_FID_FMT_VLLM_BENCH,        /* vllm bench serve --save-result JSON (with or without --save-detailed) */
  KVSIM_FID_FMT_SGLANG_BENCH,      /* SGLang bench_serving --output-file JSON lines (one run a line) */
  KVSIM_FID_FMT_AIPERF,            /* aiperf / genai-perf profile_export.jsonl (a request a line) */
} kvsim_fid_fmt_t;

/* "llmservingsim", "kvsim", "vllm-bench", "sglang-bench", "aiperf" (static text). */
const char *kvsim_fidelity_fmt_name(kvsim_fid_fmt_t f);

/* True for formats timed at the client (benchmarks): compared with
 * kvsim_fidelity_simulate_client. */
bool kvsim_fidelity_fmt_client(kvsim_fid_fmt_t f);

/* Reads a measured per-request file into lat (initialised by the caller),
 * detecting its format from the content. LLMServingSim requests.jsonl,
 * kvsim's requests.csv and aiperf's profile_export.jsonl are read by the
 * trace formats llmservingsim, requests and aiperf (CSV quoting as RFC
 * 4180 has it); a benchmark JSON (vLLM, SGLang) by the readers of
 * sim/src/fidelity/bench_*.c. KVSIM_EIO when it cannot be opened,
 * KVSIM_EINVAL naming the file (and the line where the bad row starts) for
 * bad content or no finished request, and for a benchmark file with
 * aggregates only (kvsim_fidelity_measured_load reads those). */
int kvsim_fidelity_read_measured(const char *path, kvsim_fid_lat_t *lat, kvsim_fid_fmt_t *fmt,
                                 kvsim_err *err);

/* Reads a measured time series into s (empty), detecting its format from
 * the content: LLMServingSim's vllm/timeseries.csv (t, running,
 * waiting[, kv_cache_pct]), kvsim's own timeseries.csv (periodic rows
 * only, replicas summed), a Prometheus scrape as text with a timestamp on
 * every sample (promtool tsdb dump, OpenMetrics, kvsim run
 * --openmetrics) or the JSON of /api/v1/query_range: vLLM's
 * vllm:num_requests_running / _waiting and vllm:kv_cache_usage_perc (or
 * vllm:gpu_cache_usage_perc), SGLang's sglang:num_running_reqs /
 * num_queue_reqs / token_usage, engines (label sets) summed, KV usage
 * averaged, t = 0 at the first sample. Errors as above. */
int kvsim_fidelity_read_series(const char *path, kvsim_fid_series_t *s, kvsim_err *err);

/* How a benchmark drove its load, as its result file states it (vLLM's
 * get_request, SGLang's): requests sent at `rate` per second with Gamma
 * gaps of shape `burstiness` (1: Poisson), or all at once (rate
 * INFINITY), at most max_concurrency in flight (0: no cap). */
typedef struct kvsim_fid_drive {
  bool known;               /* the file states a rate */
  double rate;              /* requests/s; INFINITY: all at t = 0 */
  double burstiness;        /* vLLM --burstiness (Gamma shape); 1 when not stated */
  int64_t max_concurrency;  /* 0: none */
  int64_t requests;         /* sent: completed + failed */
  double mean_prompt, mean_output; /* tokens per completed request; NAN when not stated */
} kvsim_fid_drive_t;

/* The measured side of a comparison: loaded once, compared with as many
 * simulations as wanted (calibration loops). */
typedef struct kvsim_fid_measured {
  kvsim_fid_lat_t lat;
  kvsim_fid_fmt_t fmt;
  kvsim_fid_series_t series;
  bool has_series;
  char path[4096], series_path[4096];
  /* A benchmark result without per-request lists: its stated mean / p50 /
   * p90 / p99 (NAN where the file does not state one), makespan, output
   * throughput and completed count replace what lat would give. */
  bool aggregates_only;
  kvsim_fid_stat_t stated[KVSIM_FID_NLAT];
  double stated_makespan, stated_tput;
  int64_t stated_n;
  bool has_arrivals;        /* per-request send times (else drive says how they came) */
  kvsim_fid_drive_t drive;
  int run, runs;            /* appended files: the run read (1-based, the last) of runs */
  char not_compared[256];   /* what the file has that cannot be compared, and why */
  char replay[256];         /* how the arrivals were replayed (kvsim_fidelity_measured_scenario) */
  /* The series was a Prometheus scrape (text or query_range JSON): its
   * samples, stamped on the wall clock, are compared with every simulated
   * row on whole milliseconds; t = 0 at the first request's arrival when
   * the requests file stamps it on the wall clock too (series_anchored),
   * else at the scrape's first sample. */
  bool series_prom, series_anchored;
} kvsim_fid_measured_t;

/* Loads the per-request file `measured` and its time series: `series`, or
 * when NULL the vllm/timeseries.csv beside an LLMServingSim requests.jsonl
 * (if there is one). m is always initialised: call _fini even on error. */
int kvsim_fidelity_measured_load(const char *measured, const char *series, kvsim_fid_measured_t *m,
                                 kvsim_err *err);
void kvsim_fidelity_measured_fini(kvsim_fid_measured_t *m);

typedef struct kvsim_fid_measured_cmp {
  kvsim_fid_lat_cmp_t lat;
  bool has_series;
  kvsim_fid_series_cmp_t series;
  kvsim_run_stats_t st;     /* the simulation's totals */
} kvsim_fid_measured_cmp_t;

/* Loads the scenario that replays m (sc is the caller's, _fini it): the
 * file at path with sets[0..nsets) applied. When m has no per-request
 * send times but states how the benchmark drove its load, and the
 * scenario's workload is synthetic, its arrivals and request count are
 * first replaced by the benchmark's (Poisson or Gamma gaps at the stated
 * rate and burstiness, or max_concurrency closed-loop clients, or all at
 * once), the user's sets coming after; m->replay says what was done.
 * Errors are kvsim_scenario_load's. */
int kvsim_fidelity_measured_scenario(kvsim_fid_measured_t *m, const char *path, const char *const *sets,
                                     int nsets, kvsim_scenario_t *sc, kvsim_err *err);

/* Simulates sc (client-side when m is a benchmark's file) and compares
 * it with m. Errors are the simulation's. */
int kvsim_fidelity_measured_compare(kvsim_fid_measured_t *m, const kvsim_scenario_t *sc,
                                    kvsim_fid_measured_cmp_t *cmp, kvsim_err *err);

/* The comparison as `kvsim validate --measured --json` prints it. */
char *kvsim_fidelity_measured_to_json(const kvsim_fid_measured_t *m, const kvsim_scenario_t *sc,
                                      const kvsim_fid_measured_cmp_t *c);

/* ======================= the AIConfigurator silicon table ======================= */

typedef struct kvsim_fid_sil_row {
  int line;                 /* 1-based line of the CSV */
  char id[160];
  char model_path[128], system[32], precision[16], mode[16], backend[16], version[48];
  int64_t isl, osl, batch, tp, pp, attn_dp, moe_ep;
  double ttft_ms, tpot_ms;  /* measured */
  /* Resolved: the catalog names, or why kvsim cannot reproduce the row. */
  char model[64], gpu[64];
  bool skipped;
  char reason[128];
  /* The date of silicon_data_source's `measured=` item ("" without one),
   * and what the row's campaign launched that its columns do not say,
   * from the campaign's own scripts (silicon_launch.c): the KV cache dtype
   * when not the precision's, max_num_seqs ("" / 0: the precision's, the
   * engine's default); for SGLang the scheduler's launch options
   * (0: SGLang's default) and the radix cache turned off; and the
   * benchmark client's length spread (0: the backend's default,
   * kvsim_fidelity_sil_range_ratio). */
  char measured[16], kv_cache_dtype[16];
  int64_t max_num_seqs;
  int64_t max_running_requests, chunked_prefill_size, max_prefill_tokens, scheduler_recv_interval;
  double mem_fraction_static, range_ratio;
  bool no_radix_cache;
} kvsim_fid_sil_row_t;

typedef struct kvsim_fid_sil_table {
  kvsim_fid_sil_row_t *rows;
  int64_t n, cap;
} kvsim_fid_sil_table_t;

/* Reads the CSV into t (filled from empty), keeping rows that match every
 * KEY=VALUE filter (a column name = value, case-insensitive; the same key
 * twice = either value; model= and gpu= match the catalog names too).
 * Kept rows that kvsim cannot reproduce are marked skipped with a reason.
 * KVSIM_EINVAL for a bad filter, header or value, KVSIM_EIO when the file
 * cannot be opened. */
int kvsim_fidelity_silicon_read(const char *path, const char *const *filters, int nfilters,
                                kvsim_fid_sil_table_t *t, kvsim_err *err);
void kvsim_fidelity_silicon_free(kvsim_fid_sil_table_t *t);

/* The benchmark's length spread: prompt and output lengths uniform in
 * [int(len x ratio), len] (bench_serving's random dataset, legacy
 * `--random-range-ratio` semantics, as used by InferenceX's fixed_seq_len
 * runs, whose sweep the Llama-3.1-70B and gpt-oss rows match). 1 = fixed.
 * The H100 Qwen3-32B rows' client (aiperf driven by aiconfigurator's
 * eval/benchmarks/genai_perf_runner.py) sent fixed lengths, but replayed
 * fixed kvsim's clients stay in lockstep where the measured vLLM's do
 * not (TTFT 21.8 -> 46.9 % held out): they keep this spread as a stand-in
 * (docs/ACCURACY.md, "What the misses are"). */
#define KVSIM_FID_SIL_RANGE_RATIO 0.8
/* The SGLang rows of AIConfigurator's runner ran fixed lengths (the
 * InferenceX campaigns' did not: silicon_launch.c gives them their
 * client's 0.8): their clients move in lockstep, every
 * wave's prompts prefilled together before its decodes (TTFT the wave's
 * whole prefill, TPOT without prefill interference). Replayed at 0.8 they
 * came out 84 % fast on TTFT and 32 % slow on TPOT with E2E within 4 %;
 * at 1, within 15 % and 4 % (H100 Qwen3-32B, TP 2; docs/ACCURACY.md). */
#define KVSIM_FID_SIL_RANGE_RATIO_SGLANG 1.0
/* A row's own spread (its campaign's, or the two above by its backend), where a caller
 * passes this instead of a ratio. */
#define KVSIM_FID_SIL_RANGE_AUTO (-1.0)
/* range_ratio, or the row's own for KVSIM_FID_SIL_RANGE_AUTO: its
 * campaign's client (r->range_ratio) when known, else the two above by
 * its backend. */
double kvsim_fidelity_sil_range_ratio(const kvsim_fid_sil_row_t *r, double range_ratio);

/* The scenario that reproduces a row (sc is the caller's, _fini it): a
 * closed loop of `batch` clients with think time 0 and 10 x batch requests
 * (the concurrency x 10 request count of AIConfigurator's replay,
 * ai-dynamo/aiconfigurator tools), the row's tp and precision, lengths per
 * range_ratio. A GPU of gpus[0..ngpus) whose name is the row's catalog GPU
 * replaces it (e.g. calibrated coefficients). */
int kvsim_fidelity_silicon_scenario(const kvsim_fid_sil_row_t *r, const kvsim_gpu_t *gpus, int ngpus,
                                    double range_ratio, kvsim_scenario_t *sc, kvsim_err *err);

/* Simulated mean TTFT and TPOT of a row (ms), client-side; perf, when not
 * NULL, replaces the GPU's step-time coefficients. A row whose memory plan
 * does not fit fails with the plan's error. */
int kvsim_fidelity_silicon_simulate(const kvsim_fid_sil_row_t *r, const kvsim_gpu_t *gpus, int ngpus,
                                    double range_ratio, const kvsim_gpu_perf_t *perf, double *ttft_ms,
                                    double *tpot_ms, kvsim_err *err);

/* The step model's terms at a row's mean decode step (what its TPOT is
 * made of): min(batch, max_num_seqs) sequences decoding one token each at
 * the row's mean context (the mean prompt plus half the mean output), on
 * the GPU and coefficients kvsim_fidelity_silicon_simulate uses. The
 * plan's error when kvsim cannot plan the row. */
int kvsim_fidelity_sil_decode_step(const kvsim_fid_sil_row_t *r, const kvsim_gpu_t *gpus, int ngpus,
                                   double range_ratio, const kvsim_gpu_perf_t *perf, kvsim_step_cost_t *cost,
                                   kvsim_err *err);

typedef struct kvsim_fid_sil_result {
  bool ok;                  /* simulated; else error says why (skipped rows: neither) */
  double ttft_ms, tpot_ms;  /* simulated */
  double err_ttft, err_tpot; /* percent */
  kvsim_step_cost_t decode_step; /* kvsim_fidelity_sil_decode_step, when ok */
  char error[160];
} kvsim_fid_sil_result_t;

/* Consecutive rows of the sorted order with one system and model. */
typedef struct kvsim_fid_sil_group {
  int64_t lo, hi;           /* [lo, hi) in order[] */
  int n;                    /* rows simulated */
  bool any;                 /* a row not skipped */
  double ttft_med, tpot_med; /* median |error| (percent), NAN when n = 0 */
} kvsim_fid_sil_group_t;

typedef struct kvsim_fid_sil_reason {
  const char *reason;       /* points into a row of the table */
  int count;
} kvsim_fid_sil_reason_t;

/* Every kept row reproduced and compared. */
typedef struct kvsim_fid_silicon {
  kvsim_fid_sil_table_t table;
  kvsim_fid_sil_result_t *res;   /* per table row */
  int64_t *order;                /* table rows by system, model, precision, tp, isl, osl, batch, line */
  kvsim_fid_sil_group_t *groups; /* over order[] */
  int64_t ngroups;
  kvsim_fid_sil_reason_t *reasons; /* skipped rows by reason, in file order of first occurrence */
  int64_t nreasons;
  int simulated, failed, skipped, compared; /* compared: rows with errors (= simulated) */
  double ttft_med, tpot_med;     /* median |error| over every simulated row (percent) */
} kvsim_fid_silicon_t;

/* Reads `path` (as kvsim_fidelity_silicon_read) and simulates every row
 * not skipped. A row that fails to simulate is recorded, not fatal.
 * out is always initialised: call _fini even on error. */
int kvsim_fidelity_silicon_compare(const char *path, const char *const *filters, int nfilters,
                                   const kvsim_gpu_t *gpus, int ngpus, double range_ratio,
                                   const kvsim_gpu_perf_t *perf, kvsim_fid_silicon_t *out,
                                   kvsim_err *err);
void kvsim_fidelity_silicon_fini(kvsim_fid_silicon_t *s);

/* As `kvsim validate --silicon --json` prints it; file is echoed. */
char *kvsim_fidelity_silicon_to_json(const kvsim_fid_silicon_t *s, const char *file);

/* ======================= coverage of measured means by the band ======================= */

/* Whether the ranges kvsim run reports hold what was measured: each dev
 * run (a measured per-request file, a silicon row) is simulated at its
 * scenario's step times and at the band's two edges (gpu.h
 * kvsim_gpu_band_scales of the coefficients in use, times the scenario's
 * perf.step_time_scale), and each measured mean is checked against
 * [min, max] of the three simulated means, as kvsim run's *_range. The
 * coefficients are the scenario's GPU's (sc->gpu.perf), so held-out
 * coefficients can be fed in (--perf, or a GPU file); an item is labelled
 * in-sample when they are its own GPU's fit, which may include the item. */

/* One mean (s): measured, simulated at nominal step times, the range. */
typedef struct kvsim_fid_band_mean {
  bool has; /* compared (silicon rows have no E2E) */
  double meas, sim, lo, hi;
  bool inside; /* lo <= meas <= hi */
} kvsim_fid_band_mean_t;

/* TTFT, TPOT, E2E (KVSIM_FID_TTFT, KVSIM_FID_TPOT, KVSIM_FID_E2E). */
#define KVSIM_FID_COVER_NLAT 3

typedef struct kvsim_fid_cover_item {
  char label[160]; /* the measured file, or the silicon row's id */
  char gpu[64];
  bool ok; /* simulated; else error says why not */
  char error[160];
  bool in_sample;
  char coefficients[128];    /* whose coefficients, and why in-sample or held-out */
  double scale_lo, scale_hi;     /* the edge runs' perf.step_time_scale */
  double prefill_lo, prefill_hi; /* and their perf.prefill_time_scale */
  double band_ttft, band_tpot;   /* the band (relative): the TTFT and TPOT tops hold it (kvsim_range_hold_band) */
  kvsim_fid_band_mean_t mean[KVSIM_FID_COVER_NLAT];
} kvsim_fid_cover_item_t;

/* Items in the order added; per mean, how many were compared and how
 * many measured means fell inside, held-out ([0]) and in-sample ([1]).
 * Zero-initialised: empty and valid. */
typedef struct kvsim_fid_coverage {
  kvsim_fid_cover_item_t *items;
  int n, cap;
  int skipped; /* silicon rows kvsim cannot reproduce */
  int compared[2][KVSIM_FID_COVER_NLAT], inside[2][KVSIM_FID_COVER_NLAT];
} kvsim_fid_coverage_t;

void kvsim_fidelity_coverage_fini(kvsim_fid_coverage_t *c);

/* Appends the measured run m replayed by sc (client-side when m is a vLLM
 * benchmark file). perf_gpu names the GPU whose coefficients sc->gpu.perf
 * holds (NULL: sc's own GPU's). Errors: the simulations'. */
int kvsim_fidelity_coverage_measured(kvsim_fid_measured_t *m, const kvsim_scenario_t *sc,
                                     const char *perf_gpu, kvsim_fid_coverage_t *c, kvsim_err *err);

/* Appends every row of a silicon CSV that kvsim can reproduce (read as
 * kvsim_fidelity_silicon_compare reads it; gpus, range_ratio, perf as
 * there, perf_gpu naming perf's GPU). A row that fails to simulate is an
 * item with its error, not fatal. Errors: the reader's. */
int kvsim_fidelity_coverage_silicon(const char *path, const char *const *filters, int nfilters,
                                    const kvsim_gpu_t *gpus, int ngpus, double range_ratio,
                                    const kvsim_gpu_perf_t *perf, const char *perf_gpu,
                                    kvsim_fid_coverage_t *c, kvsim_err *err);

/* The report: one line per item and the coverage fractions, as text to
 * out, or with json one JSON object. KVSIM_ENOMEM when out of memory. */
int kvsim_fidelity_coverage_report(const kvsim_fid_coverage_t *c, bool json, FILE *out);

/* ======================= the start-up log table ======================= */

/* A number as the log wrote it: it carries +/- half a unit of its last place. */
typedef struct kvsim_fid_su_value {
  bool set;
  double v;
  int decimals;
} kvsim_fid_su_value_t;

/* One start-up observation. */
typedef struct kvsim_fid_su_row {
  int index;               /* 1-based data row of the file, 0 for a meta.json */
  char source[96];         /* short form of the source URL ("vllm#12330") */
  char engine[8];          /* "V0" / "V1" */
  char vllm_version[24];   /* as given ("0.9.0", "~0.6.5" for an era); "" when not stated */
  char model[128], gpu[64];
  int tp, num_gpus;        /* 0: not logged */
  double util;             /* 0: not logged */
  int64_t max_model_len;   /* 0: the model's default */
  int block_size;          /* 0: 16 */
  char kv_dtype[16];
  /* What the engine logged. */
  kvsim_fid_su_value_t weights, avail_gib, concurrency;
  int64_t tokens, blocks;  /* 0: not logged */
  /* Measured overheads and settings found in the notes. */
  kvsim_fid_su_value_t total_gib, non_torch, activation;
  int64_t total_bytes;     /* exact total (meta.json) */
  int64_t max_num_seqs, max_num_batched_tokens;
  int chunked;             /* -1 unknown */
  bool enforce_eager;
} kvsim_fid_su_row_t;

/* The plan against one row: (a) with the row's measured overheads as
 * overrides, where the log has them, (b) predicted from the model, GPU
 * and settings alone. */
typedef struct kvsim_fid_su_result {
  bool skipped;
  char reason[160];
  char model_name[64], gpu_name[64];
  bool has_overrides;
  kvsim_plan_t with, pred;
  double err_with, err_pred; /* percent; NAN when not comparable */
  char metric[8];            /* what was compared: "blocks", "tokens", "GiB" */
  double logged_gib;         /* the logged pool in GiB (blocks/tokens via kvsim's block bytes) */
} kvsim_fid_su_result_t;

/* A zero-initialised table is empty and valid. */
typedef struct kvsim_fid_startup {
  kvsim_fid_su_row_t *rows;
  kvsim_fid_su_result_t *res; /* per row, after _evaluate */
  int64_t n, cap;
  int predicted;             /* rows with a prediction error */
  double median_abs_err;     /* median |error| of (b) (percent), NAN when none */
} kvsim_fid_startup_t;

/* Appends the rows of the start-up log CSV (vllm_startup_logs.csv
 * columns). KVSIM_EIO when it cannot be read, KVSIM_EPARSE for a missing
 * column or bad CSV (a row with more or fewer fields than the header,
 * named by the line where it starts). */
int kvsim_fidelity_startup_read(const char *path, kvsim_fid_startup_t *t, kvsim_err *err);
/* Appends a run's meta.json (engine_kwargs, kv_cache, hardware) as a row. */
int kvsim_fidelity_startup_add_meta(const char *path, kvsim_fid_startup_t *t, kvsim_err *err);
/* Plans every row and fills res[], predicted and median_abs_err. A row
 * that cannot be planned is skipped with its reason, not an error. */
int kvsim_fidelity_startup_evaluate(kvsim_fid_startup_t *t, kvsim_err *err);
/* After _evaluate: KVSIM_OK when at least one row has a prediction error;
 * else KVSIM_EINVAL "no row could be validated (N skipped)" (or "the table
 * has no rows"), as a validation of nothing is no result. */
int kvsim_fidelity_startup_validated(const kvsim_fid_startup_t *t, kvsim_err *err);
void kvsim_fidelity_startup_fini(kvsim_fid_startup_t *t);

/* As `kvsim validate --startup --json` prints it; file is echoed. */
char *kvsim_fidelity_startup_to_json(const kvsim_fid_startup_t *t, const char *file);

/* ======================= calibration ======================= */

/* The step-time coefficients a calibration can fit (gpu.h kvsim_gpu_perf_t). */
typedef enum kvsim_fid_coef {
  KVSIM_FID_HOST, KVSIM_FID_HOST_PER_SEQ, KVSIM_FID_FRONTEND, KVSIM_FID_FRONTEND_PER_TOKEN, KVSIM_FID_NCOEF
} kvsim_fid_coef_t;

/* Its name in a GPU's "perf" object ("host_us", "host_per_seq_us", ...). */
const char *kvsim_fidelity_coef_name(int k);
/* The field of p holding coefficient k. */
double *kvsim_fidelity_coef(kvsim_gpu_perf_t *p, int k);
/* The perf a silicon row or run takes from another GPU's kernel profile
 * (kvsim validate --perf NAME): its tables, the engine's own host time and
 * the client latency of the silicon rows. KVSIM_ENOENT for an unknown
 * profile. */
int kvsim_fidelity_perf_of_kernels(const char *kernels, kvsim_gpu_perf_t *p, kvsim_err *err);
/* Copies the coefficients (host_us, frontend_us, frontend_per_token_us)
 * of src onto dst, leaving dst's kernel tables as they are. */
void kvsim_fidelity_apply_coefs(kvsim_gpu_perf_t *dst, const kvsim_gpu_perf_t *src);
/* Parses "host_us,frontend_us" into fit[KVSIM_FID_NCOEF] / *nfit. KVSIM_EINVAL
 * names an unknown or repeated coefficient, or an empty list. */
int kvsim_fidelity_parse_fit(const char *list, int *fit, int *nfit, kvsim_err *err);

/* Per measured run, the residuals are the mean, p50, p90 and p99 of
 * TTFT, TPOT and E2E, in this order ("ttft_mean", ..., "e2e_p99"). */
#define KVSIM_FID_RUN_METRICS 12
const char *kvsim_fidelity_run_metric_name(int j);

typedef struct kvsim_fid_calib_run {
  kvsim_fid_measured_t m;
  kvsim_scenario_t sc;      /* replays m; its GPU is the calibrated one */
} kvsim_fid_calib_run_t;

/* The data set of one GPU's calibration. */
typedef struct kvsim_fid_calib {
  kvsim_gpu_t gpu;          /* the GPU being calibrated; its perf is the start */
  kvsim_fid_calib_run_t *runs;
  int nruns, runs_cap;
  kvsim_fid_sil_row_t *rows; /* silicon rows on this GPU that kvsim can run */
  int nrows;
  int rows_skipped, rows_other_gpu, rows_unfit;
  int rows_unphysical;      /* left out: beyond what the GPU can do (kvsim_fidelity_sil_physical) */
  double range_ratio;       /* of the silicon rows' lengths */
  char filters[96];         /* the silicon filters, comma-joined, for the provenance */
} kvsim_fid_calib_t;

/* Starts an empty data set for gpu (copied). */
void kvsim_fidelity_calib_init(kvsim_fid_calib_t *c, const kvsim_gpu_t *gpu);
void kvsim_fidelity_calib_fini(kvsim_fid_calib_t *c);
/* Adds a measured per-request file and the scenario that replays it.
 * KVSIM_EINVAL when the scenario runs on another GPU (coefficients are
 * per GPU); the readers' errors ("--measured: " prefixed) otherwise. */
int kvsim_fidelity_calib_add_run(kvsim_fid_calib_t *c, const char *measured, const char *scenario,
                                 kvsim_err *err);
/* The same from memory: takes ownership of *m and *sc (also on error). */
int kvsim_fidelity_calib_add_loaded(kvsim_fid_calib_t *c, kvsim_fid_measured_t *m,
                                    kvsim_scenario_t *sc, kvsim_err *err);
/* Adds the rows of a silicon CSV (filters as kvsim_fidelity_silicon_read)
 * that run on this GPU; rows skipped, on other GPUs, or whose plan does
 * not fit are counted and left out. Call at most once. */
int kvsim_fidelity_calib_add_silicon(kvsim_fid_calib_t *c, const char *path, const char *const *filters,
                                     int nfilters, double range_ratio, kvsim_err *err);

typedef struct kvsim_fid_calib_opts {
  const int *fit;           /* coefficients to fit; NULL / nfit 0: chosen from the data */
  int nfit;
  bool linear;              /* plain least squares instead of the soft-L1 loss */
  int max_iter;             /* solver iterations (>= 1) */
  /* Called after each iteration (may be NULL): cost and coefficients. */
  void (*progress)(void *ctx, size_t iter, double cost, const int *fit, int nfit,
                   const kvsim_gpu_perf_t *at);
  void *ctx;
} kvsim_fid_calib_opts_t;

/* Median |relative error| (percent, NAN when none) per kind of residual,
 * and sigma = 1.4826 x median / 100 (one standard deviation for normal
 * errors, not dominated by outliers). */
typedef struct kvsim_fid_calib_summary {
  double ttft_med, tpot_med, e2e_med;
  double ttft_sigma, tpot_sigma;
  int n_ttft, n_tpot, n_e2e;
} kvsim_fid_calib_summary_t;

typedef struct kvsim_fid_calib_result {
  int fit[KVSIM_FID_NCOEF], nfit;   /* the coefficients fitted */
  bool is_free[KVSIM_FID_NCOEF];
  double stddev[KVSIM_FID_NCOEF];   /* of the fitted ones (0 when the covariance is singular) */
  kvsim_gpu_perf_t fitted;          /* with sigmas, calibrated = true and the provenance */
  kvsim_fid_calib_summary_t before, after;
  size_t iterations;
  int simulations;                  /* evaluations of the whole data set */
  bool linear;
  /* Residuals at the fitted coefficients: per run KVSIM_FID_RUN_METRICS
   * values (s), then per silicon row TTFT and TPOT (ms). Owned. */
  double *measured, *simulated;
  size_t nres;
} kvsim_fid_calib_result_t;

/* Fits the coefficients (gsl_multifit_nlinear, trust region) over whole
 * simulations of the data set. KVSIM_EINVAL when the data has fewer
 * residuals than coefficients; a simulation's error when one fails.
 * r is always initialised: call _fini even on error. */
int kvsim_fidelity_calibrate(kvsim_fid_calib_t *c, const kvsim_fid_calib_opts_t *opts,
                             kvsim_fid_calib_result_t *r, kvsim_err *err);
void kvsim_fidelity_calib_result_fini(kvsim_fid_calib_result_t *r);

/* As `kvsim calibrate --json` prints it. */
char *kvsim_fidelity_calib_to_json(const kvsim_fid_calib_t *c, const kvsim_fid_calib_result_t *r);

/* Writes `out`: the GPU JSON of `gpu_arg` (catalog name `gpu_name` or a
 * path) with its "perf" object replaced by p, everything else byte for
 * byte. Atomic (temp + rename). KVSIM_EINVAL when the source is not a GPU
 * object, the I/O error otherwise. */
int kvsim_fidelity_write_gpu_json(const char *gpu_name, const char *gpu_arg, const kvsim_gpu_perf_t *p,
                                  const char *out, kvsim_err *err);

/* ======================= leave-one-group-out ======================= */

/* One held-out measurement of a latency group: which one, and its signed
 * held-out errors, for grouping the residuals by TP, clients or lengths. */
typedef struct kvsim_fid_logo_row {
  char id[160];                  /* the silicon row's id, or "per-request run" */
  int64_t tp, clients, isl, osl; /* the silicon row's; 0 for a per-request run */
  double err[3];                 /* (simulated - measured) / measured, %, of mean TTFT, TPOT, E2E */
} kvsim_fid_logo_row_t;

/* One group of the dev data: GPU x model x precision x source. */
typedef struct kvsim_fid_logo_group {
  char gpu[64], model[64], precision[16];
  char source[16];          /* "silicon", "per-request", "startup" */
  bool moe;
  int n;                    /* rows (silicon, startup) or 1 (a per-request run) */
  int excluded;             /* rows left out as physically impossible */
  /* Median |error| (percent; NAN when not applicable) of mean TTFT, TPOT
   * and E2E: held out (coefficients that never saw the group) and with the
   * shipped all-data fit (in-sample where the fit saw the group). For a
   * start-up group: the KV budget's error in kv_*, latencies NAN. */
  double held[3], shipped[3];
  /* The 90th percentile of the held-out |error| of the group's rows (a
   * per-request run: its |error|): what the band must reach for the
   * group's rows, not only its median, to fall inside. */
  double held_q90[3];
  /* Each row held out (signed errors); owned, freed by
   * kvsim_fidelity_logo_fini. */
  kvsim_fid_logo_row_t *row;
  int nrow;
  double kv_err;
  bool shipped_in_sample;   /* the shipped fit was fitted on this group */
  char held_from[96];       /* what the held-out coefficients were fitted on */
  /* For a per-request group: the held-out run's mean errors (signed, %). */
  double held_signed[3];
  bool by_gpu;              /* held out by GPU: the host term fitted without the GPU's rows */
} kvsim_fid_logo_group_t;

/* A row left out of the fits and the table, and why. */
typedef struct kvsim_fid_logo_excl {
  char id[160];
  char reason[576]; /* room for a whole kvsim_err message and its prefix */
} kvsim_fid_logo_excl_t;

typedef struct kvsim_fid_logo_opts {
  const char *validation_dir; /* ../shared/validation */
  const char *scenario_dir;   /* configs/scenarios: the per-request runs' replays */
  int max_iter;               /* of each held-out fit (>= 1) */
  bool no_refit;              /* skip the borrowed and spec-only passes (the bands of those statuses stay empty) */
  /* Called as each group is done (may be NULL). */
  void (*progress)(void *ctx, const kvsim_fid_logo_group_t *g);
  void *ctx;
} kvsim_fid_logo_opts_t;

/* The benchmark client's latency (us) added to the silicon rows' TTFT and
 * E2E: a campaign's, not a GPU's; fitted with the host term on every
 * silicon row (`kvsim validate --all` prints it as frontend_us). */
#define KVSIM_FID_CLIENT_US 35200.0

/* The engine's host time per step, fixed and per scheduled request, per
 * family (perf.h KVSIM_HOST_*: vLLM synchronous, asynchronous, SGLang), and
 * the benchmark client's latency (us): what kvsim validate --all fits. */
typedef struct kvsim_fid_host {
  double host_us[KVSIM_HOST_FAMILIES], per_seq_us[KVSIM_HOST_FAMILIES], frontend_us;
} kvsim_fid_host_t;

/* Bands measured per status (gpu.h KVSIM_GPU_BAND_*): kernels (a GPU's own
 * tables), kernels-borrowed, spec-only, and MoE models. */
enum { KVSIM_FID_BAND_KERNELS, KVSIM_FID_BAND_BORROWED, KVSIM_FID_BAND_SPEC, KVSIM_FID_BAND_MOE, KVSIM_FID_NBAND };
const char *kvsim_fidelity_band_name(int b);

typedef struct kvsim_fid_logo {
  kvsim_fid_logo_group_t *groups;
  int ngroups, groups_cap;
  kvsim_fid_logo_excl_t *excl;
  int nexcl, excl_cap;
  int fits;                   /* held-out fits run */
  /* The host times and client latency fitted on every item (in-sample:
   * what perf.h KVSIM_HOST_* and KVSIM_FID_CLIENT_US ship), us: the
   * synchronous [0] and asynchronous [1] schedulers'. */
  kvsim_fid_host_t all;
  /* Per status: the 90th percentile of the held-out |error| (fractions)
   * of TTFT and TPOT over its rows, and how many rows. */
  double band[KVSIM_FID_NBAND][2];
  int band_rows[KVSIM_FID_NBAND];
} kvsim_fid_logo_t;

/* Leave-one-GPU-out over every dev source under opts->validation_dir:
 * the per-request runs and the silicon rows (vLLM and SGLang), each group
 * predicted by its GPU's kernel tables and the host term fitted on the
 * other GPUs' dense rows (logo.c), and the start-up logs (the memory plan
 * has no fitted coefficient: its error is the same held out and
 * in-sample). Rows whose
 * implied throughput exceeds what the GPU can do (kvsim_fidelity_sil_physical) are excluded
 * with the reason. KVSIM_EIO when the directory lacks the data. out is
 * always initialised: call _fini even on error. */
int kvsim_fidelity_logo_run(const kvsim_fid_logo_opts_t *opts, kvsim_fid_logo_t *out, kvsim_err *err);
void kvsim_fidelity_logo_fini(kvsim_fid_logo_t *l);

/* The fraction of the GPU's dense peak (of the row's precision) that a
 * silicon row implies: the larger of the decode rate (batch x 2 x active
 * parameters / tp / TPOT) and one prompt's prefill rate (2 x active x isl
 * / tp / TTFT). NAN when the row's model or GPU cannot be loaded. */
double kvsim_fidelity_logo_peak_frac(const kvsim_fid_sil_row_t *r);

/* The bandwidth floor of a silicon row's decode step: the bytes one
 * decode step of `batch` sequences must move on one rank (the weights,
 * plus the KV cache read at the row's mean context and written, in the
 * precision kvsim plans for the row) and their time at 100 % of the HBM
 * bandwidth (ms). The plan's error when kvsim cannot plan the row. */
int kvsim_fidelity_sil_decode_floor(const kvsim_fid_sil_row_t *r, double range_ratio, double *bytes,
                                    double *floor_ms, kvsim_err *err);

/* The step that prefills one prompt of the row's full input length on an
 * empty cache, as kvsim plans the row (its launch's flags, its GPU's own
 * tables), term by term (kvsim validate --silicon --terms): where a
 * row's TTFT error comes from. The plan's error when kvsim cannot plan
 * the row. */
int kvsim_fidelity_sil_prefill_terms(const kvsim_fid_sil_row_t *r, double range_ratio, kvsim_step_cost_t *cost,
                                     kvsim_err *err);

/* Whether a silicon row is physically possible on its GPU; when not, why
 * (into why[0..cap)): it implies more than 80 % of the dense peak of its
 * precision (kvsim_fidelity_logo_peak_frac), or its TPOT is below the
 * decode step's bandwidth floor. The one rule of kvsim calibrate and
 * kvsim validate --all: such rows are listed and not fitted. */
bool kvsim_fidelity_sil_physical(const kvsim_fid_sil_row_t *r, double range_ratio, char *why, size_t cap);
/* Marks the rows of t that the rule above refuses as skipped (reason:
 * beyond what the GPU can do), so that kvsim validate --silicon and its
 * --band leave out what kvsim calibrate and --all leave out. Returns how
 * many. */
int64_t kvsim_fidelity_sil_exclude_unphysical(kvsim_fid_sil_table_t *t, double range_ratio);

/* The held-out targets of a latency group (percent median |error| of
 * mean TTFT, TPOT, E2E; NAN: none): dense TTFT 15 and TPOT 7; a
 * per-request run TTFT 10, TPOT and E2E 5; MoE TTFT 20 and TPOT 12.
 * Returns how many of the group's held-out errors miss them (into
 * miss[0..2] when not NULL). */
int kvsim_fidelity_logo_targets(const kvsim_fid_logo_group_t *g, double target[3], bool miss[3]);

/* The text reports of kvsim validate --measured, --silicon and --startup,
 * to f (report_text.c). */
void kvsim_fidelity_measured_print(FILE *f, const kvsim_fid_measured_t *m, const kvsim_scenario_t *sc,
                                   const kvsim_fid_measured_cmp_t *c);
void kvsim_fidelity_silicon_print(FILE *f, const kvsim_fid_silicon_t *s);
/* Each simulated row's mean decode step by term (ms), what its TPOT is
 * made of (kvsim validate --silicon --terms), after a blank line. */
void kvsim_fidelity_silicon_print_terms(FILE *f, const kvsim_fid_silicon_t *s);
/* validate --silicon --terms, after the decode steps: for each simulated
 * row (once per GPU, model, precision, TP and input length) the prefill
 * step of one prompt of its length, term by term
 * (kvsim_fidelity_sil_prefill_terms). Those read the catalog GPU's own
 * tables: with own_gpu false (--gpu or --perf given) one line says so
 * instead. */
void kvsim_fidelity_silicon_print_prefill_terms(FILE *f, const kvsim_fid_silicon_t *s, double range_ratio,
                                                bool own_gpu);
void kvsim_fidelity_startup_print(FILE *f, const kvsim_fid_startup_t *t, const char *file);

/* As `kvsim validate --all --json` prints it. */
char *kvsim_fidelity_logo_to_json(const kvsim_fid_logo_t *l);
/* As `kvsim validate --all` prints it: the table, the memory side, the
 * excluded rows. NULL when out of memory. */
char *kvsim_fidelity_logo_to_text(const kvsim_fid_logo_t *l);
/* Runs the protocol and returns its text (json: its JSON); NULL with err
 * set on error. */
char *kvsim_fidelity_logo_report(const kvsim_fid_logo_opts_t *opts, bool json, kvsim_err *err);

#ifdef __cplusplus
}
#endif

#endif
