/* The hw room's borrowed kernel tables, internal (borrow.c). */
#ifndef KVSIM_HW_BORROW_H
#define KVSIM_HW_BORROW_H

#include "core/util.h"
#include "kvsim/gpu.h"

/* achieved_bf16_tflops, achieved_copy_GBps and
 * achieved_source of a GPU file, each optional; after the spec figures
 * (0: not measured; otherwise 5-125 % of its spec figure, or an error). */
int kvsim__gpu_parse_peaks(const cJSON *j, const char *where, kvsim_gpu_t *g, kvsim_err *err);

/* The kernel tables a GPU file without a "perf" runs on, by compute
 * capability and link class (borrow.c). */
void kvsim__gpu_default_kernels(const kvsim_gpu_t *g, kvsim_gpu_perf_t *p);

#endif
