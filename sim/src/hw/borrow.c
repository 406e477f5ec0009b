/* What a GPU without a fit of its own runs on (gpu.h): its generation's
 * default, built from a fitted GPU's coefficients (kvsim_gpu_default_perf),
 * what its class adds (kvsim_gpu_class_perf), and its measured peaks
 * (kvsim_gpu_t achieved_*), against which the borrowed efficiencies are
 * re-expressed (kvsim_gpu_borrow_perf).
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
 * leaves that coefficient as the donor's. mfu_fp8 is not re-expressed by
 * the fp8 shares (achieved_fp8_tflops): the fits' fp8 efficiencies differ
 * between generations by far more than the silicon's shares do (0.64 of
 * spec on H100, 0.42 on B200, against best fp8 matmuls at 71 % and 76 %),
 * which is the engine's fp8 path, not the part; kvsim calibrate uses the
 * fp8 share as the fit's ceiling instead. */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "core/catalog.h"
#include "hw/borrow.h"

void kvsim_gpu_default_perf(const char *generation, kvsim_gpu_perf_t *p) {
  /* Defaults by generation for GPUs without a fit of their own. The step
   * model's terms are physical (perf.h), so a generation default is the
   * efficiencies and floors of a fitted GPU applied to another GPU's own
   * peaks, bandwidth and links:
   * - hopper and every generation without measured data (ampere, cdna3,
   *   ...): the h100-sxm fit (scripts/calibrate.sh; AIConfigurator vLLM
   *   rows of Qwen3-32B bf16/fp8 and Llama-3.1-70B fp8, TP 1-8);
   * - blackwell: the b200 fit (its Llama-3.1-70B / Qwen3-32B fp8 rows);
   * - ada: hopper's, with the rtx4090 run's GEMM and bandwidth
   *   efficiencies (one per-request run pins only those: fitted with its
   *   per-request floor free as well, it walks a valley in which mfu and
   *   that floor trade, 0.79 / 33 us to 0.98 / 71 us at the same error).
   * kvsim_gpu_borrow_perf re-expresses mfu and mbu against the target's
   * measured peaks; kvsim_gpu_band widens the band of a borrowed fit. */
  memset(p, 0, sizeof *p);
  /* MoE experts stream like dense weights unless a fit says otherwise;
   * fp4 GEMMs, with no fitted row, at fp8's fraction of their peak. */
  p->moe_efficiency = 1.0;
  p->per_token_us = 0;
  p->attn_seq_floor_us = 0;
  p->frontend_per_token_us = 0;
  /* hopper: the h100-sxm fit (configs/gpus/h100-sxm.json, 138 rows),
   * which scripts/calibrate.sh wrote from the previous defaults. Rerun
   * from these it moves step_overhead_us to 4.7 us (that floor is
   * unpinned: +/- 1,970 us, 1 sd) and the rest by at most 0.4 %, at the
   * same in-sample error. */
  p->mfu = 0.4670;
  p->mfu_fp8 = 0.6388;
  p->mbu = 0.9878;
  p->attn_efficiency = 0.1457;
  p->step_overhead_us = 23.0;
  p->per_layer_us = 57.891;
  p->per_seq_us = 54.433;
  p->frontend_us = 35204.6;
  if (!strcmp(generation, "blackwell")) {
    /* the b200 fit's first stage (scripts/calibrate.sh; 60 fp8 rows, no
     * bf16 row: mfu keeps its start). Its second stage adds a client cost
     * per prompt token that those rows ask for and moves the engine terms
     * with it (configs/gpus/b200.json): a property of that benchmark
     * campaign, which a GPU without data of its own has no measure of. */
    p->mfu = 0.70;
    p->mfu_fp8 = 0.4239;
    p->mbu = 0.8829;
    p->attn_efficiency = 0.1403;
    p->step_overhead_us = 600;
    p->per_layer_us = 37.078;
    p->per_seq_us = 48.697;
    p->frontend_us = 44865.8;
  } else if (!strcmp(generation, "ada")) {
    /* The rtx4090 run's GEMM and bandwidth efficiencies. Its card boosts
     * past the spec clock (its measured matmul peak is 106 % of spec,
     * configs/gpus/rtx4090.json) but copies at 91 % of its 1,008 GB/s, so
     * its mbu ~1.0 also absorbs floors smaller than the hopper ones it
     * keeps (its run is vLLM 0.19 with async scheduling, the hopper rows
     * 0.12). An Ada part with measured peaks of its own (L40S, L4: power-
     * or clock-limited) gets these at its own share (kvsim_gpu_borrow_perf
     * below). */
    p->mfu = 0.8862;
    p->mbu = 0.9968;
  }
  p->mfu_fp4 = p->mfu_fp8;
  snprintf(p->source, sizeof p->source, "default for generation '%s' (uncalibrated)", generation);
  /* hopper, blackwell and ada borrow a measured GPU's fit; the others
   * borrow hopper's without any measurement of their own generation. */
  p->status = !strcmp(generation, "hopper") || !strcmp(generation, "blackwell") || !strcmp(generation, "ada")
                  ? KVSIM_CAL_GENERATION_DEFAULT
                  : KVSIM_CAL_SPEC_ONLY;
}

void kvsim_gpu_class_perf(const kvsim_gpu_t *g, kvsim_gpu_perf_t *p) {
  /* SM120's fused-MoE kernel streams expert weights well below a dense
   * GEMM: published kernel times on the RTX PRO 6000 (vLLM issue #44688:
   * E=256 N=256 K=2048 block-fp8, default and tuned configs at parity,
   * 112 / 303 / 354 us at batch 16 / 64 / 256; PR #39183: E=256 N=512
   * K=2048 block-fp8, 134 / 242 / 550 us at batch 8 / 16 / 96), with the
   * experts a batch touches under uniform routing, read their weights at
   * 64-80 % of the 1,792 GB/s; the median of those six, 74.5 %, over the
   * coefficients' own dense streaming rate (mbu) is the default. The
   * rtx-pro-6000 fit on a measured MoE run says 0.717 x 0.848 = 60.8 %. */
  if (g->compute_capability >= 12.0 && g->compute_capability < 13.0 && p->mbu > 0)
    p->moe_efficiency = KVSIM_GPU_SM120_MOE_STREAM / p->mbu < 1 ? KVSIM_GPU_SM120_MOE_STREAM / p->mbu : 1;
}

static const char *origin(const char *generation);

const char *kvsim_gpu_default_perf_origin(const char *generation) {
  /* As kvsim_gpu_default_perf above: ada takes the rtx4090 fit for mfu
   * and mbu and hopper's for the rest. */
  if (!strcmp(generation, "ada"))
    return "rtx4090 (mfu, mbu), h100-sxm (the rest)";
  return origin(generation);
}

/* A measured figure is a share of the spec one (bf16_tflops and
 * hbm_bandwidth_GBps, both required and positive), with room for a card
 * that boosts past its spec clock (the RTX 4090's 106 %); below 5 % it is
 * a unit slip (TFLOPS for GFLOPS, TB/s for GB/s), not a measurement, and
 * would divide a borrowed efficiency towards 0. */
#define MIN_SHARE 0.05
#define MAX_SHARE 1.25

int kvsim__gpu_parse_peaks(const cJSON *j, const char *where, kvsim_gpu_t *g, kvsim_err *err) {
  const struct {
    const char *key, *spec_key;
    double *dst, spec;
  } f[] = {
      {"achieved_bf16_tflops", "bf16_tflops", &g->achieved_bf16_tflops, g->bf16_tflops},
      {"achieved_fp8_tflops", "fp8_tflops", &g->achieved_fp8_tflops, g->fp8_tflops},
      {"achieved_copy_GBps", "hbm_bandwidth_GBps", &g->achieved_copy_GBps, g->hbm_bandwidth_GBps}};
  int rc;
  for (size_t i = 0; i < sizeof f / sizeof *f; i++) {
    if ((rc = kvsim__json_num_in(j, f[i].key, 0, 1e6, f[i].dst, where, err)) < 0)
      return rc;
    if (rc > 0 && *f[i].dst == 0) /* 0: not measured, as when absent */
      continue;
    if (rc > 0 && f[i].spec <= 0)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s%s%s: %g, but %s is 0: a measured peak is a share of its spec figure",
                           where, kvsim__json_sep(where), f[i].key, *f[i].dst, f[i].spec_key);
    /* Relative slack so that a figure typed at a bound (5 % of 1,008 is
     * 50.4, which the product rounds up) is inside. */
    const double lo = MIN_SHARE * f[i].spec * (1 - 1e-9), hi = MAX_SHARE * f[i].spec * (1 + 1e-9);
    if (rc > 0 && (*f[i].dst < lo || *f[i].dst > hi))
      return kvsim_err_set(
          err, KVSIM_EINVAL,
          "%s%s%s: %g is out of range [%g, %g] (%.0f-%.0f %% of the spec figure %g: a measured "
          "peak is a share of it)",
          where, kvsim__json_sep(where), f[i].key, *f[i].dst, MIN_SHARE * f[i].spec,
          MAX_SHARE * f[i].spec, MIN_SHARE * 100, MAX_SHARE * 100, f[i].spec);
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

/* The origin's measured shares of its spec (0: not measured), read from
 * its catalog file alone: the origin is the fitted GPU itself, and loading
 * it whole would come back here. */
static void origin_shares(const char *name, double *bf16, double *copy) {
  *bf16 = *copy = 0;
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_GPU, name);
  cJSON *j = e ? cJSON_Parse(e->json) : NULL;
  const struct {
    const char *achieved, *spec;
    double *out;
  } f[] = {{"achieved_bf16_tflops", "bf16_tflops", bf16}, {"achieved_copy_GBps", "hbm_bandwidth_GBps", copy}};
  for (size_t i = 0; j && i < sizeof f / sizeof *f; i++) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(j, f[i].achieved);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, f[i].spec);
    if (cJSON_IsNumber(a) && cJSON_IsNumber(s))
      *f[i].out = share(a->valuedouble, s->valuedouble);
  }
  cJSON_Delete(j);
}

void kvsim_gpu_borrow_perf(const kvsim_gpu_t *g, const char *generation, kvsim_gpu_perf_t *p) {
  kvsim_gpu_default_perf(generation, p);
  const char *from = origin(generation);
  double bf16, copy;
  origin_shares(from, &bf16, &copy);
  /* The origin itself keeps its own (its share over its share). */
  const bool self = !strcmp(g->name, from);
  const bool mfu = !self && rescale(&p->mfu, share(g->achieved_bf16_tflops, g->bf16_tflops), bf16);
  const bool mbu = !self && rescale(&p->mbu, share(g->achieved_copy_GBps, g->hbm_bandwidth_GBps), copy);
  /* Say so where the run's calibration is reported (summary.json
   * latency.calibration.source). */
  if (mfu || mbu) {
    size_t n = strlen(p->source);
    snprintf(p->source + n, sizeof p->source - n, "; %s%s%s at this GPU's measured peak%s over %s's", mfu ? "mfu" : "",
             mfu && mbu ? " and " : "", mbu ? "mbu" : "", mfu && mbu ? "s" : "", from);
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
