/* Elementwise work (perf.h): what a step runs besides GEMMs, attention and
 * collectives. Per decoder layer vLLM runs two fused add + RMSNorm kernels
 * (each reads the hidden state and the residual and writes both), the
 * rotary embedding of q and k (read and written in place), and the gated
 * activation (reads 2 x intermediate, writes intermediate; vLLM
 * SiluAndMul); after the last layer a norm and, per sampled row, the
 * sampler over the vocabulary (logits in fp32: read, softmax, top-k/top-p,
 * argmax: vllm/v1/sample/sampler.py). Each kernel streams its bytes at the
 * rate the GPU's tables show single-token GEMMs streaming weights, and takes
 * at least the shortest kernel the tables measured (a launch in a CUDA
 * graph). On a GPU that borrows its tables, the streaming rate scales with
 * the HBM bandwidth. */
#include "perf/terms.h"

#include "perf/ktab.h"

/* Sampler passes over one row of fp32 logits. */
#define SAMPLER_PASSES 3.0

void kvsim__perf_init_elementwise(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_gpu_t *g,
                                  const kvsim_gpu_t *donor) {
  const double tp = pf->tp, b = m->dtype_bytes, h = (double)m->hidden_size;
  const double inter = (double)(m->num_experts > 0 ? m->moe_intermediate_size : m->intermediate_size) / tp;
  /* MLA's rotary is part of the attention block the MLA module tables time
   * (perf/mla.c), when the step model reads them. */
  const double rope = pf->mla_gen ? 0.0
                                  : ((double)m->num_heads / tp + (double)kvsim_model_kv_heads_per_rank(m, pf->tp)) *
                                        (double)(m->mla ? m->qk_rope_head_dim : m->head_dim);
  const double L = m->num_layers;
  /* Per token over all layers: norms 2 x 4 h, rotary 2 x rope, activation
   * 3 x inter (dense layers), in the model dtype. */
  pf->elem_bytes_per_token = L * b * (8.0 * h + 2.0 * rope) + (double)(m->num_layers - m->num_moe_layers) * b * 3.0 * inter;
  pf->sample_bytes_per_seq = (double)m->vocab_size / tp * 4.0 * SAMPLER_PASSES;
  pf->elem_kernels = (pf->mla_gen ? 3.0 : 4.0) * L + 2.0;
  pf->min_kernel_us = kvsim_kernels_min_kernel_us(pf->kern);
  pf->stream_bw = kvsim_kernels_stream_bw(pf->kern);
  if (donor)
    pf->stream_bw *= g->hbm_bandwidth_GBps / donor->hbm_bandwidth_GBps;
}

double kvsim__perf_elementwise(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k) {
  const double bytes = (double)b->new_tokens * pf->elem_bytes_per_token + (double)(b->num_seqs + b->spec_rows) * pf->sample_bytes_per_seq;
  k->bytes += bytes;
  const double stream = bytes / pf->stream_bw, floor = pf->elem_kernels * pf->min_kernel_us * 1e-6;
  return stream > floor ? stream : floor;
}
