/* A run's time series in the OpenMetrics text format, under vLLM's own
 * metric names, types and histogram buckets (vllm/v1/metrics/loggers.py,
 * PrometheusStatLogger), so that `promtool tsdb create-blocks-from
 * openmetrics` backfills a Prometheus and vLLM's Grafana dashboard reads
 * a simulated run as it reads a real one.
 *
 * Families (labels model_name and engine, the replica's index, as vLLM's
 * make_per_engine sets them): gauges vllm:kv_cache_usage_perc,
 * vllm:num_requests_running, vllm:num_requests_waiting; counters
 * vllm:num_preemptions, vllm:prompt_tokens, vllm:generation_tokens,
 * vllm:prefix_cache_queries, vllm:prefix_cache_hits, vllm:request_success
 * (finished_reason="length"); histograms
 * vllm:time_to_first_token_seconds, vllm:time_per_output_token_seconds
 * and its newer name vllm:inter_token_latency_seconds (the same
 * observations), vllm:e2e_request_latency_seconds. One point per time
 * series row of each replica, timestamped start + time_s. */
#ifndef KVSIM_OPENMETRICS_H
#define KVSIM_OPENMETRICS_H

#include "kvsim/error.h"
#include "kvsim/scenario.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The start of a simulated run on the wall clock when none is given:
 * 2025-01-01T00:00:00Z. Fixed, so the same run writes the same file. */
#define KVSIM_OPENMETRICS_DEFAULT_START 1735689600.0

typedef struct kvsim_openmetrics_opts {
  const char *model_name; /* the model_name label (vLLM: the served model name) */
  double start_unix_s;    /* wall-clock time of simulated t = 0, seconds since the epoch */
} kvsim_openmetrics_opts_t;

/* Writes the OpenMetrics text of the run whose timeseries.csv and
 * requests.csv (docs/scenario.md, "Outputs") are given to out,
 * through a temporary file renamed into place: on error nothing is left
 * at out. Errors: KVSIM_EIO (a file cannot be read or written),
 * KVSIM_EINVAL naming file, line and column for bad content, KVSIM_ENOMEM. */
int kvsim_openmetrics_write(const char *timeseries_csv, const char *requests_csv,
                            const kvsim_openmetrics_opts_t *opts, const char *out, kvsim_err *err);

/* The same for the run of sc written to folder dir; model_name is the
 * model's Hugging Face id where the catalog knows it, else its name. */
int kvsim_openmetrics_write_run(const char *dir, const kvsim_scenario_t *sc, double start_unix_s,
                                const char *out, kvsim_err *err);

#ifdef __cplusplus
}
#endif

#endif
