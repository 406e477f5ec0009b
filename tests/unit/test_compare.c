/* The study room's compare and the plan search in the user's units: study
 * parsing and its errors, one candidate evaluated in memory (goodput,
 * replicas and their ranges, cost, the no-fit row), the table and answer,
 * the same rows with any --jobs; and a trace's rate search answering in
 * req/s with its factor, the replicas search in GPUs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/catalog.h"
#include "tmpdir.h"
#include "kvsim/report.h"
#include "kvsim/study.h"

#define SCENARIO                                                                                   \
  "{ \"name\": \"tiny\", \"seed\": 2, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" }," \
  "  \"engine\": { \"max_model_len\": 2048, \"max_num_seqs\": 16 },"                               \
  "  \"workload\": { \"synthetic\": { \"requests\": 60, \"arrival\": { \"process\": \"poisson\", \"rate\": 5 }," \
  "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 400 },"                                  \
  "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 40 } } } }"

static int study(const char *rest, kvsim_compare_t *c, kvsim_err *err) {
  char text[8192];
  snprintf(text, sizeof text, "{ \"name\": \"t\", \"scenario\": " SCENARIO ", %s }", rest);
  return kvsim_compare_parse(text, "t.json", NULL, c, err);
}

#define GOOD                                                                                       \
  "\"slo\": { \"ttft_p99_s\": 0.5 }, \"target_rate\": 12, \"cost_per_gpu_hour\": { \"l4\": 0.5 }," \
  " \"candidates\": [ { \"label\": \"L4\" },"                                                      \
  " { \"label\": \"L4 TP2\", \"set\": { \"hardware.tensor_parallel_size\": 2 } },"                 \
  " { \"label\": \"starved\", \"set\": { \"engine.gpu_memory_utilization\": 0.1 } } ]"

Test(compare, a_bad_study_is_one_error_naming_what) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study("\"target_rate\": 1, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"label\": \"a\"}], \"grid\": 1",
                     &c, &err), KVSIM_EINVAL, "unknown key");
  cr_assert(strstr(err.msg, "t.json: grid: unknown key"), "names the key: %s", err.msg);
  cr_assert_eq(study("\"target_rate\": 1, \"slo\": {\"ttft_p99\": 1}, \"candidates\": [{\"label\": \"a\"}]",
                     &c, &err), KVSIM_EINVAL, "unknown slo key");
  cr_assert(strstr(err.msg, "t.json: slo.ttft_p99: unknown key"), "names the slo key: %s", err.msg);
  cr_assert_lt(study("\"target_rate\": 1, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"label\": \"a\", \"set\": {\"hardware.gpu\": \"nope\"}}]",
                     &c, &err), 0, "a candidate that cannot build");
  cr_assert(strstr(err.msg, "candidate 'a'"), "names the candidate: %s", err.msg);
  cr_assert_eq(study("\"target_rate\": 1, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"label\": \"a\"}],"
                     " \"cost_per_gpu_hour\": {\"l4\": \"cheap\"}", &c, &err), KVSIM_EINVAL, "a price that is not a number");
  cr_assert(strstr(err.msg, "cost_per_gpu_hour.l4"), "names the GPU: %s", err.msg);
  /* Regression: 1e12 said "expected > 0 (got 1e+12)", not the range it is past. */
  const char *rates[][2] = {{"1e12", "t.json: target_rate: 1e+12 req/s is outside (0, 1e9]"},
                            {"0", "t.json: target_rate: 0 req/s is outside (0, 1e9]"}};
  for (int i = 0; i < 2; i++) {
    char text[256];
    snprintf(text, sizeof text,
             "\"target_rate\": %s, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"label\": \"a\"}]",
             rates[i][0]);
    cr_assert_eq(study(text, &c, &err), KVSIM_EINVAL, "target_rate %s refused", rates[i][0]);
    cr_assert(strstr(err.msg, rates[i][1]), "names the range: %s", err.msg);
  }
}

/* Regression: a scenario (or a sweep) given to compare was refused by its
 * first key ("seed: unknown key"), and a study without target_rate was
 * "target_rate: expected a rate in req/s > 0 (got 0)", a 0 nobody wrote. */
Test(compare, a_scenario_or_sweep_is_named_and_a_missing_rate_is_missing) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_compare_parse(SCENARIO, "s.json", NULL, &c, &err), KVSIM_EINVAL,
               "a scenario is not a study");
  cr_assert_str_eq(err.msg,
                   "s.json: this is a scenario file, not a study (it has `model`): run it with "
                   "kvsim run, or name it as a study's \"scenario\"",
                   "says what it is: %s", err.msg);
  cr_assert_eq(kvsim_compare_parse("{ \"scenario\": \"s.json\", \"grid\": {} }", "w.json", NULL,
                                   &c, &err),
               KVSIM_EINVAL, "a sweep is not a study");
  cr_assert(strstr(err.msg, "w.json: this is a sweep file, not a study (it has `grid`)"),
            "says what it is: %s", err.msg);
  cr_assert_eq(study("\"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"label\": \"a\"}]", &c,
                     &err),
               KVSIM_EINVAL, "no target_rate");
  cr_assert(strstr(err.msg, "t.json: missing key 'target_rate'") && !strstr(err.msg, "got 0"),
            "says it is missing: %s", err.msg);
  cr_assert_eq(study("\"target_rate\": 0, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": "
                     "[{\"label\": \"a\"}]",
                     &c, &err),
               KVSIM_EINVAL, "a written 0");
  cr_assert(strstr(err.msg, "target_rate: 0 req/s"), "a 0 that was written is shown: %s", err.msg);
}

/* Regression: the study's SLO stopped below 1e9 s, with words of its own,
 * while the scenario's takes up to the simulator's time limit. */
Test(compare, a_study_slo_has_the_scenario_bounds_and_words) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  const char *cands = ", \"target_rate\": 1, \"candidates\": [{\"label\": \"a\"}]";
  char rest[512];
  snprintf(rest, sizeof rest, "\"slo\": {\"tpot_p99_s\": 9e9}%s", cands);
  cr_assert_eq(study(rest, &c, &err), KVSIM_OK, "the time limit itself is a target: %s", err.msg);
  cr_assert_float_eq(c.slo_tpot_p99_s, 9e9, 1, "read");
  kvsim_compare_fini(&c);
  snprintf(rest, sizeof rest, "\"slo\": {\"tpot_p99_s\": 1e300}%s", cands);
  cr_assert_eq(study(rest, &c, &err), KVSIM_EINVAL, "past the limit refused");
  cr_assert_str_eq(err.msg, "t.json: slo.tpot_p99_s: 1e+300 is outside (0, 9e+09]");
  snprintf(rest, sizeof rest, "\"slo\": {\"ttft_p99_s\": -1}%s", cands);
  cr_assert_eq(study(rest, &c, &err), KVSIM_EINVAL, "below 0 refused");
  cr_assert_str_eq(err.msg,
                   "t.json: slo.ttft_p99_s: -1 must be > 0 (leave the key out for no target)");
}

/* Regression: "label": "" was refused as "missing key 'label'", which sent
 * the user looking for a key that is there. */
Test(compare, an_empty_label_is_said_to_be_empty_not_missing) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  const char *const empty[] = {"\"\"", "\"  \"", "\"\\t\""};
  for (int k = 0; k < 3; k++) {
    char rest[512];
    snprintf(
        rest, sizeof rest,
        "\"target_rate\": 1, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"label\": \"a\"}, "
        "{\"label\": %s}]",
        empty[k]);
    cr_assert_eq(study(rest, &c, &err), KVSIM_EINVAL, "label %s refused", empty[k]);
    cr_assert(strstr(err.msg, "t.json: candidates[1].label: is empty"),
              "label %s: says it is empty: %s", empty[k], err.msg);
    cr_assert_null(strstr(err.msg, "missing"), "label %s: not 'missing': %s", empty[k], err.msg);
  }
  cr_assert_eq(
      study("\"target_rate\": 1, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"set\": {}}]", &c,
            &err),
      KVSIM_EINVAL, "no label refused");
  cr_assert(strstr(err.msg, "t.json: candidates[0]: missing key 'label'"),
            "without one it is missing: %s", err.msg);
  cr_assert_eq(
      study(
          "\"target_rate\": 1, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"label\": \" a\"}]",
          &c, &err),
      KVSIM_OK, "a label with a space around a name is one: %s", err.msg);
  kvsim_compare_fini(&c);
}

Test(compare, a_study_parses_its_candidates_at_the_target_rate) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study(GOOD, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(c.ncandidates, 3, "three candidates");
  cr_assert_str_eq(c.cand[1].label, "L4 TP2", "labels kept in order");
  cr_assert_float_eq(c.slo_ttft_p99_s, 0.5, 1e-12, "SLO read");
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_compare_scenario(&c, 1, &sc, &err), KVSIM_OK, "candidate 1: %s", err.msg);
  cr_assert_eq(sc.plan.tp, 2, "its set applied");
  double r = 0;
  cr_assert_eq(kvsim_workload_mean_rate(sc.workload, &r, &err), KVSIM_OK, "rate");
  cr_assert_float_eq(r, 12, 1e-12, "every candidate runs at the target rate");
  kvsim_scenario_fini(&sc);
  kvsim_compare_fini(&c);
}

Test(compare, a_candidate_has_goodput_replicas_ranges_and_cost) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study(GOOD, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_compare_row_t *r = malloc(sizeof *r);
  cr_assert_eq(kvsim_compare_candidate(&c, 0, 0.05, r, &err), KVSIM_OK, "candidate 0");
  cr_assert_eq(r->rc, KVSIM_OK, "runs: %s", r->error);
  cr_assert(r->goodput > 0, "a goodput (%g)", r->goodput);
  cr_assert(r->goodput_range[0] <= r->goodput && r->goodput <= r->goodput_range[1],
            "the goodput %g within its band range [%g, %g]", r->goodput, r->goodput_range[0],
            r->goodput_range[1]);
  cr_assert(r->goodput_range[0] < r->goodput_range[1], "the band moves the answer");
  cr_assert(r->replicas >= 1 && r->replicas == ceil(r->replicas), "whole replicas (%g)", r->replicas);
  cr_assert(r->ttft_p99 <= 0.5, "the target run meets the SLO (%g)", r->ttft_p99);
  cr_assert(r->ttft_p99_range[0] <= r->ttft_p99 && r->ttft_p99 <= r->ttft_p99_range[1],
            "TTFT within its range");
  cr_assert_float_eq(r->cost_per_gpu_hour, 0.5, 1e-12, "the study's price");
  cr_assert_str_eq(r->cost_source, "study", "says where the price is from");
  cr_assert_float_eq(r->cost_per_hour, 0.5 * r->replicas, 1e-9, "replicas x GPUs x price");
  cr_assert_float_eq(r->cost_per_mtok, r->cost_per_hour / (r->output_tokens_per_s * 3600) * 1e6,
                     1e-9, "per million output tokens");
  cr_assert_eq(r->nsweep, KVSIM_COMPARE_SWEEP, "the plot's sweep");
  cr_assert(strstr(r->plan_text, "GPU KV cache size:"), "the plan in the engine's words");
  cr_assert_str_eq(kvsim_cal_status_name(r->cal_status), "kernels-borrowed", "L4's status: the L40S's tables");

  cr_assert_eq(kvsim_compare_candidate(&c, 1, 0.05, r, &err), KVSIM_OK, "candidate 1");
  cr_assert_eq(r->gpus_per_replica, 2, "TP2: two GPUs a replica");

  cr_assert_eq(kvsim_compare_candidate(&c, 2, 0.05, r, &err), KVSIM_OK, "a no-fit candidate is a row");
  cr_assert_eq(r->rc, KVSIM_ENOFIT, "does not fit");
  cr_assert(strstr(r->error, "To fit: gpu_memory_utilization"), "the change that fits: %s", r->error);
  cr_assert(isnan(r->goodput) && isnan(r->replicas), "no figures for it");
  free(r);
  kvsim_compare_fini(&c);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open %s", path);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strdup(buf);
}

Test(compare, rows_tables_and_report_do_not_depend_on_jobs) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study(GOOD, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  char dir[2][256];
  char *csv[2], *md[2];
  for (int k = 0; k < 2; k++) {
    snprintf(dir[k], sizeof dir[k], "/tmp/kvsim_cmp_%ld_%d", (long)getpid(), k);
    kvsim_compare_opts_t o = {dir[k], k + 1, 0.05, NULL, "kvsim compare t.json"};
    kvsim_compare_result_t res;
    cr_assert_eq(kvsim_compare_run(&c, &o, &res, &err), KVSIM_OK, "jobs %d: %s", k + 1, err.msg);
    cr_assert_eq(res.n, 3, "three rows");
    cr_assert_eq(res.no_fit, 1, "one does not fit");
    cr_assert(strstr(res.answer, "starved does not fit"), "the answer says so: %s", res.answer);
    cr_assert(strstr(res.answer, "meets 12 req/s at p99 TTFT"), "the answer: %s", res.answer);
    char p[300];
    snprintf(p, sizeof p, "%s/compare.csv", dir[k]);
    csv[k] = slurp(p);
    snprintf(p, sizeof p, "%s/REPORT.md", dir[k]);
    md[k] = slurp(p);
    kvsim_compare_result_fini(&res);
    static const char *const files[] = {"compare.csv",      "compare_sweep.csv", "REPORT.md",
                                        "compare_ttft.png", "compare_tpot.png",  "compare_kv.png",
                                        "compare_goodput_per_dollar.png"};
    for (int f = 0; f < 7; f++) {
      snprintf(p, sizeof p, "%s/%s", dir[k], files[f]);
      remove(p);
    }
    rmdir(dir[k]);
  }
  cr_assert_str_eq(csv[0], csv[1], "compare.csv the same with --jobs 1 and 2");
  cr_assert_str_eq(md[0], md[1], "REPORT.md the same with --jobs 1 and 2");
  int lines = 0;
  for (const char *q = csv[0]; *q; q++)
    lines += *q == '\n';
  cr_assert_eq(lines, 4, "a header and one row per candidate");
  cr_assert(strstr(md[0], "| starved | l4 | 1 x 1 | 0.10 | auto | **no** |"), "the no-fit row in the table");
  cr_assert(strstr(md[0], "![p99 TTFT against offered rate](compare_ttft.png)"), "relative plot links");
  cr_assert(strstr(md[0], "- Reproduce: `kvsim compare t.json`"), "the command");
  for (int k = 0; k < 2; k++) {
    free(csv[k]);
    free(md[k]);
  }
  kvsim_compare_fini(&c);
}

/* Regression: a label with a newline or tab broke its row in REPORT.md
 * and the terminal table; a control character is refused by its key. */
Test(compare, a_label_with_a_control_character_is_refused) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  const char *const bad[] = {"\"a\\nb|c\"", "\"a\\tb\"", "\"a\\u007f\""};
  const char *const want[] = {"t.json: candidates[1].label: control character 0x0a at byte 1",
                              "t.json: candidates[1].label: control character 0x09 at byte 1",
                              "t.json: candidates[1].label: control character 0x7f at byte 1"};
  for (int k = 0; k < 3; k++) {
    char rest[512];
    snprintf(
        rest, sizeof rest,
        "\"target_rate\": 1, \"slo\": {\"ttft_p99_s\": 1}, \"candidates\": [{\"label\": \"a\"}, "
        "{\"label\": %s}]",
        bad[k]);
    cr_assert_eq(study(rest, &c, &err), KVSIM_EINVAL, "label %s refused", bad[k]);
    cr_assert(strstr(err.msg, want[k]), "label %s: names the key and the byte: %s", bad[k],
              err.msg);
  }
}

/* A '|' in a label is escaped in REPORT.md's table, so its row keeps its
 * cells (the study's own name for a candidate, kept as given elsewhere). */
Test(compare, a_pipe_in_a_label_stays_one_cell_of_the_report) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(
      study("\"slo\": { \"ttft_p99_s\": 0.5 }, \"target_rate\": 12, \"candidates\": "
            "[{ \"label\": \"a|b\", \"set\": { \"engine.gpu_memory_utilization\": 0.1 } }]",
            &c, &err),
      KVSIM_OK, "a '|' is a label's character: %s", err.msg);
  char dir[256], p[300];
  snprintf(dir, sizeof dir, "/tmp/kvsim_cmp_pipe_%ld", (long)getpid());
  kvsim_compare_opts_t o = {dir, 1, 0.05, NULL, "kvsim compare t.json"};
  kvsim_compare_result_t res;
  cr_assert_eq(kvsim_compare_run(&c, &o, &res, &err), KVSIM_OK, "the compare runs: %s", err.msg);
  snprintf(p, sizeof p, "%s/REPORT.md", dir);
  char *md = slurp(p);
  cr_assert(strstr(md, "| a\\|b | l4 | 1 x 1 |"), "the label's '|' escaped in its cell: %s", md);
  cr_assert_null(strstr(md, "| a|b |"), "no bare '|' splits the cell");
  free(md);
  kvsim_compare_result_fini(&res);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0, "clean up");
  kvsim_compare_fini(&c);
}

/* Regression: a compare that could not write REPORT.md left compare.csv and
 * compare_sweep.csv behind, a table without its page (and over an older
 * compare's). Now none of its files is put in place. */
Test(compare, a_compare_that_cannot_write_one_file_leaves_none_of_them) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study(GOOD, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  char dir[256], p[300], cmd[400];
  snprintf(dir, sizeof dir, "/tmp/kvsim_cmp_fail_%ld", (long)getpid());
  snprintf(p, sizeof p, "%s/REPORT.md", dir);
  cr_assert_eq(kvsim_report_mkdirs(p, &err), KVSIM_OK, "a folder where REPORT.md goes: %s",
               err.msg);
  snprintf(p, sizeof p, "%s/compare.csv", dir);
  FILE *f = fopen(p, "w");
  cr_assert_not_null(f, "an older compare.csv");
  fputs("old\n", f);
  fclose(f);
  kvsim_compare_opts_t o = {dir, 1, 0.05, NULL, "kvsim compare t.json"};
  kvsim_compare_result_t res;
  cr_assert_eq(kvsim_compare_run(&c, &o, &res, &err), KVSIM_EIO, "the write fails: %s", err.msg);
  cr_assert(strstr(err.msg, "/REPORT.md: write failed: Is a directory"), "names the file: %s",
            err.msg);
  char *old = slurp(p);
  cr_assert_str_eq(old, "old\n", "the older compare.csv stays as it was");
  free(old);
  snprintf(cmd, sizeof cmd, "test \"$(ls -A '%s' | tr '\\n' ' ')\" = 'REPORT.md compare.csv '",
           dir);
  cr_assert_eq(system(cmd), 0, "no compare_sweep.csv and no temporary file left");
  kvsim_compare_result_fini(&res);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0, "clean up");
  kvsim_compare_fini(&c);
}

/* ---- plan in the user's units ------------------------------------------- */

Test(compare, a_trace_rate_search_answers_in_req_per_s_with_the_factor) {
  char trace[256];
  snprintf(trace, sizeof trace, "/tmp/kvsim_cmp_trace_%ld.csv", (long)getpid());
  FILE *f = fopen(trace, "w");
  cr_assert(f, "trace file");
  fputs("arrival_s,prompt_tokens,output_tokens\n", f);
  for (int i = 0; i < 80; i++) /* 80 rows over 39.5 s: 2.025... req/s */
    fprintf(f, "%.1f,300,30\n", i * 0.5);
  fclose(f);
  char text[2048];
  snprintf(text, sizeof text,
           "{ \"name\": \"tr\", \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\", "
           "\"tensor_parallel_size\": 2 }, \"engine\": { \"max_model_len\": 2048 }, "
           "\"workload\": { \"trace\": \"%s\" } }", trace);
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "tr.json", "/tmp", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  static kvsim_search_t se;
  se.base = &sc;
  se.kind = KVSIM_SEARCH_RATE;
  se.tolerance = 0.05;
  se.targets[0] = (kvsim_slo_target_t){KVSIM_METRIC_TTFT, KVSIM_STAT_P99, 0.2};
  se.ntargets = 1;
  cr_assert_eq(kvsim_search_run(&se, &err), KVSIM_OK, "search: %s", err.msg);
  cr_assert_str_eq(se.unit, "req/s", "answers in req/s");
  cr_assert_str_eq(se.key, "workload.rate", "varies workload.rate");
  cr_assert_float_eq(se.base_value, 80 / 39.5, 1e-9, "the trace's own rate");
  cr_assert_float_eq(se.best, se.base_value * se.factor, 1e-9, "value = factor x the trace's rate");
  cr_assert(!isnan(se.range[0]) && se.range[0] <= se.best && se.best <= se.range[1],
            "the answer within its range [%g, %g] (%g)", se.range[0], se.range[1], se.best);
  cr_assert(se.range_points > 0, "the range took simulations of its own");
  char sum[1024];
  kvsim_search_summary(&se, "ttft_p99=0.2s", sum, sizeof sum);
  cr_assert(strstr(sum, "req/s (") && strstr(sum, "x the scenario's 2.025 req/s"), "summary: %s", sum);

  se.kind = KVSIM_SEARCH_REPLICAS;
  se.targets[0].limit_s = 10;
  cr_assert_eq(kvsim_search_run(&se, &err), KVSIM_OK, "replicas: %s", err.msg);
  cr_assert_eq(se.gpus_per_replica, 2, "TP2: 2 GPUs per replica");
  kvsim_search_summary(&se, "ttft_p99=10s", sum, sizeof sum);
  cr_assert(strstr(sum, "1 replicas = 2 GPUs"), "replicas and GPUs: %s", sum);
  kvsim_scenario_fini(&sc);
  remove(trace);
}

/* ---- run REPORT.md ------------------------------------------------------ */

Test(compare, a_run_report_carries_the_band_range_of_its_p99s) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  const char *sets[] = {"slo.ttft_p99_s=100"};
  cr_assert_eq(kvsim_scenario_parse(SCENARIO, "r.json", ".", sets, 1, &sc, &err), KVSIM_OK, "%s", err.msg);
  kvsim_summary_t *s = malloc(sizeof *s);
  cr_assert_eq(kvsim_study_run(&sc, NULL, s, &err), KVSIM_OK, "run: %s", err.msg);
  char dir[256], path[300];
  snprintf(dir, sizeof dir, "/tmp/kvsim_cmp_run_%ld", (long)getpid());
  cr_assert_eq(kvsim_report_mkdirs(dir, &err), KVSIM_OK, "mkdir");
  cr_assert_eq(kvsim_report_md_run_write(&sc, s, dir, "kvsim run r.json", &err), KVSIM_OK, "%s", err.msg);
  snprintf(path, sizeof path, "%s/REPORT.md", dir);
  char *md = slurp(path);
  remove(path);
  rmdir(dir);
  char want[128];
  snprintf(want, sizeof want, "Meets the SLO: p99 TTFT %.3g s [", s->ttft.p99);
  cr_assert(strstr(md, want), "the answer with the run's p99 and a range: %.300s", md);
  double lo = 0, hi = 0;
  const char *br = strstr(md, want) + strlen(want);
  cr_assert_eq(sscanf(br, "%lf, %lf]", &lo, &hi), 2, "a range [lo, hi]");
  cr_assert(lo < s->ttft.p99 * 1.001 && s->ttft.p99 < hi * 1.001 && lo < hi,
            "p99 %g within its band range [%g, %g]", s->ttft.p99, lo, hi);
  cr_assert(strstr(md, "GPU KV cache size:"), "the memory plan in the engine's words");
  cr_assert(strstr(md, "- Reproduce: `kvsim run r.json`"), "the command");
  free(md);
  free(s);
  kvsim_scenario_fini(&sc);
}

/* Regression: a run in which no request finished printed p99 TTFT 0 s and
 * "Meets the SLO" in REPORT.md, though its run line already said
 * "no request finished: no latency figures". */
Test(compare, a_run_report_where_nothing_finished_has_no_latency_figures) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  const char *sets[] = {"slo.ttft_p99_s=100", "output.max_time_s=0.001"};
  cr_assert_eq(kvsim_scenario_parse(SCENARIO, "r.json", ".", sets, 2, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  kvsim_summary_t *s = malloc(sizeof *s);
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, s, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(s->requests_finished, 0, "nothing finishes in 1 ms (%lld did)",
               (long long)s->requests_finished);
  char dir[256], path[300];
  snprintf(dir, sizeof dir, "/tmp/kvsim_cmp_none_%ld", (long)getpid());
  cr_assert_eq(kvsim_report_mkdirs(dir, &err), KVSIM_OK, "mkdir: %s", err.msg);
  cr_assert_eq(kvsim_report_md_run_write(&sc, s, dir, "kvsim run r.json", &err), KVSIM_OK, "%s",
               err.msg);
  snprintf(path, sizeof path, "%s/REPORT.md", dir);
  char *md = slurp(path);
  remove(path);
  rmdir(dir);
  cr_assert(strstr(md, "\n\nMisses the SLO; no request finished: no latency figures; KV peak"),
            "the answer says so, and no SLO is met by nothing: %.700s", md);
  cr_assert(strstr(md, "| TTFT, TPOT, E2E | no request finished: no latency figures | |"),
            "the table says so: %.900s", md);
  cr_assert_null(strstr(md, "p99 TTFT 0 s"), "no percentile of nothing in the answer");
  cr_assert_null(strstr(md, "| TTFT p50 / p99 s |"), "nor in the table");
  cr_assert(strstr(md, "| SLO attainment | 0.0 % |"), "the other figures stay");
  free(md);
  free(s);
  kvsim_scenario_fini(&sc);
}

/* A price in the GPU's own file (the user's figure) when the study has none. */
Test(compare, a_gpu_file_price_is_used_when_the_study_has_none) {
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_GPU, "l4");
  cr_assert(e, "the catalog has the L4");
  const char *brace = strchr(e->json, '{');
  char path[256];
  snprintf(path, sizeof path, "/tmp/kvsim_cmp_gpu_%ld.json", (long)getpid());
  FILE *f = fopen(path, "w");
  cr_assert(f, "gpu file");
  fprintf(f, "{ \"cost_per_gpu_hour\": 0.7,%s", brace + 1);
  fclose(f);
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load(path, &g, &err), KVSIM_OK, "the file parses: %s", err.msg);
  cr_assert_float_eq(g.cost_per_gpu_hour, 0.7, 1e-12, "the key is read");
  char rest[1024];
  snprintf(rest, sizeof rest,
           "\"slo\": { \"ttft_p99_s\": 0.5 }, \"target_rate\": 6, \"candidates\": [ { \"label\": \"own\", "
           "\"set\": { \"hardware.gpu\": \"%s\" } } ]", path);
  kvsim_compare_t c;
  cr_assert_eq(study(rest, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_compare_row_t *r = malloc(sizeof *r);
  cr_assert_eq(kvsim_compare_candidate(&c, 0, 0.05, r, &err), KVSIM_OK, "candidate");
  cr_assert_eq(r->rc, KVSIM_OK, "runs: %s", r->error);
  cr_assert_float_eq(r->cost_per_gpu_hour, 0.7, 1e-12, "the file's price");
  cr_assert_str_eq(r->cost_source, "gpu file", "says where it is from");
  free(r);
  kvsim_compare_fini(&c);
  remove(path);
}

/* Regression: hardware.gpu took "h100" (and "NVIDIA L4"), but a price
 * under that name was looked up by the catalog name the row carries and
 * silently dropped: the candidate had no cost. Aliases now price the GPU
 * they load; a name that is no GPU, or one GPU priced twice, is refused. */
Test(compare, a_price_under_a_gpu_alias_is_used_not_dropped) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study("\"slo\": { \"ttft_p99_s\": 0.5 }, \"target_rate\": 6, \"candidates\": "
                     "[ { \"label\": \"alias\", \"set\": { \"hardware.gpu\": \"NVIDIA L4\" } } ],"
                     " \"cost_per_gpu_hour\": { \"NVIDIA L4\": 0.8, \"h100\": 2.5 }",
                     &c, &err),
               KVSIM_OK, "parse: %s", err.msg);
  const cJSON *l4 = cJSON_GetObjectItemCaseSensitive(c.prices, "l4");
  const cJSON *h100 = cJSON_GetObjectItemCaseSensitive(c.prices, "h100-sxm");
  cr_assert(cJSON_IsNumber(l4) && l4->valuedouble == 0.8, "'NVIDIA L4' prices l4");
  cr_assert(cJSON_IsNumber(h100) && h100->valuedouble == 2.5, "'h100' prices h100-sxm");
  kvsim_compare_row_t *r = malloc(sizeof *r);
  cr_assert_eq(kvsim_compare_candidate(&c, 0, 0.05, r, &err), KVSIM_OK, "candidate");
  cr_assert_eq(r->rc, KVSIM_OK, "runs: %s", r->error);
  cr_assert_str_eq(r->gpu, "l4", "the row carries the catalog name");
  cr_assert_float_eq(r->cost_per_gpu_hour, 0.8, 1e-12, "the alias's price is the row's");
  cr_assert_str_eq(r->cost_source, "study", "from the study");
  free(r);
  kvsim_compare_fini(&c);

  cr_assert_eq(study("\"slo\": { \"ttft_p99_s\": 0.5 }, \"target_rate\": 6, \"candidates\": "
                     "[ { \"label\": \"a\" } ], \"cost_per_gpu_hour\": { \"h1OO\": 2.5 }",
                     &c, &err),
               KVSIM_EINVAL, "a name that is no GPU");
  cr_assert_str_eq(err.msg, "t.json: cost_per_gpu_hour.h1OO: not a GPU name (the candidates run on l4)",
                   "names the key: %s", err.msg);
  cr_assert_eq(study("\"slo\": { \"ttft_p99_s\": 0.5 }, \"target_rate\": 6, \"candidates\": "
                     "[ { \"label\": \"a\" } ], \"cost_per_gpu_hour\": { \"h100-sxm\": 2.5, "
                     "\"h100\": 3 }",
                     &c, &err),
               KVSIM_EINVAL, "one GPU priced twice");
  cr_assert_str_eq(err.msg,
                   "t.json: cost_per_gpu_hour.h100: h100-sxm is priced twice (also as 'h100-sxm')",
                   "names both: %s", err.msg);
}

/* Regression: compare --out under a file or /dev/null was found out only
 * when the results were written, after every candidate had run. */
Test(compare, a_bad_out_folder_is_found_before_anything_runs) {
  char base[256], path[512];
  snprintf(base, sizeof base, "/tmp/kvsim_cmp_out_%ld", (long)getpid());
  kvsim_err err = {0};
  cr_assert_eq(kvsim_report_mkdirs(base, &err), KVSIM_OK, "mkdir: %s", err.msg);
  snprintf(path, sizeof path, "%s/file", base);
  FILE *f = fopen(path, "w");
  cr_assert(f, "a file");
  fclose(f);
  static const char *const names[] = {"compare.csv", "REPORT.md", NULL};
  snprintf(path, sizeof path, "%s/file/sub", base);
  cr_assert_eq(kvsim_report_check_out_dir(path, names, &err), KVSIM_EIO, "a file on the path");
  cr_assert(strstr(err.msg, "/file: cannot create folder: Not a directory"), "names it: %s", err.msg);
  cr_assert_eq(kvsim_report_check_out_dir("/dev/null", names, &err), KVSIM_EIO, "/dev/null");
  cr_assert_str_eq(err.msg, "/dev/null: cannot create folder: Not a directory", "%s", err.msg);
  snprintf(path, sizeof path, "%s/REPORT.md", base);
  cr_assert_eq(mkdir(path, 0700), 0, "a folder named REPORT.md");
  cr_assert_eq(kvsim_report_check_out_dir(base, names, &err), KVSIM_EIO, "REPORT.md a folder");
  cr_assert(strstr(err.msg, "/REPORT.md: write failed: Is a directory"), "names it: %s", err.msg);
  rmdir(path);
  cr_assert_eq(kvsim_report_check_out_dir(base, names, &err), KVSIM_OK, "an existing folder: %s",
               err.msg);
  snprintf(path, sizeof path, "%s/new/deeper/", base);
  cr_assert_eq(kvsim_report_check_out_dir(path, names, &err), KVSIM_OK, "folders to make: %s",
               err.msg);
  snprintf(path, sizeof path, "%s/new", base);
  cr_assert_neq(access(path, F_OK), 0, "the check makes nothing");
  snprintf(path, sizeof path, "%s/file", base);
  remove(path);
  rmdir(base);
}

/* A row with nothing known (the writers' NAN), as a candidate starts. */
static void blank_row(kvsim_compare_row_t *r, const char *gpu) {
  kvsim_compare_row_init(r);
  snprintf(r->gpu, sizeof r->gpu, "%s", gpu);
  r->tp = r->pp = r->gpus_per_replica = 1;
  r->gpu_memory_utilization = 0.9;
}

/* A row that met the target on 2 replicas: p99s [lo, hi] at the band's
 * edges, e2e_hi the E2E at the slow edge; price per GPU-hour. */
static void met_row(kvsim_compare_row_t *r, double e2e_hi, double price) {
  blank_row(r, "l4");
  r->goodput = 8, r->goodput_range[0] = 4, r->goodput_range[1] = 16;
  r->replicas = 2, r->replicas_range[0] = 1, r->replicas_range[1] = 3;
  r->ttft_p99 = 0.3, r->ttft_p99_range[0] = 0.1, r->ttft_p99_range[1] = 0.6;
  r->tpot_p99 = 0.02, r->tpot_p99_range[0] = 0.01, r->tpot_p99_range[1] = 0.04;
  r->e2e_p99 = 2, r->e2e_p99_range[0] = 1, r->e2e_p99_range[1] = e2e_hi;
  r->kv_peak = 0.1, r->output_tokens_per_s = 1000;
  r->cost_per_gpu_hour = price, r->cost_per_hour = 2 * price;
  r->cost_per_mtok = r->cost_per_hour / 3.6;
}

/* Regression: the E2E target was not checked at the band's slow edge (a
 * candidate past it there "held", and won on price), and compare.csv and
 * REPORT.md had no E2E range. */
Test(compare, an_e2e_target_is_judged_at_the_band_slow_edge) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study("\"slo\": { \"ttft_p99_s\": 1, \"e2e_p99_s\": 3 }, \"target_rate\": 12, "
                     "\"candidates\": [ { \"label\": \"held\" }, { \"label\": \"edge\" }, "
                     "{ \"label\": \"cut\" } ]",
                     &c, &err),
               KVSIM_OK, "parse: %s", err.msg);
  kvsim_compare_row_t *rows = calloc(3, sizeof *rows);
  cr_assert(rows, "rows");
  met_row(&rows[0], 2.9, 1.0); /* held: 2.9 s <= 3 s at the slow edge */
  met_row(&rows[1], 4.0, 0.5); /* edge: cheaper, but 4 s there */
  met_row(&rows[2], 2.9, 1.0); /* cut: nothing finished at the target */
  rows[2].ttft_p99 = rows[2].tpot_p99 = rows[2].e2e_p99 = NAN;
  for (int k = 0; k < 2; k++)
    rows[2].ttft_p99_range[k] = rows[2].tpot_p99_range[k] = rows[2].e2e_p99_range[k] = NAN;

  kvsim_compare_result_t res = {rows, 3, 0, 0, "", "", ""};
  kvsim_compare_answer(&c, rows, 3, false, res.answer, sizeof res.answer);
  cr_assert(strstr(res.answer,
                   "2 x (held) meets 12 req/s at p99 TTFT 0.3 s [0.1, 0.6], TPOT 0.02 s "
                   "[0.01, 0.04], E2E 2 s [1, 2.9] on 2 GPUs for $2.00/h; "),
            "the one that holds at the slow edge, with its E2E: %s", res.answer);
  cr_assert(strstr(res.answer, "; edge reaches 8 req/s [4, 16] per deployment (2 x for the target, "
                               "$1.00/h; misses the SLO at the band's slow edge)"),
            "E2E past the target at the slow edge: %s", res.answer);

  char *csv = kvsim_compare_csv(&c, rows, 3);
  cr_assert(csv, "csv");
  /* The unloaded figures and the feasibility line came later still, then
   * whether the run at the target was steady (empty: these rows never ran). */
  cr_assert(strstr(csv, ",simulations,error,e2e_p99_lo,e2e_p99_hi,unloaded_rate,unloaded_ttft_p99_s,"
                        "unloaded_tpot_p99_s,unloaded_e2e_p99_s,feasible,feasibility,steady\n"),
            "the E2E range after error, the feasibility columns, steady last: %.300s", csv);
  cr_assert(strstr(csv, "\nedge,l4,") && strstr(strstr(csv, "\nedge,l4,"), ",0,,1,4,,,,,,,\n"),
            "edge's E2E range: %s", csv);
  cr_assert(strstr(csv, "\ncut,l4,") && strstr(strstr(csv, "\ncut,l4,"), ",0,,,,,,,,,,\n"),
            "cut: no E2E range, empty not 0: %s", csv);
  free(csv);

  char *md = kvsim_report_md_compare(&c, &res, NULL);
  cr_assert(md, "REPORT.md");
  cr_assert(strstr(md, "| p99 TTFT s | p99 TPOT s | p99 E2E s | KV peak |"), "the E2E column");
  cr_assert(strstr(md, "| 0.3 [0.1, 0.6] | 0.02 [0.01, 0.04] | 2 [1, 4] | 10.0 % |"),
            "edge's E2E cell with its range");
  free(md);
  free(rows);
  kvsim_compare_fini(&c);
}

/* Regression: REPORT.md paired two prices' '$' into inline maths, left a
 * "-" cell unexplained, and wrote error text (naming files) as Markdown. */
Test(compare, a_report_escapes_prices_and_errors_and_says_what_dash_means) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study("\"slo\": { \"ttft_p99_s\": 1, \"tpot_p99_s\": 0.1 }, \"target_rate\": 12, "
                     "\"candidates\": [ { \"label\": \"held\" }, { \"label\": \"dear\" }, "
                     "{ \"label\": \"cut\" }, { \"label\": \"one\" }, { \"label\": \"never\" }, "
                     "{ \"label\": \"broken\" }, { \"label\": \"free\" } ]",
                     &c, &err),
               KVSIM_OK, "parse: %s", err.msg);
  kvsim_compare_row_t *rows = calloc(7, sizeof *rows);
  cr_assert(rows, "rows");
  met_row(&rows[0], 2.9, 1.0);
  met_row(&rows[1], 2.9, 2.0);
  met_row(&rows[2], 2.9, 1.0); /* cut: nothing finished at the target */
  rows[2].ttft_p99 = rows[2].tpot_p99 = rows[2].e2e_p99 = NAN;
  for (int k = 0; k < 2; k++)
    rows[2].ttft_p99_range[k] = rows[2].tpot_p99_range[k] = rows[2].e2e_p99_range[k] = NAN;
  met_row(&rows[3], 2.9, 1.0); /* one: a single output token each */
  rows[3].tpot_p99 = rows[3].tpot_p99_range[0] = rows[3].tpot_p99_range[1] = NAN;
  blank_row(&rows[4], "l4"); /* never: no rate, no replica count */
  blank_row(&rows[5], "");   /* broken: its error names a file */
  rows[5].rc = KVSIM_EIO;
  snprintf(rows[5].error, sizeof rows[5].error, "my_gpu*x*.json: cannot read `it`");
  met_row(&rows[6], 2.9, NAN); /* free: no price */
  rows[6].cost_per_hour = rows[6].cost_per_mtok = NAN;
  kvsim_compare_result_t res = {rows, 7, 1, 0, "", "", ""};
  kvsim_compare_answer(&c, rows, 7, false, res.answer, sizeof res.answer);
  cr_assert(strstr(res.answer, " for $2.00/h; ") && strstr(res.answer, "target, $4.00/h)"),
            "the terminal's prices as they were: %s", res.answer);

  char *md = kvsim_report_md_compare(&c, &res, NULL);
  cr_assert(md, "REPORT.md");
  cr_assert(strstr(md, " for \\$2.00/h; ") && strstr(md, "target, \\$4.00/h)"),
            "prices escaped in the answer: %s", md);
  cr_assert(strstr(md, "| preemptions | \\$/h | \\$/M output tokens | calibration |"),
            "and in the header");
  for (const char *p = md; (p = strchr(p, '$')); p++)
    cr_assert(p > md && p[-1] == '\\', "a bare '$' at %.40s", p - 1);
  static const char *const notes[] = {
      "\n-: failed (1 candidate): nothing measured (its error is under its memory plan).\n",
      "\n-: meets the SLO at no rate tried (1 candidate): no goodput.\n",
      "\n-: no replica count tried meets the target (1 candidate): no run at the target, so no "
      "replicas, GPUs, latency, KV or cost figures.\n",
      "\n-: no request finished at the target (1 candidate): no latency figures.\n",
      "\n-: no request had a second token (1 candidate): no TPOT.\n",
      "\n-: no price for the GPU (1 candidate): no cost figures.\n"};
  for (size_t k = 0; k < sizeof notes / sizeof *notes; k++)
    cr_assert(strstr(md, notes[k]), "the note %s", notes[k]);
  cr_assert_null(strstr(md, "does not fit ("), "no note for a reason absent");
  cr_assert_null(strstr(md, "p99 E2E s"), "no E2E column without an E2E target");
  cr_assert(strstr(md, "Failed: my\\_gpu\\*x\\*.json: cannot read \\`it\\`\n"),
            "the error as text: %s", md);
  free(md);
  free(rows);
  kvsim_compare_fini(&c);
}

/* Regression: REPORT.md said "Prices are the study's own figures" of a
 * price read from a GPU file's cost_per_gpu_hour. Each GPU is named once,
 * under the source of its price; a row without one is not. */
Test(compare, a_report_says_where_each_price_came_from) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study("\"slo\": { \"ttft_p99_s\": 1 }, \"target_rate\": 12, \"candidates\": [ "
                     "{ \"label\": \"a\" }, { \"label\": \"b\" }, { \"label\": \"c\" }, "
                     "{ \"label\": \"d\" } ]",
                     &c, &err),
               KVSIM_OK, "parse: %s", err.msg);
  kvsim_compare_row_t *rows = calloc(4, sizeof *rows);
  cr_assert(rows, "rows");
  met_row(&rows[0], 2.9, 1.0);
  snprintf(rows[0].cost_source, sizeof rows[0].cost_source, "study");
  met_row(&rows[1], 2.9, 2.0);
  snprintf(rows[1].gpu, sizeof rows[1].gpu, "my_gpu");
  snprintf(rows[1].cost_source, sizeof rows[1].cost_source, "gpu file");
  met_row(&rows[2], 2.9, 1.0); /* l4 again: named once */
  snprintf(rows[2].cost_source, sizeof rows[2].cost_source, "study");
  met_row(&rows[3], 2.9, NAN); /* no price: not named */
  snprintf(rows[3].gpu, sizeof rows[3].gpu, "a10");
  rows[3].cost_per_hour = rows[3].cost_per_mtok = NAN;
  kvsim_compare_result_t res = {rows, 4, 0, 0, "", "", ""};
  char *md = kvsim_report_md_compare(&c, &res, NULL);
  cr_assert(md, "REPORT.md");
  cr_assert(strstr(md, "a lower bound. Prices per GPU-hour: the study's `cost_per_gpu_hour` for "
                       "l4; the GPU file's `cost_per_gpu_hour` for my\\_gpu.\n"),
            "each source with its GPUs: %s", md);
  cr_assert_null(strstr(md, "own figures"), "not all the study's");
  free(md);
  res.n = 1; /* the GPU file's alone */
  rows[0] = rows[1];
  md = kvsim_report_md_compare(&c, &res, NULL);
  cr_assert(md && strstr(md, " Prices per GPU-hour: the GPU file's `cost_per_gpu_hour` for "
                             "my\\_gpu.\n"),
            "the GPU file's alone: %s", md);
  cr_assert_null(strstr(md, "the study's `cost"), "no study price named");
  free(md);
  rows[0] = rows[3]; /* no price at all: no sentence */
  md = kvsim_report_md_compare(&c, &res, NULL);
  cr_assert(md && strstr(md, "a lower bound.\n") && !strstr(md, "Prices per"),
            "no price, no sources: %s", md);
  free(md);
  free(rows);
  kvsim_compare_fini(&c);
}

/* What f's lines of kvsim_compare_print are (a memstream), freed by the
 * caller. */
static char *printed(const kvsim_compare_t *c, const kvsim_compare_result_t *res) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  cr_assert_not_null(f, "memstream");
  kvsim_compare_print(c, res, NULL, f);
  fclose(f);
  return text;
}

/* Regression: a range's end with no figure read "none" in REPORT.md with
 * no note and "nan" on the terminal; a latency top no run bounds (+inf, a
 * run cut with requests in flight) read "none" in REPORT.md and "inf" on
 * the terminal. Now "none" and "inf" in both, each with its note. */
Test(compare, a_range_end_none_or_inf_reads_the_same_with_its_note) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study("\"slo\": { \"ttft_p99_s\": 1 }, \"target_rate\": 12, \"candidates\": [ "
                     "{ \"label\": \"open\" }, { \"label\": \"edge\" } ]",
                     &c, &err),
               KVSIM_OK, "parse: %s", err.msg);
  kvsim_compare_row_t *rows = calloc(2, sizeof *rows);
  cr_assert(rows, "rows");
  met_row(&rows[0], 2.9, 1.0); /* open: the slow edge left requests in flight */
  rows[0].ttft_p99_range[1] = rows[0].tpot_p99_range[1] = INFINITY;
  met_row(&rows[1], 2.9, 2.0); /* edge: no rate or replica count met at an edge */
  rows[1].goodput_range[0] = rows[1].replicas_range[1] = NAN;
  rows[1].ttft_p99_range[1] = 2; /* past the target too: the cheaper one is named */
  kvsim_compare_result_t res = {rows, 2, 0, 0, "", "", ""};
  kvsim_compare_answer(&c, rows, 2, false, res.answer, sizeof res.answer);
  cr_assert(strstr(res.answer, "at p99 TTFT 0.3 s [0.1, inf], TPOT 0.02 s [0.01, inf] on 2 GPUs"),
            "the answer's open tops: %s", res.answer);
  cr_assert(strstr(res.answer, "edge reaches 8 req/s [none, 16] per deployment"),
            "the answer's end with no figure: %s", res.answer);

  char *md = kvsim_report_md_compare(&c, &res, NULL);
  cr_assert(md, "REPORT.md");
  cr_assert(strstr(md, "| 2 | 0.3 [0.1, inf] | 0.02 [0.01, inf] |"), "inf cells: %s", md);
  cr_assert(strstr(md, "| 8 [none, 16] | 2 [1, none] |"), "none cells: %s", md);
  static const char *const notes[] = {
      "\nnone: no rate tried meets the SLO at that edge of the band (1 candidate): a goodput "
      "range without that end.\n",
      "\nnone: no replica count tried meets the target at that edge of the band (1 candidate): a "
      "replicas range without that end.\n",
      "\ninf: a run at the target (nominal or at a band edge) left requests unfinished (an "
      "`output.max_time_s` cut) or finished none (1 candidate): no finite figure bounds that "
      "p99's top, and a target checked against it is missed.\n"};
  for (size_t k = 0; k < sizeof notes / sizeof *notes; k++)
    cr_assert(strstr(md, notes[k]), "the note %s in %s", notes[k], md);
  cr_assert_null(strstr(md, "none: no run at that edge"), "no note for a reason absent");
  free(md);

  char *out = printed(&c, &res);
  cr_assert(strstr(out, " goodput 8 req/s [none, 16]; ") && !strstr(out, "nan"),
            "the terminal's end with no figure: %s", out);
  cr_assert(strstr(out, "\n  none: no rate tried meets the SLO (in brackets: at that edge of the "
                        "band)\n"),
            "its note: %s", out);
  cr_assert(strstr(out, "\n  inf: a run at the target left requests unfinished (an "
                        "output.max_time_s cut) or finished none, so no finite figure bounds "
                        "that top; a target checked against it is missed\n"),
            "the inf note: %s", out);
  free(out);
  rows[0].ttft_p99_range[1] = rows[0].tpot_p99_range[1] = 0.6; /* bounded: no inf note */
  rows[1].goodput_range[0] = rows[1].replicas_range[1] = 4;
  res.answer[0] = '\0';
  out = printed(&c, &res);
  cr_assert(!strstr(out, "  none:") && !strstr(out, "  inf:"), "no notes: %s", out);
  free(out);
  free(rows);
  kvsim_compare_fini(&c);
}

/* Regression (issue 28, sustained rates): the target run kept the
 * scenario's 150 requests, so at 300 req/s they all arrived within half
 * a second and "5 x L4" met a rate five L4s cannot carry: 5 replicas x a
 * goodput of at most 23 req/s. At the workload's duration the replicas
 * found carry the target at the band's fast edge at least. */
Test(compare, the_replicas_found_can_carry_the_target_rate) {
  static const char *text =
      "{ \"name\": \"t300\", \"scenario\": { \"name\": \"tiny\", \"seed\": 3, \"model\": "
      "\"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
      "  \"engine\": { \"max_model_len\": 4096, \"max_num_seqs\": 32 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 150, \"arrival\": { \"process\": "
      "\"poisson\", \"rate\": 10 },"
      "  \"prompt_tokens\": { \"dist\": \"lognormal\", \"mean\": 500, \"sigma\": 0.5, \"max\": 3000 },"
      "  \"output_tokens\": { \"dist\": \"uniform\", \"min\": 20, \"max\": 200 } } } },"
      " \"slo\": { \"ttft_p99_s\": 1.0, \"tpot_p99_s\": 0.05 }, \"target_rate\": 300,"
      " \"candidates\": [ { \"label\": \"L4\" } ] }";
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_compare_parse(text, "t.json", NULL, &c, &err), KVSIM_OK, "%s", err.msg);
  kvsim_compare_row_t *r = malloc(sizeof *r);
  cr_assert_not_null(r, "row allocated");
  cr_assert_eq(kvsim_compare_candidate(&c, 0, 0.05, r, &err), KVSIM_OK, "candidate 0");
  cr_assert_eq(r->rc, KVSIM_OK, "runs: %s", r->error);
  cr_assert(isfinite(r->replicas) && isfinite(r->goodput_range[1]), "answers (%g replicas, %g)",
            r->replicas, r->goodput_range[1]);
  cr_assert_geq(r->replicas * r->goodput_range[1], 300,
                "%g replicas x at most %g req/s each carry 300 req/s", r->replicas,
                r->goodput_range[1]);
  cr_assert_gt(r->requests, 150, "the target run lasts the workload's 15 s: %lld requests",
               (long long)r->requests);
  free(r);
  kvsim_compare_fini(&c);
}

/* Two candidates at one price, as the study lists them in `order`: the
 * decision and the answer for rows a and b (copied into that order). */
static void decide(const char *order, const kvsim_compare_row_t *a, const kvsim_compare_row_t *b,
                   char *decision, char *answer, size_t cap) {
  char rest[512];
  bool ab = !strcmp(order, "ab");
  snprintf(rest, sizeof rest,
           "\"slo\": { \"ttft_p99_s\": 1 }, \"target_rate\": 12, \"candidates\": [ { \"label\": "
           "\"%s\" }, { \"label\": \"%s\" } ]",
           ab ? "a" : "b", ab ? "b" : "a");
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study(rest, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_compare_row_t *rows = calloc(2, sizeof *rows);
  cr_assert(rows, "rows");
  rows[0] = ab ? *a : *b;
  rows[1] = ab ? *b : *a;
  kvsim_compare_decision(&c, rows, 2, false, decision, cap);
  kvsim_compare_answer(&c, rows, 2, false, answer, cap);
  free(rows);
  kvsim_compare_fini(&c);
}

/* Regression (issue 28, item 5): a cost tie went to whichever candidate
 * the study listed first, so swapping two equal-cost candidates flipped
 * the answer while one carried 26.6 req/s and the other 24.7. */
Test(compare, a_cost_tie_goes_to_goodput_whatever_the_study_order) {
  kvsim_compare_row_t *ab = calloc(2, sizeof *ab);
  cr_assert(ab, "rows");
  met_row(&ab[0], 2.9, 1.0);
  met_row(&ab[1], 2.9, 1.0);
  ab[0].goodput = 26.6, ab[0].goodput_range[0] = 20, ab[0].goodput_range[1] = 30;
  ab[1].goodput = 24.7, ab[1].goodput_range[0] = 19, ab[1].goodput_range[1] = 29;
  char d1[2048], a1[2048], d2[2048], a2[2048];
  decide("ab", &ab[0], &ab[1], d1, a1, sizeof d1);
  decide("ba", &ab[0], &ab[1], d2, a2, sizeof d2);
  cr_assert(!strncmp(a1, "2 x (a) meets", 13) && !strncmp(a2, "2 x (a) meets", 13),
            "the higher goodput in either order: '%.60s' / '%.60s'", a1, a2);
  cr_assert_str_eq(d1, d2, "the decision does not depend on the study's order");
  cr_assert(strstr(d1, "Buy 2 x (a) on 2 GPUs for $2.00/h: goodput 26.6 req/s [20, 30] per replica, "
                       "233 % headroom at the slow edge; tied on cost, it has the higher goodput "
                       "per GPU"),
            "what to buy, its goodput range, its headroom (2 x 20 / 12 - 1) and why: %s", d1);

  /* Equal on cost, goodput and headroom: a tie, said, and the same pick
   * in either order. */
  ab[1] = ab[0];
  decide("ab", &ab[0], &ab[1], d1, a1, sizeof d1);
  decide("ba", &ab[0], &ab[1], d2, a2, sizeof d2);
  cr_assert_str_eq(d1, d2, "a full tie reads the same in either order");
  cr_assert(strstr(d1, "a tie with (b) on cost, goodput and headroom: either will do"),
            "the tie is said: %s", d1);
  free(ab);
}

/* A verdict that another candidate takes at an edge of the band says so. */
Test(compare, a_verdict_that_flips_inside_the_band_says_so) {
  kvsim_compare_row_t *ab = calloc(2, sizeof *ab);
  cr_assert(ab, "rows");
  met_row(&ab[0], 2.9, 1.0); /* a: $2.00/h, 3 replicas ($3.00/h) at the slow edge */
  met_row(&ab[1], 2.9, 1.2); /* b: $2.40/h, and still 2 replicas there */
  ab[1].replicas_range[0] = ab[1].replicas_range[1] = 2;
  char d[2048], a[2048];
  decide("ab", &ab[0], &ab[1], d, a, sizeof d);
  cr_assert(!strncmp(d, "Buy 2 x (a) on 2 GPUs for $2.00/h", 33), "a is cheaper nominally: %s", d);
  cr_assert(strstr(d, "; the verdict flips inside the band: at its slow edge buy 2 x (b) on 2 GPUs "
                      "for $2.40/h."),
            "b is cheaper at the slow edge, and the line says so: %s", d);
  free(ab);
}

/* Regression: a verdict that flips at both edges opened the clause twice
 * ("the verdict flips inside the band: ...; the verdict flips inside the
 * band: ..."); it opens once and names each edge. */
Test(compare, a_verdict_that_flips_at_both_edges_says_so_once) {
  kvsim_compare_row_t *ab = calloc(2, sizeof *ab);
  cr_assert(ab, "rows");
  met_row(&ab[0], 2.9, 1.0); /* a: $2.00/h; 3 replicas at the slow edge, 2 at the fast */
  ab[0].replicas_range[0] = 2;
  met_row(&ab[1], 2.9, 1.2); /* b: $2.40/h; 2 replicas at the slow edge, 1 at the fast */
  ab[1].replicas_range[0] = 1, ab[1].replicas_range[1] = 2;
  char d[2048], a[2048];
  decide("ab", &ab[0], &ab[1], d, a, sizeof d);
  cr_assert(!strncmp(d, "Buy 2 x (a) on 2 GPUs for $2.00/h", 33), "a is cheaper nominally: %s", d);
  cr_assert(strstr(d, "; the verdict flips inside the band: at its slow edge buy 2 x (b) on 2 GPUs "
                      "for $2.40/h; at its fast edge buy 1 x (b) on 1 GPU for $1.20/h."),
            "b is cheaper at both edges, said in one clause: %s", d);
  cr_assert(!strstr(strstr(d, "verdict flips") + 1, "verdict flips"), "the clause opens once: %s", d);
  free(ab);
}

/* Regression (issue 28, item 2): a deployment whose unloaded p99 is at
 * its target was answered with a replica count (162 replicas = 324 GPUs
 * for a 32B model at TTFT 1 s). Feasibility comes first: the unloaded
 * run, and the nearest changes measured the same way. */
Test(compare, a_deployment_that_meets_only_near_zero_load_gets_one_line_not_replicas) {
  kvsim_compare_row_t *r = malloc(sizeof *r);
  cr_assert(r, "row");
  kvsim_compare_t c;
  kvsim_err err = {0};
  /* Its unloaded p99 TTFT, from a generous SLO. */
  cr_assert_eq(study("\"slo\": { \"ttft_p99_s\": 5 }, \"target_rate\": 12, \"candidates\": [ { "
                     "\"label\": \"L4\" } ]",
                     &c, &err),
               KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(kvsim_compare_candidate(&c, 0, 0.05, r, &err), KVSIM_OK, "candidate");
  cr_assert(!r->infeasible && isfinite(r->replicas), "5 s: feasible, a replica count (%g)",
            r->replicas);
  double u = r->unloaded_ttft_p99;
  cr_assert(u > 0 && isfinite(u), "an unloaded p99 TTFT (%g)", u);
  cr_assert_float_eq(r->unloaded_rate, 12.0 / 1000, 1e-12, "measured at 1/1000 of the target");
  kvsim_compare_fini(&c);

  /* Below it: no load meets. */
  char rest[512];
  snprintf(rest, sizeof rest,
           "\"slo\": { \"ttft_p99_s\": %.6g }, \"target_rate\": 12, \"candidates\": [ { \"label\": "
           "\"L4\" } ]",
           0.8 * u);
  cr_assert_eq(study(rest, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(kvsim_compare_candidate(&c, 0, 0.05, r, &err), KVSIM_OK, "candidate");
  cr_assert(r->infeasible && r->infeasible_any_load, "infeasible at any load");
  cr_assert(isnan(r->replicas) && isnan(r->cost_per_hour), "no replica count (%g)", r->replicas);
  cr_assert(!strncmp(r->feasibility, "cannot meet p99 TTFT ", 21) &&
                strstr(r->feasibility, "at any load (unloaded p99 TTFT ") &&
                strstr(r->feasibility, "; TP2 unloaded: ") &&
                strstr(r->feasibility, "; FP8 weights unloaded: "),
            "one line with the nearest changes: %s", r->feasibility);
  char answer[4096];
  kvsim_compare_answer(&c, r, 1, false, answer, sizeof answer);
  cr_assert(strstr(answer, r->feasibility) && !strstr(answer, " x (L4)"),
            "the answer gives the line, not a replica count: %s", answer);
  kvsim_compare_fini(&c);

  /* Just above it (within 10 %): meets only near zero load. */
  snprintf(rest, sizeof rest,
           "\"slo\": { \"ttft_p99_s\": %.6g }, \"target_rate\": 12, \"candidates\": [ { \"label\": "
           "\"L4\" } ]",
           u / 0.95);
  cr_assert_eq(study(rest, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(kvsim_compare_candidate(&c, 0, 0.05, r, &err), KVSIM_OK, "candidate");
  cr_assert(r->infeasible && !r->infeasible_any_load, "infeasible, but not at any load");
  cr_assert(isnan(r->replicas), "no replica count (%g)", r->replicas);
  cr_assert(strstr(r->feasibility, " only below ") && strstr(r->feasibility, " req/s (unloaded p99 TTFT "),
            "says below which rate it meets: %s", r->feasibility);
  free(r);
  kvsim_compare_fini(&c);
}

/* Regression (issue 28, item 6): REPORT.md linked PNGs that only a
 * separate script drew, and a compare into an older folder kept its
 * stale PNGs. The compare draws its figures, removes older ones first,
 * and links only what it drew; without gnuplot it links none and says
 * why. */
Test(compare, the_compare_draws_its_plots_and_links_only_those) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  cr_assert_eq(study(GOOD, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  char dir[256], p[400];
  snprintf(dir, sizeof dir, "%s/kvsim_plots_%ld", test_tmpdir(), (long)getpid());
  mkdir(dir, 0700);
  snprintf(p, sizeof p, "%s/old.png", dir);
  FILE *f = fopen(p, "w");
  cr_assert(f, "a stale PNG");
  fclose(f);
  const char *path = getenv("PATH");
  char saved[4096];
  snprintf(saved, sizeof saved, "%s", path ? path : "");
  for (int k = 0; k < 2; k++) {
    if (k == 1)
      setenv("PATH", "/nonexistent", 1); /* no gnuplot */
    kvsim_compare_opts_t o = {dir, 1, 0.05, NULL, "kvsim compare t.json"};
    kvsim_compare_result_t res;
    cr_assert_eq(kvsim_compare_run(&c, &o, &res, &err), KVSIM_OK, "%s", err.msg);
    cr_assert(access(p, F_OK) != 0, "the older PNG was removed");
    snprintf(p, sizeof p, "%s/REPORT.md", dir);
    char *md = slurp(p);
    cr_assert(md, "REPORT.md");
    if (k == 0 && res.plots[0]) {
      cr_assert(strstr(res.plots, "compare_ttft.png\n"), "the TTFT figure: %s", res.plots);
      for (const char *l = res.plots; *l; l += strcspn(l, "\n") + 1) {
        char png[300], link[320];
        snprintf(png, sizeof png, "%s/%.*s", dir, (int)strcspn(l, "\n"), l);
        cr_assert(access(png, F_OK) == 0, "%s drawn", png);
        snprintf(link, sizeof link, "](%.*s)", (int)strcspn(l, "\n"), l);
        cr_assert(strstr(md, link), "REPORT.md links %s", link);
      }
    } else {
      cr_assert(k == 1 || strstr(res.plots_note, "not found"), "only gnuplot's absence: %s",
                res.plots_note);
      cr_assert_str_eq(res.plots, "", "nothing drawn without gnuplot");
      cr_assert(strstr(md, "No plots: gnuplot was not found on PATH.") && !strstr(md, ".png)"),
                "says why and links none");
    }
    free(md);
    kvsim_compare_result_fini(&res);
    snprintf(p, sizeof p, "%s/compare_ttft.png", dir);
  }
  setenv("PATH", saved, 1);
  static const char *const files[] = {"compare.csv", "compare_sweep.csv", "REPORT.md"};
  for (int k = 0; k < 3; k++) {
    snprintf(p, sizeof p, "%s/%s", dir, files[k]);
    remove(p);
  }
  rmdir(dir);
  kvsim_compare_fini(&c);
}
