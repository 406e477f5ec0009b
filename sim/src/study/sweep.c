/* Running a sweep: each point in a process of the pool, its summary.json
 * (or all its outputs) in runNNNN/, and one table from the points' typed
 * summaries. */
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
#include "report/tmpfiles.h"
#include "study/run.h"
#include "study/shard.h"

const char *const kvsim_sweep_columns[KVSIM_SWEEP_NFIGURES] = {
    "requests", "finished", "rejected", "num_gpu_blocks", "kv_cache_tokens", "ttft_p50_s",
    "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p99_s", "requests_per_s", "output_tokens_per_s",
    "kv_usage_peak", "kv_usage_mean", "kv_allocated_token_fraction", "preemptions",
    "prefix_hit_rate", "slo_attainment"};

/* A number as summary.json prints it: cJSON keeps 15 significant digits
 * when they read back within an ulp, so a figure printed from the struct
 * could differ in its 9th digit from the same figure read from the file.
 * The table shows the file's. */
static double as_printed(double v) {
  cJSON *n = cJSON_CreateNumber(v);
  char *text = n ? cJSON_PrintUnformatted(n) : NULL;
  double r = text && strcmp(text, "null") ? strtod(text, NULL) : v;
  free(text);
  cJSON_Delete(n);
  return r;
}

void kvsim_sweep_figures(const kvsim_summary_t *s, double out[KVSIM_SWEEP_NFIGURES]) {
  /* No request finished: the latency columns have no figure (NAN, an
   * empty cell as for any value not known), not a p99 of 0 s. */
  const bool lat = s->requests_finished > 0;
  const double v[KVSIM_SWEEP_NFIGURES] = {(double)s->requests_total,
                                          (double)s->requests_finished,
                                          (double)s->requests_rejected,
                                          (double)s->plan.num_gpu_blocks,
                                          (double)s->plan.kv_cache_tokens,
                                          lat ? s->ttft.p50 : NAN,
                                          lat ? s->ttft.p99 : NAN,
                                          lat ? s->tpot.p50 : NAN,
                                          lat ? s->tpot.p99 : NAN,
                                          lat ? s->e2e.p99 : NAN,
                                          s->requests_per_s,
                                          s->output_tokens_per_s,
                                          s->kv_usage_peak,
                                          s->kv_usage_mean,
                                          s->kv_allocated_token_fraction,
                                          (double)s->preemptions,
                                          s->prefix_hit_rate,
                                          s->slo_attainment};
  for (int i = 0; i < KVSIM_SWEEP_NFIGURES; i++)
    out[i] = as_printed(v[i]);
}

const kvsim_sweep_slo_t kvsim_sweep_slos[KVSIM_SWEEP_NSLO] = {
    {"p99 TTFT", 6}, {"p99 TPOT", 8}, {"p99 E2E", 9}};

void kvsim_sweep_slo_results(const kvsim_summary_t *s, kvsim_slo_result_t out[KVSIM_SWEEP_NSLO]) {
  out[0] = s->slo_ttft_p99;
  out[1] = s->slo_tpot_p99;
  out[2] = s->slo_e2e_p99;
}

typedef struct ctx {
  const kvsim_sweep_t *s;
  const kvsim_sweep_opts_t *o;
  kvsim_sweep_result_t *res;
  kvsim_err io; /* the first point's input/output error: it stops the sweep */
} ctx_t;

static void run_dir(const char *out, int64_t i, char *buf, size_t cap) {
  snprintf(buf, cap, "%s/run%04lld", out, (long long)i);
}

static const char *const run_files[] = {"summary.json", "timeseries.csv", "requests.csv"};

/* Removes a run's outputs and its folder (what a run writes, nothing else).
 * Returns whether the folder went. */
static bool remove_run(const char *out, int64_t i) {
  char dir[4300], f[4400];
  run_dir(out, i, dir, sizeof dir);
  for (int k = 0; k < 3; k++) {
    snprintf(f, sizeof f, "%s/%s", dir, run_files[k]);
    remove(f);
  }
  return rmdir(dir) == 0;
}

/* What a signal handler needs to undo a sweep: the folders it may have
 * made. A stopped sweep has no table, and its run folders without one are
 * litter, not state to resume from (a sweep always runs all its points),
 * so they go, except those that existed before it started. */
static struct {
  const char *out;
  const unsigned char *existed; /* per point; NULL: none did */
  int64_t shard, nshards, points;
  int jobs;
  volatile sig_atomic_t done; /* points finished: those started are fewer than done + jobs */
} stop;

/* unlink, rmdir, kill, waitpid and write are async-signal-safe. */
static void on_stop(int sig) {
  kvsim__study_pool_stop(); /* none writes a folder after this */
  int64_t end = stop.shard + ((int64_t)stop.done + stop.jobs + 1) * stop.nshards;
  if (end > stop.points)
    end = stop.points;
  int64_t removed = 0;
  char path[4500], *lim = path + sizeof path - 1;
  for (int64_t i = stop.shard; i < end; i += stop.nshards) {
    if (stop.existed && stop.existed[i])
      continue;
    char *p = kvsim__put_n(kvsim__put_s(kvsim__put_s(path, lim, stop.out), lim, "/run"), lim, i, 4);
    for (int k = 0; k < 3; k++) {
      *kvsim__put_s(kvsim__put_s(p, lim, "/"), lim, run_files[k]) = '\0';
      unlink(path);
    }
    *p = '\0';
    removed += rmdir(path) == 0;
  }
  char msg[4700], *m = msg, *mend = msg + sizeof msg - 1;
  m = kvsim__put_s(m, mend, "kvsim sweep: error: ");
  m = kvsim__put_s(m, mend, stop.out);
  m = kvsim__put_s(m, mend, ": stopped by ");
  m = kvsim__put_s(m, mend, kvsim__signal_name(sig));
  m = kvsim__put_s(m, mend, "; removed the ");
  m = kvsim__put_n(m, mend, removed, 1);
  m = kvsim__put_s(m, mend, removed == 1 ? " run folder" : " run folders");
  m = kvsim__put_s(m, mend, " it had written (no sweep.csv)\n");
  ssize_t w = write(2, msg, (size_t)(m - msg));
  (void)w;
}

/* summary.json alone, the same bytes a run with outputs writes
 * (kvsim_run_output_finish prints it from the same summary). */
static int write_summary(const char *dir, const kvsim_scenario_t *sc, const kvsim_summary_t *sum,
                         kvsim_err *err) {
  int rc = kvsim_report_mkdirs(dir, err);
  if (rc < 0)
    return rc;
  cJSON *j = kvsim_summary_json(sum, sc);
  char *text = j ? kvsim_report_json_string(j) : NULL;
  cJSON_Delete(j);
  if (!text)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory for summary.json", dir);
  char path[4400];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  size_t len = strlen(text);
  text[len] = '\n'; /* the terminating NUL's byte: the text is not a string any more */
  rc = kvsim_report_write_atomic(path, text, len + 1, err);
  free(text);
  return rc;
}

static int job(void *p, int64_t i, kvsim_summary_t *out, kvsim_err *err) {
  const ctx_t *c = p;
  kvsim_scenario_t sc;
  int rc = kvsim_sweep_scenario(c->s, i, &sc, err);
  if (rc < 0)
    return rc;
  char dir[4300];
  if (c->o->out)
    run_dir(c->o->out, i, dir, sizeof dir);
  /* Without keep_runs the run writes nothing while it goes: a sweep of a
   * thousand points would otherwise leave gigabytes of per-request and
   * time-series CSV that its table already sums up. */
  bool all = c->o->out && c->o->keep_runs;
  kvsim_study_run_opts_t ro = {all ? dir : NULL, false, 0};
  rc = kvsim_study_run(&sc, &ro, out, err);
  if (rc == KVSIM_OK && c->o->out && !all)
    rc = write_summary(dir, &sc, out, err);
  kvsim_scenario_fini(&sc);
  if (rc < 0 && c->o->out)
    remove_run(c->o->out, i); /* a failed run leaves no folder behind */
  return rc;
}

static int done(void *p, int64_t i, int rc, const kvsim_summary_t *sum, const kvsim_err *e) {
  ctx_t *c = p;
  kvsim_sweep_row_t *row = &c->res->rows[i];
  row->ran = true;
  row->rc = rc;
  if (rc == KVSIM_OK) {
    kvsim_sweep_figures(sum, row->fig);
    kvsim_sweep_slo_results(sum, row->slo);
  } else
    snprintf(row->error, sizeof row->error, "%s", e->msg[0] ? e->msg : "run failed");
  stop.done++;
  c->res->failed += rc < 0 && rc != KVSIM_ENOFIT;
  c->res->no_fit += rc == KVSIM_ENOFIT;
  char label[32];
  snprintf(label, sizeof label, "run%04lld", (long long)i);
  kvsim_progress_step(c->o->progress, label, rc == KVSIM_ENOFIT ? "does not fit" : NULL,
                      rc < 0 && rc != KVSIM_ENOFIT);
  /* A full disk (or an unreadable file) is not a point's result: the
   * sweep stops, writes no table of ENOSPC rows, and removes its folders. */
  if (rc == KVSIM_EIO) {
    c->io = *e;
    c->io.code = rc;
    return rc;
  }
  return KVSIM_OK;
}

/* Appends one CSV field, quoted when it needs to be. */
static void csv_field(FILE *f, const char *v, bool last) {
  if (strpbrk(v, ",\"\n")) {
    fputc('"', f);
    for (const char *p = v; *p; p++) {
      if (*p == '"')
        fputc('"', f);
      fputc(*p, f);
    }
    fputc('"', f);
  } else {
    fputs(v, f);
  }
  fputc(last ? '\n' : ',', f);
}

static void write_rows(FILE *f, const kvsim_sweep_t *s, const kvsim_sweep_opts_t *o,
                       const kvsim_sweep_result_t *res) {
  fputs("run,", f);
  for (int k = 0; k < s->nkeys; k++)
    csv_field(f, s->keys[k], false);
  fputs("fits,", f);
  for (int m = 0; m < KVSIM_SWEEP_NFIGURES; m++)
    fprintf(f, "%s,", kvsim_sweep_columns[m]);
  fputs("error\n", f);
  for (int64_t i = o->shard; i < s->points; i += o->nshards) {
    const kvsim_sweep_row_t *row = &res->rows[i];
    fprintf(f, "run%04lld,", (long long)i);
    for (int k = 0; k < s->nkeys; k++) {
      const cJSON *v = kvsim_sweep_value(s, i, k);
      char *text = cJSON_IsString(v) ? NULL : cJSON_PrintUnformatted(v);
      csv_field(f, text ? text : v->valuestring, false);
      free(text);
    }
    if (row->rc == KVSIM_OK) {
      fputs("true,", f);
      for (int m = 0; m < KVSIM_SWEEP_NFIGURES; m++)
        if (isfinite(row->fig[m]))
          fprintf(f, "%.9g,", row->fig[m]);
        else
          fputc(',', f);
      fputc('\n', f);
    } else {
      fputs(row->rc == KVSIM_ENOFIT ? "false," : ",", f);
      for (int m = 0; m < KVSIM_SWEEP_NFIGURES; m++)
        fputc(',', f);
      csv_field(f, row->error, true);
    }
  }
}

static int write_table(const kvsim_sweep_t *s, const kvsim_sweep_opts_t *o,
                       kvsim_sweep_result_t *res, kvsim_err *err) {
  char *path = res->table, tmp[4400];
  snprintf(path, sizeof res->table, o->nshards > 1 ? "%s/" KVSIM__SHARD_TABLE : "%s/sweep.csv",
           o->out, o->shard);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int slot = kvsim__tmp_track(tmp);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    kvsim__tmp_forget(slot);
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
  }
  write_rows(f, s, o, res);
  bool bad = ferror(f) != 0;
  bad |= fclose(f) != 0;
  int e = errno;
  if (!bad && rename(tmp, path) != 0) {
    bad = true;
    e = errno;
  }
  if (bad)
    remove(tmp);
  kvsim__tmp_forget(slot);
  if (bad)
    return kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", path, strerror(e));
  return KVSIM_OK;
}

int kvsim_sweep_run(const kvsim_sweep_t *s, const kvsim_sweep_opts_t *opts,
                    kvsim_sweep_result_t *res, kvsim_err *err) {
  memset(res, 0, sizeof *res);
  kvsim_sweep_opts_t o = *opts;
  if (o.nshards < 1)
    o.nshards = 1;
  res->rows = kvsim__calloc((size_t)s->points, sizeof *res->rows);
  if (!res->rows)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %lld rows", (long long)s->points);
  int rc;
  kvsim_new_dirs_t made;
  unsigned char *existed = NULL;
  if (o.out) {
    kvsim_report_new_dirs(o.out, &made);
    if ((rc = kvsim_report_mkdirs(o.out, err)) < 0) {
      kvsim_report_new_dirs_undo(&made);
      return rc;
    }
    /* In a folder that existed, the run folders already there are not
     * this sweep's to remove. */
    if (!made.top && !(existed = kvsim__calloc((size_t)s->points, 1))) {
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %lld points", (long long)s->points);
      kvsim_report_new_dirs_keep(&made);
      return rc;
    }
    char dir[4300];
    struct stat st;
    for (int64_t i = o.shard; existed && i < s->points; i += o.nshards) {
      run_dir(o.out, i, dir, sizeof dir);
      existed[i] = stat(dir, &st) == 0;
    }
    stop.out = o.out;
    stop.existed = existed;
    stop.shard = o.shard;
    stop.nshards = o.nshards;
    stop.points = s->points;
    stop.jobs = o.jobs > 1 ? o.jobs : 1;
    stop.done = 0;
    kvsim__signal_hook(on_stop);
  }
  ctx_t c = {s, &o, res, {0}};
  rc = kvsim_study_parallel(o.shard, s->points, o.nshards, o.jobs, job, done, &c, err);
  if (rc < 0 && c.io.code)
    rc = kvsim_err_set(err, c.io.code, "%s", c.io.msg);
  if (rc == KVSIM_OK && o.out)
    rc = write_table(s, &o, res, err);
  if (rc == KVSIM_OK && o.out && o.report_from &&
      (rc = kvsim_report_md_sweep_write(s, res, o.out, o.report_from, err)) < 0)
    remove(res->table);
  /* The record last: a shard with a record has its whole table. */
  if (rc == KVSIM_OK && o.out && o.nshards > 1 &&
      (rc = kvsim__shard_record_write(s, o.out, o.shard, o.nshards, err)) < 0)
    remove(res->table);
  if (o.out)
    kvsim__signal_hook(NULL);
  if (rc < 0 && o.out) {
    /* Nothing half-done: without its table a sweep's run folders are
     * litter (and a full disk is the usual cause). */
    for (int64_t i = o.shard; i < s->points; i += o.nshards)
      if (!existed || !existed[i])
        remove_run(o.out, i);
    kvsim_report_new_dirs_undo(&made);
    res->table[0] = '\0';
  } else if (o.out) {
    kvsim_report_new_dirs_keep(&made);
  }
  kvsim__free(existed);
  return rc;
}

void kvsim_sweep_result_fini(kvsim_sweep_result_t *res) {
  kvsim__free(res->rows);
  memset(res, 0, sizeof *res);
}
