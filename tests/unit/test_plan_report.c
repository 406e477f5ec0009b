/* kvsim calc's engines as library code: each engine's flag table (set here
 * through its offsets, as the command line does), its checks, and its
 * printers in the engine's own start-up words (SGLang's "KV Cache is
 * allocated. #tokens: ...", TGI's warmup lines, HF's bytes in GiB and GB,
 * the --compare-engines table, vLLM's reverse answer). */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/report.h"

static kvsim_calc_t calc; /* large: one per process */

static const kvsim_calc_flag_t *flag(const kvsim_calc_engine_t *e, const char *name) {
  for (const kvsim_calc_flag_t *f = e->flags; f->name; f++)
    if (!strcmp(f->name, name))
      return f;
  cr_assert_fail("flag %s is not in the table of '%s'", name, e->usage);
  return NULL;
}

/* Sets --name to v in a, by the flag's kind and offset, and marks it given. */
static void set(const kvsim_calc_engine_t *e, kvsim_calc_args_t *a, const char *name, const char *v) {
  const kvsim_calc_flag_t *f = flag(e, name);
  void *dest = a->bytes + f->offset;
  a->given[f - e->flags] = true; /* as the command line marks it */
  switch (f->kind) {
  case KVSIM_CALC_INT:
    *(int64_t *)dest = strtoll(v, NULL, 10);
    break;
  case KVSIM_CALC_NUM:
    *(double *)dest = strtod(v, NULL);
    break;
  case KVSIM_CALC_STR:
    *(const char **)dest = v;
    break;
  case KVSIM_CALC_FLAG:
    *(bool *)dest = true;
    break;
  }
}

/* Runs engine e with argv-like pairs (a flag's value "" for a bool flag);
 * returns compute's code, the printed text in *text (caller frees). */
static int run(const char *engine, bool compare, const char *const *kv, char **text, kvsim_err *err) {
  const kvsim_calc_engine_t *e = kvsim_calc_engine_find(engine, compare);
  static kvsim_calc_args_t a;
  e->defaults(&a);
  for (int i = 0; kv[i]; i += 2)
    set(e, &a, kv[i], kv[i + 1]);
  memset(&calc, 0, sizeof calc);
  int rc = e->compute(&a, &calc, err);
  *text = NULL;
  if (rc < 0)
    return rc;
  size_t len = 0;
  FILE *f = open_memstream(text, &len);
  cr_assert_not_null(f, "open_memstream");
  e->print(&a, &calc, f);
  fclose(f);
  return kvsim_calc_status(&a, &calc) ? 1 : 0;
}

static void has(const char *text, const char *want) {
  cr_assert_not_null(strstr(text, want), "expected \"%s\" in:\n%s", want, text);
}

Test(plan_report, every_engine_has_a_table_that_fits_its_arguments) {
  const char *names[] = {NULL, "vllm-v0", "sglang", "tgi", "hf-transformers"};
  for (int i = 0; i < 6; i++) {
    const kvsim_calc_engine_t *e = kvsim_calc_engine_find(i < 5 ? names[i] : NULL, i == 5);
    cr_assert(e->flags[0].name && e->usage && e->defaults && e->compute && e->print, "engine %d is complete", i);
    int n = 0;
    for (const kvsim_calc_flag_t *f = e->flags; f->name; f++, n++) {
      cr_assert(!strncmp(f->name, "--", 2), "%s: a flag starts with --", f->name);
      cr_assert(f->help && f->help[0], "%s has help", f->name);
      cr_assert_leq(f->offset + sizeof(double), sizeof(kvsim_calc_args_t), "%s lies inside the arguments", f->name);
    }
    cr_assert_geq(n, 10, "'%s' lists its flags (%d)", e->usage, n);
    cr_assert_leq(n, KVSIM_CALC_MAX_FLAGS, "'%s' fits the command line's table (%d)", e->usage, n);
    flag(e, "--json");
    flag(e, "--model");
  }
}

Test(plan_report, the_engine_name_picks_the_table) {
  cr_assert_str_eq(kvsim_calc_engine_find("sglang", false)->usage, "--engine sglang [flags]", "sglang");
  cr_assert_str_eq(kvsim_calc_engine_find("tgi", false)->usage, "--engine tgi [flags]", "tgi");
  cr_assert_str_eq(kvsim_calc_engine_find("hf-transformers", false)->usage, "--engine hf-transformers [flags]", "hf");
  cr_assert_str_eq(kvsim_calc_engine_find("vllm-v0", false)->usage, "[flags]", "vLLM V0 shares V1's flags");
  cr_assert_str_eq(kvsim_calc_engine_find("bogus", false)->usage, "[flags]", "unknown: vLLM's names it");
  cr_assert_str_eq(kvsim_calc_engine_find("tgi", true)->usage, "--compare-engines [flags]", "the comparison wins");
  /* Aliases share a field: SGLang's --tp-size is --tensor-parallel-size. */
  const kvsim_calc_engine_t *s = kvsim_calc_engine_find("sglang", false);
  cr_assert_eq(flag(s, "--tp-size")->offset, flag(s, "--tensor-parallel-size")->offset, "--tp-size aliases");
}

Test(plan_report, an_error_names_the_alias_typed) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--tp-size", "0", NULL};
  cr_assert_eq(run("sglang", false, kv, &t, &err), KVSIM_EINVAL, "--tp-size 0 is refused");
  cr_assert_str_eq(err.msg, "--tp-size: 0 is out of range [1, 1024]",
                   "named as typed, not --tensor-parallel-size");
  const char *kl[] = {"--tensor-parallel-size", "0", NULL};
  cr_assert_eq(run("sglang", false, kl, &t, &err), KVSIM_EINVAL,
               "--tensor-parallel-size 0 is refused");
  cr_assert_str_eq(err.msg, "--tensor-parallel-size: 0 is out of range [1, 1024]",
                   "the long name as typed");
  const char *kc[] = {"--tensor-parallel-size", "3", NULL};
  cr_assert_eq(run(NULL, true, kc, &t, &err), 0, "the comparison itself runs: %s", err.msg);
  int tgi = 0;
  for (int i = 0; i < calc.nrows; i++)
    if (calc.rows[i].engine->engine == KVSIM_PLAN_TGI && ++tgi)
      cr_assert_str_eq(calc.rows[i].error,
                       "--tensor-parallel-size: 3 does not divide the model's 32 attention heads",
                       "TGI's row names the flag typed, not --num-shard");
  cr_assert_eq(tgi, 1, "one TGI row (%d)", tgi);
  free(t);
}

/* The plan's divisibility errors name the TP flag as typed for every
 * engine (SGLang's --tp-size was reported as --tensor-parallel-size, TGI's
 * --num-shard with a scenario key calc has no use for). */
Test(plan_report, a_tp_that_does_not_divide_names_the_flag_typed) {
  const struct {
    const char *engine, *flag;
  } cases[] = {{"sglang", "--tp-size"},
               {"sglang", "--tensor-parallel-size"},
               {"tgi", "--num-shard"},
               {"vllm-v1", "--tensor-parallel-size"},
               {"vllm-v0", "--tensor-parallel-size"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *t;
    kvsim_err err = {0};
    const char *kv[] = {cases[i].flag, "3", NULL};
    cr_assert_eq(run(cases[i].engine, false, kv, &t, &err), KVSIM_EINVAL,
                 "%s %s 3 is refused for llama-3.1-8b's 32 heads", cases[i].engine, cases[i].flag);
    char want[160];
    snprintf(want, sizeof want, "%s: 3 does not divide the model's 32 attention heads",
             cases[i].flag);
    cr_assert_str_eq(err.msg, want, "%s names %s as typed", cases[i].engine, cases[i].flag);
  }
}

Test(plan_report, an_empty_quantization_is_refused) {
  const char *engines[] = {NULL, "sglang", "tgi", "hf-transformers", NULL};
  for (int i = 0; i < 5; i++) {
    char *t;
    kvsim_err err = {0};
    const char *kv[] = {"--quantization", "", NULL};
    cr_assert_eq(run(engines[i], i == 4, kv, &t, &err), KVSIM_EINVAL,
                 "engine %d: an empty --quantization is refused", i);
    cr_assert(!strncmp(err.msg, "--quantization: empty value (", 29),
              "engine %d names the flag: %s", i, err.msg);
    const char *none[] = {NULL};
    cr_assert_geq(run(engines[i], i == 4, none, &t, &err), 0,
                  "engine %d: absent, the model's own: %s", i, err.msg);
    free(t);
  }
}

Test(plan_report, tgi_input_limit_is_below_the_total) {
  char *t;
  kvsim_err err = {0};
  const char *k1[] = {"--max-total-tokens", "1", NULL};
  cr_assert_eq(run("tgi", false, k1, &t, &err), KVSIM_EINVAL, "a total of 1 leaves no input token");
  cr_assert_str_eq(
      err.msg,
      "--max-total-tokens: 1 leaves max_input_tokens (max_total_tokens - 1) at 0; it must be >= 1 "
      "and < max_total_tokens",
      "both values named");
  const char *k2[] = {"--max-total-tokens", "4096", "--max-input-tokens", "4096", NULL};
  cr_assert_eq(run("tgi", false, k2, &t, &err), KVSIM_EINVAL,
               "input == total is the launcher's refusal");
  cr_assert_str_eq(err.msg, "--max-input-tokens: 4096 must be < --max-total-tokens 4096",
                   "both values named");
  const char *k3[] = {"--max-total-tokens", "2", NULL};
  cr_assert_eq(run("tgi", false, k3, &t, &err), 0, "a total of 2: %s", err.msg);
  cr_assert_eq(calc.pl.tgi.max_input_tokens, 1, "input limit 1");
  free(t);
}

Test(plan_report, tgi_prints_its_warmup_lines) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--engine", "tgi", "--gpu-memory-gib", "80", "--weights-gib", "15", "--activation-gib", "1",
                      "--non-torch-gib", "0.5", NULL};
  cr_assert_eq(run("tgi", false, kv, &t, &err), 0, "%s", err.msg);
  char want[128];
  cr_assert_gt(calc.pl.tgi.num_blocks, 0, "a pool");
  snprintf(want, sizeof want, "\nKV-cache blocks: %lld, size: 1\n", (long long)calc.pl.tgi.num_blocks);
  has(t, want);
  snprintf(want, sizeof want, "Setting max batch total tokens to %lld\n", (long long)calc.pl.tgi.max_batch_total_tokens);
  has(t, want);
  has(t, "Default `max_batch_prefill_tokens` to 4096\n");
  has(t, "free memory after warmup: 80.00 GiB total - weights 15.00 - warmup activation peak 1.00 - ");
  free(t);
  const char *kj[] = {"--json", "", "--attention", "paged", NULL};
  cr_assert_eq(run("tgi", false, kj, &t, &err), 0, "%s", err.msg);
  cJSON *j = cJSON_Parse(t);
  cr_assert_not_null(j, "one JSON object: %s", t);
  cr_assert_str_eq(cJSON_GetObjectItem(j, "attention")->valuestring, "paged", "the backend given");
  cr_assert_eq(cJSON_GetObjectItem(j, "kv_cache_blocks")->valuedouble, (double)calc.pl.tgi.num_blocks, "blocks");
  cJSON_Delete(j);
  free(t);
}

Test(plan_report, tgi_errors_name_the_launcher_flag) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--num-shard", "0", NULL};
  cr_assert_eq(run("tgi", false, kv, &t, &err), KVSIM_EINVAL, "refused");
  cr_assert_str_eq(err.msg, "--num-shard: 0 is out of range [1, 1024]", "names the flag");
  const char *kw[] = {"--weights-gib", "-2", NULL};
  cr_assert_eq(run("tgi", false, kw, &t, &err), KVSIM_EINVAL, "refused");
  cr_assert_str_eq(err.msg, "--weights-gib: -2 GiB is out of range [0, 4096]", "names the flag");
  const char *km[] = {"--model", "no-such-model", NULL};
  cr_assert_lt(run("tgi", false, km, &t, &err), 0, "refused");
  cr_assert(!strncmp(err.msg, "--model: ", 9), "names --model: %s", err.msg);
}

Test(plan_report, tgi_token_limits_given_as_zero_are_refused) {
  char *t;
  kvsim_err err = {0};
  /* Absent, 0 stands for the launcher's defaults. */
  const char *none[] = {NULL};
  cr_assert_eq(run("tgi", false, none, &t, &err), 0, "%s", err.msg);
  cr_assert_eq(calc.pl.tgi.max_batch_prefill_tokens, 4096, "the default prefill budget");
  cr_assert_eq(calc.pl.tgi.max_input_tokens, calc.pl.tgi.max_total_tokens - 1,
               "the default input limit");
  free(t);
  /* Given, 0 is a value like any other, and out of range. */
  static const char *const limits[] = {"--max-input-tokens", "--max-total-tokens",
                                       "--max-batch-prefill-tokens", "--max-batch-total-tokens"};
  static const char *const values[] = {"0", "-1", "1073741825"};
  for (size_t i = 0; i < sizeof limits / sizeof *limits; i++)
    for (size_t k = 0; k < sizeof values / sizeof *values; k++) {
      const char *kv[] = {limits[i], values[k], NULL};
      char want[128];
      snprintf(want, sizeof want, "%s: %s is out of range [1, 1073741824]", limits[i], values[k]);
      err = (kvsim_err){0};
      cr_assert_eq(run("tgi", false, kv, &t, &err), KVSIM_EINVAL, "%s %s is refused", limits[i],
                   values[k]);
      cr_assert_str_eq(err.msg, want, "names the flag and its range");
    }
  /* In range, each is taken as given. */
  const char *kv[] = {"--max-total-tokens",
                      "8192",
                      "--max-input-tokens",
                      "4096",
                      "--max-batch-prefill-tokens",
                      "2048",
                      NULL};
  cr_assert_eq(run("tgi", false, kv, &t, &err), 0, "%s", err.msg);
  cr_assert_eq(calc.pl.tgi.max_total_tokens, 8192, "--max-total-tokens");
  cr_assert_eq(calc.pl.tgi.max_input_tokens, 4096, "--max-input-tokens");
  cr_assert_eq(calc.pl.tgi.max_batch_prefill_tokens, 2048, "--max-batch-prefill-tokens");
  free(t);
}

Test(plan_report, tgi_strict_fails_a_plan_that_does_not_fit) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--model", "llama-3.1-70b", "--strict", "", NULL};
  cr_assert_eq(run("tgi", false, kv, &t, &err), 1, "70B on one H100 does not fit: %s", err.msg);
  cr_assert(!calc.pl.fits, "the plan says so");
  has(t, "Error: ");
  free(t);
}

Test(plan_report, sglang_prints_its_pool_and_vllm_beside_it) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--model", "qwen3-235b-a22b", "--quantization", "fp8", "--tp-size", "4",
                      "--mem-fraction-static", "0.93", NULL};
  cr_assert_eq(run("sglang", false, kv, &t, &err), 0, "%s", err.msg);
  const kvsim_plan_sglang_t *o = &calc.pl.sglang;
  char want[160];
  snprintf(want, sizeof want, "KV Cache is allocated. #tokens: %lld, K size: %.2f GB, V size: %.2f GB\n",
           (long long)o->max_total_num_tokens, o->k_size_bytes / KVSIM_GIB, o->v_size_bytes / KVSIM_GIB);
  has(t, want);
  has(t, "SGLang plan: qwen3-235b-a22b on 4 x h100-sxm (TP 4, PP 1), weights fp8");
  has(t, "mem_fraction_static=0.930\n");
  has(t, "(predicted)");
  cr_assert(calc.have_v1, "vLLM V1 side by side");
  has(t, "\nvLLM V1, same model and GPUs at gpu_memory_utilization 0.90: GPU KV cache size: ");
  free(t);
  const char *kj[] = {"--json", "", "--schedule-policy", "lpm", NULL};
  cr_assert_eq(run("sglang", false, kj, &t, &err), 0, "%s", err.msg);
  cJSON *j = cJSON_Parse(t);
  cr_assert_not_null(j, "one JSON object");
  cr_assert_str_eq(cJSON_GetObjectItem(j, "engine")->valuestring, "sglang", "engine");
  cr_assert_str_eq(cJSON_GetObjectItem(j, "schedule_policy")->valuestring, "lpm", "policy");
  cr_assert_null(cJSON_GetObjectItem(j, "gpu_memory_utilization"), "vLLM's fraction is not SGLang's");
  cr_assert_eq(cJSON_GetObjectItem(j, "max_total_num_tokens")->valuedouble,
               (double)calc.pl.sglang.max_total_num_tokens, "the pool");
  cJSON_Delete(j);
  free(t);
  const char *kp[] = {"--schedule-policy", "sjf", NULL};
  cr_assert_eq(run("sglang", false, kp, &t, &err), KVSIM_EINVAL, "refused");
  cr_assert_str_eq(err.msg, "--schedule-policy: unknown policy 'sjf' (expected fcfs, lpm, lof, random)", "named");
}

Test(plan_report, hf_prints_bytes_in_gib_and_gb) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--cache", "quantized", "--max-cache-len", "8192", NULL};
  cr_assert_eq(run("hf-transformers", false, kv, &t, &err), 0, "%s", err.msg);
  const kvsim_plan_hf_t *o = &calc.pl.hf;
  cr_assert_gt(o->scale_bytes, 0, "a quantized cache has scales");
  char want[160], n[32];
  snprintf(n, sizeof n, "%lld", (long long)o->kv_bytes);
  snprintf(want, sizeof want, " bytes = %.2f GiB (%.2f GB)\n", o->kv_bytes / KVSIM_GIB, o->kv_bytes / 1e9);
  has(t, "\nQuantized KV: ");
  has(t, want);
  has(t, "Scales and zero points: one of each (bfloat16) per 64 elements\n");
  has(t, "Residual: up to 128 tokens per sequence kept in bfloat16\n");
  has(t, "cache quantized (QuantizedCache), batch 1, max_cache_len 8,192");
  free(t);
  const char *ko[] = {"--cache", "offloaded", NULL};
  cr_assert_eq(run("hf-transformers", false, ko, &t, &err), 0, "%s", err.msg);
  has(t, "\nIn host memory: ");
  has(t, "Each step streams the cache over the host link");
  free(t);
  const char *kb[] = {"--batch", "0", NULL};
  cr_assert_eq(run("hf-transformers", false, kb, &t, &err), KVSIM_EINVAL, "refused");
  cr_assert_str_eq(err.msg, "--batch: 0 is out of range [1, 1048576]", "named");
}

Test(plan_report, hf_cache_flags_given_out_of_range_are_named) {
  char *t;
  kvsim_err err = {0};
  /* Absent, --max-cache-len 0 stands for max_position_embeddings, nbits 4. */
  const char *none[] = {"--cache", "quantized", NULL};
  cr_assert_eq(run("hf-transformers", false, none, &t, &err), 0, "%s", err.msg);
  cr_assert_eq(calc.pl.p.hf.max_cache_len, 131072, "llama-3.1-8b's max_position_embeddings");
  cr_assert_eq(calc.pl.p.hf.nbits, 4, "quanto's default");
  free(t);
  static const struct {
    const char *cache, *flag, *value, *want;
  } cases[] = {
      {"dynamic", "--max-cache-len", "0", "--max-cache-len: 0 is out of range [1, 1073741824]"},
      {"static", "--max-cache-len", "-1", "--max-cache-len: -1 is out of range [1, 1073741824]"},
      {"dynamic", "--nbits", "3",
       "--nbits: 3 is out of range (2 or 4: transformers' quanto QuantizedCache)"},
      {"quantized", "--nbits", "0",
       "--nbits: 0 is out of range (2 or 4: transformers' quanto QuantizedCache)"},
      {"quantized", "--nbits", "1000",
       "--nbits: 1000 is out of range (2 or 4: transformers' quanto QuantizedCache)"},
      {"quantized", "--q-group-size", "0", "--q-group-size: 0 is out of range [1, 1048576]"},
      {"quantized", "--residual-length", "-1",
       "--residual-length: -1 is out of range [0, 1073741824]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *kv[] = {"--cache", cases[i].cache, cases[i].flag, cases[i].value, NULL};
    err = (kvsim_err){0};
    cr_assert_eq(run("hf-transformers", false, kv, &t, &err), KVSIM_EINVAL, "%s %s is refused",
                 cases[i].flag, cases[i].value);
    cr_assert_str_eq(err.msg, cases[i].want, "%s %s: names the flag, the value and the range",
                     cases[i].flag, cases[i].value);
  }
  /* In range, each is taken as given (residual 0: nothing kept unquantized). */
  const char *kv[] = {"--cache", "quantized",         "--nbits", "2", "--max-cache-len",
                      "4096",    "--residual-length", "0",       NULL};
  cr_assert_eq(run("hf-transformers", false, kv, &t, &err), 0, "%s", err.msg);
  cr_assert_eq(calc.pl.p.hf.nbits, 2, "--nbits 2");
  cr_assert_eq(calc.pl.p.hf.max_cache_len, 4096, "--max-cache-len 4096");
  cr_assert_eq(calc.pl.hf.residual_bytes, 0, "--residual-length 0");
  free(t);
}

Test(plan_report, compare_prints_one_row_per_engine) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--seq-len", "8192", NULL};
  cr_assert_eq(run(NULL, true, kv, &t, &err), 0, "%s", err.msg);
  cr_assert_geq(calc.nrows, 4, "vLLM V1, SGLang, TGI, HF");
  has(t, "Engines on llama-3.1-8b, h100-sxm x TP 1, memory fraction 0.90, requests of 8,192 tokens:\n");
  for (int i = 0; i < calc.nrows; i++) {
    char want[64];
    snprintf(want, sizeof want, "\n%-16s ", calc.rows[i].engine->name);
    has(t, want);
  }
  free(t);
  const char *kj[] = {"--json", "", NULL};
  cr_assert_eq(run(NULL, true, kj, &t, &err), 0, "%s", err.msg);
  cJSON *j = cJSON_Parse(t);
  cr_assert_not_null(j, "one JSON object");
  cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "engines")), calc.nrows, "one entry per engine");
  cJSON_Delete(j);
  free(t);
  const char *kf[] = {"--memory-fraction", "0", NULL};
  cr_assert_eq(run(NULL, true, kf, &t, &err), KVSIM_EINVAL, "refused");
  cr_assert_str_eq(err.msg, "--memory-fraction: 0 is outside (0, 1]", "named");
}

Test(plan_report, vllm_prints_the_reverse_answer_once) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--target-concurrency", "50", "--seq-len", "8192", NULL};
  cr_assert_eq(run(NULL, false, kv, &t, &err), 0, "%s", err.msg);
  cr_assert(calc.reverse && calc.answer[0], "an answer");
  has(t, "Reverse: 50 requests x 8,192 tokens need ");
  has(t, "vLLM ");
  char want[600];
  snprintf(want, sizeof want, "Smallest fit: %s\n", calc.answer);
  if (calc.pl.fits)
    has(t, want);
  free(t);
  const char *kj[] = {"--target-concurrency", "50", "--seq-len", "8192", "--json", "", NULL};
  cr_assert_eq(run(NULL, false, kj, &t, &err), 0, "%s", err.msg);
  cJSON *j = cJSON_Parse(t);
  cr_assert_not_null(j, "one JSON object");
  cr_assert_str_eq(cJSON_GetObjectItem(j, "answer")->valuestring, calc.answer, "the answer");
  cr_assert_eq(cJSON_GetObjectItem(j, "seq_len")->valuedouble, 8192, "the length");
  cJSON_Delete(j);
  free(t);
}

Test(plan_report, vllm_v0_reports_its_cpu_blocks_and_errors) {
  char *t;
  kvsim_err err = {0};
  const char *kv[] = {"--engine", "vllm-v0", "--swap-space", "4", NULL};
  cr_assert_eq(run("vllm-v0", false, kv, &t, &err), 0, "%s", err.msg);
  cr_assert_gt(calc.pl.swap_blocks, 0, "4 GiB of swap holds blocks");
  char want[96];
  snprintf(want, sizeof want, "\n# CPU blocks: %lld (swap space 4.00 GiB)\n", (long long)calc.pl.swap_blocks);
  has(t, want);
  free(t);
  const char *ke[] = {"--engine", "bogus", NULL};
  cr_assert_eq(run("bogus", false, ke, &t, &err), KVSIM_EINVAL, "refused");
  cr_assert(!strncmp(err.msg, "--engine: unknown engine 'bogus' (expected ", 43), "named: %s", err.msg);
  const char *ks[] = {"--seq-len", "1k", NULL};
  cr_assert_eq(run(NULL, false, ks, &t, &err), KVSIM_EINVAL, "refused");
  cr_assert_str_eq(err.msg, "--seq-len needs --target-concurrency", "named");
}

Test(plan_report, a_given_default_is_out_of_range_and_named) {
  char *t;
  kvsim_err err = {0};
  /* Absent, the defaults stand: block size 16, GiB sizes predicted. */
  const char *none[] = {NULL};
  cr_assert_eq(run(NULL, false, none, &t, &err), 0, "%s", err.msg);
  cr_assert_eq(calc.pl.p.block_size, 16, "the default block size");
  free(t);
  /* Given, the sentinel is a value like any other, and out of range. */
  static const struct {
    const char *engine, *flag, *value, *want;
  } cases[] = {
      {NULL, "--block-size", "0", "--block-size: 0 is out of range [1, 4096]"},
      {NULL, "--block-size", "4294967312", "--block-size: 4294967312 is out of range [1, 4096]"},
      {NULL, "--max-num-seqs", "-1", "--max-num-seqs: -1 is out of range [1, 1048576]"},
      {NULL, "--kv-cache-memory-bytes", "0",
       "--kv-cache-memory-bytes: 0 is out of range [1, 4398046511104]"},
      {NULL, "--target-concurrency", "-1",
       "--target-concurrency: -1 is out of range [1, 1073741824]"},
      {NULL, "--cuda-graph-gib", "-1", "--cuda-graph-gib: -1 GiB is out of range [0, 4096]"},
      {"tgi", "--weights-gib", "-1", "--weights-gib: -1 GiB is out of range [0, 4096]"},
      {"hf-transformers", "--gpu-memory-gib", "-1",
       "--gpu-memory-gib (hardware.gpu_memory_gib): -1 GiB is outside [1/1024, 4096]"},
      {"sglang", "--mem-fraction-static", "-1", "--mem-fraction-static: -1 is outside (0, 1)"},
      {"sglang", "--gpu-memory-utilization", "0", "--gpu-memory-utilization: 0 is outside (0, 1]"},
      {"sglang", "--pipeline-parallel-size", "0",
       "--pipeline-parallel-size: 0 is out of range [1, 1024]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *kv[] = {cases[i].flag, cases[i].value, NULL};
    err = (kvsim_err){0};
    cr_assert_lt(run(cases[i].engine, false, kv, &t, &err), 0, "%s %s is refused", cases[i].flag,
                 cases[i].value);
    cr_assert_str_eq(err.msg, cases[i].want, "%s %s: the message names the flag and its range",
                     cases[i].flag, cases[i].value);
  }
}
