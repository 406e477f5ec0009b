/* The engine's host time per step (perf.h): what the engine's process does
 * between two forward passes that the GPU waits for — scheduling, input
 * preparation, launching the step, output processing. It is a property of
 * the engine and its version, not of the GPU: fitted by `kvsim calibrate
 * --host` on end-to-end rows of several GPUs (the GPU terms composed from
 * their kernel tables, nothing fitted per GPU), and checked held out by
 * GPU in `kvsim validate --all`. vLLM from 0.14 schedules asynchronously
 * by default (vllm#27614): the host work of step n + 1 overlaps step n. */
#include "perf/terms.h"

bool kvsim__perf_host_async(kvsim_plan_engine engine, int vllm_version) {
  return (engine == KVSIM_PLAN_V1 || engine == KVSIM_PLAN_V0) &&
         (vllm_version == 0 || vllm_version >= KVSIM_VLLM_VERSION(0, 14, 0));
}

void kvsim__perf_host(kvsim_plan_engine engine, int vllm_version, double *fixed_us, double *per_seq_us) {
  const bool async = kvsim__perf_host_async(engine, vllm_version);
  *fixed_us = async ? KVSIM_HOST_US_VLLM_ASYNC : KVSIM_HOST_US_VLLM_SYNC;
  *per_seq_us = async ? KVSIM_HOST_PER_SEQ_US_VLLM_ASYNC : KVSIM_HOST_PER_SEQ_US_VLLM_SYNC;
}
