/* REPORT.md of `kvsim run --report` and `kvsim sweep --report`: the same
 * one page as a compare's (question, one-sentence answer with ranges,
 * table, plots, memory plan, diagnosis, what the figures rest on), for one
 * run or one sweep. A run's ranges are its summary's `<stat>_range` (the
 * band through the queue, kvsim_study_run_band); a run made without them
 * (--no-band) is run once more with them for the report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/report.h"
#include "kvsim/study.h"
#include "study/plot.h"
#include "study/md.h"

/* s's ranges, or those of the scenario run again with its band. */
static int ranged(const kvsim_scenario_t *sc, const kvsim_summary_t *s, kvsim_summary_t *out,
                  kvsim_err *err) {
  if (s->has_ranges) {
    *out = *s;
    return KVSIM_OK;
  }
  return kvsim_study_run_band(sc, NULL, true, out, err);
}

/* The scenario's SLO targets in the order of kvsim_sweep_slos (0: none). */
static void slo_targets(const kvsim_scenario_t *sc, double v[KVSIM_SWEEP_NSLO]) {
  v[0] = sc->slo_ttft_p99_s;
  v[1] = sc->slo_tpot_p99_s;
  v[2] = sc->slo_e2e_p99_s;
}

/* What a sweep's points hold as one SLO target: whether a grid axis sets
 * it by name or sets the whole "slo" section, and the lowest and highest
 * of the points that ran (NAN: none ran with it), unset when some ran
 * without it. */
typedef struct point_slo {
  bool axis, section, unset;
  double lo, hi;
} point_slo_t;

/* One target a sweep's points may each set: "p99 E2E as each point sets
 * it (0.5 to 3 s)". False when no axis sets it and the points agree, or
 * when nothing says the points have it: the caller says the one value. */
static bool point_slo_text(FILE *f, const char *sep, const char *name, const point_slo_t *p,
                           double base) {
  bool known = isfinite(p->lo);
  bool axis = p->axis || p->section;
  if (known ? !axis && !p->unset && p->lo == p->hi : !p->axis && !(p->section && base > 0))
    return false;
  fprintf(f, "%s%s as each point sets it", sep, name);
  if (!known)
    return true;
  fprintf(f, " (%g", p->lo);
  if (p->hi > p->lo)
    fprintf(f, " to %g", p->hi);
  fputs(p->unset ? " s, none at some points)" : " s)", f);
  return true;
}

/* " p99 TTFT <= 2 s, p99 E2E <= 10 s": each target, in summary.json's
 * order; per_point (NULL: a run) what a sweep's points hold, where a grid
 * may set a target the base scenario has another value for, or none. */
static void slo_text(FILE *f, const kvsim_scenario_t *sc, const point_slo_t *per_point) {
  double v[KVSIM_SWEEP_NSLO];
  slo_targets(sc, v);
  const char *sep = " ";
  for (int k = 0; k < KVSIM_SWEEP_NSLO; k++) {
    const point_slo_t *p = per_point ? &per_point[k] : NULL;
    double one = p && isfinite(p->lo) ? p->lo : v[k]; /* what the points were judged by */
    if (p && point_slo_text(f, sep, kvsim_sweep_slos[k].name, p, v[k]))
      ;
    else if (one > 0)
      fprintf(f, "%s%s <= %g s", sep, kvsim_sweep_slos[k].name, one);
    else
      continue;
    sep = ", ";
  }
  if (!strcmp(sep, " "))
    fputs(" (the scenario sets no SLO)", f);
}

static void rests_on(FILE *f, const kvsim_scenario_t *sc, const kvsim_band_edge_t edge[2], const char *command,
                     const char *verb, const char *dir) {
  double t, d;
  kvsim_gpu_band_moe(&sc->gpu.perf, sc->model.num_experts > 0, &t, &d);
  fputs("## What the figures rest on\n\n- ", f);
  kvsim__md_text(f, sc->gpu.name);
  fprintf(f,
          ": step times from kernel tables, **%s**; band +/- %.0f %% "
          "TTFT, +/- %.0f %% TPOT (%s); ranges: the same runs with step-time x%.3g and x%.3g "
          "(prefill x%.3g and x%.3g), each latency's top at least the nominal / (1 - band), "
          "the most a measured figure within the band's error can be.\n",
          kvsim_cal_status_name(sc->gpu.perf.status), 100 * t, 100 * d,
          "the held-out error of this status, leave-one-GPU-out",
          edge[0].step, edge[1].step, edge[0].prefill, edge[1].prefill);
  fprintf(f, "- kvsim %s.\n", KVSIM_VERSION);
  char made[8400];
  if (!command && !strcmp(verb, "run"))
    snprintf(made, sizeof made, "kvsim run %s --out %s --report",
             sc->path[0] ? sc->path : "(the embedded default)", dir);
  if (command || !strcmp(verb, "run")) {
    fputs("- Reproduce: ", f);
    kvsim__md_code(f, command ? command : made);
    fputs(command ? "\n" : ", with the `--set` overrides that summary.json's config records.\n", f);
  }
}

/* The plan names its model and GPU, whose names may hold backticks: the
 * block's fence is fitted to the text (written first for that). False
 * when out of memory. */
static bool plan_block(FILE *f, const kvsim_scenario_t *sc, const kvsim_plan_t *pl) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m)
    return false;
  /* A disaggregated run: both sides' plans and the KV a prompt moves
   * (calc --scenario's text); pl is the decode side's. */
  kvsim_err e = {0};
  if (!sc->disagg.enabled || kvsim_report_scenario_calc(sc, false, m, &e) < 0)
    kvsim_report_plan_text(pl, &sc->model, &sc->gpu, m);
  bool ok = !ferror(m);
  ok &= fclose(m) == 0;
  if (ok) {
    fputs("## Memory plan\n\n", f);
    kvsim__md_block(f, text);
    fputc('\n', f);
  }
  free(text);
  return ok;
}

static int write_text(const char *dir, char *text, size_t len, kvsim_err *err) {
  char path[4400];
  snprintf(path, sizeof path, "%s/REPORT.md", dir);
  int rc = kvsim_report_write_atomic(path, text, len, err);
  free(text);
  return rc;
}

/* The run's figures, drawn here by the plot script compiled into the
 * binary (scripts/plot.sh) on the outputs already in dir, after removing
 * an older run's PNGs; linked as drawn, or the reason there are none. */
static void run_plots(FILE *f, const char *dir) {
  static const char *const known[][2] = {{"kv_cache.png", "KV cache usage"},
                                         {"queue.png", "Queue"},
                                         {"replicas.png", "Replicas"},
                                         {"preemptions.png", "Preemptions"},
                                         {"latency_cdf.png", "Latency"},
                                         {"disaggregation.png", "Disaggregated prefill and decode"}};
  char why[512] = "", list[1024] = "";
  kvsim__plots_clear(dir);
  if (kvsim__plots_available(why, sizeof why) &&
      !kvsim__plots_draw("plot.sh", dir, NULL, why, sizeof why)) {
    kvsim__plots_clear(dir);
    char failed[600];
    snprintf(failed, sizeof failed, "the plot script failed: %s", why);
    snprintf(why, sizeof why, "%s", failed);
  }
  fputs("## Plots\n\n", f);
  if (kvsim__plots_list(dir, list, sizeof list) == 0) {
    fprintf(f, "No plots: %s.\n\n", why[0] ? why : "nothing to draw");
    return;
  }
  for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
    char line[64];
    snprintf(line, sizeof line, "%s\n", known[k][0]);
    for (const char *p = strstr(list, line); p; p = strstr(p + 1, line))
      if (p == list || p[-1] == '\n') {
        fprintf(f, "![%s](%s)\n\n", known[k][1], known[k][0]);
        break;
      }
  }
  fputs("Drawn by this command with gnuplot (the script is scripts/plot.sh); a figure of one "
        "constant (no preemptions) is not drawn.\n\n",
        f);
}

int kvsim_report_md_run_write(const kvsim_scenario_t *sc, const kvsim_summary_t *s, const char *dir,
                              const char *command, kvsim_err *err) {
  kvsim_summary_t *e = kvsim__malloc(sizeof *e);
  if (!e)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for the report's runs");
  int rc = ranged(sc, s, e, err);
  char *text = NULL;
  size_t len = 0;
  FILE *f = rc == KVSIM_OK ? open_memstream(&text, &len) : NULL;
  if (rc == KVSIM_OK && !f)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for REPORT.md");
  if (rc < 0) {
    free(e);
    return rc;
  }
  const kvsim_band_edge_t edge[2] = {{e->band_scale_lo, e->band_prefill_scale_lo},
                                     {e->band_scale_hi, e->band_prefill_scale_hi}};
  /* With no request finished the percentiles are of nothing (the run
   * line's words): 0 s would read as instant service, and an SLO on them
   * as met. */
  bool none = s->requests_finished == 0;
  bool met = (!s->slo_ttft_p99.given || s->slo_ttft_p99.met) &&
             (!s->slo_tpot_p99.given || s->slo_tpot_p99.met) &&
             (!s->slo_e2e_p99.given || s->slo_e2e_p99.met) && !s->requests_rejected && !none;
  fputs("# Run report: ", f);
  kvsim__md_text(f, s->name);
  fputs("\n\n## Question\n\nHow does ", f);
  kvsim__md_text(f, sc->model.name);
  fputs(" on ", f);
  kvsim__md_text(f, sc->gpu.name);
  /* A disaggregated run: its instances; the sides' own GPUs and TP are
   * in the memory plan below, the figures here the decode side's. */
  if (s->disaggregated)
    fprintf(f, " as %d prefill : %d decode instances (decode side ", s->disagg.prefill_replicas,
            s->disagg.decode_replicas);
  else
    fprintf(f, " x %d (", s->replicas > 0 ? s->replicas : 1);
  fprintf(f,
          "TP %d, PP %d, "
          "gpu_memory_utilization %.2f, KV %s) serve this workload (%lld requests, %.3g req/s "
          "served) within the SLO",
          s->plan.p.tp, s->plan.p.pp,
          s->plan.p.gpu_memory_utilization, kvsim_kv_dtype_name(s->plan.p.kv_dtype),
          (long long)s->requests_total, s->requests_per_s);
  slo_text(f, sc, NULL);
  fprintf(f, "?\n\n## Answer\n\n%s%s",
          !(s->slo_ttft_p99.given || s->slo_tpot_p99.given || s->slo_e2e_p99.given) ? "No SLO given"
          : met ? "Meets the SLO"
                : "Misses the SLO",
          none ? "; " : ": ");
  if (none)
    fputs("no request finished: no latency figures", f);
  else if (s->tpot.count == 0) /* one output token each: no TPOT, not 0 s */
    fprintf(f, "p99 TTFT %.3g s [%.3g, %.3g], no TPOT (no request had a second token)", s->ttft.p99,
            e->ttft_range.p99.lo, e->ttft_range.p99.hi);
  else
    fprintf(f, "p99 TTFT %.3g s [%.3g, %.3g], p99 TPOT %.3g s [%.3g, %.3g]", s->ttft.p99,
            e->ttft_range.p99.lo, e->ttft_range.p99.hi, s->tpot.p99, e->tpot_range.p99.lo,
            e->tpot_range.p99.hi);
  /* A target on E2E is judged: its figure belongs in the answer too. */
  if (!none && s->slo_e2e_p99.given)
    fprintf(f, ", p99 E2E %.3g s [%.3g, %.3g]", s->e2e.p99, e->e2e_range.p99.lo,
            e->e2e_range.p99.hi);
  fprintf(f, "; KV peak %.1f %%, %lld preemptions, %lld rejected.\n\n", 100 * s->kv_usage_peak,
          (long long)s->preemptions, (long long)s->requests_rejected);
  /* The latencies are the steady window's (kvsim/steady.h); a window too
   * short to be steady is said where the answer is read. */
  fprintf(f, "Latencies of the steady window (rule %s: %lld and %lld requests dropped at the "
             "start and the end).%s",
          KVSIM_STEADY_RULE, (long long)s->steady.warmup, (long long)s->steady.drain,
          s->steady.reached || none ? "\n\n" : " ");
  if (!s->steady.reached && !none) {
    fputs("**The workload is too short to reach steady state**: ", f);
    kvsim__md_text(f, s->steady.why);
    fputs("; run more requests.\n\n", f);
  }
  /* A cut run's latencies are of the finished alone (the run line says
   * so too), and the band then opens the tops it cannot bound. */
  const long long open = (long long)(s->running_at_end + s->waiting_at_end);
  if (open > 0)
    fprintf(f,
            "%lld request%s still in flight when the run ended (`output.max_time_s`): the "
            "latencies are of the finished requests only, and a range's top of inf is one that "
            "no run of the band bounds.\n\n",
            open, open == 1 ? " was" : "s were");
  fputs("## Table\n\n| figure | value | range over the band |\n|---|---|---|\n", f);
  if (none)
    fputs("| TTFT, TPOT, E2E | no request finished: no latency figures | |\n", f);
  else {
    fprintf(f, "| TTFT p50 / p99 s | %.3g / %.3g | p99 %.3g .. %.3g |\n", s->ttft.p50, s->ttft.p99,
            e->ttft_range.p99.lo, e->ttft_range.p99.hi);
    if (s->tpot.count == 0)
      fputs("| TPOT p50 / p99 s | - | no request had a second token |\n", f);
    else
      fprintf(f, "| TPOT p50 / p99 s | %.3g / %.3g | p99 %.3g .. %.3g |\n", s->tpot.p50,
              s->tpot.p99, e->tpot_range.p99.lo, e->tpot_range.p99.hi);
    fprintf(f, "| E2E p99 s | %.3g | %.3g .. %.3g |\n", s->e2e.p99, e->e2e_range.p99.lo,
            e->e2e_range.p99.hi);
  }
  fprintf(f,
          "| requests/s, output tokens/s | %.3g, %.4g | %.3g .. %.3g req/s |\n"
          "| KV peak / mean | %.1f %% / %.1f %% | peak %.1f .. %.1f %% |\n| preemptions | %lld | "
          "%.0f .. %.0f |\n"
          "| prefix hit rate | %.1f %% | |\n| SLO attainment | %.1f %% | %.1f .. %.1f %% |\n\n",
          s->requests_per_s, s->output_tokens_per_s, e->requests_per_s_range.lo,
          e->requests_per_s_range.hi, 100 * s->kv_usage_peak, 100 * s->kv_usage_mean,
          100 * e->kv_usage_peak_range.lo, 100 * e->kv_usage_peak_range.hi,
          (long long)s->preemptions, e->preemptions_range.lo, e->preemptions_range.hi,
          100 * s->prefix_hit_rate, 100 * s->slo_attainment, 100 * e->slo_attainment_range.lo,
          100 * e->slo_attainment_range.hi);
  run_plots(f, dir);
  bool planned = plan_block(f, sc, &s->plan);
  fputs("## Diagnosis\n\n", f);
  if (!s->ndiagnosis)
    fputs("Nothing to report.\n", f);
  for (int k = 0; k < s->ndiagnosis; k++) {
    const kvsim_diagnosis_t *d = &s->diagnosis[k];
    fprintf(f, "- %s (%s): %s\n", d->code, d->severity, d->message);
    if (d->verified[0])
      fprintf(f, "  - measured: %s\n", d->verified);
  }
  fputc('\n', f);
  rests_on(f, sc, edge, command, "run", dir);
  free(e);
  bool bad = !planned || ferror(f) != 0;
  bad |= fclose(f) != 0;
  if (bad) {
    free(text);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for REPORT.md");
  }
  return write_text(dir, text, len, err);
}

/* A p99 in the sweep's table; "-" when no request finished (NAN). */
static void latency_cell(FILE *f, double v) {
  if (isfinite(v))
    fprintf(f, " %.3g |", v);
  else
    fputs(" - |", f);
}

/* Figures by their sweep.csv column. */
enum { FIN = 1, REJ = 2, RPS = 10, KVPEAK = 12, PREEMPT = 15 };

/* Whether the sweep has SLO target k: the base scenario's, or any point's
 * summary (a grid may set one). */
static bool slo_given(const kvsim_scenario_t *sc, const kvsim_sweep_t *sw,
                      const kvsim_sweep_result_t *res, int k) {
  double base[KVSIM_SWEEP_NSLO];
  slo_targets(sc, base);
  if (base[k] > 0)
    return true;
  for (int64_t i = 0; i < sw->points; i++)
    if (res->rows[i].ran && res->rows[i].rc == KVSIM_OK && res->rows[i].slo[k].given)
      return true;
  return false;
}

/* Target k across the sweep's points (point_slo_t): an axis names it
 * ("slo.e2e_p99_s", or the whole "slo" section), and the points that ran
 * say what each was judged by. */
static point_slo_t point_slo(const kvsim_sweep_t *sw, const kvsim_sweep_result_t *res, int k) {
  static const char *const keys[KVSIM_SWEEP_NSLO] = {"slo.ttft_p99_s", "slo.tpot_p99_s",
                                                     "slo.e2e_p99_s"};
  point_slo_t p = {false, false, false, NAN, NAN};
  for (int a = 0; a < sw->nkeys; a++) {
    p.axis |= !strcmp(sw->keys[a], keys[k]);
    p.section |= !strcmp(sw->keys[a], "slo");
  }
  for (int64_t i = 0; i < sw->points; i++) {
    const kvsim_sweep_row_t *r = &res->rows[i];
    if (!r->ran || r->rc != KVSIM_OK)
      continue;
    if (!r->slo[k].given) {
      p.unset = true;
      continue;
    }
    double t = r->slo[k].target;
    p.lo = isfinite(p.lo) && p.lo <= t ? p.lo : t;
    p.hi = isfinite(p.hi) && p.hi >= t ? p.hi : t;
  }
  return p;
}

/* A point meets the SLO as its summary.json says: every target it has met
 * (a point where no request finished meets none: its p99s are not known),
 * and no request rejected. Without targets: it finished requests and
 * rejected none. */
static bool point_met(const kvsim_sweep_row_t *r) {
  if (!r->ran || r->rc != KVSIM_OK || r->fig[REJ] != 0 || !(r->fig[FIN] > 0))
    return false;
  for (int k = 0; k < KVSIM_SWEEP_NSLO; k++)
    if (r->slo[k].given && !r->slo[k].met)
      return false;
  return true;
}

/* The table's last cell: "yes", or what the point missed. */
static void verdict_cell(FILE *f, const kvsim_sweep_row_t *r) {
  if (point_met(r)) {
    fputs(" yes |", f);
    return;
  }
  if (!(r->fig[FIN] > 0)) {
    fputs(" no: no request finished |", f);
    return;
  }
  const char *sep = " no: ";
  for (int k = 0; k < KVSIM_SWEEP_NSLO; k++)
    if (r->slo[k].given && !r->slo[k].met) {
      fprintf(f, "%s%s", sep, kvsim_sweep_slos[k].name);
      sep = ", ";
    }
  if (r->fig[REJ] != 0)
    fprintf(f, "%s%.0f rejected", sep, r->fig[REJ]);
  fputs(" |", f);
}

/* A grid value as the table shows it: a string as itself, else its JSON. */
static void value_cell(FILE *f, const cJSON *jv) {
  char *v = cJSON_IsString(jv) ? NULL : cJSON_PrintUnformatted(jv);
  fputc(' ', f);
  kvsim__md_text(f, cJSON_IsString(jv) ? jv->valuestring : v ? v : "");
  fputs(" |", f);
  free(v);
}

static void sweep_answer(FILE *f, const kvsim_sweep_t *sw, const kvsim_sweep_result_t *res,
                         const bool shown[KVSIM_SWEEP_NSLO], bool any_slo) {
  int64_t best = -1, nmet = 0;
  for (int64_t i = 0; i < sw->points; i++) {
    const kvsim_sweep_row_t *r = &res->rows[i];
    if (!point_met(r))
      continue;
    nmet++;
    if (best < 0 || r->fig[RPS] > res->rows[best].fig[RPS])
      best = i;
  }
  if (!any_slo)
    fputs("No SLO given: every point that ran, finished requests and rejected none counts below. ",
          f);
  if (best < 0) {
    fprintf(f, "None of the %lld points meets the SLO.\n\n", (long long)sw->points);
    return;
  }
  const kvsim_sweep_row_t *b = &res->rows[best];
  fprintf(f,
          "%lld of %lld points meet the SLO; the highest throughput among them is run%04lld (%.3g "
          "req/s",
          (long long)nmet, (long long)sw->points, (long long)best, b->fig[RPS]);
  for (int k = 0; k < KVSIM_SWEEP_NSLO; k++) {
    double v = b->fig[kvsim_sweep_slos[k].column];
    if (!shown[k])
      continue;
    if (isnan(v)) /* a TPOT where every request had one output token */
      fprintf(f, ", no %s", kvsim_sweep_slos[k].name);
    else
      fprintf(f, ", %s %.3g s", kvsim_sweep_slos[k].name, v);
  }
  fputs("). Ranges: `kvsim run --report` on a point re-runs it at the band's edges.\n\n", f);
}

static void sweep_table(FILE *f, const kvsim_sweep_t *sw, const kvsim_sweep_result_t *res,
                        const bool shown[KVSIM_SWEEP_NSLO]) {
  fputs("## Table\n\n| run |", f);
  int ncols = 0;
  for (int k = 0; k < sw->nkeys; k++, ncols++) {
    fputc(' ', f);
    kvsim__md_text(f, sw->keys[k]);
    fputs(" |", f);
  }
  for (int k = 0; k < KVSIM_SWEEP_NSLO; k++)
    if (shown[k]) {
      fprintf(f, " %s s |", kvsim_sweep_slos[k].name);
      ncols++;
    }
  fputs(" req/s | KV peak | preemptions | meets the SLO |\n|---|", f);
  for (int k = 0; k < ncols + 4; k++)
    fputs("---|", f);
  fputc('\n', f);
  int64_t none = 0, no_tpot = 0;
  for (int64_t i = 0; i < sw->points; i++) {
    const kvsim_sweep_row_t *r = &res->rows[i];
    if (!r->ran)
      continue;
    fprintf(f, "| run%04lld |", (long long)i);
    for (int k = 0; k < sw->nkeys; k++)
      value_cell(f, kvsim_sweep_value(sw, i, k));
    if (r->rc != KVSIM_OK) {
      fprintf(f, " %s |", r->rc == KVSIM_ENOFIT ? "does not fit" : "failed");
      for (int k = 1; k < ncols - sw->nkeys + 4; k++)
        fputs(" |", f);
      fputc('\n', f);
      continue;
    }
    none += r->fig[FIN] == 0;
    no_tpot += r->fig[FIN] > 0 && isnan(r->fig[kvsim_sweep_slos[1].column]); /* one token each */
    for (int k = 0; k < KVSIM_SWEEP_NSLO; k++)
      if (shown[k])
        latency_cell(f, r->fig[kvsim_sweep_slos[k].column]);
    fprintf(f, " %.3g | %.1f %% | %.0f |", r->fig[RPS], 100 * r->fig[KVPEAK], r->fig[PREEMPT]);
    verdict_cell(f, r);
    fputc('\n', f);
  }
  if (none)
    fprintf(f, "\n-: no request finished (%lld point%s): no latency figures.\n", (long long)none,
            none == 1 ? "" : "s");
  if (no_tpot)
    fprintf(f, "\n-: no request had a second token (%lld point%s): no TPOT.\n", (long long)no_tpot,
            no_tpot == 1 ? "" : "s");
}

int kvsim_report_md_sweep_write(const kvsim_sweep_t *sw, const kvsim_sweep_result_t *res,
                                const char *dir, const char *sweep_file, kvsim_err *err) {
  kvsim_scenario_t sc;
  int rc = kvsim_sweep_scenario(sw, -1, &sc, err);
  if (rc < 0)
    return rc;
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) {
    kvsim_scenario_fini(&sc);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for REPORT.md");
  }
  /* The p99 TTFT and TPOT columns always; another target's when the sweep
   * has it. */
  bool shown[KVSIM_SWEEP_NSLO], given[KVSIM_SWEEP_NSLO], any_slo = false;
  point_slo_t per_point[KVSIM_SWEEP_NSLO];
  for (int k = 0; k < KVSIM_SWEEP_NSLO; k++) {
    per_point[k] = point_slo(sw, res, k);
    given[k] = slo_given(&sc, sw, res, k);
    shown[k] = k < 2 || given[k];
    any_slo |= given[k];
  }
  fputs("# Sweep report: ", f);
  kvsim__md_text(f, sw->name);
  fprintf(f, "\n\n## Question\n\nWhich of %lld variations of ", (long long)sw->points);
  kvsim__md_text(f, sc.name);
  fputs(" (", f);
  kvsim__md_text(f, sc.model.name);
  fputs(" on ", f);
  kvsim__md_text(f, sc.gpu.name);
  fputs(") serves its workload within the SLO", f);
  slo_text(f, &sc, per_point);
  fputs("?\n\n## Answer\n\n", f);
  sweep_answer(f, sw, res, shown, any_slo);
  sweep_table(f, sw, res, shown);
  fputs("\n## Plots\n\nscripts/plot.sh on this folder draws each figure against the first grid "
        "axis, one line per combination of the others.\n\n", f);
  kvsim_band_edge_t edge[2];
  kvsim_study_band_edges(&sc, edge);
  char cmd[8400];
  snprintf(cmd, sizeof cmd, "kvsim sweep %s --out %s --report", sweep_file ? sweep_file : sw->name, dir);
  rests_on(f, &sc, edge, cmd, "sweep", dir);
  kvsim_scenario_fini(&sc);
  bool bad = ferror(f) != 0;
  bad |= fclose(f) != 0;
  if (bad) {
    free(text);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for REPORT.md");
  }
  return write_text(dir, text, len, err);
}
