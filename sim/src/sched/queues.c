/* Request containers shared by the schedulers. */
#include <stdlib.h>

#include "kvsim/sched.h"

int kvsim__reqvec_grow(kvsim_reqvec_t *a) {
  int32_t cap = a->cap ? a->cap * 2 : 64;
  kvsim_request_t **v = realloc(a->v, (size_t)cap * sizeof *v);
  if (!v)
    return KVSIM_ENOMEM;
  a->v = v;
  a->cap = cap;
  return KVSIM_OK;
}

void kvsim_reqvec_fini(kvsim_reqvec_t *a) {
  free(a->v);
  a->v = NULL;
  a->n = a->cap = 0;
}

static int grow(kvsim_waitq_t *q) {
  int32_t cap = q->cap ? q->cap * 2 : 64;
  kvsim_request_t **v = malloc((size_t)cap * sizeof *v);
  if (!v)
    return KVSIM_ENOMEM;
  for (int32_t i = 0; i < q->n; i++)
    v[i] = q->heap ? q->v[i] : q->v[(q->head + i) % q->cap];
  free(q->v);
  q->v = v;
  q->cap = cap;
  q->head = 0;
  return KVSIM_OK;
}

/* Priority order: lower priority value first, then earlier arrival, then id. */
static int before(const kvsim_request_t *a, const kvsim_request_t *b) {
  if (a->spec.priority != b->spec.priority)
    return a->spec.priority < b->spec.priority;
  if (a->arrival != b->arrival)
    return a->arrival < b->arrival;
  return a->spec.id < b->spec.id;
}

static void sift_up(kvsim_waitq_t *q, int32_t i) {
  kvsim_request_t *x = q->v[i];
  while (i > 0) {
    int32_t p = (i - 1) / 2;
    if (!before(x, q->v[p]))
      break;
    q->v[i] = q->v[p];
    i = p;
  }
  q->v[i] = x;
}

static void sift_down(kvsim_waitq_t *q, int32_t i) {
  kvsim_request_t *x = q->v[i];
  for (;;) {
    int32_t l = 2 * i + 1, m = i;
    const kvsim_request_t *best = x;
    if (l < q->n && before(q->v[l], best)) {
      m = l;
      best = q->v[l];
    }
    if (l + 1 < q->n && before(q->v[l + 1], best))
      m = l + 1;
    if (m == i)
      break;
    q->v[i] = q->v[m];
    i = m;
  }
  q->v[i] = x;
}

int kvsim_waitq_push_back(kvsim_waitq_t *q, kvsim_request_t *r) {
  if (q->n == q->cap && grow(q) < 0)
    return KVSIM_ENOMEM;
  if (q->heap) {
    q->v[q->n++] = r;
    sift_up(q, q->n - 1);
  } else {
    q->v[(q->head + q->n) % q->cap] = r;
    q->n++;
  }
  return KVSIM_OK;
}

int kvsim_waitq_push_front(kvsim_waitq_t *q, kvsim_request_t *r) {
  if (q->heap)
    return kvsim_waitq_push_back(q, r); /* a heap has no front: order decides */
  if (q->n == q->cap && grow(q) < 0)
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
    r = q->v[0];
    q->v[0] = q->v[--q->n];
    if (q->n)
      sift_down(q, 0);
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
        sift_down(q, i);
        sift_up(q, i);
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
  free(q->v);
  q->v = NULL;
  q->n = q->cap = q->head = 0;
}
