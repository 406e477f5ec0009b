/* Comparing every row of the silicon table (kvsim/fidelity.h): the rows
 * the physical rule refuses left out (physical.c), the others reproduced
 * one by one (silicon_run.c), grouped by system and model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/vec.h"
#include "kvsim/fidelity.h"

static int cmp_rows(const void *a, const void *b) {
  const kvsim_fid_sil_row_t *x = *(const kvsim_fid_sil_row_t *const *)a, *y = *(const kvsim_fid_sil_row_t *const *)b;
  int c = strcmp(x->system, y->system);
  if (!c)
    c = strcmp(x->model, y->model);
  if (!c)
    c = strcmp(x->precision, y->precision);
  if (!c)
    c = (x->tp > y->tp) - (x->tp < y->tp);
  if (!c)
    c = (x->isl > y->isl) - (x->isl < y->isl);
  if (!c)
    c = (x->osl > y->osl) - (x->osl < y->osl);
  if (!c)
    c = (x->batch > y->batch) - (x->batch < y->batch);
  if (!c)
    c = (x->line > y->line) - (x->line < y->line);
  return c;
}

/* order[]: the table's rows sorted by cmp_rows (a total order: the line
 * breaks ties). */
static int sort_order(kvsim_fid_silicon_t *s) {
  const kvsim_fid_sil_row_t **p = kvsim__calloc((size_t)(s->table.n ? s->table.n : 1), sizeof *p);
  if (!p)
    return KVSIM_ENOMEM;
  for (int64_t i = 0; i < s->table.n; i++)
    p[i] = &s->table.rows[i];
  qsort(p, (size_t)s->table.n, sizeof *p, cmp_rows);
  for (int64_t i = 0; i < s->table.n; i++)
    s->order[i] = p[i] - s->table.rows;
  kvsim__free(p);
  return KVSIM_OK;
}

/* Median absolute errors over rows [lo, hi) of the sorted order. */
static void group_medians(const kvsim_fid_silicon_t *s, int64_t lo, int64_t hi, double *mt, double *mp,
                          int *n) {
  double *a = kvsim__malloc((size_t)(hi - lo + 1) * sizeof *a),
         *b = kvsim__malloc((size_t)(hi - lo + 1) * sizeof *b);
  int k = 0;
  for (int64_t i = lo; a && b && i < hi; i++) {
    const kvsim_fid_sil_result_t *r = &s->res[s->order[i]];
    if (!r->ok)
      continue;
    a[k] = r->err_ttft;
    b[k] = r->err_tpot;
    k++;
  }
  *n = k;
  *mt = a && b ? kvsim_fidelity_median_abs(a, k) : NAN;
  *mp = a && b ? kvsim_fidelity_median_abs(b, k) : NAN;
  kvsim__free(a);
  kvsim__free(b);
}

static int make_groups(kvsim_fid_silicon_t *s) {
  const kvsim_fid_sil_row_t *rows = s->table.rows;
  int64_t cap = 0;
  for (int64_t lo = 0; lo < s->table.n;) {
    int64_t hi = lo + 1;
    const kvsim_fid_sil_row_t *first = &rows[s->order[lo]];
    while (hi < s->table.n && !strcmp(rows[s->order[hi]].system, first->system) &&
           !strcmp(rows[s->order[hi]].model, first->model))
      hi++;
    if (kvsim__grow((void **)&s->groups, &cap, s->ngroups + 1, sizeof *s->groups) < 0)
      return KVSIM_ENOMEM;
    kvsim_fid_sil_group_t *g = &s->groups[s->ngroups++];
    g->lo = lo;
    g->hi = hi;
    g->any = false;
    for (int64_t i = lo; i < hi; i++)
      g->any |= !rows[s->order[i]].skipped;
    group_medians(s, lo, hi, &g->ttft_med, &g->tpot_med, &g->n);
    lo = hi;
  }
  return KVSIM_OK;
}

/* Skipped rows by reason, in the order each reason first occurs. */
static int count_reasons(kvsim_fid_silicon_t *s) {
  int64_t cap = 0;
  for (int64_t i = 0; i < s->table.n; i++) {
    const kvsim_fid_sil_row_t *r = &s->table.rows[i];
    if (!r->skipped)
      continue;
    int64_t j = 0;
    while (j < s->nreasons && strcmp(s->reasons[j].reason, r->reason))
      j++;
    if (j == s->nreasons) {
      if (kvsim__grow((void **)&s->reasons, &cap, s->nreasons + 1, sizeof *s->reasons) < 0)
        return KVSIM_ENOMEM;
      s->reasons[s->nreasons++] = (kvsim_fid_sil_reason_t){r->reason, 0};
    }
    s->reasons[j].count++;
  }
  return KVSIM_OK;
}

static void simulate_rows(kvsim_fid_silicon_t *s, const kvsim_gpu_t *gpus, int ngpus, double range_ratio,
                          const kvsim_gpu_perf_t *perf) {
  for (int64_t i = 0; i < s->table.n; i++) {
    const kvsim_fid_sil_row_t *r = &s->table.rows[i];
    kvsim_fid_sil_result_t *res = &s->res[i];
    if (r->skipped) {
      s->skipped++;
      continue;
    }
    kvsim_err e = {0};
    if (kvsim_fidelity_silicon_simulate(r, gpus, ngpus, range_ratio, perf, &res->ttft_ms, &res->tpot_ms, &e) < 0) {
      /* A row whose memory plan does not fit is reported, not fatal. */
      snprintf(res->error, sizeof res->error, "%s", e.msg);
      s->failed++;
      continue;
    }
    /* The decode step's terms say what a TPOT miss is made of; the row
     * simulated, so its plan holds and this cannot fail. */
    (void)kvsim_fidelity_sil_decode_step(r, gpus, ngpus, range_ratio, perf, &res->decode_step, &e);
    res->ok = true;
    res->err_ttft = (res->ttft_ms - r->ttft_ms) / r->ttft_ms * 100;
    res->err_tpot = (res->tpot_ms - r->tpot_ms) / r->tpot_ms * 100;
    s->simulated++;
  }
}

int kvsim_fidelity_silicon_compare(const char *path, const char *const *filters, int nfilters,
                                   const kvsim_gpu_t *gpus, int ngpus, double range_ratio,
                                   const kvsim_gpu_perf_t *perf, kvsim_fid_silicon_t *out,
                                   kvsim_err *err) {
  memset(out, 0, sizeof *out);
  out->ttft_med = out->tpot_med = NAN;
  int rc = kvsim_fidelity_silicon_read(path, filters, nfilters, &out->table, err);
  if (rc < 0)
    return rc;
  kvsim_fidelity_sil_exclude_unphysical(&out->table, range_ratio);
  size_t n = (size_t)(out->table.n ? out->table.n : 1);
  out->res = kvsim__calloc(n, sizeof *out->res);
  out->order = kvsim__calloc(n, sizeof *out->order);
  if (!out->res || !out->order)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  simulate_rows(out, gpus, ngpus, range_ratio, perf);
  if (sort_order(out) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  group_medians(out, 0, out->table.n, &out->ttft_med, &out->tpot_med, &out->compared);
  if (make_groups(out) < 0 || count_reasons(out) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  return KVSIM_OK;
}

void kvsim_fidelity_silicon_fini(kvsim_fid_silicon_t *s) {
  kvsim_fidelity_silicon_free(&s->table);
  kvsim__free(s->res);
  kvsim__free(s->order);
  kvsim__free(s->groups);
  kvsim__free(s->reasons);
  memset(s, 0, sizeof *s);
}
