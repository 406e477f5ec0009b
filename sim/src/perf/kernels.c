/* Kernel profiles (kvsim/kernels.h): the reader. A profile is the JSON that
 * scripts/kernels_reduce.py writes from the measured tables (its format is
 * in configs/kernels/README.md); every latency is checked finite and > 0
 * as it is read, so the lookups never meet a bad number. Decode and
 * prefill grids may have holes where the collector skipped a shape above
 * its token budget; they are filled here, proportionally in batch from
 * the largest batch measured at the same length (attention of a batch is
 * close to linear in its sequences once it fills the GPU). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/catalog.h"
#include "core/jsonfast.h"
#include "core/util.h"
#include "kvsim/params.h"
#include "perf/ktab.h"

static const char *const GEMM_KEYS[KVSIM_KGEMM_COUNT] = {"bfloat16", "fp8", "fp8_block", "nvfp4"};

const char *kvsim_kgemm_name(kvsim_kgemm d) {
  return d >= 0 && d < KVSIM_KGEMM_COUNT ? GEMM_KEYS[d] : "?";
}

typedef struct rd {
  const char *where;
  kvsim_err *err;
} rd_t;

static int bad(rd_t *r, const char *key, const char *what) {
  return kvsim_err_set(r->err, KVSIM_EINVAL, "%s: %s: %s", r->where, key, what);
}

/* A JSON array of numbers into a fresh array. Latencies (positive) must be
 * finite and > 0; nulls become NAN where holes are allowed. Axes must
 * ascend strictly. */
enum { NUM_AXIS = 1, NUM_TIME = 2, NUM_HOLES = 4 };

static int numbers(rd_t *r, const cJSON *a, const char *key, int want, int flags, double **out, int *n) {
  if (!cJSON_IsArray(a))
    return bad(r, key, "expected an array of numbers");
  const int len = cJSON_GetArraySize(a);
  if (len < 1 || len > 1 << 20 || (want > 0 && len != want)) {
    char msg[96];
    snprintf(msg, sizeof msg, "expected %d values, got %d", want > 0 ? want : 1, len);
    return bad(r, key, msg);
  }
  double *v = kvsim__malloc((size_t)len * sizeof *v);
  if (!v)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "%s: %s: out of memory", r->where, key);
  int i = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, a) {
    if (cJSON_IsNull(e) && (flags & NUM_HOLES)) {
      v[i++] = NAN;
      continue;
    }
    const double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    const bool ok = isfinite(x) && x > 0 && x < 1e12 && (!(flags & NUM_AXIS) || i == 0 || x > v[i - 1]);
    if (!ok) {
      free(v);
      return bad(r, key, flags & NUM_AXIS ? "expected ascending positive numbers" : "expected positive finite numbers");
    }
    v[i++] = x;
  }
  *out = v;
  if (n)
    *n = len;
  return KVSIM_OK;
}

static int axis(rd_t *r, const cJSON *o, const char *key, double **out, int *n) {
  return numbers(r, cJSON_GetObjectItemCaseSensitive(o, key), key, 0, NUM_AXIS, out, n);
}

static int intkey(rd_t *r, const cJSON *o, const char *key, int lo, int hi, int *out) {
  int64_t v;
  int rc = kvsim__json_int_in(o, key, lo, hi, &v, r->where, r->err);
  if (rc == 0)
    return bad(r, key, "missing");
  if (rc < 0)
    return rc;
  *out = (int)v;
  return KVSIM_OK;
}

static int strkey(rd_t *r, const cJSON *o, const char *key, char *out, size_t cap) {
  int rc = kvsim__json_str(o, key, out, cap, r->where, r->err);
  if (rc == 0)
    return bad(r, key, "missing");
  return rc < 0 ? rc : KVSIM_OK;
}

/* gemm.dtypes.D: [n][k][m] nested arrays, every cell a latency. */
static int gemm_dtype(rd_t *r, const cJSON *a, kvsim_kernels_t *k, int d) {
  const size_t cells = (size_t)k->nn * (size_t)k->nk * (size_t)k->nm;
  double *v = kvsim__malloc(cells * sizeof *v);
  if (!v)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "%s: gemm: out of memory", r->where);
  k->gemm[d] = v;
  if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != k->nn)
    return bad(r, "gemm.dtypes", "expected one array per n");
  size_t o = 0;
  const cJSON *an, *ak;
  cJSON_ArrayForEach(an, a) {
    if (!cJSON_IsArray(an) || cJSON_GetArraySize(an) != k->nk)
      return bad(r, "gemm.dtypes", "expected one array per k in each n");
    cJSON_ArrayForEach(ak, an) {
      double *row;
      int rc = numbers(r, ak, "gemm.dtypes", k->nm, NUM_TIME, &row, NULL);
      if (rc < 0)
        return rc;
      memcpy(v + o, row, (size_t)k->nm * sizeof *row);
      free(row);
      o += (size_t)k->nm;
    }
  }
  return KVSIM_OK;
}

static int read_gemm(rd_t *r, const cJSON *g, kvsim_kernels_t *k) {
  if (!cJSON_IsObject(g))
    return bad(r, "gemm", "expected an object");
  int rc;
  if ((rc = axis(r, g, "m", &k->m, &k->nm)) < 0 || (rc = axis(r, g, "n", &k->n, &k->nn)) < 0 ||
      (rc = axis(r, g, "k", &k->k, &k->nk)) < 0)
    return rc;
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(g, "dtypes");
  if (!cJSON_IsObject(dt))
    return bad(r, "gemm.dtypes", "expected an object");
  for (int d = 0; d < KVSIM_KGEMM_COUNT; d++) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(dt, GEMM_KEYS[d]);
    if (a && (rc = gemm_dtype(r, a, k, d)) < 0)
      return rc;
  }
  if (!k->gemm[KVSIM_KGEMM_BF16])
    return bad(r, "gemm.dtypes", "no bfloat16 table");
  return KVSIM_OK;
}

/* Holes of a grid filled along x (batch) from the largest x measured at
 * the same y; a column with nothing measured from the previous column,
 * scaled by the ratio of lengths (squared for prefill). */
static int fill_holes(kvsim__kgrid *g, bool prefill) {
  for (int j = 0; j < g->ny; j++) {
    int last = -1;
    for (int i = 0; i < g->nx; i++) {
      double *v = &g->v[i * g->ny + j];
      if (!isnan(*v))
        last = i;
      else if (last >= 0)
        *v = g->v[last * g->ny + j] * g->x[i] / g->x[last];
    }
    if (last < 0) {
      if (j == 0)
        return -1;
      const double s = g->y[j] / g->y[j - 1];
      for (int i = 0; i < g->nx; i++)
        g->v[i * g->ny + j] = g->v[i * g->ny + j - 1] * (prefill ? s * s : s);
    }
    /* A hole below the first measured batch takes that batch's time. */
    int first = 0;
    while (first < g->nx && isnan(g->v[first * g->ny + j]))
      first++;
    for (int i = 0; i < first && first < g->nx; i++)
      g->v[i * g->ny + j] = g->v[first * g->ny + j];
  }
  return 0;
}

/* One entry's grid: axes "batch" and `len_key`, and "us", one row per
 * batch with holes (null) filled as fill_holes says. */
static int read_grid(rd_t *r, const cJSON *e, const char *key, const char *len_key, bool prefill,
                     kvsim__kgrid *g) {
  int rc;
  if ((rc = axis(r, e, "batch", &g->x, &g->nx)) < 0 || (rc = axis(r, e, len_key, &g->y, &g->ny)) < 0)
    return rc;
  const cJSON *us = cJSON_GetObjectItemCaseSensitive(e, "us");
  if (!cJSON_IsArray(us) || cJSON_GetArraySize(us) != g->nx)
    return bad(r, key, "us: expected one row per batch");
  g->v = kvsim__malloc((size_t)g->nx * (size_t)g->ny * sizeof *g->v);
  if (!g->v)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "%s: %s: out of memory", r->where, key);
  const cJSON *row;
  int o = 0;
  cJSON_ArrayForEach(row, us) {
    double *v;
    if ((rc = numbers(r, row, key, g->ny, NUM_TIME | NUM_HOLES, &v, NULL)) < 0)
      return rc;
    memcpy(g->v + o, v, (size_t)g->ny * sizeof *v);
    free(v);
    o += g->ny;
  }
  if (fill_holes(g, prefill) < 0)
    return bad(r, key, "a table whose shortest length has no measurement");
  return KVSIM_OK;
}

static int read_attn(rd_t *r, const cJSON *list, bool prefill, kvsim__kattn **out, int *n) {
  const char *key = prefill ? "context_attention" : "generation_attention";
  if (!cJSON_IsArray(list))
    return bad(r, key, "expected an array");
  const int len = cJSON_GetArraySize(list);
  if (len < 1)
    return bad(r, key, "empty");
  kvsim__kattn *a = kvsim__calloc((size_t)len, sizeof *a);
  if (!a)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "%s: %s: out of memory", r->where, key);
  *out = a;
  const cJSON *e;
  int i = 0, rc;
  cJSON_ArrayForEach(e, list) {
    /* Sliding-window rows are not used: the step model reads the full
     * attention table at the clipped length (perf/attention.c). */
    int64_t window = 0;
    int rw = kvsim__json_int_in(e, "window", 0, 1 << 30, &window, r->where, r->err);
    if (rw < 0)
      return rw;
    if (window > 0)
      continue;
    kvsim__kattn *t = &a[i++];
    *n = i; /* freed on error from here */
    char dt[24];
    if ((rc = intkey(r, e, "head_dim", 1, 4096, &t->head_dim)) < 0 || (rc = intkey(r, e, "num_heads", 1, 4096, &t->heads)) < 0 ||
        (rc = intkey(r, e, "num_kv_heads", 1, 4096, &t->kv_heads)) < 0 || (rc = strkey(r, e, "kv_dtype", dt, sizeof dt)) < 0)
      return rc;
    t->fp8_kv = strcmp(dt, "fp8") == 0;
    if (!t->fp8_kv && strcmp(dt, "bfloat16") != 0)
      return bad(r, key, "kv_dtype must be \"bfloat16\" or \"fp8\"");
    if ((rc = read_grid(r, e, key, prefill ? "isl" : "kv_len", prefill, &t->g)) < 0)
      return rc;
  }
  *n = i;
  if (i == 0)
    return bad(r, key, "no full-attention (window 0) table");
  return KVSIM_OK;
}

/* mla_module: the attention block of an MLA layer per (phase, gemm,
 * kv_dtype, num_heads) and model dims; grids with holes like attention's. */
static const char *const MLA_DIMS[6] = {"hidden", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                        "qk_rope_head_dim", "v_head_dim"};

static int read_mla_entry(rd_t *r, const cJSON *e, kvsim__kmla *t) {
  const char *key = "mla_module";
  char phase[16], gemm[16], dt[16];
  int rc;
  if ((rc = strkey(r, e, "phase", phase, sizeof phase)) < 0 || (rc = strkey(r, e, "gemm", gemm, sizeof gemm)) < 0 ||
      (rc = strkey(r, e, "kv_dtype", dt, sizeof dt)) < 0 || (rc = intkey(r, e, "num_heads", 1, 4096, &t->heads)) < 0)
    return rc;
  if (strcmp(phase, "context") != 0 && strcmp(phase, "generation") != 0)
    return bad(r, key, "phase must be \"context\" or \"generation\"");
  t->prefill = phase[0] == 'c';
  t->gemm = -1;
  for (int d = 0; d < KVSIM_KGEMM_COUNT; d++)
    if (!strcmp(gemm, GEMM_KEYS[d]))
      t->gemm = d;
  if (t->gemm < 0)
    return bad(r, key, "gemm must be \"bfloat16\", \"fp8\", \"fp8_block\" or \"nvfp4\"");
  t->fp8_kv = strcmp(dt, "fp8") == 0;
  if (!t->fp8_kv && strcmp(dt, "bfloat16") != 0)
    return bad(r, key, "kv_dtype must be \"bfloat16\" or \"fp8\"");
  for (int i = 0; i < 6; i++)
    if ((rc = intkey(r, e, MLA_DIMS[i], 1, 1 << 20, &t->dims[i])) < 0)
      return rc;
  return read_grid(r, e, key, t->prefill ? "isl" : "seq_len", t->prefill, &t->g);
}

static int read_mla(rd_t *r, const cJSON *list, kvsim_kernels_t *k) {
  if (!list)
    return KVSIM_OK; /* a GPU without the tables: MLA takes the attention and GEMM tables */
  if (!cJSON_IsArray(list))
    return bad(r, "mla_module", "expected an array");
  const int len = cJSON_GetArraySize(list);
  k->mla = kvsim__calloc((size_t)(len > 0 ? len : 1), sizeof *k->mla);
  if (!k->mla)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "%s: mla_module: out of memory", r->where);
  const cJSON *e;
  int rc;
  cJSON_ArrayForEach(e, list) {
    if ((rc = read_mla_entry(r, e, &k->mla[k->nmla++])) < 0)
      return rc;
  }
  return KVSIM_OK;
}

static int read_curve(rd_t *r, const cJSON *e, const char *key, const char *xkey, const char *ykey, kvsim__kcurve *c) {
  int rc = axis(r, e, xkey, &c->x, &c->n);
  if (rc < 0)
    return rc;
  return numbers(r, cJSON_GetObjectItemCaseSensitive(e, ykey), key, c->n, NUM_TIME, &c->y, NULL);
}

static int read_coll(rd_t *r, const cJSON *list, const char *key, const char *opkey, kvsim__kcoll **out, int *n) {
  if (!list)
    return KVSIM_OK; /* a GPU without the table (the step model says so) */
  if (!cJSON_IsArray(list))
    return bad(r, key, "expected an array");
  const int len = cJSON_GetArraySize(list);
  kvsim__kcoll *a = kvsim__calloc((size_t)(len > 0 ? len : 1), sizeof *a);
  if (!a)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "%s: %s: out of memory", r->where, key);
  *out = a;
  *n = len;
  const cJSON *e;
  int i = 0, rc;
  cJSON_ArrayForEach(e, list) {
    kvsim__kcoll *t = &a[i++];
    if ((rc = strkey(r, e, opkey, t->op, sizeof t->op)) < 0 || (rc = intkey(r, e, "num_gpus", 2, 1024, &t->num_gpus)) < 0 ||
        (rc = read_curve(r, e, key, "bytes", "us", &t->c)) < 0)
      return rc;
  }
  return KVSIM_OK;
}

static int read_moe(rd_t *r, const cJSON *list, kvsim_kernels_t *k) {
  if (!list)
    return KVSIM_OK;
  if (!cJSON_IsArray(list))
    return bad(r, "moe", "expected an array");
  const int len = cJSON_GetArraySize(list);
  k->moe = kvsim__calloc((size_t)(len > 0 ? len : 1), sizeof *k->moe);
  if (!k->moe)
    return kvsim_err_set(r->err, KVSIM_ENOMEM, "%s: moe: out of memory", r->where);
  const cJSON *e;
  int rc;
  cJSON_ArrayForEach(e, list) {
    char dist[24];
    if ((rc = strkey(r, e, "distribution", dist, sizeof dist)) < 0)
      return rc;
    /* Skewed routing (power law, exponent 1.01): tokens of real prompts do
     * not spread evenly over the experts, so fewer distinct experts are
     * read than under balanced routing, which the tables also time (on
     * B200, gpt-oss-120b at 16 tokens: 156 us skewed, 204 us balanced).
     * The balanced rows serve a shape measured only that way. */
    const bool skewed = strcmp(dist, "power_law_1.01") == 0;
    if (!skewed && strcmp(dist, "balanced") != 0)
      continue;
    kvsim__kmoe *t = &k->moe[k->nmoe++];
    t->skewed = skewed;
    if ((rc = strkey(r, e, "dtype", t->dtype, sizeof t->dtype)) < 0 || (rc = intkey(r, e, "hidden", 1, 1 << 20, &t->hidden)) < 0 ||
        (rc = intkey(r, e, "inter", 1, 1 << 20, &t->inter)) < 0 || (rc = intkey(r, e, "topk", 1, 4096, &t->topk)) < 0 ||
        (rc = intkey(r, e, "experts", 1, 1 << 16, &t->experts)) < 0 || (rc = intkey(r, e, "tp", 1, KVSIM_MAX_PARALLEL, &t->tp)) < 0 ||
        (rc = intkey(r, e, "ep", 1, KVSIM_MAX_PARALLEL, &t->ep)) < 0 || (rc = read_curve(r, e, "moe", "tokens", "us", &t->c)) < 0)
      return rc;
  }
  return KVSIM_OK;
}

/* The tables' lower envelope: a GEMM is never slower than the next larger
 * measured shape in m, n or k, nor attention than a larger batch or
 * length, since the engine could run the smaller problem with the larger
 * one's kernel (padding costs no more than the larger shape's time). The
 * tables hold such inversions where the kernel a library picks changes
 * with shape (their README: fp8 CUTLASS on B200 takes 32 us at n = 3072,
 * k = 8192, m = 4 and 12 us at n = 4096): interpolating through them
 * would charge a model whose shapes fall between grid points for a
 * heuristic's miss at a shape it does not have. */
static void envelope_gemm(kvsim_kernels_t *k, double *t) {
  const int NN = k->nn, NK = k->nk, NM = k->nm;
#define AT(i, j, l) t[((size_t)(i) * NK + (j)) * NM + (l)]
  for (int i = NN - 1; i >= 0; i--)
    for (int j = NK - 1; j >= 0; j--)
      for (int l = NM - 1; l >= 0; l--) {
        double v = AT(i, j, l);
        if (i + 1 < NN && AT(i + 1, j, l) < v)
          v = AT(i + 1, j, l);
        if (j + 1 < NK && AT(i, j + 1, l) < v)
          v = AT(i, j + 1, l);
        if (l + 1 < NM && AT(i, j, l + 1) < v)
          v = AT(i, j, l + 1);
        AT(i, j, l) = v;
      }
#undef AT
}

static void envelope_grid(kvsim__kgrid *g) {
  for (int i = g->nx - 1; i >= 0; i--)
    for (int j = g->ny - 1; j >= 0; j--) {
      double *v = &g->v[i * g->ny + j];
      if (i + 1 < g->nx && g->v[(i + 1) * g->ny + j] < *v)
        *v = g->v[(i + 1) * g->ny + j];
      if (j + 1 < g->ny && g->v[i * g->ny + j + 1] < *v)
        *v = g->v[i * g->ny + j + 1];
    }
}

static void envelope_curve(kvsim__kcurve *c) {
  for (int i = c->n - 2; i >= 0; i--)
    if (c->y[i + 1] < c->y[i])
      c->y[i] = c->y[i + 1];
}

static void envelopes(kvsim_kernels_t *k) {
  for (int d = 0; d < KVSIM_KGEMM_COUNT; d++)
    if (k->gemm[d])
      envelope_gemm(k, k->gemm[d]);
  for (int i = 0; i < k->nctx; i++)
    envelope_grid(&k->ctx[i].g);
  for (int i = 0; i < k->ngen; i++)
    envelope_grid(&k->gen[i].g);
  for (int i = 0; i < k->nar; i++)
    envelope_curve(&k->ar[i].c);
  for (int i = 0; i < k->nnccl; i++)
    envelope_curve(&k->nccl[i].c);
  for (int i = 0; i < k->nmoe; i++)
    envelope_curve(&k->moe[i].c);
  for (int i = 0; i < k->nmla; i++)
    envelope_grid(&k->mla[i].g);
}

/* Figures derived once: the best rate per precision, the weight-streaming
 * rate of single-token bf16 GEMMs, and the shortest bf16 kernel. */
static void derive(kvsim_kernels_t *k) {
  static const double wbytes[KVSIM_KGEMM_COUNT] = {2, 1, 1, 0.5};
  k->min_us = INFINITY;
  for (int d = 0; d < KVSIM_KGEMM_COUNT; d++) {
    if (!k->gemm[d])
      continue;
    for (int in = 0; in < k->nn; in++)
      for (int ik = 0; ik < k->nk; ik++)
        for (int im = 0; im < k->nm; im++) {
          const double t = k->gemm[d][((size_t)in * k->nk + ik) * k->nm + im] * 1e-6;
          const double f = 2.0 * k->m[im] * k->n[in] * k->k[ik] / t;
          if (f > k->peak[d])
            k->peak[d] = f;
          if (d == KVSIM_KGEMM_BF16 && im == 0) {
            const double bw = k->n[in] * k->k[ik] * wbytes[d] / t;
            if (bw > k->stream_bw)
              k->stream_bw = bw;
          }
          if (d == KVSIM_KGEMM_BF16 && t * 1e6 < k->min_us)
            k->min_us = t * 1e6;
        }
  }
}

void kvsim_kernels_free(kvsim_kernels_t *k) {
  if (!k)
    return;
  free(k->m);
  free(k->n);
  free(k->k);
  for (int d = 0; d < KVSIM_KGEMM_COUNT; d++)
    free(k->gemm[d]);
  kvsim__kattn *lists[2] = {k->ctx, k->gen};
  const int counts[2] = {k->nctx, k->ngen};
  for (int l = 0; l < 2; l++) {
    for (int i = 0; lists[l] && i < counts[l]; i++) {
      free(lists[l][i].g.x);
      free(lists[l][i].g.y);
      free(lists[l][i].g.v);
    }
    free(lists[l]);
  }
  kvsim__kcoll *colls[2] = {k->ar, k->nccl};
  const int ncoll[2] = {k->nar, k->nnccl};
  for (int l = 0; l < 2; l++) {
    for (int i = 0; colls[l] && i < ncoll[l]; i++) {
      free(colls[l][i].c.x);
      free(colls[l][i].c.y);
    }
    free(colls[l]);
  }
  for (int i = 0; k->moe && i < k->nmoe; i++) {
    free(k->moe[i].c.x);
    free(k->moe[i].c.y);
  }
  free(k->moe);
  for (int i = 0; k->mla && i < k->nmla; i++) {
    free(k->mla[i].g.x);
    free(k->mla[i].g.y);
    free(k->mla[i].g.v);
  }
  free(k->mla);
  free(k);
}

static int read_all(rd_t *r, const cJSON *j, kvsim_kernels_t *k) {
  int rc;
  if (!cJSON_IsObject(j))
    return bad(r, "(top level)", "expected an object");
  if ((rc = strkey(r, j, "gpu", k->gpu, sizeof k->gpu)) < 0 || (rc = strkey(r, j, "source", k->source, sizeof k->source)) < 0 ||
      (rc = strkey(r, j, "vllm_version", k->vllm, sizeof k->vllm)) < 0)
    return rc;
  char units[8];
  if ((rc = strkey(r, j, "units", units, sizeof units)) < 0)
    return rc;
  if (strcmp(units, "us") != 0)
    return bad(r, "units", "expected \"us\"");
  if ((rc = read_gemm(r, cJSON_GetObjectItemCaseSensitive(j, "gemm"), k)) < 0 ||
      (rc = read_attn(r, cJSON_GetObjectItemCaseSensitive(j, "context_attention"), true, &k->ctx, &k->nctx)) < 0 ||
      (rc = read_attn(r, cJSON_GetObjectItemCaseSensitive(j, "generation_attention"), false, &k->gen, &k->ngen)) < 0 ||
      (rc = read_coll(r, cJSON_GetObjectItemCaseSensitive(j, "allreduce"), "allreduce", "mode", &k->ar, &k->nar)) < 0 ||
      (rc = read_coll(r, cJSON_GetObjectItemCaseSensitive(j, "nccl"), "nccl", "op", &k->nccl, &k->nnccl)) < 0 ||
      (rc = read_moe(r, cJSON_GetObjectItemCaseSensitive(j, "moe"), k)) < 0 ||
      (rc = read_mla(r, cJSON_GetObjectItemCaseSensitive(j, "mla_module"), k)) < 0)
    return rc;
  envelopes(k);
  derive(k);
  return KVSIM_OK;
}

int kvsim_kernels_parse(const char *json, const char *where, kvsim_kernels_t **out, kvsim_err *err) {
  *out = NULL;
  /* The tables are well-formed JSON: the fast reader builds cJSON's tree
   * at a fraction of its cost (a profile's parse was 5 % of a run). Any
   * text it does not take goes through cJSON and its error messages. */
  kvsim__jsonfast arena = {0};
  cJSON *j = kvsim__jsonfast_parse(json, &arena);
  const bool fast = j != NULL;
  if (!fast && !(j = kvsim__json_parse(json, where, err)))
    return err ? err->code : KVSIM_EPARSE;
  kvsim_kernels_t *k = kvsim__calloc(1, sizeof *k);
  int rc = k ? KVSIM_OK : kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", where);
  if (k) {
    rd_t r = {where, err};
    rc = read_all(&r, j, k);
  }
  if (fast)
    kvsim__jsonfast_free(&arena);
  else
    cJSON_Delete(j);
  if (rc < 0) {
    kvsim_kernels_free(k);
    return rc;
  }
  *out = k;
  return KVSIM_OK;
}

/* The process's cache: profiles are a few hundred KB and every simulation
 * of a study needs the same one or two. */
enum { CACHE_MAX = 32 };
static struct {
  char name[256];
  kvsim_kernels_t *k;
} cache[CACHE_MAX];
static int ncache;

int kvsim_kernels_get(const char *name_or_path, const kvsim_kernels_t **out, kvsim_err *err) {
  for (int i = 0; i < ncache; i++)
    if (!strcmp(cache[i].name, name_or_path)) {
      *out = cache[i].k;
      return KVSIM_OK;
    }
  if (strlen(name_or_path) >= sizeof cache[0].name)
    return kvsim_err_set(err, KVSIM_EINVAL, "kernel profile name too long: %.60s...", name_or_path);
  kvsim_kernels_t *k = NULL;
  int rc;
  const kvsim__catalog_entry *e = kvsim__catalog_find(KVSIM_CATALOG_KERNELS, name_or_path);
  if (e) {
    char where[128];
    snprintf(where, sizeof where, "configs/kernels/%s.json", e->name);
    rc = kvsim_kernels_parse(e->json, where, &k, err);
  } else if (strchr(name_or_path, '/') || kvsim__ends_with(name_or_path, ".json")) {
    char *text;
    if ((rc = kvsim__read_file(name_or_path, &text, NULL, err)) < 0)
      return rc;
    rc = kvsim_kernels_parse(text, name_or_path, &k, err);
    free(text);
  } else {
    char near[256];
    kvsim__catalog_suggest(KVSIM_CATALOG_KERNELS, name_or_path, near, sizeof near, 3);
    return kvsim_err_set(err, KVSIM_ENOENT, "unknown kernel profile '%s'; closest: %s", name_or_path, near);
  }
  if (rc < 0)
    return rc;
  if (ncache == CACHE_MAX) {
    kvsim_kernels_free(k);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: more than %d kernel profiles in one process", name_or_path, CACHE_MAX);
  }
  snprintf(cache[ncache].name, sizeof cache[ncache].name, "%s", name_or_path);
  cache[ncache++].k = k;
  *out = k;
  return KVSIM_OK;
}

const char *kvsim_kernels_gpu(const kvsim_kernels_t *k) { return k->gpu; }
const char *kvsim_kernels_source(const kvsim_kernels_t *k) { return k->source; }
const char *kvsim_kernels_vllm_version(const kvsim_kernels_t *k) { return k->vllm; }
bool kvsim_kernels_has_gemm(const kvsim_kernels_t *k, kvsim_kgemm d) {
  return d >= 0 && d < KVSIM_KGEMM_COUNT && k->gemm[d] != NULL;
}
double kvsim_kernels_peak_flops(const kvsim_kernels_t *k, kvsim_kgemm d) {
  return d >= 0 && d < KVSIM_KGEMM_COUNT ? k->peak[d] : 0;
}
double kvsim_kernels_stream_bw(const kvsim_kernels_t *k) { return k->stream_bw; }
double kvsim_kernels_min_kernel_us(const kvsim_kernels_t *k) { return k->min_us; }
