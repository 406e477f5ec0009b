#include "memory/overheads.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define MIB (1024.0 * 1024.0)

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

/* Bytes per parameter of a quantized linear weight with `in` input
 * features, scales included. */
static double linear_bytes_per_param(const kvsim_quant_t *q, int64_t in, int dtype_bytes) {
  switch (q->kind) {
  case KVSIM_QUANT_FP8:
    /* Block-wise (DeepSeek: one fp32 scale per 128x128) or one fp32 scale
     * per output channel. */
    return 1.0 + (q->block_size > 0 ? 4.0 / (q->block_size * q->block_size) : 4.0 / (double)in);
  case KVSIM_QUANT_INT8:
    return 1.0 + 4.0 / (double)in;
  case KVSIM_QUANT_INT4:
    /* GPTQ/AWQ: an fp16 scale and a packed 4-bit zero per group. */
    return 0.5 + 2.5 / (q->group_size > 0 ? q->group_size : 128);
  case KVSIM_QUANT_MXFP4:
    /* OCP MX: 32 fp4 elements share one 8-bit exponent scale. */
    return 0.5 + 1.0 / 32.0;
  case KVSIM_QUANT_NONE:
  default:
    return dtype_bytes;
  }
}

int64_t kvsim__weights_bytes(const kvsim_model_t *m, const kvsim_quant_t *q, int tp, int pp,
                             int stage) {
  int first, last;
  kvsim_model_pp_layers(m->num_layers, pp, stage, &first, &last);
  const int b = m->dtype_bytes;
  const int64_t h = m->hidden_size;
  /* VocabParallelEmbedding pads the vocabulary to a multiple of 64 before
   * splitting it over TP ranks. */
  int64_t vocab = (m->vocab_size + 63) / 64 * 64;
  double bytes = 0;
  if (stage == 0)
    bytes += (double)vocab * h / tp * b;
  if (stage == pp - 1) {
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
  double attn_b = qlin ? linear_bytes_per_param(q, h, b) : b;
  double mlp_b = attn_b;
  double exp_b = q->kind != KVSIM_QUANT_NONE ? linear_bytes_per_param(q, h, b) : b;
  for (int i = first; i < last; i++) {
    one.layer_moe[0] = m->layer_moe[i];
    kvsim_model_count_params(&one, &lp);
    double kv = m->mla ? 0 : (double)lp.kv_proj / m->num_kv_heads * kv_rank;
    double attn_rank = (double)(lp.attention - (m->mla ? 0 : lp.kv_proj)) / tp + kv;
    bytes += attn_rank * attn_b;
    bytes += (double)lp.dense_mlp / tp * mlp_b;
    bytes += (double)(lp.experts / tp) * exp_b + (double)lp.shared_experts / tp * mlp_b;
    bytes += (double)lp.router * b + (double)lp.norms * b;
  }
  /* Rotary cos/sin cache: max_position x rotary_dim in the model dtype
   * (vLLM RotaryEmbedding.cos_sin_cache; one instance shared by layers).
   * This is why Llama-3.1-8B loads as 14.9889 GiB, not 14.9575. */
  int64_t rot = m->mla ? m->qk_rope_head_dim : m->head_dim;
  bytes += (double)m->max_position_embeddings * rot * b;
  return (int64_t)(bytes + 0.5);
}

int64_t kvsim__activation_bytes(const kvsim_model_t *m, int tp, int64_t tokens, int64_t seqs,
                                kvsim_plan_engine engine) {
  const int b = m->dtype_bytes;
  const double h = (double)m->hidden_size, T = (double)tokens;
  /* Forward pass, per token: the residual and normed hidden states, the
   * fused qkv output, and the MLP's gate_up output still alive while its
   * activation output feeds down_proj (vLLM LlamaMLP keeps both). MoE:
   * fused_moe's three intermediate caches of top_k rows per token. */
  double qkv = (double)(m->num_heads * m->head_dim + 2 * m->num_kv_heads * m->head_dim) / tp;
  double mlp;
  if (m->num_experts && m->num_moe_layers)
    mlp = (double)m->experts_per_tok * (3.0 * m->moe_intermediate_size / tp + h) +
          (m->shared_expert_intermediate_size ? 3.0 * m->shared_expert_intermediate_size / tp : 0);
  else
    mlp = 3.0 * m->intermediate_size / tp;
  double per_token = (3 * h + (qkv > mlp ? qkv : mlp)) * b;
  double forward = T * per_token;
  /* Sampler over `seqs` rows of the vocabulary in fp32: logits, the sorted
   * copy and its int64 indices for top-p/top-k, and the probabilities. */
  double rows = (double)(seqs < tokens ? seqs : tokens);
  double sampler = rows * (double)m->vocab_size * (engine == KVSIM_PLAN_V1 ? 20.0 : 12.0);
  double peak = forward > sampler + T * h * b ? forward : sampler + T * h * b;
  return (int64_t)(peak + 0.5);
}

int64_t kvsim__non_torch_bytes(const kvsim_model_t *m, const kvsim_gpu_t *g, int tp, int pp,
                               kvsim_plan_engine engine) {
  /* cuBLAS/cuDNN workspaces and allocator slack outside torch's count
   * (the CUDA context is in the profiling baseline). NCCL buffers: V0
   * (0.6.5+) and V1 before #25359 snapshot before distributed init and
   * charge them (#10511: TP2 3.58 GiB vs TP1 1.79 GiB); current V1
   * initialises NCCL before the snapshot and does not. */
  double bytes = 450 * MIB;
  if (engine == KVSIM_PLAN_V0 && tp * pp > 1)
    bytes += 1.79 * KVSIM_GIB * (tp > 1 ? 1 : 0.5);
  (void)m;
  (void)g;
  return (int64_t)bytes;
}

int64_t kvsim__cuda_graph_bytes(const kvsim_model_t *m, int tp, int pp, int64_t max_num_seqs) {
  /* Piecewise graphs: a few MiB per captured size and layer block; vLLM
   * logs 0.21 GiB for Llama-3.2-1B (35 sizes) and estimates 0.26-0.36 GiB
   * on 8B-class models (HARDWARE.md 4b). */
  int64_t sizes = max_num_seqs < 512 ? max_num_seqs / 8 + 3 : 67;
  double per = (double)m->num_layers / pp * 0.09 * MIB + 2 * MIB;
  (void)tp;
  return (int64_t)(sizes * per);
}
