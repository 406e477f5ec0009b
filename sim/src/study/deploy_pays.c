/* Aggregated or disaggregated (kvsim/deploy.h): a search with
 * disaggregated layouts answers whether splitting prefill and decode pays
 * for the study's workload, and by how much: the cheapest deployment of
 * each kind that meets the SLO, side by side. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "study/deploy_int.h"
#include "study/md.h"

static void money(char *buf, size_t cap, double v) {
  if (isnan(v))
    snprintf(buf, cap, "-");
  else
    snprintf(buf, cap, "$%.2f/h", v);
}

void kvsim__deploy_name(const kvsim_deploy_row_t *r, char *buf, size_t cap) {
  const kvsim_deploy_point_t *p = &r->points[r->best];
  char m[32], layout[80];
  money(m, sizeof m, r->cost_per_hour);
  kvsim__deploy_layout(r, layout, sizeof layout);
  if (r->cfg.disagg)
    snprintf(buf, cap, "%d x %s on %s (%d GPUs, %s)", p->replicas, layout, r->cfg.gpu,
             p->replicas * r->gpus_per_replica, m);
  else
    snprintf(buf, cap, "%d x %s %s (%d GPUs, %s)", p->replicas, r->cfg.gpu, layout,
             p->replicas * r->gpus_per_replica, m);
}

static int gpus(const kvsim_deploy_row_t *r) {
  return r->points[r->best].replicas * r->gpus_per_replica;
}

void kvsim__deploy_pays(const kvsim_compare_t *c, const kvsim_deploy_result_t *res, char *buf,
                        size_t cap) {
  int a = res->cheapest_aggregated, d = res->cheapest_disaggregated;
  char na[200], nd[200];
  if (a >= 0)
    kvsim__deploy_name(&res->rows[a], na, sizeof na);
  if (d >= 0)
    kvsim__deploy_name(&res->rows[d], nd, sizeof nd);
  if (a < 0 && d < 0) {
    snprintf(buf, cap,
             "Neither an aggregated nor a disaggregated deployment of the search meets the "
             "SLO at %g req/s.",
             c->target_rate);
    return;
  }
  if (d < 0) {
    snprintf(buf, cap,
             "Disaggregation does not pay here: no disaggregated layout of the search "
             "meets the SLO at %g req/s; the cheapest aggregated deployment is %s.",
             c->target_rate, na);
    return;
  }
  if (a < 0) {
    snprintf(buf, cap,
             "Disaggregation pays here: no aggregated configuration of the search meets "
             "the SLO at %g req/s; the cheapest disaggregated deployment is %s.",
             c->target_rate, nd);
    return;
  }
  const kvsim_deploy_row_t *ra = &res->rows[a], *rd = &res->rows[d];
  /* By cost when both have a price, else by GPUs (kvsim_deploy_cheaper's
   * order; a tie on both goes to the simpler, aggregated, deployment). */
  bool priced = !isnan(ra->cost_per_hour) && !isnan(rd->cost_per_hour);
  double va = priced ? ra->cost_per_hour : gpus(ra), vd = priced ? rd->cost_per_hour : gpus(rd);
  const char *more = priced ? "more per hour than" : "more GPUs than";
  if (vd < va)
    snprintf(buf, cap, "Disaggregation pays here: %s, %.0f %% %s the cheapest aggregated, %s.", nd,
             100 * (va - vd) / va, priced ? "less per hour than" : "fewer GPUs than", na);
  else if (vd > va)
    snprintf(buf, cap,
             "Disaggregation does not pay here: the cheapest disaggregated deployment, %s, "
             "costs %.0f %% %s the cheapest aggregated, %s.",
             nd, 100 * (vd - va) / va, more, na);
  else /* one price: kvsim_deploy_cheaper's next key, the margin to the SLO, ranks them */
    snprintf(buf, cap,
             "Disaggregation neither saves nor costs here: %s and the cheapest aggregated, "
             "%s, cost the same; the %s one ranks first on its margin to the SLO (%.0f %% "
             "against %.0f %%%s).",
             nd, na, kvsim_deploy_cheaper(rd, ra) ? "disaggregated" : "aggregated",
             100 * fmax(rd->margin, ra->margin), 100 * fmin(rd->margin, ra->margin),
             fabs(rd->margin - ra->margin) < KVSIM__DEPLOY_MARGIN_TIE
                 ? ": within 5 points, a tie a longer run can turn"
                 : "");
}

static void row(FILE *f, const char *kind, const kvsim_deploy_result_t *res, int i) {
  fprintf(f, "| %s | ", kind);
  if (i < 0) {
    fputs("none meets the SLO | | | | | | | |\n", f);
    return;
  }
  const kvsim_deploy_row_t *r = &res->rows[i];
  const kvsim_deploy_point_t *p = &r->points[r->best];
  char layout[80], m[32] = "-";
  kvsim__deploy_layout(r, layout, sizeof layout);
  if (!isnan(r->cost_per_hour))
    snprintf(m, sizeof m, "%.2f", r->cost_per_hour);
  fprintf(f, "%d x %s %s | %d | %s | %.3g | %.3g | %.3g | %.0f | %.0f %% |\n", p->replicas,
          r->cfg.gpu, layout, gpus(r), m, p->ttft_p99, p->tpot_p99, p->e2e_p99,
          kvsim__deploy_per_gpu(r, p), 100 * r->margin);
}

void kvsim__deploy_pays_md(FILE *f, const kvsim_compare_t *c, const kvsim_deploy_result_t *res) {
  char line[1024];
  kvsim__deploy_pays(c, res, line, sizeof line);
  fputs("\n## Aggregated or disaggregated\n\n", f);
  kvsim__md_text(f, line);
  fputs("\n\n| kind | cheapest deployment | GPUs | $/h | p99 TTFT s | p99 TPOT s | p99 E2E s "
        "| output tok/s/GPU | margin to the SLO |\n|---|---|---|---|---|---|---|---|---|\n",
        f);
  row(f, "aggregated", res, res->cheapest_aggregated);
  row(f, "disaggregated", res, res->cheapest_disaggregated);
  fputs("\nA disaggregated unit is its prefill and decode instances (P and D, each side's TP); the "
        "replicas are whole units, its GPUs both sides'. The margin is min over the targets of "
        "1 - p99 / target.\n",
        f);
}

void kvsim__deploy_launch_note(FILE *f, const kvsim_deploy_row_t *w) {
  const int n = w->points[w->best].replicas, np = n * w->cfg.prefill_replicas,
            nd = n * w->cfg.decode_replicas;
  fprintf(f,
          "%d unit%s: the prefill line on each of the %d prefill instance%s, the decode line on "
          "each of the %d decode instance%s, behind a proxy that sends each request to a prefill "
          "instance and then to a decode instance (vLLM: its toy_proxy_server.py or llm-d; "
          "SGLang: sglang_router with --pd-disaggregation).\n\n",
          n, n == 1 ? "" : "s", np, np == 1 ? "" : "s", nd, nd == 1 ? "" : "s");
}
