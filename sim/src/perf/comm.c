/* Collectives (perf.h), from measured tables of the GPU's link class:
 * - TP all-reduce, twice per layer (after attention's o_proj and the MLP's
 *   down_proj: vLLM RowParallelLinear), of tokens x hidden x 2 bytes,
 *   through vLLM's tensor_model_parallel_all_reduce as the tables time it
 *   (vLLM picks its custom all-reduce, symmetric memory or NCCL by size).
 *   Steps vLLM captures in a CUDA graph take the graph rows, larger steps
 *   the eager rows: vLLM V1 captures batches up to
 *   max_cudagraph_capture_size, 512 tokens by default
 *   (vllm/config/compilation.py), none under --enforce-eager. A card
 *   without peer-to-peer (link pcie_host) cannot run the custom kernel
 *   (custom_all_reduce.py _can_p2p): NCCL's all-reduce there.
 * - EP dispatch and combine with vLLM's default all2all backend
 *   "allgather_reducescatter": before each MoE layer the hidden states of
 *   the group's ep_dp ranks are all-gathered, after it reduce-scattered
 *   (NCCL tables, bytes = the gathered buffer).
 * - PP: hidden states and residual handed stage to stage over the spec GPU
 *   link (vLLM IntermediateTensors).
 * A GPU count the tables lack is scaled by the ring's bytes; a profile
 * without the table falls back to the spec link's bandwidth and latency. */
#include <string.h>

#include "perf/ktab.h"
#include "perf/terms.h"

#define GRAPH_MAX_TOKENS 512

static double curve_us(const kvsim__kcoll *c, double scale, double bytes) {
  return kvsim__kcurve_at(&c->c, bytes * scale);
}

int kvsim__perf_init_comm(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl,
                          const kvsim_kernels_t *col, kvsim_err *err) {
  const int tp = pf->tp, pp = pf->pp;
  const double h = (double)m->hidden_size;
  pf->link_bandwidth = (g->gpu_link_GBps > 0 ? g->gpu_link_GBps : g->host_link_GBps) * 1e9;
  pf->link_latency_s = g->gpu_link_latency_us * 1e-6;
  pf->graph_max_tokens = pl->p.enforce_eager ? 0 : GRAPH_MAX_TOKENS;
  if (tp > 1) {
    pf->allreduce_msg_per_token = h * 2.0;
    pf->num_collectives = 2 * m->num_layers;
    if (g->link_kind == KVSIM_LINK_PCIE_HOST) {
      pf->ar_graph = pf->ar_eager = kvsim__kcoll_find(col, false, "all_reduce", tp, &pf->ar_scale_graph);
      pf->ar_scale_eager = pf->ar_scale_graph;
    } else {
      pf->ar_graph = kvsim__kcoll_find(col, true, "graph", tp, &pf->ar_scale_graph);
      pf->ar_eager = kvsim__kcoll_find(col, true, "eager", tp, &pf->ar_scale_eager);
      if (!pf->ar_eager) /* a profile with NCCL alone */
        pf->ar_eager = kvsim__kcoll_find(col, false, "all_reduce", tp, &pf->ar_scale_eager);
      if (!pf->ar_graph) {
        pf->ar_graph = pf->ar_eager;
        pf->ar_scale_graph = pf->ar_scale_eager;
      }
    }
  }
  if (pf->ep_dp > 1) {
    pf->ep_bytes_per_token = h * 2.0 * pf->ep_dp;
    pf->num_ep_collectives = 2 * (int)m->num_moe_layers;
    pf->ep_gather = kvsim__kcoll_find(col, false, "all_gather", pf->ep_dp, &pf->ep_scale);
  }
  if (pp > 1) {
    pf->p2p_bytes_per_token = 2.0 * h * 2.0 * (pp - 1);
    pf->num_p2p = pp - 1;
  }
  if ((tp > 1 || pp > 1 || pf->ep_dp > 1) && !(pf->link_bandwidth > 0))
    return kvsim_err_set(err, KVSIM_EINVAL, "perf: gpu '%s' has no GPU link bandwidth for tp=%d pp=%d", g->name, tp,
                         pp);
  return KVSIM_OK;
}

double kvsim_perf_allreduce_time(const kvsim_perf_t *pf, double bytes, int64_t tokens) {
  if (pf->tp <= 1)
    return 0;
  const bool graph = tokens <= pf->graph_max_tokens;
  const kvsim__kcoll *c = graph ? pf->ar_graph : pf->ar_eager;
  if (c)
    return curve_us(c, graph ? pf->ar_scale_graph : pf->ar_scale_eager, bytes) * 1e-6;
  /* No measured curve: a ring over the spec link. */
  const double n = pf->tp;
  return pf->link_latency_s + bytes * 2.0 * (n - 1) / n / pf->link_bandwidth;
}

double kvsim__perf_comm(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b) {
  const double T = (double)b->new_tokens;
  if (!(T > 0))
    return 0;
  double t = 0;
  if (pf->num_collectives)
    t += pf->num_collectives * kvsim_perf_allreduce_time(pf, T * pf->allreduce_msg_per_token, b->new_tokens);
  if (pf->num_p2p)
    t += T * pf->p2p_bytes_per_token / pf->link_bandwidth + pf->num_p2p * pf->link_latency_s;
  if (pf->num_ep_collectives) {
    const double bytes = T * pf->ep_bytes_per_token;
    const double one = pf->ep_gather ? curve_us(pf->ep_gather, pf->ep_scale, bytes) * 1e-6
                                     : pf->link_latency_s + bytes / pf->link_bandwidth;
    t += pf->num_ep_collectives * one;
  }
  return t;
}
