/* Number writers for the per-request and per-sample rows (requests.csv,
 * timeseries.csv): integers, fixed six decimals, and nanosecond times as
 * microsecond seconds, without printf. Two digits at a time from a table
 * of "00".."99": the digit-by-digit loops cost about 180 instructions a
 * time field (the core run writes about 100,000). Each writer returns the
 * end of what it wrote; the caller's buffer holds at least 24 bytes for
 * each. Internal to the report room. */
#ifndef KVSIM_REPORT_ROWFMT_H
#define KVSIM_REPORT_ROWFMT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kvsim/clock.h"

static const char kvsim__digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline char *kvsim__put_pair(char *p, unsigned d) {
  memcpy(p, kvsim__digit_pairs + 2 * d, 2);
  return p + 2;
}

static const uint64_t kvsim__pow10[20] = {1u,
                                          10u,
                                          100u,
                                          1000u,
                                          10000u,
                                          100000u,
                                          1000000u,
                                          10000000u,
                                          100000000u,
                                          1000000000u,
                                          10000000000u,
                                          100000000000u,
                                          1000000000000u,
                                          10000000000000u,
                                          100000000000000u,
                                          1000000000000000u,
                                          10000000000000000u,
                                          100000000000000000u,
                                          1000000000000000000u,
                                          10000000000000000000u};

/* The number of decimal digits of u: from its bit length (1233 / 4096 is
 * just above log10 2), one comparison to settle the boundary. */
static inline int kvsim__ndigits(uint64_t u) {
  if (u < 10)
    return 1;
  const int t = ((64 - __builtin_clzll(u)) * 1233) >> 12;
  return t + (u >= kvsim__pow10[t]);
}

/* u in decimal, no leading zeros ("0" for zero). */
static inline char *kvsim__put_u64(char *p, uint64_t u) {
  const int n = kvsim__ndigits(u);
  char *e = p + n, *q = e;
  while (u >= 100) {
    q -= 2;
    memcpy(q, kvsim__digit_pairs + 2 * (u % 100), 2);
    u /= 100;
  }
  if (u >= 10) {
    q -= 2;
    memcpy(q, kvsim__digit_pairs + 2 * u, 2);
  } else {
    *--q = (char)('0' + u);
  }
  return e;
}

static inline char *kvsim__put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return kvsim__put_u64(p, (uint64_t)(-(v + 1)) + 1);
  }
  return kvsim__put_u64(p, (uint64_t)v);
}

/* f (0..999999) as six digits. */
static inline char *kvsim__put_six(char *p, uint64_t f) {
  p = kvsim__put_pair(p, (unsigned)(f / 10000));
  p = kvsim__put_pair(p, (unsigned)(f / 100 % 100));
  return kvsim__put_pair(p, (unsigned)(f % 100));
}

/* x with six decimals, rounded half away from zero (llround of x * 1e6);
 * x is finite and |x| < 9.2e12 (times, fractions, latencies). */
static inline char *kvsim__put_fixed6(char *p, double x) {
  int64_t v = llround(x * 1e6);
  if (v < 0) {
    *p++ = '-';
    v = -v;
  }
  p = kvsim__put_u64(p, (uint64_t)v / 1000000);
  *p++ = '.';
  return kvsim__put_six(p, (uint64_t)v % 1000000);
}

/* Integer nanoseconds as seconds with six decimals (microseconds, rounded
 * half up, no float); nothing for KVSIM_TIME_NEVER. |t| < 2^62. */
static inline char *kvsim__put_time_s(char *p, kvsim_time_ns t) {
  if (t == KVSIM_TIME_NEVER)
    return p;
  int64_t us = t >= 0 ? (t + 500) / 1000 : -((-t + 500) / 1000);
  if (us < 0) {
    *p++ = '-';
    us = -us;
  }
  p = kvsim__put_u64(p, (uint64_t)us / 1000000);
  *p++ = '.';
  return kvsim__put_six(p, (uint64_t)us % 1000000);
}

#endif
