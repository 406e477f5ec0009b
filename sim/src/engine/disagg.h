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
/* Builds both sides once (sc->resolved set), so that a bad side is an
 * error when the scenario is read, and refuses the scenario keys a
 * disaggregated run does not apply. */
int kvsim__disagg_check(const kvsim_scenario_t *sc, const char *where, kvsim_err *err);
/* kvsim_run for a scenario with a disaggregation block. */
int kvsim__disagg_run(const kvsim_scenario_t *sc, const kvsim_run_opts_t *opts, const kvsim_sink_t *sink,
                      kvsim_run_stats_t *stats, kvsim_err *err);

#endif
