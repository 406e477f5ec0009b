/* Leave-one-group-out over the dev data (kvsim/fidelity.h). A group is
 * GPU x model x precision x source; each is predicted by coefficients that
 * never saw it:
 * - a per-request run: held out by GPU, i.e. with the generation default
 *   a GPU without data of its own gets, from another GPU's fit (its donor);
 * - a silicon group that the shipped fit of its GPU was fitted on: a fit
 *   of that GPU on its other fitted groups (from the generation defaults),
 *   or the donor's fit when it has no other group;
 * - a silicon group no fit saw (MoE models): the shipped fit of its GPU;
 * - the start-up logs: the memory plan has no fitted coefficient, so its
 *   error is the same held out and in-sample.
 * Rows beyond what the GPU can physically do (physical.c: more than 80 %
 * of the dense peak, or a TPOT below the decode step's bytes at 100 % of
 * the HBM bandwidth) are listed and left out, as kvsim calibrate leaves
 * them out of its fits. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "fidelity/logo.h"
#include "kvsim/fidelity.h"

/* The three per-request runs of the dev data and their replays. */
static const struct {
  const char *gpu, *model, *measured, *scenario;
} runs[] = {
    {"rtx4090", "llama-3.1-8b", "llmservingsim/RTX4090/Llama-3.1-8B/vllm/requests.jsonl",
     "llmservingsim-rtx4090-llama-3.1-8b.json"},
    {"rtx-pro-6000", "llama-3.1-8b", "llmservingsim/RTXPRO6000/Llama-3.1-8B/vllm/requests.jsonl",
     "llmservingsim-rtxpro6000-llama-3.1-8b.json"},
    {"rtx-pro-6000", "qwen3-30b-a3b",
     "llmservingsim/RTXPRO6000/Qwen3-30B-A3B-Instruct-2507/vllm/requests.jsonl",
     "llmservingsim-rtxpro6000-qwen3-30b-a3b.json"},
};

void kvsim__logo_donor(const kvsim_gpu_t *g, kvsim_gpu_perf_t *p, char *from, size_t from_size) {
  /* Hopper's and Ada's defaults are built from h100-sxm's and rtx4090's
   * fits, Blackwell's from b200's (hw/borrow.c kvsim_gpu_default_perf):
   * those GPUs take the other datacenter generation's. */
  const char *gen = g->generation;
  if (!strcmp(g->name, "h100-sxm"))
    gen = "blackwell";
  else if (!strcmp(g->name, "b200") || !strcmp(gen, "ada") || strcmp(gen, "blackwell"))
    gen = "hopper";
  /* The coefficients kvsim validate --perf default:GEN gives (hw/perf_named.c). */
  char spec[32];
  kvsim_err err = {0};
  snprintf(spec, sizeof spec, "default:%s", gen);
  if (kvsim_gpu_perf_named(spec, g, p, from, from_size, &err) < 0) { /* gen is a catalog generation */
    kvsim_gpu_default_perf(gen, p);
    snprintf(from, from_size, "%s", err.msg);
  }
}

bool kvsim__logo_is_moe(const char *model) {
  kvsim_model_t m;
  kvsim_err e = {0};
  return kvsim_model_load(model, &m, &e) == KVSIM_OK && m.num_experts > 0;
}

static double median_abs3(double *v, int n) { return n ? kvsim_fidelity_median_abs(v, n) : NAN; }

/* ---- per-request runs ---- */

static int run_errors(const char *measured, const char *scenario, const kvsim_gpu_perf_t *perf, double *e,
                      kvsim_err *err) {
  kvsim_fid_measured_t m;
  kvsim_scenario_t sc;
  int rc = kvsim_fidelity_measured_load(measured, NULL, &m, err);
  if (rc < 0) {
    kvsim_fidelity_measured_fini(&m);
    return rc;
  }
  if ((rc = kvsim_scenario_load(scenario, NULL, 0, &sc, err)) < 0) {
    kvsim_fidelity_measured_fini(&m);
    return rc;
  }
  if (perf)
    kvsim_gpu_use_perf(&sc.gpu, perf);
  kvsim_fid_measured_cmp_t c;
  rc = kvsim_fidelity_measured_compare(&m, &sc, &c, err);
  for (int k = 0; rc == KVSIM_OK && k < 3; k++)
    e[k] = kvsim_fidelity_err_pct(c.lat.sim[k].mean, c.lat.meas[k].mean);
  kvsim_fidelity_measured_fini(&m);
  kvsim_scenario_fini(&sc);
  return rc;
}

static int per_request(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_err *err) {
  for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
    char meas[4096], scen[4096];
    snprintf(meas, sizeof meas, "%s/%s", o->validation_dir, runs[i].measured);
    snprintf(scen, sizeof scen, "%s/%s", o->scenario_dir, runs[i].scenario);
    kvsim_gpu_t g;
    int rc;
    if ((rc = kvsim_gpu_load(runs[i].gpu, &g, err)) < 0)
      return rc;
    kvsim_fid_logo_group_t *gr = kvsim__logo_group(l, runs[i].gpu, runs[i].model, "bf16", "per-request");
    if (!gr)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    gr->n = 1;
    gr->moe = kvsim__logo_is_moe(runs[i].model);
    double e[3];
    if ((rc = run_errors(meas, scen, NULL, e, err)) < 0)
      return kvsim_err_prefix(err, "%s", runs[i].measured);
    for (int k = 0; k < 3; k++)
      gr->shipped[k] = fabs(e[k]);
    gr->shipped_in_sample = g.perf.status == KVSIM_CAL_FITTED;
    /* Held out by GPU: the generation default that never saw it;
     * moe_efficiency 1.0 (no default has MoE data). */
    kvsim_gpu_perf_t p;
    char from[96];
    kvsim__logo_donor(&g, &p, from, sizeof from);
    if ((rc = run_errors(meas, scen, &p, e, err)) < 0)
      return kvsim_err_prefix(err, "%s", runs[i].measured);
    for (int k = 0; k < 3; k++) {
      gr->held_signed[k] = e[k];
      gr->held[k] = gr->held_q90[k] = fabs(e[k]);
    }
    if (kvsim__logo_set_rows(gr, &e[0], &e[1], 1) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    snprintf(gr->held_from, sizeof gr->held_from, "%s (GPU held out)", from);
    gr->by_gpu = true;
    if (o->progress)
      o->progress(o->ctx, gr);
  }
  return KVSIM_OK;
}

/* ---- start-up logs ---- */

static int startup(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_err *err) {
  char path[4096];
  snprintf(path, sizeof path, "%s/vllm_startup_logs.csv", o->validation_dir);
  kvsim_fid_startup_t t;
  memset(&t, 0, sizeof t);
  int rc = kvsim_fidelity_startup_read(path, &t, err);
  if (rc == KVSIM_OK)
    rc = kvsim_fidelity_startup_evaluate(&t, err);
  double *v = rc == KVSIM_OK ? kvsim__malloc((size_t)(t.n + 1) * sizeof *v) : NULL;
  if (rc == KVSIM_OK && !v)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  /* One group per GPU x model; precision is the KV cache dtype column. */
  for (int64_t i = 0; rc == KVSIM_OK && i < t.n; i++) {
    const kvsim_fid_su_result_t *r = &t.res[i];
    if (r->skipped || isnan(r->err_pred))
      continue;
    const char *kv = t.rows[i].kv_dtype[0] ? t.rows[i].kv_dtype : "auto";
    kvsim_fid_logo_group_t *g = kvsim__logo_group(l, r->gpu_name, r->model_name, kv, "startup");
    if (!g) {
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
      break;
    }
    if (g->n)
      continue;
    int n = 0;
    for (int64_t j = i; j < t.n; j++)
      if (!t.res[j].skipped && !isnan(t.res[j].err_pred) && !strcmp(t.res[j].gpu_name, r->gpu_name) &&
          !strcmp(t.res[j].model_name, r->model_name) &&
          !strcmp(t.rows[j].kv_dtype[0] ? t.rows[j].kv_dtype : "auto", kv))
        v[n++] = t.res[j].err_pred;
    g->n = n;
    g->kv_err = median_abs3(v, n);
    snprintf(g->held_from, sizeof g->held_from, "no fitted coefficient (memory plan)");
  }
  kvsim__free(v);
  kvsim_fidelity_startup_fini(&t);
  return rc;
}

int kvsim_fidelity_logo_run(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *out, kvsim_err *err) {
  memset(out, 0, sizeof *out);
  int rc;
  if ((rc = per_request(o, out, err)) < 0 || (rc = kvsim__logo_silicon(o, out, err)) < 0 ||
      (rc = startup(o, out, err)) < 0)
    return rc;
  return KVSIM_OK;
}

char *kvsim_fidelity_logo_report(const kvsim_fid_logo_opts_t *opts, bool json, kvsim_err *err) {
  kvsim_fid_logo_t l;
  char *s = NULL;
  if (kvsim_fidelity_logo_run(opts, &l, err) == KVSIM_OK &&
      !(s = json ? kvsim_fidelity_logo_to_json(&l) : kvsim_fidelity_logo_to_text(&l)))
    kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  kvsim_fidelity_logo_fini(&l);
  return s;
}
