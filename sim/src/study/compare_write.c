/* kvsim compare: the candidates in the pool, the one-sentence answer, and
 * the tables (compare.csv, compare_sweep.csv) and REPORT.md it writes. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "kvsim/report.h"
#include "kvsim/study.h"
#include "study/compare_int.h"
#include "report/tmpfiles.h"
#include "study/md.h"
#include "study/plot.h"
#include "study/run.h"

/* A figure in a table: 6 significant digits, empty when not known, inf
 * for a range's top that no run bounds (an edge run finished nothing). */
static void num(FILE *f, double v, bool last) {
  if (isfinite(v))
    fprintf(f, "%.6g", v);
  else if (isinf(v) && v > 0)
    fputs("inf", f);
  fputc(last ? '\n' : ',', f);
}

static void field(FILE *f, const char *v, bool last) {
  if (strpbrk(v, ",\"\n")) {
    fputc('"', f);
    for (const char *p = v; *p; p++) {
      if (*p == '"')
        fputc('"', f);
      fputc(*p == '\n' ? ' ' : *p, f);
    }
    fputc('"', f);
  } else {
    fputs(v, f);
  }
  fputc(last ? '\n' : ',', f);
}

/* Closes a memory stream; its text is only final after fclose. */
static char *finish(FILE *f, char **text) {
  bool bad = ferror(f) != 0;
  bad |= fclose(f) != 0;
  if (bad) {
    free(*text);
    return NULL;
  }
  return *text;
}

char *kvsim_compare_csv(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f)
    return NULL;
  fputs(
      "label,gpu,model,tp,pp,gpus_per_replica,gpu_memory_utilization,kv_cache_dtype,fits,"
      "kv_blocks,kv_tokens,max_concurrency,goodput_rps,goodput_lo,goodput_hi,goodput_lower_bound,"
      "target_rate,replicas,replicas_lo,replicas_hi,gpus,ttft_p99_s,ttft_p99_lo,ttft_p99_hi,"
      "tpot_p99_s,tpot_p99_lo,tpot_p99_hi,e2e_p99_s,kv_usage_peak,preemptions,output_tokens_per_s,"
      "cost_per_gpu_hour,cost_source,cost_per_hour,cost_per_million_output_tokens,"
      "goodput_per_dollar,calibration,band_ttft_rel,band_tpot_rel,simulations,error,"
      "e2e_p99_lo,e2e_p99_hi,unloaded_rate,unloaded_ttft_p99_s,unloaded_tpot_p99_s,"
      "unloaded_e2e_p99_s,feasible,feasibility,steady\n",
      f);
  for (int i = 0; i < n; i++) {
    const kvsim_compare_row_t *r = &rows[i];
    field(f, c->cand[i].label, false);
    field(f, r->gpu, false);
    field(f, r->model, false);
    fprintf(f, "%d,%d,%d,", r->tp, r->pp, r->gpus_per_replica);
    num(f, r->gpu_memory_utilization, false);
    field(f, r->kv_cache_dtype, false);
    fputs(r->rc == KVSIM_OK ? "true," : r->rc == KVSIM_ENOFIT ? "false," : ",", f);
    fprintf(f, "%lld,%lld,", (long long)r->kv_blocks, (long long)r->kv_tokens);
    const double a[] = {r->max_concurrency, r->goodput, r->goodput_range[0], r->goodput_range[1],
                        r->rc == KVSIM_OK ? (double)r->goodput_lower_bound[0] : NAN,
                        c->target_rate, r->replicas, r->replicas_range[0], r->replicas_range[1],
                        r->replicas * r->gpus_per_replica, r->ttft_p99, r->ttft_p99_range[0],
                        r->ttft_p99_range[1], r->tpot_p99, r->tpot_p99_range[0],
                        r->tpot_p99_range[1], r->e2e_p99, r->kv_peak,
                        r->rc == KVSIM_OK && !isnan(r->replicas) ? (double)r->preemptions : NAN,
                        r->output_tokens_per_s, r->cost_per_gpu_hour};
    for (size_t k = 0; k < sizeof a / sizeof *a; k++)
      num(f, a[k], false);
    field(f, r->cost_source, false);
    num(f, r->cost_per_hour, false);
    num(f, r->cost_per_mtok, false);
    num(f, r->goodput_per_dollar, false);
    field(f, r->gpu[0] ? kvsim_cal_status_name(r->cal_status) : "", false);
    num(f, r->gpu[0] ? r->band_ttft_rel : NAN, false);
    num(f, r->gpu[0] ? r->band_tpot_rel : NAN, false);
    fprintf(f, "%d,", r->simulations);
    field(f, r->error, false);
    /* Columns added later go last: a script reading by position keeps its
     * columns. */
    num(f, r->e2e_p99_range[0], false);
    num(f, r->e2e_p99_range[1], false);
    const double u[] = {r->unloaded_rate, r->unloaded_ttft_p99, r->unloaded_tpot_p99,
                        r->unloaded_e2e_p99};
    for (size_t k = 0; k < sizeof u / sizeof *u; k++)
      num(f, u[k], false);
    fputs(r->rc != KVSIM_OK || isnan(r->unloaded_rate) ? "," : r->infeasible ? "false," : "true,", f);
    field(f, r->feasibility, false);
    fputs(!r->ran_target ? "\n" : r->steady ? "true\n" : "false\n", f);
  }
  return finish(f, &text);
}

char *kvsim_compare_sweep_csv(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f)
    return NULL;
  fputs("label,rate,ttft_p99_s,tpot_p99_s,kv_usage_peak,ttft_p99_lo,ttft_p99_hi,tpot_p99_lo,"
        "tpot_p99_hi\n",
        f);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < rows[i].nsweep; k++) {
      field(f, c->cand[i].label, false);
      num(f, rows[i].sweep_rate[k], false);
      num(f, rows[i].sweep_ttft_p99[k], false);
      num(f, rows[i].sweep_tpot_p99[k], false);
      num(f, rows[i].sweep_kv_peak[k], false);
      /* The band's range at that rate (the plots' error bars), last. */
      num(f, rows[i].sweep_ttft_range[k][0], false);
      num(f, rows[i].sweep_ttft_range[k][1], false);
      num(f, rows[i].sweep_tpot_range[k][0], false);
      num(f, rows[i].sweep_tpot_range[k][1], true);
    }
  return finish(f, &text);
}

static const char *ge(bool lower_bound) { return lower_bound ? ">= " : ""; }

/* A figure or a range's end on the lines: "%.3g"; "none" where that edge
 * has no figure (no rate or replica count tried meets there), "inf" for a
 * top no run bounds (a run left requests unfinished), as REPORT.md's
 * table says them. Returned by value: the array lives to the end of the
 * call it is an argument of. */
typedef struct fig {
  char s[32];
} fig_t;
static fig_t fig(double v) {
  fig_t f;
  if (isnan(v))
    snprintf(f.s, sizeof f.s, "none");
  else if (isinf(v))
    snprintf(f.s, sizeof f.s, "inf"); /* only a top is ever infinite (+inf) */
  else
    snprintf(f.s, sizeof f.s, "%.3g", v);
  return f;
}

/* Requests finished at the target (a TTFT) but none had a second token:
 * no TPOT at all, which no request missed (summary.json's slo says met,
 * with a reason), not a TPOT of 0 s nor one that misses. */
static bool no_tpot(const kvsim_compare_row_t *r) {
  return isfinite(r->ttft_p99) && isnan(r->tpot_p99) && isnan(r->tpot_p99_range[1]);
}

/* ", E2E 1.23 s [lo, hi]" when the study has an E2E target (the figure it
 * is judged by), else nothing. */
static void e2e_text(const kvsim_compare_t *c, const kvsim_compare_row_t *r, bool ranged, char *buf,
                     size_t cap) {
  buf[0] = '\0';
  if (!(c->slo_e2e_p99_s > 0))
    return;
  if (ranged)
    snprintf(buf, cap, ", E2E %.3g s [%s, %s]", r->e2e_p99, fig(r->e2e_p99_range[0]).s,
             fig(r->e2e_p99_range[1]).s);
  else
    snprintf(buf, cap, ", E2E %.3g s", r->e2e_p99);
}

/* "$1.60/h"; for Markdown escaped, as GitHub pairs two '$' of one line
 * into inline maths. */
static const char *price(double per_hour, bool md, char *buf, size_t cap) {
  char s[64];
  snprintf(s, sizeof s, "$%.2f/h", per_hour);
  if (md)
    kvsim__md_escape(buf, cap, s);
  else
    snprintf(buf, cap, "%s", s);
  return buf;
}

/* "TPOT 0.0123 s [lo, hi]" (ranged) or "TPOT 0.0123 s"; "no TPOT" when no
 * request had a second token. */
static void tpot_text(const kvsim_compare_row_t *r, bool ranged, char *buf, size_t cap) {
  if (no_tpot(r))
    snprintf(buf, cap, "no TPOT (no request had a second token)");
  else if (ranged)
    snprintf(buf, cap, "TPOT %.3g s [%s, %s]", r->tpot_p99, fig(r->tpot_p99_range[0]).s,
             fig(r->tpot_p99_range[1]).s);
  else
    snprintf(buf, cap, "TPOT %.3g s", r->tpot_p99);
}

/* Candidate i's label, escaped into tmp for Markdown when md. */
static const char *label(const kvsim_compare_t *c, int i, bool md, char *tmp, size_t cap) {
  if (!md)
    return c->cand[i].label;
  kvsim__md_escape(tmp, cap, c->cand[i].label);
  return tmp;
}

/* The candidate the answer names, or -1 when none meets the target
 * (compare_rank.c). */
static int best_row(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n) {
  return kvsim__compare_best(c, rows, n, KVSIM__AT_NOMINAL, NULL, NULL);
}

void kvsim_compare_answer(const kvsim_compare_t *c, const kvsim_compare_row_t *rows, int n, bool md,
                          char *buf, size_t cap) {
  char tmp[2 * sizeof c->cand[0].label], cost[128];
#define LABEL(i) label(c, i, md, tmp, sizeof tmp)
#define PRICE(v) price(v, md, cost, sizeof cost)
  int best = best_row(c, rows, n);
  size_t at = 0;
#define PUT(...) (at += (size_t)snprintf(buf + at, at < cap ? cap - at : 0, __VA_ARGS__), at = at < cap ? at : cap)
  buf[0] = '\0';
  if (best < 0) {
    PUT("No candidate meets %g req/s within the SLO", c->target_rate);
  } else {
    const kvsim_compare_row_t *r = &rows[best];
    char tpot[96], e2e[96];
    tpot_text(r, true, tpot, sizeof tpot);
    e2e_text(c, r, true, e2e, sizeof e2e);
    PUT("%.0f x (%s) meets %g req/s at p99 TTFT %.3g s [%s, %s], %s%s on %.0f GPU%s", r->replicas,
        LABEL(best), c->target_rate, r->ttft_p99, fig(r->ttft_p99_range[0]).s,
        fig(r->ttft_p99_range[1]).s, tpot, e2e, r->replicas * r->gpus_per_replica,
        r->replicas * r->gpus_per_replica == 1 ? "" : "s");
    if (isfinite(r->cost_per_hour))
      PUT(" for %s", PRICE(r->cost_per_hour));
    if (!kvsim__compare_robust(c, r))
      PUT(" (but misses the SLO at the band's slow edge)");
  }
  for (int i = 0; i < n; i++) {
    const kvsim_compare_row_t *r = &rows[i];
    if (i == best)
      continue;
    if (r->rc == KVSIM_ENOFIT)
      PUT("; %s does not fit", LABEL(i));
    else if (r->rc < 0)
      PUT("; %s failed", LABEL(i));
    else if (r->infeasible) {
      char line[2 * sizeof r->feasibility];
      if (md)
        kvsim__md_escape(line, sizeof line, r->feasibility);
      PUT("; %s %s", LABEL(i), md ? line : r->feasibility);
    } else if (isnan(r->goodput))
      PUT("; %s meets the SLO at no rate tried", LABEL(i));
    else if (kvsim__compare_meets(r)) {
      PUT("; %s reaches %s%.3g req/s [%s%s, %s%s] per deployment (%.0f x for the target", LABEL(i),
          ge(r->goodput_lower_bound[0]), r->goodput, ge(r->goodput_lower_bound[1]),
          fig(r->goodput_range[0]).s, ge(r->goodput_lower_bound[2]), fig(r->goodput_range[1]).s,
          r->replicas);
      if (isfinite(r->cost_per_hour))
        PUT(", %s", PRICE(r->cost_per_hour));
      PUT(kvsim__compare_robust(c, r) ? ")" : "; misses the SLO at the band's slow edge)");
    } else {
      PUT("; %s reaches %s%.3g req/s [%s%s, %s%s]", LABEL(i), ge(r->goodput_lower_bound[0]),
          r->goodput, ge(r->goodput_lower_bound[1]), fig(r->goodput_range[0]).s,
          ge(r->goodput_lower_bound[2]), fig(r->goodput_range[1]).s);
    }
  }
  PUT(".");
#undef LABEL
#undef PRICE
#undef PUT
}

/* What the lines' "none" and "inf" mean, once each, when they show one:
 * a goodput or its range's end (every candidate that ran), and the
 * latency ranges of the candidate the answer names. */
static void end_notes(const kvsim_compare_t *c, const kvsim_compare_result_t *res, FILE *out) {
  bool none = false, inf = false;
  for (int i = 0; i < res->n; i++) {
    const kvsim_compare_row_t *r = &res->rows[i];
    none |= r->rc == KVSIM_OK &&
            (isnan(r->goodput) || isnan(r->goodput_range[0]) || isnan(r->goodput_range[1]));
  }
  int best = best_row(c, res->rows, res->n);
  if (best >= 0) {
    const kvsim_compare_row_t *r = &res->rows[best];
    inf = isinf(r->ttft_p99_range[1]) || (!no_tpot(r) && isinf(r->tpot_p99_range[1])) ||
          (c->slo_e2e_p99_s > 0 && isinf(r->e2e_p99_range[1]));
  }
  if (none)
    fputs("  none: no rate tried meets the SLO (in brackets: at that edge of the band)\n", out);
  if (inf)
    fputs("  inf: a run at the target left requests unfinished (an output.max_time_s cut) or "
          "finished none, so no finite figure bounds that top; a target checked against it is "
          "missed\n",
          out);
}

void kvsim_compare_print(const kvsim_compare_t *c, const kvsim_compare_result_t *res, const char *dir,
                         FILE *out) {
  char decision[sizeof res->answer];
  kvsim_compare_decision(c, res->rows, res->n, false, decision, sizeof decision);
  fprintf(out, "%s\n%s\n", decision, res->answer);
  for (int i = 0; i < res->n; i++) {
    const kvsim_compare_row_t *r = &res->rows[i];
    if (r->rc < 0) {
      fprintf(out, "  %-28s %s: %s\n", c->cand[i].label, r->rc == KVSIM_ENOFIT ? "does not fit" : "failed",
             r->error);
      continue;
    }
    if (r->infeasible) {
      fprintf(out, "  %-28s %s (%s)\n", c->cand[i].label, r->feasibility,
              kvsim_cal_status_name(r->cal_status));
      continue;
    }
    fprintf(out, "  %-28s goodput %s%s req/s [%s%s, %s%s]; ", c->cand[i].label,
            ge(r->goodput_lower_bound[0]), fig(r->goodput).s, ge(r->goodput_lower_bound[1]),
            fig(r->goodput_range[0]).s, ge(r->goodput_lower_bound[2]), fig(r->goodput_range[1]).s);
    if (isnan(r->replicas))
      fprintf(out, "no replica count meets %g req/s", c->target_rate);
    else {
      char tpot[96], e2e[96];
      tpot_text(r, false, tpot, sizeof tpot);
      e2e_text(c, r, false, e2e, sizeof e2e);
      fprintf(out, "%.0f replica%s = %.0f GPU%s, p99 TTFT %.3g s, %s%s", r->replicas,
              r->replicas == 1 ? "" : "s", r->replicas * r->gpus_per_replica,
              r->replicas * r->gpus_per_replica == 1 ? "" : "s", r->ttft_p99, tpot, e2e);
    }
    if (isfinite(r->cost_per_hour))
      fprintf(out, ", $%.2f/h", r->cost_per_hour);
    fprintf(out, " (%s)\n", kvsim_cal_status_name(r->cal_status));
  }
  end_notes(c, res, out);
  if (dir)
    fprintf(out, "-> %s/compare.csv, %s/REPORT.md\n", dir, dir);
}

/* What a signal handler needs to undo a compare: its three files (tracked
 * by the output module while they are temporary, then once in place until
 * the last one is) and the folders it made. A stopped compare leaves none
 * of them: a table without its REPORT.md, or one of an older study beside
 * a new REPORT.md, is not a result. */
static const char *const outputs[] = {"compare.csv", "compare_sweep.csv", "REPORT.md"};
enum { NOUT = sizeof outputs / sizeof *outputs };

static struct {
  const char *out;
  int candidates;
  bool erase; /* a progress line on a terminal to clear first */
  volatile sig_atomic_t done, writing;
  volatile sig_atomic_t kept; /* finished candidates in compare.partial.csv */
} stop;

/* What a stopped compare keeps: the rows of the candidates that finished,
 * rewritten (atomically) each time one does, so that Ctrl-C after an hour
 * loses the candidate that was running, not the hour. Not a result (no
 * REPORT.md, no answer): a name of its own, removed when the compare
 * completes. */
static const char partial_name[] = "compare.partial.csv";

/* kill, waitpid and write are async-signal-safe; the output module has
 * removed the files before this runs, and removes the folders after. */
static void on_stop(int sig) {
  kvsim__study_pool_stop(); /* no candidate goes on without its parent */
  char msg[4700], *m = msg, *end = msg + sizeof msg - 1;
  if (stop.erase && stop.done)
    m = kvsim__put_s(m, end, "\r\033[K");
  m = kvsim__put_s(m, end, "kvsim compare: error: ");
  m = kvsim__put_s(m, end, stop.out);
  m = kvsim__put_s(m, end, ": stopped by ");
  m = kvsim__put_s(m, end, kvsim__signal_name(sig));
  m = kvsim__put_s(m, end, " after ");
  m = kvsim__put_n(m, end, stop.done, 1);
  m = kvsim__put_s(m, end, " of ");
  m = kvsim__put_n(m, end, stop.candidates, 1);
  m = kvsim__put_s(m, end, stop.candidates == 1 ? " candidate; " : " candidates; ");
  if (stop.writing)
    m = kvsim__put_s(m, end, "removed the files it had written");
  if (stop.kept > 0) {
    m = kvsim__put_s(m, end, stop.writing ? "; kept the " : "kept the ");
    m = kvsim__put_n(m, end, stop.kept, 1);
    m = kvsim__put_s(m, end, stop.kept == 1 ? " finished one in " : " finished ones in ");
    m = kvsim__put_s(m, end, partial_name);
  } else if (!stop.writing) {
    m = kvsim__put_s(m, end, "nothing written");
  }
  m = kvsim__put_s(m, end, " (no compare.csv)\n");
  ssize_t w = write(2, msg, (size_t)(m - msg));
  (void)w;
}

typedef struct ctx {
  const kvsim_compare_t *c;
  const kvsim_compare_opts_t *o;
  kvsim_compare_result_t *res;
  bool *finished; /* per candidate */
  char partial[4400];
} ctx_t;

/* compare.csv's header and the rows of the finished candidates (a label
 * is one line: no control characters). */
static char *partial_csv(const ctx_t *x) {
  char *all = kvsim_compare_csv(x->c, x->res->rows, x->res->n);
  if (!all)
    return NULL;
  char *out = kvsim__malloc(strlen(all) + 1), *o = out;
  const char *line = all;
  for (int i = -1; out && *line; i++) {
    const char *nl = strchr(line, '\n');
    size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
    if (i < 0 || x->finished[i]) {
      memcpy(o, line, len);
      o += len;
    }
    line += len;
  }
  if (out)
    *o = '\0';
  free(all);
  return out;
}

/* Rewrites compare.partial.csv with one more finished candidate. A failure
 * here costs only what a stop would keep: the compare goes on. */
static void keep_partial(ctx_t *x) {
  kvsim_err e = {0};
  char *text = partial_csv(x);
  if (text && kvsim_report_mkdirs(x->o->out, &e) == KVSIM_OK &&
      kvsim_report_write_atomic(x->partial, text, strlen(text), &e) == KVSIM_OK)
    stop.kept++;
  free(text);
}

static int job(void *p, int64_t i, void *out, kvsim_err *err) {
  const ctx_t *x = p;
  return kvsim_compare_candidate(x->c, (int)i, x->o->tolerance, out, err);
}

static int done(void *p, int64_t i, int rc, const void *out, const kvsim_err *e) {
  ctx_t *x = p;
  kvsim_compare_row_t *r = &x->res->rows[i];
  if (rc == KVSIM_OK) {
    *r = *(const kvsim_compare_row_t *)out;
  } else {
    r->rc = rc;
    snprintf(r->error, sizeof r->error, "%s", e->msg[0] ? e->msg : "run failed");
  }
  stop.done++;
  x->finished[i] = true;
  if (x->o->out)
    keep_partial(x);
  x->res->failed += r->rc < 0 && r->rc != KVSIM_ENOFIT;
  x->res->no_fit += r->rc == KVSIM_ENOFIT;
  kvsim_progress_step(x->o->progress, x->c->cand[i].label,
                      r->rc == KVSIM_ENOFIT ? "does not fit"
                      : r->rc < 0           ? NULL
                      : kvsim__compare_meets(r)            ? "meets the target"
                                            : "misses the target",
                      r->rc < 0 && r->rc != KVSIM_ENOFIT);
  return KVSIM_OK;
}

/* Writes text to path's temporary file (tracked: a signal removes it). */
static int stage(const char *path, const char *tmp, const char *text, kvsim_err *err) {
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
  size_t len = strlen(text);
  bool bad = fwrite(text, 1, len, f) != len;
  bad |= fflush(f) != 0;
  int e = errno;
  if (fclose(f) != 0 && !bad) {
    bad = true;
    e = errno;
  }
  return bad ? kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", path, strerror(e)) : KVSIM_OK;
}

/* The signals kvsim_report_cleanup_on_signals handles. */
static void stop_signals(sigset_t *set) {
  static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE,
                             SIGXCPU, SIGXFSZ, SIGUSR1, SIGUSR2, SIGALRM};
  sigemptyset(set);
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
    sigaddset(set, sigs[i]);
}

/* All three files or none: each is written to a temporary file first, and
 * only when all are complete are they renamed into place, with the stop
 * signals held so that a signal finds none or all of them there (and then
 * removes them: the command had not finished). A failure leaves neither
 * temporary files nor a file of this compare, and the files of an older
 * one stay as they were (unless a rename itself fails half-way). */
static int write_outputs(const kvsim_compare_t *c, const kvsim_compare_opts_t *o,
                         const kvsim_compare_result_t *res, kvsim_err *err) {
  stop.writing = 1;
  char *text[NOUT] = {kvsim_compare_csv(c, res->rows, res->n),
                      kvsim_compare_sweep_csv(c, res->rows, res->n),
                      kvsim_report_md_compare(c, res, o->command)};
  char path[NOUT][4400], tmp[NOUT][4500];
  int slot[NOUT], staged = 0, placed = 0, rc = KVSIM_OK;
  for (int k = 0; k < NOUT; k++) {
    snprintf(path[k], sizeof path[k], "%s/%s", o->out, outputs[k]);
    snprintf(tmp[k], sizeof tmp[k], "%s.tmp.%ld", path[k], (long)getpid());
    slot[k] = -1;
    if (!text[k] && rc == KVSIM_OK)
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path[k]);
  }
  if (rc == KVSIM_OK)
    rc = kvsim_report_mkdirs(o->out, err);
  for (; rc == KVSIM_OK && staged < NOUT; staged++) {
    slot[staged] = kvsim__tmp_track(tmp[staged]);
    rc = stage(path[staged], tmp[staged], text[staged], err);
  }
  /* A folder in the place of one (the one rename that can fail here):
   * refused before any file is replaced. */
  struct stat st;
  for (int k = 0; rc == KVSIM_OK && k < NOUT; k++)
    if (stat(path[k], &st) == 0 && S_ISDIR(st.st_mode))
      rc = kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", path[k], strerror(EISDIR));
  if (rc == KVSIM_OK) {
    sigset_t held, old;
    stop_signals(&held);
    sigprocmask(SIG_BLOCK, &held, &old);
    for (; placed < NOUT; placed++) {
      if (rename(tmp[placed], path[placed]) != 0) {
        rc = kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", path[placed], strerror(errno));
        break;
      }
      kvsim__tmp_forget(slot[placed]);
      slot[placed] = kvsim__tmp_track(path[placed]);
    }
    sigprocmask(SIG_SETMASK, &old, NULL); /* a signal held until now removes them */
  }
  for (int k = 0; k < NOUT; k++) {
    if (rc < 0 && k < placed)
      remove(path[k]);
    else if (rc < 0 && k < staged)
      remove(tmp[k]);
    kvsim__tmp_forget(slot[k]);
    free(text[k]);
  }
  return rc;
}

/* The figures, drawn by this command once its tables are in place (an
 * older compare's PNGs removed first), and REPORT.md written again to
 * link what was drawn or say why nothing was. A figure that cannot be
 * drawn is a line of the report, not an error. */
static int draw_plots(const kvsim_compare_t *c, const kvsim_compare_opts_t *o,
                      kvsim_compare_result_t *res, kvsim_err *err) {
  kvsim__plots_clear(o->out);
  char why[512] = "";
  if (!kvsim__plots_available(why, sizeof why)) {
    snprintf(res->plots_note, sizeof res->plots_note, "%s", why);
  } else {
    char name[200], ttft[64] = "KVSIM_PLOT_TTFT_SLO=", tpot[64] = "KVSIM_PLOT_TPOT_SLO=";
    snprintf(name, sizeof name, "KVSIM_PLOT_NAME=%s", c->name);
    if (c->slo_ttft_p99_s > 0)
      snprintf(ttft, sizeof ttft, "KVSIM_PLOT_TTFT_SLO=%g", c->slo_ttft_p99_s);
    if (c->slo_tpot_p99_s > 0)
      snprintf(tpot, sizeof tpot, "KVSIM_PLOT_TPOT_SLO=%g", c->slo_tpot_p99_s);
    const char *env[] = {name, ttft, tpot, NULL};
    if (!kvsim__plots_draw("plot_compare.sh", o->out, env, why, sizeof why)) {
      kvsim__plots_clear(o->out); /* none rather than some */
      snprintf(res->plots_note, sizeof res->plots_note, "the plot script failed: %s", why);
    } else if (kvsim__plots_list(o->out, res->plots, sizeof res->plots) == 0) {
      snprintf(res->plots_note, sizeof res->plots_note, "nothing to draw");
    }
  }
  char path[4400], tmp[4500];
  snprintf(path, sizeof path, "%s/REPORT.md", o->out);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  char *text = kvsim_report_md_compare(c, res, o->command);
  if (!text)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  int slot = kvsim__tmp_track(tmp);
  int rc = stage(path, tmp, text, err);
  if (rc == KVSIM_OK && rename(tmp, path) != 0)
    rc = kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", path, strerror(errno));
  if (rc < 0)
    remove(tmp);
  kvsim__tmp_forget(slot);
  free(text);
  return rc;
}

int kvsim_compare_run(const kvsim_compare_t *c, const kvsim_compare_opts_t *opts,
                      kvsim_compare_result_t *res, kvsim_err *err) {
  _Static_assert(sizeof(kvsim_compare_row_t) <= KVSIM_STUDY_RECORD_MAX, "a row is a record");
  memset(res, 0, sizeof *res);
  /* 0: the default (kvsim_compare_candidate). */
  if (!(opts->tolerance == 0 ||
        (opts->tolerance >= KVSIM_SEARCH_MIN_TOLERANCE && opts->tolerance < 1)))
    return kvsim_err_set(err, KVSIM_EINVAL, "--tolerance: %g must be in [%g, 1)", opts->tolerance,
                         KVSIM_SEARCH_MIN_TOLERANCE);
  /* A bad --out (a file on its path, /dev/null, a folder where REPORT.md
   * goes) is refused before the candidates run, not after minutes of
   * work that then cannot be written. */
  static const char *const names[] = {"compare.csv", "compare_sweep.csv", "REPORT.md", NULL};
  _Static_assert(sizeof names / sizeof *names == NOUT + 1, "the outputs, NULL-terminated");
  int rc0 = opts->out ? kvsim_report_check_out_dir(opts->out, names, err) : KVSIM_OK;
  if (rc0 < 0)
    return rc0;
  res->rows = kvsim__calloc((size_t)c->ncandidates, sizeof *res->rows);
  if (!res->rows)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %d candidates", c->ncandidates);
  res->n = c->ncandidates;
  ctx_t x = {c, opts, res, kvsim__calloc((size_t)c->ncandidates, sizeof(bool)), ""};
  if (!x.finished)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %d candidates", c->ncandidates);
  stop.done = stop.writing = stop.kept = 0;
  /* The folders this compare makes (the partial table's, then the
   * results'): removed again, while empty, if it fails or is stopped with
   * nothing kept. */
  kvsim_new_dirs_t made;
  if (opts->out) {
    snprintf(x.partial, sizeof x.partial, "%s/%s", opts->out, partial_name);
    remove(x.partial); /* an older compare's, stopped: not this one's */
    kvsim_report_new_dirs(opts->out, &made);
    stop.out = opts->out;
    stop.candidates = c->ncandidates;
    stop.erase = opts->progress && opts->progress->mode == KVSIM_PROGRESS_LINE;
    kvsim__signal_hook(on_stop);
  }
  int rc = kvsim_study_parallel_records(0, c->ncandidates, 1, opts->jobs, job, done, &x, err);
  if (rc == KVSIM_OK)
    kvsim_compare_answer(c, res->rows, res->n, false, res->answer, sizeof res->answer);
  if (rc == KVSIM_OK && opts->out) {
    snprintf(res->plots_note, sizeof res->plots_note, "not drawn yet");
    rc = write_outputs(c, opts, res, err);
    if (rc == KVSIM_OK)
      rc = draw_plots(c, opts, res, err);
  }
  if (opts->out) {
    /* Complete (or failed for good): the partial table has no more use,
     * and is removed with the signals held, so a stop in between finds it
     * or the finished outputs. */
    sigset_t held, old;
    stop_signals(&held);
    sigprocmask(SIG_BLOCK, &held, &old);
    remove(x.partial);
    stop.kept = 0;
    if (rc < 0)
      kvsim_report_new_dirs_undo(&made);
    else
      kvsim_report_new_dirs_keep(&made);
    kvsim__signal_hook(NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
  }
  free(x.finished);
  return rc;
}

void kvsim_compare_result_fini(kvsim_compare_result_t *res) {
  free(res->rows);
  memset(res, 0, sizeof *res);
}
