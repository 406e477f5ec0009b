/* The engine's host time per step (perf.h): what the engine's process does
 * between two forward passes that the GPU waits for — scheduling, input
 * preparation, launching the step, output processing. It is a property of
 * the engine and its version, not of the GPU: fitted by `kvsim calibrate
 * --host` on end-to-end rows of several GPUs (the GPU terms composed from
 * their kernel tables, nothing fitted per GPU), and checked held out by
 * GPU in `kvsim validate --all`. vLLM from 0.14 schedules asynchronously
 * by default (vllm#27614): the host work of step n + 1 overlaps step n. */
#include "perf/terms.h"

int kvsim__perf_host_family(kvsim_plan_engine engine, int vllm_version) {
  if (engine == KVSIM_PLAN_SGLANG)
    return KVSIM_HOST_SGLANG;
  if ((engine == KVSIM_PLAN_V1 || engine == KVSIM_PLAN_V0) &&
      (vllm_version == 0 || vllm_version >= KVSIM_VLLM_VERSION(0, 14, 0)))
    return KVSIM_HOST_VLLM_ASYNC;
  return KVSIM_HOST_VLLM_SYNC;
}

void kvsim__perf_host(kvsim_plan_engine engine, int vllm_version, double *fixed_us, double *per_seq_us) {
  static const double fixed[3] = {KVSIM_HOST_US_VLLM_SYNC, KVSIM_HOST_US_VLLM_ASYNC, KVSIM_HOST_US_SGLANG};
  static const double per_seq[3] = {KVSIM_HOST_PER_SEQ_US_VLLM_SYNC, KVSIM_HOST_PER_SEQ_US_VLLM_ASYNC,
                                    KVSIM_HOST_PER_SEQ_US_SGLANG};
  const int f = kvsim__perf_host_family(engine, vllm_version);
  *fixed_us = fixed[f];
  *per_seq_us = per_seq[f];
}
