/* Runs and plans into memory (kvsim/memrun.h): the text is what the run
 * output writes to its files and what calc prints, errors come back as
 * one line, and nothing is written. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvsim/engine.h"
#include "kvsim/memrun.h"
#include "kvsim/report.h"
#include "kvsim/run_output.h"

static const char *scenario =
    "{\"name\": \"memrun\", \"seed\": 3, \"model\": \"llama-3.1-8b\", \"hardware\": {\"replicas\": 2},"
    " \"admission\": {\"max_prompt_tokens\": 150},"
    " \"workload\": {\"synthetic\": {\"requests\": 30, \"arrival\": {\"process\": \"poisson\", \"rate\": 20},"
    " \"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 20, \"max\": 200}, \"output_tokens\": 8}}}";

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s exists", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert(s && fread(s, 1, (size_t)n, f) == (size_t)n, "reads %s", path);
  s[n] = '\0';
  fclose(f);
  return s;
}

Test(memrun, the_text_is_the_files_a_run_writes) {
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_scenario_parse(scenario, "test", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  kvsim_memrun_t m;
  cr_assert_eq(kvsim_memrun(&sc, &m, &err), KVSIM_OK, "runs: %s", err.msg);
  /* The same scenario through the run output into a folder. */
  char dir[512];
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/kvsim_memrun_%ld", t && *t ? t : ".", (long)getpid());
  kvsim_run_output_t *o;
  cr_assert_eq(kvsim_run_output_open(dir, &sc, false, &o, &err), KVSIM_OK, "%s", err.msg);
  kvsim_sink_t sink = kvsim_run_output_sink(o);
  kvsim_run_opts_t ro = {0};
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, &ro, &sink, &st, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_run_output_finish(o, &st, true, &err), KVSIM_OK, "%s", err.msg);
  kvsim_run_output_close(o);
  const char *names[] = {"timeseries.csv", "requests.csv", "summary.json"};
  const char *mine[] = {m.timeseries_csv, m.requests_csv, m.summary_json};
  for (int i = 0; i < 3; i++) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    char *want = slurp(p);
    size_t n = strlen(mine[i]);
    /* summary.json ends in a newline the text does not carry. */
    cr_assert(!strncmp(want, mine[i], n) && (want[n] == '\0' || !strcmp(want + n, "\n")),
              "%s: the same text", names[i]);
    free(want);
    remove(p);
  }
  rmdir(dir);
  cr_assert(strstr(m.requests_csv, ",rejected\n"), "prompts over 150 tokens are refused, as rows");
  kvsim_memrun_fini(&m);
  cr_assert_null(m.summary_json, "fini clears");
  kvsim_scenario_fini(&sc);
}

Test(memrun, strings_in_and_errors_out) {
  char e[256] = "";
  const char *sets[] = {"engine.max_num_seqs=4"};
  kvsim_memrun_t *r = kvsim_memrun_new(NULL, scenario, ".", sets, 1, e, sizeof e);
  cr_assert_not_null(r, "runs: %s", e);
  cr_assert(strstr(r->summary_json, "\"max_num_seqs\":\t4"), "the set applied");
  kvsim_memrun_free(r);
  r = kvsim_memrun_new(NULL, "{\"model\": \"llama-3.1-8b\", \"engine\": {\"profile\": \"bogus\"}}", ".", NULL,
                       0, e, sizeof e);
  cr_assert_null(r, "a bad scenario fails");
  cr_assert(strstr(e, "engine.profile: unknown profile 'bogus'") && !strchr(e, '\n'), "one line: %s", e);
  r = kvsim_memrun_new("/nonexistent/s.json", NULL, NULL, NULL, 0, e, sizeof e);
  cr_assert(!r && strstr(e, "/nonexistent/s.json"), "names the file: %s", e);
  r = kvsim_memrun_new(NULL, NULL, NULL, NULL, 0, e, sizeof e);
  cr_assert(!r && strstr(e, "no scenario"), "neither given: %s", e);
}

Test(memrun, calc_json_is_what_calc_prints) {
  const char *flags[] = {"--model", "--gpu", "--gpu-memory-utilization", "--max-model-len"};
  const char *values[] = {"llama-3.1-8b", "h100-sxm", "0.8", "8192"};
  char e[256] = "";
  char *j = kvsim_memrun_calc_json(flags, values, 4, e, sizeof e);
  cr_assert_not_null(j, "computes: %s", e);
  /* The same through the engine's table, as the command line does. */
  const kvsim_calc_engine_t *eng = kvsim_calc_engine_find(NULL, false);
  static kvsim_calc_args_t a;
  static kvsim_calc_t c;
  eng->defaults(&a);
  int k = 0;
  for (const kvsim_calc_flag_t *f = eng->flags; f->name; f++, k++) {
    if (!strcmp(f->name, "--model"))
      *(const char **)(a.bytes + f->offset) = "llama-3.1-8b", a.given[k] = true;
    else if (!strcmp(f->name, "--gpu"))
      *(const char **)(a.bytes + f->offset) = "h100-sxm", a.given[k] = true;
    else if (!strcmp(f->name, "--gpu-memory-utilization") && f->kind == KVSIM_CALC_NUM)
      *(double *)(a.bytes + f->offset) = 0.8, a.given[k] = true;
    else if (!strcmp(f->name, "--max-model-len") && f->kind == KVSIM_CALC_STR)
      *(const char **)(a.bytes + f->offset) = "8192", a.given[k] = true;
    else if (!strcmp(f->name, "--max-model-len") && f->kind == KVSIM_CALC_INT)
      *(int64_t *)(a.bytes + f->offset) = 8192, a.given[k] = true;
  }
  a.common.json = true;
  kvsim_err err = {0};
  cr_assert_eq(eng->compute(&a, &c, &err), KVSIM_OK, "%s", err.msg);
  char *want = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&want, &n);
  eng->print(&a, &c, f);
  fclose(f);
  cr_assert_str_eq(j, want, "the JSON calc --json prints");
  free(want);
  kvsim_memrun_text_free(j);
  const char *bad[] = {"--gpu-memory-utilization"};
  const char *badv[] = {"most"};
  cr_assert_null(kvsim_memrun_calc_json(bad, badv, 1, e, sizeof e), "a bad number fails");
  cr_assert(strstr(e, "--gpu-memory-utilization: bad value 'most'"), "names flag and value: %s", e);
  const char *unk[] = {"--speed"};
  cr_assert_null(kvsim_memrun_calc_json(unk, badv, 1, e, sizeof e), "an unknown flag fails");
  cr_assert(strstr(e, "unknown flag '--speed'"), "names it: %s", e);
}
