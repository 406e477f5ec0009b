/* Step-time model: the duration of one engine step (one forward pass of
 * the batch) from the batch's shape, as a sum of physical terms, each in
 * units a GPU engineer recognises (sim/src/perf/, one file per term):
 *
 *   total = floors + GEMMs + attention + collectives
 *   floors     = step_overhead_us + per_layer_us x layers
 *                + per_seq_us x scheduled requests (+ per_token_us x tokens,
 *                0 unless a measurement asks for it)          (floors.c)
 *   GEMMs      = sum over each projection and expert of
 *                max(2 M N K / (precision peak x mfu_p x tile(M)),
 *                    (weight bytes + M (N + K) activation bytes) / (HBM x mbu))
 *                with M the GEMM's tokens: small M is weight-bandwidth
 *                bound, large M a per-precision fraction of peak (gemm.c)
 *   attention  = max(prefill FLOPs / (bf16 peak x attn_efficiency),
 *                    KV bytes / (HBM x mbu),
 *                    sequences x layers x attn_seq_floor_us)   (attention.c)
 *   collectives = alpha-beta per link kind: TP all-reduce twice per
 *                layer, PP stage transfers, EP dispatch/combine (comm.c)
 *
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

#ifdef __cplusplus
extern "C" {
#endif

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
  /* The terms (s): floors, GEMMs, attention and collectives add up to
   * total_s. compute_s and memory_s are diagnostics: the FLOP-bound and
   * byte-bound times of the GEMMs and attention, each at its rate. */
  double overhead_s, gemm_s, attn_s, comm_s, total_s;
  double compute_s, memory_s;
  double flops, bytes;          /* FLOPs and HBM bytes of the step, per rank */
  double weight_bytes, kv_bytes; /* parts of `bytes`: weights read, KV read + written */
  double experts_touched;       /* MoE: expected distinct experts per MoE layer (0 if dense) */
} kvsim_step_cost_t;

/* One GEMM of a layer on one rank: N x K weights (params = N K), applied
 * `count` times per step (layers that have it). Internal to perf. */
typedef struct kvsim_perf_gemm {
  double params;                /* N x K on this rank */
  double in, out;               /* K and N: activation elements read / written per token */
  double count;                 /* layers with this GEMM */
  double wbytes;                /* bytes per weight as loaded */
  int precision;                /* 0 bf16, 1 fp8, 2 fp4: the tensor-core rate it runs at */
  int per_seq;                  /* the lm_head: M = sequences (one logits row each), not tokens */
} kvsim_perf_gemm_t;

#define KVSIM_PERF_MAX_GEMMS 8

typedef struct kvsim_perf {
  /* Per TP rank, precomputed from model, GPU and plan by kvsim_perf_init.
   * Read-only afterwards, except quant_step_factor and coef which callers
   * may override. */
  kvsim_perf_gemm_t gemm[KVSIM_PERF_MAX_GEMMS]; /* dense projections (attention, MLP, shared expert, router, lm_head) */
  int ngemm;
  kvsim_perf_gemm_t expert;       /* one routed expert (gate_up + down) of one MoE layer; count = MoE layers */
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
  double embed_bytes_per_token;   /* the embedding row gathered per token */
  double act_bytes;               /* activation dtype bytes (the model dtype) */
  double allreduce_msg_per_token; /* TP: bytes of one all-reduce's message per token (hidden x dtype) */
  double p2p_bytes_per_token;     /* PP: hidden x dtype x 2 (hidden states + residual) x (pp - 1) */
  int num_collectives;            /* TP all-reduces per step (2 x layers, 0 when tp = 1) */
  int num_layers;                 /* layers a step runs through (all pp stages) */
  int num_p2p;                    /* PP transfers per step (pp - 1) */
  int tp, pp;
  double peak[3];                 /* dense tensor-core peak FLOP/s: bf16, fp8, fp4 (0: none) */
  double peak_flops;              /* of the dense linear layers' precision (diagnostic) */
  double attn_peak_flops;         /* attention kernels: bf16 peak */
  double bandwidth;               /* HBM bytes/s */
  /* Collectives (comm.c): the GPU class's link kind, all-reduce bus
   * bandwidth (nccl-tests busbw, bytes/s) and small-message latency (s);
   * PP point-to-point over the spec GPU link. */
  kvsim_link_kind link_kind;
  double busbw, ar_latency_s;
  double link_bandwidth, link_latency_s;
  /* Slowdown of the KV read of a quantized cache (fp8/int8/int4 dequantize
   * on read): multiplies the KV-read bytes' time. kvsim_perf_init sets the
   * default for the plan's kv dtype (kvsim_perf_default_quant_factor);
   * 1.0 for the model dtype. */
  double quant_step_factor;
  kvsim_gpu_perf_t coef;
} kvsim_perf_t;

/* Time of one GEMM of `g` over `m` rows (tokens), once (s): the roofline
 * of its FLOPs at the precision's peak and large-M efficiency (with the
 * tile quantization of small M) and its bytes at HBM x mbu / bw_eff.
 * Exposed for tests; flops/bytes may be NULL. */
double kvsim_perf_gemm_time(const kvsim_perf_t *pf, const kvsim_perf_gemm_t *g, double m, double bw_eff,
                            double *flops, double *bytes);

/* Time of one TP all-reduce of `bytes` over the TP group (s), by link
 * kind (comm.c): NCCL ring alpha-beta, or vLLM's custom all-reduce where
 * vLLM would use it. 0 when tp = 1. */
double kvsim_perf_allreduce_time(const kvsim_perf_t *pf, double bytes);

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

#ifdef __cplusplus
}
#endif

#endif
