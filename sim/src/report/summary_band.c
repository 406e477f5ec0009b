/* The summary's calibration provenance and the band's ranges
 * (kvsim/summary.h): what the GPU's coefficients rest on, and [lo, hi] of
 * every figure over the nominal run and the runs at the band's edges. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/summary.h"

static void set_uncertainty_from_band(kvsim_summary_t *s) {
  const kvsim_calibration_t *c = &s->calibration;
  const double e2e_rel = c->band_ttft_rel > c->band_tpot_rel ? c->band_ttft_rel : c->band_tpot_rel;
  s->has_uncertainty = true;
  /* NAN (null) where nothing finished: a band around no figure. */
  s->uncertainty_ttft_p99_s =
      s->ttft.count ? round(c->band_ttft_rel * s->ttft.p99 / 1e-9) * 1e-9 : NAN;
  s->uncertainty_tpot_p99_s =
      s->tpot.count ? round(c->band_tpot_rel * s->tpot.p99 / 1e-9) * 1e-9 : NAN;
  s->uncertainty_e2e_p99_s = s->e2e.count ? round(e2e_rel * s->e2e.p99 / 1e-9) * 1e-9 : NAN;
  snprintf(s->uncertainty_source, sizeof s->uncertainty_source,
           "the %s band (+/-%.1f%% TTFT, +/-%.1f%% TPOT on step time) times each p99; queueing "
           "left out (no edge runs)",
           kvsim_cal_status_name(c->status), 100 * c->band_ttft_rel, 100 * c->band_tpot_rel);
}

void kvsim_summary_set_calibration(kvsim_summary_t *s, const kvsim_gpu_t *gpu, bool moe) {
  kvsim_calibration_t *c = &s->calibration;
  memset(c, 0, sizeof *c);
  snprintf(c->gpu, sizeof c->gpu, "%s", gpu->name);
  c->status = gpu->perf.status;
  snprintf(c->source, sizeof c->source, "%s", gpu->perf.source);
  snprintf(c->kernels, sizeof c->kernels, "%s", gpu->perf.kernels);
  /* Borrowed tables name the GPU they were measured on. */
  if (c->status != KVSIM_CAL_KERNELS)
    snprintf(c->borrowed_from, sizeof c->borrowed_from, "%s", gpu->perf.kernels);
  c->moe = moe;
  kvsim_gpu_band_moe(&gpu->perf, moe, &c->band_ttft_rel, &c->band_tpot_rel);
  set_uncertainty_from_band(s);
}

static kvsim_range_t point(double v) {
  kvsim_range_t r = {v, v};
  return r;
}

/* A NAN end is a range with nothing in it yet. */
static void widen(kvsim_range_t *r, double v) {
  if (isnan(r->lo) || v < r->lo)
    r->lo = v;
  if (isnan(r->hi) || v > r->hi)
    r->hi = v;
}

/* A run with no finished request has no latency: its 0 s percentiles are
 * of nothing and must not pull a range down to instant service. Its range
 * starts empty (NAN, null in summary.json) and takes only the edge runs
 * that finished requests. */
static void latency_range_init(kvsim_latency_range_t *r, const kvsim_latency_t *l) {
  if (l->count == 0) {
    const kvsim_range_t none = {NAN, NAN};
    r->mean = r->p50 = r->p90 = r->p99 = r->max = none;
    return;
  }
  r->mean = point(l->mean);
  r->p50 = point(l->p50);
  r->p90 = point(l->p90);
  r->p99 = point(l->p99);
  r->max = point(l->max);
}

/* A run with no finished request has no latency to widen by. */
static void latency_range_widen(kvsim_latency_range_t *r, const kvsim_latency_t *l) {
  if (l->count == 0)
    return;
  widen(&r->mean, l->mean);
  widen(&r->p50, l->p50);
  widen(&r->p90, l->p90);
  widen(&r->p99, l->p99);
  widen(&r->max, l->max);
}

/* The share of a run's served requests (not rejected) still in flight
 * when it ended (an output.max_time_s cut): their latencies lie past the
 * run, so its statistics are of the finished alone, too low. 1 when it
 * finished nothing (all in flight, or all rejected). */
static double unfinished_share(const kvsim_summary_t *r) {
  const double open = (double)(r->running_at_end + r->waiting_at_end);
  const double served = (double)r->requests_finished + open;
  return r->requests_finished > 0 ? open / served : 1;
}

/* Opens the top of each statistic of r that the run with unfinished share
 * u does not bound: a quantile q once more than 1 - q of the requests are
 * unfinished (the p99 once 1 %), the mean and max once any is. The top is
 * +inf (null in summary.json), not the highest figure of the runs that
 * finished: that would claim the slow edge serves as fast as they do. A
 * range with nothing in it stays empty. */
static void latency_range_open(kvsim_latency_range_t *r, double u) {
  kvsim_range_t *all[] = {&r->mean, &r->p50, &r->p90, &r->p99, &r->max};
  const double q[] = {1, 0.50, 0.90, 0.99, 1};
  for (int k = 0; k < 5; k++)
    if (!isnan(all[k]->lo) && u > 1 - q[k])
      all[k]->hi = INFINITY;
}

/* Each statistic's top at least the band above its nominal figure. */
static void latency_range_hold_band(kvsim_latency_range_t *r, const kvsim_latency_t *l, double rel) {
  if (l->count == 0)
    return;
  kvsim_range_hold_band(&r->mean, l->mean, rel);
  kvsim_range_hold_band(&r->p50, l->p50, rel);
  kvsim_range_hold_band(&r->p90, l->p90, rel);
  kvsim_range_hold_band(&r->p99, l->p99, rel);
  kvsim_range_hold_band(&r->max, l->max, rel);
}

/* An E2E is its TTFT and its decode: its top holds the TTFT's band on the
 * TTFT part and the TPOT's on the rest, statistic by statistic (exact for
 * the mean; a floor for the quantiles), so that an E2E range never tops
 * out below the TTFT range it contains. */
static void e2e_range_hold_band(kvsim_latency_range_t *r, const kvsim_latency_t *ttft, const kvsim_latency_t *e2e,
                                double ttft_rel, double tpot_rel) {
  if (e2e->count == 0 || ttft->count == 0 || !(ttft_rel < 1) || !(tpot_rel < 1))
    return;
  kvsim_range_t *all[] = {&r->mean, &r->p50, &r->p90, &r->p99, &r->max};
  const double t[] = {ttft->mean, ttft->p50, ttft->p90, ttft->p99, ttft->max};
  const double e[] = {e2e->mean, e2e->p50, e2e->p90, e2e->p99, e2e->max};
  for (int k = 0; k < 5; k++) {
    const double top = kvsim_e2e_band_top(t[k], e[k], ttft_rel, tpot_rel);
    if (!isnan(all[k]->lo) && top > all[k]->hi)
      all[k]->hi = top;
  }
}

/* NAN when the nominal run has no figure (nothing finished) or the range
 * is empty. */
static double half_width(const kvsim_range_t *r, const kvsim_latency_t *nominal, double v) {
  if (nominal->count == 0 || isnan(r->lo))
    return NAN;
  double up = r->hi - v, down = v - r->lo;
  return up > down ? up : down;
}

void kvsim_summary_merge_ranges(kvsim_summary_t *s, const kvsim_summary_t *edges, int n,
                                const kvsim_band_edge_t *lo, const kvsim_band_edge_t *hi) {
  s->has_ranges = true;
  s->band_scale_lo = lo->step;
  s->band_scale_hi = hi->step;
  s->band_prefill_scale_lo = lo->prefill;
  s->band_prefill_scale_hi = hi->prefill;
  latency_range_init(&s->ttft_range, &s->ttft);
  latency_range_init(&s->tpot_range, &s->tpot);
  latency_range_init(&s->e2e_range, &s->e2e);
  latency_range_init(&s->queue_range, &s->queue);
  s->requests_per_s_range = point(s->requests_per_s);
  s->output_tokens_per_s_range = point(s->output_tokens_per_s);
  s->prompt_tokens_per_s_range = point(s->prompt_tokens_per_s);
  s->total_tokens_per_s_range = point(s->total_tokens_per_s);
  s->kv_usage_peak_range = point(s->kv_usage_peak);
  s->preemptions_range = point((double)s->preemptions);
  s->requests_preempted_range = point((double)s->requests_preempted);
  s->rejected_range = point((double)s->requests_rejected);
  s->slo_attainment_range = point(s->slo_attainment);
  for (int i = 0; i < n; i++) {
    const kvsim_summary_t *e = &edges[i];
    latency_range_widen(&s->ttft_range, &e->ttft);
    latency_range_widen(&s->tpot_range, &e->tpot);
    latency_range_widen(&s->e2e_range, &e->e2e);
    latency_range_widen(&s->queue_range, &e->queue);
    widen(&s->requests_per_s_range, e->requests_per_s);
    widen(&s->output_tokens_per_s_range, e->output_tokens_per_s);
    widen(&s->prompt_tokens_per_s_range, e->prompt_tokens_per_s);
    widen(&s->total_tokens_per_s_range, e->total_tokens_per_s);
    widen(&s->kv_usage_peak_range, e->kv_usage_peak);
    widen(&s->preemptions_range, (double)e->preemptions);
    widen(&s->requests_preempted_range, (double)e->requests_preempted);
    widen(&s->rejected_range, (double)e->requests_rejected);
    widen(&s->slo_attainment_range, e->slo_attainment);
  }
  latency_range_hold_band(&s->ttft_range, &s->ttft, s->calibration.band_ttft_rel);
  latency_range_hold_band(&s->tpot_range, &s->tpot, s->calibration.band_tpot_rel);
  e2e_range_hold_band(&s->e2e_range, &s->ttft, &s->e2e, s->calibration.band_ttft_rel,
                      s->calibration.band_tpot_rel);
  /* The largest unfinished share over the three runs decides which tops
   * are open. */
  double u = unfinished_share(s);
  for (int i = 0; i < n; i++) {
    const double ui = unfinished_share(&edges[i]);
    u = ui > u ? ui : u;
  }
  latency_range_open(&s->ttft_range, u);
  latency_range_open(&s->tpot_range, u);
  latency_range_open(&s->e2e_range, u);
  latency_range_open(&s->queue_range, u);
  const bool open = isinf(s->ttft_range.mean.hi) || isinf(s->tpot_range.mean.hi) ||
                    isinf(s->e2e_range.mean.hi); /* the mean opens first */
  s->has_uncertainty = true;
  s->uncertainty_ttft_p99_s = half_width(&s->ttft_range.p99, &s->ttft, s->ttft.p99);
  s->uncertainty_tpot_p99_s = half_width(&s->tpot_range.p99, &s->tpot, s->tpot.p99);
  s->uncertainty_e2e_p99_s = half_width(&s->e2e_range.p99, &s->e2e, s->e2e.p99);
  snprintf(s->uncertainty_source, sizeof s->uncertainty_source,
           "the larger distance from each p99 to an end of its p99_range (runs at step-time "
           "scales %.4g and %.4g, prefill %.4g and %.4g, the %s band; TTFT and TPOT tops at least "
           "the nominal / (1 - %.2f) and / (1 - %.2f))%s",
           lo->step, hi->step, lo->prefill, hi->prefill,
           kvsim_cal_status_name(s->calibration.status), s->calibration.band_ttft_rel,
           s->calibration.band_tpot_rel,
           open ? "; a run ended with requests unfinished, so the latency ranges it does not bound "
                  "have no top (null)"
                : "");
}
