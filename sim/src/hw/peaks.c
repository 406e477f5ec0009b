/* Measured peaks (gpu.h kvsim_gpu_t achieved_*) and what a borrowed fit
 * makes of them (kvsim_gpu_borrow_perf).
 *
 * A fit's mfu is the fraction of its GPU's *spec* dense peak that large
 * GEMMs reach in the engine, and mbu the fraction of its spec HBM
 * bandwidth that weight streaming reaches. GPUs do not reach the same
 * share of their spec: the best bf16 matmul measured on an H100 SXM is
 * 80.3 % of its 989 TFLOPS, on a B200 77.6 %, on an A100 SXM 86.9 %
 * (stas00/ml-engineering, compute/accelerator/README.md, "Maximum
 * Achievable Matmul FLOPS comparison table"), on an RTX 4090 106 % (the
 * card boosts past the spec clock: 175.1 TFLOPS, cuBLASLt 8192^3,
 * github.com/binbinsh/gpu-bench results/4090.json). An efficiency copied
 * from one GPU to another as a fraction of spec carries the donor's share
 * with it; re-expressed against the target's own measured share it
 * carries only what the engine loses below the silicon's reachable peak,
 * which is the part that transfers. A figure missing on either side
 * leaves that coefficient as the donor's. */
#include <stdio.h>
#include <string.h>

#include "hw/peaks.h"

/* A measured figure is a share of the spec one (bf16_tflops and
 * hbm_bandwidth_GBps, both required and positive), with room for a card
 * that boosts past its spec clock (the RTX 4090's 106 %); below 5 % it is
 * a unit slip (TFLOPS for GFLOPS, TB/s for GB/s), not a measurement, and
 * would divide a borrowed efficiency towards 0. */
#define MIN_SHARE 0.05
#define MAX_SHARE 1.25

int kvsim__gpu_parse_peaks(const cJSON *j, const char *where, kvsim_gpu_t *g, kvsim_err *err) {
  const struct {
    const char *key;
    double *dst, spec;
  } f[] = {{"achieved_bf16_tflops", &g->achieved_bf16_tflops, g->bf16_tflops},
           {"achieved_copy_GBps", &g->achieved_copy_GBps, g->hbm_bandwidth_GBps}};
  int rc;
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
    if ((rc = kvsim__json_num_in(j, f[i].key, 0, 1e6, f[i].dst, where, err)) < 0)
      return rc;
    if (rc > 0 && *f[i].dst == 0) /* 0: not measured, as when absent */
      continue;
    if (rc > 0 && (*f[i].dst < MIN_SHARE * f[i].spec || *f[i].dst > MAX_SHARE * f[i].spec))
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s.%s: %g is out of range [%g, %g] (%.0f-%.0f %% of the spec figure %g: a measured "
                           "peak is a share of it)",
                           where, f[i].key, *f[i].dst, MIN_SHARE * f[i].spec, MAX_SHARE * f[i].spec,
                           MIN_SHARE * 100, MAX_SHARE * 100, f[i].spec);
  }
  return kvsim__json_str(j, "achieved_source", g->achieved_source, sizeof g->achieved_source, where, err) < 0
             ? err->code
             : KVSIM_OK;
}

/* The catalog GPU whose fit a generation default copies mfu and mbu
 * from (kvsim_gpu_default_perf: ada's are the rtx4090 fit's). */
static const char *origin(const char *generation) {
  if (!strcmp(generation, "blackwell"))
    return "b200";
  if (!strcmp(generation, "ada"))
    return "rtx4090";
  return "h100-sxm";
}

static double share(double achieved, double spec) { return achieved > 0 && spec > 0 ? achieved / spec : 0; }

/* coef x to / from when both shares are measured; an efficiency stays <= 1.
 * Returns whether it applied. */
static bool rescale(double *coef, double to, double from) {
  if (!(to > 0 && from > 0))
    return false;
  *coef *= to / from;
  if (*coef > 1)
    *coef = 1;
  return true;
}

/* Loads the origin GPU unless it is g itself (whose share is the origin's:
 * nothing to do, and no loop through the loader). */
static bool load_origin(const kvsim_gpu_t *g, const char *name, kvsim_gpu_t *o) {
  kvsim_err err = {0};
  return strcmp(g->name, name) && kvsim_gpu_load(name, o, &err) == KVSIM_OK;
}

void kvsim_gpu_borrow_perf(const kvsim_gpu_t *g, const char *generation, kvsim_gpu_perf_t *p) {
  kvsim_gpu_default_perf(generation, p);
  kvsim_gpu_t o;
  if (!load_origin(g, origin(generation), &o)) {
    kvsim_gpu_class_perf(g, p);
    return;
  }
  const bool mfu = rescale(&p->mfu, share(g->achieved_bf16_tflops, g->bf16_tflops),
                           share(o.achieved_bf16_tflops, o.bf16_tflops));
  const bool mbu = rescale(&p->mbu, share(g->achieved_copy_GBps, g->hbm_bandwidth_GBps),
                           share(o.achieved_copy_GBps, o.hbm_bandwidth_GBps));
  /* Say so where the run's calibration is reported (summary.json
   * latency.calibration.source). */
  if (mfu || mbu) {
    size_t n = strlen(p->source);
    snprintf(p->source + n, sizeof p->source - n, "; %s%s%s at this GPU's measured peak%s over %s's", mfu ? "mfu" : "",
             mfu && mbu ? " and " : "", mbu ? "mbu" : "", mfu && mbu ? "s" : "", o.name);
  }
  kvsim_gpu_class_perf(g, p);
}

void kvsim_gpu_use_perf(kvsim_gpu_t *g, const kvsim_gpu_perf_t *p) {
  char gen[sizeof p->default_of]; /* p may be g's own perf, which borrowing overwrites */
  snprintf(gen, sizeof gen, "%s", p->default_of);
  if (gen[0])
    kvsim_gpu_borrow_perf(g, gen, &g->perf);
  else
    g->perf = *p;
}
