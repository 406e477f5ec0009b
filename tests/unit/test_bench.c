/* Benchmark results as measured runs (fidelity/bench_*.c, the aiperf
 * format): each hand-made fixture of tests/golden/fidelity/ read into the
 * same table, what is stated and how the benchmark drove its load, the
 * replayed scenario, and errors that name the file and line. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/fidelity.h"

#ifndef KVSIM_SOURCE_DIR
#define KVSIM_SOURCE_DIR "."
#endif
#define FIX KVSIM_SOURCE_DIR "/tests/golden/fidelity/"

static bool near(double a, double b, double tol) { return fabs(a - b) <= tol; }

static char tmp[512];

static void remove_tmp(void) {
  if (tmp[0])
    unlink(tmp);
}

TestSuite(bench, .fini = remove_tmp);

static const char *write_tmp(const char *text) {
  const char *dir = getenv("TMPDIR");
  snprintf(tmp, sizeof tmp, "%s/kvsim_bench_%ld.json", dir && *dir ? dir : ".", (long)getpid());
  FILE *f = fopen(tmp, "w");
  cr_assert(f, "cannot create %s", tmp);
  fputs(text, f);
  fclose(f);
  return tmp;
}

Test(bench, vllm_aggregates_are_the_measured_side) {
  kvsim_fid_measured_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_measured_load(FIX "vllm-aggregates.json", NULL, &m, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(m.fmt, KVSIM_FID_FMT_VLLM_BENCH, "detected as vLLM's, got %s", kvsim_fidelity_fmt_name(m.fmt));
  cr_assert(m.aggregates_only && !m.has_arrivals, "aggregates only, no send times");
  cr_assert(near(m.stated[KVSIM_FID_TTFT].mean, 0.080, 1e-12) && near(m.stated[KVSIM_FID_TTFT].p50, 0.070, 1e-12) &&
                near(m.stated[KVSIM_FID_TTFT].p99, 0.130, 1e-12),
            "TTFT mean / median / p99 in seconds");
  cr_assert(isnan(m.stated[KVSIM_FID_TTFT].p90), "p90 not stated: NAN, not 0");
  cr_assert(near(m.stated[KVSIM_FID_E2E].mean, 0.836, 1e-12), "E2E from mean_e2el_ms");
  cr_assert(near(m.stated[KVSIM_FID_TPOT].p99, 0.015, 1e-12), "TPOT p99");
  cr_assert_eq(m.stated_n, 6, "completed requests");
  cr_assert(near(m.stated_makespan, 2.5, 1e-12) && near(m.stated_tput, 384 / 2.5, 1e-9), "duration, output tok/s");
  cr_assert(m.drive.known && near(m.drive.rate, 4, 0) && near(m.drive.burstiness, 0.5, 0), "rate 4, burstiness 0.5");
  cr_assert_eq(m.drive.requests, 8, "sent: completed + failed");
  cr_assert_eq(m.drive.max_concurrency, 0, "max_concurrency null: no cap");
  cr_assert(near(m.drive.mean_prompt, 512, 1e-12) && near(m.drive.mean_output, 64, 1e-12), "mean lengths");
  cr_assert(strstr(m.not_compared, "ITL"), "says what is not compared: %s", m.not_compared);
  kvsim_fidelity_measured_fini(&m);
  /* The per-request reader refuses it, saying why. */
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt;
  cr_assert_eq(kvsim_fidelity_read_measured(FIX "vllm-aggregates.json", &l, &fmt, &err), KVSIM_EINVAL, "refused");
  cr_assert(strstr(err.msg, "aggregates only"), "says why: %s", err.msg);
  kvsim_fidelity_lat_fini(&l);
}

Test(bench, vllm_aggregates_replay_gamma_arrivals_in_a_synthetic_scenario) {
  kvsim_fid_measured_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_measured_load(FIX "vllm-aggregates.json", NULL, &m, &err), KVSIM_OK, "%s",
               err.msg);
  kvsim_scenario_t sc;
  const char *sets[] = {"seed=9"};
  cr_assert_eq(kvsim_fidelity_measured_scenario(&m, FIX "scenario-synthetic.json", sets, 1, &sc, &err), KVSIM_OK,
               "%s", err.msg);
  cJSON *wl = kvsim_workload_given_json(sc.workload);
  const cJSON *syn = cJSON_GetObjectItemCaseSensitive(wl, "synthetic");
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(syn, "arrival");
  const cJSON *proc = cJSON_GetObjectItemCaseSensitive(arr, "process");
  cr_assert(cJSON_IsString(proc) && !strcmp(proc->valuestring, "gamma"), "Gamma gaps for burstiness 0.5");
  cr_assert(near(cJSON_GetObjectItemCaseSensitive(arr, "rate")->valuedouble, 4, 0), "at the stated rate");
  cr_assert(near(cJSON_GetObjectItemCaseSensitive(arr, "cv")->valuedouble, 1 / sqrt(0.5), 1e-12),
            "cv 1 / sqrt(shape)");
  cr_assert_eq((int)cJSON_GetObjectItemCaseSensitive(syn, "requests")->valuedouble, 8, "the requests sent");
  cr_assert_eq(sc.seed, 9, "the user's sets still apply");
  cr_assert(strstr(m.replay, "8 requests at 4 req/s"), "says what it replayed: %s", m.replay);
  cJSON_Delete(wl);
  kvsim_scenario_fini(&sc);
  /* A trace scenario keeps its trace, and says so. */
  cr_assert_eq(kvsim_fidelity_measured_scenario(&m, FIX "scenario.json", NULL, 0, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert(strstr(m.replay, "the scenario's trace"), "trace kept: %s", m.replay);
  kvsim_scenario_fini(&sc);
  kvsim_fidelity_measured_fini(&m);
}

Test(bench, a_ramp_up_is_not_replayed) {
  const char *p = write_tmp("{\"request_rate\": 8, \"burstiness\": 1, \"ramp_up_strategy\": \"linear\", "
                            "\"ramp_up_start_rps\": 1, \"ramp_up_end_rps\": 8, \"completed\": 4, "
                            "\"mean_ttft_ms\": 50}");
  kvsim_fid_measured_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_measured_load(p, NULL, &m, &err), KVSIM_OK, "%s", err.msg);
  cr_assert(!m.drive.known, "a rate that moves is no process to replay");
  cr_assert(strstr(m.not_compared, "ramp-up"), "said: %s", m.not_compared);
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_fidelity_measured_scenario(&m, FIX "scenario-synthetic.json", NULL, 0, &sc, &err), KVSIM_OK,
               "%s", err.msg);
  cJSON *wl = kvsim_workload_given_json(sc.workload);
  const cJSON *arr =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(wl, "synthetic"), "arrival");
  cr_assert_eq(cJSON_GetObjectItemCaseSensitive(arr, "rate")->valuedouble, 1.0, "the scenario's own arrivals");
  cJSON_Delete(wl);
  kvsim_scenario_fini(&sc);
  kvsim_fidelity_measured_fini(&m);
}

Test(bench, sglang_appended_runs_read_the_last) {
  kvsim_fid_measured_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_measured_load(FIX "sglang-bench.jsonl", NULL, &m, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(m.fmt, KVSIM_FID_FMT_SGLANG_BENCH, "detected as SGLang's, got %s", kvsim_fidelity_fmt_name(m.fmt));
  cr_assert(m.run == 2 && m.runs == 2, "run %d of %d", m.run, m.runs);
  cr_assert(isinf(m.drive.rate), "Python's bare Infinity is an infinite rate");
  cr_assert_eq(m.drive.max_concurrency, 4, "concurrency cap");
  cr_assert(near(m.stated[KVSIM_FID_E2E].mean, 0.740, 1e-12), "mean_e2e_latency_ms of the last run");
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_fidelity_measured_scenario(&m, FIX "scenario-synthetic.json", NULL, 0, &sc, &err), KVSIM_OK,
               "%s", err.msg);
  cJSON *wl = kvsim_workload_given_json(sc.workload);
  const cJSON *arr =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(wl, "synthetic"), "arrival");
  cr_assert(!strcmp(cJSON_GetObjectItemCaseSensitive(arr, "process")->valuestring, "closed_loop") &&
                cJSON_GetObjectItemCaseSensitive(arr, "clients")->valuedouble == 4,
            "inf rate with a cap: 4 closed-loop clients");
  cJSON_Delete(wl);
  kvsim_scenario_fini(&sc);
  kvsim_fidelity_measured_fini(&m);
}

Test(bench, aiperf_records_into_the_per_request_table) {
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_read_measured(FIX "aiperf.jsonl", &l, &fmt, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(fmt, KVSIM_FID_FMT_AIPERF, "detected as aiperf's");
  cr_assert_eq(l.finished, 3, "the cancelled record is skipped, got %lld", (long long)l.finished);
  cr_assert(!l.has_queue, "a client knows no queueing delay");
  cr_assert(near(kvsim_dist_mean(&l.ttft), (0.05 + 0.1 + 0.03) / 3, 1e-9), "TTFT in ns, ms: mean %g",
            kvsim_dist_mean(&l.ttft));
  cr_assert(near(kvsim_dist_mean(&l.tpot), 0.01, 1e-9), "TPOT (latency - TTFT) / (out - 1): %g",
            kvsim_dist_mean(&l.tpot));
  cr_assert(near(l.t_last - l.t_first, 0.69, 1e-9), "makespan from the earliest start: %g", l.t_last - l.t_first);
  cr_assert_eq(l.prompt_tokens, 512 + 1024 + 256, "input_sequence_length summed");
  kvsim_fidelity_lat_fini(&l);
}

Test(bench, bad_inputs_name_file_line_and_field) {
  kvsim_err err = {0};
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"{\"metadata\": {\"request_start_ns\": 5}, \"metrics\": {\"input_sequence_length\": {\"value\": 5, "
       "\"unit\": \"tokens\"}, \"output_sequence_length\": {\"value\": 2, \"unit\": \"tokens\"}, "
       "\"time_to_first_token\": {\"value\": 1, \"unit\": \"fortnights\"}, \"request_latency\": {\"value\": 2, "
       "\"unit\": \"ms\"}}}\n",
       ":1: metric 'time_to_first_token': unit 'fortnights'"},
      {"{\"metadata\": {}, \"metrics\": {}}\n", ":1: metadata 'request_start_ns' missing"},
      {"{\"request_rate\": \"fast\", \"mean_ttft_ms\": 5, \"completed\": 1}", "\"request_rate\": not a number"},
      {"{\"mean_e2e_latency_ms\": 5, \"completed\": 0}", "no finished request"},
      {"{\"backend\": \"x\"}\n{\"mean_ttft_ms\": -1, \"completed\": 2}\n", ":2: \"mean_ttft_ms\": not a number"},
      {"{\"date\": 1}", "a JSON object of no benchmark kvsim reads"},
      {"{\"ttfts\": [0.1], \"burstiness\": 1}", "neither per-request lists"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *p = write_tmp(cases[i].text);
    kvsim_fid_measured_t m;
    int rc = kvsim_fidelity_measured_load(p, NULL, &m, &err);
    cr_assert_eq(rc, KVSIM_EINVAL, "case %zu refused, got %d", i, rc);
    cr_assert(strstr(err.msg, p) && strstr(err.msg, cases[i].want), "case %zu names it: %s", i, err.msg);
    kvsim_fidelity_measured_fini(&m);
  }
}
