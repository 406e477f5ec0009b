/* Samples of an engine's gauges, one metric family per quantity and one
 * series per label set (replica, engine, model), gathered by the
 * Prometheus readers (series_prom.c, series_promjson.c) and turned into
 * one measured series (kvsim/fidelity.h): at every sample time, running
 * and waiting summed over the series in force and KV usage averaged.
 * Internal: not part of the public API. */
#ifndef KVSIM_FIDELITY_SERIES_ACC_H
#define KVSIM_FIDELITY_SERIES_ACC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/vec.h"
#include "kvsim/error.h"
#include "kvsim/fidelity.h"

typedef enum { KVSIM__SER_RUNNING, KVSIM__SER_WAITING, KVSIM__SER_KV, KVSIM__SER_NKIND } kvsim__ser_kind_t;

/* The quantity a metric name measures, or -1 for a metric not compared.
 * vLLM (vllm/v1/metrics/loggers.py, PrometheusStatLogger):
 * vllm:num_requests_running, vllm:num_requests_waiting,
 * vllm:kv_cache_usage_perc and its older name vllm:gpu_cache_usage_perc
 * (deprecated by vLLM PR #18354; a fraction, 1 = full). SGLang (python/sglang/srt/metrics/collector.py,
 * SchedulerMetricsCollector): sglang:num_running_reqs,
 * sglang:num_queue_reqs, sglang:token_usage (a fraction too). */
int kvsim__ser_kind(const char *name, size_t len);

typedef struct kvsim__ser_sample {
  int64_t ms;     /* Unix time, milliseconds (what Prometheus stores) */
  int64_t seq;    /* order read: of two samples at one time, the later wins */
  int32_t series; /* index into the series table */
  double v;       /* NAN: a staleness marker, the series absent from here on */
} kvsim__ser_sample_t;

typedef struct kvsim__ser_id {
  int kind;
  char *labels; /* the label set without __name__, as written */
} kvsim__ser_id_t;

typedef struct kvsim__ser_acc {
  kvsim__vec(kvsim__ser_sample_t) samples;
  kvsim__vec(kvsim__ser_id_t) ids;
} kvsim__ser_acc_t;

void kvsim__ser_acc_fini(kvsim__ser_acc_t *a);

/* Adds a sample of the series (kind, labels[0..len)). KVSIM_ENOMEM (err
 * not set). */
int kvsim__ser_acc_add(kvsim__ser_acc_t *a, int kind, const char *labels, size_t len, int64_t ms,
                       double v);

/* How a reader places its samples on the simulated clock: t = 0 at
 * origin_ms (Unix ms; samples before it dropped) when it is not
 * INT64_MIN and lies in the scrape (from an hour before its first sample
 * to its last), else at the first sample; anchored says which. */
typedef struct kvsim__ser_origin {
  int64_t origin_ms; /* in */
  bool anchored;     /* out */
  bool prom;         /* out (kvsim__fid_read_series_at): a Prometheus file */
} kvsim__ser_origin_t;

/* The measured series of the samples into s (empty), t = 0 as o says. A series is in force from its first sample to its last
 * (each value held until the next, as a gauge is), so an engine that is
 * scraped later or stops earlier counts only while it reports. KVSIM_EINVAL
 * naming path when running or waiting was never sampled. */
int kvsim__ser_acc_finish(kvsim__ser_acc_t *a, kvsim__ser_origin_t *o, const char *path,
                          kvsim_fid_series_t *s, kvsim_err *err);

/* The largest |timestamp| accepted, ms: year 5138, far past any scrape,
 * and small enough that differences of two stay exact in a double. */
#define KVSIM__SER_MAX_MS ((int64_t)1e14)

/* A sample's timestamp as milliseconds: text with a '.' or an exponent is
 * seconds (OpenMetrics: "1735689600.250"); an integer is milliseconds
 * when at least 1e11 (the Prometheus text format, promtool tsdb dump: any
 * time after March 1973 in ms), else seconds (an OpenMetrics integer:
 * 1e11 s is the year 5138). False when it is no finite number in range. */
bool kvsim__ser_parse_ts(const char *text, size_t len, int64_t *ms);

#endif
