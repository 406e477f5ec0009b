/* Step-time model: the duration of one engine step (one forward pass of
 * the batch) composed from measured kernel times of the GPU (kernels.h,
 * configs/kernels/), per TP rank, one file per term in sim/src/perf/:
 *
 *   total = GEMMs + attention + MoE + collectives + elementwise + host
 *   GEMMs       each projection's linear layer at the step's tokens (the
 *               lm_head at the sequences that sample) and the shard's
 *               (n, k), in the weight precision                (gemm.c)
 *   attention   prefill per chunk on its cached prefix, decode by batch and
 *               mean context, full and sliding layers           (attention.c)
 *   MoE         the fused MoE layer by tokens, experts and top-k (moe.c)
 *   collectives vLLM's TP all-reduce by message size (CUDA-graph rows for
 *               steps the engine captures, eager above), PP hand-offs, EP
 *               dispatch/combine                                 (comm.c)
 *   elementwise norms, rotary, activation, residuals and the sampler:
 *               their bytes at the tables' streaming rate, each kernel at
 *               least the tables' shortest kernel               (elementwise.c)
 *   host        the engine's own time per step (scheduling, input
 *               preparation, output processing), per engine and version,
 *               fitted on end-to-end rows across GPUs, never per GPU (host.c)
 *
 * A GPU without tables of its own takes those of the nearest GPU of its
 * architecture, each kernel scaled by the ratio of its roofline on the two
 * GPUs (its FLOPs at the dense peak, its bytes at the HBM bandwidth), and
 * collectives from the GPU of its link class (gpu.h kernels). Pipeline
 * parallelism: the batch traverses the stages one after the other. */
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
  /* Keys the decode sequences (one new token, something cached) attend
   * to: sum of context + 1, and of min(context + 1, window). Their pairs
   * are part of attn_full / attn_sliding; the rest is the prefills'. */
  double decode_keys_full, decode_keys_sliding;
  /* Speculative decoding's verify sequences (kvsim_batch_shape_add_verify):
   * a decode whose query is its last token and its drafts. The pairs of
   * its queries other than the last are in attn_* and here, so that no
   * prefill takes them; its drafts are rows of the lm_head and the sampler
   * beside one per sequence (vLLM computes logits at every draft position
   * to verify it). 0 without speculation. */
  double verify_pairs_full, verify_pairs_sliding;
  int64_t spec_rows;
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
  const bool prefill = new_tokens > 1 || context == 0;
  if (prefill) {
    b->num_prefill_seqs++;
    b->prefill_tokens += new_tokens;
  } else {
    b->decode_keys_full += c + n;
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
    if (!prefill)
      b->decode_keys_sliding += c + n < w ? c + n : w;
  } else {
    b->attn_sliding += n * c + n * (n + 1) / 2;
    b->kv_read_sliding += c + n;
    if (!prefill)
      b->decode_keys_sliding += c + n;
  }
}

/* Adds a verify sequence: `context` cached tokens, its last sampled token
 * and new_tokens - 1 drafts computed this step (vLLM V1 schedules 1 + k
 * tokens of a running request with k drafts and runs them as one
 * decode-like query of 1 + k rows, FlashAttention / FlashInfer with
 * max_query_len 1 + k). Counted as a decode sequence reading its KV once;
 * its pairs count toward the FLOPs. O(1). */
static inline void kvsim_batch_shape_add_verify(kvsim_batch_shape_t *b, int64_t context,
                                                int64_t new_tokens, int64_t window) {
  const double c = (double)context, n = (double)new_tokens;
  b->num_seqs++;
  b->new_tokens += new_tokens;
  b->spec_rows += new_tokens - 1;
  const double pairs = n * c + n * (n + 1) / 2;
  b->attn_full += pairs;
  b->kv_read_full += c + n;
  b->decode_keys_full += c + n;
  b->verify_pairs_full += pairs - (c + n);
  double w = window > 0 ? (double)window : c + n, keys = c + n < w ? c + n : w;
  /* Sliding layers: every query sees at most the window. */
  double sp = 0;
  for (int64_t i = 1; i <= new_tokens; i++)
    sp += c + (double)i < w ? c + (double)i : w;
  b->attn_sliding += sp;
  b->kv_read_sliding += (c < w ? c : w) + n;
  b->decode_keys_sliding += keys;
  b->verify_pairs_sliding += sp - keys;
}

typedef struct kvsim_step_cost {
  /* The terms (s), adding up to total_s. */
  double gemm_s, attn_s, moe_s, comm_s, elem_s, host_s, total_s;
  double flops, bytes;           /* FLOPs and HBM bytes of the step, per rank (diagnostic) */
  double weight_bytes, kv_bytes; /* parts of `bytes`: weights read, KV read + written */
  /* The shortest time the step could take on this GPU: its FLOPs at the
   * dense peak or its bytes at the HBM bandwidth, whichever is longer. */
  double roofline_s;
} kvsim_step_cost_t;

/* Points of a precomputed m-curve (the profile's m grid). */
#define KVSIM_PERF_MAX_M 32
#define KVSIM_PERF_MAX_GEMMS 8

/* One linear layer of the model on one rank, its latency precomputed at
 * the profile's m grid. Internal to perf. */
typedef struct kvsim_perf_gemm {
  double n, k;      /* output and input features on this rank */
  double count;     /* layers with this GEMM */
  double wbytes;    /* bytes per weight as loaded */
  int per_seq;      /* the lm_head: m = sequences that sample, not tokens */
  int mla_block;    /* MLA's projections, timed with the MLA module tables when
                       the step model has them (perf/mla.c) */
  double t_us[KVSIM_PERF_MAX_M];
} kvsim_perf_gemm_t;

/* How a borrowed table's time is carried to this GPU: the ratio of an
 * operation's roofline here to the donor's (1 for a GPU's own tables). */
typedef struct kvsim_perf_hw {
  double peak, bw;             /* this GPU: dense FLOP/s of the op's precision, HBM bytes/s */
  double donor_peak, donor_bw; /* the tables' GPU */
  bool borrowed;
} kvsim_perf_hw_t;

struct kvsim_kernels;
struct kvsim__kattn;
struct kvsim__kcoll;
struct kvsim__kmoe;
struct kvsim__kmla;

typedef struct kvsim_perf {
  /* Per TP rank, precomputed from model, GPU, kernel profile and plan by
   * kvsim_perf_init. Read-only afterwards, except quant_step_factor and
   * host_us, which callers may override. The profile pointers are into the
   * process's profile cache (kernels.h), which outlives every run. */
  const struct kvsim_kernels *kern;
  int nm;
  double m_grid[KVSIM_PERF_MAX_M];
  kvsim_perf_gemm_t gemm[KVSIM_PERF_MAX_GEMMS];
  int ngemm;
  kvsim_perf_hw_t hw_gemm, hw_attn; /* the GEMMs' precision and attention (bf16) */
  double dense_flops_per_token, weight_bytes;
  /* Attention: the nearest measured head shape and its scale. */
  const struct kvsim__kattn *ctx, *gen;
  double ctx_scale, gen_scale;
  /* MLA: the measured attention block (module tables) of the model's
   * shape, decode and prefill; NULL when the profile has none (then MLA
   * takes the GEMM and attention tables). */
  const struct kvsim__kmla *mla_gen, *mla_ctx;
  double attn_flops_per_pair, kv_bytes_per_token;
  double full_layer_frac, sliding_layer_frac;
  int num_layers;
  /* MoE: the measured fused layer of this shape, or per-expert GEMMs from
   * the GEMM table where the profile lacks it. */
  const struct kvsim__kmoe *moe;
  int64_t num_experts, experts_per_tok, num_moe_layers;
  int ep_dp;
  double moe_log_miss;
  kvsim_perf_gemm_t expert_up, expert_down; /* one expert's GEMMs (fallback) */
  double expert_flops_per_token;
  /* Collectives: vLLM's all-reduce curves for tp GPUs (graph and eager),
   * the message per token, how many per step; the largest step vLLM
   * captures in a CUDA graph; EP over the NCCL all-gather; PP over the
   * spec link. */
  const struct kvsim__kcoll *ar_graph, *ar_eager, *ep_gather;
  double ar_scale_graph, ar_scale_eager, ep_scale;
  double allreduce_msg_per_token;
  int num_collectives;
  int64_t graph_max_tokens;
  double ep_bytes_per_token;
  int num_ep_collectives;
  double p2p_bytes_per_token, link_bandwidth, link_latency_s;
  int num_p2p;
  int tp, pp;
  /* Elementwise: bytes per token (all layers) and per sampled row, at
   * stream_bw; kernels per step at least min_kernel_us each. */
  double elem_bytes_per_token, sample_bytes_per_seq, elem_kernels;
  double stream_bw, min_kernel_us;
  double peak_flops, bandwidth; /* this GPU's spec: dense peak of the GEMM precision, HBM */
  /* Slowdown of a quantized cache's attention (a scenario override). */
  double quant_step_factor;
  /* The engine's host time per step (host.c), us: fixed and per
   * scheduled request. */
  double host_us, host_per_seq_us;
} kvsim_perf_t;

/* The engines' host time per step, fixed and per scheduled request (us),
 * fitted across GPUs on dense models (host.c; `kvsim validate --all`
 * prints the fit and holds each GPU out of it): vLLM before 0.14, which
 * schedules a step after the last one ends, and from 0.14, which
 * schedules asynchronously (vllm#27614); SGLang's from its own rows
 * (silicon_sglang, H100 Qwen3-32B). TGI and HF take vLLM's synchronous
 * figures: no rows of their own. */
/* The families, in that order. */
enum { KVSIM_HOST_VLLM_SYNC = 0, KVSIM_HOST_VLLM_ASYNC = 1, KVSIM_HOST_SGLANG = 2, KVSIM_HOST_FAMILIES = 3 };
#define KVSIM_HOST_US_VLLM_SYNC 1480.0
#define KVSIM_HOST_PER_SEQ_US_VLLM_SYNC 56.5
#define KVSIM_HOST_US_VLLM_ASYNC 1269.4
#define KVSIM_HOST_PER_SEQ_US_VLLM_ASYNC 32.3
#define KVSIM_HOST_US_SGLANG 1104.0
#define KVSIM_HOST_PER_SEQ_US_SGLANG 17.1

/* Time of one TP all-reduce of `bytes` for a step of `tokens` tokens (s):
 * vLLM's all-reduce measured for this TP size, in a CUDA graph when the
 * step is one vLLM captures. 0 when tp = 1. */
double kvsim_perf_allreduce_time(const kvsim_perf_t *pf, double bytes, int64_t tokens);

/* Default quant_step_factor for a KV cache dtype: 1.0 for all dtypes until
 * calibrated (see perf.c for the evidence behind that choice). */
double kvsim_perf_default_quant_factor(kvsim_kv_dtype d);

/* Fills `pf` from a model, a GPU (its kernel profile, gpu.h) and a
 * computed plan (its tp, pp, kv dtype, quantization, engine and version).
 * Fails (KVSIM_EINVAL) on an unusable GPU or plan, or a GPU whose kernel
 * profile cannot be read. */
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

/* The GEMMs' share of a step (time, FLOPs, bytes) depends only on its
 * token rows and sequences (new_tokens, num_seqs + spec_rows), which
 * repeat from step to step: a run keeps the last ones it computed here,
 * direct-mapped, for one kvsim_perf_t. Start it zeroed; the caller owns
 * it (one per thread). */
#define KVSIM_PERF_MEMO_SLOTS 256
typedef struct kvsim_perf_memo_slot {
  int64_t tokens, seqs; /* the key; seqs 0 (never stored): an empty slot */
  double gemm_s, flops, weight_bytes, bytes;
} kvsim_perf_memo_slot_t;
typedef struct kvsim_perf_memo {
  kvsim_perf_memo_slot_t slot[KVSIM_PERF_MEMO_SLOTS];
} kvsim_perf_memo_t;

/* kvsim_perf_step_time with the GEMM terms taken from `memo` (may be NULL)
 * when it holds them: the same result, bit for bit. */
kvsim_time_ns kvsim_perf_step_time_memo(const kvsim_perf_t *pf, kvsim_perf_memo_t *memo,
                                        const kvsim_batch_shape_t *b, kvsim_step_cost_t *cost);

/* The step model's terms at a run's mean step (what its steps spend their
 * time on, for the diagnosis): `steps` steps computed `prompt_tokens`
 * prompt tokens and `decode_tokens` output tokens for `requests`
 * requests, `cached_tokens` of whose prompts came from the prefix cache.
 * The mean decode batch is decode_tokens / steps sequences (each samples
 * one token a step) at a mean prompt plus half a mean output of context,
 * beside one prefill chunk of prompt_tokens / steps tokens; the sliding
 * window is ignored. All zero when steps or requests is 0. O(batch). */
void kvsim_perf_mean_step(const kvsim_perf_t *pf, int64_t steps, int64_t prompt_tokens, int64_t decode_tokens,
                          int64_t requests, int64_t cached_tokens, kvsim_step_cost_t *cost);

/* LoRA's punica kernels (vllm/lora/punica_wrapper/punica_gpu.py
 * PunicaWrapperGPU.add_lora_linear: add_shrink (lora_shrink), x @ A to
 * rank r, then add_expand (lora_expand), @ B
 * added into the layer's output, for every wrapped projection of every
 * layer) on one rank: the slots' weights (elements of one adapter on the
 * rank) and the activations each token moves (the shrink reads the
 * layer's input, the expand reads and writes its output). */
typedef struct kvsim_perf_lora {
  double slot_elems;      /* one adapter's A and B on this rank, all layers */
  double act_elems;       /* per token: shrink inputs + 2 x expand outputs + 2 x rank, all layers */
  double dtype_bytes;
} kvsim_perf_lora_t;

/* Seconds of the LoRA kernels of one step: `tokens` tokens of requests
 * with an adapter, `adapters` distinct adapters among them. A roofline at
 * the GPU's bf16 spec (2 x tokens x slot_elems FLOPs against the adapters'
 * weights and the tokens' activations over HBM): the kernels are
 * memory-bound at small ranks. 0 when tokens is 0. */
double kvsim_perf_lora_s(const kvsim_perf_t *p, const kvsim_perf_lora_t *l, int64_t tokens,
                         int32_t adapters);

#ifdef __cplusplus
}
#endif

#endif
