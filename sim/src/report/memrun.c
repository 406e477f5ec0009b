/* kvsim/memrun.h: a run's three outputs and calc's JSON as text in
 * memory. The run writes its tables through the run output's sink into
 * open_memstream streams, so the text is byte for byte what `kvsim run
 * --no-band --no-verify-advice` writes to its files. */
#include "kvsim/memrun.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/engine.h"
#include "kvsim/report.h"
#include "kvsim/run_output.h"
#include "kvsim/summary.h"

void kvsim_memrun_fini(kvsim_memrun_t *r) {
  free(r->summary_json);
  free(r->timeseries_csv);
  free(r->requests_csv);
  memset(r, 0, sizeof *r);
}

/* Runs sc with the output's sink; the summary's JSON text into *summary. */
static int run_into(const kvsim_scenario_t *sc, kvsim_run_output_t *o, char **summary,
                    kvsim_err *err) {
  kvsim_sink_t sink = kvsim_run_output_sink(o);
  kvsim_run_opts_t ro = {0};
  kvsim_run_stats_t st;
  int rc = kvsim_run(sc, &ro, &sink, &st, err);
  if (rc < 0) {
    kvsim_run_output_failed(o, err);
    return rc;
  }
  if ((rc = kvsim_run_output_finish(o, &st, false, err)) < 0)
    return rc;
  cJSON *j = kvsim_summary_json(kvsim_run_output_summary(o), sc);
  *summary = j ? kvsim_report_json_string(j) : NULL;
  cJSON_Delete(j);
  return *summary ? KVSIM_OK : kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
}

int kvsim_memrun(const kvsim_scenario_t *sc, kvsim_memrun_t *out, kvsim_err *err) {
  memset(out, 0, sizeof *out);
  size_t tn = 0, rn = 0;
  FILE *ts = open_memstream(&out->timeseries_csv, &tn);
  FILE *rq = open_memstream(&out->requests_csv, &rn);
  int rc = ts && rq ? KVSIM_OK : kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  kvsim_run_output_t *o = NULL;
  if (rc == KVSIM_OK)
    rc = kvsim_run_output_open_streams(sc, ts, rq, &o, err);
  if (rc == KVSIM_OK)
    rc = run_into(sc, o, &out->summary_json, err);
  kvsim_run_output_close(o);
  /* Closing a memory stream settles its buffer (and may fail for want
   * of memory). */
  bool bad = (ts && fclose(ts) != 0) | (rq && fclose(rq) != 0);
  if (rc == KVSIM_OK && (bad || !out->timeseries_csv || !out->requests_csv))
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  if (rc < 0)
    kvsim_memrun_fini(out);
  return rc;
}

static void put_err(char *errbuf, size_t cap, const kvsim_err *err) {
  if (errbuf && cap)
    snprintf(errbuf, cap, "%s", err->msg[0] ? err->msg : kvsim_strerror(err->code));
}

kvsim_memrun_t *kvsim_memrun_new(const char *path, const char *text, const char *base_dir,
                                 const char *const *sets, int nsets, char *errbuf, size_t cap) {
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  int rc = path ? kvsim_scenario_load(path, sets, nsets, &sc, &err)
           : text ? kvsim_scenario_parse(text, "scenario", base_dir ? base_dir : ".", sets, nsets,
                                         &sc, &err)
                  : kvsim_err_set(&err, KVSIM_EINVAL, "no scenario: give a path or JSON text");
  if (rc < 0) {
    put_err(errbuf, cap, &err);
    return NULL;
  }
  kvsim_memrun_t *r = kvsim__calloc(1, sizeof *r);
  if (!r)
    rc = kvsim_err_set(&err, KVSIM_ENOMEM, "out of memory");
  else
    rc = kvsim_memrun(&sc, r, &err);
  kvsim_scenario_fini(&sc);
  if (rc < 0) {
    free(r);
    put_err(errbuf, cap, &err);
    return NULL;
  }
  return r;
}

void kvsim_memrun_free(kvsim_memrun_t *r) {
  if (r)
    kvsim_memrun_fini(r);
  free(r);
}

void kvsim_memrun_text_free(char *text) { free(text); }

/* ---- calc ---- */

/* Stores value into the flag's slot of a, as the command line would. */
static int set_flag(const kvsim_calc_flag_t *f, const char *value, kvsim_calc_args_t *a,
                    kvsim_err *err) {
  void *slot = a->bytes + f->offset;
  char *end = NULL;
  errno = 0;
  switch (f->kind) {
  case KVSIM_CALC_INT: {
    long long v = value ? strtoll(value, &end, 10) : 0;
    if (!value || !*value || *end || errno)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: bad value '%s' (expected an integer)", f->name,
                           value ? value : "");
    *(int64_t *)slot = v;
    return KVSIM_OK;
  }
  case KVSIM_CALC_NUM: {
    double v = value ? strtod(value, &end) : NAN;
    if (!value || !*value || *end || errno || !isfinite(v))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: bad value '%s' (expected a number)", f->name,
                           value ? value : "");
    *(double *)slot = v;
    return KVSIM_OK;
  }
  case KVSIM_CALC_STR:
    if (!value)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: a value is needed", f->name);
    *(const char **)slot = value;
    return KVSIM_OK;
  default:
    *(bool *)slot = true;
    return KVSIM_OK;
  }
}

static int calc_args(const char *const *flags, const char *const *values, int n,
                     const kvsim_calc_engine_t **e, kvsim_calc_args_t *a, kvsim_err *err) {
  const char *engine = NULL;
  bool compare = false;
  for (int i = 0; i < n; i++) {
    if (!flags[i])
      return kvsim_err_set(err, KVSIM_EINVAL, "flag %d: NULL", i);
    if (!strcmp(flags[i], "--engine"))
      engine = values[i];
    compare |= !strcmp(flags[i], "--compare-engines");
  }
  *e = kvsim_calc_engine_find(engine, compare);
  (*e)->defaults(a);
  for (int i = 0; i < n; i++) {
    int k = 0;
    const kvsim_calc_flag_t *f = (*e)->flags;
    while (f->name && strcmp(f->name, flags[i]))
      f++, k++;
    if (!f->name)
      return kvsim_err_set(err, KVSIM_EINVAL, "unknown flag '%s' (%s)", flags[i], (*e)->usage);
    int rc = set_flag(f, values[i], a, err);
    if (rc < 0)
      return rc;
    a->given[k] = true;
  }
  a->common.json = true;
  return KVSIM_OK;
}

char *kvsim_memrun_calc_json(const char *const *flags, const char *const *values, int n,
                             char *errbuf, size_t cap) {
  kvsim_err err = {0};
  kvsim_calc_args_t *a = kvsim__calloc(1, sizeof *a);
  kvsim_calc_t *c = kvsim__calloc(1, sizeof *c);
  const kvsim_calc_engine_t *e = NULL;
  char *text = NULL;
  size_t len = 0;
  int rc = a && c ? calc_args(flags, values, n < 0 ? 0 : n, &e, a, &err)
                  : kvsim_err_set(&err, KVSIM_ENOMEM, "out of memory");
  if (rc == KVSIM_OK)
    rc = e->compute(a, c, &err);
  if (rc == KVSIM_OK) {
    FILE *f = open_memstream(&text, &len);
    if (f) {
      e->print(a, c, f);
      if (fclose(f) != 0) {
        free(text);
        text = NULL;
      }
    }
    if (!text)
      rc = kvsim_err_set(&err, KVSIM_ENOMEM, "out of memory");
  }
  free(a);
  free(c);
  if (rc < 0)
    put_err(errbuf, cap, &err);
  return rc < 0 ? NULL : text;
}
