/* Which kernel tables a GPU runs on (gpu.h kvsim_gpu_perf_t), and its
 * measured peaks (kvsim_gpu_t achieved_*).
 *
 * The step model composes measured kernel times (kernels.h). A GPU with
 * tables of its own (configs/kernels/) uses them; one without takes those
 * of the nearest GPU of its architecture, told by its CUDA compute
 * capability (the tensor-core and memory pipeline a kernel is compiled
 * for: sm_80 A100, sm_86 GA102 cards take the A100's too, sm_89 Ada the
 * L40S's, sm_90 Hopper the H100's, sm_100 the B200's, sm_120 the RTX PRO
 * 6000's), each kernel scaled by its roofline on the two parts (perf.h).
 * A GPU of another architecture (AMD CDNA3) has no such neighbour: it takes
 * the H100's, the datacenter part of its era, as "spec-only". Collectives
 * come from a GPU of the same link class: NVLink parts their donor's,
 * PCIe cards a measured PCIe GPU's (L40S at PCIe Gen4, RTX PRO 6000 at
 * Gen5), never the spec link's alpha-beta. */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "core/catalog.h"
#include "hw/borrow.h"

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


typedef struct donor {
  double cc;
  const char *kernels;
} donor_t;

/* Compute capability -> the GPU whose tables serve it. */
static const donor_t DONORS[] = {{8.0, "a100-80g"}, {8.6, "a100-80g"}, {8.7, "a100-80g"}, {8.9, "l40s"},
                                 {9.0, "h100-sxm"}, {10.0, "b200"},     {10.3, "b200"},    {12.0, "rtx-pro-6000"}};

void kvsim__gpu_default_kernels(const kvsim_gpu_t *g, kvsim_gpu_perf_t *p) {
  memset(p, 0, sizeof *p);
  p->host_us = p->host_per_seq_us = -1;
  const char *k = NULL;
  for (size_t i = 0; i < sizeof DONORS / sizeof *DONORS; i++)
    if (g->compute_capability > DONORS[i].cc - 0.05 && g->compute_capability < DONORS[i].cc + 0.05)
      k = DONORS[i].kernels;
  snprintf(p->kernels, sizeof p->kernels, "%s", k ? k : "h100-sxm");
  if (!strcmp(p->kernels, g->name))
    p->status = KVSIM_CAL_KERNELS;
  else
    p->status = k ? KVSIM_CAL_KERNELS_BORROWED : KVSIM_CAL_SPEC_ONLY;
  /* Collectives by link class: a PCIe card's from a measured PCIe GPU of
   * its PCIe generation (host link above 32 GB/s: Gen5). */
  if (g->link_kind == KVSIM_LINK_PCIE_P2P || g->link_kind == KVSIM_LINK_PCIE_HOST)
    snprintf(p->collectives, sizeof p->collectives, "%s", g->host_link_GBps > 40 ? "rtx-pro-6000" : "l40s");
  snprintf(p->source, sizeof p->source, "kernel tables of %s%s", p->kernels,
           p->status == KVSIM_CAL_KERNELS ? "" : p->status == KVSIM_CAL_KERNELS_BORROWED
                                                     ? ", same architecture, scaled by spec figures"
                                                     : ", another architecture, scaled by spec figures");
}

/* The architecture a compute capability belongs to: Ampere (8.0-8.7),
 * Ada (8.9), Hopper (9.x), Blackwell datacenter (10.x), Blackwell
 * workstation and consumer (12.x); 0 for a part that is not CUDA. */
static int arch(double cc) {
  if (cc >= 12)
    return 12;
  if (cc >= 10)
    return 10;
  if (cc >= 9)
    return 9;
  if (cc >= 8.85)
    return 89;
  return cc >= 8 ? 8 : 0;
}

int kvsim_gpu_use_kernels(kvsim_gpu_t *g, const char *kernels, kvsim_err *err) {
  if (!kvsim__catalog_find(KVSIM_CATALOG_KERNELS, kernels) && !strchr(kernels, '/'))
    return kvsim_err_set(err, KVSIM_ENOENT, "unknown kernel profile '%s'", kernels);
  snprintf(g->perf.kernels, sizeof g->perf.kernels, "%s", kernels);
  /* Its own, a neighbour's of the same architecture, or another's. */
  kvsim_gpu_t donor;
  kvsim_err e = {0};
  if (!strcmp(kernels, g->name))
    g->perf.status = KVSIM_CAL_KERNELS;
  else if (kvsim_gpu_load(kernels, &donor, &e) == KVSIM_OK && arch(donor.compute_capability) != 0 &&
           arch(donor.compute_capability) == arch(g->compute_capability))
    g->perf.status = KVSIM_CAL_KERNELS_BORROWED;
  else
    g->perf.status = KVSIM_CAL_SPEC_ONLY;
  snprintf(g->perf.source, sizeof g->perf.source, "kernel tables of %s (held out)", kernels);
  return KVSIM_OK;
}
