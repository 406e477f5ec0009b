/* Disaggregated deployments inside the engine room: the scenario block's
 * parser (disagg_cfg.c) and the run loop (disagg_run.c). */
#ifndef KVSIM_ENGINE_DISAGG_H
#define KVSIM_ENGINE_DISAGG_H

#include "kvsim/disagg.h"
#include "kvsim/engine.h"
#include "kvsim/scenario.h"

/* Reads root's "disaggregation" block into sc->disagg (enabled false
 * without one): keys, flow, link and its bounds. KVSIM_EINVAL naming the
 * key. */
int kvsim__disagg_parse(const cJSON *root, kvsim_scenario_t *sc, const char *where, kvsim_err *err);
/* The link's default bandwidth (kvsim_xfer_link_defaults) for sc->gpu,
 * unless the block gave link.bandwidth_GBps: what reading the block again
 * with a new GPU would give (latency, flow and the rest do not follow
 * the GPU). */
void kvsim__disagg_follow_gpu(kvsim_scenario_t *sc);
/* The sides (sides.c). kvsim__sides_parse reads both from root (the
 * scenario's tree, kept until it returns) once sc itself is parsed: each
 * the scenario with the side's keys laid over it, through the scenario
 * parser, then checked as kvsim_scenario_disagg_side checks it; sc owns
 * them (sc->sides) also on error. kvsim__disagg_check refuses the scenario
 * keys a disaggregated run does not apply and checks both sides again (a
 * new GPU). */
int kvsim__sides_parse(kvsim_scenario_t *sc, const cJSON *root, const char *where, kvsim_err *err);
int kvsim__disagg_check(const kvsim_scenario_t *sc, const char *where, kvsim_err *err);
/* Refuses hardware.replicas and admission limits on a disaggregated
 * scenario (`where` names it). */
int kvsim__disagg_check_keys(const kvsim_scenario_t *sc, const char *where, kvsim_err *err);
void kvsim__sides_free(kvsim_scenario_t *sc);
/* dst->sides as a deep copy of src's (NULL when src has none); KVSIM_ENOMEM. */
int kvsim__sides_copy(const kvsim_scenario_t *src, kvsim_scenario_t *dst, kvsim_err *err);
/* The sides of sc that did not give registry row `row` (hardware.gpu,
 * engine.max_num_seqs, ...) in their own block, one per call, for a typed
 * override to set it on them too: *i starts at 0 and is the next side's
 * index after the call; NULL after the last (or without sides). */
kvsim_scenario_t *kvsim__sides_next(kvsim_scenario_t *sc, int row, int *i);
/* Side `side` of sc was set engine key row `row` by an override and its
 * profile does not read it: building it is then the error parsing it with
 * the key is (kvsim_sched_check_key). The first such key is kept. */
void kvsim__sides_refuse(kvsim_scenario_t *sc, int side, int row);
/* For summary.json's config: side `side` of sc as parsed (NULL without
 * sides), and its engine keys given (not null) as registry rows, in the
 * order given (*n of them). */
const kvsim_scenario_t *kvsim__sides_get(const kvsim_scenario_t *sc, int side);
const int16_t *kvsim__sides_engine_keys(const kvsim_scenario_t *sc, int side, int *n);
/* kvsim_run for a scenario with a disaggregation block. */
int kvsim__disagg_run(const kvsim_scenario_t *sc, const kvsim_run_opts_t *opts, const kvsim_sink_t *sink,
                      kvsim_run_stats_t *stats, kvsim_err *err);

#endif
