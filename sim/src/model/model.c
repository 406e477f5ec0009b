/* Hugging Face config.json -> kvsim_model_t. Field names are those of real
 * HF files; where a family keeps a rule in code rather than in the config
 * (Gemma-2's layer alternation, Qwen2's q/k/v bias), the rule is here with
 * its source. */
#include "kvsim/model.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/catalog.h"
#include "core/util.h"
#include "model/hf_ids.h"

static bool type_is(const kvsim_model_t *m, const char *prefix) {
  return strncmp(m->model_type, prefix, strlen(prefix)) == 0;
}

/* Ranges of the architecture fields, checked where each is read. Every
 * upper bound is far above the released models (the largest one in
 * brackets), so no real config.json is refused, and low enough that the KV
 * geometry built from them (heads x head_dim x layers x block size) stays
 * far inside int64; the parameter count, a product of up to four of them,
 * is checked as a whole in params.c. */
#define MAX_HIDDEN (INT64_C(1) << 20)       /* hidden_size [16,384: Llama-3.1-405B] */
#define MAX_HEADS (INT64_C(1) << 14)        /* attention and KV heads [128: DeepSeek-V3] */
#define MAX_HEAD_DIM (INT64_C(1) << 14)     /* head_dim, MLA ranks and dims [1,536: DeepSeek-V3 q_lora_rank] */
#define MAX_INTERMEDIATE (INT64_C(1) << 22) /* MLP and expert widths [53,248: Llama-3.1-405B] */
#define MAX_VOCAB (INT64_C(1) << 24)        /* vocab_size [262,208: Gemma-3] */
#define MAX_EXPERTS (INT64_C(1) << 14)      /* routed and shared experts [384: Kimi-K2] */
/* Layer indices and layer periods (sliding_window_pattern,
 * max_window_layers, first_k_dense_replace, ...) lie within the layers. */
#define MAX_LAYER_INDEX KVSIM_MAX_LAYERS
/* Quantization: GPTQ/AWQ/compressed-tensors pack 2 to 8 bits; a scale
 * group or fp8 scale block wider than 2^20 / 4096 elements is no format
 * (group_size -1 is GPTQ's "one group per channel"; DeepSeek's fp8 blocks
 * are 128 x 128). */
#define MAX_QUANT_GROUP (INT64_C(1) << 20)
#define MAX_QUANT_BLOCK 4096

/* The where of a key read from tc: in a multimodal config the text
 * config's keys sit in "text_config" ("m.json: text_config.hidden_size"). */
static const char *tc_where(const cJSON *tc, const cJSON *top, const char *where, char *buf,
                            size_t cap) {
  if (!top || tc == top)
    return where;
  snprintf(buf, cap, "%s: text_config", where);
  return buf;
}

static int get_int(const cJSON *a, const cJSON *b, const char *key, int64_t lo, int64_t hi,
                   int64_t *out, const char *where, kvsim_err *err) {
  /* Looks in the text config first, then the top level. */
  char aw[4200];
  int r = kvsim__json_int_in(a, key, lo, hi, out, tc_where(a, b, where, aw, sizeof aw), err);
  if (r == 0 && b && b != a)
    r = kvsim__json_int_in(b, key, lo, hi, out, where, err);
  return r;
}

static int need_int(const cJSON *a, const cJSON *b, const char *key, int64_t lo, int64_t hi,
                    int64_t *out, const char *where, kvsim_err *err) {
  int r = get_int(a, b, key, lo, hi, out, where, err);
  if (r < 0)
    return r;
  if (r == 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing field '%s'", where, key);
  return KVSIM_OK;
}

static int parse_dtype(const cJSON *tc, const cJSON *top, kvsim_model_t *m, const char *where,
                       kvsim_err *err) {
  /* transformers >= 4.56 writes "dtype", older files "torch_dtype". */
  static const char *keys[] = {"dtype", "torch_dtype"};
  const cJSON *objs[] = {tc, top};
  char tw[4200];
  const char *wheres[] = {tc_where(tc, top, where, tw, sizeof tw), where};
  for (int o = 0; o < 2; o++)
    for (int k = 0; k < 2; k++) {
      int r = kvsim__json_str(objs[o], keys[k], m->dtype, sizeof m->dtype, wheres[o], err);
      if (r < 0)
        return r;
      if (r > 0)
        goto found;
    }
  /* vLLM's default for a config without a dtype is the float16/bfloat16
   * of the checkpoint; bfloat16 is what every catalog family ships. */
  strcpy(m->dtype, "bfloat16");
found:
  if (!strcmp(m->dtype, "bfloat16") || !strcmp(m->dtype, "float16") ||
      !strcmp(m->dtype, "half") || !strcmp(m->dtype, "bf16") || !strcmp(m->dtype, "fp16"))
    m->dtype_bytes = 2;
  else if (!strcmp(m->dtype, "float32") || !strcmp(m->dtype, "float"))
    /* vLLM serves float32 checkpoints in bfloat16/float16 by default
     * (ModelConfig._get_and_verify_dtype downcasts float32). */
    m->dtype_bytes = 2;
  else
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: dtype '%s' not supported", where, m->dtype);
  return KVSIM_OK;
}

/* fp8 checkpoints: a block scale's size when weight_block_size says so. */
static int quant_fp8(const cJSON *q, kvsim_model_t *m, const char *qw, kvsim_err *err) {
  m->quant.kind = KVSIM_QUANT_FP8;
  const cJSON *wbs = cJSON_GetObjectItemCaseSensitive(q, "weight_block_size");
  if (!cJSON_IsArray(wbs) || cJSON_GetArraySize(wbs) < 1)
    return KVSIM_OK;
  const cJSON *e = cJSON_GetArrayItem(wbs, 0);
  double d = cJSON_IsNumber(e) ? e->valuedouble : 0;
  if (!(d >= 1 && d <= MAX_QUANT_BLOCK && d == (int)d))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.weight_block_size[0]: expected an integer in [1, %d]",
                         qw, MAX_QUANT_BLOCK);
  m->quant.block_size = (int)d;
  return KVSIM_OK;
}

/* compressed-tensors: w8a8 int8 or fp8, or wNa16 int4; the weight type
 * sits in config_groups.*.weights. */
static int quant_compressed(const cJSON *q, kvsim_model_t *m, const char *qw, kvsim_err *err) {
  const cJSON *groups = cJSON_GetObjectItemCaseSensitive(q, "config_groups");
  const cJSON *g = groups ? groups->child : NULL;
  const cJSON *w = g ? cJSON_GetObjectItemCaseSensitive(g, "weights") : NULL;
  int64_t nb = 8;
  char type[16] = "int";
  if (w) {
    char ww[4400];
    snprintf(ww, sizeof ww, "%s.config_groups.%s.weights", qw, g->string ? g->string : "0");
    int64_t gs = 0;
    int r2;
    if (kvsim__json_int_in(w, "num_bits", 2, 8, &nb, ww, err) < 0 ||
        kvsim__json_str(w, "type", type, sizeof type, ww, err) < 0 ||
        (r2 = kvsim__json_int_in(w, "group_size", -1, MAX_QUANT_GROUP, &gs, ww, err)) < 0)
      return err->code;
    if (r2 > 0)
      m->quant.group_size = (int)gs;
    /* Symmetric schemes carry no zero point
     * (compressed_tensors_wNa16.py: "No zero-point"). */
    m->quant.no_zero_points = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(w, "symmetric"));
  }
  if (nb == 4)
    m->quant.kind = KVSIM_QUANT_INT4;
  else if (!strcmp(type, "float"))
    m->quant.kind = KVSIM_QUANT_FP8;
  else
    m->quant.kind = KVSIM_QUANT_INT8;
  if (m->quant.kind == KVSIM_QUANT_INT4 && m->quant.group_size <= 0)
    m->quant.group_size = 128;
  return KVSIM_OK;
}

/* The weight precision by quant_method, as vLLM's quantization registry
 * (vllm/model_executor/layers/quantization/) maps it. */
static int quant_method(const cJSON *q, const char *method, int64_t bits, int64_t group,
                        kvsim_model_t *m, const char *where, const char *qw, kvsim_err *err) {
  if (!strcasecmp(method, "fp8"))
    return quant_fp8(q, m, qw, err);
  if (!strcasecmp(method, "compressed-tensors"))
    return quant_compressed(q, m, qw, err);
  if (!strcasecmp(method, "mxfp4")) {
    /* gpt-oss: MoE expert weights in MXFP4; attention, router, embeddings
     * and lm_head stay bf16 (OpenAI model card). */
    m->quant.kind = KVSIM_QUANT_MXFP4;
    m->quant.experts_only = true;
  } else if (!strcasecmp(method, "awq") || !strcasecmp(method, "gptq") ||
             !strcasecmp(method, "awq_marlin") || !strcasecmp(method, "gptq_marlin")) {
    m->quant.kind = bits == 8 ? KVSIM_QUANT_INT8 : KVSIM_QUANT_INT4;
    m->quant.group_size = group > 0 ? (int)group : 128;
  } else if (!strcasecmp(method, "fbgemm_fp8") || !strcasecmp(method, "modelopt")) {
    /* Meta's Llama-3.1-405B-Instruct-FP8 (fbgemm_fp8: fp8 weights, one
     * scale per output channel, vllm/model_executor/layers/quantization/
     * fbgemm_fp8.py); NVIDIA ModelOpt checkpoints name their algorithm. */
    char algo[32] = "FP8";
    if (!strcasecmp(method, "modelopt") &&
        kvsim__json_str(q, "quant_algo", algo, sizeof algo, qw, err) < 0)
      return err->code;
    if (strcasecmp(algo, "FP8"))
      return kvsim_err_set(err, KVSIM_EUNSUP, "%s.quant_algo '%s' not supported (FP8 is)", qw,
                           algo);
    m->quant.kind = KVSIM_QUANT_FP8;
  } else if (!strcasecmp(method, "bitsandbytes")) {
    /* load_in_4bit: NF4 codes and one absmax per 64 weights (8-bit with
     * double quantization), about the 128-group int4 layout; else 8-bit. */
    const cJSON *four = cJSON_GetObjectItemCaseSensitive(q, "load_in_4bit");
    m->quant.kind = cJSON_IsTrue(four) ? KVSIM_QUANT_INT4 : KVSIM_QUANT_INT8;
    if (m->quant.kind == KVSIM_QUANT_INT4)
      m->quant.group_size = 128;
  } else {
    return kvsim_err_set(err, KVSIM_EUNSUP, "%s: quantization_config.quant_method '%s' not supported",
                         where, method);
  }
  return KVSIM_OK;
}

static int parse_quant(const cJSON *top, kvsim_model_t *m, const char *where, kvsim_err *err) {
  const cJSON *q = cJSON_GetObjectItemCaseSensitive(top, "quantization_config");
  if (!q || cJSON_IsNull(q))
    return KVSIM_OK;
  if (!cJSON_IsObject(q))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: quantization_config: expected an object", where);
  char method[32] = "", qw[4200];
  snprintf(qw, sizeof qw, "%s: quantization_config", where);
  int r = kvsim__json_str(q, "quant_method", method, sizeof method, qw, err);
  if (r < 0)
    return r;
  int64_t bits = 0, group = 0;
  if (kvsim__json_int_in(q, "bits", 2, 8, &bits, qw, err) < 0 ||
      kvsim__json_int_in(q, "group_size", -1, MAX_QUANT_GROUP, &group, qw, err) < 0)
    return err->code;
  snprintf(m->quant.method, sizeof m->quant.method, "%s", method);
  return quant_method(q, method, bits, group, m, where, qw, err);
}

static int parse_layer_types(const cJSON *tc, const cJSON *top, kvsim_model_t *m,
                             const char *where, kvsim_err *err) {
  const cJSON *lt = cJSON_GetObjectItemCaseSensitive(tc, "layer_types");
  if (!lt || cJSON_IsNull(lt))
    lt = cJSON_GetObjectItemCaseSensitive(top, "layer_types");
  if (lt && !cJSON_IsNull(lt)) {
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != m->num_layers)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s: layer_types: expected an array of %d entries", where,
                           m->num_layers);
    int i = 0;
    for (const cJSON *e = lt->child; e; e = e->next, i++) {
      if (!cJSON_IsString(e))
        return kvsim_err_set(err, KVSIM_EINVAL, "%s: layer_types[%d]: expected a string", where, i);
      if (!strcmp(e->valuestring, "sliding_attention"))
        m->layer_sliding[i] = 1;
      else if (strcmp(e->valuestring, "full_attention"))
        return kvsim_err_set(err, KVSIM_EUNSUP, "%s: layer_types[%d] = '%s' not supported", where,
                             i, e->valuestring);
    }
    return KVSIM_OK;
  }
  if (!m->sliding_window)
    return KVSIM_OK;
  if (type_is(m, "gemma2")) {
    /* transformers modeling_gemma2.py: sliding_window applies when
     * layer_idx % 2 == 0, so even layers are local, odd layers global. */
    for (int i = 0; i < m->num_layers; i++)
      m->layer_sliding[i] = (i % 2) == 0;
  } else if (type_is(m, "gemma3")) {
    /* Gemma3 config: "sliding_attention" if (i + 1) % sliding_window_pattern
     * else "full_attention"; the pattern defaults to 6. */
    int64_t pattern = 6;
    if (get_int(tc, top, "sliding_window_pattern", 0, MAX_LAYER_INDEX, &pattern, where, err) < 0)
      return err->code;
    for (int i = 0; i < m->num_layers; i++)
      m->layer_sliding[i] = pattern > 0 && ((i + 1) % pattern) != 0;
  } else if (type_is(m, "qwen2") || type_is(m, "qwen3")) {
    /* Qwen2/3 configs carry sliding_window but use it only when
     * use_sliding_window is true, and then for layers >= max_window_layers. */
    bool use = false;
    int64_t max_window_layers = m->num_layers;
    char tw[4200];
    if (kvsim__json_bool(tc, "use_sliding_window", &use, tc_where(tc, top, where, tw, sizeof tw),
                         err) < 0 ||
        get_int(tc, top, "max_window_layers", 0, MAX_LAYER_INDEX, &max_window_layers, where, err) <
            0)
      return err->code;
    for (int i = 0; use && i < m->num_layers; i++)
      m->layer_sliding[i] = i >= max_window_layers;
  } else {
    /* Mistral-7B-v0.1, Phi-3: one window on every layer. */
    for (int i = 0; i < m->num_layers; i++)
      m->layer_sliding[i] = 1;
  }
  return KVSIM_OK;
}

static int parse_moe(const cJSON *tc, const cJSON *top, kvsim_model_t *m, const char *where,
                     kvsim_err *err) {
  /* The expert count's key differs by family: Mixtral and gpt-oss
   * num_local_experts, Qwen-MoE num_experts, DeepSeek n_routed_experts. */
  static const char *count_keys[] = {"num_local_experts", "num_experts", "n_routed_experts"};
  for (int k = 0; k < 3 && !m->num_experts; k++)
    if (get_int(tc, top, count_keys[k], 0, MAX_EXPERTS, &m->num_experts, where, err) < 0)
      return err->code;
  if (m->num_experts <= 1) {
    m->num_experts = 0;
    return KVSIM_OK;
  }
  if (get_int(tc, top, "num_experts_per_tok", 0, MAX_EXPERTS, &m->experts_per_tok, where, err) < 0 ||
      (!m->experts_per_tok &&
       get_int(tc, top, "experts_per_token", 0, MAX_EXPERTS, &m->experts_per_tok, where, err) < 0))
    return err->code;
  if (m->experts_per_tok <= 0 || m->experts_per_tok > m->num_experts)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: num_experts_per_tok missing or out of range",
                         where);
  m->moe_intermediate_size = m->intermediate_size; /* Mixtral, gpt-oss */
  if (get_int(tc, top, "moe_intermediate_size", 1, MAX_INTERMEDIATE, &m->moe_intermediate_size,
              where, err) < 0 ||
      get_int(tc, top, "n_shared_experts", 0, MAX_EXPERTS, &m->num_shared_experts, where, err) < 0)
    return err->code;
  m->shared_expert_intermediate_size = m->num_shared_experts * m->moe_intermediate_size;
  int64_t shared = 0;
  if (get_int(tc, top, "shared_expert_intermediate_size", 0, MAX_INTERMEDIATE, &shared, where,
              err) < 0)
    return err->code;
  if (shared > 0) { /* Qwen2-MoE: one shared expert of its own size */
    m->shared_expert_intermediate_size = shared;
    m->num_shared_experts = 1;
  }
  int64_t first_dense = 0, freq = 1, sparse_step = 1;
  if (get_int(tc, top, "first_k_dense_replace", 0, MAX_LAYER_INDEX, &first_dense, where, err) < 0 ||
      get_int(tc, top, "moe_layer_freq", 0, MAX_LAYER_INDEX, &freq, where, err) < 0 ||
      get_int(tc, top, "decoder_sparse_step", 0, MAX_LAYER_INDEX, &sparse_step, where, err) < 0)
    return err->code;
  if (freq < 1)
    freq = 1;
  if (sparse_step < 1)
    sparse_step = 1;
  for (int i = 0; i < m->num_layers; i++) {
    bool moe;
    if (type_is(m, "deepseek"))
      /* DeepSeek: layers >= first_k_dense_replace with i % moe_layer_freq == 0. */
      moe = i >= first_dense && i % freq == 0;
    else
      /* Qwen-MoE: (i + 1) % decoder_sparse_step == 0 unless in mlp_only_layers. */
      moe = (i + 1) % sparse_step == 0;
    m->layer_moe[i] = moe;
  }
  const cJSON *mlp_only = cJSON_GetObjectItemCaseSensitive(tc, "mlp_only_layers");
  if (cJSON_IsArray(mlp_only)) {
    int i = 0;
    for (const cJSON *e = mlp_only->child; e; e = e->next, i++) {
      double d = cJSON_IsNumber(e) ? e->valuedouble : -1;
      if (!(d >= 0 && d < m->num_layers && d == (int)d))
        return kvsim_err_set(err, KVSIM_EINVAL,
                             "%s: mlp_only_layers[%d]: expected a layer index in [0, %d]", where, i,
                             m->num_layers - 1);
      m->layer_moe[(int)d] = 0;
    }
  }
  for (int i = 0; i < m->num_layers; i++)
    m->num_moe_layers += m->layer_moe[i];
  m->expert_bias = type_is(m, "gpt_oss");
  return KVSIM_OK;
}

/* Architectures whose memory is not a per-token KV cache of decoder
 * attention layers: state-space and hybrid models keep a fixed recurrent
 * state per request (vLLM's MambaSpec, a cache of its own), and
 * encoder-decoder models also hold cross-attention KV sized by the encoder
 * input (vLLM's CrossAttentionSpec). kvsim plans neither, so such a
 * config is refused rather than read as a dense transformer. */
static const struct {
  const char *pattern; /* substring of model_type or an architectures entry */
  const char *what;
} unsupported[] = {
    {"mamba", "a state-space (Mamba) model"},  {"Mamba", "a state-space (Mamba) model"},
    {"jamba", "a hybrid Mamba-attention model"}, {"Jamba", "a hybrid Mamba-attention model"},
    {"zamba", "a hybrid Mamba-attention model"}, {"Zamba", "a hybrid Mamba-attention model"},
    {"bamba", "a hybrid Mamba-attention model"}, {"Bamba", "a hybrid Mamba-attention model"},
    {"nemotron_h", "a hybrid Mamba-attention model"}, {"rwkv", "a recurrent (RWKV) model"},
    {"Rwkv", "a recurrent (RWKV) model"}, {"recurrent_gemma", "a recurrent (Griffin) model"},
    {"RecurrentGemma", "a recurrent (Griffin) model"},
    {"T5ForConditionalGeneration", "an encoder-decoder model"},
    {"BartForConditionalGeneration", "an encoder-decoder model"},
    {"WhisperForConditionalGeneration", "an encoder-decoder model"},
    {"PegasusForConditionalGeneration", "an encoder-decoder model"},
    {"MarianMTModel", "an encoder-decoder model"},
};

static int check_supported(const cJSON *top, const kvsim_model_t *m, const char *where,
                           kvsim_err *err) {
  const char *names[17] = {m->model_type};
  int n = 1;
  const cJSON *arch = cJSON_GetObjectItemCaseSensitive(top, "architectures");
  for (const cJSON *a = cJSON_IsArray(arch) ? arch->child : NULL; a && n < 17; a = a->next)
    if (cJSON_IsString(a))
      names[n++] = a->valuestring;
  const char *shown = n > 1 ? names[1] : m->model_type;
  for (int i = 0; i < n; i++)
    for (size_t u = 0; u < sizeof unsupported / sizeof *unsupported; u++)
      if (names[i][0] && strstr(names[i], unsupported[u].pattern))
        return kvsim_err_set(err, KVSIM_EINVAL,
                             "%s: %s (model_type '%s') is %s; kvsim models decoder-only "
                             "transformers, whose memory is a per-token KV cache",
                             where, shown, m->model_type, unsupported[u].what);
  const cJSON *ed = cJSON_GetObjectItemCaseSensitive(top, "is_encoder_decoder");
  if (cJSON_IsTrue(ed))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %s (model_type '%s') is an encoder-decoder model "
                         "(is_encoder_decoder true); kvsim models decoder-only transformers",
                         where, shown, m->model_type);
  return KVSIM_OK;
}

/* The transformer's shape: layers, widths, heads (a GQA group must divide
 * the heads), vocabulary, context, head_dim (an explicit one wins: Gemma,
 * Qwen3 and gpt-oss set it != hidden / heads). */
static int parse_shape(const cJSON *tc, const cJSON *top, kvsim_model_t *m, const char *where,
                       kvsim_err *err) {
  int64_t layers;
  int rc;
  /* KVSIM_MAX_LAYERS bounds the per-layer tables [126: Llama-3.1-405B]. */
  if ((rc = need_int(tc, top, "num_hidden_layers", 1, KVSIM_MAX_LAYERS, &layers, where, err)) < 0 ||
      (rc = need_int(tc, top, "hidden_size", 1, MAX_HIDDEN, &m->hidden_size, where, err)) < 0 ||
      (rc = need_int(tc, top, "num_attention_heads", 1, MAX_HEADS, &m->num_heads, where, err)) < 0)
    return rc;
  m->num_layers = (int)layers;

  /* Gemma-3 text configs omit fields that take transformers' defaults. */
  bool gemma3 = type_is(m, "gemma3");
  m->num_kv_heads = m->num_heads;
  m->vocab_size = gemma3 ? 262208 : 0;
  m->max_position_embeddings = gemma3 ? 131072 : 0;
  if ((rc = get_int(tc, top, "num_key_value_heads", 1, MAX_HEADS, &m->num_kv_heads, where,
                    err)) < 0 ||
      (rc = get_int(tc, top, "vocab_size", 1, MAX_VOCAB, &m->vocab_size, where, err)) < 0 ||
      (rc = get_int(tc, top, "max_position_embeddings", 0, KVSIM_MODEL_MAX_CONTEXT,
                    &m->max_position_embeddings, where, err)) < 0 ||
      (rc = need_int(tc, top, "intermediate_size", 1, MAX_INTERMEDIATE, &m->intermediate_size,
                     where, err)) < 0)
    return rc;
  if (m->vocab_size <= 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing field 'vocab_size'", where);
  if (m->num_kv_heads < 1 || m->num_heads % m->num_kv_heads)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: num_key_value_heads = %lld does not divide num_attention_heads = %lld",
                         where, (long long)m->num_kv_heads, (long long)m->num_heads);
  m->head_dim = 0;
  if ((rc = get_int(tc, top, "head_dim", 0, MAX_HEAD_DIM, &m->head_dim, where, err)) < 0)
    return rc;
  if (m->head_dim <= 0) {
    if (m->hidden_size % m->num_heads)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s: hidden_size %lld not divisible by num_attention_heads %lld and no head_dim",
                           where, (long long)m->hidden_size, (long long)m->num_heads);
    m->head_dim = m->hidden_size / m->num_heads;
  }
  m->v_head_dim = m->head_dim;
  return KVSIM_OK;
}

/* Tied embeddings, biases and norms, which the parameter count needs. */
static int parse_layout(const cJSON *tc, const cJSON *top, kvsim_model_t *m, const char *where,
                        const char *tw, kvsim_err *err) {
  /* Embeddings: Gemma ties them by default; others say so explicitly. */
  m->tie_word_embeddings = type_is(m, "gemma");
  bool tie;
  int rc;
  if ((rc = kvsim__json_bool(tc, "tie_word_embeddings", &tie, tw, err)) < 0)
    return rc;
  if (rc == 0 && tc != top && (rc = kvsim__json_bool(top, "tie_word_embeddings", &tie, where, err)) < 0)
    return rc;
  if (rc > 0)
    m->tie_word_embeddings = tie;

  /* Biases: Qwen2 has q/k/v bias in code (no config key); others say
   * attention_bias (gpt-oss true: q, k, v and o). */
  bool attn_bias = false;
  if ((rc = kvsim__json_bool(tc, "attention_bias", &attn_bias, tw, err)) < 0)
    return rc;
  bool gemma3 = type_is(m, "gemma3");
  m->qkv_bias = attn_bias || type_is(m, "qwen2");
  m->o_bias = attn_bias;
  m->qk_norm = type_is(m, "qwen3") || gemma3;
  m->norms_per_layer = type_is(m, "gemma2") || gemma3 ? 4 : 2;
  return KVSIM_OK;
}

/* MLA (DeepSeek-V2/V3): kv_lora_rank present and non-null. */
static int parse_mla(const cJSON *tc, const cJSON *top, kvsim_model_t *m, const char *where,
                     kvsim_err *err) {
  int rc;
  if ((rc = get_int(tc, top, "kv_lora_rank", 0, MAX_HEAD_DIM, &m->kv_lora_rank, where, err)) < 0)
    return rc;
  if (m->kv_lora_rank <= 0)
    return KVSIM_OK;
  m->mla = true;
  if ((rc = need_int(tc, top, "qk_rope_head_dim", 1, MAX_HEAD_DIM, &m->qk_rope_head_dim, where,
                     err)) < 0 ||
      (rc = need_int(tc, top, "qk_nope_head_dim", 1, MAX_HEAD_DIM, &m->qk_nope_head_dim, where,
                     err)) < 0 ||
      (rc = need_int(tc, top, "v_head_dim", 1, MAX_HEAD_DIM, &m->v_head_dim, where, err)) < 0 ||
      (rc = get_int(tc, top, "q_lora_rank", 0, MAX_HEAD_DIM, &m->q_lora_rank, where, err)) < 0)
    return rc;
  m->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
  return KVSIM_OK;
}

/* Sliding window (null or 0: none; a window is a context length), the
 * per-layer attention types, MoE and quantization. */
static int parse_layers(const cJSON *tc, const cJSON *top, kvsim_model_t *m, const char *where,
                        const char *tw, kvsim_err *err) {
  int rc;
  if ((rc = kvsim__json_int_in(tc, "sliding_window", 0, KVSIM_MODEL_MAX_CONTEXT, &m->sliding_window,
                               tw, err)) < 0)
    return rc;
  if ((rc = parse_layer_types(tc, top, m, where, err)) < 0 ||
      (rc = parse_moe(tc, top, m, where, err)) < 0 || (rc = parse_quant(top, m, where, err)) < 0)
    return rc;
  for (int i = 0; i < m->num_layers; i++)
    m->num_sliding_layers += m->layer_sliding[i];
  if (m->num_sliding_layers && m->sliding_window <= 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: layer_types has sliding layers but no sliding_window",
                         where);
  if (!m->num_sliding_layers)
    m->sliding_window = 0;
  return KVSIM_OK;
}

/* The config proper, with text_config (multimodal) already chosen as tc. */
static int parse_config(const cJSON *tc, const cJSON *top, kvsim_model_t *m, const char *where,
                        kvsim_err *err) {
  char tw_buf[4200];
  const char *tw = tc_where(tc, top, where, tw_buf, sizeof tw_buf);
  int rc;
  if ((rc = kvsim__json_str(tc, "model_type", m->model_type, sizeof m->model_type, tw, err)) < 0)
    return rc;
  if (!rc && (rc = kvsim__json_str(top, "model_type", m->model_type, sizeof m->model_type,
                                   where, err)) < 0)
    return rc;
  if ((rc = check_supported(top, m, where, err)) < 0 || (rc = parse_dtype(tc, top, m, where, err)) < 0 ||
      (rc = parse_shape(tc, top, m, where, err)) < 0 ||
      (rc = parse_layout(tc, top, m, where, tw, err)) < 0 || (rc = parse_mla(tc, top, m, where, err)) < 0 ||
      (rc = parse_layers(tc, top, m, where, tw, err)) < 0)
    return rc;
  /* Speculative decoding fields (vllm/config/speculative.py reads
   * num_nextn_predict_layers as the MTP drafter's n_predict; vLLM's
   * llama_eagle3.py sizes the head's lm_head by draft_vocab_size). */
  if ((rc = get_int(tc, top, "num_nextn_predict_layers", 0, KVSIM_MAX_LAYERS,
                    &m->num_nextn_predict_layers, where, err)) < 0 ||
      (rc = get_int(tc, top, "draft_vocab_size", 0, MAX_VOCAB, &m->draft_vocab_size, where, err)) < 0)
    return rc;
  kvsim_model_params_t params;
  return kvsim_model_count_params_checked(m, &params, where, err);
}

int kvsim_model_parse(const char *json_text, const char *name, const char *where,
                      kvsim_model_t *m, kvsim_err *err) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name);
  cJSON *top = kvsim__json_parse(json_text, where, err);
  if (!top)
    return err->code;
  int rc;
  if (!cJSON_IsObject(top)) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: expected a JSON object", where);
  } else {
    /* Multimodal configs (Gemma-3, Llama-4) nest the language model. */
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(top, "text_config");
    rc = parse_config(cJSON_IsObject(tc) ? tc : top, top, m, where, err);
  }
  cJSON_Delete(top);
  return rc;
}

/* True for a 40-digit hex folder: a Hugging Face cache snapshot
 * (models--org--name/snapshots/<commit>/config.json). */
static bool is_commit(const char *s, size_t n) {
  if (n != 40)
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i]))
      return false;
  return true;
}

/* The model's name: its file stem ("llama-x.json" -> "llama-x"), a
 * folder's name, and for ".../NAME/config.json" the folder NAME; a file
 * with no folder of its own (or an HF snapshot folder) takes the last part
 * of its "_name_or_path" ("meta-llama/Llama-2-7b-hf" -> "Llama-2-7b-hf"). */
static void model_name(const char *path, const char *text, char *out, size_t cap) {
  size_t len = strlen(path);
  while (len > 1 && path[len - 1] == '/')
    len--;
  size_t start = len;
  while (start > 0 && path[start - 1] != '/')
    start--;
  size_t n = len - start;
  if (n >= 5 && !strncmp(path + len - 5, ".json", 5))
    n -= 5;
  snprintf(out, cap, "%.*s", (int)n, path + start);
  if (strcmp(out, "config"))
    return;
  /* The folder holding config.json. */
  size_t fend = start ? start - 1 : 0, fstart = fend;
  while (fstart > 0 && path[fstart - 1] != '/')
    fstart--;
  size_t fn = fend - fstart;
  bool useful = fn > 0 && !(fn == 1 && path[fstart] == '.') &&
                !(fn == 2 && !strncmp(path + fstart, "..", 2)) && !is_commit(path + fstart, fn);
  cJSON *j = useful ? NULL : cJSON_Parse(text);
  const cJSON *nop = j ? cJSON_GetObjectItemCaseSensitive(j, "_name_or_path") : NULL;
  if (cJSON_IsString(nop) && nop->valuestring[0]) {
    const char *v = nop->valuestring, *slash = strrchr(v, '/');
    snprintf(out, cap, "%s", slash && slash[1] ? slash + 1 : v);
  } else if (useful) {
    snprintf(out, cap, "%.*s", (int)fn, path + fstart);
  }
  cJSON_Delete(j);
}

static _Atomic(kvsim_model_note_fn) note_fn;

void kvsim_model_set_note_fn(kvsim_model_note_fn fn) { note_fn = fn; }

/* The catalog architecture of a resolved checkpoint, with the precision,
 * dtype and context its id declares. A precision suffix names another
 * checkpoint than the catalog's, so it replaces the catalog config's own
 * quantization_config (DeepSeek-V3's fp8 under "DeepSeek-V3-AWQ"). */
static int load_checkpoint(const kvsim_checkpoint_t *c, kvsim_model_t *m, kvsim_err *err) {
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_MODEL, c->catalog);
  char where[96];
  snprintf(where, sizeof where, "configs/models/%s.json", e->name);
  int rc = kvsim_model_parse(e->json, e->name, where, m, err);
  if (rc < 0)
    return rc;
  if (c->quant.kind != KVSIM_QUANT_NONE)
    m->quant = c->quant;
  if (c->dtype[0]) {
    snprintf(m->dtype, sizeof m->dtype, "%s", c->dtype);
    m->dtype_bytes = 2;
  }
  if (c->max_position_embeddings > 0)
    m->max_position_embeddings = c->max_position_embeddings;
  kvsim_model_note_fn fn = note_fn;
  if (c->note[0] && fn)
    fn(c->note);
  return KVSIM_OK;
}

int kvsim_model_load(const char *name_or_path, kvsim_model_t *m, kvsim_err *err) {
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_MODEL, name_or_path);
  if (e) {
    char where[96];
    snprintf(where, sizeof where, "configs/models/%s.json", e->name);
    return kvsim_model_parse(e->json, e->name, where, m, err);
  }
  struct stat st;
  if (stat(name_or_path, &st) == 0) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s", name_or_path,
             S_ISDIR(st.st_mode) ? "/config.json" : "");
    char *text;
    int rc = kvsim__read_file(path, &text, NULL, err);
    if (rc < 0)
      return rc;
    char stem[64];
    model_name(name_or_path, text, stem, sizeof stem);
    rc = kvsim_model_parse(text, stem, path, m, err);
    free(text);
    return rc;
  }
  kvsim_checkpoint_t c;
  kvsim_err ce = {0};
  int rc = kvsim_model_resolve_checkpoint(name_or_path, &c, &ce);
  if (rc == KVSIM_OK)
    return load_checkpoint(&c, m, err);
  if (rc != KVSIM_ENOENT)
    return kvsim_err_set(err, rc, "%s", ce.msg);
  char near[256];
  kvsim__catalog_suggest(KVSIM_CATALOG_MODEL, c.catalog, near, sizeof near, 3);
  return kvsim_err_set(err, KVSIM_ENOENT,
                       "unknown model '%s' (not a catalog name or a readable file); closest: %s",
                       name_or_path, near);
}

void kvsim_model_pp_layers(int num_layers, int pp, int stage, int *first, int *last) {
  /* vllm/distributed/utils.py get_pp_indices: an even split, and the
   * remainder added one layer each to the stages before the last, from the
   * second-to-last backwards (the last stage also runs norm and lm_head). */
  int part[KVSIM_MAX_LAYERS];
  int base = num_layers / pp, rem = num_layers % pp;
  for (int i = 0; i < pp; i++)
    part[i] = base;
  for (int i = 2; i < rem + 2; i++)
    part[pp - i] += 1;
  int start = 0;
  for (int i = 0; i < stage; i++)
    start += part[i];
  *first = start;
  *last = start + part[stage];
}

int64_t kvsim_model_kv_heads_per_rank(const kvsim_model_t *m, int tp) {
  /* vLLM ModelConfig.get_num_kv_heads: MLA caches one latent "head";
   * otherwise max(1, kv_heads // tp): replicated when TP > kv heads. */
  if (m->mla)
    return 1;
  int64_t h = m->num_kv_heads / tp;
  return h < 1 ? 1 : h;
}

int64_t kvsim_model_kv_head_size(const kvsim_model_t *m) {
  return m->mla ? m->kv_lora_rank + m->qk_rope_head_dim : m->head_dim;
}

int kvsim_model_kv_factor(const kvsim_model_t *m) { return m->mla ? 1 : 2; }

bool kvsim_model_is_hybrid(const kvsim_model_t *m) {
  return m->num_sliding_layers > 0 && m->num_sliding_layers < m->num_layers;
}

int kvsim_model_set_dtype(kvsim_model_t *m, const char *name) {
  /* vllm/config/model.py _STR_DTYPE_TO_TORCH_DTYPE: "half" is float16 and
   * "float" float32. */
  static const struct {
    const char *name, *dtype;
    int bytes;
  } dtypes[] = {{"bfloat16", "bfloat16", 2},
                {"float16", "float16", 2},
                {"half", "float16", 2},
                {"float32", "float32", 4},
                {"float", "float32", 4}};
  if (!strcmp(name, "auto"))
    return KVSIM_OK;
  for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
    if (!strcmp(name, dtypes[i].name)) {
      snprintf(m->dtype, sizeof m->dtype, "%s", dtypes[i].dtype);
      m->dtype_bytes = dtypes[i].bytes;
      return KVSIM_OK;
    }
  return KVSIM_EINVAL;
}
