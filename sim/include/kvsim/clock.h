/* Simulated time: one type, int64 nanoseconds. Converted to seconds only at
 * the output edge. */
#ifndef KVSIM_CLOCK_H
#define KVSIM_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int64_t kvsim_time_ns;

#define KVSIM_NS_PER_S INT64_C(1000000000)
#define KVSIM_TIME_NEVER INT64_MAX

/* The latest time in seconds an input may give (285 years), inside int64
 * nanoseconds (9.22e9 s). A run whose clock would pass int64 (an arrival
 * there plus a wait, or steps) stops with an error (engine/run_state.h). */
#define KVSIM_TIME_MAX_S 9e9

static inline double kvsim_time_to_s(kvsim_time_ns t) { return (double)t / 1e9; }

/* Rounds to the nearest nanosecond. */
static inline kvsim_time_ns kvsim_time_from_s(double s) {
  double ns = s * 1e9;
  return (kvsim_time_ns)(ns < 0 ? ns - 0.5 : ns + 0.5);
}

#ifdef __cplusplus
}
#endif

#endif
