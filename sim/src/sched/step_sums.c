/* A step's batch shape as running integer sums (kvsim_step_sums_t): the
 * terms kvsim_batch_shape_add adds for each row, in integers. */
#include <stdint.h>
#include <string.h>

#include "kvsim/sched.h"

void kvsim_step_sums_begin(kvsim_step_sums_t *s) {
  const int64_t window = s->window;
  memset(s, 0, sizeof *s);
  s->window = window;
  s->on = true;
}

void kvsim_step_sums_row(kvsim_step_sums_t *s, int64_t c64, int64_t n64) {
  if (c64 < 0 || n64 < 0 || c64 > INT32_MAX || n64 > INT32_MAX) {
    s->big = true;
    return;
  }
  const uint64_t c = (uint64_t)c64, n = (uint64_t)n64;
  const uint64_t w = s->window > 0 ? (uint64_t)s->window : 0;
  if (c64 + n64 > s->maxcn)
    s->maxcn = c64 + n64;
  /* A sequence in prefill computes more than one token or has nothing
   * cached yet (kvsim_batch_shape_add's rule). */
  const bool prefill = n > 1 || c == 0;
  s->seqs++;
  s->newt += n;
  /* Causal attention: new token i (1-based) sees context + i keys. */
  const uint64_t pairs = n * c + n * (n + 1) / 2;
  s->af += pairs;
  s->kf += c + n;
  if (prefill) {
    s->pseqs++;
    s->pft += n;
  } else {
    s->df += c + n;
  }
  if (w) {
    /* sum_{i=1..n} min(c + i, w) */
    uint64_t j0 = w > c ? w - c : 0;
    if (j0 > n)
      j0 = n;
    s->as += j0 * c + j0 * (j0 + 1) / 2 + (n - j0) * w;
    s->ks += (c < w ? c : w) + n;
    if (!prefill)
      s->ds += c + n < w ? c + n : w;
  } else {
    s->as += pairs;
    s->ks += c + n;
    if (!prefill)
      s->ds += c + n;
  }
}

void kvsim_step_sums_decode(kvsim_step_sums_t *s, int64_t rows, int64_t context, int64_t max_context) {
  if (rows <= 0)
    return;
  /* Each row: one new token after c > 0 cached, c + 1 pairs, c + 1 keys
   * read, c + 1 decode keys; without a window the sliding sums are the
   * full ones. */
  const uint64_t n = (uint64_t)rows, keys = (uint64_t)context + n;
  s->seqs += n;
  s->newt += n;
  s->af += keys;
  s->kf += keys;
  s->df += keys;
  s->as += keys;
  s->ks += keys;
  s->ds += keys;
  if (max_context + 1 > s->maxcn)
    s->maxcn = max_context + 1;
}
