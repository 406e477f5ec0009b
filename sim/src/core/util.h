/* Internal helpers shared by the readers of JSON files (model, GPU, scenario)
 * and small string utilities. Not part of the public API. */
#ifndef KVSIM_CORE_UTIL_H
#define KVSIM_CORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "kvsim/error.h"

/* Opens an input file for reading ("rb"), refusing anything but a regular
 * file: a device such as /dev/zero never ends, a pipe blocks, and a
 * directory reads as an error only later. The path is checked before it is
 * opened (opening a pipe would block) and the open stream again. Returns
 * KVSIM_OK with *out set, or open_code ("PATH: cannot open: why") when it
 * cannot be opened and KVSIM_EINVAL ("PATH: is a directory", "PATH: not a
 * regular file (a device, pipe or socket)") otherwise. */
int kvsim__open_input(const char *path, int open_code, FILE **out, kvsim_err *err);

/* True when a and b both exist and name the same file (device and inode
 * equal: a link, "./x" for "x"). */
bool kvsim__same_file(const char *a, const char *b);

/* The largest file kvsim__read_file reads whole: far beyond any config,
 * scenario or benchmark JSON, small enough that a mistaken path is an
 * error rather than all of memory. */
#define KVSIM__READ_FILE_MAX ((size_t)256 << 20)

/* Reads a whole regular text file into a NUL-terminated malloc'd buffer
 * (*out, caller frees); errors as kvsim__open_input, one for a file larger
 * than KVSIM__READ_FILE_MAX, and "PATH:LINE: a NUL byte (a binary file?)"
 * for a NUL byte in it (text read as a C string would end there). */
int kvsim__read_file(const char *path, char **out, size_t *len, kvsim_err *err);

/* Whether cJSON stopped at `stop` in text because the arrays and objects
 * open there (outside strings) are nested deeper than its limit
 * (CJSON_NESTING_LIMIT, cJSON.h): an error cJSON reports as it reports
 * a syntax error. */
bool kvsim__json_too_deep(const char *text, const char *stop);
/* Parses JSON text; `where` names the source in the error ("configs/x.json"). */
cJSON *kvsim__json_parse(const char *text, const char *where, kvsim_err *err);
/* Reads and parses a JSON file (the path names it in errors); the caller
 * deletes the tree. NULL with err set on a read or parse error. */
cJSON *kvsim__json_load(const char *path, kvsim_err *err);

/* The folder of path into dir[cap] ("." for a bare file name); returns
 * false when path has no folder part. */
bool kvsim__dirname(const char *path, char *dir, size_t cap);

/* What joins a `where` and the key after it in an error, the house form
 * "FILE: key" and "FILE: section.key": ": " after a where that names
 * only a file ("m.json: hidden_size"), "." after one that already names a
 * key path, "FILE: section" ("b.json: engine.block_size"), and nothing
 * after an empty where (the caller prefixes the file). */
const char *kvsim__json_sep(const char *where);

/* Typed field getters. They return 1 when the key is present and valid,
 * 0 when absent or JSON null (out untouched), negative on a wrong type or
 * range. `where` and the key, joined by kvsim__json_sep, prefix the error
 * ("m.json: hidden_size", "scenario.json: engine.block_size"). */
int kvsim__json_int(const cJSON *obj, const char *key, int64_t *out, const char *where,
                    kvsim_err *err);
int kvsim__json_num(const cJSON *obj, const char *key, double *out, const char *where,
                    kvsim_err *err);
/* The same, and an error "FILE: key: V is out of range [lo, hi]" outside
 * [lo, hi]. kvsim__json_int accepts the integers a double holds exactly,
 * |v| <= 2^53 - 1, and names that range beyond it; kvsim__json_int_in
 * clamps lo/hi to it. A NaN or infinite number is never in range. */
int kvsim__json_int_in(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out,
                       const char *where, kvsim_err *err);
int kvsim__json_num_in(const cJSON *obj, const char *key, double lo, double hi, double *out,
                       const char *where, kvsim_err *err);
/* The largest integer magnitude a JSON number carries exactly (2^53 - 1). */
#define KVSIM__JSON_INT_MAX INT64_C(9007199254740991)
/* kvsim__json_int_in, where a value below lo says "FILE: key: V must be
 * >= lo" and then `note` (" (leave the key out for the default)"), and
 * one above hi "V is out of range [lo, hi]": each names what is taken. */
int kvsim__json_int_min(const cJSON *obj, const char *key, int64_t lo, int64_t hi, const char *note,
                        int64_t *out, const char *where, kvsim_err *err);
/* Whether obj has the key with a value: a JSON null is the key left out,
 * as the getters above take it. */
bool kvsim__json_given(const cJSON *obj, const char *key);
/* The value at the dotted `path` below obj ("engine.speculative.method"),
 * or NULL: absent, null (not given), or a part longer than 127 bytes. */
const cJSON *kvsim__json_at(const cJSON *obj, const char *path);
int kvsim__json_bool(const cJSON *obj, const char *key, bool *out, const char *where,
                     kvsim_err *err);
/* Copies a string value into out[cap]. */
int kvsim__json_str(const cJSON *obj, const char *key, char *out, size_t cap,
                    const char *where, kvsim_err *err);

/* Bytes of the Unicode line break at s (U+0085 NEL, U+2028 LINE SEPARATOR,
 * U+2029 PARAGRAPH SEPARATOR, in UTF-8: 2 or 3), else 0: control
 * characters as much as ASCII's, ending a line in terminals and editors. */
int kvsim__utf8_line_break(const unsigned char *s);

/* A scenario's or study's name: it becomes a folder below results/, so
 * it may not climb out of it or hold what a folder name cannot ('/',
 * control characters, "." and ".."). */
int kvsim__check_name(const char *name, const char *where, kvsim_err *err);

/* Error unless every key of obj is in the NULL-terminated list `allowed`. */
int kvsim__json_only_keys(const cJSON *obj, const char *const *allowed, const char *where,
                          kvsim_err *err);

/* Levenshtein distance, for "did you mean" suggestions. */
int kvsim__edit_distance(const char *a, const char *b);

/* Formats an integer with thousands separators ("436,528"). */
const char *kvsim__commas(int64_t v, char *buf, size_t cap);

bool kvsim__ends_with(const char *s, const char *suffix);

/* Parses a token count as vLLM's --max-model-len does (human_readable_int
 * in vllm/engine/arg_utils.py): a plain integer, or a number with a suffix,
 * k/m/g/t decimal (10^3 .. 10^12, decimals allowed: "25.6k" = 25,600) and
 * K/M/G/T binary (2^10 .. 2^40, integers only: "8K" = 8,192). Returns
 * KVSIM_OK, or KVSIM_EINVAL (message names `what` and the text) for
 * anything else, a negative value or a result past 2^62. */
int kvsim__parse_human_int(const char *s, int64_t *out, const char *what, kvsim_err *err);

#endif
