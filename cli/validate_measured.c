/* kvsim validate --measured FILE SCENARIO.json: a measured per-request
 * file against the simulation of the same requests.
 *
 * Measured formats (detected from the content, not the extension):
 * - LLMServingSim requests.jsonl (../shared/validation/README.md): one JSON
 *   object per line with input_toks, output_toks and the engine's monotonic
 *   queued_ts, scheduled_ts, first_token_ts, last_token_ts. Latencies are
 *   anchored on queued_ts: TTFT = first - queued, TPOT = (last - first) /
 *   (out - 1), E2E = last - queued, queueing delay = scheduled - queued.
 * - kvsim's own requests.csv (DESIGN.md section 2), rows with status
 *   "finished".
 * - vLLM's benchmark result JSON (`vllm bench serve --save-result
 *   --save-detailed`; benchmarks/benchmark_serving.py): per-request lists
 *   "ttfts" (s), "itls" (list of inter-token gaps, s) or "tpots", optional
 *   "e2els", "output_lens", "input_lens", "start_times", "errors"; E2E =
 *   TTFT + sum(ITL) when "e2els" is absent, the makespan is "duration". It
 *   has no scheduling time, so no queueing delay.
 * The time series (running / waiting / KV usage) comes from the
 * vllm/timeseries.csv beside an LLMServingSim requests file, or --series. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "core/util.h"
#include "validate_common.h"

const char *fid_fmt_name(fid_fmt f) {
  switch (f) {
  case FID_FMT_LLMSERVINGSIM:
    return "llmservingsim";
  case FID_FMT_KVSIM:
    return "kvsim";
  case FID_FMT_VLLM_BENCH:
    return "vllm-bench";
  default:
    return "unknown";
  }
}

/* ---- LLMServingSim requests.jsonl ---- */

static int num_field(const cJSON *o, const char *key, double *out, const char *path, int line,
                     kvsim_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: '%s' missing or not a number", path, line, key);
  *out = v->valuedouble;
  return KVSIM_OK;
}

static int read_llmservingsim(FILE *f, const char *path, fid_lat *lat, kvsim_err *err) {
  char *line = NULL;
  size_t cap = 0;
  int lineno = 0, rc = KVSIM_OK;
  lat->has_queue = true;
  while (getline(&line, &cap, f) >= 0) {
    lineno++;
    char *s = line;
    while (isspace((unsigned char)*s))
      s++;
    if (!*s)
      continue;
    cJSON *o = cJSON_Parse(s);
    if (!cJSON_IsObject(o)) {
      cJSON_Delete(o);
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: not a JSON object", path, lineno);
      break;
    }
    double in = 0, out = 0, q = 0, sch = 0, first = 0, last = 0;
    if ((rc = num_field(o, "input_toks", &in, path, lineno, err)) < 0 ||
        (rc = num_field(o, "output_toks", &out, path, lineno, err)) < 0 ||
        (rc = num_field(o, "queued_ts", &q, path, lineno, err)) < 0 ||
        (rc = num_field(o, "scheduled_ts", &sch, path, lineno, err)) < 0 ||
        (rc = num_field(o, "first_token_ts", &first, path, lineno, err)) < 0 ||
        (rc = num_field(o, "last_token_ts", &last, path, lineno, err)) < 0) {
      cJSON_Delete(o);
      break;
    }
    cJSON_Delete(o);
    if (out < 1 || in < 1 || first < q || last < first || sch < q) {
      rc = kvsim_err_set(err, KVSIM_EINVAL,
                         "%s:%d: inconsistent request (input %g, output %g, queued %.6f, scheduled "
                         "%.6f, first %.6f, last %.6f)",
                         path, lineno, in, out, q, sch, first, last);
      break;
    }
    if ((rc = fid_lat_add(lat, q, sch, first, last, (int64_t)in, (int64_t)out)) < 0) {
      kvsim_err_set(err, rc, "%s: out of memory", path);
      break;
    }
  }
  free(line);
  return rc;
}

/* ---- kvsim requests.csv ---- */

static int split_csv(char *s, char **cols, int max) {
  int n = 0;
  for (char *p = s;; p++) {
    if (n < max)
      cols[n] = p;
    n++;
    p = strchr(p, ',');
    if (!p)
      break;
    *p = '\0';
  }
  return n;
}

static void chomp(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
    s[--n] = '\0';
}

static int col_index(char **cols, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(cols[i], name))
      return i;
  return -1;
}

static int parse_num(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v))
    return -1;
  *out = v;
  return 0;
}

static int read_kvsim_csv(FILE *f, const char *path, char *header, fid_lat *lat, kvsim_err *err) {
  enum { MAXC = 64 };
  char *cols[MAXC];
  chomp(header);
  int nh = split_csv(header, cols, MAXC);
  if (nh > MAXC)
    nh = MAXC;
  static const char *const need[] = {"arrival_s", "first_scheduled_s", "first_token_s", "finish_s",
                                     "prompt_tokens", "output_tokens", "status"};
  int idx[7];
  for (int k = 0; k < 7; k++)
    if ((idx[k] = col_index(cols, nh, need[k])) < 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s:1: no column '%s' (expected kvsim's requests.csv header)",
                           path, need[k]);
  lat->has_queue = true;
  char *line = NULL;
  size_t cap = 0;
  int lineno = 1, rc = KVSIM_OK;
  while (getline(&line, &cap, f) >= 0) {
    lineno++;
    chomp(line);
    if (!line[0])
      continue;
    char *c[MAXC];
    int n = split_csv(line, c, MAXC);
    if (n != nh) {
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: %d columns, the header has %d", path, lineno, n, nh);
      break;
    }
    if (strcmp(c[idx[6]], "finished"))
      continue; /* rejected or still in flight when the run stopped */
    double v[6];
    for (int k = 0; k < 6; k++)
      if (parse_num(c[idx[k]], &v[k]) < 0) {
        rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: column '%s': bad value '%s'", path, lineno,
                           need[k], c[idx[k]]);
        goto out;
      }
    if ((rc = fid_lat_add(lat, v[0], v[1], v[2], v[3], (int64_t)v[4], (int64_t)v[5])) < 0) {
      kvsim_err_set(err, rc, "%s: out of memory", path);
      break;
    }
  }
out:
  free(line);
  return rc;
}

/* ---- vLLM benchmark JSON ---- */

static const cJSON *arr(const cJSON *o, const char *key) {
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsArray(a) ? a : NULL;
}

static int read_vllm_bench(const char *text, const char *path, fid_lat *lat, kvsim_err *err) {
  cJSON *o = cJSON_Parse(text);
  int rc = KVSIM_OK;
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: not a JSON object", path);
  }
  const cJSON *ttfts = arr(o, "ttfts"), *itls = arr(o, "itls"), *tpots = arr(o, "tpots"),
              *e2els = arr(o, "e2els"), *outs = arr(o, "output_lens"), *ins = arr(o, "input_lens"),
              *starts = arr(o, "start_times"), *errs = arr(o, "errors");
  if (!ttfts || (!itls && !e2els && !tpots)) {
    cJSON_Delete(o);
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: no per-request lists (expected \"ttfts\" and one of \"itls\", "
                         "\"tpots\", \"e2els\": vllm bench serve --save-result --save-detailed)",
                         path);
  }
  int n = cJSON_GetArraySize(ttfts);
  const cJSON *lists[] = {itls, tpots, e2els, outs, ins, starts, errs};
  const char *names[] = {"itls", "tpots", "e2els", "output_lens", "input_lens", "start_times", "errors"};
  for (int k = 0; k < 7; k++)
    if (lists[k] && cJSON_GetArraySize(lists[k]) != n) {
      cJSON_Delete(o);
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: \"%s\" has %d entries, \"ttfts\" %d", path, names[k],
                           cJSON_GetArraySize(lists[k]), n);
    }
  lat->has_queue = false;
  for (int i = 0; i < n; i++) {
    const cJSON *e = errs ? cJSON_GetArrayItem(errs, i) : NULL;
    if (cJSON_IsString(e) && e->valuestring[0])
      continue; /* a failed request */
    const cJSON *t = cJSON_GetArrayItem(ttfts, i);
    if (!cJSON_IsNumber(t) || t->valuedouble <= 0)
      continue; /* failed requests carry ttft 0 */
    double ttft = t->valuedouble, start = 0, e2e = NAN;
    int64_t out = 0, in = 0;
    const cJSON *x;
    if (outs && cJSON_IsNumber(x = cJSON_GetArrayItem(outs, i)))
      out = (int64_t)x->valuedouble;
    if (ins && cJSON_IsNumber(x = cJSON_GetArrayItem(ins, i)))
      in = (int64_t)x->valuedouble;
    if (starts && cJSON_IsNumber(x = cJSON_GetArrayItem(starts, i)))
      start = x->valuedouble;
    if (e2els && cJSON_IsNumber(x = cJSON_GetArrayItem(e2els, i))) {
      e2e = x->valuedouble;
    } else if (itls && cJSON_IsArray(x = cJSON_GetArrayItem(itls, i))) {
      double sum = 0;
      const cJSON *g;
      cJSON_ArrayForEach(g, x) if (cJSON_IsNumber(g)) sum += g->valuedouble;
      e2e = ttft + sum;
      if (out == 0)
        out = cJSON_GetArraySize(x) + 1;
    } else if (tpots && cJSON_IsNumber(x = cJSON_GetArrayItem(tpots, i)) && out > 1) {
      e2e = ttft + x->valuedouble * (double)(out - 1);
    }
    if (!isfinite(e2e) || e2e < ttft) {
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: request %d: no usable end-to-end latency", path, i);
      break;
    }
    if (out < 1)
      out = 1;
    if ((rc = fid_lat_add(lat, start, -1, start + ttft, start + e2e, in, out)) < 0) {
      kvsim_err_set(err, rc, "%s: out of memory", path);
      break;
    }
  }
  const cJSON *dur = cJSON_GetObjectItemCaseSensitive(o, "duration");
  if (rc == KVSIM_OK && cJSON_IsNumber(dur) && dur->valuedouble > 0 && !starts) {
    /* Without start times the makespan is the benchmark's own duration. */
    lat->t_first = 0;
    lat->t_last = dur->valuedouble;
  }
  cJSON_Delete(o);
  return rc;
}

int fid_read_measured(const char *path, fid_lat *lat, fid_fmt *fmt, kvsim_err *err) {
  FILE *f = fopen(path, "r");
  if (!f)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
  char *first = NULL;
  size_t cap = 0;
  ssize_t got = getline(&first, &cap, f);
  if (got <= 0) {
    free(first);
    fclose(f);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: empty file", path);
  }
  const char *s = first;
  while (isspace((unsigned char)*s))
    s++;
  int rc;
  if (*s == '{' && strstr(s, "\"queued_ts\"")) {
    /* JSON lines whose first object has the LLMServingSim keys. */
    *fmt = FID_FMT_LLMSERVINGSIM;
    rewind(f);
    rc = read_llmservingsim(f, path, lat, err);
  } else if (*s == '{') {
    *fmt = FID_FMT_VLLM_BENCH;
    fclose(f);
    f = NULL;
    char *text = NULL;
    rc = kvsim__read_file(path, &text, NULL, err);
    if (rc == KVSIM_OK)
      rc = read_vllm_bench(text, path, lat, err);
    free(text);
  } else if (!strncmp(s, "request_id,", 11)) {
    *fmt = FID_FMT_KVSIM;
    rc = read_kvsim_csv(f, path, first, lat, err);
  } else {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: unknown format (expected LLMServingSim requests.jsonl, kvsim requests.csv "
                       "or a vLLM benchmark JSON)",
                       path);
  }
  free(first);
  if (f)
    fclose(f);
  if (rc == KVSIM_OK && lat->finished == 0)
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no finished request", path);
  return rc;
}

/* ---- time series ---- */

int fid_read_series(const char *path, fid_series *s, kvsim_err *err) {
  FILE *f = fopen(path, "r");
  if (!f)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot open: %s", path, strerror(errno));
  enum { MAXC = 64 };
  char *line = NULL, *c[MAXC];
  size_t cap = 0;
  int rc = KVSIM_OK;
  if (getline(&line, &cap, f) <= 0) {
    free(line);
    fclose(f);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: empty file", path);
  }
  chomp(line);
  int nh = split_csv(line, c, MAXC);
  if (nh > MAXC)
    nh = MAXC;
  /* LLMServingSim: t, running, waiting, kv_cache_pct (percent). kvsim:
   * time_s, replica, num_requests_running, num_requests_waiting,
   * kv_cache_usage_perc (a fraction, like vLLM's gauge). */
  int it = col_index(c, nh, "t"), ir = col_index(c, nh, "running"), iw = col_index(c, nh, "waiting"),
      ik = col_index(c, nh, "kv_cache_pct");
  bool kvsim = false;
  double kv_scale = 0.01;
  if (it < 0) {
    it = col_index(c, nh, "time_s");
    ir = col_index(c, nh, "num_requests_running");
    iw = col_index(c, nh, "num_requests_waiting");
    ik = col_index(c, nh, "kv_cache_usage_perc");
    kvsim = true;
    kv_scale = 1;
  }
  if (it < 0 || ir < 0 || iw < 0) {
    free(line);
    fclose(f);
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s:1: expected columns t,running,waiting[,kv_cache_pct] (LLMServingSim) or "
                         "kvsim's timeseries.csv header",
                         path);
  }
  int lineno = 1;
  double cur = NAN, r = 0, w = 0, k = 0;
  int m = 0;
  bool any_kv = false;
  while (getline(&line, &cap, f) >= 0) {
    lineno++;
    chomp(line);
    if (!line[0])
      continue;
    int n = split_csv(line, c, MAXC);
    if (n != nh) {
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: %d columns, the header has %d", path, lineno, n, nh);
      break;
    }
    double t, vr, vw, vk = 0;
    if (parse_num(c[it], &t) < 0 || parse_num(c[ir], &vr) < 0 || parse_num(c[iw], &vw) < 0 ||
        (ik >= 0 && parse_num(c[ik], &vk) < 0)) {
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s:%d: bad number", path, lineno);
      break;
    }
    /* kvsim writes extra rows at preemptions; keep the periodic ones (on
     * whole seconds, the default sample_interval_s). */
    if (kvsim && fabs(t - round(t)) > 1e-6)
      continue;
    if (vk != 0)
      any_kv = true;
    if (m > 0 && t != cur) {
      if ((rc = fid_series_push(s, cur, r, w, k / m)) < 0)
        break;
      r = w = k = 0;
      m = 0;
    }
    cur = t;
    r += vr;
    w += vw;
    k += vk * kv_scale;
    m++;
  }
  if (rc == KVSIM_OK && m > 0)
    rc = fid_series_push(s, cur, r, w, k / m);
  if (rc == KVSIM_ENOMEM)
    kvsim_err_set(err, rc, "%s: out of memory", path);
  /* A column of zeros means "not recorded" (LLMServingSim on RTXPRO6000). */
  s->has_kv = ik >= 0 && any_kv;
  free(line);
  fclose(f);
  if (rc == KVSIM_OK && s->n == 0)
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: no rows", path);
  return rc;
}

/* ---- comparison ---- */

static bool file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

int fid_measured_load(const char *measured, const char *series, fid_measured *m, kvsim_err *err) {
  memset(m, 0, sizeof *m);
  fid_lat_init(&m->lat);
  snprintf(m->path, sizeof m->path, "%s", measured);
  int rc = fid_read_measured(measured, &m->lat, &m->fmt, err);
  if (rc < 0)
    return rc;
  if (series) {
    snprintf(m->series_path, sizeof m->series_path, "%s", series);
  } else if (m->fmt == FID_FMT_LLMSERVINGSIM) {
    /* LLMServingSim keeps timeseries.csv beside requests.jsonl. */
    snprintf(m->series_path, sizeof m->series_path, "%s", measured);
    char *slash = strrchr(m->series_path, '/');
    size_t off = slash ? (size_t)(slash - m->series_path + 1) : 0;
    snprintf(m->series_path + off, sizeof m->series_path - off, "timeseries.csv");
    if (!file_exists(m->series_path))
      m->series_path[0] = '\0';
  }
  if (m->series_path[0]) {
    if ((rc = fid_read_series(m->series_path, &m->series, err)) < 0)
      return rc;
    m->has_series = true;
  }
  return KVSIM_OK;
}

void fid_measured_fini(fid_measured *m) {
  fid_lat_fini(&m->lat);
  fid_series_fini(&m->series);
}

static void fill_side(fid_lat *l, fid_stat st[4], double *makespan, double *tput) {
  st[0] = fid_stat_of(&l->ttft);
  st[1] = fid_stat_of(&l->tpot);
  st[2] = fid_stat_of(&l->e2e);
  st[3] = l->has_queue ? fid_stat_of(&l->queue) : (fid_stat){NAN, NAN, NAN, NAN, 0};
  *makespan = l->finished ? l->t_last - l->t_first : NAN;
  *tput = *makespan > 0 ? (double)l->output_tokens / *makespan : NAN;
}

int fid_measured_compare(fid_measured *m, const kvsim_scenario_t *sc, fid_measured_cmp *cmp,
                         kvsim_err *err) {
  memset(cmp, 0, sizeof *cmp);
  fid_lat sim;
  fid_lat_init(&sim);
  fid_series ser;
  memset(&ser, 0, sizeof ser);
  /* A vLLM benchmark file times requests at the client; the LLMServingSim
   * and kvsim files on the engine's clock. */
  int rc = m->fmt == FID_FMT_VLLM_BENCH
               ? fid_simulate_client(sc, &sim, m->has_series ? &ser : NULL, &cmp->st, err)
               : fid_simulate(sc, &sim, m->has_series ? &ser : NULL, &cmp->st, err);
  if (rc == KVSIM_OK) {
    fill_side(&m->lat, cmp->meas, &cmp->makespan_meas, &cmp->tput_meas);
    fill_side(&sim, cmp->sim, &cmp->makespan_sim, &cmp->tput_sim);
    cmp->has_queue = m->lat.has_queue;
    cmp->n_meas = m->lat.finished;
    cmp->n_sim = sim.finished;
    if (m->has_series) {
      cmp->has_series = true;
      fid_series_compare(&m->series, &ser, &cmp->series);
    }
  }
  fid_lat_fini(&sim);
  fid_series_fini(&ser);
  return rc;
}

/* ---- the command ---- */

static double err_pct(double sim, double meas) {
  return meas != 0 && isfinite(meas) && isfinite(sim) ? (sim - meas) / meas * 100 : NAN;
}

static const char *const metric_names[4] = {"ttft", "tpot", "e2e", "queue"};

static void print_row(const char *name, const char *q, double meas, double sim, double scale,
                      const char *unit) {
  char e[16];
  double p = err_pct(sim, meas);
  if (isfinite(p))
    snprintf(e, sizeof e, "%+.1f%%", p);
  else
    snprintf(e, sizeof e, "n/a");
  printf("%-6s %-5s %12.3f %-2s %12.3f %-2s %8s\n", name, q, meas * scale, unit, sim * scale, unit, e);
}

static void print_text(const char *file, const fid_measured *m, const kvsim_scenario_t *sc,
                       const fid_measured_cmp *c) {
  char b1[32], b2[32];
  printf("measured:  %s (%s, %lld finished requests)\n", file, fid_fmt_name(m->fmt),
         (long long)c->n_meas);
  printf("simulated: %s (%lld finished, %s GPU blocks, %s preemptions)\n\n", sc->name,
         (long long)c->n_sim, kvsim__commas(c->st.plan.num_gpu_blocks, b1, sizeof b1),
         kvsim__commas(c->st.preemptions, b2, sizeof b2));
  printf("%-6s %-5s %15s %15s %8s\n", "", "", "measured", "simulated", "error");
  for (int k = 0; k < 4; k++) {
    if (k == 3 && !c->has_queue) {
      printf("queue  (not in the measured file)\n");
      continue;
    }
    double scale = k == 1 ? 1e3 : 1;
    const char *unit = k == 1 ? "ms" : "s";
    const char *name = k == 0 ? "TTFT" : k == 1 ? "TPOT" : k == 2 ? "E2E" : "queue";
    print_row(name, "mean", c->meas[k].mean, c->sim[k].mean, scale, unit);
    print_row("", "p50", c->meas[k].p50, c->sim[k].p50, scale, unit);
    print_row("", "p90", c->meas[k].p90, c->sim[k].p90, scale, unit);
    print_row("", "p99", c->meas[k].p99, c->sim[k].p99, scale, unit);
  }
  print_row("makespan", "", c->makespan_meas, c->makespan_sim, 1, "s");
  print_row("output", "tok/s", c->tput_meas, c->tput_sim, 1, "");
  if (!c->has_series) {
    printf("\ntime series: none measured (give --series FILE)\n");
    return;
  }
  const fid_series_cmp *s = &c->series;
  printf("\ntime series (%s, %lld ticks): mean measured / simulated, mean |difference|\n",
         m->series_path, (long long)s->n);
  printf("  running   %7.1f / %7.1f   %6.1f requests\n", s->running_mean_meas, s->running_mean_sim,
         s->running_mad);
  printf("  waiting   %7.1f / %7.1f   %6.1f requests\n", s->waiting_mean_meas, s->waiting_mean_sim,
         s->waiting_mad);
  if (isfinite(s->kv_mad))
    printf("  KV usage  %6.1f%% / %6.1f%%   %6.1f points\n", s->kv_mean_meas, s->kv_mean_sim, s->kv_mad);
  else
    printf("  KV usage  not recorded in the measured series\n");
}

static cJSON *num_or_null(double x) { return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull(); }

static void add_metric(cJSON *o, const char *key, double meas, double sim) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddItemToObject(e, "measured", num_or_null(meas));
  cJSON_AddItemToObject(e, "simulated", num_or_null(sim));
  cJSON_AddItemToObject(e, "error_pct", num_or_null(err_pct(sim, meas)));
  cJSON_AddItemToObject(o, key, e);
}

static cJSON *to_json(const char *file, const fid_measured *m, const kvsim_scenario_t *sc,
                      const fid_measured_cmp *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mode", "measured");
  cJSON_AddStringToObject(o, "measured_file", file);
  cJSON_AddStringToObject(o, "format", fid_fmt_name(m->fmt));
  cJSON_AddStringToObject(o, "scenario", sc->name);
  cJSON_AddStringToObject(o, "gpu", sc->gpu.name);
  cJSON_AddStringToObject(o, "perf_source", sc->gpu.perf.source);
  cJSON *rq = cJSON_AddObjectToObject(o, "requests");
  cJSON_AddNumberToObject(rq, "measured", (double)c->n_meas);
  cJSON_AddNumberToObject(rq, "simulated", (double)c->n_sim);
  cJSON_AddNumberToObject(rq, "simulated_preemptions", (double)c->st.preemptions);
  cJSON_AddNumberToObject(rq, "simulated_gpu_blocks", (double)c->st.plan.num_gpu_blocks);
  /* The contract (issue 6): `metrics` holds mean / p50 / p99 of TTFT, TPOT
   * and E2E in seconds; p90 and the queueing delay ride along. */
  cJSON *mt = cJSON_AddObjectToObject(o, "metrics");
  for (int k = 0; k < 4; k++) {
    if (k == 3 && !c->has_queue)
      continue;
    char key[32];
    const char *q[] = {"mean", "p50", "p90", "p99"};
    double mv[] = {c->meas[k].mean, c->meas[k].p50, c->meas[k].p90, c->meas[k].p99};
    double sv[] = {c->sim[k].mean, c->sim[k].p50, c->sim[k].p90, c->sim[k].p99};
    for (int j = 0; j < 4; j++) {
      snprintf(key, sizeof key, "%s_%s", metric_names[k], q[j]);
      add_metric(mt, key, mv[j], sv[j]);
    }
  }
  add_metric(mt, "makespan_s", c->makespan_meas, c->makespan_sim);
  add_metric(mt, "output_tokens_per_s", c->tput_meas, c->tput_sim);
  if (c->has_series) {
    const fid_series_cmp *s = &c->series;
    cJSON *ts = cJSON_AddObjectToObject(o, "series");
    cJSON_AddStringToObject(ts, "file", m->series_path);
    cJSON_AddNumberToObject(ts, "ticks", (double)s->n);
    cJSON_AddItemToObject(ts, "running_mean_abs_diff", num_or_null(s->running_mad));
    cJSON_AddItemToObject(ts, "waiting_mean_abs_diff", num_or_null(s->waiting_mad));
    cJSON_AddItemToObject(ts, "kv_usage_mean_abs_diff_pct", num_or_null(s->kv_mad));
    cJSON_AddItemToObject(ts, "running_mean_measured", num_or_null(s->running_mean_meas));
    cJSON_AddItemToObject(ts, "running_mean_simulated", num_or_null(s->running_mean_sim));
    cJSON_AddItemToObject(ts, "waiting_mean_measured", num_or_null(s->waiting_mean_meas));
    cJSON_AddItemToObject(ts, "waiting_mean_simulated", num_or_null(s->waiting_mean_sim));
    cJSON_AddItemToObject(ts, "kv_usage_mean_measured_pct", num_or_null(s->kv_mean_meas));
    cJSON_AddItemToObject(ts, "kv_usage_mean_simulated_pct", num_or_null(s->kv_mean_sim));
  }
  return o;
}

/* The nine contract metrics that --max-error checks. */
static double worst_error(const fid_measured_cmp *c, char *which, size_t cap) {
  double worst = 0;
  const char *q[] = {"mean", "p50", "p99"};
  for (int k = 0; k < 3; k++) {
    double mv[] = {c->meas[k].mean, c->meas[k].p50, c->meas[k].p99};
    double sv[] = {c->sim[k].mean, c->sim[k].p50, c->sim[k].p99};
    for (int j = 0; j < 3; j++) {
      double e = fabs(err_pct(sv[j], mv[j]));
      if (!isfinite(e))
        e = INFINITY; /* nothing simulated (or measured) to compare: a failure */
      if (e > worst) {
        worst = e;
        snprintf(which, cap, "%s_%s", metric_names[k], q[j]);
      }
    }
  }
  return worst;
}

int fid_cmd_measured(const char *file, const char *scenario, const cli_list *sets, const char *series,
                     const kvsim_gpu_perf_t *perf, bool json, double max_error) {
  kvsim_err err = {0};
  fid_measured m;
  if (fid_measured_load(file, series, &m, &err) < 0) {
    fid_measured_fini(&m);
    return cli_fail("validate", "--measured: %s", err.msg);
  }
  kvsim_scenario_t sc;
  if (kvsim_scenario_load(scenario, sets->items, sets->n, &sc, &err) < 0) {
    fid_measured_fini(&m);
    return cli_fail("validate", "%s", err.msg);
  }
  if (perf)
    fid_apply_perf(&sc, perf);
  fid_measured_cmp c;
  int rc = fid_measured_compare(&m, &sc, &c, &err);
  if (rc < 0) {
    fid_measured_fini(&m);
    kvsim_scenario_fini(&sc);
    return cli_fail("validate", "%s", err.msg);
  }
  if (json) {
    cJSON *o = to_json(file, &m, &sc, &c);
    char *s = cJSON_Print(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  } else {
    print_text(file, &m, &sc, &c);
  }
  fid_measured_fini(&m);
  kvsim_scenario_fini(&sc);
  if (max_error >= 0) {
    char which[32] = "";
    double w = worst_error(&c, which, sizeof which);
    if (w > max_error) {
      fprintf(stderr, "kvsim validate: %s error %.1f%% exceeds --max-error %.1f%%\n", which, w, max_error);
      return 1;
    }
  }
  return 0;
}
