/* The seeds' troubleshooting table, measured on the run: what limited it
 * and what to change. Internal to the report. */
#ifndef KVSIM_REPORT_DIAGNOSIS_H
#define KVSIM_REPORT_DIAGNOSIS_H

#include <cJSON.h>

#include "kvsim/engine.h"
#include "kvsim/scenario.h"

/* Appends {"code", "severity", "message"} objects to `out`. */
void kvsim__diagnose(const kvsim_scenario_t *sc, const kvsim_run_stats_t *st, double ttft_p50,
                     double ttft_p99, cJSON *out);

#endif
