/* Kernel and host floors (perf.h): the part of a step that does not move
 * with FLOPs or bytes but with what launches work.
 * - per layer on the rank: a decoder layer is a dozen small kernels (norms,
 *   rotary, activation, residual adds, the cache write) each with a floor
 *   of a few microseconds even under CUDA graphs; on H100 the decode TPOT
 *   of Llama-3.1-70B (80 layers) and Qwen3-32B (64 layers) beyond their
 *   weight reads scales with depth, not with TP (AIConfigurator vLLM
 *   rows, TP 2, 4 and 8);
 * - per step: the scheduler, the input preparation launch and the sampler
 *   (vllm/v1/engine/core.py EngineCore.step: schedule, execute_model,
 *   update_from_output, once per step);
 * - per scheduled request: its row of the input batch, its sampler and
 *   detokenizer work (vllm/v1/worker/gpu_model_runner.py
 *   _prepare_inputs, one entry per scheduled request; the output
 *   processor per request).
 * No absolute per-token constant: per_token_us is 0 unless a measurement
 * asks for it (the GEMM and attention terms scale with tokens already). */
#include "perf/terms.h"

double kvsim__perf_floors(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b) {
  const kvsim_gpu_perf_t *c = &pf->coef;
  return (c->step_overhead_us + c->per_layer_us * pf->num_layers + c->per_seq_us * (double)b->num_seqs +
          c->per_token_us * (double)b->new_tokens) *
         1e-6;
}
