/* One candidate of a compare: its memory plan, its goodput (the plan's
 * rate search), the replicas the target rate needs (the replicas search)
 * and the run there, each with the range of the GPU's step-time band (the
 * same work re-run at kvsim_gpu_band_scales' edges), its cost, and a sweep
 * of rates around the goodput for the plot. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/report.h"
#include "kvsim/study.h"
#include "study/compare_int.h"
#include "study/run.h"

static void slo_targets(const kvsim_compare_t *c, kvsim_search_t *se) {
  const double lim[] = {c->slo_ttft_p99_s, c->slo_tpot_p99_s, c->slo_e2e_p99_s};
  const kvsim_metric m[] = {KVSIM_METRIC_TTFT, KVSIM_METRIC_TPOT, KVSIM_METRIC_E2E};
  se->ntargets = 0;
  for (int k = 0; k < 3; k++)
    if (lim[k] > 0)
      se->targets[se->ntargets++] = (kvsim_slo_target_t){m[k], KVSIM_STAT_P99, lim[k]};
}

/* The memory plan as the engine logs it (kvsim calc's text). */
static void plan_text(const kvsim_resolved_t *res, const kvsim_scenario_t *sc, char *buf, size_t cap) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  buf[0] = '\0';
  if (!f)
    return;
  kvsim_report_plan_text(&res->plan, &sc->model, &sc->gpu, f);
  fclose(f);
  snprintf(buf, cap, "%s", text ? text : "");
  free(text);
}

/* A disaggregated candidate: one replica is one unit of the block's
 * prefill and decode instances; its GPUs are both sides', its plan both
 * sides' (kvsim calc --scenario's text), its figures the decode side's
 * (the pool every token after the first is served from). Sides on two
 * kinds of GPU have no one price: the row's GPU names both. */
static void describe_disagg(const kvsim_scenario_t *sc, kvsim_compare_row_t *r) {
  kvsim_scenario_t side[2];
  kvsim_err e = {0};
  int gpus = 0;
  memset(side, 0, sizeof side);
  for (int k = 0; k < 2; k++) {
    kvsim_resolved_t res;
    if (kvsim_scenario_disagg_side(sc, (kvsim_disagg_side)k, &side[k], &e) < 0)
      break;
    int fit = kvsim_scenario_resolve(&side[k], &res, &e);
    if (fit < 0 && fit != KVSIM_ENOFIT)
      break;
    gpus += side[k].replicas * res.plan.p.tp * res.plan.p.pp;
    if (k == KVSIM_SIDE_DECODE) {
      r->tp = res.plan.p.tp;
      r->pp = res.plan.p.pp;
      r->kv_blocks = res.plan.num_gpu_blocks;
      r->kv_tokens = res.plan.kv_cache_tokens;
      r->max_concurrency = res.plan.max_concurrency;
    }
  }
  r->gpus_per_replica = gpus;
  if (strcmp(side[0].gpu.name, side[1].gpu.name))
    snprintf(r->gpu, sizeof r->gpu, "%s/%s", side[0].gpu.name, side[1].gpu.name);
  for (int k = 0; k < 2; k++)
    kvsim_scenario_fini(&side[k]);
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (f) {
    (void)kvsim_report_scenario_calc(sc, false, f, &e);
    fclose(f);
    snprintf(r->plan_text, sizeof r->plan_text, "%s", text ? text : "");
  }
  free(text);
}

static void describe(const kvsim_scenario_t *sc, const kvsim_resolved_t *res, kvsim_compare_row_t *r) {
  snprintf(r->gpu, sizeof r->gpu, "%s", sc->gpu.name);
  snprintf(r->model, sizeof r->model, "%s", sc->model.name);
  r->tp = res->plan.p.tp;
  r->pp = res->plan.p.pp;
  r->gpus_per_replica = r->tp * r->pp;
  r->gpu_memory_utilization = res->plan.p.gpu_memory_utilization;
  snprintf(r->kv_cache_dtype, sizeof r->kv_cache_dtype, "%s", kvsim_kv_dtype_name(res->plan.p.kv_dtype));
  r->kv_blocks = res->plan.num_gpu_blocks;
  r->kv_tokens = res->plan.kv_cache_tokens;
  r->max_concurrency = res->plan.max_concurrency;
  plan_text(res, sc, r->plan_text, sizeof r->plan_text);
  r->cal_status = sc->gpu.perf.status;
  kvsim_gpu_band_moe(&sc->gpu.perf, sc->model.num_experts > 0, &r->band_ttft_rel, &r->band_tpot_rel);
  r->band_kind = 2; /* every status has a held-out figure (gpu.h KVSIM_GPU_BAND_*) */
  kvsim_study_band_edges(sc, r->band_edge);
  if (sc->disagg.enabled)
    describe_disagg(sc, r);
}

/* Runs a copy of base with the given replicas (< 1: as it is) and rate,
 * with the band's two edge runs when band (summary ranges). */
static int run_at(const kvsim_scenario_t *base, double replicas, double rate, bool band,
                  kvsim_summary_t *sum, kvsim_err *err) {
  kvsim_scenario_t sc;
  int rc = kvsim_scenario_copy(base, &sc, err);
  if (rc == KVSIM_OK && replicas >= 1)
    rc = kvsim_scenario_set_replicas(&sc, llround(replicas), err);
  if (rc == KVSIM_OK && rate > 0)
    rc = kvsim_study_set_rate(&sc, "rate", rate, err);
  if (rc == KVSIM_OK)
    rc = kvsim_study_run_band(&sc, NULL, band, sum, err);
  kvsim_scenario_fini(&sc);
  return rc;
}

/* The target: the fewest replicas (with range), then the run there at
 * the band's centre and edges (p99s with ranges, KV, preemptions). */
static int at_target(const kvsim_compare_t *c, const kvsim_scenario_t *sc, kvsim_search_t *se,
                     kvsim_summary_t *sum, kvsim_compare_row_t *r, kvsim_err *err) {
  se->kind = KVSIM_SEARCH_REPLICAS;
  int rc = kvsim_search_run(se, err);
  if (rc < 0)
    return rc;
  r->simulations += se->npoints + se->range_points;
  r->replicas = se->best;
  r->replicas_range[0] = se->range[0];
  r->replicas_range[1] = se->range[1];
  if (isnan(r->replicas))
    return KVSIM_OK;
  /* The run there with its band through the queue: p99 ranges are the
   * [min, max] over the nominal run and the two edge runs. */
  if ((rc = run_at(sc, r->replicas, c->target_rate, true, sum, err)) < 0)
    return rc;
  r->simulations += 3;
  /* The replicas found met the SLO, so requests finished; the guard keeps
   * a p99 of nothing out of the table all the same (kvsim_compare_row_init's NAN). */
  if (sum->requests_finished > 0) {
    r->ttft_p99 = sum->ttft.p99;
    r->tpot_p99 = sum->tpot.p99;
    r->e2e_p99 = sum->e2e.p99;
    r->e2e_p99_range[0] = sum->e2e_range.p99.lo;
    r->e2e_p99_range[1] = sum->e2e_range.p99.hi;
    r->ttft_p99_range[0] = sum->ttft_range.p99.lo;
    r->ttft_p99_range[1] = sum->ttft_range.p99.hi;
    r->tpot_p99_range[0] = sum->tpot_range.p99.lo;
    r->tpot_p99_range[1] = sum->tpot_range.p99.hi;
  }
  r->ran_target = true;
  r->steady = sum->steady.reached;
  r->kv_peak = sum->kv_usage_peak;
  r->preemptions = sum->preemptions;
  r->requests = sum->requests_total;
  r->rejected = sum->requests_rejected;
  r->output_tokens_per_s = sum->output_tokens_per_s;
  r->ndiagnosis = sum->ndiagnosis;
  memcpy(r->diagnosis, sum->diagnosis, sizeof r->diagnosis);
  return KVSIM_OK;
}

/* The deployment as given (its replicas) at rates around its goodput
 * (around the target when nothing met). */
static int sweep(const kvsim_scenario_t *sc, double centre, kvsim_summary_t *sum,
                 kvsim_compare_row_t *r, kvsim_err *err) {
  static const double f[KVSIM_COMPARE_SWEEP] = {0.5, 0.7, 0.85, 1.0, 1.1, 1.25, 1.5};
  for (int k = 0; k < KVSIM_COMPARE_SWEEP; k++) {
    /* With the band's edges: the plots draw each p99's range. */
    int rc = run_at(sc, 0, centre * f[k], true, sum, err);
    if (rc == KVSIM_ENOMEM || rc == KVSIM_EIO)
      return rc;
    /* No request finished: no p99 (an empty cell), not 0 s. */
    bool lat = rc == KVSIM_OK && sum->requests_finished > 0;
    int j = r->nsweep;
    r->sweep_rate[j] = centre * f[k];
    r->sweep_ttft_p99[j] = lat ? sum->ttft.p99 : NAN;
    r->sweep_tpot_p99[j] = lat && sum->tpot.count > 0 ? sum->tpot.p99 : NAN;
    r->sweep_ttft_range[j][0] = lat ? sum->ttft_range.p99.lo : NAN;
    r->sweep_ttft_range[j][1] = lat ? sum->ttft_range.p99.hi : NAN;
    r->sweep_tpot_range[j][0] = lat && sum->tpot.count > 0 ? sum->tpot_range.p99.lo : NAN;
    r->sweep_tpot_range[j][1] = lat && sum->tpot.count > 0 ? sum->tpot_range.p99.hi : NAN;
    r->sweep_kv_peak[r->nsweep] = rc == KVSIM_OK ? sum->kv_usage_peak : NAN;
    r->nsweep++;
    r->simulations += 3;
  }
  return KVSIM_OK;
}

static void cost(const kvsim_compare_t *c, const kvsim_scenario_t *sc, kvsim_compare_row_t *r) {
  const cJSON *p = c->prices ? cJSON_GetObjectItemCaseSensitive(c->prices, r->gpu) : NULL;
  r->cost_per_gpu_hour = NAN;
  if (p) {
    r->cost_per_gpu_hour = p->valuedouble;
    snprintf(r->cost_source, sizeof r->cost_source, "study");
  } else if (sc->gpu.cost_per_gpu_hour > 0) {
    r->cost_per_gpu_hour = sc->gpu.cost_per_gpu_hour;
    snprintf(r->cost_source, sizeof r->cost_source, "gpu file");
  }
  double gpus = r->replicas * r->gpus_per_replica;
  r->cost_per_hour = r->cost_per_gpu_hour * gpus;
  /* $/h over output tokens per hour, per million. */
  r->cost_per_mtok = r->output_tokens_per_s > 0 ? r->cost_per_hour / (r->output_tokens_per_s * 3600) * 1e6 : NAN;
  r->goodput_per_dollar = r->cost_per_gpu_hour > 0 ? r->goodput / (r->cost_per_gpu_hour * r->gpus_per_replica) : NAN;
}

void kvsim_compare_row_init(kvsim_compare_row_t *r) {
  memset(r, 0, sizeof *r);
  double *nan[] = {&r->goodput,        &r->goodput_range[0],    &r->goodput_range[1],
                   &r->replicas,       &r->replicas_range[0],   &r->replicas_range[1],
                   &r->ttft_p99,       &r->ttft_p99_range[0],   &r->ttft_p99_range[1],
                   &r->tpot_p99,       &r->tpot_p99_range[0],   &r->tpot_p99_range[1],
                   &r->e2e_p99,        &r->e2e_p99_range[0],    &r->e2e_p99_range[1],
                   &r->kv_peak,        &r->output_tokens_per_s, &r->cost_per_gpu_hour,
                   &r->cost_per_hour,  &r->cost_per_mtok,       &r->goodput_per_dollar,
                   &r->max_concurrency,    &r->unloaded_rate,       &r->unloaded_ttft_p99,
                   &r->unloaded_tpot_p99,  &r->unloaded_e2e_p99};
  for (size_t k = 0; k < sizeof nan / sizeof *nan; k++)
    *nan[k] = NAN;
}

int kvsim_compare_candidate(const kvsim_compare_t *c, int i, double tolerance,
                            kvsim_compare_row_t *r, kvsim_err *err) {
  kvsim_compare_row_init(r);
  /* One cache of simulated points for the candidate's searches, its run
   * at the target and its sweep (the same point is often asked twice). */
  kvsim__study_memo_begin();
  kvsim_scenario_t sc;
  int rc = kvsim_compare_scenario(c, i, &sc, err);
  kvsim_search_t *se = rc == KVSIM_OK ? kvsim__calloc(1, sizeof *se) : NULL;
  kvsim_summary_t *sum = rc == KVSIM_OK ? kvsim__malloc(sizeof *sum) : NULL;
  kvsim_resolved_t res;
  if (rc == KVSIM_OK && (!se || !sum))
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  if (rc == KVSIM_OK) {
    int fit = kvsim_scenario_resolve(&sc, &res, err);
    if (fit == KVSIM_OK || fit == KVSIM_ENOFIT)
      describe(&sc, &res, r);
    if (fit < 0) {
      r->rc = fit;
      snprintf(r->error, sizeof r->error, "%s", err->msg);
      goto done; /* a row: it does not fit, or its plan is refused */
    }
    se->base = &sc;
    se->tolerance = tolerance > 0 ? tolerance : 0.02;
    /* No search point's figures are reported, only the answers: a point
     * stops once its miss is decided (kvsim_search.early_stop). */
    se->early_stop = true;
    slo_targets(c, se);
    /* Feasibility first: unloaded, then the nearest changes. */
    if ((rc = kvsim__compare_probe(c, &sc, r, err)) < 0)
      goto done;
    se->kind = KVSIM_SEARCH_RATE;
    if (!r->infeasible_any_load) {
      if ((rc = kvsim_search_run(se, err)) < 0)
        goto done;
      r->simulations += se->npoints + se->range_points;
      r->goodput = se->best;
      r->goodput_range[0] = se->range[0];
      r->goodput_range[1] = se->range[1];
      r->goodput_lower_bound[0] = se->lower_bound;
      r->goodput_lower_bound[1] = se->range_lower_bound[0];
      r->goodput_lower_bound[2] = se->range_lower_bound[1];
    }
    /* Infeasible: one line, never a replica count. */
    kvsim__compare_feasibility_line(c, r);
    if ((!r->infeasible && (rc = at_target(c, &sc, se, sum, r, err)) < 0) ||
        (rc = sweep(&sc, isnan(r->goodput) ? c->target_rate : r->goodput, sum, r, err)) < 0)
      goto done;
    cost(c, &sc, r);
  }
done:
  kvsim__study_memo_end();
  free(se);
  free(sum);
  kvsim_scenario_fini(&sc);
  if (rc < 0 && r->rc == KVSIM_OK) { /* failed: a row that says so */
    r->rc = rc;
    snprintf(r->error, sizeof r->error, "%s", err->msg);
  }
  return KVSIM_OK;
}
