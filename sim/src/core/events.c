#include "kvsim/events.h"

#include <assert.h>
#include <stdlib.h>

#include "kvsim/error.h"

static int before(const kvsim_event_t *a, const kvsim_event_t *b) {
  return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

void kvsim_eventq_init(kvsim_eventq_t *q) {
  q->heap = NULL;
  q->len = q->cap = 0;
  q->next_seq = 0;
  q->now = 0;
}

void kvsim_eventq_fini(kvsim_eventq_t *q) {
  free(q->heap);
  kvsim_eventq_init(q);
}

int kvsim_eventq_push(kvsim_eventq_t *q, kvsim_time_ns time, int32_t kind, int32_t target) {
  /* Scheduling into the past is a programmer error: the clock never runs back. */
  assert(time >= q->now);
  if (q->len == q->cap) {
    size_t cap = q->cap ? q->cap * 2 : 64;
    kvsim_event_t *h = realloc(q->heap, cap * sizeof *h);
    if (!h)
      return KVSIM_ENOMEM;
    q->heap = h;
    q->cap = cap;
  }
  kvsim_event_t ev = {time, q->next_seq++, kind, target};
  size_t i = q->len++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!before(&ev, &q->heap[parent]))
      break;
    q->heap[i] = q->heap[parent];
    i = parent;
  }
  q->heap[i] = ev;
  return KVSIM_OK;
}

int kvsim_eventq_pop(kvsim_eventq_t *q, kvsim_event_t *out) {
  if (q->len == 0)
    return 0;
  *out = q->heap[0];
  kvsim_event_t last = q->heap[--q->len];
  size_t i = 0, n = q->len;
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    const kvsim_event_t *best = &last;
    if (l < n && before(&q->heap[l], best)) {
      m = l;
      best = &q->heap[l];
    }
    if (l + 1 < n && before(&q->heap[l + 1], best))
      m = l + 1;
    if (m == i)
      break;
    q->heap[i] = q->heap[m];
    i = m;
  }
  if (n)
    q->heap[i] = last;
  assert(out->time >= q->now);
  q->now = out->time;
  return 1;
}
