/* Which candidate a compare names (compare_int.h kvsim__compare_best).
 * Cost first, as before; what changed is what decides a tie: two
 * candidates at one price went to whichever the study listed first, so
 * swapping them flipped the answer while one carried 26.6 req/s and the
 * other 24.7. A tie now goes to the higher goodput per GPU, then to the
 * more headroom at the band's slow edge, and only a tie on all of these
 * is ordered by label, and said to be a tie. */
#include <math.h>
#include <string.h>

#include "study/compare_int.h"

bool kvsim__compare_meets(const kvsim_compare_row_t *r) {
  return r->rc == KVSIM_OK && !r->infeasible && !isnan(r->replicas);
}

/* Requests finished at the target but none had a second token: no TPOT,
 * which no request missed. */
static bool no_tpot(const kvsim_compare_row_t *r) {
  return isfinite(r->ttft_p99) && isnan(r->tpot_p99) && isnan(r->tpot_p99_range[1]);
}

bool kvsim__compare_robust(const kvsim_compare_t *c, const kvsim_compare_row_t *r) {
  return kvsim__compare_meets(r) &&
         !(c->slo_ttft_p99_s > 0 && !(r->ttft_p99_range[1] <= c->slo_ttft_p99_s)) &&
         !(c->slo_tpot_p99_s > 0 && !no_tpot(r) && !(r->tpot_p99_range[1] <= c->slo_tpot_p99_s)) &&
         !(c->slo_e2e_p99_s > 0 && !(r->e2e_p99_range[1] <= c->slo_e2e_p99_s));
}

double kvsim__compare_headroom(const kvsim_compare_t *c, const kvsim_compare_row_t *r) {
  return r->replicas * r->goodput_range[0] / c->target_rate - 1;
}

/* A row's figures at one point of the band: replicas and goodput there. */
typedef struct at_band {
  double replicas, goodput;
} at_band_t;

static at_band_t figures(const kvsim_compare_row_t *r, kvsim__band_at at) {
  switch (at) {
  case KVSIM__AT_SLOW:
    return (at_band_t){r->replicas_range[1], r->goodput_range[0]};
  case KVSIM__AT_FAST:
    return (at_band_t){r->replicas_range[0], r->goodput_range[1]};
  default:
    return (at_band_t){r->replicas, r->goodput};
  }
}

static bool qualifies(const kvsim_compare_row_t *r, kvsim__band_at at) {
  return kvsim__compare_meets(r) && isfinite(figures(r, at).replicas);
}

/* a before b: < 0; after: > 0; 0 a tie. *why: the criterion that decided. */
static int order(const kvsim_compare_t *c, const kvsim_compare_row_t *a, const kvsim_compare_row_t *b,
                 kvsim__band_at at, int *why) {
  at_band_t fa = figures(a, at), fb = figures(b, at);
  *why = 0;
  if (at == KVSIM__AT_NOMINAL && kvsim__compare_robust(c, a) != kvsim__compare_robust(c, b))
    return kvsim__compare_robust(c, a) ? -1 : 1;
  *why = 1;
  double ga = fa.replicas * a->gpus_per_replica, gb = fb.replicas * b->gpus_per_replica;
  double ca = a->cost_per_gpu_hour * ga, cb = b->cost_per_gpu_hour * gb;
  /* Cents: a price is given to the cent, a product of two to a rounding. */
  if (isfinite(ca) && isfinite(cb) && fabs(ca - cb) >= 0.005)
    return ca < cb ? -1 : 1;
  if (!(isfinite(ca) && isfinite(cb)) && ga != gb)
    return ga < gb ? -1 : 1;
  /* As many GPUs, one with a price and one without: the known cost. */
  if (isfinite(ca) != isfinite(cb))
    return isfinite(ca) ? -1 : 1;
  *why = 2;
  /* Goodput per GPU; a goodput not found at this point ranks last. */
  double pa = fa.goodput / a->gpus_per_replica, pb = fb.goodput / b->gpus_per_replica;
  pa = isnan(pa) ? -1 : pa;
  pb = isnan(pb) ? -1 : pb;
  if (pa != pb)
    return pa > pb ? -1 : 1;
  *why = 3;
  double ha = kvsim__compare_headroom(c, a), hb = kvsim__compare_headroom(c, b);
  ha = isnan(ha) ? -INFINITY : ha;
  hb = isnan(hb) ? -INFINITY : hb;
  if (ha != hb)
    return ha > hb ? -1 : 1;
  *why = 4;
  return 0;
}

int kvsim__compare_best(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n,
                        kvsim__band_at at, int *tie, int *why) {
  int best = -1, w = -1, t = -1;
  for (int i = 0; i < n; i++) {
    if (!qualifies(&rows[i], at))
      continue;
    if (best < 0) {
      best = i;
      continue;
    }
    int d, o = order(c, &rows[i], &rows[best], at, &d);
    /* A tie on everything: by label, which the study's order cannot move. */
    if (o == 0)
      o = strcmp(c->cand[i].label, c->cand[best].label);
    if (o < 0)
      best = i;
  }
  /* Why the winner won: against the runner-up, the row it beat by the
   * latest criterion. */
  for (int i = 0; best >= 0 && i < n; i++) {
    if (i == best || !qualifies(&rows[i], at))
      continue;
    int d;
    order(c, &rows[best], &rows[i], at, &d);
    if (d > w)
      w = d;
    if (d == 4 && t < 0)
      t = i;
  }
  if (tie)
    *tie = t;
  if (why)
    *why = w;
  return best;
}
