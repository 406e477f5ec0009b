/* The diagnosis of a disaggregated run (report/diagnosis.h): which of its
 * three resources bounds TTFT. A request's TTFT is its queue on the
 * prefill side, the prefill, the wait for decode blocks (its KV held on
 * the prefill side meanwhile: vLLM's connector keeps the blocks until the
 * pull, SGLang's bootstrap queues before the prefill), the transfer and
 * the decode side's first step (engine/disagg_run.c). The three waits
 * name the resource: the prefill pool's instances, the decode pool's
 * blocks, the link. The advice is one more instance of the side that
 * bounds, which the study room re-runs (study/advice.c). */
#include <math.h>
#include <stdio.h>

#include "kvsim/params.h"
#include "report/diagnosis.h"

typedef struct parts {
  double ttft, queue, wait, xfer, rest; /* means, s */
  double busy_p, busy_d, busy_link;     /* shares of the run's span, 0..1 */
} parts_t;

/* The mean TTFT's parts and each resource's busy share. The queue is the
 * steady window's mean, the hand-off's means are over every transfer. */
static parts_t parts_of(const kvsim_summary_t *s) {
  const kvsim_disagg_stats_t *d = &s->disagg;
  parts_t p = {0};
  double n = d->transfers > 0 ? (double)d->transfers : NAN, span = s->simulated_time_s;
  p.ttft = s->ttft.mean;
  p.queue = s->queue.count ? s->queue.mean : 0;
  p.wait = d->transfers > 0 ? d->handoff_wait_s_sum / n : 0;
  /* The link time TTFT waits for after the prefill: a chunked request's
   * earlier sends overlap its later chunks (kvsim/disagg.h). */
  p.xfer = d->transfers > 0 ? d->transfer_exposed_s_sum / n : 0;
  p.rest = fmax(0, p.ttft - p.queue - p.wait - p.xfer);
  if (span > 0) {
    p.busy_p = d->prefill_replicas > 0 ? d->prefill_busy_s / (span * d->prefill_replicas) : 0;
    p.busy_d = d->decode_replicas > 0 ? d->decode_busy_s / (span * d->decode_replicas) : 0;
    /* A transfer holds one prefill and one decode instance's link: the
     * fewer of them carry every transfer. */
    int32_t lanes =
        d->prefill_replicas < d->decode_replicas ? d->prefill_replicas : d->decode_replicas;
    p.busy_link = lanes > 0 ? d->transfer_s_sum / (span * lanes) : 0;
  }
  return p;
}

static void advise_side(kvsim_diagnosis_t *d, kvsim_disagg_side side, int32_t n) {
  kvsim_advice_t *a = kvsim__diag_advise(
      d, side == KVSIM_SIDE_DECODE ? KVSIM_ADVICE_DECODE_REPLICAS : KVSIM_ADVICE_PREFILL_REPLICAS,
      n + 1);
  const char *name = side == KVSIM_SIDE_DECODE ? "decode" : "prefill";
  if (a) {
    snprintf(a->label, sizeof a->label, "one more %s instance (%d -> %d)", name, n, n + 1);
    snprintf(a->change, sizeof a->change, "disaggregation.%s.replicas=%d", name, n + 1);
  }
}

void kvsim__diagnose_disagg(const kvsim__diag_input_t *in, kvsim_summary_t *s) {
  (void)in;
  if (!s->disaggregated || s->requests_finished == 0 || !(s->ttft.mean > 0))
    return;
  const kvsim_disagg_stats_t *ds = &s->disagg;
  parts_t p = parts_of(s);
  /* The largest wait bounds, when it is a share of TTFT worth naming. */
  const double w[3] = {p.queue, p.wait, p.xfer};
  int k = 0;
  for (int i = 1; i < 3; i++)
    if (w[i] > w[k])
      k = i;
  /* A saturated link backs everything up behind it; a prefill queue
   * behind a full prefill pool whose instances are mostly idle is
   * back-pressure: its blocks hold KV waiting to leave, for decode blocks
   * or for the link. */
  bool backpressure = false, saturated = p.busy_link >= KVSIM__DIAG_DISAGG_LINK_BUSY;
  if (saturated) {
    k = 2;
  } else if (k == 0 && ds->prefill_kv_usage_peak >= 0.99 && p.busy_p < 0.6) {
    k = p.wait >= p.xfer ? 1 : 2;
    backpressure = true;
  }
  double share = (saturated      ? p.queue + p.wait + p.xfer
                  : backpressure ? p.queue + w[k]
                                 : w[k]) /
                 p.ttft;
  static const char *const code[3] = {"disagg_prefill_bound", "disagg_decode_pool_bound",
                                      "disagg_link_bound"};
  static const char *const what[3] = {
      "the prefill pool bounds TTFT: requests queue for a prefill instance",
      "the decode pool bounds TTFT: prompts hold their KV on the prefill side waiting for decode "
      "blocks",
      "the link bounds TTFT: its transfers are the bottleneck (set disaggregation.link: a faster "
      "link, or NVLink within a node)"};
  char head[300];
  if (share < KVSIM__DIAG_DISAGG_PART)
    snprintf(head, sizeof head, "nothing queues: TTFT is the prefill and the first decode step");
  else
    snprintf(head, sizeof head, "%s%s", what[k],
             backpressure ? " (the prefill queue is back-pressure: the prefill pool is full of KV "
                            "waiting to leave)"
                          : "");
  kvsim_diagnosis_t *d = kvsim__diag_add(
      s, share < KVSIM__DIAG_DISAGG_PART ? "disagg_unbound" : code[k],
      share >= KVSIM__DIAG_DISAGG_WARN ? "warning" : "info",
      "disaggregated (%dP:%dD): %s. Mean TTFT %.3g s = prefill queue %.3g s + prefill and the "
      "decode side's first step (with its own queue) %.3g s + wait for decode blocks %.3g s + "
      "transfer %.3g s; prefill instances busy "
      "%.0f%%, decode instances %.0f%%, link %.1f%%; KV peak prefill %.0f%%, decode %.0f%%; %lld "
      "preemptions.",
      ds->prefill_replicas, ds->decode_replicas, head, p.ttft, p.queue, p.rest, p.wait, p.xfer,
      100 * p.busy_p, 100 * p.busy_d, 100 * p.busy_link, 100 * ds->prefill_kv_usage_peak,
      100 * ds->decode_kv_usage_peak, (long long)s->preemptions);
  if (share < KVSIM__DIAG_DISAGG_PART)
    return;
  /* A full decode pool that preempts bounds TPOT too, whatever bounds
   * TTFT: its advice goes with the prefill side's. */
  bool decode_full = ds->decode_kv_usage_peak >= 0.99 && s->preemptions > 0;
  if (k == 0)
    advise_side(d, KVSIM_SIDE_PREFILL, ds->prefill_replicas);
  if (k == 1 || (k == 0 && decode_full)) {
    advise_side(d, KVSIM_SIDE_DECODE, ds->decode_replicas);
    kvsim__diag_advise_fp8(d, s); /* both sides' cache: twice the decode pool's tokens */
  }
  /* The link has no typed change: its bandwidth is the deployment's
   * (disaggregation.link), which the message names. */
}
