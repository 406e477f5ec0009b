/* A distribution of observations (latencies) with mean and percentiles.
 * Exact (GSL on the sorted values) up to KVSIM_DIST_EXACT_MAX values; past
 * that it folds into a log-spaced histogram of 0.1 % relative resolution,
 * so memory stays flat in the number of requests. */
#ifndef KVSIM_STATS_H
#define KVSIM_STATS_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVSIM_DIST_EXACT_MAX 65536

typedef struct kvsim_dist {
  double *v;            /* exact values while n <= KVSIM_DIST_EXACT_MAX */
  int64_t n, cap;
  double sum, min, max;
  uint32_t *hist;       /* log buckets once folded */
  bool folded, sorted;
} kvsim_dist_t;

void kvsim_dist_init(kvsim_dist_t *d);
void kvsim_dist_fini(kvsim_dist_t *d);
int kvsim_dist_add(kvsim_dist_t *d, double x);   /* x >= 0 */
double kvsim_dist_mean(const kvsim_dist_t *d);
/* q in [0, 1]; 0 when empty. Sorts in place on first use. */
double kvsim_dist_quantile(kvsim_dist_t *d, double q);
static inline bool kvsim_dist_exact(const kvsim_dist_t *d) { return !d->folded; }

#ifdef __cplusplus
}
#endif

#endif
