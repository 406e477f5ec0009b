/* The Prometheus readers of the measured time series (fidelity/
 * series_prom.c, series_promjson.c, series_acc.c; kvsim/fidelity.h
 * kvsim_fidelity_read_series): the hand-made fixtures of
 * tests/golden/fidelity/, timestamp units, engines summed and averaged,
 * staleness, detection by content, the time origin, errors, and the
 * simulated side that keeps every row. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fidelity/fid.h"
#include "fidelity/series_acc.h"
#include "kvsim/fidelity.h"
#include "kvsim/scenario.h"
#include "tmpdir.h"

#ifndef KVSIM_SOURCE_DIR
#define KVSIM_SOURCE_DIR "."
#endif
#define FIX KVSIM_SOURCE_DIR "/tests/golden/fidelity/"

/* Writes text to a fresh temporary file (no extension: the format is
 * told by content); the path is static. */
static const char *tmpfile_with(const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/kvsim-prom-XXXXXX", test_tmpdir());
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemps %s", path);
  size_t n = strlen(text);
  cr_assert_eq(write(fd, text, n), (ssize_t)n);
  close(fd);
  return path;
}

static void read_ok(const char *path, kvsim_fid_series_t *s) {
  kvsim_err err = {0};
  memset(s, 0, sizeof *s);
  int rc = kvsim_fidelity_read_series(path, s, &err);
  cr_assert_eq(rc, KVSIM_OK, "%s: %s", path, err.msg);
}

static void point_is(const kvsim_fid_series_t *s, int64_t i, double t, double run, double wait, double kv) {
  cr_assert_lt(i, s->n, "point %lld of %lld", (long long)i, (long long)s->n);
  const kvsim_fid_point_t *p = &s->v[i];
  cr_expect(fabs(p->t - t) < 1e-9 && p->running == run && p->waiting == wait && fabs(p->kv - kv) < 1e-12,
            "point %lld: (%g, %g, %g, %g), want (%g, %g, %g, %g)", (long long)i, p->t, p->running,
            p->waiting, p->kv, t, run, wait, kv);
}

Test(series_prom, promtool_dump_two_engines_offset) {
  kvsim_fid_series_t s;
  read_ok(FIX "prom-dump.txt", &s);
  cr_assert_eq(s.n, 6);
  cr_expect(s.has_kv);
  /* Engine 1 reports from 0.5 s; engine 0's last sample is at 2 s. */
  point_is(&s, 0, 0.0, 2, 1, 0.5);
  point_is(&s, 1, 0.5, 3, 1, 0.3);
  point_is(&s, 2, 1.0, 2, 0, 0.175);
  point_is(&s, 3, 1.5, 2, 0, 0.275);
  point_is(&s, 4, 2.0, 1, 0, 0.15);
  point_is(&s, 5, 2.5, 0, 0, 0);
  kvsim_fidelity_series_fini(&s);
}

Test(series_prom, sglang_openmetrics_seconds_and_integer_seconds) {
  kvsim_fid_series_t s;
  read_ok(FIX "sglang.om", &s);
  cr_assert_eq(s.n, 3);
  point_is(&s, 0, 0.0, 4, 2, 0.8);
  point_is(&s, 1, 1.0, 2, 0, 0.4); /* "1735689601": an integer below 1e11 is seconds */
  point_is(&s, 2, 2.5, 0, 0, 0);
  kvsim_fidelity_series_fini(&s);
}

Test(series_prom, query_range_array_of_answers) {
  kvsim_fid_series_t s;
  read_ok(FIX "query-range.json", &s);
  cr_assert_eq(s.n, 2);
  point_is(&s, 0, 0, 4, 2, 0.4);
  point_is(&s, 1, 1, 2, 0, 0.3);
  kvsim_fidelity_series_fini(&s);
}

Test(series_prom, one_answer_several_results_without_kv) {
  const char *p = tmpfile_with(
      "{\"status\": \"success\", \"data\": {\"resultType\": \"matrix\", \"result\": ["
      "{\"metric\": {\"__name__\": \"sglang:num_running_reqs\"}, \"values\": [[10.5, \"2\"], [11.5, \"3\"]]},"
      "{\"metric\": {\"__name__\": \"sglang:num_queue_reqs\"}, \"values\": [[10.5, \"1\"]]}]}}");
  kvsim_fid_series_t s;
  read_ok(p, &s);
  unlink(p);
  cr_expect(!s.has_kv, "no KV gauge: not recorded");
  cr_assert_eq(s.n, 2);
  point_is(&s, 0, 0, 2, 1, 0);
  point_is(&s, 1, 1, 3, 0, 0); /* the waiting series ended at its last sample */
  kvsim_fidelity_series_fini(&s);
}

Test(series_prom, ms_and_seconds_tell_apart) {
  int64_t ms;
  cr_assert(kvsim__ser_parse_ts("1735689600000", 13, &ms));
  cr_expect_eq(ms, 1735689600000LL, "an integer >= 1e11 is milliseconds");
  cr_assert(kvsim__ser_parse_ts("1735689600", 10, &ms));
  cr_expect_eq(ms, 1735689600000LL, "an integer below 1e11 is seconds");
  cr_assert(kvsim__ser_parse_ts("1735689600.0015", 15, &ms));
  cr_expect_eq(ms, 1735689600002LL, "decimals are seconds, rounded to the millisecond");
  cr_assert(kvsim__ser_parse_ts("1.7e9", 5, &ms));
  cr_expect_eq(ms, 1700000000000LL, "an exponent is seconds");
  cr_expect(!kvsim__ser_parse_ts("NaN", 3, &ms));
  cr_expect(!kvsim__ser_parse_ts("1e300", 5, &ms));
  cr_expect(!kvsim__ser_parse_ts("12x", 3, &ms));
}

Test(series_prom, later_sample_wins_staleness_ends_and_labels_escape) {
  /* engine "a,}b" (escapes and a brace inside the value) and engine 1: the
   * second value of engine 1 at 1000 ms replaces the first; NaN (a
   * staleness marker) takes engine 1 out from 2000 ms; other metrics and
   * an exemplar are skipped. */
  const char *p = tmpfile_with(
      "# HELP x y\n"
      "vllm:num_requests_running{engine=\"a,}b\\\"\\\\\"} 1 1000000000000\n"
      "vllm:num_requests_running{engine=\"1\"} 5 1000000000000\n"
      "vllm:num_requests_running{engine=\"1\"} 7 1000000000000\n"
      "vllm:num_requests_running{engine=\"a,}b\\\"\\\\\"} 1 1000000003000\n"
      "vllm:num_requests_running{engine=\"1\"} NaN 1000000002000\n"
      "vllm:num_requests_running{engine=\"1\"} 2 1000000003000\n"
      "vllm:num_requests_waiting 0 1000000000000 # {trace_id=\"x\"} 1 1000000000.5\n"
      "vllm:num_requests_waiting 0 1000000003000\n"
      "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\"} +Inf\n");
  kvsim_fid_series_t s;
  read_ok(p, &s);
  unlink(p);
  cr_assert_eq(s.n, 3);
  point_is(&s, 0, 0, 8, 0, 0);
  point_is(&s, 1, 2, 1, 0, 0);
  point_is(&s, 2, 3, 3, 0, 0);
  kvsim_fidelity_series_fini(&s);
}

Test(series_prom, csv_still_read_as_csv) {
  kvsim_fid_series_t s;
  read_ok(FIX "timeseries.csv", &s);
  cr_expect_eq(s.n, 2);
  point_is(&s, 0, 1.0, 2, 0, 0.015);
  kvsim_fidelity_series_fini(&s);
}

Test(series_prom, origin_anchors_inside_the_scrape_only) {
  const char *p = tmpfile_with("vllm:num_requests_running 9 1000\n"
                               "vllm:num_requests_running 1 2000\n"
                               "vllm:num_requests_waiting 0 1000\n"
                               "vllm:num_requests_waiting 0 3000\n");
  kvsim_err err = {0};
  kvsim_fid_series_t s = {0};
  /* The timestamps above are integers below 1e11: seconds. The anchor at
   * 1500 s (in ms) lies inside the scrape. */
  kvsim__ser_origin_t o = {1500000, false, false};
  cr_assert_eq(kvsim__fid_read_series_at(p, &o, &s, &err), KVSIM_OK, "%s", err.msg);
  cr_expect(o.prom && o.anchored);
  cr_assert_eq(s.n, 2, "the sample at 1000 s, before the anchor, dropped");
  point_is(&s, 0, 500, 1, 0, 0);
  kvsim_fidelity_series_fini(&s);
  o = (kvsim__ser_origin_t){5000000, false, false}; /* 5000 s: after the scrape */
  cr_assert_eq(kvsim__fid_read_series_at(p, &o, &s, &err), KVSIM_OK, "%s", err.msg);
  cr_expect(!o.anchored);
  cr_assert_eq(s.n, 3);
  point_is(&s, 0, 0, 9, 0, 0);
  kvsim_fidelity_series_fini(&s);
  unlink(p);
}

static void read_fails(const char *text, const char *want) {
  const char *p = tmpfile_with(text);
  kvsim_err err = {0};
  kvsim_fid_series_t s = {0};
  int rc = kvsim_fidelity_read_series(p, &s, &err);
  unlink(p);
  kvsim_fidelity_series_fini(&s);
  cr_expect_eq(rc, KVSIM_EINVAL, "%s: rc %d (%s)", text, rc, err.msg);
  cr_expect(strstr(err.msg, want) && strstr(err.msg, p) && !strchr(err.msg, '\n'),
            "%s: message '%s', want '%s' and the path", text, err.msg, want);
}

Test(series_prom, errors_name_the_place) {
  read_fails("vllm:num_requests_running 3\n", ":1: a sample without a timestamp");
  read_fails("x 1 1\nvllm:num_requests_running{a=b} 3 1\n", ":2: expected a quoted label value");
  read_fails("vllm:num_requests_running{a=\"b\" c=\"d\"} 3 1\n", ":1: expected ',' or '}'");
  read_fails("vllm:num_requests_running 3 1 extra\n", ":1: unexpected text after the timestamp");
  read_fails("vllm:num_requests_running Inf 1\n", ":1: bad value");
  read_fails("vllm:num_requests_waiting 1 1\n", "no running samples");
  read_fails("{\"status\": \"success\", \"data\": {\"resultType\": \"matrix\", \"result\": "
             "[{\"metric\": {\"__name__\": \"vllm:num_requests_running\"}, \"values\": [[1, 2]]}]}}",
             "$.data.result[0].values[0]: expected [unix_seconds, \"value\"]");
  read_fails("[{\"status\": \"success\", \"data\": {\"resultType\": \"matrix\", \"result\": "
             "[{\"metric\": {\"__name__\": \"vllm:num_requests_running\"}, \"values\": [[1e300, \"2\"]]}]}}]",
             "$[0].data.result[0].values[0][0]: bad timestamp");
}

/* Prometheus' side of a run keeps every row on whole milliseconds: the
 * closing row (everything finished) is there, the periodic series has
 * ticks only. */
Test(series_prom, simulated_side_keeps_every_row) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_load(FIX "scenario.json", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  kvsim_fid_lat_t lat;
  kvsim_fid_series_t tick = {0}, every = {0};
  kvsim_fidelity_lat_init(&lat);
  cr_assert_eq(kvsim__fid_simulate(&sc, false, false, &lat, &tick, NULL, &err), KVSIM_OK, "%s", err.msg);
  kvsim_fidelity_lat_fini(&lat);
  kvsim_fidelity_lat_init(&lat);
  cr_assert_eq(kvsim__fid_simulate(&sc, false, true, &lat, &every, NULL, &err), KVSIM_OK, "%s", err.msg);
  kvsim_fidelity_lat_fini(&lat);
  cr_assert_gt(every.n, tick.n, "rows between ticks");
  for (int64_t i = 0; i < tick.n; i++)
    cr_expect_eq(tick.v[i].t, floor(tick.v[i].t), "periodic ticks on whole seconds");
  const kvsim_fid_point_t *last = &every.v[every.n - 1];
  cr_expect(last->t > tick.v[tick.n - 1].t && last->running == 0 && last->waiting == 0,
            "the closing row: t %g running %g", last->t, last->running);
  cr_expect_eq(last->t * 1e3, round(last->t * 1e3), "on a whole millisecond");
  kvsim_fidelity_series_fini(&tick);
  kvsim_fidelity_series_fini(&every);
  kvsim_scenario_fini(&sc);
}
