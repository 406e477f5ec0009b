/* kvsim/openmetrics.h: a run's timeseries.csv and requests.csv as
 * OpenMetrics text under vLLM's metric names.
 *
 * The series rows of each replica become one point per family at
 * start + time_s; two rows of a replica in the same millisecond (a
 * preemption row beside a periodic one) keep the later, as Prometheus
 * stores milliseconds and refuses two values at one timestamp. A
 * histogram point counts the requests of that replica observed by then:
 * TTFT at the first token, TPOT / inter-token latency and E2E at the
 * finish (vLLM observes them in the iteration that produced the token or
 * finished the request, output_processor.py). A request's TPOT is
 * observed once per decode gap (output_tokens - 1 times), as vLLM
 * observes every inter-token gap: count and sum then equal vLLM's, the
 * buckets place each request's gaps at their mean. */
#include "kvsim/openmetrics.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/vec.h"
#include "kvsim/model.h"
#include "report/tmpfiles.h"
#include "workload/csvrow.h"

/* ---- vLLM's families (vllm/v1/metrics/loggers.py, PrometheusStatLogger) ---- */

enum { G_KV, G_RUN, G_WAIT, C_PREEMPT, C_PROMPT, C_GEN, C_PQ, C_PH, NCOL };

static const struct {
  const char *column; /* timeseries.csv */
  const char *family, *type, *help;
} cols[NCOL] = {
    {"kv_cache_usage_perc", "vllm:kv_cache_usage_perc", "gauge",
     "KV-cache usage. 1 means 100 percent usage."},
    {"num_requests_running", "vllm:num_requests_running", "gauge",
     "Number of requests in model execution batches."},
    {"num_requests_waiting", "vllm:num_requests_waiting", "gauge",
     "Number of requests waiting to be processed."},
    {"num_preemptions_total", "vllm:num_preemptions", "counter",
     "Cumulative number of preemption from the engine."},
    {"prompt_tokens_total", "vllm:prompt_tokens", "counter", "Number of prefill tokens processed."},
    {"generation_tokens_total", "vllm:generation_tokens", "counter",
     "Number of generation tokens processed."},
    {"prefix_cache_queries_total", "vllm:prefix_cache_queries", "counter",
     "Prefix cache queries, in terms of number of queried tokens."},
    {"prefix_cache_hits_total", "vllm:prefix_cache_hits", "counter",
     "Prefix cache hits, in terms of number of cached tokens."},
};

/* Bucket upper bounds, seconds, as loggers.py lists them. */
static const double ttft_le[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                 0.25,  0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0,
                                 20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
static const double tpot_le[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                 0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
/* request_latency_buckets */
static const double e2e_le[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,    10.0,   15.0, 20.0,
                                30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

enum { H_TTFT, H_TPOT, H_ITL, H_E2E, NHIST };

static const struct {
  const char *family, *help;
  const double *le;
  int nle;
} hists[NHIST] = {
    {"vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft_le,
     (int)(sizeof ttft_le / sizeof *ttft_le)},
    {"vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.",
     tpot_le, (int)(sizeof tpot_le / sizeof *tpot_le)},
    {"vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", tpot_le,
     (int)(sizeof tpot_le / sizeof *tpot_le)},
    {"vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2e_le,
     (int)(sizeof e2e_le / sizeof *e2e_le)},
};

/* ---- the run, read back ---- */

typedef struct tick {
  int64_t ms; /* time_s in milliseconds */
  int64_t seq;
  int32_t replica;
  double v[NCOL];
} tick_t;

typedef struct obs {
  int64_t ms; /* when observed */
  int32_t replica;
  double value;
  int64_t weight; /* observations (TPOT: decode gaps) */
} obs_t;

typedef kvsim__vec(obs_t) obs_vec_t;

typedef struct run {
  kvsim__vec(tick_t) ticks;
  obs_vec_t ttft, tpot, e2e;
} run_t;

static int bad_cell(kvsim__csvrow_t *r, int col, const char *name, const char *v, kvsim_err *err) {
  return kvsim_err_set(err, KVSIM_EINVAL, "%s:%lld: column '%s': bad value '%s' (expected a finite number >= 0)",
                       kvsim__csvrow_path(r), (long long)kvsim__csvrow_field_line(r, col), name, v);
}

static int cell(kvsim__csvrow_t *r, int col, const char *name, double *out, kvsim_err *err) {
  const char *v = kvsim__csvrow_field(r, col);
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (!*v || *end || errno || !isfinite(x) || x < 0)
    return bad_cell(r, col, name, v, err);
  *out = x;
  return KVSIM_OK;
}

static int column(kvsim__csvrow_t *r, const char *name, int *col, kvsim_err *err) {
  if ((*col = kvsim__csvrow_column(r, name)) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s:1: no column '%s' (not a kvsim run's file?)",
                         kvsim__csvrow_path(r), name);
  return KVSIM_OK;
}

static int64_t to_ms(double s) { return (int64_t)llround(s * 1e3); }

/* A replica index: an integer 0 .. 2^31 - 1. */
static int replica_of(kvsim__csvrow_t *r, int col, int32_t *out, kvsim_err *err) {
  double x;
  int rc = cell(r, col, "replica", &x, err);
  if (rc < 0)
    return rc;
  if (x != floor(x) || x > 2147483647.0)
    return bad_cell(r, col, "replica", kvsim__csvrow_field(r, col), err);
  *out = (int32_t)x;
  return KVSIM_OK;
}

static int read_series(const char *path, run_t *run, kvsim_err *err) {
  kvsim__csvrow_t *r;
  int rc = kvsim__csvrow_open(path, true, &r, err);
  if (rc < 0)
    return rc;
  int ct, cr, c[NCOL];
  rc = column(r, "time_s", &ct, err);
  if (rc == KVSIM_OK)
    rc = column(r, "replica", &cr, err);
  for (int k = 0; k < NCOL && rc == KVSIM_OK; k++)
    rc = column(r, cols[k].column, &c[k], err);
  while (rc == KVSIM_OK && (rc = kvsim__csvrow_next(r, err)) == 1) {
    rc = KVSIM_OK;
    tick_t t = {.seq = run->ticks.n};
    double s;
    rc = cell(r, ct, "time_s", &s, err);
    if (rc == KVSIM_OK)
      rc = replica_of(r, cr, &t.replica, err);
    for (int k = 0; k < NCOL && rc == KVSIM_OK; k++)
      rc = cell(r, c[k], cols[k].column, &t.v[k], err);
    t.ms = to_ms(s);
    if (rc == KVSIM_OK && kvsim__vec_push(&run->ticks, t) < 0)
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  }
  kvsim__csvrow_close(r);
  return rc < 0 ? rc : KVSIM_OK;
}

static int push_obs(obs_vec_t *v, obs_t o, const char *path, kvsim_err *err) {
  if (kvsim__vec_push(v, o) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
  return KVSIM_OK;
}

/* Finished requests only: the others have no latencies to observe. */
static int read_requests(const char *path, run_t *run, kvsim_err *err) {
  kvsim__csvrow_t *r;
  int rc = kvsim__csvrow_open(path, true, &r, err);
  if (rc < 0)
    return rc;
  enum { REP, FIRST, FIN, TTFT, TPOT, E2E, OUT, STATUS, N };
  static const char *const names[N] = {"replica", "first_token_s", "finish_s", "ttft_s",
                                       "tpot_s",  "e2e_s",         "output_tokens", "status"};
  int c[N];
  for (int k = 0; k < N && rc == KVSIM_OK; k++)
    rc = column(r, names[k], &c[k], err);
  while (rc == KVSIM_OK && (rc = kvsim__csvrow_next(r, err)) == 1) {
    rc = KVSIM_OK;
    if (strcmp(kvsim__csvrow_field(r, c[STATUS]), "finished"))
      continue;
    double x[N] = {0};
    int32_t rep = 0;
    rc = replica_of(r, c[REP], &rep, err);
    for (int k = FIRST; k <= OUT && rc == KVSIM_OK; k++)
      if (k != TPOT || kvsim__csvrow_field(r, c[k])[0]) /* empty: one output token */
        rc = cell(r, c[k], names[k], &x[k], err);
    if (rc < 0)
      break;
    rc = push_obs(&run->ttft, (obs_t){to_ms(x[FIRST]), rep, x[TTFT], 1}, path, err);
    if (rc == KVSIM_OK && x[OUT] >= 2)
      rc = push_obs(&run->tpot, (obs_t){to_ms(x[FIN]), rep, x[TPOT], (int64_t)x[OUT] - 1}, path,
                    err);
    if (rc == KVSIM_OK)
      rc = push_obs(&run->e2e, (obs_t){to_ms(x[FIN]), rep, x[E2E], 1}, path, err);
  }
  kvsim__csvrow_close(r);
  return rc < 0 ? rc : KVSIM_OK;
}

static int by_tick(const void *a, const void *b) {
  const tick_t *x = a, *y = b;
  if (x->replica != y->replica)
    return x->replica < y->replica ? -1 : 1;
  if (x->ms != y->ms)
    return x->ms < y->ms ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_obs(const void *a, const void *b) {
  const obs_t *x = a, *y = b;
  if (x->replica != y->replica)
    return x->replica < y->replica ? -1 : 1;
  return x->ms < y->ms ? -1 : x->ms > y->ms;
}

/* Sorted by (replica, time); of two rows in one millisecond the later. */
static void order(run_t *run) {
  if (run->ticks.n)
    qsort(run->ticks.v, (size_t)run->ticks.n, sizeof *run->ticks.v, by_tick);
  int64_t w = 0;
  for (int64_t i = 0; i < run->ticks.n; i++) {
    if (w > 0 && run->ticks.v[w - 1].replica == run->ticks.v[i].replica &&
        run->ticks.v[w - 1].ms == run->ticks.v[i].ms)
      w--;
    run->ticks.v[w++] = run->ticks.v[i];
  }
  run->ticks.n = w;
  obs_t *lists[] = {run->ttft.v, run->tpot.v, run->e2e.v};
  int64_t ns[] = {run->ttft.n, run->tpot.n, run->e2e.n};
  for (int k = 0; k < 3; k++)
    if (ns[k])
      qsort(lists[k], (size_t)ns[k], sizeof *lists[k], by_obs);
}

/* ---- writing ---- */

/* OpenMetrics' canonical le: always with a decimal point ("1.0"). */
static void put_le(FILE *f, double le) {
  char b[32];
  snprintf(b, sizeof b, "%g", le);
  fprintf(f, "%s%s", b, strpbrk(b, ".e") ? "" : ".0");
}

static void put_ts(FILE *f, double start, int64_t ms) {
  /* Whole milliseconds, as Prometheus stores them. */
  double t = start + (double)ms / 1e3;
  fprintf(f, " %.3f\n", t);
}

/* The label text of a model name: \, " and newline escaped. */
static void escape_label(const char *in, char *out, size_t cap) {
  size_t o = 0;
  for (; *in && o + 3 < cap; in++) {
    if (*in == '\\' || *in == '"' || *in == '\n') {
      out[o++] = '\\';
      out[o++] = *in == '\n' ? 'n' : *in;
    } else {
      out[o++] = *in;
    }
  }
  out[o] = '\0';
}

static void write_columns(FILE *f, const run_t *run, const char *model, double start) {
  for (int k = 0; k < NCOL; k++) {
    bool counter = !strcmp(cols[k].type, "counter");
    fprintf(f, "# TYPE %s %s\n# HELP %s %s\n", cols[k].family, cols[k].type, cols[k].family,
            cols[k].help);
    for (int64_t i = 0; i < run->ticks.n; i++) {
      const tick_t *t = &run->ticks.v[i];
      fprintf(f, "%s%s{model_name=\"%s\",engine=\"%d\"} %.9g", cols[k].family,
              counter ? "_total" : "", model, (int)t->replica, t->v[k]);
      put_ts(f, start, t->ms);
    }
  }
}

/* One family of histograms: at each tick of each replica, the cumulative
 * buckets of the observations of that replica up to the tick. */
static int write_hist(FILE *f, const run_t *run, int h, const obs_t *o, int64_t no,
                      const char *model, double start) {
  int nle = hists[h].nle;
  int64_t *cum = kvsim__calloc((size_t)nle + 1, sizeof *cum);
  if (!cum)
    return KVSIM_ENOMEM;
  fprintf(f, "# TYPE %s histogram\n# HELP %s %s\n", hists[h].family, hists[h].family,
          hists[h].help);
  int64_t j = 0;
  double sum = 0;
  for (int64_t i = 0; i < run->ticks.n; i++) {
    const tick_t *t = &run->ticks.v[i];
    if (i == 0 || run->ticks.v[i - 1].replica != t->replica) {
      memset(cum, 0, ((size_t)nle + 1) * sizeof *cum);
      sum = 0;
      while (j < no && o[j].replica < t->replica) /* a replica without series rows */
        j++;
    }
    for (; j < no && o[j].replica == t->replica && o[j].ms <= t->ms; j++) {
      int b = 0;
      while (b < nle && o[j].value > hists[h].le[b])
        b++;
      cum[b] += o[j].weight;
      sum += o[j].value * (double)o[j].weight;
    }
    int64_t acc = 0;
    for (int b = 0; b <= nle; b++) {
      acc += cum[b];
      fprintf(f, "%s_bucket{model_name=\"%s\",engine=\"%d\",le=\"", hists[h].family, model,
              (int)t->replica);
      if (b < nle)
        put_le(f, hists[h].le[b]);
      else
        fputs("+Inf", f);
      fprintf(f, "\"} %lld", (long long)acc);
      put_ts(f, start, t->ms);
    }
    fprintf(f, "%s_count{model_name=\"%s\",engine=\"%d\"} %lld", hists[h].family, model,
            (int)t->replica, (long long)acc);
    put_ts(f, start, t->ms);
    fprintf(f, "%s_sum{model_name=\"%s\",engine=\"%d\"} %.9g", hists[h].family, model,
            (int)t->replica, sum);
    put_ts(f, start, t->ms);
  }
  free(cum);
  return KVSIM_OK;
}

/* Finished requests by the tick: vllm:request_success. */
static void write_success(FILE *f, const run_t *run, const char *model, double start) {
  fputs("# TYPE vllm:request_success counter\n"
        "# HELP vllm:request_success Count of successfully processed requests.\n",
        f);
  int64_t j = 0, n = 0;
  const obs_t *o = run->e2e.v;
  for (int64_t i = 0; i < run->ticks.n; i++) {
    const tick_t *t = &run->ticks.v[i];
    if (i == 0 || run->ticks.v[i - 1].replica != t->replica) {
      n = 0;
      while (j < run->e2e.n && o[j].replica < t->replica)
        j++;
    }
    for (; j < run->e2e.n && o[j].replica == t->replica && o[j].ms <= t->ms; j++)
      n++;
    /* Every simulated request stops at its output length (ignore_eos). */
    fprintf(f,
            "vllm:request_success_total{model_name=\"%s\",engine=\"%d\",finished_reason=\"length\"} "
            "%lld",
            model, (int)t->replica, (long long)n);
    put_ts(f, start, t->ms);
  }
}

static int write_text(FILE *f, const run_t *run, const kvsim_openmetrics_opts_t *opts) {
  char model[512];
  escape_label(opts->model_name ? opts->model_name : "", model, sizeof model);
  write_columns(f, run, model, opts->start_unix_s);
  write_success(f, run, model, opts->start_unix_s);
  const obs_t *src[NHIST] = {run->ttft.v, run->tpot.v, run->tpot.v, run->e2e.v};
  int64_t n[NHIST] = {run->ttft.n, run->tpot.n, run->tpot.n, run->e2e.n};
  for (int h = 0; h < NHIST; h++)
    if (write_hist(f, run, h, src[h], n[h], model, opts->start_unix_s) < 0)
      return KVSIM_ENOMEM;
  fputs("# EOF\n", f);
  return KVSIM_OK;
}

static int write_file(const run_t *run, const kvsim_openmetrics_opts_t *opts, const char *out,
                      kvsim_err *err) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out, (long)getpid());
  int slot = kvsim__tmp_track(tmp);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    kvsim__tmp_forget(slot);
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", out, strerror(errno));
  }
  int rc = write_text(f, run, opts);
  errno = 0;
  bool bad = ferror(f) || fflush(f) != 0;
  int e = errno;
  bad |= fclose(f) != 0;
  if (rc == KVSIM_OK && !bad && rename(tmp, out) == 0) {
    kvsim__tmp_forget(slot);
    return KVSIM_OK;
  }
  e = e ? e : errno;
  remove(tmp);
  kvsim__tmp_forget(slot);
  if (rc < 0)
    return kvsim_err_set(err, rc, "%s: out of memory", out);
  return kvsim_err_set(err, KVSIM_EIO, "%s: write failed%s%s", out, e ? ": " : "",
                       e ? strerror(e) : "");
}

int kvsim_openmetrics_write(const char *timeseries_csv, const char *requests_csv,
                            const kvsim_openmetrics_opts_t *opts, const char *out, kvsim_err *err) {
  if (!isfinite(opts->start_unix_s) || opts->start_unix_s < 0 || opts->start_unix_s > 1e11)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "OpenMetrics start %g: expected seconds since the epoch, 0 .. 1e11",
                         opts->start_unix_s);
  run_t run;
  memset(&run, 0, sizeof run);
  int rc = read_series(timeseries_csv, &run, err);
  if (rc == KVSIM_OK)
    rc = read_requests(requests_csv, &run, err);
  if (rc == KVSIM_OK) {
    order(&run);
    rc = write_file(&run, opts, out, err);
  }
  kvsim__vec_free(&run.ticks);
  kvsim__vec_free(&run.ttft);
  kvsim__vec_free(&run.tpot);
  kvsim__vec_free(&run.e2e);
  return rc;
}

int kvsim_openmetrics_write_run(const char *dir, const kvsim_scenario_t *sc, double start_unix_s,
                                const char *out, kvsim_err *err) {
  char ts[4200], rq[4200];
  snprintf(ts, sizeof ts, "%s/timeseries.csv", dir);
  snprintf(rq, sizeof rq, "%s/requests.csv", dir);
  const char *hf = kvsim_model_hf_id(sc->model.name);
  kvsim_openmetrics_opts_t o = {hf ? hf : sc->model.name, start_unix_s};
  return kvsim_openmetrics_write(ts, rq, &o, out, err);
}
