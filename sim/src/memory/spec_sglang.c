/* SGLang's EAGLE speculative decoding (--speculative-algorithm EAGLE /
 * EAGLE3) in its memory plan, in the releases whose mem_fraction_static
 * heuristic kvsim's sglang profile models (sgl-project/sglang#10975):
 * - python/sglang/srt/server_args.py ServerArgs._handle_speculative_decoding:
 *   max_running_requests 48 unless given, the tree (num_steps, eagle_topk,
 *   num_draft_tokens) from auto_choose_speculative_params when none is
 *   given, num_draft_tokens = num_steps + 1 when topk is 1, and topk > 1
 *   refused with page_size > 1 off flashinfer;
 * - ServerArgs._handle_gpu_memory_settings: 2 GB more reserve ("eagle draft
 *   models and cuda graphs") when it picks mem_fraction_static;
 * - python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
 *   init_memory: the target's pool is profiled without the draft
 *   (draft_runner_cache_size = max_total_num_tokens), and the draft worker
 *   (EAGLEWorker.__init__, sharing req_to_token_pool and the allocator)
 *   loads its weights and a pool of its layers over those token indices
 *   afterwards, out of what the fraction left (plan_sglang.c draft_pool).
 *   Earlier releases gave the draft pool a headroom, max_total_num_tokens
 *   + max_num_reqs x (num_steps x topk + num_draft_tokens) + 100
 *   (model_runner.py init_memory_pool). Later ones (sgl-project/sglang
 *   #23862, #28855) drop the 2 GB, count the draft's weights before the
 *   profile and scale the target's cell by (1 + draft layers / layers)
 *   (pool_configurator.py DefaultPoolConfigurator), with another fraction
 *   heuristic: not modelled;
 * - python/sglang/srt/mem_cache/common.py get_alloc_len_per_decode: the
 *   slots a request may take in one decode step. */
#include "memory/spec_sglang.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/params.h"
#include "kvsim/spec.h"
#include "memory/spec.h"

static const char *const FLAG = "--speculative-config (engine.speculative)";

int kvsim_spec_parse_sglang(const cJSON *o, const char *const *extra, kvsim_plan_spec_params_t *p,
                            const char *where, kvsim_err *err) {
  int rc = kvsim__spec_parse_fields(o, extra, p, where, err);
  if (rc < 0)
    return rc;
  /* --speculative-algorithm's EAGLE and EAGLE3 (NEXTN is EAGLE over the
   * target's MTP layers, STANDALONE a draft model, NGRAM: not modelled). */
  if (p->method != KVSIM_SPEC_EAGLE && p->method != KVSIM_SPEC_EAGLE3)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s%smethod: %s is not modelled for SGLang (eagle or eagle3: "
                         "--speculative-algorithm EAGLE or EAGLE3)",
                         where, kvsim__json_sep(where), kvsim_spec_method_name(p->method));
  if (p->num_speculative_tokens || p->draft_tensor_parallel_size)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s%s%s: vLLM's; SGLang sizes its draft tree with "
                         "engine.speculative_num_steps, engine.speculative_eagle_topk and "
                         "engine.speculative_num_draft_tokens (--speculative-num-steps, "
                         "--speculative-eagle-topk, --speculative-num-draft-tokens)",
                         where, kvsim__json_sep(where),
                         p->num_speculative_tokens ? "num_speculative_tokens"
                                                   : "draft_tensor_parallel_size");
  return KVSIM_OK;
}

int kvsim_spec_parse_sglang_text(const char *json_text, kvsim_plan_spec_params_t *p,
                                 const char *where, kvsim_err *err) {
  cJSON *o = kvsim__json_parse(json_text, where, err);
  if (!o)
    return err->code;
  int rc = kvsim_spec_parse_sglang(o, NULL, p, where, err);
  cJSON_Delete(o);
  return rc;
}

/* The tree: auto_choose_speculative_params gives (5, 4, 8) for Llama and
 * every other architecture modelled; "assert speculative_eagle_topk is
 * None and speculative_num_draft_tokens is None" when num_steps is not
 * given; a partial tree (steps given, topk or draft tokens not) fails
 * later in SGLang, refused here. */
static int resolve_tree(kvsim_plan_params_t *pp, kvsim_err *err) {
  kvsim_plan_spec_params_t *p = &pp->spec;
  const int given = (p->sgl_num_steps > 0) + (p->sgl_eagle_topk > 0) + (p->sgl_num_draft_tokens > 0);
  if (given == 0) {
    p->sgl_num_steps = 5;
    p->sgl_eagle_topk = 4;
    p->sgl_num_draft_tokens = 8;
  } else if (given != 3) {
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE_NUM_STEPS,
                               "--speculative-num-steps, --speculative-eagle-topk, "
                               "--speculative-num-draft-tokens (engine.speculative_*)",
                               "give all three or none of the three (SGLang's automatic 5, 4, 8)");
  }
  /* The registry's ranges, for callers that did not go through a flag. */
  const struct {
    int id, v;
  } tree[] = {{KVSIM_PARAM_SPECULATIVE_NUM_STEPS, p->sgl_num_steps},
              {KVSIM_PARAM_SPECULATIVE_EAGLE_TOPK, p->sgl_eagle_topk},
              {KVSIM_PARAM_SPECULATIVE_NUM_DRAFT_TOKENS, p->sgl_num_draft_tokens}};
  for (size_t i = 0; i < sizeof tree / sizeof *tree; i++) {
    char name[160];
    int rc = kvsim_param_check_int(tree[i].id, tree[i].v,
                                   kvsim_param_calc_name(tree[i].id, name, sizeof name), err);
    if (rc < 0)
      return rc;
  }
  if (p->sgl_eagle_topk == 1) /* "speculative_num_draft_tokens is adjusted to ..." */
    p->sgl_num_draft_tokens = p->sgl_num_steps + 1;
  if (p->sgl_eagle_topk > 1 && pp->block_size > 1)
    return kvsim_err_set_param(
        err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE_EAGLE_TOPK,
        "--speculative-eagle-topk (engine.speculative_eagle_topk)",
        "speculative_eagle_topk > 1 with page_size > 1 is unstable and produces incorrect "
        "results for paged attention backends (SGLang allows it on flashinfer only, which "
        "kvsim does not model)");
  p->num_speculative_tokens = p->sgl_num_steps; /* the deepest accepted draft */
  return KVSIM_OK;
}

int kvsim__spec_sglang_resolve(const kvsim_model_t *m, kvsim_plan_params_t *pp,
                               kvsim_model_t *draft, kvsim_err *err) {
  kvsim_plan_spec_params_t *p = &pp->spec;
  if (p->method == KVSIM_SPEC_NONE && (p->sgl_num_steps || p->sgl_eagle_topk || p->sgl_num_draft_tokens))
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE_NUM_STEPS,
                               "engine.speculative_num_steps, engine.speculative_eagle_topk, "
                               "engine.speculative_num_draft_tokens",
                               "SGLang's EAGLE tree without engine.speculative (the method and "
                               "the draft)");
  if (p->method == KVSIM_SPEC_NONE)
    return KVSIM_OK;
  if (p->method != KVSIM_SPEC_EAGLE && p->method != KVSIM_SPEC_EAGLE3)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, FLAG,
                               "%s is not modelled for SGLang (eagle, eagle3)",
                               kvsim_spec_method_name(p->method));
  if (p->num_speculative_tokens > 0 && p->sgl_num_steps <= 0)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, FLAG,
                               "num_speculative_tokens is vLLM's; SGLang's tree is "
                               "--speculative-num-steps, --speculative-eagle-topk, "
                               "--speculative-num-draft-tokens");
  if (pp->pp > 1)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, FLAG,
                               "EAGLE with pipeline parallelism (--pp-size %d) is not modelled "
                               "for SGLang",
                               pp->pp);
  if (kvsim_model_is_hybrid(m) || m->num_sliding_layers)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, FLAG,
                               "an EAGLE draft beside a sliding-window model (%s) is not "
                               "modelled",
                               m->name);
  int rc = resolve_tree(pp, err);
  if (rc < 0)
    return rc;
  if ((rc = kvsim_spec_draft_model(m, p, draft, err)) < 0)
    return rc;
  if (draft->mla != m->mla || kvsim_model_is_hybrid(draft) || draft->num_sliding_layers ||
      draft->hidden_size != m->hidden_size)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, FLAG,
                               "EAGLE head %s does not match %s (hidden size or attention "
                               "kind)",
                               draft->name, m->name);
  return KVSIM_OK;
}

int64_t kvsim__spec_sglang_alloc_len(const kvsim_plan_spec_params_t *p) {
  if (p->method == KVSIM_SPEC_NONE)
    return 1;
  const int64_t tree = (int64_t)p->sgl_num_steps * p->sgl_eagle_topk;
  return tree > p->sgl_num_draft_tokens ? tree : p->sgl_num_draft_tokens;
}
