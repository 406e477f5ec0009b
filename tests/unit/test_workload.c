/* Workload: trace readers, the workload object, and what applies to any
 * source (ids, skip_bad_rows, time_scale, limit, max_total_tokens). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/workload.h"
#include "workload/wl.h"

/* A file under /tmp, unique per test process (Criterion forks per test);
 * removed when the test ends. */
static char paths[32][512];
static int next;

static void remove_tmp(void) {
  for (int i = 0; i < next && i < 32; i++)
    remove(paths[i]);
}

TestSuite(workload, .fini = remove_tmp);

static const char *tmp_write(const char *name, const char *text) {
  cr_assert_lt(next, 32, "too many temp files in one test");
  char *p = paths[next++];
  snprintf(p, 512, "/tmp/kvsim_wl_%ld_%s", (long)getpid(), name);
  FILE *f = fopen(p, "wb");
  cr_assert(f, "cannot create %s", p);
  fputs(text, f);
  fclose(f);
  return p;
}

static int parse(const char *json, kvsim_workload_cfg_t **cfg, kvsim_err *err) {
  cJSON *j = cJSON_Parse(json);
  cr_assert(j, "test JSON must parse: %s", json);
  int rc = kvsim_workload_parse(j, NULL, "s.json: workload", cfg, err);
  cJSON_Delete(j);
  return rc;
}

static kvsim_workload_cfg_t *trace_cfg(const char *path, const char *extra) {
  char json[2048];
  snprintf(json, sizeof json, "{\"trace\": \"%s\"%s%s}", path, extra ? ", " : "",
           extra ? extra : "");
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  int rc = parse(json, &cfg, &err);
  cr_assert_eq(rc, 0, "workload %s should parse: %s", json, err.msg);
  return cfg;
}

typedef struct got {
  int n;
  kvsim_req_spec_t spec[32];
  kvsim_segment_t segs[32][16];
  int rc; /* the last return code */
  kvsim_err err;
  int64_t skipped, clipped;
} got;

/* Reads everything (up to 32 requests) from a trace workload. */
static void read_all(const char *path, const char *extra, got *g) {
  memset(g, 0, sizeof *g);
  kvsim_workload_cfg_t *cfg = trace_cfg(path, extra);
  kvsim_source_t *s = NULL;
  int rc = kvsim_source_open(cfg, 1, &s, &g->err);
  cr_assert_eq(rc, 0, "open %s: %s", path, g->err.msg);
  kvsim_req_spec_t sp;
  while ((rc = kvsim_source_next(s, &sp, &g->err)) == KVSIM_SOURCE_REQUEST && g->n < 32) {
    g->spec[g->n] = sp;
    cr_assert_leq(sp.num_segments, 16, "test rows have few segments");
    if (sp.num_segments)
      memcpy(g->segs[g->n], sp.segments, (size_t)sp.num_segments * sizeof *sp.segments);
    g->spec[g->n].segments = g->segs[g->n];
    g->n++;
  }
  g->rc = rc;
  g->skipped = kvsim_source_skipped(s);
  g->clipped = kvsim_source_clipped(s);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

/* ---- numbers ------------------------------------------------------------- */

Test(workload, azure_timestamp_is_exact_to_100ns) {
  int64_t a, b;
  cr_assert_eq(kvsim__parse_azure_ts("2023-11-16 18:15:46.6805900", &a), 0, "parses");
  cr_assert_eq(kvsim__parse_azure_ts("2023-11-16 18:15:50.9951690", &b), 0, "parses");
  cr_assert_eq(b - a, INT64_C(4314579000), "gap exactly 4.314579 s, got %lld ns",
               (long long)(b - a));
  cr_assert_eq(kvsim__parse_azure_ts("2023-11-16 23:59:59.9999999", &a), 0, "parses");
  cr_assert_eq(kvsim__parse_azure_ts("2023-11-17 00:00:00.0000001", &b), 0, "parses");
  cr_assert_eq(b - a, 200, "midnight rollover: 200 ns, got %lld", (long long)(b - a));
  cr_assert_eq(kvsim__parse_azure_ts("2024-02-29 00:00:00", &a), 0, "leap day, no fraction");
  cr_assert_eq(kvsim__parse_azure_ts("2024-03-01 00:00:00", &b), 0, "parses");
  cr_assert_eq(b - a, INT64_C(86400000000000), "one day");
  cr_assert_eq(kvsim__parse_azure_ts("2023-11-16 18:15:46.", &a), -1, "empty fraction is bad");
  cr_assert_eq(kvsim__parse_azure_ts("2023-13-16 18:15:46", &a), -1, "month 13 is bad");
  cr_assert_eq(kvsim__parse_azure_ts("yesterday", &a), -1, "text is bad");
}

Test(workload, decimal_seconds_parse_without_float_error) {
  kvsim_time_ns t;
  cr_assert_eq(kvsim__parse_seconds_ns("4.314579", &t), 0, "parses");
  cr_assert_eq(t, INT64_C(4314579000), "exact: %lld", (long long)t);
  cr_assert_eq(kvsim__parse_seconds_ns("3501.721937000", &t), 0, "parses");
  cr_assert_eq(t, INT64_C(3501721937000), "exact: %lld", (long long)t);
  cr_assert_eq(kvsim__parse_seconds_ns("0.0000000015", &t), 0, "parses");
  cr_assert_eq(t, 2, "10th digit rounds: %lld", (long long)t);
  cr_assert_eq(kvsim__parse_seconds_ns("1e-3", &t), 0, "exponent form parses");
  cr_assert_eq(t, 1000000, "1e-3 s = 1 ms: %lld", (long long)t);
  cr_assert_eq(kvsim__parse_seconds_ns("1.5s", &t), -1, "trailing text is bad");
  cr_assert_eq(kvsim__parse_seconds_ns("", &t), -1, "empty is bad");
}

/* ---- readers ------------------------------------------------------------- */

Test(workload, azure_reader_arrivals_from_first_row) {
  const char *p = tmp_write("az.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46.6805900,374,44\n"
                                      "2023-11-16 18:15:50.9951690,396,109\n"
                                      "2023-11-16 18:15:50.9951690,5,1\n");
  got g;
  read_all(p, NULL, &g);
  cr_assert_eq(g.rc, KVSIM_SOURCE_END, "ends cleanly: %s", g.err.msg);
  cr_assert_eq(g.n, 3, "three rows, got %d", g.n);
  cr_assert_eq(g.spec[0].arrival, 0, "first row at 0");
  cr_assert_eq(g.spec[1].arrival, INT64_C(4314579000), "second at 4.314579 s");
  cr_assert_eq(g.spec[2].arrival, g.spec[1].arrival, "equal timestamps keep file order");
  cr_assert_eq(g.spec[1].prompt_tokens, 396, "prompt from ContextTokens");
  cr_assert_eq(g.spec[1].output_tokens, 109, "output from GeneratedTokens");
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(g.spec[i].id, (uint64_t)i, "ids 0-based in order");
    cr_assert_eq(g.spec[i].num_segments, 0, "Azure prompts are unique");
    cr_assert_eq(g.spec[i].client, -1, "open loop");
    cr_assert_eq(g.spec[i].session, -1, "no session");
  }
}

Test(workload, vidur_reader_ignores_extra_columns_and_handles_crlf_bom_no_newline) {
  const char *p = tmp_write("v.csv", "\xEF\xBB\xBF"
                                     "num_prefill_tokens,arrived_at,x,num_decode_tokens\r\n"
                                     "374,0.0,foo,44\r\n"
                                     "396,4.314579,bar,109");
  got g;
  read_all(p, NULL, &g);
  cr_assert_eq(g.rc, KVSIM_SOURCE_END, "ends cleanly: %s", g.err.msg);
  cr_assert_eq(g.n, 2, "two rows, got %d", g.n);
  cr_assert_eq(g.spec[1].arrival, INT64_C(4314579000), "arrived_at in seconds");
  cr_assert_eq(g.spec[1].prompt_tokens, 396, "num_prefill_tokens");
  cr_assert_eq(g.spec[1].output_tokens, 109, "num_decode_tokens (last row, no newline)");
}

Test(workload, mooncake_hash_ids_become_segments_last_partial) {
  const char *p = tmp_write("m.jsonl",
                            "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 5, "
                            "\"hash_ids\": [0, 1, 2]}\n"
                            "\n"
                            "{\"timestamp\": 2500, \"input_length\": 512, \"output_length\": 7, "
                            "\"hash_ids\": [0]}\n");
  got g;
  read_all(p, NULL, &g);
  cr_assert_eq(g.rc, KVSIM_SOURCE_END, "ends cleanly: %s", g.err.msg);
  cr_assert_eq(g.n, 2, "two rows (blank line skipped), got %d", g.n);
  cr_assert_eq(g.spec[0].num_segments, 3, "one segment per hash id");
  cr_assert_eq(g.spec[0].segments[0].id, 0, "id 0");
  cr_assert_eq(g.spec[0].segments[2].id, 2, "id 2");
  cr_assert_eq(g.spec[0].segments[0].len, 512, "full block");
  cr_assert_eq(g.spec[0].segments[2].len, 1100 - 2 * 512, "last block partial: %lld",
               (long long)g.spec[0].segments[2].len);
  cr_assert_eq(g.spec[1].arrival, INT64_C(2500000000), "timestamp in ms");
  cr_assert_eq(g.spec[1].segments[0].len, 512, "exactly one full block");

  read_all(p, "\"hash_block_tokens\": 1024", &g);
  cr_assert_eq(g.rc, KVSIM_EPARSE, "3 ids do not fit 1100 tokens of 1024-token blocks");
  cr_assert(strstr(g.err.msg, ":1: column 'hash_ids'"), "names line and column: %s", g.err.msg);
}

Test(workload, llmservingsim_reader_relative_to_first_row) {
  const char *p = tmp_write("l.jsonl",
                            "{\"input_toks\": 2358, \"output_toks\": 531, \"arrival_time_ns\": "
                            "46926808, \"lcp_with_earlier_toks\": 0}\n"
                            "{\"input_toks\": 1034, \"output_toks\": 769, \"arrival_time_ns\": "
                            "347938951}\n");
  got g;
  read_all(p, NULL, &g);
  cr_assert_eq(g.n, 2, "two rows: %s", g.err.msg);
  cr_assert_eq(g.spec[0].arrival, 0, "first row at 0");
  cr_assert_eq(g.spec[1].arrival, 347938951 - 46926808, "relative ns");
  cr_assert_eq(g.spec[0].prompt_tokens, 2358, "input_toks");
  cr_assert_eq(g.spec[1].output_tokens, 769, "output_toks");
}

Test(workload, a_trace_without_requests_is_an_error) {
  /* Once a run of it reported zeros as if measured. */
  const char *p = tmp_write("head.csv", "arrival_s,prompt_tokens,output_tokens\n");
  got g;
  read_all(p, NULL, &g);
  cr_assert_eq(g.rc, KVSIM_EINVAL, "a header alone: rc %d (%s)", g.rc, g.err.msg);
  cr_assert(strstr(g.err.msg, "head.csv: no requests"), "names the trace: %s", g.err.msg);
  p = tmp_write("bad.csv", "arrival_s,prompt_tokens,output_tokens\n0,x,1\n1,2\n");
  read_all(p, "\"skip_bad_rows\": true", &g);
  cr_assert_eq(g.rc, KVSIM_EINVAL, "every row skipped: rc %d (%s)", g.rc, g.err.msg);
  cr_assert(strstr(g.err.msg, "bad.csv: no requests (2 bad rows skipped)"), "%s", g.err.msg);
  p = tmp_write("one.csv", "arrival_s,prompt_tokens,output_tokens\n0,10,1\n");
  read_all(p, NULL, &g);
  cr_assert_eq(g.rc, KVSIM_SOURCE_END, "one row, then the end: %s", g.err.msg);
  cr_assert_eq(g.n, 1, "one request");
}

Test(workload, kvsim_csv_optional_columns) {
  const char *p = tmp_write("k.csv",
                            "arrival_s,prompt_tokens,output_tokens,tenant,priority,session,turn,"
                            "segments,prefix_group,prefix_tokens\n"
                            "0.5,100,10,3,1,7,0,,2,60\n"
                            "1.25,100,10,,,,,5:40 9:60,,\n"
                            "2,30,10,0,0,,,,,\n");
  got g;
  read_all(p, NULL, &g);
  cr_assert_eq(g.rc, KVSIM_SOURCE_END, "ends cleanly: %s", g.err.msg);
  cr_assert_eq(g.n, 3, "three rows");
  cr_assert_eq(g.spec[0].arrival, INT64_C(500000000), "arrival_s kept as written");
  cr_assert_eq(g.spec[0].tenant, 3, "tenant");
  cr_assert_eq(g.spec[0].priority, 1, "priority");
  cr_assert_eq(g.spec[0].session, 7, "session");
  cr_assert_eq(g.spec[0].num_segments, 2, "prefix_group: shared + unique segment");
  cr_assert_eq(g.spec[0].segments[0].id, KVSIM__SEG_GROUP | 2, "group id space");
  cr_assert_eq(g.spec[0].segments[0].len, 60, "prefix_tokens");
  cr_assert_eq(g.spec[0].segments[1].len, 40, "the rest unique");
  cr_assert_eq(g.spec[1].num_segments, 2, "explicit segments");
  cr_assert_eq(g.spec[1].segments[1].id, 9, "segment id");
  cr_assert_eq(g.spec[1].segments[1].len, 60, "segment len");
  cr_assert_eq(g.spec[1].session, -1, "empty session = none");
  cr_assert_eq(g.spec[2].num_segments, 0, "no identity = unique prompt");
}

Test(workload, format_is_detected_or_forced) {
  const char *az = tmp_write("a.txt", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46.6805900,374,44\n");
  const kvsim__format_t *fmt = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__detect_format(az, &fmt, &err), 0, "detects: %s", err.msg);
  cr_assert_str_eq(kvsim__format_name(fmt), "azure", "azure from the header, whatever the extension");
  const char *mc = tmp_write("m.txt", "{\"timestamp\": 0, \"input_length\": 1, "
                                      "\"output_length\": 1, \"hash_ids\": [0]}\n");
  cr_assert_eq(kvsim__detect_format(mc, &fmt, &err), 0, "detects: %s", err.msg);
  cr_assert_str_eq(kvsim__format_name(fmt), "mooncake", "mooncake from the keys");
  const char *junk = tmp_write("j.csv", "a,b,c\n1,2,3\n");
  cr_assert_eq(kvsim__detect_format(junk, &fmt, &err), KVSIM_EPARSE, "unknown header");
  cr_assert(strstr(err.msg, "j.csv:1:") && strstr(err.msg, "a,b,c"),
            "names file, line and header: %s", err.msg);

  /* Forcing a format whose columns are absent is an error naming one. */
  kvsim_workload_cfg_t *cfg = trace_cfg(az, "\"format\": \"vidur\"");
  kvsim_source_t *s = NULL;
  int rc = kvsim_source_open(cfg, 1, &s, &err);
  cr_assert_eq(rc, KVSIM_EPARSE, "vidur columns missing");
  cr_assert(strstr(err.msg, "missing column 'arrived_at'"), "names the column: %s", err.msg);
  kvsim_workload_cfg_free(cfg);
}

/* ---- bad rows ---------------------------------------------------------------- */

static void expect_bad(const char *name, const char *text, const char *want) {
  const char *p = tmp_write(name, text);
  got g;
  read_all(p, NULL, &g);
  cr_assert_eq(g.rc, KVSIM_EPARSE, "%s: a bad row is an error (rc %d)", name, g.rc);
  cr_assert(strstr(g.err.msg, p), "%s: message names the file: %s", name, g.err.msg);
  cr_assert(strstr(g.err.msg, want), "%s: message has '%s': %s", name, want, g.err.msg);
  cr_assert(!strchr(g.err.msg, '\n'), "one line: %s", g.err.msg);
}

Test(workload, bad_rows_name_file_line_column_value) {
  const char *h = "arrival_s,prompt_tokens,output_tokens\n0,1,1\n";
  char t[256];
  snprintf(t, sizeof t, "%s1,abc,1\n", h);
  expect_bad("nonnum.csv", t, ":3: column 'prompt_tokens': bad value 'abc'");
  snprintf(t, sizeof t, "%s1,-5,1\n", h);
  expect_bad("neg.csv", t, ":3: column 'prompt_tokens': bad value '-5'");
  snprintf(t, sizeof t, "%s1,5,0\n", h);
  expect_bad("zero.csv", t, ":3: column 'output_tokens': bad value '0'");
  snprintf(t, sizeof t, "%s1,5\n", h);
  expect_bad("narrow.csv", t, ":3: row has 2 fields, the header has 3");
  snprintf(t, sizeof t, "%s5,1,1\n4,1,1\n", h);
  expect_bad("back.csv", t, ":4: column 'arrival_s': bad value 4.000000000 s (goes backwards");
  expect_bad("az.csv",
             "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n"
             "2023-11-16 25:15:46.68,1,1\n",
             ":3: column 'TIMESTAMP': bad value '2023-11-16 25:15:46.68'");
  expect_bad("bad.jsonl",
             "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n"
             "{\"timestamp\": 1, \"input_length\": \n",
             ":2: invalid JSON");
  expect_bad("neg.jsonl",
             "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n"
             "{\"timestamp\": 1, \"input_length\": -3, \"output_length\": 1, \"hash_ids\": []}\n",
             ":2: column 'input_length': bad value '-3'");
}

Test(workload, skip_bad_rows_skips_and_counts) {
  const char *p = tmp_write("skip.csv", "arrival_s,prompt_tokens,output_tokens\n"
                                        "0,10,1\n"
                                        "1,x,1\n"
                                        "2,10,1\n"
                                        "1.5,10,1\n" /* backwards */
                                        "2,10\n"
                                        "3,20,2\n");
  got g;
  read_all(p, "\"skip_bad_rows\": true", &g);
  cr_assert_eq(g.rc, KVSIM_SOURCE_END, "ends cleanly: %s", g.err.msg);
  cr_assert_eq(g.n, 3, "three good rows, got %d", g.n);
  cr_assert_eq(g.skipped, 3, "three skipped, got %lld", (long long)g.skipped);
  cr_assert_eq(g.spec[2].id, 2, "ids count the rows kept");
  cr_assert_eq(g.spec[2].prompt_tokens, 20, "the last good row");
}

Test(workload, error_is_sticky) {
  const char *p = tmp_write("sticky.csv", "arrival_s,prompt_tokens,output_tokens\n0,x,1\n1,1,1\n");
  kvsim_workload_cfg_t *cfg = trace_cfg(p, NULL);
  kvsim_source_t *s;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_source_open(cfg, 1, &s, &err), 0, "opens");
  kvsim_req_spec_t sp;
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_EPARSE, "bad row");
  memset(&err, 0, sizeof err);
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_EPARSE, "the same error again");
  cr_assert(strstr(err.msg, ":2:"), "same message: %s", err.msg);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

/* ---- time_scale, limit, clipping ---------------------------------------------- */

Test(workload, time_scale_and_limit) {
  const char *p = tmp_write("ts.csv", "arrival_s,prompt_tokens,output_tokens\n"
                                      "10,1,1\n11,1,1\n13,1,1\n20,1,1\n");
  got g;
  read_all(p, "\"time_scale\": 0.5, \"limit\": 3", &g);
  cr_assert_eq(g.n, 3, "limit 3, got %d", g.n);
  cr_assert_eq(g.spec[0].arrival, INT64_C(10000000000), "the first arrival stays");
  cr_assert_eq(g.spec[1].arrival, INT64_C(10500000000), "gap 1 s -> 0.5 s");
  cr_assert_eq(g.spec[2].arrival, INT64_C(11500000000), "gap 2 s -> 1 s");
  read_all(p, "\"time_scale\": 2", &g);
  cr_assert_eq(g.n, 4, "all rows without a limit");
  cr_assert_eq(g.spec[3].arrival, INT64_C(30000000000), "10 s of gaps -> 20 s");
}

/* workload.rate on a trace: 5 rows over 4 s is 1.25 req/s (rows over the
 * first-to-last span, as trace stats); 2.5 req/s halves every gap. */
Test(workload, rate_replays_a_trace_at_a_mean_rate) {
  const char *p = tmp_write("rate.csv", "arrival_s,prompt_tokens,output_tokens\n"
                                        "10,1,1\n11,1,1\n12,1,1\n13,1,1\n14,1,1\n");
  got g;
  read_all(p, "\"rate\": 2.5", &g);
  cr_assert_eq(g.n, 5, "all rows: %s", g.err.msg);
  cr_assert_eq(g.spec[1].arrival, INT64_C(10500000000), "gap 1 s -> 0.5 s at twice the rate");
  cr_assert_eq(g.spec[4].arrival, INT64_C(12000000000), "span 4 s -> 2 s");
  kvsim_workload_cfg_t *cfg = trace_cfg(p, "\"rate\": 2.5, \"time_scale\": 7");
  cJSON *o = kvsim_workload_cfg_json(cfg);
  cr_assert_float_eq(cJSON_GetObjectItem(o, "time_scale")->valuedouble, 0.5, 1e-12,
                     "the derived time_scale replaces the given one and is reported");
  cr_assert_float_eq(cJSON_GetObjectItem(o, "trace_rate")->valuedouble, 1.25, 1e-12,
                     "the trace's own rate is reported");
  double r = 0;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_mean_rate(cfg, &r, &err), 0, "mean rate: %s", err.msg);
  cr_assert_float_eq(r, 2.5, 1e-12, "the rate replayed");
  cJSON_Delete(o);
  kvsim_workload_cfg_free(cfg);
  cfg = trace_cfg(p, "\"time_scale\": 2");
  cr_assert_eq(kvsim_workload_mean_rate(cfg, &r, &err), 0, "mean rate: %s", err.msg);
  cr_assert_float_eq(r, 0.625, 1e-12, "own rate / time_scale");
  kvsim_workload_cfg_free(cfg);
}

Test(workload, rate_on_synthetic_sets_the_arrival_rate_or_refuses) {
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  cr_assert_eq(parse("{\"rate\": 7, \"synthetic\": {\"requests\": 5, \"arrival\": "
                     "{\"process\": \"poisson\", \"rate\": 1}, \"prompt_tokens\": 5, "
                     "\"output_tokens\": 5}}",
                     &cfg, &err),
               0, "poisson takes a rate: %s", err.msg);
  double r = 0;
  cr_assert_eq(kvsim_workload_mean_rate(cfg, &r, &err), 0, "mean rate");
  cr_assert_float_eq(r, 7, 1e-12, "workload.rate replaces arrival.rate");
  kvsim_workload_cfg_free(cfg);
  cfg = NULL;
  cr_assert_eq(parse("{\"rate\": 7, \"synthetic\": {\"requests\": 5, \"arrival\": "
                     "{\"process\": \"closed_loop\", \"clients\": 2, \"think_s\": 1}, "
                     "\"prompt_tokens\": 5, \"output_tokens\": 5}}",
                     &cfg, &err),
               KVSIM_EINVAL, "a closed loop has no rate to set");
  cr_assert(strstr(err.msg, "s.json: workload.rate: the synthetic arrival process 'closed_loop'"),
            "names the key and the process: %s", err.msg);
  const char *one = tmp_write("one.csv", "arrival_s,prompt_tokens,output_tokens\n3,1,1\n");
  char json[600];
  snprintf(json, sizeof json, "{\"trace\": \"%s\", \"rate\": 2}", one);
  cr_assert_eq(parse(json, &cfg, &err), KVSIM_EINVAL, "one row has no mean rate");
  cr_assert(strstr(err.msg, "workload.rate: ") && strstr(err.msg, "1 rows"),
            "says why: %s", err.msg);
}

/* The typed shape the studies read instead of the scenario's tree: given
 * keys as given, nothing filled in by a default. */
Test(workload, shape_says_what_was_given) {
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  kvsim_workload_shape_t w;
  cr_assert_eq(parse("{\"synthetic\": {\"requests\": 50, \"arrival\": {\"process\": \"gamma\", "
                     "\"rate\": 3.5, \"cv\": 2}, \"prompt_tokens\": 5, \"output_tokens\": 5}}",
                     &cfg, &err),
               0, "gamma: %s", err.msg);
  kvsim_workload_shape(cfg, &w);
  cr_assert(w.synthetic && !w.rate_given && !w.duration_given, "synthetic, no rate, no duration");
  cr_assert_eq(w.requests, 50, "requests as given: %lld", (long long)w.requests);
  cr_assert(w.arrival_has_rate, "gamma has a rate");
  cr_assert_float_eq(w.arrival_rate, 3.5, 1e-12, "the arrival rate: %g", w.arrival_rate);
  kvsim_workload_cfg_free(cfg);
  cr_assert_eq(parse("{\"synthetic\": {\"duration_s\": 9, \"arrival\": {\"process\": "
                     "\"closed_loop\", \"clients\": 2}, \"prompt_tokens\": 5, "
                     "\"output_tokens\": 5}}",
                     &cfg, &err),
               0, "closed loop: %s", err.msg);
  kvsim_workload_shape(cfg, &w);
  cr_assert(w.duration_given && w.requests == 0, "a duration and no request count");
  cr_assert(!w.arrival_has_rate, "a closed loop has no rate");
  kvsim_workload_cfg_free(cfg);
  const char *t =
      tmp_write("shape.csv", "arrival_s,prompt_tokens,output_tokens\n0,1,1\n1,1,1\n2,1,1\n");
  char json[600];
  snprintf(json, sizeof json, "{\"trace\": \"%s\", \"limit\": 2, \"rate\": 4}", t);
  cr_assert_eq(parse(json, &cfg, &err), 0, "trace: %s", err.msg);
  kvsim_workload_shape(cfg, &w);
  cr_assert(!w.synthetic && w.rate_given && w.limit == 2, "a trace with its rate and limit");
  kvsim_workload_cfg_free(cfg);
  snprintf(json, sizeof json, "{\"trace\": \"%s\"}", t);
  cr_assert_eq(parse(json, &cfg, &err), 0, "trace: %s", err.msg);
  kvsim_workload_shape(cfg, &w);
  cr_assert(!w.rate_given && w.limit == 0, "no rate, no limit given");
  kvsim_workload_cfg_free(cfg);
}

Test(workload, max_total_tokens_clips_prompt_then_output) {
  const char *p = tmp_write("clip.jsonl",
                            "{\"timestamp\": 0, \"input_length\": 1100, \"output_length\": 100, "
                            "\"hash_ids\": [4, 5, 6]}\n"
                            "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5000, "
                            "\"hash_ids\": [4]}\n"
                            "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 50, "
                            "\"hash_ids\": [7]}\n");
  got g;
  read_all(p, "\"max_total_tokens\": 700", &g);
  cr_assert_eq(g.n, 3, "three rows: %s", g.err.msg);
  cr_assert_eq(g.spec[0].prompt_tokens, 600, "prompt cut first: %lld",
               (long long)g.spec[0].prompt_tokens);
  cr_assert_eq(g.spec[0].output_tokens, 100, "output kept");
  cr_assert_eq(g.spec[0].num_segments, 2, "segments cut to the prompt: %d",
               g.spec[0].num_segments);
  cr_assert_eq(g.spec[0].segments[0].len + g.spec[0].segments[1].len, 600, "sum = prompt");
  cr_assert_eq(g.spec[0].segments[1].len, 88, "second block partial");
  cr_assert_eq(g.spec[1].prompt_tokens, 1, "prompt down to 1");
  cr_assert_eq(g.spec[1].output_tokens, 699, "then output");
  cr_assert_eq(g.spec[2].prompt_tokens, 100, "short requests untouched");
  cr_assert_eq(g.clipped, 2, "two clipped, got %lld", (long long)g.clipped);
}

/* ---- the workload object --------------------------------------------------------- */

Test(workload, parse_errors_name_the_key_path) {
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  const char *p = tmp_write("ok.csv", "arrival_s,prompt_tokens,output_tokens\n0,1,1\n");
  char json[512];
  snprintf(json, sizeof json, "{\"trace\": \"%s\", \"time_scal\": 2}", p);
  cr_assert_eq(parse(json, &cfg, &err), KVSIM_EINVAL, "unknown key");
  cr_assert(strstr(err.msg, "s.json: workload.time_scal: unknown key (did you mean 'time_scale'"),
            "path and suggestion: %s", err.msg);
  snprintf(json, sizeof json, "{\"trace\": \"%s\", \"format\": \"csv\"}", p);
  cr_assert_eq(parse(json, &cfg, &err), KVSIM_EINVAL, "bad format");
  cr_assert(strstr(err.msg, "workload.format: bad value 'csv'"), "names value: %s", err.msg);
  snprintf(json, sizeof json, "{\"trace\": \"%s\", \"limit\": 0}", p);
  cr_assert_eq(parse(json, &cfg, &err), KVSIM_EINVAL, "limit 0");
  cr_assert(strstr(err.msg, "workload.limit: bad value 0"), "names value: %s", err.msg);
  cr_assert_eq(parse("{\"trace\": \"/nonexistent/x.csv\"}", &cfg, &err), KVSIM_ENOENT,
               "missing file");
  cr_assert(strstr(err.msg, "/nonexistent/x.csv"), "names the file: %s", err.msg);
  cr_assert_eq(parse("{}", &cfg, &err), KVSIM_EINVAL, "neither trace nor synthetic");
  cr_assert_eq(parse("{\"synthetic\": {\"requests\": 5, \"arrival\": {\"process\": \"poisson\", "
                     "\"rate\": 1}, \"prompt_tokens\": 5, \"output_tokens\": {\"dist\": "
                     "\"fixed\", \"value\": 5, \"sigma\": 1}}}",
                     &cfg, &err),
               KVSIM_EINVAL, "a parameter of another dist");
  cr_assert(strstr(err.msg, "synthetic.output_tokens.sigma: not a parameter of dist 'fixed'"),
            "names the key: %s", err.msg);
  cr_assert_eq(parse("{\"synthetic\": {\"requests\": 5, \"arival\": {}}}", &cfg, &err),
               KVSIM_EINVAL, "typo in synthetic");
  cr_assert(strstr(err.msg, "workload.synthetic.arival: unknown key (did you mean 'arrival'"),
            "did you mean: %s", err.msg);
  cr_assert_eq(parse("{\"synthetic\": {\"requests\": 5, \"arrival\": {\"process\": \"poisson\", "
                     "\"rate\": -1}, \"prompt_tokens\": 5, \"output_tokens\": 5}}",
                     &cfg, &err),
               KVSIM_EINVAL, "negative rate");
  cr_assert(strstr(err.msg, "synthetic.arrival.rate: bad value -1"), "value: %s", err.msg);
}

Test(workload, resolved_json_and_relative_paths) {
  const char *p = tmp_write("rel.csv", "arrival_s,prompt_tokens,output_tokens\n0,1,1\n");
  const char *base = strrchr(p, '/') + 1;
  char json[512];
  snprintf(json, sizeof json, "{\"trace\": \"%s\", \"time_scale\": 0.5}", base);
  cJSON *j = cJSON_Parse(json);
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_parse(j, "/tmp", "w", &cfg, &err), 0, "relative to base_dir: %s",
               err.msg);
  cJSON_Delete(j);
  cJSON *o = kvsim_workload_cfg_json(cfg);
  const cJSON *tr = cJSON_GetObjectItem(o, "trace");
  cr_assert(cJSON_IsString(tr) && !strcmp(tr->valuestring, p), "resolved path %s",
            tr ? tr->valuestring : "(none)");
  cr_assert_str_eq(cJSON_GetObjectItem(o, "format")->valuestring, "kvsim", "detected format");
  cr_assert_float_eq(cJSON_GetObjectItem(o, "time_scale")->valuedouble, 0.5, 1e-12, "echoed");
  cr_assert_eq(kvsim_workload_max_total_tokens(cfg), -1, "unknown for a trace");
  cJSON_Delete(o);
  kvsim_workload_cfg_free(cfg);
}

/* ---- the trace tool's flags ------------------------------------------------ */

/* A trace named on the command line has no scenario key: its errors name
 * the file alone ("workload.trace: " once led the user to a scenario that
 * did not exist), while a scenario's still name the key. */
Test(workload, a_trace_from_the_command_line_is_named_by_its_file_alone) {
  const char *p = tmp_write("nul.jsonl", "");
  FILE *f = fopen(p, "wb");
  cr_assert(f, "rewrite %s", p);
  fputc('\0', f);
  fclose(f);
  kvsim_trace_opts_t o = {"auto", 1.0, 0, 0, 512, false, false, false};
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  cr_assert_lt(kvsim_workload_for_trace(p, &o, &cfg, &err), 0, "a NUL byte is refused");
  char want[600];
  snprintf(want, sizeof want, "%s:1: a NUL byte (a binary file?)", p);
  cr_assert_str_eq(err.msg, want, "the file alone, no workload.trace prefix");
  o.format = "kvsim";
  cr_assert_lt(kvsim_workload_for_trace("/nonexistent/t.csv", &o, &cfg, &err), 0,
               "a missing file is refused");
  cr_assert_str_eq(err.msg, "/nonexistent/t.csv: cannot open: No such file or directory",
                   "the file alone with --format too");
  cr_assert_lt(parse("{\"trace\": \"/nonexistent/t.csv\", \"format\": \"kvsim\"}", &cfg, &err), 0,
               "a scenario's missing trace is refused");
  cr_assert(strstr(err.msg, "s.json: workload.trace: /nonexistent/t.csv: cannot open"),
            "a scenario's names its key: %s", err.msg);
}

/* Regression: trace stats refused a length table ("has lengths but no
 * arrival times"); it now reads its lengths and marks the timing figures
 * as not known. A run (and any reader without allow_lengths) still refuses
 * it, and prefix reuse, which needs prompt content, is refused by name. */
Test(workload, trace_stats_reads_a_length_table_and_says_what_it_lacks) {
  const char *p = tmp_write("len.csv", "prompt_tokens,output_tokens\n100,20\n300,40\n50,5\n");
  kvsim_trace_opts_t o = {"auto", 1.0, 0, 0, 512, false, false, false};
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_for_trace(p, &o, &cfg, &err), KVSIM_EINVAL, "refused for a run");
  cr_assert(strstr(err.msg, "has lengths but no arrival times"), "says why: %s", err.msg);
  o.allow_lengths = true;
  cr_assert_eq(kvsim_workload_for_trace(p, &o, &cfg, &err), 0, "read for stats: %s", err.msg);
  kvsim_source_t *src;
  cr_assert_eq(kvsim_source_open(cfg, 1, &src, &err), 0, "open: %s", err.msg);
  kvsim_trace_stats_t st;
  memset(&st, 0, sizeof st);
  cr_assert_eq(kvsim_trace_stats(src, true, &st, &err), 0, "stats: %s", err.msg);
  kvsim_source_close(src);
  cr_assert_eq(st.requests, 3, "three rows (%lld)", (long long)st.requests);
  cr_assert_not(st.arrivals, "no arrival times");
  cr_assert(isnan(st.rate_rps) && isnan(st.duration_s) && st.peak_1s == -1,
            "timing not known, not 0");
  cr_assert_float_eq(st.prompt.mean, 150.0, 1e-9, "prompt mean");
  cr_assert_float_eq(st.output.max, 40.0, 1e-9, "output max");
  cJSON *j = kvsim_trace_stats_json(&st, p, "lengths");
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "arrival_times")), "JSON says so");
  cr_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "rate_rps")), "rate is null");
  cJSON_Delete(j);
  cr_assert_eq(kvsim_source_open(cfg, 1, &src, &err), 0, "open: %s", err.msg);
  memset(&st, 0, sizeof st);
  st.prefix_block = 16;
  cr_assert_eq(kvsim_trace_stats(src, true, &st, &err), KVSIM_EINVAL, "no prefix reuse");
  cr_assert(strstr(err.msg, "--prefix-block-size: a length table has no prompt content"), "%s",
            err.msg);
  kvsim_source_close(src);
  kvsim_workload_cfg_free(cfg);
}

/* --time-scale is checked against the workload's own bound, by its flag
 * (1e30 was "workload.time_scale: bad value"); --seed given for a trace
 * was silently ignored. */
Test(workload, the_trace_flags_are_named_as_flags) {
  const char *p = tmp_write("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,10,5\n");
  kvsim_trace_opts_t o = {"auto", 1e30, 0, 0, 512, false, false, false};
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_for_trace(p, &o, &cfg, &err), KVSIM_EINVAL, "1e30 is refused");
  cr_assert_str_eq(err.msg, "--time-scale: bad value 1e+30 (expected > 0 and <= 1e+06)",
                   "names the flag and the bound");
  o.time_scale = 1e6;
  cr_assert_eq(kvsim_workload_for_trace(p, &o, &cfg, &err), 0, "1e6 is the bound: %s", err.msg);
  kvsim_workload_cfg_free(cfg);
  o.time_scale = 1;
  o.seed_given = true;
  cr_assert_eq(kvsim_workload_for_trace(p, &o, &cfg, &err), KVSIM_EINVAL, "--seed is refused");
  char want[600];
  snprintf(want, sizeof want, "--seed: applies to synthetic specs only (%s is a trace file)", p);
  cr_assert_str_eq(err.msg, want, "says why");
  cr_assert_null(cfg, "nothing built");
}

/* "1," was read as "1": a trailing empty item is an error like an inner one. */
Test(workload, lru_capacities_have_no_empty_item) {
  int64_t caps[KVSIM_TRACE_MAX_LRU];
  int n;
  const char *bad[] = {"1,", "1,,2", ",1", "", "1,2,"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(kvsim_trace_parse_lru_caps(bad[i], caps, &n), -1, "'%s' is refused", bad[i]);
  cr_assert_eq(kvsim_trace_parse_lru_caps("1,2", caps, &n), 0, "'1,2' is read");
  cr_assert_eq(n, 2, "two capacities (%d)", n);
  cr_assert_eq(caps[1], 2, "the second is 2 (%lld)", (long long)caps[1]);
}

/* ---- the registry's bounds ------------------------------------------------------ */

/* Every numeric workload key of the parameter registry (kvsim/params.h) is
 * parsed by the registry's bounds: its max (and its min, unless the row
 * excludes it) is taken, just past either is refused with the row's id. */
#define SYN_LENGTHS                                                                                \
  "\"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 10}, "                                      \
  "\"output_tokens\": {\"dist\": \"fixed\", \"value\": 10}"
#define SYN(arrival, more)                                                                         \
  "{\"synthetic\": {\"requests\": 10, \"arrival\": " arrival ", " SYN_LENGTHS more "}}"
#define POISSON "{\"process\": \"poisson\", \"rate\": 1}"
static const struct {
  int id;
  const char *json; /* %s: the value (a trace's: the trace's path first) */
} bound_cases[] = {
    {KVSIM_PARAM_WL_TIME_SCALE, "{\"trace\": \"%s\", \"time_scale\": %s}"},
    {KVSIM_PARAM_WL_LIMIT, "{\"trace\": \"%s\", \"limit\": %s}"},
    {KVSIM_PARAM_WL_HASH_BLOCK_TOKENS, "{\"trace\": \"%s\", \"hash_block_tokens\": %s}"},
    {KVSIM_PARAM_WL_MAX_TOTAL_TOKENS, "{\"trace\": \"%s\", \"max_total_tokens\": %s}"},
    {KVSIM_PARAM_WL_RATE, "{\"trace\": \"%s\", \"rate\": %s}"},
    {KVSIM_PARAM_WL_REQUESTS,
     "{\"synthetic\": {\"requests\": %s, \"arrival\": " POISSON ", " SYN_LENGTHS "}}"},
    {KVSIM_PARAM_WL_DURATION_S,
     "{\"synthetic\": {\"duration_s\": %s, \"arrival\": " POISSON ", " SYN_LENGTHS "}}"},
    {KVSIM_PARAM_WL_ARRIVAL_RATE, SYN("{\"process\": \"poisson\", \"rate\": %s}", "")},
    {KVSIM_PARAM_WL_ARRIVAL_CV, SYN("{\"process\": \"gamma\", \"rate\": 1, \"cv\": %s}", "")},
    {KVSIM_PARAM_WL_ARRIVAL_CLIENTS, SYN("{\"process\": \"closed_loop\", \"clients\": %s}", "")},
    {KVSIM_PARAM_WL_ARRIVAL_THINK_S,
     SYN("{\"process\": \"closed_loop\", \"clients\": 1, \"think_s\": %s}", "")},
    {KVSIM_PARAM_WL_ARRIVAL_BURST_RATE,
     SYN("{\"process\": \"bursts\", \"rate\": 0, \"burst_rate\": %s, \"burst_s\": 1, "
         "\"period_s\": 2}",
         "")},
    {KVSIM_PARAM_WL_ARRIVAL_BURST_S,
     SYN("{\"process\": \"bursts\", \"rate\": 0, \"burst_rate\": 1, \"burst_s\": %s, "
         "\"period_s\": 9e9}",
         "")},
    {KVSIM_PARAM_WL_ARRIVAL_PERIOD_S,
     SYN("{\"process\": \"diurnal\", \"rate\": 1, \"amplitude\": 0.5, \"period_s\": %s}", "")},
    {KVSIM_PARAM_WL_ARRIVAL_AMPLITUDE,
     SYN("{\"process\": \"diurnal\", \"rate\": 1, \"amplitude\": %s}", "")},
    {KVSIM_PARAM_WL_ARRIVAL_PHASE_S,
     SYN("{\"process\": \"diurnal\", \"rate\": 1, \"amplitude\": 0.5, \"phase_s\": %s}", "")},
    {KVSIM_PARAM_WL_PREFIX_SHARED_TOKENS, SYN(POISSON, ", \"prefix\": {\"shared_tokens\": %s}")},
    {KVSIM_PARAM_WL_PREFIX_GROUPS,
     SYN(POISSON, ", \"prefix\": {\"shared_tokens\": 4, \"groups\": %s}")},
    {KVSIM_PARAM_WL_PREFIX_FRACTION,
     SYN(POISSON, ", \"prefix\": {\"shared_tokens\": 4, \"fraction\": %s}")},
    {KVSIM_PARAM_WL_FEW_SHOT_TEMPLATES,
     SYN(POISSON, ", \"few_shot\": {\"templates\": %s, \"tokens\": {\"dist\": \"fixed\", "
                  "\"value\": 5}}")},
    {KVSIM_PARAM_WL_FEW_SHOT_FRACTION,
     SYN(POISSON, ", \"few_shot\": {\"templates\": 2, \"fraction\": %s, \"tokens\": {\"dist\": "
                  "\"fixed\", \"value\": 5}}")},
    {KVSIM_PARAM_WL_SESSIONS_THINK_S,
     SYN(POISSON, ", \"sessions\": {\"turns\": {\"dist\": \"fixed\", \"value\": 2}, "
                  "\"think_s\": %s}")},
    {KVSIM_PARAM_WL_SESSIONS_MAX_CONTEXT,
     SYN(POISSON, ", \"sessions\": {\"turns\": {\"dist\": \"fixed\", \"value\": 2}, "
                  "\"max_context\": %s}")},
    {KVSIM_PARAM_WL_TENANTS_COUNT, SYN(POISSON, ", \"tenants\": {\"count\": %s}")},
    {KVSIM_PARAM_WL_PRIORITY_LEVELS, SYN(POISSON, ", \"priority\": {\"levels\": %s}")},
    {KVSIM_PARAM_WL_LORA_ADAPTERS, SYN(POISSON, ", \"lora\": {\"adapters\": %s}")},
    {KVSIM_PARAM_WL_LORA_FRACTION, SYN(POISSON, ", \"lora\": {\"adapters\": 2, \"fraction\": %s}")},
};

/* Parses the case's JSON with value v: the error's row id, or 0 when it parses. */
static int bound_try(int c, const char *trace, double v, kvsim_err *err) {
  char num[64], json[2048];
  snprintf(num, sizeof num, "%.17g", v);
  if (!strncmp(bound_cases[c].json, "{\"trace\"", 8))
    snprintf(json, sizeof json, bound_cases[c].json, trace, num);
  else
    snprintf(json, sizeof json, bound_cases[c].json, num);
  kvsim_workload_cfg_t *cfg = NULL;
  *err = (kvsim_err){0};
  int rc = parse(json, &cfg, err);
  kvsim_workload_cfg_free(cfg);
  return rc == KVSIM_OK ? 0 : err->param ? err->param : -1;
}

Test(workload, every_numeric_key_parses_by_the_registrys_bounds) {
  const char *trace = tmp_write("b.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                         "2023-11-16 18:15:46.6805900,374,44\n"
                                         "2023-11-16 18:15:50.9951690,396,109\n");
  const int n = (int)(sizeof bound_cases / sizeof *bound_cases);
  for (int id = KVSIM_PARAM_WL_TRACE; id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    if (strncmp(p->key, "workload.", 9) || (p->type != KVSIM_PARAM_INT && p->type != KVSIM_PARAM_NUM))
      continue;
    int c = 0;
    while (c < n && bound_cases[c].id != id)
      c++;
    cr_assert_lt(c, n, "%s: a numeric workload key has a case here", p->key);
    const bool integer = p->type == KVSIM_PARAM_INT;
    const double above = integer ? p->max + 1 : p->max + fmax(fabs(p->max) * 1e-6, 1e-9);
    const double below = integer ? p->min - 1 : p->min - fmax(fabs(p->min) * 1e-6, 1e-9);
    kvsim_err err;
    cr_assert_eq(bound_try(c, trace, p->max, &err), 0, "%s = max %.17g parses: %s", p->key,
                 p->max, err.msg);
    cr_assert_eq(bound_try(c, trace, above, &err), id, "%s = %.17g is refused as the row's: %s",
                 p->key, above, err.msg);
    cr_assert(strstr(err.msg, kvsim_param_leaf(p)), "names the key: %s", err.msg);
    cr_assert_eq(bound_try(c, trace, below, &err), id, "%s = %.17g is refused as the row's: %s",
                 p->key, below, err.msg);
    if (p->flags & KVSIM_PARAM_MIN_OPEN)
      cr_assert_eq(bound_try(c, trace, p->min, &err), id, "%s excludes min %g", p->key, p->min);
    else
      cr_assert_eq(bound_try(c, trace, p->min, &err), 0, "%s = min %g parses: %s", p->key, p->min,
                   err.msg);
  }
}
