/* The Prometheus text reader of measured series (fidelity/series_prom.c)
 * on any bytes, directly and through kvsim_fidelity_read_series'
 * detection (kvsim__fid_read_series_at): a Prometheus series read has points in time order from t = 0 with
 * finite, non-negative gauges; an error is one line naming the file. */
#include "fidelity/fid.h"
#include "fidelity/series_acc.h"
#include "fuzz_common.h"
#include "kvsim/fidelity.h"

#include <math.h>

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_tmpfile(data, size, ".prom");
  if (!path)
    return 0;
  kvsim_err err = {0};
  kvsim_fid_series_t s = {0};
  kvsim__ser_origin_t o = {INT64_MIN, false, false};
  check(kvsim__fid_read_prom_text(path, &o, &s, &err), &s, &err, path, true);
  kvsim_fidelity_series_fini(&s);
  memset(&err, 0, sizeof err);
  int rc = kvsim__fid_read_series_at(path, &o, &s, &err);
  check(rc, &s, &err, path, o.prom);
  kvsim_fidelity_series_fini(&s);
  unlink(path);
  return 0;
}
