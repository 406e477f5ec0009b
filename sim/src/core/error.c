#include "kvsim/error.h"

#include "core/util.h"

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

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static int utf8_len(const unsigned char *s) {
  int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
  if (s[0] >= 0xf8)
    return 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  return n;
}

/* A message is one printable line whatever the input held: values echoed
 * from a garbage file (control bytes, Unicode line breaks, invalid UTF-8,
 * a quoted cell with newlines) come out as \xNN, cut to fit the buffer. */
static void escape_line(char *msg, size_t cap) {
  char out[sizeof ((kvsim_err *)0)->msg];
  size_t o = 0;
  const unsigned char *s = (const unsigned char *)msg;
  while (*s && o + 5 < sizeof out) {
    /* Unicode's line breaks too (NEL, U+2028, U+2029): as \xNN bytes. */
    int n = kvsim__utf8_line_break(s) ? 0 : *s >= 0x80 ? utf8_len(s) : (*s >= 0x20 && *s != 0x7f);
    if (n > 0 && o + (size_t)n < sizeof out) {
      memcpy(out + o, s, (size_t)n);
      o += (size_t)n;
      s += n;
    } else {
      o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", *s++);
    }
  }
  out[o] = '\0';
  snprintf(msg, cap, "%s", out);
}

int kvsim_err_set(kvsim_err *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    escape_line(err->msg, sizeof err->msg);
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
  escape_line(err->msg, sizeof err->msg);
  return err->code;
}
