/* The host term's fit (logo.h): the engine's host time per step (fixed and
 * per scheduled request) and the benchmark client's latency that fit a set
 * of items best. Each item was simulated at three points; around them its
 * latencies are close to linear in the host times (every step is longer
 * by them), and the client latency adds to its TTFT and E2E. So a fit is
 * a search on the linear model, with no simulation, and the held-out
 * predictions are then simulated at the result. The search: coordinate
 * descent over the three, each a grid refined twice around its best.
 * MoE models are predicted, not fitted: their routing and expert shapes
 * carry an error of their own that the host term must not absorb. */
#include <math.h>
#include <string.h>

#include "fidelity/logo.h"

#define HOST_MAX_US 5000.0
#define PER_SEQ_MAX_US 200.0
#define GRID 100
#define PASSES 6

static double cost(const kvsim__logo_item_t *items, int n, const char *skip, const kvsim__logo_par_t *p) {
  double c = 0;
  for (int i = 0; i < n; i++) {
    const kvsim__logo_item_t *it = &items[i];
    if (it->moe || (skip && !strcmp(it->gpu, skip)))
      continue;
    for (int k = 0; k < 3; k++) {
      const double s = kvsim__logo_linear(it, k, p);
      if (it->meas[k] > 0)
        c += s > 0 ? fabs(log(s / it->meas[k])) : 10;
    }
  }
  return c;
}

/* The best value of one coordinate in [lo, hi], the others fixed. */
static void line(const kvsim__logo_item_t *items, int n, const char *skip, kvsim__logo_par_t *p, double *x,
                 double lo, double hi) {
  double best = cost(items, n, skip, p), bx = *x;
  for (int r = 0; r < 3; r++) {
    for (int j = 0; j <= GRID; j++) {
      *x = lo + (hi - lo) * j / GRID;
      const double c = cost(items, n, skip, p);
      if (c < best)
        best = c, bx = *x;
    }
    const double w = (hi - lo) / GRID;
    lo = fmax(lo, bx - w), hi = fmin(hi, bx + w);
  }
  *x = bx;
}

int kvsim__logo_fit(const kvsim__logo_item_t *items, int n, const char *skip, kvsim__logo_par_t *p) {
  /* The client latency stays below half the smallest client-side TTFT of
   * the items fitted: it can never be all of one. */
  double cap = 0;
  int used = 0, family[KVSIM_HOST_FAMILIES] = {0, 0, 0};
  for (int i = 0; i < n; i++) {
    if (items[i].moe || (skip && !strcmp(items[i].gpu, skip)))
      continue;
    used++;
    family[items[i].family]++;
    if (items[i].client && items[i].meas[0] > 0 && (cap == 0 || 0.5e3 * items[i].meas[0] < cap))
      cap = 0.5e3 * items[i].meas[0];
  }
  memset(p, 0, sizeof *p);
  for (int pass = 0; pass < PASSES; pass++) {
    for (int f = 0; f < KVSIM_HOST_FAMILIES; f++) {
      if (!family[f])
        continue;
      line(items, n, skip, p, &p->host_us[f], 0, HOST_MAX_US);
      line(items, n, skip, p, &p->per_seq_us[f], 0, PER_SEQ_MAX_US);
    }
    if (cap > 0)
      line(items, n, skip, p, &p->frontend_us, 0, cap);
  }
  /* A family with no rows left takes the nearest one's figures: vLLM's
   * two schedulers each other's, SGLang vLLM's asynchronous one (both
   * overlap scheduling with the GPU). */
  static const int nearest[KVSIM_HOST_FAMILIES][2] = {{KVSIM_HOST_VLLM_ASYNC, KVSIM_HOST_SGLANG},
                                                       {KVSIM_HOST_VLLM_SYNC, KVSIM_HOST_SGLANG},
                                                       {KVSIM_HOST_VLLM_ASYNC, KVSIM_HOST_VLLM_SYNC}};
  for (int f = 0; f < KVSIM_HOST_FAMILIES; f++)
    for (int k = 0; !family[f] && k < 2; k++)
      if (family[nearest[f][k]]) {
        p->host_us[f] = p->host_us[nearest[f][k]];
        p->per_seq_us[f] = p->per_seq_us[nearest[f][k]];
        break;
      }
  return used;
}
