#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/engine.h"
#include "kvsim/run_output.h"
#include "kvsim/study.h"
#include "memory/plan_engines.h"

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
  kvsim_sink_t sink = {c, on_sample, on_request, NULL, NULL};
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

/* Regression: a study (or sweep) file given to run or plan was refused
 * by its first key ("scenario: unknown key"), which says nothing of what
 * the file is or which command takes it. */
Test(engine, a_study_or_sweep_file_is_named_not_an_unknown_key) {
  const char *bad[][2] = {
      {"{ \"name\": \"s\", \"scenario\": \"base.json\", \"target_rate\": 10, \"candidates\": [] }",
       "study.json: this is a study file, not a scenario (it has `candidates`): run it with kvsim "
       "compare"},
      {"{ \"scenario\": \"base.json\", \"target_rate\": 10 }",
       "study.json: this is a study file, not a scenario (it has `target_rate`): run it with kvsim "
       "compare"},
      {"{ \"scenario\": \"base.json\", \"grid\": { \"engine.block_size\": [16, 32] } }",
       "study.json: this is a sweep file, not a scenario (it has `grid`): run it with kvsim sweep"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_scenario_parse(bad[i][0], "study.json", ".", NULL, 0, &sc, &err),
                 KVSIM_EINVAL, "case %zu is refused", i);
    cr_assert_str_eq(err.msg, bad[i][1], "case %zu: %s", i, err.msg);
  }
}

/* Regression: a top-level key was named "s.json.seed" where a section's
 * reads "s.json: engine.block_size", and admission.max_wait_s below 0 was
 * "admission: limits must be >= 0", naming no key. */
Test(engine, top_level_and_admission_errors_name_file_then_key) {
  const char *bad[][2] = {
      {"{ \"seed\": -1, \"model\": \"llama-3.1-8b\", \"workload\": {} }",
       "s.json: seed: -1 must be >= 0"},
      {"{ \"seed\": 0.5, \"model\": \"llama-3.1-8b\", \"workload\": {} }",
       "s.json: seed: expected an integer"},
      {"{ \"name\": 3, \"model\": \"llama-3.1-8b\", \"workload\": {} }",
       "s.json: name: expected a string"},
      {"{ \"name\": \"\", \"model\": \"llama-3.1-8b\", \"workload\": {} }",
       "s.json: name: empty (leave the key out to name the scenario after its file)"},
      {"{ \"description\": 3, \"model\": \"llama-3.1-8b\", \"workload\": {} }",
       "s.json: description: expected a string"},
      {"{ \"model\": 3, \"workload\": {} }", "s.json: model: expected a string"},
      {"{ \"sed\": 3, \"model\": \"llama-3.1-8b\", \"workload\": {} }",
       "s.json: sed: unknown key (did you mean 'seed'?)"},
      {"{ \"model\": \"llama-3.1-8b\", \"admission\": { \"max_wait_s\": -1 }, \"workload\": {} }",
       "s.json: admission.max_wait_s: -1 is outside [0, 9e+09] (0: no limit)"},
      {"{ \"model\": \"llama-3.1-8b\", \"admission\": { \"max_queue_length\": -1 }, "
       "\"workload\": {} }",
       "s.json: admission.max_queue_length: -1 must be >= 0"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_scenario_parse(bad[i][0], "s.json", ".", NULL, 0, &sc, &err), KVSIM_EINVAL,
                 "case %zu must fail", i);
    cr_assert_str_eq(err.msg, bad[i][1], "case %zu", i);
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

static const char *small_json =
    "{ \"name\": \"small\", \"seed\": 3, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" %s },"
    "  \"engine\": { \"max_model_len\": 4096, \"max_num_seqs\": 16 },"
    "  \"workload\": { \"synthetic\": { \"requests\": 40, \"arrival\": { \"process\": \"poisson\", \"rate\": 20 },"
    "  \"prompt_tokens\": { \"dist\": \"uniform\", \"min\": 50, \"max\": 400 },"
    "  \"output_tokens\": { \"dist\": \"uniform\", \"min\": 5, \"max\": 50 } } } }";

static int parse_small(const char *hw_extra, kvsim_scenario_t *sc, kvsim_err *err) {
  char text[2048];
  snprintf(text, sizeof text, small_json, hw_extra);
  return kvsim_scenario_parse(text, "s.json", ".", NULL, 0, sc, err);
}

/* Regression: ep % tp ran before tp's range check (SIGFPE with tp 0). */
Test(engine, zero_tensor_parallel_with_expert_parallel_is_an_error_not_a_crash) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  int rc = parse_small(", \"tensor_parallel_size\": 0, \"expert_parallel_size\": 2", &sc, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "tp 0 is refused (rc %d)", rc);
  cr_assert(strstr(err.msg, "hardware.tensor_parallel_size: 0 is out of range [1, 1024]") != NULL,
            "names the key and its range: %s", err.msg);
}

/* Regression: a huge gpu_memory_gib overflowed llround and the GPU's own
 * memory was used instead, silently. */
Test(engine, gpu_memory_gib_past_any_gpu_is_refused_with_key_and_range) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  int rc = parse_small(", \"gpu_memory_gib\": 1e12", &sc, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "1e12 GiB is refused (rc %d)", rc);
  cr_assert(strstr(err.msg, "gpu_memory_gib") && strstr(err.msg, "[1/1024, 4096]"),
            "names key and range: %s", err.msg);
  cr_assert_eq(parse_small(", \"gpu_memory_gib\": 80", &sc, &err), KVSIM_OK, "80 GiB is fine: %s", err.msg);
  cr_assert_eq(sc.plan.total_memory_bytes, 80 * KVSIM_GIB, "and is used as given");
  kvsim_scenario_fini(&sc);
}

/* Regression: max_time_s and max_wait_s past int64 nanoseconds wrapped
 * (an assertion in the event queue; in a release build a run of
 * -9.2e9 s, or every request rejected as waiting too long), and a huge
 * quant_step_factor made a run without end. */
Test(engine, times_and_step_factors_past_their_range_are_refused_with_key_and_range) {
  const char *bad[][2] = {
      {", \"output\": { \"max_time_s\": 1e10 }", "output.max_time_s: 1e+10 is outside [0, 9e+09]"},
      {", \"admission\": { \"max_wait_s\": 9.3e9 }",
       "admission.max_wait_s: 9.3e+09 is outside [0, 9e+09]"},
      {", \"engine\": { \"quant_step_factor\": 1e308 }",
       "quant_step_factor: 1e+308 is outside [0.01, 100]"},
      {", \"engine\": { \"quant_step_factor\": 0 }", "quant_step_factor: 0 is outside [0.01, 100]"},
      {", \"name\": \"../up\"", "name may not contain '/'"},
      {", \"name\": \"..\"", "not a folder name"},
      {", \"name\": \"a\\nb\"", "control characters"},
      {", \"hardware\": { \"gpu\": \"l4\", \"gpu_memory_gib\": 0 }",
       "gpu_memory_gib: 0 GiB is outside [1/1024, 4096]"},
      {", \"hardware\": { \"gpu\": \"l4\", \"gpu_memory_gib\": 1e-310 }",
       "gpu_memory_gib: 1e-310 GiB is outside"},
      {", \"slo\": { \"ttft_p99_s\": 0 }", "slo.ttft_p99_s: 0 must be > 0"},
  };

  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[4096];
    snprintf(text, sizeof text,
             "{ \"model\": \"llama-3.2-1b\"%s, \"workload\": { "
             "\"synthetic\": "
             "{ \"requests\": 2, \"arrival\": { \"process\": \"poisson\", \"rate\": 1 }, "
             "\"prompt_tokens\": "
             "{ \"dist\": \"fixed\", \"value\": 10 }, \"output_tokens\": { \"dist\": \"fixed\", "
             "\"value\": 5 } } } }",
             bad[i][0]);
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, &sc, &err), KVSIM_EINVAL,
                 "case %zu refused", i);
    cr_assert(strstr(err.msg, bad[i][1]), "case %zu: '%s' should say '%s'", i, err.msg, bad[i][1]);
  }
}

/* Parses small_json with an engine section `engine` (and more keys). */
static int parse_engine_json(const char *engine, kvsim_scenario_t *sc, kvsim_err *err) {
  char text[4096];
  snprintf(text, sizeof text,
           "{ \"model\": \"llama-3.2-1b\", \"engine\": %s, \"workload\": { \"synthetic\": "
           "{ \"requests\": 2, \"arrival\": { \"process\": \"poisson\", \"rate\": 1 }, "
           "\"prompt_tokens\": 10, \"output_tokens\": 5 } } }",
           engine);
  return kvsim_scenario_parse(text, "s.json", ".", NULL, 0, sc, err);
}

/* A key given as null is the key left out: the profile's default, never
 * the value an absent key reads as inside (SGLang's chunked_prefill_size
 * null was "0 (use -1 to disable chunking)"; V0's watermark null was 0
 * and its swap_space null no swap; transfer_overlap null was on). */
Test(engine, a_null_key_keeps_the_profile_default) {
  const char *cases[][2] = {
      {"sglang", "chunked_prefill_size"},
      {"sglang", "max_total_tokens"},
      {"vllm-v0", "watermark"},
      {"vllm-v0", "swap_space"},
      {"vllm-v0", "transfer_overlap"},
      {"vllm-v1", "max_num_seqs"},
      {"vllm-v1", "long_prefill_token_threshold"},
      {"tgi", "max_total_tokens"},
      {"tgi", "tgi_version"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char with[256], without[256];
    snprintf(with, sizeof with, "{ \"profile\": \"%s\", \"%s\": null }", cases[i][0], cases[i][1]);
    snprintf(without, sizeof without, "{ \"profile\": \"%s\" }", cases[i][0]);
    kvsim_scenario_t a, b;
    kvsim_err err = {0};
    cr_assert_eq(parse_engine_json(with, &a, &err), KVSIM_OK, "%s %s null: %s", cases[i][0],
                 cases[i][1], err.msg);
    cr_assert_eq(parse_engine_json(without, &b, &err), KVSIM_OK, "%s: %s", cases[i][0], err.msg);
    cr_assert(memcmp(&a.sched.opts, &b.sched.opts, sizeof a.sched.opts) == 0,
              "%s %s null: the profile's options are its defaults", cases[i][0], cases[i][1]);
    cr_assert(memcmp(&a.plan, &b.plan, sizeof a.plan) == 0,
              "%s %s null: the plan's parameters are the defaults", cases[i][0], cases[i][1]);
    cr_assert_eq(a.swap_space_gib, b.swap_space_gib, "%s %s null: swap space %g, want %g",
                 cases[i][0], cases[i][1], a.swap_space_gib, b.swap_space_gib);
    cr_assert_eq(a.offload.overlap, b.offload.overlap, "%s %s null: transfer overlap", cases[i][0],
                 cases[i][1]);
    kvsim_scenario_fini(&a);
    kvsim_scenario_fini(&b);
  }
  /* And whole sections, SLO targets and the scenario's perf scales. */
  const char *nulls[] = {"null", "{ \"profile\": \"vllm-v1\" }, \"slo\": null",
                         "{}, \"slo\": { \"ttft_p99_s\": null }",
                         "{}, \"perf\": { \"step_time_scale\": null }",
                         "{}, \"hardware\": null, \"output\": null, \"admission\": null"};
  for (size_t i = 0; i < sizeof nulls / sizeof *nulls; i++) {
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_eq(parse_engine_json(nulls[i], &sc, &err), KVSIM_OK, "'%s': %s", nulls[i], err.msg);
    cr_assert_eq(sc.step_time_scale, 1.0, "'%s': the default step scale", nulls[i]);
    cr_assert_eq(sc.slo_ttft_p99_s, 0.0, "'%s': no TTFT target", nulls[i]);
    kvsim_scenario_fini(&sc);
  }
}

/* A count past its range names the range taken: 0 is refused for the
 * engine counts (0 would be the default), so no range starts at 0, and
 * none is the +-2^53 of any JSON integer. */
Test(engine, out_of_range_counts_name_the_range_taken) {
  const char *bad[][2] = {
      {"{ \"max_num_seqs\": 1e12 }",
       "engine.max_num_seqs: 1000000000000 is out of range [1, 1048576]"},
      {"{ \"max_num_batched_tokens\": 1e12 }",
       "engine.max_num_batched_tokens: 1000000000000 is out of range [1, 1073741824]"},
      {"{ \"num_gpu_blocks_override\": 1e12 }",
       "engine.num_gpu_blocks_override: 1000000000000 is out of range [1, 2147483647]"},
      {"{ \"max_model_len\": 1e30 }",
       "engine.max_model_len: 1e+30 is out of range [1, 1073741824]"},
      {"{ \"max_model_len\": \"2000M\" }",
       "engine.max_model_len: 2097152000 is out of range [1, 1073741824]"},
      {"{ \"kv_cache_memory_bytes\": 1e30 }",
       "engine.kv_cache_memory_bytes: 1e+30 is out of range [1, 4398046511104]"},
      {"{ \"offload_store_threshold\": 1e30 }",
       "engine.offload_store_threshold: 1e+30 is out of range [0, 4294967295]"},
      {"{ \"block_size\": 1e30 }", "engine.block_size: 1e+30 is out of range [1, 4096]"},
      {"{ \"max_num_seqs\": 0 }", "engine.max_num_seqs: 0 must be >= 1 (leave the key out"},
      {"{ \"max_num_seqs\": -1e30 }", "engine.max_num_seqs: -1e+30 must be >= 1"},
      {"{}, \"hardware\": { \"replicas\": 1e30 }",
       "hardware.replicas: 1e+30 is out of range [1, 4096]"},
      {"{}, \"admission\": { \"max_queue_length\": 1e30 }",
       "admission.max_queue_length: 1e+30 is out of range [0, 9007199254740991]"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_eq(parse_engine_json(bad[i][0], &sc, &err), KVSIM_EINVAL, "'%s' is refused",
                 bad[i][0]);
    cr_assert(strstr(err.msg, bad[i][1]), "'%s': '%s' should say '%s'", bad[i][0], err.msg,
              bad[i][1]);
  }
}

/* The run used to write the plan's limits into the caller's scenario. */
Test(engine, resolve_and_run_leave_the_scenario_untouched) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(parse_small("", &sc, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_scenario_t before;
  memcpy(&before, &sc, sizeof sc);
  kvsim_resolved_t res;
  cr_assert_eq(kvsim_scenario_resolve(&sc, &res, &err), KVSIM_OK, "resolve: %s", err.msg);
  cr_assert_eq(res.sched.max_num_seqs, 16, "the plan's max_num_seqs reaches the scheduler");
  cr_assert_eq(res.sched.max_model_len, 4096, "and max_model_len");
  cr_assert_eq(res.pool_usable, res.pool_blocks - 1, "the null block is not usable");
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, NULL, NULL, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert(memcmp(&before, &sc, sizeof sc) == 0, "the scenario is byte-identical after resolve and run");
  cr_assert_eq(st.resolved.sched.max_num_seqs, res.sched.max_num_seqs, "stats keep the resolved config");
  cr_assert_eq(st.resolved.pool_usable, st.pool_blocks, "pool size agrees");
  kvsim_scenario_fini(&sc);
}

/* A typed override on a copy runs exactly as a re-parse with --set. */
Test(engine, copy_with_typed_overrides_equals_a_reparse_with_set) {
  kvsim_scenario_t base, copy, set;
  kvsim_err err = {0};
  cr_assert_eq(parse_small("", &base, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(kvsim_scenario_copy(&base, &copy, &err), KVSIM_OK, "copy: %s", err.msg);
  cr_assert_eq(kvsim_scenario_set_replicas(&copy, 2, &err), KVSIM_OK, "replicas: %s", err.msg);
  cr_assert_eq(kvsim_scenario_set_utilization(&copy, 0.8, &err), KVSIM_OK, "util: %s", err.msg);
  cr_assert_eq(kvsim_scenario_set_workload(&copy, "synthetic.arrival.rate", 35, &err), KVSIM_OK,
               "rate: %s", err.msg);
  char text[2048];
  snprintf(text, sizeof text, small_json, "");
  const char *sets[] = {"hardware.replicas=2", "engine.gpu_memory_utilization=0.8",
                        "workload.synthetic.arrival.rate=35"};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", sets, 3, &set, &err), KVSIM_OK, "%s", err.msg);
  kvsim_run_stats_t a, b;
  cr_assert_eq(kvsim_run(&copy, NULL, NULL, &a, &err), KVSIM_OK, "run copy: %s", err.msg);
  cr_assert_eq(kvsim_run(&set, NULL, NULL, &b, &err), KVSIM_OK, "run set: %s", err.msg);
  cr_assert_eq(a.steps, b.steps, "same steps (%lld vs %lld)", (long long)a.steps, (long long)b.steps);
  cr_assert_eq(a.last_finish, b.last_finish, "same last finish");
  cr_assert_eq(a.plan.num_gpu_blocks, b.plan.num_gpu_blocks, "same pool");
  cJSON *ca = kvsim_scenario_config_json(&copy), *cb = kvsim_scenario_config_json(&set);
  char *ja = cJSON_PrintUnformatted(ca), *jb = cJSON_PrintUnformatted(cb);
  cr_assert_str_eq(ja, jb, "the recorded config says what ran");
  free(ja);
  free(jb);
  cJSON_Delete(ca);
  cJSON_Delete(cb);
  kvsim_run_stats_t c;
  cr_assert_eq(kvsim_run(&base, NULL, NULL, &c, &err), KVSIM_OK, "run base: %s", err.msg);
  cr_assert_neq(c.steps, a.steps, "the base is not changed by overriding its copy");
  cr_assert_eq(kvsim_scenario_set_replicas(&copy, 0, &err), KVSIM_EINVAL, "replicas 0 refused");
  kvsim_scenario_fini(&base);
  kvsim_scenario_fini(&copy);
  kvsim_scenario_fini(&set);
}

Test(engine, sweep_keys_are_checked_against_the_scenario_sections) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_check_key("engine.max_num_seqs", "w", &err), KVSIM_OK, "known key");
  cr_assert_eq(kvsim_scenario_check_key("workload.synthetic.requests", "w", &err), KVSIM_OK,
               "workload keys are the workload's to check");
  cr_assert_eq(kvsim_scenario_check_key("hardware", "w", &err), KVSIM_OK, "a whole section");
  cr_assert_eq(kvsim_scenario_check_key("engine.max_num_seq", "w", &err), KVSIM_EINVAL, "typo");
  cr_assert(strstr(err.msg, "did you mean 'engine.max_num_seqs'") != NULL, "suggests: %s", err.msg);
  cr_assert_eq(kvsim_scenario_check_key("hardwre.gpu", "w", &err), KVSIM_EINVAL, "typo in section");
  cr_assert(strstr(err.msg, "'hardware.gpu'") != NULL, "suggests: %s", err.msg);
}

/* The cluster summary of a multi-replica run: one row per replica, shares
 * that add up, and counters that agree with the run's totals. */
static void cluster_summary(const char *router, kvsim_summary_t *out, cJSON **json) {
  const char *sets[2] = {"hardware.router=", NULL};
  char set[64];
  snprintf(set, sizeof set, "hardware.router=%s", router);
  sets[0] = set;
  sets[1] = "workload.synthetic.prefix={\"shared_tokens\": 512, \"groups\": 6}";
  char text[2048];
  snprintf(text, sizeof text, scenario_json, 4, 4000, 300);
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", sets, 2, &sc, &err), KVSIM_OK, "%s", err.msg);
  kvsim_run_output_t *o = NULL;
  cr_assert_eq(kvsim_run_output_open(NULL, &sc, false, &o, &err), KVSIM_OK, "%s", err.msg);
  kvsim_sink_t sink = kvsim_run_output_sink(o);
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, NULL, &sink, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(kvsim_run_output_finish(o, &st, false, &err), KVSIM_OK, "%s", err.msg);
  *out = *kvsim_run_output_summary(o);
  *json = kvsim_summary_json(out, &sc);
  kvsim_run_output_close(o);
  kvsim_scenario_fini(&sc);
}

Test(engine, cluster_summary_rows_add_up) {
  const char *routers[] = {"round_robin", "least_kv", "prefix_affinity"};
  for (int k = 0; k < 3; k++) {
    kvsim_summary_t s;
    cJSON *j = NULL;
    cluster_summary(routers[k], &s, &j);
    cr_assert_eq(s.replicas, 4, "%s: four replicas", routers[k]);
    cr_assert_str_eq(s.router, routers[k], "the router is named");
    cr_assert_eq(s.nreplica_rows, 4, "%s: a row per replica", routers[k]);
    int64_t requests = 0, queries = 0, hits = 0;
    double share = 0, peak = 0;
    for (int i = 0; i < 4; i++) {
      requests += s.per_replica[i].requests;
      queries += s.per_replica[i].prefix_queries;
      hits += s.per_replica[i].prefix_hits;
      share += s.per_replica[i].request_share;
      if (s.per_replica[i].kv_usage_peak > peak)
        peak = s.per_replica[i].kv_usage_peak;
    }
    cr_assert_eq(requests, s.requests_total, "%s: every request routed once", routers[k]);
    cr_assert_float_eq(share, 1.0, 4e-6, "%s: shares add up to 1 (%g)", routers[k], share);
    cr_assert_eq(queries, s.prefix_queries, "%s: per-replica queries sum to the run's", routers[k]);
    cr_assert_eq(hits, s.prefix_hits, "%s: per-replica hits sum to the run's", routers[k]);
    cr_assert_float_eq(peak, s.kv_usage_peak, 1e-6, "%s: the run's KV peak is the largest replica's",
                       routers[k]);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "cluster");
    cr_assert(cJSON_IsObject(c), "%s: summary.json has a cluster section", routers[k]);
    cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(c, "per_replica")), 4,
                 "%s: four rows printed", routers[k]);
    bool affinity = !strcmp(routers[k], "prefix_affinity");
    cr_assert_eq(cJSON_HasObjectItem(c, "routed_by_prefix"), affinity,
                 "%s: prefix counters printed only for prefix_affinity", routers[k]);
    if (affinity)
      cr_assert_eq(s.router_affinity + s.router_fallbacks + s.router_no_identity, s.requests_total,
                   "every prefix_affinity pick is counted once");
    cJSON_Delete(j);
  }
}

Test(engine, one_replica_prints_no_cluster_section) {
  char text[2048];
  snprintf(text, sizeof text, scenario_json, 1, 4000, 20);
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  kvsim_run_output_t *o = NULL;
  cr_assert_eq(kvsim_run_output_open(NULL, &sc, false, &o, &err), KVSIM_OK, "%s", err.msg);
  kvsim_sink_t sink = kvsim_run_output_sink(o);
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, NULL, &sink, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(kvsim_run_output_finish(o, &st, false, &err), KVSIM_OK, "%s", err.msg);
  cJSON *j = kvsim_summary_json(kvsim_run_output_summary(o), &sc);
  cr_assert_not(cJSON_HasObjectItem(j, "cluster"), "a single replica's summary stays as it was");
  cJSON_Delete(j);
  kvsim_run_output_close(o);
  kvsim_scenario_fini(&sc);
}

/* perf.step_time_scale multiplies every step: with a light load and no
 * queueing, the busy time scales with it and the run's steps do not. */
Test(engine, step_time_scale_multiplies_every_step_and_is_range_checked) {
  kvsim_scenario_t base, scaled, set;
  kvsim_err err = {0};
  cr_assert_eq(parse_small("", &base, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(kvsim_scenario_copy(&base, &scaled, &err), KVSIM_OK, "copy: %s", err.msg);
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&scaled, 2.0, &err), KVSIM_OK, "scale: %s", err.msg);
  char text[2048];
  snprintf(text, sizeof text, small_json, "");
  const char *sets[] = {"perf.step_time_scale=2"};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", sets, 1, &set, &err), KVSIM_OK, "%s", err.msg);
  kvsim_run_stats_t a, b, c;
  cr_assert_eq(kvsim_run(&base, NULL, NULL, &a, &err), KVSIM_OK, "run base: %s", err.msg);
  cr_assert_eq(kvsim_run(&scaled, NULL, NULL, &b, &err), KVSIM_OK, "run scaled: %s", err.msg);
  cr_assert_eq(kvsim_run(&set, NULL, NULL, &c, &err), KVSIM_OK, "run set: %s", err.msg);
  cr_assert_eq(b.steps, c.steps, "the typed override runs as --set does");
  cr_assert_eq(b.last_finish, c.last_finish, "same last finish");
  cr_assert_gt(b.last_finish, a.last_finish, "slower steps finish later (%lld vs %lld)",
               (long long)b.last_finish, (long long)a.last_finish);
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&scaled, 0, &err), KVSIM_EINVAL, "0 refused");
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&scaled, 1e3, &err), KVSIM_EINVAL, "1000 refused");
  kvsim_scenario_t bad;
  const char *badset[] = {"perf.step_time_scale=-1"};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", badset, 1, &bad, &err), KVSIM_EINVAL,
               "a negative scale is refused at parse");
  cr_assert(strstr(err.msg, "perf.step_time_scale") != NULL, "the error names the key: %s", err.msg);
  kvsim_scenario_fini(&base);
  kvsim_scenario_fini(&scaled);
  kvsim_scenario_fini(&set);
}

/* perf.prefill_time_scale multiplies only the prefill tokens' share of
 * each step: a run scaled so ends later than the nominal one and sooner
 * than one with every step at that scale; at 1 it is the nominal run. */
Test(engine, prefill_time_scale_scales_the_prefill_share_only) {
  kvsim_scenario_t base, pre, all, one, set;
  kvsim_err err = {0};
  cr_assert_eq(parse_small("", &base, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(kvsim_scenario_copy(&base, &pre, &err), KVSIM_OK, "copy: %s", err.msg);
  cr_assert_eq(kvsim_scenario_copy(&base, &all, &err), KVSIM_OK, "copy: %s", err.msg);
  cr_assert_eq(kvsim_scenario_copy(&base, &one, &err), KVSIM_OK, "copy: %s", err.msg);
  cr_assert_eq(kvsim_scenario_set_prefill_time_scale(&pre, 3.0, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&all, 3.0, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_band_edge(&one, &(kvsim_band_edge_t){1, 1}, &err), KVSIM_OK, "%s", err.msg);
  char text[2048];
  snprintf(text, sizeof text, small_json, "");
  const char *sets[] = {"perf.prefill_time_scale=3"};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", sets, 1, &set, &err), KVSIM_OK, "%s", err.msg);
  kvsim_run_stats_t a, p, s, o, q;
  cr_assert_eq(kvsim_run(&base, NULL, NULL, &a, &err), KVSIM_OK, "run base: %s", err.msg);
  cr_assert_eq(kvsim_run(&pre, NULL, NULL, &p, &err), KVSIM_OK, "run prefill: %s", err.msg);
  cr_assert_eq(kvsim_run(&all, NULL, NULL, &s, &err), KVSIM_OK, "run all: %s", err.msg);
  cr_assert_eq(kvsim_run(&one, NULL, NULL, &o, &err), KVSIM_OK, "run one: %s", err.msg);
  cr_assert_eq(kvsim_run(&set, NULL, NULL, &q, &err), KVSIM_OK, "run set: %s", err.msg);
  cr_assert_eq(o.last_finish, a.last_finish, "scales of 1 are the nominal run");
  cr_assert_eq(q.last_finish, p.last_finish, "--set runs as the typed override");
  cr_assert_gt(p.last_finish, a.last_finish, "slower prefill finishes later (%lld vs %lld)",
               (long long)p.last_finish, (long long)a.last_finish);
  cr_assert_lt(p.last_finish, s.last_finish, "but sooner than every step slower (%lld vs %lld)",
               (long long)p.last_finish, (long long)s.last_finish);
  cr_assert_eq(kvsim_scenario_set_prefill_time_scale(&pre, 0, &err), KVSIM_EINVAL, "0 refused");
  cr_assert(strstr(err.msg, "perf.prefill_time_scale") != NULL, "the error names the key: %s", err.msg);
  kvsim_scenario_t bad;
  const char *badset[] = {"perf.prefill_time_scale=200"};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", badset, 1, &bad, &err), KVSIM_EINVAL, "200 refused");
  cr_assert(strstr(err.msg, "prefill_time_scale") != NULL, "the error names the key: %s", err.msg);
  kvsim_scenario_fini(&base);
  kvsim_scenario_fini(&pre);
  kvsim_scenario_fini(&all);
  kvsim_scenario_fini(&one);
  kvsim_scenario_fini(&set);
}

/* engine.vllm_version: read into the plan, refused when unparseable or not
 * modelled for the profile's engine, naming the key and the releases. */
Test(engine, vllm_version_key_selects_a_modelled_release) {
  const char *fmt =
      "{ \"model\": \"llama-3.1-8b\", \"engine\": { \"profile\": \"%s\", \"vllm_version\": %s },"
      "  \"workload\": { \"synthetic\": { \"requests\": 1, \"arrival\": { \"process\": \"poisson\", \"rate\": 1 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 10 }, \"output_tokens\": { \"dist\": \"fixed\", \"value\": 10 } } } }";
  char text[1024];
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  snprintf(text, sizeof text, fmt, "vllm-v1", "\"0.10.1\"");
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(sc.plan.vllm_version, KVSIM_VLLM_VERSION(0, 10, 1), "read into the plan");
  kvsim_scenario_fini(&sc);
  const char *bad[][3] = {{"vllm-v1", "\"0.x\"", "engine.vllm_version: '0.x' is not a vLLM release"},
                          {"vllm-v1", "0.11", "vllm_version"},
                          {"vllm-v1", "\"0.7.3\"", "engine.vllm_version: 0.7.3 is not modelled for profile vllm-v1 (modelled: 0.8.0 to 0.20.x)"},
                          {"vllm-v0", "\"0.11.0\"", "modelled: 0.6.4 to 0.10.x"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(text, sizeof text, fmt, bad[i][0], bad[i][1]);
    int rc = kvsim_scenario_parse(text, "s.json", ".", NULL, 0, &sc, &err);
    cr_assert_lt(rc, 0, "case %zu must fail", i);
    cr_assert(strstr(err.msg, bad[i][2]) != NULL, "case %zu: '%s' should mention '%s'", i, err.msg,
              bad[i][2]);
  }
}

/* Regression: an explicit 0 (in the file or by --set) for these keys once
 * meant "the default" without a word (256 sequences, the profiled pool). */
Test(engine, an_explicit_zero_engine_count_is_an_error_naming_the_key) {
  const char *keys[] = {
      "max_model_len",           "block_size",           "max_num_seqs", "max_num_batched_tokens",
      "num_gpu_blocks_override", "kv_cache_memory_bytes"};
  for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
    for (int how = 0; how < 3; how++) {
      /* 0 in the file, 0 by --set, -3 by --set. */
      char extra[128] = "", set[128], want[160];
      if (how == 0)
        snprintf(extra, sizeof extra, ", \"engine\": { \"%s\": 0 }", keys[i]);
      snprintf(set, sizeof set, "engine.%s=%s", keys[i], how == 2 ? "-3" : "0");
      const char *sets[] = {set};
      char text[2048];
      snprintf(text, sizeof text,
               "{ \"model\": \"llama-3.2-1b\"%s, \"workload\": { \"synthetic\": { \"requests\": 2,"
               " \"arrival\": { \"process\": \"poisson\", \"rate\": 1 }, \"prompt_tokens\": 10,"
               " \"output_tokens\": 5 } } }",
               extra);
      kvsim_scenario_t sc;
      kvsim_err err = {0};
      int rc = kvsim_scenario_parse(text, "s.json", ".", how ? sets : NULL, how ? 1 : 0, &sc, &err);
      cr_assert_eq(rc, KVSIM_EINVAL, "%s (case %d) refused, rc %d", keys[i], how, rc);
      snprintf(want, sizeof want, "s.json: engine.%s: %s must be >= 1", keys[i],
               how == 2 ? "-3" : "0");
      cr_assert(strstr(err.msg, want), "case %d: '%s' should say '%s'", how, err.msg, want);
    }
  }
  /* null, like the key left out, keeps the default. */
  const char *text =
      "{ \"model\": \"llama-3.2-1b\", \"engine\": { \"num_gpu_blocks_override\": 100 },"
      " \"workload\": { \"synthetic\": { \"requests\": 2, \"arrival\": { \"process\": \"poisson\","
      " \"rate\": 1 }, \"prompt_tokens\": 10, \"output_tokens\": 5 } } }";
  const char *unset[] = {"engine.num_gpu_blocks_override=null", "engine.max_num_seqs=null"};
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", unset, 2, &sc, &err), KVSIM_OK,
               "null unsets: %s", err.msg);
  cr_assert_eq(sc.plan.num_gpu_blocks_override, 0, "the override is gone: the profiled pool");
  cr_assert_eq(sc.plan.max_num_seqs, 0, "max_num_seqs left to the plan's default");
  kvsim_scenario_fini(&sc);
}

/* The same rule for the profiles' own counts whose 0 meant "computed". */
Test(engine, an_explicit_zero_profile_count_is_an_error_naming_the_key) {
  const char *cases[][2] = {
      {"tgi", "max_input_tokens"},          {"tgi", "max_total_tokens"},
      {"tgi", "max_batch_prefill_tokens"},  {"tgi", "max_batch_total_tokens"},
      {"hf-transformers", "max_cache_len"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[2048], want[160];
    snprintf(text, sizeof text,
             "{ \"model\": \"llama-3.2-1b\", \"engine\": { \"profile\": \"%s\", \"%s\": 0 },"
             " \"workload\": { \"synthetic\": { \"requests\": 2, \"arrival\": { \"process\":"
             " \"poisson\", \"rate\": 1 }, \"prompt_tokens\": 10, \"output_tokens\": 5 } } }",
             cases[i][0], cases[i][1]);
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, &sc, &err), KVSIM_EINVAL,
                 "%s %s: 0 refused", cases[i][0], cases[i][1]);
    snprintf(want, sizeof want, "s.json: engine.%s: 0 is out of range [1,", cases[i][1]);
    cr_assert(strstr(err.msg, want), "'%s' should say '%s'", err.msg, want);
  }
}

/* A closed loop that ends by duration_s: its last clients leave with
 * nothing new to say, and the run, whose source last answered "blocked",
 * pulls after each finish and learns that the stream ended. Once it pulled
 * only on "something new" and sampled an empty engine for ever. */
Test(engine, a_closed_loop_ending_by_duration_ends_the_run, .timeout = 30) {
  const char *text =
      "{ \"name\": \"cl\", \"seed\": 3, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": "
      "\"l4\" },"
      "  \"engine\": { \"max_model_len\": 2048 },"
      "  \"workload\": { \"synthetic\": { \"duration_s\": 20,"
      "     \"arrival\": { \"process\": \"closed_loop\", \"clients\": 3, \"think_s\": 1 },"
      "     \"prompt_tokens\": 100, \"output_tokens\": 20 } } }";
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK,
               "scenario: %s", err.msg);
  capture_t c;
  memset(&c, 0, sizeof c);
  kvsim_sink_t sink = {&c, on_sample, on_request, NULL, NULL};
  kvsim_run_opts_t opts = {.check_invariants = true};
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_gt(st.requests_finished, 3, "the clients came back: %lld",
               (long long)st.requests_finished);
  cr_assert_eq(st.requests_finished, st.requests_arrived, "every arrival finished");
  cr_assert_lt(kvsim_time_to_s(st.last_finish), 25, "and the run ended near 20 s, not later");
  kvsim_scenario_fini(&sc);
  free(c.text);
}

/* One resolved configuration: parsing computes the scenario's memory plan
 * (its parameters' checks are the plan's) and every run of that
 * configuration takes it: resolving, a run handed it, a run of the
 * scenario alone, a study run. An override that changes the plan's inputs
 * computes a plan of its own. */
Test(engine, a_run_computes_the_memory_plan_once) {
  const char *text = "{ \"model\": \"llama-3.1-8b\", \"seed\": 7,"
                     "  \"workload\": { \"synthetic\": { \"requests\": 20, \"arrival\": { "
                     "\"process\": \"poisson\", \"rate\": 5 },"
                     "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 100 }, "
                     "\"output_tokens\": { \"dist\": \"fixed\", \"value\": 10 } } } }";
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  int64_t np = kvsim__plan_count();
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK, "parse: %s",
               err.msg);
  cr_assert_eq(kvsim__plan_count() - np, 1, "parsing computes the plan");
  kvsim_resolved_t res;
  int64_t n0 = kvsim__plan_count();
  cr_assert_eq(kvsim_scenario_resolve(&sc, &res, &err), KVSIM_OK, "resolve: %s", err.msg);
  cr_assert_eq(kvsim__plan_count() - n0, 0, "resolving takes the parsed plan");
  static kvsim_run_stats_t a, b;
  int64_t n1 = kvsim__plan_count();
  cr_assert_eq(kvsim_run_resolved(&sc, &res, NULL, NULL, &a, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(kvsim__plan_count() - n1, 0, "a run handed its configuration computes no plan");
  int64_t n2 = kvsim__plan_count();
  cr_assert_eq(kvsim_run(&sc, NULL, NULL, &b, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(kvsim__plan_count() - n2, 0, "nor a run of the scenario alone");
  cr_assert_eq(a.requests_finished, b.requests_finished,
               "the same run either way (%lld, %lld finished)", (long long)a.requests_finished,
               (long long)b.requests_finished);
  cr_assert_gt(a.requests_finished, 0, "the run served requests");
  cr_assert_eq(a.resolved.pool_blocks, b.resolved.pool_blocks, "the same pool either way");
  kvsim_summary_t s;
  int64_t n3 = kvsim__plan_count();
  cr_assert_eq(kvsim_study_run(&sc, NULL, &s, &err), KVSIM_OK, "study run: %s", err.msg);
  cr_assert_eq(kvsim__plan_count() - n3, 0, "nor a study run, got %lld",
               (long long)(kvsim__plan_count() - n3));
  /* An override of a plan input: that configuration's own plan, once. */
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&sc, 8, &err), KVSIM_OK, "%s", err.msg);
  int64_t n4 = kvsim__plan_count();
  cr_assert_eq(kvsim_scenario_resolve(&sc, &res, &err), KVSIM_OK, "resolve: %s", err.msg);
  cr_assert_eq(kvsim__plan_count() - n4, 1, "a changed configuration computes its plan");
  cr_assert_eq(res.plan.p.max_num_seqs, 8, "from the override: %lld",
               (long long)res.plan.p.max_num_seqs);
  kvsim_scenario_fini(&sc);
}

/* `kvsim run` with its default flags (the band's two edges, the advice
 * verified): one plan for the scenario, computed when it is parsed, taken
 * by the nominal run and both edges; one for each advised change. */
Test(engine, kvsim_run_computes_one_plan_and_one_per_advised_change) {
  const char *text =
      "{ \"model\": \"llama-3.1-8b\", \"seed\": 7, \"hardware\": {\"gpu\": \"l4\"},"
      "  \"engine\": {\"max_num_seqs\": 4, \"max_model_len\": 4096},"
      "  \"slo\": {\"ttft_p99_s\": 0.5},"
      "  \"workload\": { \"synthetic\": { \"requests\": 60, \"arrival\": { "
      "\"process\": \"poisson\", \"rate\": 20 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 500 }, "
      "\"output_tokens\": { \"dist\": \"fixed\", \"value\": 50 } } } }";
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  int64_t n0 = kvsim__plan_count();
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK, "parse: %s",
               err.msg);
  static kvsim_summary_t s;
  const kvsim_study_run_opts_t opts = {NULL, false, 0};
  cr_assert_eq(kvsim_study_run_verified(&sc, &opts, true, 1, &s, &err), KVSIM_OK, "run: %s",
               err.msg);
  int64_t plans = kvsim__plan_count() - n0;
  /* The distinct changes advised (each run once, advice.c). */
  int changes = 0;
  for (int i = 0; i < s.ndiagnosis; i++)
    for (int k = 0; k < s.diagnosis[i].nadvice; k++) {
      const kvsim_advice_t *x = &s.diagnosis[i].advice[k];
      bool seen = false;
      for (int j = 0; j <= i && !seen; j++)
        for (int l = 0; l < (j < i ? s.diagnosis[j].nadvice : k) && !seen; l++) {
          const kvsim_advice_t *y = &s.diagnosis[j].advice[l];
          seen = x->kind == y->kind && x->value == y->value && !strcmp(x->gpu, y->gpu);
        }
      changes += !seen;
      cr_assert(x->tried, "advice '%s' was run", x->label);
    }
  cr_assert_geq(changes, 1, "the scenario is diagnosed with some advice");
  cr_assert_eq(plans, 1 + changes, "one plan for the run (parsed) and its edges, one per change: %lld "
               "plans, %d changes", (long long)plans, changes);
  kvsim_scenario_fini(&sc);
}

/* sequence_steps counts a row per request computing in a step: with no
 * preemption and a budget no prompt needs to be chunked for, a row per
 * generated token (the prefill samples the first), whether the rows were
 * listed or advanced implicitly. */
Test(engine, sequence_steps_count_a_row_per_generated_token_without_chunks) {
  const char *text =
      "{ \"name\": \"t\", \"seed\": 7, \"model\": \"llama-3.1-8b\", \"hardware\": { \"gpu\": \"h100-sxm\" },"
      "  \"engine\": { \"max_model_len\": 4096, \"num_gpu_blocks_override\": 20000, \"max_num_seqs\": 64,"
      "    \"max_num_batched_tokens\": 200000 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 200,"
      "     \"arrival\": { \"process\": \"poisson\", \"rate\": 50 },"
      "     \"prompt_tokens\": { \"dist\": \"uniform\", \"min\": 100, \"max\": 1500 },"
      "     \"output_tokens\": { \"dist\": \"uniform\", \"min\": 1, \"max\": 400 } } } }";
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, NULL, NULL, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(st.preemptions, 0, "the pool holds every request");
  cr_assert_gt(st.sequence_steps, 2 * st.steps, "steps batch several requests");
  cr_assert_eq(st.sequence_steps, st.generation_tokens, "a row per generated token");
  kvsim_scenario_fini(&sc);
}
