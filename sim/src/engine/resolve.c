/* Scenario -> the configuration a run uses (scenario.h kvsim_resolved_t).
 * Pure: the run and the report read the result, never the scenario's
 * scheduler settings as the plan left them. */
#include <stdio.h>
#include <string.h>

#include "engine/scenario_keys.h"
#include "kvsim/scenario.h"
#include "kvsim/spec.h"
#include "memory/lora.h"

/* Speculative decoding: k as the plan resolved it (MTP's n_predict), the
 * lookahead the scheduler reserves, and the acceptance process. */
static int resolve_spec(const kvsim_scenario_t *sc, kvsim_resolved_t *out, kvsim_err *err) {
  const kvsim_plan_t *pl = &out->plan;
  const kvsim_plan_spec_params_t *sp = &pl->p.spec;
  const int k = sp->num_speculative_tokens; /* the deepest draft a step accepts */
  out->sched.num_spec_tokens = k;
  out->sched.num_lookahead_tokens = pl->num_lookahead_tokens;
  out->sched.draft_steps = k;
  out->sched.draft_width = 1;
  if (pl->p.engine == KVSIM_PLAN_SGLANG) {
    /* SGLang's tree: the target verifies num_draft_tokens rows (the last
     * token and num_draft_tokens - 1 drafts) and accepts at most one
     * branch of num_steps; a decode step may take alloc_len_per_decode
     * slots (plan_sglang.c); the draft runs num_steps - 1 forwards of
     * topk rows after its extend (eagle_worker.py draft_forward). */
    out->sched.num_spec_tokens = sp->sgl_num_draft_tokens - 1;
    out->sched.num_lookahead_tokens = (int32_t)pl->sglang.alloc_len_per_decode;
    out->sched.draft_width = sp->sgl_eagle_topk;
  }
  char where[4200];
  snprintf(where, sizeof where, "%s%sengine.speculative.acceptance_rate", sc->path, sc->path[0] ? ": " : "");
  if (!sc->spec_nrates)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing (a run needs it)", where);
  if (pl->p.engine == KVSIM_PLAN_SGLANG && sc->spec_nrates != 1 && sc->spec_nrates != k)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %d per-depth rates for speculative_num_steps %d (give one number, or "
                         "one rate per depth of SGLang's draft tree)",
                         where, sc->spec_nrates, k);
  return kvsim_spec_accept_set(&out->sched.accept, k, sc->spec_rates, sc->spec_nrates, where, err);
}

/* Requests that name adapters need LoRA on (vLLM's server answers 404
 * for a model it does not serve) and a profile that swaps adapters. */
static int check_adapters(const kvsim_scenario_t *sc, const kvsim_plan_t *pl, kvsim_err *err) {
  if (!sc->workload || kvsim_workload_lora_adapters(sc->workload) <= 0)
    return KVSIM_OK;
  const char *why = !pl->p.lora.enable ? "needs engine.enable_lora"
                    : sc->sched_ops && !sc->sched_ops->defaults.lora_adapters
                        ? "runs under the vllm-v1 profile only (adapter scheduling and swaps)"
                        : NULL;
  if (why)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%sworkload.synthetic.lora: %s", sc->path,
                         sc->path[0] ? ": " : "", why);
  return KVSIM_OK;
}

/* LoRA: the adapters a step may use and the sizes an adapter swap moves:
 * one slot of one rank (the plan's slots over max_loras), and the
 * checkpoint a worker reads whole (LoRAModel.from_local_checkpoint; each
 * rank slices its share in set_lora): one slot unsharded. The run assumes
 * every adapter has rank max_lora_rank. */
static void resolve_lora(const kvsim_scenario_t *sc, kvsim_resolved_t *out) {
  const kvsim_plan_t *pl = &out->plan;
  out->sched.max_loras = pl->p.lora.max_loras;
  out->sched.max_cpu_loras = pl->p.lora.max_cpu_loras;
  out->sched.lora_slot_bytes = pl->lora_bytes / pl->p.lora.max_loras;
  kvsim_plan_params_t one = pl->p;
  one.tp = 1;
  one.pp = 1;
  one.lora.max_loras = 1;
  one.lora.fully_sharded = false;
  out->sched.lora_file_bytes = kvsim__lora_bytes(&sc->model, &one, 0);
  /* The kernels' shapes on one rank of the first stage, per layer: the
   * shrinks read qkv's and gate_up's input (hidden) and o's and down's
   * (sharded), the expands read and write qkv's, o's, gate_up's and
   * down's outputs (create_lora_weights in vllm/lora/layers). */
  const kvsim_model_t *m = &sc->model;
  const double tp = pl->p.tp, h = (double)m->hidden_size, r = pl->p.lora.max_lora_rank;
  const double q = (double)(m->num_heads * m->head_dim) / tp;
  const double kv = (double)(kvsim_model_kv_heads_per_rank(m, pl->p.tp) * m->head_dim);
  const double inter = (double)m->intermediate_size / tp;
  int first, last;
  kvsim_model_pp_layers(m->num_layers, pl->p.pp, 0, &first, &last);
  const double layers = (double)(last - first);
  out->lora.dtype_bytes = m->dtype_bytes;
  out->lora.slot_elems = (double)out->sched.lora_slot_bytes / m->dtype_bytes;
  out->lora.act_elems = layers * ((h + q + h + inter) +                   /* shrink inputs */
                                  2 * ((q + 2 * kv) + h + 2 * inter + h) + /* expand outputs */
                                  2 * 4 * r);                               /* the rank buffers */
}

/* The plan parsing computed, while the model, GPU and parameters are the
 * ones it was computed from (an override since changed them: false). The
 * plan is a pure function of the three, so the bytes decide. */
bool kvsim__scenario_plan_holds(const kvsim_scenario_t *sc) {
  return sc->parsed_plan.valid &&
         !memcmp(&sc->parsed_plan.params, &sc->plan, sizeof sc->plan) &&
         !memcmp(&sc->parsed_plan.model, &sc->model, sizeof sc->model) &&
         !memcmp(&sc->parsed_plan.gpu, &sc->gpu, sizeof sc->gpu);
}

int kvsim_scenario_resolve(const kvsim_scenario_t *sc, kvsim_resolved_t *out, kvsim_err *err) {
  memset(out, 0, sizeof *out);
  int rc = KVSIM_OK;
  if (kvsim__scenario_plan_holds(sc))
    out->plan = sc->parsed_plan.plan;
  else
    rc = kvsim_plan_compute(&sc->model, &sc->gpu, &sc->plan, &out->plan, err);
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
  if ((pl->p.spec.method != KVSIM_SPEC_NONE && (rc = resolve_spec(sc, out, err)) < 0) ||
      (rc = check_adapters(sc, pl, err)) < 0)
    return rc;
  if (pl->p.lora.enable)
    resolve_lora(sc, out);
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
