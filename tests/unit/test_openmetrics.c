/* The OpenMetrics writer: vLLM's names and buckets, cumulative histograms
 * per replica at each series row, one point per millisecond, the # EOF
 * end, and no file left behind on bad input. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/openmetrics.h"

static char paths[4][512];

static void remove_tmp(void) {
  for (int i = 0; i < 4; i++)
    if (paths[i][0])
      remove(paths[i]);
}

TestSuite(openmetrics, .fini = remove_tmp);

static const char *tmp_path(int i, const char *name) {
  const char *dir = getenv("TMPDIR");
  snprintf(paths[i], sizeof paths[i], "%s/kvsim_om_%ld_%s", dir && *dir ? dir : ".",
           (long)getpid(), name);
  return paths[i];
}

static const char *tmp_write(int i, const char *name, const char *text) {
  const char *p = tmp_path(i, name);
  FILE *f = fopen(p, "w");
  cr_assert(f, "cannot create %s", p);
  fputs(text, f);
  fclose(f);
  return p;
}

static char *slurp(const char *p) {
  FILE *f = fopen(p, "r");
  cr_assert(f, "%s was written", p);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

#define TS_HEADER                                                                             \
  "time_s,replica,kv_cache_usage_perc,kv_blocks_used,kv_blocks_cached,kv_blocks_free,"        \
  "num_requests_running,num_requests_waiting,num_requests_swapped,num_preemptions_total,"     \
  "prefix_cache_queries_total,prefix_cache_hits_total,prompt_tokens_total,"                   \
  "generation_tokens_total,cpu_kv_cache_usage_perc,kv_token_bytes,kv_allocated_bytes,"        \
  "kv_reserved_unused_bytes,kv_internal_fragmentation_bytes\n"
#define RQ_HEADER                                                                             \
  "request_id,replica,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,"      \
  "output_tokens,cached_tokens,num_preemptions,ttft_s,tpot_s,e2e_s,status\n"

/* Two replicas; replica 0 has a preemption row in the same millisecond
 * as its periodic row at 1 s (the later wins). */
static const char *series =
    TS_HEADER "0.000000,0,0.1,1,0,9,1,0,0,0,0,0,0,0,0,0,0,0,0\n"
              "0.000000,1,0.0,0,0,9,0,0,0,0,0,0,0,0,0,0,0,0,0\n"
              "1.000000,0,0.5,5,0,5,2,1,0,0,0,0,100,10,0,0,0,0,0\n"
              "1.000400,0,0.25,5,0,5,1,2,0,1,0,0,100,10,0,0,0,0,0\n"
              "1.000000,1,0.0,0,0,9,0,0,0,0,0,0,0,0,0,0,0,0,0\n"
              "2.000000,0,0.0,0,0,9,0,0,0,1,0,0,200,30,0,0,0,0,0\n"
              "2.000000,1,0.0,0,0,9,0,0,0,0,0,0,50,5,0,0,0,0,0\n";
/* Replica 0: a request finished at 1.5 s (TTFT 0.03 at 0.2 s, 11 tokens at
 * TPOT 0.12), one rejected; replica 1: one finished with one token. */
static const char *requests =
    RQ_HEADER "0,0,0.17,0.17,0.2,1.5,100,11,0,0,0.03,0.12,1.33,finished\n"
              "1,0,0.5,,,,100,11,0,0,,,,rejected\n"
              "2,1,1.2,1.2,1.9,1.9,50,1,0,0,0.7,,0.7,finished\n";

static bool has(const char *text, const char *line) {
  char want[512];
  snprintf(want, sizeof want, "\n%s\n", line);
  return strstr(text, want) != NULL;
}

Test(openmetrics, vllm_names_buckets_and_cumulative_points) {
  const char *ts = tmp_write(0, "ts.csv", series), *rq = tmp_write(1, "rq.csv", requests);
  const char *out = tmp_path(2, "om.txt");
  kvsim_openmetrics_opts_t o = {"meta-llama/Llama-3.1-8B", 1000.0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_openmetrics_write(ts, rq, &o, out, &err), KVSIM_OK, "writes: %s", err.msg);
  const char *t = slurp(out);
  cr_assert(strncmp(t, "# TYPE vllm:kv_cache_usage_perc gauge\n", 38) == 0, "starts with a family:\n%s", t);
  size_t n = strlen(t);
  cr_assert(n > 6 && !strcmp(t + n - 6, "# EOF\n"), "ends with # EOF");
  cr_assert(has(t, "# TYPE vllm:num_preemptions counter"), "preemptions are a counter");
  cr_assert(has(t, "vllm:num_preemptions_total{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\"} 1 1001.000"),
            "the later row of the millisecond wins:\n%s", t);
  cr_assert(!strstr(t, "1001.000\nvllm:num_preemptions_total{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\"} 0 1001.000"),
            "one point per millisecond");
  cr_assert(has(t, "vllm:kv_cache_usage_perc{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\"} 0.25 1001.000"),
            "gauge value of the later row");
  /* TTFT 0.03 observed at 0.2 s: in le 0.04, not in le 0.02, from t = 1 s. */
  cr_assert(has(t, "vllm:time_to_first_token_seconds_bucket{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\",le=\"0.02\"} 0 1001.000"),
            "TTFT below its bucket");
  cr_assert(has(t, "vllm:time_to_first_token_seconds_bucket{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\",le=\"0.04\"} 1 1001.000"),
            "TTFT in its bucket");
  cr_assert(has(t, "vllm:time_to_first_token_seconds_bucket{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\",le=\"2560.0\"} 1 1001.000"),
            "vLLM's last TTFT bound, canonical");
  cr_assert(has(t, "vllm:time_to_first_token_seconds_count{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\"} 0 1000.000"),
            "nothing observed at t = 0");
  /* TPOT: 10 decode gaps of 0.12 s, observed at the finish (1.5 s). */
  cr_assert(has(t, "vllm:time_per_output_token_seconds_count{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\"} 0 1001.000"),
            "TPOT not before the finish");
  cr_assert(has(t, "vllm:time_per_output_token_seconds_count{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\"} 10 1002.000"),
            "one TPOT observation per decode gap");
  cr_assert(has(t, "vllm:inter_token_latency_seconds_sum{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\"} 1.2 1002.000"),
            "the newer name carries the same sum");
  cr_assert(has(t, "vllm:time_per_output_token_seconds_bucket{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\",le=\"0.1\"} 0 1002.000") &&
                has(t, "vllm:time_per_output_token_seconds_bucket{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\",le=\"0.15\"} 10 1002.000"),
            "TPOT in vLLM's 0.15 bucket");
  /* Replica 1: one finished request with one token: no TPOT gap. */
  cr_assert(has(t, "vllm:time_per_output_token_seconds_count{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"1\"} 0 1002.000"),
            "no TPOT for one token");
  cr_assert(has(t, "vllm:e2e_request_latency_seconds_bucket{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"1\",le=\"0.8\"} 1 1002.000"),
            "E2E 0.7 s in le 0.8");
  cr_assert(has(t, "vllm:request_success_total{model_name=\"meta-llama/Llama-3.1-8B\",engine=\"0\",finished_reason=\"length\"} 1 1002.000"),
            "the rejected request is no success");
}

Test(openmetrics, bad_cell_names_file_line_column_and_writes_nothing) {
  const char *ts = tmp_write(0, "ts.csv", TS_HEADER "0.0,0,abc,1,0,9,1,0,0,0,0,0,0,0,0,0,0,0,0\n");
  const char *rq = tmp_write(1, "rq.csv", requests);
  const char *out = tmp_path(2, "om.txt");
  remove(out);
  kvsim_openmetrics_opts_t o = {"m", 0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_openmetrics_write(ts, rq, &o, out, &err), KVSIM_EINVAL, "refused");
  cr_assert(strstr(err.msg, "ts.csv:2: column 'kv_cache_usage_perc': bad value 'abc'"), "names it: %s",
            err.msg);
  cr_assert_neq(access(out, F_OK), 0, "no file written");
}

Test(openmetrics, missing_column_and_bad_start) {
  const char *ts = tmp_write(0, "ts.csv", "time_s,replica\n0,0\n");
  const char *rq = tmp_write(1, "rq.csv", requests);
  const char *out = tmp_path(2, "om.txt");
  kvsim_openmetrics_opts_t o = {"m", 0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_openmetrics_write(ts, rq, &o, out, &err), KVSIM_EINVAL, "refused");
  cr_assert(strstr(err.msg, "no column 'kv_cache_usage_perc'"), "names the column: %s", err.msg);
  o.start_unix_s = -5;
  cr_assert_eq(kvsim_openmetrics_write(ts, rq, &o, out, &err), KVSIM_EINVAL, "negative start refused");
  cr_assert_neq(access(out, F_OK), 0, "no file written");
}

Test(openmetrics, unwritable_output_leaves_no_temporary_file) {
  const char *ts = tmp_write(0, "ts.csv", series), *rq = tmp_write(1, "rq.csv", requests);
  kvsim_openmetrics_opts_t o = {"m", 0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_openmetrics_write(ts, rq, &o, "/nonexistent-dir/om.txt", &err), KVSIM_EIO,
               "refused");
  cr_assert(strstr(err.msg, "/nonexistent-dir/om.txt: cannot write"), "names the file: %s", err.msg);
}
