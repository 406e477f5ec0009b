/* The memory plans behind kvsim_plan_compute, one file per engine (plan.c
 * dispatches on kvsim_plan_params_t.engine), and what the vLLM plan lends
 * the reverse question (plan_reverse.c). Internal to the memory room. */
#ifndef KVSIM_MEMORY_PLAN_ENGINES_H
#define KVSIM_MEMORY_PLAN_ENGINES_H

#include "kvsim/plan.h"

/* vLLM's plan for the resolved parameters, without the bisection for
 * max_model_len_fit (plan.c). Same contract as kvsim_plan_compute. */
int kvsim__plan_vllm(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *p,
                     kvsim_plan_t *out, kvsim_err *err);

/* Memory plans computed (kvsim_plan_compute calls) since the process
 * started (tests: a run handed its resolved configuration computes none). */
int64_t kvsim__plan_count(void);

/* KVSIM_EINVAL naming `flag` (and the scenario `key`, when not NULL) and
 * the range when v is outside [lo, hi]; KVSIM_OK otherwise (plan.c). */
int kvsim__plan_check_int(int64_t v, int64_t lo, int64_t hi, const char *flag, const char *key,
                          kvsim_err *err);

/* TGI's warmup sizing (plan_tgi.c). Same contract as kvsim_plan_compute. */
int kvsim__plan_tgi(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *p,
                    kvsim_plan_t *out, kvsim_err *err);

/* HF Transformers cache classes (plan_hf.c). Same contract. */
int kvsim__plan_hf(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *p,
                   kvsim_plan_t *out, kvsim_err *err);

/* vLLM's pool-size override engine.kv_cache_memory_bytes
 * (--kv-cache-memory-bytes, vllm/config/cache.py) on an engine that has no
 * such option: KVSIM_EINVAL naming it, the engine, and what that engine
 * sizes its pool by (`instead`); KVSIM_OK when it is not set. */
int kvsim__plan_refuse_kv_cache_bytes(const kvsim_plan_params_t *p, const char *engine,
                                      const char *instead, kvsim_err *err);

/* A CUDA context with lazy module loading: "~300MB" (CUDA >= 11.7,
 * pytorch/pytorch#107667). vLLM's budget does not charge it (its profiling
 * starts after the context exists); TGI and a plain Transformers process
 * see it in cudaMemGetInfo's free memory. */
#define KVSIM__CUDA_CONTEXT_GIB 0.3

#endif
