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

/* The fitted GPU whose coefficients stand in for `gpu` held out: the
 * datacenter fit of its generation, else Hopper's (Blackwell's for H100). */
const char *kvsim__logo_donor(const char *gpu, const char *generation);
bool kvsim__logo_is_moe(const char *model);
/* The silicon groups (logo_silicon.c). */
int kvsim__logo_silicon(const kvsim_fid_logo_opts_t *o, kvsim_fid_logo_t *l, kvsim_err *err);

#endif
