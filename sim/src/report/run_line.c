/* The one line `kvsim run` prints (kvsim/summary.h). */
#include <stdio.h>

#include "kvsim/summary.h"

/* "p50 0.0123 s [lo, hi]"; requests of one output token have no TPOT:
 * neither 0 s nor a range of nothing. */
static void tpot_text(const kvsim_summary_t *s, char *buf, size_t cap) {
  if (s->tpot.count == 0)
    snprintf(buf, cap, "- (no request had a second token)");
  else if (s->has_ranges)
    snprintf(buf, cap, "p50 %.4f s [%.4f, %.4f]", s->tpot.p50, s->tpot_range.p50.lo,
             s->tpot_range.p50.hi);
  else
    snprintf(buf, cap, "p50 %.4f s", s->tpot.p50);
}

void kvsim_summary_run_line(const kvsim_summary_t *s, const char *dir, char *buf, size_t cap) {
  char pm[64] = "", tp[64] = "", pre[48] = "", cal[160] = "";
  if (s->has_ranges) {
    snprintf(pm, sizeof pm, " [%.3f, %.3f]", s->ttft_range.p99.lo, s->ttft_range.p99.hi);
    snprintf(pre, sizeof pre, " [%.0f, %.0f]", s->preemptions_range.lo, s->preemptions_range.hi);
  } else if (s->has_uncertainty && s->uncertainty_ttft_p99_s > 0) {
    snprintf(pm, sizeof pm, " +/- %.3f s", s->uncertainty_ttft_p99_s);
  }
  /* Borrowed or spec-only coefficients are said on the line itself: its
   * figures rest on another GPU's fit. */
  const kvsim_calibration_t *c = &s->calibration;
  if (c->status != KVSIM_CAL_KERNELS)
    snprintf(cal, sizeof cal, "; %s has no kernel tables of its own: %s%s%s", c->gpu,
             kvsim_cal_status_name(c->status), c->borrowed_from[0] ? ", those of " : "", c->borrowed_from);
  /* With no request finished the percentiles are of nothing: 0.000 s
   * would read as instant service. */
  char lat[256];
  tpot_text(s, tp, sizeof tp);
  if (s->requests_finished > 0)
    snprintf(lat, sizeof lat, "TTFT p50 %.3f s, p99 %.3f s%s; TPOT %s", s->ttft.p50, s->ttft.p99,
             pm, tp);
  else
    snprintf(lat, sizeof lat, "no request finished: no latency figures");
  /* Requests still in flight at a cut: the latencies are of the finished
   * alone, too low for a run that left many behind. */
  char cut[96] = "";
  const long long open = (long long)(s->running_at_end + s->waiting_at_end);
  if (open > 0)
    snprintf(cut, sizeof cut, ", %lld unfinished at the end: latencies of the finished only", open);
  /* A disaggregated run: each side's peak and the wait for decode blocks
   * (what a full decode pool costs the prefill side). */
  char kv[160];
  const kvsim_disagg_stats_t *d = &s->disagg;
  if (s->disaggregated)
    snprintf(kv, sizeof kv, "KV peak prefill %.1f%%, decode %.1f%%; waited for decode blocks %.3f s mean",
             100 * d->prefill_kv_usage_peak, 100 * d->decode_kv_usage_peak,
             d->transfers ? d->handoff_wait_s_sum / (double)d->transfers : 0.0);
  else
    snprintf(kv, sizeof kv, "KV peak %.1f%%", 100 * s->kv_usage_peak);
  snprintf(buf, cap,
           "%s: %lld requests (%lld finished, %lld rejected%s) in %.1f s simulated; %s; %s; %lld %s%s%s -> "
           "%s/",
           s->name, (long long)s->requests_total, (long long)s->requests_finished,
           (long long)s->requests_rejected, cut, s->simulated_time_s, lat, kv,
           (long long)s->preemptions,
           s->preemptions_are_retractions ? "retractions" : "preemptions", pre, cal, dir);
}

bool kvsim_summary_steady_warning(const kvsim_summary_t *s, char *buf, size_t cap) {
  if (cap)
    buf[0] = '\0';
  if (s->steady.reached || s->requests_total == 0)
    return false;
  snprintf(buf, cap,
           "warning: %s: the workload is too short to reach steady state (%s): its latency figures "
           "(requests arriving in the middle 80%%, rule %s) may flatter it; run more requests",
           s->name, s->steady.why, KVSIM_STEADY_RULE);
  return true;
}
