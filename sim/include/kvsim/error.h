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

/* Filled by any function that can fail; msg is one line, no trailing newline. */
typedef struct kvsim_err {
  int code;
  char msg[512];
} kvsim_err;

const char *kvsim_strerror(int code);

/* Sets code and message (printf-style); returns code so callers can
 * `return kvsim_err_set(err, KVSIM_EINVAL, "...")`. err may be NULL. */
int kvsim_err_set(kvsim_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an error already set (adds context as it unwinds). */
int kvsim_err_prefix(kvsim_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif
