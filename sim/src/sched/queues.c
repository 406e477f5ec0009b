/* Request containers shared by the schedulers: the core growable array
 * for request lists, and the waiting queue (a ring buffer, or the core
 * binary heap under the priority policy). Every allocation goes through
 * core/alloc.h, and a failed one leaves the container as it was. */
#include "core/alloc.h"
#include "core/heap.h"
#include "core/vec.h"
#include "kvsim/sched.h"

int kvsim__reqvec_grow(kvsim_reqvec_t *a, int64_t need) {
  return kvsim__grow((void **)&a->v, &a->cap, need, sizeof *a->v);
}

void kvsim_reqvec_fini(kvsim_reqvec_t *a) {
  kvsim__free(a->v);
  a->v = NULL;
  a->n = a->cap = 0;
}

int kvsim_waitq_reserve(kvsim_waitq_t *q, int64_t need) {
  if (need <= q->cap)
    return KVSIM_OK;
  if (need > INT32_MAX / 2)
    return KVSIM_ENOMEM;
  int32_t cap = q->cap ? q->cap : 64;
  while (cap < need)
    cap *= 2;
  /* A ring buffer cannot grow in place: copy it out in queue order. */
  kvsim_request_t **v = kvsim__malloc((size_t)cap * sizeof *v);
  if (!v)
    return KVSIM_ENOMEM;
  for (int32_t i = 0; i < q->n; i++)
    v[i] = q->heap ? q->v[i] : q->v[(q->head + i) % q->cap];
  kvsim__free(q->v);
  q->v = v;
  q->cap = cap;
  q->head = 0;
  return KVSIM_OK;
}

/* Priority order: lower priority value first, then earlier arrival, then
 * id (the heap holds request pointers). */
static int before(const void *pa, const void *pb) {
  const kvsim_request_t *a = *(kvsim_request_t *const *)pa, *b = *(kvsim_request_t *const *)pb;
  if (a->spec.priority != b->spec.priority)
    return a->spec.priority < b->spec.priority;
  if (a->arrival != b->arrival)
    return a->arrival < b->arrival;
  return a->spec.id < b->spec.id;
}

int kvsim_waitq_push_back(kvsim_waitq_t *q, kvsim_request_t *r) {
  if (q->n == q->cap && kvsim_waitq_reserve(q, (int64_t)q->n + 1) < 0)
    return KVSIM_ENOMEM;
  if (q->heap) {
    q->v[q->n++] = r;
    kvsim__heap_up(q->v, sizeof *q->v, q->n - 1, before);
  } else {
    q->v[(q->head + q->n) % q->cap] = r;
    q->n++;
  }
  return KVSIM_OK;
}

int kvsim_waitq_push_front(kvsim_waitq_t *q, kvsim_request_t *r) {
  if (q->heap)
    return kvsim_waitq_push_back(q, r); /* a heap has no front: order decides */
  if (q->n == q->cap && kvsim_waitq_reserve(q, (int64_t)q->n + 1) < 0)
    return KVSIM_ENOMEM;
  q->head = (q->head + q->cap - 1) % q->cap;
  q->v[q->head] = r;
  q->n++;
  return KVSIM_OK;
}

kvsim_request_t *kvsim_waitq_peek(const kvsim_waitq_t *q) {
  if (!q->n)
    return NULL;
  return q->heap ? q->v[0] : q->v[q->head];
}

kvsim_request_t *kvsim_waitq_pop(kvsim_waitq_t *q) {
  if (!q->n)
    return NULL;
  kvsim_request_t *r;
  if (q->heap) {
    kvsim__heap_pop(q->v, sizeof *q->v, q->n, &r, before);
    q->n--;
  } else {
    r = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
  }
  return r;
}

bool kvsim_waitq_remove(kvsim_waitq_t *q, kvsim_request_t *r) {
  for (int32_t i = 0; i < q->n; i++) {
    if (kvsim_waitq_at(q, i) != r)
      continue;
    if (q->heap) {
      q->v[i] = q->v[--q->n];
      if (i < q->n) {
        kvsim__heap_down(q->v, sizeof *q->v, q->n, i, before);
        kvsim__heap_up(q->v, sizeof *q->v, i, before);
      }
    } else {
      for (int32_t k = i; k + 1 < q->n; k++)
        q->v[(q->head + k) % q->cap] = q->v[(q->head + k + 1) % q->cap];
      q->n--;
    }
    return true;
  }
  return false;
}

kvsim_request_t *kvsim_waitq_at(const kvsim_waitq_t *q, int32_t i) {
  if (i < 0 || i >= q->n)
    return NULL;
  return q->heap ? q->v[i] : q->v[(q->head + i) % q->cap];
}

void kvsim_waitq_fini(kvsim_waitq_t *q) {
  kvsim__free(q->v);
  q->v = NULL;
  q->n = q->cap = q->head = 0;
}
