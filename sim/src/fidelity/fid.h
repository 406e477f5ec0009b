/* Helpers shared by the files of the fidelity room. Internal: not part of
 * the public API (kvsim/fidelity.h is). */
#ifndef KVSIM_FIDELITY_FID_H
#define KVSIM_FIDELITY_FID_H

#include <stdbool.h>
#include <stdint.h>

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

/* The Prometheus readers of kvsim_fidelity_read_series: text with a
 * timestamp on every sample (series_prom.c), query_range JSON
 * (series_promjson.c); o: the time origin (fidelity/series_acc.h). */
struct kvsim_fid_series;
struct kvsim__ser_origin;
int kvsim__fid_read_prom_text(const char *path, struct kvsim__ser_origin *o, struct kvsim_fid_series *s,
                              kvsim_err *err);
int kvsim__fid_read_prom_json(const char *path, struct kvsim__ser_origin *o, struct kvsim_fid_series *s,
                              kvsim_err *err);

/* kvsim_fidelity_read_series with a time origin for the formats stamped
 * on the wall clock (the Prometheus ones; a CSV series keeps its own
 * clock and ignores it); o->prom says which it was. */
int kvsim__fid_read_series_at(const char *path, struct kvsim__ser_origin *o, struct kvsim_fid_series *s,
                              kvsim_err *err);

/* kvsim_fidelity_simulate (client: _client) with, when every_row, the
 * simulated series of every row, as a Prometheus scrape of the run would
 * hold it (simulate.c). */
struct kvsim_fid_lat;
struct kvsim_scenario;
struct kvsim_run_stats;
int kvsim__fid_simulate(const struct kvsim_scenario *sc, bool client, bool every_row,
                        struct kvsim_fid_lat *lat, struct kvsim_fid_series *ser,
                        struct kvsim_run_stats *st, kvsim_err *err);

/* Fills a silicon row's measured date and its campaign's launch facts
 * from its silicon_data_source cell (silicon_launch.c). */
struct kvsim_fid_sil_row;
void kvsim__fid_sil_launch(struct kvsim_fid_sil_row *w, const char *source);

#endif
