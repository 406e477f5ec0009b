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

static void money(char *buf, size_t cap, double v) {
  if (isnan(v))
    snprintf(buf, cap, "-");
  else
    snprintf(buf, cap, "$%.2f/h", v);
}

/* "2 x h100-sxm TP4 (8 GPUs, $20.00/h)" */
static void deployment(const kvsim_deploy_row_t *r, char *buf, size_t cap) {
  const kvsim_deploy_point_t *p = &r->points[r->best];
  char m[32];
  money(m, sizeof m, r->cost_per_hour);
  snprintf(buf, cap, "%d x %s TP%d (%d GPUs, %s)", p->replicas, r->cfg.gpu, r->serve.tp,
           p->replicas * r->gpus_per_replica, m);
}

/* Margins this close are a tie: a 3 % move of a p99, as five times more
 * requests gave the 70B study's two 4-GPU H100 layouts, turns them. */
#define MARGIN_TIE 0.05

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
  deployment(w, d, sizeof d);
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
    deployment(r, d2, sizeof d2);
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
static void no_deployment(FILE *f, const kvsim_deploy_result_t *res, const char *gpu) {
  int nofit = 0, stopped = 0, failed = 0;
  const char *example = "";
  for (int i = 0; i < res->n; i++) {
    const kvsim_deploy_row_t *r = &res->rows[i];
    if (strcmp(r->cfg.gpu, gpu))
      continue;
    nofit += r->rc == KVSIM_ENOFIT;
    failed += r->rc < 0 && r->rc != KVSIM_ENOFIT;
    if (r->rc == KVSIM_OK && r->stopped[0]) {
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
      no_deployment(f, res, s->gpus[g]);
      fputs(" | | | | | | | | | |\n", f);
      continue;
    }
    const kvsim_deploy_row_t *r = &res->rows[i];
    const kvsim_deploy_point_t *p = &r->points[r->best];
    char m[32] = "-";
    if (!isnan(r->cost_per_hour))
      snprintf(m, sizeof m, "%.2f", r->cost_per_hour);
    fprintf(f, "%d x TP%d = %d GPUs | %s | %s | %lld | %lld | %.3g | %.3g | %.0f | %.1f | %s |\n",
            p->replicas, r->serve.tp, p->replicas * r->gpus_per_replica, r->serve.kv_cache_dtype,
            r->serve.quantization[0] ? r->serve.quantization : "checkpoint",
            (long long)r->serve.max_num_seqs, (long long)r->serve.max_num_batched_tokens, p->ttft_p99,
            p->tpot_p99, kvsim__deploy_per_gpu(r, p), kvsim__deploy_per_user(p), m);
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
    fprintf(f, "| %.1f | %.0f | %d x %s TP%d | %s | %s | %lld | %lld |\n", x[b], y[b], p->replicas,
            r->cfg.gpu, r->serve.tp, r->serve.kv_cache_dtype,
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
  if (!res->no_fit && !res->failed)
    return;
  fprintf(f, "\n## Not simulated\n\n%d configurations do not fit (the engine's start-up error), %d "
             "failed:\n\n",
          res->no_fit, res->failed);
  for (int i = 0; i < res->n; i++) {
    const kvsim_deploy_row_t *r = &res->rows[i];
    if (r->rc == KVSIM_OK)
      continue;
    fprintf(f, "- %s TP%d, KV %s, weights %s: ", r->cfg.gpu, r->cfg.tp,
            r->cfg.kv_cache_dtype[0] ? r->cfg.kv_cache_dtype : "(scenario's)",
            r->cfg.quantization[0] ? r->cfg.quantization : "(scenario's)");
    kvsim__md_text(f, r->error);
    fputc('\n', f);
  }
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
  fprintf(f, "\n\n## Question\n\nThe cheapest deployment per GPU that serves %g req/s within", c->target_rate);
  if (c->slo_ttft_p99_s > 0)
    fprintf(f, " p99 TTFT <= %g s", c->slo_ttft_p99_s);
  if (c->slo_tpot_p99_s > 0)
    fprintf(f, " p99 TPOT <= %g s", c->slo_tpot_p99_s);
  if (c->slo_e2e_p99_s > 0)
    fprintf(f, " p99 E2E <= %g s", c->slo_e2e_p99_s);
  fputs(" (", f);
  kvsim__md_text(f, c->description[0] ? c->description : c->scenario_where);
  fprintf(f, "). Searched: %d configurations (GPU x TP x quantization x KV dtype x max_num_seqs x "
             "max_num_batched_tokens), each with the fewest replicas (1, 2, 4, ... up to %d, then "
             "bisected) meeting the SLO; %d simulations.\n\n",
          res->n, s.max_replicas, res->simulations);
  fputs("## Cheapest deployment per GPU\n\n", f);
  cheapest_table(f, &s, res);
  if (res->winner >= 0) {
    fputs("\n## Launch the winner\n\n", f);
    if (res->winner_has_command) {
      kvsim__md_block(f, res->winner_command);
    } else {
      kvsim__md_text(f, res->winner_command);
      fputs(".\n", f);
    }
  }
  fputs("\n## Pareto frontier: throughput per GPU against speed per user\n\n", f);
  frontier_table(f, res);
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
    deployment(r, d, sizeof d);
    fprintf(out, "  cheapest on %-12s %s, KV %s, weights %s\n", r->cfg.gpu, d, r->serve.kv_cache_dtype,
            r->serve.quantization[0] ? r->serve.quantization : "as the checkpoint");
  }
  if (res->winner >= 0)
    fprintf(out, "  %s%s\n", res->winner_command, res->winner_has_command ? "" : ".");
  if (dir)
    fprintf(out, "-> %s/search.csv, %s/REPORT.md\n", dir, dir);
}
