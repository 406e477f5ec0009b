/* Feasibility first (kvsim/study.h kvsim_compare_row_t.feasibility): a
 * deployment whose p99 is already at its target with no load cannot be
 * bought more of to meet the SLO. Searching it anyway answered "162
 * replicas = 324 GPUs" for a 32B model on two A100s at TTFT 1 s, where
 * its unloaded p99 TTFT was 0.99 s and TP4's 0.53 s. The probe measures
 * it unloaded, and the nearest changes likewise, before any search. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/gpu.h"
#include "study/compare_int.h"

#define PROBE_REQUESTS 200

typedef struct probe {
  int rc;                 /* KVSIM_OK, or why it has no figures */
  double p99[3];          /* TTFT, TPOT, E2E; NAN: no sample */
} probe_t;

static const char *const metric_name[3] = {"TTFT", "TPOT", "E2E"};

static void limits(const kvsim_compare_t *c, double lim[3]) {
  lim[0] = c->slo_ttft_p99_s;
  lim[1] = c->slo_tpot_p99_s;
  lim[2] = c->slo_e2e_p99_s;
}

/* A copy of sc with one key set (value taken; NULL: none) through the
 * typed setters, which resolve a change of GPU, TP or weights as parsing does. */
static int variant(const kvsim_scenario_t *sc, const char *key, cJSON *value, kvsim_scenario_t *out,
                   kvsim_err *err) {
  int rc = kvsim_scenario_copy(sc, out, err);
  if (rc == KVSIM_OK && key) {
    if (!strcmp(key, "hardware.tensor_parallel_size"))
      rc = kvsim_scenario_set_tensor_parallel(out, (int64_t)value->valuedouble, err);
    else if (!strcmp(key, "engine.quantization"))
      rc = kvsim_scenario_set_quantization(out, value->valuestring, err);
    else
      rc = kvsim_scenario_set_gpu(out, value->valuestring, err);
    if (rc < 0)
      kvsim_scenario_fini(out);
  }
  cJSON_Delete(value);
  return rc;
}

/* The unloaded run: the rate, few enough requests to stay cheap, many
 * enough for a p99, and no time cut (at 1/1000 of the target the run
 * spans long simulated hours). */
static int unloaded(kvsim_scenario_t *sc, double rate, kvsim_summary_t *sum, kvsim_err *err) {
  kvsim_workload_shape_t w;
  kvsim_workload_shape(sc->workload, &w);
  const int64_t n = w.synthetic ? w.requests : w.limit; /* 0: not given */
  double count = n > 0 && n < PROBE_REQUESTS ? (double)n : PROBE_REQUESTS;
  int rc =
      kvsim_scenario_set_workload(sc, w.synthetic ? "synthetic.requests" : "limit", count, err);
  if (rc == KVSIM_OK && w.synthetic && w.duration_given)
    rc = kvsim_scenario_set_workload(sc, "synthetic.duration_s", 4 * count / rate, err);
  if (rc == KVSIM_OK)
    rc = kvsim_scenario_set_workload(sc, "rate", rate, err);
  sc->max_time_s = 0;
  return rc < 0 ? rc : kvsim_study_run(sc, NULL, sum, err);
}

/* sc (or its variant by key) measured unloaded. Only running out of
 * memory or a broken pipe is an error; anything else is the probe's rc. */
static int probe(const kvsim_scenario_t *sc, const char *key, cJSON *value, double rate, probe_t *p,
                 kvsim_err *err) {
  p->rc = KVSIM_OK;
  p->p99[0] = p->p99[1] = p->p99[2] = NAN;
  kvsim_scenario_t v;
  memset(&v, 0, sizeof v);
  int rc = variant(sc, key, value, &v, err);
  bool built = rc == KVSIM_OK;
  kvsim_summary_t *sum = rc == KVSIM_OK ? kvsim__malloc(sizeof *sum) : NULL;
  if (rc == KVSIM_OK && !sum)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  if (rc == KVSIM_OK)
    rc = unloaded(&v, rate, sum, err);
  if (rc == KVSIM_OK && sum->requests_finished > 0) {
    const kvsim_latency_t *l[3] = {&sum->ttft, &sum->tpot, &sum->e2e};
    for (int k = 0; k < 3; k++)
      p->p99[k] = l[k]->count > 0 ? l[k]->p99 : NAN;
  }
  if (built)
    kvsim_scenario_fini(&v);
  free(sum);
  if (rc == KVSIM_ENOMEM || rc == KVSIM_EIO)
    return rc;
  p->rc = rc;
  return KVSIM_OK;
}

/* How far past its target each unloaded p99 is (NAN: no target or no
 * sample), and the worst of them. */
static int worst(const kvsim_compare_t *c, const probe_t *p, double *ratio) {
  double lim[3];
  limits(c, lim);
  int w = -1;
  *ratio = -1;
  for (int k = 0; k < 3; k++)
    if (lim[k] > 0 && isfinite(p->p99[k]) && p->p99[k] / lim[k] > *ratio) {
      *ratio = p->p99[k] / lim[k];
      w = k;
    }
  return w;
}

/* The study's GPU next larger than sc's: the least memory above its own
 * (more bf16 FLOPs breaking a tie), among the candidates' GPUs. */
static bool next_gpu(const kvsim_compare_t *c, const kvsim_scenario_t *sc, char *name, size_t cap) {
  bool found = false;
  int64_t best_mem = 0;
  double best_fl = 0;
  for (int j = 0; j < c->ncandidates; j++) {
    kvsim_scenario_t o;
    kvsim_err ignored = {0};
    if (kvsim_compare_scenario(c, j, &o, &ignored) < 0)
      continue;
    const kvsim_gpu_t *g = &o.gpu;
    bool larger = g->memory_total_bytes > sc->gpu.memory_total_bytes ||
                  (g->memory_total_bytes == sc->gpu.memory_total_bytes && g->bf16_tflops > sc->gpu.bf16_tflops);
    bool nearer = !found || g->memory_total_bytes < best_mem ||
                  (g->memory_total_bytes == best_mem && g->bf16_tflops < best_fl);
    if (larger && nearer) {
      found = true;
      best_mem = g->memory_total_bytes;
      best_fl = g->bf16_tflops;
      snprintf(name, cap, "%s", g->name);
    }
    kvsim_scenario_fini(&o);
  }
  return found;
}

int kvsim__compare_probe(const kvsim_compare_t *c, const kvsim_scenario_t *sc, kvsim_compare_row_t *r,
                         kvsim_err *err) {
  probe_t own;
  r->unloaded_rate = c->target_rate / 1000;
  int rc = probe(sc, NULL, NULL, r->unloaded_rate, &own, err);
  if (rc < 0)
    return rc;
  r->simulations++;
  r->unloaded_ttft_p99 = own.p99[0];
  r->unloaded_tpot_p99 = own.p99[1];
  r->unloaded_e2e_p99 = own.p99[2];
  double ratio;
  if (own.rc < 0 || worst(c, &own, &ratio) < 0 || ratio < KVSIM__UNLOADED_MARGIN)
    return KVSIM_OK; /* the searches say what a failed run is */
  r->infeasible = true;
  r->infeasible_any_load = ratio >= 1;
  /* The nearest changes, each measured unloaded. */
  char gpu[64] = "", *at = r->feasibility;
  size_t cap = sizeof r->feasibility;
  struct {
    char label[80];
    const char *key;
    cJSON *value;
  } ch[3];
  int nch = 0;
  if (sc->plan.tp * 2 <= 64) {
    snprintf(ch[nch].label, sizeof ch[nch].label, "TP%d", sc->plan.tp * 2);
    ch[nch].key = "hardware.tensor_parallel_size";
    ch[nch++].value = cJSON_CreateNumber(sc->plan.tp * 2);
  }
  if (sc->model.quant.kind == KVSIM_QUANT_NONE && !sc->plan.quantization[0]) {
    snprintf(ch[nch].label, sizeof ch[nch].label, "FP8 weights");
    ch[nch].key = "engine.quantization";
    ch[nch++].value = cJSON_CreateString("fp8");
  }
  if (next_gpu(c, sc, gpu, sizeof gpu)) {
    snprintf(ch[nch].label, sizeof ch[nch].label, "%s", gpu);
    ch[nch].key = "hardware.gpu";
    ch[nch++].value = cJSON_CreateString(gpu);
  }
  /* The changes' figures follow the probe's own line (written once the
   * goodput is known), after a marker kvsim__compare_feasibility_line
   * finds. */
  int w = worst(c, &own, &ratio);
  size_t len = 0;
  const char *nearest = NULL;
  for (int k = 0; k < nch; k++) {
    probe_t p;
    if (!ch[k].value)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
    if ((rc = probe(sc, ch[k].key, ch[k].value, r->unloaded_rate, &p, err)) < 0)
      return rc;
    r->simulations++;
    double pr;
    int pw = worst(c, &p, &pr);
    if (p.rc == KVSIM_ENOFIT)
      len += (size_t)snprintf(at + len, len < cap ? cap - len : 0, "; %s: does not fit", ch[k].label);
    else if (p.rc < 0 || pw < 0)
      len += (size_t)snprintf(at + len, len < cap ? cap - len : 0, "; %s: no figure", ch[k].label);
    else {
      len += (size_t)snprintf(at + len, len < cap ? cap - len : 0, "; %s unloaded: %.3g s",
                              ch[k].label, p.p99[w]);
      if (!nearest && pr < KVSIM__UNLOADED_MARGIN)
        nearest = ch[k].label;
    }
    len = len < cap ? len : cap;
  }
  if (len < cap)
    snprintf(at + len, cap - len, "%s%s%s", nearest ? "; nearest that can: " : "",
             nearest ? nearest : "", nearest ? "" : (nch ? "; none of these can" : ""));
  return KVSIM_OK;
}

void kvsim__compare_feasibility_line(const kvsim_compare_t *c, kvsim_compare_row_t *r) {
  if (!r->infeasible)
    return;
  probe_t own = {KVSIM_OK, {r->unloaded_ttft_p99, r->unloaded_tpot_p99, r->unloaded_e2e_p99}};
  double ratio, lim[3];
  limits(c, lim);
  int w = worst(c, &own, &ratio);
  char changes[sizeof r->feasibility];
  snprintf(changes, sizeof changes, "%s", r->feasibility);
  char head[256];
  if (r->infeasible_any_load || isnan(r->goodput))
    snprintf(head, sizeof head, "cannot meet p99 %s %g s at any load (unloaded p99 %s %.3g s)",
             metric_name[w], lim[w], metric_name[w], own.p99[w]);
  else
    snprintf(head, sizeof head, "meets p99 %s %g s only below %.3g req/s (unloaded p99 %s %.3g s)",
             metric_name[w], lim[w], r->goodput, metric_name[w], own.p99[w]);
  snprintf(r->feasibility, sizeof r->feasibility, "%s%s", head, changes);
}
