#include "kvsim/events.h"

#include <assert.h>
#include <stdlib.h>

#include "core/vec.h"
#include "kvsim/error.h"

/* (time, seq) order; seq is unique, so the order is total and any heap
 * pops the same sequence. The heap is specialised to the event type (an
 * inline compare, whole-struct moves) rather than the generic one's
 * memcpy and compare through a pointer: it runs several times a step. */
static inline int before(const kvsim_event_t *a, const kvsim_event_t *b) {
  return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void sift_up(kvsim_event_t *h, size_t i) {
  kvsim_event_t e = h[i];
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!before(&e, &h[p]))
      break;
    h[i] = h[p];
    i = p;
  }
  h[i] = e;
}

static void sift_down(kvsim_event_t *h, size_t n, size_t i) {
  kvsim_event_t e = h[i];
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && before(&h[c + 1], &h[c]))
      c++;
    if (!before(&h[c], &e))
      break;
    h[i] = h[c];
    i = c;
  }
  h[i] = e;
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
  sift_up(q->heap, q->len++);
  return KVSIM_OK;
}

int kvsim_eventq_pop(kvsim_eventq_t *q, kvsim_event_t *out) {
  if (q->len == 0)
    return 0;
  *out = q->heap[0];
  if (--q->len > 0) {
    q->heap[0] = q->heap[q->len];
    sift_down(q->heap, q->len, 0);
  }
  assert(out->time >= q->now);
  q->now = out->time;
  return 1;
}
