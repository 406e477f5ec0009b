/* vLLM's LoRA adapter slots in the memory plan (lora.c). Internal to the
 * memory room. */
#ifndef KVSIM_MEMORY_LORA_H
#define KVSIM_MEMORY_LORA_H

#include "kvsim/plan.h"

/* Fills the defaults of p->lora (max_loras 1, max_lora_rank 16,
 * max_cpu_loras = max_loras) and checks them as vLLM's LoRAConfig does;
 * KVSIM_EINVAL naming the flag and scenario key otherwise. A model vLLM
 * wraps differently (MoE experts, MLA) is refused: not modelled. */
int kvsim__lora_resolve(const kvsim_model_t *m, kvsim_plan_params_t *p, kvsim_err *err);

/* Bytes of the preallocated slots on one rank of pipeline stage `stage`
 * (0 when LoRA is off). */
int64_t kvsim__lora_bytes(const kvsim_model_t *m, const kvsim_plan_params_t *p, int stage);

#endif
