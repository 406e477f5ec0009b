/* Verified advice: every change a run's diagnosis advises is applied to a
 * copy of the scenario (typed overrides) and run, and the effect measured
 * is written into the diagnosis. The report room only proposes; running
 * simulations is the study room's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/study.h"
#include "study/run.h"

typedef struct change {
  kvsim_advice_kind kind;
  double value;
  char gpu[64];
} change_t;

typedef struct result {
  int rc;
  kvsim_summary_t s;
  char error[200];
} result_t;

typedef struct verify_ctx {
  const kvsim_scenario_t *sc;
  const change_t *changes;
  result_t *results;
  const kvsim__study_extra_t *extra; /* jobs 0..extra->n - 1 (NULL: none) */
} verify_ctx_t;

static int apply(kvsim_scenario_t *sc, const change_t *c, kvsim_err *err) {
  switch (c->kind) {
  case KVSIM_ADVICE_KV_FP8:
    return kvsim_scenario_set_kv_cache_dtype(sc, KVSIM_KV_FP8, err);
  case KVSIM_ADVICE_REPLICAS:
    return kvsim_scenario_set_replicas(sc, (int64_t)c->value, err);
  case KVSIM_ADVICE_TP:
    return kvsim_scenario_set_tensor_parallel(sc, (int64_t)c->value, err);
  case KVSIM_ADVICE_UTILIZATION: /* the profile's own share of GPU memory */
    return kvsim_scenario_set_memory_fraction(sc, c->value, err);
  case KVSIM_ADVICE_MAX_NUM_SEQS:
    return kvsim_scenario_set_max_num_seqs(sc, (int64_t)c->value, err);
  case KVSIM_ADVICE_MAX_MODEL_LEN:
    return kvsim_scenario_set_max_model_len(sc, (int64_t)c->value, err);
  case KVSIM_ADVICE_GPU:
    return kvsim_scenario_set_gpu(sc, c->gpu, err);
  case KVSIM_ADVICE_PREFILL_REPLICAS:
    return kvsim_scenario_set_disagg_replicas(sc, KVSIM_SIDE_PREFILL, (int64_t)c->value, err);
  case KVSIM_ADVICE_DECODE_REPLICAS:
    return kvsim_scenario_set_disagg_replicas(sc, KVSIM_SIDE_DECODE, (int64_t)c->value, err);
  }
  return kvsim_err_set(err, KVSIM_EINVAL, "advice kind %d: unknown", (int)c->kind);
}

static int job(void *vctx, int64_t i, kvsim_summary_t *out, kvsim_err *err) {
  verify_ctx_t *ctx = vctx;
  int64_t nx = ctx->extra ? ctx->extra->n : 0;
  if (i < nx)
    return ctx->extra->job(ctx->extra->ctx, i, out, err);
  i -= nx;
  kvsim_scenario_t copy;
  int rc = kvsim_scenario_copy(ctx->sc, &copy, err);
  if (rc < 0)
    return rc;
  rc = apply(&copy, &ctx->changes[i], err);
  if (rc == KVSIM_OK)
    rc = kvsim_study_run(&copy, NULL, out, err);
  kvsim_scenario_fini(&copy);
  return rc;
}

static int done(void *vctx, int64_t i, int rc, const kvsim_summary_t *s, const kvsim_err *job_err) {
  verify_ctx_t *ctx = vctx;
  int64_t nx = ctx->extra ? ctx->extra->n : 0;
  if (i < nx)
    return ctx->extra->done(ctx->extra->ctx, i, rc, s, job_err);
  i -= nx;
  result_t *r = &ctx->results[i];
  r->rc = rc;
  if (rc == KVSIM_OK)
    r->s = *s;
  else
    snprintf(r->error, sizeof r->error, "%s", job_err->msg);
  return KVSIM_OK;
}

static bool slo_given(const kvsim_summary_t *s) {
  return s->slo_ttft_p99.given || s->slo_tpot_p99.given || s->slo_e2e_p99.given;
}

/* Every target the scenario sets holds, and nothing was rejected (as a
 * plan search's point meets). */
static bool slo_met(const kvsim_summary_t *s) {
  const kvsim_slo_result_t *t[] = {&s->slo_ttft_p99, &s->slo_tpot_p99, &s->slo_e2e_p99};
  for (int k = 0; k < 3; k++)
    if (t[k]->given && !t[k]->met)
      return false;
  return s->requests_rejected == 0;
}

/* Which targets the changed run still misses: "TPOT p99 0.123 s > 0.1 s". */
static void misses(char *b, size_t n, const kvsim_summary_t *s) {
  const kvsim_slo_result_t *t[] = {&s->slo_ttft_p99, &s->slo_tpot_p99, &s->slo_e2e_p99};
  const char *names[] = {"TTFT", "TPOT", "E2E"};
  size_t len = 0;
  b[0] = '\0';
  for (int k = 0; k < 3; k++) {
    if (!t[k]->given || t[k]->met)
      continue;
    if (t[k]->reason[0]) { /* no p99 to quote: "no request finished", once for all targets */
      int w = snprintf(b, n, "%s", t[k]->reason);
      len = w < 0 ? 0 : (size_t)w < n ? (size_t)w : n - 1;
      break;
    }
    int w = snprintf(b + len, n - len, "%s%s p99 %.3g s > %g s", len ? ", " : "", names[k],
                     t[k]->actual, t[k]->target);
    if (w < 0 || (size_t)w >= n - len)
      return;
    len += (size_t)w;
  }
  if (s->requests_rejected > 0)
    snprintf(b + len, n - len, "%s%lld rejected", len ? ", " : "", (long long)s->requests_rejected);
}

/* Measured against the run diagnosed, on p99 TTFT (where every overload
 * shows first): 10% either way is noise. A side where no request finished
 * has no p99 (NAN), so there is nothing to compare: "cannot tell", unless
 * the change meets the SLO outright. */
static void judge(kvsim_advice_t *a, const kvsim_summary_t *base, const result_t *r) {
  a->tried = true;
  a->rc = r->rc;
  if (r->rc != KVSIM_OK) {
    snprintf(a->verdict, sizeof a->verdict, "%s", r->rc == KVSIM_ENOFIT ? "does not fit" : "failed");
    snprintf(a->note, sizeof a->note, "%s", r->error);
    return;
  }
  const kvsim_summary_t *s = &r->s;
  a->ttft_p99_s = s->ttft.p99;
  a->tpot_p99_s = s->tpot.p99;
  a->requests_per_s = s->requests_per_s;
  a->preemptions = s->preemptions;
  a->rejected = s->requests_rejected;
  a->slo_given = slo_given(s);
  a->slo_met = a->slo_given && slo_met(s);
  double before = base->ttft.p99, after = s->ttft.p99;
  const char *v;
  if (a->slo_met)
    v = "meets the SLO";
  else if (base->requests_finished == 0 || s->requests_finished == 0)
    v = "cannot tell";
  else if (after > 1.1 * before)
    v = "worse";
  else if (after >= 0.9 * before)
    v = "no better";
  else if (a->slo_given)
    v = "not enough";
  else
    v = after < 0.5 * before ? "helps" : "helps a little";
  snprintf(a->verdict, sizeof a->verdict, "%s", v);
  if (a->slo_given && !a->slo_met)
    misses(a->note, sizeof a->note, s);
}

/* Seconds as a reviewer reads them: 191 s, 10.3 s, 0.61 s; a p99 of no
 * finished request (NAN) is none, not 0 s. */
static void secs(char *b, size_t n, double x) {
  if (isnan(x))
    snprintf(b, n, "- (none finished)");
  else
    snprintf(b, n, x >= 100 ? "%.0f s" : x >= 10 ? "%.1f s" : x >= 0.1 ? "%.2f s" : "%.3f s", x);
}

static void describe(kvsim_diagnosis_t *d, const kvsim_summary_t *base) {
  size_t len = 0;
  d->verified[0] = '\0';
  for (int k = 0; k < d->nadvice; k++) {
    const kvsim_advice_t *a = &d->advice[k];
    char part[320];
    if (a->rc != KVSIM_OK) {
      snprintf(part, sizeof part, "%s: %s", a->label, a->verdict);
    } else {
      char t0[24], t1[24], pre[64] = "";
      secs(t0, sizeof t0, base->ttft.p99);
      secs(t1, sizeof t1, a->ttft_p99_s);
      if (base->preemptions > 0)
        snprintf(pre, sizeof pre, ", preemptions %lld -> %lld", (long long)base->preemptions,
                 (long long)a->preemptions);
      snprintf(part, sizeof part, "%s: p99 TTFT %s -> %s (%.2f -> %.2f req/s%s), %s", a->label, t0,
               t1, base->requests_per_s, a->requests_per_s, pre, a->verdict);
    }
    int w = snprintf(d->verified + len, sizeof d->verified - len, "%s%s", k ? "; " : "", part);
    if (w < 0 || (size_t)w >= sizeof d->verified - len)
      break;
    len += (size_t)w;
  }
}

static bool same(const change_t *c, const kvsim_advice_t *a) {
  return c->kind == a->kind && c->value == a->value && !strcmp(c->gpu, a->gpu);
}

/* The distinct changes of all findings (one run each, however many
 * findings advise it), in the order first advised. */
static int collect(const kvsim_summary_t *s, change_t *out, int cap) {
  int n = 0;
  for (int i = 0; i < s->ndiagnosis; i++)
    for (int k = 0; k < s->diagnosis[i].nadvice; k++) {
      const kvsim_advice_t *a = &s->diagnosis[i].advice[k];
      int j = 0;
      while (j < n && !same(&out[j], a))
        j++;
      if (j == n && n < cap) {
        out[n] = (change_t){a->kind, a->value, ""};
        snprintf(out[n].gpu, sizeof out[n].gpu, "%s", a->gpu);
        n++;
      }
    }
  return n;
}

int kvsim__study_verify_advice_with(const kvsim_scenario_t *sc, kvsim_summary_t *s, int jobs,
                                    const kvsim__study_extra_t *extra, kvsim_err *err) {
  enum { CAP = KVSIM_SUMMARY_MAX_DIAGNOSES * KVSIM_DIAGNOSIS_MAX_ADVICE };
  change_t changes[CAP];
  int n = collect(s, changes, CAP);
  int nx = extra ? extra->n : 0;
  if (!n && !nx)
    return KVSIM_OK;
  result_t *results = kvsim__calloc((size_t)(n ? n : 1), sizeof *results);
  if (!results)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory verifying the advice", s->name);
  verify_ctx_t ctx = {sc, changes, results, extra};
  /* The extra jobs (the band's edges) and the advice share one pool. */
  int rc = kvsim_study_parallel(0, nx + n, 1, jobs, job, done, &ctx, err);
  if (rc == KVSIM_OK && extra)
    rc = extra->finish(extra->ctx, s, err);
  for (int i = 0; rc == KVSIM_OK && n && i < s->ndiagnosis; i++) {
    kvsim_diagnosis_t *d = &s->diagnosis[i];
    for (int k = 0; k < d->nadvice; k++) {
      int j = 0;
      while (!same(&changes[j], &d->advice[k]))
        j++;
      judge(&d->advice[k], s, &results[j]);
    }
    describe(d, s);
  }
  free(results);
  return rc;
}

int kvsim_study_verify_advice(const kvsim_scenario_t *sc, kvsim_summary_t *s, int jobs,
                              kvsim_err *err) {
  return kvsim__study_verify_advice_with(sc, s, jobs, NULL, err);
}
