/* The rows' number writers (report/rowfmt.h) against the digit-by-digit
 * writers they replaced, byte for byte, over millions of seeded random
 * values and the edges: zero and negative zero, subnormals, powers of
 * ten, halves of a microsecond, the int64 limits. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "report/rowfmt.h"

/* The writers as they were (run_output.c before the table). */
static char *old_i64(char *p, int64_t v) {
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
  if (v < 0)
    *p++ = '-';
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  while (n)
    *p++ = tmp[--n];
  return p;
}

static char *old_fixed6(char *p, double x) {
  int64_t v = llround(x * 1e6);
  if (v < 0) {
    *p++ = '-';
    v = -v;
  }
  p = old_i64(p, v / 1000000);
  *p++ = '.';
  int64_t f = v % 1000000;
  for (int64_t d = 100000; d; d /= 10)
    *p++ = (char)('0' + (f / d) % 10);
  return p;
}

static char *old_time(char *p, kvsim_time_ns t) {
  if (t != KVSIM_TIME_NEVER) {
    int64_t us = t >= 0 ? (t + 500) / 1000 : -((-t + 500) / 1000);
    if (us < 0) {
      *p++ = '-';
      us = -us;
    }
    p = old_i64(p, us / 1000000);
    *p++ = '.';
    for (int64_t d = 100000, f = us % 1000000; d; d /= 10)
      *p++ = (char)('0' + (f / d) % 10);
  }
  return p;
}

static uint64_t rng = 0x2545F4914F6CDD1Du;

static uint64_t next64(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void same_i64(int64_t v) {
  char a[48], b[48];
  size_t na = (size_t)(old_i64(a, v) - a), nb = (size_t)(kvsim__put_i64(b, v) - b);
  cr_assert(na == nb && !memcmp(a, b, na), "%lld: '%.*s' against '%.*s'", (long long)v, (int)na, a,
            (int)nb, b);
}

static void same_fixed6(double x) {
  char a[48], b[48];
  size_t na = (size_t)(old_fixed6(a, x) - a), nb = (size_t)(kvsim__put_fixed6(b, x) - b);
  cr_assert(na == nb && !memcmp(a, b, na), "%.17g: '%.*s' against '%.*s'", x, (int)na, a, (int)nb,
            b);
}

static void same_time(int64_t t) {
  char a[48], b[48];
  size_t na = (size_t)(old_time(a, t) - a), nb = (size_t)(kvsim__put_time_s(b, t) - b);
  cr_assert(na == nb && !memcmp(a, b, na), "%lld: '%.*s' against '%.*s'", (long long)t, (int)na, a,
            (int)nb, b);
}

TestSuite(rowfmt);

/* Unsigned, all 64 bits (20 digits), against printf. */
static void same_u64(uint64_t u) {
  char a[48], b[48];
  int na = snprintf(a, sizeof a, "%" PRIu64, u);
  size_t nb = (size_t)(kvsim__put_u64(b, u) - b);
  cr_assert((size_t)na == nb && !memcmp(a, b, nb), "%s against '%.*s'", a, (int)nb, b);
}

Test(rowfmt, unsigned_as_printf) {
  for (int k = 0; k < 20; k++)
    for (int d = -1; d <= 1; d++)
      same_u64(kvsim__pow10[k] + (uint64_t)d);
  same_u64(UINT64_MAX);
  for (int i = 0; i < 2000000; i++)
    same_u64(next64() >> (next64() % 64));
}

Test(rowfmt, integers_as_before) {
  for (int k = 0; k < 19; k++)
    for (int64_t d = -2; d <= 2; d++) {
      const int64_t p10 = (int64_t)kvsim__pow10[k];
      same_i64(p10 + d);
      same_i64(-(p10 + d));
    }
  same_i64(INT64_MAX);
  same_i64(INT64_MIN);
  same_i64(INT64_MIN + 1);
  same_i64(0);
  for (int i = 0; i < 3000000; i++) {
    uint64_t r = next64();
    /* every magnitude: shift the bits down by 0..63 */
    int64_t v = (int64_t)(r >> (next64() % 64));
    same_i64(v);
    same_i64(-v);
  }
}

Test(rowfmt, fixed_six_decimals_as_before) {
  const double edge[] = {0.0,    -0.0,         5e-324,     -5e-324,       2.2250738585072014e-308,
                         1e-7,   4.9999999e-7, 5e-7,       5.000001e-7,   1.5e-6,
                         2.5e-6, 0.5,          0.9999995,  0.99999949999, 1.0,
                         1e12,   -1e12,        9.2e12,     -9.2e12,       0.1,
                         0.2,    0.3,          123456.5e-6};
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
    same_fixed6(edge[i]);
  double p10 = 1e-12;
  for (int k = -12; k <= 12; k++, p10 *= 10) {
    same_fixed6(p10);
    same_fixed6(-p10);
    same_fixed6(nextafter(p10, 0));
    same_fixed6(nextafter(p10, INFINITY));
  }
  for (int i = 0; i < 3000000; i++) {
    /* fractions (usage), latencies (up to hours), times (up to days),
     * microsecond halves, and random bit patterns in range */
    double u = (double)(next64() >> 11) * 0x1p-53;
    same_fixed6(u);
    same_fixed6(u * 3600.0);
    same_fixed6(-u * 1e9);
    int64_t k = (int64_t)(next64() % 100000000000u);
    same_fixed6(((double)k + 0.5) * 1e-6);
    same_fixed6(((double)k - 0.5) * 1e-6);
    uint64_t bits = next64();
    double x;
    memcpy(&x, &bits, sizeof x);
    if (isfinite(x) && fabs(x) < 9.2e12)
      same_fixed6(x);
  }
}

Test(rowfmt, times_as_before) {
  same_time(KVSIM_TIME_NEVER);
  same_time(0);
  int64_t p10 = 1;
  for (int k = 0; k < 18; k++, p10 *= 10)
    for (int64_t d = -501; d <= 501; d += 167) {
      same_time(p10 + d);
      same_time(-(p10 + d));
    }
  for (int i = 0; i < 3000000; i++) {
    int64_t t = (int64_t)(next64() >> (2 + next64() % 62));
    same_time(t);
    same_time(-t);
    same_time(t / 1000 * 1000 + 500); /* a half microsecond */
    same_time(t / 1000 * 1000 + 499);
  }
}
