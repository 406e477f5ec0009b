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

/* Appends a finding when the GPU's step-time coefficients are not its own
 * fit (cal->status not fitted): a run's latencies then rest on borrowed
 * or spec-only figures, and the summary's ranges are wide for that. */
void kvsim__diagnose_calibration(const kvsim_calibration_t *cal, kvsim_summary_t *out);

#endif
