/* What a GPU can physically do (kvsim/fidelity.h): the one rule that
 * leaves a silicon row out of the fits (kvsim calibrate) and out of the
 * leave-one-group-out table (kvsim validate --all). Two limits:
 * - compute: a row implying more than 80 % of the dense tensor-core peak
 *   of its precision sustained over the run;
 * - bandwidth: a row whose mean TPOT is below the time a decode step needs
 *   to read its bytes (the weights on one rank, plus the batch's KV cache
 *   at the row's mean context) at 100 % of the HBM bandwidth, in the
 *   precision kvsim plans for the row. A decode step of a dense
 *   transformer reads every weight once (the memory-bound regime of
 *   decode: "Efficiently Scaling Transformer Inference", Pope et al. 2022,
 *   section 2) and every cached KV token of every sequence; no kernel
 *   reads faster than the HBM's peak. A row below that measured something
 *   the row does not record (an fp8 KV cache, a smaller weight format). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "kvsim/fidelity.h"
#include "kvsim/perf.h"
#include "kvsim/scenario.h"

/* Large dense GEMMs reach ~70-80 % of the tensor-core peak at best
 * (cuBLAS on H100; the whole serving step, with attention, norms and
 * collectives between GEMMs, less): a row implying more than 80 % of the
 * dense peak sustained over the run measured something else. */
#define PEAK_FRAC_MAX 0.8

/* The step model of a row as kvsim plans it: its perf, the engine's
 * sequence cap, the model's window and the KV cache's bytes. */
typedef struct row_model {
  kvsim_perf_t pf;
  int64_t max_num_seqs, window;
  double kv_cap;
} row_model_t;

static int row_model(const kvsim_fid_sil_row_t *r, double range_ratio, row_model_t *m, kvsim_err *err) {
  kvsim_scenario_t sc;
  int rc = kvsim_fidelity_silicon_scenario(r, NULL, 0, range_ratio, &sc, err);
  if (rc < 0)
    return rc;
  kvsim_resolved_t res;
  if ((rc = kvsim_scenario_resolve(&sc, &res, err)) == KVSIM_OK &&
      (rc = kvsim_perf_init(&m->pf, &sc.model, &sc.gpu, &res.plan, err)) == KVSIM_OK) {
    m->max_num_seqs = res.sched.max_num_seqs;
    m->window = sc.model.sliding_window;
    m->kv_cap = (double)res.plan.available_kv_bytes;
  }
  kvsim_scenario_fini(&sc);
  return rc;
}

/* The engine decodes at most max_num_seqs sequences a step: past it, the
 * clients queue and a floor must not count them. */
static int64_t decode_seqs(const kvsim_fid_sil_row_t *r, const row_model_t *m) {
  return m->max_num_seqs > 0 && r->batch > m->max_num_seqs ? m->max_num_seqs : r->batch;
}

int kvsim_fidelity_sil_decode_floor(const kvsim_fid_sil_row_t *r, double range_ratio, double *bytes,
                                    double *floor_ms, kvsim_err *err) {
  row_model_t m;
  int rc = row_model(r, range_ratio, &m, err);
  if (rc < 0)
    return rc;
  /* The mean context of a decode step: the mean prompt (uniform in
   * [len x ratio, len]) plus half the mean output. KV bytes are linear in
   * the context, so the mean step reads the KV at that context; no step
   * reads more KV than the cache holds. */
  range_ratio = kvsim_fidelity_sil_range_ratio(r, range_ratio);
  const double in = (double)r->isl * (1 + range_ratio) / 2, out = (double)r->osl * (1 + range_ratio) / 2;
  const int64_t ctx = (int64_t)(in + out / 2), seqs = decode_seqs(r, &m);
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  for (int64_t i = 0; i < seqs; i++)
    kvsim_batch_shape_add(&b, ctx, 1, m.window);
  kvsim_step_cost_t cost;
  memset(&cost, 0, sizeof cost);
  (void)kvsim_perf_step_time(&m.pf, &b, &cost);
  *bytes = cost.weight_bytes + (m.kv_cap > 0 && cost.kv_bytes > m.kv_cap ? m.kv_cap : cost.kv_bytes);
  *floor_ms = *bytes / m.pf.bandwidth * 1e3;
  return KVSIM_OK;
}

int kvsim_fidelity_sil_prefill_terms(const kvsim_fid_sil_row_t *r, double range_ratio, kvsim_step_cost_t *cost,
                                     kvsim_err *err) {
  row_model_t m;
  int rc = row_model(r, range_ratio, &m, err);
  if (rc < 0)
    return rc;
  kvsim_batch_shape_t b;
  memset(&b, 0, sizeof b);
  kvsim_batch_shape_add(&b, 0, r->isl, m.window);
  (void)kvsim_perf_step_time(&m.pf, &b, cost);
  return KVSIM_OK;
}

/* The GPU time one round of the closed loop needs by the kernel tables:
 * every client's prompt prefilled (as one batch, the cheapest way the
 * tables allow) and the output's decode steps at the whole batch (the
 * engine's host time left out). A row that measured a shorter round
 * (TTFT + (osl - 1) TPOT) did less work than it claims. */
static int tables_round(const kvsim_fid_sil_row_t *r, double range_ratio, double *round_ms, kvsim_err *err) {
  row_model_t m;
  int rc = row_model(r, range_ratio, &m, err);
  if (rc < 0)
    return rc;
  m.pf.host_us = m.pf.host_per_seq_us = 0;
  range_ratio = kvsim_fidelity_sil_range_ratio(r, range_ratio);
  const double in = (double)r->isl * (1 + range_ratio) / 2, out = (double)r->osl * (1 + range_ratio) / 2;
  const int64_t seqs = decode_seqs(r, &m);
  kvsim_batch_shape_t pre, dec;
  memset(&pre, 0, sizeof pre);
  memset(&dec, 0, sizeof dec);
  for (int64_t i = 0; i < seqs; i++) {
    kvsim_batch_shape_add(&pre, 0, (int64_t)in, m.window);
    kvsim_batch_shape_add(&dec, (int64_t)(in + out / 2), 1, m.window);
  }
  const double p = (double)kvsim_perf_step_time(&m.pf, &pre, NULL), d = (double)kvsim_perf_step_time(&m.pf, &dec, NULL);
  *round_ms = (p + (out - 1) * d) * 1e-6;
  return KVSIM_OK;
}

bool kvsim_fidelity_sil_physical(const kvsim_fid_sil_row_t *r, double range_ratio, char *why, size_t cap) {
  const char *prec = r->precision[0] ? r->precision : "bf16";
  const double f = kvsim_fidelity_logo_peak_frac(r);
  if (f > PEAK_FRAC_MAX) {
    snprintf(why, cap, "implies %.0f%% of the %s dense %s peak (more than %.0f%% is not sustained)", 100 * f,
             r->gpu, prec, 100 * PEAK_FRAC_MAX);
    return false;
  }
  double bytes, floor_ms;
  kvsim_err e = {0};
  /* A row kvsim cannot plan is not judged here: the caller's simulation
   * says why it cannot run it. */
  if (r->tpot_ms > 0 && kvsim_fidelity_sil_decode_floor(r, range_ratio, &bytes, &floor_ms, &e) == KVSIM_OK &&
      r->tpot_ms < floor_ms) {
    snprintf(why, cap,
             "TPOT %.2f ms is below the %.2f ms a decode step needs to read %.1f GB (%s weights per rank + KV) at "
             "100%% of the %s HBM bandwidth",
             r->tpot_ms, floor_ms, bytes / 1e9, prec, r->gpu);
    return false;
  }
  double round_ms;
  const double rr = kvsim_fidelity_sil_range_ratio(r, range_ratio);
  const double osl = (double)r->osl * (1 + rr) / 2, measured = r->ttft_ms + (osl - 1) * r->tpot_ms;
  if (r->tpot_ms > 0 && tables_round(r, range_ratio, &round_ms, &e) == KVSIM_OK && measured < round_ms) {
    snprintf(why, cap,
             "a request cycle of %.0f ms (TTFT + output x TPOT) is shorter than the %.0f ms the %s kernel tables "
             "need for %lld prompts of %lld tokens and their decode steps",
             measured, round_ms, r->gpu, (long long)r->batch, (long long)r->isl);
    return false;
  }
  return true;
}

int64_t kvsim_fidelity_sil_exclude_unphysical(kvsim_fid_sil_table_t *t, double range_ratio) {
  int64_t n = 0;
  for (int64_t i = 0; i < t->n; i++) {
    kvsim_fid_sil_row_t *r = &t->rows[i];
    char why[192];
    if (r->skipped || kvsim_fidelity_sil_physical(r, range_ratio, why, sizeof why))
      continue;
    /* One reason for all, so that they count together; kvsim validate
     * --all prints each row's figures. */
    r->skipped = true;
    snprintf(r->reason, sizeof r->reason, "beyond what the GPU can do (TPOT below its HBM floor, > 80 %% of peak, or a request cycle shorter than its kernel tables allow)");
    n++;
  }
  return n;
}
