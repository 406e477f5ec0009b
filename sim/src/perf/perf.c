/* Step-time roofline (perf.h). kvsim_perf_init does all the model
 * arithmetic once; kvsim_perf_step_time is a handful of multiply-adds, one
 * exp() for MoE, and no allocation, so the engine can call it every step.
 *
 * Sanity ranges, not calibration targets: the vLLM v0.6.0 performance
 * blog (vllm-project.github.io, _posts/2024-09-05-perf-update.md), "Llama3
 * 8B can generate 1 token every 13 ms under light load" on one H100 (API
 * server and scheduling included, which we do not model beyond
 * step_overhead_us); the vLLM CI latency test (buildkite vllm/
 * performance-benchmark build 9515), Llama-3.1-8B batch 8 on H200, 833 ms
 * for 128 output tokens: about 6.5 ms per decode step. With the
 * uncalibrated defaults the model predicts ~7 ms for 8B batch 1 on H100 and
 * ~5.5 ms for batch 8 on H200 (tests/unit/test_perf.c checks both fall in
 * generous ranges). Calibration is `kvsim calibrate`'s job: the fitted
 * coefficients live in configs/gpus/<gpu>.json "perf" (scripts/calibrate.sh),
 * the generation defaults in sim/src/hw/gpu.c. */
#include "kvsim/perf.h"

#include <math.h>
#include <string.h>

#include "memory/overheads.h"

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
  if (!(c->mfu > 0 && c->mfu <= 1) || !(c->mbu > 0 && c->mbu <= 1) ||
      !(c->attn_efficiency > 0 && c->attn_efficiency <= 1))
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: gpu '%s': mfu=%g mbu=%g attn_efficiency=%g, each must be in (0, 1]",
                         g->name, c->mfu, c->mbu, c->attn_efficiency);
  if (c->step_overhead_us < 0 || c->per_seq_us < 0 || c->per_token_us < 0 || c->per_layer_us < 0)
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
   * embedding table is gathered (one row per token, counted with the
   * activations); the rotary cos/sin cache is indexed, not streamed. */
  const bool qlin = q.kind != KVSIM_QUANT_NONE && !q.experts_only;
  const double lin_b = qlin ? kvsim__linear_bytes_per_param(&q, m->hidden_size, b) : b;
  const double exp_b = q.kind != KVSIM_QUANT_NONE ? kvsim__linear_bytes_per_param(&q, m->hidden_size, b) : b;
  pf->weight_bytes = (attn_rank + mlp_rank + shared_rank) * lin_b +
                     ((double)P.router + (double)P.norms + (double)P.final_norm + lm_rank) * b;
  pf->expert_bytes_per_expert_layer = expert_held * exp_b;
  if (pf->ep_dp > 1) {
    /* EP dispatch and combine with vLLM's default all2all backend
     * "allgather_reducescatter" (parallel_config.all2all_backend in the
     * measured runs' meta.json): before each MoE layer the hidden states
     * of the group's ep_dp ranks are all-gathered, after it the outputs
     * reduce-scattered; each moves (ep_dp - 1) x this rank's tokens x
     * hidden x dtype through this rank's link. */
    pf->ep_bytes_per_token = 2.0 * (double)m->num_moe_layers * h * b * (pf->ep_dp - 1);
    pf->num_ep_collectives = 2 * (int)m->num_moe_layers;
  }

  /* KV: the plan's per-layer entry (scales of int8/int4 caches included,
   * MLA's one latent per token per layer) over every layer of the model. */
  pf->kv_bytes_per_token = (double)pl->per_token_kv_bytes / pl->num_layers * L;

  /* Activations: each GEMM reads its input and writes its output once per
   * token: qkv (h in, q + k + v out), o_proj (heads x v in, h out),
   * gate_up (h in, 2I out), down (I in, h out); MoE: top-k experts' and the
   * shared expert's intermediate. Element-wise ops are assumed fused or
   * cache-resident. Plus the embedding row gathered per token. */
  double qkv_out, attn_out = heads_rank * (double)(m->v_head_dim > 0 ? m->v_head_dim : m->head_dim);
  if (m->mla)
    qkv_out = heads_rank * (double)m->head_dim + (double)(m->kv_lora_rank + m->qk_rope_head_dim);
  else
    qkv_out = heads_rank * (double)m->head_dim +
              2.0 * (double)kvsim_model_kv_heads_per_rank(m, tp) * (double)m->head_dim;
  const double n_moe = m->num_experts > 0 ? m->num_moe_layers : 0, n_dense = L - n_moe;
  const double inter_moe =
      (double)m->experts_per_tok * m->moe_intermediate_size + (double)m->shared_expert_intermediate_size;
  const double mlp_elems = (n_dense * 3.0 * (double)m->intermediate_size + n_moe * 3.0 * inter_moe) / tp;
  pf->act_bytes_per_token = b * (L * (4.0 * h + qkv_out + attn_out) + mlp_elems + h);

  /* Tensor parallelism: an all-reduce of the hidden state after attention
   * and after the MLP of every layer (vLLM RowParallelLinear), in the model
   * dtype. A ring all-reduce moves 2 (tp - 1) / tp of the message over each
   * GPU's link; each collective also pays the link latency once. */
  pf->tp = tp;
  pf->pp = pp;
  pf->num_layers = m->num_layers;
  if (tp > 1) {
    pf->allreduce_bytes_per_token = 2.0 * L * h * b * 2.0 * (tp - 1) / tp;
    pf->num_collectives = 2 * m->num_layers;
  }
  /* Pipeline parallelism: each stage hands the next one hidden_states and
   * residual (vLLM IntermediateTensors) for every token. */
  if (pp > 1) {
    pf->p2p_bytes_per_token = 2.0 * h * b * (pp - 1);
    pf->num_p2p = pp - 1;
  }

  /* fp8 weights on a GPU with fp8 tensor cores run fp8 GEMMs (vLLM fp8
   * w8a8 with dynamic activation scales); int8/int4/mxfp4 are charged at
   * the bf16 rate (weight-only kernels dequantize to bf16; int8 w8a8 is
   * conservatively not credited). Attention runs in bf16. */
  const bool fp8_gemm = q.kind == KVSIM_QUANT_FP8 && !q.experts_only && g->fp8_tflops > 0;
  pf->peak_flops = (fp8_gemm ? g->fp8_tflops : g->bf16_tflops) * 1e12;
  pf->attn_peak_flops = g->bf16_tflops * 1e12;
  pf->bandwidth = g->hbm_bandwidth_GBps * 1e9;
  pf->link_bandwidth = (g->gpu_link_GBps > 0 ? g->gpu_link_GBps : g->host_link_GBps) * 1e9;
  pf->link_latency_s = g->gpu_link_latency_us * 1e-6;
  if ((tp > 1 || pp > 1 || pf->ep_dp > 1) && !(pf->link_bandwidth > 0))
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
  const kvsim_gpu_perf_t *c = &pf->coef;
  const double T = (double)b->new_tokens, S = (double)b->num_seqs;

  /* The fixed part of a step is per layer (a layer's dozen small kernels
   * each have a floor, and TP adds two all-reduce latencies per layer),
   * not per step: on H100 the decode TPOT of Llama-3.1-70B (80 layers) and
   * Qwen3-32B (64 layers) beyond their weight reads is ~75 us per layer at
   * TP 2, 4 and 8 alike, while one constant per step fitted on the Llama
   * rows put the Qwen rows' TPOT 15-30 % high (held-out median |error| of
   * TPOT 19.7 %; 12.9 % with the per-layer term). */
  k.overhead_s = (c->step_overhead_us + c->per_layer_us * pf->num_layers + c->per_seq_us * S +
                  c->per_token_us * T) *
                 1e-6;

  const double dense = pf->dense_flops_per_token * T + pf->lm_head_flops_per_seq * S;
  const double attn = pf->attn_flops_per_pair *
                      (pf->full_layer_frac * b->attn_full + pf->sliding_layer_frac * b->attn_sliding);
  k.flops = dense + attn;
  /* attn_efficiency is the attention kernels' efficiency relative to the
   * GEMMs' mfu (FlashAttention reaches less of the peak than a GEMM). */
  k.compute_s = dense / (pf->peak_flops * c->mfu) +
                attn / (pf->attn_peak_flops * c->mfu * c->attn_efficiency);

  /* Under EP the experts see the tokens of all ep_dp ranks and this rank
   * reads its 1 / ep share of the experts they touch. */
  k.experts_touched = kvsim_perf_experts_touched(pf, b->new_tokens * pf->ep_dp);
  const double held = pf->ep_dp > 1 ? (double)pf->ep_dp * pf->tp : 1.0;
  const double expert_bytes =
      k.experts_touched / held * (double)pf->num_moe_layers * pf->expert_bytes_per_expert_layer;
  k.weight_bytes = pf->weight_bytes + expert_bytes;
  const double kv_read =
      pf->kv_bytes_per_token *
      (pf->full_layer_frac * b->kv_read_full + pf->sliding_layer_frac * b->kv_read_sliding);
  const double kv_write = pf->kv_bytes_per_token * T;
  k.kv_bytes = kv_read + kv_write;
  k.bytes = k.weight_bytes + k.kv_bytes + pf->act_bytes_per_token * T;
  /* A quantized cache pays its dequantization on the KV it reads. */
  /* Expert weights stream at moe_efficiency of a dense GEMM's rate. */
  const double moe_extra = c->moe_efficiency > 0 ? expert_bytes * (1.0 / c->moe_efficiency - 1.0) : 0;
  k.memory_s = (k.bytes + moe_extra + kv_read * (pf->quant_step_factor - 1.0)) / (pf->bandwidth * c->mbu);

  if (T > 0 && (pf->num_collectives || pf->num_p2p || pf->num_ep_collectives))
    k.comm_s = T * (pf->allreduce_bytes_per_token + pf->p2p_bytes_per_token + pf->ep_bytes_per_token) /
                   pf->link_bandwidth +
               (pf->num_collectives + pf->num_p2p + pf->num_ep_collectives) * pf->link_latency_s;

  /* One roofline over the whole step. Tried and not adopted: a max per
   * kernel class, max(GEMM compute, weight bytes) + max(attention compute,
   * KV bytes), which stops a long decode batch's KV read from hiding under
   * a chunked prefill's GEMM compute. Refitted on the same data it changed
   * nothing measurable (H100 Llama-3.1-70B rows: median |error| TTFT / TPOT
   * 2.5 / 3.2 % vs 3.0 / 3.5 % in-sample, 19.5 / 12.1 % vs 18.8 / 12.7 % on
   * the held-out Qwen3-32B rows; the RTX 4090 and RTX PRO 6000 runs: rms
   * error 1.2 vs 1.3 % and 1.0 vs 0.4 %), so the simpler form stays. */
  k.total_s = k.overhead_s + (k.compute_s > k.memory_s ? k.compute_s : k.memory_s) + k.comm_s;
  if (cost)
    *cost = k;
  /* The double-to-int64 conversion is undefined past 2^63 (and for NaN). */
  if (!(k.total_s * 1e9 < (double)KVSIM_PERF_MAX_STEP_NS))
    return KVSIM_PERF_MAX_STEP_NS;
  return kvsim_time_from_s(k.total_s);
}
