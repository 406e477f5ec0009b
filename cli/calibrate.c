/* kvsim calibrate: fits the step-time model's coefficients of one GPU to
 * measured data (kvsim/fidelity.h kvsim_fidelity_calibrate) and writes
 * them, with the residuals' spread and where they came from, into a GPU
 * JSON file.
 *
 * Data: per-request runs (--measured FILE --scenario SCENARIO.json, in
 * pairs: the scenario replays the file's requests) and fixed-concurrency
 * rows (--silicon FILE [--filter K=V]...; each row reproduced by a closed
 * loop). Only data of the GPU being calibrated is used. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "kvsim/fidelity.h"

static void on_iter(void *ctx, size_t iter, double cost, const int *fit, int nfit, const kvsim_gpu_perf_t *at) {
  (void)ctx;
  kvsim_gpu_perf_t p = *at;
  fprintf(stderr, "calibrate: iteration %zu, cost %.5g:", iter, cost);
  for (int i = 0; i < nfit; i++)
    fprintf(stderr, " %s=%.4g", kvsim_fidelity_coef_name(fit[i]), *kvsim_fidelity_coef(&p, fit[i]));
  fputc('\n', stderr);
}

static void print_residuals(const kvsim_fid_calib_t *c, const kvsim_fid_calib_result_t *r) {
  const double *m = r->measured, *s = r->simulated;
  size_t k = 0;
  for (int i = 0; i < c->nruns; i++) {
    printf("run %s (%s)\n", c->runs[i].m.path, c->runs[i].sc.name);
    for (int j = 0; j < KVSIM_FID_RUN_METRICS; j++, k++) {
      double scale = j / 4 == 1 ? 1e3 : 1;
      printf("  %-10s measured %10.3f %s  simulated %10.3f %s  error %+6.1f%%\n", kvsim_fidelity_run_metric_name(j),
             m[k] * scale, scale > 1 ? "ms" : "s ", s[k] * scale, scale > 1 ? "ms" : "s ", 100 * (s[k] / m[k] - 1));
    }
  }
  if (c->nrows) {
    printf("silicon rows (%d):\n", c->nrows);
    printf("  %5s %-13s %-5s %3s %5s %5s %4s | %9s %9s %7s | %8s %8s %7s\n", "line", "model", "prec", "tp", "isl",
           "osl", "conc", "TTFT ms", "sim", "err", "TPOT ms", "sim", "err");
  }
  for (int i = 0; i < c->nrows; i++, k += 2) {
    const kvsim_fid_sil_row_t *w = &c->rows[i];
    printf("  %5d %-13s %-5s %3lld %5lld %5lld %4lld | %9.1f %9.1f %+6.1f%% | %8.2f %8.2f %+6.1f%%\n", w->line,
           w->model, w->precision[0] ? w->precision : "bf16", (long long)w->tp, (long long)w->isl,
           (long long)w->osl, (long long)w->batch, m[k], s[k], 100 * (s[k] / m[k] - 1), m[k + 1], s[k + 1],
           100 * (s[k + 1] / m[k + 1] - 1));
  }
}

static void print_text(const kvsim_fid_calib_t *c, const kvsim_fid_calib_result_t *r) {
  print_residuals(c, r);
  printf("\n%s: %d run%s, %d silicon rows (%d on other GPUs, %d skipped, %d whose plan does not fit); "
         "%zu iterations, %d simulations of the data set\n",
         c->gpu.name, c->nruns, c->nruns == 1 ? "" : "s", c->nrows, c->rows_other_gpu, c->rows_skipped,
         c->rows_unfit, r->iterations, r->simulations);
  printf("%-18s %12s %12s %10s\n", "coefficient", "start", "fitted", "+/- 1 sd");
  kvsim_gpu_perf_t start = c->gpu.perf, fitted = r->fitted;
  for (int i = 0; i < KVSIM_FID_NCOEF; i++) {
    char sdb[32] = "(fixed)";
    if (r->is_free[i])
      snprintf(sdb, sizeof sdb, "%.3g", r->stddev[i]);
    printf("%-18s %12.4g %12.4g %10s\n", kvsim_fidelity_coef_name(i), *kvsim_fidelity_coef(&start, i),
           *kvsim_fidelity_coef(&fitted, i), sdb);
  }
  printf("median |error|  before: TTFT %.1f%%, TPOT %.1f%%   after: TTFT %.1f%%, TPOT %.1f%%\n", r->before.ttft_med,
         r->before.tpot_med, r->after.ttft_med, r->after.tpot_med);
  printf("residual spread (1.4826 x median |relative error|): TTFT %.3f, TPOT %.3f\n", r->after.ttft_sigma,
         r->after.tpot_sigma);
}

/* Loads the data set, fits, prints; returns the exit code. */
static int calibrate(const char *gpu_arg, const cli_list *measured, const cli_list *scenarios, const char *silicon,
                     const cli_list *filters, double range_ratio, const kvsim_fid_calib_opts_t *opts,
                     const char *out, bool json) {
  kvsim_err err = {0};
  kvsim_gpu_t gpu;
  if (kvsim_gpu_load(gpu_arg, &gpu, &err) < 0)
    return cli_fail("calibrate", "--gpu: %s", err.msg);
  kvsim_fid_calib_t c;
  kvsim_fidelity_calib_init(&c, &gpu);
  kvsim_fid_calib_result_t r;
  memset(&r, 0, sizeof r);
  int rc = KVSIM_OK;
  for (int i = 0; rc == KVSIM_OK && i < measured->n; i++)
    rc = kvsim_fidelity_calib_add_run(&c, measured->items[i], scenarios->items[i], &err);
  if (rc == KVSIM_OK && silicon)
    rc = kvsim_fidelity_calib_add_silicon(&c, silicon, filters->items, filters->n, range_ratio, &err);
  if (rc == KVSIM_OK)
    rc = kvsim_fidelity_calibrate(&c, opts, &r, &err);
  char *js = rc == KVSIM_OK && json ? kvsim_fidelity_calib_to_json(&c, &r) : NULL;
  if (rc == KVSIM_OK && json && !js)
    rc = kvsim_err_set(&err, KVSIM_ENOMEM, "out of memory");
  if (js) {
    puts(js);
    free(js);
  } else if (rc == KVSIM_OK) {
    print_text(&c, &r);
  }
  int code = rc < 0 ? cli_fail("calibrate", "%s", err.msg) : 0;
  if (!code && out && kvsim_fidelity_write_gpu_json(c.gpu.name, gpu_arg, &r.fitted, out, &err) < 0)
    code = cli_fail("calibrate", "--out: %s", err.msg);
  else if (!code && out && !json)
    printf("wrote %s\n", out);
  kvsim_fidelity_calib_result_fini(&r);
  kvsim_fidelity_calib_fini(&c);
  return code;
}

int cmd_calibrate(int argc, char **argv) {
  const char *gpu_arg = NULL, *silicon = NULL, *out = NULL, *fit = NULL, *loss = "soft_l1";
  cli_list measured = {0}, scenarios = {0}, filters = {0};
  bool json = false, verbose = false, range_seen = false;
  double range_ratio = KVSIM_FID_SIL_RANGE_RATIO;
  int64_t max_iter = 30;
  const cli_arg args[] = {
      {"--gpu", ARG_STR, &gpu_arg, "GPU to calibrate: catalog name or GPU JSON file (its perf is the start)", NULL},
      {"--measured", ARG_LIST, &measured,
       "measured per-request file (as kvsim validate --measured); repeatable, paired with --scenario", NULL},
      {"--scenario", ARG_LIST, &scenarios, "the scenario that replays the n-th --measured file", NULL},
      {"--silicon", ARG_PATH, &silicon, "fixed-concurrency table (AIConfigurator silicon CSV)", NULL},
      {"--filter", ARG_LIST, &filters, "with --silicon: keep rows with KEY=VALUE (as kvsim validate)", NULL},
      {"--range-ratio", ARG_NUM, &range_ratio, "with --silicon: length spread (as kvsim validate; default the row's own)",
       &range_seen},
      {"--fit", ARG_STR, &fit,
       "coefficients to fit, comma-separated, of host_us, host_per_seq_us, frontend_us, frontend_per_token_us "
       "(default: host_us,host_per_seq_us, plus frontend_us with client-side latencies); the step times are the "
       "GPU's kernel tables'",
       NULL},
      {"--loss", ARG_STR, &loss, "soft_l1 (default, robust to a few rows the model cannot reproduce) or linear",
       NULL},
      {"--max-iter", ARG_INT, &max_iter, "iterations of the solver (default 30)", NULL},
      {"--out", ARG_PATH, &out, "write the GPU JSON with the fitted \"perf\" object here", NULL},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--verbose", ARG_FLAG, &verbose, "print each iteration to stderr", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("calibrate",
                     "--gpu NAME|FILE [--measured FILE --scenario SCENARIO.json]... [--silicon FILE "
                     "[--filter K=V]...] [--fit LIST] [--out FILE] [--json]",
                     args, argc, argv, 2, pos, 0, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (!gpu_arg)
    return cli_fail("calibrate", "--gpu is required (see kvsim calibrate --help)");
  if (measured.n != scenarios.n)
    return cli_fail("calibrate", "%d --measured files but %d --scenario files: give them in pairs", measured.n,
                    scenarios.n);
  if (!measured.n && !silicon)
    return cli_fail("calibrate", "no data: give --measured FILE --scenario S and/or --silicon FILE");
  if ((filters.n || range_seen) && !silicon)
    return cli_fail("calibrate", "--filter and --range-ratio go with --silicon");
  if (range_seen && !(range_ratio > 0 && range_ratio <= 1))
    return cli_fail("calibrate", "--range-ratio: %g must be in (0, 1]", range_ratio);
  if (!range_seen)
    range_ratio = KVSIM_FID_SIL_RANGE_AUTO;
  if (max_iter < 1 || max_iter > 1000)
    return cli_fail("calibrate", "--max-iter: %lld must be in [1, 1000]", (long long)max_iter);

  kvsim_fid_calib_opts_t opts = {.linear = !strcmp(loss, "linear"), .max_iter = (int)max_iter};
  if (strcmp(loss, "soft_l1") && strcmp(loss, "linear"))
    return cli_fail("calibrate", "--loss: '%s' (expected soft_l1 or linear)", loss);
  int fitv[KVSIM_FID_NCOEF], nfit = 0;
  kvsim_err err = {0};
  if (fit && kvsim_fidelity_parse_fit(fit, fitv, &nfit, &err) < 0)
    return cli_fail("calibrate", "%s", err.msg);
  opts.fit = fitv;
  opts.nfit = nfit;
  if (verbose)
    opts.progress = on_iter;
  return calibrate(gpu_arg, &measured, &scenarios, silicon, &filters, range_ratio, &opts, out, json);
}
