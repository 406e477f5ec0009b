/* Number parsers shared by the trace formats, and error-message escaping. */
#include "workload/text.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  /* Up to 18 digits cannot overflow: summed here (strtoll's locale and
   * errno handling cost about 150 instructions a trace field); longer
   * ones go to strtoll for its range check. */
  const char *q = p;
  uint64_t u = 0;
  while (q - p < 19 && *q >= '0' && *q <= '9')
    u = u * 10 + (uint64_t)(*q++ - '0');
  char *end;
  long long v;
  if (q - p < 19) {
    v = *s == '-' ? -(long long)u : (long long)u;
    end = (char *)q;
  } else {
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno)
      return -1;
  }
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
    if (ip > KVSIM__MAX_TRACE_S)
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
    if (errno || *skip_ws(end) || !isfinite(v) || fabs(v) > (double)KVSIM__MAX_TRACE_S)
      return -1;
    *out = kvsim_time_from_s(v);
    return 0;
  }
  if (*skip_ws(p) || ip > KVSIM__MAX_TRACE_S)
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

/* The fraction is read as integer digits, never through a double. */
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
  /* The month's own length (2024-02-30 once read as 2024-03-01); a
   * second of 60 is a leap second, which the text may carry. */
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap) || h > 23 || mi > 59 ||
      se > 60)
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
  if (y < KVSIM__AZURE_MIN_YEAR || y > KVSIM__AZURE_MAX_YEAR)
    return -2;
  for (int i = nd; i < 9; i++)
    frac *= 10;
  int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
  *ns = secs * KVSIM_NS_PER_S + frac;
  return 0;
}

const char *kvsim__escape(const char *s, size_t len, char *buf, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  if (cap == 0)
    return buf;
  bool cut = len > KVSIM__ESCAPE_CUT;
  size_t n = cut ? KVSIM__ESCAPE_CUT : len;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c < 0x7f) {
      if (o + 1 >= cap)
        break;
      buf[o++] = (char)c;
    } else {
      if (o + 4 >= cap)
        break;
      buf[o++] = '\\';
      buf[o++] = 'x';
      buf[o++] = hex[c >> 4];
      buf[o++] = hex[c & 15];
    }
  }
  if (cut && o + 3 < cap) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o] = '\0';
  return buf;
}
