/* The requests a run keeps for its steady window (kvsim/steady.h): their
 * arrival and latencies, in memory up to REQLOG_MEM requests, then spilled
 * to an unlinked temporary file, so a run's memory stays flat in its
 * request count. Internal to the report room. */
#ifndef KVSIM_REPORT_REQLOG_H
#define KVSIM_REPORT_REQLOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct kvsim__req_rec {
  int64_t arrival;
  double ttft, tpot, e2e, queue; /* tpot < 0: one output token */
  int32_t priority;
  bool finished, rejected, slo_ok;
} kvsim__req_rec_t;

typedef struct kvsim__reqlog {
  kvsim__req_rec_t *mem;
  int64_t nmem, cap;
  FILE *spill;        /* past the memory's share; NULL until needed */
  int64_t n;          /* records kept */
  int64_t first, last; /* smallest and largest arrival */
  int64_t pos;        /* reading: the next record of memory, then the file */
} kvsim__reqlog_t;

void kvsim__reqlog_init(kvsim__reqlog_t *l);
void kvsim__reqlog_fini(kvsim__reqlog_t *l);
/* 0, or KVSIM_ENOMEM / KVSIM_EIO (the temporary file). */
int kvsim__reqlog_add(kvsim__reqlog_t *l, const kvsim__req_rec_t *r);
/* Reading from the first record: rewind (0 or KVSIM_EIO), then next: 1
 * with a record, 0 at the end, KVSIM_EIO. */
int kvsim__reqlog_rewind(kvsim__reqlog_t *l);
int kvsim__reqlog_next(kvsim__reqlog_t *l, kvsim__req_rec_t *out);

#endif
