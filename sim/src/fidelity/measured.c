/* Readers of measured per-request files (kvsim/fidelity.h), the format
 * detected from the content, not the extension:
 * - LLMServingSim requests.jsonl: one JSON object per line with
 *   input_toks, output_toks and the engine's monotonic queued_ts,
 *   scheduled_ts, first_token_ts, last_token_ts. Latencies are anchored on
 *   queued_ts: TTFT = first - queued, TPOT = (last - first) / (out - 1),
 *   E2E = last - queued, queueing delay = scheduled - queued.
 * - aiperf's profile_export.jsonl: one record per line with "metadata"
 *   and "metrics" (workload/formats/aiperf.c), timed at the client.
 * - kvsim's own requests.csv, rows with status "finished".
 * - A benchmark result JSON (fidelity/bench_*.c): vLLM's `vllm bench
 *   serve --save-result` with or without --save-detailed, SGLang's
 *   bench_serving output; per-request lists when the file has them, else
 *   its aggregates.
 * The per-request files are read row by row by the workload room's format
 * readers (workload/formats/: what a trace needs and the recorded times of
 * each request); a benchmark result is one JSON document. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/alloc.h"
#include "core/util.h"
#include "fidelity/bench.h"
#include "fidelity/fid.h"
#include "kvsim/fidelity.h"
#include "workload/wl.h"

const char *kvsim_fidelity_fmt_name(kvsim_fid_fmt_t f) {
  switch (f) {
  case KVSIM_FID_FMT_LLMSERVINGSIM:
    return "llmservingsim";
  case KVSIM_FID_FMT_KVSIM:
    return "kvsim";
  case KVSIM_FID_FMT_VLLM_BENCH:
    return "vllm-bench";
  case KVSIM_FID_FMT_SGLANG_BENCH:
    return "sglang-bench";
  case KVSIM_FID_FMT_AIPERF:
    return "aiperf";
  default:
    return "unknown";
  }
}

bool kvsim_fidelity_fmt_client(kvsim_fid_fmt_t f) {
  return f == KVSIM_FID_FMT_VLLM_BENCH || f == KVSIM_FID_FMT_SGLANG_BENCH || f == KVSIM_FID_FMT_AIPERF;
}

/* ---- per-request files: the workload room's readers ---- */

/* The public format of each measured format of the workload room. */
static const struct {
  kvsim_fid_fmt_t fmt;
  const char *name; /* the workload room's */
} row_formats[] = {
    {KVSIM_FID_FMT_LLMSERVINGSIM, "llmservingsim"},
    {KVSIM_FID_FMT_KVSIM, "requests"},
    {KVSIM_FID_FMT_AIPERF, "aiperf"},
};

/* Reads every finished request of a file that the workload room reads
 * (wf: its format, or NULL to detect) into lat; has_queue: the file knows
 * when each request was first scheduled (an engine's file; a benchmark
 * client does not). */
static int read_rows(const char *path, const kvsim__format_t *wf, bool has_queue,
                     kvsim_fid_lat_t *lat, kvsim_err *err) {
  kvsim__reader_t *r;
  int rc = kvsim__reader_open_measured(path, wf, &r, err);
  if (rc < 0)
    return kvsim__fid_recode(rc, KVSIM_EINVAL, err);
  lat->has_queue = has_queue;
  kvsim__row_t row;
  while ((rc = kvsim__reader_next(r, &row, err)) == 1) {
    const kvsim__measured_t *m = &row.measured;
    if (m->has_unix && !(lat->first_arrival_unix_s <= (double)m->unix_ns / 1e9))
      lat->first_arrival_unix_s = (double)m->unix_ns / 1e9; /* the replay's t = 0, finished or not */
    if (!m->finished)
      continue; /* rejected or still in flight when the run stopped */
    if ((rc = kvsim_fidelity_lat_add(lat, m->arrival_s, m->scheduled_s, m->first_token_s,
                                     m->finish_s, row.prompt_tokens, row.output_tokens)) < 0) {
      kvsim_err_set(err, rc, "%s: out of memory", path);
      break;
    }
  }
  kvsim__reader_close(r);
  return rc < 0 ? kvsim__fid_recode(rc, KVSIM_EINVAL, err) : KVSIM_OK;
}

/* The workload format of a CSV measured run (kvsim's requests.csv), and
 * its public name; false when the header is no such file. */
static bool csv_format(const char *path, const kvsim__format_t **wf, kvsim_fid_fmt_t *fmt) {
  kvsim_err ignored = {0};
  if (kvsim__detect_format(path, wf, &ignored) < 0 || !kvsim__format_measures(*wf))
    return false;
  for (size_t k = 0; k < sizeof row_formats / sizeof *row_formats; k++)
    if (kvsim__format_find(row_formats[k].name) == *wf) {
      *fmt = row_formats[k].fmt;
      return true;
    }
  return false;
}

/* How much of the first line tells the format: far past any first
 * request row or the opening of a benchmark JSON. */
#define FIRST_LINE_MAX ((size_t)1 << 20)

/* Reads path into lat and, for a benchmark result, m (its format, run,
 * drive, aggregates). */
static int read_any(const char *path, kvsim_fid_lat_t *lat, kvsim_fid_measured_t *m, kvsim_err *err) {
  FILE *f;
  int rc = kvsim__open_input(path, KVSIM_EIO, &f, err);
  if (rc < 0)
    return rc;
  /* The format is told by the start of the first line, read to a bound:
   * a file of NUL bytes or one endless line once took all of its size
   * here. A benchmark JSON may be one line of many MiB; it is read whole
   * below, under the whole-file cap. */
  char *first = kvsim__malloc(FIRST_LINE_MAX + 1);
  if (!first) {
    fclose(f);
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  }
  size_t got = fread(first, 1, FIRST_LINE_MAX, f);
  bool bad = ferror(f);
  fclose(f);
  if (bad) {
    free(first);
    return kvsim_err_set(err, KVSIM_EIO, "%s: read error", path);
  }
  const char *nl = memchr(first, '\n', got);
  size_t len = nl ? (size_t)(nl - first) : got;
  if (memchr(first, '\0', len)) {
    free(first);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s:1: a NUL byte (a binary file?)", path);
  }
  first[len] = '\0';
  if (got == 0) {
    free(first);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: empty file", path);
  }
  const char *s = first;
  while (isspace((unsigned char)*s))
    s++;
  const kvsim__format_t *wf = NULL;
  m->has_arrivals = true;
  if (*s == '{' && strstr(s, "\"queued_ts\"")) {
    /* JSON lines whose first object has the LLMServingSim keys. */
    m->fmt = KVSIM_FID_FMT_LLMSERVINGSIM;
    rc = read_rows(path, kvsim__format_find("llmservingsim"), true, lat, err);
  } else if (*s == '{' && strstr(s, "\"metadata\"") && strstr(s, "\"metrics\"")) {
    m->fmt = KVSIM_FID_FMT_AIPERF;
    rc = read_rows(path, kvsim__format_find("aiperf"), false, lat, err);
  } else if (*s == '{') {
    char *text = NULL;
    m->has_arrivals = false;
    rc = kvsim__read_file(path, &text, NULL, err);
    if (rc == KVSIM_OK)
      rc = kvsim__bench_read(text, path, lat, m, err);
    free(text);
  } else if (csv_format(path, &wf, &m->fmt)) {
    rc = read_rows(path, wf, true, lat, err);
  } else {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: unknown format (expected LLMServingSim requests.jsonl, kvsim requests.csv, "
                       "aiperf profile_export.jsonl, or a vLLM or SGLang benchmark result)",
                       path);
  }
  free(first);
  if (rc == KVSIM_OK && lat->finished == 0 && !m->aggregates_only)
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no finished request", path);
  return rc;
}

int kvsim__fid_read_measured(const char *path, kvsim_fid_measured_t *m, kvsim_err *err) {
  return read_any(path, &m->lat, m, err);
}

int kvsim_fidelity_read_measured(const char *path, kvsim_fid_lat_t *lat, kvsim_fid_fmt_t *fmt, kvsim_err *err) {
  kvsim_fid_measured_t *m = kvsim__calloc(1, sizeof *m);
  if (!m)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  int rc = read_any(path, lat, m, err);
  *fmt = m->fmt;
  if (rc == KVSIM_OK && m->aggregates_only)
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: a benchmark result with aggregates only, no per-request lists "
                       "(kvsim_fidelity_measured_load compares those)",
                       path);
  free(m);
  return rc;
}
