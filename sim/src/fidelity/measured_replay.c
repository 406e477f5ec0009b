/* The scenario that replays a measured run (kvsim/fidelity.h
 * kvsim_fidelity_measured_scenario): where the file has no send times,
 * the arrivals the benchmark made, as it states them.
 *
 * vLLM (vllm/benchmarks/serve.py get_request): gaps Gamma-distributed
 * with shape `burstiness` and mean 1 / request_rate (burstiness 1 is
 * Poisson; the cumulative delays are then rescaled so that the last
 * request goes at N / rate, which kvsim does not do), constant gaps for an
 * infinite burstiness, every request at once for an infinite rate; at most
 * max_concurrency requests in flight. SGLang (bench_serving.py
 * get_request): exponential gaps, or all at once. kvsim's Gamma process
 * has the same mean and a coefficient of variation 1 / sqrt(shape). A
 * concurrency cap with an infinite rate is max_concurrency closed-loop
 * clients with no think time; with a finite rate the cap is not replayed
 * (kvsim's arrival processes have none) and the replay says so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "kvsim/fidelity.h"

/* The --set texts of the benchmark's arrivals (arrival, requests) and its
 * description; false when the file says too little. */
static bool drive_sets(const kvsim_fid_drive_t *d, char *arrival, char *requests, size_t cap,
                       char *why, size_t wcap) {
  if (!d->known || d->requests < 1)
    return false;
  snprintf(requests, cap, "workload.synthetic.requests=%lld", (long long)d->requests);
  if (isinf(d->rate)) {
    int64_t clients = d->max_concurrency > 0 ? d->max_concurrency : d->requests;
    snprintf(arrival, cap, "workload.synthetic.arrival={\"process\": \"closed_loop\", \"clients\": %lld}",
             (long long)clients);
    snprintf(why, wcap, "%lld requests, %s", (long long)d->requests,
             d->max_concurrency > 0 ? "all at once through max_concurrency closed-loop clients"
                                    : "all at t = 0 (request rate inf)");
    snprintf(why + strlen(why), wcap - strlen(why), " (%lld clients)", (long long)clients);
    return true;
  }
  if (isinf(d->burstiness))
    snprintf(arrival, cap, "workload.synthetic.arrival={\"process\": \"constant\", \"rate\": %.17g}", d->rate);
  else if (d->burstiness == 1)
    snprintf(arrival, cap, "workload.synthetic.arrival={\"process\": \"poisson\", \"rate\": %.17g}", d->rate);
  else
    snprintf(arrival, cap,
             "workload.synthetic.arrival={\"process\": \"gamma\", \"rate\": %.17g, \"cv\": %.17g}", d->rate,
             1 / sqrt(d->burstiness));
  snprintf(why, wcap, "%lld requests at %g req/s, %s", (long long)d->requests, d->rate,
           isinf(d->burstiness) ? "constant gaps"
           : d->burstiness == 1 ? "Poisson"
                                : "Gamma gaps (burstiness as vLLM's)");
  if (d->max_concurrency > 0)
    snprintf(why + strlen(why), wcap - strlen(why), "; max_concurrency %lld not replayed",
             (long long)d->max_concurrency);
  return true;
}

static bool synthetic(const kvsim_scenario_t *sc) {
  kvsim_workload_shape_t w;
  kvsim_workload_shape(sc->workload, &w);
  return w.synthetic;
}

int kvsim_fidelity_measured_scenario(kvsim_fid_measured_t *m, const char *path, const char *const *sets,
                                     int nsets, kvsim_scenario_t *sc, kvsim_err *err) {
  m->replay[0] = '\0';
  int rc = kvsim_scenario_load(path, sets, nsets, sc, err);
  if (rc < 0 || m->has_arrivals)
    return rc;
  char arrival[256], requests[256], why[192];
  if (!drive_sets(&m->drive, arrival, requests, sizeof arrival, why, sizeof why)) {
    snprintf(m->replay, sizeof m->replay, "arrivals: the scenario's (the file states no fixed request rate)");
    return rc;
  }
  if (!synthetic(sc)) {
    snprintf(m->replay, sizeof m->replay,
             "arrivals: the scenario's trace (the benchmark drove %s; a synthetic workload would be "
             "replaced by that)",
             why);
    return rc;
  }
  /* The benchmark's arrivals first, the user's sets after them. */
  const char **all = kvsim__malloc(((size_t)nsets + 4) * sizeof *all);
  if (!all)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  all[0] = arrival;
  all[1] = requests;
  all[2] = "workload.synthetic.duration_s=null";
  all[3] = "workload.rate=null";
  for (int i = 0; i < nsets; i++)
    all[4 + i] = sets[i];
  kvsim_scenario_fini(sc);
  rc = kvsim_scenario_load(path, all, nsets + 4, sc, err);
  free(all);
  if (rc == KVSIM_OK)
    snprintf(m->replay, sizeof m->replay, "arrivals as the benchmark drove them: %s", why);
  return rc;
}
