/* Helpers shared by the files of the fidelity room. Internal: not part of
 * the public API (kvsim/fidelity.h is). */
#ifndef KVSIM_FIDELITY_FID_H
#define KVSIM_FIDELITY_FID_H

#include <cJSON.h>

#include "kvsim/error.h"

/* A number, or null when it is not finite (JSON has no NaN). */
cJSON *kvsim__fid_num_or_null(double x);

/* Prints o indented and deletes it; NULL when o is NULL or out of memory. */
char *kvsim__fid_print(cJSON *o);

/* The fidelity room's error codes for an error of the workload room's
 * readers (csvrow, formats), whose message is kept: a file that cannot be
 * opened is KVSIM_EIO, bad content (KVSIM_EPARSE) is `bad`. Returns the
 * code, also stored in err (which may be NULL); rc >= 0 is returned as it is. */
int kvsim__fid_recode(int rc, int bad, kvsim_err *err);

/* Reads the measured file path into m (initialised: lat ready), as
 * kvsim_fidelity_read_measured does, keeping a benchmark result's run,
 * drive and aggregates (measured.c). */
struct kvsim_fid_measured;
int kvsim__fid_read_measured(const char *path, struct kvsim_fid_measured *m, kvsim_err *err);

#endif
