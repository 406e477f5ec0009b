/* A request's way into the run from the workload and out of the system,
 * one definition for the aggregated loop (run.c) and the disaggregated
 * one (disagg_run.c), which had a copy each. Each loop keeps what is its
 * own: the request objects it makes of a spec (one, or a decode object
 * and its prefill twin), its memory-budget check and its events. Static
 * inline: both loops call these once per request. Internal to the engine. */
#ifndef KVSIM_ENGINE_LIFECYCLE_H
#define KVSIM_ENGINE_LIFECYCLE_H

#include <stdbool.h>

#include "engine/reqpool.h"
#include "engine/tally.h"
#include "kvsim/engine.h"
#include "kvsim/error.h"
#include "kvsim/workload.h"

/* The request to the sink, if it takes requests. */
static inline int kvsim__emit_request(const kvsim_sink_t *sink, kvsim_request_t *q) {
  return sink && sink->request ? sink->request(sink->ctx, q) : KVSIM_OK;
}

/* q leaves the system at `now`: the run's counts, the sink, *in_flight,
 * the workload (told how many tokens q generated, it may make a new
 * request known) and the pool, which takes q back. Returns 1 when the
 * workload has a new request to pull, 0, or the sink's or the workload's
 * negative code. */
static inline int kvsim__request_leave(kvsim_run_stats_t *st, const kvsim_sink_t *sink,
                                       kvsim_source_t *src, kvsim__reqpool_t *pool,
                                       int64_t *in_flight, kvsim_request_t *q, kvsim_time_ns now) {
  kvsim__tally_retired(st, q);
  int rc = kvsim__emit_request(sink, q);
  if (rc < 0)
    return rc;
  (*in_flight)--;
  int more = kvsim_source_on_finish(src, &q->spec, now,
                                    q->status == KVSIM_REQ_FINISHED ? q->num_output : 0);
  kvsim__reqpool_put(pool, q);
  return more < 0 ? more : more > 0;
}

/* The workload's next request into *spec: 1, or 0 when it has none now
 * (it ended: *end; or it waits for a request to finish: *blocked), or a
 * negative code. Blocked with none in flight is an error: no request can
 * leave to unblock it, and the run would sample an empty engine for ever. */
static inline int kvsim__request_next(kvsim_source_t *src, kvsim_req_spec_t *spec, bool *end,
                                      bool *blocked, int64_t in_flight, kvsim_time_ns now,
                                      kvsim_err *err) {
  if (*end)
    return 0;
  int rc = kvsim_source_next(src, spec, err);
  if (rc < 0)
    return rc;
  *blocked = rc == KVSIM_SOURCE_BLOCKED;
  if (rc == KVSIM_SOURCE_END) {
    *end = true;
    return 0;
  }
  if (*blocked && in_flight == 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "workload: waits for a request to finish with none in flight at %.3f s "
                         "simulated (no request can arrive): stopped",
                         kvsim_time_to_s(now));
  return !*blocked;
}

/* A pulled request object, from its spec, arriving no earlier than now. */
static inline void kvsim__request_from_spec(kvsim_request_t *q, const kvsim_req_spec_t *spec,
                                            kvsim_time_ns now) {
  q->spec = *spec;
  q->status = KVSIM_REQ_PENDING;
  q->num_prompt = q->num_tokens = spec->prompt_tokens;
  q->arrival = spec->arrival < now ? now : spec->arrival;
}

#endif
