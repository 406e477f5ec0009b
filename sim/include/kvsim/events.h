/* Event queue: a binary min-heap ordered by (time, seq). seq is assigned at
 * push and only grows, so ties resolve in push order (deterministic).
 * The clock is the time of the last popped event; it never runs back.
 * A pop leaves its slot at the root vacant (`hole`) and the next push
 * fills it: the run's usual pop-then-push (a step ends, the next one is
 * scheduled) costs one pass down the heap instead of two. */
#ifndef KVSIM_EVENTS_H
#define KVSIM_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "kvsim/clock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvsim_event {
  kvsim_time_ns time;
  uint64_t seq;
  int32_t kind;   /* caller-defined */
  int32_t target; /* caller-defined, e.g. a replica index */
} kvsim_event_t;

typedef struct kvsim_eventq {
  kvsim_event_t *heap; /* owned */
  size_t len, cap;
  uint64_t next_seq;
  kvsim_time_ns now;
  /* heap[0] is vacant (popped, not yet refilled): the len live events
   * are heap[1 .. len], a heap under the vacant root. */
  int hole;
} kvsim_eventq_t;

void kvsim_eventq_init(kvsim_eventq_t *q);
void kvsim_eventq_fini(kvsim_eventq_t *q);
/* Returns KVSIM_ENOMEM on allocation failure. Asserts time >= now. */
int kvsim_eventq_push(kvsim_eventq_t *q, kvsim_time_ns time, int32_t kind, int32_t target);
/* Pops the earliest event into *out and advances now; returns 0 when empty. */
int kvsim_eventq_pop(kvsim_eventq_t *q, kvsim_event_t *out);
static inline size_t kvsim_eventq_len(const kvsim_eventq_t *q) { return q->len; }
static inline kvsim_time_ns kvsim_eventq_now(const kvsim_eventq_t *q) { return q->now; }
/* Time of the earliest pending event, KVSIM_TIME_NEVER if none. */
static inline kvsim_time_ns kvsim_eventq_peek_time(const kvsim_eventq_t *q) {
  if (!q->len)
    return KVSIM_TIME_NEVER;
  if (!q->hole)
    return q->heap[0].time;
  /* The earlier of the vacant root's children (time ties do not matter here). */
  kvsim_time_ns t = q->heap[1].time;
  return q->len >= 2 && q->heap[2].time < t ? q->heap[2].time : t;
}

#ifdef __cplusplus
}
#endif

#endif
