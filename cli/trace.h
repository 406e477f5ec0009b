/* The text report of kvsim trace stats (trace_print.c). CLI-internal. */
#ifndef KVSIM_CLI_TRACE_H
#define KVSIM_CLI_TRACE_H

#include "workload/wl.h"

void trace_print_stats(const char *file, const char *fmt, const kvsim__tstats_t *st);

#endif
