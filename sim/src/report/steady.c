/* The steady window of a run (kvsim/steady.h: the rule and its reasons). */
#include "kvsim/steady.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/error.h"

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The k-th smallest of t[0..n) (0-based), t reordered around it: Hoare
 * partitions about a median of three, in expected linear time. The window
 * needs two order statistics, the minimum and two counts, not the whole
 * order: sorting the core run's 19,366 arrivals cost 6.4 M instructions.
 * An order statistic is a value, so it is the sorted array's t[k] however
 * it is found. Past 64 rounds (an adversarial order) the rest is sorted. */
static int64_t select_kth(int64_t *t, int64_t n, int64_t k) {
  int64_t lo = 0, hi = n - 1;
  for (int round = 0; lo < hi; round++) {
    if (round == 64) {
      qsort(t + lo, (size_t)(hi - lo + 1), sizeof *t, cmp_i64);
      break;
    }
    const int64_t a = t[lo], b = t[lo + (hi - lo) / 2], c = t[hi];
    const int64_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    int64_t i = lo, j = hi;
    while (i <= j) {
      while (t[i] < pivot)
        i++;
      while (t[j] > pivot)
        j--;
      if (i <= j) {
        const int64_t x = t[i];
        t[i++] = t[j];
        t[j--] = x;
      }
    }
    /* t[lo..j] <= pivot <= t[i..hi]; between them, all equal the pivot. */
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return t[k];
  }
  return t[k];
}

int kvsim_steady_window(const int64_t *arrival_ns, int64_t n, kvsim_steady_t *out) {
  memset(out, 0, sizeof *out);
  out->arrivals = n;
  if (n <= 0)
    return KVSIM_OK;
  int64_t *t = kvsim__malloc((size_t)n * sizeof *t);
  if (!t)
    return KVSIM_ENOMEM;
  memcpy(t, arrival_ns, (size_t)n * sizeof *t);
  int64_t cut = (int64_t)((double)n * KVSIM_STEADY_TRIM);
  out->start_ns = select_kth(t, n, cut);
  out->end_ns = select_kth(t, n, n - 1 - cut);
  /* Counted by time, so ties at an edge stay in the window. */
  int64_t first = t[0];
  for (int64_t i = 0; i < n; i++) {
    first = t[i] < first ? t[i] : first;
    out->warmup += t[i] < out->start_ns;
    out->drain += t[i] > out->end_ns;
  }
  out->warmup_s = (double)(out->start_ns - first) / 1e9;
  free(t);
  return KVSIM_OK;
}

#define BUCKETS 65536

/* The k-th smallest (0-based) of the reader's values for both ks at once:
 * each pass histograms the values still inside each target's range and
 * narrows that range to the bucket holding the target, 65,536 times
 * narrower, until it is one nanosecond wide. */
static int select2(const kvsim_steady_reader_t *r, int64_t first, int64_t last, const int64_t k[2],
                   int64_t out[2]) {
  int64_t lo[2] = {first, first}, hi[2] = {last, last};
  int64_t *hist = kvsim__malloc(2 * BUCKETS * sizeof *hist);
  if (!hist)
    return KVSIM_ENOMEM;
  int rc = KVSIM_OK;
  while (rc == KVSIM_OK && (lo[0] < hi[0] || lo[1] < hi[1])) {
    uint64_t w[2];
    int64_t below[2] = {0, 0};
    for (int j = 0; j < 2; j++)
      w[j] = (uint64_t)(hi[j] - lo[j]) / BUCKETS + 1;
    memset(hist, 0, 2 * BUCKETS * sizeof *hist);
    if ((rc = r->rewind(r->ctx)) < 0)
      break;
    int64_t t;
    while ((rc = r->next(r->ctx, &t)) > 0)
      for (int j = 0; j < 2; j++) {
        if (t < lo[j])
          below[j]++;
        else if (t <= hi[j])
          hist[j * BUCKETS + (int64_t)((uint64_t)(t - lo[j]) / w[j])]++;
      }
    if (rc < 0)
      break;
    for (int j = 0; j < 2; j++) {
      if (lo[j] == hi[j])
        continue;
      int64_t seen = below[j], b = 0;
      while (b < BUCKETS - 1 && seen + hist[j * BUCKETS + b] <= k[j])
        seen += hist[j * BUCKETS + b++];
      int64_t nlo = lo[j] + (int64_t)((uint64_t)b * w[j]);
      uint64_t top = (uint64_t)b * w[j] + w[j] - 1;
      hi[j] = top < (uint64_t)(hi[j] - lo[j]) ? lo[j] + (int64_t)top : hi[j];
      lo[j] = nlo;
    }
  }
  free(hist);
  out[0] = lo[0];
  out[1] = lo[1];
  return rc < 0 ? rc : KVSIM_OK;
}

int kvsim_steady_window_stream(const kvsim_steady_reader_t *r, int64_t n, int64_t first,
                               int64_t last, kvsim_steady_t *out) {
  memset(out, 0, sizeof *out);
  out->arrivals = n;
  if (n <= 0)
    return KVSIM_OK;
  int64_t cut = (int64_t)((double)n * KVSIM_STEADY_TRIM);
  const int64_t k[2] = {cut, n - 1 - cut};
  int64_t edge[2];
  int rc = select2(r, first, last, k, edge);
  if (rc < 0)
    return rc;
  out->start_ns = edge[0];
  out->end_ns = edge[1];
  /* Counted by time, so ties at an edge stay in the window. */
  if ((rc = r->rewind(r->ctx)) < 0)
    return rc;
  int64_t t;
  while ((rc = r->next(r->ctx, &t)) > 0) {
    out->warmup += t < out->start_ns;
    out->drain += t > out->end_ns;
  }
  out->warmup_s = (double)(out->start_ns - first) / 1e9;
  return rc < 0 ? rc : KVSIM_OK;
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
