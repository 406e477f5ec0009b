/* What the compare files share inside the study room: the feasibility
 * probe a candidate takes before its searches (compare_feasible.c) and
 * the ranking its answer rests on (compare_rank.c). */
#ifndef KVSIM_STUDY_COMPARE_INT_H
#define KVSIM_STUDY_COMPARE_INT_H

#include <stdbool.h>

#include "kvsim/study.h"

/* An unloaded p99 this close to its target (or past it) meets the SLO
 * only near zero load: its goodput is a sliver of what it could carry. */
#define KVSIM__UNLOADED_MARGIN 0.9

/* The candidate's scenario sc measured unloaded (c->target_rate / 1000,
 * at most 200 requests, no output.max_time_s cut): its p99s into r, and
 * r->infeasible when one of them is at or within 10 % of its target. Then
 * the nearest changes (TP x 2, FP8 weights, the next larger GPU of the
 * study), each measured unloaded the same way, go into r->feasibility.
 * goodput is the candidate's (NAN when not searched): the line says
 * below which rate it meets. Errors: KVSIM_ENOMEM, KVSIM_EIO; a probe
 * that does not fit or fails is a figure of the line, not an error. */
int kvsim__compare_probe(const kvsim_compare_t *c, const kvsim_scenario_t *sc,
                         kvsim_compare_row_t *r, kvsim_err *err);
/* The probe's line, once the goodput is known: "meets p99 TTFT 1 s only
 * below 0.0134 req/s (unloaded p99 TTFT 0.99 s); TP4 unloaded: 0.53 s". */
void kvsim__compare_feasibility_line(const kvsim_compare_t *c, kvsim_compare_row_t *r);

/* Met the target with a replica count (and is not infeasible). */
bool kvsim__compare_meets(const kvsim_compare_row_t *r);
/* Meets with every step at the band's slow edge, each target the study
 * gives. */
bool kvsim__compare_robust(const kvsim_compare_t *c, const kvsim_compare_row_t *r);

/* The band's point a ranking is judged at. */
typedef enum { KVSIM__AT_NOMINAL = 0, KVSIM__AT_SLOW, KVSIM__AT_FAST } kvsim__band_at;

/* The candidate to buy at that point of the band, -1 when none meets
 * there: holding the SLO across the band first (nominal only), then the
 * lower cost (fewer GPUs without prices), then the higher goodput per
 * GPU, then the more headroom at the slow edge; never the study's order.
 * *tie (may be NULL): a candidate equal to it on all of these, else -1
 * (the two are then ordered by label, and the answer says it is a tie);
 * *why: which criterion decided against the runner-up (0 robust, 1 cost,
 * 2 goodput, 3 headroom, 4 tie; -1 when alone). */
int kvsim__compare_best(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n,
                        kvsim__band_at at, int *tie, int *why);
/* replicas x goodput at the slow edge over the target, minus 1 (NAN when
 * nothing met at the slow edge). */
double kvsim__compare_headroom(const kvsim_compare_t *c, const kvsim_compare_row_t *r);

#endif
