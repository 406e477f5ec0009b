/* One CSV row reader for every table the library reads (trace formats,
 * length files, and later measured-run tables): libcsv underneath, rows
 * handed out one at a time in O(row) memory, each with the physical line
 * (counting '\n') where it and each of its fields start, a header mapped
 * by column name, quoting as RFC 4180 has it (a quoted cell may hold
 * commas, doubled quotes and newlines).
 *
 * Errors are one line naming the file and the line where the bad row
 * starts. A row is bad (KVSIM_EPARSE, and the reader is positioned after
 * it, so a caller may skip it and go on) when it has more or fewer fields
 * than the header, or when a bare carriage return (one not followed by
 * '\n') ends it. Other negative codes (an unreadable file, a NUL byte or
 * a row over KVSIM__CSVROW_MAX_BYTES (KVSIM_EINVAL), out of memory) are
 * fatal. Internal: not part of the public API. */
#ifndef KVSIM_WORKLOAD_CSVROW_H
#define KVSIM_WORKLOAD_CSVROW_H

#include <stdbool.h>
#include <stdint.h>

#include "kvsim/error.h"

/* A row longer than this (an unclosed quote swallowing the file) is fatal. */
#define KVSIM__CSVROW_MAX_BYTES (16 * 1024 * 1024)

typedef struct kvsim__csvrow kvsim__csvrow_t;

/* Opens path. With header, the first row is read here as the header: its
 * names are trimmed of spaces, tabs and a UTF-8 byte-order mark, and
 * every later row must have as many fields. An empty file is an error.
 * *out is owned by the caller (kvsim__csvrow_close). */
int kvsim__csvrow_open(const char *path, bool header, kvsim__csvrow_t **out, kvsim_err *err);

/* Reads the next row: 1, 0 at the end of the file, or a negative code
 * (see above: KVSIM_EPARSE is a bad row that may be skipped). */
int kvsim__csvrow_next(kvsim__csvrow_t *r, kvsim_err *err);

/* The current row: its fields (NUL-terminated, valid until the next call;
 * NULL past the last field), their count, and the lines where the row and
 * field i start (1-based). */
int kvsim__csvrow_nfields(const kvsim__csvrow_t *r);
const char *kvsim__csvrow_field(const kvsim__csvrow_t *r, int i);
int64_t kvsim__csvrow_line(const kvsim__csvrow_t *r);
int64_t kvsim__csvrow_field_line(const kvsim__csvrow_t *r, int i);

/* The header: column count, name of column i (NULL past the end), and
 * the first column whose name equals `name` ignoring case (-1: none). */
int kvsim__csvrow_ncolumns(const kvsim__csvrow_t *r);
const char *kvsim__csvrow_colname(const kvsim__csvrow_t *r, int i);
int kvsim__csvrow_column(const kvsim__csvrow_t *r, const char *name);

/* The path as given to open. */
const char *kvsim__csvrow_path(const kvsim__csvrow_t *r);

void kvsim__csvrow_close(kvsim__csvrow_t *r);

/* Tests: true sends every piece to libcsv, the reference that the
 * reader's own splitting of plain lines is compared with. */
void kvsim__csvrow_libcsv_only(bool on);

#endif
