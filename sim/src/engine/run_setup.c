/* The aggregated loop's setup and teardown (run_state.h): the resolved
 * configuration and plan, the step models (the drafter's too), the
 * replicas and the router's load rows, the speculative-decoding
 * generator and the workload's source. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "engine/budget.h"
#include "engine/run_state.h"
#include "kvsim/spec.h"

/* Speculative decoding: the drafter's step model on its own config (an
 * EAGLE head: its decoder layer and lm_head; MTP: the target's layer kind;
 * a draft model: all of it) at the target's TP, unquantized
 * (SpeculativeConfig.quantization defaults to None); and one generator for
 * the accepted-token draws, seeded from the scenario's seed. It is a
 * stream of its own rather than the workload's, so that a scenario draws
 * the same requests with and without speculation. */
static int setup_spec(kvsim__run_t *r) {
  const kvsim_scenario_t *sc = r->sc;
  if (r->res.sched.num_spec_tokens <= 0)
    return KVSIM_OK;
  r->spec_rng = gsl_rng_alloc(gsl_rng_mt19937);
  if (!r->spec_rng)
    return kvsim_err_set(r->err, KVSIM_ENOMEM,
                         "out of memory for the speculative-decoding generator");
  /* A fixed offset keeps it apart from the workload's mt19937 on the same seed. */
  gsl_rng_set(r->spec_rng, (unsigned long)(sc->seed ^ UINT64_C(0x5bd1e995)));
  for (int32_t i = 0; i < r->nrep; i++)
    r->reps[i].sched->spec_rng = r->spec_rng;
  kvsim_model_t draft;
  kvsim_err scratch;
  if (kvsim_spec_draft_model(&sc->model, &r->plan.p.spec, &draft, &scratch) < 0)
    return KVSIM_OK; /* ngram: no drafter on the GPU */
  /* An EAGLE-3 head's lm_head is its own, over draft_vocab_size tokens
   * (llama_eagle3.py: ParallelLMHead(draft_vocab_size, hidden)). */
  if (r->plan.p.spec.method == KVSIM_SPEC_EAGLE3 && draft.draft_vocab_size > 0)
    draft.vocab_size = draft.draft_vocab_size;
  kvsim_plan_t dpl = r->plan;
  dpl.p.quantization[0] = 0;
  int rc = kvsim_perf_init(&r->draft_perf, &draft, &sc->gpu, &dpl, r->err);
  if (rc < 0)
    return kvsim_err_prefix(r->err, "the drafter's step model");
  r->has_draft = true;
  return KVSIM_OK;
}

/* The load rows the router tracks (route), for routers that read them. */
static int setup_loads(kvsim__run_t *r) {
  if (!kvsim__router_needs_load(&r->router))
    return KVSIM_OK;
  for (int32_t i = 0; i < r->nrep; i++)
    r->loads[i] = kvsim__run_load_of(&r->reps[i]);
  r->load_stale = kvsim__calloc((size_t)r->nrep, sizeof *r->load_stale);
  r->stale = kvsim__malloc((size_t)r->nrep * sizeof *r->stale);
  if (!r->load_stale || !r->stale)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "out of memory for %d replicas' loads", r->nrep);
  return kvsim__router_track(&r->router, r->loads, r->err);
}

/* given: the caller's resolved configuration (no plan computed), or NULL. */
int kvsim__run_setup(kvsim__run_t *r, const kvsim_resolved_t *given) {
  const kvsim_scenario_t *sc = r->sc;
  kvsim_err *err = r->err;
  int rc = KVSIM_OK;
  if (given)
    r->res = *given;
  else if ((rc = kvsim_scenario_resolve(sc, &r->res, err)) < 0)
    return rc;
  r->plan = r->res.plan;
  r->st->resolved = r->res;
  r->st->plan = r->plan;
  r->pool_usable = r->res.pool_usable;
  r->st->pool_blocks = r->pool_usable;
  if ((rc = kvsim_perf_init(&r->perf, &sc->model, &sc->gpu, &r->plan, err)) < 0)
    return rc;
  if (sc->quant_step_factor != 1.0)
    r->perf.quant_step_factor = sc->quant_step_factor;
  r->window = sc->model.sliding_window;
  r->nrep = sc->replicas;
  if ((rc = kvsim__budget_check_replicas(sc, &r->res, err)) < 0)
    return rc;
  r->fixed_bytes = kvsim__budget_replicas_bytes(sc, &r->res);
  r->lockstep = r->plan.p.ep > 1 && r->nrep > 1;
  r->reps = kvsim__calloc((size_t)r->nrep, sizeof *r->reps);
  r->loads = kvsim__calloc((size_t)r->nrep, sizeof *r->loads);
  if (!r->reps || !r->loads)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %d replicas", r->nrep);
  if ((rc = kvsim__router_init(&r->router, sc->router, r->nrep, sc->router_imbalance, err)) < 0)
    return rc;
  for (int32_t i = 0; i < r->nrep; i++) {
    if ((rc = kvsim__replica_init(&r->reps[i], i, sc, &r->res, err)) < 0)
      return rc;
    /* This loop syncs each scheduler before it reads running requests'
     * counts (sampling, leftovers): implicit decode may run. */
    r->reps[i].sched->implicit_ok = true;
    r->reps[i].step_memo = &r->perf_memo;
  }
  if ((rc = setup_loads(r)) < 0 || (rc = setup_spec(r)) < 0)
    return rc;
  return kvsim_source_open(sc->workload, sc->seed, &r->src, err);
}

void kvsim__run_teardown(kvsim__run_t *r) {
  for (int32_t i = 0; r->reps && i < r->nrep; i++)
    kvsim__replica_fini(&r->reps[i]);
  free(r->reps);
  kvsim__free(r->loads);
  kvsim__free(r->load_stale);
  kvsim__free(r->stale);
  kvsim__router_fini(&r->router);
  kvsim__vec_free(&r->prefix_key);
  if (r->src)
    kvsim_source_close(r->src);
  kvsim__reqpool_fini(&r->pool);
  kvsim_eventq_fini(&r->q);
  kvsim_reqvec_fini(&r->finished);
  kvsim__vec_free(&r->dl);
  if (r->spec_rng)
    gsl_rng_free(r->spec_rng);
}
