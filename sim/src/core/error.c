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
    err->param = err->what = 0;
  }
  return code;
}

int kvsim_err_set_param(kvsim_err *err, int code, int param, const char *name, const char *fmt,
                        ...) {
  if (!err)
    return code;
  char what[sizeof err->msg], shown[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  /* Escaped apart, so that the offset of WHAT is known, not searched for. */
  snprintf(shown, sizeof shown, "%s", name);
  escape_line(shown, sizeof shown);
  escape_line(what, sizeof what);
  snprintf(err->msg, sizeof err->msg, "%s: %s", shown, what);
  size_t len = strlen(err->msg), at = strlen(shown) + 2;
  err->code = code;
  err->param = param;
  err->what = (int)(at < len ? at : len);
  return code;
}

const char *kvsim_err_what(const kvsim_err *err) { return err->msg + err->what; }

int kvsim_err_prefix(kvsim_err *err, const char *fmt, ...) {
  if (!err)
    return KVSIM_EINVAL;
  char prefix[256], old[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  escape_line(prefix, sizeof prefix);
  snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
  escape_line(err->msg, sizeof err->msg);
  /* The parameter's part moves right by the prefix (old was escaped). */
  if (err->param) {
    size_t len = strlen(err->msg), at = (size_t)err->what + strlen(prefix) + 2;
    err->what = (int)(at < len ? at : len);
  }
  return err->code;
}
