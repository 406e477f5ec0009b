#include "kvsim/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *kvsim_strerror(int code) {
  switch (code) {
  case KVSIM_OK:
    return "ok";
#define KVSIM__ERR_CASE(name, c, text)                                         \
  case c:                                                                      \
    return text;
    KVSIM_ERRNO_MAP(KVSIM__ERR_CASE)
#undef KVSIM__ERR_CASE
  default:
    return "unknown error";
  }
}

int kvsim_err_set(kvsim_err *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

int kvsim_err_prefix(kvsim_err *err, const char *fmt, ...) {
  if (!err)
    return KVSIM_EINVAL;
  char prefix[256], old[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
  return err->code;
}
