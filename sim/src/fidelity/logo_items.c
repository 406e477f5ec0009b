/* The items of leave-one-GPU-out (logo.h): the per-request runs and the
 * silicon rows of the dev data, each simulated on its GPU's kernel tables
 * (or another profile's) at a given engine host time and client latency. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "fidelity/logo.h"

/* The three per-request runs of the dev data and their replays. */
static const struct {
  const char *gpu, *model, *measured, *scenario;
} runs[] = {
    {"rtx4090", "llama-3.1-8b", "llmservingsim/RTX4090/Llama-3.1-8B/vllm/requests.jsonl",
     "llmservingsim-rtx4090-llama-3.1-8b.json"},
    {"rtx-pro-6000", "llama-3.1-8b", "llmservingsim/RTXPRO6000/Llama-3.1-8B/vllm/requests.jsonl",
     "llmservingsim-rtxpro6000-llama-3.1-8b.json"},
    {"rtx-pro-6000", "qwen3-30b-a3b", "llmservingsim/RTXPRO6000/Qwen3-30B-A3B-Instruct-2507/vllm/requests.jsonl",
     "llmservingsim-rtxpro6000-qwen3-30b-a3b.json"},
};
#define NRUNS ((int)(sizeof runs / sizeof *runs))

static const char *precision_of(const kvsim_fid_sil_row_t *r) { return r->precision[0] ? r->precision : "bf16"; }

/* E2E of a row from its means: TTFT + TPOT x (mean output - 1). */
static double row_e2e(const kvsim_fid_sil_row_t *r, double ttft, double tpot) {
  const double osl = (double)r->osl * (1 + kvsim_fidelity_sil_range_ratio(r, KVSIM_FID_SIL_RANGE_AUTO)) / 2;
  return ttft + tpot * (osl - 1);
}

static void coefs(kvsim_gpu_perf_t *g, const kvsim__logo_par_t *p, bool client, int family) {
  g->host_us = p->host_us[family];
  g->host_per_seq_us = p->per_seq_us[family];
  g->frontend_us = client ? p->frontend_us : 0; /* the runs' timestamps are the engine's */
  g->frontend_per_token_us = 0;
}

double kvsim__logo_linear(const kvsim__logo_item_t *it, int k, const kvsim__logo_par_t *p) {
  const double v = it->at0[k] + (it->at1[k] - it->at0[k]) * p->host_us[it->family] / KVSIM__LOGO_H1 +
                   (it->at2[k] - it->at0[k]) * p->per_seq_us[it->family] / KVSIM__LOGO_S1;
  return it->client && k != 1 ? v + p->frontend_us * 1e-3 : v;
}

static int simulate_run(const kvsim_fid_logo_opts_t *o, int i, const char *kernels, const kvsim__logo_par_t *p,
                        double out[3], double meas[3], kvsim_err *err) {
  char mpath[4096], spath[4096];
  snprintf(mpath, sizeof mpath, "%s/%s", o->validation_dir, runs[i].measured);
  snprintf(spath, sizeof spath, "%s/%s", o->scenario_dir, runs[i].scenario);
  kvsim_fid_measured_t m;
  kvsim_scenario_t sc;
  int rc = kvsim_fidelity_measured_load(mpath, NULL, &m, err);
  if (rc < 0) {
    kvsim_fidelity_measured_fini(&m);
    return kvsim_err_prefix(err, "%s", runs[i].measured);
  }
  if ((rc = kvsim_scenario_load(spath, NULL, 0, &sc, err)) < 0) {
    kvsim_fidelity_measured_fini(&m);
    return rc;
  }
  if (kernels)
    rc = kvsim_gpu_use_kernels(&sc.gpu, kernels, err);
  coefs(&sc.gpu.perf, p, false, KVSIM_HOST_VLLM_ASYNC); /* vLLM 0.19 */
  kvsim_fid_measured_cmp_t c;
  if (rc == KVSIM_OK)
    rc = kvsim_fidelity_measured_compare(&m, &sc, &c, err);
  for (int k = 0; rc == KVSIM_OK && k < 3; k++) {
    out[k] = c.lat.sim[k].mean * 1e3;
    if (meas)
      meas[k] = c.lat.meas[k].mean * 1e3;
  }
  kvsim_fidelity_measured_fini(&m);
  kvsim_scenario_fini(&sc);
  return rc;
}

static int row_family(const kvsim_fid_sil_row_t *r) {
  int v;
  if (!strcasecmp(r->backend, "sglang"))
    return KVSIM_HOST_SGLANG;
  if (r->version[0] && kvsim_vllm_version_parse(r->version, &v) == KVSIM_OK && v < KVSIM_VLLM_VERSION(0, 14, 0))
    return KVSIM_HOST_VLLM_SYNC;
  return KVSIM_HOST_VLLM_ASYNC;
}

static int simulate_row(const kvsim_fid_sil_row_t *r, const char *kernels, const kvsim__logo_par_t *p, double out[3],
                        kvsim_err *err) {
  kvsim_gpu_perf_t perf;
  memset(&perf, 0, sizeof perf);
  if (kernels)
    snprintf(perf.kernels, sizeof perf.kernels, "%s", kernels);
  coefs(&perf, p, true, row_family(r));
  int rc = kvsim_fidelity_silicon_simulate(r, NULL, 0, KVSIM_FID_SIL_RANGE_AUTO, &perf, &out[0], &out[1], err);
  if (rc == KVSIM_OK)
    out[2] = row_e2e(r, out[0], out[1]);
  return rc;
}

int kvsim__logo_simulate(const kvsim_fid_logo_opts_t *o, const kvsim__logo_item_t *it, const char *kernels,
                         const kvsim__logo_par_t *p, double out[3], kvsim_err *err) {
  if (it->run >= 0)
    return simulate_run(o, it->run, kernels, p, out, NULL, err);
  return simulate_row(it->row, kernels, p, out, err);
}

/* Simulates an item at the three points of the linear model. */
static int linearize(const kvsim_fid_logo_opts_t *o, kvsim__logo_item_t *it, kvsim_err *err) {
  const kvsim__logo_par_t p0 = {{0, 0, 0}, {0, 0, 0}, 0},
                          p1 = {{KVSIM__LOGO_H1, KVSIM__LOGO_H1, KVSIM__LOGO_H1}, {0, 0, 0}, 0},
                          p2 = {{0, 0, 0}, {KVSIM__LOGO_S1, KVSIM__LOGO_S1, KVSIM__LOGO_S1}, 0};
  int rc = kvsim__logo_simulate(o, it, NULL, &p0, it->at0, err);
  if (rc == KVSIM_OK)
    rc = kvsim__logo_simulate(o, it, NULL, &p1, it->at1, err);
  if (rc == KVSIM_OK)
    rc = kvsim__logo_simulate(o, it, NULL, &p2, it->at2, err);
  return rc;
}

static int collect_runs(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim__logo_item_t *items, int *n,
                        kvsim_err *err) {
  for (int i = 0; i < NRUNS; i++) {
    kvsim__logo_item_t *it = &items[(*n)];
    memset(it, 0, sizeof *it);
    it->run = i;
    snprintf(it->gpu, sizeof it->gpu, "%s", runs[i].gpu);
    const kvsim__logo_par_t p0 = {{0, 0, 0}, {0, 0, 0}, 0};
    it->family = KVSIM_HOST_VLLM_ASYNC;
    int rc = simulate_run(o, i, NULL, &p0, it->at0, it->meas, err);
    if (rc == KVSIM_OK)
      rc = linearize(o, it, err);
    if (rc < 0)
      return rc;
    kvsim_fid_logo_group_t *g = kvsim__logo_group(l, runs[i].gpu, runs[i].model, "bf16", "per-request");
    if (!g)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    g->n = 1;
    g->moe = it->moe = kvsim__logo_is_moe(runs[i].model);
    g->by_gpu = true;
    it->group = (int)(g - l->groups);
    (*n)++;
  }
  return KVSIM_OK;
}

static int collect_rows(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_fid_sil_table_t *t,
                        kvsim__logo_item_t *items, int *n, kvsim_err *err) {
  for (int64_t i = 0; i < t->n; i++) {
    const kvsim_fid_sil_row_t *r = &t->rows[i];
    if (r->skipped)
      continue;
    const bool sglang = !strcasecmp(r->backend, "sglang");
    kvsim_fid_logo_group_t *g =
        kvsim__logo_group(l, r->gpu, r->model, precision_of(r), sglang ? "silicon-sglang" : "silicon");
    if (!g)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    char why[sizeof l->excl[0].reason];
    if (!kvsim_fidelity_sil_physical(r, KVSIM_FID_SIL_RANGE_AUTO, why, sizeof why)) {
      if (kvsim__logo_exclude(l, r->id, why) < 0)
        return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
      g->excluded++;
      continue;
    }
    kvsim__logo_item_t *it = &items[*n];
    memset(it, 0, sizeof *it);
    it->run = -1;
    it->row = r;
    it->client = true;
    it->family = row_family(r);
    snprintf(it->gpu, sizeof it->gpu, "%s", r->gpu);
    it->meas[0] = r->ttft_ms, it->meas[1] = r->tpot_ms, it->meas[2] = row_e2e(r, r->ttft_ms, r->tpot_ms);
    kvsim_err e = {0};
    if (linearize(o, it, &e) < 0) {
      snprintf(why, sizeof why, "not reproducible: %s", e.msg);
      if (kvsim__logo_exclude(l, r->id, why) < 0)
        return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
      g->excluded++;
      continue;
    }
    g->moe = it->moe = kvsim__logo_is_moe(r->model);
    g->n++;
    it->group = (int)(g - l->groups);
    (*n)++;
  }
  return KVSIM_OK;
}

int kvsim__logo_collect(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_fid_sil_table_t t[2],
                        kvsim__logo_item_t **items, int *n, kvsim_err *err) {
  *n = 0;
  static const char *const files[2] = {"silicon_vllm.csv", "silicon_sglang.csv"};
  int rc;
  for (int f = 0; f < 2; f++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/aiconfigurator/%s", o->validation_dir, files[f]);
    if ((rc = kvsim_fidelity_silicon_read(path, NULL, 0, &t[f], err)) < 0)
      return rc;
  }
  *items = kvsim__calloc((size_t)(t[0].n + t[1].n + NRUNS + 1), sizeof **items);
  if (!*items)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  if ((rc = collect_runs(o, l, *items, n, err)) < 0 || (rc = collect_rows(o, l, &t[0], *items, n, err)) < 0)
    return rc;
  return collect_rows(o, l, &t[1], *items, n, err);
}
