#include "kvsim/run_output.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvsim/report.h"
#include "kvsim/stats.h"
#include "report/diagnosis.h"

const char *const kvsim_timeseries_header =
    "time_s,replica,kv_cache_usage_perc,kv_blocks_used,kv_blocks_cached,kv_blocks_free,"
    "num_requests_running,num_requests_waiting,num_requests_swapped,num_preemptions_total,"
    "prefix_cache_queries_total,prefix_cache_hits_total,prompt_tokens_total,"
    "generation_tokens_total,cpu_kv_cache_usage_perc,kv_token_bytes,kv_allocated_bytes,"
    "kv_reserved_unused_bytes,kv_internal_fragmentation_bytes";
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
  FILE *ts, *rq;
  char *ts_buf, *rq_buf;
  bool progress;
  kvsim_dist_t ttft, tpot, e2e, queue;
  int64_t slo_ok, slo_n;
  int64_t finished_output_tokens, finished_prompt_tokens;
  struct {
    const char *why;
    int64_t n;
  } reasons[NREASONS];
  int64_t in_flight_running, in_flight_waiting;
  prio_stat_t prio[NPRIO];
  int nprio;
  cJSON *summary;
};

static int mkdirs(const char *dir, kvsim_err *err) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0777) < 0 && errno != EEXIST)
        return kvsim_err_set(err, KVSIM_EIO, "%s: cannot create folder: %s", buf, strerror(errno));
      *p = '/';
    }
  if (mkdir(buf, 0777) < 0 && errno != EEXIST)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot create folder: %s", buf, strerror(errno));
  return KVSIM_OK;
}

static FILE *open_tmp(char *tmp, size_t cap, const char *path, char **buf, kvsim_err *err) {
  snprintf(tmp, cap, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f) {
    kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
    return NULL;
  }
  /* Large buffers: these files are written a row at a time. */
  *buf = malloc(1 << 16);
  if (*buf)
    setvbuf(f, *buf, _IOFBF, 1 << 16);
  return f;
}

int kvsim_run_output_open(const char *dir, const kvsim_scenario_t *sc, bool progress,
                          kvsim_run_output_t **out, kvsim_err *err) {
  kvsim_run_output_t *o = calloc(1, sizeof *o);
  if (!o)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  o->sc = sc;
  o->progress = progress;
  kvsim_dist_init(&o->ttft);
  kvsim_dist_init(&o->tpot);
  kvsim_dist_init(&o->e2e);
  kvsim_dist_init(&o->queue);
  *out = o;
  if (!dir)
    return KVSIM_OK;
  snprintf(o->dir, sizeof o->dir, "%s", dir);
  int rc = mkdirs(dir, err);
  if (rc < 0)
    return rc;
  snprintf(o->ts_path, sizeof o->ts_path, "%s/timeseries.csv", dir);
  snprintf(o->rq_path, sizeof o->rq_path, "%s/requests.csv", dir);
  o->ts = open_tmp(o->ts_tmp, sizeof o->ts_tmp, o->ts_path, &o->ts_buf, err);
  if (!o->ts)
    return err->code;
  o->rq = open_tmp(o->rq_tmp, sizeof o->rq_tmp, o->rq_path, &o->rq_buf, err);
  if (!o->rq)
    return err->code;
  fprintf(o->ts, "%s\n", kvsim_timeseries_header);
  fprintf(o->rq, "%s\n", kvsim_requests_header);
  return KVSIM_OK;
}

/* Row formatting without printf: these files have one row per request
 * and per sample, and printf's float path dominated the run's cost.
 * Fixed six decimals (microseconds), rounded half away from zero. */
static char *put_i64(char *p, int64_t v) {
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
  if (v < 0)
    *p++ = '-';
  do {
    tmp[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  while (n)
    *p++ = tmp[--n];
  return p;
}

static char *put_fixed6(char *p, double x) {
  int64_t v = llround(x * 1e6);
  if (v < 0) {
    *p++ = '-';
    v = -v;
  }
  p = put_i64(p, v / 1000000);
  *p++ = '.';
  int64_t f = v % 1000000;
  for (int64_t d = 100000; d; d /= 10)
    *p++ = (char)('0' + (f / d) % 10);
  return p;
}

static char *put_sep(char *p) {
  *p++ = ',';
  return p;
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
  *p++ = '\n';
  fwrite(line, 1, (size_t)(p - line), o->ts);
  return ferror(o->ts) ? KVSIM_EIO : KVSIM_OK;
}

static char *put_time(char *p, kvsim_time_ns t) {
  if (t != KVSIM_TIME_NEVER) {
    /* Integer nanoseconds to microseconds, rounded half up, no float. */
    int64_t us = t >= 0 ? (t + 500) / 1000 : -((-t + 500) / 1000);
    if (us < 0) {
      *p++ = '-';
      us = -us;
    }
    p = put_i64(p, us / 1000000);
    *p++ = '.';
    for (int64_t d = 100000, f = us % 1000000; d; d /= 10)
      *p++ = (char)('0' + (f / d) % 10);
  }
  return put_sep(p);
}

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

static int on_request(void *ctx, const kvsim_request_t *r) {
  kvsim_run_output_t *o = ctx;
  bool done = r->status == KVSIM_REQ_FINISHED;
  double ttft = -1, tpot = -1, e2e = -1;
  if (done) {
    ttft = kvsim_time_to_s(r->first_token - r->arrival);
    e2e = kvsim_time_to_s(r->finish - r->arrival);
    if (r->num_output > 1)
      tpot = kvsim_time_to_s(r->finish - r->first_token) / (double)(r->num_output - 1);
    int rc;
    if ((rc = kvsim_dist_add(&o->ttft, ttft)) < 0 || (rc = kvsim_dist_add(&o->e2e, e2e)) < 0 ||
        (rc = kvsim_dist_add(&o->queue, kvsim_time_to_s(r->first_scheduled - r->arrival))) < 0 ||
        (tpot >= 0 && (rc = kvsim_dist_add(&o->tpot, tpot)) < 0))
      return rc;
    o->finished_output_tokens += r->num_output;
    o->finished_prompt_tokens += r->num_prompt;
    for (int i = 0; i < NPRIO; i++) {
      prio_stat_t *p = &o->prio[i];
      if (!p->used) {
        p->used = true;
        p->priority = r->spec.priority;
        kvsim_dist_init(&p->ttft);
        kvsim_dist_init(&p->e2e);
        o->nprio = i + 1;
      }
      if (p->priority == r->spec.priority) {
        if ((rc = kvsim_dist_add(&p->ttft, ttft)) < 0 || (rc = kvsim_dist_add(&p->e2e, e2e)) < 0)
          return rc;
        break;
      }
    }
    const kvsim_scenario_t *sc = o->sc;
    bool ok = (sc->slo_ttft_p99_s <= 0 || ttft <= sc->slo_ttft_p99_s) &&
              (sc->slo_tpot_p99_s <= 0 || tpot < 0 || tpot <= sc->slo_tpot_p99_s) &&
              (sc->slo_e2e_p99_s <= 0 || e2e <= sc->slo_e2e_p99_s);
    o->slo_ok += ok;
    o->slo_n++;
  } else if (r->status == KVSIM_REQ_REJECTED) {
    const char *why = r->reject_reason ? r->reject_reason : "rejected";
    for (int i = 0; i < NREASONS; i++) {
      if (!o->reasons[i].why)
        o->reasons[i].why = why;
      if (o->reasons[i].why == why || !strcmp(o->reasons[i].why, why)) {
        o->reasons[i].n++;
        break;
      }
    }
    o->slo_n++; /* a rejected request missed its SLO */
  } else if (r->status == KVSIM_REQ_RUNNING || r->status == KVSIM_REQ_SWAPPED) {
    o->in_flight_running++;
  } else {
    o->in_flight_waiting++;
  }
  if (!o->rq)
    return KVSIM_OK;
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
  return ferror(o->rq) ? KVSIM_EIO : KVSIM_OK;
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
  kvsim_sink_t s = {o, on_sample, on_request, on_progress};
  return s;
}

static double rounded(double x, double unit) { return round(x / unit) * unit; }

/* Latencies in seconds, rounded to the nanosecond the simulation keeps. */
static cJSON *dist_json(kvsim_dist_t *d) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "count", (double)d->n);
  cJSON_AddNumberToObject(j, "mean", rounded(kvsim_dist_mean(d), 1e-9));
  cJSON_AddNumberToObject(j, "p50", rounded(kvsim_dist_quantile(d, 0.50), 1e-9));
  cJSON_AddNumberToObject(j, "p90", rounded(kvsim_dist_quantile(d, 0.90), 1e-9));
  cJSON_AddNumberToObject(j, "p99", rounded(kvsim_dist_quantile(d, 0.99), 1e-9));
  cJSON_AddNumberToObject(j, "max", rounded(d->n ? d->max : 0, 1e-9));
  return j;
}

static void add_slo(cJSON *slo, const char *key, double target, double actual) {
  if (target <= 0)
    return;
  cJSON *t = cJSON_AddObjectToObject(slo, key);
  cJSON_AddNumberToObject(t, "target", target);
  cJSON_AddNumberToObject(t, "actual", rounded(actual, 1e-9));
  cJSON_AddBoolToObject(t, "met", actual <= target);
}

static cJSON *build_summary(kvsim_run_output_t *o, const kvsim_run_stats_t *st) {
  const kvsim_scenario_t *sc = o->sc;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "name", sc->name);
  cJSON_AddNumberToObject(j, "seed", (double)sc->seed);
  cJSON_AddStringToObject(j, "kvsim_version", KVSIM_VERSION);
  cJSON_AddItemToObject(j, "config", cJSON_Duplicate(sc->resolved, 1));
  cJSON_AddItemToObject(j, "workload_resolved", kvsim_workload_cfg_json(sc->workload));
  cJSON *plan = cJSON_AddObjectToObject(j, "memory_plan");
  kvsim_report_plan_json(&st->plan, &sc->model, &sc->gpu, plan);
  cJSON_AddNumberToObject(plan, "pool_usable_blocks", (double)st->pool_blocks);

  cJSON *rq = cJSON_AddObjectToObject(j, "requests");
  cJSON_AddNumberToObject(rq, "total", (double)st->requests_arrived);
  cJSON_AddNumberToObject(rq, "finished", (double)st->requests_finished);
  cJSON_AddNumberToObject(rq, "rejected", (double)st->requests_rejected);
  cJSON_AddNumberToObject(rq, "running_at_end", (double)o->in_flight_running);
  cJSON_AddNumberToObject(rq, "waiting_at_end", (double)o->in_flight_waiting);
  cJSON_AddNumberToObject(rq, "skipped_rows", (double)st->skipped_rows);
  cJSON *why = cJSON_AddObjectToObject(rq, "rejected_reasons");
  for (int i = 0; i < NREASONS && o->reasons[i].why; i++)
    cJSON_AddNumberToObject(why, o->reasons[i].why, (double)o->reasons[i].n);

  double t0 = st->first_arrival == KVSIM_TIME_NEVER ? 0 : kvsim_time_to_s(st->first_arrival);
  double makespan = st->last_finish > 0 ? kvsim_time_to_s(st->last_finish) - t0 : 0;
  cJSON_AddNumberToObject(j, "simulated_time_s", kvsim_time_to_s(st->end_time));
  cJSON_AddNumberToObject(j, "makespan_s", makespan);
  cJSON *tp = cJSON_AddObjectToObject(j, "throughput");
  double span = makespan > 0 ? makespan : 1;
  cJSON_AddNumberToObject(tp, "requests_per_s", (double)st->requests_finished / span);
  cJSON_AddNumberToObject(tp, "output_tokens_per_s", (double)o->finished_output_tokens / span);
  cJSON_AddNumberToObject(tp, "prompt_tokens_per_s", (double)o->finished_prompt_tokens / span);
  cJSON_AddNumberToObject(tp, "total_tokens_per_s",
                          (double)(o->finished_prompt_tokens + o->finished_output_tokens) / span);

  cJSON *lat = cJSON_AddObjectToObject(j, "latency");
  cJSON_AddItemToObject(lat, "ttft_s", dist_json(&o->ttft));
  cJSON_AddItemToObject(lat, "tpot_s", dist_json(&o->tpot));
  cJSON_AddItemToObject(lat, "e2e_s", dist_json(&o->e2e));
  cJSON_AddItemToObject(lat, "queue_s", dist_json(&o->queue));
  if (o->nprio > 1) {
    /* Priority scheduling: each level's latency, lowest value first. */
    cJSON *by = cJSON_AddArrayToObject(lat, "by_priority");
    bool done[NPRIO] = {false};
    for (int k = 0; k < o->nprio; k++) {
      int best = -1;
      for (int i = 0; i < o->nprio; i++)
        if (!done[i] && (best < 0 || o->prio[i].priority < o->prio[best].priority))
          best = i;
      done[best] = true;
      cJSON *e = cJSON_CreateObject();
      cJSON_AddNumberToObject(e, "priority", o->prio[best].priority);
      cJSON_AddItemToObject(e, "ttft_s", dist_json(&o->prio[best].ttft));
      cJSON_AddItemToObject(e, "e2e_s", dist_json(&o->prio[best].e2e));
      cJSON_AddItemToArray(by, e);
    }
  }
  cJSON_AddStringToObject(lat, "percentiles",
                          kvsim_dist_exact(&o->e2e) ? "exact" : "histogram (0.1% resolution)");
  /* The +/- band from the calibration residuals of this GPU (gpu.h). */
  const kvsim_gpu_perf_t *cal = &sc->gpu.perf;
  if (cal->ttft_rel_sigma > 0 || cal->tpot_rel_sigma > 0) {
    cJSON *band = cJSON_AddObjectToObject(lat, "uncertainty");
    cJSON_AddNumberToObject(band, "ttft_p99_s", cal->ttft_rel_sigma * kvsim_dist_quantile(&o->ttft, 0.99));
    cJSON_AddNumberToObject(band, "tpot_p99_s", cal->tpot_rel_sigma * kvsim_dist_quantile(&o->tpot, 0.99));
    cJSON_AddNumberToObject(band, "e2e_p99_s",
                            (cal->ttft_rel_sigma > cal->tpot_rel_sigma ? cal->ttft_rel_sigma : cal->tpot_rel_sigma) *
                                kvsim_dist_quantile(&o->e2e, 0.99));
    cJSON_AddStringToObject(band, "source", cal->source);
  }

  cJSON *kv = cJSON_AddObjectToObject(j, "kv_cache");
  cJSON_AddNumberToObject(kv, "usage_peak", rounded(st->kv_usage_peak, 1e-6));
  cJSON_AddNumberToObject(kv, "usage_mean", rounded(st->kv_usage_mean, 1e-6));
  cJSON_AddNumberToObject(kv, "running_mean", rounded(st->running_mean, 1e-6));
  cJSON_AddNumberToObject(kv, "waiting_mean", rounded(st->waiting_mean, 1e-6));
  cJSON_AddNumberToObject(kv, "evictions", (double)st->evictions);
  cJSON_AddNumberToObject(kv, "kv_allocated_token_fraction", rounded(st->kv_token_fraction_mean, 1e-6));
  cJSON_AddNumberToObject(kv, "kv_reserved_unused_bytes_mean", rounded(st->kv_reserved_unused_bytes_mean, 1));
  cJSON_AddNumberToObject(kv, "kv_internal_fragmentation_bytes_mean", rounded(st->kv_internal_frag_bytes_mean, 1));

  cJSON *pre = cJSON_AddObjectToObject(j, "preemptions");
  cJSON_AddNumberToObject(pre, "total", (double)st->preemptions);
  cJSON_AddNumberToObject(pre, "requests_preempted", (double)st->requests_preempted);

  cJSON *pc = cJSON_AddObjectToObject(j, "prefix_cache");
  cJSON_AddBoolToObject(pc, "enabled", sc->sched.enable_prefix_caching);
  cJSON_AddNumberToObject(pc, "queries_tokens", (double)st->prefix_queries);
  cJSON_AddNumberToObject(pc, "hits_tokens", (double)st->prefix_hits);
  cJSON_AddNumberToObject(pc, "hit_rate",
                          st->prefix_queries ? (double)st->prefix_hits / (double)st->prefix_queries : 0);
  /* Per request, as vllm:prompt_tokens_cached counts it: the hit of each
   * request's first admission over its prompt, not inflated by a blocked
   * request being looked up again every step. */
  cJSON_AddNumberToObject(pc, "prompt_tokens_cached", (double)st->cached_tokens);
  cJSON_AddNumberToObject(pc, "prompt_tokens_cached_fraction",
                          o->finished_prompt_tokens ? (double)st->cached_tokens / (double)o->finished_prompt_tokens : 0);
  cJSON_AddNumberToObject(pc, "hits_lost_to_tenant_isolation_tokens", (double)st->prefix_isolation_lost);
  cJSON_AddNumberToObject(pc, "hit_rate_without_isolation",
                          st->prefix_queries ? (double)(st->prefix_hits + st->prefix_isolation_lost) /
                                                   (double)st->prefix_queries
                                             : 0);
  cJSON_AddNumberToObject(pc, "preempted_queries_tokens", (double)st->prefix_preempted_queries);
  cJSON_AddNumberToObject(pc, "preempted_hits_tokens", (double)st->prefix_preempted_hits);

  if (sc->offload.cpu_gib > 0 || sc->swap_space_gib > 0) {
    cJSON *cpu = cJSON_AddObjectToObject(j, "cpu_tier");
    cJSON_AddStringToObject(cpu, "use", sc->offload.cpu_gib > 0 ? "offload" : "swap");
    cJSON_AddNumberToObject(cpu, "bytes_to_cpu", (double)st->cpu_bytes_to_cpu);
    cJSON_AddNumberToObject(cpu, "bytes_to_gpu", (double)st->cpu_bytes_to_gpu);
    cJSON_AddNumberToObject(cpu, "blocks_stored", (double)st->cpu_stores);
    cJSON_AddNumberToObject(cpu, "evictions", (double)st->cpu_evictions);
    cJSON_AddNumberToObject(cpu, "external_prefix_queries_tokens", (double)st->ext_prefix_queries);
    cJSON_AddNumberToObject(cpu, "external_prefix_hits_tokens", (double)st->ext_prefix_hits);
    cJSON_AddNumberToObject(cpu, "transfer_s", rounded(st->cpu_transfer_s, 1e-9));
    cJSON_AddNumberToObject(cpu, "step_wait_on_transfers_s", rounded(st->transfer_wait_s, 1e-9));
    cJSON_AddBoolToObject(cpu, "transfers_overlap_compute", sc->offload.overlap);
  }

  cJSON *slo = cJSON_AddObjectToObject(j, "slo");
  add_slo(slo, "ttft_p99_s", sc->slo_ttft_p99_s, kvsim_dist_quantile(&o->ttft, 0.99));
  add_slo(slo, "tpot_p99_s", sc->slo_tpot_p99_s, kvsim_dist_quantile(&o->tpot, 0.99));
  add_slo(slo, "e2e_p99_s", sc->slo_e2e_p99_s, kvsim_dist_quantile(&o->e2e, 0.99));
  cJSON_AddNumberToObject(slo, "attainment", o->slo_n ? (double)o->slo_ok / (double)o->slo_n : 0);

  cJSON *eng = cJSON_AddObjectToObject(j, "engine");
  cJSON_AddNumberToObject(eng, "steps", (double)st->steps);
  cJSON_AddNumberToObject(eng, "busy_s", rounded(st->busy_s, 1e-6));

  kvsim__diagnose(sc, st, o->ttft.n ? kvsim_dist_quantile(&o->ttft, 0.5) : 0,
                  o->ttft.n ? kvsim_dist_quantile(&o->ttft, 0.99) : 0,
                  cJSON_AddArrayToObject(j, "diagnosis"));
  return j;
}

int kvsim_run_output_finish(kvsim_run_output_t *o, const kvsim_run_stats_t *st, bool commit,
                            kvsim_err *err) {
  cJSON_Delete(o->summary);
  o->summary = build_summary(o, st);
  if (!commit || !o->dir[0])
    return KVSIM_OK;
  int bad = 0;
  FILE **files[] = {&o->ts, &o->rq};
  for (int i = 0; i < 2; i++) {
    bad |= fflush(*files[i]) != 0 || ferror(*files[i]);
    bad |= fclose(*files[i]) != 0;
    *files[i] = NULL;
  }
  if (bad)
    return kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", o->dir, strerror(errno));
  char *text = kvsim_report_json_string(o->summary);
  char path[4200];
  snprintf(path, sizeof path, "%s/summary.json", o->dir);
  size_t len = strlen(text);
  text[len] = '\n';
  int rc = kvsim_report_write_atomic(path, text, len + 1, err);
  free(text);
  if (rc < 0)
    return rc;
  if (rename(o->ts_tmp, o->ts_path) != 0 || rename(o->rq_tmp, o->rq_path) != 0)
    return kvsim_err_set(err, KVSIM_EIO, "%s: rename failed: %s", o->dir, strerror(errno));
  o->ts_tmp[0] = o->rq_tmp[0] = '\0';
  return KVSIM_OK;
}

const cJSON *kvsim_run_output_summary(const kvsim_run_output_t *o) { return o->summary; }

void kvsim_run_output_close(kvsim_run_output_t *o) {
  if (!o)
    return;
  if (o->ts)
    fclose(o->ts);
  if (o->rq)
    fclose(o->rq);
  if (o->ts_tmp[0])
    remove(o->ts_tmp);
  if (o->rq_tmp[0])
    remove(o->rq_tmp);
  free(o->ts_buf);
  free(o->rq_buf);
  kvsim_dist_fini(&o->ttft);
  kvsim_dist_fini(&o->tpot);
  kvsim_dist_fini(&o->e2e);
  kvsim_dist_fini(&o->queue);
  for (int i = 0; i < o->nprio; i++) {
    kvsim_dist_fini(&o->prio[i].ttft);
    kvsim_dist_fini(&o->prio[i].e2e);
  }
  cJSON_Delete(o->summary);
  free(o);
}
