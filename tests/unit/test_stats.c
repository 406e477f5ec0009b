#include <criterion/criterion.h>
#include <gsl/gsl_sort.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/stats.h"

/* n seeded values of every kind a latency takes: zeros, repeats, tiny and
 * subnormal, seconds, huge, +inf. */
static double *values(int64_t n, uint64_t seed) {
  double *v = malloc((size_t)n * sizeof *v);
  cr_assert_not_null(v, "values");
  uint64_t x = seed | 1;
  for (int64_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const double u = (double)(x >> 11) / 9007199254740992.0;
    switch (x % 8) {
    case 0: v[i] = 0; break;
    case 1: v[i] = i > 0 ? v[(x >> 20) % (uint64_t)i] : 1; break; /* a repeat */
    case 2: v[i] = u * 1e-310; break;                              /* subnormal */
    case 3: v[i] = u * 1e12; break;
    case 4: v[i] = (x >> 40) % 1000 == 0 ? INFINITY : u; break;
    default: v[i] = u * 30.0; break;
    }
  }
  return v;
}

/* The distribution's sorted values are gsl_sort's, bit for bit, at sizes
 * on both sides of the radix sort's threshold and up to the exact limit;
 * so are its quantiles. */
Test(stats, sorted_values_are_gsl_sorts_bit_for_bit) {
  const int64_t sizes[] = {1, 2, 255, 256, 257, 1000, 19366, KVSIM_DIST_EXACT_MAX};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    const int64_t n = sizes[s];
    double *v = values(n, 0x1234567ull + (uint64_t)s);
    kvsim_dist_t d;
    kvsim_dist_init(&d);
    for (int64_t i = 0; i < n; i++)
      cr_assert_eq(kvsim_dist_add(&d, v[i]), 0, "add");
    gsl_sort(v, 1, (size_t)n);
    const double p99 = kvsim_dist_quantile(&d, 0.99);
    cr_assert(kvsim_dist_exact(&d), "n = %lld stays exact", (long long)n);
    cr_assert_eq(memcmp(d.v, v, (size_t)n * sizeof *v), 0, "n = %lld: the sorted arrays differ", (long long)n);
    const double want = n > 1 ? v[(int64_t)(0.99 * (double)(n - 1))] : v[0];
    cr_assert(p99 >= want || isinf(want), "n = %lld: p99 %g at least the value at its rank %g", (long long)n,
              p99, want);
    kvsim_dist_fini(&d);
    free(v);
  }
}

/* -0.0 keeps its sign through kvsim_dist_add and would sort after every
 * positive value by its bits: the distribution falls back to gsl_sort,
 * which orders it with the zeros. */
Test(stats, a_negative_zero_sorts_with_the_zeros) {
  kvsim_dist_t d;
  kvsim_dist_init(&d);
  for (int i = 0; i < 600; i++)
    kvsim_dist_add(&d, i == 300 ? -0.0 : (double)(i % 7));
  cr_assert_eq(kvsim_dist_quantile(&d, 0.5), 3.0, "the median of 0..6 repeated");
  for (int64_t i = 1; i < d.n; i++)
    cr_assert_leq(d.v[i - 1], d.v[i], "sorted at %lld", (long long)i);
  cr_assert_eq(d.v[d.n - 1], 6.0, "the largest value last, not -0.0");
  kvsim_dist_fini(&d);
}
