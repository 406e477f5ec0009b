/* REPORT.md of a compare: one page a reviewer reads in two minutes (the
 * question, the answer in one sentence, the table, the plots, each
 * candidate's memory plan in the engine's words, the diagnosis, and what
 * the figures rest on). Markdown with relative image links. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/study.h"
#include "study/md.h"

/* "1.23 [1.1, 1.4]", "-" when not known; ">= " before a lower bound
 * (lb: value, low, high; NULL: none). An end with no figure is "none", a
 * top no run bounds "inf", as on the terminal (range_notes says both). */
static void ranged_lb(FILE *f, double v, const double r[2], const char *fmt, const bool *lb) {
  if (!isfinite(v)) {
    fputs(" - |", f);
    return;
  }
  fputs(lb && lb[0] ? " >= " : " ", f);
  fprintf(f, fmt, v);
  if (isfinite(r[0]) || isfinite(r[1])) {
    fputs(" [", f);
    for (int k = 0; k < 2; k++) {
      fputs(k ? ", " : "", f);
      fputs(lb && lb[k + 1] && isfinite(r[k]) ? ">= " : "", f);
      /* Only a top is ever infinite (+inf). */
      isfinite(r[k]) ? fprintf(f, fmt, r[k]) : fputs(isnan(r[k]) ? "none" : "inf", f);
    }
    fputc(']', f);
  }
  fputs(" |", f);
}

static void ranged(FILE *f, double v, const double r[2], const char *fmt) { ranged_lb(f, v, r, fmt, NULL); }

static void cell(FILE *f, double v, const char *fmt) {
  fputc(' ', f);
  isfinite(v) ? fprintf(f, fmt, v) : fputc('-', f);
  fputs(" |", f);
}

static void question(FILE *f, const kvsim_compare_t *c, const kvsim_compare_row_t *rows) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(c->scenario, "name");
  fprintf(f, "## Question\n\nWhich of %d deployments serves **%g req/s** of ", c->ncandidates,
          c->target_rate);
  kvsim__md_text(f, cJSON_IsString(name) ? name->valuestring : c->scenario_where);
  if (rows[0].model[0]) {
    fputs(" (", f);
    kvsim__md_text(f, rows[0].model);
    fputc(')', f);
  }
  fputs(" within the SLO", f);
  if (c->slo_ttft_p99_s > 0)
    fprintf(f, " p99 TTFT <= %g s", c->slo_ttft_p99_s);
  if (c->slo_tpot_p99_s > 0)
    fprintf(f, "%s p99 TPOT <= %g s", c->slo_ttft_p99_s > 0 ? "," : "", c->slo_tpot_p99_s);
  if (c->slo_e2e_p99_s > 0)
    fprintf(f, ", p99 E2E <= %g s", c->slo_e2e_p99_s);
  fputs(", and at what cost?\n\n", f);
  if (c->description[0]) {
    kvsim__md_text(f, c->description);
    fputs("\n\n", f);
  }
}

/* Why a cell of the table is "-": one note per reason that occurs, with
 * how many candidates it names (the sweep's table says it the same way). */
static void dash_notes(FILE *f, const kvsim_compare_row_t *rows, int n) {
  enum { NOFIT, FAILED, INFEASIBLE, NO_RATE, NO_REPLICAS, NONE_FINISHED, NO_TPOT, NO_PRICE, NREASONS };
  static const char *const said[NREASONS] = {
      "does not fit (%d candidate%s): nothing ran",
      "failed (%d candidate%s): nothing measured (its error is under its memory plan)",
      "meets the SLO at no load or only near zero load (%d candidate%s): no replica count "
      "answers it (the Answer gives its unloaded p99 and the nearest changes, measured "
      "unloaded)",
      "meets the SLO at no rate tried (%d candidate%s): no goodput",
      "no replica count tried meets the target (%d candidate%s): no run at the target, so no "
      "replicas, GPUs, latency, KV or cost figures",
      "no request finished at the target (%d candidate%s): no latency figures",
      "no request had a second token (%d candidate%s): no TPOT",
      "no price for the GPU (%d candidate%s): no cost figures"};
  int count[NREASONS] = {0};
  for (int i = 0; i < n; i++) {
    const kvsim_compare_row_t *r = &rows[i];
    if (r->rc < 0) {
      count[r->rc == KVSIM_ENOFIT ? NOFIT : FAILED]++;
      continue;
    }
    if (r->infeasible) {
      count[INFEASIBLE]++;
      continue;
    }
    count[NO_RATE] += isnan(r->goodput);
    if (isnan(r->replicas)) {
      count[NO_REPLICAS]++;
      continue;
    }
    count[NONE_FINISHED] += isnan(r->ttft_p99);
    count[NO_TPOT] += isfinite(r->ttft_p99) && isnan(r->tpot_p99);
    count[NO_PRICE] += isnan(r->cost_per_gpu_hour);
  }
  for (int k = 0; k < NREASONS; k++)
    if (count[k]) {
      fputs("\n-: ", f);
      fprintf(f, said[k], count[k], count[k] == 1 ? "" : "s");
      fputs(".\n", f);
    }
}

/* Where the prices came from, by GPU (compare.csv's cost_source): the
 * study's cost_per_gpu_hour, else the GPU file's. Only the sources that
 * priced a row are named; none at all says nothing (the '-' note does). */
static void price_sources(FILE *f, const kvsim_compare_row_t *rows, int n) {
  static const char *const source[] = {"study", "gpu file"};
  static const char *const said[] = {"the study's `cost_per_gpu_hour` for ",
                                     "the GPU file's `cost_per_gpu_hour` for "};
  bool any = false;
  for (int s = 0; s < 2; s++) {
    bool named = false;
    for (int i = 0; i < n; i++) {
      bool seen = strcmp(rows[i].cost_source, source[s]) != 0;
      for (int j = 0; j < i && !seen; j++)
        seen = !strcmp(rows[j].cost_source, source[s]) && !strcmp(rows[j].gpu, rows[i].gpu);
      if (seen)
        continue;
      fputs(named ? ", " : any ? "; " : " Prices per GPU-hour: ", f);
      fputs(named ? "" : said[s], f);
      kvsim__md_text(f, rows[i].gpu);
      named = any = true;
    }
  }
  fputs(any ? "." : "", f);
}

/* Whether ranged_lb writes "none" or "inf" for v's range r. */
static bool shows_none(double v, const double r[2]) {
  return isfinite(v) && (isfinite(r[0]) || isfinite(r[1])) && (isnan(r[0]) || isnan(r[1]));
}
static bool shows_inf(double v, const double r[2]) {
  return isfinite(v) && (isfinite(r[0]) || isfinite(r[1])) && (isinf(r[0]) || isinf(r[1]));
}

/* The candidates whose run at the target did not reach steady state
 * (kvsim/steady.h): their figures may flatter them. */
static void steady_note(FILE *f, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (rows[i].ran_target && !rows[i].steady) {
      fputs(k++ ? ", " : "\n**Too short to reach steady state** at the target (the workload's "
                         "requests; `steady` false in compare.csv): ",
            f);
      kvsim__md_text(f, c->cand[i].label);
    }
  if (k)
    fputs(". Their latencies may flatter them: run more requests.\n", f);
}

/* What a range's "none" or "inf" means: one note per column kind that
 * shows one, with how many candidates, as dash_notes says a '-'. */
static void range_notes(FILE *f, const kvsim_compare_row_t *rows, int n, bool e2e) {
  enum { GOODPUT, REPLICAS, LATENCY_NONE, LATENCY_INF, NKINDS };
  static const char *const said[NKINDS] = {
      "none: no rate tried meets the SLO at that edge of the band (%d candidate%s): a goodput "
      "range without that end",
      "none: no replica count tried meets the target at that edge of the band (%d candidate%s): a "
      "replicas range without that end",
      "none: no run at that edge of the band had the figure (%d candidate%s): a p99 range without "
      "that end",
      "inf: a run at the target (nominal or at a band edge) left requests unfinished (an "
      "`output.max_time_s` cut) or finished none (%d candidate%s): no finite figure bounds that "
      "p99's top, and a target checked against it is missed"};
  int count[NKINDS] = {0};
  for (int i = 0; i < n; i++) {
    const kvsim_compare_row_t *r = &rows[i];
    if (r->rc < 0)
      continue;
    count[GOODPUT] += shows_none(r->goodput, r->goodput_range);
    count[REPLICAS] += shows_none(r->replicas, r->replicas_range);
    bool none = shows_none(r->ttft_p99, r->ttft_p99_range) ||
                shows_none(r->tpot_p99, r->tpot_p99_range) ||
                (e2e && shows_none(r->e2e_p99, r->e2e_p99_range));
    bool inf = shows_inf(r->ttft_p99, r->ttft_p99_range) ||
               shows_inf(r->tpot_p99, r->tpot_p99_range) ||
               (e2e && shows_inf(r->e2e_p99, r->e2e_p99_range));
    count[LATENCY_NONE] += none;
    count[LATENCY_INF] += inf;
  }
  for (int k = 0; k < NKINDS; k++)
    if (count[k]) {
      fputs("\n", f);
      fprintf(f, said[k], count[k], count[k] == 1 ? "" : "s");
      fputs(".\n", f);
    }
}

static void table(FILE *f, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n) {
  bool e2e = c->slo_e2e_p99_s > 0; /* its column only when a target judges it */
  /* "\$": GitHub pairs two '$' of one line into inline maths. */
  fputs("## Table\n\n"
        "| candidate | GPU | TP x PP | util | KV dtype | fits | KV blocks | max concurrency | "
        "goodput req/s | replicas | GPUs | p99 TTFT s | p99 TPOT s |",
        f);
  fputs(e2e ? " p99 E2E s |" : "", f);
  fputs(" KV peak | preemptions | \\$/h | \\$/M output tokens | calibration |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        f);
  fputs(e2e ? "---|\n" : "\n", f);
  for (int i = 0; i < n; i++) {
    const kvsim_compare_row_t *r = &rows[i];
    fputs("| ", f);
    kvsim__md_text(f, c->cand[i].label);
    fputs(" | ", f);
    kvsim__md_text(f, r->gpu[0] ? r->gpu : "-");
    fprintf(f, " | %d x %d |", r->tp, r->pp);
    cell(f, r->gpu[0] ? r->gpu_memory_utilization : NAN, "%.2f");
    fprintf(f, " %s | %s | %lld |", r->kv_cache_dtype[0] ? r->kv_cache_dtype : "-",
            r->rc == KVSIM_OK ? "yes" : r->rc == KVSIM_ENOFIT ? "**no**" : "failed",
            (long long)r->kv_blocks);
    cell(f, r->max_concurrency, "%.1f");
    ranged_lb(f, r->goodput, r->goodput_range, "%.3g", r->goodput_lower_bound);
    ranged(f, r->replicas, r->replicas_range, "%.0f");
    cell(f, r->replicas * r->gpus_per_replica, "%.0f");
    ranged(f, r->ttft_p99, r->ttft_p99_range, "%.3g");
    ranged(f, r->tpot_p99, r->tpot_p99_range, "%.3g");
    if (e2e)
      ranged(f, r->e2e_p99, r->e2e_p99_range, "%.3g");
    cell(f, 100 * r->kv_peak, "%.1f %%");
    cell(f, isnan(r->kv_peak) ? NAN : (double)r->preemptions, "%.0f");
    cell(f, r->cost_per_hour, "%.2f");
    cell(f, r->cost_per_mtok, "%.3f");
    fprintf(f, " %s |\n", r->gpu[0] ? kvsim_cal_status_name(r->cal_status) : "-");
  }
  dash_notes(f, rows, n);
  range_notes(f, rows, n, e2e);
  steady_note(f, c, rows, n);
  fputs("\nGoodput: the highest rate the deployment as given (one replica unless the candidate "
        "sets more) serves within the SLO (`kvsim plan --search rate`). Replicas: the fewest for "
        "the target (`--search replicas`); p99s, KV peak and preemptions are those of that run. "
        "Ranges in brackets: the same search or run with every step time at the two edges of the "
        "GPU's band (below); \">=\": met at every rate tried, a lower bound.",
        f);
  price_sources(f, rows, n);
  fputs("\n\n", f);
}

/* The figures this compare drew (res->plots), or why there are none. */
static void plots(FILE *f, const kvsim_compare_result_t *res) {
  static const char *const known[][2] = {
      {"compare_ttft.png", "p99 TTFT against offered rate"},
      {"compare_tpot.png", "p99 TPOT against offered rate"},
      {"compare_kv.png", "KV cache usage against offered rate"},
      {"compare_goodput_per_dollar.png", "Goodput per dollar"}};
  fputs("## Plots\n\n", f);
  if (!res->plots[0]) {
    fprintf(f, "No plots: %s.\n\n",
            res->plots_note[0] ? res->plots_note : "the report was written without a folder");
    return;
  }
  /* The known figures in reading order (TTFT, TPOT, KV, cost), then any
   * other the script drew. */
  for (size_t k = 0; k < sizeof known / sizeof *known; k++) {
    size_t len = strlen(known[k][0]);
    for (const char *p = strstr(res->plots, known[k][0]); p; p = strstr(p + 1, known[k][0]))
      if ((p == res->plots || p[-1] == '\n') && p[len] == '\n') {
        fprintf(f, "![%s](%s)\n\n", known[k][1], known[k][0]);
        break;
      }
  }
  for (const char *p = res->plots; *p;) {
    size_t n = strcspn(p, "\n");
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)n, p);
    bool listed = false;
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
      listed |= !strcmp(known[k][0], name);
    if (!listed)
      fprintf(f, "![%s](%s)\n\n", name, name);
    p += n + (p[n] == '\n');
  }
  fputs("Drawn by this command with gnuplot from compare_sweep.csv and compare.csv (the script is "
        "scripts/plot_compare.sh); error bars: the band's range at each rate. A figure of one "
        "constant is not drawn.\n\n",
        f);
}

static void plans(FILE *f, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n) {
  fputs("## Memory plan of each candidate\n\n", f);
  for (int i = 0; i < n; i++) {
    fputs("### ", f);
    kvsim__md_text(f, c->cand[i].label);
    fputs("\n\n", f);
    if (rows[i].plan_text[0]) {
      kvsim__md_block(f, rows[i].plan_text);
      fputc('\n', f);
    }
    /* The error names files, models, keys: text, not Markdown. */
    if (rows[i].rc < 0) {
      fprintf(f, "%s: ", rows[i].rc == KVSIM_ENOFIT ? "Does not fit" : "Failed");
      kvsim__md_text(f, rows[i].error);
      fputs("\n\n", f);
    }
  }
}

static void diagnosis(FILE *f, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n) {
  fputs("## Diagnosis (the run at the target)\n\n", f);
  for (int i = 0; i < n; i++) {
    const kvsim_compare_row_t *r = &rows[i];
    if (r->rc < 0 || isnan(r->replicas))
      continue;
    fputs("- **", f);
    kvsim__md_text(f, c->cand[i].label);
    fprintf(f, "**:%s\n", r->ndiagnosis ? "" : " nothing to report.");
    /* A message names GPUs, models, files: text, not Markdown. */
    for (int k = 0; k < r->ndiagnosis; k++) {
      fprintf(f, "  - %s (%s): ", r->diagnosis[k].code, r->diagnosis[k].severity);
      kvsim__md_text(f, r->diagnosis[k].message);
      fputc('\n', f);
    }
  }
  fputc('\n', f);
}

static void rests_on(FILE *f, const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n,
                     const char *command) {
  fputs("## What the figures rest on\n\n", f);
  for (int i = 0; i < n; i++) {
    const kvsim_compare_row_t *r = &rows[i];
    bool seen = !r->gpu[0];
    for (int j = 0; j < i && !seen; j++)
      seen = !strcmp(rows[j].gpu, r->gpu);
    if (seen)
      continue;
    fputs("- ", f);
    kvsim__md_text(f, r->gpu);
    fprintf(f, ": step times from kernel tables, **%s**", kvsim_cal_status_name(r->cal_status));
    if (r->cal_rows > 0)
      fprintf(f, " (%d measured rows)", r->cal_rows);
    fprintf(f, "; band +/- %.0f %% TTFT, +/- %.0f %% TPOT (%s); ranges re-run at step-time x%.3g and x%.3g "
               "(prefill x%.3g and x%.3g), each latency's top at least the nominal / (1 - band).\n",
            100 * r->band_ttft_rel, 100 * r->band_tpot_rel,
            r->band_kind == 2   ? "the held-out error of this status, leave-one-GPU-out"
            : r->band_kind == 1 ? "the fit's in-sample residual spread, widened unless fitted on this GPU; no held-out error yet"
                                : "a default width for coefficients of this status, not a measured error",
            r->band_edge[0].step, r->band_edge[1].step, r->band_edge[0].prefill, r->band_edge[1].prefill);
  }
  fprintf(f, "- kvsim %s; ", KVSIM_VERSION);
  kvsim__md_text(f, c->where);
  fputs(".\n", f);
  if (command) {
    fputs("- Reproduce: ", f);
    kvsim__md_code(f, command);
    fputc('\n', f);
  }
}

char *kvsim_report_md_compare(const kvsim_compare_t *c, const kvsim_compare_result_t *res,
                              const char *command) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f)
    return NULL;
  /* The first line is the decision: what to buy, and why. */
  char decision[sizeof res->answer * 2];
  kvsim_compare_decision(c, res->rows, res->n, true, decision, sizeof decision);
  fprintf(f, "%s\n\n# Capacity review: ", decision);
  kvsim__md_text(f, c->name);
  fputs("\n\n", f);
  question(f, c, res->rows);
  /* The answer names candidates: the same sentence with each label
   * escaped (res->answer is the terminal's). */
  char answer[sizeof res->answer * 2];
  kvsim_compare_answer(c, res->rows, res->n, true, answer, sizeof answer);
  fprintf(f, "## Answer\n\n%s\n\n", answer);
  table(f, c, res->rows, res->n);
  plots(f, res);
  plans(f, c, res->rows, res->n);
  diagnosis(f, c, res->rows, res->n);
  rests_on(f, c, res->rows, res->n, command);
  bool bad = ferror(f) != 0;
  bad |= fclose(f) != 0;
  if (bad) {
    free(text);
    return NULL;
  }
  return text;
}
