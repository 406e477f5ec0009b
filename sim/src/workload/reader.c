/* Trace readers: one row at a time, memory O(1) in the trace length.
 * CSV goes through libcsv fed one line at a time from fread chunks (so a
 * row can be handed out as soon as it is complete); JSON lines are read
 * with getline and parsed with cJSON. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <csv.h>

#include "core/util.h"
#include "workload/wl.h"

#define CHUNK 65536
#define MAX_COLS 64

enum { ROLE_ARRIVAL, ROLE_PROMPT, ROLE_OUTPUT, ROLE_TENANT, ROLE_PRIORITY, ROLE_SESSION,
       ROLE_TURN, ROLE_SEGMENTS, ROLE_PREFIX_GROUP, ROLE_PREFIX_TOKENS, ROLE_N };

struct kvsim__reader {
  int fmt;
  char path[KVSIM__WL_PATH_MAX];
  FILE *f;
  int64_t line;      /* lines fully read so far */
  int64_t hash_block;
  bool csv;
  /* CSV */
  struct csv_parser p;
  bool parser_init, finished, eof;
  char *buf;
  size_t pos, len;
  char *fbuf;        /* fields of the current row, NUL-separated */
  size_t flen, fcap;
  size_t foff[MAX_COLS];
  int nfields;
  bool row_ready, row_overflow, oom;
  int64_t row_line;
  int col[ROLE_N];
  char colname[ROLE_N][32];
  /* JSON lines */
  char *lbuf;
  size_t lcap;
  /* time base (Azure, LLMServingSim: arrival from the first row) */
  bool have_base;
  int64_t base;
  /* segments of the current row */
  kvsim_segment_t *segs;
  int32_t nsegs, segcap;
};

const char *kvsim__fmt_name(int fmt) {
  static const char *const names[] = {"auto", "azure", "vidur", "mooncake", "llmservingsim",
                                      "kvsim", "lengths"};
  return fmt >= 0 && fmt <= KVSIM__FMT_LENGTHS ? names[fmt] : "?";
}

int kvsim__fmt_from_name(const char *name) {
  for (int i = 0; i <= KVSIM__FMT_KVSIM; i++)
    if (!strcmp(name, kvsim__fmt_name(i)))
      return i;
  return -1;
}

/* ---- numbers ------------------------------------------------------------ */

static const char *skip_ws(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  return s;
}

int kvsim__parse_int(const char *s, int64_t *out) {
  s = skip_ws(s);
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
  /* Accept "12.0" (some exports write floats) but not "12.5". */
  if (*end == '.') {
    end++;
    while (*end == '0')
      end++;
  }
  end = (char *)skip_ws(end);
  if (*end)
    return -1;
  *out = v;
  return 0;
}

/* Decimal seconds to nanoseconds without going through a float of the
 * whole value (exact for up to 9 fractional digits; the 10th rounds). */
int kvsim__parse_seconds_ns(const char *s, kvsim_time_ns *out) {
  s = skip_ws(s);
  const char *p = s;
  bool neg = false;
  if (*p == '+' || *p == '-')
    neg = *p++ == '-';
  if (!isdigit((unsigned char)*p) && !(*p == '.' && isdigit((unsigned char)p[1])))
    return -1;
  int64_t ip = 0;
  while (isdigit((unsigned char)*p)) {
    if (ip > INT64_C(9000000000))
      return -1;
    ip = ip * 10 + (*p++ - '0');
  }
  int64_t frac = 0;
  int nd = 0;
  bool round_up = false;
  if (*p == '.') {
    p++;
    while (isdigit((unsigned char)*p)) {
      if (nd < 9)
        frac = frac * 10 + (*p - '0');
      else if (nd == 9)
        round_up = *p >= '5';
      nd++;
      p++;
    }
  }
  if (*p == 'e' || *p == 'E') {
    /* Exponent notation: fall back to a double (rare in traces). */
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *skip_ws(end) || !isfinite(v) || fabs(v) > 9e9)
      return -1;
    *out = kvsim_time_from_s(v);
    return 0;
  }
  if (*skip_ws(p))
    return -1;
  for (int i = nd; i < 9; i++)
    frac *= 10;
  int64_t ns = ip * KVSIM_NS_PER_S + frac + (round_up ? 1 : 0);
  *out = neg ? -ns : ns;
  return 0;
}

static int digits(const char **p, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)(*p)[i]))
      return -1;
    v = v * 10 + ((*p)[i] - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* 'YYYY-MM-DD HH:MM:SS[.fffffff]' (or 'T' between date and time): the
 * fraction is read as integer digits, never through a double. */
int kvsim__parse_azure_ts(const char *s, int64_t *ns) {
  s = skip_ws(s);
  int y, mo, d, h, mi, se;
  const char *p = s;
  if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' ||
      digits(&p, 2, &d) || (*p != ' ' && *p != 'T'))
    return -1;
  p++;
  if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi) || *p++ != ':' ||
      digits(&p, 2, &se))
    return -1;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60)
    return -1;
  int64_t frac = 0;
  int nd = 0;
  if (*p == '.') {
    p++;
    while (isdigit((unsigned char)*p)) {
      if (nd < 9)
        frac = frac * 10 + (*p - '0');
      nd++;
      p++;
    }
    if (nd == 0)
      return -1;
  }
  if (*skip_ws(p))
    return -1;
  for (int i = nd; i < 9; i++)
    frac *= 10;
  int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
  *ns = secs * KVSIM_NS_PER_S + frac;
  return 0;
}

/* ---- format detection ---------------------------------------------------- */

static bool has_col(const char *header, const char *name) {
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

static bool has_key(const char *line, const char *key) {
  char q[64];
  snprintf(q, sizeof q, "\"%s\"", key);
  return strstr(line, q) != NULL;
}

static int detect_line(const char *path, const char *l, int *fmt, kvsim_err *err) {
  const char *t = skip_ws(l);
  if (!strncmp(t, "\xEF\xBB\xBF", 3))
    t += 3;
  if (*t == '{') {
    if (has_key(t, "input_toks") || has_key(t, "arrival_time_ns"))
      *fmt = KVSIM__FMT_LLMSERVINGSIM;
    else if (has_key(t, "input_length") || has_key(t, "hash_ids"))
      *fmt = KVSIM__FMT_MOONCAKE;
    else
      return kvsim_err_set(err, KVSIM_EPARSE,
                           "%s:1: unknown JSON lines format (expected Mooncake keys timestamp, "
                           "input_length, output_length, hash_ids or LLMServingSim keys "
                           "input_toks, output_toks, arrival_time_ns)",
                           path);
    return 0;
  }
  if (has_col(t, "arrival_s") && has_col(t, "prompt_tokens"))
    *fmt = KVSIM__FMT_KVSIM;
  else if (has_col(t, "TIMESTAMP") && has_col(t, "ContextTokens"))
    *fmt = KVSIM__FMT_AZURE;
  else if (has_col(t, "arrived_at") && has_col(t, "num_prefill_tokens"))
    *fmt = KVSIM__FMT_VIDUR;
  else if ((has_col(t, "num_prefill_tokens") && has_col(t, "num_decode_tokens")) ||
           (has_col(t, "prompt_tokens") && has_col(t, "output_tokens")))
    *fmt = KVSIM__FMT_LENGTHS;
  else {
    char head[80];
    snprintf(head, sizeof head, "%s", t);
    head[strcspn(head, "\r\n")] = '\0';
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:1: unknown trace format, header '%s' (expected Azure TIMESTAMP,"
                         "ContextTokens,GeneratedTokens; Vidur arrived_at,num_prefill_tokens,"
                         "num_decode_tokens; kvsim arrival_s,prompt_tokens,output_tokens; or "
                         "JSON lines)",
                         path, head);
  }
  return 0;
}

int kvsim__detect_format(const char *path, int *fmt, kvsim_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return kvsim_err_set(err, KVSIM_ENOENT, "%s: cannot open: %s", path, strerror(errno));
  char line[4096];
  /* The first non-empty line decides. */
  bool got = false;
  while (fgets(line, sizeof line, f)) {
    if (*skip_ws(line) != '\n' && *skip_ws(line) != '\r' && *skip_ws(line)) {
      got = true;
      break;
    }
  }
  fclose(f);
  if (!got)
    return kvsim_err_set(err, KVSIM_EPARSE, "%s: empty file", path);
  return detect_line(path, line, fmt, err);
}

/* ---- segments ------------------------------------------------------------ */

static int seg_push(kvsim__reader_t *r, uint64_t id, int64_t len) {
  if (r->nsegs == r->segcap) {
    int32_t cap = r->segcap ? r->segcap * 2 : 64;
    kvsim_segment_t *n = realloc(r->segs, (size_t)cap * sizeof *n);
    if (!n)
      return KVSIM_ENOMEM;
    r->segs = n;
    r->segcap = cap;
  }
  r->segs[r->nsegs].id = id;
  r->segs[r->nsegs].len = len;
  r->nsegs++;
  return 0;
}

/* Mooncake: each hash id is a block of hash_block tokens, the last partial. */
static int hash_segments(kvsim__reader_t *r, const cJSON *arr, int64_t prompt,
                         kvsim_err *err) {
  int64_t b = r->hash_block;
  int32_t n = cJSON_GetArraySize(arr);
  int64_t want = (prompt + b - 1) / b;
  if (n != want)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: column 'hash_ids': bad value (%d ids, but input_length %lld "
                         "needs ceil(%lld/%lld) = %lld)",
                         r->path, (long long)r->row_line, n, (long long)prompt,
                         (long long)prompt, (long long)b, (long long)want);
  r->nsegs = 0;
  int32_t i = 0;
  for (const cJSON *c = arr->child; c; c = c->next, i++) {
    double v = c->valuedouble;
    if (!cJSON_IsNumber(c) || v < 0 || v != floor(v) || v > 9007199254740992.0)
      return kvsim_err_set(err, KVSIM_EPARSE,
                           "%s:%lld: column 'hash_ids': bad value at index %d (expected an "
                           "integer >= 0)",
                           r->path, (long long)r->row_line, i);
    int64_t len = i + 1 < n ? b : prompt - b * (n - 1);
    if (seg_push(r, (uint64_t)v, len) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  }
  return 0;
}

/* kvsim CSV 'segments': "id:len id:len ..." summing to prompt_tokens. */
static int parse_segments(kvsim__reader_t *r, const char *s, int64_t prompt, kvsim_err *err) {
  r->nsegs = 0;
  int64_t sum = 0;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == ';' || *p == '\t')
      p++;
    if (!*p)
      break;
    char *end;
    errno = 0;
    /* Decimal, or hex with 0x (never octal: "010" is ten). */
    bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    if (*p == '-' || *p == '+')
      goto bad;
    unsigned long long id = strtoull(p, &end, hex ? 16 : 10);
    if (errno || end == p || *end != ':')
      goto bad;
    p = end + 1;
    long long len = strtoll(p, &end, 10);
    if (errno || end == p || len < 1 || (*end && *end != ' ' && *end != ';'))
      goto bad;
    p = end;
    sum += len;
    if (seg_push(r, (uint64_t)id, len) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  }
  if (sum != prompt)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: column 'segments': bad value (lengths sum to %lld, "
                         "prompt_tokens is %lld)",
                         r->path, (long long)r->row_line, (long long)sum, (long long)prompt);
  return 0;
bad:;
  char v[64];
  snprintf(v, sizeof v, "%s", s);
  return kvsim_err_set(err, KVSIM_EPARSE,
                       "%s:%lld: column 'segments': bad value '%s' (expected 'id:len id:len ...')",
                       r->path, (long long)r->row_line, v);
}

/* ---- CSV ------------------------------------------------------------------- */

static void cb_field(void *s, size_t len, void *data) {
  kvsim__reader_t *r = data;
  if (r->nfields >= MAX_COLS) {
    r->nfields++;
    return;
  }
  if (r->flen + len + 1 > r->fcap) {
    size_t cap = r->fcap * 2;
    while (cap < r->flen + len + 1)
      cap *= 2;
    char *n = realloc(r->fbuf, cap);
    if (!n) {
      r->oom = true;
      return;
    }
    r->fbuf = n;
    r->fcap = cap;
  }
  r->foff[r->nfields++] = r->flen;
  if (len)
    memcpy(r->fbuf + r->flen, s, len);
  r->flen += len;
  r->fbuf[r->flen++] = '\0';
}

static void cb_row(int c, void *data) {
  (void)c;
  kvsim__reader_t *r = data;
  if (r->row_ready)
    r->row_overflow = true;
  r->row_ready = true;
  r->row_line = r->line + 1;
}

static const char *field(const kvsim__reader_t *r, int i) {
  return i >= 0 && i < r->nfields && i < MAX_COLS ? r->fbuf + r->foff[i] : NULL;
}

/* Reads the next CSV record into the field buffer: 1, 0 at the end. */
static int csv_next_record(kvsim__reader_t *r, kvsim_err *err) {
  r->nfields = 0;
  r->flen = 0;
  r->row_ready = false;
  for (;;) {
    if (r->row_overflow)
      return kvsim_err_set(err, KVSIM_EPARSE,
                           "%s:%lld: several rows on one line (bare CR line endings?)", r->path,
                           (long long)r->row_line);
    if (r->oom)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
    if (r->row_ready)
      return 1;
    if (r->pos == r->len) {
      if (r->eof) {
        if (r->finished)
          return 0;
        r->finished = true;
        csv_fini(&r->p, cb_field, cb_row, r);
        continue;
      }
      r->len = fread(r->buf, 1, CHUNK, r->f);
      r->pos = 0;
      if (r->len == 0) {
        if (ferror(r->f))
          return kvsim_err_set(err, KVSIM_EIO, "%s: read error", r->path);
        r->eof = true;
      }
      continue;
    }
    const char *start = r->buf + r->pos;
    const char *nl = memchr(start, '\n', r->len - r->pos);
    size_t n = nl ? (size_t)(nl - start) + 1 : r->len - r->pos;
    if (csv_parse(&r->p, start, n, cb_field, cb_row, r) != n)
      return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: %s", r->path, (long long)r->line + 1,
                           csv_strerror(csv_error(&r->p)));
    if (nl)
      r->line++;
    r->pos += n;
  }
}

static const char *const role_names[KVSIM__FMT_LENGTHS + 1][ROLE_N] = {
    [KVSIM__FMT_AZURE] = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
    [KVSIM__FMT_VIDUR] = {"arrived_at", "num_prefill_tokens", "num_decode_tokens"},
    [KVSIM__FMT_KVSIM] = {"arrival_s", "prompt_tokens", "output_tokens", "tenant", "priority",
                          "session", "turn", "segments", "prefix_group", "prefix_tokens"},
    [KVSIM__FMT_LENGTHS] = {NULL, "num_prefill_tokens", "num_decode_tokens"},
};

static void trim_name(char *s) {
  char *p = (char *)skip_ws(s);
  memmove(s, p, strlen(p) + 1);
  size_t l = strlen(s);
  while (l && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
    s[--l] = '\0';
}

static int csv_header(kvsim__reader_t *r, kvsim_err *err) {
  int rc = csv_next_record(r, err);
  if (rc < 0)
    return rc;
  if (rc == 0)
    return kvsim_err_set(err, KVSIM_EPARSE, "%s: empty file", r->path);
  for (int k = 0; k < ROLE_N; k++)
    r->col[k] = -1;
  const char *const *names = role_names[r->fmt];
  bool lengths_alt = false;
  for (int i = 0; i < r->nfields && i < MAX_COLS; i++) {
    char *h = r->fbuf + r->foff[i];
    if (i == 0 && !strncmp(h, "\xEF\xBB\xBF", 3))
      memmove(h, h + 3, strlen(h + 3) + 1);
    trim_name(h);
    for (int k = 0; k < ROLE_N; k++) {
      if (names[k] && !strcasecmp(h, names[k]) && r->col[k] < 0)
        r->col[k] = i;
      /* A length-only file may also use kvsim's own column names. */
      if (r->fmt == KVSIM__FMT_LENGTHS && k == ROLE_PROMPT && !strcasecmp(h, "prompt_tokens") &&
          r->col[k] < 0) {
        r->col[k] = i;
        lengths_alt = true;
      }
      if (r->fmt == KVSIM__FMT_LENGTHS && k == ROLE_OUTPUT && !strcasecmp(h, "output_tokens") &&
          r->col[k] < 0)
        r->col[k] = i;
    }
  }
  (void)lengths_alt;
  for (int k = 0; k < ROLE_N; k++)
    snprintf(r->colname[k], sizeof r->colname[k], "%s",
             names[k] ? names[k] : (k == ROLE_PROMPT ? "prompt_tokens" : "output_tokens"));
  for (int k = ROLE_ARRIVAL; k <= ROLE_OUTPUT; k++) {
    if (k == ROLE_ARRIVAL && r->fmt == KVSIM__FMT_LENGTHS)
      continue;
    if (r->col[k] < 0)
      return kvsim_err_set(err, KVSIM_EPARSE, "%s:1: missing column '%s' for format %s",
                           r->path, names[k], kvsim__fmt_name(r->fmt));
  }
  return 0;
}

static int row_int(kvsim__reader_t *r, int role, int64_t lo, int64_t *out, bool required,
                   kvsim_err *err) {
  const char *v = field(r, r->col[role]);
  if (!v) {
    if (!required)
      return 0;
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': missing", r->path,
                         (long long)r->row_line, r->colname[role]);
  }
  if (!required && !*skip_ws(v))
    return 0;
  int64_t x;
  if (kvsim__parse_int(v, &x) < 0 || x < lo)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: column '%s': bad value '%.60s' (expected an integer >= %lld)",
                         r->path, (long long)r->row_line, r->colname[role], v, (long long)lo);
  *out = x;
  return 1;
}

static int csv_row(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  int rc = csv_next_record(r, err);
  if (rc <= 0)
    return rc;
  memset(row, 0, sizeof *row);
  row->line = r->row_line;
  row->session = -1;
  r->nsegs = 0;
  if ((rc = row_int(r, ROLE_PROMPT, 1, &row->prompt_tokens, true, err)) < 0 ||
      (rc = row_int(r, ROLE_OUTPUT, 1, &row->output_tokens, true, err)) < 0)
    return rc;
  if (r->fmt != KVSIM__FMT_LENGTHS) {
    const char *v = field(r, r->col[ROLE_ARRIVAL]);
    if (!v)
      return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': missing", r->path,
                           (long long)r->row_line, r->colname[ROLE_ARRIVAL]);
    if (r->fmt == KVSIM__FMT_AZURE) {
      int64_t ns;
      if (kvsim__parse_azure_ts(v, &ns) < 0)
        return kvsim_err_set(err, KVSIM_EPARSE,
                             "%s:%lld: column 'TIMESTAMP': bad value '%.60s' (expected "
                             "'YYYY-MM-DD HH:MM:SS.fffffff')",
                             r->path, (long long)r->row_line, v);
      if (!r->have_base) {
        r->have_base = true;
        r->base = ns;
      }
      row->arrival = ns - r->base;
    } else {
      kvsim_time_ns t;
      if (kvsim__parse_seconds_ns(v, &t) < 0 || t < 0)
        return kvsim_err_set(err, KVSIM_EPARSE,
                             "%s:%lld: column '%s': bad value '%.60s' (expected seconds >= 0)",
                             r->path, (long long)r->row_line, r->colname[ROLE_ARRIVAL], v);
      row->arrival = t;
    }
  }
  if (r->fmt == KVSIM__FMT_KVSIM) {
    int64_t x;
    if ((rc = row_int(r, ROLE_TENANT, 0, &x, false, err)) < 0)
      return rc;
    if (rc)
      row->tenant = (int32_t)(x > INT32_MAX ? INT32_MAX : x);
    if ((rc = row_int(r, ROLE_PRIORITY, INT32_MIN, &x, false, err)) < 0)
      return rc;
    if (rc)
      row->priority = (int32_t)(x > INT32_MAX ? INT32_MAX : x);
    if ((rc = row_int(r, ROLE_SESSION, 0, &row->session, false, err)) < 0)
      return rc;
    if ((rc = row_int(r, ROLE_TURN, 0, &x, false, err)) < 0)
      return rc;
    if (rc)
      row->turn = (int32_t)(x > INT32_MAX ? INT32_MAX : x);
    const char *sg = field(r, r->col[ROLE_SEGMENTS]);
    int64_t group = -1, ptoks = 0;
    if ((rc = row_int(r, ROLE_PREFIX_GROUP, 0, &group, false, err)) < 0)
      return rc;
    if (rc && (rc = row_int(r, ROLE_PREFIX_TOKENS, 1, &ptoks, true, err)) < 0)
      return rc;
    if (sg && *skip_ws(sg)) {
      if (group >= 0)
        return kvsim_err_set(err, KVSIM_EPARSE,
                             "%s:%lld: column 'prefix_group': give either segments or "
                             "prefix_group, not both",
                             r->path, (long long)r->row_line);
      if ((rc = parse_segments(r, sg, row->prompt_tokens, err)) < 0)
        return rc;
    } else if (group >= 0) {
      if (ptoks > row->prompt_tokens)
        return kvsim_err_set(err, KVSIM_EPARSE,
                             "%s:%lld: column 'prefix_tokens': bad value %lld (more than "
                             "prompt_tokens %lld)",
                             r->path, (long long)r->row_line, (long long)ptoks,
                             (long long)row->prompt_tokens);
      /* Same id space as the synthetic shared system prompts; the rest of
       * the prompt is unique to this line. */
      if (seg_push(r, KVSIM__SEG_GROUP | (uint64_t)group, ptoks) < 0 ||
          (ptoks < row->prompt_tokens &&
           seg_push(r, KVSIM__SEG_ROWTEXT | (uint64_t)r->row_line,
                    row->prompt_tokens - ptoks) < 0))
        return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
    }
  }
  row->segments = r->nsegs ? r->segs : NULL;
  row->num_segments = r->nsegs;
  return 1;
}

/* ---- JSON lines -------------------------------------------------------------- */

static int json_get_num(kvsim__reader_t *r, const cJSON *o, const char *key, bool integer,
                        double lo, double *out, kvsim_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v)
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': missing", r->path,
                         (long long)r->row_line, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
      (integer && v->valuedouble != floor(v->valuedouble)) || v->valuedouble > 9e18) {
    char *txt = cJSON_PrintUnformatted(v);
    kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: column '%s': bad value '%.60s' (expected %s >= %g)",
                  r->path, (long long)r->row_line, key, txt ? txt : "?",
                  integer ? "an integer" : "a number", lo);
    free(txt);
    return KVSIM_EPARSE;
  }
  *out = v->valuedouble;
  return 0;
}

static int jsonl_row(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  for (;;) {
    errno = 0;
    ssize_t n = getline(&r->lbuf, &r->lcap, r->f);
    if (n < 0) {
      if (ferror(r->f))
        return kvsim_err_set(err, KVSIM_EIO, "%s: read error", r->path);
      return 0;
    }
    r->line++;
    r->row_line = r->line;
    const char *t = skip_ws(r->lbuf);
    if (r->line == 1 && !strncmp(t, "\xEF\xBB\xBF", 3))
      t += 3;
    if (*t == '\n' || *t == '\r' || *t == '\0')
      continue;
    break;
  }
  memset(row, 0, sizeof *row);
  row->line = r->row_line;
  row->session = -1;
  r->nsegs = 0;
  cJSON *o = cJSON_Parse(r->lbuf);
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: invalid JSON (expected one object per line)",
                         r->path, (long long)r->row_line);
  }
  double in, out, ts;
  int rc;
  if (r->fmt == KVSIM__FMT_MOONCAKE) {
    if ((rc = json_get_num(r, o, "timestamp", false, 0, &ts, err)) < 0 ||
        (rc = json_get_num(r, o, "input_length", true, 1, &in, err)) < 0 ||
        (rc = json_get_num(r, o, "output_length", true, 1, &out, err)) < 0)
      goto done;
    /* Milliseconds from the trace start. */
    row->arrival = (kvsim_time_ns)llround(ts * 1e6);
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "hash_ids");
    if (h && !cJSON_IsNull(h)) {
      if (!cJSON_IsArray(h)) {
        rc = kvsim_err_set(err, KVSIM_EPARSE,
                           "%s:%lld: column 'hash_ids': bad value (expected an array)", r->path,
                           (long long)r->row_line);
        goto done;
      }
      if ((rc = hash_segments(r, h, (int64_t)in, err)) < 0)
        goto done;
    }
  } else {
    if ((rc = json_get_num(r, o, "input_toks", true, 1, &in, err)) < 0 ||
        (rc = json_get_num(r, o, "output_toks", true, 1, &out, err)) < 0 ||
        (rc = json_get_num(r, o, "arrival_time_ns", true, 0, &ts, err)) < 0)
      goto done;
    int64_t ns = (int64_t)ts;
    if (!r->have_base) {
      r->have_base = true;
      r->base = ns;
    }
    row->arrival = ns - r->base;
  }
  row->prompt_tokens = (int64_t)in;
  row->output_tokens = (int64_t)out;
  row->segments = r->nsegs ? r->segs : NULL;
  row->num_segments = r->nsegs;
  rc = 1;
done:
  cJSON_Delete(o);
  return rc;
}

/* ---- public (internal) API ------------------------------------------------- */

int kvsim__reader_open(const char *path, int fmt, int64_t hash_block_tokens,
                       kvsim__reader_t **out, kvsim_err *err) {
  *out = NULL;
  if (fmt == KVSIM__FMT_AUTO) {
    int rc = kvsim__detect_format(path, &fmt, err);
    if (rc < 0)
      return rc;
  }
  kvsim__reader_t *r = calloc(1, sizeof *r);
  if (!r)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  r->fmt = fmt;
  r->hash_block = hash_block_tokens > 0 ? hash_block_tokens : 512;
  snprintf(r->path, sizeof r->path, "%s", path);
  r->f = fopen(path, "rb");
  if (!r->f) {
    kvsim_err_set(err, KVSIM_ENOENT, "%s: cannot open: %s", path, strerror(errno));
    free(r);
    return KVSIM_ENOENT;
  }
  r->csv = fmt != KVSIM__FMT_MOONCAKE && fmt != KVSIM__FMT_LLMSERVINGSIM;
  if (r->csv) {
    r->buf = malloc(CHUNK);
    r->fcap = 1024;
    r->fbuf = malloc(r->fcap);
    if (!r->buf || !r->fbuf || csv_init(&r->p, 0) != 0) {
      kvsim__reader_close(r);
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
    }
    r->parser_init = true;
    int rc = csv_header(r, err);
    if (rc < 0) {
      kvsim__reader_close(r);
      return rc;
    }
  }
  *out = r;
  return 0;
}

int kvsim__reader_next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  return r->csv ? csv_row(r, row, err) : jsonl_row(r, row, err);
}

int kvsim__reader_format(const kvsim__reader_t *r) { return r->fmt; }

unsigned kvsim__reader_columns(const kvsim__reader_t *r) {
  unsigned m = 0;
  if (r->fmt == KVSIM__FMT_MOONCAKE)
    return KVSIM__COL_SEGMENTS;
  if (r->fmt != KVSIM__FMT_KVSIM)
    return 0;
  if (r->col[ROLE_TENANT] >= 0)
    m |= KVSIM__COL_TENANT;
  if (r->col[ROLE_PRIORITY] >= 0)
    m |= KVSIM__COL_PRIORITY;
  if (r->col[ROLE_SESSION] >= 0)
    m |= KVSIM__COL_SESSION;
  if (r->col[ROLE_TURN] >= 0)
    m |= KVSIM__COL_TURN;
  if (r->col[ROLE_SEGMENTS] >= 0 || r->col[ROLE_PREFIX_GROUP] >= 0)
    m |= KVSIM__COL_SEGMENTS;
  return m;
}

void kvsim__reader_close(kvsim__reader_t *r) {
  if (!r)
    return;
  if (r->f)
    fclose(r->f);
  if (r->parser_init)
    csv_free(&r->p);
  free(r->buf);
  free(r->fbuf);
  free(r->lbuf);
  free(r->segs);
  free(r);
}

int kvsim__load_lengths(const char *path, int32_t **pairs, int64_t *n, kvsim_err *err) {
  kvsim__reader_t *r;
  int rc = kvsim__reader_open(path, KVSIM__FMT_AUTO, 512, &r, err);
  if (rc < 0)
    return rc;
  int64_t cap = 1024, cnt = 0;
  int32_t *a = malloc((size_t)cap * 2 * sizeof *a);
  kvsim__row_t row;
  while (a && (rc = kvsim__reader_next(r, &row, err)) == 1) {
    if (cnt == cap) {
      cap *= 2;
      int32_t *g = realloc(a, (size_t)cap * 2 * sizeof *a);
      if (!g) {
        free(a);
        a = NULL;
        break;
      }
      a = g;
    }
    if (row.prompt_tokens > INT32_MAX || row.output_tokens > INT32_MAX) {
      rc = kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: length above %d", path,
                         (long long)row.line, INT32_MAX);
      break;
    }
    a[2 * cnt] = (int32_t)row.prompt_tokens;
    a[2 * cnt + 1] = (int32_t)row.output_tokens;
    cnt++;
  }
  kvsim__reader_close(r);
  if (!a)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  if (rc < 0) {
    free(a);
    return rc;
  }
  if (cnt == 0) {
    free(a);
    return kvsim_err_set(err, KVSIM_EPARSE, "%s: no rows", path);
  }
  *pairs = a;
  *n = cnt;
  return 0;
}
