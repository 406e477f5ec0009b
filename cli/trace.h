/* The text report of kvsim trace stats (trace_print.c). CLI-internal. */
#ifndef KVSIM_CLI_TRACE_H
#define KVSIM_CLI_TRACE_H

#include "kvsim/trace.h"

void trace_print_stats(const char *file, const char *fmt, const kvsim_trace_stats_t *st);

#endif
