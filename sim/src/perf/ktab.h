/* The in-memory form of a kernel profile (kvsim/kernels.h), shared by the
 * reader (kernels.c) and the lookups (kernels_lookup.c). Internal to the
 * perf room. */
#ifndef KVSIM_PERF_KTAB_H
#define KVSIM_PERF_KTAB_H

#include "kvsim/kernels.h"

/* y(x) on ascending x; n >= 1. */
typedef struct kvsim__kcurve {
  int n;
  double *x, *y;
} kvsim__kcurve;

/* v(x, y) on ascending x (rows) and y (columns): v[i * ny + j]. */
typedef struct kvsim__kgrid {
  int nx, ny;
  double *x, *y, *v;
} kvsim__kgrid;

typedef struct kvsim__kattn {
  int head_dim, heads, kv_heads;
  bool fp8_kv;
  kvsim__kgrid g; /* batch x isl (prefill) or batch x kv_len (decode) */
} kvsim__kattn;

typedef struct kvsim__kcoll {
  char op[16]; /* "graph", "eager" (all-reduce) or the NCCL op */
  int num_gpus;
  kvsim__kcurve c; /* bytes -> us */
} kvsim__kcoll;

typedef struct kvsim__kmoe {
  char dtype[24];
  int hidden, inter, topk, experts, tp, ep;
  bool skewed;     /* power-law routing (else balanced) */
  kvsim__kcurve c; /* tokens -> us */
} kvsim__kmoe;

/* The attention block of an MLA layer as vLLM builds it (its projections,
 * norms, rotary, the MLA attention; configs/kernels/README.md), for one
 * model shape (dims), GEMM precision, KV dtype and heads per GPU. */
typedef struct kvsim__kmla {
  bool prefill;    /* context rows: batch x isl; else batch x seq_len */
  int gemm;        /* a kvsim_kgemm */
  bool fp8_kv;
  int heads;
  int dims[6];     /* hidden, q_lora_rank, kv_lora_rank, qk_nope, qk_rope, v_head */
  kvsim__kgrid g;
} kvsim__kmla;

struct kvsim_kernels {
  char gpu[64], source[160], vllm[32];
  int nm, nn, nk;
  double *m, *n, *k;
  double *gemm[KVSIM_KGEMM_COUNT]; /* [in][ik][im], NULL when absent */
  kvsim__kattn *ctx, *gen;
  int nctx, ngen;
  kvsim__kcoll *ar, *nccl;
  int nar, nnccl;
  kvsim__kmoe *moe;
  int nmoe;
  kvsim__kmla *mla; /* NULL: no MLA module tables */
  int nmla;
  double peak[KVSIM_KGEMM_COUNT], stream_bw, min_us;
};

/* Linear interpolation in a curve: the first point below its start,
 * proportional to x beyond its end. */
double kvsim__kcurve_at(const kvsim__kcurve *c, double x);
/* Index i with x[i] <= v <= x[i + 1] (clamped to [0, n - 2]) and the
 * weight of x[i + 1]; n == 1 gives i = 0, w = 0. */
int kvsim__kseg(const double *x, int n, double v, double *w);

/* The measured head shape nearest to (heads, kv_heads, head_dim) and the
 * factor its times scale by (kvsim_kernels_attn_us); NULL when none. */
const kvsim__kattn *kvsim__kattn_find(const kvsim_kernels_t *k, bool prefill, bool fp8_kv, int heads, int kv_heads,
                                     int head_dim, double *scale);
double kvsim__kattn_at(const kvsim__kattn *a, bool prefill, double batch, double len);
/* The collective curve of `op` ("graph"/"eager" all-reduce, or an NCCL op)
 * nearest in GPU count; *scale carries bytes to num_gpus. NULL: none. */
const kvsim__kcoll *kvsim__kcoll_find(const kvsim_kernels_t *k, bool allreduce, const char *op, int num_gpus,
                                      double *scale);
/* The fused MoE layer of exactly this shape, or NULL. */
const kvsim__kmoe *kvsim__kmoe_find(const kvsim_kernels_t *k, const char *dtype, int hidden, int inter, int topk,
                                   int experts, int tp, int ep);

/* The MLA module table of exactly this phase, precision, KV dtype, heads
 * and model dims (hidden, q_lora, kv_lora, qk_nope, qk_rope, v_head), or
 * NULL. */
const kvsim__kmla *kvsim__kmla_find(const kvsim_kernels_t *k, bool prefill, int gemm, bool fp8_kv, int heads,
                                   const int dims[6]);
/* Its time (us) at `batch` sequences of `len` tokens (prefill: new tokens
 * each, nothing cached; decode: the sequence length with the new token),
 * bilinear in the grid, proportional past its ends (prefill: with the
 * square of the length). */
double kvsim__kmla_at(const kvsim__kmla *t, double batch, double len);

#endif
