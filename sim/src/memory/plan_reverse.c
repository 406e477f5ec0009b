/* The reverse question of the memory plan (kvsim calc --target-concurrency,
 * --seq-len): how long a request `concurrency` requests at once may be, and
 * the fewest GPUs (TP degree x replicas) that hold them, each answered with
 * the vLLM plan itself (plan.c) at the length asked, since the profile run
 * and so the pool depend on max_model_len. */
#include "kvsim/plan.h"

#include "core/arith.h"
#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "memory/plan_engines.h"

/* Bytes one request of `tokens` tokens holds in plan pl's pool: its blocks
 * (sliding groups hold only the window) and, for int8/int4 caches, the
 * unquantized residual window. false on overflow. */
static bool request_bytes(const kvsim_plan_t *pl, int64_t tokens, int64_t *out) {
  return kvsim__mul_i64(kvsim_plan_blocks_for_tokens(pl, tokens), pl->block_bytes, out) &&
         kvsim__add_i64(*out, pl->residual_bytes_per_request, out);
}

/* Requests of `tokens` tokens one replica at TP `tp` holds; 0 when none
 * (or the TP degree is not possible for the model). */
static int64_t replica_holds(const kvsim_model_t *m, const kvsim_gpu_t *g,
                             const kvsim_plan_params_t *q, int tp, int64_t tokens) {
  kvsim_plan_params_t t = *q;
  t.tp = tp;
  kvsim_plan_t pl;
  kvsim_err scratch;
  int64_t need;
  if (kvsim__plan_vllm(m, g, &t, &pl, &scratch) < 0 || !request_bytes(&pl, tokens, &need) ||
      need <= 0 || pl.available_kv_bytes <= 0)
    return 0;
  return pl.available_kv_bytes / need;
}

/* Concurrency-only question: the longest max_model_len whose requests,
 * `concurrency` at once, fit the pool of a plan computed at that length
 * (the profile run, and so the pool, depends on it). Bisection, as
 * the engine's estimate_max_model_len. */
static int64_t longest_fit(const kvsim_model_t *m, const kvsim_gpu_t *g,
                           const kvsim_plan_params_t *p, int64_t concurrency) {
  int64_t lo = 0, hi = m->max_position_embeddings > 0 ? m->max_position_embeddings
                                                      : KVSIM_MODEL_MAX_CONTEXT;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    kvsim_plan_params_t q = *p;
    q.max_model_len = mid;
    if (replica_holds(m, g, &q, q.tp, mid) >= concurrency)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

int kvsim_plan_reverse(const kvsim_model_t *m, const kvsim_gpu_t *g, const kvsim_plan_params_t *p,
                       int64_t concurrency, int64_t seq_len, kvsim_plan_reverse_t *out,
                       kvsim_err *err) {
  memset(out, 0, sizeof *out);
  out->min_gpus = out->min_tp = -1;
  if (concurrency < 1 || seq_len < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "--target-concurrency must be >= 1 and --seq-len >= 0");
  int rc;
  /* 2^30 concurrent requests is a million times any engine's max_num_seqs. */
  if ((rc = kvsim__plan_check_int(concurrency, 1, INT64_C(1) << 30, "--target-concurrency", NULL,
                                  err)) < 0 ||
      (rc = kvsim__plan_check_int(seq_len, 0, KVSIM_MODEL_MAX_CONTEXT, "--seq-len", NULL, err)) < 0)
    return rc;
  kvsim_plan_t pl;
  kvsim_plan_params_t q = *p;
  if (seq_len == 0) {
    /* Checks the parameters once, with a plain error, before bisecting. */
    if ((rc = kvsim__plan_vllm(m, g, &q, &pl, err)) < 0)
      return rc;
    out->max_seq_len = longest_fit(m, g, &q, concurrency);
    seq_len = out->max_seq_len > 0 ? out->max_seq_len : 1;
  }
  out->seq_len = seq_len;
  if (q.max_model_len <= 0 || q.max_model_len < seq_len)
    q.max_model_len = seq_len;
  rc = kvsim__plan_vllm(m, g, &q, &pl, err);
  if (rc < 0)
    return rc;
  int64_t other = pl.weights_bytes + pl.activation_bytes + pl.non_torch_bytes +
                  (pl.cuda_graph_subtracted ? pl.cuda_graph_bytes : 0);
  int64_t per_req, kv_other;
  if (!request_bytes(&pl, seq_len, &per_req) ||
      !kvsim__mul_i64(concurrency, per_req, &out->required_kv_bytes) ||
      !kvsim__add_i64(out->required_kv_bytes, other, &kv_other) ||
      !kvsim__double_to_i64(ceil((double)kv_other / pl.p.gpu_memory_utilization),
                            &out->required_memory_bytes))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "memory plan: --target-concurrency x --seq-len x KV bytes per token "
                         "overflows 64-bit bytes");
  /* Every TP degree with as many replicas as its share needs; the fewest
   * GPUs win, the smaller TP on a tie (scanned in increasing TP). */
  for (int tp = 1; tp <= 64; tp *= 2) {
    int64_t holds = replica_holds(m, g, &q, tp, seq_len);
    if (holds <= 0)
      continue;
    if (holds >= concurrency && out->min_tp < 0)
      out->min_tp = tp;
    int64_t replicas = kvsim__cdiv(concurrency, holds), ranks, gpus;
    if (!kvsim__mul_i64(replicas, tp, &ranks) || !kvsim__mul_i64(ranks, q.pp, &gpus) ||
        gpus > INT32_MAX)
      continue;
    if (out->min_gpus < 0 || gpus < out->min_gpus) {
      out->min_gpus = (int)gpus;
      out->layout_tp = tp;
      out->layout_replicas = (int)replicas;
      out->per_replica = holds;
    }
  }
  return KVSIM_OK;
}

void kvsim_plan_reverse_answer(const kvsim_plan_reverse_t *r, const char *gpu, int pp,
                               int64_t concurrency, char *buf, size_t cap) {
  char n[32], h[32];
  if (r->min_gpus < 0) {
    snprintf(buf, cap, "no layout of TP <= 64 on %s holds one request of %s tokens", gpu,
             kvsim__commas(r->seq_len, n, sizeof n));
    return;
  }
  char par[32] = "";
  if (pp > 1)
    snprintf(par, sizeof par, ", PP %d", pp);
  kvsim__commas(r->per_replica < concurrency ? r->per_replica : concurrency, h, sizeof h);
  if (r->layout_replicas == 1)
    snprintf(buf, cap, "%d x %s as TP %d%s (one replica holds %s requests of %s tokens)",
             r->min_gpus, gpu, r->layout_tp, par, kvsim__commas(r->per_replica, h, sizeof h),
             kvsim__commas(r->seq_len, n, sizeof n));
  else
    snprintf(buf, cap, "%d x %s as %d replicas of TP %d%s (each holds %s requests of %s tokens%s)",
             r->min_gpus, gpu, r->layout_replicas, r->layout_tp, par, h,
             kvsim__commas(r->seq_len, n, sizeof n),
             r->min_tp > 0 ? "" : "; no single replica of TP <= 64 holds them all");
}
