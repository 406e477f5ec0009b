/* Workloads: a stream of requests in arrival order, from a trace file
 * (Azure, Vidur, Mooncake, LLMServingSim, kvsim CSV, a run's requests.csv;
 * one reader per format under sim/src/workload/formats/) or a seeded synthetic
 * generator. Readers know nothing of scheduling; the engine pulls requests
 * one at a time, so a trace is never loaded whole.
 *
 * Token identity (for prefix caching) is modelled by segments, not text:
 * a prompt is a list of segments (id, length), token j of a segment is
 * identified by (id, offset j). Two prompts share a prefix exactly when
 * their segment lists agree up to that point. Mooncake's hash_ids become
 * segments of 512 tokens (the last one partial); a shared system prompt is
 * one segment common to its group; a multi-turn session's prompt repeats
 * the previous turn's segments, then the previous answer as segment
 * kvsim_output_segment_id(previous request id), then the new user text. */
#ifndef KVSIM_WORKLOAD_H
#define KVSIM_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/clock.h"
#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvsim_segment {
  uint64_t id;
  int64_t len; /* tokens */
} kvsim_segment_t;

/* The segment id of request `request_id`'s generated tokens. */
static inline uint64_t kvsim_output_segment_id(uint64_t request_id) {
  return 0x8000000000000000ull | request_id;
}

/* The segment id of a prompt given without segments (it shares nothing).
 * Segment id spaces: trace ids (Mooncake hash ids) < 2^60; 0x1000... few-
 * shot templates, 0x2000... shared system prompts, 0x4000... | request id
 * unique prompts (this), 0x44... and 0x48... a user's own text; 0x8000...
 * answers. */
static inline uint64_t kvsim_unique_segment_id(uint64_t request_id) {
  return 0x4000000000000000ull | request_id;
}

typedef struct kvsim_req_spec {
  uint64_t id;             /* unique, 0-based in workload order; request_id in outputs */
  kvsim_time_ns arrival;
  int64_t prompt_tokens;
  int64_t output_tokens;   /* tokens the request will generate (ignore_eos) */
  int32_t tenant;          /* cache salt: tenants never share cached blocks; 0 default */
  int32_t priority;        /* vLLM priority: lower value is served first; 0 default */
  /* The LoRA adapter the request names (vLLM's LoRARequest.lora_int_id,
   * which is > 0); 0: the base model. */
  int32_t lora;
  int32_t client;          /* closed-loop client, -1 if open loop */
  int64_t session;         /* multi-turn session, -1 if none */
  int32_t turn;            /* 0-based turn within the session */
  /* Prompt identity: segments summing to prompt_tokens. NULL/0 means the
   * prompt is unique (one segment of its own). Owned by the source, valid
   * until the next kvsim_source_next call: copy what you keep. */
  const kvsim_segment_t *segments;
  int32_t num_segments;
} kvsim_req_spec_t;

/* The "workload" object of a scenario. */
typedef struct kvsim_workload_cfg kvsim_workload_cfg_t;

/* Parses the scenario's "workload" object (keys in workloads/README.md). Relative
 * paths are resolved against base_dir. Unknown keys and wrong types are
 * errors naming the key path (where = "scenario.json: workload"). */
int kvsim_workload_parse(const cJSON *obj, const char *base_dir, const char *where,
                         kvsim_workload_cfg_t **out, kvsim_err *err);
void kvsim_workload_cfg_free(kvsim_workload_cfg_t *cfg);
/* A deep copy of cfg into *out (caller frees): nothing shared, no file
 * read. KVSIM_ENOMEM. */
int kvsim_workload_cfg_copy(const kvsim_workload_cfg_t *cfg, kvsim_workload_cfg_t **out,
                            kvsim_err *err);
/* Sets one number of the workload as parsing its object with that key set
 * would, checks and errors included (where = "scenario.json: workload"):
 * rate (a trace is read again for its mean rate), max_total_tokens,
 * limit and time_scale (traces), synthetic.requests, synthetic.duration_s,
 * synthetic.arrival.rate. KVSIM_EINVAL naming the key; on error cfg may be
 * partly changed (set a copy). */
int kvsim_workload_set(kvsim_workload_cfg_t *cfg, const char *key, double value, const char *where,
                       kvsim_err *err);
/* The configuration as resolved JSON (for summary.json). Caller deletes. */
cJSON *kvsim_workload_cfg_json(const kvsim_workload_cfg_t *cfg);
/* The "workload" object as given (the keys the scenario gave, each value
 * in canonical form from the typed fields: registry rows in the registry's
 * order, a dist's and a popularity's own keys in the order given), for
 * summary.json's config; fed back it parses to the same workload. NULL
 * when out of memory. */
cJSON *kvsim_workload_given_json(const kvsim_workload_cfg_t *cfg);
/* Largest prompt + output a request of this workload can ask for, or -1
 * when unknown in advance (traces, unbounded distributions, sessions).
 * Used for up-front checks only. */
int64_t kvsim_workload_max_total_tokens(const kvsim_workload_cfg_t *cfg);
/* The mean arrival rate the workload replays, req/s: workload.rate when
 * given; a trace's own mean rate (rows over first-to-last arrival, read
 * once from the file) divided by its time_scale; a synthetic poisson,
 * gamma, constant or diurnal process's rate. Errors: KVSIM_EINVAL for a
 * closed loop, bursts, or a trace with fewer than two distinct arrival
 * times; the trace's read errors. */
int kvsim_workload_mean_rate(const kvsim_workload_cfg_t *cfg, double *rate, kvsim_err *err);

/* Whether the workload reads `path` (its trace, or the lengths_from file
 * of a synthetic one): the same file by device and inode, so a link or
 * another spelling counts. An output that would replace it is refused. */
bool kvsim_workload_reads(const kvsim_workload_cfg_t *cfg, const char *path);

/* Distinct LoRA adapters a synthetic workload's requests name
 * (workload.synthetic.lora.adapters); 0 without, and for a trace (whose
 * rows name theirs, read as they come). */
int64_t kvsim_workload_lora_adapters(const kvsim_workload_cfg_t *cfg);

/* What a study that varies the workload needs to know of it, read from
 * the typed configuration (the keys as given, defaults not filled in). */
typedef struct kvsim_workload_shape {
  bool synthetic;        /* workload.synthetic (else a trace) */
  bool rate_given;       /* workload.rate */
  int64_t requests;      /* synthetic.requests; 0 when not given */
  bool duration_given;   /* synthetic.duration_s */
  bool arrival_has_rate; /* synthetic.arrival has a rate (every process but closed_loop) */
  double arrival_rate;   /* that rate, req/s (workload.rate's when given) */
  int64_t limit;         /* a trace's workload.limit; 0 when not given */
} kvsim_workload_shape_t;

/* Fills *out from cfg (never fails). */
void kvsim_workload_shape(const kvsim_workload_cfg_t *cfg, kvsim_workload_shape_t *out);

typedef struct kvsim_source kvsim_source_t;

/* Opens a stream (the source keeps a pointer to cfg: keep cfg alive until
 * kvsim_source_close). All randomness comes from GSL generators seeded
 * with `seed`: one for the open-loop arrival process and the requests
 * drawn with it, plus one small stream per session (open loop) or per
 * client (closed loop), seeded from (seed, index), so that a session's
 * lengths do not depend on the order in which the engine finishes
 * requests (common random numbers across engine settings). */
int kvsim_source_open(const kvsim_workload_cfg_t *cfg, uint64_t seed, kvsim_source_t **out,
                      kvsim_err *err);

enum {
  KVSIM_SOURCE_END = 0,     /* no more requests, ever */
  KVSIM_SOURCE_REQUEST = 1, /* *spec filled */
  KVSIM_SOURCE_BLOCKED = 2, /* none until a request finishes (closed loop, sessions) */
};

/* Next request in non-decreasing arrival order among those known now.
 * Returns KVSIM_SOURCE_* or a negative error (a bad trace row: file, line,
 * column and value in err; rows are skipped and counted instead when the
 * workload says skip_bad_rows). After an error every later call returns
 * the same error. spec->segments stays valid until the next call.
 *
 * Pull rule for the engine (keeps memory O(in flight) and never misses a
 * request): call next once at the start, once each time the arrival of a
 * request returned by next is processed, and once more after each
 * kvsim_source_on_finish that returns 1. Every request handed out this
 * way arrives no earlier than the one pulled before it, except that a
 * request made known by on_finish(t) may arrive before requests already
 * handed out (never before t); an event heap ordered by (time, seq)
 * handles both. BLOCKED is not the end: more may come after on_finish. */
int kvsim_source_next(kvsim_source_t *s, kvsim_req_spec_t *spec, kvsim_err *err);

/* A request of this source finished (or was rejected, generated = 0) at
 * time t: closed-loop clients and sessions schedule their next request.
 * Reads spec's id, client, session and turn only (segments may be NULL).
 * A session's next turn repeats this one's prompt, then `generated` tokens
 * of its answer; a rejected turn (generated = 0) ends its session.
 * Returns 1 when a new request became known (pull once more), else 0. */
int kvsim_source_on_finish(kvsim_source_t *s, const kvsim_req_spec_t *spec, kvsim_time_ns t,
                           int64_t generated);

/* Rows skipped as bad so far. */
int64_t kvsim_source_skipped(const kvsim_source_t *s);
/* Requests clipped by max_total_tokens so far. */
int64_t kvsim_source_clipped(const kvsim_source_t *s);

void kvsim_source_close(kvsim_source_t *s);

#ifdef __cplusplus
}
#endif

#endif
