/* The decision, REPORT.md's first line (kvsim/study.h
 * kvsim_compare_decision): a planner reads what to buy, for what, with
 * how much room at the band's slow edge, and why this one, before any
 * table. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "study/compare_int.h"
#include "study/md.h"

typedef struct out {
  char *buf;
  size_t cap, at;
  bool md;
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(o->buf + o->at, o->at < o->cap ? o->cap - o->at : 0, fmt, ap);
  va_end(ap);
  o->at += n > 0 ? (size_t)n : 0;
  if (o->at >= o->cap)
    o->at = o->cap ? o->cap - 1 : 0;
}

/* User text (a label) as given or escaped for Markdown. */
static void text(out_t *o, const char *s) {
  char esc[2 * sizeof ((kvsim_compare_t *)0)->cand[0].label];
  if (o->md)
    kvsim__md_escape(esc, sizeof esc, s);
  put(o, "%s", o->md ? esc : s);
}

static void num(out_t *o, double v, bool lower_bound) {
  if (isnan(v))
    put(o, "none");
  else
    put(o, "%s%.3g", lower_bound ? ">= " : "", v);
}

static void price(out_t *o, double per_hour) {
  /* GitHub pairs two '$' of one line into inline maths. */
  put(o, "%s$%.2f/h", o->md ? "\\" : "", per_hour);
}

static void what(out_t *o, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int i,
                 double replicas) {
  const kvsim_compare_row_t *r = &rows[i];
  double gpus = replicas * r->gpus_per_replica;
  put(o, "%.0f x (", replicas);
  text(o, c->cand[i].label);
  put(o, ") on %.0f GPU%s", gpus, gpus == 1 ? "" : "s");
  if (isfinite(r->cost_per_gpu_hour)) {
    put(o, " for ");
    price(o, r->cost_per_gpu_hour * gpus);
  }
}

static void none(out_t *o, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n) {
  int infeasible = 0;
  for (int i = 0; i < n; i++)
    infeasible += rows[i].rc == KVSIM_OK && rows[i].infeasible;
  put(o, "%sBuy none of the %d candidate%s%s: none meets %g req/s within the SLO", o->md ? "**" : "", n,
      n == 1 ? "" : "s", o->md ? "**" : "", c->target_rate);
  if (infeasible)
    put(o, "; %d cannot meet it at any load or only near zero load (each with the nearest change "
           "that can, below)",
        infeasible);
  put(o, ".");
}

/* Why the winner and not the runner-up (compare_int.h's criteria). */
static void why(out_t *o, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int best, int tie,
                int w) {
  const kvsim_compare_row_t *r = &rows[best];
  bool priced = isfinite(r->cost_per_hour);
  switch (w) {
  case -1:
    put(o, "; the only candidate that meets %g req/s within the SLO", c->target_rate);
    break;
  case 0:
    put(o, "; the only one that holds the SLO across the band");
    break;
  case 1:
    put(o, "; the %s that meets %g req/s", priced ? "cheapest" : "fewest GPUs", c->target_rate);
    break;
  case 2:
    put(o, "; tied on %s, it has the higher goodput per GPU", priced ? "cost" : "GPUs");
    break;
  case 3:
    put(o, "; tied on %s and goodput, it has the more headroom", priced ? "cost" : "GPUs");
    break;
  default:
    put(o, "; a tie with (");
    text(o, c->cand[tie].label);
    put(o, ") on %s, goodput and headroom: either will do", priced ? "cost" : "GPUs");
  }
  if (!kvsim__compare_robust(c, r))
    put(o, " (but it misses the SLO at the band's slow edge)");
}

/* The winner at each edge of the band, when another; the clause opens
 * once, so that two flips read "...: at its slow edge buy X; at its fast
 * edge buy Y". */
static void flips(out_t *o, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n, int best) {
  static const char *const edge[] = {"", "slow", "fast"};
  bool opened = false;
  for (int at = KVSIM__AT_SLOW; at <= KVSIM__AT_FAST; at++) {
    int e = kvsim__compare_best(c, rows, n, (kvsim__band_at)at, NULL, NULL);
    if (e < 0 || e == best)
      continue;
    put(o, "; %sat its %s edge buy ", opened ? "" : "the verdict flips inside the band: ", edge[at]);
    opened = true;
    what(o, c, rows, e, at == KVSIM__AT_SLOW ? rows[e].replicas_range[1] : rows[e].replicas_range[0]);
  }
}

void kvsim_compare_decision(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n, bool md,
                            char *buf, size_t cap) {
  out_t o = {buf, cap, 0, md};
  if (cap)
    buf[0] = '\0';
  int tie = -1, w = -1;
  int best = kvsim__compare_best(c, rows, n, KVSIM__AT_NOMINAL, &tie, &w);
  if (best < 0) {
    none(&o, c, rows, n);
    return;
  }
  const kvsim_compare_row_t *r = &rows[best];
  put(&o, "%sBuy ", md ? "**" : "");
  what(&o, c, rows, best, r->replicas);
  put(&o, "%s: goodput ", md ? "**" : "");
  num(&o, r->goodput, r->goodput_lower_bound[0]);
  put(&o, " req/s [");
  num(&o, r->goodput_range[0], r->goodput_lower_bound[1]);
  put(&o, ", ");
  num(&o, r->goodput_range[1], r->goodput_lower_bound[2]);
  put(&o, "]%s, ", r->replicas == 1 ? "" : " per replica");
  double h = kvsim__compare_headroom(c, r);
  if (isnan(h))
    put(&o, "no rate meets the SLO at the band's slow edge");
  else if (h >= 0)
    put(&o, "%s%.0f %% headroom at the slow edge", r->goodput_lower_bound[1] ? ">= " : "", 100 * h);
  else if (isfinite(r->replicas_range[1]))
    put(&o, "%.0f %% headroom at the slow edge (replicas there: %.0f)", 100 * h, r->replicas_range[1]);
  else
    put(&o, "%.0f %% headroom at the slow edge (no replica count tried meets there)", 100 * h);
  why(&o, c, rows, best, tie, w);
  flips(&o, c, rows, n, best);
  put(&o, ".");
}
