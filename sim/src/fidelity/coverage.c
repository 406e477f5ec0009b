/* Coverage of measured means by the band (kvsim/fidelity.h): each dev run
 * simulated at nominal step times and at the band's two edges, as kvsim
 * run does, and each measured mean checked against [min, max] of the
 * three simulated means. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/fidelity.h"
#include "kvsim/summary.h"

void kvsim_fidelity_coverage_fini(kvsim_fid_coverage_t *c) {
  kvsim__free(c->items);
  memset(c, 0, sizeof *c);
}

static kvsim_fid_cover_item_t *push(kvsim_fid_coverage_t *c) {
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 16;
    kvsim_fid_cover_item_t *v = kvsim__realloc(c->items, (size_t)cap * sizeof *v);
    if (!v)
      return NULL;
    c->items = v;
    c->cap = cap;
  }
  kvsim_fid_cover_item_t *it = &c->items[c->n++];
  memset(it, 0, sizeof *it);
  return it;
}

/* Held out or not: the kernel tables are measured, not fitted, so a GPU's
 * own tables are never in-sample; what a run could have been fitted on is
 * the engine's host term (perf.h), fitted across GPUs (kvsim validate --all
 * holds each GPU out of it). Another GPU's tables (`--perf NAME`) get the
 * band kvsim run gives a GPU that borrows them. The edge scales follow. */
static void label_coefficients(kvsim_fid_cover_item_t *it, const kvsim_scenario_t *sc, const char *perf_gpu) {
  const kvsim_gpu_t *g = &sc->gpu;
  kvsim_band_edge_t l, h;
  kvsim_scenario_band_edges(sc, &g->perf, &l, &h);
  it->scale_lo = l.step, it->prefill_lo = l.prefill;
  it->scale_hi = h.step, it->prefill_hi = h.prefill;
  kvsim_gpu_band_moe(&g->perf, sc->model.num_experts > 0, &it->band_ttft, &it->band_tpot);
  it->in_sample = false;
  if (perf_gpu && strcmp(perf_gpu, g->name))
    snprintf(it->coefficients, sizeof it->coefficients, "%s's kernel tables, held out from %s (%s band)", perf_gpu,
             g->name, kvsim_cal_status_name(g->perf.status));
  else
    snprintf(it->coefficients, sizeof it->coefficients, "%s (%s)", g->perf.source,
             kvsim_cal_status_name(g->perf.status));
}

/* Run i of three (nominal, low edge, high edge) gave simulated mean v. */
static void take(kvsim_fid_band_mean_t *b, int i, double meas, double v) {
  if (i == 0) {
    b->has = isfinite(meas) && isfinite(v);
    b->meas = meas;
    b->sim = b->lo = b->hi = v;
    return;
  }
  if (!isfinite(v))
    return;
  b->lo = v < b->lo ? v : b->lo;
  b->hi = v > b->hi ? v : b->hi;
}

/* The tops kvsim run reports (summary.h kvsim_summary_merge_ranges): the
 * TTFT's and TPOT's at least their band above the nominal mean, the E2E's
 * both bands on its TTFT and decode parts. */
static void hold_band(kvsim_fid_cover_item_t *it, int k) {
  kvsim_fid_band_mean_t *b = &it->mean[k];
  kvsim_range_t r = {b->lo, b->hi};
  if (k == KVSIM_FID_TTFT || k == KVSIM_FID_TPOT) {
    kvsim_range_hold_band(&r, b->sim, k == KVSIM_FID_TTFT ? it->band_ttft : it->band_tpot);
  } else if (k == KVSIM_FID_E2E && it->mean[KVSIM_FID_TTFT].has && it->band_ttft < 1 && it->band_tpot < 1) {
    const double top = kvsim_e2e_band_top(it->mean[KVSIM_FID_TTFT].sim, b->sim, it->band_ttft, it->band_tpot);
    r.hi = top > r.hi ? top : r.hi;
  }
  b->hi = r.hi;
}

static void tally(kvsim_fid_coverage_t *c, kvsim_fid_cover_item_t *it) {
  if (!it->ok)
    return;
  for (int k = 0; k < KVSIM_FID_COVER_NLAT; k++) {
    kvsim_fid_band_mean_t *b = &it->mean[k];
    if (!b->has)
      continue;
    hold_band(it, k);
    b->inside = b->lo <= b->meas && b->meas <= b->hi;
    c->compared[it->in_sample][k]++;
    c->inside[it->in_sample][k] += b->inside;
  }
}

/* One of the three runs of a measured comparison. */
static int measured_at(kvsim_fid_measured_t *m, const kvsim_scenario_t *sc, const kvsim_band_edge_t *at,
                       kvsim_fid_measured_cmp_t *cmp, kvsim_err *err) {
  if (!at)
    return kvsim_fidelity_measured_compare(m, sc, cmp, err);
  kvsim_scenario_t e;
  int rc = kvsim_scenario_copy(sc, &e, err);
  if (rc < 0)
    return rc;
  if ((rc = kvsim_scenario_set_band_edge(&e, at, err)) == KVSIM_OK)
    rc = kvsim_fidelity_measured_compare(m, &e, cmp, err);
  kvsim_scenario_fini(&e);
  return rc < 0 ? kvsim_err_prefix(err, "band edge at step-time scale %.4g (prefill %.4g)", at->step, at->prefill)
                : rc;
}

/* The nominal run's scales and the two edges of an item. */
static void edges_of(const kvsim_scenario_t *sc, const kvsim_fid_cover_item_t *it, kvsim_band_edge_t at[3]) {
  at[0].step = sc->step_time_scale > 0 ? sc->step_time_scale : 1;
  at[0].prefill = sc->prefill_time_scale > 0 ? sc->prefill_time_scale : at[0].step;
  at[1] = (kvsim_band_edge_t){it->scale_lo, it->prefill_lo};
  at[2] = (kvsim_band_edge_t){it->scale_hi, it->prefill_hi};
}

int kvsim_fidelity_coverage_measured(kvsim_fid_measured_t *m, const kvsim_scenario_t *sc,
                                     const char *perf_gpu, kvsim_fid_coverage_t *c,
                                     kvsim_err *err) {
  kvsim_fid_cover_item_t *it = push(c);
  kvsim_fid_measured_cmp_t *cmp = kvsim__malloc(sizeof *cmp);
  if (!it || !cmp) {
    kvsim__free(cmp);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  }
  snprintf(it->label, sizeof it->label, "%s", m->path);
  snprintf(it->gpu, sizeof it->gpu, "%s", sc->gpu.name);
  label_coefficients(it, sc, perf_gpu);
  kvsim_band_edge_t at[3];
  edges_of(sc, it, at);
  int rc = KVSIM_OK;
  for (int i = 0; i < 3 && rc == KVSIM_OK; i++) {
    if ((rc = measured_at(m, sc, i ? &at[i] : NULL, cmp, err)) < 0)
      break;
    for (int k = 0; k < KVSIM_FID_COVER_NLAT; k++)
      take(&it->mean[k], i, cmp->lat.meas[k].mean, cmp->lat.sim[k].mean);
  }
  kvsim__free(cmp);
  if (rc < 0) {
    c->n--; /* a failed simulation is the command's error, as for validate --measured */
    return rc;
  }
  it->ok = true;
  tally(c, it);
  return KVSIM_OK;
}

/* The three closed-loop runs of one silicon row (client-side means, s). */
static int silicon_item(const kvsim_fid_sil_row_t *r, const kvsim_gpu_t *gpus, int ngpus,
                        double range_ratio, const kvsim_gpu_perf_t *perf, const char *perf_gpu,
                        kvsim_fid_cover_item_t *it, kvsim_err *err) {
  kvsim_scenario_t sc;
  int rc = kvsim_fidelity_silicon_scenario(r, gpus, ngpus, range_ratio, &sc, err);
  if (rc < 0)
    return rc;
  if (perf_gpu && (rc = kvsim_gpu_use_kernels(&sc.gpu, perf_gpu, err)) < 0) {
    kvsim_scenario_fini(&sc);
    return rc;
  }
  if (perf)
    kvsim_fidelity_apply_coefs(&sc.gpu.perf, perf);
  label_coefficients(it, &sc, perf_gpu);
  kvsim_band_edge_t at[3];
  edges_of(&sc, it, at);
  for (int i = 0; i < 3 && rc == KVSIM_OK; i++) {
    kvsim_fid_lat_t lat;
    kvsim_fidelity_lat_init(&lat);
    rc = kvsim_scenario_set_band_edge(&sc, &at[i], err);
    if (rc == KVSIM_OK)
      rc = kvsim_fidelity_simulate_client(&sc, &lat, NULL, NULL, err);
    if (rc == KVSIM_OK && (lat.ttft.n == 0 || lat.tpot.n == 0))
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no request finished at step-time scale %.4g (prefill %.4g)",
                         r->id, at[i].step, at[i].prefill);
    if (rc == KVSIM_OK) {
      take(&it->mean[KVSIM_FID_TTFT], i, r->ttft_ms * 1e-3, kvsim_dist_mean(&lat.ttft));
      take(&it->mean[KVSIM_FID_TPOT], i, r->tpot_ms * 1e-3, kvsim_dist_mean(&lat.tpot));
    }
    kvsim_fidelity_lat_fini(&lat);
  }
  kvsim_scenario_fini(&sc);
  return rc;
}

int kvsim_fidelity_coverage_silicon(const char *path, const char *const *filters, int nfilters,
                                    const kvsim_gpu_t *gpus, int ngpus, double range_ratio,
                                    const kvsim_gpu_perf_t *perf, const char *perf_gpu,
                                    kvsim_fid_coverage_t *c, kvsim_err *err) {
  kvsim_fid_sil_table_t t = {0};
  int rc = kvsim_fidelity_silicon_read(path, filters, nfilters, &t, err);
  if (rc == KVSIM_OK)
    kvsim_fidelity_sil_exclude_unphysical(&t, range_ratio);
  for (int64_t i = 0; rc == KVSIM_OK && i < t.n; i++) {
    const kvsim_fid_sil_row_t *r = &t.rows[i];
    if (r->skipped) {
      c->skipped++;
      continue;
    }
    kvsim_fid_cover_item_t *it = push(c);
    if (!it) {
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
      break;
    }
    snprintf(it->label, sizeof it->label, "%s", r->id);
    snprintf(it->gpu, sizeof it->gpu, "%s", r->gpu);
    kvsim_err row_err = {0};
    int rrc = silicon_item(r, gpus, ngpus, range_ratio, perf, perf_gpu, it, &row_err);
    if (rrc == KVSIM_ENOMEM)
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    it->ok = rrc == KVSIM_OK;
    if (!it->ok)
      snprintf(it->error, sizeof it->error, "%s", row_err.msg);
    tally(c, it);
  }
  kvsim_fidelity_silicon_free(&t);
  return rc;
}
