/* Predictions of the non-KV terms of the memory plan (vLLM's
 * non_kv_cache_memory = weights + torch_peak_increase + non_torch_increase,
 * vllm/utils/mem_utils.py memory_profiling):
 * weights, the activation peak of the engine's profiling run, and the
 * memory outside PyTorch's allocator that the engine charges to the KV
 * budget. Every coefficient says where it comes from: the engine's code
 * (vLLM, PyTorch), or start-up logs posted in vLLM issues and PRs, each
 * cited by number where it is used. Nothing here is fitted to one of those
 * logs. */
#include "memory/overheads.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/arith.h"

#define MIB (1024.0 * 1024.0)

/* A predicted term in whole bytes. The terms are computed in doubles from
 * range-checked fields, but a product of several of them (2^30 profiled
 * tokens x 2^14 heads x 2^15 dims x 4 bytes) can pass 2^63, where the
 * conversion is undefined. Saturate at 2^60 bytes instead: a million TiB
 * never fits a GPU of at most 4 TiB, and the plan's sum of four such terms
 * stays within int64. */
#define BYTES_CAP 0x1p60

static int64_t to_bytes(double b) {
  int64_t out;
  if (!(b < BYTES_CAP) || !kvsim__double_to_i64(b + 0.5, &out))
    return (int64_t)BYTES_CAP;
  return out;
}

int kvsim__quant_resolve(const kvsim_model_t *m, const char *flag, kvsim_quant_t *q,
                         kvsim_err *err) {
  *q = m->quant;
  if (!flag || !*flag)
    return KVSIM_OK;
  memset(q, 0, sizeof *q);
  snprintf(q->method, sizeof q->method, "%s", flag);
  if (!strcasecmp(flag, "none"))
    q->kind = KVSIM_QUANT_NONE;
  else if (!strcasecmp(flag, "fp8") || !strcasecmp(flag, "fbgemm_fp8") ||
           !strcasecmp(flag, "modelopt"))
    q->kind = KVSIM_QUANT_FP8;
  else if (!strcasecmp(flag, "int8") || !strcasecmp(flag, "w8a8") ||
           !strcasecmp(flag, "compressed-tensors") || !strcasecmp(flag, "experts_int8"))
    q->kind = KVSIM_QUANT_INT8;
  else if (!strcasecmp(flag, "awq") || !strcasecmp(flag, "gptq") || !strcasecmp(flag, "int4") ||
           !strcasecmp(flag, "awq_marlin") || !strcasecmp(flag, "gptq_marlin") ||
           !strcasecmp(flag, "bitsandbytes"))
    q->kind = KVSIM_QUANT_INT4;
  else if (!strcasecmp(flag, "mxfp4")) {
    q->kind = KVSIM_QUANT_MXFP4;
    q->experts_only = true;
  } else
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "--quantization: unknown method '%s' (expected none, fp8, int8, awq, "
                         "gptq, int4, mxfp4)",
                         flag);
  if (q->kind == KVSIM_QUANT_INT4)
    q->group_size = m->quant.group_size > 0 ? m->quant.group_size : 128;
  return KVSIM_OK;
}

static int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* Bytes per parameter of a quantized linear weight with `in` input
 * features, scales included. */
double kvsim__linear_bytes_per_param(const kvsim_quant_t *q, int64_t in, int dtype_bytes) {
  switch (q->kind) {
  case KVSIM_QUANT_FP8:
    /* Block-wise (DeepSeek: one fp32 scale per 128x128) or one fp32 scale
     * per output channel. */
    return 1.0 + (q->block_size > 0 ? 4.0 / (q->block_size * q->block_size) : 4.0 / (double)in);
  case KVSIM_QUANT_INT8:
    return 1.0 + 4.0 / (double)in;
  case KVSIM_QUANT_INT4:
    /* GPTQ/AWQ: an fp16 scale and a packed 4-bit zero per group
     * (vllm/model_executor/layers/quantization/awq.py and gptq.py,
     * create_weights: qweight, qzeros, scales); symmetric compressed-tensors
     * W4A16 stores the scale only (compressed_tensors_wNa16.py
     * CompressedTensorsWNA16.create_weights). */
    return 0.5 + (q->no_zero_points ? 2.0 : 2.5) / (q->group_size > 0 ? q->group_size : 128);
  case KVSIM_QUANT_MXFP4:
    /* OCP MX: 32 fp4 elements share one 8-bit exponent scale. */
    return 0.5 + 1.0 / 32.0;
  case KVSIM_QUANT_NONE:
  default:
    return dtype_bytes;
  }
}

/* One MoE layer's routed experts on one rank, in the MXFP4 layout vLLM
 * allocates. vllm/model_executor/layers/quantization/mxfp4.py
 * Mxfp4MoEMethod.create_weights, Marlin backend (the one used on GPUs
 * without native FP4, e.g. H100): "the moe marlin kernel requires that for
 * each linear n % 256 == 0 and k % 128 == 0", so the per-rank intermediate
 * size is rounded up to 128 and the hidden size to 256; w13/w2 are packed
 * uint8 (two fp4 per byte) with one uint8 scale per 32 elements, and the
 * expert biases are bf16. For gpt-oss-120b (2880 -> 2944 x 3072) this gives
 * 65.88 GiB per GPU against the logged "Model loading took 65.9651 GiB"
 * (vllm#23278, H100, Marlin). Blackwell's FlashInfer path pads the
 * intermediate to 256 instead; kvsim__weights_bytes does not know the GPU,
 * so the Marlin layout is used everywhere. */
static double mxfp4_experts_layer_bytes(const kvsim_model_t *m, int tp) {
  int64_t ip = round_up(m->moe_intermediate_size / tp, 128);
  int64_t hp = round_up(m->hidden_size, 256);
  double per_expert = 3.0 * (double)ip * (double)hp * (0.5 + 1.0 / 32.0);
  if (m->expert_bias)
    per_expert += (double)(2 * ip + hp) * 2;
  return per_expert * (double)m->num_experts;
}

/* MLA projections that vLLM keeps whole on every rank
 * (vllm/model_executor/models/deepseek_v2.py DeepseekV2MLAAttention:
 * q_a_proj and kv_a_proj_with_mqa are ReplicatedLinear, and their
 * layernorms are replicated); q_b_proj / kv_b_proj / o_proj are split. */
static int64_t mla_replicated_params(const kvsim_model_t *m) {
  int64_t h = m->hidden_size;
  int64_t p = h * (m->kv_lora_rank + m->qk_rope_head_dim) + m->kv_lora_rank;
  if (m->q_lora_rank > 0)
    p += h * m->q_lora_rank + m->q_lora_rank;
  return p;
}

int64_t kvsim__weights_bytes(const kvsim_model_t *m, const kvsim_quant_t *q, int tp, int pp,
                             int stage) {
  return kvsim__weights_bytes_ep(m, q, tp, 1, pp, stage);
}

int64_t kvsim__weights_bytes_ep(const kvsim_model_t *m, const kvsim_quant_t *q, int tp, int ep,
                                int pp, int stage) {
  int first, last;
  kvsim_model_pp_layers(m->num_layers, pp, stage, &first, &last);
  const int b = m->dtype_bytes;
  const int64_t h = m->hidden_size;
  /* VocabParallelEmbedding pads the vocabulary to a multiple of 64
   * (DEFAULT_VOCAB_PADDING_SIZE) before splitting it over TP ranks. */
  int64_t vocab = (m->vocab_size + 63) / 64 * 64;
  double bytes = 0;
  if (stage == 0)
    bytes += (double)vocab * h / tp * b;
  if (stage == pp - 1) {
    /* A tied lm_head shares the embedding, unless it sits on another stage. */
    if (!m->tie_word_embeddings || pp > 1)
      bytes += (double)vocab * h / tp * b;
    bytes += (double)h * b; /* final norm */
  }
  /* The attention and MLP of one layer, split over TP; K/V projections are
   * replicated when TP > kv heads. */
  kvsim_model_t one = *m;
  one.num_layers = 1;
  kvsim_model_params_t lp;
  int64_t kv_rank = kvsim_model_kv_heads_per_rank(m, tp);
  bool qlin = q->kind != KVSIM_QUANT_NONE && !q->experts_only;
  double attn_b = qlin ? kvsim__linear_bytes_per_param(q, h, b) : b;
  double mlp_b = attn_b;
  double exp_b = q->kind != KVSIM_QUANT_NONE ? kvsim__linear_bytes_per_param(q, h, b) : b;
  for (int i = first; i < last; i++) {
    one.layer_moe[0] = m->layer_moe[i];
    kvsim_model_count_params(&one, &lp);
    double attn_rank;
    if (m->mla) {
      int64_t rep = mla_replicated_params(m);
      attn_rank = (double)rep + (double)(lp.attention - rep) / tp;
    } else {
      double kv = (double)lp.kv_proj / m->num_kv_heads * kv_rank;
      attn_rank = (double)(lp.attention - lp.kv_proj) / tp + kv;
    }
    bytes += attn_rank * attn_b;
    bytes += (double)lp.dense_mlp / tp * mlp_b;
    if (lp.experts && ep > 1) {
      /* Expert parallelism: each rank holds num_experts / ep whole experts
       * (vllm/model_executor/layers/fused_moe/layer.py FusedMoE:
       * determine_expert_map gives every EP rank its share of the global
       * experts; with EP the experts are not split over TP). */
      double own = lp.experts / (double)ep;
      bytes += q->kind == KVSIM_QUANT_MXFP4 ? mxfp4_experts_layer_bytes(m, 1) / ep : own * exp_b;
    } else if (lp.experts && q->kind == KVSIM_QUANT_MXFP4)
      bytes += mxfp4_experts_layer_bytes(m, tp);
    else
      bytes += (double)(lp.experts / tp) * exp_b;
    bytes += (double)lp.shared_experts / tp * mlp_b;
    bytes += (double)lp.router * b + (double)lp.norms * b;
  }
  /* Rotary cos/sin cache: max_position x rotary_dim in the model dtype
   * (vLLM RotaryEmbedding.cos_sin_cache; one instance shared by layers).
   * This is why Llama-3.1-8B loads as 14.9889 GiB (vllm#17122), not the
   * 14.9575 GiB of its parameters alone. */
  int64_t rot = m->mla ? m->qk_rope_head_dim : m->head_dim;
  bytes += (double)m->max_position_embeddings * rot * b;
  return to_bytes(bytes);
}

/* Bytes per element of the [rows x vocab] logits that the dummy sampler run
 * keeps alive at its peak. Both engines warm the sampler with top-p and
 * top-k set (V0 model_runner.profile_run: SamplingParams(top_p=0.99,
 * top_k=vocab-1); V1 gpu_model_runner._dummy_sampler_run: top_p 0.9,
 * top_k vocab-1), which takes the sort-based apply_top_k_top_p
 * (vllm/v1/sample/ops/topk_topp_sampler.py, V0 model_executor/layers/
 * sampler.py). At logits.sort() the live tensors are:
 *   2  the bf16 logits of compute_logits (held by the caller)
 *   4  their float32 copy (Sampler: logits.to(torch.float32))
 *   4  the sorted values
 *   8  the int64 sort indices
 *   8  PyTorch's segmented sort (aten/src/ATen/native/cuda/Sort.cu
 *      segmented_sort_pairs, used for >= 128 rows): an int64 index input
 *  12  cub's segmented radix sort, which double-buffers keys and values
 * = 38. The later top-p step holds less (2+4+4+8+1+4+1+4 = 28). Checks
 * against the logs: Meta-Llama-3-8B V0 on H100 (vllm#10511: 256 rows x
 * 128256) gives 1.22 GiB with the hidden states against the logged
 * activation peak of 1.26 GiB; gpt-oss-120b V1 (vllm#27508: 1024 rows x
 * 201088) gives 7.29 GiB, which is what the logged 1.71 GiB of KV leaves
 * for activations once its 65.97 GiB of weights are taken. Newer V1
 * releases can route the same call to FlashInfer's or a Triton top-k/top-p
 * (no sort) and then hold less. */
#define SAMPLER_BYTES_PER_LOGIT 38.0

/* vllm/envs.py VLLM_FUSED_MOE_CHUNK_SIZE (default 32768): fused_experts
 * processes at most this many tokens per chunk, so its intermediate caches
 * stop growing with the batch. */
#define FUSED_MOE_CHUNK 32768

int64_t kvsim__activation_bytes(const kvsim_model_t *m, int tp, int64_t tokens, int64_t seqs,
                                kvsim_plan_engine engine) {
  (void)engine; /* V0 and V1 profile the same shapes; see the sampler note */
  const int b = m->dtype_bytes;
  const double h = (double)m->hidden_size, T = (double)tokens;
  /* Forward pass, per token of the dummy batch: the residual stream
   * (residual, hidden and normed hidden states of the fused add-RMSNorm),
   * plus the largest of the block's live intermediates:
   * - attention: the fused qkv output and the attention output (MLA: the
   *   q projection, the kv_a latent, kv_b's expanded K/V and the output);
   * - dense MLP: gate_up's [T, 2I] output and SiluAndMul's [T, I] result
   *   (vLLM LlamaMLP keeps both until down_proj);
   * - MoE (vllm/model_executor/layers/fused_moe/fused_moe.py
   *   fused_experts_impl): intermediate_cache1 [M, top_k, 2I],
   *   intermediate_cache2 [M*top_k, I] and intermediate_cache3
   *   [M, top_k, H] for M tokens of a chunk, plus a shared expert's MLP. */
  double attn;
  if (m->mla) {
    double nh = (double)m->num_heads / tp;
    attn = nh * (double)(m->qk_nope_head_dim + m->qk_rope_head_dim) +
           (double)(m->kv_lora_rank + m->qk_rope_head_dim) +
           nh * (double)(m->qk_nope_head_dim + m->v_head_dim) + nh * (double)m->v_head_dim;
  } else {
    double qd = (double)(m->num_heads * m->head_dim) / tp;
    double kvd = (double)(kvsim_model_kv_heads_per_rank(m, tp) * m->head_dim);
    attn = qd + 2 * kvd + qd;
  }
  double per_token = attn;
  bool any_dense = m->num_moe_layers < m->num_layers;
  if (any_dense && 3.0 * m->intermediate_size / tp > per_token)
    per_token = 3.0 * m->intermediate_size / tp;
  double forward = T * (3 * h + per_token) * b;
  if (m->num_experts && m->num_moe_layers) {
    double M = T < FUSED_MOE_CHUNK ? T : FUSED_MOE_CHUNK;
    double moe = M * (double)m->experts_per_tok * (3.0 * m->moe_intermediate_size / tp + h) * b +
                 T * (m->shared_expert_intermediate_size
                          ? 3.0 * m->shared_expert_intermediate_size / tp * b
                          : 0) +
                 T * (double)m->num_experts * 4; /* fp32 router logits */
    double with_moe = T * 3 * h * b + moe;
    if (with_moe > forward)
      forward = with_moe;
  }
  /* The sampler runs on the last token of each dummy request
   * (min(tokens, max_num_seqs) rows; V1 _dummy_run splits the batch over
   * that many requests, V0 profile_run over max_num_seqs sequences), with
   * the full vocabulary on the rank that samples (V1 all-gathers logits to
   * every TP rank; V0 gathers them to the driver, whose pool is the
   * smallest and hence the one that counts). `seqs` = 0: this rank does
   * not sample (a pipeline stage before the last). The batch's hidden
   * states are still alive while it runs. */
  double rows = (double)(seqs < tokens ? seqs : tokens);
  double sampler = rows * (double)m->vocab_size * SAMPLER_BYTES_PER_LOGIT;
  double after = rows > 0 ? sampler + T * h * b : 0;
  double peak = forward > after ? forward : after;
  return to_bytes(peak);
}

/* Memory that grows outside PyTorch's allocator during start-up and that
 * the engine charges (non_torch_increase: V0 >= 0.6.5 and V1 >= 0.9.2
 * measure it from a snapshot taken after the CUDA context exists): kernel
 * modules loaded lazily at first use (CUDA_MODULE_LOADING=LAZY), cuBLAS /
 * cuBLASLt and attention-backend workspaces.
 * 0.18 GiB is the median of the TP=1 values logged by those versions:
 * 0.10 (A100-40GB, vllm#12330), 0.16 (H100, vllm#12126), 0.20 (24 GB GPU,
 * vllm#14447) and 0.33 GiB (RTX 5090, vllm#14452). The 1.79 GiB of the
 * vllm#10511 description predates the #12126 fix of that measurement. */
#define NON_TORCH_BASE_GIB 0.18

/* What the releases that charge everything outside PyTorch (V0 0.6.4,
 * V1 0.8.0-0.9.1) log at TP=1: the base above plus the CUDA context and
 * whatever else was resident. 0.44 GiB: "non_torch_memory=0.44GiB" of
 * v0.6.4.post1 on an A6000 at TP=1 (vllm#10360). Memory of other
 * processes, which those releases also charged, is not modelled. */
#define NON_TORCH_ALL_USED_GIB 0.44

/* NCCL buffers of a communicator (TP or PP > 1), when the engine charges
 * them: V0 (0.6.5+) takes its baseline snapshot in Worker.init_device
 * before init_worker_distributed_environment, so they land in
 * non_torch_increase, as do V1 0.9.2-0.10.x (vllm#19312) and the
 * releases that charge everything outside PyTorch; V1 from vllm#25359
 * initialises NCCL before the snapshot (vllm/v1/worker/gpu_worker.py
 * Worker.init_device) and does not charge them. Their size depends on the
 * interconnect:
 * - NVLink + NVSwitch on Hopper/Blackwell (NVLS buffers): 1.79 GiB, the
 *   TP=2 minus TP=1 non_torch of Meta-Llama-3-8B on H100 (vllm#10511:
 *   3.58 - 1.79 GiB);
 * - NVLink on earlier GPUs (A100): 0.21 GiB, the middle of the 0.34-0.43
 *   GiB logged per worker at TP=4 on A100-40GB (vllm#16570) minus the
 *   TP=1 base;
 * - PCIe only: 0.07 GiB, the 0.25 GiB logged at TP=2 on RTX 4090
 *   (vllm#13061) minus the TP=1 base. */
static double nccl_gib(const kvsim_gpu_t *g) {
  bool nvlink = g->gpu_link_GBps > g->host_link_GBps;
  if (!nvlink)
    return 0.07;
  if (!strcmp(g->generation, "hopper") || !strcmp(g->generation, "blackwell"))
    return 1.79;
  return 0.21;
}

int64_t kvsim__non_torch_bytes(const kvsim_model_t *m, const kvsim_gpu_t *g, int tp, int pp,
                               kvsim_plan_engine engine, int vllm_version) {
  (void)m;
  kvsim__nontorch_rule rule = kvsim__plan_nontorch_rule(engine, vllm_version);
  double gib = rule == KVSIM__NONTORCH_ALL_USED ? NON_TORCH_ALL_USED_GIB : NON_TORCH_BASE_GIB;
  if (rule != KVSIM__NONTORCH_SINCE_SNAPSHOT && tp * pp > 1)
    gib += nccl_gib(g);
  return (int64_t)(gib * KVSIM_GIB + 0.5);
}

int64_t kvsim__cuda_graph_bytes(const kvsim_model_t *m, int tp, int pp, int64_t max_num_seqs) {
  /* Piecewise graphs: a few MiB per captured size and layer block; vLLM
   * logs 0.21 GiB for Llama-3.2-1B (35 sizes) and estimates 0.26-0.36 GiB
   * on 8B-class models (vllm#11349 "Graph capturing finished in 14 secs,
   * took 0.21 GiB"; "Estimated CUDA graph memory" lines in LMCache#3326 and
   * gpustack/runner PR #251). Only subtracted where the engine does
   * (plan.c). */
  int64_t sizes = max_num_seqs < 512 ? max_num_seqs / 8 + 3 : 67;
  double per = (double)m->num_layers / pp * 0.09 * MIB + 2 * MIB;
  (void)tp;
  return (int64_t)((double)sizes * per); /* < 67 x 48 MiB: 512 layers at most */
}
