/* The step model's terms, one file each (perf.h has the composition).
 * Internal to the perf room. Each init reads the kernel profile once for
 * the model, GPU and plan; each term takes the batch's shape, adds its
 * FLOPs and bytes to `k` and returns its time in seconds. */
#ifndef KVSIM_PERF_TERMS_H
#define KVSIM_PERF_TERMS_H

#include "kvsim/perf.h"

/* The ratio of an operation's roofline on this GPU to the tables' GPU (1
 * for a GPU's own tables): a borrowed kernel time is scaled by it. */
double kvsim__perf_hw_ratio(const kvsim_perf_hw_t *hw, double flops, double bytes);

/* Every linear layer and the lm_head (gemm.c). prec: a kvsim_kgemm, or -1
 * for weight-only quantized weights. */
struct kvsim_quant;
int kvsim__perf_init_gemms(kvsim_perf_t *pf, const kvsim_model_t *m, const struct kvsim_quant *q, int prec,
                           kvsim_err *err);
double kvsim__perf_gemms(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k);
/* One GEMM's latency (us) at m rows, from its precomputed curve. */
double kvsim__perf_gemm_us(const kvsim_perf_t *pf, const kvsim_perf_gemm_t *g, double m);
/* Fills g->t_us over the profile's m grid (shared by the experts' GEMMs). */
void kvsim__perf_fill_gemm(const kvsim_perf_t *pf, kvsim_perf_gemm_t *g, int prec);

/* Prefill and decode attention (attention.c). */
int kvsim__perf_init_attention(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_plan_t *pl, kvsim_err *err);
double kvsim__perf_attention(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k);

/* The MLA attention block from the module tables (mla.c): init finds the
 * tables of the model's shape, precision `prec` (a kvsim_kgemm or -1), KV
 * dtype and heads per rank (pf->mla_gen/mla_ctx stay NULL when any is
 * missing); the lookup gives one layer's block time (us) for the step. */
void kvsim__perf_init_mla(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_plan_t *pl, int prec);
double kvsim__perf_mla_block_us(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b);

/* Routed experts (moe.c). */
int kvsim__perf_init_moe(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_plan_t *pl,
                         const struct kvsim_quant *q, kvsim_err *err);
double kvsim__perf_moe(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k);

/* TP all-reduces, PP transfers, EP dispatch/combine (comm.c). */
struct kvsim_kernels;
int kvsim__perf_init_comm(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_t *pl,
                          const struct kvsim_kernels *col, kvsim_err *err);
double kvsim__perf_comm(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b);

/* Norms, rotary, activation, residuals, the sampler (elementwise.c). */
void kvsim__perf_init_elementwise(kvsim_perf_t *pf, const kvsim_model_t *m, const kvsim_gpu_t *g,
                                  const kvsim_gpu_t *donor);
double kvsim__perf_elementwise(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k);

/* The engine's host time per step, fixed and per scheduled request, us
 * (host.c). */
void kvsim__perf_host(kvsim_plan_engine engine, int vllm_version, double *fixed_us, double *per_seq_us);
/* The host term's family of an engine release (perf.h KVSIM_HOST_*). */
int kvsim__perf_host_family(kvsim_plan_engine engine, int vllm_version);

#endif
