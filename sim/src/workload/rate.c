/* workload.rate: a mean arrival rate in req/s. A trace is replayed at that
 * rate by scaling its clock (time_scale = the trace's own mean rate / rate,
 * derived here and echoed in the resolved workload); a synthetic workload
 * takes it as its arrival process's rate. */
#include <math.h>
#include <stdio.h>

#include "workload/wl.h"

/* The trace's own mean rate, as `kvsim trace stats` reports it: rows read
 * (up to limit, bad rows skipped when the workload says so) over the time
 * from the first arrival to the last. */
int kvsim__trace_mean_rate(const kvsim_workload_cfg_t *c, double *rate, kvsim_err *err) {
  *rate = 0;
  kvsim__reader_t *rd;
  int rc = kvsim__reader_open(c->path, c->format, c->hash_block_tokens, &rd, err);
  if (rc < 0)
    return rc;
  int64_t n = 0;
  kvsim_time_ns first = 0, last = 0;
  for (;;) {
    if (c->limit > 0 && n >= c->limit)
      break;
    kvsim__row_t row;
    rc = kvsim__reader_next(rd, &row, err);
    if (rc == KVSIM_EPARSE && c->skip_bad_rows)
      continue;
    if (rc <= 0)
      break;
    if (!n)
      first = row.arrival;
    last = row.arrival;
    n++;
  }
  kvsim__reader_close(rd);
  if (rc < 0)
    return rc;
  double span = kvsim_time_to_s(last - first);
  if (n < 2 || !(span > 0))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %lld rows over %.9g s: no mean rate to scale (rate needs two "
                         "arrivals at different times)",
                         c->path, (long long)n, span);
  *rate = (double)n / span;
  return KVSIM_OK;
}

int kvsim__workload_apply_rate(kvsim_workload_cfg_t *c, double rate, const char *where,
                               kvsim_err *err) {
  c->rate = rate;
  if (c->synthetic) {
    /* The processes whose "rate" is the mean arrival rate. Bursts mix two
     * rates and a closed loop has none: a mean rate does not say which to
     * change. */
    switch (c->syn.arrival) {
    case KVSIM__ARR_POISSON:
    case KVSIM__ARR_GAMMA:
    case KVSIM__ARR_CONSTANT:
    case KVSIM__ARR_DIURNAL:
      c->syn.rate = rate;
      return KVSIM_OK;
    default:
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s.rate: the synthetic arrival process '%s' has no single mean rate "
                           "to set (use poisson, gamma, constant or diurnal, or set its own keys)",
                           where, c->syn.arrival == KVSIM__ARR_CLOSED ? "closed_loop" : "bursts");
    }
  }
  double own;
  int rc = kvsim__trace_mean_rate(c, &own, err);
  if (rc < 0) {
    kvsim_err_prefix(err, "%s.rate", where);
    return rc;
  }
  c->trace_rate = own;
  c->time_scale = own / rate;
  if (!(c->time_scale > 0 && c->time_scale <= 1e6))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.rate: %g req/s on a trace of %.6g req/s needs time_scale %g, out of "
                         "range (0, 1e6]",
                         where, rate, own, c->time_scale);
  return KVSIM_OK;
}

int kvsim_workload_mean_rate(const kvsim_workload_cfg_t *c, double *rate, kvsim_err *err) {
  *rate = NAN;
  if (c->rate > 0) {
    *rate = c->rate;
    return KVSIM_OK;
  }
  if (!c->synthetic) {
    double own;
    int rc = kvsim__trace_mean_rate(c, &own, err);
    if (rc == KVSIM_OK)
      *rate = own / c->time_scale;
    return rc;
  }
  switch (c->syn.arrival) {
  case KVSIM__ARR_POISSON:
  case KVSIM__ARR_GAMMA:
  case KVSIM__ARR_CONSTANT:
  case KVSIM__ARR_DIURNAL:
    *rate = c->syn.rate;
    return KVSIM_OK;
  default:
    return kvsim_err_set(err, KVSIM_EINVAL, "workload: this arrival process has no single mean rate");
  }
}
