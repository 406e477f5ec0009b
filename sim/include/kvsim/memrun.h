/* A run, or a memory plan, into memory: what `kvsim run --no-band
 * --no-verify-advice` writes (summary.json, timeseries.csv, requests.csv)
 * and what `kvsim calc --json` prints, as text the caller owns, with no
 * file written. For embedding programs and bindings that pass only C
 * strings (the Python module, python/kvsim/, through ctypes). */
#ifndef KVSIM_MEMRUN_H
#define KVSIM_MEMRUN_H

#include <stddef.h>

#include "kvsim/error.h"
#include "kvsim/scenario.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvsim_memrun {
  char *summary_json;   /* summary.json's text (docs/scenario.md, "Outputs") */
  char *timeseries_csv; /* timeseries.csv's, header line first */
  char *requests_csv;   /* requests.csv's */
} kvsim_memrun_t;

/* Runs sc once (no band, no re-runs of the advice) into out (caller's;
 * kvsim_memrun_fini). Errors: kvsim_run's, KVSIM_ENOMEM. */
int kvsim_memrun(const kvsim_scenario_t *sc, kvsim_memrun_t *out, kvsim_err *err);
void kvsim_memrun_fini(kvsim_memrun_t *r);

/* The same for a scenario given as a file (path) or as JSON text (text,
 * its relative paths against base_dir; path NULL), with sets[0..nsets)
 * applied as --set KEY=VALUE. Returns a run to free with
 * kvsim_memrun_free, or NULL with the one-line error in errbuf[cap]. */
kvsim_memrun_t *kvsim_memrun_new(const char *path, const char *text, const char *base_dir,
                                 const char *const *sets, int nsets, char *errbuf, size_t cap);
void kvsim_memrun_free(kvsim_memrun_t *r);

/* `kvsim calc --json` with flags[i] ("--model", "--gpu",
 * "--gpu-memory-utilization", "--engine", ...) given values[i] (text, as
 * on the command line; a switch's value is ignored): the JSON text (free
 * with kvsim_memrun_text_free), or NULL with the error in errbuf[cap]. */
char *kvsim_memrun_calc_json(const char *const *flags, const char *const *values, int n,
                             char *errbuf, size_t cap);
void kvsim_memrun_text_free(char *text);

#ifdef __cplusplus
}
#endif

#endif
