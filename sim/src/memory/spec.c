/* vLLM's speculative decoding in the memory plan: --speculative-config as
 * vllm/config/speculative.py SpeculativeConfig reads it, the drafter's
 * weights and KV cache layers, the scheduler's lookahead slots. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/spec.h"
#include "memory/overheads.h"
#include "memory/spec.h"

static const char *const method_names[] = {"none", "eagle", "eagle3", "mtp", "ngram", "draft_model"};

const char *kvsim_spec_method_name(kvsim_spec_method m) {
  return (unsigned)m < sizeof method_names / sizeof *method_names ? method_names[m] : "?";
}

/* SpeculativeConfig.__post_init__: the MTPModelTypes other than "mtp" are
 * deprecated names of it ("method `%s` is deprecated and replaced with
 * mtp"); "[ngram]" is ngram. */
static const char *const mtp_aliases[] = {"deepseek_mtp", "mimo_mtp", "glm4_moe_mtp", "ernie_mtp",
                                          "qwen3_next_mtp", "longcat_flash_mtp", "pangu_ultra_moe_mtp",
                                          NULL};
/* Methods vLLM has that kvsim does not model. */
static const char *const unmodelled[] = {"medusa", "mlp_speculator", "suffix", "custom_class",
                                         "dflash", "dspark", "ngram_gpu", "extract_hidden_states",
                                         NULL};

static int method_of(const char *s, kvsim_spec_method *out, const char *where, kvsim_err *err) {
  for (int i = 1; i < (int)(sizeof method_names / sizeof *method_names); i++)
    if (!strcmp(s, method_names[i])) {
      *out = (kvsim_spec_method)i;
      return KVSIM_OK;
    }
  if (!strcmp(s, "[ngram]")) {
    *out = KVSIM_SPEC_NGRAM;
    return KVSIM_OK;
  }
  for (int i = 0; mtp_aliases[i]; i++)
    if (!strcmp(s, mtp_aliases[i])) {
      *out = KVSIM_SPEC_MTP;
      return KVSIM_OK;
    }
  for (int i = 0; unmodelled[i]; i++)
    if (!strcmp(s, unmodelled[i]))
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s%smethod: '%s' is a vLLM method kvsim does not model (modelled: "
                           "eagle, eagle3, mtp, ngram, draft_model)",
                           where, kvsim__json_sep(where), s);
  return kvsim_err_set(err, KVSIM_EINVAL,
                       "%s%smethod: unknown method '%s' (expected eagle, eagle3, mtp, ngram, "
                       "draft_model)",
                       where, kvsim__json_sep(where), s);
}

/* With no method, vLLM names it from the model: "ngram" or "[ngram]",
 * then a draft whose name holds "eagle-" (EAGLE-1/2) or "eagle3", else a
 * draft model (SpeculativeConfig.__post_init__, "Automatically detect the
 * method"). */
static kvsim_spec_method infer_method(const char *model) {
  if (!strcmp(model, "ngram") || !strcmp(model, "[ngram]"))
    return KVSIM_SPEC_NGRAM;
  char low[256];
  size_t n = 0;
  for (; model[n] && n + 1 < sizeof low; n++)
    low[n] = (char)tolower((unsigned char)model[n]);
  low[n] = 0;
  if (strstr(low, "eagle-"))
    return KVSIM_SPEC_EAGLE;
  if (strstr(low, "eagle3"))
    return KVSIM_SPEC_EAGLE3;
  return KVSIM_SPEC_DRAFT_MODEL;
}

static const char *const vllm_keys[] = {"method",
                                        "model",
                                        "num_speculative_tokens",
                                        "draft_tensor_parallel_size",
                                        "prompt_lookup_min",
                                        "prompt_lookup_max",
                                        NULL};

static int check_keys(const cJSON *o, const char *const *extra, const char *where, kvsim_err *err) {
  for (const cJSON *c = o->child; c; c = c->next) {
    bool known = false;
    for (int i = 0; vllm_keys[i] && !known; i++)
      known = !strcmp(c->string, vllm_keys[i]);
    for (int i = 0; extra && extra[i] && !known; i++)
      known = !strcmp(c->string, extra[i]);
    if (!known)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s%s%s: not a speculative-config key kvsim models (known: method, "
                           "model, num_speculative_tokens, draft_tensor_parallel_size, "
                           "prompt_lookup_min, prompt_lookup_max%s)",
                           where, kvsim__json_sep(where), c->string,
                           extra ? ", acceptance_rate" : "");
  }
  return KVSIM_OK;
}

/* ngram's window: both default to 5, one given sets the other, min <= max
 * (__post_init__, "TODO(woosuk): Tune these values"). */
static int ngram_window(kvsim_plan_spec_params_t *p, int64_t lo, int64_t hi, const char *where,
                        kvsim_err *err) {
  if (!lo && !hi)
    lo = hi = 5;
  else if (!lo)
    lo = hi;
  else if (!hi)
    hi = lo;
  if (lo > hi)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%sprompt_lookup_min=%lld must be <= prompt_lookup_max=%lld",
                         where, kvsim__json_sep(where), (long long)lo, (long long)hi);
  p->prompt_lookup_min = (int)lo;
  p->prompt_lookup_max = (int)hi;
  return KVSIM_OK;
}

int kvsim__spec_parse_fields(const cJSON *o, const char *const *extra, kvsim_plan_spec_params_t *p,
                             const char *where, kvsim_err *err) {
  memset(p, 0, sizeof *p);
  if (!cJSON_IsObject(o))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected a JSON object like vLLM's "
                         "{\"method\": \"eagle3\", \"model\": ..., \"num_speculative_tokens\": 3}",
                         where);
  int rc;
  char method[64] = "";
  int64_t k = 0, dtp = 0, lo = 0, hi = 0;
  if ((rc = check_keys(o, extra, where, err)) < 0 ||
      (rc = kvsim__json_str(o, "method", method, sizeof method, where, err)) < 0 ||
      (rc = kvsim__json_str(o, "model", p->model, sizeof p->model, where, err)) < 0 ||
      (rc = kvsim__json_int_in(o, "num_speculative_tokens", 1, KVSIM_SPEC_MAX_TOKENS, &k, where,
                               err)) < 0 ||
      /* A TP degree: the registry's bound (kvsim/params.h). */
      (rc = kvsim__json_int_in(o, "draft_tensor_parallel_size", 1, KVSIM_MAX_PARALLEL, &dtp, where,
                               err)) < 0 ||
      (rc = kvsim__json_int_in(o, "prompt_lookup_min", 1, 1 << 20, &lo, where, err)) < 0 ||
      (rc = kvsim__json_int_in(o, "prompt_lookup_max", 1, 1 << 20, &hi, where, err)) < 0)
    return rc;
  p->num_speculative_tokens = (int)k;
  p->draft_tensor_parallel_size = (int)dtp;
  if (method[0]) {
    if ((rc = method_of(method, &p->method, where, err)) < 0)
      return rc;
  } else if (p->model[0]) {
    p->method = infer_method(p->model);
  } else {
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: give a method or a model (vLLM infers the method "
                         "from the model's name)", where);
  }
  switch (p->method) {
  case KVSIM_SPEC_NGRAM:
    p->model[0] = 0;
    if ((rc = ngram_window(p, lo, hi, where, err)) < 0)
      return rc;
    break;
  case KVSIM_SPEC_EAGLE:
  case KVSIM_SPEC_EAGLE3:
  case KVSIM_SPEC_DRAFT_MODEL:
    if (!p->model[0])
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s: method %s needs a model (vLLM: \"num_speculative_tokens was "
                           "provided but without speculative model\")",
                           where, kvsim_spec_method_name(p->method));
    break;
  default:
    break;
  }
  if (p->method != KVSIM_SPEC_NGRAM && (lo || hi))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%sprompt_lookup_min/max: only the ngram method reads "
                         "them", where, kvsim__json_sep(where));
  return KVSIM_OK;
}

int kvsim_spec_parse_object(const cJSON *o, const char *const *extra, kvsim_plan_spec_params_t *p,
                            const char *where, kvsim_err *err) {
  int rc = kvsim__spec_parse_fields(o, extra, p, where, err);
  if (rc < 0)
    return rc;
  /* _verify_args: "num_speculative_tokens must be provided with speculative
   * model unless the draft model config contains an n_predict parameter"
   * (MTP's default is resolved against the model, kvsim__spec_resolve). */
  if (!p->num_speculative_tokens && p->method != KVSIM_SPEC_MTP)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%snum_speculative_tokens: required for method %s",
                         where, kvsim__json_sep(where), kvsim_spec_method_name(p->method));
  return KVSIM_OK;
}

int kvsim_spec_parse_text(const char *json_text, kvsim_plan_spec_params_t *p, const char *where,
                          kvsim_err *err) {
  cJSON *o = kvsim__json_parse(json_text, where, err);
  if (!o)
    return err->code;
  int rc = kvsim_spec_parse_object(o, NULL, p, where, err);
  cJSON_Delete(o);
  return rc;
}

int kvsim_spec_lookahead_tokens(const kvsim_plan_spec_params_t *p) {
  return p->method == KVSIM_SPEC_NONE || p->method == KVSIM_SPEC_NGRAM ? 0 : p->num_speculative_tokens;
}

/* The MTP drafter as a model: the target's layers' kind, n_predict of them
 * (DeepSeekMultiTokenPredictor: one full decoder layer per MTP module, a
 * routed-expert layer in DeepSeek-V3). */
static void mtp_model(const kvsim_model_t *t, kvsim_model_t *d) {
  *d = *t;
  d->num_layers = (int)t->num_nextn_predict_layers;
  const int last = t->num_layers - 1;
  d->num_moe_layers = 0;
  d->num_sliding_layers = 0;
  for (int i = 0; i < d->num_layers; i++) {
    d->layer_moe[i] = t->layer_moe[last];
    d->layer_sliding[i] = 0;
    d->num_moe_layers += d->layer_moe[i];
  }
  d->sliding_window = 0;
  d->num_nextn_predict_layers = 0;
}

int kvsim_spec_draft_model(const kvsim_model_t *target, const kvsim_plan_spec_params_t *p,
                           kvsim_model_t *draft, kvsim_err *err) {
  switch (p->method) {
  case KVSIM_SPEC_MTP:
    mtp_model(target, draft);
    return KVSIM_OK;
  case KVSIM_SPEC_EAGLE:
  case KVSIM_SPEC_EAGLE3:
  case KVSIM_SPEC_DRAFT_MODEL: {
    int rc = kvsim_model_load(p->model, draft, err);
    if (rc < 0)
      return kvsim_err_prefix(err, "--speculative-config model");
    /* vLLM builds the draft's ModelConfig with dtype=target dtype. */
    draft->dtype_bytes = target->dtype_bytes;
    snprintf(draft->dtype, sizeof draft->dtype, "%s", target->dtype);
    return KVSIM_OK;
  }
  default:
    return kvsim_err_set(err, KVSIM_ENOENT, "speculative method %s has no drafter model",
                         kvsim_spec_method_name(p->method));
  }
}

int kvsim__spec_resolve(const kvsim_model_t *m, kvsim_plan_params_t *pp, kvsim_model_t *draft,
                        kvsim_err *err) {
  kvsim_plan_spec_params_t *p = &pp->spec;
  if (p->method == KVSIM_SPEC_NONE)
    return KVSIM_OK;
  const char *flag = "--speculative-config (engine.speculative)";
  if (pp->engine != KVSIM_PLAN_V1)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                               "speculative decoding is modelled for vllm-v1 only, not %s",
                               kvsim_plan_engine_name(pp->engine));
  /* V1 refuses pipeline parallelism with a drafter on the GPU
   * (vllm/config/vllm.py: "Speculative decoding is not supported with
   * pipeline parallelism" in the releases modelled). */
  if (pp->pp > 1 && p->method != KVSIM_SPEC_NGRAM)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                               "vLLM V1 runs a %s drafter without pipeline "
                               "parallelism only (--pipeline-parallel-size %d)",
                               kvsim_spec_method_name(p->method), pp->pp);
  if (p->draft_tensor_parallel_size && p->draft_tensor_parallel_size != pp->tp) {
    /* _verify_and_get_draft_tp allows 1 or the target's. */
    if (p->draft_tensor_parallel_size != 1)
      return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                                 "draft_tensor_parallel_size=%d cannot be other value "
                                 "than 1 or target model tensor_parallel_size (%d)",
                                 p->draft_tensor_parallel_size, pp->tp);
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                               "draft_tensor_parallel_size 1 under TP %d is not "
                               "modelled (leave it out: the target's)",
                               pp->tp);
  }
  if (p->method == KVSIM_SPEC_NGRAM)
    return KVSIM_OK;
  if (kvsim_model_is_hybrid(m) || m->num_sliding_layers)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                               "a drafter beside a sliding-window model (%s) is not "
                               "modelled",
                               m->name);
  if (p->method == KVSIM_SPEC_MTP) {
    const int64_t n = m->num_nextn_predict_layers;
    if (n <= 0)
      return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                                 "method mtp needs a model with MTP layers; %s has "
                                 "no num_nextn_predict_layers",
                                 m->name);
    /* n_predict is the default k; more must be a multiple of it ("Ensure
     * divisibility for MTP module reuse"). */
    if (!p->num_speculative_tokens)
      p->num_speculative_tokens = (int)(n < KVSIM_SPEC_MAX_TOKENS ? n : KVSIM_SPEC_MAX_TOKENS);
    else if (p->num_speculative_tokens > n && p->num_speculative_tokens % n)
      return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                                 "num_speculative_tokens:%d must be divisible by "
                                 "n_predict=%lld",
                                 p->num_speculative_tokens, (long long)n);
  }
  int rc = kvsim_spec_draft_model(m, p, draft, err);
  if (rc < 0)
    return rc;
  if (draft->mla != m->mla || kvsim_model_is_hybrid(draft) || draft->num_sliding_layers)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                               "drafter %s has another attention kind than %s; "
                               "not modelled",
                               draft->name, m->name);
  /* verify_equal_vocab_size_if_draft_model. */
  if (p->method == KVSIM_SPEC_DRAFT_MODEL && draft->vocab_size != m->vocab_size)
    return kvsim_err_set_param(
        err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
        "Target and draft model should have the same "
        "vocabulary size. Target model vocab_size=%lld. Draft model vocab_size=%lld.",
        (long long)m->vocab_size, (long long)draft->vocab_size);
  if ((p->method == KVSIM_SPEC_EAGLE || p->method == KVSIM_SPEC_EAGLE3) && draft->hidden_size != m->hidden_size)
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_SPECULATIVE, flag,
                               "EAGLE head %s has hidden_size %lld, the target %s "
                               "%lld",
                               draft->name, (long long)draft->hidden_size, m->name,
                               (long long)m->hidden_size);
  return KVSIM_OK;
}

/* Parameters of one EAGLE decoder layer on one rank, as
 * vllm/model_executor/models/llama_eagle3.py (and llama_eagle.py) build
 * it: QKVParallelLinear over 2 x hidden inputs for EAGLE-3 (the embedding
 * and the hidden state, concatenated), the o projection and the gated MLP
 * split over TP, and its norms. */
static int64_t eagle_layer_params(const kvsim_model_t *d, bool eagle3, int tp) {
  const int64_t h = d->hidden_size, hd = d->head_dim;
  const int64_t q_out = d->num_heads / tp * hd, kv_out = kvsim_model_kv_heads_per_rank(d, tp) * hd;
  const int64_t in = eagle3 ? 2 * h : h;
  int64_t n = in * (q_out + 2 * kv_out) + q_out * h + 3 * h * (d->intermediate_size / tp);
  /* input_layernorm, post_attention_layernorm; EAGLE-3's hidden_norm and
   * the model's final norm. */
  n += (eagle3 ? 4 : 3) * h;
  return n;
}

int64_t kvsim__spec_weights_bytes(const kvsim_model_t *m, const kvsim_model_t *draft,
                                  const kvsim_plan_params_t *pp, bool *embed_shared,
                                  bool *lm_head_shared) {
  const kvsim_plan_spec_params_t *p = &pp->spec;
  const int tp = pp->tp;
  const int64_t h = m->hidden_size, b = m->dtype_bytes;
  *embed_shared = *lm_head_shared = false;
  switch (p->method) {
  case KVSIM_SPEC_EAGLE:
  case KVSIM_SPEC_EAGLE3: {
    const bool e3 = p->method == KVSIM_SPEC_EAGLE3;
    int64_t n = eagle_layer_params(draft, e3, tp) * draft->num_layers;
    /* fc: ReplicatedLinear(3 x target hidden -> hidden) for EAGLE-3, a
     * plain Linear(2 x hidden -> hidden) for EAGLE: whole on every rank. */
    n += (e3 ? 3 : 2) * h * draft->hidden_size;
    /* EagleProposer.load_model: the head's embed_tokens is replaced by the
     * target's when their shapes match and PP is 1; EAGLE (not EAGLE-3)
     * takes the target's lm_head as well. */
    const int64_t head_vocab = e3 && draft->draft_vocab_size > 0 ? draft->draft_vocab_size : draft->vocab_size;
    const int64_t padded = (head_vocab + 63) / 64 * 64; /* ParallelLMHead pads to 64 */
    *embed_shared = draft->vocab_size == m->vocab_size && pp->pp == 1;
    if (!*embed_shared)
      n += (draft->vocab_size + 63) / 64 * 64 / tp * h;
    *lm_head_shared = !e3;
    if (e3)
      n += padded / tp * h;
    int64_t bytes = n * b;
    /* draft_id_to_target_id: an int64 parameter of draft_vocab_size. */
    if (e3 && draft->draft_vocab_size > 0)
      bytes += 8 * draft->draft_vocab_size;
    return bytes;
  }
  case KVSIM_SPEC_MTP: {
    /* One decoder layer of the target per MTP module, plus enorm, hnorm,
     * eh_proj (Linear 2 x hidden -> hidden) and the shared head's norm
     * (deepseek_mtp.py DeepSeekMultiTokenPredictorLayer); embed_tokens and
     * the head are the target's (EagleProposer.load_model). The layer's
     * bytes: two layers' weights minus one's. */
    kvsim_quant_t q;
    kvsim_err scratch;
    if (kvsim__quant_resolve(m, pp->quantization, &q, &scratch) < 0)
      q = m->quant;
    kvsim_model_t one = *draft, two = *draft;
    one.num_layers = 1;
    two.num_layers = 2;
    two.layer_moe[1] = two.layer_moe[0];
    int64_t layer = kvsim__weights_bytes_ep(&two, &q, tp, pp->ep, 1, 0) -
                    kvsim__weights_bytes_ep(&one, &q, tp, pp->ep, 1, 0);
    *embed_shared = *lm_head_shared = true;
    return draft->num_layers * (layer + (2 * h * h + 3 * h) * b);
  }
  case KVSIM_SPEC_DRAFT_MODEL: {
    /* A whole model at the target's TP, unquantized unless its own
     * config says otherwise (SpeculativeConfig.quantization: None). */
    kvsim_quant_t q = draft->quant;
    return kvsim__weights_bytes_ep(draft, &q, tp, 1, 1, 0);
  }
  default:
    return 0;
  }
}
