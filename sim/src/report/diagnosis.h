/* The seeds' troubleshooting table, measured on the run: what limited it
 * and what to change. Internal to the report; the changes it advises are
 * typed (kvsim_advice_t) so that the study room can re-run the scenario
 * with each and report the effect (study/advice.c). */
#ifndef KVSIM_REPORT_DIAGNOSIS_H
#define KVSIM_REPORT_DIAGNOSIS_H

#include "kvsim/summary.h"

/* What the diagnosis reads beyond the summary: figures of the run that
 * summary.json does not print. */
typedef struct kvsim__diag_input {
  double frac_kv_full;    /* samples with the pool full and requests waiting */
  double frac_seq_bound;  /* samples with running == max_num_seqs */
  double offered_rate;    /* requests that arrived over their arrival span, req/s (0: unknown) */
  double hbm_GBps;        /* one GPU's HBM bandwidth: the weight-read floor of a step */
  double comm_share;      /* the TP all-reduce's share of the run's mean step (0: none, unknown) */
  const kvsim_gpu_t *gpu; /* the run's GPU, for a faster one from the catalog (NULL: none) */
  int64_t rejected_too_long, rejected_admission, rejected_no_fit;
} kvsim__diag_input_t;

/* Thresholds of the rules (diagnosis.c says why each). */
#define KVSIM__DIAG_OVERLOAD_SERVED 0.9   /* served below this fraction of offered */
#define KVSIM__DIAG_OVERLOAD_QUEUE_S 1.0  /* p99 queueing delay above this */
#define KVSIM__DIAG_STEP_FLOOR_RATIO 4.0  /* batch work dominates a step beyond this */
#define KVSIM__DIAG_KV_FULL_FRAC 0.2      /* pool full in more than this share of samples */
#define KVSIM__DIAG_COMM_SHARE (1.0 / 3)  /* the all-reduce sets the step beyond this share */

/* Appends findings, each with the changes it advises, to s->diagnosis.
 * Reads the summary's figures (requests, latency, KV, prefix, plan,
 * replicas), which must be filled. */
void kvsim__diagnose(const kvsim__diag_input_t *in, kvsim_summary_t *s);

/* A finding appended to s->diagnosis (NULL when full), an advice to it
 * (NULL when d is NULL or full), and FP8 KV advised when the cache is
 * wider than 8 bits (diagnosis.c). */
kvsim_diagnosis_t *kvsim__diag_add(kvsim_summary_t *s, const char *code, const char *severity,
                                   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
kvsim_advice_t *kvsim__diag_advise(kvsim_diagnosis_t *d, kvsim_advice_kind kind, double value);
void kvsim__diag_advise_fp8(kvsim_diagnosis_t *d, const kvsim_summary_t *s);

/* A disaggregated run's finding (diagnosis_disagg.c): what bounds its
 * TTFT, the prefill pool (its queue), the decode pool (prompts holding
 * their KV on the prefill side, waiting for decode blocks) or the link,
 * from the mean TTFT's parts and each side's busy share; with the change
 * that should help (one more instance of the bounding side). */
#define KVSIM__DIAG_DISAGG_PART 0.10     /* a wait below this share of TTFT bounds nothing */
#define KVSIM__DIAG_DISAGG_WARN 0.25     /* from this share on, a warning */
#define KVSIM__DIAG_DISAGG_LINK_BUSY 0.8 /* a link this busy bounds, whatever waits behind it */
void kvsim__diagnose_disagg(const kvsim__diag_input_t *in, kvsim_summary_t *s);

/* Appends a finding when the GPU's step-time coefficients are not its own
 * fit (cal->status not fitted): a run's latencies then rest on borrowed
 * or spec-only figures, and the summary's ranges are wide for that. */
void kvsim__diagnose_calibration(const kvsim_calibration_t *cal, kvsim_summary_t *out);

#endif
