/* Step-time model: the duration of one engine step (one forward pass of
 * the batch) from the batch's shape. A roofline:
 *
 *   total = overhead + max(compute, memory) + comm
 *   overhead = step_overhead_us + per_layer_us x layers
 *              + per_seq_us x num_seqs + per_token_us x new_tokens
 *   compute  = (dense FLOPs + attention FLOPs / attn_efficiency) / (peak x mfu)
 *   memory   = bytes / (HBM bandwidth x mbu)
 *   comm     = TP all-reduce (2 per layer) + PP stage-to-stage transfers
 *              + EP dispatch/combine (2 per MoE layer)
 * (perf.c says why one max over the step, not one per kernel class.)
 *
 * FLOPs: 2 x active linear parameters per new token (routed experts: top-k
 * of them), the lm_head once per sequence (logits only for sampled rows),
 * and attention 2 x (qk_dim + v_dim) per head per (new token, context
 * token) pair; MLA uses the absorbed latent dims.
 * Bytes: weights read once per step (MoE: the expected number of distinct
 * experts the step's tokens touch) + KV read for every sequence's context
 * (sliding layers at most the window) + KV written + GEMM activations.
 * Everything is per TP rank. Pipeline parallelism: the batch traverses the
 * pp stages one after the other (no pipelining credit), so a step costs the
 * whole model per TP rank plus pp - 1 point-to-point transfers.
 * Coefficients come from the GPU config (gpu.h perf). */
#ifndef KVSIM_PERF_H
#define KVSIM_PERF_H

#include <stdint.h>

#include "kvsim/clock.h"
#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

/* What the step-time model needs to know of a batch. The engine fills it
 * in O(batch) per step. "Context" of a sequence = tokens already in its KV
 * cache before this step; "new" = tokens it computes this step. */
typedef struct kvsim_batch_shape {
  int64_t num_seqs;         /* sequences with work this step */
  int64_t num_prefill_seqs; /* of which in prefill (new > 1 or first chunk) */
  int64_t new_tokens;       /* sum of new tokens (the step's token count) */
  int64_t prefill_tokens;   /* new tokens of prefill sequences */
  /* Attention work: (query, key) pairs summed over sequences,
   * sum_{i=1..new} (context + i) = new x (context + (new + 1) / 2) for
   * full-attention layers, sum_{i=1..new} min(context + i, window) for
   * sliding layers. */
  double attn_full, attn_sliding;
  /* KV tokens read: sum over sequences of context + new, and of
   * min(context, window) + new (a chunk reads its own tokens and at most
   * the window before it). */
  double kv_read_full, kv_read_sliding;
} kvsim_batch_shape_t;

/* Adds one sequence with `context` cached tokens computing `new_tokens`
 * this step to `b` (which starts zeroed). `window` is the model's sliding
 * window (0: none). A convenience for the engine and tests; O(1). */
static inline void kvsim_batch_shape_add(kvsim_batch_shape_t *b, int64_t context, int64_t new_tokens,
                           int64_t window) {
  const double c = (double)context, n = (double)new_tokens;
  b->num_seqs++;
  /* A sequence in prefill computes more than one token or has nothing
   * cached yet (its first chunk, possibly of one token). */
  if (new_tokens > 1 || context == 0) {
    b->num_prefill_seqs++;
    b->prefill_tokens += new_tokens;
  }
  b->new_tokens += new_tokens;
  /* Causal attention: new token i (1-based) sees context + i keys. */
  b->attn_full += n * c + n * (n + 1) / 2;
  b->kv_read_full += c + n;
  if (window > 0) {
    const double w = (double)window;
    /* sum_{i=1..n} min(c + i, w): tokens with c + i <= w see c + i keys,
     * the rest see w. */
    double j0 = w - c; /* how many i have c + i <= w */
    if (j0 < 0)
      j0 = 0;
    if (j0 > n)
      j0 = n;
    b->attn_sliding += j0 * c + j0 * (j0 + 1) / 2 + (n - j0) * w;
    b->kv_read_sliding += (c < w ? c : w) + n;
  } else {
    b->attn_sliding += n * c + n * (n + 1) / 2;
    b->kv_read_sliding += c + n;
  }
}

typedef struct kvsim_step_cost {
  double compute_s, memory_s, comm_s, overhead_s, total_s;
  double flops, bytes;          /* FLOPs and HBM bytes of the step, per rank */
  double weight_bytes, kv_bytes; /* parts of `bytes`: weights read, KV read + written */
  double experts_touched;       /* MoE: expected distinct experts per MoE layer (0 if dense) */
} kvsim_step_cost_t;

typedef struct kvsim_perf {
  /* Per TP rank, summed over all layers (all pp stages), precomputed from
   * model, GPU and plan by kvsim_perf_init. Read-only afterwards, except
   * quant_step_factor which callers may override. */
  double dense_flops_per_token;   /* 2 x active linear parameters / tp, lm_head excluded */
  double lm_head_flops_per_seq;   /* 2 x vocab x hidden / tp: logits of one sampled row */
  double attn_flops_per_pair;     /* 2 x heads/tp x (qk_dim + v_dim) x layers, per (token, context token) */
  double full_layer_frac, sliding_layer_frac;
  double weight_bytes;            /* weights read once per step (dense part, lm_head included) */
  double expert_bytes_per_expert_layer; /* one expert's weights on one layer, per rank (MoE; whole under EP) */
  int64_t num_experts, experts_per_tok, num_moe_layers;
  int ep_dp;                      /* expert parallelism: data-parallel ranks in the EP group (1: none) */
  double ep_bytes_per_token;      /* EP dispatch + combine bytes per token of this rank, all MoE layers */
  int num_ep_collectives;         /* EP collectives per step (2 per MoE layer) */
  double moe_log_miss;            /* log(1 - k/E): P(an expert is missed by one token) */
  double kv_bytes_per_token;      /* per rank, all layers, scales included */
  double act_bytes_per_token;     /* GEMM activations in/out per token, all layers, + embedding row */
  double allreduce_bytes_per_token; /* TP: hidden x dtype x 2 per layer, ring factor 2(tp-1)/tp applied */
  double p2p_bytes_per_token;     /* PP: hidden x dtype x (pp - 1) */
  int num_collectives;            /* TP all-reduces per step (2 x layers, 0 when tp = 1) */
  int num_layers;                 /* layers a step runs through (all pp stages) */
  int num_p2p;                    /* PP transfers per step (pp - 1) */
  int tp, pp;
  double peak_flops;              /* dense GEMMs: fp8 peak with fp8 weights on an fp8 GPU, else bf16 */
  double attn_peak_flops;         /* attention kernels: bf16 peak */
  double bandwidth, link_bandwidth, link_latency_s; /* bytes/s, bytes/s, s */
  /* Slowdown of the KV read of a quantized cache (fp8/int8/int4 dequantize
   * on read): multiplies the KV-read bytes' time. kvsim_perf_init sets the
   * default for the plan's kv dtype (kvsim_perf_default_quant_factor);
   * 1.0 for the model dtype. */
  double quant_step_factor;
  kvsim_gpu_perf_t coef;
} kvsim_perf_t;

/* Default quant_step_factor for a KV cache dtype: 1.0 for all dtypes until
 * calibrated (see perf.c for the evidence behind that choice). */
double kvsim_perf_default_quant_factor(kvsim_kv_dtype d);

/* Fills `pf` from a model, a GPU and a computed plan (its tp, pp, kv dtype,
 * quantization). Fails (KVSIM_EINVAL) on an unusable GPU or plan. */
int kvsim_perf_init(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_gpu_t *g,
                    const kvsim_plan_t *pl, kvsim_err *err);

/* Expected number of distinct routed experts that `tokens` tokens touch on
 * one MoE layer under uniform routing: E x (1 - (1 - k/E)^tokens). 0 for a
 * dense model. */
double kvsim_perf_experts_touched(const kvsim_perf_t *pf, int64_t tokens);

/* The longest step kvsim_perf_step_time returns: 1e18 ns (~31 years). A
 * step past it (an extreme shape on a range-checked but extreme GPU) is
 * held there, so that a clock of < 2^63 - 1e18 ns plus a step cannot
 * overflow. */
#define KVSIM_PERF_MAX_STEP_NS INT64_C(1000000000000000000)

/* Duration of one step. Pure function of the shape: same shape, same time;
 * O(1). An empty batch (no sequence, no token) costs 0. `cost` may be NULL.
 * At most KVSIM_PERF_MAX_STEP_NS (cost->total_s keeps the unclamped value). */
kvsim_time_ns kvsim_perf_step_time(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b,
                                   kvsim_step_cost_t *cost /* may be NULL */);

#endif
