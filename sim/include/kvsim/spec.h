/* Speculative decoding as vLLM V1 runs it (--speculative-config): the
 * configuration (methods eagle, eagle3, mtp, ngram, draft_model), the
 * drafter's memory in the start-up plan (plan.h: spec_* fields) and the
 * accepted-token process of a run.
 *
 * Each step a running request verifies the k draft tokens proposed at the
 * end of its previous step: the target computes 1 + k tokens, accepts the
 * longest prefix of drafts it agrees with (a of them) and samples one token
 * more, so a + 1 tokens come out of the step
 * (vllm/v1/core/sched/scheduler.py update_from_output: num_computed_tokens
 * -= num_rejected). The drafter then proposes k new drafts
 * (vllm/v1/spec_decode/eagle.py EagleProposer.propose: one forward over
 * the step's tokens, then k - 1 forwards of one token per request). */
#ifndef KVSIM_SPEC_H
#define KVSIM_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/error.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "eagle", "eagle3", "mtp", "ngram", "draft_model"; "none". Static. */
const char *kvsim_spec_method_name(kvsim_spec_method m);

/* Parses a --speculative-config object (vLLM's keys: method, model,
 * num_speculative_tokens, draft_tensor_parallel_size, prompt_lookup_min,
 * prompt_lookup_max) into *p, applying SpeculativeConfig.__post_init__'s
 * rules: the method inferred from the model name when absent, the
 * deprecated MTP names mapped to "mtp", ngram's lookup defaults, and the
 * errors vLLM raises. Keys in `extra` (NULL-terminated, may be NULL) are
 * the caller's and skipped. Errors name `where` and the key. */
int kvsim_spec_parse_object(const cJSON *o, const char *const *extra, kvsim_plan_spec_params_t *p,
                            const char *where, kvsim_err *err);
/* The same from JSON text (the flag's value). */
int kvsim_spec_parse_text(const char *json_text, kvsim_plan_spec_params_t *p, const char *where,
                          kvsim_err *err);

/* engine.speculative (or calc --speculative-config) for SGLang's EAGLE:
 * the same object with method eagle or eagle3 and the draft's model
 * (SGLang's --speculative-algorithm and --speculative-draft-model-path);
 * its tree comes from SGLang's own keys (plan.h sgl_num_steps, ...), so
 * vLLM's num_speculative_tokens and draft_tensor_parallel_size are
 * refused by name. Errors name `where` and the key. */
int kvsim_spec_parse_sglang(const cJSON *o, const char *const *extra, kvsim_plan_spec_params_t *p,
                            const char *where, kvsim_err *err);
int kvsim_spec_parse_sglang_text(const char *json_text, kvsim_plan_spec_params_t *p,
                                 const char *where, kvsim_err *err);

/* The slots past a running request's tokens the scheduler reserves each
 * step: num_speculative_tokens for the methods with a drafter on the GPU
 * (use_eagle(): eagle, eagle3, mtp; uses_draft_model()), 0 for ngram
 * (vllm/v1/core/sched/scheduler.py Scheduler.__init__
 * num_lookahead_tokens). */
int kvsim_spec_lookahead_tokens(const kvsim_plan_spec_params_t *p);

/* Loads the drafter's own model (eagle, eagle3, draft_model: p->model, in
 * the target's dtype; mtp: the target's MTP layers as a model of
 * num_nextn_predict_layers decoder layers of the target's last layer kind)
 * into *draft. ngram has none: KVSIM_ENOENT. */
int kvsim_spec_draft_model(const kvsim_model_t *target, const kvsim_plan_spec_params_t *p,
                           kvsim_model_t *draft, kvsim_err *err);

/* The accepted-token process: pos[i] is the probability that the first
 * i + 1 drafts of a step are all accepted (vLLM's "Per-position acceptance
 * rate", SpecDecodingLogging), non-increasing in i. */
typedef struct kvsim_spec_accept {
  int k;
  double pos[KVSIM_SPEC_MAX_TOKENS];
} kvsim_spec_accept_t;

/* From the scenario's acceptance_rate: one number a (each draft accepted
 * with probability a given the ones before it: pos[i] = a^(i+1)) or a list
 * of k per-position rates as vLLM logs them. Errors name `where`: a rate
 * outside [0, 1], a list of another length than k, a list that grows. */
int kvsim_spec_accept_set(kvsim_spec_accept_t *a, int k, const double *rates, int n,
                          const char *where, kvsim_err *err);

/* Drafts accepted out of `drafts` (<= k) for a uniform draw u in [0, 1):
 * the largest j with u < pos[j - 1] (inverse CDF of the accepted count). */
int kvsim_spec_accepted(const kvsim_spec_accept_t *a, int drafts, double u);

/* Expected drafts accepted out of `drafts`: sum of pos[0..drafts). */
double kvsim_spec_mean_accepted(const kvsim_spec_accept_t *a, int drafts);

#ifdef __cplusplus
}
#endif

#endif
