/* One growable array for every room: a typed pointer, a length and a
 * capacity, grown by doubling. A failed grow leaves the array as it was,
 * so a caller that returns KVSIM_ENOMEM has lost nothing.
 *
 *   kvsim__vec(int64_t) v = {0};
 *   if (kvsim__vec_push(&v, 42) < 0) return KVSIM_ENOMEM;
 *   ... v.v[i] for i < v.n ...
 *   kvsim__vec_free(&v);
 *
 * Internal: not part of the public API. */
#ifndef KVSIM_CORE_VEC_H
#define KVSIM_CORE_VEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/alloc.h"
#include "kvsim/error.h"

#define kvsim__vec(T) \
  struct {            \
    T *v;             \
    int64_t n, cap;   \
  }

/* Makes room for at least `need` elements of `elem` bytes in *p (capacity
 * *cap); returns KVSIM_OK or KVSIM_ENOMEM with *p and *cap unchanged. */
int kvsim__grow(void **p, int64_t *cap, int64_t need, size_t elem);

/* The same for an int32_t capacity (arrays indexed by int32 ids). */
int kvsim__grow32(void **p, int32_t *cap, int64_t need, size_t elem);

#define kvsim__vec_reserve(a, need)                                              \
  ((need) <= (a)->cap ? KVSIM_OK                                                 \
                      : kvsim__grow((void **)&(a)->v, &(a)->cap, (need), sizeof *(a)->v))

#define kvsim__vec_push(a, x) \
  (kvsim__vec_reserve((a), (a)->n + 1) < 0 ? KVSIM_ENOMEM : ((a)->v[(a)->n++] = (x), KVSIM_OK))

#define kvsim__vec_free(a) \
  (kvsim__free((a)->v), (a)->v = NULL, (a)->n = (a)->cap = 0)

#endif
