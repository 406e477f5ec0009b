/* What every format shares: header lookup, cells and keys read with
 * their range checked, errors that name file, line, column, value and the
 * allowed range (the value escaped and cut), and the row's segments. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/arith.h"
#include "core/util.h"
#include "workload/formats/format.h"

/* ---- detection ---------------------------------------------------------------- */

bool kvsim__header_has(const char *header, const char *name) {
  size_t l = strlen(name);
  for (const char *p = header; *p;) {
    while (*p == ' ' || *p == '"' || *p == '\t')
      p++;
    if (!strncasecmp(p, name, l) && (p[l] == ',' || p[l] == '"' || p[l] == ' ' ||
                                     p[l] == '\r' || p[l] == '\n' || p[l] == '\0'))
      return true;
    const char *c = strchr(p, ',');
    if (!c)
      break;
    p = c + 1;
  }
  return false;
}

bool kvsim__json_has(const char *line, const char *key) {
  char q[64];
  snprintf(q, sizeof q, "\"%s\"", key);
  return strstr(line, q) != NULL;
}

/* ---- CSV ------------------------------------------------------------------------ */

int kvsim__fmt_column(kvsim__reader_t *r, const char *const *alts, int n, int *col,
                      const char **name, kvsim_err *err) {
  *col = -1;
  int nc = kvsim__csvrow_ncolumns(r->csv);
  for (int i = 0; i < nc && *col < 0; i++)
    for (int k = 0; k < n; k++)
      if (!strcasecmp(kvsim__csvrow_colname(r->csv, i), alts[k])) {
        *col = i;
        *name = alts[k];
        break;
      }
  if (*col < 0)
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:1: missing column '%s' for format %s", r->path,
                         alts[0], r->fmt->name);
  return 0;
}

int kvsim__fmt_opt_column(const kvsim__reader_t *r, const char *name) {
  return kvsim__csvrow_column(r->csv, name);
}

int kvsim__fmt_csv_row(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  int rc = kvsim__csvrow_next(r->csv, err);
  if (rc <= 0)
    return rc;
  memset(row, 0, sizeof *row);
  row->line = kvsim__csvrow_line(r->csv);
  row->session = -1;
  r->segs.n = 0;
  return 1;
}

int kvsim__fmt_csv_bad(const kvsim__reader_t *r, int col, const char *name, const char *what,
                       kvsim_err *err) {
  const char *v = kvsim__csvrow_field(r->csv, col);
  char esc[KVSIM__ESCAPE_MAX];
  kvsim__escape(v ? v : "", v ? strlen(v) : 0, esc, sizeof esc);
  return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': bad value '%s' (expected %s)",
                       r->path, (long long)kvsim__csvrow_field_line(r->csv, col), name, esc,
                       what);
}

static bool blank(const char *v) {
  while (*v == ' ' || *v == '\t')
    v++;
  return !*v;
}

int kvsim__fmt_csv_int(const kvsim__reader_t *r, int col, const char *name, int64_t lo,
                       int64_t hi, bool required, int64_t *out, kvsim_err *err) {
  const char *v = kvsim__csvrow_field(r->csv, col);
  if (!v && required)
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': missing", r->path,
                         (long long)kvsim__csvrow_line(r->csv), name);
  if (!v || (!required && blank(v)))
    return 0;
  int64_t x;
  if (kvsim__parse_int(v, &x) < 0 || x < lo || x > hi) {
    char what[96];
    snprintf(what, sizeof what, "an integer %" PRId64 "..%" PRId64, lo, hi);
    return kvsim__fmt_csv_bad(r, col, name, what, err);
  }
  *out = x;
  return 1;
}

int kvsim__fmt_csv_tokens(const kvsim__reader_t *r, int col, const char *name, int64_t *out,
                          kvsim_err *err) {
  return kvsim__fmt_csv_int(r, col, name, 1, KVSIM__MAX_TRACE_TOKENS, true, out, err);
}

int kvsim__fmt_length_columns(kvsim__reader_t *r, const char *const *p, int np,
                              const char *const *o, int no, kvsim_err *err) {
  int rc = kvsim__fmt_column(r, p, np, &r->col[KVSIM__COL_PROMPT], &r->colname[KVSIM__COL_PROMPT], err);
  if (rc < 0)
    return rc;
  return kvsim__fmt_column(r, o, no, &r->col[KVSIM__COL_OUTPUT], &r->colname[KVSIM__COL_OUTPUT], err);
}

int kvsim__fmt_csv_lengths(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  int rc = kvsim__fmt_csv_row(r, row, err);
  if (rc <= 0)
    return rc;
  if ((rc = kvsim__fmt_csv_tokens(r, r->col[KVSIM__COL_PROMPT], r->colname[KVSIM__COL_PROMPT],
                                  &row->prompt_tokens, err)) < 0 ||
      (rc = kvsim__fmt_csv_tokens(r, r->col[KVSIM__COL_OUTPUT], r->colname[KVSIM__COL_OUTPUT],
                                  &row->output_tokens, err)) < 0)
    return rc;
  return 1;
}

int kvsim__fmt_csv_seconds(const kvsim__reader_t *r, int col, const char *name,
                           kvsim_time_ns *out, kvsim_err *err) {
  const char *v = kvsim__csvrow_field(r->csv, col);
  kvsim_time_ns t;
  if (!v || kvsim__parse_seconds_ns(v, &t) < 0 || t < 0)
    return kvsim__fmt_csv_bad(r, col, name, "seconds 0..9000000000", err);
  *out = t;
  return 1;
}

int kvsim__fmt_csv_num(const kvsim__reader_t *r, int col, const char *name, double *out,
                       kvsim_err *err) {
  const char *v = kvsim__csvrow_field(r->csv, col);
  char *end;
  errno = 0;
  double x = v ? strtod(v, &end) : 0;
  if (!v || end == v || *end || errno || !isfinite(x))
    return kvsim__fmt_csv_bad(r, col, name, "a number", err);
  *out = x;
  return 1;
}

int kvsim__fmt_from_base(kvsim__reader_t *r, int64_t abs, int64_t *rel) {
  if (!r->have_base) {
    r->have_base = true;
    r->base = abs;
  }
  /* Before the first row is negative (the source reports it going
   * backwards); too far after it is out of range. */
  if (!kvsim__add_i64(abs, -r->base, rel) || *rel > KVSIM__MAX_TRACE_S * KVSIM_NS_PER_S)
    return -1;
  return 0;
}

/* ---- JSON lines ---------------------------------------------------------------------- */

/* The first number under v that is not finite (cJSON reads 1e400 as inf),
 * and in *key the key it is under (an array's element: the array's). */
static const cJSON *non_finite(const cJSON *v, const char **key) {
  if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
    return v;
  for (const cJSON *c = (cJSON_IsArray(v) || cJSON_IsObject(v)) ? v->child : NULL; c; c = c->next) {
    const cJSON *bad = non_finite(c, key);
    if (bad) {
      if (cJSON_IsObject(v))
        *key = c->string;
      return bad;
    }
  }
  return NULL;
}

static int key_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A key given twice in a row's object: cJSON keeps both and lookups find
 * the first, so the second would be silently ignored. 1 and the key in
 * *dup, 0, or KVSIM_ENOMEM. Sorted, so a line of many keys stays fast. */
static int duplicate_key(const cJSON *o, const char **dup) {
  size_t n = 0;
  for (const cJSON *c = o->child; c; c = c->next)
    n++;
  if (n < 2)
    return 0;
  const char **keys = kvsim__malloc(n * sizeof *keys);
  if (!keys)
    return KVSIM_ENOMEM;
  size_t i = 0;
  for (const cJSON *c = o->child; c; c = c->next)
    keys[i++] = c->string;
  qsort(keys, n, sizeof *keys, key_cmp);
  int found = 0;
  for (i = 1; i < n && !found; i++)
    if (!strcmp(keys[i - 1], keys[i])) {
      *dup = keys[i];
      found = 1;
    }
  kvsim__free(keys);
  return found;
}

int kvsim__fmt_read_line(FILE *f, const char *path, int64_t line, char **buf, size_t *cap,
                         size_t *len, kvsim_err *err) {
  size_t n = 0;
  int c = EOF;
  while ((c = getc_unlocked(f)) != EOF) {
    if (c == '\0')
      return kvsim_err_set(err, KVSIM_EINVAL, "%s:%lld: a NUL byte (a binary file?)", path,
                           (long long)line);
    if (c != '\n' && n >= KVSIM__TRACE_LINE_MAX)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s:%lld: line longer than %zu MiB", path,
                           (long long)line, KVSIM__TRACE_LINE_MAX >> 20);
    if (n + 2 > *cap) {
      size_t grown = *cap ? *cap * 2 : 4096;
      if (grown > KVSIM__TRACE_LINE_MAX + 2)
        grown = KVSIM__TRACE_LINE_MAX + 2;
      char *b = kvsim__realloc(*buf, grown);
      if (!b)
        return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
      *buf = b;
      *cap = grown;
    }
    (*buf)[n++] = (char)c;
    if (c == '\n')
      break;
  }
  if (ferror(f))
    return kvsim_err_set(err, KVSIM_EIO, "%s: read error: %s", path, strerror(errno));
  if (n == 0)
    return 0;
  (*buf)[n] = '\0';
  *len = n;
  return 1;
}

int kvsim__fmt_jsonl_row(kvsim__reader_t *r, kvsim__row_t *row, cJSON **o, kvsim_err *err) {
  *o = NULL;
  const char *t;
  size_t n = 0;
  for (;;) {
    errno = 0;
    int rc = kvsim__fmt_read_line(r->f, r->path, r->line + 1, &r->lbuf, &r->lcap, &n, err);
    if (rc <= 0)
      return rc;
    r->line++;
    t = r->lbuf;
    while (*t == ' ' || *t == '\t')
      t++;
    if (r->line == 1 && !strncmp(t, "\xEF\xBB\xBF", 3))
      t += 3;
    if (*t == '\n' || *t == '\r' || *t == '\0')
      continue;
    break;
  }
  memset(row, 0, sizeof *row);
  row->line = r->line;
  row->session = -1;
  r->segs.n = 0;
  const char *end = NULL;
  *o = cJSON_ParseWithOpts(t, &end, 0);
  if (!cJSON_IsObject(*o)) {
    bool deep = !*o && kvsim__json_too_deep(t, end);
    cJSON_Delete(*o);
    *o = NULL;
    if (deep)
      return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: invalid JSON: nested deeper than %d levels",
                           r->path, (long long)r->line, CJSON_NESTING_LIMIT);
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: invalid JSON (expected one object per line)",
                         r->path, (long long)r->line);
  }
  /* Only white space may follow the object, to the line's end (a line
   * holds no NUL byte): a second object on the line was once dropped
   * unseen. */
  const char *stop = r->lbuf + n;
  while (end < stop && (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
    end++;
  if (end < stop) {
    cJSON_Delete(*o);
    *o = NULL;
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: trailing characters after the JSON object",
                         r->path, (long long)r->line);
  }
  const char *key = "?";
  int dup = duplicate_key(*o, &key);
  if (dup != 0) {
    char esc[KVSIM__ESCAPE_MAX];
    if (dup < 0)
      kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
    else
      kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: duplicate key '%s'", r->path, (long long)r->line,
                    kvsim__escape(key, strlen(key), esc, sizeof esc));
    cJSON_Delete(*o);
    *o = NULL;
    return dup < 0 ? KVSIM_ENOMEM : KVSIM_EPARSE;
  }
  /* Any number that overflows a double, in a key read or not: the row is
   * not what the file says. */
  if (non_finite(*o, &key)) {
    char esc[KVSIM__ESCAPE_MAX];
    kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': not a finite number", r->path,
                  (long long)r->line, kvsim__escape(key, strlen(key), esc, sizeof esc));
    cJSON_Delete(*o);
    *o = NULL;
    return KVSIM_EPARSE;
  }
  return 1;
}

int kvsim__fmt_json_num(const kvsim__reader_t *r, const cJSON *o, const char *key, bool integer,
                        double lo, double hi, double *out, kvsim_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v)
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': missing", r->path,
                         (long long)r->line, key);
  if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
    /* cJSON prints inf as null: name the fault, not a value never written. */
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': not a finite number", r->path,
                         (long long)r->line, key);
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi) ||
      (integer && v->valuedouble != floor(v->valuedouble))) {
    char *txt = cJSON_PrintUnformatted(v);
    char esc[KVSIM__ESCAPE_MAX];
    kvsim__escape(txt ? txt : "?", txt ? strlen(txt) : 1, esc, sizeof esc);
    kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': bad value '%s' (expected %s %.17g..%.17g)",
                  r->path, (long long)r->line, key, esc, integer ? "an integer" : "a number", lo,
                  hi);
    cJSON_free(txt);
    return KVSIM_EPARSE;
  }
  *out = v->valuedouble;
  return 0;
}

/* ---- segments ---------------------------------------------------------------------- */

int kvsim__fmt_seg_push(kvsim__reader_t *r, uint64_t id, int64_t len) {
  kvsim_segment_t s = {id, len};
  return kvsim__vec_push(&r->segs, s);
}

void kvsim__fmt_seg_done(kvsim__reader_t *r, kvsim__row_t *row) {
  row->segments = r->segs.n ? r->segs.v : NULL;
  row->num_segments = (int32_t)r->segs.n;
}
