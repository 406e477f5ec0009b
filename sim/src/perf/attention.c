/* Attention (perf.h), per rank and step, from the GPU's measured prefill
 * and decode attention tables (each row: the KV-cache write of the new
 * tokens plus the attention kernel of one layer):
 * - decode: the step's decode sequences as one batch at their mean number
 *   of keys (a split-KV decode kernel's time follows the batch's total KV
 *   read);
 * - prefill: each chunk attends to its cached prefix and to itself; the
 *   tables time chunks with nothing cached, so the step's prefills are
 *   looked up as that many prompts of the length whose causal attention
 *   has the same (query, key) pairs: s (s + 1) / 2 = pairs per sequence.
 * Sliding-window layers read at most the window: the full-attention table
 * at the clipped number of keys (pairs), which is what the window rows of
 * the tables measure. A batch mixing prefills and decodes is one varlen
 * launch in vLLM V1; the tables time the two kinds apart, and their times
 * add here. */
#include <math.h>

#include "perf/ktab.h"
#include "perf/terms.h"

/* The head shape the attention kernels see on one rank. MLA attends in the
 * latent space at decode (one shared latent "head" of kv_lora_rank + rope
 * dims, vLLM's MLA backends) and as ordinary heads of qk_nope + rope dims
 * at prefill (DeepSeek-V2 paper section 2.1.3). */
int kvsim__perf_init_attention(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_plan_t *pl, kvsim_err *err) {
  const int tp = pf->tp;
  const int heads = (int)(m->num_heads / tp > 0 ? m->num_heads / tp : 1);
  int kv = (int)kvsim_model_kv_heads_per_rank(m, tp), hd_prefill = (int)m->head_dim, hd_decode = (int)m->head_dim;
  int kv_prefill = kv;
  if (m->mla) {
    hd_prefill = (int)(m->qk_nope_head_dim + m->qk_rope_head_dim);
    kv_prefill = heads;
    hd_decode = (int)(m->kv_lora_rank + m->qk_rope_head_dim);
    kv = 1;
  }
  if (kv < 1)
    kv = 1;
  const bool fp8 = pl->p.kv_dtype == KVSIM_KV_FP8 || pl->p.kv_dtype == KVSIM_KV_INT8 || pl->p.kv_dtype == KVSIM_KV_INT4;
  pf->ctx = kvsim__kattn_find(pf->kern, true, fp8, heads, kv_prefill, hd_prefill, &pf->ctx_scale);
  pf->gen = kvsim__kattn_find(pf->kern, false, fp8, heads, kv, hd_decode, &pf->gen_scale);
  if (!pf->ctx || !pf->gen)
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: kernel profile '%s' has no attention tables",
                         kvsim_kernels_gpu(pf->kern));
  /* FLOPs per (query, key) pair (QK^T and PV, 2 per MAC) and KV bytes per
   * token, for the diagnostics and the roofline. */
  double pair_dims;
  if (m->mla)
    pair_dims = (double)(m->kv_lora_rank + m->qk_rope_head_dim) + (double)m->kv_lora_rank;
  else
    pair_dims = (double)m->head_dim + (double)(m->v_head_dim > 0 ? m->v_head_dim : m->head_dim);
  const double L = m->num_layers;
  pf->attn_flops_per_pair = 2.0 * ((double)m->num_heads / tp) * pair_dims * L;
  pf->kv_bytes_per_token = (double)pl->per_token_kv_bytes / pl->num_layers * L;
  const int n_sliding = m->sliding_window > 0 ? m->num_sliding_layers : 0;
  pf->sliding_layer_frac = n_sliding / L;
  pf->full_layer_frac = 1.0 - pf->sliding_layer_frac;
  return KVSIM_OK;
}

/* One layer kind's attention (us): decodes at their mean keys, prefills at
 * the length of equal pairs. */
static double layer_us(const kvsim_perf_t *pf, double decodes, double decode_keys, double prefills,
                       double prefill_pairs) {
  double us = 0;
  if (decodes > 0)
    us += kvsim__kattn_at(pf->gen, false, decodes, decode_keys / decodes) * pf->gen_scale * pf->quant_step_factor;
  if (prefills > 0 && prefill_pairs > 0) {
    const double s = (sqrt(1.0 + 8.0 * prefill_pairs / prefills) - 1.0) / 2.0;
    us += kvsim__kattn_at(pf->ctx, true, prefills, s) * pf->ctx_scale;
  }
  return us;
}

double kvsim__perf_attention(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k) {
  const double P = (double)b->num_prefill_seqs, D = (double)(b->num_seqs - b->num_prefill_seqs);
  double us = 0;
  if (pf->mla_gen) /* MLA's whole attention block, measured (perf/mla.c) */
    us = kvsim__perf_mla_block_us(pf, b);
  else if (pf->full_layer_frac > 0)
    us += pf->full_layer_frac * layer_us(pf, D, b->decode_keys_full, P,
                                         b->attn_full - b->decode_keys_full - b->verify_pairs_full);
  if (pf->sliding_layer_frac > 0 && !pf->mla_gen)
    us += pf->sliding_layer_frac * layer_us(pf, D, b->decode_keys_sliding, P,
                                            b->attn_sliding - b->decode_keys_sliding -
                                                b->verify_pairs_sliding);
  us *= pf->num_layers;
  const double flops = pf->attn_flops_per_pair *
                       (pf->full_layer_frac * b->attn_full + pf->sliding_layer_frac * b->attn_sliding);
  const double kv = pf->kv_bytes_per_token *
                    (pf->full_layer_frac * b->kv_read_full + pf->sliding_layer_frac * b->kv_read_sliding +
                     (double)b->new_tokens);
  k->flops += flops;
  k->kv_bytes = kv;
  k->bytes += kv;
  return us * 1e-6 * kvsim__perf_hw_ratio(&pf->hw_attn, flops, kv);
}
