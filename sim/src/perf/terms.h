/* The step model's terms, one file each (perf.h has the formula). Internal
 * to the perf room. Each takes the precomputed model arithmetic (pf) and
 * the batch's shape, adds its FLOPs and bytes to `k` and returns its time
 * in seconds. */
#ifndef KVSIM_PERF_TERMS_H
#define KVSIM_PERF_TERMS_H

#include "kvsim/perf.h"

/* Every projection's and expert's GEMM over the step's tokens (gemm.c). */
double kvsim__perf_gemms(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k);
/* Attention: prefill FLOPs, decode KV bytes, the per-sequence floor (attention.c). */
double kvsim__perf_attention(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b, kvsim_step_cost_t *k);
/* TP all-reduces, PP transfers, EP dispatch/combine (comm.c). */
double kvsim__perf_comm(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b);
/* Kernel and host floors: per step, per layer, per scheduled request (floors.c). */
double kvsim__perf_floors(const kvsim_perf_t *pf, const kvsim_batch_shape_t *b);

#endif
