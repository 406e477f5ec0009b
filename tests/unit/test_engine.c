#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/engine.h"
#include "kvsim/run_output.h"

/* Collects what the run reports, to compare runs and check accounting. */
typedef struct capture {
  char *text;
  size_t len, cap;
  int64_t finished, rejected, other, samples;
  kvsim_time_ns last_sample;
  int64_t ids_seen[4096];
} capture_t;

static void put(capture_t *c, const char *s) {
  size_t n = strlen(s);
  if (c->len + n + 1 > c->cap) {
    c->cap = (c->len + n + 1) * 2;
    c->text = realloc(c->text, c->cap);
  }
  memcpy(c->text + c->len, s, n + 1);
  c->len += n;
}

static int on_sample(void *ctx, const kvsim_sample_t *s) {
  capture_t *c = ctx;
  cr_assert_geq(s->time, c->last_sample, "samples never go back in time");
  c->last_sample = s->time;
  c->samples++;
  char line[256];
  snprintf(line, sizeof line, "S %lld %d %.9f %lld %lld\n", (long long)s->time, s->replica,
           s->kv_cache_usage, (long long)s->num_requests_running, (long long)s->num_requests_waiting);
  put(c, line);
  return 0;
}

static int on_request(void *ctx, const kvsim_request_t *r) {
  capture_t *c = ctx;
  if (r->status == KVSIM_REQ_FINISHED)
    c->finished++;
  else if (r->status == KVSIM_REQ_REJECTED)
    c->rejected++;
  else
    c->other++;
  cr_assert_lt(r->spec.id, 4096u, "ids are small in these tests");
  c->ids_seen[r->spec.id]++;
  char line[256];
  snprintf(line, sizeof line, "R %llu %d %lld %lld %lld %d\n", (unsigned long long)r->spec.id,
           r->status, (long long)r->first_token, (long long)r->finish, (long long)r->num_output,
           r->num_preemptions);
  put(c, line);
  return 0;
}

static const char *scenario_json =
    "{ \"name\": \"t\", \"seed\": 7, \"model\": \"llama-3.1-8b\","
    "  \"hardware\": { \"gpu\": \"h100-sxm\", \"replicas\": %d },"
    "  \"engine\": { \"max_model_len\": 4096, \"num_gpu_blocks_override\": %d, \"max_num_seqs\": 64 },"
    "  \"workload\": { \"synthetic\": { \"requests\": %d,"
    "     \"arrival\": { \"process\": \"poisson\", \"rate\": 50 },"
    "     \"prompt_tokens\": { \"dist\": \"uniform\", \"min\": 100, \"max\": 1500 },"
    "     \"output_tokens\": { \"dist\": \"uniform\", \"min\": 1, \"max\": 400 } } } }";

static void run(capture_t *c, int replicas, int blocks, int requests, kvsim_run_stats_t *st) {
  char text[2048];
  snprintf(text, sizeof text, scenario_json, replicas, blocks, requests);
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK,
               "scenario: %s", err.msg);
  memset(c, 0, sizeof *c);
  kvsim_sink_t sink = {c, on_sample, on_request, NULL};
  kvsim_run_opts_t opts = {.check_invariants = true};
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, st, &err), KVSIM_OK, "run: %s", err.msg);
  kvsim_scenario_fini(&sc);
}

Test(engine, every_request_is_accounted_for_once_under_kv_pressure) {
  capture_t c;
  kvsim_run_stats_t st;
  /* 600 blocks x 16 tokens: a few full-length requests fill it: preemptions. */
  run(&c, 1, 600, 300, &st);
  cr_assert_eq(c.finished + c.rejected + c.other, 300, "300 requests reported");
  for (int i = 0; i < 300; i++)
    cr_assert_eq(c.ids_seen[i], 1, "request %d reported exactly once (got %lld)", i,
                 (long long)c.ids_seen[i]);
  cr_assert_eq(c.finished, 300, "all finish: the run goes to the end");
  cr_assert_gt(st.preemptions, 0, "the small pool forces preemptions");
  cr_assert_eq(st.requests_arrived, 300, "arrivals counted");
  cr_assert_gt(c.samples, 1, "a time series was produced");
  free(c.text);
}

Test(engine, same_scenario_and_seed_give_identical_records) {
  capture_t a, b;
  kvsim_run_stats_t sa, sb;
  run(&a, 2, 800, 200, &sa);
  run(&b, 2, 800, 200, &sb);
  cr_assert_eq(a.len, b.len, "same length of records");
  cr_assert(memcmp(a.text, b.text, a.len) == 0, "byte-identical records");
  cr_assert_eq(sa.steps, sb.steps, "same number of steps");
  free(a.text);
  free(b.text);
}

Test(engine, a_plan_that_does_not_fit_is_an_error) {
  const char *text =
      "{ \"model\": \"llama-3.1-70b\", \"hardware\": { \"gpu\": \"rtx4090\" },"
      "  \"workload\": { \"synthetic\": { \"requests\": 1, \"arrival\": { \"process\": \"poisson\", \"rate\": 1 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 10 }, \"output_tokens\": { \"dist\": \"fixed\", \"value\": 10 } } } }";
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, NULL, NULL, &st, &err), KVSIM_ENOFIT, "70B weights do not fit a 24 GB card");
  cr_assert(strstr(err.msg, "does not fit") != NULL, "message says so: %s", err.msg);
  kvsim_scenario_fini(&sc);
}

Test(engine, unknown_keys_and_wrong_types_name_the_path) {
  const char *bad[][2] = {
      {"{ \"model\": \"llama-3.1-8b\", \"engine\": { \"max_num_seq\": 4 }, \"workload\": {} }",
       "engine.max_num_seq"},
      {"{ \"model\": \"llama-3.1-8b\", \"engine\": { \"block_size\": \"big\" }, \"workload\": {} }",
       "engine.block_size"},
      {"{ \"model\": \"llama-3.1-8b\", \"hardware\": { \"replicas\": 0 }, \"workload\": {} }",
       "replicas"},
      {"{ \"model\": \"no-such-model\", \"workload\": {} }", "unknown model"},
      {"{ \"model\": \"llama-3.1-8b\", \"engine\": { \"profile\": \"vllm-v9\" }, \"workload\": {} }",
       "unknown profile"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    int rc = kvsim_scenario_parse(bad[i][0], "s.json", ".", NULL, 0, &sc, &err);
    cr_assert_lt(rc, 0, "case %zu must fail", i);
    cr_assert(strstr(err.msg, bad[i][1]) != NULL, "case %zu: '%s' should mention '%s'", i, err.msg,
              bad[i][1]);
  }
}

Test(engine, set_overrides_apply_by_dotted_path) {
  const char *text = "{ \"model\": \"llama-3.1-8b\", \"engine\": { \"max_num_seqs\": 4 },"
                     "  \"workload\": { \"synthetic\": { \"requests\": 1, \"arrival\": { \"process\": \"poisson\", \"rate\": 1 },"
                     "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 10 }, \"output_tokens\": { \"dist\": \"fixed\", \"value\": 10 } } } }";
  const char *sets[] = {"engine.max_num_seqs=9", "hardware.replicas=3", "name=renamed"};
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", sets, 3, &sc, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(sc.plan.max_num_seqs, 9, "--set replaced an existing key");
  cr_assert_eq(sc.replicas, 3, "--set created a missing section");
  cr_assert_str_eq(sc.name, "renamed", "--set takes plain strings");
  kvsim_scenario_fini(&sc);
}
