/* A Hugging Face checkpoint id -> the catalog architecture it is built on,
 * the weight precision its name declares, and the variant's own context
 * length. "Qwen/Qwen2.5-32B-Instruct-AWQ" is qwen2.5-32b's architecture
 * with 4-bit AWQ weights and the Instruct config's max_position_embeddings;
 * loading it as the bf16 base model would plan three times its weights.
 * What the name alone cannot settle is said in a note (the caller prints
 * it), never assumed silently. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/catalog.h"
#include "core/util.h"
#include "kvsim/model.h"
#include "model/hf_ids.h"

typedef enum { VAR_NONE = 0, VAR_INSTRUCT, VAR_BASE } variant_t;

/* Precision suffixes, as the quantizers name their uploads (Qwen's own
 * "-AWQ" / "-GPTQ-Int4", Neural Magic / Red Hat's "-FP8-dynamic",
 * "-W8A8", "-W4A16", unsloth's "-bnb-4bit"). Longer suffixes first, so
 * "-gptq-int8" is read as one precision, not "-int8" then "-gptq". */
typedef struct {
  const char *suffix;
  kvsim_quant_kind kind; /* KVSIM_QUANT_NONE with unsupported set: refused */
  const char *method;
  bool no_zero_points;
  bool half;             /* the kernel runs in float16 only */
  bool unsupported;
} precision_t;

static const precision_t precisions[] = {
    /* vllm/model_executor/layers/quantization/fp8.py Fp8LinearMethod and
     * compressed_tensors/schemes/compressed_tensors_w8a8_fp8.py: one fp8
     * byte per weight and a float32 scale per output channel (dynamic
     * checkpoints) or per tensor. */
    {"-fp8-dynamic", KVSIM_QUANT_FP8, "compressed-tensors", false, false, false},
    {"-fp8-static", KVSIM_QUANT_FP8, "compressed-tensors", false, false, false},
    {"-w8a8-fp8", KVSIM_QUANT_FP8, "compressed-tensors", false, false, false},
    {"-fp8", KVSIM_QUANT_FP8, "fp8", false, false, false},
    /* vllm/model_executor/layers/quantization/gptq.py
     * GPTQLinearMethod.create_weights: qweight int32 [in / pack, out],
     * qzeros int32 [in / group, out / pack], scales [in / group, out] in
     * the activation dtype; Qwen's GPTQ uploads use group 128 and float16. */
    {"-gptq-int4", KVSIM_QUANT_INT4, "gptq", false, true, false},
    {"-gptq-int8", KVSIM_QUANT_INT8, "gptq", false, true, false},
    /* awq.py AWQLinearMethod.create_weights: qweight int32 [in, out / 8],
     * qzeros int32 [in / group, out / 8], scales float16 [in / group, out]:
     * 0.5 + (0.5 + 2) / group bytes per weight. AWQConfig only takes 4 bits
     * and get_supported_act_dtypes is [torch.half]. */
    {"-awq", KVSIM_QUANT_INT4, "awq", false, true, false},
    {"-gptq", KVSIM_QUANT_INT4, "gptq", false, true, false},
    /* compressed_tensors/schemes/compressed_tensors_wNa16.py
     * CompressedTensorsWNA16.create_weights: weight_packed int32
     * [out, in / pack] and weight_scale [out, in / group]; symmetric, so
     * no zero point ("No zero-point" in process_weights_after_loading). */
    {"-w4a16", KVSIM_QUANT_INT4, "compressed-tensors", true, false, false},
    {"-w8a16", KVSIM_QUANT_INT8, "compressed-tensors", true, false, false},
    /* compressed_tensors_w8a8_int8.py: int8 weight, float32 scale per
     * output channel. */
    {"-w8a8", KVSIM_QUANT_INT8, "compressed-tensors", false, false, false},
    /* Red Hat AI's names for the same schemes. */
    {"-quantized.w4a16", KVSIM_QUANT_INT4, "compressed-tensors", true, false, false},
    {"-quantized.w8a16", KVSIM_QUANT_INT8, "compressed-tensors", true, false, false},
    {"-quantized.w8a8", KVSIM_QUANT_INT8, "compressed-tensors", false, false, false},
    {"-int4", KVSIM_QUANT_INT4, "gptq", false, true, false},
    {"-int8", KVSIM_QUANT_INT8, "gptq", false, true, false},
    /* bitsandbytes NF4: 4-bit codes and one absmax per 64 weights
     * (quantized again to 8 bits with double quantization), about the
     * 0.52 bytes of a 128-group int4 layout; counted as that. */
    {"-bnb-4bit", KVSIM_QUANT_INT4, "bitsandbytes", false, false, false},
    {"-nvfp4", KVSIM_QUANT_NONE, "nvfp4", false, false, true},
    {"-fp4", KVSIM_QUANT_NONE, "fp4", false, false, true},
};

/* Variant suffixes. "-hf" only marks the transformers-format upload. */
static const struct {
  const char *suffix;
  variant_t variant;
} variants[] = {
    {"-instruct", VAR_INSTRUCT}, {"-chat", VAR_INSTRUCT}, {"-it", VAR_INSTRUCT},
    {"-base", VAR_BASE},         {"-pt", VAR_BASE}, /* Gemma's pretrained */
    {"-hf", VAR_NONE},
};

/* Releases whose config differs from the catalog's original: the
 * architecture is the same, the rest is an assumption (stated). */
static const char *const releases[] = {"-instruct-2507", "-thinking-2507", "-2507"};

/* The variant of each catalog entry: which of base or post-trained its
 * config.json was read from (configs/models/SOURCES.md). Qwen3 names its
 * post-trained model without a suffix and the pretrained one "-Base"
 * (huggingface.co/Qwen/Qwen3-8B model card). */
static bool suffixless_post_trained(const char *catalog) { return !strncmp(catalog, "qwen3-", 6); }

static variant_t catalog_variant(const char *catalog) {
  const char *id = kvsim_model_hf_id(catalog);
  if (suffixless_post_trained(catalog))
    return VAR_INSTRUCT;
  if (id && (strstr(id, "-Instruct") || strstr(id, "-instruct") || strstr(id, "-it") ||
             strstr(id, "-Chat")))
    return VAR_INSTRUCT;
  return VAR_BASE;
}

/* Where the base and post-trained configs differ in max_position_embeddings,
 * the other variant's value. Qwen2.5's base models are 131072 and their
 * Instruct models 32768 (huggingface.co/Qwen/Qwen2.5-7B-Instruct,
 * -14B-Instruct, -32B-Instruct, -72B-Instruct config.json; the base
 * Qwen/Qwen2.5-72B config.json has 131072). */
static const struct {
  const char *catalog;
  variant_t variant;
  int64_t max_position_embeddings;
} context_of_variant[] = {
    {"qwen2.5-7b", VAR_INSTRUCT, 32768},
    {"qwen2.5-14b", VAR_INSTRUCT, 32768},
    {"qwen2.5-32b", VAR_INSTRUCT, 32768},
    {"qwen2.5-72b", VAR_BASE, 131072},
};

/* Families whose base and post-trained configs agree on every field kvsim
 * reads (Meta's, Mistral's and DeepSeek's base / Instruct / Chat pairs, and
 * Gemma-2's -it, whose only difference, torch_dtype, vLLM's dtype "auto"
 * resolves to bfloat16 either way). */
static const char *const same_across_variants[] = {
    "llama-2-", "llama-3-", "llama-3.1-", "llama-3.2-", "mistral-", "mixtral-",
    "deepseek-", "gemma-2-", "qwen2.5-"};

static bool variant_same(const char *catalog) {
  for (size_t i = 0; i < sizeof same_across_variants / sizeof *same_across_variants; i++)
    if (!strncmp(catalog, same_across_variants[i], strlen(same_across_variants[i])))
      return true;
  return false;
}

static bool strip(char *s, const char *suffix) {
  if (!kvsim__ends_with(s, suffix))
    return false;
  s[strlen(s) - strlen(suffix)] = '\0';
  return true;
}

static void set_precision(kvsim_checkpoint_t *c, const precision_t *p) {
  memset(&c->quant, 0, sizeof c->quant);
  c->quant.kind = p->kind;
  snprintf(c->quant.method, sizeof c->quant.method, "%s", p->method);
  if (p->kind == KVSIM_QUANT_INT4)
    c->quant.group_size = 128;
  c->quant.no_zero_points = p->no_zero_points;
  if (p->half)
    snprintf(c->dtype, sizeof c->dtype, "float16");
}

/* Strips the suffixes of `s` (lower case, no organisation) in any order,
 * recording what they say. */
static int read_suffixes(const char *id, char *s, kvsim_checkpoint_t *c, variant_t *var,
                         const char **release, const precision_t **unsupported,
                         const char **exact, kvsim_err *err) {
  const char *prec = NULL;
  for (bool changed = true; changed;) {
    changed = false;
    /* A catalog repository once only the precision is dropped
     * ("Mixtral-8x7B-Instruct-v0.1-AWQ"): that variant exactly. */
    if (*var == VAR_NONE && !*release && (*exact = kvsim__model_of_hf_id(s)) != NULL)
      break;
    for (size_t k = 0; !changed && k < sizeof precisions / sizeof *precisions; k++) {
      const precision_t *p = &precisions[k];
      if (!strip(s, p->suffix))
        continue;
      changed = true;
      if (p->unsupported) {
        *unsupported = p;
        continue;
      }
      if (prec)
        return kvsim_err_set(err, KVSIM_EINVAL, "model '%s': two precisions in one name (%s, %s)",
                             id, p->suffix + 1, prec + 1);
      prec = p->suffix;
      set_precision(c, p);
    }
    for (size_t k = 0; !changed && k < sizeof variants / sizeof *variants; k++)
      if (strip(s, variants[k].suffix)) {
        changed = true;
        if (variants[k].variant != VAR_NONE)
          *var = variants[k].variant;
      }
    for (size_t k = 0; !changed && k < sizeof releases / sizeof *releases; k++)
      if (strip(s, releases[k])) {
        changed = true;
        *release = releases[k];
        if (strstr(releases[k], "instruct") || strstr(releases[k], "thinking"))
          *var = VAR_INSTRUCT;
      }
  }
  return KVSIM_OK;
}

/* The variant's context length, or a note when the variant differs from
 * the catalog's and its config is not known here. */
static void apply_variant(const char *id, variant_t var, const char *release,
                          kvsim_checkpoint_t *c) {
  if (release) {
    snprintf(c->note, sizeof c->note,
             "%s resolved to %s (assumed: the original release's config; the %s release's "
             "context and rope settings may differ)",
             id, c->catalog, release + 1);
    return;
  }
  /* No variant suffix: the family's unsuffixed upload, the base model
   * except where the family names its post-trained model that way. */
  if (var == VAR_NONE)
    var = suffixless_post_trained(c->catalog) ? VAR_INSTRUCT : VAR_BASE;
  if (var == catalog_variant(c->catalog))
    return;
  for (size_t i = 0; i < sizeof context_of_variant / sizeof *context_of_variant; i++)
    if (!strcmp(context_of_variant[i].catalog, c->catalog) && context_of_variant[i].variant == var) {
      c->max_position_embeddings = context_of_variant[i].max_position_embeddings;
      return;
    }
  if (variant_same(c->catalog))
    return;
  snprintf(c->note, sizeof c->note,
           "%s resolved to %s (assumed: the %s config stands for the %s one)", id, c->catalog,
           catalog_variant(c->catalog) == VAR_BASE ? "base" : "post-trained",
           var == VAR_BASE ? "base" : "post-trained");
}

int kvsim_model_resolve_checkpoint(const char *hf_id, kvsim_checkpoint_t *c, kvsim_err *err) {
  memset(c, 0, sizeof *c);
  const char *exact = kvsim__model_of_hf_id(hf_id);
  if (exact) {
    snprintf(c->catalog, sizeof c->catalog, "%s", exact);
    return KVSIM_OK;
  }
  const char *base = strrchr(hf_id, '/');
  base = base ? base + 1 : hf_id;
  char s[128];
  size_t n = 0;
  for (; base[n] && n + 1 < sizeof s; n++)
    s[n] = (char)tolower((unsigned char)base[n]);
  s[n] = '\0';
  variant_t var = VAR_NONE;
  const char *release = NULL;
  const precision_t *unsupported = NULL;
  int rc = read_suffixes(hf_id, s, c, &var, &release, &unsupported, &exact, err);
  if (rc < 0)
    return rc;
  /* "meta-llama-3-8b" (Meta-Llama-3-8B) -> "llama-3-8b". */
  const char *name = exact ? exact : !strncmp(s, "meta-llama-", 11) ? s + 5 : s;
  snprintf(c->catalog, sizeof c->catalog, "%s", name);
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_MODEL, c->catalog);
  if (!e)
    return kvsim_err_set(err, KVSIM_ENOENT, "model '%s': no catalog architecture '%s'", hf_id,
                         c->catalog);
  snprintf(c->catalog, sizeof c->catalog, "%s", e->name);
  if (unsupported)
    return kvsim_err_set(err, KVSIM_EUNSUP,
                         "model '%s': %s weights are not modelled (give the checkpoint's "
                         "config.json, or --quantization fp8, int8, awq, gptq or mxfp4)",
                         hf_id, unsupported->method);
  if (!exact)
    apply_variant(hf_id, var, release, c);
  return KVSIM_OK;
}

int kvsim_model_catalog_name(const char *hf_id, char *out, size_t cap) {
  kvsim_checkpoint_t c;
  kvsim_err e = {0};
  int rc = kvsim_model_resolve_checkpoint(hf_id, &c, &e);
  snprintf(out, cap, "%s", c.catalog);
  /* An architecture named with a precision kvsim does not model is still
   * that architecture (the fidelity tables key rows by it). */
  return rc == KVSIM_OK || (rc == KVSIM_EUNSUP && c.catalog[0] &&
                            kvsim__catalog_find(KVSIM_CATALOG_MODEL, c.catalog));
}
