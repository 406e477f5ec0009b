/* The registry's parameters read from a JSON object (the scenario's
 * sections, a profile's own options): each held to its row's bounds in
 * its row's wording, an error carrying the parameter's id. Internal. */
#ifndef KVSIM_CORE_PARAMS_JSON_H
#define KVSIM_CORE_PARAMS_JSON_H

#include <cJSON.h>
#include <stdint.h>

#include "kvsim/error.h"

/* The registry's parameter `id` (kvsim/params.h) under object o, by the
 * last part of its key, held to the row's bounds in the row's wording
 * ("W.block_size: 5000 is out of range [1, 4096]"); an error carries the
 * id. 0 when absent or null (out untouched), 1 when read, < 0 on error. */
int kvsim__json_param_int(const cJSON *o, int id, int64_t *out, const char *w, kvsim_err *err);
/* A number: kvsim_param_check_num's wording ("W.key: 1.5 is outside (0, 1]"). */
int kvsim__json_param_num(const cJSON *o, int id, double *out, const char *w, kvsim_err *err);

#endif
