/* SGLang's EAGLE speculative decoding in its memory plan (spec_sglang.c).
 * Internal to the memory room. */
#ifndef KVSIM_MEMORY_SPEC_SGLANG_H
#define KVSIM_MEMORY_SPEC_SGLANG_H

#include <stdint.h>

#include "kvsim/error.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

/* What ServerArgs._handle_gpu_memory_settings adds to the automatic
 * fraction's reserve for an EAGLE draft model and its CUDA graphs, MB. */
#define KVSIM_SGL_EAGLE_RESERVE_MB 2048.0

/* ServerArgs._handle_speculative_decoding on pp->spec (the tree's
 * defaults and adjustments, the errors SGLang raises) and the draft model
 * into *draft. KVSIM_EINVAL naming the key and flag. */
int kvsim__spec_sglang_resolve(const kvsim_model_t *m, kvsim_plan_params_t *pp,
                               kvsim_model_t *draft, kvsim_err *err);

/* The KV slots one request may take in a decode step
 * (get_alloc_len_per_decode): max(steps x topk, num_draft_tokens). */
int64_t kvsim__spec_sglang_alloc_len(const kvsim_plan_spec_params_t *p);

#endif
