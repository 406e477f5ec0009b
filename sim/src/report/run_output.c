#include "kvsim/run_output.h"
#include "kvsim/spec.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/vec.h"
#include "kvsim/report.h"
#include "kvsim/stats.h"
#include "kvsim/steady.h"
#include "kvsim/summary.h"
#include "report/diagnosis.h"
#include "report/reqlog.h"
#include "report/rowfmt.h"
#include "report/tmpfiles.h"

const char *const kvsim_timeseries_header =
    "time_s,replica,kv_cache_usage_perc,kv_blocks_used,kv_blocks_cached,kv_blocks_free,"
    "num_requests_running,num_requests_waiting,num_requests_swapped,num_preemptions_total,"
    "prefix_cache_queries_total,prefix_cache_hits_total,prompt_tokens_total,"
    "generation_tokens_total,cpu_kv_cache_usage_perc,kv_token_bytes,kv_allocated_bytes,"
    "kv_reserved_unused_bytes,kv_internal_fragmentation_bytes";
const char *const kvsim_transfer_header =
    "time_s,prefill_kv_cache_usage_perc,decode_kv_cache_usage_perc,prefill_kv_blocks_held,"
    "num_prefill_inflight_queue_reqs,num_decode_prealloc_queue_reqs,num_transfers_queued,"
    "num_transfers_running,kv_transfer_bytes_in_flight";
const char *const kvsim_requests_header =
    "request_id,replica,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,"
    "output_tokens,cached_tokens,num_preemptions,ttft_s,tpot_s,e2e_s,status";

#define NREASONS 16
#define NPRIO 8 /* distinct priority values reported separately */

typedef struct prio_stat {
  int32_t priority;
  bool used;
  kvsim_dist_t ttft, e2e;
} prio_stat_t;

struct kvsim_run_output {
  const kvsim_scenario_t *sc;
  char dir[4096];
  char ts_path[4200], rq_path[4200], ts_tmp[4300], rq_tmp[4300];
  int ts_slot, rq_slot; /* tmpfiles.h: removed if a signal ends the run */
  FILE *ts, *rq;
  char *ts_buf, *rq_buf;
  /* transfer.csv, a disaggregated run's hand-off (NULL otherwise). */
  char xf_path[4200], xf_tmp[4300];
  int xf_slot;
  FILE *xf;
  char *xf_buf;
  bool progress;
  kvsim_dist_t ttft, tpot, e2e, queue;
  /* Every request that arrived (recs), for the steady window; the
   * untrimmed p99s beside the steady ones (all_*). */
  kvsim__reqlog_t recs;
  kvsim_dist_t all_ttft, all_tpot, all_e2e;
  kvsim_steady_t steady;
  int64_t slo_ok, slo_n;
  int64_t finished_output_tokens, finished_prompt_tokens;
  struct {
    const char *why;
    int64_t n;
  } reasons[NREASONS];
  int64_t in_flight_running, in_flight_waiting;
  prio_stat_t prio[NPRIO];
  int nprio;
  /* Arrival span of the requests seen: the offered rate (diagnosis.c). */
  kvsim_time_ns arrival_first, arrival_last;
  int64_t arrivals;
  kvsim_summary_t summary;
  bool has_summary;
  bool retracts; /* SGLang's own names follow the common columns */
  bool streams;  /* ts and rq are the caller's (kvsim_run_output_open_streams) */
  /* The sink's first write error (the sink's callbacks return only a
   * code): kvsim_run_output_failed hands it on. */
  kvsim_err werr;
};

static FILE *open_tmp(char *tmp, size_t cap, const char *path, char **buf, int *slot,
                      kvsim_err *err) {
  snprintf(tmp, cap, "%s.tmp.%ld", path, (long)getpid());
  *slot = kvsim__tmp_track(tmp);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
    return NULL;
  }
  /* Large buffers: these files are written a row at a time. */
  *buf = kvsim__malloc(1 << 16);
  if (*buf)
    setvbuf(f, *buf, _IOFBF, 1 << 16);
  return f;
}

/* The header lines. */
static void put_headers(kvsim_run_output_t *o) {
  /* A profile that retracts (sglang) adds the engine's own metric names:
   * sglang:token_usage ((total - available - evictable) / total, the
   * scheduler's _get_token_info: kv_cache_usage_perc's quantity) and the
   * retraction count (num_preemptions_total's). */
  o->retracts = o->sc->sched_ops && o->sc->sched_ops->defaults.retracts;
  fprintf(o->ts, "%s%s\n", kvsim_timeseries_header,
          o->retracts ? ",sglang:token_usage,num_retractions" : "");
  fprintf(o->rq, "%s\n", kvsim_requests_header);
}

int kvsim_run_output_open_streams(const kvsim_scenario_t *sc, FILE *ts, FILE *rq,
                                  kvsim_run_output_t **out, kvsim_err *err) {
  int rc = kvsim_run_output_open(NULL, sc, false, out, err);
  if (rc < 0)
    return rc;
  kvsim_run_output_t *o = *out;
  o->ts = ts;
  o->rq = rq;
  o->streams = true;
  snprintf(o->ts_path, sizeof o->ts_path, "timeseries.csv");
  snprintf(o->rq_path, sizeof o->rq_path, "requests.csv");
  put_headers(o);
  return KVSIM_OK;
}

int kvsim_run_output_open(const char *dir, const kvsim_scenario_t *sc, bool progress,
                          kvsim_run_output_t **out, kvsim_err *err) {
  kvsim_run_output_t *o = kvsim__calloc(1, sizeof *o);
  if (!o)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  o->sc = sc;
  o->progress = progress;
  o->ts_slot = o->rq_slot = o->xf_slot = -1;
  kvsim_dist_init(&o->ttft);
  kvsim_dist_init(&o->tpot);
  kvsim_dist_init(&o->e2e);
  kvsim_dist_init(&o->queue);
  kvsim_dist_init(&o->all_ttft);
  kvsim_dist_init(&o->all_tpot);
  kvsim_dist_init(&o->all_e2e);
  kvsim__reqlog_init(&o->recs);
  *out = o;
  if (!dir)
    return KVSIM_OK;
  snprintf(o->dir, sizeof o->dir, "%s", dir);
  int rc = kvsim_report_mkdirs(dir, err);
  if (rc < 0)
    return rc;
  snprintf(o->ts_path, sizeof o->ts_path, "%s/timeseries.csv", dir);
  snprintf(o->rq_path, sizeof o->rq_path, "%s/requests.csv", dir);
  o->ts = open_tmp(o->ts_tmp, sizeof o->ts_tmp, o->ts_path, &o->ts_buf, &o->ts_slot, err);
  if (!o->ts)
    return err->code;
  o->rq = open_tmp(o->rq_tmp, sizeof o->rq_tmp, o->rq_path, &o->rq_buf, &o->rq_slot, err);
  if (!o->rq)
    return err->code;
  put_headers(o);
  if (sc->disagg.enabled) {
    snprintf(o->xf_path, sizeof o->xf_path, "%s/transfer.csv", dir);
    if (!(o->xf = open_tmp(o->xf_tmp, sizeof o->xf_tmp, o->xf_path, &o->xf_buf, &o->xf_slot, err)))
      return err->code;
    fprintf(o->xf, "%s\n", kvsim_transfer_header);
  }
  return KVSIM_OK;
}

/* Row formatting without printf (report/rowfmt.h): these files have one
 * row per request and per sample, and printf's float path dominated the
 * run's cost. */
static char *put_i64(char *p, int64_t v) { return kvsim__put_i64(p, v); }

static char *put_fixed6(char *p, double x) { return kvsim__put_fixed6(p, x); }

static char *put_sep(char *p) {
  *p++ = ',';
  return p;
}

/* errno is the failed write's: the stream reports its error on the very
 * row whose buffer flush failed (a full disk, a file-size limit). */
static int write_failed(kvsim_run_output_t *o, const char *path) {
  int e = errno;
  if (!o->werr.code)
    kvsim_err_set(&o->werr, KVSIM_EIO, "%s: write failed: %s", path,
                  e ? strerror(e) : "input/output error");
  return KVSIM_EIO;
}

/* A transfer.csv row (disaggregated runs). */
static int on_transfer(void *ctx, const kvsim_disagg_sample_t *s) {
  kvsim_run_output_t *o = ctx;
  if (!o->xf)
    return KVSIM_OK;
  if (fprintf(o->xf, "%.6f,%.6f,%.6f,%lld,%lld,%lld,%lld,%lld,%lld\n", kvsim_time_to_s(s->time_ns),
              s->prefill_kv_usage, s->decode_kv_usage, (long long)s->prefill_blocks_held,
              (long long)s->prefill_inflight, (long long)s->prealloc_queue,
              (long long)s->transfer_queue, (long long)s->transfers_in_flight,
              (long long)s->bytes_in_flight) < 0)
    return kvsim_err_set(&o->werr, KVSIM_EIO, "%s: write failed: %s", o->xf_path, strerror(errno));
  return KVSIM_OK;
}

static int on_sample(void *ctx, const kvsim_sample_t *s) {
  kvsim_run_output_t *o = ctx;
  if (!o->ts)
    return KVSIM_OK;
  char line[512], *p = line;
  p = put_sep(put_fixed6(p, kvsim_time_to_s(s->time)));
  p = put_sep(put_i64(p, s->replica));
  p = put_sep(put_fixed6(p, s->kv_cache_usage));
  int64_t ints[] = {s->kv_blocks_used, s->kv_blocks_cached, s->kv_blocks_free,
                    s->num_requests_running, s->num_requests_waiting, s->num_requests_swapped,
                    s->num_preemptions_total, s->prefix_cache_queries_total,
                    s->prefix_cache_hits_total, s->prompt_tokens_total, s->generation_tokens_total};
  for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
    p = put_sep(put_i64(p, ints[i]));
  p = put_sep(put_fixed6(p, s->cpu_kv_cache_usage));
  p = put_sep(put_i64(p, s->kv_token_bytes));
  p = put_sep(put_i64(p, s->kv_allocated_bytes));
  p = put_sep(put_i64(p, s->kv_reserved_unused_bytes));
  p = put_i64(p, s->kv_internal_frag_bytes);
  if (o->retracts) {
    p = put_fixed6(put_sep(p), s->kv_cache_usage);
    p = put_i64(put_sep(p), s->num_preemptions_total);
  }
  *p++ = '\n';
  fwrite(line, 1, (size_t)(p - line), o->ts);
  return ferror(o->ts) ? write_failed(o, o->ts_path) : KVSIM_OK;
}

static char *put_time(char *p, kvsim_time_ns t) { return put_sep(kvsim__put_time_s(p, t)); }

static const char *status_name(kvsim_req_status s) {
  switch (s) {
  case KVSIM_REQ_FINISHED:
    return "finished";
  case KVSIM_REQ_REJECTED:
    return "rejected";
  case KVSIM_REQ_RUNNING:
    return "running";
  case KVSIM_REQ_SWAPPED:
    return "swapped";
  default:
    return "waiting";
  }
}

/* One row of requests.csv (ttft, tpot, e2e in seconds, -1 when not
 * measured). */
static int write_row(kvsim_run_output_t *o, const kvsim_request_t *r, bool done, double ttft, double tpot,
                     double e2e) {
  char line[512], *p = line;
  p = put_sep(put_i64(p, (int64_t)r->spec.id));
  p = put_sep(put_i64(p, r->replica));
  p = put_time(p, r->arrival);
  p = put_time(p, r->first_scheduled);
  p = put_time(p, r->first_token);
  p = put_time(p, done || r->status == KVSIM_REQ_REJECTED ? r->finish : KVSIM_TIME_NEVER);
  p = put_sep(put_i64(p, r->spec.prompt_tokens));
  p = put_sep(put_i64(p, done ? r->num_output : r->spec.output_tokens));
  p = put_sep(put_i64(p, r->num_cached_tokens));
  p = put_sep(put_i64(p, r->num_preemptions));
  if (done) {
    p = put_sep(put_fixed6(p, ttft));
    if (tpot >= 0)
      p = put_fixed6(p, tpot);
    p = put_sep(p);
    p = put_sep(put_fixed6(p, e2e));
  } else {
    p = put_sep(put_sep(put_sep(p)));
  }
  const char *st = status_name(r->status);
  size_t sl = strlen(st);
  memcpy(p, st, sl);
  p += sl;
  *p++ = '\n';
  fwrite(line, 1, (size_t)(p - line), o->rq);
  return ferror(o->rq) ? write_failed(o, o->rq_path) : KVSIM_OK;
}

/* A finished request's latencies into its record and the run's
 * distributions; *ttft, *tpot, *e2e for its row. */
static int add_finished(kvsim_run_output_t *o, const kvsim_request_t *r, kvsim__req_rec_t *rec, double *ttft,
                        double *tpot, double *e2e) {
  *ttft = kvsim_time_to_s(r->first_token - r->arrival);
  *e2e = kvsim_time_to_s(r->finish - r->arrival);
  if (r->num_output > 1)
    *tpot = kvsim_time_to_s(r->finish - r->first_token) / (double)(r->num_output - 1);
  o->finished_output_tokens += r->num_output;
  o->finished_prompt_tokens += r->num_prompt;
  const kvsim_scenario_t *sc = o->sc;
  rec->finished = true;
  rec->ttft = *ttft;
  rec->tpot = *tpot;
  rec->e2e = *e2e;
  rec->queue = kvsim_time_to_s(r->first_scheduled - r->arrival);
  rec->slo_ok = (sc->slo_ttft_p99_s <= 0 || *ttft <= sc->slo_ttft_p99_s) &&
                (sc->slo_tpot_p99_s <= 0 || *tpot < 0 || *tpot <= sc->slo_tpot_p99_s) &&
                (sc->slo_e2e_p99_s <= 0 || *e2e <= sc->slo_e2e_p99_s);
  int rc;
  if ((rc = kvsim_dist_add(&o->all_ttft, *ttft)) < 0 || (rc = kvsim_dist_add(&o->all_e2e, *e2e)) < 0 ||
      (*tpot >= 0 && (rc = kvsim_dist_add(&o->all_tpot, *tpot)) < 0))
    return rc;
  return KVSIM_OK;
}

/* A rejected request's reason, counted (the first NREASONS distinct ones). */
static void add_rejected(kvsim_run_output_t *o, const kvsim_request_t *r) {
  const char *why = r->reject_reason ? r->reject_reason : "rejected";
  for (int i = 0; i < NREASONS; i++) {
    if (!o->reasons[i].why)
      o->reasons[i].why = why;
    if (o->reasons[i].why == why || !strcmp(o->reasons[i].why, why)) {
      o->reasons[i].n++;
      break;
    }
  }
}

static int on_request(void *ctx, const kvsim_request_t *r) {
  kvsim_run_output_t *o = ctx;
  if (r->arrival != KVSIM_TIME_NEVER) {
    if (!o->arrivals || r->arrival < o->arrival_first)
      o->arrival_first = r->arrival;
    if (!o->arrivals || r->arrival > o->arrival_last)
      o->arrival_last = r->arrival;
    o->arrivals++;
  }
  bool done = r->status == KVSIM_REQ_FINISHED;
  double ttft = -1, tpot = -1, e2e = -1;
  kvsim__req_rec_t rec = {.arrival = r->arrival, .priority = r->spec.priority, .tpot = -1};
  int rc;
  if (done) {
    if ((rc = add_finished(o, r, &rec, &ttft, &tpot, &e2e)) < 0)
      return rc;
  } else if (r->status == KVSIM_REQ_REJECTED) {
    rec.rejected = true;
    add_rejected(o, r);
  } else if (r->status == KVSIM_REQ_RUNNING || r->status == KVSIM_REQ_SWAPPED) {
    o->in_flight_running++;
  } else {
    o->in_flight_waiting++;
  }
  if (r->arrival != KVSIM_TIME_NEVER && (rc = kvsim__reqlog_add(&o->recs, &rec)) < 0)
    return rc;
  return o->rq ? write_row(o, r, done, ttft, tpot, e2e) : KVSIM_OK;
}

static void on_progress(void *ctx, kvsim_time_ns now, int64_t done, int64_t in_flight) {
  kvsim_run_output_t *o = ctx;
  if (!o->progress)
    return;
  fprintf(stderr, "\r  t=%.1fs  done %lld  in flight %lld   ", kvsim_time_to_s(now),
          (long long)done, (long long)in_flight);
  fflush(stderr);
}

kvsim_sink_t kvsim_run_output_sink(kvsim_run_output_t *o) {
  kvsim_sink_t s = {o, on_sample, on_request, on_progress, on_transfer};
  return s;
}

static double rounded(double x, double unit) { return round(x / unit) * unit; }

/* Latencies in seconds, rounded to the nanosecond the simulation keeps.
 * With no sample (nothing finished, or no request had a second token for
 * TPOT) every statistic is NAN, null in summary.json: a distribution of
 * nothing has no 0 s percentile. */
static kvsim_latency_t latency_of(kvsim_dist_t *d) {
  if (!d->n)
    return (kvsim_latency_t){0, NAN, NAN, NAN, NAN, NAN};
  kvsim_latency_t l = {d->n,
                       rounded(kvsim_dist_mean(d), 1e-9),
                       rounded(kvsim_dist_quantile(d, 0.50), 1e-9),
                       rounded(kvsim_dist_quantile(d, 0.90), 1e-9),
                       rounded(kvsim_dist_quantile(d, 0.99), 1e-9),
                       rounded(d->max, 1e-9)};
  return l;
}

/* A target against its distribution's p99 (l). With no request finished
 * there is no p99 and the target is not met: a run that served nothing.
 * With requests finished but no sample of this metric (only TPOT can be
 * empty then: every request had one output token) there is no p99
 * either, yet no request missed the target: the per-request attainment
 * counts them as meeting, and so does the target, saying why. */
static kvsim_slo_result_t slo_of(double target, const kvsim_latency_t *l, int64_t finished) {
  kvsim_slo_result_t r = {target > 0, target, l->p99, l->count > 0 && l->p99 <= target, ""};
  if (finished > 0 && l->count == 0)
    r.met = true;
  if (r.given && l->count == 0)
    snprintf(r.reason, sizeof r.reason, "%s",
             finished ? "no request had a second token" : "no request finished");
  return r;
}

static void summarise_requests(kvsim_run_output_t *o, const kvsim_run_stats_t *st,
                               kvsim_summary_t *s) {
  s->requests_total = st->requests_arrived;
  s->requests_finished = st->requests_finished;
  s->requests_rejected = st->requests_rejected;
  s->rejected_too_long = st->rejected_too_long;
  s->rejected_no_fit = st->rejected_no_fit;
  s->running_at_end = o->in_flight_running;
  s->waiting_at_end = o->in_flight_waiting;
  s->skipped_rows = st->skipped_rows;
  for (int i = 0; i < NREASONS && o->reasons[i].why; i++) {
    snprintf(s->rejected_reasons[i].why, sizeof s->rejected_reasons[i].why, "%s", o->reasons[i].why);
    s->rejected_reasons[i].n = o->reasons[i].n;
    s->nreasons = i + 1;
  }
  double t0 = st->first_arrival == KVSIM_TIME_NEVER ? 0 : kvsim_time_to_s(st->first_arrival);
  s->simulated_time_s = kvsim_time_to_s(st->end_time);
  s->makespan_s = st->last_finish > 0 ? kvsim_time_to_s(st->last_finish) - t0 : 0;
  double span = s->makespan_s > 0 ? s->makespan_s : 1;
  s->requests_per_s = (double)st->requests_finished / span;
  s->output_tokens_per_s = (double)o->finished_output_tokens / span;
  s->prompt_tokens_per_s = (double)o->finished_prompt_tokens / span;
  s->total_tokens_per_s = (double)(o->finished_prompt_tokens + o->finished_output_tokens) / span;
}

/* The priority slot of one level, in the order the levels were first seen
 * finishing; NULL past NPRIO levels. */
static prio_stat_t *prio_slot(kvsim_run_output_t *o, int32_t priority) {
  for (int i = 0; i < NPRIO; i++) {
    prio_stat_t *p = &o->prio[i];
    if (!p->used) {
      p->used = true;
      p->priority = priority;
      kvsim_dist_init(&p->ttft);
      kvsim_dist_init(&p->e2e);
      o->nprio = i + 1;
    }
    if (p->priority == priority)
      return p;
  }
  return NULL;
}

/* The distributions of the requests that arrived inside the steady window
 * (kvsim/steady.h), and the SLO attainment over them. */
static int rec_rewind(void *ctx) { return kvsim__reqlog_rewind(ctx); }

static int rec_next(void *ctx, int64_t *t) {
  kvsim__req_rec_t r;
  int rc = kvsim__reqlog_next(ctx, &r);
  if (rc > 0)
    *t = r.arrival;
  return rc;
}

/* The window over the log's arrivals: sorted in memory while they all
 * are, else selected in passes over the spilled file. */
static int steady_window(kvsim__reqlog_t *l, kvsim_steady_t *w) {
  if (l->spill) {
    const kvsim_steady_reader_t rd = {rec_rewind, rec_next, l};
    return kvsim_steady_window_stream(&rd, l->n, l->first, l->last, w);
  }
  int64_t *t = kvsim__malloc((size_t)(l->n ? l->n : 1) * sizeof *t);
  if (!t)
    return KVSIM_ENOMEM;
  for (int64_t i = 0; i < l->n; i++)
    t[i] = l->mem[i].arrival;
  int rc = kvsim_steady_window(t, l->n, w);
  free(t);
  return rc;
}

/* The distributions of the requests that arrived inside the steady window
 * (kvsim/steady.h), and the SLO attainment over them. */
static int count_steady(kvsim_run_output_t *o) {
  int rc = steady_window(&o->recs, &o->steady);
  if (rc < 0 || (rc = kvsim__reqlog_rewind(&o->recs)) < 0)
    return rc;
  kvsim__req_rec_t rec;
  const kvsim__req_rec_t *r = &rec;
  while ((rc = kvsim__reqlog_next(&o->recs, &rec)) > 0) {
    if (!kvsim_steady_contains(&o->steady, r->arrival) || !(r->finished || r->rejected))
      continue;
    o->slo_n++; /* a rejected request missed its SLO */
    if (!r->finished)
      continue;
    o->slo_ok += r->slo_ok;
    prio_stat_t *p = prio_slot(o, r->priority);
    if ((rc = kvsim_dist_add(&o->ttft, r->ttft)) < 0 || (rc = kvsim_dist_add(&o->e2e, r->e2e)) < 0 ||
        (rc = kvsim_dist_add(&o->queue, r->queue)) < 0 ||
        (r->tpot >= 0 && (rc = kvsim_dist_add(&o->tpot, r->tpot)) < 0) ||
        (p && ((rc = kvsim_dist_add(&p->ttft, r->ttft)) < 0 || (rc = kvsim_dist_add(&p->e2e, r->e2e)) < 0)))
      return rc;
  }
  if (rc < 0)
    return rc;
  kvsim_steady_judge(&o->steady, o->e2e.n, kvsim_dist_mean(&o->e2e));
  return KVSIM_OK;
}

static void summarise_steady(kvsim_run_output_t *o, kvsim_summary_t *s) {
  s->steady = o->steady;
  s->all_ttft = latency_of(&o->all_ttft);
  s->all_tpot = latency_of(&o->all_tpot);
  s->all_e2e = latency_of(&o->all_e2e);
}

static int summarise_latency(kvsim_run_output_t *o, kvsim_summary_t *s) {
  int rc = count_steady(o);
  if (rc < 0)
    return rc;
  summarise_steady(o, s);
  s->ttft = latency_of(&o->ttft);
  s->tpot = latency_of(&o->tpot);
  s->e2e = latency_of(&o->e2e);
  s->queue = latency_of(&o->queue);
  if (o->nprio > 1) {
    /* Priority scheduling: each level's latency, lowest value first. */
    bool done[NPRIO] = {false};
    for (int k = 0; k < o->nprio; k++) {
      int best = -1;
      for (int i = 0; i < o->nprio; i++)
        if (!done[i] && (best < 0 || o->prio[i].priority < o->prio[best].priority))
          best = i;
      done[best] = true;
      s->by_priority[k].priority = o->prio[best].priority;
      s->by_priority[k].ttft = latency_of(&o->prio[best].ttft);
      s->by_priority[k].e2e = latency_of(&o->prio[best].e2e);
    }
    s->npriorities = o->nprio;
  }
  s->percentiles_exact = kvsim_dist_exact(&o->e2e);
  /* latency.calibration, and the +/- band until ranges replace it. */
  kvsim_summary_set_calibration(s, &o->sc->gpu, o->sc->model.num_experts > 0);
  return KVSIM_OK;
}

static void summarise_cache(kvsim_run_output_t *o, const kvsim_run_stats_t *st, kvsim_summary_t *s) {
  const kvsim_scenario_t *sc = o->sc;
  s->kv_usage_peak = rounded(st->kv_usage_peak, 1e-6);
  s->kv_usage_mean = rounded(st->kv_usage_mean, 1e-6);
  s->running_mean = rounded(st->running_mean, 1e-6);
  s->waiting_mean = rounded(st->waiting_mean, 1e-6);
  s->evictions = st->evictions;
  s->kv_allocated_token_fraction = rounded(st->kv_token_fraction_mean, 1e-6);
  s->kv_reserved_unused_bytes_mean = rounded(st->kv_reserved_unused_bytes_mean, 1);
  s->kv_internal_frag_bytes_mean = rounded(st->kv_internal_frag_bytes_mean, 1);
  s->preemptions = st->preemptions;
  s->requests_preempted = st->requests_preempted;
  s->preemptions_are_retractions = sc->sched_ops && sc->sched_ops->defaults.retracts;
  if (st->plan.p.spec.method != KVSIM_SPEC_NONE) {
    snprintf(s->spec_method, sizeof s->spec_method, "%s", kvsim_spec_method_name(st->plan.p.spec.method));
    s->spec_tokens = st->plan.p.spec.num_speculative_tokens;
    s->spec_drafts = st->spec_drafts;
    s->spec_accepted = st->spec_accepted;
  }

  if (st->resolved.sched.max_loras > 0) {
    s->lora_max_loras = st->resolved.sched.max_loras;
    s->lora_max_cpu_loras = st->resolved.sched.max_cpu_loras;
    s->lora_rank = st->plan.p.lora.max_lora_rank;
    s->lora_requests = st->lora_requests;
    s->lora_loads = st->lora_loads;
    s->lora_cpu_misses = st->lora_cpu_misses;
    s->lora_skips = st->lora_skips;
    s->lora_load_s = rounded(st->lora_load_s, 1e-6);
    s->lora_kernel_s = rounded(st->lora_kernel_s, 1e-6);
  }

  s->prefix_caching = st->resolved.sched.enable_prefix_caching;
  s->prefix_queries = st->prefix_queries;
  s->prefix_hits = st->prefix_hits;
  s->prefix_hit_rate = st->prefix_queries ? (double)st->prefix_hits / (double)st->prefix_queries : 0;
  /* Per request, as vllm:prompt_tokens_cached counts it: the hit of each
   * request's first admission over its prompt, not inflated by a blocked
   * request being looked up again every step. */
  s->prompt_tokens_cached = st->cached_tokens;
  s->prompt_tokens_cached_fraction =
      o->finished_prompt_tokens ? (double)st->cached_tokens / (double)o->finished_prompt_tokens : 0;
  s->prefix_isolation_lost = st->prefix_isolation_lost;
  s->prefix_hit_rate_without_isolation =
      st->prefix_queries
          ? (double)(st->prefix_hits + st->prefix_isolation_lost) / (double)st->prefix_queries
          : 0;
  s->prefix_preempted_queries = st->prefix_preempted_queries;
  s->prefix_preempted_hits = st->prefix_preempted_hits;

  s->has_cpu_tier = sc->offload.cpu_gib > 0 || sc->swap_space_gib > 0;
  s->cpu_offload = sc->offload.cpu_gib > 0;
  s->transfers_overlap = sc->offload.overlap;
  s->cpu_bytes_to_cpu = st->cpu_bytes_to_cpu;
  s->cpu_bytes_to_gpu = st->cpu_bytes_to_gpu;
  s->cpu_blocks_stored = st->cpu_stores;
  s->cpu_evictions = st->cpu_evictions;
  s->ext_prefix_queries = st->ext_prefix_queries;
  s->ext_prefix_hits = st->ext_prefix_hits;
  s->cpu_transfer_s = rounded(st->cpu_transfer_s, 1e-9);
  s->transfer_wait_s = rounded(st->transfer_wait_s, 1e-9);
}

static int build_summary(kvsim_run_output_t *o, const kvsim_run_stats_t *st, kvsim_summary_t *s) {
  const kvsim_scenario_t *sc = o->sc;
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", sc->name);
  s->seed = sc->seed;
  s->plan = st->resolved.plan;
  s->pool_usable_blocks = st->resolved.pool_usable;
  summarise_requests(o, st, s);
  int rc = summarise_latency(o, s);
  if (rc < 0)
    return rc;
  summarise_cache(o, st, s);
  s->slo_ttft_p99 = slo_of(sc->slo_ttft_p99_s, &s->ttft, s->requests_finished);
  s->slo_tpot_p99 = slo_of(sc->slo_tpot_p99_s, &s->tpot, s->requests_finished);
  s->slo_e2e_p99 = slo_of(sc->slo_e2e_p99_s, &s->e2e, s->requests_finished);
  s->slo_attainment = o->slo_n ? (double)o->slo_ok / (double)o->slo_n : 0;
  s->steps = st->steps;
  s->sequence_steps = st->sequence_steps;
  s->busy_s = rounded(st->busy_s, 1e-6);
  kvsim_summary_set_cluster(s, st);
  s->disagg_cfg = o->sc->disagg;
  double span = kvsim_time_to_s(o->arrival_last - o->arrival_first);
  kvsim__diag_input_t in = {
      .frac_kv_full = st->frac_samples_kv_full,
      .frac_seq_bound = st->frac_samples_seq_bound,
      .offered_rate = o->arrivals > 1 && span > 0 ? (double)(o->arrivals - 1) / span : 0,
      .hbm_GBps = sc->gpu.hbm_bandwidth_GBps,
      .comm_share = st->mean_step.total_s > 0 ? st->mean_step.comm_s / st->mean_step.total_s : 0,
      .gpu = &sc->gpu,
      .rejected_too_long = st->rejected_too_long,
      .rejected_admission = st->rejected_admission,
      .rejected_no_fit = st->rejected_no_fit};
  /* The diagnosis' rules read one pool and one queue: a disaggregated
   * run's are two, and those findings (and their advice, measured by
   * changing hardware.replicas) would misname the cause; its own rule
   * says which side or the link bounds it. */
  if (!st->disaggregated)
    kvsim__diagnose(&in, s);
  else
    kvsim__diagnose_disagg(&in, s);
  kvsim__diagnose_calibration(&s->calibration, s);
  return KVSIM_OK;
}

int kvsim_run_output_finish(kvsim_run_output_t *o, const kvsim_run_stats_t *st, bool commit,
                            kvsim_err *err) {
  int rc = build_summary(o, st, &o->summary);
  if (rc < 0)
    return kvsim_err_set(err, rc, "%s: %s", o->sc->name,
                         rc == KVSIM_EIO ? "cannot read or write the temporary file of the steady window"
                                         : "out of memory for the run's summary");
  o->has_summary = true;
  return commit ? kvsim_run_output_commit(o, err) : KVSIM_OK;
}

void kvsim_run_output_merge_ranges(kvsim_run_output_t *o, const kvsim_summary_t *edges, int n,
                                   const kvsim_band_edge_t *lo, const kvsim_band_edge_t *hi) {
  assert(o->has_summary);
  kvsim_summary_merge_ranges(&o->summary, edges, n, lo, hi);
}

int kvsim_run_output_commit(kvsim_run_output_t *o, kvsim_err *err) {
  assert(o->has_summary);
  if (!o->dir[0] || !o->ts)
    return KVSIM_OK; /* no folder, or committed already */
  FILE **files[] = {&o->ts, &o->rq, &o->xf};
  const char *names[] = {o->ts_path, o->rq_path, o->xf_path};
  int bad = -1, e = 0;
  for (int i = 0; i < (o->xf ? 3 : 2); i++) {
    errno = 0;
    bool ok = fflush(*files[i]) == 0 && !ferror(*files[i]);
    ok &= fclose(*files[i]) == 0;
    *files[i] = NULL;
    if (!ok && bad < 0) {
      bad = i;
      e = errno;
    }
  }
  if (bad >= 0)
    return kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", names[bad],
                         e ? strerror(e) : "input/output error");
  cJSON *j = kvsim_summary_json(&o->summary, o->sc);
  char *text = j ? kvsim_report_json_string(j) : NULL;
  cJSON_Delete(j);
  if (!text)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory for summary.json", o->dir);
  char path[4200];
  snprintf(path, sizeof path, "%s/summary.json", o->dir);
  size_t len = strlen(text);
  text[len] = '\n';
  int rc = kvsim_report_write_atomic(path, text, len + 1, err);
  free(text);
  if (rc < 0)
    return rc;
  if (rename(o->ts_tmp, o->ts_path) != 0 || rename(o->rq_tmp, o->rq_path) != 0 ||
      (o->xf_tmp[0] && rename(o->xf_tmp, o->xf_path) != 0))
    return kvsim_err_set(err, KVSIM_EIO, "%s: rename failed: %s", o->dir, strerror(errno));
  o->ts_tmp[0] = o->rq_tmp[0] = o->xf_tmp[0] = '\0';
  kvsim__tmp_forget(o->ts_slot);
  kvsim__tmp_forget(o->rq_slot);
  kvsim__tmp_forget(o->xf_slot);
  o->ts_slot = o->rq_slot = o->xf_slot = -1;
  return KVSIM_OK;
}

int kvsim_run_output_failed(const kvsim_run_output_t *o, kvsim_err *err) {
  if (!o || !o->werr.code)
    return KVSIM_OK;
  if (err)
    *err = o->werr;
  return o->werr.code;
}

const kvsim_summary_t *kvsim_run_output_summary(const kvsim_run_output_t *o) {
  return o->has_summary ? &o->summary : NULL;
}

void kvsim_run_output_close(kvsim_run_output_t *o) {
  if (!o)
    return;
  if (o->ts && !o->streams)
    fclose(o->ts);
  if (o->rq && !o->streams)
    fclose(o->rq);
  if (o->ts_tmp[0])
    remove(o->ts_tmp);
  if (o->rq_tmp[0])
    remove(o->rq_tmp);
  if (o->xf)
    fclose(o->xf);
  if (o->xf_tmp[0])
    remove(o->xf_tmp);
  kvsim__tmp_forget(o->ts_slot);
  kvsim__tmp_forget(o->rq_slot);
  kvsim__tmp_forget(o->xf_slot);
  free(o->ts_buf);
  free(o->rq_buf);
  free(o->xf_buf);
  kvsim_dist_fini(&o->ttft);
  kvsim_dist_fini(&o->tpot);
  kvsim_dist_fini(&o->e2e);
  kvsim_dist_fini(&o->queue);
  kvsim_dist_fini(&o->all_ttft);
  kvsim_dist_fini(&o->all_tpot);
  kvsim_dist_fini(&o->all_e2e);
  kvsim__reqlog_fini(&o->recs);
  for (int i = 0; i < o->nprio; i++) {
    kvsim_dist_fini(&o->prio[i].ttft);
    kvsim_dist_fini(&o->prio[i].e2e);
  }
  free(o);
}
