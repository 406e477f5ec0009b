/* Studies: many runs of one scenario, and what they answer together.
 *   - one run with its outputs (kvsim_study_run);
 *   - a sweep: a grid (or zip) of scenario keys, run in parallel processes,
 *     one table (sweep.csv);
 *   - a plan search: the highest rate, fewest replicas or lowest
 *     gpu_memory_utilization that meets latency targets, by bisection.
 * Runs report typed summaries (summary.h), never files or strings; an
 * error is a negative KVSIM_E* code (KVSIM_ENOFIT: the memory plan does not
 * fit) with one line naming where and what. */
#ifndef KVSIM_STUDY_H
#define KVSIM_STUDY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "kvsim/error.h"
#include "kvsim/scenario.h"
#include "kvsim/summary.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- One run ------------------------------------------------------------ */

typedef struct kvsim_study_run_opts {
  const char *dir; /* outputs (timeseries.csv, requests.csv, summary.json); NULL: none */
  bool progress;   /* a progress line on stderr */
  /* Invariant checks: 0 none; 1 the full O(pool) check after every step
   * (tests on small pools); 2 what each step touched, every step, and the
   * full check when sampled (engine.h check_period -1: --check-invariants
   * and debug builds). */
  int check;
} kvsim_study_run_opts_t;

/* Runs sc (only read) and fills *out. With opts->dir the outputs are
 * written there, complete or not at all. opts may be NULL (no files).
 * Errors: those of kvsim_run and of the outputs (KVSIM_EIO naming the
 * folder). */
int kvsim_study_run(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts,
                    kvsim_summary_t *out, kvsim_err *err);

/* ---- One run with its band through the queue ---------------------------- */

/* The band's two edges for sc (scenario.h kvsim_scenario_band_edges of
 * its GPU's coefficients): e[0] the fast edge, e[1] the slow one. */
void kvsim_study_band_edges(const kvsim_scenario_t *sc, kvsim_band_edge_t e[2]);
/* Their step scales alone (e[0].step, e[1].step). */
void kvsim_study_band_scales(const kvsim_scenario_t *sc, double *lo, double *hi);

/* kvsim_study_run, and with band two more runs of a copy of sc with step
 * times at the band's edges (kvsim_study_band_edges, through the typed
 * override kvsim_scenario_set_band_edge): their summaries are
 * merged into *out as [min, max] ranges over the three runs
 * (summary.h kvsim_summary_merge_ranges) before summary.json is written.
 * Only the nominal run writes timeseries.csv and requests.csv; the edge
 * runs show progress and check invariants as opts asks. Deterministic:
 * the same scenario and seed give the same ranges. Without band it is
 * kvsim_study_run. Sweep points and a plan search's points stay single
 * runs (one run per point: the band would triple a sweep's cost; a caller
 * that wants a point's range runs it here; a plan's answer is ranged by
 * the whole search at each edge, kvsim_search_run). Errors: kvsim_study_run's, an edge
 * run's prefixed with "band edge at step-time scale X". */
int kvsim_study_run_band(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts, bool band,
                         kvsim_summary_t *out, kvsim_err *err);

/* ---- A rate at the workload's duration -------------------------------- */

/* The most requests kvsim_study_set_rate gives a workload: past it a
 * point's duration shrinks (its summary's requests_total says so). */
#define KVSIM_STUDY_MAX_SUSTAINED_REQUESTS 1000000.0

/* Sets sc's mean arrival rate to `rate` req/s through the workload key
 * `key` ("rate" or "synthetic.arrival.rate", kvsim_scenario_set_workload)
 * keeping the workload's duration: a synthetic workload bounded by its
 * request count gets ceil(requests x rate / its rate) requests at a higher
 * rate (at most KVSIM_STUDY_MAX_SUSTAINED_REQUESTS), never fewer at a
 * lower one (its p99s keep their samples). A duration_s bound holds by
 * itself; a trace is compressed as before. Every rate a search or a
 * compare tries goes through here, so a short workload is not answered
 * with its warm-up. Errors: kvsim_scenario_set_workload's. */
int kvsim_study_set_rate(kvsim_scenario_t *sc, const char *key, double rate, kvsim_err *err);

/* ---- Verified advice ---------------------------------------------------- */

/* For each change advised by s's diagnosis (kvsim_advice_t: FP8 KV, one
 * more replica, TP x 2, a higher gpu_memory_utilization, another
 * max_num_seqs, a longer max_model_len), runs a copy of sc (the scenario s
 * came from) with that one typed override, without outputs, and fills the
 * advice's measured figures, its verdict against s (p99 TTFT and the
 * scenario's SLO) and each finding's `verified` line. A change advised by
 * several findings runs once. Deterministic for any jobs (results are
 * placed by index). A changed scenario that does not fit or fails is a
 * verdict ("does not fit", "failed" with the engine's message), not an
 * error. Errors: KVSIM_ENOMEM, KVSIM_EIO (fork, pipe). */
int kvsim_study_verify_advice(const kvsim_scenario_t *sc, kvsim_summary_t *s, int jobs,
                              kvsim_err *err);

/* kvsim_study_run_band (with or without the band), then
 * kvsim_study_verify_advice with up to `jobs` processes (the advised
 * changes run once each, without a band); with the band, its two edge
 * runs go into the same pool as the advised runs, after the nominal run
 * (the same summary as running them first). With opts->dir, summary.json
 * is written again with the measured advice (atomically, replacing the
 * run's). Errors: those of both (a failed edge first). */
int kvsim_study_run_verified(const kvsim_scenario_t *sc, const kvsim_study_run_opts_t *opts, bool band,
                             int jobs, kvsim_summary_t *out, kvsim_err *err);

/* ---- The parallel runner ------------------------------------------------ */

/* The default number of processes (--jobs): the machine's online cores,
 * in [1, 256]. */
int kvsim_study_cores(void);

/* Job i: fill *out, return KVSIM_OK or a negative code with err set. It
 * runs in a child process when jobs > 1, so it must not rely on changing
 * the caller's memory. */
typedef int (*kvsim_study_job_fn)(void *ctx, int64_t i, kvsim_summary_t *out, kvsim_err *err);
/* Job i ended (in the caller's process): rc, and its summary when rc is
 * KVSIM_OK or its error otherwise. A child that died without reporting
 * gives KVSIM_EIO "run failed". Return a negative code to stop. */
typedef int (*kvsim_study_done_fn)(void *ctx, int64_t i, int rc, const kvsim_summary_t *s,
                                   const kvsim_err *job_err);

/* Runs jobs first, first + stride, ... < end. jobs <= 1: one after the
 * other in this process; otherwise up to `jobs` forked processes at once,
 * each sending its summary back through a pipe. Results are given in
 * completion order (callers that write tables index them by i). Errors:
 * KVSIM_EIO when fork or pipe fails, or done's own code. */
int kvsim_study_parallel(int64_t first, int64_t end, int64_t stride, int jobs,
                         kvsim_study_job_fn job, kvsim_study_done_fn done, void *ctx,
                         kvsim_err *err);

/* The same for results of the caller's own plain type (no pointers): job
 * fills `out` (KVSIM_STUDY_RECORD_MAX bytes, zeroed), done receives it
 * (NULL when rc is not KVSIM_OK). A record must fit a pipe's buffer. */
#define KVSIM_STUDY_RECORD_MAX 60000
typedef int (*kvsim_study_rjob_fn)(void *ctx, int64_t i, void *out, kvsim_err *err);
typedef int (*kvsim_study_rdone_fn)(void *ctx, int64_t i, int rc, const void *out,
                                    const kvsim_err *job_err);
int kvsim_study_parallel_records(int64_t first, int64_t end, int64_t stride, int jobs,
                                 kvsim_study_rjob_fn job, kvsim_study_rdone_fn done, void *ctx,
                                 kvsim_err *err);

/* ---- Sweeps ------------------------------------------------------------- */

#define KVSIM_SWEEP_MAX_KEYS 8
#define KVSIM_SWEEP_MAX_POINTS 100000

typedef enum { KVSIM_SWEEP_GRID = 0, KVSIM_SWEEP_ZIP } kvsim_sweep_mode;

/* A sweep file, parsed once:
 *   { "name": ..., "scenario": "base.json" (or an inline object),
 *     "set": { "key.path": value, ... },           applied to every point
 *     "grid": { "key.path": [v1, v2, ...], ... },
 *     "mode": "grid" | "zip" }
 * Grid: every combination, the last key varying fastest. Zip: lists of
 * equal length paired, point i takes element i of each (a GPU with its TP).
 * Each point is built from the scenario's JSON tree, kept in memory, plus
 * the point's values (any scenario key, whole sections included); the
 * scenario file is read once, at load. Fields are read-only. */
typedef struct kvsim_sweep {
  char name[128];
  char scenario_where[4096]; /* the scenario file (names it in errors) */
  char base_dir[4096];       /* the scenario's relative paths resolve here */
  cJSON *root;               /* the sweep file (owned) */
  cJSON *scenario;           /* the scenario's tree (owned) */
  bool scenario_inline;      /* given as an object in the sweep file */
  const cJSON *set;          /* root's "set" object or NULL */
  kvsim_sweep_mode mode;
  int nkeys;
  const char *keys[KVSIM_SWEEP_MAX_KEYS];
  const cJSON *values[KVSIM_SWEEP_MAX_KEYS]; /* non-empty arrays */
  int64_t points;
} kvsim_sweep_t;

/* Parses a sweep from JSON text. `where` names it in errors; `dir` is the
 * folder a scenario path is relative to. Every point is checked to name
 * known scenario keys and the base scenario (with "set") to build, so a bad
 * sweep is one error before any run. Errors (KVSIM_EINVAL, "where: ..."):
 * an unknown key, an empty axis, zip lists of unequal length, too many
 * points; or the scenario's own error. On success *s owns its trees
 * (kvsim_sweep_fini); on error *s holds nothing. */
int kvsim_sweep_parse(const char *json_text, const char *where, const char *dir, kvsim_sweep_t *s,
                      kvsim_err *err);
/* Same from a file (the scenario path is relative to its folder). */
int kvsim_sweep_load(const char *path, kvsim_sweep_t *s, kvsim_err *err);
void kvsim_sweep_fini(kvsim_sweep_t *s);

/* The value of axis k at point i (owned by s). */
const cJSON *kvsim_sweep_value(const kvsim_sweep_t *s, int64_t i, int k);
/* Builds point i's scenario from the in-memory tree (fini it). */
int kvsim_sweep_scenario(const kvsim_sweep_t *s, int64_t i, kvsim_scenario_t *sc, kvsim_err *err);

/* The figures of sweep.csv, after the grid's own columns. */
#define KVSIM_SWEEP_NFIGURES 18
extern const char *const kvsim_sweep_columns[KVSIM_SWEEP_NFIGURES];
/* A summary's figures in the order of kvsim_sweep_columns; the latency
 * ones NAN when no request finished. */
void kvsim_sweep_figures(const kvsim_summary_t *s, double out[KVSIM_SWEEP_NFIGURES]);

/* The SLO targets a point's summary judges (summary.json's "slo", in its
 * order), each with the sweep.csv column of its figure. */
#define KVSIM_SWEEP_NSLO 3
typedef struct kvsim_sweep_slo {
  const char *name; /* "p99 TTFT" */
  int column;       /* its figure in kvsim_sweep_columns */
} kvsim_sweep_slo_t;
extern const kvsim_sweep_slo_t kvsim_sweep_slos[KVSIM_SWEEP_NSLO];
/* s's verdicts in the order of kvsim_sweep_slos. */
void kvsim_sweep_slo_results(const kvsim_summary_t *s, kvsim_slo_result_t out[KVSIM_SWEEP_NSLO]);

/* One row of sweep.csv, as the run reported it. */
typedef struct kvsim_sweep_row {
  bool ran;              /* the point belongs to this shard and reported */
  int rc;                /* KVSIM_OK, KVSIM_ENOFIT, or the run's error */
  double fig[KVSIM_SWEEP_NFIGURES]; /* when rc is KVSIM_OK */
  /* When rc is KVSIM_OK: the summary's own verdict on each SLO target, so
   * that REPORT.md judges a point as its summary.json does. */
  kvsim_slo_result_t slo[KVSIM_SWEEP_NSLO];
  char error[512];       /* when rc is not */
} kvsim_sweep_row_t;

typedef struct kvsim_progress kvsim_progress_t;

typedef struct kvsim_sweep_opts {
  const char *out;       /* folder: run folders runNNNN/ and the table; NULL: nothing written */
  int jobs;              /* processes (<= 1: in this process) */
  int shard, nshards;    /* run only points shard, shard + nshards, ... (nshards >= 1) */
  /* Each point's own outputs in runNNNN/ (timeseries.csv, requests.csv,
   * summary.json); false: summary.json only, so a large sweep stays small. */
  bool keep_runs;
  kvsim_progress_t *progress; /* told of each finished point (may be NULL) */
  /* Also REPORT.md (kvsim_report_md_sweep_write) naming this sweep file,
   * written before the sweep counts as done, so that its failure removes
   * the table and run folders too; NULL: none. */
  const char *report_from;
} kvsim_sweep_opts_t;

typedef struct kvsim_sweep_result {
  kvsim_sweep_row_t *rows; /* one per point (owned; points of other shards: ran false) */
  int64_t failed;          /* points whose run failed (not counting ENOFIT) */
  int64_t no_fit;          /* points whose plan does not fit */
  char table[4200];        /* the table written ("" without out) */
} kvsim_sweep_result_t;

/* Runs the sweep's points of this shard and, with opts->out, writes each
 * point's summary.json (all its outputs with keep_runs) into
 * out/runNNNN/ and the table into out/sweep.csv. Sharded (nshards > 1),
 * the table is out/sweep.shardI.csv and beside it out/sweep.shardI.json
 * records the sweep's hash, I and N for kvsim_sweep_merge. A table that
 * cannot be written removes what the sweep wrote. Errors: KVSIM_EIO
 * (folders, fork, the table); a failed run is a row, not an error. Free
 * res with kvsim_sweep_result_fini. */
int kvsim_sweep_run(const kvsim_sweep_t *s, const kvsim_sweep_opts_t *opts,
                    kvsim_sweep_result_t *res, kvsim_err *err);
void kvsim_sweep_result_fini(kvsim_sweep_result_t *res);

/* ---- Shards run on several machines ------------------------------------- */

/* The sweep's identity: a 64-bit hash of its name, mode, the scenario's
 * tree as read at load (so an edited scenario file is another sweep),
 * "set", and every axis with its values. Folders and paths outside the
 * tree are left out, so shards run from other checkouts agree. Errors:
 * KVSIM_ENOMEM. */
int kvsim_sweep_hash(const kvsim_sweep_t *s, uint64_t *out, kvsim_err *err);

/* Reads --shard "I/N" strictly: two unsigned decimal integers and nothing
 * else (no sign, space or trailing text; "0/2/3" once ran as 0/2),
 * 0 <= I < N, N at most INT_MAX. Errors: KVSIM_EINVAL "--shard: ..."
 * naming the value. */
int kvsim_sweep_parse_shard(const char *s, int *shard, int *nshards, kvsim_err *err);

/* Joins the tables of shards 0..N-1 of one sweep, found in the folders
 * dirs[0..ndirs) (each holds one shard or several: every
 * sweep.shardI.json in it), into out/sweep.csv, byte-identical to the
 * table of the sweep run in one piece. out NULL: results/<sweep name>.
 * The path written goes to table[cap]. Errors (KVSIM_EINVAL, one line
 * naming the folder or shard): a folder with no shard, shards of
 * different sweeps (their hashes differ), a shard given twice, a shard
 * missing, a table that does not hold its shard's rows, an out that is one
 * of the folders given; KVSIM_EIO when a
 * file cannot be read or the table written. */
int kvsim_sweep_merge(const char *const *dirs, int ndirs, const char *out, char *table,
                      size_t cap, kvsim_err *err);

/* ---- Progress of long work ---------------------------------------------- */

typedef enum {
  KVSIM_PROGRESS_NONE = 0, /* nothing */
  KVSIM_PROGRESS_LINE,     /* one line redrawn in place (a terminal) */
  KVSIM_PROGRESS_LINES,    /* one line per finished point (a log) */
} kvsim_progress_mode;

/* Progress of `total` points (0: not known in advance, no ETA) written to
 * `out`: points done / total, failures, elapsed time and ETA (the mean
 * time per point so far times the points left). Fields are private. */
struct kvsim_progress {
  FILE *out;
  kvsim_progress_mode mode;
  const char *what;       /* "sweep", "plan" (not copied) */
  int64_t total, done, failed;
  double t0;
  double (*clock)(void);  /* seconds; a monotonic clock unless set (tests) */
};

/* Starts a progress report (p is the caller's). clock NULL: the monotonic
 * clock. Nothing is written until a point finishes. */
void kvsim_progress_init(kvsim_progress_t *p, FILE *out, kvsim_progress_mode mode,
                         const char *what, int64_t total, double (*clock)(void));
/* A point finished: `label` names it ("run0003"), `outcome` says how
 * ("does not fit", "meets"; NULL: "done", or "failed" when failed), and
 * failed counts it as a failure (it gave no result). p may be NULL. */
void kvsim_progress_step(kvsim_progress_t *p, const char *label, const char *outcome,
                         bool failed);
/* The work ended: a redrawn line is erased (the command's own output
 * follows). */
void kvsim_progress_end(kvsim_progress_t *p);

/* ---- Plan searches ------------------------------------------------------ */

/* Bisection on a monotone predicate: pred(ctx, x) returns 1 (meets), 0
 * (misses) or a negative code (stop, returned as is). */
typedef int (*kvsim_search_pred_fn)(void *ctx, double x, kvsim_err *err);

/* Largest x in [lo, hi] that meets, given lo meets and hi misses: stops
 * when hi - lo <= tol * lo (integer: hi - lo <= 1). */
int kvsim_search_bisect_up(kvsim_search_pred_fn pred, void *ctx, double lo, double hi, double tol,
                           bool integer, double *best, kvsim_err *err);
/* Smallest x in [lo, hi] that meets, given lo misses and hi meets: stops
 * when hi - lo <= tol (integer: hi - lo <= 1). */
int kvsim_search_bisect_down(kvsim_search_pred_fn pred, void *ctx, double lo, double hi, double tol,
                             bool integer, double *best, kvsim_err *err);

/* The finest relative precision a rate search takes: each halving of the
 * bracket is one simulation, and 1e-6 is already 20 of them past the
 * bracket; much finer and the bracket reaches the spacing of doubles. */
#define KVSIM_SEARCH_MIN_TOLERANCE 1e-6

/* The three searches of `kvsim plan`, on any predicate. *best is NAN when
 * no value meets in the range searched.
 * rate: a multiplier m of the scenario's rate; from 1, doubled or halved
 * (12 tries) until the predicate flips, then bisected to relative tol;
 * meeting at every multiplier tried gives the largest. tol outside
 * [KVSIM_SEARCH_MIN_TOLERANCE, 1) is an error. */
int kvsim_search_rate(kvsim_search_pred_fn pred, void *ctx, double tol, double *best, kvsim_err *err);
/* rate from a guess of the answer (a band edge's search from the nominal
 * answer): the guess, then steps of 4 tol in log-rate from it, each twice
 * the last, until the predicate flips (12 tries, within the multipliers
 * kvsim_search_rate tries: 2^-11 to 2^11), then bisected to relative tol.
 * A guess near the answer costs a few points instead of the doubling's
 * eight or so. guess <= 0: kvsim_search_rate. */
int kvsim_search_rate_near(kvsim_search_pred_fn pred, void *ctx, double guess, double tol,
                           double *best, kvsim_err *err);
/* replicas: 1, 2, 4, ... up to 1024 until one meets, then the fewest
 * between the last miss and it. */
int kvsim_search_replicas(kvsim_search_pred_fn pred, void *ctx, double *best, kvsim_err *err);
/* util: the lowest gpu_memory_utilization in [0.3, 0.98] that meets, to
 * 0.005; NAN when 0.98 misses. */
int kvsim_search_util(kvsim_search_pred_fn pred, void *ctx, double *best, kvsim_err *err);

#define KVSIM_SLO_MAX_TARGETS 12
#define KVSIM_SEARCH_MAX_POINTS 64

typedef struct kvsim_slo_target {
  kvsim_metric metric;
  kvsim_stat stat;
  double limit_s;
} kvsim_slo_target_t;

typedef enum { KVSIM_SEARCH_RATE = 0, KVSIM_SEARCH_REPLICAS, KVSIM_SEARCH_UTIL } kvsim_search_kind;

/* One simulated point of a search. */
typedef struct kvsim_search_point {
  double x;                  /* the searched multiplier or value */
  double value;              /* the scenario value it ran with */
  bool meets, ran;
  double actual[KVSIM_SLO_MAX_TARGETS]; /* NAN when no sample (nothing finished, or no TPOT) */
  int64_t rejected;
  char note[256]; /* why it misses or did not run; a figure with no sample */
  /* The run stopped once its miss was decided (kvsim_search.early_stop):
   * actual NAN, rejected 0, the note says which target decided it. */
  bool stopped_early;
} kvsim_search_point_t;

typedef struct kvsim_search kvsim_search_t;
typedef void (*kvsim_search_point_fn)(void *ctx, const kvsim_search_t *se, const kvsim_search_point_t *p);

/* A plan search over a parsed scenario. Each point runs a copy of `base`
 * with one typed override (kvsim_scenario_set_*); a point meets when no
 * request was rejected, some request finished and every target holds.
 * Fill the inputs, call kvsim_search_run. */
struct kvsim_search {
  /* Inputs. */
  const kvsim_scenario_t *base;
  kvsim_search_kind kind;
  kvsim_slo_target_t targets[KVSIM_SLO_MAX_TARGETS];
  int ntargets;
  double tolerance;          /* rate search: relative precision */
  bool no_range;             /* skip the re-runs at the band's edges (range stays NAN) */
  kvsim_search_point_fn on_point; /* each point tried, run or not (p->ran; may be NULL) */
  void *ctx;
  /* A rate or util point's run stops as soon as its miss is decided
   * (enough requests of its steady window past a quantile target): the
   * verdict is the full run's, its figures are not. For searches whose
   * points' figures are not reported (compare's; every search's band
   * edges, which set it themselves); kvsim plan leaves it false. The
   * replicas search always runs to the end (its rejections decide when
   * it stops). */
  bool early_stop;
  /* Rate search: a guess of the multiplier to start from (0: from 1,
   * kvsim_search_rate; a band edge's search starts from the nominal
   * answer scaled by the edge's step time, kvsim_search_rate_near). */
  double start;
  /* Results. */
  const char *key;           /* the scenario key varied */
  const char *unit;          /* "req/s", "replicas", "gpu_memory_utilization" */
  bool trace;                /* rate search through workload.rate (a trace, or a scenario that gives it) */
  double base_value;         /* the scenario's mean rate, req/s (rate search) */
  kvsim_search_point_t points[KVSIM_SEARCH_MAX_POINTS];
  int npoints;
  double best;               /* in the unit (rate: req/s); NAN: none */
  double factor;             /* rate search: best / base_value (NAN: none) */
  /* The search re-run at the two edges of the GPU's band
   * (kvsim_study_band_edges): the answer's range, low to high
   * (NAN where nothing met at that edge), and the simulations it took. */
  double range[2];
  /* Rate: met at every multiplier tried, so the value (or a range end) is
   * a lower bound (12 doublings from the scenario's rate). */
  bool lower_bound, range_lower_bound[2];
  kvsim_band_edge_t band_edge[2];
  int range_points;
  int gpus_per_replica;      /* tensor x pipeline parallel size of the base */
  char gpu[64];              /* the base's GPU and what its step times rest on */
  kvsim_cal_status cal_status;
  /* Why the search stopped without an answer: every value would miss (a
   * replica search whose requests are rejected for length: no replica
   * count holds them; the range is not searched either), or the next
   * replica count would pass the memory budget (stopped_budget: the edges
   * are still searched). "" when it did not. */
  char stopped[512];
  bool stopped_budget;
  char fraction_key[96];     /* util search: the key varied ("engine.mem_fraction_static") */
};

/* A predicate's answer beside 1 (meets) and 0 (misses): misses, and so
 * would every other value; the search stops without an answer. */
#define KVSIM_SEARCH_STOP 2

/* Runs the search. Errors: KVSIM_EINVAL when the workload has no rate to
 * vary (rate search on a closed loop) or a point's scenario is invalid
 * (also EPARSE, EIO: the scenario itself is wrong); a point that does not
 * fit or fails otherwise is a miss with its note. */
int kvsim_search_run(kvsim_search_t *se, kvsim_err *err);
/* kvsim_search_run as `kvsim plan` runs it: a signal that stops it prints
 * "kvsim plan: error: WHAT: stopped by SIGINT before an answer (nothing
 * written)" on stderr, after "\r\033[K" when progress_line (a terminal's
 * progress line is to be cleared), before the process ends. */
int kvsim_search_run_stoppable(kvsim_search_t *se, const char *what, bool progress_line,
                               kvsim_err *err);

/* The answer in one line: "Highest rate meeting SLO: 10.2 req/s (1.85 x
 * the scenario's 5.53 req/s, to 2 %) [9.1, 11.4] over the step-time band
 * ..."; replicas add GPUs (replicas x TP x PP). slo names the targets. */
void kvsim_search_summary(const kvsim_search_t *se, const char *slo, char *buf, size_t cap);
/* Parses "ttft_p99=2s,tpot_p99=100ms" (METRIC_STAT=VALUE with s, ms or
 * us) into se's targets. Errors: KVSIM_EINVAL "--slo: ..." naming the bad
 * part. */
int kvsim_search_parse_slo(const char *s, kvsim_search_t *se, kvsim_err *err);
/* One simulated point as plan lists it: "  KEY = V  ttft_p99 X s ... ->
 * meets" (or "misses: why"). */
void kvsim_search_point_print(const kvsim_search_t *se, const kvsim_search_point_t *p, FILE *out);
/* `kvsim plan --json`: search, key, slo, points, value (best: its older
 * name), unit, range, band_step_time_scales, tolerance, tolerance_unit,
 * slo_met, factor and base_rate (rate), gpus_per_replica and gpus
 * (replicas), simulations, summary. what names the search ("rate"). The
 * caller deletes it; NULL when out of memory. */
cJSON *kvsim_search_json(const kvsim_search_t *se, const char *what, const char *slo);

/* ---- Compare: candidates x workload x SLO ------------------------------- */

#define KVSIM_COMPARE_MAX_CANDIDATES 32
#define KVSIM_COMPARE_SWEEP 7 /* rates of the plot's sweep around each goodput */

/* A study file, parsed once:
 *   { "name": ..., "description": ..., "scenario": "base.json" (or inline),
 *     "slo": { "ttft_p99_s": 2, "tpot_p99_s": 0.1, "e2e_p99_s": ... },
 *     "target_rate": 10,
 *     "candidates": [ { "label": "4x H100 TP4", "set": { "key.path": v, ... } }, ... ],
 *     "cost_per_gpu_hour": { "h100-sxm": 2.5, ... } }
 * The slo defaults to the scenario's; each candidate is the scenario with
 * its "set". Prices are the user's own figures (also read from a GPU
 * file's cost_per_gpu_hour). Fields are read-only. */
typedef struct kvsim_compare {
  char name[128];
  char description[512];
  char where[4096];          /* the study file ("... (embedded)" for the default) */
  char scenario_where[4096];
  char base_dir[4096];
  cJSON *root, *scenario;    /* owned */
  bool scenario_inline;
  double slo_ttft_p99_s, slo_tpot_p99_s, slo_e2e_p99_s; /* 0: no target */
  double target_rate;        /* req/s */
  const cJSON *costs;        /* root's cost_per_gpu_hour or NULL */
  cJSON *prices;             /* owned: those prices keyed by the GPU names the candidates
                                load ("h100" -> "h100-sxm"), or NULL */
  /* The search block (kvsim/deploy.h) or NULL; a study has candidates or
   * a search. nconfigs: the configurations it spans. */
  const cJSON *search;
  int64_t nconfigs;
  int ncandidates;
  struct {
    char label[128];
    const cJSON *set;        /* in root; may be NULL */
  } cand[KVSIM_COMPARE_MAX_CANDIDATES];
} kvsim_compare_t;

/* Parses a study (where names it in errors, dir is the folder a scenario
 * path is relative to). Every candidate is built once, so a bad key, value
 * or workload is one error before any run. Errors (KVSIM_EINVAL,
 * "where: key: ..."): unknown keys, no candidates, a label given twice, a
 * target_rate <= 0, no SLO, a bad price, a price for a name that is no
 * GPU (nor a candidate's) or for one GPU twice ("h100" and "h100-sxm");
 * or the scenario's own error. */
int kvsim_compare_parse(const char *json_text, const char *where, const char *dir,
                        kvsim_compare_t *c, kvsim_err *err);
int kvsim_compare_load(const char *path, kvsim_compare_t *c, kvsim_err *err);
/* The embedded default study (configs/studies/default.json). */
int kvsim_compare_load_default(kvsim_compare_t *c, kvsim_err *err);
void kvsim_compare_fini(kvsim_compare_t *c);
/* Candidate i's scenario (fini it). */
int kvsim_compare_scenario(const kvsim_compare_t *c, int i, kvsim_scenario_t *sc, kvsim_err *err);

/* What compare found for one candidate. Plain data. Figures are NAN when
 * not known (a candidate that does not fit, no price, nothing met). */
typedef struct kvsim_compare_row {
  int rc;                    /* KVSIM_OK, KVSIM_ENOFIT, or the failure's code */
  char error[1024];          /* the engine's error and the change that would fit; or the failure */
  char gpu[64], model[64];
  int tp, pp, gpus_per_replica;
  double gpu_memory_utilization;
  char kv_cache_dtype[16];
  int64_t kv_blocks, kv_tokens;
  double max_concurrency;
  char plan_text[3072];      /* the memory plan in the engine's words */
  /* What the step times rest on (gpu.h). */
  kvsim_cal_status cal_status;
  int cal_rows;
  double band_ttft_rel, band_tpot_rel;
  kvsim_band_edge_t band_edge[2];
  /* What the band's width is: 2 the fit's held-out error; 1 the fit's
   * in-sample residual spread (widened for borrowed coefficients); 0 a
   * default width by status (kvsim_gpu_band). */
  int band_kind;
  /* Goodput: the highest rate one replica serves within the SLO; range
   * from the band's edges. */
  double goodput, goodput_range[2];
  bool goodput_lower_bound[3]; /* value, low, high: met at every rate tried (a lower bound) */
  /* The fewest replicas for target_rate, and the run there. */
  double replicas, replicas_range[2];
  double ttft_p99, ttft_p99_range[2], tpot_p99, tpot_p99_range[2], e2e_p99, e2e_p99_range[2];
  double kv_peak, output_tokens_per_s;
  int64_t preemptions, requests, rejected;
  kvsim_diagnosis_t diagnosis[KVSIM_SUMMARY_MAX_DIAGNOSES];
  int ndiagnosis;
  /* Cost (the user's prices): per hour at the target, per million output
   * tokens there, and goodput per dollar-hour of one replica. */
  double cost_per_gpu_hour, cost_per_hour, cost_per_mtok, goodput_per_dollar;
  char cost_source[16];      /* "study", "gpu file" or "" */
  /* The plot's sweep: one replica at rates around the goodput. */
  int nsweep;
  double sweep_rate[KVSIM_COMPARE_SWEEP], sweep_ttft_p99[KVSIM_COMPARE_SWEEP],
      sweep_tpot_p99[KVSIM_COMPARE_SWEEP], sweep_kv_peak[KVSIM_COMPARE_SWEEP];
  /* Each sweep rate's p99s over the band (the run again at its edges). */
  double sweep_ttft_range[KVSIM_COMPARE_SWEEP][2], sweep_tpot_range[KVSIM_COMPARE_SWEEP][2];
  int simulations;
  /* Feasibility, measured before any search: the deployment unloaded
   * (target_rate / 1000, at most 200 requests): its p99s (NAN: none). A
   * candidate whose unloaded p99 is at or within 10 % of a target meets the
   * SLO at no load or only near zero load: infeasible, answered by
   * `feasibility` (the one line, with the nearest changes measured
   * unloaded: TP x 2, FP8 weights, the next larger GPU of the study),
   * never by a replica count. */
  double unloaded_rate, unloaded_ttft_p99, unloaded_tpot_p99, unloaded_e2e_p99;
  bool infeasible;
  bool infeasible_any_load;  /* past the target even unloaded */
  /* The run at the target: its window reached steady state (kvsim/steady.h;
   * false when it did not, or did not run: ran_target). */
  bool ran_target, steady;
  char feasibility[768];
} kvsim_compare_row_t;

typedef struct kvsim_compare_opts {
  const char *out;           /* folder for compare.csv, sweep.csv, REPORT.md; NULL: nothing written */
  int jobs;                  /* candidates in parallel (processes) */
  double tolerance;          /* the goodput search's relative precision, in [0, 1) (0: 0.02);
                                otherwise KVSIM_EINVAL */
  kvsim_progress_t *progress; /* one step per candidate (may be NULL) */
  const char *command;       /* the command that reproduces it (REPORT.md) */
} kvsim_compare_opts_t;

typedef struct kvsim_compare_result {
  kvsim_compare_row_t *rows; /* one per candidate, in study order (owned) */
  int n;
  int failed, no_fit;
  char answer[2048];         /* the one-sentence answer */
  /* The figures drawn into out (file names, one a line), or why none
   * ("gnuplot was not found on PATH"); both "" without out. */
  char plots[1024], plots_note[512];
} kvsim_compare_result_t;

/* Evaluates every candidate (in parallel with opts->jobs; the rows and
 * files do not depend on it) and, with opts->out, writes compare.csv,
 * compare_sweep.csv and REPORT.md there: all three or, on an error or a
 * stop signal (which ends the workers and says so in one line on stderr),
 * none, and no folder it made. Then the folder's older PNGs are removed
 * and the plots drawn there (the compiled-in scripts/plot_compare.sh, when
 * gnuplot and bash are on PATH), and REPORT.md is written again to link
 * what was drawn (res->plots) or say why nothing was (res->plots_note).
 * A candidate that does not fit or fails is a row, not an error; so is a
 * plot that cannot be drawn. Errors: KVSIM_EIO (folders, fork, files).
 * Free res with kvsim_compare_result_fini. */
int kvsim_compare_run(const kvsim_compare_t *c, const kvsim_compare_opts_t *opts,
                      kvsim_compare_result_t *res, kvsim_err *err);
void kvsim_compare_result_fini(kvsim_compare_result_t *res);
/* A row with nothing known, as a candidate starts: every figure NAN (the
 * writers' empty cell), the rest zero. */
void kvsim_compare_row_init(kvsim_compare_row_t *r);
/* Candidate i evaluated in this process (what a job of the run does). */
int kvsim_compare_candidate(const kvsim_compare_t *c, int i, double tolerance,
                            kvsim_compare_row_t *row, kvsim_err *err);
/* The one-sentence answer from the rows; md: each label escaped for
 * Markdown (REPORT.md's), else as given (the terminal's). */
void kvsim_compare_answer(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n, bool md,
                          char *buf, size_t cap);
/* The decision in one line, REPORT.md's first: what to buy and why, with
 * its goodput range and headroom at the band's slow edge ("Buy 2 x (H100
 * FP8 KV) on 2 GPUs for $5.00/h: goodput 18.5 req/s [16.9, 20.1] per
 * replica, 16 % headroom at the slow edge; the cheapest that ..."). Ties
 * on cost go to the higher goodput per GPU, then the more headroom; a tie
 * on all of them is said, never settled by the study's order; a winner
 * that another candidate would replace at an edge of the band is said to
 * flip there. md: labels and prices escaped for Markdown. */
void kvsim_compare_decision(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n, bool md,
                            char *buf, size_t cap);
/* The answer, one line per candidate and (dir not NULL) where the files
 * are, for a terminal. */
void kvsim_compare_print(const kvsim_compare_t *c, const kvsim_compare_result_t *res, const char *dir,
                         FILE *out);
/* compare.csv (one row per candidate) and compare_sweep.csv (the plot's
 * points) as text (malloc'd; NULL when out of memory). */
char *kvsim_compare_csv(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n);
char *kvsim_compare_sweep_csv(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n);
/* REPORT.md of a compare (malloc'd; NULL when out of memory). Plots are
 * linked relative to the report's folder. */
char *kvsim_report_md_compare(const kvsim_compare_t *c, const kvsim_compare_result_t *res,
                              const char *command);

/* REPORT.md of one run (`kvsim run --report`) into dir: the question,
 * the answer with p99 ranges (the run again at the band's two edges:
 * two more simulations), the figures, the plots (drawn here by the
 * compiled-in scripts/plot.sh on the run's outputs in dir, after removing
 * older PNGs; relative links to what was drawn, or why none), the memory
 * plan, the diagnosis, what it rests on.
 * Errors: the edge runs' own, KVSIM_EIO writing the file. */
int kvsim_report_md_run_write(const kvsim_scenario_t *sc, const kvsim_summary_t *s, const char *dir,
                              const char *command, kvsim_err *err);
/* REPORT.md of a sweep (`kvsim sweep --report`) into dir: the points that
 * meet the base scenario's SLO (p99 TTFT and TPOT) and the best of them,
 * one table row per point run; sweep_file names the sweep in the
 * reproducing command. */
int kvsim_report_md_sweep_write(const kvsim_sweep_t *sw, const kvsim_sweep_result_t *res,
                                const char *dir, const char *sweep_file, kvsim_err *err);

#ifdef __cplusplus
}
#endif

#endif
