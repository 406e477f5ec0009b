/* The measured side of a comparison: loading a measured run once and
 * comparing it with simulations (kvsim/fidelity.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "fidelity/fid.h"
#include "fidelity/series_acc.h"
#include "kvsim/fidelity.h"

/* ---- comparison ---- */

static bool file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int kvsim_fidelity_measured_load(const char *measured, const char *series, kvsim_fid_measured_t *m, kvsim_err *err) {
  memset(m, 0, sizeof *m);
  kvsim_fidelity_lat_init(&m->lat);
  snprintf(m->path, sizeof m->path, "%s", measured);
  int rc = kvsim__fid_read_measured(measured, m, err);
  if (rc < 0)
    return rc;
  if (series) {
    snprintf(m->series_path, sizeof m->series_path, "%s", series);
  } else if (m->fmt == KVSIM_FID_FMT_LLMSERVINGSIM) {
    /* LLMServingSim keeps timeseries.csv beside requests.jsonl. */
    snprintf(m->series_path, sizeof m->series_path, "%s", measured);
    char *slash = strrchr(m->series_path, '/');
    size_t off = slash ? (size_t)(slash - m->series_path + 1) : 0;
    snprintf(m->series_path + off, sizeof m->series_path - off, "timeseries.csv");
    if (!file_exists(m->series_path))
      m->series_path[0] = '\0';
  }
  if (m->series_path[0]) {
    /* A scrape stamped on the wall clock starts where the requests did,
     * when the requests file stamps them on it too (aiperf). */
    double t0 = m->lat.first_arrival_unix_s;
    kvsim__ser_origin_t o = {isfinite(t0) && t0 > 0 && t0 < 1e11 ? llround(t0 * 1e3) : INT64_MIN, false,
                             false};
    if ((rc = kvsim__fid_read_series_at(m->series_path, &o, &m->series, err)) < 0)
      return rc;
    m->has_series = true;
    m->series_prom = o.prom;
    m->series_anchored = o.anchored;
  }
  return KVSIM_OK;
}

void kvsim_fidelity_measured_fini(kvsim_fid_measured_t *m) {
  kvsim_fidelity_lat_fini(&m->lat);
  kvsim_fidelity_series_fini(&m->series);
}

/* A result with aggregates only: what it states is the measured side. */
static void use_stated(const kvsim_fid_measured_t *m, kvsim_fid_lat_cmp_t *l) {
  for (int k = 0; k < KVSIM_FID_NLAT; k++)
    l->meas[k] = m->stated[k];
  l->has_queue = false;
  l->n_meas = m->stated_n;
  l->makespan_meas = m->stated_makespan;
  l->tput_meas = m->stated_tput;
}

int kvsim_fidelity_measured_compare(kvsim_fid_measured_t *m, const kvsim_scenario_t *sc, kvsim_fid_measured_cmp_t *cmp,
                         kvsim_err *err) {
  memset(cmp, 0, sizeof *cmp);
  kvsim_fid_lat_t sim;
  kvsim_fidelity_lat_init(&sim);
  kvsim_fid_series_t ser;
  memset(&ser, 0, sizeof ser);
  /* A benchmark's file times requests at the client; the LLMServingSim
   * and kvsim files on the engine's clock. */
  int rc = kvsim__fid_simulate(sc, kvsim_fidelity_fmt_client(m->fmt), m->series_prom, &sim,
                               m->has_series ? &ser : NULL, &cmp->st, err);
  if (rc == KVSIM_OK) {
    kvsim_fidelity_lat_compare(&m->lat, &sim, &cmp->lat);
    if (m->aggregates_only)
      use_stated(m, &cmp->lat);
    if (m->has_series) {
      cmp->has_series = true;
      kvsim_fidelity_series_compare(&m->series, &ser, &cmp->series);
    }
  }
  kvsim_fidelity_lat_fini(&sim);
  kvsim_fidelity_series_fini(&ser);
  return rc;
}

/* ---- JSON ---- */

static void add_metric(cJSON *o, const char *key, double meas, double sim) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddItemToObject(e, "measured", kvsim__fid_num_or_null(meas));
  cJSON_AddItemToObject(e, "simulated", kvsim__fid_num_or_null(sim));
  cJSON_AddItemToObject(e, "error_pct", kvsim__fid_num_or_null(kvsim_fidelity_err_pct(sim, meas)));
  cJSON_AddItemToObject(o, key, e);
}

static void add_series(cJSON *o, const kvsim_fid_measured_t *m, const kvsim_fid_series_cmp_t *s) {
  cJSON *ts = cJSON_AddObjectToObject(o, "series");
  cJSON_AddStringToObject(ts, "file", m->series_path);
  if (m->series_prom)
    cJSON_AddStringToObject(ts, "time_origin",
                            m->series_anchored ? "first request's arrival" : "first sample");
  cJSON_AddNumberToObject(ts, "ticks", (double)s->n);
  cJSON_AddItemToObject(ts, "running_mean_abs_diff", kvsim__fid_num_or_null(s->running_mad));
  cJSON_AddItemToObject(ts, "waiting_mean_abs_diff", kvsim__fid_num_or_null(s->waiting_mad));
  cJSON_AddItemToObject(ts, "kv_usage_mean_abs_diff_pct", kvsim__fid_num_or_null(s->kv_mad));
  cJSON_AddItemToObject(ts, "running_mean_measured", kvsim__fid_num_or_null(s->running_mean_meas));
  cJSON_AddItemToObject(ts, "running_mean_simulated", kvsim__fid_num_or_null(s->running_mean_sim));
  cJSON_AddItemToObject(ts, "waiting_mean_measured", kvsim__fid_num_or_null(s->waiting_mean_meas));
  cJSON_AddItemToObject(ts, "waiting_mean_simulated", kvsim__fid_num_or_null(s->waiting_mean_sim));
  cJSON_AddItemToObject(ts, "kv_usage_mean_measured_pct", kvsim__fid_num_or_null(s->kv_mean_meas));
  cJSON_AddItemToObject(ts, "kv_usage_mean_simulated_pct", kvsim__fid_num_or_null(s->kv_mean_sim));
}

char *kvsim_fidelity_measured_to_json(const kvsim_fid_measured_t *m, const kvsim_scenario_t *sc,
                                      const kvsim_fid_measured_cmp_t *c) {
  const kvsim_fid_lat_cmp_t *l = &c->lat;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mode", "measured");
  cJSON_AddStringToObject(o, "measured_file", m->path);
  cJSON_AddStringToObject(o, "format", kvsim_fidelity_fmt_name(m->fmt));
  if (m->runs > 1) {
    cJSON_AddNumberToObject(o, "run", m->run);
    cJSON_AddNumberToObject(o, "runs", m->runs);
  }
  if (m->aggregates_only)
    cJSON_AddStringToObject(o, "compared", "aggregates (no per-request lists)");
  if (m->not_compared[0])
    cJSON_AddStringToObject(o, "not_compared", m->not_compared);
  if (m->replay[0])
    cJSON_AddStringToObject(o, "replay", m->replay);
  cJSON_AddStringToObject(o, "scenario", sc->name);
  cJSON_AddStringToObject(o, "gpu", sc->gpu.name);
  cJSON_AddStringToObject(o, "perf_source", sc->gpu.perf.source);
  cJSON *rq = cJSON_AddObjectToObject(o, "requests");
  cJSON_AddNumberToObject(rq, "measured", (double)l->n_meas);
  cJSON_AddNumberToObject(rq, "simulated", (double)l->n_sim);
  cJSON_AddNumberToObject(rq, "simulated_preemptions", (double)c->st.preemptions);
  cJSON_AddNumberToObject(rq, "simulated_gpu_blocks", (double)c->st.plan.num_gpu_blocks);
  /* The contract (issue 6): `metrics` holds mean / p50 / p99 of TTFT, TPOT
   * and E2E in seconds; p90 and the queueing delay ride along. */
  cJSON *mt = cJSON_AddObjectToObject(o, "metrics");
  for (int k = 0; k < KVSIM_FID_NLAT; k++) {
    if (k == KVSIM_FID_QUEUE && !l->has_queue)
      continue;
    char key[32];
    const char *q[] = {"mean", "p50", "p90", "p99"};
    double mv[] = {l->meas[k].mean, l->meas[k].p50, l->meas[k].p90, l->meas[k].p99};
    double sv[] = {l->sim[k].mean, l->sim[k].p50, l->sim[k].p90, l->sim[k].p99};
    for (int j = 0; j < 4; j++) {
      snprintf(key, sizeof key, "%s_%s", kvsim_fidelity_lat_name(k), q[j]);
      add_metric(mt, key, mv[j], sv[j]);
    }
  }
  add_metric(mt, "makespan_s", l->makespan_meas, l->makespan_sim);
  add_metric(mt, "output_tokens_per_s", l->tput_meas, l->tput_sim);
  if (c->has_series)
    add_series(o, m, &c->series);
  return kvsim__fid_print(o);
}
