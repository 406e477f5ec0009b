/* Recoverable errors: negative KVSIM_E* codes plus one line of text naming
 * where (file, line, field or flag) and what (the bad value). */
#ifndef KVSIM_ERROR_H
#define KVSIM_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#define KVSIM_ERRNO_MAP(X)                                                     \
  X(EINVAL, -1, "invalid value")                                               \
  X(ENOENT, -2, "not found")                                                   \
  X(EIO, -3, "input/output error")                                             \
  X(ENOMEM, -4, "out of memory")                                               \
  X(EPARSE, -5, "parse error")                                                 \
  X(ENOFIT, -6, "does not fit in GPU memory")                                  \
  X(EUNSUP, -7, "not supported")                                               \
  X(ETHRESH, -8, "threshold exceeded")                                         \
  X(EBUDGET, -9, "past the memory budget")

enum {
  KVSIM_OK = 0,
#define KVSIM__ERR_ENUM(name, code, text) KVSIM_##name = code,
  KVSIM_ERRNO_MAP(KVSIM__ERR_ENUM)
#undef KVSIM__ERR_ENUM
};

/* Filled by any function that can fail; msg is one line, no trailing newline.
 * An error about one parameter of the registry (kvsim/params.h) also
 * carries its id and where, in msg, the part after the parameter's name
 * starts ("5000 is out of range [1, 4096]"), so that a caller can name the
 * parameter its own way (the scenario key, the calc flag) without reading
 * the text back. */
typedef struct kvsim_err {
  int code;
  char msg[512];
  int param; /* kvsim_param_id, 0 when the error is about no one parameter */
  int what;  /* offset in msg of the part after the name (0 with no param) */
} kvsim_err;

const char *kvsim_strerror(int code);

/* Sets code and message (printf-style); returns code so callers can
 * `return kvsim_err_set(err, KVSIM_EINVAL, "...")`. err may be NULL. */
int kvsim_err_set(kvsim_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an error already set (adds context as it unwinds). */
int kvsim_err_prefix(kvsim_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Sets an error about one parameter: msg is "NAME: WHAT", param is id and
 * what the offset of WHAT. Returns code. err may be NULL. */
int kvsim_err_set_param(kvsim_err *err, int code, int param, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The part of msg after the parameter's name; the whole message when the
 * error names no parameter. */
const char *kvsim_err_what(const kvsim_err *err);

#ifdef __cplusplus
}
#endif

#endif
