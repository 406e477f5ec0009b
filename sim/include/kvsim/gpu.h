/* GPU catalog entry: memory as the runtime reports it, bandwidths, peak
 * FLOPs, links, and the step-time model's efficiency coefficients. */
#ifndef KVSIM_GPU_H
#define KVSIM_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvsim/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a GPU's step-time coefficients come from. */
typedef enum kvsim_cal_status {
  KVSIM_CAL_SPEC_ONLY = 0,          /* "spec-only": spec sheet figures, no measured fit */
  KVSIM_CAL_GENERATION_DEFAULT = 1, /* "generation-default": another GPU's fit */
  KVSIM_CAL_FITTED = 2,             /* "fitted": fitted on this GPU's own rows */
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

/* Coefficients of the step-time model (perf.h). Calibrated per GPU by
 * `kvsim calibrate`; otherwise defaults by GPU generation. */
typedef struct kvsim_gpu_perf {
  /* Large-GEMM fraction of the tensor-core peak, per weight precision
   * (perf/gemm.c): bf16/fp16 GEMMs of the bf16 peak, fp8 of the fp8 peak,
   * fp4 of the fp4 peak. Small GEMMs are weight-bandwidth bound instead. */
  double mfu;                /* bf16 GEMMs' fraction of the dense bf16 peak */
  double mfu_fp8;            /* fp8 GEMMs' fraction of the dense fp8 peak */
  double mfu_fp4;            /* fp4 GEMMs' fraction of the dense fp4 peak */
  double mbu;                /* fraction of HBM bandwidth reached streaming weights and KV */
  double step_overhead_us;   /* fixed per step: scheduling, launches, sampling */
  double per_seq_us;         /* per scheduled request: input prep, sampler row, output processing */
  double per_token_us;       /* per scheduled token; 0 unless a measurement asks for it */
  double per_layer_us;       /* per model layer per step: the floor of a layer's small kernels */
  double attn_efficiency;    /* attention kernels' fraction of the dense bf16 peak */
  double attn_seq_floor_us;  /* decode attention's minimum per sequence per layer */
  /* The fused MoE kernels' fraction of mbu while streaming expert
   * weights: grouped GEMMs with a few tokens per expert, and vLLM's
   * default (untuned) fused_moe configs on GPUs it has none for, fall
   * short of a dense GEMM's streaming. 1 = as dense weights. */
  double moe_efficiency;
  /* moe_efficiency was fitted on this GPU's MoE measurements
   * (perf.moe_fitted); a MoE model on coefficients without it gets a
   * borrowed fit's band (kvsim_gpu_band_moe). */
  bool moe_fitted;
  /* Latency a client sees outside the engine (HTTP, tokenization, first
   * chunk streamed back): added to TTFT and E2E when comparing with
   * client-side measurements (vllm bench, AIConfigurator rows), not to
   * the engine-side times of a run. */
  double frontend_us;
  /* Client-side tokenisation, per prompt token (with frontend_us). */
  double frontend_per_token_us;
  /* Relative spread of the calibration residuals (one sigma), used for the
   * +/- band on latencies; 0 when not calibrated. */
  double ttft_rel_sigma, tpot_rel_sigma;
  bool calibrated;
  char source[256];
  /* What the coefficients rest on (summary.json latency.calibration):
   * fitted on this GPU's own measured rows, borrowed from the calibrated
   * GPU of its generation, or spec figures only. `rows` = measured rows
   * behind the fit (0 unless fitted). */
  kvsim_cal_status status;
  int rows;
  /* Held-out relative error (fraction, e.g. 0.08 = 8 %) to use as the
   * band's half-width on TTFT and TPOT; 0 = not measured (the band falls
   * back to kvsim_gpu_band's defaults by status). */
  double band_ttft_rel, band_tpot_rel;
  /* A generation default not yet given a GPU ("default:GEN" of
   * kvsim_gpu_perf_named without a target): its generation, so that
   * kvsim_gpu_use_perf gives it the measured peaks and class of the GPU it
   * is applied to; "" otherwise. */
  char default_of[16];
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
   * (read + write bytes) published for this part. A borrowed fit's bf16
   * GEMM and streaming efficiencies are re-expressed against them
   * (kvsim_gpu_borrow_perf); kvsim calibrate holds a fitted GEMM
   * efficiency at or below its precision's measured matmul share. */
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

/* Reads a "perf" object over *p (keys absent keep their value); `where`
 * names it in errors. `j` is a cJSON object. Each coefficient read must
 * lie in its range (mfu, mbu, attn_efficiency in [0.001, 1],
 * moe_efficiency in [0.01, 1], overheads >= 0 and bounded): KVSIM_EINVAL
 * naming the key and range otherwise. */
struct cJSON;
int kvsim_gpu_perf_parse(const struct cJSON *j, const char *where, kvsim_gpu_perf_t *p,
                         kvsim_err *err);

/* The band's half-widths (relative) for a GPU's coefficients: a fitted
 * GPU's held-out band_ttft_rel / band_tpot_rel (its in-sample spread when
 * it has none); a borrowed fit's the widest fitted band
 * (KVSIM_GPU_BAND_BORROWED_*), spec-only figures half as wide again.
 * Both >= 0.05. */
void kvsim_gpu_band(const kvsim_gpu_perf_t *p, double *ttft_rel, double *tpot_rel);
/* The band of a model on p: kvsim_gpu_band, and for a MoE model (moe)
 * on coefficients whose moe_efficiency no MoE data fitted at least a
 * borrowed fit's (KVSIM_GPU_BAND_BORROWED_*): its expert GEMMs' efficiency
 * is a default there, whatever the dense fit's status. */
void kvsim_gpu_band_moe(const kvsim_gpu_perf_t *p, bool moe, double *ttft_rel, double *tpot_rel);

/* The band of a GPU without a fit of its own: at least the widest
 * held-out band of the catalog's fitted GPUs (configs/gpus files'
 * perf.band_*_rel; tests/unit/test_gpu.c checks it stays so), and at
 * least what `kvsim validate --all [--no-refit] --json` reports under
 * bands.borrowed: the 90th percentile of the held-out |error| of the rows
 * of the groups held out by GPU and of the MoE groups no fit saw
 * (scripts/validate_all.sh --write-bands prints it): 1.250 / 0.493 with
 * --no-refit, 1.417 / 0.545 with the refit (fewer groups held out by GPU,
 * so the gpt-oss-120b rows weigh more); rounded up. */
#define KVSIM_GPU_BAND_BORROWED_TTFT 1.45
#define KVSIM_GPU_BAND_BORROWED_TPOT 0.55

/* One edge of the band as the two scales an edge run uses: `step`
 * multiplies the duration of every step (scenario perf.step_time_scale),
 * `prefill` the prefill tokens' share of it (perf.prefill_time_scale). */
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

/* Default efficiency coefficients for a generation ("hopper", ...). */
void kvsim_gpu_default_perf(const char *generation, kvsim_gpu_perf_t *p);
/* What a default takes from the GPU's class beyond its generation's fit
 * (p: a kvsim_gpu_default_perf result for g): on compute capability 12.0
 * (RTX PRO 6000, RTX 5090) the fused-MoE kernels' measured streaming rate
 * as moe_efficiency. The loader applies it to a GPU without a "perf" of
 * its own; kvsim validate --all to the coefficients it holds a GPU out
 * with. */
void kvsim_gpu_class_perf(const kvsim_gpu_t *g, kvsim_gpu_perf_t *p);
/* The expert-weight streaming rate of vLLM's fused-MoE Triton kernel on
 * compute capability 12.0, as a fraction of the HBM peak (hw/borrow.c). */
#define KVSIM_GPU_SM120_MOE_STREAM 0.745
/* The coefficients g gets from `generation`'s default when it has no fit
 * of its own: kvsim_gpu_default_perf, its mfu and mbu each
 * re-expressed against g's measured share of its spec peak instead of the
 * origin GPU's (x g's share / the origin's, at most 1; left as they are
 * where either share is not measured), then kvsim_gpu_class_perf. The
 * loader gives them to a GPU without a "perf" of its own; kvsim validate
 * --all holds a GPU out with them. */
void kvsim_gpu_borrow_perf(const kvsim_gpu_t *g, const char *generation, kvsim_gpu_perf_t *p);
/* g runs on p: p itself, or, for a generation default not yet given a
 * GPU (p->default_of), the default g borrows (kvsim_gpu_borrow_perf). */
void kvsim_gpu_use_perf(kvsim_gpu_t *g, const kvsim_gpu_perf_t *p);
/* The catalog GPU whose fit kvsim_gpu_default_perf copies for a
 * generation ("h100-sxm" for hopper and the generations without data of
 * their own, ...; static text, never NULL). */
const char *kvsim_gpu_default_perf_origin(const char *generation);

/* The step-time coefficients `spec` names (kvsim validate --perf): a
 * catalog GPU's name or a GPU file (its "perf"), or "default:GEN", the
 * default a GPU of generation GEN without data of its own gets
 * (kvsim_gpu_borrow_perf for target; without a target kvsim_gpu_default_perf,
 * marked for kvsim_gpu_use_perf to borrow for the GPU it is applied to), as kvsim validate --all holds a GPU out. label gets
 * what to call them ("b200", "blackwell default (b200 fit)"). An unknown
 * name or generation is KVSIM_ENOENT / KVSIM_EINVAL. */
int kvsim_gpu_perf_named(const char *spec, const kvsim_gpu_t *target, kvsim_gpu_perf_t *p, char *label,
                         size_t cap, kvsim_err *err);

/* Maps loose names ("H100 80GB", "h100_sxm", "RTX 4090", "NVIDIA GeForce
 * RTX 4090") onto a catalog name. Returns 1 if found. */
int kvsim_gpu_catalog_name(const char *loose, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
