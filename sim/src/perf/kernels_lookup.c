/* Kernel profiles (kvsim/kernels.h): the lookups, interpolation in the
 * measured tables. A check of the tables found GEMM latency close to
 * linear in m at fixed (n, k) and bilinear in (n, k) between grid points;
 * attention linear in batch at fixed length, and between lengths linear
 * enough at the grid's spacing (powers of two and their halves). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf/ktab.h"

int kvsim__kseg(const double *x, int n, double v, double *w) {
  if (n < 2) {
    *w = 0;
    return 0;
  }
  int lo = 0, hi = n - 1;
  if (v <= x[0]) {
    *w = 0;
    return 0;
  }
  if (v >= x[n - 1]) {
    *w = 1;
    return n - 2;
  }
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x[mid] <= v)
      lo = mid;
    else
      hi = mid;
  }
  *w = (v - x[lo]) / (x[lo + 1] - x[lo]);
  return lo;
}

double kvsim__kcurve_at(const kvsim__kcurve *c, double x) {
  if (x >= c->x[c->n - 1])
    return c->y[c->n - 1] * x / c->x[c->n - 1];
  double w;
  const int i = kvsim__kseg(c->x, c->n, x, &w);
  return c->n < 2 ? c->y[0] : c->y[i] + w * (c->y[i + 1] - c->y[i]);
}

/* Position on an axis for bilinear use: the segment, its weight, and the
 * factor by which a value past the axis' end scales (proportionally). */
typedef struct pos {
  int i;
  double w, scale;
} pos_t;

static pos_t at(const double *x, int n, double v) {
  pos_t p = {0, 0, 1};
  if (v > x[n - 1]) {
    p.scale = v / x[n - 1];
    v = x[n - 1];
  }
  p.i = kvsim__kseg(x, n, v, &p.w);
  if (n < 2)
    p.w = 0;
  return p;
}

/* m-curve of one (n, k) cell, linear in m, proportional past the end. */
static double along_m(const kvsim_kernels_t *k, const double *t, int in, int ik, double m) {
  const double *y = t + ((size_t)in * k->nk + ik) * k->nm;
  const kvsim__kcurve c = {k->nm, k->m, (double *)y};
  return kvsim__kcurve_at(&c, m);
}

double kvsim_kernels_gemm_us(const kvsim_kernels_t *k, kvsim_kgemm d, double m, double n, double kk) {
  if (!(m > 0) || d < 0 || d >= KVSIM_KGEMM_COUNT || !k->gemm[d])
    return 0;
  const double *t = k->gemm[d];
  const pos_t pn = at(k->n, k->nn, n), pk = at(k->k, k->nk, kk);
  const int n1 = k->nn > 1 ? pn.i + 1 : 0, k1 = k->nk > 1 ? pk.i + 1 : 0;
  const double a = along_m(k, t, pn.i, pk.i, m), b = along_m(k, t, pn.i, k1, m);
  const double c = along_m(k, t, n1, pk.i, m), e = along_m(k, t, n1, k1, m);
  const double lo = a + pk.w * (b - a), hi = c + pk.w * (e - c);
  return (lo + pn.w * (hi - lo)) * pn.scale * pk.scale;
}

/* Bilinear in a grid; past the batch axis proportional, past the length
 * axis proportional (decode) or with its square (prefill). */
static double grid_at(const kvsim__kgrid *g, double x, double y, bool prefill) {
  const pos_t px = at(g->x, g->nx, x), py = at(g->y, g->ny, y);
  const int x1 = g->nx > 1 ? px.i + 1 : 0, y1 = g->ny > 1 ? py.i + 1 : 0;
  const double *v = g->v;
  const double a = v[px.i * g->ny + py.i], b = v[px.i * g->ny + y1];
  const double c = v[x1 * g->ny + py.i], e = v[x1 * g->ny + y1];
  const double lo = a + py.w * (b - a), hi = c + py.w * (e - c);
  const double ys = prefill ? py.scale * py.scale : py.scale;
  return (lo + px.w * (hi - lo)) * px.scale * ys;
}

const kvsim__kattn *kvsim__kattn_find(const kvsim_kernels_t *k, bool prefill, bool fp8_kv, int heads, int kv_heads,
                                     int head_dim, double *scale) {
  const kvsim__kattn *list = prefill ? k->ctx : k->gen;
  const int n = prefill ? k->nctx : k->ngen;
  /* The nearest measured head shape: the KV dtype first, then the
   * distance in log heads, KV heads and head_dim. */
  const kvsim__kattn *best = NULL;
  double bd = INFINITY;
  for (int i = 0; i < n; i++) {
    const kvsim__kattn *a = &list[i];
    const double dist = (a->fp8_kv != fp8_kv ? 100.0 : 0.0) + fabs(log((double)heads / a->heads)) +
                        fabs(log((double)kv_heads / a->kv_heads)) + fabs(log((double)head_dim / a->head_dim));
    if (dist < bd) {
      bd = dist;
      best = a;
    }
  }
  /* Prefill is compute bound: its work scales with the query heads;
   * decode reads the cache: with the KV heads. Both with head_dim. */
  if (best)
    *scale = (prefill ? (double)heads / best->heads : (double)kv_heads / best->kv_heads) *
             ((double)head_dim / best->head_dim);
  return best;
}

double kvsim__kattn_at(const kvsim__kattn *a, bool prefill, double batch, double len) {
  if (!(batch > 0) || !(len > 0))
    return 0;
  return grid_at(&a->g, batch, len, prefill);
}

double kvsim_kernels_attn_us(const kvsim_kernels_t *k, bool prefill, bool fp8_kv, int heads, int kv_heads,
                             int head_dim, double batch, double len) {
  double scale = 1;
  const kvsim__kattn *a = kvsim__kattn_find(k, prefill, fp8_kv, heads, kv_heads, head_dim, &scale);
  if (!a)
    return KVSIM_ENOENT;
  return kvsim__kattn_at(a, prefill, batch, len) * scale;
}

/* A collective's curve for `op` nearest in GPU count, and the factor that
 * carries its bytes to num_gpus (the ring's 2 (n - 1) / n). */
const kvsim__kcoll *kvsim__kcoll_find(const kvsim_kernels_t *k, bool allreduce, const char *op, int num_gpus,
                                      double *scale) {
  const kvsim__kcoll *list = allreduce ? k->ar : k->nccl;
  const int n = allreduce ? k->nar : k->nnccl;
  const kvsim__kcoll *best = NULL;
  for (int i = 0; i < n; i++)
    if (!strcmp(list[i].op, op) &&
        (!best || abs(list[i].num_gpus - num_gpus) < abs(best->num_gpus - num_gpus)))
      best = &list[i];
  if (best) {
    const double g = num_gpus, b = best->num_gpus;
    *scale = (2.0 * (g - 1) / g) / (2.0 * (b - 1) / b);
  }
  return best;
}

double kvsim_kernels_allreduce_us(const kvsim_kernels_t *k, int num_gpus, double bytes, bool graph) {
  double s = 1;
  const kvsim__kcoll *c = kvsim__kcoll_find(k, true, graph ? "graph" : "eager", num_gpus, &s);
  return c ? kvsim__kcurve_at(&c->c, bytes * s) : KVSIM_ENOENT;
}

double kvsim_kernels_nccl_us(const kvsim_kernels_t *k, const char *op, int num_gpus, double bytes) {
  double s = 1;
  const kvsim__kcoll *c = kvsim__kcoll_find(k, false, op, num_gpus, &s);
  return c ? kvsim__kcurve_at(&c->c, bytes * s) : KVSIM_ENOENT;
}

const kvsim__kmoe *kvsim__kmoe_find(const kvsim_kernels_t *k, const char *dtype, int hidden, int inter, int topk,
                                   int experts, int tp, int ep) {
  const kvsim__kmoe *found = NULL;
  for (int i = 0; i < k->nmoe; i++) {
    const kvsim__kmoe *m = &k->moe[i];
    if (!strcmp(m->dtype, dtype) && m->hidden == hidden && m->inter == inter && m->topk == topk &&
        m->experts == experts && m->tp == tp && m->ep == ep && (!found || m->skewed))
      found = m;
  }
  return found;
}

double kvsim_kernels_moe_us(const kvsim_kernels_t *k, const char *dtype, int hidden, int inter, int topk,
                            int experts, int tp, int ep, double tokens) {
  const kvsim__kmoe *m = kvsim__kmoe_find(k, dtype, hidden, inter, topk, experts, tp, ep);
  if (!m)
    return KVSIM_ENOENT;
  return tokens > 0 ? kvsim__kcurve_at(&m->c, tokens) : 0;
}

const kvsim__kmla *kvsim__kmla_find(const kvsim_kernels_t *k, bool prefill, int gemm, bool fp8_kv, int heads,
                                   const int dims[6]) {
  for (int i = 0; i < k->nmla; i++) {
    const kvsim__kmla *t = &k->mla[i];
    if (t->prefill == prefill && t->gemm == gemm && t->fp8_kv == fp8_kv && t->heads == heads &&
        !memcmp(t->dims, dims, sizeof t->dims))
      return t;
  }
  return NULL;
}

double kvsim__kmla_at(const kvsim__kmla *t, double batch, double len) {
  if (!(batch > 0) || !(len > 0))
    return 0;
  return grid_at(&t->g, batch, len, t->prefill);
}
