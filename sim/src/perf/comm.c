/* Collectives (perf.h) as alpha-beta per link kind, from the GPU class's
 * measured all-reduce figures (gpu.h allreduce_busbw_GBps,
 * allreduce_latency_us; nccl-tests all_reduce_perf busbw at large
 * messages and its small-message time).
 *
 * TP all-reduce, twice per layer (after attention's o_proj and the MLP's
 * down_proj: vLLM RowParallelLinear), of M tokens x hidden x dtype:
 * - NCCL ring: t = alpha + bytes x 2 (n - 1) / n / busbw. nccl-tests'
 *   busbw is algbw x 2 (n - 1) / n (nccl-tests doc/PERFORMANCE.md), so
 *   the ring factor is applied here once, to the message, not again to
 *   the bandwidth.
 * - vLLM's custom all-reduce (vllm/distributed/device_communicators/
 *   custom_all_reduce.py CustomAllreduce, csrc/custom_all_reduce.cuh) for
 *   messages up to its buffer (max_size 8 MiB): one-shot (every rank reads
 *   all peers' whole buffers: (n - 1) x bytes through its link) for two
 *   ranks, or up to 512 KiB at <= 4 ranks and 256 KiB at <= 8, two-shot
 *   (reduce-scatter + all-gather, the ring's bytes) otherwise. vLLM
 *   disables it "on more than two PCIe-only GPUs" (should_custom_ar /
 *   is_fully_connected) and without peer-to-peer (_can_p2p), so over PCIe
 *   only two P2P ranks use it; through host memory never.
 * The latency alpha is the link's measured small-message time in both
 * cases (the custom kernel's barrier is its floor; no separate figure).
 * EP dispatch/combine (all-gather + reduce-scatter, vLLM's default
 * all2all backend "allgather_reducescatter"): (ep_dp - 1) x this rank's
 * tokens x hidden x dtype each way at busbw, alpha per collective.
 * PP: hidden states + residual handed stage to stage over the spec link. */
#include "perf/terms.h"

#define CUSTOM_AR_MAX_BYTES (8.0 * 1024 * 1024)

static bool custom_ar(const kvsim_perf_t *pf, double bytes) {
  if (bytes > CUSTOM_AR_MAX_BYTES)
    return false;
  switch (pf->link_kind) {
  case KVSIM_LINK_NVLINK:
  case KVSIM_LINK_XGMI:
    return true;
  case KVSIM_LINK_PCIE_P2P:
    return pf->tp == 2;
  case KVSIM_LINK_PCIE_HOST:
  default:
    return false;
  }
}

double kvsim_perf_allreduce_time(const kvsim_perf_t *pf, double bytes) {
  const int n = pf->tp;
  if (n <= 1)
    return 0;
  double moved = bytes * 2.0 * (n - 1) / n; /* ring, and two-shot */
  if (custom_ar(pf, bytes)) {
    const bool one_shot = n == 2 || (n <= 4 && bytes < 512.0 * 1024) || (n <= 8 && bytes < 256.0 * 1024);
    if (one_shot)
      moved = bytes * (n - 1);
  }
  return pf->ar_latency_s + moved / pf->busbw;
}

double kvsim__perf_comm(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b) {
  const double T = (double)b->new_tokens;
  if (!(T > 0))
    return 0;
  double t = 0;
  if (pf->num_collectives)
    t += pf->num_collectives * kvsim_perf_allreduce_time(pf, T * pf->allreduce_msg_per_token);
  if (pf->num_p2p)
    t += T * pf->p2p_bytes_per_token / pf->link_bandwidth + pf->num_p2p * pf->link_latency_s;
  if (pf->num_ep_collectives)
    t += T * pf->ep_bytes_per_token / pf->busbw + pf->num_ep_collectives * pf->ar_latency_s;
  return t;
}
