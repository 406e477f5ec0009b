/* The workload as given (workload/config_json.c, kvsim_workload_given_json):
 * the keys a "workload" object gave, in the registry's order and a dist's
 * or a popularity's own keys in the order given, each value from the typed
 * fields; the typed setters mark the key they set given; a copy keeps the
 * marks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/workload.h"

#define WHERE "s.json: workload"

TestSuite(workload_given);

static kvsim_workload_cfg_t *parse(const char *json) {
  cJSON *j = cJSON_Parse(json);
  cr_assert(j, "test JSON must parse: %s", json);
  kvsim_workload_cfg_t *c = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_parse(j, NULL, WHERE, &c, &err), KVSIM_OK, "%s", err.msg);
  cJSON_Delete(j);
  return c;
}

static char *given(const kvsim_workload_cfg_t *c) {
  cJSON *j = kvsim_workload_given_json(c);
  cr_assert(j);
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  return s;
}

/* Every block, a dist's keys out of the usual order, a bare length, and
 * the popularity keys before and after the registry's: printed back as
 * written, the registry's rows moved into its order. */
Test(workload_given, synthetic_prints_back_as_given) {
  kvsim_workload_cfg_t *c = parse(
      "{\"max_total_tokens\":6000,\"synthetic\":{\"duration_s\":3,\"requests\":100,"
      "\"arrival\":{\"rate\":2,\"process\":\"gamma\",\"cv\":1.5},"
      "\"prompt_tokens\":{\"max\":900,\"dist\":\"normal\",\"std\":50,\"mean\":400,\"min\":10},"
      "\"output_tokens\":64,"
      "\"few_shot\":{\"zipf_s\":0.9,\"popularity\":\"zipf\",\"templates\":5,"
      "\"tokens\":{\"dist\":\"zipf\",\"s\":1.2,\"max\":300}},"
      "\"tenants\":{\"popularity\":\"uniform\",\"count\":3},"
      "\"priority\":{\"weights\":[1,2.5,0],\"levels\":3},"
      "\"sessions\":{\"turns\":3,\"user_tokens\":{\"dist\":\"fixed\",\"value\":30,\"max\":40}}}}");
  char *s = given(c);
  cr_assert_str_eq(
      s, "{\"synthetic\":{\"requests\":100,\"duration_s\":3,"
         "\"arrival\":{\"process\":\"gamma\",\"rate\":2,\"cv\":1.5},"
         "\"prompt_tokens\":{\"max\":900,\"dist\":\"normal\",\"std\":50,\"mean\":400,\"min\":10},"
         "\"output_tokens\":64,"
         "\"few_shot\":{\"templates\":5,\"tokens\":{\"dist\":\"zipf\",\"s\":1.2,\"max\":300},"
         "\"zipf_s\":0.9,\"popularity\":\"zipf\"},"
         "\"sessions\":{\"turns\":3,\"user_tokens\":{\"dist\":\"fixed\",\"value\":30,\"max\":40}},"
         "\"tenants\":{\"count\":3,\"popularity\":\"uniform\"},"
         "\"priority\":{\"levels\":3,\"weights\":[1,2.5,0]}},\"max_total_tokens\":6000}");
  free(s);
  kvsim_workload_cfg_free(c);
}

/* A rate given derives the trace's scale: the scale prints as given (not
 * the derived one), null keys are not given, format "auto" stays "auto". */
Test(workload_given, trace_keeps_given_scale) {
  char path[128];
  snprintf(path, sizeof path, "/tmp/kvsim_wlgiven_%ld.csv", (long)getpid());
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  fputs("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10,5\n2,10,5\n", f);
  fclose(f);
  char json[512];
  snprintf(json, sizeof json,
           "{\"rate\":4,\"time_scale\":2,\"trace\":\"%s\",\"limit\":null,\"format\":\"auto\","
           "\"skip_bad_rows\":true}",
           path);
  kvsim_workload_cfg_t *c = parse(json);
  char *s = given(c), want[512];
  snprintf(want, sizeof want,
           "{\"trace\":\"%s\",\"format\":\"auto\",\"time_scale\":2,\"skip_bad_rows\":true,"
           "\"rate\":4}",
           path);
  remove(path);
  cr_assert_str_eq(s, want);
  free(s);
  kvsim_workload_cfg_free(c);
}

/* A setter marks its key given, with the value set (the arrival rate as
 * set even where workload.rate replaces it); a copy prints the same. */
Test(workload_given, setter_marks_and_copy_keeps) {
  kvsim_workload_cfg_t *c = parse("{\"rate\":5,\"synthetic\":{\"duration_s\":10,"
                                  "\"arrival\":{\"process\":\"poisson\",\"rate\":1},"
                                  "\"prompt_tokens\":8,\"output_tokens\":8}}");
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_set(c, "synthetic.requests", 40, WHERE, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(kvsim_workload_set(c, "synthetic.arrival.rate", 3, WHERE, &err), KVSIM_OK, "%s",
               err.msg);
  /* A refused value marks nothing. */
  cr_assert_lt(kvsim_workload_set(c, "max_total_tokens", 1, WHERE, &err), 0);
  const char *want = "{\"synthetic\":{\"requests\":40,\"duration_s\":10,"
                     "\"arrival\":{\"process\":\"poisson\",\"rate\":3},"
                     "\"prompt_tokens\":8,\"output_tokens\":8},\"rate\":5}";
  char *s = given(c);
  cr_assert_str_eq(s, want);
  free(s);
  kvsim_workload_cfg_t *d = NULL;
  cr_assert_eq(kvsim_workload_cfg_copy(c, &d, &err), KVSIM_OK);
  s = given(d);
  cr_assert_str_eq(s, want);
  free(s);
  kvsim_workload_cfg_free(d);
  kvsim_workload_cfg_free(c);
}
