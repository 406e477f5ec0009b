/* Leave-one-group-out internals shared by logo.c and logo_data.c. */
#ifndef KVSIM_FIDELITY_LOGO_H
#define KVSIM_FIDELITY_LOGO_H

#include "kvsim/fidelity.h"

/* The group of that key, appended (zeroed, errors NAN) when new; NULL when
 * out of memory. */
kvsim_fid_logo_group_t *kvsim__logo_group(kvsim_fid_logo_t *l, const char *gpu, const char *model,
                                          const char *precision, const char *source);
/* Records an excluded row. */
int kvsim__logo_exclude(kvsim_fid_logo_t *l, const char *id, const char *reason);

/* The coefficients that stand in for GPU g held out: the generation
 * default (gpu.h kvsim_gpu_default_perf) that a GPU without data of its
 * own would get, of g's generation when that default was built from
 * another GPU's data, else of the nearest generation whose default never
 * saw g. Writes what they are into `from` ("blackwell default (b200 fit)"). */
void kvsim__logo_donor(const kvsim_gpu_t *g, kvsim_gpu_perf_t *p, char *from, size_t from_size);
bool kvsim__logo_is_moe(const char *model);
/* Keeps the held-out errors (%, signed or not) of a group's n rows as
 * its row_err. KVSIM_ENOMEM when out of memory. */
int kvsim__logo_set_rows(kvsim_fid_logo_group_t *g, const double *ttft, const double *tpot, int n);
/* The q-quantile of x[0..n) by linear interpolation (sorts x; n >= 1). */
double kvsim__logo_quantile(double *x, int n, double q);
/* The silicon groups (logo_silicon.c). */
int kvsim__logo_silicon(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_err *err);

#endif
