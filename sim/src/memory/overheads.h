/* Predictions of the non-KV terms of the memory plan, per GPU rank. Each
 * can be replaced by a measured value (--weights-gib ...). Internal. The
 * byte counts saturate at 2^60 (far past any GPU) instead of overflowing
 * on extreme, range-checked inputs. */
#ifndef KVSIM_MEMORY_OVERHEADS_H
#define KVSIM_MEMORY_OVERHEADS_H

#include <stdint.h>

#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

/* Resolves --quantization against the model's own quantization_config.
 * Returns <0 on an unknown method. */
int kvsim__quant_resolve(const kvsim_model_t *m, const char *flag, kvsim_quant_t *q,
                         kvsim_err *err);

/* Bytes per parameter of a linear weight with `in` input features under
 * quantization q, scales included (the model dtype when unquantized). */
double kvsim__linear_bytes_per_param(const kvsim_quant_t *q, int64_t in, int dtype_bytes);

/* Bytes of weights (and weight-like buffers) on one rank of pipeline stage
 * `stage`: its layers split by TP, embeddings on the first stage, lm_head
 * on the last, and the rotary cos/sin cache. */
int64_t kvsim__weights_bytes(const kvsim_model_t *m, const kvsim_quant_t *q, int tp, int pp,
                             int stage);
/* The same with expert parallelism over `ep` ranks (ep <= 1: experts
 * split over TP, as kvsim__weights_bytes). */
int64_t kvsim__weights_bytes_ep(const kvsim_model_t *m, const kvsim_quant_t *q, int tp, int ep,
                                int pp, int stage);

/* Peak activation of the engine's profiling run: a dummy batch of `tokens`
 * tokens over `seqs` sequences, then the sampler over `seqs` rows. */
int64_t kvsim__activation_bytes(const kvsim_model_t *m, int tp, int64_t tokens, int64_t seqs,
                                kvsim_plan_engine engine);

/* How a vLLM release measures the memory outside PyTorch (version.c). */
typedef enum kvsim__nontorch_rule {
  KVSIM__NONTORCH_ALL_USED,            /* V0 0.6.4, V1 0.8.0-0.9.1: context and NCCL included */
  KVSIM__NONTORCH_SINCE_SNAPSHOT_NCCL, /* V0 0.6.5+, V1 0.9.2-0.10.x: NCCL charged */
  KVSIM__NONTORCH_SINCE_SNAPSHOT,      /* V1 0.11+: neither */
} kvsim__nontorch_rule;
/* The rule of `version` (0: the newest modelled) for an engine. */
kvsim__nontorch_rule kvsim__plan_nontorch_rule(kvsim_plan_engine e, int version);
/* KVSIM_EINVAL naming --vllm-version / engine.vllm_version and the
 * modelled releases when `version` (non-zero) is not modelled. */
int kvsim__plan_check_version(kvsim_plan_engine e, int version, kvsim_err *err);

/* Memory outside PyTorch's allocator charged to the KV budget, by the
 * rule of the engine's release. */
int64_t kvsim__non_torch_bytes(const kvsim_model_t *m, const kvsim_gpu_t *g, int tp, int pp,
                               kvsim_plan_engine engine, int vllm_version);

/* CUDA-graph pool of the captured batch sizes. */
int64_t kvsim__cuda_graph_bytes(const kvsim_model_t *m, int tp, int pp, int64_t max_num_seqs);

#endif
