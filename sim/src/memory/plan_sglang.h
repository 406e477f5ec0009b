/* SGLang's start-up memory plan (plan_sglang.c), reached through
 * kvsim_plan_compute when p->engine is KVSIM_PLAN_SGLANG. Internal. */
#ifndef KVSIM_MEMORY_PLAN_SGLANG_H
#define KVSIM_MEMORY_PLAN_SGLANG_H

#include "kvsim/plan.h"

int kvsim__plan_sglang(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *p,
                       kvsim_plan_t *out, kvsim_err *err);

#endif
