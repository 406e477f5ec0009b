/* The CSV row reader. Input is fed to libcsv in pieces that end at a line
 * break ('\n', "\r\n", or a bare '\r'), so that a row can only end at the
 * end of a piece: the reader then knows the line where each row ends and,
 * from the first byte that is not blank, where it starts; a field starts
 * on the line of the delimiter before it. libcsv ends a row at either CR
 * or LF; one ended by a CR that no LF follows is reported as bad, so that
 * an old-Mac file or a stray CR inside a row is an error on its line
 * rather than two rows glued to one line number. */
#include "workload/csvrow.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <csv.h>

#include "core/alloc.h"
#include "core/util.h"
#include "core/vec.h"
#include "workload/text.h"
#include "workload/wl.h"

#define CHUNK 65536

typedef kvsim__vec(char) charvec;
typedef kvsim__vec(int64_t) i64vec;

typedef struct fields {
  charvec text;  /* fields, each NUL-terminated */
  i64vec off;    /* offset of field i in text */
  i64vec line;   /* line where field i starts */
} fields_t;

struct kvsim__csvrow {
  char path[KVSIM__WL_PATH_MAX];
  FILE *f;
  struct csv_parser p;
  bool parser_init, eof, finished;
  char *buf;
  size_t pos, len;
  int64_t line;          /* line of the next byte fed */
  bool in_row;           /* a row has begun and not yet ended */
  int64_t start_line;    /* where that row began */
  int64_t field_line;    /* where its next field begins */
  int64_t row_bytes;     /* bytes fed since it began */
  bool piece_bare_cr;    /* the piece being fed ends with a bare CR */
  /* the row being read */
  fields_t row;
  int64_t row_line;
  bool done, bare_cr, oom;
  /* the header */
  bool header;
  fields_t head;
};

static void fields_reset(fields_t *f) { f->text.n = f->off.n = f->line.n = 0; }

static void fields_free(fields_t *f) {
  kvsim__vec_free(&f->text);
  kvsim__vec_free(&f->off);
  kvsim__vec_free(&f->line);
}

static void cb_field(void *s, size_t len, void *data) {
  kvsim__csvrow_t *r = data;
  fields_t *f = &r->row;
  if (r->oom)
    return;
  if (kvsim__vec_push(&f->off, f->text.n) < 0 || kvsim__vec_push(&f->line, r->field_line) < 0 ||
      kvsim__vec_reserve(&f->text, f->text.n + (int64_t)len + 1) < 0) {
    r->oom = true;
    return;
  }
  if (len)
    memcpy(f->text.v + f->text.n, s, len);
  f->text.n += (int64_t)len;
  f->text.v[f->text.n++] = '\0';
  /* The delimiter that ended this field is on the current line. */
  r->field_line = r->line;
}

static void cb_row(int c, void *data) {
  kvsim__csvrow_t *r = data;
  r->done = true;
  r->in_row = false;
  r->row_line = r->start_line;
  r->bare_cr = c == '\r' && r->piece_bare_cr;
}

/* The common piece, a whole line without quotes, is split here rather
 * than by libcsv (about 1,700 instructions a row of a three-column trace
 * went to its per-byte state machine and callbacks). Only where libcsv
 * would read it the same way: it is waiting for a row to begin (its
 * ROW_NOT_BEGUN state, 0 in libcsv.c), and the piece ends at a line break
 * ('\n' or "\r\n": feed stops at the first CR or LF, so no other CR is
 * in it). Any quote, a bare CR or the file's unterminated last line go to
 * libcsv. kvsim__csvrow_libcsv_only turns this off (the unit test's
 * reference). */
static bool libcsv_only;

void kvsim__csvrow_libcsv_only(bool on) { libcsv_only = on; }

static bool plain_line(const kvsim__csvrow_t *r, const char *s, size_t n, bool nl) {
  return nl && !libcsv_only && r->p.pstate == 0 && r->p.entry_pos == 0 && !memchr(s, '"', n);
}

static bool blank(char c) { return c == ' ' || c == '\t'; }

/* libcsv's reading of such a line with options 0 (csv_parse, libcsv.c):
 * a line of blanks (space, tab) is no row; otherwise fields split at each
 * comma, each with its leading and trailing blanks removed, and the row
 * ends at the CR or LF. */
static void split_line(kvsim__csvrow_t *r, const char *s, size_t n) {
  size_t end = n - 1;
  if (end && s[end - 1] == '\r')
    end--;
  size_t a = 0;
  while (a < end && blank(s[a]))
    a++;
  if (a == end)
    return;
  for (;;) {
    const char *c = memchr(s + a, ',', end - a);
    size_t b = c ? (size_t)(c - s) : end, y = b;
    while (a < y && blank(s[a]))
      a++;
    while (y > a && blank(s[y - 1]))
      y--;
    cb_field((void *)(s + a), y - a, r);
    if (b == end)
      break;
    a = b + 1;
  }
  cb_row((unsigned char)s[end], r);
}

static int read_more(kvsim__csvrow_t *r, kvsim_err *err) {
  /* Keep what is left (at most a CR waiting for its LF) at the front. */
  size_t keep = r->len - r->pos;
  memmove(r->buf, r->buf + r->pos, keep);
  r->pos = 0;
  size_t n = fread(r->buf + keep, 1, CHUNK - keep, r->f);
  r->len = keep + n;
  if (n == 0) {
    if (ferror(r->f))
      return kvsim_err_set(err, KVSIM_EIO, "%s: read error: %s", r->path, strerror(errno));
    r->eof = true;
  }
  return 0;
}

static int parse_failed(kvsim__csvrow_t *r, kvsim_err *err) {
  int e = csv_error(&r->p);
  return kvsim_err_set(err, KVSIM_ENOMEM, "%s:%lld: %s", r->path, (long long)r->start_line,
                       csv_strerror(e));
}

/* Feeds one piece. Returns 1 when nothing is left, 0, or an error. */
static int feed(kvsim__csvrow_t *r, kvsim_err *err) {
  if (r->pos == r->len) {
    if (!r->eof)
      return read_more(r, err);
    if (r->finished)
      return 1;
    r->finished = true;
    r->piece_bare_cr = false;
    /* Inside a quoted field at the end of the file: libcsv would hand the
     * rest of the file out as that field (its strict end-of-file check
     * needs strict mode, which rejects quotes real exports write). 2 is
     * libcsv's FIELD_BEGUN state (libcsv.c, stable since 3.0). */
    bool open_quote = r->p.quoted && r->p.pstate == 2;
    if (csv_fini(&r->p, cb_field, cb_row, r) != 0)
      return parse_failed(r, err);
    if (open_quote)
      return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: a quoted field is not closed", r->path,
                           (long long)r->start_line);
    return 0;
  }
  const char *s = r->buf + r->pos;
  size_t avail = r->len - r->pos, n = avail;
  bool nl = false, bare = false;
  /* The piece ends at the first CR or LF: the first LF, then a CR before
   * it (memchr, rather than a loop over each byte). */
  const char *lf = memchr(s, '\n', avail);
  const size_t upto = lf ? (size_t)(lf - s) + 1 : avail;
  const char *cr = memchr(s, '\r', upto);
  if (!cr && lf) {
    n = upto;
    nl = true;
  } else if (cr) {
    const size_t i = (size_t)(cr - s);
    if (i + 1 < avail) {
      nl = s[i + 1] == '\n';
      bare = !nl;
      n = nl ? i + 2 : i + 1;
    } else if (!r->eof) {
      /* Whether an LF follows is in the next read. */
      if (i == 0)
        return read_more(r, err);
      n = i;
    } else {
      n = i + 1; /* a CR that ends the file ends its last line */
    }
  }
  if (!r->in_row) {
    for (size_t i = 0; i < n; i++)
      if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') {
        r->in_row = true;
        r->start_line = r->field_line = r->line;
        r->row_bytes = 0;
        break;
      }
  }
  /* A NUL byte is no text: the file is refused at the first one, on its
   * line, rather than read on to the end of a row that may be the rest of
   * a binary file. Fatal, not a bad row to skip: nothing after it can be
   * trusted. */
  if (memchr(s, '\0', n))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s:%lld: a NUL byte (a binary file?)", r->path,
                         (long long)r->line);
  r->piece_bare_cr = bare;
  if (plain_line(r, s, n, nl))
    split_line(r, s, n);
  else if (csv_parse(&r->p, s, n, cb_field, cb_row, r) != n)
    return parse_failed(r, err);
  r->pos += n;
  if (nl)
    r->line++;
  if (r->in_row && (r->row_bytes += (int64_t)n) > KVSIM__CSVROW_MAX_BYTES)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s:%lld: row longer than %d MiB (a quoted field not closed?)", r->path,
                         (long long)r->start_line, KVSIM__CSVROW_MAX_BYTES >> 20);
  return 0;
}

/* Reads one record into r->row, whatever its width: 1, 0 at the end. */
static int record(kvsim__csvrow_t *r, kvsim_err *err) {
  fields_reset(&r->row);
  r->done = r->bare_cr = false;
  while (!r->done) {
    int rc = feed(r, err);
    if (rc < 0)
      return rc;
    if (r->oom)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
    if (rc == 1)
      return 0;
  }
  if (r->bare_cr)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: a bare carriage return ends the row (CR line endings, or a "
                         "stray CR inside the row?)",
                         r->path, (long long)r->row_line);
  return 1;
}

static void trim_name(char *s) {
  char *p = s;
  while (*p == ' ' || *p == '\t')
    p++;
  memmove(s, p, strlen(p) + 1);
  size_t l = strlen(s);
  while (l && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
    s[--l] = '\0';
}

static int name_cmp(const void *a, const void *b) {
  return strcasecmp(*(const char *const *)a, *(const char *const *)b);
}

/* Columns are found by name, case aside (kvsim__csvrow_column), so a name
 * given twice would silently read the first. Unnamed columns (an index
 * column, trailing commas) are never looked up and may repeat. */
static int check_unique(const kvsim__csvrow_t *r, kvsim_err *err) {
  int64_t n = r->head.off.n;
  if (n < 2)
    return 0;
  const char **names = kvsim__malloc((size_t)n * sizeof *names);
  if (!names)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  for (int64_t i = 0; i < n; i++)
    names[i] = r->head.text.v + r->head.off.v[i];
  qsort(names, (size_t)n, sizeof *names, name_cmp);
  int rc = 0;
  for (int64_t i = 1; i < n && !rc; i++)
    if (*names[i] && !strcasecmp(names[i - 1], names[i])) {
      char esc[KVSIM__ESCAPE_MAX];
      rc = kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: duplicate column '%s'", r->path,
                         (long long)r->row_line,
                         kvsim__escape(names[i], strlen(names[i]), esc, sizeof esc));
    }
  kvsim__free(names);
  return rc;
}

int kvsim__csvrow_open(const char *path, bool header, kvsim__csvrow_t **out, kvsim_err *err) {
  *out = NULL;
  kvsim__csvrow_t *r = kvsim__calloc(1, sizeof *r);
  if (!r)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  snprintf(r->path, sizeof r->path, "%s", path);
  r->line = 1;
  int rc = kvsim__open_input(path, KVSIM_ENOENT, &r->f, err);
  if (rc < 0) {
    kvsim__csvrow_close(r);
    return rc;
  }
  r->buf = kvsim__malloc(CHUNK);
  if (!r->buf || csv_init(&r->p, 0) != 0) {
    kvsim__csvrow_close(r);
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  }
  r->parser_init = true;
  /* libcsv's field buffer too obeys the failing-allocator test hook. */
  csv_set_realloc_func(&r->p, kvsim__realloc);
  csv_set_free_func(&r->p, kvsim__free);
  if (header) {
    rc = record(r, err);
    if (rc == 0)
      rc = kvsim_err_set(err, KVSIM_EPARSE, "%s: empty file", path);
    if (rc < 0) {
      kvsim__csvrow_close(r);
      return rc;
    }
    /* The header becomes r->head; the row buffers start afresh. */
    r->head = r->row;
    memset(&r->row, 0, sizeof r->row);
    r->header = true;
    for (int64_t i = 0; i < r->head.off.n; i++) {
      char *h = r->head.text.v + r->head.off.v[i];
      if (i == 0 && !strncmp(h, "\xEF\xBB\xBF", 3))
        memmove(h, h + 3, strlen(h + 3) + 1);
      trim_name(h);
    }
    if ((rc = check_unique(r, err)) < 0) {
      kvsim__csvrow_close(r);
      return rc;
    }
  }
  *out = r;
  return 0;
}

int kvsim__csvrow_next(kvsim__csvrow_t *r, kvsim_err *err) {
  int rc = record(r, err);
  if (rc <= 0)
    return rc;
  if (r->header && r->row.off.n != r->head.off.n)
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: row has %lld fields, the header has %lld",
                         r->path, (long long)r->row_line, (long long)r->row.off.n,
                         (long long)r->head.off.n);
  return 1;
}

int kvsim__csvrow_nfields(const kvsim__csvrow_t *r) { return (int)r->row.off.n; }

const char *kvsim__csvrow_field(const kvsim__csvrow_t *r, int i) {
  return i >= 0 && i < r->row.off.n ? r->row.text.v + r->row.off.v[i] : NULL;
}

int64_t kvsim__csvrow_line(const kvsim__csvrow_t *r) { return r->row_line; }

int64_t kvsim__csvrow_field_line(const kvsim__csvrow_t *r, int i) {
  return i >= 0 && i < r->row.line.n ? r->row.line.v[i] : r->row_line;
}

int kvsim__csvrow_ncolumns(const kvsim__csvrow_t *r) { return (int)r->head.off.n; }

const char *kvsim__csvrow_colname(const kvsim__csvrow_t *r, int i) {
  return i >= 0 && i < r->head.off.n ? r->head.text.v + r->head.off.v[i] : NULL;
}

int kvsim__csvrow_column(const kvsim__csvrow_t *r, const char *name) {
  for (int64_t i = 0; i < r->head.off.n; i++)
    if (!strcasecmp(r->head.text.v + r->head.off.v[i], name))
      return (int)i;
  return -1;
}

const char *kvsim__csvrow_path(const kvsim__csvrow_t *r) { return r->path; }

void kvsim__csvrow_close(kvsim__csvrow_t *r) {
  if (!r)
    return;
  if (r->f)
    fclose(r->f);
  if (r->parser_init)
    csv_free(&r->p);
  kvsim__free(r->buf);
  fields_free(&r->row);
  fields_free(&r->head);
  kvsim__free(r);
}
