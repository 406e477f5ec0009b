/* The text reports of kvsim validate: --measured, --silicon, --startup
 * (kvsim/fidelity.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/fidelity.h"

/* ---- --measured ---- */

static void print_row(FILE *f, const char *name, const char *q, double meas, double sim, double scale,
                      const char *unit) {
  char e[16];
  double p = kvsim_fidelity_err_pct(sim, meas);
  if (isfinite(p))
    snprintf(e, sizeof e, "%+.1f%%", p);
  else
    snprintf(e, sizeof e, "n/a");
  if (isfinite(meas))
    fprintf(f, "%-6s %-5s %12.3f %-2s %12.3f %-2s %8s\n", name, q, meas * scale, unit, sim * scale, unit, e);
  else /* not in the measured file (a benchmark's aggregates) */
    fprintf(f, "%-6s %-5s %12s %-2s %12.3f %-2s %8s\n", name, q, "-", "", sim * scale, unit, e);
}

static void print_series(FILE *f, const kvsim_fid_measured_t *m, const kvsim_fid_series_cmp_t *s) {
  fprintf(f, "\ntime series (%s, %lld ticks): mean measured / simulated, mean |difference|\n",
         m->series_path, (long long)s->n);
  fprintf(f, "  running   %7.1f / %7.1f   %6.1f requests\n", s->running_mean_meas, s->running_mean_sim,
         s->running_mad);
  fprintf(f, "  waiting   %7.1f / %7.1f   %6.1f requests\n", s->waiting_mean_meas, s->waiting_mean_sim,
         s->waiting_mad);
  if (isfinite(s->kv_mad))
    fprintf(f, "  KV usage  %6.1f%% / %6.1f%%   %6.1f points\n", s->kv_mean_meas, s->kv_mean_sim, s->kv_mad);
  else
    fprintf(f, "  KV usage  not recorded in the measured series\n");
}

void kvsim_fidelity_measured_print(FILE *f, const kvsim_fid_measured_t *m, const kvsim_scenario_t *sc,
                             const kvsim_fid_measured_cmp_t *c) {
  const kvsim_fid_lat_cmp_t *l = &c->lat;
  char b1[32], b2[32];
  fprintf(f, "measured:  %s (%s, %lld finished requests)\n", m->path, kvsim_fidelity_fmt_name(m->fmt),
         (long long)l->n_meas);
  if (m->runs > 1)
    fprintf(f, "run:       %d of %d appended (the last)\n", m->run, m->runs);
  if (m->aggregates_only || m->not_compared[0])
    fprintf(f, "compared:  %s; not compared: %s\n", m->aggregates_only ? "the stated aggregates" : "per request",
           m->not_compared[0] ? m->not_compared : "-");
  if (m->replay[0])
    fprintf(f, "replay:    %s\n", m->replay);
  fprintf(f, "simulated: %s (%lld finished, %s GPU blocks, %s preemptions)\n\n", sc->name,
         (long long)l->n_sim, kvsim__commas(c->st.plan.num_gpu_blocks, b1, sizeof b1),
         kvsim__commas(c->st.preemptions, b2, sizeof b2));
  fprintf(f, "%-6s %-5s %15s %15s %8s\n", "", "", "measured", "simulated", "error");
  static const char *const names[KVSIM_FID_NLAT] = {"TTFT", "TPOT", "E2E", "queue"};
  for (int k = 0; k < KVSIM_FID_NLAT; k++) {
    if (k == KVSIM_FID_QUEUE && !l->has_queue) {
      fprintf(f, "queue  (not in the measured file)\n");
      continue;
    }
    double scale = k == KVSIM_FID_TPOT ? 1e3 : 1;
    const char *unit = k == KVSIM_FID_TPOT ? "ms" : "s";
    print_row(f, names[k], "mean", l->meas[k].mean, l->sim[k].mean, scale, unit);
    print_row(f, "", "p50", l->meas[k].p50, l->sim[k].p50, scale, unit);
    print_row(f, "", "p90", l->meas[k].p90, l->sim[k].p90, scale, unit);
    print_row(f, "", "p99", l->meas[k].p99, l->sim[k].p99, scale, unit);
  }
  print_row(f, "makespan", "", l->makespan_meas, l->makespan_sim, 1, "s");
  print_row(f, "output", "tok/s", l->tput_meas, l->tput_sim, 1, "");
  if (c->has_series)
    print_series(f, m, &c->series);
  else
    fprintf(f, "\ntime series: none measured (give --series FILE)\n");
}

/* ---- --silicon ---- */

static const char *prec(const kvsim_fid_sil_row_t *r) { return r->precision[0] ? r->precision : "bf16"; }

static void print_group(FILE *f, const kvsim_fid_silicon_t *s, const kvsim_fid_sil_group_t *g) {
  const kvsim_fid_sil_row_t *rows = s->table.rows;
  fprintf(f, "%s / %s\n", rows[s->order[g->lo]].system, rows[s->order[g->lo]].model);
  fprintf(f, "  %5s %-5s %3s %5s %5s %4s | %10s %10s %7s | %8s %8s %7s\n", "line", "prec", "tp", "isl", "osl",
         "conc", "TTFT ms", "sim", "err", "TPOT ms", "sim", "err");
  for (int64_t i = g->lo; i < g->hi; i++) {
    const kvsim_fid_sil_row_t *r = &rows[s->order[i]];
    const kvsim_fid_sil_result_t *x = &s->res[s->order[i]];
    if (r->skipped)
      continue;
    if (!x->ok) {
      fprintf(f, "  %5d %-5s %3lld %5lld %5lld %4lld | %10.1f  not simulated: %s\n", r->line, prec(r),
             (long long)r->tp, (long long)r->isl, (long long)r->osl, (long long)r->batch, r->ttft_ms, x->error);
      continue;
    }
    fprintf(f, "  %5d %-5s %3lld %5lld %5lld %4lld | %10.1f %10.1f %+6.1f%% | %8.2f %8.2f %+6.1f%%\n", r->line,
           prec(r), (long long)r->tp, (long long)r->isl, (long long)r->osl, (long long)r->batch, r->ttft_ms,
           x->ttft_ms, x->err_ttft, r->tpot_ms, x->tpot_ms, x->err_tpot);
  }
  if (g->n > 0)
    fprintf(f, "  median |error| over %d rows: TTFT %.1f%%, TPOT %.1f%%\n\n", g->n, g->ttft_med, g->tpot_med);
  else
    fprintf(f, "  no row simulated\n\n");
}

void kvsim_fidelity_silicon_print(FILE *f, const kvsim_fid_silicon_t *s) {
  for (int64_t i = 0; i < s->ngroups; i++)
    if (s->groups[i].any)
      print_group(f, s, &s->groups[i]);
  for (int64_t i = 0; i < s->nreasons; i++)
    fprintf(f, "skipped %d row%s: %s\n", s->reasons[i].count, s->reasons[i].count == 1 ? "" : "s",
           s->reasons[i].reason);
  if (s->compared > 0)
    fprintf(f, "%s%d rows simulated (%d failed, %d skipped): median |error| TTFT %.1f%%, TPOT %.1f%%\n",
           s->skipped ? "\n" : "", s->simulated, s->failed, s->skipped, s->ttft_med, s->tpot_med);
  else
    fprintf(f, "%s%d rows simulated (%d failed, %d skipped)\n", s->skipped ? "\n" : "", s->simulated, s->failed,
           s->skipped);
}

/* One line per simulated row, in the table's order: the mean decode
 * step's terms (ms) beside the measured and simulated TPOT. */
void kvsim_fidelity_silicon_print_terms(FILE *f, const kvsim_fid_silicon_t *s) {
  fprintf(f, "\nmean decode step by term (ms): gemm, attention, moe, comm, elementwise, host = total\n");
  fprintf(f, "%7s %-5s %4s %5s %5s %5s | %7s %7s | %6s %6s %6s %6s %6s %6s = %6s\n", "line", "prec", "tp", "isl",
          "osl", "conc", "TPOT", "sim", "gemm", "attn", "moe", "comm", "elem", "host", "total");
  for (int64_t i = 0; i < s->table.n; i++) {
    const kvsim_fid_sil_row_t *r = &s->table.rows[s->order[i]];
    const kvsim_fid_sil_result_t *x = &s->res[s->order[i]];
    if (!x->ok)
      continue;
    const kvsim_step_cost_t *c = &x->decode_step;
    fprintf(f, "%7d %-5s %4lld %5lld %5lld %5lld | %7.2f %7.2f | %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f = %6.3f\n", r->line,
            r->precision[0] ? r->precision : "bf16", (long long)r->tp, (long long)r->isl, (long long)r->osl,
            (long long)r->batch, r->tpot_ms, x->tpot_ms, c->gemm_s * 1e3, c->attn_s * 1e3, c->moe_s * 1e3,
            c->comm_s * 1e3, c->elem_s * 1e3, c->host_s * 1e3, c->total_s * 1e3);
  }
}

/* ---- --startup ---- */

static void pool_text(const kvsim_plan_t *pl, const char *metric, char *buf, size_t cap) {
  char n[32];
  bool tok = !strcmp(metric, "tokens");
  snprintf(buf, cap, "%7.2f GiB %9s %s", (double)pl->available_kv_bytes / KVSIM_GIB,
           kvsim__commas(tok ? pl->kv_cache_tokens : pl->num_gpu_blocks, n, sizeof n), tok ? "tok" : "blk");
}

static void print_su_row(FILE *f, const kvsim_fid_su_row_t *r, const kvsim_fid_su_result_t *s) {
  char idx[16], logged[48], a[48] = "-", b[48], ea[16] = "-", eb[16], n1[32];
  snprintf(idx, sizeof idx, r->index ? "%d" : "meta", r->index);
  /* The logged GiB where the log has it, else the pool the logged
   * blocks / tokens make with kvsim's block size. */
  double lg = r->avail_gib.set ? r->avail_gib.v : s->logged_gib;
  if (!strcmp(s->metric, "blocks"))
    snprintf(logged, sizeof logged, "%7.2f GiB %9s blk", lg, kvsim__commas(r->blocks, n1, sizeof n1));
  else if (!strcmp(s->metric, "tokens"))
    snprintf(logged, sizeof logged, "%7.2f GiB %9s tok", lg, kvsim__commas(r->tokens, n1, sizeof n1));
  else
    snprintf(logged, sizeof logged, "%7.2f GiB", lg);
  if (s->has_overrides) {
    pool_text(&s->with, s->metric, a, sizeof a);
    snprintf(ea, sizeof ea, "%+.1f%%", s->err_with);
  }
  pool_text(&s->pred, s->metric, b, sizeof b);
  snprintf(eb, sizeof eb, "%+.1f%%", s->err_pred);
  fprintf(f, "%-4s %-20s %-3s %-16s %-12s %3d %5.2f | %-26s | %-26s %8s | %-26s %8s\n", idx, r->source, r->engine,
         s->model_name, s->gpu_name, r->tp, r->util, logged, a, ea, b, eb);
}

void kvsim_fidelity_startup_print(FILE *f, const kvsim_fid_startup_t *t, const char *file) {
  fprintf(f, "Start-up validation against %s\n", file);
  fprintf(f, "%-4s %-20s %-3s %-16s %-12s %3s %5s | %-26s | %-26s %8s | %-26s %8s\n", "row", "source", "eng",
         "model", "gpu", "tp", "util", "logged", "(a) measured overrides", "err", "(b) predicted", "err");
  for (int64_t i = 0; i < t->n; i++)
    if (!t->res[i].skipped)
      print_su_row(f, &t->rows[i], &t->res[i]);
  for (int64_t i = 0; i < t->n; i++)
    if (t->res[i].skipped) {
      char idx[16];
      snprintf(idx, sizeof idx, t->rows[i].index ? "%d" : "meta", t->rows[i].index);
      fprintf(f, "skipped row %s (%s): %s\n", idx, t->rows[i].source, t->res[i].reason);
    }
  if (t->predicted > 0)
    fprintf(f, "Median absolute error of the prediction (b): %.1f%% over %d rows\n", t->median_abs_err, t->predicted);
  else
    fprintf(f, "Median absolute error of the prediction (b): n/a (no row with full inputs)\n");
}

/* ---- --silicon --terms ---- (the rows in order[], so a run of rows that
 * differ only in clients or output length prints once) */
void kvsim_fidelity_silicon_print_prefill_terms(FILE *f, const kvsim_fid_silicon_t *s, double range_ratio,
                                                bool own_gpu) {
  if (!own_gpu) {
    fprintf(f, "\nprefill of one prompt by term: not with --gpu or --perf (it reads the catalog GPU's tables)\n");
    return;
  }
  fprintf(f, "\nprefill of one prompt on an empty cache (ms): step = attention + experts + all-reduce + GEMMs + "
         "elementwise + host   [roofline]\n");
  const kvsim_fid_sil_row_t *last = NULL;
  for (int64_t k = 0; k < s->table.n; k++) {
    const int64_t i = s->order[k];
    const kvsim_fid_sil_row_t *r = &s->table.rows[i];
    if (!s->res[i].ok || (last && !strcmp(last->gpu, r->gpu) && !strcmp(last->model, r->model) &&
                          !strcmp(last->precision, r->precision) && last->tp == r->tp && last->isl == r->isl))
      continue;
    last = r;
    kvsim_step_cost_t c;
    kvsim_err err = {0};
    if (kvsim_fidelity_sil_prefill_terms(r, range_ratio, &c, &err) < 0) {
      fprintf(f, "  %s %s tp %lld isl %lld: %s\n", r->gpu, r->model, (long long)r->tp, (long long)r->isl, err.msg);
      continue;
    }
    fprintf(f, "  %s %s %s tp %lld isl %6lld: %8.1f = %.1f + %.1f + %.1f + %.1f + %.1f + %.1f   [%.1f]\n", r->gpu,
           r->model, r->precision, (long long)r->tp, (long long)r->isl, c.total_s * 1e3, c.attn_s * 1e3,
           c.moe_s * 1e3, c.comm_s * 1e3, c.gemm_s * 1e3, c.elem_s * 1e3, c.host_s * 1e3, c.roofline_s * 1e3);
  }
}
