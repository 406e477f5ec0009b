/* Model loader and parameter count: real catalog configs, the quirks real
 * HF config.json files carry, and the loader's errors (temp files). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmpdir.h"
#include "kvsim/error.h"
#include "kvsim/model.h"
#include <stdint.h>

static kvsim_model_t load(const char *name) {
  kvsim_model_t m;
  kvsim_err err = {0};
  int rc = kvsim_model_load(name, &m, &err);
  cr_assert_eq(rc, KVSIM_OK, "loading %s failed: %s", name, err.msg);
  return m;
}

static int64_t params(const char *name) {
  kvsim_model_t m = load(name);
  kvsim_model_params_t p;
  kvsim_model_count_params(&m, &p);
  return p.total;
}

/* Writes `text` to a fresh temp file; the caller unlinks it. */
static void temp_config(const char *text, char *path, size_t cap) {
  snprintf(path, cap, "/tmp/kvsim-test-model-XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemp failed for %s", path);
  FILE *f = fdopen(fd, "w");
  cr_assert_not_null(f, "fdopen failed");
  cr_assert_eq(fputs(text, f) >= 0, 1, "write failed");
  cr_assert_eq(fclose(f), 0, "close failed");
}

static int parse_temp(const char *text, kvsim_model_t *m, kvsim_err *err, char *path,
                      size_t cap) {
  temp_config(text, path, cap);
  int rc = kvsim_model_load(path, m, err);
  unlink(path);
  return rc;
}

/* A minimal Llama-style config; tests splice fields into it. */
#define BASE_FIELDS                                                                            \
  "\"model_type\": \"llama\", \"hidden_size\": 1024, \"num_attention_heads\": 8, "            \
  "\"num_key_value_heads\": 2, \"intermediate_size\": 2048, \"vocab_size\": 32000, "         \
  "\"max_position_embeddings\": 4096"

/* ---- parameter counts ---- */

Test(model_params, llama_3_1_8b_is_exact) {
  /* total_parameters of meta-llama/Llama-3.1-8B-Instruct's
   * model.safetensors.index.json. */
  int64_t n = params("llama-3.1-8b");
  cr_assert_eq(n, 8030261248LL, "Llama-3.1-8B: got %lld, want 8,030,261,248", (long long)n);
}

Test(model_params, llama_3_1_70b_is_exact) {
  int64_t n = params("llama-3.1-70b");
  cr_assert_eq(n, 70553706496LL, "Llama-3.1-70B: got %lld, want 70,553,706,496", (long long)n);
}

Test(model_params, published_totals_within_half_a_percent) {
  /* Published totals: Mixtral 46.7B (simonwillison.net/2024/Jan/9/
   * mixtral-of-experts), DeepSeek-V3 671B (deepseek-ai/DeepSeek-V3
   * README_WEIGHTS.md), Qwen3-30B-A3B 30.5B (vLLM Ascend's Qwen3-30B-A3B
   * tutorial, docs.vllm.ai), gpt-oss 21B / 117B (NVIDIA NeMo gpt-oss page;
   * 116.8B on the model card), and the model cards (Llama-3.1-405B,
   * Qwen3-235B-A22B 235B). */
  static const struct {
    const char *name;
    double published;
  } want[] = {{"mixtral-8x7b", 46.7e9},    {"deepseek-v3", 671e9},    {"qwen3-30b-a3b", 30.5e9},
              {"gpt-oss-120b", 116.8e9},   {"gpt-oss-20b", 21e9},     {"llama-3.1-405b", 405e9},
              {"qwen3-235b-a22b", 235e9}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    double n = (double)params(want[i].name);
    double rel = fabs(n - want[i].published) / want[i].published;
    cr_assert(rel <= 0.005, "%s: %.4g parameters is %.2f%% from the published %.4g", want[i].name,
              n, 100 * rel, want[i].published);
  }
}

Test(model_params, tied_embeddings_drop_the_lm_head) {
  kvsim_model_t m = load("llama-3.2-1b");
  cr_assert(m.tie_word_embeddings, "Llama-3.2-1B ties its embeddings");
  kvsim_model_params_t p;
  kvsim_model_count_params(&m, &p);
  cr_assert_eq(p.lm_head, 0, "tied lm_head must not be counted, got %lld", (long long)p.lm_head);
  m.tie_word_embeddings = false;
  kvsim_model_params_t u;
  kvsim_model_count_params(&m, &u);
  cr_assert_eq(u.total - p.total, m.vocab_size * m.hidden_size,
               "untying adds exactly vocab x hidden (%lld), got %lld",
               (long long)(m.vocab_size * m.hidden_size), (long long)(u.total - p.total));
}

/* ---- loader quirks ---- */

Test(model_loader, explicit_head_dim_wins) {
  static const struct {
    const char *name;
    int64_t head_dim;
  } want[] = {{"gemma-2-9b", 256}, {"qwen3-32b", 128}, {"gpt-oss-120b", 64}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_model_t m = load(want[i].name);
    cr_assert_eq(m.head_dim, want[i].head_dim, "%s: head_dim %lld, want %lld", want[i].name,
                 (long long)m.head_dim, (long long)want[i].head_dim);
    cr_assert_neq(m.head_dim, m.hidden_size / m.num_heads,
                  "%s: the explicit head_dim differs from hidden/heads", want[i].name);
  }
}

Test(model_loader, derived_head_dim_without_the_key) {
  kvsim_model_t m = load("mistral-7b-v0.3");
  cr_assert_eq(m.head_dim, 128, "Mistral-7B-v0.3: hidden 4096 / 32 heads = 128, got %lld",
               (long long)m.head_dim);
}

Test(model_loader, nested_text_config_with_defaults) {
  kvsim_model_t m = load("gemma-3-27b");
  cr_assert_eq(m.num_layers, 62, "Gemma-3-27B text_config: 62 layers, got %d", m.num_layers);
  cr_assert_eq(m.hidden_size, 5376, "hidden_size from text_config, got %lld",
               (long long)m.hidden_size);
  cr_assert_eq(m.vocab_size, 262208, "vocab_size takes the transformers default, got %lld",
               (long long)m.vocab_size);
  cr_assert_eq(m.max_position_embeddings, 131072, "max_position_embeddings default, got %lld",
               (long long)m.max_position_embeddings);
  cr_assert_str_eq(m.dtype, "bfloat16", "torch_dtype is read from the top level");
}

Test(model_loader, dtype_and_torch_dtype) {
  char path[64];
  kvsim_model_t m;
  kvsim_err err = {0};
  int rc = parse_temp("{" BASE_FIELDS ", \"num_hidden_layers\": 2, \"dtype\": \"float16\"}", &m,
                      &err, path, sizeof path);
  cr_assert_eq(rc, KVSIM_OK, "dtype config: %s", err.msg);
  cr_assert_str_eq(m.dtype, "float16", "transformers >= 4.56 writes \"dtype\"");
  rc = parse_temp("{" BASE_FIELDS ", \"num_hidden_layers\": 2, \"torch_dtype\": \"bfloat16\"}", &m,
                  &err, path, sizeof path);
  cr_assert_eq(rc, KVSIM_OK, "torch_dtype config: %s", err.msg);
  cr_assert_str_eq(m.dtype, "bfloat16", "older files write \"torch_dtype\"");
  cr_assert_eq(m.dtype_bytes, 2, "bfloat16 is 2 bytes");
  rc = parse_temp("{" BASE_FIELDS ", \"num_hidden_layers\": 2, \"torch_dtype\": \"float32\"}", &m,
                  &err, path, sizeof path);
  cr_assert_eq(rc, KVSIM_OK, "float32 config: %s", err.msg);
  cr_assert_eq(m.dtype_bytes, 2, "vLLM serves float32 checkpoints in 16 bits by default");
}

Test(model_loader, sliding_window_null_means_none) {
  kvsim_model_t m = load("mistral-7b-v0.3");
  cr_assert_eq(m.sliding_window, 0, "Mistral-7B-v0.3 has sliding_window null");
  cr_assert_eq(m.num_sliding_layers, 0, "no sliding layers");
  cr_assert(!kvsim_model_is_hybrid(&m), "not hybrid");
  /* Qwen2.5 carries a window but use_sliding_window false. */
  kvsim_model_t q = load("qwen2.5-14b");
  cr_assert_eq(q.num_sliding_layers, 0, "Qwen2.5 with use_sliding_window false has no sliding layers");
}

Test(model_loader, gpt_oss_layer_types_alternate_from_zero) {
  kvsim_model_t m = load("gpt-oss-120b");
  cr_assert_eq(m.sliding_window, 128, "gpt-oss window 128, got %lld", (long long)m.sliding_window);
  for (int i = 0; i < m.num_layers; i++)
    cr_assert_eq(m.layer_sliding[i], i % 2 == 0, "gpt-oss layer %d should be %s", i,
                 i % 2 == 0 ? "sliding" : "full");
  cr_assert_eq(m.num_sliding_layers, 18, "18 of 36 layers slide, got %d", m.num_sliding_layers);
  cr_assert(kvsim_model_is_hybrid(&m), "gpt-oss is hybrid");
}

Test(model_loader, gemma2_even_layers_slide) {
  kvsim_model_t m = load("gemma-2-9b");
  for (int i = 0; i < m.num_layers; i++)
    cr_assert_eq(m.layer_sliding[i], i % 2 == 0, "Gemma-2 layer %d: even layers are local", i);
  cr_assert_eq(m.num_sliding_layers, 21, "21 of 42 layers slide, got %d", m.num_sliding_layers);
  cr_assert_eq(m.sliding_window, 4096, "window 4096");
}

Test(model_loader, gemma3_pattern_six) {
  kvsim_model_t m = load("gemma-3-27b");
  int full = 0;
  for (int i = 0; i < m.num_layers; i++) {
    bool want_full = (i + 1) % 6 == 0; /* 5, 11, 17, ... */
    cr_assert_eq(m.layer_sliding[i], !want_full, "Gemma-3 layer %d should be %s", i,
                 want_full ? "full" : "sliding");
    full += want_full;
  }
  cr_assert_eq(full, 10, "62 layers hold 10 full-attention layers");
  cr_assert_eq(m.num_sliding_layers, 52, "52 sliding layers, got %d", m.num_sliding_layers);
  /* An explicit layer_types array overrides the pattern. */
  char text[4096], path[64];
  int o = snprintf(text, sizeof text,
                   "{\"model_type\": \"gemma3_text\", \"hidden_size\": 1024, "
                   "\"num_attention_heads\": 8, \"num_key_value_heads\": 4, \"head_dim\": 128, "
                   "\"intermediate_size\": 2048, \"num_hidden_layers\": 4, \"sliding_window\": 512, "
                   "\"layer_types\": [\"full_attention\", \"sliding_attention\", "
                   "\"full_attention\", \"sliding_attention\"]}");
  cr_assert(o > 0 && (size_t)o < sizeof text, "fixture fits");
  kvsim_err err = {0};
  int rc = parse_temp(text, &m, &err, path, sizeof path);
  cr_assert_eq(rc, KVSIM_OK, "layer_types config: %s", err.msg);
  cr_assert(!m.layer_sliding[0] && m.layer_sliding[1] && !m.layer_sliding[2] && m.layer_sliding[3],
            "layer_types is followed as written");
}

Test(model_loader, moe_keys_of_each_family) {
  kvsim_model_t mx = load("mixtral-8x7b");
  cr_assert_eq(mx.num_experts, 8, "Mixtral num_local_experts 8");
  cr_assert_eq(mx.moe_intermediate_size, 14336, "Mixtral experts use intermediate_size");
  kvsim_model_t q = load("qwen3-30b-a3b");
  cr_assert_eq(q.num_experts, 128, "Qwen3-MoE num_experts 128");
  cr_assert_eq(q.experts_per_tok, 8, "top-8");
  cr_assert_eq(q.moe_intermediate_size, 768, "moe_intermediate_size 768");
  cr_assert_eq(q.num_moe_layers, 48, "every Qwen3-30B-A3B layer is MoE");
  kvsim_model_t d = load("deepseek-v3");
  cr_assert_eq(d.num_experts, 256, "DeepSeek n_routed_experts 256");
  cr_assert_eq(d.num_shared_experts, 1, "n_shared_experts 1");
  cr_assert_eq(d.moe_intermediate_size, 2048, "moe_intermediate_size 2048");
  for (int i = 0; i < 3; i++)
    cr_assert_eq(d.layer_moe[i], 0, "first_k_dense_replace: layer %d is dense", i);
  cr_assert_eq(d.layer_moe[3], 1, "layer 3 is the first MoE layer");
  cr_assert_eq(d.num_moe_layers, 58, "61 - 3 MoE layers, got %d", d.num_moe_layers);
  kvsim_model_t g = load("gpt-oss-120b");
  cr_assert_eq(g.num_experts, 128, "gpt-oss num_local_experts 128");
  cr_assert_eq(g.experts_per_tok, 4, "gpt-oss top-4");
}

Test(model_loader, mla_latent_geometry) {
  kvsim_model_t d = load("deepseek-v3");
  cr_assert(d.mla, "DeepSeek-V3 uses MLA");
  cr_assert_eq(kvsim_model_kv_head_size(&d), 576, "kv_lora_rank 512 + qk_rope_head_dim 64");
  cr_assert_eq(kvsim_model_kv_factor(&d), 1, "MLA stores one latent, no V");
  cr_assert_eq(kvsim_model_kv_heads_per_rank(&d, 8), 1, "MLA caches one head at any TP");
  kvsim_model_t l = load("llama-3.1-8b");
  cr_assert_eq(kvsim_model_kv_factor(&l), 2, "GQA stores K and V");
}

Test(model_loader, quantization_config) {
  kvsim_model_t d = load("deepseek-v3");
  cr_assert_eq(d.quant.kind, KVSIM_QUANT_FP8, "DeepSeek-V3 checkpoint is fp8");
  cr_assert_eq(d.quant.block_size, 128, "weight_block_size [128, 128]");
  kvsim_model_t g = load("gpt-oss-120b");
  cr_assert_eq(g.quant.kind, KVSIM_QUANT_MXFP4, "gpt-oss experts are mxfp4");
  cr_assert(g.quant.experts_only, "only the experts are mxfp4");
  kvsim_model_t l = load("llama-3.1-8b");
  cr_assert_eq(l.quant.kind, KVSIM_QUANT_NONE, "Llama-3.1-8B is not quantized");
}

Test(model_loader, pp_split_like_get_pp_indices) {
  /* vllm/distributed/utils.py get_pp_indices: 61 layers over 4 stages. */
  int want[] = {15, 15, 16, 15}, start = 0;
  for (int s = 0; s < 4; s++) {
    int first, last;
    kvsim_model_pp_layers(61, 4, s, &first, &last);
    cr_assert_eq(first, start, "stage %d starts at %d, got %d", s, start, first);
    cr_assert_eq(last - first, want[s], "stage %d holds %d layers, got %d", s, want[s],
                 last - first);
    start = last;
  }
  cr_assert_eq(start, 61, "all layers assigned");
}

/* ---- HF ids ---- */

Test(model_catalog, hf_ids_map_onto_catalog_names) {
  static const struct {
    const char *id, *name;
  } want[] = {{"nvidia/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b"},
              {"meta-llama/Meta-Llama-3-8B", "llama-3-8b"},
              {"Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3-30b-a3b"},
              {"openai/gpt-oss-120b", "gpt-oss-120b"}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    char out[128];
    int found = kvsim_model_catalog_name(want[i].id, out, sizeof out);
    cr_assert_eq(found, 1, "%s should map into the catalog (got '%s')", want[i].id, out);
    cr_assert_str_eq(out, want[i].name, "%s maps to %s", want[i].id, want[i].name);
  }
  char out[128];
  cr_assert_eq(kvsim_model_catalog_name("acme/Unknown-Model-9B", out, sizeof out), 0,
               "an unknown id is reported as not in the catalog");
  kvsim_model_t m = load("meta-llama/Llama-3.1-8B-Instruct");
  cr_assert_str_eq(m.name, "llama-3.1-8b", "loading by HF id gives the catalog model");
}

/* ---- errors ---- */

Test(model_errors, missing_field_names_it) {
  char path[64];
  kvsim_model_t m;
  kvsim_err err = {0};
  int rc = parse_temp("{" BASE_FIELDS "}", &m, &err, path, sizeof path);
  cr_assert_eq(rc, KVSIM_EINVAL, "missing num_hidden_layers must fail, got %d", rc);
  cr_assert(strstr(err.msg, "num_hidden_layers") != NULL, "message names the field: %s", err.msg);
  cr_assert(strstr(err.msg, path) != NULL, "message names the file: %s", err.msg);
}

Test(model_errors, wrong_type_names_field) {
  char path[64];
  kvsim_model_t m;
  kvsim_err err = {0};
  int rc = parse_temp("{" BASE_FIELDS ", \"num_hidden_layers\": \"32\"}", &m, &err, path,
                      sizeof path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a string layer count must fail, got %d", rc);
  cr_assert(strstr(err.msg, "num_hidden_layers") != NULL, "message names the field: %s", err.msg);
  cr_assert(strstr(err.msg, "integer") != NULL, "message says what was expected: %s", err.msg);
}

Test(model_errors, bad_json_gives_the_line) {
  char path[64];
  kvsim_model_t m;
  kvsim_err err = {0};
  /* The stray comma on line 3 is the error. */
  int rc = parse_temp("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 1024,,\n  \"x\": 1\n}\n",
                      &m, &err, path, sizeof path);
  cr_assert_eq(rc, KVSIM_EPARSE, "bad JSON must fail with a parse error, got %d", rc);
  char want[96];
  snprintf(want, sizeof want, "%s:3:", path);
  cr_assert(strstr(err.msg, want) != NULL, "message gives file and line 3: %s", err.msg);
}

Test(model_errors, bad_layer_types_length) {
  char path[64];
  kvsim_model_t m;
  kvsim_err err = {0};
  int rc = parse_temp("{" BASE_FIELDS ", \"num_hidden_layers\": 3, \"sliding_window\": 64, "
                      "\"layer_types\": [\"sliding_attention\"]}",
                      &m, &err, path, sizeof path);
  cr_assert_eq(rc, KVSIM_EINVAL, "layer_types of the wrong length must fail, got %d", rc);
  cr_assert(strstr(err.msg, "layer_types") != NULL, "message names the field: %s", err.msg);
}

Test(model_errors, unknown_model_suggests_close_names) {
  kvsim_model_t m;
  kvsim_err err = {0};
  int rc = kvsim_model_load("llama-3.1-8x", &m, &err);
  cr_assert_eq(rc, KVSIM_ENOENT, "an unknown name is not found, got %d", rc);
  cr_assert(strstr(err.msg, "llama-3.1-8x") != NULL, "message repeats the name: %s", err.msg);
  cr_assert(strstr(err.msg, "llama-3.1-8b") != NULL, "message suggests llama-3.1-8b: %s", err.msg);
}

Test(model_errors, unreadable_path) {
  kvsim_model_t m;
  kvsim_err err = {0};
  /* A folder without config.json: the loader looks for FOLDER/config.json. */
  char dir[] = "/tmp/kvsim-test-dir-XXXXXX";
  cr_assert_not_null(mkdtemp(dir), "mkdtemp failed");
  int rc = kvsim_model_load(dir, &m, &err);
  rmdir(dir);
  cr_assert_eq(rc, KVSIM_EIO, "a folder without config.json cannot be read, got %d", rc);
  cr_assert(strstr(err.msg, "config.json") != NULL, "message names the file: %s", err.msg);
}

/* ---- ranges (values a fuzzer found: UBSan overflow or silent garbage) ---- */

static int parse_text(const char *text, kvsim_model_t *m, kvsim_err *err) {
  return kvsim_model_parse(text, "fuzz", "fuzz.json", m, err);
}

/* A two-layer Llama-style config with `key` set to `value` (replacing the
 * base field of that name; cJSON would read the first of two) plus
 * `extra` fields. */
static void config_with(const char *key, const char *value, const char *extra, char *out,
                        size_t cap) {
  static const char *const base[][2] = {
      {"model_type", "\"llama\""},    {"hidden_size", "1024"},        {"num_attention_heads", "8"},
      {"num_key_value_heads", "2"},    {"intermediate_size", "2048"}, {"vocab_size", "32000"},
      {"max_position_embeddings", "4096"}, {"num_hidden_layers", "2"}};
  size_t o = (size_t)snprintf(out, cap, "{\"%s\": %s", key, value);
  for (size_t i = 0; i < sizeof base / sizeof *base; i++)
    if (strcmp(base[i][0], key))
      o += (size_t)snprintf(out + o, cap - o, ", \"%s\": %s", base[i][0], base[i][1]);
  snprintf(out + o, cap - o, "%s%s}", *extra ? ", " : "", extra);
}

Test(model_ranges, every_architecture_field_is_range_checked) {
  /* Each field alone, far outside any real model: the error names the key
   * and its allowed range instead of overflowing into negative weights. */
  static const struct {
    const char *key, *value, *extra, *range;
  } cases[] = {
      {"hidden_size", "1e12", "", "[1, 1048576]"},
      {"num_attention_heads", "1e12", "", "[1, 16384]"},
      {"num_key_value_heads", "-4", "", "[1, 16384]"},
      {"sliding_window", "1e74", "", "[0, 1073741824]"},
      {"vocab_size", "1e15", "", "[1, 16777216]"},
      {"intermediate_size", "1e15", "", "[1, 4194304]"},
      {"max_position_embeddings", "1e18", "", "[0, 1073741824]"},
      {"head_dim", "1e9", "", "[0, 16384]"},
      {"num_hidden_layers", "513", "", "[1, 512]"},
      {"num_local_experts", "1e9", "\"num_experts_per_tok\": 2", "[0, 16384]"},
      {"moe_intermediate_size", "1e10", "\"num_experts\": 8, \"num_experts_per_tok\": 2",
       "[1, 4194304]"},
      {"kv_lora_rank", "1e10", "", "[0, 16384]"},
      {"bits", "1e10", "", "[2, 8]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[1024];
    if (!strcmp(cases[i].key, "bits"))
      config_with("quantization_config", "{\"quant_method\": \"gptq\", \"bits\": 1e10}", "",
                  text, sizeof text);
    else
      config_with(cases[i].key, cases[i].value, cases[i].extra, text, sizeof text);
    kvsim_model_t m;
    kvsim_err err = {0};
    int rc = parse_text(text, &m, &err);
    cr_assert_eq(rc, KVSIM_EINVAL, "case %zu (%s = %s) must fail, got %d", i, cases[i].key,
                 cases[i].value, rc);
    cr_assert(strstr(err.msg, cases[i].key) != NULL, "case %zu names %s: %s", i, cases[i].key,
              err.msg);
    cr_assert(strstr(err.msg, cases[i].range) != NULL, "case %zu gives the range %s: %s", i,
              cases[i].range, err.msg);
  }
}

/* A key reads "FILE: key", and one in a section "FILE: section.key":
 * the text config's of a multimodal config, the quantization's (they read
 * "fuzz.json.hidden_size", and quant_method's "fuzz.json.quant_method"). */
Test(model_errors, a_key_is_named_by_its_path_in_the_file) {
  /* The base fields at the top level; the text config's keys are read first. */
  static const struct {
    const char *key, *value, *want;
  } cases[] = {
      {"hidden_size", "1e12", "fuzz.json: hidden_size: 1000000000000 is out of range"},
      {"text_config", "{\"hidden_size\": 1e12}",
       "fuzz.json: text_config.hidden_size: 1000000000000 is out of range"},
      {"text_config", "{\"model_type\": 3}",
       "fuzz.json: text_config.model_type: expected a string"},
      {"text_config", "{\"attention_bias\": 1}",
       "fuzz.json: text_config.attention_bias: expected true or false"},
      {"text_config", "{\"dtype\": 1}", "fuzz.json: text_config.dtype: expected a string"},
      {"quantization_config", "{\"quant_method\": 3}",
       "fuzz.json: quantization_config.quant_method: expected a string"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[1024];
    config_with(cases[i].key, cases[i].value, "", text, sizeof text);
    kvsim_model_t m;
    kvsim_err err = {0};
    cr_assert_eq(parse_text(text, &m, &err), KVSIM_EINVAL, "case %zu must fail: %s", i, err.msg);
    cr_assert(!strncmp(err.msg, cases[i].want, strlen(cases[i].want)), "case %zu: '%s', want '%s'",
              i, err.msg, cases[i].want);
  }
}

Test(model_ranges, bounds_themselves_are_accepted) {
  /* The largest values of the table parse: the bounds refuse nothing real. */
  kvsim_model_t m;
  kvsim_err err = {0};
  char text[1024];
  config_with("vocab_size", "16777216", "\"sliding_window\": 1073741824", text, sizeof text);
  int rc = parse_text(text, &m, &err);
  cr_assert_eq(rc, KVSIM_OK, "values at the bounds parse: %s", err.msg);
  cr_assert_eq(m.sliding_window, INT64_C(1) << 30, "sliding_window read exactly: %lld",
               (long long)m.sliding_window);
}

Test(model_ranges, parameter_count_overflow_is_an_error) {
  /* Every field within its own range, but 512 layers x 16384 experts x
   * 3 x 2^20 x 2^22 parameters is past 2^63: refused, not wrapped negative. */
  kvsim_model_t m;
  kvsim_err err = {0};
  int rc = parse_text("{\"model_type\": \"qwen3_moe\", \"hidden_size\": 1048576, "
                      "\"num_attention_heads\": 8, \"num_key_value_heads\": 8, "
                      "\"intermediate_size\": 4194304, \"vocab_size\": 32000, "
                      "\"num_hidden_layers\": 512, \"num_experts\": 16384, "
                      "\"num_experts_per_tok\": 8, \"moe_intermediate_size\": 4194304}",
                      &m, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "an overflowing parameter count must fail, got %d", rc);
  cr_assert(strstr(err.msg, "2^50 parameters") != NULL, "message says why: %s", err.msg);
  cr_assert(strstr(err.msg, "fuzz.json") != NULL, "message names the file: %s", err.msg);
}

Test(model_ranges, count_params_checked_matches_the_plain_count) {
  kvsim_model_t m = load("deepseek-v3");
  kvsim_model_params_t a, b;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_count_params_checked(&m, &a, "x", &err), KVSIM_OK, "%s", err.msg);
  kvsim_model_count_params(&m, &b);
  cr_assert_eq(a.total, b.total, "checked %lld vs plain %lld", (long long)a.total,
               (long long)b.total);
  cr_assert(a.active > 0 && a.active < a.total, "active %lld of %lld", (long long)a.active,
            (long long)a.total);
}

Test(model_ranges, layer_lists_and_quant_blocks_are_checked) {
  kvsim_model_t m;
  kvsim_err err = {0};
  char text[1024];
  config_with("model_type", "\"qwen3_moe\"",
              "\"num_experts\": 8, \"num_experts_per_tok\": 2, \"mlp_only_layers\": [1, 2]",
              text, sizeof text);
  int rc = parse_text(text, &m, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "a layer index past the layers must fail, got %d", rc);
  cr_assert(strstr(err.msg, "mlp_only_layers[1]") != NULL, "message names the entry: %s", err.msg);
  cr_assert(strstr(err.msg, "[0, 1]") != NULL, "message gives the range: %s", err.msg);
  config_with("quantization_config", "{\"quant_method\": \"fp8\", \"weight_block_size\": [1e10, 128]}",
              "", text, sizeof text);
  rc = parse_text(text, &m, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "an fp8 scale block of 1e10 must fail, got %d", rc);
  cr_assert(strstr(err.msg, "weight_block_size[0]") != NULL, "message names the key: %s", err.msg);
}

Test(model_ranges, json_integers_beyond_a_double_name_the_range) {
  /* 9223372036854775807 is an integer, but no double holds it exactly. */
  kvsim_model_t m;
  kvsim_err err = {0};
  char text[1024];
  config_with("num_hidden_layers", "9223372036854775807", "", text, sizeof text);
  int rc = parse_text(text, &m, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "must fail, got %d", rc);
  cr_assert(strstr(err.msg, "out of range [1, 512]") != NULL, "message gives the range: %s",
            err.msg);
  cr_assert(strstr(err.msg, "expected an integer") == NULL, "not a type error: %s", err.msg);
}

/* ---- architectures kvsim does not model, and names from config.json ---- */

Test(model_errors, state_space_and_encoder_decoder_are_refused) {
  const struct {
    const char *fields, *expect;
  } cases[] = {
      {"\"model_type\": \"jamba\", \"architectures\": [\"JambaForCausalLM\"]", "JambaForCausalLM"},
      {"\"model_type\": \"mamba\", \"architectures\": [\"MambaForCausalLM\"]", "MambaForCausalLM"},
      {"\"model_type\": \"t5\", \"architectures\": [\"T5ForConditionalGeneration\"]",
       "encoder-decoder"},
      {"\"model_type\": \"bart\", \"architectures\": [\"BartForConditionalGeneration\"]",
       "encoder-decoder"},
      {"\"model_type\": \"llama\", \"is_encoder_decoder\": true", "is_encoder_decoder"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[1024], path[64];
    snprintf(text, sizeof text,
             "{%s, \"hidden_size\": 1024, \"num_attention_heads\": 8, \"num_key_value_heads\": 2, "
             "\"intermediate_size\": 2048, \"vocab_size\": 32000, \"num_hidden_layers\": 4}",
             cases[i].fields);
    kvsim_model_t m;
    kvsim_err err = {0};
    int rc = parse_temp(text, &m, &err, path, sizeof path);
    cr_assert_eq(rc, KVSIM_EINVAL, "case %zu (%s) must be refused, got %d", i, cases[i].fields, rc);
    cr_assert(strstr(err.msg, cases[i].expect) != NULL, "case %zu names '%s': %s", i,
              cases[i].expect, err.msg);
    cr_assert(strstr(err.msg, path) != NULL, "case %zu names the file: %s", i, err.msg);
  }
  /* A decoder-only config with is_encoder_decoder false still loads. */
  char path[64];
  kvsim_model_t m;
  kvsim_err err = {0};
  int rc = parse_temp("{" BASE_FIELDS ", \"num_hidden_layers\": 4, \"is_encoder_decoder\": false}",
                      &m, &err, path, sizeof path);
  cr_assert_eq(rc, KVSIM_OK, "is_encoder_decoder false is a decoder: %s", err.msg);
}

/* Writes a config.json into dir (created) and loads it from `arg`. */
static kvsim_model_t load_config_in(const char *dir, const char *extra, const char *arg) {
  char path[512];
  snprintf(path, sizeof path, "%s/config.json", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fprintf(f, "{" BASE_FIELDS ", \"num_hidden_layers\": 4%s}", extra);
  cr_assert_eq(fclose(f), 0, "close failed");
  kvsim_model_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load(arg, &m, &err), KVSIM_OK, "loading %s: %s", arg, err.msg);
  unlink(path);
  return m;
}

Test(model_loader, config_json_is_named_after_its_folder) {
  char base[256];
  snprintf(base, sizeof base, "%s/kvsim-test-name-XXXXXX", test_tmpdir());
  cr_assert_not_null(mkdtemp(base), "mkdtemp failed");
  char dir[512], arg[600];
  snprintf(dir, sizeof dir, "%s/My-Model-7B", base);
  cr_assert_eq(mkdir(dir, 0700), 0, "mkdir %s", dir);
  snprintf(arg, sizeof arg, "%s/config.json", dir);
  kvsim_model_t m = load_config_in(dir, "", arg);
  cr_assert_str_eq(m.name, "My-Model-7B", "named after the folder, got %s", m.name);
  m = load_config_in(dir, "", dir);
  cr_assert_str_eq(m.name, "My-Model-7B", "a folder argument too, got %s", m.name);
  /* An HF cache snapshot folder is a commit hash: _name_or_path names it. */
  char snap[512];
  snprintf(snap, sizeof snap, "%s/0123456789abcdef0123456789abcdef01234567", base);
  cr_assert_eq(mkdir(snap, 0700), 0, "mkdir %s", snap);
  snprintf(arg, sizeof arg, "%s/config.json", snap);
  m = load_config_in(snap, ", \"_name_or_path\": \"org/Hub-Name-1B\"", arg);
  cr_assert_str_eq(m.name, "Hub-Name-1B", "snapshot takes _name_or_path, got %s", m.name);
  rmdir(snap);
  rmdir(dir);
  rmdir(base);
}

Test(model, hf_id_of_every_catalog_model) {
  cr_assert_str_eq(kvsim_model_hf_id("llama-3.1-8b"), "meta-llama/Llama-3.1-8B", "llama id");
  cr_assert_null(kvsim_model_hf_id("no-such-model"), "unknown name has no id");
  /* Every id maps back onto its own catalog name (Mixtral's and
   * Mistral's carry a release tag after "-Instruct"). */
  const char *names[] = {"deepseek-v2-lite", "deepseek-v3", "gemma-2-27b", "gemma-2-9b", "gemma-3-27b",
                         "gpt-oss-120b", "gpt-oss-20b", "llama-2-70b", "llama-2-7b", "llama-3-8b",
                         "llama-3.1-405b", "llama-3.1-70b", "llama-3.1-8b", "llama-3.2-1b",
                         "llama-3.2-3b", "mistral-7b-v0.3", "mixtral-8x7b", "phi-3-mini-4k",
                         "qwen2.5-14b", "qwen2.5-32b", "qwen2.5-72b", "qwen2.5-7b", "qwen3-14b",
                         "qwen3-235b-a22b", "qwen3-30b-a3b", "qwen3-32b", "qwen3-8b"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    cr_assert_not_null(kvsim_model_hf_id(names[i]), "%s has an id", names[i]);
    char back[64];
    cr_assert_eq(kvsim_model_catalog_name(kvsim_model_hf_id(names[i]), back, sizeof back), 1,
                 "%s maps back", names[i]);
    cr_assert_str_eq(back, names[i], "round trip of %s", names[i]);
  }
  char out[64];
  cr_assert_eq(kvsim_model_catalog_name("MIXTRAL-8x7B-Instruct-v0.1", out, sizeof out), 1, "case-insensitive");
  cr_assert_str_eq(out, "mixtral-8x7b", "mixtral without its organisation");
}

/* ---- checkpoint ids: precision and variant suffixes ---- */

static kvsim_checkpoint_t resolve(const char *id) {
  kvsim_checkpoint_t c;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_resolve_checkpoint(id, &c, &err), KVSIM_OK, "resolve %s: %s", id,
               err.msg);
  return c;
}

Test(model_checkpoint, precision_suffixes_set_the_weight_precision) {
  static const struct {
    const char *id, *catalog, *method;
    kvsim_quant_kind kind;
    int group;
    bool no_zeros;
  } want[] = {
      {"Qwen/Qwen2.5-32B-Instruct-AWQ", "qwen2.5-32b", "awq", KVSIM_QUANT_INT4, 128, false},
      {"meta-llama/Llama-3.1-8B-Instruct-FP8", "llama-3.1-8b", "fp8", KVSIM_QUANT_FP8, 0, false},
      {"RedHatAI/Llama-3.1-8B-Instruct-FP8-dynamic", "llama-3.1-8b", "compressed-tensors",
       KVSIM_QUANT_FP8, 0, false},
      {"Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4", "qwen2.5-7b", "gptq", KVSIM_QUANT_INT4, 128, false},
      {"Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", "qwen2.5-7b", "gptq", KVSIM_QUANT_INT8, 0, false},
      {"TheBloke/Llama-2-7B-Chat-GPTQ", "llama-2-7b", "gptq", KVSIM_QUANT_INT4, 128, false},
      {"neuralmagic/Meta-Llama-3.1-8B-Instruct-W4A16", "llama-3.1-8b", "compressed-tensors",
       KVSIM_QUANT_INT4, 128, true},
      {"neuralmagic/Meta-Llama-3.1-70B-Instruct-W8A8", "llama-3.1-70b", "compressed-tensors",
       KVSIM_QUANT_INT8, 0, false},
      {"RedHatAI/Qwen2.5-7B-Instruct-quantized.w4a16", "qwen2.5-7b", "compressed-tensors",
       KVSIM_QUANT_INT4, 128, true},
      {"unsloth/Llama-3.2-3B-Instruct-bnb-4bit", "llama-3.2-3b", "bitsandbytes",
       KVSIM_QUANT_INT4, 128, false},
      {"some-org/Qwen3-8B-Int4", "qwen3-8b", "gptq", KVSIM_QUANT_INT4, 128, false},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_checkpoint_t c = resolve(want[i].id);
    cr_assert_str_eq(c.catalog, want[i].catalog, "%s: architecture %s, got %s", want[i].id,
                     want[i].catalog, c.catalog);
    cr_assert_eq(c.quant.kind, want[i].kind, "%s: precision kind %d, got %d", want[i].id,
                 want[i].kind, c.quant.kind);
    cr_assert_str_eq(c.quant.method, want[i].method, "%s: method", want[i].id);
    cr_assert_eq(c.quant.group_size, want[i].group, "%s: group %d, got %d", want[i].id,
                 want[i].group, c.quant.group_size);
    cr_assert_eq(c.quant.no_zero_points, want[i].no_zeros, "%s: zero points", want[i].id);
    cr_assert_str_eq(c.note, "", "%s resolves exactly: %s", want[i].id, c.note);
  }
}

Test(model_checkpoint, loading_an_id_keeps_its_precision_dtype_and_context) {
  kvsim_model_t awq = load("Qwen/Qwen2.5-32B-Instruct-AWQ");
  cr_assert_eq(awq.quant.kind, KVSIM_QUANT_INT4, "AWQ checkpoint loads int4 weights");
  /* AWQConfig.get_supported_act_dtypes is [torch.half]. */
  cr_assert_str_eq(awq.dtype, "float16", "AWQ runs in float16");
  cr_assert_eq(awq.max_position_embeddings, 32768, "the Instruct config's context, got %lld",
               (long long)awq.max_position_embeddings);
  kvsim_model_t base = load("Qwen/Qwen2.5-32B");
  cr_assert_eq(base.quant.kind, KVSIM_QUANT_NONE, "the base id is bf16");
  cr_assert_eq(base.max_position_embeddings, 131072, "the base config's context");
  kvsim_model_t inst = load("qwen2.5-32b-instruct");
  cr_assert_eq(inst.max_position_embeddings, 32768, "-Instruct keeps the Instruct context");
  kvsim_model_t b72 = load("Qwen/Qwen2.5-72B");
  cr_assert_eq(b72.max_position_embeddings, 131072, "the 72B base differs from the catalog's Instruct");
  kvsim_model_t l8 = load("meta-llama/Llama-3.1-8B-Instruct");
  cr_assert_eq(l8.max_position_embeddings, 131072, "Llama-3.1 base and Instruct agree");
  cr_assert_eq(l8.quant.kind, KVSIM_QUANT_NONE, "no precision suffix, no quantization");
  /* A precision suffix replaces the catalog config's own quantization. */
  kvsim_model_t dsv3 = load("cognitivecomputations/DeepSeek-V3-AWQ");
  cr_assert_eq(dsv3.quant.kind, KVSIM_QUANT_INT4, "DeepSeek-V3-AWQ is int4, not the fp8 original");
}

static const char *last_note;
static char note_buf[400];
static void keep_note(const char *note) {
  snprintf(note_buf, sizeof note_buf, "%s", note);
  last_note = note_buf;
}

Test(model_checkpoint, what_the_name_cannot_settle_is_a_note_or_an_error) {
  kvsim_checkpoint_t c = resolve("Qwen/Qwen3-8B-Base");
  cr_assert(strstr(c.note, "assumed") && strstr(c.note, "qwen3-8b"),
            "the catalog holds the post-trained Qwen3-8B: %s", c.note);
  c = resolve("google/gemma-3-27b-pt");
  cr_assert_str_eq(c.catalog, "gemma-3-27b", "Gemma's pretrained -pt");
  cr_assert(strstr(c.note, "assumed"), "the catalog holds -it: %s", c.note);
  c = resolve("Qwen/Qwen3-30B-A3B-Instruct-2507");
  cr_assert(strstr(c.note, "assumed") && strstr(c.note, "2507"), "a later release: %s", c.note);
  kvsim_model_set_note_fn(keep_note);
  last_note = NULL;
  (void)load("Qwen/Qwen3-8B-Base");
  kvsim_model_set_note_fn(NULL);
  cr_assert_not_null(last_note, "loading an assumed id sends its note");
  cr_assert(strstr(last_note, "Qwen/Qwen3-8B-Base resolved to qwen3-8b"), "note: %s", last_note);

  static const struct {
    const char *id, *what;
    int code;
  } bad[] = {
      {"nvidia/Llama-3.1-8B-Instruct-NVFP4", "nvfp4 weights are not modelled", KVSIM_EUNSUP},
      {"acme/Llama-3.1-8B-AWQ-GPTQ", "two precisions", KVSIM_EINVAL},
      {"acme/Unknown-9B-Instruct-AWQ", "no catalog architecture", KVSIM_ENOENT},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_err err = {0};
    cr_assert_eq(kvsim_model_resolve_checkpoint(bad[i].id, &c, &err), bad[i].code,
                 "%s: code %d", bad[i].id, bad[i].code);
    cr_assert(strstr(err.msg, bad[i].what), "%s: '%s' in %s", bad[i].id, bad[i].what, err.msg);
    kvsim_model_t m;
    cr_assert_lt(kvsim_model_load(bad[i].id, &m, &err), 0, "%s is not loaded as bf16", bad[i].id);
  }
}

Test(model_loader, quantization_config_of_other_quantizers) {
  static const struct {
    const char *config;
    kvsim_quant_kind kind;
    bool no_zeros;
  } want[] = {
      {"{\"quant_method\": \"fbgemm_fp8\", \"activation_scale_ub\": 1200.0}", KVSIM_QUANT_FP8, false},
      {"{\"quant_method\": \"modelopt\", \"quant_algo\": \"FP8\"}", KVSIM_QUANT_FP8, false},
      {"{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true}", KVSIM_QUANT_INT4, false},
      {"{\"quant_method\": \"bitsandbytes\", \"load_in_8bit\": true}", KVSIM_QUANT_INT8, false},
      {"{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"group_0\": {\"weights\": "
       "{\"num_bits\": 4, \"type\": \"int\", \"group_size\": 128, \"symmetric\": true}}}}",
       KVSIM_QUANT_INT4, true},
      {"{\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 128, \"zero_point\": true}",
       KVSIM_QUANT_INT4, false},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_hidden_layers\": 32, "
             "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"intermediate_size\": "
             "14336, \"vocab_size\": 128256, \"max_position_embeddings\": 8192, "
             "\"torch_dtype\": \"bfloat16\", \"quantization_config\": %s}",
             want[i].config);
    kvsim_model_t m;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_model_parse(text, "q", "q.json", &m, &err), KVSIM_OK, "%s: %s",
                 want[i].config, err.msg);
    cr_assert_eq(m.quant.kind, want[i].kind, "%s: kind %d, got %d", want[i].config, want[i].kind,
                 m.quant.kind);
    cr_assert_eq(m.quant.no_zero_points, want[i].no_zeros, "%s: zero points", want[i].config);
  }
  kvsim_model_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_parse("{\"model_type\": \"llama\", \"hidden_size\": 4096, "
                                 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                                 "\"intermediate_size\": 14336, \"vocab_size\": 128256, "
                                 "\"quantization_config\": {\"quant_method\": \"modelopt\", "
                                 "\"quant_algo\": \"NVFP4\"}}",
                                 "q", "q.json", &m, &err),
               KVSIM_EUNSUP, "NVFP4 is refused, not planned as bf16");
  cr_assert(strstr(err.msg, "NVFP4"), "names the algorithm: %s", err.msg);
}
