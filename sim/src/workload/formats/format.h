/* A trace format is one table entry: how to recognise a file of it from
 * its first line, and how to read it one row at a time. Each format is
 * one file in this folder; registry.c lists them. Adding a format is one
 * file plus one line there.
 *
 * The generic reader (reader.c) opens the file for the format: CSV
 * formats get r->csv with the header read (kvsim__csvrow), JSON-lines
 * formats get r->f; then the format's open finds its columns. The functions
 * below read a column or a key with its range checked, and name the file,
 * the line, the column and the allowed range when a value is bad.
 * Internal: not part of the public API. */
#ifndef KVSIM_WORKLOAD_FORMATS_FORMAT_H
#define KVSIM_WORKLOAD_FORMATS_FORMAT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "core/vec.h"
#include "workload/csvrow.h"
#include "workload/text.h"
#include "workload/wl.h"

#define KVSIM__FMT_MAX_COLS 12

struct kvsim__reader {
  const kvsim__format_t *fmt;
  char path[KVSIM__WL_PATH_MAX];
  int64_t hash_block;          /* tokens per hash id (Mooncake) */
  kvsim__csvrow_t *csv;        /* CSV formats (header read) */
  FILE *f;                     /* JSON-lines formats */
  char *lbuf;
  size_t lcap;
  int64_t line;                /* JSON lines: lines read so far */
  bool measured;               /* opened as a measured run: fill row->measured */
  bool have_base;              /* arrivals counted from the first row */
  int64_t base;
  kvsim__vec(kvsim_segment_t) segs; /* the current row's segments */
  int col[KVSIM__FMT_MAX_COLS];       /* CSV: the format's columns (-1: absent) */
  const char *colname[KVSIM__FMT_MAX_COLS];
  void *state;                 /* the format's own (freed by its close) */
};

struct kvsim__format {
  const char *name;           /* as --format and workload.format name it */
  const char *arrival_column; /* named when arrivals go backwards; NULL: none */
  const char *hint;           /* the header listed when no format matches, or NULL */
  bool jsonl;                 /* JSON lines, else CSV with a header */
  bool selectable;            /* may be named by the user (else detected only) */
  bool hash_block;            /* reads hash_block_tokens */
  bool measures;              /* reads a measured run's latencies (reader->measured) */
  /* Does this first non-empty line (BOM stripped) start a file of ours? */
  bool (*detect)(const char *first_line);
  int (*open)(kvsim__reader_t *r, kvsim_err *err);
  /* 1: a row; 0: end; KVSIM_EPARSE: a bad row (skippable); else fatal. */
  int (*next)(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err);
  void (*close)(kvsim__reader_t *r);             /* may be NULL */
  unsigned (*columns)(const kvsim__reader_t *r); /* KVSIM__COL_*; may be NULL */
};

/* The registry, in detection order (NULL-terminated). */
extern const kvsim__format_t *const kvsim__formats[];

extern const kvsim__format_t kvsim__format_azure, kvsim__format_vidur, kvsim__format_mooncake,
    kvsim__format_llmservingsim, kvsim__format_kvsim, kvsim__format_requests,
    kvsim__format_lengths, kvsim__format_aiperf;

/* ---- detection --------------------------------------------------------------- */

/* A CSV header line has a column `name` (ignoring case, quotes, spaces). */
bool kvsim__header_has(const char *line, const char *name);
/* A JSON line has the key "key". */
bool kvsim__json_has(const char *line, const char *key);

/* ---- CSV cells --------------------------------------------------------------- */

/* The first header column named one of alts[0..n) (ignoring case): its
 * index in *col and the name that matched in *name. A missing column is
 * an error naming alts[0] and the format. */
int kvsim__fmt_column(kvsim__reader_t *r, const char *const *alts, int n, int *col,
                      const char **name, kvsim_err *err);
/* The same, optional: -1 when absent. */
int kvsim__fmt_opt_column(const kvsim__reader_t *r, const char *name);

/* Starts a row: reads the next CSV record and clears *row (line, no
 * session, no segments). Returns kvsim__csvrow_next's code. */
int kvsim__fmt_csv_row(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err);
/* Integer cell of column col (named name) within [lo, hi]. Returns 1 when
 * read, 0 when optional and empty, or KVSIM_EPARSE naming the line, the
 * column, the value and the range. */
int kvsim__fmt_csv_int(const kvsim__reader_t *r, int col, const char *name, int64_t lo,
                       int64_t hi, bool required, int64_t *out, kvsim_err *err);
/* A token count (1 .. KVSIM__MAX_TRACE_TOKENS). */
int kvsim__fmt_csv_tokens(const kvsim__reader_t *r, int col, const char *name, int64_t *out,
                          kvsim_err *err);
/* The two length columns of a table format, at fixed slots of r->col
 * (a format's own columns follow from KVSIM__COL_NEXT): prompt tokens
 * under one of p[0..np), output tokens under one of o[0..no). */
enum { KVSIM__COL_PROMPT = 0, KVSIM__COL_OUTPUT = 1, KVSIM__COL_NEXT = 2 };
int kvsim__fmt_length_columns(kvsim__reader_t *r, const char *const *p, int np,
                              const char *const *o, int no, kvsim_err *err);
/* Starts a row (kvsim__fmt_csv_row) and reads its two lengths. */
int kvsim__fmt_csv_lengths(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err);
/* Decimal seconds, 0 .. KVSIM__MAX_TRACE_S, to nanoseconds. */
int kvsim__fmt_csv_seconds(const kvsim__reader_t *r, int col, const char *name,
                           kvsim_time_ns *out, kvsim_err *err);
/* A finite decimal number (strtod, leading spaces allowed), as recorded:
 * a measured time in seconds. 1, or KVSIM_EPARSE naming line, column and
 * value. */
int kvsim__fmt_csv_num(const kvsim__reader_t *r, int col, const char *name, double *out,
                       kvsim_err *err);
/* Error for a bad cell: "FILE:LINE: column 'NAME': bad value 'V' (expected WHAT)". */
int kvsim__fmt_csv_bad(const kvsim__reader_t *r, int col, const char *name, const char *what,
                       kvsim_err *err);
/* An arrival measured from the first row's (abs - base), checked. */
int kvsim__fmt_from_base(kvsim__reader_t *r, int64_t abs, int64_t *rel);

/* ---- text lines -------------------------------------------------------------------- */

/* The longest line a JSON-lines trace may have (and the first line of any
 * trace, read to detect its format), newline aside. A line is one request:
 * a few numbers, and at the most a Mooncake hash_ids list (65,536 ids for
 * a 1M-token prompt at 16 tokens a block: under 1 MiB) or a prompt's text
 * carried along (1M tokens of English are about 4 MiB, more with \u
 * escapes). 16 MiB holds either with room, is what a CSV row may have
 * (KVSIM__CSVROW_MAX_BYTES), and bounds the memory a file with no line
 * breaks takes, which getline grew to the size of the file. */
#define KVSIM__TRACE_LINE_MAX ((size_t)16 << 20)

/* Reads one line of text (its '\n' kept) into *buf (grown as needed, a
 * kvsim__realloc buffer of *cap bytes, NUL-terminated), *len bytes. `line`
 * is its number, for errors. Returns 1, 0 at the end of the file, or a
 * fatal error (KVSIM_EINVAL) naming path:line at the first NUL byte (a
 * binary file, read no further) or when the line passes
 * KVSIM__TRACE_LINE_MAX; KVSIM_EIO on a read error. */
int kvsim__fmt_read_line(FILE *f, const char *path, int64_t line, char **buf, size_t *cap,
                         size_t *len, kvsim_err *err);

/* ---- JSON-lines keys -------------------------------------------------------------- */

/* Reads the next non-empty line and parses it as one object (*o, caller
 * deletes): 1, 0 at the end, KVSIM_EPARSE for a bad line, else fatal. */
int kvsim__fmt_jsonl_row(kvsim__reader_t *r, kvsim__row_t *row, cJSON **o, kvsim_err *err);
/* Number under key within [lo, hi] (an integer when integer). */
int kvsim__fmt_json_num(const kvsim__reader_t *r, const cJSON *o, const char *key, bool integer,
                        double lo, double hi, double *out, kvsim_err *err);

/* ---- segments -------------------------------------------------------------------- */

int kvsim__fmt_seg_push(kvsim__reader_t *r, uint64_t id, int64_t len);
/* Points row->segments at the reader's segments (NULL when none). */
void kvsim__fmt_seg_done(kvsim__reader_t *r, kvsim__row_t *row);

#endif
