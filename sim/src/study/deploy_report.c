/* The deployment search's REPORT.md and terminal answer (kvsim/deploy.h):
 * the decision first, the cheapest deployment per GPU, the winner's
 * launch command, the Pareto frontier, what did not fit and why. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/deploy.h"
#include "study/deploy_int.h"
#include "study/md.h"

#define MARGIN_TIE KVSIM__DEPLOY_MARGIN_TIE

/* The runner-up tied with the winner: same price, same GPUs, a margin to
 * the SLO within MARGIN_TIE; -1 none. The best of them by
 * kvsim_deploy_cheaper. */
static int tied_with(const kvsim_deploy_result_t *res) {
  const kvsim_deploy_row_t *w = &res->rows[res->winner];
  int gw = w->points[w->best].replicas * w->gpus_per_replica, t = -1;
  for (int i = 0; i < res->n; i++) {
    const kvsim_deploy_row_t *r = &res->rows[i];
    if (i == res->winner || r->best < 0 || r->points[r->best].replicas * r->gpus_per_replica != gw ||
        !(r->cost_per_hour == w->cost_per_hour || (isnan(r->cost_per_hour) && isnan(w->cost_per_hour))) ||
        !(fabs(r->margin - w->margin) < MARGIN_TIE))
      continue;
    if (t < 0 || kvsim_deploy_cheaper(r, &res->rows[t]))
      t = i;
  }
  return t;
}

static void decision(const kvsim_compare_t *c, const kvsim_deploy_result_t *res, char *buf, size_t cap) {
  int meeting = 0;
  for (int i = 0; i < res->n; i++)
    meeting += res->rows[i].best >= 0;
  if (res->winner < 0) {
    snprintf(buf, cap,
             "No configuration of the search meets the SLO at %g req/s (%d configurations, %d did "
             "not fit, %d simulations): see each one's reason below.",
             c->target_rate, res->n, res->no_fit, res->simulations);
    return;
  }
  const kvsim_deploy_row_t *w = &res->rows[res->winner];
  const kvsim_deploy_point_t *p = &w->points[w->best];
  char d[200];
  kvsim__deploy_name(w, d, sizeof d);
  snprintf(buf, cap,
           "Deploy %s with KV %s, weights %s, max_num_seqs %lld, max_num_batched_tokens %lld: p99 "
           "TTFT %.3g s, TPOT %.3g s at %g req/s, %.0f output tokens/s per GPU; the cheapest of the "
           "%d configurations that meet (%d searched, %d simulations).",
           d, w->serve.kv_cache_dtype, w->serve.quantization[0] ? w->serve.quantization : "as the checkpoint",
           (long long)w->serve.max_num_seqs, (long long)w->serve.max_num_batched_tokens, p->ttft_p99,
           p->tpot_p99, c->target_rate, kvsim__deploy_per_gpu(w, p), meeting, res->n,
           res->simulations);
  int t = tied_with(res);
  if (t >= 0) {
    const kvsim_deploy_row_t *r = &res->rows[t];
    char d2[200];
    kvsim__deploy_name(r, d2, sizeof d2);
    size_t n = strlen(buf);
    snprintf(buf + n - (n && buf[n - 1] == '.'), cap - n + 1,
             "; tied with %s, KV %s, weights %s, max_num_seqs %lld, max_num_batched_tokens %lld "
             "(margins to the SLO %.0f %% and %.0f %%: within %.0f points, which a longer run can "
             "turn).",
             d2, r->serve.kv_cache_dtype, r->serve.quantization[0] ? r->serve.quantization : "as the checkpoint",
             (long long)r->serve.max_num_seqs, (long long)r->serve.max_num_batched_tokens,
             100 * w->margin, 100 * r->margin, 100 * MARGIN_TIE);
  }
}

/* Why a GPU has no deployment: its rows' reasons, counted. */
static void no_kvsim__deploy_name(FILE *f, const kvsim_deploy_result_t *res, const char *gpu) {
  int nofit = 0, stopped = 0, failed = 0;
  const char *example = "";
  for (int i = 0; i < res->n; i++) {
    const kvsim_deploy_row_t *r = &res->rows[i];
    if (strcmp(r->cfg.gpu, gpu))
      continue;
    nofit += r->rc == KVSIM_ENOFIT;
    failed += r->rc < 0 && r->rc != KVSIM_ENOFIT;
    if (r->rc == KVSIM_OK && r->stopped[0] && r->npoints) { /* not a unit left to a smaller one */
      stopped++;
      example = r->stopped;
    }
  }
  fprintf(f, "none meets: %d configurations do not fit, %d stopped", nofit, stopped);
  if (failed)
    fprintf(f, ", %d failed", failed);
  if (example[0]) {
    fputs(" (e.g. ", f);
    kvsim__md_text(f, example);
    fputc(')', f);
  }
}

static void cheapest_table(FILE *f, const kvsim_deploy_space_t *s, const kvsim_deploy_result_t *res) {
  fputs("| GPU | deployment | KV dtype | weights | max_num_seqs | max_num_batched_tokens | p99 TTFT s "
        "| p99 TPOT s | output tok/s/GPU | tok/s/user | $/h |\n|---|---|---|---|---|---|---|---|---|---|---|\n",
        f);
  for (int g = 0; g < s->ngpus; g++) {
    fprintf(f, "| %s | ", s->gpus[g]);
    int i = res->cheapest[g];
    if (i < 0) {
      no_kvsim__deploy_name(f, res, s->gpus[g]);
      fputs(" | | | | | | | | | |\n", f);
      continue;
    }
    const kvsim_deploy_row_t *r = &res->rows[i];
    const kvsim_deploy_point_t *p = &r->points[r->best];
    char m[32] = "-";
    if (!isnan(r->cost_per_hour))
      snprintf(m, sizeof m, "%.2f", r->cost_per_hour);
    char layout[80];
    kvsim__deploy_layout(r, layout, sizeof layout);
    fprintf(f, "%d x %s = %d GPUs | %s | %s | %lld | %lld | %.3g | %.3g | %.0f | %.1f | %s |\n",
            p->replicas, layout, p->replicas * r->gpus_per_replica, r->serve.kv_cache_dtype,
            r->serve.quantization[0] ? r->serve.quantization : "checkpoint",
            (long long)r->serve.max_num_seqs, (long long)r->serve.max_num_batched_tokens,
            p->ttft_p99, p->tpot_p99, kvsim__deploy_per_gpu(r, p), kvsim__deploy_per_user(p), m);
  }
}

static void frontier_table(FILE *f, const kvsim_deploy_result_t *res) {
  int n = 0;
  for (int i = 0; i < res->n; i++)
    n += res->rows[i].npoints;
  double *x = kvsim__malloc((size_t)(n + 1) * sizeof *x), *y = kvsim__malloc((size_t)(n + 1) * sizeof *y);
  int *ri = kvsim__malloc((size_t)(n + 1) * sizeof *ri), *pi = kvsim__malloc((size_t)(n + 1) * sizeof *pi);
  bool *on = kvsim__malloc((size_t)(n + 1) * sizeof *on);
  if (!x || !y || !ri || !pi || !on) {
    fputs("(out of memory for the frontier)\n", f);
    goto done;
  }
  int m = 0;
  for (int i = 0; i < res->n; i++)
    for (int k = 0; k < res->rows[i].npoints; k++)
      if (res->rows[i].points[k].meets) {
        ri[m] = i;
        pi[m] = k;
        x[m] = kvsim__deploy_per_user(&res->rows[i].points[k]);
        y[m] = kvsim__deploy_per_gpu(&res->rows[i], &res->rows[i].points[k]);
        m++;
      }
  int nf = kvsim_pareto_front(x, y, m, on);
  fprintf(f, "Every point serves the target rate, so its output tokens/s per GPU is the target's "
             "output rate over the GPUs it takes: fewer GPUs, more per GPU; more of them, faster per "
             "user. %d of the %d SLO-meeting points are on the frontier (none does better on both):\n\n",
          nf, m);
  fputs("| tok/s/user (1 / mean TPOT) | output tok/s/GPU | deployment | KV dtype | weights | max_num_seqs "
        "| max_num_batched_tokens |\n|---|---|---|---|---|---|---|\n",
        f);
  for (;;) {
    int b = -1;
    for (int j = 0; j < m; j++)
      if (on[j] && (b < 0 || x[j] < x[b] || (x[j] == x[b] && y[j] > y[b])))
        b = j;
    if (b < 0)
      break;
    on[b] = false;
    const kvsim_deploy_row_t *r = &res->rows[ri[b]];
    const kvsim_deploy_point_t *p = &r->points[pi[b]];
    char layout[80];
    kvsim__deploy_layout(r, layout, sizeof layout);
    fprintf(f, "| %.1f | %.0f | %d x %s %s | %s | %s | %lld | %lld |\n", x[b], y[b], p->replicas,
            r->cfg.gpu, layout, r->serve.kv_cache_dtype,
            r->serve.quantization[0] ? r->serve.quantization : "checkpoint",
            (long long)r->serve.max_num_seqs, (long long)r->serve.max_num_batched_tokens);
  }
done:
  free(x);
  free(y);
  free(ri);
  free(pi);
  free(on);
}

/* The configurations that never ran or failed, with their reasons. */
static void not_run(FILE *f, const kvsim_deploy_result_t *res) {
  int covered = 0;
  for (int i = 0; i < res->n; i++)
    covered += res->rows[i].rc == KVSIM_OK && !res->rows[i].npoints && res->rows[i].stopped[0];
  if (!res->no_fit && !res->failed && !covered)
    return;
  fprintf(f,
          "\n## Not simulated\n\n%d configurations do not fit (the engine's start-up error), %d "
          "failed",
          res->no_fit, res->failed);
  if (covered)
    fprintf(f,
            ", %d disaggregated units are whole multiples of a smaller unit the search runs "
            "(its replica search reaches the same deployments)",
            covered);
  fputs(":\n\n", f);
  for (int i = 0; i < res->n; i++) {
    const kvsim_deploy_row_t *r = &res->rows[i];
    if (r->rc == KVSIM_OK && (r->npoints || !r->stopped[0]))
      continue;
    char layout[80];
    kvsim__deploy_layout(r, layout, sizeof layout);
    fprintf(f, "- %s %s, KV %s, weights %s: ", r->cfg.gpu, layout,
            r->cfg.kv_cache_dtype[0] ? r->cfg.kv_cache_dtype : "(scenario's)",
            r->cfg.quantization[0] ? r->cfg.quantization : "(scenario's)");
    kvsim__md_text(f, r->rc == KVSIM_OK ? r->stopped : r->error);
    fputc('\n', f);
  }
}

/* The question a search answers and what it searched. */
static void question_md(FILE *f, const kvsim_compare_t *c, const kvsim_deploy_result_t *res,
                        const kvsim_deploy_space_t *sp) {
  fprintf(f, "\n\n## Question\n\nThe cheapest deployment per GPU that serves %g req/s within", c->target_rate);
  if (c->slo_ttft_p99_s > 0)
    fprintf(f, " p99 TTFT <= %g s", c->slo_ttft_p99_s);
  if (c->slo_tpot_p99_s > 0)
    fprintf(f, " p99 TPOT <= %g s", c->slo_tpot_p99_s);
  if (c->slo_e2e_p99_s > 0)
    fprintf(f, " p99 E2E <= %g s", c->slo_e2e_p99_s);
  fputs(" (", f);
  kvsim__md_text(f, c->description[0] ? c->description : c->scenario_where);
  if (sp->disagg)
    fprintf(f,
            "). Searched: %d configurations (%lld aggregated: GPU x TP x quantization x KV dtype x "
            "max_num_seqs x max_num_batched_tokens; %lld disaggregated: the same without TP, x "
            "prefill instances x decode instances x prefill TP x decode TP a unit), each with the "
            "fewest replicas (units) (1, 2, 4, ... up to %d, then bisected) meeting the SLO; %d "
            "simulations.\n\n",
            res->n, (long long)kvsim_deploy_space_count_aggregated(sp),
            (long long)(res->n - kvsim_deploy_space_count_aggregated(sp)), sp->max_replicas,
            res->simulations);
  else
    fprintf(f,
            "). Searched: %d configurations (GPU x TP x quantization x KV dtype x max_num_seqs x "
            "max_num_batched_tokens), each with the fewest replicas (1, 2, 4, ... up to %d, then "
            "bisected) meeting the SLO; %d simulations.\n\n",
            res->n, sp->max_replicas, res->simulations);
}

/* The frontier's plots, the configurations not run and the points that
 * did not reach steady state. */
static void plots_and_gaps_md(FILE *f, const kvsim_deploy_result_t *res) {
  if (res->plots[0]) {
    fputc('\n', f);
    for (const char *p = res->plots; *p;) {
      size_t n = strcspn(p, "\n");
      fprintf(f, "![%.*s](%.*s)\n", (int)n, p, (int)n, p);
      p += n + (p[n] == '\n');
    }
  } else {
    fprintf(f, "\nNo plots: %s.\n", res->plots_note);
  }
  not_run(f, res);
  int unsteady = 0;
  for (int i = 0; i < res->n; i++)
    for (int k = 0; k < res->rows[i].npoints; k++)
      unsteady += res->rows[i].points[k].meets && !res->rows[i].points[k].steady;
  if (unsteady)
    fprintf(f, "\n**%d SLO-meeting points did not reach steady state** (`steady` false in "
               "search.csv: the workload is too short for them; run more requests).\n",
            unsteady);
}

char *kvsim_deploy_report_md(const kvsim_compare_t *c, const kvsim_deploy_result_t *res,
                             const char *command) {
  kvsim_deploy_space_t s;
  kvsim_err err = {0};
  if (kvsim_deploy_space_parse(c->search, c->where, &s, &err) < 0)
    return NULL; /* parsed before the run: cannot fail here */
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f)
    return NULL;
  char line[1024];
  decision(c, res, line, sizeof line);
  fputs("**", f);
  kvsim__md_text(f, line);
  fputs("**\n\n# Deployment search: ", f);
  kvsim__md_text(f, c->name);
  question_md(f, c, res, &s);
  fputs("## Cheapest deployment per GPU\n\n", f);
  cheapest_table(f, &s, res);
  if (s.disagg)
    kvsim__deploy_pays_md(f, c, res);
  if (res->winner >= 0) {
    fputs("\n## Launch the winner\n\n", f);
    if (res->winner_has_command && res->rows[res->winner].cfg.disagg)
      kvsim__deploy_launch_note(f, &res->rows[res->winner]);
    if (res->winner_has_command) {
      kvsim__md_block(f, res->winner_command);
    } else {
      kvsim__md_text(f, res->winner_command);
      fputs(".\n", f);
    }
  }
  fputs("\n## Pareto frontier: throughput per GPU against speed per user\n\n", f);
  frontier_table(f, res);
  plots_and_gaps_md(f, res);
  fputs("\n## What it rests on\n\nEvery point is one simulation at the GPU's nominal step times "
        "(the band's edges are not searched: run a winner through `kvsim compare` as a candidate "
        "for its ranges); latencies of the steady window (rule arrivals-10%); prices are the "
        "study's. `search.csv` has every simulated point, `search_frontier.csv` the frontier.\n\n"
        "Reproduce: ",
        f);
  kvsim__md_code(f, command ? command : "kvsim compare");
  fputc('\n', f);
  fclose(f);
  return text;
}

void kvsim_deploy_print(const kvsim_compare_t *c, const kvsim_deploy_result_t *res, const char *dir,
                        FILE *out) {
  char line[1024];
  decision(c, res, line, sizeof line);
  fprintf(out, "%s\n", line);
  for (int i = 0; i < res->n; i++) {
    const kvsim_deploy_row_t *r = &res->rows[i];
    bool cheapest = false;
    for (int g = 0; g < KVSIM_DEPLOY_MAX_VALUES; g++)
      cheapest |= res->cheapest[g] == i;
    if (!cheapest)
      continue;
    char d[200];
    kvsim__deploy_name(r, d, sizeof d);
    fprintf(out, "  cheapest on %-12s %s, KV %s, weights %s\n", r->cfg.gpu, d, r->serve.kv_cache_dtype,
            r->serve.quantization[0] ? r->serve.quantization : "as the checkpoint");
  }
  kvsim_deploy_space_t s;
  kvsim_err err = {0};
  if (kvsim_deploy_space_parse(c->search, c->where, &s, &err) == KVSIM_OK && s.disagg) {
    char pays[1024];
    kvsim__deploy_pays(c, res, pays, sizeof pays);
    fprintf(out, "%s\n", pays);
  }
  /* A disaggregated winner's two lines, each indented. */
  for (const char *l = res->winner >= 0 ? res->winner_command : NULL; l && *l;) {
    size_t n = strcspn(l, "\n");
    fprintf(out, "  %.*s%s\n", (int)n, l, res->winner_has_command ? "" : ".");
    l += n + (l[n] == '\n');
  }
  if (dir)
    fprintf(out, "-> %s/search.csv, %s/REPORT.md\n", dir, dir);
}
