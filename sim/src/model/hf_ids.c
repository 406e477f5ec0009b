/* The Hugging Face repository of each catalog model (the variant named in
 * configs/models/SOURCES.md), for listings. */
#include <string.h>
#include <strings.h>

#include "kvsim/model.h"
#include "model/hf_ids.h"

static const char *const ids[][2] = {
    {"deepseek-v2-lite", "deepseek-ai/DeepSeek-V2-Lite"},
    {"deepseek-v3", "deepseek-ai/DeepSeek-V3"},
    {"eagle3-llama3.3-instruct-70b", "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"},
    {"gemma-2-27b", "google/gemma-2-27b-it"},
    {"gemma-2-9b", "google/gemma-2-9b"},
    {"gemma-3-27b", "google/gemma-3-27b-it"},
    {"gpt-oss-120b", "openai/gpt-oss-120b"},
    {"gpt-oss-20b", "openai/gpt-oss-20b"},
    {"llama-2-70b", "meta-llama/Llama-2-70b-hf"},
    {"llama-2-7b", "meta-llama/Llama-2-7b-hf"},
    {"llama-3-8b", "meta-llama/Meta-Llama-3-8B"},
    {"llama-3.1-405b", "meta-llama/Llama-3.1-405B-Instruct"},
    {"llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct"},
    {"llama-3.1-8b", "meta-llama/Llama-3.1-8B"},
    {"llama-3.2-1b", "meta-llama/Llama-3.2-1B"},
    {"llama-3.2-3b", "meta-llama/Llama-3.2-3B"},
    {"mistral-7b-v0.3", "mistralai/Mistral-7B-Instruct-v0.3"},
    {"mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1"},
    {"phi-3-mini-4k", "microsoft/Phi-3-mini-4k-instruct"},
    {"qwen2.5-14b", "Qwen/Qwen2.5-14B"},
    {"qwen2.5-32b", "Qwen/Qwen2.5-32B"},
    {"qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct"},
    {"qwen2.5-7b", "Qwen/Qwen2.5-7B"},
    {"qwen3-14b", "Qwen/Qwen3-14B"},
    {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"},
    {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"},
    {"qwen3-32b", "Qwen/Qwen3-32B"},
    {"qwen3-8b", "Qwen/Qwen3-8B"},
};

const char *kvsim_model_hf_id(const char *name) {
  for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
    if (!strcmp(ids[i][0], name))
      return ids[i][1];
  return NULL;
}

const char *kvsim__model_of_hf_id(const char *hf_id) {
  /* Repository names are case-insensitive on the Hub; with or without the
   * organisation. */
  const char *base = strrchr(hf_id, '/');
  base = base ? base + 1 : hf_id;
  for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
    const char *b = strrchr(ids[i][1], '/') + 1;
    if (!strcasecmp(ids[i][1], hf_id) || !strcasecmp(b, base))
      return ids[i][0];
  }
  return NULL;
}
