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

/* Moves the vacancy at `i` down to a leaf of h[0 .. n), always pulling up
 * the earlier child (one compare a level, where a sift-down of a
 * replacement costs two), and returns the leaf's index. Most events
 * pushed are late (a step's end, the next arrival), so the element put
 * at the leaf rises little. */
static size_t hole_down(kvsim_event_t *h, size_t n, size_t i) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      return i;
    if (c + 1 < n && before(&h[c + 1], &h[c]))
      c++;
    h[i] = h[c];
    i = c;
  }
}

/* Puts e into the vacancy at the root of h[0 .. n), n >= 1. */
static void fill_root(kvsim_event_t *h, size_t n, kvsim_event_t e) {
  size_t i = hole_down(h, n, 0);
  h[i] = e;
  sift_up(h, i);
}

/* Closes a vacant root: the last live event fills it. */
static void close_hole(kvsim_eventq_t *q) {
  q->hole = 0;
  if (q->len > 0)
    fill_root(q->heap, q->len, q->heap[q->len]);
}

void kvsim_eventq_init(kvsim_eventq_t *q) {
  q->heap = NULL;
  q->len = q->cap = 0;
  q->next_seq = 0;
  q->now = 0;
  q->hole = 0;
}

void kvsim_eventq_fini(kvsim_eventq_t *q) {
  kvsim__free(q->heap);
  kvsim_eventq_init(q);
}

int kvsim_eventq_push(kvsim_eventq_t *q, kvsim_time_ns time, int32_t kind, int32_t target) {
  /* Scheduling into the past is a programmer error: the clock never runs back. */
  assert(time >= q->now);
  kvsim_event_t e = {time, q->next_seq++, kind, target};
  if (q->hole) {
    q->hole = 0;
    fill_root(q->heap, ++q->len, e);
    return KVSIM_OK;
  }
  int64_t cap = (int64_t)q->cap;
  if (kvsim__grow((void **)&q->heap, &cap, (int64_t)q->len + 1, sizeof *q->heap) < 0)
    return KVSIM_ENOMEM;
  q->cap = (size_t)cap;
  q->heap[q->len] = e;
  sift_up(q->heap, q->len++);
  return KVSIM_OK;
}

int kvsim_eventq_pop(kvsim_eventq_t *q, kvsim_event_t *out) {
  if (q->hole)
    close_hole(q);
  if (q->len == 0)
    return 0;
  *out = q->heap[0];
  q->len--;
  q->hole = 1;
  assert(out->time >= q->now);
  q->now = out->time;
  return 1;
}
