/* Internals of the workload room: the resolved configuration, length
 * distributions, trace readers (one row at a time) and the synthetic
 * generator. Not part of the public API; cli/trace.c uses the trace-stats
 * and writer helpers declared here. */
#ifndef KVSIM_WORKLOAD_WL_H
#define KVSIM_WORKLOAD_WL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "core/u64map.h"
#include "kvsim/params.h"
#include "kvsim/trace.h"
#include "kvsim/workload.h"
#include "workload/text.h"

#define KVSIM__WL_PATH_MAX 4096
/* The registry's bound of workload.synthetic.priority.levels (kvsim/params.h). */
#define KVSIM__MAX_PRIORITY_LEVELS KVSIM_MAX_PRIORITY_LEVELS

/* ---- formats (one file each under formats/; formats/format.h) -------- */

typedef struct kvsim__format kvsim__format_t;

/* The format a user may name ("azure", ...; not "auto"), or NULL. */
const kvsim__format_t *kvsim__format_find(const char *name);
const char *kvsim__format_name(const kvsim__format_t *f);
/* "auto, azure, ... or requests": the names a user may give. */
const char *kvsim__format_choices(void);
/* Whether rows carry arrival times (a length-only table does not). */
bool kvsim__format_has_arrivals(const kvsim__format_t *f);
/* Whether the format reads hash_block_tokens (Mooncake hash ids). */
bool kvsim__format_uses_hash_block(const kvsim__format_t *f);
/* The column named when arrivals go backwards. */
const char *kvsim__format_arrival_column(const kvsim__format_t *f);

/* ---- segment-id namespaces ---------------------------------------------
 * Trace hash ids (Mooncake) are used as they are (they are < 2^53). The
 * synthetic generator keeps its ids apart by the top bits; bit 63 is the
 * output segment (kvsim_output_segment_id), 0x4000... | request id a
 * prompt without segments (kvsim_unique_segment_id). */
#define KVSIM__SEG_USER UINT64_C(0x4800000000000000)     /* fresh user text (counter) */
#define KVSIM__SEG_ROWTEXT UINT64_C(0x4400000000000000)  /* kvsim CSV: a row's own text (line) */
#define KVSIM__SEG_GROUP UINT64_C(0x2000000000000000)    /* shared system prompt */
#define KVSIM__SEG_TEMPLATE UINT64_C(0x1000000000000000) /* few-shot template */

/* ---- distributions ---------------------------------------------------- */

typedef enum { KVSIM__DIST_FIXED, KVSIM__DIST_UNIFORM, KVSIM__DIST_NORMAL,
               KVSIM__DIST_LOGNORMAL, KVSIM__DIST_ZIPF } kvsim__dist_kind;

typedef struct kvsim__dist {
  int kind;
  double a, b;        /* fixed: value; uniform: min,max; normal: mean,std;
                         lognormal: mean,sigma; zipf: s,max */
  int64_t lo, hi;     /* caps: every draw is clamped to [lo, hi], lo >= 1 */
  double mu;          /* lognormal: location of the underlying normal */
  gsl_ran_discrete_t *table; /* zipf: P(k) ~ k^-s, k = 1..max (owned) */
  /* As given, for the config (config_json.c): a bare number, or the
   * object's keys in the order given (indices into kvsim__dist_keys). */
  bool bare;
  uint8_t ngiven;
  uint8_t given[8];
} kvsim__dist_t;

/* A dist object's keys: dist, value, min, max, mean, std, sigma, s. */
extern const char *const kvsim__dist_keys[];

/* Parses {"dist": ..., ...} (or a bare integer = fixed). where names it. */
int kvsim__dist_parse(const cJSON *j, const char *where, kvsim__dist_t *d, kvsim_err *err);
int64_t kvsim__dist_draw(const kvsim__dist_t *d, gsl_rng *r);
/* Largest value a draw can take (INT64_MAX when unbounded). */
int64_t kvsim__dist_max(const kvsim__dist_t *d);
cJSON *kvsim__dist_json(const kvsim__dist_t *d);
/* dst = src with a table of its own; KVSIM_ENOMEM leaves dst without one. */
int kvsim__dist_copy(const kvsim__dist_t *src, kvsim__dist_t *dst);
void kvsim__dist_fini(kvsim__dist_t *d);

/* Picks one of n items, uniformly or with Zipf popularity P(i) ~ (i+1)^-s. */
typedef struct kvsim__pick {
  int64_t n;
  bool zipf;
  double s;
  gsl_ran_discrete_t *table;
  /* popularity (0) and zipf_s (1) in the order given, for the config. */
  uint8_t ngiven;
  uint8_t given[2];
} kvsim__pick_t;
int kvsim__pick_parse(const cJSON *obj, const char *where, int64_t n, kvsim__pick_t *p,
                      kvsim_err *err);
int64_t kvsim__pick_draw(const kvsim__pick_t *p, gsl_rng *r);
void kvsim__pick_json(const kvsim__pick_t *p, cJSON *obj);
/* dst = src with a table of its own; KVSIM_ENOMEM leaves dst without one. */
int kvsim__pick_copy(const kvsim__pick_t *src, kvsim__pick_t *dst);
void kvsim__pick_fini(kvsim__pick_t *p);

/* ---- configuration ---------------------------------------------------- */

typedef enum { KVSIM__ARR_POISSON, KVSIM__ARR_GAMMA, KVSIM__ARR_CONSTANT,
               KVSIM__ARR_CLOSED, KVSIM__ARR_BURSTS, KVSIM__ARR_DIURNAL } kvsim__arrival_kind;

typedef struct kvsim__synth_cfg {
  int64_t requests;    /* -1: no cap */
  double duration_s;   /* < 0: no cap */
  int arrival;
  double rate, cv;               /* poisson, gamma, constant; bursts/diurnal base */
  int64_t clients;               /* closed loop */
  double think_s;                /* closed loop */
  double burst_rate, burst_s, period_s; /* bursts */
  double amplitude, phase_s;     /* diurnal (period_s shared) */

  kvsim__dist_t prompt, output;
  /* lengths_from: (prompt, output) pairs, sampled jointly (owned). */
  bool lengths_file;
  char lengths_path[KVSIM__WL_PATH_MAX];
  int32_t *lengths;
  int64_t num_lengths;

  bool prefix;
  int64_t shared_tokens, groups;
  double prefix_fraction;
  kvsim__pick_t group_pick;

  bool few_shot;
  int64_t templates;
  kvsim__dist_t template_tokens;
  kvsim__pick_t template_pick;
  double few_shot_fraction;

  bool sessions;
  kvsim__dist_t turns;
  double session_think_s;
  bool user_set;
  kvsim__dist_t user;            /* later turns' new text (default: prompt) */
  int64_t max_context;           /* 0: none */

  int64_t tenants;               /* 0: off */
  kvsim__pick_t tenant_pick;

  int64_t lora_adapters;         /* 0: off; else adapters 1..lora_adapters */
  double lora_fraction;          /* share of requests that name an adapter */
  kvsim__pick_t lora_pick;

  int32_t priority_levels;       /* 0: off */
  double priority_weights[KVSIM__MAX_PRIORITY_LEVELS];
  gsl_ran_discrete_t *priority_table;
} kvsim__synth_cfg_t;

/* What the "workload" object gave, for the config (config_json.c): the
 * registry rows given (not null), and the values as given where the typed
 * fields hold others (workload.rate derives time_scale and replaces a
 * synthetic process's rate; a format "auto" is resolved). */
#define KVSIM__WL_ROW_FIRST KVSIM_PARAM_WL_TRACE
typedef struct kvsim__wl_given {
  uint64_t rows;                         /* bit id - KVSIM__WL_ROW_FIRST per row given */
  char format[32];                       /* workload.format as given */
  double time_scale;                     /* workload.time_scale as given */
  double arrival_rate;                   /* workload.synthetic.arrival.rate as given */
  bool lengths_object;                   /* lengths_from given as {"file": ...} */
  char lengths_from[KVSIM__WL_PATH_MAX]; /* its file as given */
} kvsim__wl_given_t;

/* Marks registry row id (a workload row) given. */
void kvsim__wl_mark(kvsim_workload_cfg_t *c, int id);
bool kvsim__wl_is_given(const kvsim_workload_cfg_t *c, int id);
/* Marks every workload row `obj` (the "workload" object) gives. */
void kvsim__wl_mark_tree(kvsim_workload_cfg_t *c, const cJSON *obj);

struct kvsim_workload_cfg {
  bool synthetic;
  /* Trace. */
  char path[KVSIM__WL_PATH_MAX];
  char given_path[KVSIM__WL_PATH_MAX];
  const kvsim__format_t *format; /* resolved at parse time (never NULL) */
  double time_scale;   /* 1: as recorded (derived from rate when rate is given) */
  double trace_rate;   /* the trace's own mean rate, req/s (when rate is given) */
  int64_t limit;       /* -1: all */
  bool skip_bad_rows;
  int64_t hash_block_tokens;
  bool lengths_only;   /* a length table read as a trace (trace stats): every arrival at 0 */
  /* Any source. */
  int64_t max_total_tokens; /* 0: no clipping */
  double rate;              /* workload.rate, req/s; 0: not given */
  kvsim__synth_cfg_t syn;
  kvsim__wl_given_t given;
};

/* The workload's checks of one given key of `o` (config.c): an integer or
 * a number of registry row id ("WHERE.KEY: bad value V (expected ...)";
 * the number in [lo, max], or (lo, max] for a MIN_OPEN row). 1 when read,
 * or a negative code; a missing key is an error. */
int kvsim__wl_req_int(const cJSON *o, const char *key, int id, int64_t *out, const char *where,
                      kvsim_err *err);
int kvsim__wl_req_num_from(const cJSON *o, const char *key, int id, double lo, double *out,
                           const char *where, kvsim_err *err);

/* kvsim_workload_parse for a trace named on the command line (obj holds
 * "trace" and the trace flags as keys): errors about the file name the
 * file alone, with no "workload.trace: " of a scenario's. */
int kvsim__workload_parse_file(const cJSON *obj, bool allow_lengths, kvsim_workload_cfg_t **out,
                               kvsim_err *err);

/* Whether src's requests carry arrival times (not a length table read by
 * trace stats). */
bool kvsim__source_has_arrivals(const kvsim_source_t *src);

/* workload.rate (rate.c): the trace's own mean rate (rows / (last - first
 * arrival), as `trace stats`), and applying a rate to a parsed workload
 * (a trace's time_scale, a synthetic process's rate). */
int kvsim__trace_mean_rate(const kvsim_workload_cfg_t *c, double *rate, kvsim_err *err);
int kvsim__workload_apply_rate(kvsim_workload_cfg_t *c, double rate, const char *where,
                               kvsim_err *err);

/* ---- trace readers ---------------------------------------------------- */

/* What a measured run recorded of one request (a reader opened with
 * kvsim__reader_open_measured): seconds on the file's own clock, each as
 * the file gives it (no rounding to nanoseconds), so that the fidelity
 * room computes latencies from the recorded values. */
typedef struct kvsim__measured {
  bool finished;    /* else rejected or in flight when the run stopped: no times read */
  double arrival_s; /* queued (the latencies' anchor) */
  double scheduled_s, first_token_s, finish_s;
  bool has_unix;    /* the file stamps the arrival on the wall clock: */
  int64_t unix_ns;  /* then its Unix time, ns (aiperf's request_start_ns) */
} kvsim__measured_t;

typedef struct kvsim__row {
  int64_t line;           /* 1-based line of the file */
  kvsim_time_ns arrival;  /* as the format defines it (Azure, LLMServingSim: from the first row) */
  int64_t prompt_tokens, output_tokens;
  int32_t tenant, priority;
  int32_t lora;           /* kvsim CSV's lora column; 0: the base model */
  int64_t session;
  int32_t turn;
  const kvsim_segment_t *segments; /* owned by the reader, valid until the next row */
  int32_t num_segments;
  kvsim__measured_t measured; /* measured readers only (else zero) */
} kvsim__row_t;

typedef struct kvsim__reader kvsim__reader_t;

/* Detects the format of a file from its first non-empty line. */
int kvsim__detect_format(const char *path, const kvsim__format_t **fmt, kvsim_err *err);
/* Opens a reader; fmt NULL detects it. The header is read here. */
int kvsim__reader_open(const char *path, const kvsim__format_t *fmt, int64_t hash_block_tokens,
                       kvsim__reader_t **out, kvsim_err *err);
/* 1: a row; 0: end of file; KVSIM_EPARSE: a bad row (skippable: the
 * reader is positioned after it); other negative codes are fatal. */
int kvsim__reader_next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err);
const kvsim__format_t *kvsim__reader_format(const kvsim__reader_t *r);
/* Opens a measured per-request file of format fmt (one whose
 * kvsim__format_measures is true; fmt NULL detects it, and a format that
 * records no latencies is then an error). Rows come in file order, each
 * with what a trace needs and row.measured. Read and close it as above. */
int kvsim__reader_open_measured(const char *path, const kvsim__format_t *fmt,
                                kvsim__reader_t **out, kvsim_err *err);
/* Whether files of the format record per-request latencies (a measured
 * run: LLMServingSim requests.jsonl, kvsim's requests.csv). */
bool kvsim__format_measures(const kvsim__format_t *f);
/* Optional columns present (kvsim CSV): bit mask of KVSIM__COL_*. */
unsigned kvsim__reader_columns(const kvsim__reader_t *r);
void kvsim__reader_close(kvsim__reader_t *r);

enum { KVSIM__COL_TENANT = 1u, KVSIM__COL_PRIORITY = 2u, KVSIM__COL_SESSION = 4u,
       KVSIM__COL_TURN = 8u, KVSIM__COL_SEGMENTS = 16u, KVSIM__COL_LORA = 32u };

/* Loads a length-only file (any CSV with prompt/output columns, or any
 * trace format) as (prompt, output) pairs. */
int kvsim__load_lengths(const char *path, int32_t **pairs, int64_t *n, kvsim_err *err);

/* ---- synthetic generator (synth.c) ------------------------------------ */

typedef struct kvsim__synth kvsim__synth_t;
int kvsim__synth_open(const kvsim__synth_cfg_t *cfg, uint64_t seed, kvsim__synth_t **out,
                      kvsim_err *err);
/* KVSIM_SOURCE_* or a negative code with err set; the caller fills
 * spec->id. An open-loop stream that passes KVSIM_TIME_MAX_S before its
 * `requests` have arrived is an error, not a shorter workload. */
int kvsim__synth_next(kvsim__synth_t *s, kvsim_req_spec_t *spec, kvsim_err *err);
int kvsim__synth_on_finish(kvsim__synth_t *s, const kvsim_req_spec_t *spec, kvsim_time_ns t,
                           int64_t generated);
void kvsim__synth_close(kvsim__synth_t *s);

/* ---- source extras (for the CLI) -------------------------------------- */

/* The trace format of a source, or NULL for synthetic. */
const kvsim__format_t *kvsim__source_format(const kvsim_source_t *s);
/* Which optional columns a kvsim CSV of this source should carry. */
unsigned kvsim__source_columns(const kvsim_source_t *s);

/* ---- kvsim CSV writer (convert, gen) ----------------------------------- */

typedef struct kvsim__csv_writer {
  FILE *f;
  char path[KVSIM__WL_PATH_MAX];
  char tmp[KVSIM__WL_PATH_MAX + 32];
  unsigned columns;
} kvsim__csv_writer_t;
/* Writes to a temporary file beside path; commit renames it into place. */
int kvsim__csv_writer_open(kvsim__csv_writer_t *w, const char *path, unsigned columns,
                           kvsim_err *err);
int kvsim__csv_writer_row(kvsim__csv_writer_t *w, const kvsim_req_spec_t *spec, kvsim_err *err);
int kvsim__csv_writer_commit(kvsim__csv_writer_t *w, kvsim_err *err);
void kvsim__csv_writer_abort(kvsim__csv_writer_t *w);

/* ---- trace statistics (tstats.c) --------------------------------------- */

typedef struct kvsim__lru {
  int64_t cap, size;
  kvsim__u64map_t map;
  uint64_t *key;
  int32_t *prev, *next; /* core/ilist.h over slots: head = LRU, tail = MRU */
  int32_t head, tail;
  int64_t hits, lookups;
} kvsim__lru_t;
int kvsim__lru_init(kvsim__lru_t *l, int64_t capacity);
void kvsim__lru_fini(kvsim__lru_t *l);
/* One request: walk ids from the start
 * while cached (refreshing each), then insert all in order. Returns hits. */
int64_t kvsim__lru_request(kvsim__lru_t *l, const uint64_t *ids, int32_t n);

/* Splits a prompt into prefix blocks of B tokens and returns their keys in
 * keys[] (grown as needed) and their token counts in toks[]; the last
 * block may be partial. With raw_ids, when the segments are exactly the
 * blocks (Mooncake hash ids with B = hash block size: every segment but
 * the last has B tokens) the keys are the segment ids, so each id is one
 * unit (as Mooncake's hash ids count reuse); otherwise each key is a
 * hash chained to its parent's. */
#define KVSIM__MAX_PREFIX_BLOCKS (INT32_MAX / 2) /* per prompt: KVSIM_EINVAL beyond */
int kvsim__prefix_blocks(const kvsim_req_spec_t *spec, int64_t block, bool raw_ids,
                         uint64_t **keys, int64_t **toks, int32_t *cap, int32_t *n);

#endif
