/* The body of the Prometheus series readers' fuzz targets
 * (fuzz_series_prom.c, fuzz_series_promjson.c): the reader on any bytes,
 * directly and through kvsim_fidelity_read_series' detection
 * (kvsim__fid_read_series_at): a Prometheus series read has points in time
 * order from t = 0 with finite, non-negative gauges; an error is one line
 * naming the file. */
#ifndef KVSIM_FUZZ_SERIES_H
#define KVSIM_FUZZ_SERIES_H

#include <math.h>

#include "fidelity/fid.h"
#include "fidelity/series_acc.h"
#include "fuzz_common.h"
#include "kvsim/fidelity.h"

/* prom: a Prometheus reader's series (a CSV one keeps its own clock). */
static void check(int rc, const kvsim_fid_series_t *s, const kvsim_err *err, const char *path, bool prom) {
  if (rc != KVSIM_OK) {
    if (!strstr(err->msg, path) || strchr(err->msg, '\n'))
      fuzz_fail("an error that does not name the file on one line", err->msg);
    return;
  }
  if (!prom)
    return;
  if (s->n < 1)
    fuzz_fail("a series read without points", "");
  for (int64_t i = 0; i < s->n; i++) {
    const kvsim_fid_point_t *p = &s->v[i];
    if (!(p->t >= 0) || (i > 0 && !(p->t > s->v[i - 1].t)) || !isfinite(p->t))
      fuzz_fail("times not increasing from 0", "");
    if (!(p->running >= 0 && p->waiting >= 0 && p->kv >= 0) || !isfinite(p->running) ||
        !isfinite(p->waiting) || !isfinite(p->kv))
      fuzz_fail("a gauge negative or not finite", "");
  }
  if (s->v[0].t != 0)
    fuzz_fail("the first sample is not t = 0", "");
}

typedef int (*fuzz_series_reader)(const char *path, kvsim__ser_origin_t *o, kvsim_fid_series_t *s, kvsim_err *err);

static int fuzz_series(fuzz_series_reader read, const char *suffix, const uint8_t *data, size_t size) {
  const char *path = fuzz_tmpfile(data, size, suffix);
  if (!path)
    return 0;
  kvsim_err err = {0};
  kvsim_fid_series_t s = {0};
  kvsim__ser_origin_t o = {INT64_MIN, false, false};
  check(read(path, &o, &s, &err), &s, &err, path, true);
  kvsim_fidelity_series_fini(&s);
  memset(&err, 0, sizeof err);
  int rc = kvsim__fid_read_series_at(path, &o, &s, &err);
  check(rc, &s, &err, path, o.prom);
  kvsim_fidelity_series_fini(&s);
  unlink(path);
  return 0;
}

#endif
