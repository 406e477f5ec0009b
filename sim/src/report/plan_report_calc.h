/* Each engine's calc (flags, compute, print), one file each; the helpers
 * they share. Internal to the report room. */
#ifndef KVSIM_REPORT_PLAN_REPORT_CALC_H
#define KVSIM_REPORT_PLAN_REPORT_CALC_H

#include <stddef.h>

#include "kvsim/report.h"

/* A flag table row: NAME, KIND (INT, NUM, STR, FLAG), the field of the
 * engine's argument struct T, help. */
#define KVSIM__CALC_FLAG(T, name, kind, field, help)                                               \
  { name, KVSIM_CALC_##kind, offsetof(T, field), help, 0 }
/* A row of the registry's parameter KVSIM_PARAM_<id>: its flag and help
 * are the registry's (kvsim/params.h), filled in by kvsim_calc_engine_find,
 * so such a table is `static kvsim_calc_flag_t`, not const. */
#define KVSIM__CALC_PARAM(T, id, kind, field)                                                      \
  { NULL, KVSIM_CALC_##kind, offsetof(T, field), NULL, KVSIM_PARAM_##id }

extern const kvsim_calc_engine_t kvsim__calc_vllm;    /* plan_report_vllm.c */
extern const kvsim_calc_engine_t kvsim__calc_sglang;  /* plan_report_sglang.c */
extern const kvsim_calc_engine_t kvsim__calc_tgi;     /* plan_report_tgi.c */
extern const kvsim_calc_engine_t kvsim__calc_hf;      /* plan_report_hf.c */
extern const kvsim_calc_engine_t kvsim__calc_compare; /* plan_compare_report.c */

/* Loads --model and --gpu into c (errors "--model: ...", "--gpu: ..."). */
int kvsim__calc_load(const kvsim_calc_common_t *a, kvsim_calc_t *c, kvsim_err *err);

/* Whether the flag of `flags` (an engine's table) whose value lies at
 * `offset` was given, under any of its names (--tp-size is
 * --tensor-parallel-size). */
bool kvsim__calc_given(const kvsim_calc_args_t *a, const kvsim_calc_flag_t *flags, size_t offset);

/* The name the flag at `offset` was typed as: of its aliases the one given
 * last (--tp-size for SGLang's --tensor-parallel-size), else its first
 * name. For errors naming the flag as the user wrote it. */
const char *kvsim__calc_flag_name(const kvsim_calc_args_t *a, const kvsim_calc_flag_t *flags,
                                  size_t offset);

/* --quantization (the STR flag at `offset`) into out: absent, "" (the
 * model's own); given, not empty ("--quantization=" once silently meant
 * the model's own). Errors "--quantization: empty value (...)". */
int kvsim__calc_quant(const kvsim_calc_args_t *a, const kvsim_calc_flag_t *flags, size_t offset,
                      char *out, size_t cap, kvsim_err *err);

/* An integer flag, when given, in [lo, hi] (an absent one keeps its
 * default). Errors "FLAG: V is out of range [LO, HI]". */
int kvsim__calc_int_range(bool given, int64_t v, int64_t lo, int64_t hi, const char *flag,
                          kvsim_err *err);

/* --gpu-memory-gib, when given: GiB -> bytes in *bytes (absent: left
 * alone); the bound is checked before the conversion (1e12 GiB overflows
 * int64). Errors "--gpu-memory-gib: X GiB is out of range (0, MAX]". */
int kvsim__calc_memory(bool given, double gib, int64_t *bytes, kvsim_err *err);

/* A measured size in GiB (--weights-gib, --activation-gib, ...): when
 * given, in [0, KVSIM_PLAN_MAX_GIB]; absent, it stays -1 (predict).
 * Errors "FLAG: X GiB is out of range [0, MAX]". */
int kvsim__calc_gib(bool given, double gib, const char *flag, kvsim_err *err);

/* The measured --weights-gib, --activation-gib, --non-torch-gib, each by
 * kvsim__calc_gib. */
int kvsim__calc_measured(const double gibs[3], const bool given[3], kvsim_err *err);

/* Prints j (deterministic numbers) and a newline to out; frees j. */
void kvsim__calc_print_json(cJSON *j, FILE *out);

#endif
