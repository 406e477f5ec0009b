/* The format registry (names, detection, the requests.csv format), the
 * escaping of bad values, range checks where values are read, and the
 * kvsim CSV writer's refusals and write errors. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvsim/workload.h"
#include "tmpdir.h"
#include "workload/formats/format.h"
#include "workload/text.h"
#include "workload/wl.h"

static char paths[8][512];
static int next;

static void remove_tmp(void) {
  for (int i = 0; i < next && i < 8; i++)
    remove(paths[i]);
}

TestSuite(formats, .fini = remove_tmp);

static const char *tmp_path(const char *name) {
  cr_assert_lt(next, 8, "too many temp files in one test");
  char *p = paths[next++];
  const char *dir = test_tmpdir();
  snprintf(p, 512, "%s/kvsim_fmt_%ld_%s", dir, (long)getpid(), name);
  return p;
}

static const char *tmp_write(const char *name, const char *text) {
  const char *p = tmp_path(name);
  FILE *f = fopen(p, "wb");
  cr_assert(f, "cannot create %s", p);
  fputs(text, f);
  fclose(f);
  return p;
}

Test(formats, every_registered_format_has_a_name_and_a_reader) {
  int n = 0;
  for (const kvsim__format_t *const *f = kvsim__formats; *f; f++, n++) {
    cr_assert((*f)->name && (*f)->detect && (*f)->open && (*f)->next, "format %d complete", n);
    if ((*f)->selectable)
      cr_assert_eq(kvsim__format_find((*f)->name), *f, "%s found by name", (*f)->name);
    else
      cr_assert_null(kvsim__format_find((*f)->name), "%s is detected only", (*f)->name);
    cr_assert(strstr(kvsim__format_choices(), (*f)->name) || !(*f)->selectable,
              "%s listed in the choices", (*f)->name);
  }
  cr_assert_geq(n, 7, "azure, vidur, mooncake, llmservingsim, kvsim, requests, lengths");
  cr_assert_null(kvsim__format_find("auto"), "auto is not a format");
  cr_assert(!strncmp(kvsim__format_choices(), "auto, ", 6), "choices start with auto: %s",
            kvsim__format_choices());
}

static const char *detected(const char *name, const char *text) {
  const char *p = tmp_write(name, text);
  const kvsim__format_t *f = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__detect_format(p, &f, &err), 0, "%s detects: %s", name, err.msg);
  return kvsim__format_name(f);
}

Test(formats, detection_by_header_and_keys) {
  cr_assert_str_eq(detected("a", "TIMESTAMP,ContextTokens,GeneratedTokens\n"), "azure", "azure");
  cr_assert_str_eq(detected("v", "arrived_at,num_prefill_tokens,num_decode_tokens\n"), "vidur",
                   "vidur");
  cr_assert_str_eq(detected("k", "arrival_s,prompt_tokens,output_tokens\n"), "kvsim", "kvsim");
  cr_assert_str_eq(detected("r", "request_id,replica,arrival_s,first_scheduled_s,first_token_s,"
                                 "finish_s,prompt_tokens,output_tokens,cached_tokens,"
                                 "num_preemptions,ttft_s,tpot_s,e2e_s,status\n"),
                   "requests", "requests.csv before kvsim, whose columns it shares");
  cr_assert_str_eq(detected("l", "num_prefill_tokens,num_decode_tokens,pd_ratio\n"), "lengths",
                   "a length table");
  cr_assert_str_eq(detected("j", "\n{\"input_toks\": 1, \"output_toks\": 1, "
                                 "\"arrival_time_ns\": 0}\n"),
                   "llmservingsim", "LLMServingSim keys");
}

Test(formats, requests_csv_reads_back_in_arrival_order) {
  const char *p = tmp_write("requests.csv",
                            "request_id,replica,arrival_s,first_scheduled_s,first_token_s,"
                            "finish_s,prompt_tokens,output_tokens,cached_tokens,num_preemptions,"
                            "ttft_s,tpot_s,e2e_s,status\n"
                            "2,0,0.500000,0.5,0.6,0.9,30,3,0,0,0.1,0.1,0.4,finished\n"
                            "0,1,0.000000,0,0.2,1.5,10,1,0,0,0.2,,1.5,finished\n"
                            "3,0,0.500000,,,,40,4,0,0,,,,waiting\n"
                            "1,0,0.250000,0.3,,2.0,20,2,0,0,,,,rejected\n");
  char json[600];
  snprintf(json, sizeof json, "{\"trace\": \"%s\"}", p);
  cJSON *j = cJSON_Parse(json);
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_parse(j, NULL, "w", &cfg, &err), 0, "parses: %s", err.msg);
  cJSON_Delete(j);
  kvsim_source_t *s = NULL;
  cr_assert_eq(kvsim_source_open(cfg, 1, &s, &err), 0, "opens: %s", err.msg);
  const int64_t prompt[] = {10, 20, 30, 40};
  const kvsim_time_ns arr[] = {0, 250000000, 500000000, 500000000};
  kvsim_req_spec_t sp;
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "row %d: %s", i, err.msg);
    cr_assert_eq(sp.prompt_tokens, prompt[i], "row %d in request order: prompt %lld", i,
                 (long long)sp.prompt_tokens);
    cr_assert_eq(sp.arrival, arr[i], "row %d arrival", i);
    cr_assert_eq(sp.output_tokens, prompt[i] / 10, "row %d output", i);
  }
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_END, "four rows, any status");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(formats, only_measured_run_formats_record_latencies) {
  for (const kvsim__format_t *const *f = kvsim__formats; *f; f++) {
    bool want = !strcmp((*f)->name, "llmservingsim") || !strcmp((*f)->name, "requests") ||
                !strcmp((*f)->name, "aiperf");
    cr_assert_eq(kvsim__format_measures(*f), want, "%s %s latencies", (*f)->name,
                 want ? "records" : "records no");
  }
  const char *p = tmp_write("trace.csv", "arrival_s,prompt_tokens,output_tokens\n0,1,1\n");
  kvsim__reader_t *r = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__reader_open_measured(p, NULL, &r, &err), KVSIM_EPARSE,
               "a kvsim trace is no measured run");
  cr_assert_null(r, "no reader on error");
  cr_assert(strstr(err.msg, "format kvsim records no latencies"), "says why: %s", err.msg);
}

Test(formats, requests_csv_as_a_measured_run_keeps_file_order) {
  /* A quoted cell with a comma (the extra column) and a quoted time. */
  const char *p = tmp_write("requests.csv",
                            "request_id,replica,arrival_s,first_scheduled_s,first_token_s,"
                            "finish_s,prompt_tokens,output_tokens,note,status\n"
                            "2,0,0.5,0.5,\"0.625\",0.9,30,3,\"a, b\",finished\n"
                            "0,1,0.0,0,0.2,1.5,10,1,\"x\ny\",finished\n"
                            "1,0,0.25,,,,20,2,,rejected\n");
  kvsim__reader_t *r = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__reader_open_measured(p, NULL, &r, &err), 0, "opens: %s", err.msg);
  cr_assert_str_eq(kvsim__format_name(kvsim__reader_format(r)), "requests", "detected");
  kvsim__row_t row;
  cr_assert_eq(kvsim__reader_next(r, &row, &err), 1, "row 1: %s", err.msg);
  cr_assert(row.prompt_tokens == 30 && row.output_tokens == 3 && row.line == 2,
            "file order, not arrival order: prompt %lld line %lld", (long long)row.prompt_tokens,
            (long long)row.line);
  cr_assert(row.measured.finished && row.measured.arrival_s == 0.5 &&
                row.measured.scheduled_s == 0.5 && row.measured.first_token_s == 0.625 &&
                row.measured.finish_s == 0.9,
            "the recorded times, the quoted one too");
  cr_assert_eq(row.arrival, 500000000, "what a trace needs too: arrival %lld",
               (long long)row.arrival);
  cr_assert_eq(kvsim__reader_next(r, &row, &err), 1, "row 2: %s", err.msg);
  cr_assert(row.line == 3 && row.measured.finished && row.measured.finish_s == 1.5,
            "the second row (line %lld)", (long long)row.line);
  cr_assert_eq(kvsim__reader_next(r, &row, &err), 1, "row 3: %s", err.msg);
  cr_assert(row.line == 5 && !row.measured.finished,
            "a rejected row after a two-line cell: line %lld, no times", (long long)row.line);
  cr_assert_eq(kvsim__reader_next(r, &row, &err), 0, "three rows");
  kvsim__reader_close(r);
}

Test(formats, requests_csv_measured_errors_name_line_and_column) {
  const char *p = tmp_write("requests.csv",
                            "request_id,arrival_s,first_scheduled_s,first_token_s,finish_s,"
                            "prompt_tokens,output_tokens,note,status\n"
                            "0,0,0,0.1,0.2,5,2,\"two\nlines\",finished\n"
                            "1,0,0,0.1x,0.2,5,2,,finished\n");
  kvsim__reader_t *r = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__reader_open_measured(p, NULL, &r, &err), 0, "opens: %s", err.msg);
  kvsim__row_t row;
  cr_assert_eq(kvsim__reader_next(r, &row, &err), 1, "row 1: %s", err.msg);
  cr_assert_eq(kvsim__reader_next(r, &row, &err), KVSIM_EPARSE, "a bad time");
  cr_assert(strstr(err.msg, "requests.csv:4: column 'first_token_s': bad value '0.1x' (expected a "
                            "number)"),
            "names the line the row starts on, the column and the value: %s", err.msg);
  kvsim__reader_close(r);
  p = tmp_write("short.csv", "request_id,arrival_s,finish_s,prompt_tokens,output_tokens\n");
  cr_assert_eq(kvsim__reader_open_measured(p, NULL, &r, &err), KVSIM_EPARSE, "no latency columns");
  cr_assert(strstr(err.msg, ":1: missing column 'first_scheduled_s' for format requests"),
            "names the column: %s", err.msg);
}

Test(formats, llmservingsim_measured_run_is_a_trace_too) {
  const char *text = "{\"input_toks\": 100, \"output_toks\": 11, \"queued_ts\": 5.0, "
                     "\"scheduled_ts\": 5.5, \"first_token_ts\": 6.0, \"last_token_ts\": 7.0}\n"
                     "\n"
                     "{\"input_toks\": 50, \"output_toks\": 1, \"queued_ts\": 6.25, "
                     "\"scheduled_ts\": 6.25, \"first_token_ts\": 9.0, \"last_token_ts\": 9.0}\n";
  const char *p = tmp_write("requests.jsonl", text);
  kvsim__reader_t *r = NULL;
  kvsim_err err = {0};
  /* As a trace: arrivals as the engine queued the requests. */
  cr_assert_eq(kvsim__reader_open(p, NULL, 0, &r, &err), 0, "opens as a trace: %s", err.msg);
  kvsim__row_t row;
  cr_assert_eq(kvsim__reader_next(r, &row, &err), 1, "row 1: %s", err.msg);
  cr_assert(row.arrival == 0 && !row.measured.finished, "the first arrival is 0, no times");
  cr_assert_eq(kvsim__reader_next(r, &row, &err), 1, "row 2: %s", err.msg);
  cr_assert_eq(row.arrival, 1250000000, "queued 1.25 s later: %lld", (long long)row.arrival);
  cr_assert_eq(row.line, 3, "the blank line counts: line %lld", (long long)row.line);
  kvsim__reader_close(r);
  /* As a measured run: the recorded times as given. */
  cr_assert_eq(kvsim__reader_open_measured(p, NULL, &r, &err), 0, "opens: %s", err.msg);
  cr_assert_eq(kvsim__reader_next(r, &row, &err), 1, "row 1: %s", err.msg);
  cr_assert(row.measured.finished && row.measured.arrival_s == 5.0 &&
                row.measured.scheduled_s == 5.5 && row.measured.first_token_s == 6.0 &&
                row.measured.finish_s == 7.0 && row.prompt_tokens == 100 &&
                row.output_tokens == 11,
            "queued, scheduled, first and last token, lengths");
  kvsim__reader_close(r);
  p = tmp_write("bad.jsonl", "{\"input_toks\": 5, \"output_toks\": 2, \"queued_ts\": 2, "
                             "\"scheduled_ts\": 2, \"first_token_ts\": 1, \"last_token_ts\": 3}\n");
  cr_assert_eq(kvsim__reader_open_measured(p, NULL, &r, &err), 0, "opens: %s", err.msg);
  cr_assert_eq(kvsim__reader_next(r, &row, &err), KVSIM_EPARSE, "first token before queued");
  cr_assert(strstr(err.msg, "bad.jsonl:1: inconsistent request"), "names file and line: %s",
            err.msg);
  kvsim__reader_close(r);
}

/* Reads rows of the trace at p until an error; that error's code, err
 * holding its message, and *rows the rows read before it. */
static int read_until_error(const char *p, int *rows, kvsim_err *err) {
  kvsim__reader_t *r = NULL;
  int rc = kvsim__reader_open(p, NULL, 0, &r, err);
  *rows = 0;
  kvsim__row_t row;
  while (rc == 0 && (rc = kvsim__reader_next(r, &row, err)) == 1) {
    (*rows)++;
    rc = 0;
  }
  kvsim__reader_close(r);
  return rc;
}

Test(formats, jsonl_text_after_the_object_is_an_error) {
  kvsim_err err = {0};
  int rows;
  const char *p = tmp_write("two.jsonl", "{\"input_toks\": 8, \"output_toks\": 1, "
                                         "\"arrival_time_ns\": 10} \t\r\n"
                                         "{\"input_toks\": 8, \"output_toks\": 1, "
                                         "\"arrival_time_ns\": 20}{\"input_toks\": 9}\n");
  cr_assert_eq(read_until_error(p, &rows, &err), KVSIM_EPARSE, "a second object on a line");
  cr_assert_eq(rows, 1, "the first line, white space after its object, reads: %d", rows);
  cr_assert(strstr(err.msg, "two.jsonl:2: trailing characters after the JSON object"),
            "names file and line: %s", err.msg);
  p = tmp_write("junk.jsonl", "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, "
                              "\"hash_ids\": [0]} garbage\n");
  cr_assert_eq(read_until_error(p, &rows, &err), KVSIM_EPARSE, "text after a Mooncake object");
  cr_assert(strstr(err.msg, "junk.jsonl:1: trailing characters after the JSON object"),
            "names file and line: %s", err.msg);
}

Test(formats, jsonl_numbers_beyond_a_double_are_errors) {
  kvsim_err err = {0};
  int rows;
  /* cJSON reads 1e400 as inf, which once printed as bad value 'null'. */
  const char *p = tmp_write("inf.jsonl", "{\"input_toks\": 8, \"output_toks\": 1, "
                                         "\"arrival_time_ns\": 1e400}\n");
  cr_assert_eq(read_until_error(p, &rows, &err), KVSIM_EPARSE, "inf arrival");
  cr_assert(strstr(err.msg, "inf.jsonl:1: column 'arrival_time_ns': not a finite number"),
            "names line and key: %s", err.msg);
  p = tmp_write("unread.jsonl", "{\"input_toks\": 8, \"output_toks\": 1, "
                                "\"arrival_time_ns\": 0, \"arrival_time\": -1e400}\n");
  cr_assert_eq(read_until_error(p, &rows, &err), KVSIM_EPARSE, "inf in a key kvsim ignores");
  cr_assert(strstr(err.msg, ":1: column 'arrival_time': not a finite number"), "%s", err.msg);
  p = tmp_write("hash.jsonl", "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, "
                              "\"hash_ids\": [0, 1e999]}\n");
  cr_assert_eq(read_until_error(p, &rows, &err), KVSIM_EPARSE, "inf in an array");
  cr_assert(strstr(err.msg, ":1: column 'hash_ids': not a finite number"), "%s", err.msg);
}

Test(formats, jsonl_key_given_twice_is_an_error) {
  kvsim_err err = {0};
  int rows;
  const char *p =
      tmp_write("dup.jsonl", "{\"timestamp\": 0, \"input_length\": 100, \"output_length\": 5, "
                             "\"hash_ids\": [0]}\n"
                             "{\"timestamp\": 1, \"input_length\": 100, "
                             "\"input_length\": 200, \"output_length\": 5, "
                             "\"hash_ids\": [0]}\n");
  cr_assert_eq(read_until_error(p, &rows, &err), KVSIM_EPARSE, "the first value once won");
  cr_assert_eq(rows, 1, "the row before reads: %d", rows);
  cr_assert(strstr(err.msg, "dup.jsonl:2: duplicate key 'input_length'"), "names line and key: %s",
            err.msg);
}

Test(formats, escape_cuts_and_hides_bytes) {
  char buf[KVSIM__ESCAPE_MAX];
  cr_assert_str_eq(kvsim__escape("a\x01\n\xff", 4, buf, sizeof buf), "a\\x01\\x0a\\xff",
                   "non-printable bytes as \\xNN");
  char longv[200];
  memset(longv, 'y', sizeof longv);
  kvsim__escape(longv, sizeof longv, buf, sizeof buf);
  cr_assert_eq(strlen(buf), KVSIM__ESCAPE_CUT + 3, "cut at %d bytes plus '...': %zu",
               KVSIM__ESCAPE_CUT, strlen(buf));
  cr_assert(!strcmp(buf + KVSIM__ESCAPE_CUT, "..."), "ends with ...");
  memset(longv, '\x02', sizeof longv);
  kvsim__escape(longv, sizeof longv, buf, sizeof buf);
  cr_assert_lt(strlen(buf), sizeof buf, "escaped bytes fit the buffer");
}

Test(formats, values_are_range_checked_where_read) {
  int64_t ns;
  cr_assert_eq(kvsim__parse_azure_ts("2261-12-31 23:59:59.9999999", &ns), 0, "the last year");
  cr_assert_eq(kvsim__parse_azure_ts("2262-01-01 00:00:00", &ns), -2, "2262 is out of range");
  cr_assert_eq(kvsim__parse_azure_ts("1677-12-31 00:00:00", &ns), -2, "1677 is out of range");
  cr_assert_eq(kvsim__parse_azure_ts("1678-01-01 00:00:00", &ns), 0, "the first year");
  /* Each month's own length (2024-02-30 once read as 2024-03-01). */
  cr_assert_eq(kvsim__parse_azure_ts("2024-02-30 09:00:00", &ns), -1, "no February 30");
  cr_assert_eq(kvsim__parse_azure_ts("2023-02-29 09:00:00", &ns), -1, "2023 is no leap year");
  cr_assert_eq(kvsim__parse_azure_ts("2024-04-31 09:00:00", &ns), -1, "April has 30 days");
  cr_assert_eq(kvsim__parse_azure_ts("2024-02-29 09:00:00", &ns), 0, "2024 is a leap year");
  cr_assert_eq(kvsim__parse_azure_ts("2100-02-29 09:00:00", &ns), -1, "2100 is not");
  cr_assert_eq(kvsim__parse_azure_ts("2000-02-29 09:00:00", &ns), 0, "2000 is");
  cr_assert_eq(kvsim__parse_azure_ts("2023-12-31 23:59:60", &ns), 0, "a leap second");
  kvsim_time_ns t;
  cr_assert_eq(kvsim__parse_seconds_ns("9000000000", &t), 0, "the largest arrival");
  cr_assert_eq(kvsim__parse_seconds_ns("90000000009", &t), -1, "beyond it (once overflowed)");
  cr_assert_eq(kvsim__parse_seconds_ns("9e18", &t), -1, "beyond it in exponent form");
}

static void write_one(const char *out, int want_rc, const char *want) {
  kvsim__csv_writer_t w;
  kvsim_err err = {0};
  int rc = kvsim__csv_writer_open(&w, out, 0, &err);
  if (rc == 0) {
    kvsim_req_spec_t s = {.arrival = 0, .prompt_tokens = 1, .output_tokens = 1};
    rc = kvsim__csv_writer_row(&w, &s, &err);
    rc = rc < 0 ? rc : kvsim__csv_writer_commit(&w, &err);
  }
  cr_assert_eq(rc, want_rc, "%s: rc %d (%s)", out, rc, err.msg);
  if (want)
    cr_assert(strstr(err.msg, want), "%s: '%s' in '%s'", out, want, err.msg);
}

Test(formats, writer_replaces_regular_files_only) {
  const char *fifo = tmp_path("fifo");
  cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo");
  write_one(fifo, KVSIM_EINVAL, "not a regular file (a device, pipe or socket)");
  struct stat sb;
  cr_assert(stat(fifo, &sb) == 0 && S_ISFIFO(sb.st_mode), "the pipe is still a pipe");
  const char *dir = tmp_path("dir");
  cr_assert_eq(mkdir(dir, 0700), 0, "mkdir");
  write_one(dir, KVSIM_EINVAL, "not a regular file (a directory)");
  rmdir(dir);
  const char *f = tmp_path("ok.csv");
  write_one(f, 0, NULL);
  write_one(f, 0, NULL); /* over a regular file */
}

Test(formats, writer_full_disk_is_an_error_and_leaves_nothing) {
  if (access("/dev/full", W_OK) != 0)
    cr_skip_test("no writable /dev/full");
  const char *out = tmp_path("full.csv");
  kvsim__csv_writer_t w;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csv_writer_open(&w, out, 0, &err), 0, "opens: %s", err.msg);
  /* The temporary's writes go to a full disk from here on. */
  FILE *full = fopen("/dev/full", "wb");
  cr_assert(full, "opens /dev/full");
  fclose(w.f);
  w.f = full;
  kvsim_req_spec_t s = {.arrival = 0, .prompt_tokens = 1, .output_tokens = 1};
  int rc = kvsim__csv_writer_row(&w, &s, &err);
  if (rc == 0)
    rc = kvsim__csv_writer_commit(&w, &err);
  else
    kvsim__csv_writer_abort(&w);
  cr_assert_eq(rc, KVSIM_EIO, "a full disk is an error: rc %d", rc);
  cr_assert(strstr(err.msg, "write error"), "says so: %s", err.msg);
  cr_assert_neq(access(w.tmp, F_OK), 0, "the temporary is removed");
  cr_assert_neq(access(out, F_OK), 0, "nothing at the target");
}

/* Writes head, then n copies of byte c, then tail. */
static const char *tmp_fill(const char *name, const char *head, int c, size_t n, const char *tail) {
  const char *p = tmp_path(name);
  FILE *f = fopen(p, "wb");
  cr_assert(f, "cannot create %s", p);
  fputs(head, f);
  char block[65536];
  memset(block, c, sizeof block);
  for (size_t done = 0; done < n;) {
    size_t k = n - done < sizeof block ? n - done : sizeof block;
    cr_assert_eq(fwrite(block, 1, k, f), k, "writes %s", p);
    done += k;
  }
  fputs(tail, f);
  fclose(f);
  return p;
}

/* Reads every row of p: the first error's code (err says which), or 0. */
static int read_rows(const char *p, kvsim_err *err) {
  kvsim__reader_t *r = NULL;
  int rc = kvsim__reader_open(p, NULL, 0, &r, err);
  kvsim__row_t row;
  while (rc >= 0 && (rc = kvsim__reader_next(r, &row, err)) == 1)
    ;
  kvsim__reader_close(r);
  return rc;
}

#define LS_ROW "{\"input_toks\": 8, \"output_toks\": 1, \"arrival_time_ns\": 0}\n"

/* Regression: a JSON-lines line was as long as the file let it be (getline
 * grew to it), and a NUL byte was a blank line to skip, or the end of the
 * text, so a file of NULs was read to its end before "empty file". */
Test(formats, trace_lines_are_bounded_and_a_nul_byte_is_an_error_on_its_line) {
  kvsim_err err = {0};
  const char *p =
      tmp_fill("long.jsonl", LS_ROW "{\"input_toks\": 8, \"x\": \"", 'a', 17u << 20, "\"}\n");
  cr_assert_eq(read_rows(p, &err), KVSIM_EINVAL, "a 17 MiB line is refused");
  cr_assert(strstr(err.msg, "long.jsonl:2: line longer than 16 MiB"), "names file:line: %s",
            err.msg);
  /* Long but within the bound: read (the text column is not one of ours). */
  p = tmp_fill("text.jsonl",
               LS_ROW
               "{\"input_toks\": 8, \"output_toks\": 1, \"arrival_time_ns\": 5, \"prompt\": \"",
               'a', 4u << 20, "\"}\n");
  cr_assert_eq(read_rows(p, &err), 0, "a 4 MiB prompt text is fine: %s", err.msg);

  p = tmp_fill("nul.jsonl", LS_ROW LS_ROW, 0, 8u << 20, "");
  cr_assert_eq(read_rows(p, &err), KVSIM_EINVAL, "NULs after two rows");
  cr_assert(strstr(err.msg, "nul.jsonl:3: a NUL byte (a binary file?)"), "names file:line: %s",
            err.msg);
  p = tmp_fill("mid.jsonl", "{\"input_toks\": 8, ", 0, 1, "\"output_toks\": 1}\n");
  cr_assert_eq(read_rows(p, &err), KVSIM_EINVAL, "a NUL inside the first object");
  cr_assert(strstr(err.msg, "mid.jsonl:1: a NUL byte"), "%s", err.msg);

  /* Detection: a file of NULs (or blank lines, then NULs) is not empty. */
  p = tmp_fill("zeros.bin", "", 0, 8u << 20, "");
  const kvsim__format_t *fmt = NULL;
  cr_assert_eq(kvsim__detect_format(p, &fmt, &err), KVSIM_EINVAL, "NULs are refused at once");
  cr_assert(strstr(err.msg, "zeros.bin:1: a NUL byte (a binary file?)"), "not 'empty file': %s",
            err.msg);
  p = tmp_fill("blank.bin", "\n  \n", 0, 1u << 20, "");
  cr_assert_eq(kvsim__detect_format(p, &fmt, &err), KVSIM_EINVAL, "after blank lines");
  cr_assert(strstr(err.msg, "blank.bin:3: a NUL byte"), "on its line: %s", err.msg);
  p = tmp_fill("spaces.csv", "", ' ', 17u << 20, "\n");
  cr_assert_eq(kvsim__detect_format(p, &fmt, &err), KVSIM_EINVAL, "a 17 MiB blank line");
  cr_assert(strstr(err.msg, "spaces.csv:1: line longer than 16 MiB"), "%s", err.msg);
}

/* Regression: a JSON line nested past cJSON's limit said "invalid JSON". */
Test(formats, a_trace_line_nested_too_deep_says_so) {
  kvsim_err err = {0};
  const char *p = tmp_fill("deep.jsonl", LS_ROW "{\"input_toks\": 8, \"x\": ", '[', 1000, "");
  FILE *f = fopen(p, "ab");
  cr_assert(f, "reopen %s", p);
  for (int i = 0; i < 1000; i++)
    fputc(']', f);
  fputs("}\n", f);
  fclose(f);
  cr_assert_eq(read_rows(p, &err), KVSIM_EPARSE, "a bad line");
  cr_assert(strstr(err.msg, "deep.jsonl:2: invalid JSON: nested deeper than 1000 levels"),
            "says why: %s", err.msg);
}

/* kvsim CSV's lora column: the adapter each row names (empty or 0: the
 * base model); a bad cell names its line and column. */
Test(formats, kvsim_csv_lora_column) {
  const char *p = tmp_write("lora.csv", "arrival_s,prompt_tokens,output_tokens,lora\n"
                                        "0.0,10,1,3\n0.1,20,2,\n0.2,30,3,0\n0.3,40,4,-1\n");
  char json[600];
  snprintf(json, sizeof json, "{\"trace\": \"%s\"}", p);
  cJSON *j = cJSON_Parse(json);
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_workload_parse(j, NULL, "w", &cfg, &err), 0, "parses: %s", err.msg);
  cJSON_Delete(j);
  kvsim_source_t *s = NULL;
  cr_assert_eq(kvsim_source_open(cfg, 1, &s, &err), 0, "opens: %s", err.msg);
  const int32_t want[] = {3, 0, 0};
  kvsim_req_spec_t sp;
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "row %d: %s", i, err.msg);
    cr_assert_eq(sp.lora, want[i], "row %d: adapter %d, got %d", i, want[i], sp.lora);
  }
  cr_assert_lt(kvsim_source_next(s, &sp, &err), 0, "a negative adapter is an error");
  cr_assert(strstr(err.msg, ":5: column 'lora'"), "names line 5 and the column: %s", err.msg);
  cr_assert_eq(kvsim__source_columns(s) & KVSIM__COL_LORA, KVSIM__COL_LORA,
               "convert and gen write the column back");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

/* kvsim__parse_int as it was, all through strtoll: the reference for the
 * summed fast path. */
static int ref_parse_int(const char *s, int64_t *out) {
  while (*s == ' ' || *s == '\t')
    s++;
  const char *p = s;
  if (*p == '+' || *p == '-')
    p++;
  if (!isdigit((unsigned char)*p))
    return -1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno)
    return -1;
  if (*end == '.') {
    end++;
    while (*end == '0')
      end++;
  }
  while (*end == ' ' || *end == '\t')
    end++;
  if (*end)
    return -1;
  *out = v;
  return 0;
}

/* The same verdict and value as strtoll over random fields of digits,
 * signs, points, blanks and letters, and around the int64 limits. */
Test(formats, integer_fields_parse_as_strtoll_did) {
  static const char alpha[] = "0123456789000999+-.  \te";
  static const char *edge[] = {"9223372036854775807",
                               "9223372036854775808",
                               "-9223372036854775808",
                               "-9223372036854775809",
                               "999999999999999999",
                               "1000000000000000000",
                               "+0",
                               "-0",
                               "0000000000000000000000001",
                               "12.000",
                               "12.5",
                               "",
                               " ",
                               "-",
                               "+",
                               "1 2",
                               " 7\t",
                               "99999999999999999999999"};
  char buf[40];
  int64_t a = 0, b = 0;
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++) {
    a = b = -77;
    int ra = ref_parse_int(edge[i], &a), rb = kvsim__parse_int(edge[i], &b);
    cr_assert(ra == rb && a == b, "'%s': %d %lld against %d %lld", edge[i], ra, (long long)a, rb,
              (long long)b);
  }
  uint64_t s = 12345;
  int ok = 0;
  for (int it = 0; it < 2000000; it++) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    int len = (int)((s >> 59) + (it & 3 ? 0 : 8)) % 26;
    bool digits_only = it % 3 == 0;
    for (int k = 0; k < len; k++) {
      s = s * 6364136223846793005u + 1442695040888963407u;
      buf[k] = digits_only ? (char)('0' + (s >> 40) % 10) : alpha[(s >> 40) % (sizeof alpha - 1)];
    }
    buf[len] = '\0';
    if (digits_only && (s & 1))
      buf[0] = '-';
    a = b = -77;
    int ra = ref_parse_int(buf, &a), rb = kvsim__parse_int(buf, &b);
    cr_assert(ra == rb && a == b, "'%s': %d %lld against %d %lld", buf, ra, (long long)a, rb,
              (long long)b);
    ok += ra == 0;
  }
  cr_assert_gt(ok, 100000, "many were numbers (%d)", ok);
}
