/* The fidelity room (kvsim/fidelity.h): series and percentile comparison
 * on hand-made data with known error, the measured-file readers on tiny
 * files written here, and the calibration recovering planted
 * coefficients. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmpdir.h"
#include "kvsim/fidelity.h"
#include "kvsim/kernels.h"

#ifndef KVSIM_SOURCE_DIR
#define KVSIM_SOURCE_DIR "."
#endif

/* Writes `text` to a fresh temporary file (`what` it holds, for the
 * messages; readers detect the format from the content); the caller
 * unlinks it. */
static void temp_file(const char *what, const char *text, char *path, size_t cap) {
  const char *dir = test_tmpdir();
  snprintf(path, cap, "%s/kvsim-test-fid-XXXXXX", dir);
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemp failed for %s (%s)", path, what);
  FILE *f = fdopen(fd, "w");
  cr_assert_not_null(f, "fdopen failed");
  cr_assert(fputs(text, f) >= 0, "write failed");
  cr_assert_eq(fclose(f), 0, "close failed");
}

static bool near(double a, double b, double tol) { return fabs(a - b) <= tol; }

/* ---- series comparison ---- */

Test(fidelity, series_compare_known_difference) {
  kvsim_fid_series_t meas = {0}, sim = {0};
  const double running[5] = {1, 2, 3, 4, 5};
  for (int i = 0; i < 5; i++) {
    cr_assert_eq(kvsim_fidelity_series_push(&meas, i, running[i], 0, 0.5), KVSIM_OK, "push meas %d", i);
    cr_assert_eq(kvsim_fidelity_series_push(&sim, i, 2, 1, 0.25), KVSIM_OK, "push sim %d", i);
  }
  meas.has_kv = true;
  kvsim_fid_series_cmp_t c;
  kvsim_fidelity_series_compare(&meas, &sim, &c);
  cr_assert_eq(c.n, 5, "five points compared, got %lld", (long long)c.n);
  /* |2-1| + |2-2| + |2-3| + |2-4| + |2-5| = 7 over 5 points. */
  cr_assert(near(c.running_mad, 1.4, 1e-12), "running |difference| 1.4, got %g", c.running_mad);
  cr_assert(near(c.waiting_mad, 1.0, 1e-12), "waiting |difference| 1, got %g", c.waiting_mad);
  cr_assert(near(c.kv_mad, 25.0, 1e-9), "KV |difference| 25 points, got %g", c.kv_mad);
  cr_assert(near(c.running_mean_meas, 3.0, 1e-12) && near(c.running_mean_sim, 2.0, 1e-12),
            "running means 3 / 2, got %g / %g", c.running_mean_meas, c.running_mean_sim);
  cr_assert(near(c.kv_mean_meas, 50.0, 1e-9) && near(c.kv_mean_sim, 25.0, 1e-9),
            "KV means in percent 50 / 25, got %g / %g", c.kv_mean_meas, c.kv_mean_sim);
  meas.has_kv = false;
  kvsim_fidelity_series_compare(&meas, &sim, &c);
  cr_assert(isnan(c.kv_mad) && isnan(c.kv_mean_meas), "KV not recorded: NAN, got %g", c.kv_mad);
  kvsim_fidelity_series_fini(&meas);
  kvsim_fidelity_series_fini(&sim);
}

Test(fidelity, series_compare_holds_last_tick_and_idles_past_the_end) {
  kvsim_fid_series_t meas = {0}, sim = {0};
  for (int i = 0; i < 6; i++)
    cr_assert_eq(kvsim_fidelity_series_push(&meas, i, 4, 0, 0), KVSIM_OK, "push meas %d", i);
  /* The simulation ticks at 0 and 2 only: 2's value holds at 3, and past
   * 2 + 1.5 s the simulated run is over (idle). */
  cr_assert_eq(kvsim_fidelity_series_push(&sim, 0, 4, 0, 0), KVSIM_OK, "push sim 0");
  cr_assert_eq(kvsim_fidelity_series_push(&sim, 2, 2, 0, 0), KVSIM_OK, "push sim 2");
  kvsim_fid_series_cmp_t c;
  kvsim_fidelity_series_compare(&meas, &sim, &c);
  /* t = 0, 1: 4 vs 4; t = 2, 3: 2 vs 4; t = 4, 5: idle, 0 vs 4. */
  cr_assert(near(c.running_mad, (0 + 0 + 2 + 2 + 4 + 4) / 6.0, 1e-12), "held then idle, got %g", c.running_mad);
  kvsim_fid_series_t empty = {0};
  kvsim_fidelity_series_compare(&meas, &empty, &c);
  cr_assert(c.n == 0 && isnan(c.running_mad), "nothing simulated: no points, NAN");
  kvsim_fidelity_series_fini(&meas);
  kvsim_fidelity_series_fini(&sim);
}

/* ---- percentile comparison ---- */

/* 101 requests whose TTFT is scale x i / 100 s (i = 0..100) and whose 11
 * output tokens come every scale x 10 ms. */
static void make_lat(kvsim_fid_lat_t *l, double scale, bool queue) {
  kvsim_fidelity_lat_init(l);
  l->has_queue = queue;
  for (int i = 0; i <= 100; i++) {
    double arrival = i, first = arrival + scale * i / 100.0, last = first + scale * 0.1;
    cr_assert_eq(kvsim_fidelity_lat_add(l, arrival, queue ? arrival + 0.5 : -1, first, last, 100, 11), KVSIM_OK,
                 "add request %d", i);
  }
}

Test(fidelity, percentile_compare_known_error) {
  kvsim_fid_lat_t meas, sim;
  make_lat(&meas, 1.0, false);
  make_lat(&sim, 1.1, true);
  kvsim_fid_lat_cmp_t c;
  kvsim_fidelity_lat_compare(&meas, &sim, &c);
  cr_assert_eq(c.n_meas, 101, "101 measured, got %lld", (long long)c.n_meas);
  cr_assert(near(c.meas[KVSIM_FID_TTFT].p50, 0.5, 1e-12), "measured TTFT p50 0.5, got %g", c.meas[KVSIM_FID_TTFT].p50);
  cr_assert(near(c.meas[KVSIM_FID_TTFT].p99, 0.99, 1e-12), "measured TTFT p99 0.99, got %g", c.meas[KVSIM_FID_TTFT].p99);
  cr_assert(near(c.meas[KVSIM_FID_TPOT].mean, 0.01, 1e-12), "measured TPOT 10 ms, got %g", c.meas[KVSIM_FID_TPOT].mean);
  for (int k = KVSIM_FID_TTFT; k <= KVSIM_FID_E2E; k++) {
    double e50 = kvsim_fidelity_err_pct(c.sim[k].p50, c.meas[k].p50);
    double e99 = kvsim_fidelity_err_pct(c.sim[k].p99, c.meas[k].p99);
    cr_assert(near(e50, 10, 1e-9) && near(e99, 10, 1e-9), "%s: +10 %% at p50 and p99, got %g / %g",
              kvsim_fidelity_lat_name(k), e50, e99);
  }
  cr_assert(!c.has_queue && isnan(c.meas[KVSIM_FID_QUEUE].mean), "the measured side has no queueing delay");
  cr_assert(near(c.sim[KVSIM_FID_QUEUE].mean, 0.5, 1e-12), "simulated queueing 0.5 s, got %g",
            c.sim[KVSIM_FID_QUEUE].mean);
  /* Makespan: first arrival 0, last finish 100 + 1.1 x 1.1. */
  cr_assert(near(c.makespan_sim, 100 + 1.1 * 1.1, 1e-9), "simulated makespan, got %g", c.makespan_sim);
  cr_assert(near(c.tput_meas, 101 * 11 / c.makespan_meas, 1e-9), "throughput over the makespan, got %g", c.tput_meas);
  char which[32] = "";
  double w = kvsim_fidelity_lat_worst(&c, which, sizeof which);
  cr_assert(near(w, 10, 1e-6), "worst contract error 10 %%, got %g (%s)", w, which);
  cr_assert(isnan(kvsim_fidelity_err_pct(1, 0)), "no error against a zero measurement");
  kvsim_fidelity_lat_fini(&meas);
  kvsim_fidelity_lat_fini(&sim);
}

Test(fidelity, median_abs_error) {
  const double x[] = {-3, 1, -2, 10};
  cr_assert(near(kvsim_fidelity_median_abs(x, 4), 2.5, 1e-12), "median of |x| = (2 + 3) / 2, got %g",
            kvsim_fidelity_median_abs(x, 4));
  cr_assert(near(kvsim_fidelity_median_abs(x, 3), 2, 1e-12), "odd count: the middle value");
  cr_assert(isnan(kvsim_fidelity_median_abs(x, 0)), "no values: NAN");
}

/* ---- measured-file readers ---- */

Test(fidelity, reads_llmservingsim_requests) {
  char path[512];
  temp_file("requests.jsonl",
            "{\"input_toks\": 100, \"output_toks\": 11, \"queued_ts\": 5.0, \"scheduled_ts\": 5.5, "
            "\"first_token_ts\": 6.0, \"last_token_ts\": 7.0}\n\n"
            "{\"input_toks\": 50, \"output_toks\": 1, \"queued_ts\": 6.0, \"scheduled_ts\": 6.0, "
            "\"first_token_ts\": 9.0, \"last_token_ts\": 9.0}\n",
            path, sizeof path);
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt = 0;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(fmt, KVSIM_FID_FMT_LLMSERVINGSIM, "detected as LLMServingSim, got %s", kvsim_fidelity_fmt_name(fmt));
  cr_assert_eq(l.finished, 2, "two requests, got %lld", (long long)l.finished);
  cr_assert(near(kvsim_dist_mean(&l.ttft), (1.0 + 3.0) / 2, 1e-12), "TTFT from queued_ts, got %g",
            kvsim_dist_mean(&l.ttft));
  cr_assert_eq(l.tpot.n, 1, "TPOT only for more than one output token");
  cr_assert(near(kvsim_dist_mean(&l.tpot), 0.1, 1e-12), "TPOT (7 - 6) / 10, got %g", kvsim_dist_mean(&l.tpot));
  cr_assert(l.has_queue && near(kvsim_dist_mean(&l.queue), 0.25, 1e-12), "queueing delay from scheduled_ts");
  cr_assert(near(l.t_last - l.t_first, 4.0, 1e-12), "makespan 5 .. 9, got %g", l.t_last - l.t_first);
  kvsim_fidelity_lat_fini(&l);
}

Test(fidelity, reads_kvsim_requests_csv_and_skips_rejected) {
  char path[512];
  temp_file("requests.csv",
            "request_id,replica,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,"
            "cached_tokens,num_preemptions,ttft_s,tpot_s,e2e_s,status\n"
            "0,0,1.0,1.0,1.5,2.5,10,3,0,0,0.5,0.5,1.5,finished\n"
            "1,0,2.0,-1,-1,-1,99999,1,0,0,0,0,0,rejected\n",
            path, sizeof path);
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt = 0;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(fmt, KVSIM_FID_FMT_KVSIM, "detected as kvsim's requests.csv");
  cr_assert_eq(l.finished, 1, "the rejected row is not a finished request, got %lld", (long long)l.finished);
  cr_assert(near(kvsim_dist_mean(&l.tpot), 0.5, 1e-12), "TPOT (2.5 - 1.5) / 2, got %g", kvsim_dist_mean(&l.tpot));
  kvsim_fidelity_lat_fini(&l);
}

Test(fidelity, bad_measured_files_name_the_file) {
  char path[512];
  temp_file("bad.jsonl", "{\"queued_ts\": 1}\n", path, sizeof path);
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "a missing key is invalid, got %d", rc);
  cr_assert(strstr(err.msg, path) && strstr(err.msg, ":1: column 'input_toks'"), "names file, line and key: %s",
            err.msg);
  unlink(path);
  /* vLLM benchmark lists of different lengths (this read freed memory once). */
  temp_file("bench.json", "{\"ttfts\": [1, 2], \"itls\": [[0.1]]}", path, sizeof path);
  kvsim_fidelity_lat_fini(&l);
  kvsim_fidelity_lat_init(&l);
  rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "mismatched lists are invalid, got %d", rc);
  cr_assert(strstr(err.msg, "\"itls\" has 1 entries, \"ttfts\" 2"), "says which list: %s", err.msg);
  kvsim_fidelity_lat_fini(&l);
}

Test(fidelity, measured_files_end_after_their_json) {
  char path[512];
  const char *row = "{\"input_toks\": 5, \"output_toks\": 2, \"queued_ts\": 1, "
                    "\"scheduled_ts\": 1, \"first_token_ts\": 2, \"last_token_ts\": 3}";
  char text[1024];
  snprintf(text, sizeof text, "%s\n%s,\n", row, row);
  temp_file("comma.jsonl", text, path, sizeof path);
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a comma after the object is invalid, got %d", rc);
  cr_assert(strstr(err.msg, ":2: trailing characters after the JSON object"), "names the line: %s",
            err.msg);
  kvsim_fidelity_lat_fini(&l);
  /* A vLLM benchmark JSON with a second run appended (--append-result):
   * the last run is read, and its faults name its line. */
  temp_file("bench.json", "{\"ttfts\": [1], \"e2els\": [2]}\n{\"ttfts\": [5]}\n", path,
            sizeof path);
  kvsim_fidelity_lat_init(&l);
  rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "the last run has no end-to-end latency, got %d", rc);
  cr_assert(strstr(err.msg, ":2: neither per-request lists"), "names the line: %s", err.msg);
  unlink(path);
  kvsim_fidelity_lat_fini(&l);
  /* A run that is not one object: the line and what it is. */
  temp_file("bench.json", "{\"ttfts\": [1], \"e2els\": [2]}\n{\"ttfts\": [5]},\n", path,
            sizeof path);
  kvsim_fidelity_lat_init(&l);
  rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a comma after the last run is invalid, got %d", rc);
  cr_assert(strstr(err.msg, ":2: not one JSON object"), "names the line: %s", err.msg);
  kvsim_fidelity_lat_fini(&l);
}

Test(fidelity, measured_numbers_beyond_a_double_are_errors) {
  char path[512];
  temp_file("inf.jsonl",
            "{\"input_toks\": 5, \"output_toks\": 2, \"arrival_time\": 1e400, \"queued_ts\": 1, "
            "\"scheduled_ts\": 1, \"first_token_ts\": 2, \"last_token_ts\": 3}\n",
            path, sizeof path);
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "1e400 (inf to cJSON) is invalid, got %d", rc);
  cr_assert(strstr(err.msg, ":1: column 'arrival_time': not a finite number"), "%s", err.msg);
  kvsim_fidelity_lat_fini(&l);
  temp_file("bench.json", "{\"ttfts\": [1, 2], \"e2els\": [2, 3], \"start_times\": [0, 1e400]}",
            path, sizeof path);
  kvsim_fidelity_lat_init(&l);
  rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "an infinite start time is invalid, got %d", rc);
  cr_assert(strstr(err.msg, "\"start_times\" entry 1: not a finite number"), "%s", err.msg);
  kvsim_fidelity_lat_fini(&l);
}

Test(fidelity, reads_kvsim_timeseries_summing_replicas) {
  char path[512];
  temp_file("timeseries.csv",
            "time_s,replica,kv_cache_usage_perc,num_requests_running,num_requests_waiting\n"
            "1.000000,0,0.5,3,1\n1.000000,1,0.3,2,0\n1.250000,0,0.9,9,9\n2.000000,0,0.1,1,0\n",
            path, sizeof path);
  kvsim_fid_series_t s = {0};
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_series(path, &s, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(s.n, 2, "two periodic ticks (the preemption row at 1.25 s dropped), got %lld", (long long)s.n);
  cr_assert(near(s.v[0].running, 5, 0) && near(s.v[0].waiting, 1, 0), "replicas summed at 1 s");
  cr_assert(near(s.v[0].kv, 0.4, 1e-12), "KV usage averaged over replicas, got %g", s.v[0].kv);
  cr_assert(s.has_kv, "KV usage recorded");
  kvsim_fidelity_series_fini(&s);
}

/* The same header as kvsim writes, with a text column `note` added: a
 * quoted cell may hold a comma (or a line break) and the columns after it
 * stay in place. */
Test(fidelity, measured_requests_csv_quoted_cell_with_a_comma) {
  char path[512];
  temp_file("requests.csv",
            "request_id,replica,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,"
            "note,status\n"
            "0,0,1.0,1.25,1.5,2.5,10,3,\"slow, then fast\",finished\n"
            "1,0,2.0,2.0,\"2.25\",2.5,10,2,\"two\nlines\",finished\n",
            path, sizeof path);
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt = 0;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(fmt, KVSIM_FID_FMT_KVSIM, "kvsim's requests.csv");
  cr_assert_eq(l.finished, 2, "both rows finished (status after the quoted cells), got %lld",
               (long long)l.finished);
  cr_assert(near(kvsim_dist_mean(&l.ttft), (0.5 + 0.25) / 2, 1e-12), "TTFT 0.5 and 0.25, got %g",
            kvsim_dist_mean(&l.ttft));
  cr_assert(near(kvsim_dist_mean(&l.queue), 0.125, 1e-12), "queueing 0.25 and 0, got %g",
            kvsim_dist_mean(&l.queue));
  kvsim_fidelity_lat_fini(&l);
}

Test(fidelity, measured_errors_name_the_line_where_the_row_starts) {
  char path[512];
  temp_file("requests.csv",
            "request_id,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,note,"
            "status\n"
            "0,0,0,0.1,0.2,5,2,\"a\nb\",finished\n"
            "1,0,0,0.1,soon,5,2,,finished\n",
            path, sizeof path);
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a bad time is invalid content, got %d", rc);
  cr_assert(strstr(err.msg, path) && strstr(err.msg, ":4: column 'finish_s': bad value 'soon'"),
            "file, line 4 (after a two-line cell), column and value: %s", err.msg);
  kvsim_fidelity_lat_fini(&l);
  kvsim_fidelity_lat_init(&l);
  temp_file("requests.jsonl",
            "{\"input_toks\": 5, \"output_toks\": 2, \"queued_ts\": 2, \"scheduled_ts\": 1, "
            "\"first_token_ts\": 3, \"last_token_ts\": 4}\n",
            path, sizeof path);
  rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "scheduled before queued is invalid, got %d", rc);
  cr_assert(strstr(err.msg, ":1: inconsistent request (input 5, output 2, queued 2.000000"),
            "names line and values: %s", err.msg);
  kvsim_fidelity_lat_fini(&l);
  kvsim_fidelity_lat_init(&l);
  rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  cr_assert_eq(rc, KVSIM_EIO, "a file that is gone cannot be opened, got %d", rc);
  kvsim_fidelity_lat_fini(&l);
  temp_file("trace.csv", "arrival_s,prompt_tokens,output_tokens\n0,1,1\n", path, sizeof path);
  kvsim_fidelity_lat_init(&l);
  rc = kvsim_fidelity_read_measured(path, &l, &fmt, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a trace is not a measured run, got %d", rc);
  cr_assert(strstr(err.msg, "unknown format (expected LLMServingSim"), "says what is read: %s", err.msg);
  kvsim_fidelity_lat_fini(&l);
}

Test(fidelity, timeseries_quoted_cells_and_bad_numbers) {
  char path[512];
  temp_file("timeseries.csv",
            "t,prompt_throughput,running,waiting,kv_cache_pct\n"
            "1.0,\"1,024.5\",\"4\",1,50\n"
            "2.0,0,2,0,\"25\"\n",
            path, sizeof path);
  kvsim_fid_series_t s = {0};
  kvsim_err err = {0};
  int rc = kvsim_fidelity_read_series(path, &s, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(s.n, 2, "two ticks, got %lld", (long long)s.n);
  cr_assert(near(s.v[0].running, 4, 0) && near(s.v[0].kv, 0.5, 1e-12) && near(s.v[1].kv, 0.25, 1e-12),
            "quoted cells read, the quoted comma in another column ignored");
  kvsim_fidelity_series_fini(&s);
  temp_file("timeseries.csv", "t,running,waiting\n1.0,3,1\n2.0,three,0\n", path, sizeof path);
  memset(&s, 0, sizeof s);
  rc = kvsim_fidelity_read_series(path, &s, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a bad number is invalid, got %d", rc);
  cr_assert(strstr(err.msg, ":3: column 'running': bad value 'three' (expected a number)"),
            "names line, column and value: %s", err.msg);
  kvsim_fidelity_series_fini(&s);
  temp_file("timeseries.csv", "t,running,waiting\n1.0,3\n", path, sizeof path);
  memset(&s, 0, sizeof s);
  rc = kvsim_fidelity_read_series(path, &s, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a short row is invalid, got %d", rc);
  cr_assert(strstr(err.msg, ":2: row has 2 fields, the header has 3"), "names the line: %s", err.msg);
  kvsim_fidelity_series_fini(&s);
}

/* ---- the silicon and start-up tables ---- */

#define SIL_HEAD                                                                                   \
  "id,backend,backend_version,model_path,system,precision,mode,isl,osl,batch_size,tp_size,"      \
  "pp_size,attention_dp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"

Test(fidelity, silicon_rows_with_quoted_cells_are_named_by_their_line) {
  char path[512];
  temp_file("silicon.csv",
            SIL_HEAD "\"a, quoted\nid\",vllm,0.12.0,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,512,64,4,1,"
                     "1,,1,60.0,7.0\n"
                     "b,vllm,0.12.0,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,agg,\"256\",32,8,1,1,,1,40.0,6.0\n",
            path, sizeof path);
  kvsim_fid_sil_table_t t;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t, &err);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(t.n, 2, "two rows, got %lld", (long long)t.n);
  cr_assert_str_eq(t.rows[0].id, "a, quoted\nid", "the quoted id whole");
  cr_assert(t.rows[0].line == 2 && t.rows[1].line == 4, "rows named by their first line: %d, %d",
            t.rows[0].line, t.rows[1].line);
  cr_assert(t.rows[1].isl == 256 && !t.rows[1].skipped, "a quoted number; row kept: %s", t.rows[1].reason);
  kvsim_fidelity_silicon_free(&t);
  const char *filters[] = {"isl=256"};
  rc = kvsim_fidelity_silicon_read(path, filters, 1, &t, &err);
  cr_assert(rc == KVSIM_OK && t.n == 1 && t.rows[0].isl == 256, "a filter on a quoted cell: %s", err.msg);
  kvsim_fidelity_silicon_free(&t);
  unlink(path);
  temp_file("silicon.csv",
            SIL_HEAD "x,vllm,0.12.0,m,h100_sxm,,agg,\"5\n12\",64,4,1,1,,1,60.0,7.0\n", path,
            sizeof path);
  rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a bad integer is invalid, got %d", rc);
  cr_assert(strstr(err.msg, ":2: column 'isl': bad value '5\\x0a12'"), "names the line, escapes the value: %s",
            err.msg);
  cr_assert(t.n == 0 && !t.rows, "an error leaves the table empty");
}

/* A disaggregated row is skipped with the reason naming where it is scored. */
Test(fidelity, silicon_disagg_rows_are_skipped_with_where_they_are_scored) {
  char path[512];
  temp_file("silicon.csv",
            SIL_HEAD "d,sglang,0.5.8,meta-llama/Llama-3.1-8B-Instruct,h100_sxm,,disagg,512,64,4,1,1,,1,60.0,7.0\n",
            path, sizeof path);
  kvsim_fid_sil_table_t t;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert(t.n == 1 && t.rows[0].skipped, "the disagg row is skipped");
  cr_assert(strstr(t.rows[0].reason, "scripts/disagg_silicon.py"), "says where it is scored: %s", t.rows[0].reason);
  kvsim_fidelity_silicon_free(&t);
}

/* DeepSeek-R1 rows resolve to the catalog's deepseek-v3 (the same
 * architecture), are found by either name, and are not skipped for
 * their model. */
Test(fidelity, silicon_deepseek_r1_rows_run_as_deepseek_v3) {
  char path[512];
  temp_file("silicon.csv",
            SIL_HEAD "r,sglang,0.5.9,deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,128,4,8,1,,1,90.0,9.0\n"
                     "k,vllm,0.15.1,moonshotai/Kimi-K2.5,b200_sxm,fp8,agg,1024,128,4,8,1,,1,90.0,9.0\n",
            path, sizeof path);
  kvsim_fid_sil_table_t t;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t, &err);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(t.n, 2, "two rows, got %lld", (long long)t.n);
  cr_assert_str_eq(t.rows[0].model, "deepseek-v3", "R1 runs as deepseek-v3");
  cr_assert(!t.rows[0].skipped, "the R1 row is kept: %s", t.rows[0].reason);
  cr_assert(t.rows[1].skipped && strstr(t.rows[1].reason, "not in the catalog"),
            "a model the catalog lacks is still skipped: %s", t.rows[1].reason);
  kvsim_fidelity_silicon_free(&t);
  const char *filters[] = {"model=deepseek-v3"};
  rc = kvsim_fidelity_silicon_read(path, filters, 1, &t, &err);
  unlink(path);
  cr_assert(rc == KVSIM_OK && t.n == 1 && !strcmp(t.rows[0].id, "r"), "found by its catalog name: %s", err.msg);
  kvsim_fidelity_silicon_free(&t);
}

/* The InferenceMAX H100 Llama-70B rows ran vLLM 0.10.2 with their
 * config.yaml ignored (`--config=`): the replay gives them a bf16 KV cache
 * and the clients as max_num_seqs, about half the pool an fp8 cache has; the same sweep's B200 row and a row without a
 * silicon_data_source column keep the fp8 cache the precision implies. */
#define SIL_SRC_HEAD                                                                               \
  "id,silicon_data_source,backend,backend_version,model_path,system,precision,mode,isl,osl,"     \
  "batch_size,tp_size,pp_size,attention_dp_size,moe_ep_size,silicon_ttft_ms,silicon_tpot_ms\n"

static int64_t row_pool(const kvsim_fid_sil_row_t *r, kvsim_plan_t *plan, int64_t *max_num_seqs) {
  kvsim_scenario_t sc;
  kvsim_resolved_t res;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_silicon_scenario(r, NULL, 0, KVSIM_FID_SIL_RANGE_AUTO, &sc, &err);
  cr_assert_eq(rc, KVSIM_OK, "scenario of %s: %s", r->id, err.msg);
  rc = kvsim_scenario_resolve(&sc, &res, &err);
  cr_assert_eq(rc, KVSIM_OK, "resolve %s: %s", r->id, err.msg);
  *plan = res.plan;
  *max_num_seqs = res.sched.max_num_seqs;
  kvsim_scenario_fini(&sc);
  return res.plan.kv_cache_tokens;
}

Test(fidelity, silicon_h100_llama70b_sweep_runs_its_ignored_config) {
  char path[512];
  const char *src = "\"source_file=x.csv; model=Llama-3.1-70B; measured=2025-10-29T00:00:00.000Z\"";
  char text[2048];
  snprintf(text, sizeof text,
           SIL_SRC_HEAD "h,%s,vllm,,meta-llama/Llama-3.1-70B,h100_sxm,fp8,agg,8192,1024,64,2,1,1,1,59175.4,52.4\n"
                        "b,%s,vllm,,meta-llama/Llama-3.1-70B,b200_sxm,fp8,agg,8192,1024,64,2,1,1,1,900.0,30.0\n"
                        "l,\"measured=2025-10-30\",vllm,,meta-llama/Llama-3.1-70B,h100_sxm,fp8,agg,8192,1024,64,2,"
                        "1,1,1,900.0,30.0\n",
           src, src);
  temp_file("silicon.csv", text, path, sizeof path);
  kvsim_fid_sil_table_t t;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(t.n, 3, "three rows, got %lld", (long long)t.n);
  const kvsim_fid_sil_row_t *h = &t.rows[0], *b = &t.rows[1], *l = &t.rows[2];
  cr_assert_str_eq(h->measured, "2025-10-29", "the measured date");
  cr_assert(!strcmp(h->kv_cache_dtype, "auto") && h->max_num_seqs == 64, "bf16 KV, the clients as max_num_seqs");
  cr_assert(!b->kv_cache_dtype[0] && b->max_num_seqs == 0,
            "the B200 row ran its config: nothing added");
  cr_assert(!l->kv_cache_dtype[0] && !strcmp(l->measured, "2025-10-30"), "another date is another campaign");
  kvsim_plan_t ph, pl;
  int64_t seqs_h, seqs_l;
  int64_t pool_h = row_pool(h, &ph, &seqs_h), pool_l = row_pool(l, &pl, &seqs_l);
  cr_assert(ph.kv_bytes_per_element == 2 && pl.kv_bytes_per_element == 1, "bf16 against fp8: %g, %g",
            ph.kv_bytes_per_element, pl.kv_bytes_per_element);
  cr_assert(seqs_h == 64 && seqs_l > 64, "max_num_seqs %lld and %lld", (long long)seqs_h, (long long)seqs_l);
  /* 80 layers x 4 KV heads x 128 x 2 x 2 bytes a token on each of 2 GPUs:
   * a pool of 200-240k tokens against 400-430k for an fp8 cache. */
  cr_assert(pool_h > 150000 && pool_h < 260000 && pool_l > 380000, "pools %lld and %lld tokens",
            (long long)pool_h, (long long)pool_l);
  kvsim_fidelity_silicon_free(&t);
}

/* InferenceX's DeepSeek-R1 fp8 B200 SGLang sweeps (silicon_launch.c): the
 * plain launch's rows get its scheduler options, the client's spread and
 * the receive interval; its MTP twin's rows, and the per-day rows that
 * may be either, are skipped with the reason; another campaign's rows get
 * nothing. */
Test(fidelity, silicon_inferencex_deepseek_b200_rows_get_their_launch) {
  char path[512];
  temp_file("silicon.csv",
            SIL_SRC_HEAD
            "db,\"db-dump/x; config_id=87; measured=2026-03-25T00:00:00.000Z\",sglang,0.5.9,"
            "deepseek-ai/DeepSeek-V3,b200_sxm,fp8,agg,1024,1024,32,8,1,1,1,527.5,16.9\n"
            "tp4,\"source_file=x.csv; measured=2026-03-25T16:34:14Z\",sglang,0.5.9,"
            "deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,8192,1024,16,4,1,1,1,997.3,22.3\n"
            "mtp,\"source_file=x.csv; measured=2026-03-25T16:34:14Z\",sglang,0.5.9,"
            "deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,8192,1024,128,8,1,1,1,4533.9,66.5\n"
            "either,\"source_file=x.csv; measured=2026-03-25T16:34:14Z\",sglang,0.5.9,"
            "deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,1024,1024,32,8,1,1,1,642.3,14.8\n"
            "dec,\"source_file=x.csv; measured=2025-12-31T15:18:00Z\",sglang,0.5.6,"
            "deepseek-ai/DeepSeek-R1,b200_sxm,fp8,agg,8192,1024,64,8,1,1,1,3089.7,40.6\n"
            "other,\"db-dump/x; config_id=87; measured=2026-03-26T00:00:00.000Z\",sglang,0.5.9,"
            "deepseek-ai/DeepSeek-V3,b200_sxm,fp8,agg,1024,1024,32,8,1,1,1,527.5,16.9\n",
            path, sizeof path);
  kvsim_fid_sil_table_t t;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(t.n, 6, "six rows, got %lld", (long long)t.n);
  const kvsim_fid_sil_row_t *db = &t.rows[0], *tp4 = &t.rows[1], *mtp = &t.rows[2],
                            *either = &t.rows[3], *dec = &t.rows[4], *other = &t.rows[5];
  cr_assert(!db->skipped && db->max_running_requests == 128 && db->chunked_prefill_size == 32768 &&
                db->max_prefill_tokens == 32768 && db->mem_fraction_static == 0.82 &&
                db->no_radix_cache && !strcmp(db->kv_cache_dtype, "fp8_e4m3") &&
                db->scheduler_recv_interval == 30,
            "TP 8 at 32 clients: dsr1_fp8_b200.sh's options (%s)", db->reason);
  cr_assert(kvsim_fidelity_sil_range_ratio(db, KVSIM_FID_SIL_RANGE_AUTO) == 0.8,
            "InferenceX's client spread");
  cr_assert(!tp4->skipped && tp4->max_running_requests == 32 && tp4->chunked_prefill_size == 8192 &&
                tp4->mem_fraction_static == 0.95 && tp4->scheduler_recv_interval == 10,
            "TP 4 (the MTP script runs TP 8 only): its own options (%s)", tp4->reason);
  cr_assert(mtp->skipped && strstr(mtp->reason, "MTP launch"),
            "128 clients at TP 8: the MTP sweep: %s", mtp->reason);
  cr_assert(either->skipped && strstr(either->reason, "the columns do not say"),
            "a per-day TP 8 row inside the plain sweep may be either: %s", either->reason);
  cr_assert(!dec->skipped && dec->max_running_requests == 128 && dec->scheduler_recv_interval == 30,
            "the 2025-12-31 row: dsr1_fp8_b200_docker.sh's options");
  cr_assert(!other->skipped && other->max_running_requests == 0 &&
                other->mem_fraction_static == 0 && !other->no_radix_cache &&
                !other->kv_cache_dtype[0] && other->scheduler_recv_interval == 0 &&
                kvsim_fidelity_sil_range_ratio(other, KVSIM_FID_SIL_RANGE_AUTO) ==
                    KVSIM_FID_SIL_RANGE_RATIO_SGLANG,
            "another date is another campaign: SGLang's defaults, fixed lengths");
  /* The launch reaches the scenario: the plan's fraction and the profile's options. */
  kvsim_scenario_t sc;
  rc = kvsim_fidelity_silicon_scenario(tp4, NULL, 0, KVSIM_FID_SIL_RANGE_AUTO, &sc, &err);
  cr_assert_eq(rc, KVSIM_OK, "scenario: %s", err.msg);
  kvsim_resolved_t res;
  rc = kvsim_scenario_resolve(&sc, &res, &err);
  cr_assert_eq(rc, KVSIM_OK, "resolve: %s", err.msg);
  cr_assert(res.plan.p.sglang.mem_fraction_static == 0.95 &&
                res.plan.p.sglang.chunked_prefill_size == 8192 &&
                res.plan.p.sglang.max_running_requests == 32 && !res.sched.enable_prefix_caching,
            "the plan runs the launch's fraction, chunk, cap and no radix cache");
  cr_assert(res.plan.kv_cache_tokens > 0, "at 0.95 a pool is left at TP 4");
  kvsim_scenario_fini(&sc);
  kvsim_fidelity_silicon_free(&t);
}

/* A row's mean decode step by term (what its TPOT is made of): the MoE
 * term is the B200 table's fused MXFP4 layer at gpt-oss-120b's shape and
 * the step's tokens, once per layer; the host term is the fixed part plus
 * the part per running request; the terms add up to the step. */
Test(fidelity, silicon_decode_step_terms_are_the_tables_and_the_host) {
  char path[512];
  temp_file("silicon.csv",
            SIL_HEAD "g4,vllm,0.15.1,openai/gpt-oss-120b,b200_sxm,fp4,agg,1024,1024,4,8,1,,1,25.4,2.99\n"
                     "g8,vllm,0.15.1,openai/gpt-oss-120b,b200_sxm,fp4,agg,1024,1024,8,8,1,,1,30.7,3.47\n",
            path, sizeof path);
  kvsim_fid_sil_table_t t;
  kvsim_err err = {0};
  int rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t, &err);
  unlink(path);
  cr_assert(rc == KVSIM_OK && t.n == 2, "read: %s", err.msg);
  kvsim_step_cost_t c4, c8, c0;
  rc = kvsim_fidelity_sil_decode_step(&t.rows[0], NULL, 0, KVSIM_FID_SIL_RANGE_AUTO, NULL, &c4, &err);
  cr_assert_eq(rc, KVSIM_OK, "decode step: %s", err.msg);
  cr_assert_eq(kvsim_fidelity_sil_decode_step(&t.rows[1], NULL, 0, KVSIM_FID_SIL_RANGE_AUTO, NULL, &c8, &err),
               KVSIM_OK, "%s", err.msg);
  const kvsim_kernels_t *k;
  cr_assert_eq(kvsim_kernels_get("b200", &k, &err), KVSIM_OK, "%s", err.msg);
  /* 36 MoE layers, 128 experts, top-4, hidden 2880, intermediate 2880, TP 8. */
  const double layer_us = kvsim_kernels_moe_us(k, "w4a16_mxfp4", 2880, 2880, 4, 128, 8, 1, 4);
  cr_assert(layer_us > 10 && layer_us < 50, "the table's layer at 4 tokens: %g us", layer_us);
  cr_assert(near(c4.moe_s, 36 * layer_us * 1e-6, 1e-9), "moe %g s, 36 x %g us", c4.moe_s, layer_us);
  cr_assert(near(c8.host_s - c4.host_s, 4 * KVSIM_HOST_PER_SEQ_US_VLLM_ASYNC * 1e-6, 1e-9),
            "host per request: %g s for 4 more", c8.host_s - c4.host_s);
  cr_assert(near(c4.host_s, (KVSIM_HOST_US_VLLM_ASYNC + 4 * KVSIM_HOST_PER_SEQ_US_VLLM_ASYNC) * 1e-6, 1e-9),
            "host %g s", c4.host_s);
  const double sum = c4.gemm_s + c4.attn_s + c4.moe_s + c4.comm_s + c4.elem_s + c4.host_s;
  cr_assert(c4.roofline_s < sum - c4.host_s && near(c4.total_s, sum, 1e-9), "terms %g s, total %g s", sum,
            c4.total_s);
  /* Coefficients given replace the GPU's: no host time, the same device. */
  kvsim_gpu_perf_t perf;
  memset(&perf, 0, sizeof perf);
  perf.host_us = perf.host_per_seq_us = 0;
  perf.frontend_us = perf.frontend_per_token_us = 0;
  cr_assert_eq(kvsim_fidelity_sil_decode_step(&t.rows[0], NULL, 0, KVSIM_FID_SIL_RANGE_AUTO, &perf, &c0, &err),
               KVSIM_OK, "%s", err.msg);
  cr_assert(c0.host_s == 0 && near(c0.total_s, c4.total_s - c4.host_s, 1e-9), "without host %g s", c0.total_s);
  kvsim_fidelity_silicon_free(&t);
}

#define SU_HEAD                                                                                    \
  "source_url,vllm_version,engine,model,gpu,num_gpus,tp,gpu_mem_util,max_model_len,"            \
  "kv_cache_dtype,block_size,weights_gib,available_kv_gib,kv_cache_tokens,gpu_blocks,"           \
  "max_concurrency,notes\n"

Test(fidelity, startup_table_reads_quoted_notes_and_names_bad_rows) {
  char path[512];
  temp_file("startup.csv",
            SU_HEAD "https://github.com/vllm-project/vllm/issues/1,0.6,V0,m,A100 80GB,1,1,0.9,4096,,16,"
                    "12.5,50.25,,7351,,\"Loading model weights took 12.5123 GB,\nthen \"\"--max-num-seqs 64\"\"\"\n"
                    "\n"
                    "https://github.com/vllm-project/vllm/pull/2,,V1,m2,H100,2,2,0.95,,,,,,,,,\n",
            path, sizeof path);
  kvsim_fid_startup_t t = {0};
  kvsim_err err = {0};
  int rc = kvsim_fidelity_startup_read(path, &t, &err);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(t.n, 2, "two rows (the blank line is none), got %lld", (long long)t.n);
  cr_assert(t.rows[0].index == 1 && t.rows[1].index == 2, "data rows counted from 1");
  cr_assert_str_eq(t.rows[0].source, "vllm#1", "the source shortened");
  cr_assert(near(t.rows[0].weights.v, 12.5123, 1e-12) && t.rows[0].weights.decimals == 4,
            "the finer weight from the quoted notes, after its comma: %g", t.rows[0].weights.v);
  cr_assert_eq(t.rows[0].max_num_seqs, 64, "a doubled quote inside the notes");
  cr_assert(t.rows[1].tp == 2 && near(t.rows[1].util, 0.95, 0), "the second row's settings");
  kvsim_fidelity_startup_fini(&t);
  unlink(path);
  temp_file("startup.csv", SU_HEAD "https://x,0.6,V0,m,A100\n", path, sizeof path);
  memset(&t, 0, sizeof t);
  rc = kvsim_fidelity_startup_read(path, &t, &err);
  cr_assert_eq(rc, KVSIM_EPARSE, "a short row is bad CSV, got %d", rc);
  cr_assert(strstr(err.msg, ":2: row has 5 fields, the header has 17"), "names the line: %s", err.msg);
  kvsim_fidelity_startup_fini(&t);
  unlink(path);
  temp_file("startup.csv", "vllm_version,engine\n", path, sizeof path);
  memset(&t, 0, sizeof t);
  rc = kvsim_fidelity_startup_read(path, &t, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EPARSE, "a missing column, got %d", rc);
  cr_assert(strstr(err.msg, ":1: missing column 'source_url' in the header"), "names it: %s", err.msg);
  kvsim_fidelity_startup_fini(&t);
  memset(&t, 0, sizeof t);
  rc = kvsim_fidelity_startup_read(path, &t, &err);
  cr_assert_eq(rc, KVSIM_EIO, "a file that is gone cannot be read, got %d", rc);
  kvsim_fidelity_startup_fini(&t);
}

/* A table with no row to validate is an error that says why, not a median
 * of nothing (nan%). */
Test(fidelity, startup_table_with_no_validated_row_is_an_error) {
  kvsim_fid_startup_t t = {0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_startup_evaluate(&t, &err), KVSIM_OK, "evaluate: %s", err.msg);
  cr_assert_eq(kvsim_fidelity_startup_validated(&t, &err), KVSIM_EINVAL,
               "an empty table validates nothing");
  cr_assert_str_eq(err.msg, "no row could be validated (the table has no rows)", "says so");
  kvsim_fidelity_startup_fini(&t);
  char path[512];
  temp_file("startup.csv",
            SU_HEAD
            "https://x/1,0.9.0,V1,no-such-model,H100 80GB,1,1,0.9,8192,,,,,,5000,,\n"
            "https://x/2,0.9.0,V1,meta-llama/Llama-3.1-8B,no-such-gpu,1,1,0.9,8192,,,,,,5000,,\n",
            path, sizeof path);
  memset(&t, 0, sizeof t);
  int rc = kvsim_fidelity_startup_read(path, &t, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(kvsim_fidelity_startup_evaluate(&t, &err), KVSIM_OK, "evaluate: %s", err.msg);
  cr_assert_eq(t.predicted, 0, "no row predicted");
  cr_assert_eq(kvsim_fidelity_startup_validated(&t, &err), KVSIM_EINVAL, "all rows skipped");
  cr_assert_str_eq(err.msg, "no row could be validated (2 skipped)", "counts the skipped rows");
  kvsim_fidelity_startup_fini(&t);
  temp_file("startup.csv",
            SU_HEAD
            "https://x/1,0.9.0,V1,meta-llama/Llama-3.1-8B,H100 80GB,1,1,0.9,8192,,,,,,5000,,\n",
            path, sizeof path);
  memset(&t, 0, sizeof t);
  rc = kvsim_fidelity_startup_read(path, &t, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_OK, "read: %s", err.msg);
  cr_assert_eq(kvsim_fidelity_startup_evaluate(&t, &err), KVSIM_OK, "evaluate: %s", err.msg);
  cr_assert_eq(kvsim_fidelity_startup_validated(&t, &err), KVSIM_OK,
               "one predicted row validates: %s", err.msg);
  kvsim_fidelity_startup_fini(&t);
}

/* A log that names its vLLM release is planned with that release's sizing
 * rules where they are modelled (V1 0.9.0: the CUDA context and NCCL
 * buffers in non-torch memory), an era mark "~" read as the release, and
 * an unmodelled or missing release falls back to the newest rules. */
Test(fidelity, startup_rows_use_the_logged_vllm_version) {
  char path[512];
  temp_file("startup.csv",
            SU_HEAD "https://x/1,0.9.0,V1,meta-llama/Llama-3.1-8B,H100 80GB,2,2,0.9,8192,,,,,,5000,,\n"
                    "https://x/2,,V1,meta-llama/Llama-3.1-8B,H100 80GB,2,2,0.9,8192,,,,,,5000,,\n"
                    "https://x/3,0.2.7,V1,meta-llama/Llama-3.1-8B,H100 80GB,2,2,0.9,8192,,,,,,5000,,\n"
                    "https://x/4,~0.6.4,V0,meta-llama/Llama-3.1-8B,H100 80GB,2,2,0.9,8192,,,,,,5000,,\n",
            path, sizeof path);
  kvsim_fid_startup_t t = {0};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_fidelity_startup_read(path, &t, &err), KVSIM_OK, "read: %s", err.msg);
  unlink(path);
  cr_assert_str_eq(t.rows[0].vllm_version, "0.9.0", "the logged release is kept");
  cr_assert_eq(kvsim_fidelity_startup_evaluate(&t, &err), KVSIM_OK, "evaluate: %s", err.msg);
  const struct {
    int version;
    double non_torch_gib;
  } want[] = {{KVSIM_VLLM_VERSION(0, 9, 0), 0.44 + 1.79},
              {KVSIM_VLLM_VERSION(0, 20, 0), 0.18},
              {KVSIM_VLLM_VERSION(0, 20, 0), 0.18},
              {KVSIM_VLLM_VERSION(0, 6, 4), 0.44 + 1.79}};
  for (int i = 0; i < 4; i++) {
    const kvsim_fid_su_result_t *r = &t.res[i];
    cr_assert(!r->skipped, "row %d evaluated: %s", i + 1, r->reason);
    cr_assert_eq(r->pred.p.vllm_version, want[i].version, "row %d: release %d, want %d", i + 1,
                 r->pred.p.vllm_version, want[i].version);
    cr_assert_eq(r->pred.non_torch_bytes, (int64_t)(want[i].non_torch_gib * 1073741824.0 + 0.5),
                 "row %d: non-torch %lld bytes", i + 1, (long long)r->pred.non_torch_bytes);
  }
  kvsim_fidelity_startup_fini(&t);
}

/* ---- calibration on planted coefficients ---- */

/* The step times come from the kernel tables; what a calibration fits is
 * the engine's host time per step, fixed and per scheduled request. */
static void set_host(kvsim_gpu_perf_t *p, double host_us, double per_seq_us) {
  p->host_us = host_us;
  p->host_per_seq_us = per_seq_us;
  p->frontend_us = 0;
  p->frontend_per_token_us = 0;
}

/* A calibration set of one run whose "measurement" is the run at a planted
 * host time (host_us, per_seq_us), to be fitted from start values. */
static void planted(kvsim_fid_calib_t *c, double host_us, double per_seq_us, double start_host,
                    double start_per_seq) {
  const char *path = KVSIM_SOURCE_DIR "/tests/golden/fidelity/calib.json";
  kvsim_err err = {0};
  kvsim_scenario_t truth, start;
  cr_assert_eq(kvsim_scenario_load(path, NULL, 0, &truth, &err), KVSIM_OK, "load: %s", err.msg);
  cr_assert_eq(kvsim_scenario_load(path, NULL, 0, &start, &err), KVSIM_OK, "load: %s", err.msg);
  set_host(&truth.gpu.perf, host_us, per_seq_us);
  set_host(&start.gpu.perf, start_host, start_per_seq);
  /* The "measurement": the run at the planted coefficients. */
  kvsim_fid_measured_t m;
  memset(&m, 0, sizeof m);
  kvsim_fidelity_lat_init(&m.lat);
  m.fmt = KVSIM_FID_FMT_KVSIM;
  snprintf(m.path, sizeof m.path, "planted");
  cr_assert_eq(kvsim_fidelity_simulate(&truth, &m.lat, NULL, NULL, &err), KVSIM_OK, "truth run: %s", err.msg);
  kvsim_scenario_fini(&truth);
  cr_assert_gt(m.lat.finished, 100, "the truth run finishes its requests");
  kvsim_fidelity_calib_init(c, &start.gpu);
  cr_assert_eq(kvsim_fidelity_calib_add_loaded(c, &m, &start, &err), KVSIM_OK, "add: %s", err.msg);
}

Test(fidelity, calibration_moves_the_host_time_towards_the_planted_one, .timeout = 120) {
  /* Planted 1000 us, started at 1500 us: the mean TPOT of the set grows
   * smoothly with the host time (8.73 ms at 1000 us, 9.33 ms at 1500), so
   * the fit must come closer and lower the TPOT error. */
  kvsim_err err = {0};
  kvsim_fid_calib_t c;
  planted(&c, 1000, 20, 1500, 20);
  const int fit[] = {KVSIM_FID_HOST};
  kvsim_fid_calib_opts_t opts = {.fit = fit, .nfit = 1, .max_iter = 30};
  kvsim_fid_calib_result_t r;
  int rc = kvsim_fidelity_calibrate(&c, &opts, &r, &err);
  cr_assert_eq(rc, KVSIM_OK, "calibrate: %s", err.msg);
  cr_assert(fabs(r.fitted.host_us - 1000) < 0.5 * (1500 - 1000), "host_us %g: at least halfway to 1000",
            r.fitted.host_us);
  cr_assert(r.is_free[KVSIM_FID_HOST] && !r.is_free[KVSIM_FID_HOST_PER_SEQ], "only the asked coefficient is free");
  cr_assert(near(r.fitted.host_per_seq_us, 20, 0), "a fixed coefficient keeps its value, got %g",
            r.fitted.host_per_seq_us);
  cr_assert(r.after.tpot_med < 0.5 * r.before.tpot_med, "the fit lowers the TPOT error: %g -> %g", r.before.tpot_med,
            r.after.tpot_med);
  cr_assert(strstr(r.fitted.source, "1 per-request run"), "the provenance names the data: %s", r.fitted.source);
  cr_assert_str_eq(r.fitted.kernels, c.gpu.perf.kernels, "the kernel tables are not fitted");
  cr_assert_eq(r.nres, (size_t)KVSIM_FID_RUN_METRICS, "12 residuals for one run, got %zu", r.nres);
  kvsim_fidelity_calib_result_fini(&r);
  kvsim_fidelity_calib_fini(&c);
}

/* A data set whose mean TPOT is smooth and monotone in host_us (8.73 ms
 * at 1000 us ... 11.17 ms at 3000 us) gives back the planted 1000 us from
 * 3000 us. It failed with the solver's finite-difference step of 0.03
 * (ending at ~2956 us): the step was below the run's own jitter. */
Test(fidelity, calibration_recovers_a_planted_host_time, .timeout = 120) {
  kvsim_err err = {0};
  kvsim_fid_calib_t c;
  planted(&c, 1000, 20, 3000, 20);
  const int fit[] = {KVSIM_FID_HOST};
  kvsim_fid_calib_opts_t opts = {.fit = fit, .nfit = 1, .max_iter = 30};
  kvsim_fid_calib_result_t r;
  cr_assert_eq(kvsim_fidelity_calibrate(&c, &opts, &r, &err), KVSIM_OK, "calibrate: %s", err.msg);
  cr_assert(near(r.fitted.host_us, 1000, 1000 * 0.05), "host_us recovered within 5 %%: %g", r.fitted.host_us);
  cr_assert_lt(r.after.tpot_med, 2.0, "close after the fit: %g %%", r.after.tpot_med);
  kvsim_fidelity_calib_result_fini(&r);
  kvsim_fidelity_calib_fini(&c);
}

Test(fidelity, calibration_coefficients_are_the_host_and_frontend_fields) {
  kvsim_gpu_perf_t p;
  memset(&p, 0, sizeof p);
  cr_assert_eq(kvsim_fidelity_coef(&p, KVSIM_FID_HOST), &p.host_us, "host_us");
  cr_assert_eq(kvsim_fidelity_coef(&p, KVSIM_FID_HOST_PER_SEQ), &p.host_per_seq_us, "host_per_seq_us");
  cr_assert_eq(kvsim_fidelity_coef(&p, KVSIM_FID_FRONTEND), &p.frontend_us, "frontend_us");
  cr_assert_eq(kvsim_fidelity_coef(&p, KVSIM_FID_FRONTEND_PER_TOKEN), &p.frontend_per_token_us,
               "frontend_per_token_us");
  static const char *const names[KVSIM_FID_NCOEF] = {"host_us", "host_per_seq_us", "frontend_us",
                                                     "frontend_per_token_us"};
  for (int k = 0; k < KVSIM_FID_NCOEF; k++)
    cr_assert_str_eq(kvsim_fidelity_coef_name(k), names[k], "name of %d", k);
  cr_assert_str_eq(kvsim_fidelity_coef_name(KVSIM_FID_NCOEF), "?", "out of range");
  /* Applying a fit copies the four numbers and leaves the tables alone. */
  kvsim_gpu_perf_t src, dst;
  memset(&src, 0, sizeof src);
  memset(&dst, 0, sizeof dst);
  snprintf(src.kernels, sizeof src.kernels, "h200");
  snprintf(dst.kernels, sizeof dst.kernels, "h100-sxm");
  src.status = KVSIM_CAL_KERNELS_BORROWED;
  dst.status = KVSIM_CAL_KERNELS;
  src.host_us = 1, src.host_per_seq_us = 2, src.frontend_us = 3, src.frontend_per_token_us = 4;
  kvsim_fidelity_apply_coefs(&dst, &src);
  cr_assert(dst.host_us == 1 && dst.host_per_seq_us == 2 && dst.frontend_us == 3 && dst.frontend_per_token_us == 4,
            "the coefficients copied");
  cr_assert_str_eq(dst.kernels, "h100-sxm", "the tables kept");
  cr_assert_eq(dst.status, KVSIM_CAL_KERNELS, "the status kept");
}

Test(fidelity, calibration_needs_enough_data) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &err), KVSIM_OK, "load: %s", err.msg);
  kvsim_fid_calib_t c;
  kvsim_fidelity_calib_init(&c, &g);
  kvsim_fid_calib_opts_t opts = {.max_iter = 1};
  kvsim_fid_calib_result_t r;
  int rc = kvsim_fidelity_calibrate(&c, &opts, &r, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "no data is an error, got %d", rc);
  cr_assert(strstr(err.msg, "not enough data for GPU 'h100-sxm'"), "names the GPU: %s", err.msg);
  kvsim_fidelity_calib_result_fini(&r);
  kvsim_fidelity_calib_fini(&c);

  int fitv[KVSIM_FID_NCOEF], n;
  cr_assert_eq(kvsim_fidelity_parse_fit("host_us,speed", fitv, &n, &err), KVSIM_EINVAL, "unknown coefficient");
  cr_assert(strstr(err.msg, "'speed'"), "names it: %s", err.msg);
  cr_assert_eq(kvsim_fidelity_parse_fit("mfu", fitv, &n, &err), KVSIM_EINVAL, "a removed coefficient is unknown");
  cr_assert(strstr(err.msg, "'mfu'"), "names it: %s", err.msg);
  cr_assert_eq(kvsim_fidelity_parse_fit("host_us,host_us", fitv, &n, &err), KVSIM_EINVAL, "repeated");
  cr_assert(strstr(err.msg, "twice"), "says so: %s", err.msg);
  cr_assert_eq(kvsim_fidelity_parse_fit("frontend_us,host_per_seq_us", fitv, &n, &err), KVSIM_OK, "parse: %s",
               err.msg);
  cr_assert(n == 2 && fitv[0] == KVSIM_FID_FRONTEND && fitv[1] == KVSIM_FID_HOST_PER_SEQ, "in the given order");
}
