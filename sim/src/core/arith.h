/* Integer helpers every room uses: ceil-division, the splitmix64 mixer,
 * and overflow-checked arithmetic for byte and token counts that are
 * products of user values (a product of two int64 can exceed 2^63).
 * Internal: not part of the public API. */
#ifndef KVSIM_CORE_ARITH_H
#define KVSIM_CORE_ARITH_H

#include <stdbool.h>
#include <stdint.h>

/* ceil(a / b) for a >= 0, b > 0. */
static inline int64_t kvsim__cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* splitmix64's finaliser (Steele, Lea, Flood 2014): a bijective mixer that
 * spreads small consecutive ids over all 64 bits. */
static inline uint64_t kvsim__mix64(uint64_t x) {
  x ^= x >> 30;
  x *= UINT64_C(0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C(0x94d049bb133111eb);
  x ^= x >> 31;
  return x;
}

/* One splitmix64 step: advances *state and returns the next value. */
static inline uint64_t kvsim__splitmix64(uint64_t *state) {
  *state += UINT64_C(0x9e3779b97f4a7c15);
  return kvsim__mix64(*state);
}

/* Checked a*b and a+b: false (and *out untouched) on overflow. */
static inline bool kvsim__mul_i64(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return false;
  *out = r;
  return true;
}
static inline bool kvsim__add_i64(int64_t a, int64_t b, int64_t *out) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    return false;
  *out = r;
  return true;
}

/* A double that is finite and within [lo, hi] converts to int64 without
 * undefined behaviour; anything else (NaN, inf, 1e300) does not. */
static inline bool kvsim__double_to_i64(double v, int64_t *out) {
  if (!(v >= -9.2e18 && v <= 9.2e18))
    return false;
  *out = (int64_t)v;
  return true;
}

#endif
