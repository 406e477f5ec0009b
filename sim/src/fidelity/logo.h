/* Leave-one-GPU-out internals shared by logo.c, logo_items.c, logo_fit.c
 * and logo_data.c. */
#ifndef KVSIM_FIDELITY_LOGO_H
#define KVSIM_FIDELITY_LOGO_H

#include "kvsim/fidelity.h"

/* The group of that key, appended (zeroed, errors NAN) when new; NULL when
 * out of memory. */
kvsim_fid_logo_group_t *kvsim__logo_group(kvsim_fid_logo_t *l, const char *gpu, const char *model,
                                          const char *precision, const char *source);
/* Records an excluded row. */
int kvsim__logo_exclude(kvsim_fid_logo_t *l, const char *id, const char *reason);
bool kvsim__logo_is_moe(const char *model);
/* Keeps a copy of the group's n held-out rows as its row. KVSIM_ENOMEM
 * when out of memory. */
int kvsim__logo_set_rows(kvsim_fid_logo_group_t *g, const kvsim_fid_logo_row_t *rows, int n);
/* The q-quantile of x[0..n) by linear interpolation (sorts x; n >= 1). */
double kvsim__logo_quantile(double *x, int n, double q);

/* What is fitted: the engine's host time per step, fixed and per scheduled
 * request, of vLLM's synchronous [0] and asynchronous [1] schedulers
 * (perf.h), and the benchmark client's latency (us). */
typedef kvsim_fid_host_t kvsim__logo_par_t;

/* One measured item of the dev data: a per-request run or a silicon row. */
typedef struct kvsim__logo_item {
  int run;                          /* index into the runs (>= 0), or -1 for a silicon row */
  const kvsim_fid_sil_row_t *row;
  char gpu[64];
  int group;
  bool client;                      /* TTFT and E2E measured by a benchmark client */
  bool moe;                         /* a MoE model: predicted, not fitted */
  int family;                       /* its engine's host-term family (perf.h KVSIM_HOST_*) */
  double meas[3];                   /* mean TTFT, TPOT, E2E (ms) */
  /* Simulated with no host time, with KVSIM__LOGO_H1 fixed, and with
   * KVSIM__LOGO_S1 per request (frontend 0): the linear model. */
  double at0[3], at1[3], at2[3];
  double held[3];                   /* held out: the GPU left out of the host fit */
  kvsim__logo_par_t par;            /* the fit it was held out with */
} kvsim__logo_item_t;

/* The host values the linear model is taken at (us). */
#define KVSIM__LOGO_H1 2000.0
#define KVSIM__LOGO_S1 50.0

/* Item it's latency k at p by the linear model (ms). */
double kvsim__logo_linear(const kvsim__logo_item_t *it, int k, const kvsim__logo_par_t *p);

/* Simulates item it on its GPU (kernels: another profile, NULL for its
 * own) with the engine host time host_us and client latency frontend_us:
 * mean TTFT, TPOT, E2E (ms) into out. */
int kvsim__logo_simulate(const kvsim_fid_logo_opts_t *o, const kvsim__logo_item_t *it, const char *kernels,
                         const kvsim__logo_par_t *p, double out[3], kvsim_err *err);
/* The items of the dev data into *items (owned by the caller, kvsim__free),
 * the excluded rows and the groups into l. t[0] and t[1] hold the vLLM and
 * SGLang silicon rows the items point into. */
int kvsim__logo_collect(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_fid_sil_table_t t[2],
                        kvsim__logo_item_t **items, int *n, kvsim_err *err);

/* The host times and client latency that fit the items not on GPU `skip`
 * (NULL: all) best, by the items' linear model: the least sum of
 * |log(simulated / measured)| over TTFT, TPOT and E2E. Returns how many
 * items it used. */
int kvsim__logo_fit(const kvsim__logo_item_t *items, int n, const char *skip, kvsim__logo_par_t *p);

#endif
