/* The steady window of a run (kvsim/steady.h: the rule and its reasons). */
#include "kvsim/steady.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/error.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int kvsim_steady_window(const int64_t *arrival_ns, int64_t n, kvsim_steady_t *out) {
  memset(out, 0, sizeof *out);
  out->arrivals = n;
  if (n <= 0)
    return KVSIM_OK;
  int64_t *t = malloc((size_t)n * sizeof *t);
  if (!t)
    return KVSIM_ENOMEM;
  memcpy(t, arrival_ns, (size_t)n * sizeof *t);
  qsort(t, (size_t)n, sizeof *t, cmp_i64);
  int64_t cut = (int64_t)((double)n * KVSIM_STEADY_TRIM);
  out->start_ns = t[cut];
  out->end_ns = t[n - 1 - cut];
  /* Counted by time, so ties at an edge stay in the window. */
  for (int64_t i = 0; i < n && t[i] < out->start_ns; i++)
    out->warmup++;
  for (int64_t i = n - 1; i >= 0 && t[i] > out->end_ns; i--)
    out->drain++;
  out->warmup_s = (double)(out->start_ns - t[0]) / 1e9;
  free(t);
  return KVSIM_OK;
}

void kvsim_steady_judge(kvsim_steady_t *s, int64_t finished, double e2e_mean_s) {
  s->finished = finished;
  s->e2e_mean_s = finished > 0 ? e2e_mean_s : 0;
  s->why[0] = '\0';
  if (finished <= 0)
    snprintf(s->why, sizeof s->why, "no request finished in the steady window");
  else if (s->warmup_s < KVSIM_STEADY_WARMUP_E2E * e2e_mean_s)
    snprintf(s->why, sizeof s->why,
             "the warm-up dropped (%.3g s, %lld request%s) is shorter than %g x a request's mean "
             "E2E (%.3g s): the batch has not filled when the window opens",
             s->warmup_s, (long long)s->warmup, s->warmup == 1 ? "" : "s", KVSIM_STEADY_WARMUP_E2E,
             e2e_mean_s);
  else if (finished < KVSIM_STEADY_MIN_REQUESTS)
    snprintf(s->why, sizeof s->why,
             "only %lld requests finished in the steady window (a p99 wants %d: 10 above it)",
             (long long)finished, KVSIM_STEADY_MIN_REQUESTS);
  s->reached = s->why[0] == '\0';
}
