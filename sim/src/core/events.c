#include "kvsim/events.h"

#include <assert.h>
#include <stdlib.h>

#include "core/heap.h"
#include "core/vec.h"
#include "kvsim/error.h"

static int before(const void *pa, const void *pb) {
  const kvsim_event_t *a = pa, *b = pb;
  return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

void kvsim_eventq_init(kvsim_eventq_t *q) {
  q->heap = NULL;
  q->len = q->cap = 0;
  q->next_seq = 0;
  q->now = 0;
}

void kvsim_eventq_fini(kvsim_eventq_t *q) {
  kvsim__free(q->heap);
  kvsim_eventq_init(q);
}

int kvsim_eventq_push(kvsim_eventq_t *q, kvsim_time_ns time, int32_t kind, int32_t target) {
  /* Scheduling into the past is a programmer error: the clock never runs back. */
  assert(time >= q->now);
  int64_t cap = (int64_t)q->cap;
  if (kvsim__grow((void **)&q->heap, &cap, (int64_t)q->len + 1, sizeof *q->heap) < 0)
    return KVSIM_ENOMEM;
  q->cap = (size_t)cap;
  q->heap[q->len] = (kvsim_event_t){time, q->next_seq++, kind, target};
  kvsim__heap_up(q->heap, sizeof *q->heap, (int64_t)q->len++, before);
  return KVSIM_OK;
}

int kvsim_eventq_pop(kvsim_eventq_t *q, kvsim_event_t *out) {
  if (q->len == 0)
    return 0;
  kvsim__heap_pop(q->heap, sizeof *q->heap, (int64_t)q->len--, out, before);
  assert(out->time >= q->now);
  q->now = out->time;
  return 1;
}
