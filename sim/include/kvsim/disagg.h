/* Disaggregated prefill and decode: a scenario's "disaggregation" block
 * (a prefill group and a decode group, each its own engine instances on
 * its own GPUs, and the KV-transfer link between them), and what a run of
 * one reports. The hand-off's rules are in sim/src/engine/handoff.h, the
 * run loop in sim/src/engine/disagg_run.c; docs/scenario.md lists the
 * keys, docs/engines.md the engines' rules. */
#ifndef KVSIM_DISAGG_H
#define KVSIM_DISAGG_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whose hand-off rules the run follows.
 * - VLLM: the KV connector (NixlConnector): the prefill instance runs the
 *   request with max_tokens=1 and keeps its blocks after it finishes
 *   (request_finished returns delay_free_blocks); the proxy then sends the
 *   request to a decode instance, whose scheduler allocates the prompt's
 *   blocks (get_num_new_matched_tokens, WAITING_FOR_REMOTE_KVS) and pulls
 *   the KV; the prefill side frees its blocks when the pull is done.
 * - SGLANG: the bootstrap: the decode instance pre-allocates the prompt's
 *   KV (DecodePreallocQueue) before the prefill instance may run the
 *   request (PrefillBootstrapQueue); the prefill side sends after its
 *   forward and frees when the transfer is done (inflight queue). */
typedef enum { KVSIM_DISAGG_FLOW_VLLM = 0, KVSIM_DISAGG_FLOW_SGLANG } kvsim_disagg_flow;

/* What one transfer moves.
 * - REQUEST: the whole request's KV after its prefill (vLLM's
 *   NixlConnector: the decode side reads every block once the prefill
 *   request has finished, nixl_connector.py NixlConnectorScheduler
 *   request_finished -> NixlConnectorWorker.start_load_kv / _read_blocks).
 * - CHUNK: each chunked-prefill chunk's full blocks as they are computed,
 *   then the rest after the last chunk (SGLang: prefill.py
 *   process_prefill_chunk and process_batch_result_disagg_prefill ->
 *   send_kv_chunk), so that the transfer overlaps the later chunks and
 *   only the last chunk's share is left after the prefill. Needs the
 *   decode side's blocks before the prefill runs (the sglang flow).
 * - LAYER: each layer's KV of a prefill step goes on the link as that
 *   layer's forward finishes (vLLM's KVConnectorBase_V1.save_kv_layer,
 *   called per attention layer during the forward; LMCache's
 *   use_layerwise mode stores each step's new tokens layer by layer,
 *   P2pNcclConnector.save_kv_layer sends the whole prompt's layers during
 *   its last chunk; NixlConnector.save_kv_layer does nothing), so the
 *   transfer overlaps the prefill's own forward and only what the link
 *   has not finished by the step's end is left after it. kvsim splits a
 *   step's time evenly over the model's layers. vLLM flow only.
 * PROFILE (the scenario's default): CHUNK when the prefill side's profile
 * sends chunks (kvsim_sched_defaults_t.kv_send_chunks) and the flow is
 * sglang, else REQUEST. */
typedef enum {
  KVSIM_DISAGG_UNIT_PROFILE = 0,
  KVSIM_DISAGG_UNIT_REQUEST,
  KVSIM_DISAGG_UNIT_CHUNK,
  KVSIM_DISAGG_UNIT_LAYER
} kvsim_disagg_unit;

/* The KV-transfer link between the groups (not gpu.h's kvsim_link_kind,
 * which is how GPUs of one instance talk). */
typedef enum {
  KVSIM_XFER_NVLINK = 0,   /* both groups in one NVLink domain */
  KVSIM_XFER_INFINIBAND,   /* GPUDirect RDMA between nodes */
  KVSIM_XFER_ROCE
} kvsim_xfer_link;

typedef struct kvsim_disagg_cfg {
  bool enabled;
  kvsim_disagg_flow flow;
  kvsim_xfer_link link;
  kvsim_disagg_unit unit;  /* as given: PROFILE unless the block names one */
  double link_GBps;        /* per GPU, one direction */
  double link_latency_s;   /* fixed cost of every transfer */
  /* Instances of each side in one deployment unit, as the block gives
   * them: kvsim_scenario_set_replicas(sc, n) runs n units (compare's and
   * plan's replica searches scale both sides together). */
  int32_t unit_prefill, unit_decode;
  /* Each side's instances now, indexed by kvsim_disagg_side: the block's
   * (1 left out), then as the typed overrides set them
   * (kvsim_scenario_set_replicas: n units; set_disagg_replicas: one
   * side). The side's scenario runs this many (kvsim_scenario_disagg_side). */
  int32_t replicas[2];
} kvsim_disagg_cfg_t;

/* The two sides of a deployment. */
typedef enum { KVSIM_SIDE_PREFILL = 0, KVSIM_SIDE_DECODE = 1 } kvsim_disagg_side;

/* The defaults of a link kind: bandwidth per GPU and direction (NVLink:
 * the fraction of the GPU's spec link a measured H100 copy reaches, times
 * gpu_spec_GBps), latency per transfer, and the measurement they rest on. */
void kvsim_xfer_link_defaults(kvsim_xfer_link kind, double gpu_spec_GBps, double *GBps,
                              double *latency_s, const char **source);
const char *kvsim_xfer_link_name(kvsim_xfer_link kind);
const char *kvsim_disagg_flow_name(kvsim_disagg_flow flow);
const char *kvsim_disagg_unit_name(kvsim_disagg_unit unit);
/* The run's unit (REQUEST, CHUNK or LAYER): the block's, else CHUNK when the
 * prefill side's profile sends chunks (kvsim_sched_defaults_t.
 * kv_send_chunks) and the flow is sglang, else REQUEST. */
kvsim_disagg_unit kvsim_disagg_unit_of(const kvsim_disagg_cfg_t *d, bool prefill_sends_chunks);

/* The seconds one transfer of `bytes` takes on an idle link between a
 * prefill instance of TP tp_p and a decode instance of TP tp_d: every
 * rank moves its shard over its own GPU's link, so min(tp_p, tp_d) links
 * carry it in parallel. */
double kvsim_disagg_transfer_s(const kvsim_disagg_cfg_t *d, int64_t bytes, int32_t tp_p, int32_t tp_d);

/* Per-side figures of a disaggregated run (kvsim_run_stats_t.disagg). */
typedef struct kvsim_disagg_stats {
  int32_t prefill_replicas, decode_replicas;
  int64_t prefill_pool_blocks, decode_pool_blocks; /* usable blocks per instance */
  double prefill_kv_usage_peak, decode_kv_usage_peak;
  kvsim_disagg_unit unit; /* the run's (REQUEST, CHUNK or LAYER, never PROFILE) */
  int64_t transfers;      /* hand-offs completed (a request's last send) */
  int64_t chunk_sends;    /* sends of a chunk (or a step's layers) before its request's last */
  int64_t bytes_transferred;
  double transfer_s_sum, transfer_s_max; /* link time per hand-off (its sends summed) */
  /* The link time of each hand-off's last send, what its TTFT waits for
   * after the prefill (REQUEST: all of transfer_s; LAYER: from the
   * prefill's end to its last layer send's end). */
  double transfer_exposed_s_sum;
  double handoff_wait_s_sum, handoff_wait_s_max; /* prefill done -> decode blocks allocated */
  int64_t held_blocks_peak;     /* prefill blocks held for hand-offs, max over instances */
  int64_t bytes_in_flight_peak;
  int64_t transfer_queue_peak;  /* transfers allocated on both sides, waiting for the link */
  int64_t prealloc_queue_peak;  /* requests waiting for decode-side blocks */
  int64_t decode_hit_tokens;    /* prompt tokens the decode side's prefix cache held: not moved */
  double prefill_busy_s, decode_busy_s; /* step time summed over each side's instances */
} kvsim_disagg_stats_t;

/* One row of transfer.csv, every sampling tick of a disaggregated run;
 * the queues as SGLang's metrics count them (sglang:num_*_queue_reqs,
 * python/sglang/srt/managers/scheduler_metrics_mixin.py). */
typedef struct kvsim_disagg_sample {
  int64_t time_ns;
  double prefill_kv_usage, decode_kv_usage;  /* mean over each side's instances, 0..1 */
  int64_t prefill_blocks_held;               /* held for hand-offs, all instances */
  int64_t prefill_inflight;                  /* requests holding them (num_prefill_inflight_queue_reqs) */
  int64_t prealloc_queue;                    /* waiting for decode blocks (num_decode_prealloc_queue_reqs) */
  int64_t transfer_queue;                    /* allocated, waiting for the link */
  int64_t transfers_in_flight;               /* on the link (with transfer_queue: num_decode_transfer_queue_reqs) */
  int64_t bytes_in_flight;                   /* on the link now */
} kvsim_disagg_sample_t;

/* transfer.csv's header. */
extern const char *const kvsim_transfer_header;

#ifdef __cplusplus
}
#endif

#endif
