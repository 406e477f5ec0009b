/* Workload readers against the real traces in ../shared/traces (read in
 * place, never copied). Skipped with a message when the folder is absent. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/workload.h"
#include "workload/wl.h"

static const char *shared(const char *rel) {
  static char p[4][1024];
  static int k;
  char *out = p[k++ % 4];
  snprintf(out, 1024, "%s/traces/%s", KVSIM_SHARED_DIR, rel);
  if (access(out, R_OK) != 0)
    cr_skip_test("%s is absent: validation on ../shared skipped", out);
  return out;
}

static kvsim_workload_cfg_t *trace_cfg(const char *path, const char *extra) {
  char json[2048];
  snprintf(json, sizeof json, "{\"trace\": \"%s\"%s%s}", path, extra ? ", " : "",
           extra ? extra : "");
  cJSON *j = cJSON_Parse(json);
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  int rc = kvsim_workload_parse(j, NULL, "w", &cfg, &err);
  cJSON_Delete(j);
  cr_assert_eq(rc, 0, "parses: %s", err.msg);
  return cfg;
}

static void stats_of(const char *path, const char *extra, bool raw, kvsim_trace_stats_t *st) {
  kvsim_workload_cfg_t *cfg = trace_cfg(path, extra);
  kvsim_source_t *s;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_source_open(cfg, 1, &s, &err), 0, "opens: %s", err.msg);
  cr_assert_eq(kvsim_trace_stats(s, raw, st, &err), 0, "reads: %s", err.msg);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_shared, azure_conv_counts_duration_rate) {
  const char *p = shared("azure_llm_2023/AzureLLMInferenceTrace_conv.csv");
  kvsim_trace_stats_t st;
  memset(&st, 0, sizeof st);
  stats_of(p, NULL, false, &st);
  cr_assert_eq(st.requests, 19366, "19,366 requests, got %lld", (long long)st.requests);
  cr_assert_eq(st.skipped, 0, "no bad rows");
  cr_assert(fabs(st.duration_s - 3501.7) < 0.05, "duration 3,501.7 s, got %.3f", st.duration_s);
  cr_assert(fabs(st.rate_rps - 5.53) < 0.005, "rate 5.53, got %.4f", st.rate_rps);
  cr_assert(fabs(st.interarrival_cv - 1.09) < 0.005, "CV 1.09, got %.4f", st.interarrival_cv);
  cr_assert(fabs(st.prompt.mean - 1154.7) < 0.05, "input mean 1,154.7, got %.2f", st.prompt.mean);
  cr_assert_eq(st.prompt.p50, 1020, "input p50 1,020, got %.1f", st.prompt.p50);
  cr_assert(fabs(st.output.mean - 211.1) < 0.05, "output mean 211.1, got %.2f", st.output.mean);
}

Test(workload_shared, azure_code_is_bursty) {
  const char *p = shared("azure_llm_2023/AzureLLMInferenceTrace_code.csv");
  kvsim_trace_stats_t st;
  memset(&st, 0, sizeof st);
  stats_of(p, NULL, false, &st);
  cr_assert_eq(st.requests, 8819, "8,819 requests, got %lld", (long long)st.requests);
  cr_assert(fabs(st.duration_s - 3435.9) < 0.05, "duration 3,435.9 s, got %.3f", st.duration_s);
  cr_assert(fabs(st.interarrival_cv - 13.2) < 0.05, "CV 13.2, got %.3f", st.interarrival_cv);
  cr_assert_eq(st.peak_1s, 67, "67 requests in one second, got %lld", (long long)st.peak_1s);
  cr_assert(fabs(st.max_gap_s - 217) < 0.5, "a gap of 217 s, got %.1f", st.max_gap_s);
}

Test(workload_shared, splitwise_conv_equals_azure_conv) {
  const char *az = shared("azure_llm_2023/AzureLLMInferenceTrace_conv.csv");
  const char *vi = shared("vidur_processed/splitwise_conv.csv");
  kvsim_workload_cfg_t *ca = trace_cfg(az, NULL), *cv = trace_cfg(vi, NULL);
  kvsim_source_t *sa, *sv;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_source_open(ca, 1, &sa, &err), 0, "azure opens: %s", err.msg);
  cr_assert_eq(kvsim_source_open(cv, 1, &sv, &err), 0, "vidur opens: %s", err.msg);
  kvsim_req_spec_t a, v;
  int64_t n = 0, worst = 0;
  for (;;) {
    int ra = kvsim_source_next(sa, &a, &err);
    int rv = kvsim_source_next(sv, &v, &err);
    cr_assert_eq(ra, rv, "both end together (request %lld)", (long long)n);
    if (ra != KVSIM_SOURCE_REQUEST)
      break;
    cr_assert_eq(a.prompt_tokens, v.prompt_tokens, "request %lld: prompt", (long long)n);
    cr_assert_eq(a.output_tokens, v.output_tokens, "request %lld: output", (long long)n);
    int64_t d = llabs(a.arrival - v.arrival);
    if (d > worst)
      worst = d;
    cr_assert_leq(d, 1000, "request %lld: arrivals within 1 us (%lld ns)", (long long)n,
                  (long long)d);
    n++;
  }
  cr_assert_eq(n, 19366, "19,366 requests each, got %lld", (long long)n);
  cr_log_info("splitwise vs Azure conv: worst arrival difference %lld ns", (long long)worst);
  kvsim_source_close(sa);
  kvsim_source_close(sv);
  kvsim_workload_cfg_free(ca);
  kvsim_workload_cfg_free(cv);
}

Test(workload_shared, mooncake_ideal_and_lru_prefix_hit_rates) {
  const char *p = shared("mooncake_fast25/conversation_trace.jsonl");
  kvsim_trace_stats_t st;
  memset(&st, 0, sizeof st);
  st.prefix_block = 512;
  st.nlru = 4;
  int64_t caps[] = {1000, 5000, 20000, 50000};
  memcpy(st.lru_capacity, caps, sizeof caps);
  stats_of(p, NULL, true, &st);
  cr_assert_eq(st.requests, 12031, "12,031 requests, got %lld", (long long)st.requests);
  cr_assert_eq(st.blocks, 288500, "288,500 blocks, got %lld", (long long)st.blocks);
  cr_assert_eq(st.distinct_blocks, 182790, "182,790 distinct, got %lld",
               (long long)st.distinct_blocks);
  cr_assert(fabs(100 * st.ideal_hit_rate_blocks - 36.64) < 0.01, "ideal 36.64%% of blocks: %.4f",
            100 * st.ideal_hit_rate_blocks);
  cr_assert(fabs(100 * st.ideal_hit_rate_tokens - 37.36) < 0.01, "ideal 37.36%% of tokens: %.4f",
            100 * st.ideal_hit_rate_tokens);
  double want[] = {4.45, 11.04, 28.75, 35.46};
  for (int i = 0; i < 4; i++)
    cr_assert(fabs(100 * st.lru_hit_rate[i] - want[i]) < 0.01, "LRU %lld: %.2f%%, got %.4f",
              (long long)caps[i], want[i], 100 * st.lru_hit_rate[i]);
  cr_assert(fabs(st.duration_s - 3537.0) < 0.05, "duration 3,537.0 s, got %.3f", st.duration_s);

  /* Hashing 512-token blocks of the segments (no raw ids) gives the same
   * ideal rate: the ids are chained, so equal ids mean equal prefixes. */
  kvsim_trace_stats_t st2;
  memset(&st2, 0, sizeof st2);
  st2.prefix_block = 512;
  stats_of(p, NULL, false, &st2);
  cr_assert(fabs(st2.ideal_hit_rate_blocks - st.ideal_hit_rate_blocks) < 1e-4,
            "chained block hashes agree: %.5f vs %.5f", st2.ideal_hit_rate_blocks,
            st.ideal_hit_rate_blocks);
}

Test(workload_shared, llmservingsim_workload_reads) {
  char p[1024];
  snprintf(p, sizeof p, "%s/validation/llmservingsim/workloads/"
                        "sharegpt-llama-3.1-8b-300-sps10.stripped.jsonl",
           KVSIM_SHARED_DIR);
  if (access(p, R_OK) != 0)
    cr_skip_test("%s is absent: validation on ../shared skipped", p);
  kvsim_trace_stats_t st;
  memset(&st, 0, sizeof st);
  stats_of(p, NULL, false, &st);
  cr_assert_eq(st.requests, 300, "300 requests, got %lld", (long long)st.requests);
  cr_assert_eq(st.first_s, 0, "arrivals from the first row");
}

Test(workload_shared, sharegpt_lengths_drive_a_synthetic_workload) {
  const char *p = shared("sharegpt_lengths/sharegpt_8k_filtered_stats_llama2_tokenizer.csv");
  char json[2048];
  snprintf(json, sizeof json,
           "{\"synthetic\": {\"requests\": 20000, \"arrival\": {\"process\": \"poisson\", "
           "\"rate\": 10}, \"lengths_from\": {\"file\": \"%s\"}}}",
           p);
  cJSON *j = cJSON_Parse(json);
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_parse(j, NULL, "w", &cfg, &err), 0, "parses: %s", err.msg);
  cJSON_Delete(j);
  kvsim_source_t *s;
  cr_assert_eq(kvsim_source_open(cfg, 1, &s, &err), 0, "opens: %s", err.msg);
  kvsim_trace_stats_t st;
  memset(&st, 0, sizeof st);
  cr_assert_eq(kvsim_trace_stats(s, false, &st, &err), 0, "runs: %s", err.msg);
  /* The file's own means (30,731 rows). */
  double pm = 0, om = 0;
  int64_t n = 0;
  FILE *f = fopen(p, "r");
  char line[256];
  cr_assert(fgets(line, sizeof line, f), "header");
  long a, b;
  while (fscanf(f, "%ld,%ld,%*[^\n]\n", &a, &b) == 2) {
    pm += a;
    om += b;
    n++;
  }
  fclose(f);
  cr_assert_eq(n, 30731, "30,731 rows in the file, got %lld", (long long)n);
  pm /= n;
  om /= n;
  cr_assert(fabs(st.prompt.mean - pm) < 0.03 * pm, "prompt mean %.1f vs file %.1f",
            st.prompt.mean, pm);
  cr_assert(fabs(st.output.mean - om) < 0.03 * om, "output mean %.1f vs file %.1f",
            st.output.mean, om);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}
