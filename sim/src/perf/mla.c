/* The attention block of an MLA layer (perf.h) from the GPU's measured MLA
 * module tables, where its profile has them for the model's shape, GEMM
 * precision, KV dtype and heads per rank; otherwise MLA goes through the
 * ordinary terms (its projections as one GEMM, gemm.c; its attention from
 * the attention tables, attention.c).
 *
 * A module row times vLLM's DeepseekV2MLAAttention.forward
 * (vllm/model_executor/models/deepseek_v2.py, class DeepseekV2MLAAttention,
 * vLLM 0.24.0), built by aiconfigurator's collector/vllm/
 * collect_mla_module.py with num_heads = heads per rank and tp 1, in a CUDA
 * graph (every MLA row; only its DSA context rows run eagerly). The block
 * covers, per layer:
 *   fused_qkv_a_proj (q_a_proj + kv_a_proj_with_mqa, replicated),
 *   q_a_layernorm, q_b_proj (column parallel), kv_a_layernorm, rotary,
 *   kv_b_proj (prefill) or its absorbed W_UK_T / W_UV batched matmuls
 *   (decode; vllm/model_executor/layers/mla.py
 *   MultiHeadLatentAttentionWrapper and the MLA backends' MLACommonImpl),
 *   the latent cache write, MLA attention, and o_proj (row parallel).
 * Not covered, and charged by the other terms as before: the o_proj's TP
 * all-reduce (the module is built at tp 1; comm.c), the decoder layer's
 * input and post-attention norms (elementwise.c), the MLP or experts, the
 * lm_head. So, to count nothing twice, the latent projections' GEMM
 * (gemm.c, mla_block) is charged here only for tokens the tables do not
 * time (speculative drafts), and the rotary leaves elementwise.c.
 *
 * Decode: the step's decode sequences as one batch at their mean sequence
 * length (the tables' `step` includes the new token). Prefill: the
 * step's prompts at their mean chunk (the tables time chunks with nothing
 * cached); a chunk after a cached prefix attends to more keys than the
 * table's, and that extra attention is charged at the ordinary prefill
 * attention table's difference between the length of equal (query, key)
 * pairs and the chunk's length. A step mixing both adds the two lookups,
 * as attention.c does. */
#include <math.h>

#include "perf/ktab.h"
#include "perf/terms.h"

/* The table precision of the model's linear layers: only bf16, fp8 with
 * 128x128 blocks and NVFP4 are measured (the module tables' gemm_type). */
static int module_gemm(int prec) {
  return prec == KVSIM_KGEMM_BF16 || prec == KVSIM_KGEMM_FP8_BLOCK || prec == KVSIM_KGEMM_NVFP4 ? prec : -1;
}

void kvsim__perf_init_mla(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_plan_t *pl, int prec) {
  pf->mla_gen = pf->mla_ctx = NULL;
  const int tp = pf->tp, gemm = module_gemm(prec);
  if (!m->mla || gemm < 0 || m->num_heads % tp != 0 || m->sliding_window > 0)
    return;
  const int dims[6] = {(int)m->hidden_size,      (int)m->q_lora_rank,       (int)m->kv_lora_rank,
                       (int)m->qk_nope_head_dim, (int)m->qk_rope_head_dim, (int)m->v_head_dim};
  const bool fp8 = pl->p.kv_dtype == KVSIM_KV_FP8 || pl->p.kv_dtype == KVSIM_KV_INT8 || pl->p.kv_dtype == KVSIM_KV_INT4;
  const int heads = (int)(m->num_heads / tp);
  const kvsim__kmla *gen = kvsim__kmla_find(pf->kern, false, gemm, fp8, heads, dims);
  const kvsim__kmla *ctx = kvsim__kmla_find(pf->kern, true, gemm, fp8, heads, dims);
  if (gen && ctx) {
    pf->mla_gen = gen;
    pf->mla_ctx = ctx;
  }
}

double kvsim__perf_mla_block_us(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b) {
  const double P = (double)b->num_prefill_seqs, D = (double)(b->num_seqs - b->num_prefill_seqs);
  double us = 0;
  if (D > 0)
    us += kvsim__kmla_at(pf->mla_gen, D, b->decode_keys_full / D);
  const double ptok = (double)b->prefill_tokens;
  if (P > 0 && ptok > 0) {
    const double chunk = ptok / P;
    us += kvsim__kmla_at(pf->mla_ctx, P, chunk);
    /* The keys of a cached prefix: the pairs beyond the chunk's own. */
    const double pairs = b->attn_full - b->decode_keys_full - b->verify_pairs_full;
    const double s = (sqrt(1.0 + 8.0 * pairs / P) - 1.0) / 2.0;
    if (s > chunk) {
      const double extra = kvsim__kattn_at(pf->ctx, true, P, s) - kvsim__kattn_at(pf->ctx, true, P, chunk);
      if (extra > 0)
        us += extra * pf->ctx_scale;
    }
  }
  /* Tokens the module tables do not time (speculative drafts verified
   * with their sequence) take the latent projections' GEMM. */
  const double rest = (double)b->new_tokens - D - ptok;
  for (int i = 0; i < pf->ngemm && rest > 0; i++)
    if (pf->gemm[i].mla_block)
      us += kvsim__perf_gemm_us(pf, &pf->gemm[i], rest);
  return us;
}
