/* The scenario's "disaggregation" block, read with the registry's rows
 * (kvsim/params.h: its keys, bounds and doc), and the link's defaults.
 * Each side's scenario is sides.c's. */
#include <stdio.h>
#include <string.h>

#include "core/params_json.h"
#include "core/util.h"
#include "engine/disagg.h"
#include "engine/scenario_keys.h"
#include "kvsim/params.h"
#include "kvsim/scenario.h"

/* The block's keys at one level, from the registry (kvsim/params.h): the
 * rows whose key is prefix + one more part, in the registry's order. */
static const char *const *keys_under(const char *prefix, const char **buf, size_t cap) {
  const size_t len = strlen(prefix);
  size_t n = 0;
  for (int id = 1; id < KVSIM_PARAM_COUNT && n + 1 < cap; id++) {
    const char *key = kvsim_param_get(id)->key;
    if (!strncmp(key, prefix, len) && !strchr(key + len, '.'))
      buf[n++] = key + len;
  }
  buf[n] = NULL;
  return buf;
}

static const char *const link_names[] = {"nvlink", "infiniband", "roce"};
static const char *const flow_names[] = {"vllm", "sglang"};
/* kvsim_disagg_unit's values past PROFILE, which is the key left out. */
static const char *const unit_names[] = {"request", "chunk", "layer"};

const char *kvsim_xfer_link_name(kvsim_xfer_link k) {
  return (unsigned)k < 3 ? link_names[k] : "?";
}
const char *kvsim_disagg_flow_name(kvsim_disagg_flow f) {
  return (unsigned)f < 2 ? flow_names[f] : "?";
}
const char *kvsim_disagg_unit_name(kvsim_disagg_unit u) {
  return u == KVSIM_DISAGG_UNIT_PROFILE ? "profile" : (unsigned)u <= 3 ? unit_names[u - 1] : "?";
}

kvsim_disagg_unit kvsim_disagg_unit_of(const kvsim_disagg_cfg_t *d, bool prefill_sends_chunks) {
  if (d->unit != KVSIM_DISAGG_UNIT_PROFILE)
    return d->unit;
  /* A chunk needs the decode blocks before the prefill: the sglang flow. */
  return prefill_sends_chunks && d->flow == KVSIM_DISAGG_FLOW_SGLANG ? KVSIM_DISAGG_UNIT_CHUNK
                                                                     : KVSIM_DISAGG_UNIT_REQUEST;
}

/* NVLink: a measured H100 SXM peer-to-peer copy reaches 376-380 GB/s of
 * the 450 GB/s one direction (NVIDIA/nccl#1264, p2pBandwidthLatencyTest),
 * 0.84 of the spec link; the GPU's own spec link times that.
 * InfiniBand: 43 GB/s per GPU, DeepEP's internode RDMA bottleneck
 * bandwidth between two H800 nodes with one ConnectX-7 400 Gb/s NIC per
 * GPU (deepseek-ai/DeepEP README, normal kernels, EP 16).
 * RoCE: the same NICs at 400 GbE; no published KV-transfer figure, so
 * InfiniBand's.
 * Latency per transfer: no connector publishes one; 10 us (NVLink) and
 * 30 us (RDMA) are the order of a small copy's launch and of a verbs
 * round trip with the completion notice. An assumption: measure yours
 * with nixlbench and set link.latency_us. */
void kvsim_xfer_link_defaults(kvsim_xfer_link kind, double gpu_spec_GBps, double *GBps,
                              double *latency_s, const char **source) {
  switch (kind) {
  case KVSIM_XFER_NVLINK:
    *GBps = (gpu_spec_GBps > 0 ? gpu_spec_GBps : 450) * (378.0 / 450.0);
    *latency_s = 10e-6;
    *source = "NVIDIA/nccl#1264: H100 p2p copy 378 of 450 GB/s, times the GPU's spec link";
    return;
  case KVSIM_XFER_INFINIBAND:
  case KVSIM_XFER_ROCE:
  default:
    *GBps = 43;
    *latency_s = 30e-6;
    *source = "deepseek-ai/DeepEP README: internode RDMA 43 GB/s per GPU, CX7 400 Gb/s";
    return;
  }
}

double kvsim_disagg_transfer_s(const kvsim_disagg_cfg_t *d, int64_t bytes, int32_t tp_p, int32_t tp_d) {
  int32_t lanes = tp_p < tp_d ? tp_p : tp_d;
  if (lanes < 1)
    lanes = 1;
  return d->link_latency_s + (double)bytes / (d->link_GBps * 1e9 * lanes);
}

/* The index of v among the names of parameter id, else an error naming its key. */
static int pick(const char *const *names, int n, const char *v, int id, const char *w,
                kvsim_err *err) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i]))
      return i;
  char name[4400];
  snprintf(name, sizeof name, "%s.%s", w, kvsim_param_leaf(kvsim_param_get(id)));
  return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "'%s' (expected %s%s%s%s%s)", v, names[0],
                             n > 2 ? ", " : " or ", names[1], n > 2 ? " or " : "",
                             n > 2 ? names[2] : "");
}

static int parse_link(const cJSON *o, double gpu_spec_GBps, kvsim_disagg_cfg_t *d, const char *w,
                      kvsim_err *err) {
  int rc;
  char kind[32] = "infiniband";
  if (cJSON_IsNull(o))
    o = NULL; /* null: the link left out, its defaults */
  if (o && !cJSON_IsObject(o))
    return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_DISAGG_LINK, w, "expected an object");
  const char *link_keys[8];
  keys_under("disaggregation.link.", link_keys, 8);
  if (o && ((rc = kvsim__json_only_keys(o, link_keys, w, err)) < 0 ||
            (rc = kvsim__json_str(o, "kind", kind, sizeof kind, w, err)) < 0))
    return rc;
  if ((rc = pick(link_names, 3, kind, KVSIM_PARAM_DISAGG_LINK_KIND, w, err)) < 0)
    return rc;
  d->link = (kvsim_xfer_link)rc;
  const char *src;
  kvsim_xfer_link_defaults(d->link, gpu_spec_GBps, &d->link_GBps, &d->link_latency_s, &src);
  double us = d->link_latency_s * 1e6;
  if (o && ((rc = kvsim__json_param_num(o, KVSIM_PARAM_DISAGG_LINK_BANDWIDTH_GBPS, &d->link_GBps, w,
                                        err)) < 0 ||
            (rc = kvsim__json_param_num(o, KVSIM_PARAM_DISAGG_LINK_LATENCY_US, &us, w, err)) < 0))
    return rc;
  d->link_latency_s = us * 1e-6;
  return KVSIM_OK;
}

int kvsim__disagg_parse(const cJSON *root, kvsim_scenario_t *sc, const char *where, kvsim_err *err) {
  kvsim_disagg_cfg_t *d = &sc->disagg;
  memset(d, 0, sizeof *d);
  const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "disaggregation");
  if (!o || cJSON_IsNull(o))
    return KVSIM_OK;
  char w[4200];
  snprintf(w, sizeof w, "%s: disaggregation", where);
  if (!cJSON_IsObject(o))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an object", w);
  int rc;
  const char *block_keys[8], *side_keys[8];
  if ((rc = kvsim__json_only_keys(o, keys_under("disaggregation.", block_keys, 8), w, err)) < 0)
    return rc;
  /* The flow follows the profile's engine unless given. */
  char flow[32];
  snprintf(flow, sizeof flow, "%s", sc->plan.engine == KVSIM_PLAN_SGLANG ? "sglang" : "vllm");
  if ((rc = kvsim__json_str(o, "flow", flow, sizeof flow, w, err)) < 0 ||
      (rc = pick(flow_names, 2, flow, KVSIM_PARAM_DISAGG_FLOW, w, err)) < 0)
    return rc;
  d->flow = (kvsim_disagg_flow)rc;
  /* What one transfer moves: left out, the prefill profile's rule
   * (disagg_run.c); a chunk needs the decode blocks before the prefill. */
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "transfer");
  if (t && !cJSON_IsNull(t)) {
    char unit[32];
    char wt[4300];
    snprintf(wt, sizeof wt, "%s.transfer", w);
    if ((rc = kvsim__json_str(o, "transfer", unit, sizeof unit, w, err)) < 0 ||
        (rc = pick(unit_names, 3, unit, KVSIM_PARAM_DISAGG_TRANSFER, w, err)) < 0)
      return rc;
    d->unit = (kvsim_disagg_unit)(rc + 1);
    if (d->unit == KVSIM_DISAGG_UNIT_CHUNK && d->flow != KVSIM_DISAGG_FLOW_SGLANG)
      return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_DISAGG_TRANSFER, wt,
                                 "'chunk' needs flow sglang (the decode side allocates before the "
                                 "prefill); flow %s pulls the whole request after it",
                                 kvsim_disagg_flow_name(d->flow));
    /* Layer sends are vLLM's connector hook (save_kv_layer); SGLang's
     * transfer engines send per chunk. */
    if (d->unit == KVSIM_DISAGG_UNIT_LAYER && d->flow != KVSIM_DISAGG_FLOW_VLLM)
      return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_DISAGG_TRANSFER, wt,
                                 "'layer' needs flow vllm (its connectors' save_kv_layer); flow %s "
                                 "sends per chunk or request",
                                 kvsim_disagg_flow_name(d->flow));
  }
  for (int s = 0; s < 2; s++) {
    const char *name = s ? "decode" : "prefill";
    /* The side's rows: the object, its TP, replicas and engine. */
    static const int ids[2][4] = {
        {KVSIM_PARAM_DISAGG_PREFILL, KVSIM_PARAM_DISAGG_PREFILL_TP,
         KVSIM_PARAM_DISAGG_PREFILL_REPLICAS, KVSIM_PARAM_DISAGG_PREFILL_ENGINE},
        {KVSIM_PARAM_DISAGG_DECODE, KVSIM_PARAM_DISAGG_DECODE_TP,
         KVSIM_PARAM_DISAGG_DECODE_REPLICAS, KVSIM_PARAM_DISAGG_DECODE_ENGINE}};
    const int id = ids[s][0];
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(o, name);
    char ws[4300], prefix[64];
    snprintf(ws, sizeof ws, "%s.%s", w, name);
    if (!g || cJSON_IsNull(g))
      return kvsim_err_set_param(err, KVSIM_EINVAL, id, ws,
                                 "missing (a deployment needs both sides)");
    if (!cJSON_IsObject(g))
      return kvsim_err_set_param(err, KVSIM_EINVAL, id, ws, "expected an object");
    snprintf(prefix, sizeof prefix, "disaggregation.%s.", name);
    if ((rc = kvsim__json_only_keys(g, keys_under(prefix, side_keys, 8), ws, err)) < 0)
      return rc;
    /* The TP's range here names the side's key; the side's scenario then
     * checks the rest (the GPU, the router, TP against the model). */
    int64_t n = 1, tp = 1;
    if ((rc = kvsim__json_param_int(g, ids[s][1], &tp, ws, err)) < 0 ||
        (rc = kvsim__json_param_int(g, ids[s][2], &n, ws, err)) < 0)
      return rc;
    *(s ? &d->unit_decode : &d->unit_prefill) = (int32_t)n;
    d->replicas[s] = (int32_t)n;
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(g, "engine");
    if (e && !cJSON_IsNull(e) && !cJSON_IsObject(e)) {
      char we[4400];
      snprintf(we, sizeof we, "%s.engine", ws);
      return kvsim_err_set_param(err, KVSIM_EINVAL, ids[s][3], we, "expected an object");
    }
  }
  char lw[4300];
  snprintf(lw, sizeof lw, "%s.link", w);
  if ((rc = parse_link(cJSON_GetObjectItemCaseSensitive(o, "link"), sc->gpu.gpu_link_GBps, d, lw, err)) < 0)
    return rc;
  d->enabled = true;
  return KVSIM_OK;
}

void kvsim__disagg_follow_gpu(kvsim_scenario_t *sc) {
  if (!sc->disagg.enabled || kvsim__scenario_row_given(sc, KVSIM_PARAM_DISAGG_LINK_BANDWIDTH_GBPS))
    return;
  double GBps, latency_s;
  const char *src;
  kvsim_xfer_link_defaults(sc->disagg.link, sc->gpu.gpu_link_GBps, &GBps, &latency_s, &src);
  sc->disagg.link_GBps = GBps;
}
