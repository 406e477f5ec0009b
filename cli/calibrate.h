/* kvsim calibrate's pieces shared between its files. Internal to the CLI. */
#ifndef KVSIM_CLI_CALIBRATE_H
#define KVSIM_CLI_CALIBRATE_H

#include "kvsim/error.h"
#include "kvsim/gpu.h"

/* Writes `out`: the GPU JSON of `gpu_arg` (catalog name `gpu_name` or a
 * path) with its "perf" object replaced by p. Atomic (temp + rename). */
int calib_write_gpu_json(const char *gpu_name, const char *gpu_arg, const kvsim_gpu_perf_t *p,
                         const char *out, kvsim_err *err);

#endif
