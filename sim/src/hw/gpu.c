#include "kvsim/gpu.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/catalog.h"
#include "core/util.h"
#include "hw/borrow.h"

const char *kvsim_cal_status_name(kvsim_cal_status s) {
  switch (s) {
  case KVSIM_CAL_KERNELS:
    return "kernels";
  case KVSIM_CAL_KERNELS_BORROWED:
    return "kernels-borrowed";
  case KVSIM_CAL_SPEC_ONLY:
  default:
    return "spec-only";
  }
}

int kvsim_cal_status_parse(const char *name, kvsim_cal_status *s) {
  static const kvsim_cal_status all[] = {KVSIM_CAL_KERNELS, KVSIM_CAL_KERNELS_BORROWED, KVSIM_CAL_SPEC_ONLY};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    if (!strcmp(name, kvsim_cal_status_name(all[i]))) {
      *s = all[i];
      return 0;
    }
  return -1;
}

const char *kvsim_link_kind_name(kvsim_link_kind k) {
  switch (k) {
  case KVSIM_LINK_PCIE_P2P:
    return "pcie_p2p";
  case KVSIM_LINK_PCIE_HOST:
    return "pcie_host";
  case KVSIM_LINK_XGMI:
    return "xgmi";
  case KVSIM_LINK_NVLINK:
  default:
    return "nvlink";
  }
}

void kvsim_gpu_band(const kvsim_gpu_perf_t *p, double *ttft_rel, double *tpot_rel) {
  /* The held-out error of the rows of each status (`kvsim validate --all`,
   * leave-one-GPU-out): a GPU's own tables, a neighbour's scaled, another
   * architecture's scaled. */
  switch (p->status) {
  case KVSIM_CAL_KERNELS:
    *ttft_rel = KVSIM_GPU_BAND_KERNELS_TTFT, *tpot_rel = KVSIM_GPU_BAND_KERNELS_TPOT;
    break;
  case KVSIM_CAL_KERNELS_BORROWED:
    *ttft_rel = KVSIM_GPU_BAND_BORROWED_TTFT, *tpot_rel = KVSIM_GPU_BAND_BORROWED_TPOT;
    break;
  case KVSIM_CAL_SPEC_ONLY:
  default:
    *ttft_rel = KVSIM_GPU_BAND_SPEC_TTFT, *tpot_rel = KVSIM_GPU_BAND_SPEC_TPOT;
    break;
  }
}

void kvsim_gpu_band_moe(const kvsim_gpu_perf_t *p, bool moe, double *ttft_rel, double *tpot_rel) {
  kvsim_gpu_band(p, ttft_rel, tpot_rel);
  if (!moe)
    return;
  /* MoE models' held-out rows miss by more (routing skew, expert shapes
   * outside the tables): at least their own figure. */
  if (*ttft_rel < KVSIM_GPU_BAND_MOE_TTFT)
    *ttft_rel = KVSIM_GPU_BAND_MOE_TTFT;
  if (*tpot_rel < KVSIM_GPU_BAND_MOE_TPOT)
    *tpot_rel = KVSIM_GPU_BAND_MOE_TPOT;
}

void kvsim_gpu_band_edges(const kvsim_gpu_perf_t *p, kvsim_band_edge_t *lo, kvsim_band_edge_t *hi) {
  /* Two scales, not one: a step's duration is what TPOT measures, so the
   * step edges take the TPOT band; TTFT's wider held-out error is the
   * prefill's (and the benchmark client's, frontend_us), so it scales the
   * prefill tokens' share of each step. One scale on TTFT's band would put
   * every decode step at a twentieth of its time; one on TPOT's left the
   * measured TTFTs of half the held-out silicon rows outside the range. */
  kvsim_gpu_band_edges_moe(p, false, lo, hi);
}

void kvsim_gpu_band_edges_moe(const kvsim_gpu_perf_t *p, bool moe, kvsim_band_edge_t *lo, kvsim_band_edge_t *hi) {
  double t, d;
  kvsim_gpu_band_moe(p, moe, &t, &d);
  lo->step = 1 - d > 0.05 ? 1 - d : 0.05;
  hi->step = 1 + d;
  lo->prefill = 1 - t > 0.05 ? 1 - t : 0.05;
  hi->prefill = 1 + t;
}

void kvsim_gpu_band_scales(const kvsim_gpu_perf_t *p, double *lo, double *hi) {
  kvsim_band_edge_t l, h;
  kvsim_gpu_band_edges(p, &l, &h);
  *lo = l.step;
  *hi = h.step;
}

int kvsim_gpu_perf_parse(const cJSON *j, const char *where, kvsim_gpu_perf_t *p, kvsim_err *err) {
  static const char *const keys[] = {"kernels", "collectives", "status", "source", "host_us", "host_per_seq_us", NULL};
  const char *w = where;
  int rc;
  if ((rc = kvsim__json_only_keys(j, keys, w, err)) < 0)
    return rc;
  if ((rc = kvsim__json_str(j, "kernels", p->kernels, sizeof p->kernels, w, err)) < 0 ||
      (rc = kvsim__json_str(j, "collectives", p->collectives, sizeof p->collectives, w, err)) < 0 ||
      (rc = kvsim__json_str(j, "source", p->source, sizeof p->source, w, err)) < 0)
    return rc;
  if (!kvsim__catalog_find(KVSIM_CATALOG_KERNELS, p->kernels) && !strchr(p->kernels, '/'))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%skernels: '%s' is not a kernel profile (configs/kernels)", w,
                         kvsim__json_sep(w), p->kernels);
  if (p->collectives[0] && !kvsim__catalog_find(KVSIM_CATALOG_KERNELS, p->collectives) &&
      !strchr(p->collectives, '/'))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%scollectives: '%s' is not a kernel profile (configs/kernels)", w,
                         kvsim__json_sep(w), p->collectives);
  if ((rc = kvsim__json_num_in(j, "host_us", 0, 1e6, &p->host_us, w, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "host_per_seq_us", 0, 1e4, &p->host_per_seq_us, w, err)) < 0)
    return rc;
  char st[32];
  if ((rc = kvsim__json_str(j, "status", st, sizeof st, w, err)) < 0)
    return rc;
  if (rc > 0 && kvsim_cal_status_parse(st, &p->status) < 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s%sstatus: '%s' (expected kernels, kernels-borrowed or spec-only)", w,
                         kvsim__json_sep(w), st);
  return KVSIM_OK;
}

/* Ranges of a GPU file's numbers. Each bound is an order of magnitude or
 * more beyond the hardware of 2025 (in brackets), so no real part is
 * refused, and keeps the step-time model finite: a step never divides by a
 * zero or denormal rate. 0 in the optional fields means "not given" (no
 * fp8/fp4 tensor cores, the link defaults below). */
#define MIN_MEMORY_BYTES (INT64_C(1) << 30) /* 1 GiB [smallest serving part: 16 GB T4] */
#define MAX_BANDWIDTH_GBPS 1e5              /* HBM or link, GB/s [8,000: B200, GB200] */
#define MAX_TFLOPS 1e6                      /* dense [10,000 fp4: GB200] */
#define MAX_LATENCY_US 1e6                  /* one second per link hop [~10 us: PCIe] */
#define MAX_TDP_W 1e5                       /* [1,200: GB200] */

/* link_kind, allreduce_busbw_GBps, allreduce_latency_us, link_source;
 * absent: the spec link (see gpu.h). */
static int parse_links(const cJSON *j, const char *where, kvsim_gpu_t *g, kvsim_err *err) {
  char kind[32];
  int rc = kvsim__json_str(j, "link_kind", kind, sizeof kind, where, err);
  if (rc < 0)
    return rc;
  g->link_kind = g->gpu_link_GBps > g->host_link_GBps ? KVSIM_LINK_NVLINK : KVSIM_LINK_PCIE_P2P;
  if (rc > 0) {
    static const kvsim_link_kind all[] = {KVSIM_LINK_NVLINK, KVSIM_LINK_PCIE_P2P, KVSIM_LINK_PCIE_HOST,
                                          KVSIM_LINK_XGMI};
    size_t i = 0;
    while (i < sizeof all / sizeof *all && strcmp(kind, kvsim_link_kind_name(all[i])))
      i++;
    if (i == sizeof all / sizeof *all)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s%slink_kind: '%s' (expected nvlink, pcie_p2p, pcie_host or xgmi)",
                           where, kvsim__json_sep(where), kind);
    g->link_kind = all[i];
  }
  if ((rc = kvsim__json_num_in(j, "allreduce_busbw_GBps", 0, MAX_BANDWIDTH_GBPS, &g->allreduce_busbw_GBps,
                               where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "allreduce_latency_us", 0, MAX_LATENCY_US, &g->allreduce_latency_us, where,
                               err)) < 0 ||
      (rc = kvsim__json_str(j, "link_source", g->link_source, sizeof g->link_source, where, err)) < 0)
    return rc;
  if (g->allreduce_busbw_GBps <= 0)
    g->allreduce_busbw_GBps = g->gpu_link_GBps;
  if (g->allreduce_latency_us <= 0)
    g->allreduce_latency_us = g->gpu_link_latency_us;
  return KVSIM_OK;
}

/* Every key a GPU file may have (kvsim__json_only_keys refuses others). */
static const char *const gpu_keys[] = {
    "name", "description", "vendor", "generation", "memory_total_bytes", "memory_total_source",
    "hbm_bandwidth_GBps", "bf16_tflops", "fp8_tflops", "fp4_tflops", "host_link", "host_link_GBps",
    "host_link_latency_us", "gpu_link", "gpu_link_GBps", "gpu_link_latency_us", "link_kind",
    "allreduce_busbw_GBps", "allreduce_latency_us", "link_source", "tdp_w", "compute_capability",
    "source", "perf", "cost_per_gpu_hour", "achieved_bf16_tflops", "achieved_fp8_tflops",
    "achieved_copy_GBps", "achieved_source", NULL};

/* The fields a GPU file must have: name, generation, memory, bandwidth,
 * bf16 rate. */
static int parse_required(const cJSON *j, const char *where, kvsim_gpu_t *g, kvsim_err *err) {
  int rc;
  if ((rc = kvsim__json_str(j, "name", g->name, sizeof g->name, where, err)) <= 0 ||
      (rc = kvsim__json_str(j, "generation", g->generation, sizeof g->generation, where, err)) <= 0 ||
      (rc = kvsim__json_int_in(j, "memory_total_bytes", MIN_MEMORY_BYTES,
                               KVSIM_GPU_MAX_MEMORY_BYTES, &g->memory_total_bytes, where, err)) <= 0 ||
      (rc = kvsim__json_num_in(j, "hbm_bandwidth_GBps", 1, MAX_BANDWIDTH_GBPS,
                               &g->hbm_bandwidth_GBps, where, err)) <= 0 ||
      (rc = kvsim__json_num_in(j, "bf16_tflops", 0.1, MAX_TFLOPS, &g->bf16_tflops, where,
                               err)) <= 0)
    return rc < 0 ? rc
                  : kvsim_err_set(err, KVSIM_EINVAL,
                                  "%s: missing one of name, generation, memory_total_bytes, "
                                  "hbm_bandwidth_GBps, bf16_tflops",
                                  where);
  return KVSIM_OK;
}

/* Optional figures; the links default to a PCIe Gen4 x16 floor and the
 * compute capability to the generation's datacenter part. */
static int parse_optional(const cJSON *j, const char *where, kvsim_gpu_t *g, kvsim_err *err) {
  int rc;
  if ((rc = kvsim__json_str(j, "description", g->description, sizeof g->description, where, err)) < 0 ||
      (rc = kvsim__json_str(j, "vendor", g->vendor, sizeof g->vendor, where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "fp8_tflops", 0, MAX_TFLOPS, &g->fp8_tflops, where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "fp4_tflops", 0, MAX_TFLOPS, &g->fp4_tflops, where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "host_link_GBps", 0, MAX_BANDWIDTH_GBPS, &g->host_link_GBps,
                               where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "host_link_latency_us", 0, MAX_LATENCY_US,
                               &g->host_link_latency_us, where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "gpu_link_GBps", 0, MAX_BANDWIDTH_GBPS, &g->gpu_link_GBps, where,
                               err)) < 0 ||
      (rc = kvsim__json_num_in(j, "gpu_link_latency_us", 0, MAX_LATENCY_US,
                               &g->gpu_link_latency_us, where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "tdp_w", 0, MAX_TDP_W, &g->tdp_w, where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "cost_per_gpu_hour", 0, 1e6, &g->cost_per_gpu_hour, where, err)) < 0 ||
      (rc = kvsim__json_num_in(j, "compute_capability", 0, 20, &g->compute_capability, where,
                               err)) < 0)
    return rc;
  if (rc == 0) {
    /* Not given: the generation's datacenter part (NVIDIA, CUDA GPUs). */
    static const struct {
      const char *gen;
      double cc;
    } cc[] = {{"ampere", 8.0}, {"ada", 8.9}, {"hopper", 9.0}, {"blackwell", 10.0}};
    for (size_t i = 0; i < sizeof cc / sizeof *cc; i++)
      if (!strcmp(g->generation, cc[i].gen))
        g->compute_capability = cc[i].cc;
  }
  /* A PCIe Gen4 x16 link is the floor when the file says nothing. */
  if (g->host_link_GBps <= 0)
    g->host_link_GBps = 32;
  if (g->host_link_latency_us <= 0)
    g->host_link_latency_us = 10;
  if (g->gpu_link_GBps <= 0)
    g->gpu_link_GBps = g->host_link_GBps;
  if (g->gpu_link_latency_us <= 0)
    g->gpu_link_latency_us = 8;
  return KVSIM_OK;
}

/* The step-time source: the architecture's kernel tables unless the GPU's
 * own "perf" names others. */
static int parse_perf(const cJSON *j, const char *where, kvsim_gpu_t *g, kvsim_err *err) {
  kvsim__gpu_default_kernels(g, &g->perf);
  const cJSON *perf = cJSON_GetObjectItemCaseSensitive(j, "perf");
  if (!perf || cJSON_IsNull(perf))
    return KVSIM_OK;
  char pw[4200];
  snprintf(pw, sizeof pw, "%s: perf", where);
  const bool stated = cJSON_GetObjectItemCaseSensitive(perf, "status") != NULL;
  int rc = kvsim_gpu_perf_parse(perf, pw, &g->perf, err);
  if (rc < 0)
    return rc;
  if (!stated)
    g->perf.status = strcmp(g->perf.kernels, g->name) ? KVSIM_CAL_KERNELS_BORROWED : KVSIM_CAL_KERNELS;
  if (!cJSON_GetObjectItemCaseSensitive(perf, "source"))
    snprintf(g->perf.source, sizeof g->perf.source, "kernel tables of %s", g->perf.kernels);
  return KVSIM_OK;
}

int kvsim_gpu_parse(const char *json_text, const char *where, kvsim_gpu_t *g, kvsim_err *err) {
  memset(g, 0, sizeof *g);
  cJSON *j = kvsim__json_parse(json_text, where, err);
  if (!j)
    return err->code;
  int rc;
  if ((rc = kvsim__json_only_keys(j, gpu_keys, where, err)) >= 0 &&
      (rc = parse_required(j, where, g, err)) >= 0 && (rc = parse_optional(j, where, g, err)) >= 0 &&
      (rc = parse_links(j, where, g, err)) >= 0 && (rc = kvsim__gpu_parse_peaks(j, where, g, err)) >= 0 &&
      (rc = parse_perf(j, where, g, err)) >= 0)
    rc = KVSIM_OK;
  cJSON_Delete(j);
  return rc;
}

int kvsim_gpu_catalog_name(const char *loose, char *out, size_t cap) {
  /* Normalise: lower case, '_' and ' ' to '-', drop vendor words. */
  char s[128];
  size_t n = 0;
  for (const char *p = loose; *p && n + 1 < sizeof s; p++)
    s[n++] = (*p == '_' || *p == ' ') ? '-' : (char)tolower((unsigned char)*p);
  s[n] = '\0';
  static const char *drop[] = {"nvidia-", "geforce-", "amd-", "instinct-"};
  for (size_t k = 0; k < sizeof drop / sizeof *drop; k++) {
    char *hit = strstr(s, drop[k]);
    if (hit)
      memmove(hit, hit + strlen(drop[k]), strlen(hit + strlen(drop[k])) + 1);
  }
  static const struct {
    const char *from, *to;
  } alias[] = {{"h100-80gb", "h100-sxm"}, {"h100-sxm5", "h100-sxm"}, {"h100-80gb-hbm3", "h100-sxm"},
               {"h100", "h100-sxm"},      {"h200-sxm", "h200"},      {"h200-141gb", "h200"},
               {"b200-sxm", "b200"},      {"a100-80gb", "a100-80g"}, {"a100-40gb", "a100-40g"},
               {"a100-sxm4-80gb", "a100-80g"}, {"a100-sxm4-40gb", "a100-40g"}, {"a100", "a100-80g"},
               {"rtx-4090", "rtx4090"},   {"rtx-3090", "rtx3090"},   {"rtx-5090", "rtx5090"},
               {"rtxpro6000", "rtx-pro-6000"}, {"rtx-pro-6000-blackwell", "rtx-pro-6000"},
               {"l40s-48gb", "l40s"},     {"mi300x-192gb", "mi300x"}, {"gb200-nvl72", "gb200"}};
  for (size_t k = 0; k < sizeof alias / sizeof *alias; k++)
    if (!strcmp(s, alias[k].from)) {
      snprintf(out, cap, "%s", alias[k].to);
      return kvsim__catalog_find(KVSIM_CATALOG_GPU, out) != NULL;
    }
  snprintf(out, cap, "%s", s);
  return kvsim__catalog_find(KVSIM_CATALOG_GPU, out) != NULL;
}

int kvsim_gpu_load(const char *name_or_path, kvsim_gpu_t *g, kvsim_err *err) {
  char mapped[128];
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_GPU, name_or_path);
  if (!e && kvsim_gpu_catalog_name(name_or_path, mapped, sizeof mapped))
    e = kvsim__catalog_find(KVSIM_CATALOG_GPU, mapped);
  if (e) {
    char where[96];
    snprintf(where, sizeof where, "configs/gpus/%s.json", e->name);
    return kvsim_gpu_parse(e->json, where, g, err);
  }
  struct stat st;
  if (stat(name_or_path, &st) == 0 && S_ISREG(st.st_mode)) {
    char *text;
    int rc = kvsim__read_file(name_or_path, &text, NULL, err);
    if (rc < 0)
      return rc;
    rc = kvsim_gpu_parse(text, name_or_path, g, err);
    free(text);
    return rc;
  }
  char near[256];
  kvsim__catalog_suggest(KVSIM_CATALOG_GPU, name_or_path, near, sizeof near, 3);
  return kvsim_err_set(err, KVSIM_ENOENT,
                       "unknown GPU '%s' (not a catalog name or a readable file); closest: %s",
                       name_or_path, near);
}
