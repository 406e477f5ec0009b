/* Attention (perf.h): per rank and step, the longest of
 * - the FLOPs of QK^T and PV over every (query, key) pair of the chunk
 *   and its context, at attn_efficiency of the bf16 peak (attention runs
 *   in bf16 whatever the weights: FlashAttention / FlashInfer prefill
 *   kernels; FlashAttention-3 reaches 60-75 % of the H100 bf16 peak
 *   forward, Shah et al. 2024, arXiv:2407.08608, section 4.1);
 * - the KV cache read (every sequence's context, sliding layers at most
 *   the window) and write, at HBM x mbu; a quantized cache's read slowed
 *   by quant_step_factor;
 * - the decode kernel's minimum: attn_seq_floor_us per sequence per
 *   layer (a split-KV decode kernel gives each sequence at least one
 *   thread block per KV head group and a reduction, whatever its
 *   length; vllm/v1/attention/backends/flash_attn.py uses
 *   flash_attn_varlen_func with one work item per sequence).
 * A batch mixing a chunked prefill with decodes is one kernel launch in
 * vLLM V1 (unified varlen attention), hence one max over the step. */
#include "perf/terms.h"

double kvsim__perf_attention(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k) {
  const kvsim_gpu_perf_t *c = &pf->coef;
  const double flops = pf->attn_flops_per_pair *
                       (pf->full_layer_frac * b->attn_full + pf->sliding_layer_frac * b->attn_sliding);
  const double kv_read = pf->kv_bytes_per_token *
                         (pf->full_layer_frac * b->kv_read_full + pf->sliding_layer_frac * b->kv_read_sliding);
  const double kv_write = pf->kv_bytes_per_token * (double)b->new_tokens;
  k->flops += flops;
  k->kv_bytes = kv_read + kv_write;
  k->bytes += k->kv_bytes;
  const double compute = flops / (pf->attn_peak_flops * c->attn_efficiency);
  const double memory = (kv_read * pf->quant_step_factor + kv_write) / (pf->bandwidth * c->mbu);
  const double floor = (double)b->num_seqs * pf->num_layers * c->attn_seq_floor_us * 1e-6;
  k->compute_s += compute;
  k->memory_s += memory;
  double t = compute > memory ? compute : memory;
  return t > floor ? t : floor;
}
