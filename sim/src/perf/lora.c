/* LoRA's kernel time per step (kvsim/perf.h kvsim_perf_lora_s). vLLM runs
 * the punica kernels (vllm/lora/ops/triton_ops lora_shrink / lora_expand,
 * the SGMV/BGMV of Punica, Chen et al. 2023) after each wrapped linear
 * layer; at ranks of 8 to 64 a token does 2r FLOPs per input or output
 * element, far below the GPU's machine balance, so HBM traffic bounds it:
 * the adapters' A and B once per step and the activations of each token. */
#include "kvsim/perf.h"

double kvsim_perf_lora_s(const kvsim_perf_t *p, const kvsim_perf_lora_t *l, int64_t tokens,
                         int32_t adapters) {
  if (tokens <= 0 || l->slot_elems <= 0)
    return 0;
  const double flops = 2.0 * (double)tokens * l->slot_elems;
  const double bytes = ((double)adapters * l->slot_elems + (double)tokens * l->act_elems) * l->dtype_bytes;
  const double tf = p->hw_attn.peak > 0 ? flops / p->hw_attn.peak : 0;
  const double tb = p->hw_attn.bw > 0 ? bytes / p->hw_attn.bw : 0;
  return tf > tb ? tf : tb;
}
