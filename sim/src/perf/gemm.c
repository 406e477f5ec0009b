/* GEMMs (perf.h): each linear layer of a decoder layer on one rank, at
 * the step's tokens, and the lm_head at the sequences that sample, looked
 * up in the GPU's measured GEMM table at the shard's (n, k) in the weight
 * precision. vLLM splits the q/o projections, the MLP and each expert's
 * intermediate over TP (ColumnParallelLinear / RowParallelLinear),
 * replicates K/V heads when TP exceeds them, keeps the router whole, and
 * computes the lm_head vocabulary-parallel over the padded vocabulary
 * (VocabParallelEmbedding pads to 64) for one row per scheduled request
 * (vllm/v1/worker/gpu_model_runner.py logits_indices).
 *
 * Two corrections of the tables (their README's pitfalls):
 * - the fp8 per-tensor rows were timed with dynamic activation scaling and
 *   the fp8_block rows without a CUDA graph, so their small-shape
 *   intercept (~15 us against ~4 us for bf16 on H100) holds a quantization
 *   kernel or CPU launches that a static-scale checkpoint in a captured
 *   step does not pay: the excess of the precision over bf16 at the
 *   smallest shape of the same m is taken off, never below that bf16 time;
 * - weight-only quantization (AWQ/GPTQ int4, fp8 on a part without fp8
 *   tensor cores: Marlin) has no table: its time is the bf16 GEMM of the
 *   same weight bytes (k scaled by bytes per weight / 2) or of its FLOPs
 *   at the best bf16 rate measured, whichever is longer. */
#include <math.h>

#include "memory/overheads.h"
#include "perf/ktab.h"
#include "perf/terms.h"

/* fp8 / fp8_block intercept over bf16 at m (see above). */
static double excess_us(const kvsim_kernels_t *k, kvsim_kgemm d, double m, double *floor_us) {
  const double n0 = k->n[0], k0 = k->k[0];
  *floor_us = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, m, n0, k0);
  if (d != KVSIM_KGEMM_FP8 && d != KVSIM_KGEMM_FP8_BLOCK)
    return 0;
  const double e = kvsim_kernels_gemm_us(k, d, m, n0, k0) - *floor_us;
  return e > 0 ? e : 0;
}

static double table_us(const kvsim_perf_t *pf, const kvsim_perf_gemm_t *g, int prec, double m) {
  const kvsim_kernels_t *k = pf->kern;
  if (prec < 0) {
    const double bytes_k = g->k * g->wbytes / 2.0;
    const double mem = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, m, g->n, bytes_k > 1 ? bytes_k : 1);
    const double comp = 2.0 * m * g->n * g->k / kvsim_kernels_peak_flops(k, KVSIM_KGEMM_BF16) * 1e6;
    return mem > comp ? mem : comp;
  }
  double floor_us;
  const double t = kvsim_kernels_gemm_us(k, (kvsim_kgemm)prec, m, g->n, g->k) - excess_us(k, (kvsim_kgemm)prec, m, &floor_us);
  return t > floor_us ? t : floor_us;
}

void kvsim__perf_fill_gemm(const kvsim_perf_t *pf, kvsim_perf_gemm_t *g, int prec) {
  const kvsim_perf_hw_t *hw = prec <= KVSIM_KGEMM_BF16 ? &pf->hw_attn : &pf->hw_gemm;
  for (int i = 0; i < pf->nm; i++) {
    const double m = pf->m_grid[i];
    const double flops = 2.0 * m * g->n * g->k, bytes = g->n * g->k * g->wbytes + m * (g->n + g->k) * 2.0;
    g->t_us[i] = table_us(pf, g, prec, m) * kvsim__perf_hw_ratio(hw, flops, bytes);
  }
}

double kvsim__perf_gemm_us(const kvsim_perf_t *pf, const kvsim_perf_gemm_t *g, double m) {
  if (!(m > 0))
    return 0;
  const kvsim__kcurve c = {pf->nm, (double *)pf->m_grid, (double *)g->t_us};
  return kvsim__kcurve_at(&c, m);
}

static void add(kvsim_perf_t *pf, double n, double k, double count, double wbytes, int per_seq, int prec) {
  if (!(n > 0 && k > 0 && count > 0) || pf->ngemm == KVSIM_PERF_MAX_GEMMS)
    return;
  kvsim_perf_gemm_t *g = &pf->gemm[pf->ngemm++];
  *g = (kvsim_perf_gemm_t){.n = n, .k = k, .count = count, .wbytes = wbytes, .per_seq = per_seq};
  kvsim__perf_fill_gemm(pf, g, prec);
  pf->weight_bytes += count * n * k * wbytes;
  if (!per_seq)
    pf->dense_flops_per_token += 2.0 * count * n * k;
}

int kvsim__perf_init_gemms(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_quant_t *q, int prec,
                           kvsim_err *err) {
  (void)err;
  const kvsim_kernels_t *k = pf->kern;
  pf->nm = k->nm < KVSIM_PERF_MAX_M ? k->nm : KVSIM_PERF_MAX_M;
  for (int i = 0; i < pf->nm; i++)
    pf->m_grid[i] = k->m[i];
  kvsim_model_params_t P;
  kvsim_model_count_params(m, &P);
  const int tp = pf->tp, b = m->dtype_bytes;
  const double h = (double)m->hidden_size, L = m->num_layers;
  const bool qlin = q->kind != KVSIM_QUANT_NONE && !q->experts_only;
  const double wb = qlin ? kvsim__linear_bytes_per_param(q, m->hidden_size, b) : b;
  const int lp = qlin ? prec : KVSIM_KGEMM_BF16;
  const double heads = (double)m->num_heads / tp;
  const double vdim = (double)(m->v_head_dim > 0 ? m->v_head_dim : m->head_dim);
  if (m->mla) {
    /* The latent projections as one GEMM of the same weights per layer;
     * with the MLA module tables they are timed there (perf/mla.c). */
    const int at = pf->ngemm;
    add(pf, (double)P.attention / tp / L / h, h, L, wb, 0, lp);
    if (pf->ngemm > at)
      pf->gemm[at].mla_block = pf->mla_gen != NULL;
  } else {
    const double kv = (double)kvsim_model_kv_heads_per_rank(m, tp);
    add(pf, heads * m->head_dim + 2.0 * kv * m->head_dim, h, L, wb, 0, lp); /* qkv_proj */
    add(pf, h, heads * vdim, L, wb, 0, lp);                                 /* o_proj */
  }
  const double n_moe = m->num_experts > 0 ? (double)m->num_moe_layers : 0, n_dense = L - n_moe;
  if (n_dense > 0 && P.dense_mlp > 0) {
    const double inter = (double)m->intermediate_size / tp;
    const double per_layer = (double)P.dense_mlp / tp / n_dense;
    add(pf, per_layer / h - inter, h, n_dense, wb, 0, lp); /* gate_up_proj (up alone if not gated) */
    add(pf, h, inter, n_dense, wb, 0, lp);                 /* down_proj */
  }
  if (n_moe > 0 && P.shared_experts > 0) {
    const double inter = (double)P.shared_experts / tp / n_moe / (3.0 * h);
    add(pf, 2.0 * inter, h, n_moe, wb, 0, lp);
    add(pf, h, inter, n_moe, wb, 0, lp);
  }
  if (n_moe > 0 && P.router > 0)
    add(pf, (double)m->num_experts, h, n_moe, b, 0, KVSIM_KGEMM_BF16);
  const double vocab = (double)((m->vocab_size + 63) / 64 * 64);
  add(pf, vocab / tp, h, 1, b, 1, KVSIM_KGEMM_BF16); /* lm_head */
  return KVSIM_OK;
}

double kvsim__perf_gemms(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k) {
  /* The lm_head's rows: one per sequence, and every verified draft. */
  const double T = (double)b->new_tokens, S = (double)(b->num_seqs + b->spec_rows);
  double us = 0;
  for (int i = 0; i < pf->ngemm; i++) {
    const kvsim_perf_gemm_t *g = &pf->gemm[i];
    const double rows = g->per_seq ? S : T;
    /* Timed by the MLA block (perf/mla.c); its work still counts below. */
    if (!g->mla_block)
      us += g->count * kvsim__perf_gemm_us(pf, g, rows);
    k->flops += g->count * 2.0 * rows * g->n * g->k;
    k->weight_bytes += g->count * g->n * g->k * g->wbytes;
    k->bytes += g->count * (g->n * g->k * g->wbytes + rows * (g->n + g->k) * 2.0);
  }
  return us * 1e-6;
}
