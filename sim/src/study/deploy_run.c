/* The deployment search (kvsim/deploy.h): each configuration of the
 * space in a worker of the study pool, its memory plan first (one that
 * does not fit is a row with the engine's reason, never simulated), then
 * the fewest replicas meeting the SLO at the target rate, every point a
 * simulation through the study's point cache. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/deploy.h"
#include "kvsim/model.h"
#include "kvsim/report.h"
#include "study/deploy_int.h"
#include "study/run.h"

/* A doubling that improves no missed p99 by more than this much is the
 * floor the SLO cannot be bought under: more replicas only shorten the
 * queue, never the step times. */
#define NO_HELP 0.95

typedef struct search_ctx {
  const kvsim_compare_t *c;
  const kvsim_deploy_space_t *s;
  const kvsim_scenario_t *base;
  kvsim_deploy_row_t *r;
  kvsim_summary_t *sum;
} search_ctx_t;

static const char *const metric_name[3] = {"TTFT", "TPOT", "E2E"};

/* The point's p99s against the study's targets: the note names each miss. */
static bool judge(const kvsim_compare_t *c, const kvsim_summary_t *s, kvsim_deploy_point_t *p) {
  const double lim[3] = {c->slo_ttft_p99_s, c->slo_tpot_p99_s, c->slo_e2e_p99_s};
  const double got[3] = {p->ttft_p99, p->tpot_p99, p->e2e_p99};
  if (s->requests_finished == 0) {
    snprintf(p->note, sizeof p->note, "no request finished");
    return false;
  }
  if (s->requests_rejected > 0) {
    snprintf(p->note, sizeof p->note, "%lld requests rejected", (long long)s->requests_rejected);
    return false;
  }
  bool ok = true;
  for (int k = 0; k < 3; k++) {
    /* No TPOT sample: every request had one token, none missed. */
    if (lim[k] <= 0 || isnan(got[k]) || got[k] <= lim[k])
      continue;
    size_t n = strlen(p->note);
    snprintf(p->note + n, sizeof p->note - n, "%s%s p99 %.3g s > %g s", ok ? "" : ", ",
             metric_name[k], got[k], lim[k]);
    ok = false;
  }
  return ok;
}

/* Whether doubling the replicas from the point before (half as many, also
 * missing) left a p99 that misses at both within NO_HELP of where it was,
 * with no queue left at the second (its TTFT target met): that target is
 * not bought with replicas, so neither is the SLO. While replicas queue,
 * a full batch keeps TPOT where it is however many of them there are. */
static bool no_help(const kvsim_compare_t *c, const kvsim_deploy_row_t *r) {
  if (r->npoints < 2)
    return false;
  const kvsim_deploy_point_t *a = &r->points[r->npoints - 2], *b = &r->points[r->npoints - 1];
  if (a->meets || b->meets || b->replicas != 2 * a->replicas || a->rejected || b->rejected)
    return false;
  const double lim[3] = {c->slo_ttft_p99_s, c->slo_tpot_p99_s, c->slo_e2e_p99_s};
  const double pa[3] = {a->ttft_p99, a->tpot_p99, a->e2e_p99};
  const double pb[3] = {b->ttft_p99, b->tpot_p99, b->e2e_p99};
  const bool queued = lim[0] > 0 && !(pb[0] <= lim[0]);
  for (int k = 0; k < 3; k++)
    if (lim[k] > 0 && pa[k] > lim[k] && pb[k] > lim[k] && pb[k] > NO_HELP * pa[k] &&
        (k == 0 || !queued))
      return true;
  return false;
}

static int pred(void *ctx, double x, kvsim_err *err) {
  search_ctx_t *q = ctx;
  kvsim_deploy_row_t *r = q->r;
  int n = (int)llround(x);
  if (n > q->s->max_replicas) {
    snprintf(r->stopped, sizeof r->stopped, "misses with %d replicas; max_replicas is %d",
             n / 2, q->s->max_replicas);
    return KVSIM_SEARCH_STOP;
  }
  if (r->npoints == KVSIM_DEPLOY_MAX_POINTS) {
    snprintf(r->stopped, sizeof r->stopped, "no answer within %d simulations", r->npoints);
    return KVSIM_SEARCH_STOP;
  }
  kvsim_scenario_t sc;
  int rc = kvsim_scenario_copy(q->base, &sc, err);
  if (rc == KVSIM_OK)
    rc = kvsim_scenario_set_replicas(&sc, n, err);
  if (rc == KVSIM_OK)
    rc = kvsim_study_run(&sc, NULL, q->sum, err);
  kvsim_scenario_fini(&sc);
  kvsim_deploy_point_t *p = &r->points[r->npoints++];
  memset(p, 0, sizeof *p);
  p->replicas = n;
  if (rc == KVSIM_ENOMEM || rc == KVSIM_EIO)
    return rc;
  if (rc < 0) { /* past the memory budget, or refused: a miss that ends the search */
    snprintf(p->note, sizeof p->note, "%s", err->msg);
    snprintf(r->stopped, sizeof r->stopped, "%d replicas: %s", n, err->msg);
    return KVSIM_SEARCH_STOP;
  }
  const kvsim_summary_t *s = q->sum;
  bool fin = s->requests_finished > 0;
  p->ttft_p99 = fin ? s->ttft.p99 : NAN;
  p->tpot_p99 = fin && s->tpot.count ? s->tpot.p99 : NAN;
  p->tpot_mean = fin && s->tpot.count ? s->tpot.mean : NAN;
  p->e2e_p99 = fin ? s->e2e.p99 : NAN;
  p->output_tokens_per_s = s->output_tokens_per_s;
  p->rejected = s->requests_rejected;
  p->steady = s->steady.reached;
  p->meets = judge(q->c, s, p);
  if (s->rejected_too_long > 0 || s->rejected_no_fit > 0) {
    snprintf(r->stopped, sizeof r->stopped,
             "requests rejected as too long for one replica, whatever the replica count");
    return KVSIM_SEARCH_STOP;
  }
  if (no_help(q->c, r)) {
    snprintf(r->stopped, sizeof r->stopped,
             "more replicas do not help: %d -> %d replicas left a missed p99 within 5 %% (%s)",
             n / 2, n, p->note);
    return KVSIM_SEARCH_STOP;
  }
  return p->meets ? 1 : 0;
}

/* The settings the plan resolved, for the launch command. */
static void serve_args(const kvsim_scenario_t *sc, const kvsim_resolved_t *res, kvsim_deploy_row_t *r) {
  kvsim_serve_args_t *a = &r->serve;
  const kvsim_plan_params_t *p = &res->plan.p;
  a->engine = p->engine;
  /* The checkpoint as the scenario names it (an HF id keeps its suffix:
   * -Instruct, -FP8), else the catalog model's id. */
  const char *id = kvsim_model_hf_id(sc->model.name);
  if (strchr(sc->model_id, '/'))
    id = sc->model_id;
  snprintf(a->model, sizeof a->model, "%s", id ? id : sc->model.name);
  a->tp = p->tp;
  a->max_num_seqs = res->sched.max_num_seqs;
  a->max_num_batched_tokens = res->sched.max_num_batched_tokens;
  a->max_model_len = res->sched.max_model_len;
  snprintf(a->kv_cache_dtype, sizeof a->kv_cache_dtype, "%s", kvsim_kv_dtype_name(p->kv_dtype));
  snprintf(a->quantization, sizeof a->quantization, "%s", p->quantization);
  a->gpu_memory_utilization = p->engine == KVSIM_PLAN_SGLANG ? res->plan.sglang.mem_fraction_static
                                                             : p->gpu_memory_utilization;
  r->gpus_per_replica = p->tp * (p->pp > 0 ? p->pp : 1);
  r->kv_blocks = res->plan.num_gpu_blocks;
}

/* A disaggregated configuration's two sides: each one's plan (one that
 * does not fit is the row's reason, named by side), its launch settings,
 * and the unit's GPUs. The row's own settings are the decode side's. */
static int sides(const kvsim_scenario_t *sc, kvsim_deploy_row_t *r, kvsim_err *err) {
  static const char *const name[2] = {"prefill", "decode"};
  const int unit[2] = {sc->disagg.unit_prefill, sc->disagg.unit_decode};
  int gpus = 0;
  for (int k = 0; k < 2; k++) {
    kvsim_scenario_t side;
    kvsim_resolved_t res;
    int rc = kvsim_scenario_disagg_side(sc, (kvsim_disagg_side)k, &side, err);
    if (rc == KVSIM_OK)
      *(k == KVSIM_SIDE_PREFILL ? &r->cfg.prefill_tp : &r->cfg.decode_tp) = side.plan.tp;
    if (rc == KVSIM_OK && (rc = kvsim_scenario_resolve(&side, &res, err)) == KVSIM_OK) {
      serve_args(&side, &res, r);
      r->side[k] = r->serve;
      r->side[k].role =
          k == KVSIM_SIDE_PREFILL ? KVSIM_SERVE_ROLE_PREFILL : KVSIM_SERVE_ROLE_DECODE;
      gpus += unit[k] * r->gpus_per_replica;
    }
    kvsim_scenario_fini(&side);
    if (rc < 0)
      return kvsim_err_prefix(err, "%s side", name[k]);
  }
  r->gpus_per_replica = gpus;
  return KVSIM_OK;
}

/* A unit the space also searches smaller (2P:2D beside 1P:1D): listed in
 * stopped, not run. */
static bool covered(const kvsim_deploy_space_t *s, const kvsim_scenario_t *sc,
                    kvsim_deploy_row_t *r) {
  int p, d;
  if (!kvsim_deploy_unit_covered(s, sc->disagg.unit_prefill, sc->disagg.unit_decode, &p, &d))
    return false;
  snprintf(r->stopped, sizeof r->stopped,
           "not run: %dP:%dD is %d units of %dP:%dD, which the search runs",
           sc->disagg.unit_prefill, sc->disagg.unit_decode, sc->disagg.unit_prefill / p, p, d);
  return true;
}

/* The best point's margin to the SLO (kvsim_deploy_row_t.margin). */
static void margin(const kvsim_compare_t *c, kvsim_deploy_row_t *r) {
  r->margin = NAN;
  if (r->best < 0)
    return;
  const kvsim_deploy_point_t *p = &r->points[r->best];
  const double lim[3] = {c->slo_ttft_p99_s, c->slo_tpot_p99_s, c->slo_e2e_p99_s};
  const double got[3] = {p->ttft_p99, p->tpot_p99, p->e2e_p99};
  for (int k = 0; k < 3; k++)
    if (lim[k] > 0 && !isnan(got[k]) && !(1 - got[k] / lim[k] >= r->margin))
      r->margin = 1 - got[k] / lim[k];
}

static void price(const kvsim_compare_t *c, const kvsim_scenario_t *sc, kvsim_deploy_row_t *r) {
  const cJSON *p = c->prices ? cJSON_GetObjectItemCaseSensitive(c->prices, sc->gpu.name) : NULL;
  r->cost_per_gpu_hour = p ? p->valuedouble : sc->gpu.cost_per_gpu_hour > 0 ? sc->gpu.cost_per_gpu_hour : NAN;
  if (r->best >= 0)
    r->cost_per_hour = r->cost_per_gpu_hour * r->points[r->best].replicas * r->gpus_per_replica;
}

/* Configuration i into r: a row whatever happens, an error only when the
 * machine fails (out of memory, a broken pipe). */
static int evaluate(const kvsim_compare_t *c, const kvsim_deploy_space_t *s, int64_t i,
                    kvsim_deploy_row_t *r, kvsim_err *err) {
  memset(r, 0, sizeof *r);
  r->best = -1;
  r->cost_per_gpu_hour = r->cost_per_hour = r->margin = NAN;
  kvsim_deploy_space_config(s, i, &r->cfg);
  kvsim_scenario_t sc;
  int rc = kvsim_deploy_config_scenario(c, &r->cfg, &sc, err);
  kvsim_summary_t *sum = rc == KVSIM_OK ? kvsim__malloc(sizeof *sum) : NULL;
  if (rc == KVSIM_OK && !sum)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  kvsim_resolved_t res;
  if (rc == KVSIM_OK &&
      sc.disagg.enabled) { /* the unit as run: the scenario's counts where the space gives none */
    r->cfg.prefill_replicas = sc.disagg.unit_prefill;
    r->cfg.decode_replicas = sc.disagg.unit_decode;
  }
  if (rc == KVSIM_OK && sc.disagg.enabled && (rc = sides(&sc, r, err)) == KVSIM_OK &&
      covered(s, &sc, r)) {
    r->serve = r->side[KVSIM_SIDE_DECODE]; /* the smaller unit's row answers for it */
  } else if (rc == KVSIM_OK && (rc = kvsim_scenario_resolve(&sc, &res, err)) == KVSIM_OK) {
    if (!sc.disagg.enabled)
      serve_args(&sc, &res, r);
    else
      r->serve = r->side[KVSIM_SIDE_DECODE];
    search_ctx_t q = {c, s, &sc, r, sum};
    double best;
    kvsim__study_memo_begin();
    rc = kvsim_search_replicas(pred, &q, &best, err);
    kvsim__study_memo_end();
    for (int k = 0; !isnan(best) && k < r->npoints; k++)
      if (r->points[k].meets && r->points[k].replicas == (int)best)
        r->best = k;
    margin(c, r);
    price(c, &sc, r);
  }
  free(sum);
  kvsim_scenario_fini(&sc);
  if (rc < 0) {
    r->rc = rc;
    snprintf(r->error, sizeof r->error, "%s", err->msg);
  }
  return rc == KVSIM_ENOMEM || rc == KVSIM_EIO ? rc : KVSIM_OK;
}

typedef struct pool_ctx {
  const kvsim_compare_t *c;
  const kvsim_deploy_space_t *s;
  kvsim_deploy_result_t *res;
  kvsim_progress_t *progress;
} pool_ctx_t;

static int job(void *ctx, int64_t i, void *out, kvsim_err *err) {
  const pool_ctx_t *x = ctx;
  return evaluate(x->c, x->s, i, out, err);
}

static int done(void *ctx, int64_t i, int rc, const void *out, const kvsim_err *job_err) {
  pool_ctx_t *x = ctx;
  kvsim_deploy_row_t *r = &x->res->rows[i];
  if (rc == KVSIM_OK) {
    *r = *(const kvsim_deploy_row_t *)out;
  } else {
    kvsim_deploy_space_config(x->s, i, &r->cfg);
    r->rc = rc;
    r->best = -1;
    snprintf(r->error, sizeof r->error, "%s", job_err ? job_err->msg : "run failed");
  }
  if (x->progress) {
    char label[160], unit[64];
    kvsim_deploy_unit_name(r->cfg.prefill_replicas, r->cfg.prefill_tp, r->cfg.decode_replicas,
                           r->cfg.decode_tp, unit, sizeof unit);
    if (r->cfg.disagg)
      snprintf(label, sizeof label, "%s %s", r->cfg.gpu, unit);
    else
      snprintf(label, sizeof label, "%s TP%d", r->cfg.gpu, r->cfg.tp);
    kvsim_progress_step(x->progress, label,
                        r->best >= 0            ? "meets"
                        : r->rc == KVSIM_ENOFIT ? "does not fit"
                        : !r->npoints && !r->rc ? "not run (a smaller unit's)"
                                                : "no answer",
                        r->rc < 0 && r->rc != KVSIM_ENOFIT);
  }
  return KVSIM_OK;
}

/* The winner's launch lines: one, or a disaggregated unit's two. */
static void winner_command(kvsim_deploy_result_t *res) {
  const kvsim_deploy_row_t *w = &res->rows[res->winner];
  size_t cap = sizeof res->winner_command;
  if (!w->cfg.disagg) {
    res->winner_has_command = kvsim_serve_command(&w->serve, res->winner_command, cap) == KVSIM_OK;
    return;
  }
  char line[2][1024];
  bool ok = true;
  for (int k = 0; k < 2; k++)
    ok = kvsim_serve_command(&w->side[k], line[k], sizeof line[k]) == KVSIM_OK && ok;
  res->winner_has_command = ok;
  /* Each line under a comment naming its side: vLLM's two are the same
   * line (the proxy gives the roles). */
  if (ok)
    snprintf(res->winner_command, cap,
             "# prefill: %d instance(s) a unit\n%s\n# decode: %d instance(s) a unit\n%s",
             w->cfg.prefill_replicas, line[0], w->cfg.decode_replicas, line[1]);
  else
    snprintf(res->winner_command, cap, "%s", line[1]);
}

void kvsim_deploy_choose(const kvsim_deploy_space_t *s, kvsim_deploy_result_t *res) {
  res->winner = res->cheapest_aggregated = res->cheapest_disaggregated = -1;
  res->simulations = res->no_fit = res->failed = 0;
  res->winner_has_command = false;
  res->winner_command[0] = '\0';
  for (int g = 0; g < KVSIM_DEPLOY_MAX_VALUES; g++)
    res->cheapest[g] = -1;
  for (int i = 0; i < res->n; i++) {
    const kvsim_deploy_row_t *r = &res->rows[i];
    res->simulations += r->npoints;
    res->no_fit += r->rc == KVSIM_ENOFIT;
    res->failed += r->rc < 0 && r->rc != KVSIM_ENOFIT;
    if (r->best < 0)
      continue;
    for (int g = 0; g < s->ngpus; g++)
      if (!strcmp(s->gpus[g], r->cfg.gpu) &&
          (res->cheapest[g] < 0 || kvsim_deploy_cheaper(r, &res->rows[res->cheapest[g]])))
        res->cheapest[g] = i;
    int *kind = r->cfg.disagg ? &res->cheapest_disaggregated : &res->cheapest_aggregated;
    if (*kind < 0 || kvsim_deploy_cheaper(r, &res->rows[*kind]))
      *kind = i;
    if (res->winner < 0 || kvsim_deploy_cheaper(r, &res->rows[res->winner]))
      res->winner = i;
  }
  if (res->winner >= 0)
    winner_command(res);
}

int kvsim_deploy_run(const kvsim_compare_t *c, const kvsim_compare_opts_t *opts,
                     kvsim_deploy_result_t *res, kvsim_err *err) {
  _Static_assert(sizeof(kvsim_deploy_row_t) <= KVSIM_STUDY_RECORD_MAX, "a row is a record");
  memset(res, 0, sizeof *res);
  char where[4200];
  snprintf(where, sizeof where, "%s: search", c->where);
  kvsim_deploy_space_t s;
  int rc = kvsim_deploy_space_parse(c->search, where, &s, err);
  if (rc < 0)
    return rc;
  static const char *const names[] = {"search.csv", "REPORT.md", NULL};
  if (opts->out && (rc = kvsim_report_check_out_dir(opts->out, names, err)) < 0)
    return rc;
  int64_t n = kvsim_deploy_space_count(&s);
  res->rows = kvsim__calloc((size_t)n, sizeof *res->rows);
  if (!res->rows)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %lld configurations", (long long)n);
  res->n = (int)n;
  pool_ctx_t x = {c, &s, res, opts->progress};
  rc = kvsim_study_parallel_records(0, n, 1, opts->jobs, job, done, &x, err);
  if (rc < 0)
    return rc;
  kvsim_deploy_choose(&s, res);
  return opts->out ? kvsim__deploy_write(c, opts, res, err) : KVSIM_OK;
}

void kvsim_deploy_result_fini(kvsim_deploy_result_t *res) {
  free(res->rows);
  memset(res, 0, sizeof *res);
}
