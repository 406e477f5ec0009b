/* The leave-one-group-out table as text (kvsim validate --all). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kvsim/fidelity.h"

static void cell(FILE *f, double v, bool miss) {
  if (isnan(v))
    fprintf(f, " %8s", "-");
  else
    fprintf(f, " %7.1f%%%s", v, miss ? "!" : " ");
}

static void latency_rows(FILE *f, const kvsim_fid_logo_t *l) {
  fprintf(f, "%-13s %-15s %-5s %-11s %5s | %8s %8s %8s  | %8s %8s %8s   %s\n", "gpu", "model", "prec", "source",
          "rows", "TTFT", "TPOT", "E2E", "TTFT", "TPOT", "E2E", "held out from");
  fprintf(f, "%-13s %-15s %-5s %-11s %5s | %27s | %27s\n", "", "", "", "", "", "held out", "shipped fit");
  for (int i = 0; i < l->ngroups; i++) {
    const kvsim_fid_logo_group_t *g = &l->groups[i];
    if (!isnan(g->kv_err) || g->n == 0)
      continue;
    double target[3];
    bool miss[3];
    kvsim_fidelity_logo_targets(g, target, miss);
    fprintf(f, "%-13s %-15.15s %-5s %-11s %5d |", g->gpu, g->model, g->precision, g->source, g->n);
    for (int k = 0; k < 3; k++)
      cell(f, g->held[k], miss[k]);
    fprintf(f, " |");
    for (int k = 0; k < 3; k++)
      cell(f, g->shipped[k], false);
    fprintf(f, " %s %s\n", g->shipped_in_sample ? "*" : " ", g->held_from);
  }
}

char *kvsim_fidelity_logo_to_text(const kvsim_fid_logo_t *l) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return NULL;
  fprintf(f, "leave-one-GPU-out: median |error| per group of the mean TTFT, TPOT and E2E, with each GPU's own\n"
             "kernel tables and the host term fitted on the other GPUs' dense rows (held out), and with the\n"
             "host term fitted on every dense row (shipped; * = in-sample for the host term alone).\n"
             "Targets: dense TTFT <= 15 %%, TPOT <= 7 %%; a per-request run TTFT <= 10 %%, TPOT and E2E <= 5 %%;\n"
             "MoE TTFT <= 20 %%, TPOT <= 12 %%; '!' = a held-out miss.\n\n");
  latency_rows(f, l);
  fprintf(f, "\nmemory side (start-up logs; no fitted coefficient, held out = in-sample): median |error| of the\n"
             "KV budget per GPU and model\n");
  for (int i = 0; i < l->ngroups; i++) {
    const kvsim_fid_logo_group_t *g = &l->groups[i];
    if (!isnan(g->kv_err))
      fprintf(f, "  %-13s %-28.28s kv %-6s %3d row%s %6.1f%%\n", g->gpu, g->model, g->precision, g->n,
              g->n == 1 ? " " : "s", g->kv_err);
  }
  fprintf(f,
          "\nhost term fitted on every dense row (in-sample; what perf.h ships): vLLM synchronous (< 0.14) %.0f us + "
          "%.1f us per request, asynchronous %.0f us + %.1f us per request, SGLang %.0f us + %.1f us per request; "
          "benchmark client %.1f ms\n",
          l->all.host_us[0], l->all.per_seq_us[0], l->all.host_us[1], l->all.per_seq_us[1], l->all.host_us[2],
          l->all.per_seq_us[2], l->all.frontend_us / 1e3);
  fprintf(f, "band per status (90th percentile of the held-out |error|, TTFT / TPOT, rows):\n");
  for (int b = 0; b < KVSIM_FID_NBAND; b++)
    fprintf(f, "  %-17s %5.1f%% / %5.1f%%  (%d rows)\n", kvsim_fidelity_band_name(b), 100 * l->band[b][0],
            100 * l->band[b][1], l->band_rows[b]);
  fprintf(f, "\nexcluded rows: %d\n", l->nexcl);
  for (int i = 0; i < l->nexcl; i++)
    fprintf(f, "  %s: %s\n", l->excl[i].id, l->excl[i].reason);
  fprintf(f, "%d held-out fits\n", l->fits);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
