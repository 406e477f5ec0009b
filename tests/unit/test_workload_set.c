/* A parsed workload's copy and typed setters (workload/config_set.c): a
 * copy draws the same requests as the original; a setter leaves the
 * configuration as parsing the object with the key set does, and fails
 * where parsing fails, in the same words. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/scenario.h"
#include "kvsim/workload.h"

#define WHERE "s.json: workload"

static char lengths_path[512];

static void remove_tmp(void) {
  if (lengths_path[0])
    remove(lengths_path);
}

TestSuite(workload_set, .fini = remove_tmp);

/* A (prompt, output) table for lengths_from, under /tmp, per process. */
static const char *lengths_file(void) {
  snprintf(lengths_path, sizeof lengths_path, "/tmp/kvsim_wlset_%ld.csv", (long)getpid());
  FILE *f = fopen(lengths_path, "wb");
  cr_assert(f, "cannot create %s", lengths_path);
  fputs("prompt_tokens,output_tokens\n100,10\n250,30\n700,5\n", f);
  fclose(f);
  return lengths_path;
}

static int parse(const char *json, kvsim_workload_cfg_t **cfg, kvsim_err *err) {
  cJSON *j = cJSON_Parse(json);
  cr_assert(j, "test JSON must parse: %s", json);
  int rc = kvsim_workload_parse(j, NULL, WHERE, cfg, err);
  cJSON_Delete(j);
  return rc;
}

static char *resolved(const kvsim_workload_cfg_t *c) {
  cJSON *j = kvsim_workload_cfg_json(c);
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return s;
}

/* The first n requests of a source over c, as text. */
static char *draws(const kvsim_workload_cfg_t *c, int n) {
  kvsim_source_t *src;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_source_open(c, 7, &src, &err), KVSIM_OK, "%s", err.msg);
  size_t cap = (size_t)n * 96 + 1, o = 0;
  char *s = calloc(cap, 1);
  for (int i = 0; i < n; i++) {
    kvsim_req_spec_t r;
    if (kvsim_source_next(src, &r, &err) != KVSIM_SOURCE_REQUEST)
      break;
    o += (size_t)snprintf(s + o, cap - o, "%lld %lld %lld %d %d %d;", (long long)r.arrival,
                          (long long)r.prompt_tokens, (long long)r.output_tokens, r.tenant,
                          r.priority, r.lora);
  }
  kvsim_source_close(src);
  return s;
}

/* Every table a workload owns: zipf lengths and popularity, priorities,
 * a lengths file. */
Test(workload_set, a_copy_draws_the_same_requests) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"synthetic\": {\"requests\": 40, \"arrival\": {\"process\": \"poisson\", \"rate\": "
           "5}, \"lengths_from\": \"%s\", \"few_shot\": {\"templates\": 5, \"tokens\": {\"dist\": "
           "\"zipf\", \"s\": 1.2, \"max\": 300}, \"popularity\": \"zipf\", \"zipf_s\": 1.1}, "
           "\"tenants\": {\"count\": 4, \"popularity\": \"zipf\"}, \"priority\": {\"levels\": 3, "
           "\"weights\": [1, 2, 3]}, \"lora\": {\"adapters\": 6, \"popularity\": \"zipf\"}}}",
           lengths_file());
  kvsim_workload_cfg_t *a, *b;
  kvsim_err err = {0};
  cr_assert_eq(parse(json, &a, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_workload_cfg_copy(a, &b, &err), KVSIM_OK, "%s", err.msg);
  char *ja = resolved(a), *jb = resolved(b), *da = draws(a, 40);
  kvsim_workload_cfg_free(a); /* the copy owns nothing of a's */
  char *db = draws(b, 40);
  cr_assert_str_eq(jb, ja, "the same configuration");
  cr_assert_str_eq(db, da, "the same requests");
  cr_assert_gt(strlen(da), 40 * 10, "40 requests drawn: %s", da);
  free(ja), free(jb), free(da), free(db);
  kvsim_workload_cfg_free(b);
}

/* The object with `key` (a dotted path under it) set to v. */
static char *with_key(const char *json, const char *key, double v) {
  cJSON *j = cJSON_Parse(json);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_json_set_value(j, key, cJSON_CreateNumber(v), &err), KVSIM_OK, "%s", err.msg);
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return s;
}

/* Setting key = v on json's configuration is parsing json with it set:
 * the same configuration, or the same error. */
static void same_as_parsing(const char *json, const char *key, double v) {
  kvsim_workload_cfg_t *c, *want = NULL;
  kvsim_err err = {0}, perr = {0};
  cr_assert_eq(parse(json, &c, &err), KVSIM_OK, "%s", err.msg);
  char *edited = with_key(json, key, v);
  int prc = parse(edited, &want, &perr);
  int rc = kvsim_workload_set(c, key, v, WHERE, &err);
  cr_assert_eq(rc, prc, "%s = %g on %s: rc %d, parsing %d (%s)", key, v, json, rc, prc, perr.msg);
  if (prc < 0) {
    cr_assert_str_eq(err.msg, perr.msg, "%s = %g: parsing's error", key, v);
  } else {
    char *a = resolved(c), *b = resolved(want);
    cr_assert_str_eq(a, b, "%s = %g on %s", key, v, json);
    free(a), free(b);
  }
  free(edited);
  kvsim_workload_cfg_free(c);
  kvsim_workload_cfg_free(want);
}

#define POISSON                                                                                    \
  "{\"synthetic\": {\"requests\": 20, \"arrival\": {\"process\": \"poisson\", \"rate\": 4}, "      \
  "\"prompt_tokens\": 100, \"output_tokens\": 10}}"
#define RATED                                                                                      \
  "{\"rate\": 3, \"synthetic\": {\"duration_s\": 5, \"arrival\": {\"process\": \"gamma\", "        \
  "\"rate\": 4, \"cv\": 2}, \"prompt_tokens\": 100, \"output_tokens\": 10}}"
#define BURSTS                                                                                     \
  "{\"synthetic\": {\"requests\": 20, \"arrival\": {\"process\": \"bursts\", \"rate\": 1, "        \
  "\"burst_rate\": 9, \"burst_s\": 1, \"period_s\": 5}, \"prompt_tokens\": 100, "                  \
  "\"output_tokens\": 10}}"
#define CLOSED                                                                                     \
  "{\"synthetic\": {\"requests\": 20, \"arrival\": {\"process\": \"closed_loop\", \"clients\": "   \
  "3}, \"prompt_tokens\": 100, \"output_tokens\": 10}}"

Test(workload_set, synthetic_keys_set_as_parsing_sets_them) {
  const char *shapes[] = {POISSON, RATED, BURSTS, CLOSED};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    same_as_parsing(shapes[i], "synthetic.requests", 77);
    same_as_parsing(shapes[i], "synthetic.requests", 0);   /* below the row's min */
    same_as_parsing(shapes[i], "synthetic.requests", 2.5); /* not an integer */
    same_as_parsing(shapes[i], "synthetic.duration_s", 12.5);
    same_as_parsing(shapes[i], "synthetic.duration_s", 0);
    same_as_parsing(shapes[i], "synthetic.arrival.rate", 9);
    same_as_parsing(shapes[i], "synthetic.arrival.rate", 0); /* bursts only */
    same_as_parsing(shapes[i], "rate", 6);                   /* no mean rate: bursts, closed */
    same_as_parsing(shapes[i], "rate", 0);
    same_as_parsing(shapes[i], "max_total_tokens", 4096);
    same_as_parsing(shapes[i], "max_total_tokens", 1);
    same_as_parsing(shapes[i], "limit", 5);      /* traces only */
    same_as_parsing(shapes[i], "time_scale", 2); /* traces only */
  }
}

Test(workload_set, trace_keys_set_as_parsing_sets_them) {
  const char *tr =
      "{\"trace\": \"" KVSIM_SOURCE_DIR "/tests/golden/cases/v1-preemption/trace.csv\"}";
  char rated[512];
  snprintf(rated, sizeof rated,
           "{\"rate\": 2, \"trace\": \"%s/tests/golden/cases/v1-preemption/trace.csv\"}",
           KVSIM_SOURCE_DIR);
  const char *shapes[] = {tr, rated};
  for (size_t i = 0; i < 2; i++) {
    same_as_parsing(shapes[i], "limit", 5); /* with a rate, the mean rate of 5 rows */
    same_as_parsing(shapes[i], "limit", 0);
    same_as_parsing(shapes[i], "time_scale", 2);
    same_as_parsing(shapes[i], "time_scale", 0);
    same_as_parsing(shapes[i], "rate", 7);
    same_as_parsing(shapes[i], "synthetic.requests", 7); /* synthetic only */
    same_as_parsing(shapes[i], "synthetic.arrival.rate", 7);
  }
}

Test(workload_set, other_keys_are_refused_naming_them) {
  kvsim_workload_cfg_t *c;
  kvsim_err err = {0};
  cr_assert_eq(parse(POISSON, &c, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_workload_set(c, "synthetic.prefix.groups", 3, WHERE, &err), KVSIM_EINVAL,
               "not a setter's key");
  cr_assert(strstr(err.msg, WHERE ".synthetic.prefix.groups: not a key set by number"), "%s",
            err.msg);
  kvsim_workload_cfg_free(c);
}

/* Through the scenario: set on a copy, so a refused value leaves the
 * scenario's workload and config as they were. */
Test(workload_set, a_refused_value_leaves_the_scenario_unchanged) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse("{\"model\": \"llama-3.1-8b\", \"workload\": " POISSON "}",
                                    "s.json", ".", NULL, 0, &sc, &err),
               KVSIM_OK, "%s", err.msg);
  char *before = resolved(sc.workload);
  cr_assert_eq(kvsim_scenario_set_workload(&sc, "synthetic.requests", 0, &err), KVSIM_EINVAL,
               "0 requests refused");
  cr_assert_str_eq(err.msg, "s: workload.synthetic.requests: bad value 0 (expected >= 1)",
                   "parsing's words: %s", err.msg);
  char *after = resolved(sc.workload);
  cr_assert_str_eq(after, before, "the workload unchanged");
  cJSON *cfg = kvsim_scenario_config_json(&sc);
  cr_assert_eq(cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetObjectItemCaseSensitive(
                       cJSON_GetObjectItemCaseSensitive(cfg, "workload"), "synthetic"),
                   "requests")
                   ->valuedouble,
               20, "the config unchanged");
  cr_assert_eq(kvsim_scenario_set_workload(&sc, "synthetic.requests", 33, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(kvsim_workload_max_total_tokens(sc.workload), 110, "the workload is still whole");
  kvsim_workload_shape_t shape;
  kvsim_workload_shape(sc.workload, &shape);
  cr_assert_eq(shape.requests, 33, "set");
  free(before), free(after);
  cJSON_Delete(cfg);
  kvsim_scenario_fini(&sc);
}
