/* The generic trace reader: detects the format of a file from its first
 * non-empty line (formats/registry.c), opens it as CSV with a header
 * (kvsim__csvrow) or as JSON lines, and hands rows out through the
 * format's table entry. Memory is O(1) in the trace length (except for
 * formats that say otherwise). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "workload/formats/format.h"

static const char *skip_ws(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  return s;
}

static int detect_line(const char *path, const char *l, const kvsim__format_t **fmt,
                       kvsim_err *err) {
  const char *t = skip_ws(l);
  if (!strncmp(t, "\xEF\xBB\xBF", 3))
    t += 3;
  bool json = *t == '{';
  for (const kvsim__format_t *const *f = kvsim__formats; *f; f++)
    if ((*f)->jsonl == json && (*f)->detect(t)) {
      *fmt = *f;
      return 0;
    }
  if (json)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:1: unknown JSON lines format (expected Mooncake keys timestamp, "
                         "input_length, output_length, hash_ids or LLMServingSim keys "
                         "input_toks, output_toks, arrival_time_ns)",
                         path);
  char hints[512] = "";
  size_t o = 0;
  for (const kvsim__format_t *const *f = kvsim__formats; *f; f++)
    if (!(*f)->jsonl && (*f)->hint && o < sizeof hints)
      o += (size_t)snprintf(hints + o, sizeof hints - o, "%s; ", (*f)->hint);
  char head[KVSIM__ESCAPE_MAX];
  kvsim__escape(t, strcspn(t, "\r\n"), head, sizeof head);
  return kvsim_err_set(err, KVSIM_EPARSE,
                       "%s:1: unknown trace format, header '%s' (expected %sor JSON lines)", path,
                       head, hints);
}

int kvsim__detect_format(const char *path, const kvsim__format_t **fmt, kvsim_err *err) {
  FILE *f;
  int rc = kvsim__open_input(path, KVSIM_ENOENT, &f, err);
  if (rc < 0)
    return rc;
  /* The first non-empty line decides. Lines are bounded, and a NUL byte
   * ends the search: a file of NULs was once read to its end (a blank
   * line to fgets) before it was called empty. */
  char *line = NULL;
  size_t cap = 0, n = 0;
  int64_t no = 0;
  bool got = false;
  while ((rc = kvsim__fmt_read_line(f, path, ++no, &line, &cap, &n, err)) == 1) {
    const char *t = skip_ws(line);
    if (*t != '\n' && *t != '\r' && *t) {
      got = true;
      break;
    }
  }
  fclose(f);
  if (rc >= 0)
    rc = got ? detect_line(path, line, fmt, err)
             : kvsim_err_set(err, KVSIM_EPARSE, "%s: empty file", path);
  kvsim__free(line);
  return rc;
}

static int reader_open(const char *path, const kvsim__format_t *fmt, int64_t hash_block_tokens,
                       bool measured, kvsim__reader_t **out, kvsim_err *err) {
  int rc;
  kvsim__reader_t *r = kvsim__calloc(1, sizeof *r);
  if (!r)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  r->fmt = fmt;
  r->measured = measured;
  r->hash_block = hash_block_tokens > 0 ? hash_block_tokens : 512;
  snprintf(r->path, sizeof r->path, "%s", path);
  for (int k = 0; k < KVSIM__FMT_MAX_COLS; k++)
    r->col[k] = -1;
  if (fmt->jsonl) {
    if ((rc = kvsim__open_input(path, KVSIM_ENOENT, &r->f, err)) < 0) {
      kvsim__reader_close(r);
      return rc;
    }
  } else if ((rc = kvsim__csvrow_open(path, true, &r->csv, err)) < 0) {
    kvsim__reader_close(r);
    return rc;
  }
  if ((rc = fmt->open(r, err)) < 0) {
    kvsim__reader_close(r);
    return rc;
  }
  *out = r;
  return 0;
}

int kvsim__reader_open(const char *path, const kvsim__format_t *fmt, int64_t hash_block_tokens,
                       kvsim__reader_t **out, kvsim_err *err) {
  *out = NULL;
  int rc;
  if (!fmt && (rc = kvsim__detect_format(path, &fmt, err)) < 0)
    return rc;
  return reader_open(path, fmt, hash_block_tokens, false, out, err);
}

int kvsim__reader_open_measured(const char *path, const kvsim__format_t *fmt,
                                kvsim__reader_t **out, kvsim_err *err) {
  *out = NULL;
  int rc;
  if (!fmt && (rc = kvsim__detect_format(path, &fmt, err)) < 0)
    return rc;
  if (!fmt->measures)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:1: format %s records no latencies (expected LLMServingSim "
                         "requests.jsonl or kvsim's requests.csv)",
                         path, fmt->name);
  /* hash_block_tokens: no measured format reads hash ids. */
  return reader_open(path, fmt, 0, true, out, err);
}

int kvsim__reader_next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  return r->fmt->next(r, row, err);
}

const kvsim__format_t *kvsim__reader_format(const kvsim__reader_t *r) { return r->fmt; }

unsigned kvsim__reader_columns(const kvsim__reader_t *r) {
  return r->fmt->columns ? r->fmt->columns(r) : 0;
}

void kvsim__reader_close(kvsim__reader_t *r) {
  if (!r)
    return;
  if (r->fmt && r->fmt->close)
    r->fmt->close(r);
  if (r->f)
    fclose(r->f);
  kvsim__csvrow_close(r->csv);
  kvsim__free(r->lbuf);
  kvsim__vec_free(&r->segs);
  kvsim__free(r);
}

int kvsim__load_lengths(const char *path, int32_t **pairs, int64_t *n, kvsim_err *err) {
  kvsim__reader_t *r;
  int rc = kvsim__reader_open(path, NULL, 512, &r, err);
  if (rc < 0)
    return rc;
  kvsim__vec(int32_t) a = {0};
  kvsim__row_t row;
  while ((rc = kvsim__reader_next(r, &row, err)) == 1) {
    if (row.prompt_tokens > INT32_MAX || row.output_tokens > INT32_MAX) {
      rc = kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: length above %d", path,
                         (long long)row.line, INT32_MAX);
      break;
    }
    if (kvsim__vec_reserve(&a, a.n + 2) < 0) {
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
      break;
    }
    a.v[a.n++] = (int32_t)row.prompt_tokens;
    a.v[a.n++] = (int32_t)row.output_tokens;
  }
  kvsim__reader_close(r);
  if (rc == 0 && a.n == 0)
    rc = kvsim_err_set(err, KVSIM_EPARSE, "%s: no rows", path);
  if (rc < 0) {
    kvsim__vec_free(&a);
    return rc;
  }
  *pairs = a.v;
  *n = a.n / 2;
  return 0;
}
