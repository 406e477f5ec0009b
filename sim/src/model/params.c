/* Parameter count from the architecture. Llama-3.1-8B must come out at
 * 8,030,261,248, the total_parameters of its safetensors index. */
#include "kvsim/model.h"

#include <string.h>

static int64_t attention_params(const kvsim_model_t *m, int64_t *kv_part) {
  int64_t h = m->hidden_size, nh = m->num_heads;
  if (m->mla) {
    /* DeepSeek-V2/V3 MLA (modeling_deepseek.py DeepseekV3Attention):
     * q: either hidden->heads*(nope+rope), or a LoRA pair with a norm;
     * kv_a_proj_with_mqa: hidden->(kv_lora_rank+rope); kv_a_layernorm;
     * kv_b_proj: kv_lora_rank->heads*(nope+v); o_proj: heads*v->hidden. */
    int64_t qk = m->qk_nope_head_dim + m->qk_rope_head_dim;
    int64_t q = m->q_lora_rank > 0 ? h * m->q_lora_rank + m->q_lora_rank + m->q_lora_rank * nh * qk
                                   : h * nh * qk;
    int64_t kv = h * (m->kv_lora_rank + m->qk_rope_head_dim) + m->kv_lora_rank +
                 m->kv_lora_rank * nh * (m->qk_nope_head_dim + m->v_head_dim);
    *kv_part = kv;
    return q + kv + nh * m->v_head_dim * h;
  }
  int64_t q = nh * m->head_dim, kv = m->num_kv_heads * m->head_dim;
  int64_t p = h * q + 2 * h * kv + q * h;
  *kv_part = 2 * h * kv;
  if (m->qkv_bias) {
    p += q + 2 * kv;
    *kv_part += 2 * kv;
  }
  if (m->o_bias)
    p += h;
  if (m->qk_norm)
    p += 2 * m->head_dim;
  if (!strncmp(m->model_type, "gpt_oss", 7))
    p += nh; /* attention sinks: one learned logit per head */
  return p;
}

static int64_t gated_mlp(int64_t hidden, int64_t inter) { return 3 * hidden * inter; }

void kvsim_model_count_params(const kvsim_model_t *m, kvsim_model_params_t *p) {
  memset(p, 0, sizeof *p);
  int64_t h = m->hidden_size;
  p->embedding = m->vocab_size * h;
  p->lm_head = m->tie_word_embeddings ? 0 : m->vocab_size * h;
  p->final_norm = h;
  int64_t kv_part = 0, attn = attention_params(m, &kv_part);
  int64_t norms = m->norms_per_layer * h;
  int64_t active_experts = 0;
  for (int i = 0; i < m->num_layers; i++) {
    p->attention += attn;
    p->kv_proj += kv_part;
    p->norms += norms;
    if (m->num_experts && m->layer_moe[i]) {
      int64_t e = gated_mlp(h, m->moe_intermediate_size);
      if (m->expert_bias)
        e += 2 * m->moe_intermediate_size + h; /* gate_up bias and down bias */
      p->experts += m->num_experts * e;
      active_experts += m->experts_per_tok * e;
      p->shared_experts += m->shared_expert_intermediate_size
                               ? gated_mlp(h, m->shared_expert_intermediate_size)
                               : 0;
      p->router += m->num_experts * h + (m->expert_bias ? m->num_experts : 0);
      /* DeepSeek-V3 keeps a per-expert score-correction bias in the gate. */
      if (!strncmp(m->model_type, "deepseek_v3", 11))
        p->router += m->num_experts;
      /* Qwen2-MoE gates its shared expert with a hidden->1 projection. */
      if (!strncmp(m->model_type, "qwen2_moe", 9))
        p->router += h;
    } else {
      p->dense_mlp += gated_mlp(h, m->intermediate_size);
    }
  }
  p->total = p->embedding + p->lm_head + p->final_norm + p->attention + p->dense_mlp +
             p->experts + p->shared_experts + p->router + p->norms;
  /* Per-token compute excludes the embedding lookup; a tied lm_head still
   * costs a vocab x hidden matmul. */
  p->active = p->total - p->embedding - p->experts + active_experts +
              (m->tie_word_embeddings ? p->embedding : 0);
}
