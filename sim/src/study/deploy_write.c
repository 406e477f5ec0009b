/* The deployment search's outputs (kvsim/deploy.h): search.csv, the
 * frontier's table, REPORT.md and its figure, and the terminal's answer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/report.h"
#include "study/deploy_int.h"
#include "study/md.h"
#include "study/plot.h"

double kvsim__deploy_per_gpu(const kvsim_deploy_row_t *r, const kvsim_deploy_point_t *p) {
  return p->output_tokens_per_s / ((double)p->replicas * r->gpus_per_replica);
}

double kvsim__deploy_per_user(const kvsim_deploy_point_t *p) {
  return p->tpot_mean > 0 ? 1 / p->tpot_mean : NAN;
}

/* A CSV cell: quoted when it holds a comma, a quote or a line break. */
static void cell(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s == '\n' || *s == '\r' ? ' ' : *s, f);
  }
  fputc('"', f);
}

static void num(FILE *f, double v) {
  if (!isnan(v))
    fprintf(f, "%.6g", v);
}

/* Every SLO-meeting point, and which of them are on the frontier. */
typedef struct front {
  int n;
  int *row, *pt;
  double *x, *y;
  bool *on;
} front_t;

static int front_build(const kvsim_deploy_result_t *res, front_t *fr) {
  memset(fr, 0, sizeof *fr);
  int cap = res->n * KVSIM_DEPLOY_MAX_POINTS + 1;
  fr->row = kvsim__malloc((size_t)cap * sizeof *fr->row);
  fr->pt = kvsim__malloc((size_t)cap * sizeof *fr->pt);
  fr->x = kvsim__malloc((size_t)cap * sizeof *fr->x);
  fr->y = kvsim__malloc((size_t)cap * sizeof *fr->y);
  fr->on = kvsim__malloc((size_t)cap * sizeof *fr->on);
  if (!fr->row || !fr->pt || !fr->x || !fr->y || !fr->on)
    return KVSIM_ENOMEM;
  for (int i = 0; i < res->n; i++)
    for (int k = 0; k < res->rows[i].npoints; k++) {
      const kvsim_deploy_point_t *p = &res->rows[i].points[k];
      if (!p->meets)
        continue;
      fr->row[fr->n] = i;
      fr->pt[fr->n] = k;
      fr->x[fr->n] = kvsim__deploy_per_user(p);
      fr->y[fr->n] = kvsim__deploy_per_gpu(&res->rows[i], p);
      fr->n++;
    }
  kvsim_pareto_front(fr->x, fr->y, fr->n, fr->on);
  return KVSIM_OK;
}

static void front_fini(front_t *fr) {
  kvsim__free(fr->row);
  kvsim__free(fr->pt);
  kvsim__free(fr->x);
  kvsim__free(fr->y);
  kvsim__free(fr->on);
}

static bool on_front(const front_t *fr, int i, int k) {
  for (int j = 0; j < fr->n; j++)
    if (fr->row[j] == i && fr->pt[j] == k)
      return fr->on[j];
  return false;
}

void kvsim__deploy_layout(const kvsim_deploy_row_t *r, char *buf, size_t cap) {
  if (!r->cfg.disagg) {
    snprintf(buf, cap, "TP%d", r->serve.tp ? r->serve.tp : r->cfg.tp);
    return;
  }
  char unit[64];
  kvsim_deploy_unit_name(r->cfg.prefill_replicas, r->cfg.prefill_tp, r->cfg.decode_replicas,
                         r->cfg.decode_tp, unit, sizeof unit);
  snprintf(buf, cap, "(%s)", unit);
}

/* "h100-sxm TP4 fp8 KV fp8 weights seqs 256 mbt 8192" */
static void settings(const kvsim_deploy_row_t *r, char *buf, size_t cap) {
  const kvsim_serve_args_t *a = &r->serve;
  char layout[80];
  kvsim__deploy_layout(r, layout, sizeof layout);
  snprintf(buf, cap, "%s %s, KV %s, weights %s, max_num_seqs %lld, max_num_batched_tokens %lld",
           r->cfg.gpu, layout, a->kv_cache_dtype,
           a->quantization[0] ? a->quantization : "as the checkpoint", (long long)a->max_num_seqs,
           (long long)a->max_num_batched_tokens);
}

/* The columns added for disaggregated layouts, last: each side's
 * instances per unit and TP (empty for an aggregated row), and the
 * layout, which holds no comma (scripts read it as the last field). */
static void layout_cells(FILE *f, const kvsim_deploy_row_t *r) {
  if (r->cfg.disagg)
    fprintf(f, ",%d,%d,%d,%d,disaggregated\n", r->cfg.prefill_replicas, r->cfg.prefill_tp,
            r->cfg.decode_replicas, r->cfg.decode_tp);
  else
    fputs(",,,,,aggregated\n", f);
}

static void csv_row(FILE *f, const kvsim_deploy_row_t *r, const kvsim_deploy_point_t *p, bool pareto) {
  fputs(r->cfg.gpu, f);
  fputc(',', f);
  if (!r->cfg.disagg) /* a disaggregated row's TPs are its sides' columns */
    fprintf(f, "%d", r->serve.tp ? r->serve.tp : r->cfg.tp);
  fprintf(f, ",%lld,%lld,",
          (long long)(r->serve.max_num_seqs ? r->serve.max_num_seqs : r->cfg.max_num_seqs),
          (long long)(r->serve.max_num_batched_tokens ? r->serve.max_num_batched_tokens
                                                      : r->cfg.max_num_batched_tokens));
  cell(f, r->serve.kv_cache_dtype[0] ? r->serve.kv_cache_dtype : r->cfg.kv_cache_dtype);
  fputc(',', f);
  cell(f, r->serve.quantization[0] ? r->serve.quantization : r->cfg.quantization);
  fputc(',', f);
  if (p) {
    fprintf(f, "%d,%d,%s,", p->replicas, p->replicas * r->gpus_per_replica, p->meets ? "true" : "false");
    const double v[] = {p->ttft_p99, p->tpot_p99, p->e2e_p99, p->tpot_mean, p->output_tokens_per_s,
                        kvsim__deploy_per_gpu(r, p), kvsim__deploy_per_user(p)};
    for (size_t k = 0; k < sizeof v / sizeof *v; k++) {
      num(f, v[k]);
      fputc(',', f);
    }
    num(f, r->cost_per_gpu_hour * p->replicas * r->gpus_per_replica);
    fprintf(f, ",%s,%s,", pareto ? "true" : "false", p->steady ? "true" : "false");
    char st[200];
    snprintf(st, sizeof st, "%s%s%s", p->meets ? "meets" : "misses", p->meets ? "" : ": ", p->note);
    cell(f, st);
  } else {
    fputs(",,,,,,,,,,,,false,,", f);
    char st[700];
    if (r->rc == KVSIM_OK) /* a unit a smaller one covers */
      snprintf(st, sizeof st, "%s", r->stopped);
    else
      snprintf(st, sizeof st, "%s: %s", r->rc == KVSIM_ENOFIT ? "does not fit" : "failed",
               r->error);
    cell(f, st);
  }
  layout_cells(f, r);
}

/* A text in memory and the frontier it needs; NULL (nothing held) when
 * either cannot be made. */
static FILE *open_with_front(const kvsim_deploy_result_t *res, front_t *fr, char **text, size_t *len) {
  *text = NULL;
  memset(fr, 0, sizeof *fr); /* front_fini is safe when open_memstream fails first */
  FILE *f = open_memstream(text, len);
  if (!f || front_build(res, fr) < 0) {
    if (f)
      fclose(f);
    front_fini(fr);
    free(*text); /* open_memstream's buffer: libc's, not the hook's */
    return NULL;
  }
  return f;
}

char *kvsim_deploy_csv(const kvsim_deploy_result_t *res) {
  char *text = NULL;
  size_t len = 0;
  front_t fr;
  FILE *f = open_with_front(res, &fr, &text, &len);
  if (!f)
    return NULL;
  fputs(
      "gpu,tp,max_num_seqs,max_num_batched_tokens,kv_cache_dtype,quantization,replicas,gpus,meets,"
      "ttft_p99_s,tpot_p99_s,e2e_p99_s,tpot_mean_s,output_tokens_per_s,"
      "output_tokens_per_s_per_gpu,tokens_per_s_per_user,cost_per_hour,pareto,steady,status,"
      "prefill_replicas,prefill_tp,decode_replicas,decode_tp,layout\n",
      f);
  for (int i = 0; i < res->n; i++) {
    const kvsim_deploy_row_t *r = &res->rows[i];
    if (r->rc < 0 || (!r->npoints && r->stopped[0]))
      csv_row(f, r, NULL, false);
    for (int k = 0; k < r->npoints; k++)
      csv_row(f, r, &r->points[k], on_front(&fr, i, k));
  }
  front_fini(&fr);
  fclose(f);
  return text;
}

/* The frontier, by tokens/s per user (the plot's line). */
static char *frontier_csv(const kvsim_deploy_result_t *res) {
  char *text = NULL;
  size_t len = 0;
  front_t fr;
  FILE *f = open_with_front(res, &fr, &text, &len);
  if (!f)
    return NULL;
  fputs("tokens_per_s_per_user,output_tokens_per_s_per_gpu,gpu,tp,replicas,label\n", f);
  for (;;) { /* selection by x: the frontier is short */
    int b = -1;
    for (int j = 0; j < fr.n; j++)
      if (fr.on[j] && (b < 0 || fr.x[j] < fr.x[b] || (fr.x[j] == fr.x[b] && fr.y[j] > fr.y[b])))
        b = j;
    if (b < 0)
      break;
    fr.on[b] = false;
    const kvsim_deploy_row_t *r = &res->rows[fr.row[b]];
    const kvsim_deploy_point_t *p = &r->points[fr.pt[b]];
    char label[300], s[240];
    settings(r, s, sizeof s);
    snprintf(label, sizeof label, "%d x %s", p->replicas, s);
    fprintf(f, "%.6g,%.6g,%s,", fr.x[b], fr.y[b], r->cfg.gpu);
    if (!r->cfg.disagg)
      fprintf(f, "%d", r->serve.tp);
    fprintf(f, ",%d,", p->replicas);
    cell(f, label);
    fputc('\n', f);
  }
  front_fini(&fr);
  fclose(f);
  return text;
}

/* Writes the three files (each atomically), then the figure: all of them
 * or, on a failure or a stop signal, none, and no folder this made. */
int kvsim__deploy_write(const kvsim_compare_t *c, const kvsim_compare_opts_t *opts,
                        kvsim_deploy_result_t *res, kvsim_err *err) {
  static const char *const names[] = {"search.csv", "search_frontier.csv", "REPORT.md"};
  char path[3][4400], png[4400];
  int slot[3] = {-1, -1, -1};
  snprintf(png, sizeof png, "%s/frontier.png", opts->out);
  int png_slot = kvsim_report_track(png); /* drawn below: removed too if a signal stops it */
  kvsim_new_dirs_t made;
  kvsim_report_new_dirs(opts->out, &made);
  int rc = kvsim_report_mkdirs(opts->out, err);
  if (rc == KVSIM_OK)
    kvsim__plots_clear(opts->out);
  snprintf(res->plots_note, sizeof res->plots_note, "not drawn yet");
  for (int pass = 0; pass < 2 && rc == KVSIM_OK; pass++) {
    for (int k = pass ? 2 : 0; k < 3 && rc == KVSIM_OK; k++) {
      char *text = k == 0 ? kvsim_deploy_csv(res) : k == 1 ? frontier_csv(res)
                                                           : kvsim_deploy_report_md(c, res, opts->command);
      snprintf(path[k], sizeof path[k], "%s/%s", opts->out, names[k]);
      rc = text ? kvsim_report_write_atomic(path[k], text, strlen(text), err)
                : kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path[k]);
      if (rc == KVSIM_OK && slot[k] < 0)
        slot[k] = kvsim_report_track(path[k]); /* a signal before the end removes it */
      free(text);
    }
    if (pass == 1 || rc < 0)
      break;
    /* The figure, drawn once the tables are there; REPORT.md again to
     * link it or say why not. */
    char why[512] = "";
    res->plots[0] = '\0';
    if (!kvsim__plots_available(why, sizeof why)) {
      snprintf(res->plots_note, sizeof res->plots_note, "%s", why);
    } else {
      char name[200];
      snprintf(name, sizeof name, "KVSIM_PLOT_NAME=%s", c->name);
      const char *env[] = {name, NULL};
      if (!kvsim__plots_draw("plot_search.sh", opts->out, env, why, sizeof why)) {
        kvsim__plots_clear(opts->out);
        snprintf(res->plots_note, sizeof res->plots_note, "the plot script failed: %s", why);
      } else if (kvsim__plots_list(opts->out, res->plots, sizeof res->plots) == 0) {
        snprintf(res->plots_note, sizeof res->plots_note, "no configuration met the SLO: nothing to draw");
      } else {
        res->plots_note[0] = '\0';
      }
    }
  }
  for (int k = 0; k < 3; k++) {
    if (rc < 0 && slot[k] >= 0)
      remove(path[k]);
    kvsim_report_untrack(slot[k]);
  }
  kvsim_report_untrack(png_slot);
  if (rc < 0) {
    kvsim__plots_clear(opts->out);
    kvsim_report_new_dirs_undo(&made);
  } else {
    kvsim_report_new_dirs_keep(&made);
  }
  return rc;
}
