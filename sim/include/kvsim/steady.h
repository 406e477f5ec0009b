/* The steady part of a run: which requests its latency figures count.
 *
 * A run starts with an empty engine (the first requests meet no batch and
 * no queue) and ends with a drain (after the last arrival the batch only
 * shrinks, so the last requests decode faster). Both ends flatter the
 * latencies of a short run. The rule ("arrivals-10%"): order the requests
 * by arrival and drop the first and the last 10 % of them; the latency
 * figures and the SLO of a run are those of the requests in between.
 *
 * The window is judged too short to be steady when either
 *  - the warm-up it drops spans less than KVSIM_STEADY_WARMUP_E2E times
 *    the kept requests' mean E2E latency W: by Little's law the batch
 *    holds rate x W in steady state, and from an empty engine it fills as
 *    1 - exp(-t / W) (an M/G/infinity system's transient), so only after
 *    3 W is it within 5 % of that level; or
 *  - fewer than KVSIM_STEADY_MIN_REQUESTS requests finished inside it: a
 *    p99 then rests on fewer than 10 requests above it. */
#ifndef KVSIM_STEADY_H
#define KVSIM_STEADY_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KVSIM_STEADY_RULE "arrivals-10%"
#define KVSIM_STEADY_TRIM 0.10          /* fraction of arrivals dropped at each end */
#define KVSIM_STEADY_MIN_REQUESTS 1000
#define KVSIM_STEADY_WARMUP_E2E 3.0     /* warm-up wanted, in mean E2E latencies */  /* finished in the window for a p99 of >= 10 tail requests */

typedef struct kvsim_steady {
  int64_t arrivals;         /* requests that arrived */
  int64_t warmup, drain;    /* of them, dropped at the start and at the end */
  int64_t start_ns, end_ns; /* arrivals kept: start_ns <= arrival <= end_ns */
  double warmup_s;          /* from the first arrival to start_ns */
  int64_t finished;         /* requests finished inside the window (kvsim_steady_judge) */
  double e2e_mean_s;        /* their mean E2E latency */
  bool reached;             /* the window is long enough to call steady */
  char why[200];            /* when not reached: why, in one sentence */
} kvsim_steady_t;

/* The window over n arrival times in ns (any order; not modified): drops
 * floor(n x KVSIM_STEADY_TRIM) at each end. Requests that share the
 * arrival time at an edge are all kept. 0, or KVSIM_ENOMEM. */
int kvsim_steady_window(const int64_t *arrival_ns, int64_t n, kvsim_steady_t *out);

/* Arrivals read in passes, for runs whose requests do not all stay in
 * memory: rewind starts a pass (0, or a negative code), next gives the next
 * arrival (1), or 0 at the end of the pass, or a negative code. */
typedef struct kvsim_steady_reader {
  int (*rewind)(void *ctx);
  int (*next)(void *ctx, int64_t *arrival_ns);
  void *ctx;
} kvsim_steady_reader_t;

/* kvsim_steady_window over n arrivals read through r, first and last
 * being the smallest and largest: the same window in at most six passes
 * and 1 MiB, whatever n (a radix selection of the two edges). Errors:
 * KVSIM_ENOMEM, or the reader's code. */
int kvsim_steady_window_stream(const kvsim_steady_reader_t *r, int64_t n, int64_t first,
                               int64_t last, kvsim_steady_t *out);

/* Whether a request arriving at arrival_ns counts. */
static inline bool kvsim_steady_contains(const kvsim_steady_t *s, int64_t arrival_ns) {
  return s->arrivals > 0 && arrival_ns >= s->start_ns && arrival_ns <= s->end_ns;
}

/* Sets finished, e2e_mean_s, reached and why from what finished inside the
 * window (e2e_mean_s ignored when finished is 0). */
void kvsim_steady_judge(kvsim_steady_t *s, int64_t finished, double e2e_mean_s);

#ifdef __cplusplus
}
#endif

#endif
