/* Scenario -> the configuration a run uses (scenario.h kvsim_resolved_t).
 * Pure: the run and the report read the result, never the scenario's
 * scheduler settings as the plan left them. */
#include <stdio.h>
#include <string.h>

#include "kvsim/scenario.h"
#include "kvsim/spec.h"

int kvsim_scenario_resolve(const kvsim_scenario_t *sc, kvsim_resolved_t *out, kvsim_err *err) {
  memset(out, 0, sizeof *out);
  int rc = kvsim_plan_compute(&sc->model, &sc->gpu, &sc->plan, &out->plan, err);
  if (rc < 0)
    return rc;
  const kvsim_plan_t *pl = &out->plan;
  /* The scheduler reads the plan's resolved settings (vLLM fills
   * max_num_seqs, max_num_batched_tokens and chunked prefill from the
   * usage context when the user gives none: vllm/engine/arg_utils.py). */
  out->sched = sc->sched;
  out->sched.max_num_seqs = pl->p.max_num_seqs;
  out->sched.max_num_batched_tokens = pl->p.max_num_batched_tokens;
  out->sched.max_model_len = pl->p.max_model_len;
  out->sched.block_size = pl->p.block_size;
  out->sched.enable_chunked_prefill = pl->p.enable_chunked_prefill;
  /* Speculative decoding: k as the plan resolved it (MTP's n_predict),
   * the lookahead the scheduler reserves, and the acceptance process. */
  if (pl->p.spec.method != KVSIM_SPEC_NONE) {
    out->sched.num_spec_tokens = pl->p.spec.num_speculative_tokens;
    out->sched.num_lookahead_tokens = pl->num_lookahead_tokens;
    char where[4200];
    snprintf(where, sizeof where, "%s%sengine.speculative.acceptance_rate", sc->path,
             sc->path[0] ? ": " : "");
    if (!sc->spec_nrates)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing (a run needs it)", where);
    int rc2 = kvsim_spec_accept_set(&out->sched.accept, out->sched.num_spec_tokens, sc->spec_rates,
                                    sc->spec_nrates, where, err);
    if (rc2 < 0)
      return rc2;
  }
  /* V1's pool counts the null block, and TGI's its health-check block 0
   * (backends/v3/src/block_allocator.rs); V0's plan does not, so add one. */
  out->pool_blocks = pl->num_gpu_blocks +
                     (pl->p.engine == KVSIM_PLAN_V1 || pl->p.engine == KVSIM_PLAN_TGI ? 0 : 1);
  out->pool_usable = out->pool_blocks - 1;
  if (!pl->fits) {
    char advice[512];
    kvsim_plan_advice(&sc->model, &sc->gpu, pl, advice, sizeof advice);
    /* Advice only where a change applies (none for TGI's contradicting
     * token limits); the scenario file names the source, as its key
     * errors do. */
    return kvsim_err_set(err, KVSIM_ENOFIT, "%s%smemory plan does not fit: %s%s%s", sc->path,
                         sc->path[0] ? ": " : "", pl->error, advice[0] ? " To fit: " : "", advice);
  }
  return KVSIM_OK;
}
