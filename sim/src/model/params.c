/* Parameter count from the architecture. Llama-3.1-8B must come out at
 * 8,030,261,248, the total_parameters of its safetensors index.
 *
 * Every product and sum goes through arith.h's checked helpers: the fields
 * are range-checked one by one when read (model.c), but a product of four
 * of them (layers x experts x hidden x intermediate) can still pass 2^63.
 * One overflow anywhere poisons the whole count. */
#include "kvsim/model.h"

#include <string.h>

#include "core/arith.h"

/* Checked arithmetic that remembers an overflow instead of failing at each
 * step, so the formulas below read like the architecture. */
typedef struct count {
  bool overflow;
} count_t;

static int64_t mul(count_t *c, int64_t a, int64_t b) {
  int64_t r;
  if (!kvsim__mul_i64(a, b, &r)) {
    c->overflow = true;
    return 0;
  }
  return r;
}

static int64_t add(count_t *c, int64_t a, int64_t b) {
  int64_t r;
  if (!kvsim__add_i64(a, b, &r)) {
    c->overflow = true;
    return 0;
  }
  return r;
}

static int64_t mul3(count_t *c, int64_t a, int64_t b, int64_t d) { return mul(c, mul(c, a, b), d); }

static int64_t attention_params(count_t *c, const kvsim_model_t *m, int64_t *kv_part) {
  int64_t h = m->hidden_size, nh = m->num_heads;
  if (m->mla) {
    /* DeepSeek-V2/V3 MLA (modeling_deepseek.py DeepseekV3Attention):
     * q: either hidden->heads*(nope+rope), or a LoRA pair with a norm;
     * kv_a_proj_with_mqa: hidden->(kv_lora_rank+rope); kv_a_layernorm;
     * kv_b_proj: kv_lora_rank->heads*(nope+v); o_proj: heads*v->hidden. */
    int64_t qk = add(c, m->qk_nope_head_dim, m->qk_rope_head_dim);
    int64_t q = m->q_lora_rank > 0
                    ? add(c, add(c, mul(c, h, m->q_lora_rank), m->q_lora_rank),
                          mul3(c, m->q_lora_rank, nh, qk))
                    : mul3(c, h, nh, qk);
    int64_t kv = add(c,
                     add(c, mul(c, h, add(c, m->kv_lora_rank, m->qk_rope_head_dim)),
                         m->kv_lora_rank),
                     mul3(c, m->kv_lora_rank, nh, add(c, m->qk_nope_head_dim, m->v_head_dim)));
    *kv_part = kv;
    return add(c, add(c, q, kv), mul3(c, nh, m->v_head_dim, h));
  }
  int64_t q = mul(c, nh, m->head_dim), kv = mul(c, m->num_kv_heads, m->head_dim);
  int64_t qh = mul(c, h, q), kvh = mul3(c, 2, h, kv);
  int64_t p = add(c, add(c, qh, kvh), qh);
  *kv_part = kvh;
  if (m->qkv_bias) {
    p = add(c, p, add(c, q, mul(c, 2, kv)));
    *kv_part = add(c, *kv_part, mul(c, 2, kv));
  }
  if (m->o_bias)
    p = add(c, p, h);
  if (m->qk_norm)
    p = add(c, p, mul(c, 2, m->head_dim));
  if (!strncmp(m->model_type, "gpt_oss", 7))
    p = add(c, p, nh); /* attention sinks: one learned logit per head */
  return p;
}

static int64_t gated_mlp(count_t *c, int64_t hidden, int64_t inter) {
  return mul3(c, 3, hidden, inter);
}

static void count(count_t *c, const kvsim_model_t *m, kvsim_model_params_t *p) {
  memset(p, 0, sizeof *p);
  int64_t h = m->hidden_size;
  p->embedding = mul(c, m->vocab_size, h);
  p->lm_head = m->tie_word_embeddings ? 0 : p->embedding;
  p->final_norm = h;
  int64_t kv_part = 0, attn = attention_params(c, m, &kv_part);
  int64_t norms = mul(c, m->norms_per_layer, h);
  int64_t active_experts = 0;
  for (int i = 0; i < m->num_layers; i++) {
    p->attention = add(c, p->attention, attn);
    p->kv_proj = add(c, p->kv_proj, kv_part);
    p->norms = add(c, p->norms, norms);
    if (m->num_experts && m->layer_moe[i]) {
      int64_t e = gated_mlp(c, h, m->moe_intermediate_size);
      if (m->expert_bias) /* gate_up bias and down bias */
        e = add(c, e, add(c, mul(c, 2, m->moe_intermediate_size), h));
      p->experts = add(c, p->experts, mul(c, m->num_experts, e));
      active_experts = add(c, active_experts, mul(c, m->experts_per_tok, e));
      if (m->shared_expert_intermediate_size)
        p->shared_experts =
            add(c, p->shared_experts, gated_mlp(c, h, m->shared_expert_intermediate_size));
      p->router = add(c, p->router,
                      add(c, mul(c, m->num_experts, h), m->expert_bias ? m->num_experts : 0));
      /* DeepSeek-V3 keeps a per-expert score-correction bias in the gate. */
      if (!strncmp(m->model_type, "deepseek_v3", 11))
        p->router = add(c, p->router, m->num_experts);
      /* Qwen2-MoE gates its shared expert with a hidden->1 projection. */
      if (!strncmp(m->model_type, "qwen2_moe", 9))
        p->router = add(c, p->router, h);
    } else {
      p->dense_mlp = add(c, p->dense_mlp, gated_mlp(c, h, m->intermediate_size));
    }
  }
  const int64_t parts[] = {p->embedding, p->lm_head,        p->final_norm, p->attention, p->dense_mlp,
                           p->experts,   p->shared_experts, p->router,     p->norms};
  for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
    p->total = add(c, p->total, parts[k]);
  /* Per-token compute excludes the embedding lookup; a tied lm_head still
   * costs a vocab x hidden matmul. The active count is at most the total. */
  p->active = p->total - p->embedding - p->experts + active_experts +
              (m->tie_word_embeddings ? p->embedding : 0);
}

int kvsim_model_count_params_checked(const kvsim_model_t *m, kvsim_model_params_t *p,
                                     const char *where, kvsim_err *err) {
  count_t c = {false};
  count(&c, m, p);
  if (c.overflow || p->total > KVSIM_MODEL_MAX_PARAMS) {
    memset(p, 0, sizeof *p);
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: the architecture has more than 2^50 parameters (%d layers, "
                         "hidden_size %lld, intermediate_size %lld, %lld experts of %lld, "
                         "vocab_size %lld)",
                         where, m->num_layers, (long long)m->hidden_size,
                         (long long)m->intermediate_size, (long long)m->num_experts,
                         (long long)m->moe_intermediate_size, (long long)m->vocab_size);
  }
  return KVSIM_OK;
}

void kvsim_model_count_params(const kvsim_model_t *m, kvsim_model_params_t *p) {
  kvsim_model_count_params_checked(m, p, m->name, NULL);
}
