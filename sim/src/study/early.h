/* A search point's run that stops as soon as its SLO verdict is decided
 * (study/early.c). Internal to the study room.
 *
 * Only a miss is decided early: a quantile target is missed once enough
 * requests of the run's steady window finished past its limit that the
 * window's quantile is past it whatever the rest do. The window is the
 * one the full run computes (kvsim/steady.h, arrivals-10%), known before
 * the run from the workload's arrivals, read once; the count needed is
 * the largest the window's sample count allows. So a run stopped early
 * gives exactly the verdict the full run gives; its figures are not the
 * full run's and are not reported (the point says it stopped early). */
#ifndef KVSIM_STUDY_EARLY_H
#define KVSIM_STUDY_EARLY_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/engine.h"
#include "kvsim/steady.h"
#include "kvsim/study.h"

/* Windows larger than this are not decided early: past it the run's
 * quantiles come from a histogram (kvsim/stats.h KVSIM_DIST_EXACT_MAX),
 * whose bucket value the count rule does not bound. */
#define KVSIM__EARLY_MAX_WINDOW 65536

typedef struct kvsim__early {
  bool active;                        /* the rule applies to this run */
  bool decided;                       /* a target is missed whatever the rest do */
  int ntargets;
  kvsim_metric metric[KVSIM_SLO_MAX_TARGETS];
  double limit_s[KVSIM_SLO_MAX_TARGETS];
  int64_t need[KVSIM_SLO_MAX_TARGETS]; /* past the limit needed; 0: never decided */
  int64_t over[KVSIM_SLO_MAX_TARGETS]; /* window requests finished past it so far */
  int missed;                          /* the target decided (when decided) */
  int64_t finished;                    /* requests finished when decided */
  kvsim_steady_t window;
  int64_t first, last;                 /* the arrivals read before the run */
  kvsim_sink_t inner;                  /* the run's own sink, fed every record */
} kvsim__early_t;

/* Requests past a limit that decide a quantile q (0 < q < 1) missed over
 * any sample of at most `window` values: the largest n - i(n), n <=
 * window, with i(n) = floor(q (n - 1)) the rank GSL's quantile starts
 * from (kvsim_dist_quantile). */
int64_t kvsim__early_need(int64_t window, double q);

/* The rule over known arrivals (any order; n of them) for the targets:
 * quantile targets only (a mean is never decided early). e->active false
 * when nothing can be decided. */
int kvsim__early_init_arrivals(kvsim__early_t *e, const int64_t *arrival_ns, int64_t n,
                               const kvsim_slo_target_t *t, int nt);

/* The rule for a run of sc: its workload's arrivals read first. Not
 * active (and KVSIM_OK) for a workload whose arrivals depend on the run
 * (closed loop, sessions), one cut by output.max_time_s, or a window too
 * large; < 0 only for the workload's own errors or running out of memory. */
int kvsim__early_init(kvsim__early_t *e, const kvsim_scenario_t *sc, const kvsim_slo_target_t *t,
                      int nt, kvsim_err *err);

/* A request that left the run: true once a target is decided missed. */
bool kvsim__early_request(kvsim__early_t *e, const kvsim_request_t *r);

/* A sink that feeds `inner` and the rule, and ends the run (a negative
 * return) once decided. e must outlive the run. */
kvsim_sink_t kvsim__early_sink(kvsim__early_t *e, kvsim_sink_t inner);

/* What stopped the run, for a point's note ("stopped early: ..."). */
void kvsim__early_note(const kvsim__early_t *e, char *buf, size_t cap);

#endif
