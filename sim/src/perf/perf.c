/* Step-time model (perf.h): kvsim_perf_init does all the model
 * arithmetic once (the GEMM shapes per rank, attention and KV geometry,
 * the collectives' messages); kvsim_perf_step_time adds the terms of
 * gemm.c, attention.c, comm.c and floors.c, a few dozen multiply-adds,
 * one exp() for MoE, and no allocation, so the engine can call it every
 * step.
 *
 * Sanity ranges, not calibration targets: the vLLM v0.6.0 performance
 * blog (vllm-project.github.io, _posts/2024-09-05-perf-update.md), "Llama3
 * 8B can generate 1 token every 13 ms under light load" on one H100 (API
 * server and scheduling included); the vLLM CI latency test (buildkite
 * vllm/performance-benchmark build 9515), Llama-3.1-8B batch 8 on H200,
 * 833 ms for 128 output tokens: about 6.5 ms per decode step
 * (tests/unit/test_perf.c checks both fall in generous ranges).
 * Calibration is `kvsim calibrate`'s job: the fitted coefficients live in
 * configs/gpus/<gpu>.json "perf" (scripts/calibrate.sh), the generation
 * defaults in sim/src/hw/borrow.c. */
#include "kvsim/perf.h"

#include <math.h>
#include <string.h>

#include "memory/overheads.h"
#include "perf/terms.h"

double kvsim_perf_default_quant_factor(kvsim_kv_dtype d) {
  /* 1.0 everywhere until `kvsim validate` fits it. Evidence gathered so
   * far does not transfer to vLLM: vLLM's fp8 cache is read natively or
   * dequantized inside the fused attention kernel; the only measured
   * slowdown found for int8/int4 caches is llama.cpp (q8_0 +13-14 %,
   * q4_0 +15-16 % per decoded token, 0.5B/1.5B models; github.com/
   * v-code01/kvquant), a different kernel on a whole-step basis. SGLang's
   * docs warn that an unfused dequantization can be "extremely slow". */
  switch (d) {
  case KVSIM_KV_FP8:
  case KVSIM_KV_INT8:
  case KVSIM_KV_INT4:
  case KVSIM_KV_AUTO:
  case KVSIM_KV_BF16:
  case KVSIM_KV_FP16:
  default:
    return 1.0;
  }
}


int kvsim_perf_init(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_gpu_t *g,
                    const kvsim_plan_t *pl, kvsim_err *err) {
  memset(pf, 0, sizeof *pf);
  const int tp = pl->p.tp, pp = pl->p.pp;
  if (tp < 1 || pp < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: plan has tp=%d pp=%d, expected >= 1 (was the plan computed?)",
                         tp, pp);
  if (pl->num_layers < 1 || pl->per_token_kv_bytes <= 0 || m->num_layers < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: plan has %d KV layers and %lld KV bytes per token",
                         pl->num_layers, (long long)pl->per_token_kv_bytes);
  if (!(g->hbm_bandwidth_GBps > 0) || !(g->bf16_tflops > 0))
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: gpu '%s': hbm_bandwidth_GBps=%g bf16_tflops=%g, both must be > 0",
                         g->name, g->hbm_bandwidth_GBps, g->bf16_tflops);
  const kvsim_gpu_perf_t *c = &g->perf;
  if (!(c->mfu > 0 && c->mfu <= 1) || !(c->mfu_fp8 > 0 && c->mfu_fp8 <= 1) || !(c->mfu_fp4 > 0 && c->mfu_fp4 <= 1) ||
      !(c->mbu > 0 && c->mbu <= 1) || !(c->attn_efficiency > 0 && c->attn_efficiency <= 1))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "perf: gpu '%s': mfu=%g mfu_fp8=%g mfu_fp4=%g mbu=%g attn_efficiency=%g, each must be in (0, 1]",
                         g->name, c->mfu, c->mfu_fp8, c->mfu_fp4, c->mbu, c->attn_efficiency);
  if (c->step_overhead_us < 0 || c->per_seq_us < 0 || c->per_token_us < 0 || c->per_layer_us < 0 ||
      c->attn_seq_floor_us < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: gpu '%s': negative overhead coefficient", g->name);
  kvsim_quant_t q;
  int rc = kvsim__quant_resolve(m, pl->p.quantization, &q, err);
  if (rc < 0)
    return rc;

  kvsim_model_params_t P;
  kvsim_model_count_params(m, &P);
  const int b = m->dtype_bytes;
  const double h = (double)m->hidden_size, L = m->num_layers;

  /* Linear weights per TP rank (vLLM splits q/o, MLP and each expert's
   * intermediate over TP; K/V projections are replicated when TP exceeds
   * the KV heads; the router is replicated). */
  double attn_rank;
  if (m->mla)
    attn_rank = (double)P.attention / tp;
  else
    attn_rank = (double)(P.attention - P.kv_proj) / tp +
                (double)P.kv_proj / m->num_kv_heads * kvsim_model_kv_heads_per_rank(m, tp);
  const double mlp_rank = (double)P.dense_mlp / tp, shared_rank = (double)P.shared_experts / tp;
  double expert_rank = 0; /* one expert of one layer: its FLOPs per token on this rank */
  double expert_held = 0; /* the bytes of it this rank holds */
  const int ep = pl->p.ep > 1 && m->num_experts > 0 ? pl->p.ep : 1;
  pf->ep_dp = ep / tp > 1 ? ep / tp : 1;
  if (m->num_experts > 0 && m->num_moe_layers > 0) {
    expert_rank = (double)P.experts / ((double)m->num_experts * m->num_moe_layers) / tp;
    /* Expert parallelism: a rank holds num_experts / ep whole experts and
     * computes them for the tokens of every data-parallel rank of its
     * group (ep_dp x its own, with balanced load), i.e. per own token the
     * same top-k x expert / tp FLOPs as without EP. */
    expert_held = ep > 1 ? expert_rank * tp : expert_rank;
    pf->num_experts = m->num_experts;
    pf->experts_per_tok = m->experts_per_tok;
    pf->num_moe_layers = m->num_moe_layers;
    pf->moe_log_miss = m->experts_per_tok < m->num_experts
                           ? log1p(-(double)m->experts_per_tok / (double)m->num_experts)
                           : -INFINITY;
  }
  /* The lm_head (or the tied embedding) is vocabulary-parallel over the
   * padded vocabulary (VocabParallelEmbedding pads to 64). */
  const double vocab = (double)((m->vocab_size + 63) / 64 * 64);
  const double lm_rank = vocab * h / tp;

  /* FLOPs: 2 per multiply-add of each linear weight a token passes; the
   * routed experts: top-k of them. V1 computes logits for one row per
   * scheduled request (logits_indices), so the lm_head costs per sequence. */
  pf->dense_flops_per_token =
      2.0 * (attn_rank + mlp_rank + shared_rank + (double)P.router +
             (double)m->experts_per_tok * m->num_moe_layers * expert_rank);
  pf->lm_head_flops_per_seq = 2.0 * lm_rank;

  /* Attention FLOPs per (query, key) pair: QK^T and PV, 2 per MAC. MLA
   * decode with absorbed weights attends in the latent space: scores over
   * kv_lora_rank + rope dims, values of kv_lora_rank dims (vLLM MLA backend;
   * DeepSeek-V2 paper section 2.1.3). */
  const double heads_rank = (double)m->num_heads / tp;
  double pair_dims;
  if (m->mla)
    pair_dims = (double)(m->kv_lora_rank + m->qk_rope_head_dim) + (double)m->kv_lora_rank;
  else
    pair_dims = (double)m->head_dim + (double)(m->v_head_dim > 0 ? m->v_head_dim : m->head_dim);
  pf->attn_flops_per_pair = 2.0 * heads_rank * pair_dims * L;
  /* The model's own layer pattern decides what attention reads, even when
   * the plan allocates full blocks for sliding layers (V0, hybrid manager
   * off): the kernel still stops at the window. */
  const int n_sliding = m->sliding_window > 0 ? m->num_sliding_layers : 0;
  pf->sliding_layer_frac = n_sliding / L;
  pf->full_layer_frac = 1.0 - pf->sliding_layer_frac;

  /* Weights read once per step, in the bytes the plan loaded them in. The
   * embedding table is gathered (one row per token); the rotary cos/sin
   * cache is indexed, not streamed. */
  const bool qlin = q.kind != KVSIM_QUANT_NONE && !q.experts_only;
  const double lin_b = qlin ? kvsim__linear_bytes_per_param(&q, m->hidden_size, b) : b;
  const double exp_b = q.kind != KVSIM_QUANT_NONE ? kvsim__linear_bytes_per_param(&q, m->hidden_size, b) : b;
  pf->weight_bytes = (attn_rank + mlp_rank + shared_rank) * lin_b +
                     ((double)P.router + (double)P.norms + (double)P.final_norm + lm_rank) * b;
  pf->expert_bytes_per_expert_layer = expert_held * exp_b;
  if (pf->ep_dp > 1) {
    /* EP dispatch and combine with vLLM's default all2all backend
     * "allgather_reducescatter" (parallel_config.all2all_backend): before
     * each MoE layer the hidden states of the group's ep_dp ranks are
     * all-gathered, after it the outputs reduce-scattered; each moves
     * (ep_dp - 1) x this rank's tokens x hidden x dtype through its link. */
    pf->ep_bytes_per_token = 2.0 * (double)m->num_moe_layers * h * b * (pf->ep_dp - 1);
    pf->num_ep_collectives = 2 * (int)m->num_moe_layers;
  }

  /* KV: the plan's per-layer entry (scales of int8/int4 caches included,
   * MLA's one latent per token per layer) over every layer of the model. */
  pf->kv_bytes_per_token = (double)pl->per_token_kv_bytes / pl->num_layers * L;

  /* Precision of each GEMM class: fp8 w8a8 on fp8 tensor cores; MXFP4
   * experts on fp4 tensor cores where the GPU has them (gemm.c). */
  const bool fp8_gemm = q.kind == KVSIM_QUANT_FP8 && g->fp8_tflops > 0;
  const int lin_prec = fp8_gemm && !q.experts_only ? 1 : 0;
  const int exp_prec = fp8_gemm ? 1 : q.kind == KVSIM_QUANT_MXFP4 && g->fp4_tflops > 0 ? 2 : 0;
  pf->peak[0] = g->bf16_tflops * 1e12;
  pf->peak[1] = (g->fp8_tflops > 0 ? g->fp8_tflops : g->bf16_tflops) * 1e12;
  pf->peak[2] = (g->fp4_tflops > 0 ? g->fp4_tflops : pf->peak[1] / 1e12) * 1e12;
  pf->peak_flops = pf->peak[lin_prec];
  pf->attn_peak_flops = g->bf16_tflops * 1e12;
  pf->act_bytes = b;

  /* The GEMM classes per rank, each with its in + out activation elements
   * per token: attention projections (qkv: h in, q + k + v out; o_proj:
   * heads x v_dim in, h out; MLA: the latent projections, h in and the
   * latent out, approximately), the dense MLP (gate_up: h in, 2I out;
   * down: I in, h out), the shared expert, the router, the lm_head (one
   * row per sequence), and one routed expert. */
  double qkv_out, attn_out = heads_rank * (double)(m->v_head_dim > 0 ? m->v_head_dim : m->head_dim);
  if (m->mla)
    qkv_out = heads_rank * (double)m->head_dim + (double)(m->kv_lora_rank + m->qk_rope_head_dim);
  else
    qkv_out = heads_rank * (double)m->head_dim +
              2.0 * (double)kvsim_model_kv_heads_per_rank(m, tp) * (double)m->head_dim;
  const double n_moe = m->num_experts > 0 ? (double)m->num_moe_layers : 0, n_dense = L - n_moe;
  int ng = 0;
  pf->gemm[ng++] = (kvsim_perf_gemm_t){attn_rank / L, h + attn_out, qkv_out + h, L, lin_b, lin_prec, 0};
  if (n_dense > 0 && mlp_rank > 0)
    pf->gemm[ng++] = (kvsim_perf_gemm_t){mlp_rank / n_dense, h + (double)m->intermediate_size / tp,
                                         2.0 * (double)m->intermediate_size / tp + h, n_dense, lin_b, lin_prec, 0};
  if (n_moe > 0 && shared_rank > 0) {
    const double is = (double)m->shared_expert_intermediate_size / tp;
    pf->gemm[ng++] = (kvsim_perf_gemm_t){shared_rank / n_moe, h + is, 2.0 * is + h, n_moe, lin_b, lin_prec, 0};
  }
  if (n_moe > 0 && P.router > 0)
    pf->gemm[ng++] = (kvsim_perf_gemm_t){(double)P.router / n_moe, h, (double)m->num_experts, n_moe, b, 0, 0};
  pf->gemm[ng++] = (kvsim_perf_gemm_t){lm_rank, h, vocab / tp, 1, b, 0, 1};
  pf->ngemm = ng;
  if (n_moe > 0) {
    const double ie = (double)m->moe_intermediate_size / (ep > 1 ? 1 : tp);
    pf->expert = (kvsim_perf_gemm_t){expert_held, h + ie, 2.0 * ie + h, n_moe, exp_b, exp_prec, 0};
  }
  pf->embed_bytes_per_token = h * b;

  /* Tensor parallelism: an all-reduce of the hidden state after attention
   * and after the MLP of every layer (vLLM RowParallelLinear), in the
   * model dtype (comm.c). */
  pf->tp = tp;
  pf->pp = pp;
  pf->num_layers = m->num_layers;
  if (tp > 1) {
    pf->allreduce_msg_per_token = h * b;
    pf->num_collectives = 2 * m->num_layers;
  }
  /* Pipeline parallelism: each stage hands the next one hidden_states and
   * residual (vLLM IntermediateTensors) for every token. */
  if (pp > 1) {
    pf->p2p_bytes_per_token = 2.0 * h * b * (pp - 1);
    pf->num_p2p = pp - 1;
  }
  pf->bandwidth = g->hbm_bandwidth_GBps * 1e9;
  pf->link_kind = g->link_kind;
  pf->busbw = (g->allreduce_busbw_GBps > 0 ? g->allreduce_busbw_GBps : g->gpu_link_GBps) * 1e9;
  pf->ar_latency_s = (g->allreduce_latency_us > 0 ? g->allreduce_latency_us : g->gpu_link_latency_us) * 1e-6;
  pf->link_bandwidth = (g->gpu_link_GBps > 0 ? g->gpu_link_GBps : g->host_link_GBps) * 1e9;
  pf->link_latency_s = g->gpu_link_latency_us * 1e-6;
  if ((tp > 1 || pp > 1 || pf->ep_dp > 1) && !(pf->link_bandwidth > 0 && pf->busbw > 0))
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: gpu '%s' has no GPU link bandwidth for tp=%d pp=%d",
                         g->name, tp, pp);
  pf->quant_step_factor = kvsim_perf_default_quant_factor(pl->p.kv_dtype);
  pf->coef = *c;
  return KVSIM_OK;
}

double kvsim_perf_experts_touched(const kvsim_perf_t *pf, int64_t tokens) {
  if (pf->num_experts <= 0 || tokens <= 0)
    return 0;
  /* Each token picks k of E experts; under uniform routing one expert is
   * missed by a token with probability 1 - k/E, by all T with (1 - k/E)^T. */
  return (double)pf->num_experts * -expm1((double)tokens * pf->moe_log_miss);
}

kvsim_time_ns kvsim_perf_step_time(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b,
                                   kvsim_step_cost_t *cost) {
  kvsim_step_cost_t k;
  memset(&k, 0, sizeof k);
  if (b->num_seqs <= 0 && b->new_tokens <= 0) {
    if (cost)
      *cost = k;
    return 0;
  }
  /* The terms run one after the other on the rank's stream (a layer's
   * GEMMs, its attention kernel, its all-reduces), so they add; each is a
   * roofline of its own (gemm.c, attention.c). */
  k.overhead_s = kvsim__perf_floors(pf, b);
  k.gemm_s = kvsim__perf_gemms(pf, b, &k);
  k.attn_s = kvsim__perf_attention(pf, b, &k);
  k.comm_s = kvsim__perf_comm(pf, b);
  k.total_s = k.overhead_s + k.gemm_s + k.attn_s + k.comm_s;
  if (cost)
    *cost = k;
  /* The double-to-int64 conversion is undefined past 2^63 (and for NaN). */
  if (!(k.total_s * 1e9 < (double)KVSIM_PERF_MAX_STEP_NS))
    return KVSIM_PERF_MAX_STEP_NS;
  return kvsim_time_from_s(k.total_s);
}
