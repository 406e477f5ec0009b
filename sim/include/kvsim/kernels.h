/* Kernel profiles: measured per-operation latencies of one GPU inside
 * vLLM (GEMMs by shape and precision, prefill and decode attention, the
 * TP all-reduce, NCCL collectives, fused MoE layers), reduced from the
 * public kernel tables of ai-dynamo/aiconfigurator (its collectors time
 * each operation in vLLM under CUDA graphs) into configs/kernels/<gpu>.json
 * by scripts/kernels_reduce.py. The step-time model (perf.h) composes a
 * step from them.
 *
 * Lookups interpolate in the tables: GEMMs linearly in m and bilinearly in
 * (n, k) between grid points (latency is close to linear in m at fixed
 * (n, k)), attention bilinearly in (batch, length), collectives and MoE
 * linearly in their size. Beyond a table's end a lookup scales
 * proportionally (m, n, k, batch, bytes, tokens, decode length) or with the
 * square of the prompt length (prefill attention); below its start it
 * takes the first point. Every time is in microseconds.
 *
 * Profiles are read-only once loaded and cached for the life of the
 * process (kvsim_kernels_get); the cache is not thread-safe (kvsim's
 * parallel runners are processes). */
#ifndef KVSIM_KERNELS_H
#define KVSIM_KERNELS_H

#include <stdbool.h>

#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GEMM precisions of the tables: bf16, fp8 with a per-tensor weight scale,
 * fp8 with 128x128 block scales, NVFP4. */
typedef enum kvsim_kgemm {
  KVSIM_KGEMM_BF16 = 0,
  KVSIM_KGEMM_FP8 = 1,
  KVSIM_KGEMM_FP8_BLOCK = 2,
  KVSIM_KGEMM_NVFP4 = 3,
  KVSIM_KGEMM_COUNT = 4
} kvsim_kgemm;
const char *kvsim_kgemm_name(kvsim_kgemm d);

typedef struct kvsim_kernels kvsim_kernels_t;

/* The profile named (a catalog name, configs/kernels/NAME.json compiled
 * into the binary) or at a path (containing '/' or ending in .json), parsed
 * once per process and kept. *out is owned by the cache. */
int kvsim_kernels_get(const char *name_or_path, const kvsim_kernels_t **out, kvsim_err *err);
/* Parses profile JSON text (`where` names it in errors); the caller frees
 * the result with kvsim_kernels_free. */
int kvsim_kernels_parse(const char *json, const char *where, kvsim_kernels_t **out, kvsim_err *err);
void kvsim_kernels_free(kvsim_kernels_t *k);

/* The catalog GPU the tables were measured on, their source, and the vLLM
 * version of the GEMM and attention tables. */
const char *kvsim_kernels_gpu(const kvsim_kernels_t *k);
const char *kvsim_kernels_source(const kvsim_kernels_t *k);
const char *kvsim_kernels_vllm_version(const kvsim_kernels_t *k);

bool kvsim_kernels_has_gemm(const kvsim_kernels_t *k, kvsim_kgemm d);
/* One linear layer: m tokens x (n out, k in) features (us). The precision
 * must be present (kvsim_kernels_has_gemm). */
double kvsim_kernels_gemm_us(const kvsim_kernels_t *k, kvsim_kgemm d, double m, double n, double kk);

/* Attention of one layer (us): prefill (`prefill` true: `batch` sequences
 * of `len` new tokens each, nothing cached) or decode (`batch` sequences
 * adding one token each and attending to `len` keys). Heads are per GPU.
 * A (heads, kv_heads, head_dim) the profile lacks is taken from the
 * nearest one it has, scaled by the ratio of query heads (prefill) or KV
 * heads (decode) and of head_dim. fp8_kv: an fp8 KV cache. Returns < 0
 * (KVSIM_ENOENT) when the profile has no attention of that kind at all. */
double kvsim_kernels_attn_us(const kvsim_kernels_t *k, bool prefill, bool fp8_kv, int heads, int kv_heads,
                             int head_dim, double batch, double len);

/* vLLM's TP all-reduce of `bytes` (bf16) over num_gpus GPUs (us), in a CUDA
 * graph (`graph`) or eager. A GPU count the table lacks is scaled from the
 * nearest by the ring's 2 (n - 1) / n. < 0 when the profile has none. */
double kvsim_kernels_allreduce_us(const kvsim_kernels_t *k, int num_gpus, double bytes, bool graph);
/* An NCCL collective (op "all_gather", "alltoall", "reduce_scatter",
 * "all_reduce") of `bytes` over num_gpus GPUs (us); < 0 when absent. */
double kvsim_kernels_nccl_us(const kvsim_kernels_t *k, const char *op, int num_gpus, double bytes);

/* A fused MoE layer (us) of the model shape (hidden, inter, topk, experts)
 * in moe dtype `dtype` ("bfloat16", "fp8", "fp8_block", "w4a16_mxfp4",
 * "int4_wo", "nvfp4") at moe_tp x moe_ep over `tokens` tokens, skewed
 * (power-law) routing where measured, else balanced; < 0 (KVSIM_ENOENT) when the profile has no such shape. */
double kvsim_kernels_moe_us(const kvsim_kernels_t *k, const char *dtype, int hidden, int inter, int topk,
                            int experts, int tp, int ep, double tokens);

/* Figures derived from the tables: the highest GEMM rate measured in a
 * precision (FLOP/s; 0 when absent), the highest rate a single-token GEMM
 * streamed its weights at (bytes/s), and the shortest kernel measured (us:
 * the floor of one small kernel in a CUDA graph). */
double kvsim_kernels_peak_flops(const kvsim_kernels_t *k, kvsim_kgemm d);
double kvsim_kernels_stream_bw(const kvsim_kernels_t *k);
double kvsim_kernels_min_kernel_us(const kvsim_kernels_t *k);

#ifdef __cplusplus
}
#endif

#endif
