/* Routed experts (perf.h): vLLM's fused MoE layer, from the GPU's measured
 * table of the model's shape (hidden, expert intermediate, top-k, experts)
 * at its expert TP x EP, under skewed routing (kernels.c; the rows include
 * top-k selection, the expert GEMMs, the activation and the weighted sum;
 * not the router GEMM, shared experts or communication, which gemm.c and
 * comm.c add). Under expert parallelism a rank holds num_experts / ep
 * experts and computes them for the tokens of every data-parallel rank of
 * its group (ep_dp x its own), as the table's rank 0 does with all tokens.
 *
 * A shape the profile does not have is composed from the GEMM table: the
 * expected distinct experts the tokens touch (uniform routing), each a
 * gate_up and a down GEMM of its share of the tokens. */
#include <math.h>
#include <string.h>

#include "memory/overheads.h"
#include "perf/ktab.h"
#include "perf/terms.h"

/* The table's precision name for the experts' weights. */
static const char *moe_dtype(const kvsim_quant_t *q, int prec) {
  switch (q->kind) {
  case KVSIM_QUANT_FP8:
  case KVSIM_QUANT_INT8:
    return prec == KVSIM_KGEMM_FP8_BLOCK || q->block_size > 0 ? "fp8_block" : "fp8";
  case KVSIM_QUANT_MXFP4:
    return "w4a16_mxfp4";
  case KVSIM_QUANT_INT4:
    return "int4_wo";
  case KVSIM_QUANT_NONE:
  default:
    return "bfloat16";
  }
}

int kvsim__perf_init_moe(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_plan_t *pl, const kvsim_quant_t *q,
                         kvsim_err *err) {
  (void)err;
  if (!(m->num_experts > 0 && m->num_moe_layers > 0))
    return KVSIM_OK;
  const int tp = pf->tp;
  const int ep = pl->p.ep > 1 ? pl->p.ep : 1;
  pf->ep_dp = ep / tp > 1 ? ep / tp : 1;
  pf->num_experts = m->num_experts;
  pf->experts_per_tok = m->experts_per_tok;
  pf->num_moe_layers = m->num_moe_layers;
  pf->moe_log_miss = m->experts_per_tok < m->num_experts ? log1p(-(double)m->experts_per_tok / (double)m->num_experts)
                                                         : -INFINITY;
  const int moe_tp = ep > 1 ? 1 : tp, moe_ep = ep > 1 ? ep : 1;
  const int fp8_table = q->kind == KVSIM_QUANT_FP8 && q->block_size > 0 ? KVSIM_KGEMM_FP8_BLOCK : KVSIM_KGEMM_FP8;
  pf->moe = kvsim__kmoe_find(pf->kern, moe_dtype(q, fp8_table), (int)m->hidden_size, (int)m->moe_intermediate_size,
                             (int)m->experts_per_tok, (int)m->num_experts, moe_tp, moe_ep);
  /* The fallback's expert GEMMs, in the experts' precision. */
  const int b = m->dtype_bytes;
  const double wb = q->kind != KVSIM_QUANT_NONE ? kvsim__linear_bytes_per_param(q, m->hidden_size, b) : b;
  int prec = KVSIM_KGEMM_BF16;
  if (q->kind == KVSIM_QUANT_FP8 && kvsim_kernels_has_gemm(pf->kern, (kvsim_kgemm)fp8_table))
    prec = fp8_table;
  else if (q->kind != KVSIM_QUANT_NONE)
    prec = -1;
  const double h = (double)m->hidden_size, inter = (double)m->moe_intermediate_size / moe_tp;
  pf->expert_up = (kvsim_perf_gemm_t){.n = 2.0 * inter, .k = h, .count = 1, .wbytes = wb};
  pf->expert_down = (kvsim_perf_gemm_t){.n = h, .k = inter, .count = 1, .wbytes = wb};
  kvsim__perf_fill_gemm(pf, &pf->expert_up, prec);
  kvsim__perf_fill_gemm(pf, &pf->expert_down, prec);
  pf->expert_flops_per_token = 2.0 * 3.0 * h * inter * (double)m->experts_per_tok;
  return KVSIM_OK;
}

double kvsim__perf_moe(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k) {
  if (pf->num_moe_layers <= 0 || b->new_tokens <= 0)
    return 0;
  const double tokens = (double)b->new_tokens * pf->ep_dp;
  const double touched = kvsim_perf_experts_touched(pf, b->new_tokens * pf->ep_dp);
  const double held = pf->ep_dp > 1 ? (double)pf->ep_dp * pf->tp : 1.0;
  const double wbytes = (pf->expert_up.n * pf->expert_up.k + pf->expert_down.n * pf->expert_down.k) *
                        pf->expert_up.wbytes * touched / held;
  const double flops = tokens * pf->expert_flops_per_token / held;
  double us;
  if (pf->moe) {
    us = kvsim__kcurve_at(&pf->moe->c, tokens) * kvsim__perf_hw_ratio(&pf->hw_gemm, flops, wbytes);
  } else {
    const double rows = tokens * (double)pf->experts_per_tok / touched;
    us = touched / held *
         (kvsim__perf_gemm_us(pf, &pf->expert_up, rows) + kvsim__perf_gemm_us(pf, &pf->expert_down, rows));
  }
  const double L = (double)pf->num_moe_layers;
  k->flops += L * flops;
  k->weight_bytes += L * wbytes;
  k->bytes += L * wbytes;
  return L * us * 1e-6;
}
