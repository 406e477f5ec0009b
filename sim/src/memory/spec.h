/* Speculative decoding in the vLLM memory plan (spec.c). Internal to the
 * memory room. */
#ifndef KVSIM_MEMORY_SPEC_H
#define KVSIM_MEMORY_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/error.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

/* kvsim_spec_parse_object without vLLM's rule that every method but MTP
 * gives num_speculative_tokens (SGLang's EAGLE sizes its tree with its
 * own keys). */
int kvsim__spec_parse_fields(const cJSON *o, const char *const *extra, kvsim_plan_spec_params_t *p,
                             const char *where, kvsim_err *err);

/* Checks p->spec against the target and the engine as vLLM does (V1
 * only, no PP with a drafter, draft TP 1 or the target's, MTP's
 * n_predict rules, equal vocabularies for a draft model) and loads the
 * drafter into *draft (untouched for ngram and none). KVSIM_EINVAL naming
 * the flag and key. */
int kvsim__spec_resolve(const kvsim_model_t *m, kvsim_plan_params_t *p, kvsim_model_t *draft,
                        kvsim_err *err);

/* Bytes of the drafter's weights on one rank (0 for ngram and none), and
 * whether it shares the target's embedding and lm_head. */
int64_t kvsim__spec_weights_bytes(const kvsim_model_t *m, const kvsim_model_t *draft,
                                  const kvsim_plan_params_t *p, bool *embed_shared,
                                  bool *lm_head_shared);

#endif
