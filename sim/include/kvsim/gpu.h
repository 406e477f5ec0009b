/* GPU catalog entry: memory as the runtime reports it, bandwidths, peak
 * FLOPs, links, and which kernel tables its step times come from. */
#ifndef KVSIM_GPU_H
#define KVSIM_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a GPU's step times rest on (summary.json latency.calibration.status). */
typedef enum kvsim_cal_status {
  KVSIM_CAL_SPEC_ONLY = 0,        /* "spec-only": another architecture's tables, scaled by spec figures */
  KVSIM_CAL_KERNELS_BORROWED = 1, /* "kernels-borrowed": the tables of a GPU of the same architecture, scaled */
  KVSIM_CAL_KERNELS = 2,          /* "kernels": this GPU's own measured kernel tables */
} kvsim_cal_status;
const char *kvsim_cal_status_name(kvsim_cal_status s);
/* Parses a status name; returns 0 and sets *s, or -1 if unknown. */
int kvsim_cal_status_parse(const char *name, kvsim_cal_status *s);

/* How GPUs of a class talk to each other (tensor-parallel all-reduce,
 * EP all-to-all, PP transfers). */
typedef enum kvsim_link_kind {
  KVSIM_LINK_NVLINK = 0,    /* "nvlink": NVLink / NVSwitch (vLLM custom all-reduce for small messages) */
  KVSIM_LINK_PCIE_P2P = 1,  /* "pcie_p2p": PCIe with peer-to-peer */
  KVSIM_LINK_PCIE_HOST = 2, /* "pcie_host": PCIe through host memory (no P2P) */
  KVSIM_LINK_XGMI = 3,      /* "xgmi": AMD Infinity Fabric */
} kvsim_link_kind;
const char *kvsim_link_kind_name(kvsim_link_kind k);

/* Where the step-time model (perf.h) takes this GPU's kernel times from
 * (the GPU file's "perf" object). */
typedef struct kvsim_gpu_perf {
  /* The kernel profile (kernels.h, configs/kernels/NAME.json): this GPU's
   * own, or that of the nearest GPU of its architecture (status
   * kernels-borrowed), or of another architecture (spec-only), each kernel
   * then scaled by the ratio of its roofline on the two GPUs. */
  char kernels[64];
  /* The profile whose all-reduce and NCCL tables serve this GPU's link
   * class (a PCIe card takes a measured PCIe GPU's); "" = kernels. */
  char collectives[64];
  kvsim_cal_status status;
  char source[256];
  /* The engine's host time per step (us) for this GPU's runs; < 0: the
   * engine's own figure (perf.h KVSIM_HOST_US_*). A user's calibration
   * (`kvsim calibrate --host` on their own measurements) may set it; the
   * catalog never does. host_per_seq_us: the part per scheduled request
   * (< 0: the engine's). */
  double host_us, host_per_seq_us;
  /* Latency a client sees outside the engine (HTTP, tokenization, the
   * first chunk streamed back), fixed and per prompt token: added to TTFT
   * and E2E only when comparing with client-side measurements (a benchmark
   * campaign's, never a GPU's: kvsim validate sets them). */
  double frontend_us, frontend_per_token_us;
} kvsim_gpu_perf_t;

/* The largest memory a GPU (or a --gpu-memory-gib override) may have:
 * 4 TiB, fourteen times the largest accelerator memory shipped in 2025
 * (288 GB: B300, MI355X). It bounds every byte count of the memory plan,
 * and the block pool a run allocates in proportion to it. */
#define KVSIM_GPU_MAX_MEMORY_BYTES (INT64_C(1) << 42)

typedef struct kvsim_gpu {
  char name[64];
  char description[128];
  char vendor[16];
  char generation[16];
  int64_t memory_total_bytes; /* cudaMemGetInfo total: vLLM's total_gpu_memory */
  double hbm_bandwidth_GBps;
  double bf16_tflops, fp8_tflops, fp4_tflops; /* dense */
  /* Measured peaks, with their source (0: not measured): the best dense
   * bf16 and fp8 matmul rates and the device-to-device copy bandwidth
   * (read + write bytes) published for this part. Borrowed kernel tables
   * are carried to this part by the ratio of its rates to the donor's
   * (perf/perf.c set_hw). */
  double achieved_bf16_tflops, achieved_fp8_tflops, achieved_copy_GBps;
  char achieved_source[512];
  double host_link_GBps;      /* one direction */
  double host_link_latency_us;
  double gpu_link_GBps;       /* one direction, per GPU */
  double gpu_link_latency_us;
  /* Collectives between GPUs of this class, as measured (nccl-tests
   * all_reduce_perf busbw at large messages, and its small-message time),
   * with their source. A file without them takes the spec link
   * (gpu_link_GBps, gpu_link_latency_us) and link_kind nvlink when the GPU
   * link is faster than the host link, else pcie_p2p. */
  kvsim_link_kind link_kind;
  double allreduce_busbw_GBps;
  double allreduce_latency_us;
  char link_source[512];
  double tdp_w;
  /* The user's own price per GPU-hour (kvsim compare's cost figures); 0:
   * none. The catalog ships none: prices are the user's. */
  double cost_per_gpu_hour;
  /* CUDA compute capability (9.0 Hopper, 10.0 B200, 12.0 RTX 50xx); 0 for
   * a GPU that is not CUDA. Attention backends are chosen by it. A file
   * without the key takes its generation's datacenter part's. */
  double compute_capability;
  kvsim_gpu_perf_t perf;
} kvsim_gpu_t;

/* Catalog name (case-insensitive) or path to a GPU JSON file. */
int kvsim_gpu_load(const char *name_or_path, kvsim_gpu_t *g, kvsim_err *err);
/* Parses GPU JSON text into *g. Every number is range-checked where it is
 * read (memory in [1 GiB, KVSIM_GPU_MAX_MEMORY_BYTES], bandwidths, FLOPs,
 * latencies and the perf coefficients finite and within sane ranges; a
 * measured peak, achieved_*, 0 or 5-125 % of its spec figure);
 * returns KVSIM_EINVAL with "where.key: V is out of range [lo, hi]"
 * otherwise, and KVSIM_EPARSE on invalid JSON. */
int kvsim_gpu_parse(const char *json_text, const char *where, kvsim_gpu_t *g, kvsim_err *err);

/* Reads a "perf" object over *p; `where` names it in errors. `j` is a
 * cJSON object. */
struct cJSON;
int kvsim_gpu_perf_parse(const struct cJSON *j, const char *where, kvsim_gpu_perf_t *p,
                         kvsim_err *err);

/* The band's half-widths (relative) on TTFT and TPOT for a GPU's status:
 * the 90th percentile of the held-out |error| of `kvsim validate --all`'s
 * rows of that status (leave-one-GPU-out), MoE models apart. */
void kvsim_gpu_band(const kvsim_gpu_perf_t *p, double *ttft_rel, double *tpot_rel);
void kvsim_gpu_band_moe(const kvsim_gpu_perf_t *p, bool moe, double *ttft_rel, double *tpot_rel);
/* Held-out band figures per status: the 90th percentile of the held-out
 * |error| that `kvsim validate --all` prints under "band per status",
 * rounded up, and never narrower than a better-informed status's (a GPU
 * that borrows tables is not known better than one with its own):
 * kernels 41.8 % / 11.9 %, kernels-borrowed 43.3 % / 8.4 %, spec-only
 * 62.0 % / 13.7 %, MoE models 86.5 % / 54.3 % (TTFT / TPOT).
 * tests/validation/test_validate_all.sh fails when one falls below the
 * table's figure. */
#define KVSIM_GPU_BAND_KERNELS_TTFT 0.42
#define KVSIM_GPU_BAND_KERNELS_TPOT 0.12
#define KVSIM_GPU_BAND_BORROWED_TTFT 0.44
#define KVSIM_GPU_BAND_BORROWED_TPOT 0.12
#define KVSIM_GPU_BAND_SPEC_TTFT 0.63
#define KVSIM_GPU_BAND_SPEC_TPOT 0.14
#define KVSIM_GPU_BAND_MOE_TTFT 0.87
#define KVSIM_GPU_BAND_MOE_TPOT 0.55

/* One edge of the band as the two scales an edge run uses: `step`
 * multiplies the duration of every step (scenario perf.step_time_scale),
 * `prefill` the prefill tokens' share of it (perf.prefill_time_scale). A
 * scaled step is never shorter than its roofline at the GPU's spec peaks
 * (perf.h kvsim_step_cost_t roofline_s): the fast edge stops at physics. */
typedef struct kvsim_band_edge {
  double step, prefill;
} kvsim_band_edge_t;

/* The band's two edges: step = 1 -/+ the TPOT half-width of
 * kvsim_gpu_band (a decode step's duration is what TPOT measures),
 * prefill = 1 -/+ its TTFT half-width (prefill work is what TTFT
 * measures beyond the queue); low edges held at >= 0.05. */
void kvsim_gpu_band_edges(const kvsim_gpu_perf_t *p, kvsim_band_edge_t *lo, kvsim_band_edge_t *hi);
/* The same edges of the half-widths of kvsim_gpu_band_moe. */
void kvsim_gpu_band_edges_moe(const kvsim_gpu_perf_t *p, bool moe, kvsim_band_edge_t *lo, kvsim_band_edge_t *hi);
/* The step scales alone (lo->step, hi->step of kvsim_gpu_band_edges). */
void kvsim_gpu_band_scales(const kvsim_gpu_perf_t *p, double *lo, double *hi);

/* Another kernel profile for g (kvsim validate holding g out, --perf): g's
 * step times from `kernels`, its status as a GPU that borrows them. */
int kvsim_gpu_use_kernels(kvsim_gpu_t *g, const char *kernels, kvsim_err *err);

/* Maps loose names ("H100 80GB", "h100_sxm", "RTX 4090", "NVIDIA GeForce
 * RTX 4090") onto a catalog name. Returns 1 if found. */
int kvsim_gpu_catalog_name(const char *loose, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
