/* Model architecture from a Hugging Face config.json: layers, attention
 * geometry (MHA/GQA/MQA/MLA, sliding windows), MoE, quantization, and the
 * parameter count derived from them. */
#ifndef KVSIM_MODEL_H
#define KVSIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVSIM_MAX_LAYERS 512

/* The longest context a model or an engine setting may name, in tokens
 * (max_position_embeddings, sliding_window, max_model_len): 2^30, a
 * hundred times the longest released context (Llama-4 Scout, 10,485,760),
 * so token counts and their products with per-token bytes stay exact. */
#define KVSIM_MODEL_MAX_CONTEXT (INT64_C(1) << 30)

/* The largest parameter count a model may have: 2^50 (~1.1e15), five
 * hundred times the largest published models (~2e12), so that weight
 * bytes (at most 4 per parameter) stay below 2^53 and exact in a double. */
#define KVSIM_MODEL_MAX_PARAMS (INT64_C(1) << 50)

typedef enum kvsim_quant_kind {
  KVSIM_QUANT_NONE = 0, /* weights in the model dtype */
  KVSIM_QUANT_FP8,      /* 1 byte + per-block or per-channel scales */
  KVSIM_QUANT_INT8,     /* 1 byte + per-channel scales (w8a8) */
  KVSIM_QUANT_INT4,     /* 0.5 byte + per-group scales and zeros (awq, gptq) */
  KVSIM_QUANT_MXFP4,    /* 0.5 byte + one byte scale per 32 (gpt-oss experts) */
} kvsim_quant_kind;

typedef struct kvsim_quant {
  kvsim_quant_kind kind;
  char method[32];     /* as in quantization_config.quant_method, or the flag */
  int group_size;      /* int4: elements per scale group (default 128) */
  int block_size;      /* fp8 block-wise scales: square block edge (DeepSeek 128), 0 = per-channel */
  bool experts_only;   /* only MoE expert weights are quantized (mxfp4) */
  bool no_zero_points; /* int4/int8 groups carry a scale only (symmetric compressed-tensors) */
} kvsim_quant_t;

typedef struct kvsim_model {
  char name[64];       /* catalog name or file stem */
  char model_type[32];
  char dtype[16];      /* "bfloat16", "float16", "float32" */
  int dtype_bytes;

  int num_layers;
  int64_t hidden_size, num_heads, num_kv_heads, head_dim, v_head_dim;
  int64_t intermediate_size, vocab_size, max_position_embeddings;
  bool tie_word_embeddings;
  bool qkv_bias, o_bias; /* Qwen2 q/k/v bias; gpt-oss attention_bias */
  bool qk_norm;          /* Qwen3, Gemma-3: per-head RMSNorm on q and k */
  int norms_per_layer;   /* 2, or 4 for Gemma-2/3 */

  /* Attention pattern. sliding_window = 0 means none. */
  int64_t sliding_window;
  int num_sliding_layers;
  uint8_t layer_sliding[KVSIM_MAX_LAYERS];

  /* Multi-head latent attention (DeepSeek-V2/V3). */
  bool mla;
  int64_t kv_lora_rank, q_lora_rank, qk_rope_head_dim, qk_nope_head_dim;

  /* Mixture of experts. num_experts = 0 means dense. */
  int64_t num_experts, experts_per_tok, num_shared_experts;
  int64_t moe_intermediate_size, shared_expert_intermediate_size;
  bool expert_bias;    /* gpt-oss experts and router carry biases */
  uint8_t layer_moe[KVSIM_MAX_LAYERS];
  int num_moe_layers;

  kvsim_quant_t quant;

  /* Speculative decoding. num_nextn_predict_layers: the multi-token
   * prediction layers a checkpoint ships beside its decoder (DeepSeek-V3:
   * 1), which vLLM's "mtp" method loads as the drafter; 0 = none.
   * draft_vocab_size: an EAGLE-3 head's own lm_head vocabulary (its
   * config's draft_vocab_size, 32000 for the yuhuili heads); 0 = none. */
  int64_t num_nextn_predict_layers;
  int64_t draft_vocab_size;
} kvsim_model_t;

/* Parameters of one piece of the model, split the way tensor parallelism
 * splits it. */
typedef struct kvsim_model_params {
  int64_t embedding;   /* vocab x hidden */
  int64_t lm_head;     /* 0 when tied */
  int64_t final_norm;
  int64_t attention;   /* all layers: projections, biases, norms of q/k */
  int64_t kv_proj;     /* the part of `attention` that is K/V projection (replicated when TP > kv heads) */
  int64_t dense_mlp;   /* all dense MLP layers */
  int64_t experts;     /* all routed experts */
  int64_t shared_experts;
  int64_t router;
  int64_t norms;       /* per-layer norms */
  int64_t total;
  int64_t active;      /* per token: total minus unused routed experts, minus embedding */
} kvsim_model_params_t;

/* Loads `name_or_path`: a catalog name (case-insensitive), a path to a
 * config.json (or a folder holding one), or a Hugging Face id such as
 * "meta-llama/Llama-3.1-8B-Instruct" that maps onto a catalog name. */
int kvsim_model_load(const char *name_or_path, kvsim_model_t *m, kvsim_err *err);

/* The dtype a scenario's engine.dtype or calc's --dtype names, onto m
 * (weights and an "auto" KV cache): auto keeps the model's; bfloat16,
 * float16 (alias half) and float32 (alias float) as vLLM's --dtype takes
 * them, each alias stored under its one name. KVSIM_EINVAL for any other
 * name, m unchanged (the caller names its key or flag with
 * KVSIM_MODEL_DTYPES). */
#define KVSIM_MODEL_DTYPES "auto, bfloat16, float16, float32"
int kvsim_model_set_dtype(kvsim_model_t *m, const char *name);

/* Parses config.json text. `where` names the source in error messages. */
int kvsim_model_parse(const char *json_text, const char *name, const char *where,
                      kvsim_model_t *m, kvsim_err *err);

/* The Hugging Face repository a catalog model's config.json was read from
 * ("meta-llama/Llama-3.1-8B" for "llama-3.1-8b"); NULL for a name not in
 * the table. Static storage. */
const char *kvsim_model_hf_id(const char *catalog_name);

/* Maps a Hugging Face id onto a catalog name: organisation dropped,
 * -Instruct/-FP8/... suffixes dropped, lower case. Returns 1 if the result
 * is in the catalog. */
int kvsim_model_catalog_name(const char *hf_id, char *out, size_t cap);

/* What a Hugging Face checkpoint id says beyond its architecture. */
typedef struct kvsim_checkpoint {
  char catalog[64];                /* the catalog model holding the architecture */
  kvsim_quant_t quant;             /* declared by a precision suffix; kind NONE if none */
  char dtype[16];                  /* the checkpoint's dtype when its kernel needs one ("float16"), else "" */
  int64_t max_position_embeddings; /* the variant's own when it differs from the catalog's, else 0 */
  char note[320];                  /* the assumption made, "" when the id resolved exactly */
} kvsim_checkpoint_t;

/* Resolves "Qwen/Qwen2.5-32B-Instruct-AWQ" (organisation optional, any
 * case) into *c. KVSIM_ENOENT when no catalog architecture matches,
 * KVSIM_EUNSUP for a precision kvsim does not model (NVFP4), KVSIM_EINVAL
 * for two precisions in one name. */
int kvsim_model_resolve_checkpoint(const char *hf_id, kvsim_checkpoint_t *c, kvsim_err *err);

/* Where kvsim_model_load sends the assumption it made to load an id it
 * could not resolve exactly (one line, no trailing newline). NULL (the
 * default) drops it. The callback may be called from several threads. */
typedef void (*kvsim_model_note_fn)(const char *note);
void kvsim_model_set_note_fn(kvsim_model_note_fn fn);

/* Counts the parameters of `m` into *p. The arithmetic is overflow-checked:
 * returns KVSIM_EINVAL, with "where: ..." naming the fields, when the
 * count overflows int64 or exceeds KVSIM_MODEL_MAX_PARAMS (*p is then
 * zeroed). kvsim_model_parse runs it on every model it returns. */
int kvsim_model_count_params_checked(const kvsim_model_t *m, kvsim_model_params_t *p,
                                     const char *where, kvsim_err *err);

/* The same for a model kvsim_model_parse accepted, whose count is known to
 * fit (a model that does not fit is a programmer error: *p is zeroed). */
void kvsim_model_count_params(const kvsim_model_t *m, kvsim_model_params_t *p);

/* Layer index range [first, last) held by pipeline stage `stage` of `pp`,
 * as vLLM's get_pp_indices splits them. */
void kvsim_model_pp_layers(int num_layers, int pp, int stage, int *first, int *last);

/* KV geometry: per-layer cache entry for one token, in elements. MLA keeps
 * one latent (kv_lora_rank + qk_rope_head_dim) and no V. */
int64_t kvsim_model_kv_heads_per_rank(const kvsim_model_t *m, int tp);
int64_t kvsim_model_kv_head_size(const kvsim_model_t *m);
int kvsim_model_kv_factor(const kvsim_model_t *m); /* 2 (K and V) or 1 (MLA) */

bool kvsim_model_is_hybrid(const kvsim_model_t *m); /* mixes sliding and full layers */

#ifdef __cplusplus
}
#endif

#endif
