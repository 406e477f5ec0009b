/* The one line `kvsim run` prints (kvsim/summary.h). */
#include <stdio.h>

#include "kvsim/summary.h"

void kvsim_summary_run_line(const kvsim_summary_t *s, const char *dir, char *buf, size_t cap) {
  char pm[64] = "", tp[48] = "", pre[48] = "", cal[160] = "";
  if (s->has_ranges) {
    snprintf(pm, sizeof pm, " [%.3f, %.3f]", s->ttft_range.p99.lo, s->ttft_range.p99.hi);
    snprintf(tp, sizeof tp, " [%.4f, %.4f]", s->tpot_range.p50.lo, s->tpot_range.p50.hi);
    snprintf(pre, sizeof pre, " [%.0f, %.0f]", s->preemptions_range.lo, s->preemptions_range.hi);
  } else if (s->has_uncertainty && s->uncertainty_ttft_p99_s > 0) {
    snprintf(pm, sizeof pm, " +/- %.3f s", s->uncertainty_ttft_p99_s);
  }
  /* Borrowed or spec-only coefficients are said on the line itself: its
   * figures rest on another GPU's fit. */
  const kvsim_calibration_t *c = &s->calibration;
  if (c->status != KVSIM_CAL_FITTED)
    snprintf(cal, sizeof cal, "; %s not fitted: %s coefficients%s%s", c->gpu,
             kvsim_cal_status_name(c->status), c->borrowed_from[0] ? " of " : "", c->borrowed_from);
  /* With no request finished the percentiles are of nothing: 0.000 s
   * would read as instant service. */
  char lat[256];
  if (s->requests_finished > 0)
    snprintf(lat, sizeof lat, "TTFT p50 %.3f s, p99 %.3f s%s; TPOT p50 %.4f s%s", s->ttft.p50,
             s->ttft.p99, pm, s->tpot.p50, tp);
  else
    snprintf(lat, sizeof lat, "no request finished: no latency figures");
  snprintf(buf, cap,
           "%s: %lld requests (%lld finished, %lld rejected) in %.1f s simulated; %s; KV peak "
           "%.1f%%; %lld %s%s%s -> "
           "%s/",
           s->name, (long long)s->requests_total, (long long)s->requests_finished,
           (long long)s->requests_rejected, s->simulated_time_s, lat, 100 * s->kv_usage_peak,
           (long long)s->preemptions,
           s->preemptions_are_retractions ? "retractions" : "preemptions", pre, cal, dir);
}
