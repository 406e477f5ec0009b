/* Text functions of the workload room: the number parsers every trace
 * format shares (exact decimal seconds, Azure timestamps, integers) and
 * the escaping of a bad value before it goes into an error message.
 * Internal: not part of the public API. */
#ifndef KVSIM_WORKLOAD_TEXT_H
#define KVSIM_WORKLOAD_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "kvsim/clock.h"

/* Largest arrival a trace may give, in seconds: 9e9 s (285 years) keeps
 * every arrival, and the difference of two, inside int64 nanoseconds. */
#define KVSIM__MAX_TRACE_S INT64_C(9000000000)
/* Largest token count of one request a trace may give (int32, as the
 * length tables store them). */
#define KVSIM__MAX_TRACE_TOKENS INT64_C(2147483647)
/* Azure timestamps must fall in the years int64 nanoseconds can hold
 * (1677-09-21 .. 2262-04-11): whole years inside that range. */
#define KVSIM__AZURE_MIN_YEAR 1678
#define KVSIM__AZURE_MAX_YEAR 2261

/* Number parsers. Return 0, or -1 on text that is not a number of the
 * kind (leading and trailing spaces and tabs are allowed). */
int kvsim__parse_int(const char *s, int64_t *out);
/* Decimal seconds to nanoseconds, exact to 9 fractional digits; fails
 * beyond +-KVSIM__MAX_TRACE_S. */
int kvsim__parse_seconds_ns(const char *s, kvsim_time_ns *out);
/* 'YYYY-MM-DD HH:MM:SS[.fffffff]' (or a 'T') to ns since 1970-01-01.
 * Returns -1 on bad text, -2 on a year outside the Azure range above. */
int kvsim__parse_azure_ts(const char *s, int64_t *ns_since_epoch);

/* Writes s (len bytes) into buf[cap] for an error message: bytes outside
 * printable ASCII become \xNN, and a value longer than
 * KVSIM__ESCAPE_CUT bytes is cut there with "...". Returns buf. */
#define KVSIM__ESCAPE_CUT 64
#define KVSIM__ESCAPE_MAX (4 * KVSIM__ESCAPE_CUT + 4)
const char *kvsim__escape(const char *s, size_t len, char *buf, size_t cap);

#endif
