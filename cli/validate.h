/* The text reports of kvsim validate (validate_print.c). CLI-internal. */
#ifndef KVSIM_CLI_VALIDATE_H
#define KVSIM_CLI_VALIDATE_H

#include "kvsim/fidelity.h"

void validate_print_measured(const kvsim_fid_measured_t *m, const kvsim_scenario_t *sc,
                             const kvsim_fid_measured_cmp_t *c);
void validate_print_silicon(const kvsim_fid_silicon_t *s);
void validate_print_startup(const kvsim_fid_startup_t *t, const char *file);

#endif
