/* The trace tool behind `kvsim trace stats|convert|gen`: a trace file's
 * workload with the command's flags, its whole-trace statistics (arrivals,
 * lengths, prefix reuse and LRU hit rates), and conversion to kvsim CSV.
 * A tool, not the simulator's path: statistics keep arrivals and lengths in
 * memory for their percentiles. */
#ifndef KVSIM_TRACE_H
#define KVSIM_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/clock.h"
#include "kvsim/error.h"
#include "kvsim/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The trace format of a source ("azure", "mooncake", ...), or "synthetic". */
const char *kvsim_source_format_name(const kvsim_source_t *s);

/* The whole-trace summary behind `kvsim trace stats` (a tool: it keeps
 * arrivals and lengths in memory for percentiles; the LRU is O(capacity)). */
#define KVSIM_TRACE_MAX_LRU 16
typedef struct kvsim_len_stats {
  double mean, p50, p90, p99, min, max;
} kvsim_len_stats_t;
typedef struct kvsim_trace_stats {
  int64_t requests, skipped, clipped;
  bool arrivals; /* false for a length table: duration, rate, inter-arrival and peak are
                    not known (NAN, peak_1s -1) */
  double first_s, last_s, duration_s, rate_rps;
  double interarrival_mean_s, interarrival_cv, max_gap_s;
  int64_t peak_1s; /* most arrivals in one second, bins from the first arrival */
  kvsim_len_stats_t prompt, output;
  /* prefix reuse (prefix_block > 0) */
  int64_t prefix_block;
  int64_t blocks, distinct_blocks, ideal_hit_blocks, tokens, ideal_hit_tokens;
  double ideal_hit_rate_blocks, ideal_hit_rate_tokens;
  int nlru;
  int64_t lru_capacity[KVSIM_TRACE_MAX_LRU], lru_hits[KVSIM_TRACE_MAX_LRU];
  double lru_hit_rate[KVSIM_TRACE_MAX_LRU];
} kvsim_trace_stats_t;

/* Drains src and fills st. Set st->prefix_block, st->nlru and
 * st->lru_capacity[] before the call. raw_ids: where a prompt's segments
 * are exactly its blocks (Mooncake hash ids at their block size), each id
 * is one unit of reuse, as Mooncake counts it; otherwise a block's key is
 * a hash chained to its parent's. */
int kvsim_trace_stats(kvsim_source_t *src, bool raw_ids, kvsim_trace_stats_t *st, kvsim_err *err);

/* ---- the trace tool (tool.c): `kvsim trace stats|convert|gen` ------------ */

/* The flags that apply to a trace file. */
typedef struct kvsim_trace_opts {
  const char *format; /* "auto" or a format name */
  double time_scale;
  int64_t limit, max_total_tokens, hash_block_tokens; /* 0: unset (limit, max) */
  bool skip_bad_rows;
  bool seed_given; /* --seed was given: an error, a trace is not drawn */
  bool allow_lengths; /* a length table (no arrival times) is read too, every arrival at 0
                         (trace stats); otherwise refused */
} kvsim_trace_opts_t;

/* A trace workload for file with the flags o; errors name the flag
 * ("--format: bad value ...") or the file. *out: kvsim_workload_cfg_free. */
int kvsim_workload_for_trace(const char *file, const kvsim_trace_opts_t *o,
                             kvsim_workload_cfg_t **out, kvsim_err *err);
/* The workload of a JSON file: a workload object, or a scenario's
 * "workload" (then *seed takes the scenario's seed unless seed_given).
 * A seed given for a workload that is a trace is an error ("--seed: ..."). */
int kvsim_workload_for_spec(const char *file, int64_t *seed, bool seed_given,
                            kvsim_workload_cfg_t **out, kvsim_err *err);
/* "1000,5000": up to KVSIM_TRACE_MAX_LRU capacities 1..1e8, no item empty
 * ("1," is refused). 0 or -1. */
int kvsim_trace_parse_lru_caps(const char *s, int64_t *caps, int *n);

/* Writes every request of src to out as kvsim CSV (atomically: nothing is
 * left at out or beside it on an error); *n counts them. src reads cfg,
 * opened from the file `input`: an error "--out: OUT is the same file as
 * the input IN" when out is that file or one cfg reads (its trace, its
 * synthetic lengths_from), which the rename at the end would replace. */
int kvsim_trace_convert(const kvsim_workload_cfg_t *cfg, const char *input, kvsim_source_t *src,
                        const char *out, int64_t *n, kvsim_err *err);
/* The same for a synthetic source, run through a small event loop in
 * which every request finishes `latency` after it arrives, so that
 * closed-loop clients and sessions get their feedback. */
int kvsim_trace_gen(const kvsim_workload_cfg_t *cfg, const char *input, kvsim_source_t *src,
                    const char *out, kvsim_time_ns latency, int64_t *n, kvsim_err *err);
/* The statistics as the JSON of `trace stats --json` (caller deletes). */
cJSON *kvsim_trace_stats_json(const kvsim_trace_stats_t *st, const char *file, const char *format);

#ifdef __cplusplus
}
#endif

#endif
