/* Copies of a parsed scenario and typed overrides of its fields (plan and
 * sweep points; each also reaching the disaggregated sides that did not
 * give the key). */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "engine/disagg.h"
#include "engine/scenario_keys.h"
#include "kvsim/scenario.h"

int kvsim_scenario_copy(const kvsim_scenario_t *src, kvsim_scenario_t *dst, kvsim_err *err) {
  *dst = *src;
  dst->workload = NULL;
  dst->sides = NULL;
  dst->description = src->description ? kvsim__strdup(src->description) : NULL;
  int rc = dst->description || !src->description ? KVSIM_OK : KVSIM_ENOMEM;
  /* A side holds no workload (sides.c lends it the scenario's). */
  if (rc == KVSIM_OK && src->workload)
    rc = kvsim_workload_cfg_copy(src->workload, &dst->workload, err);
  if (rc == KVSIM_OK)
    rc = kvsim__sides_copy(src, dst, err);
  if (rc < 0) {
    kvsim_scenario_fini(dst);
    memset(dst, 0, sizeof *dst);
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory copying the scenario", src->name);
  }
  return KVSIM_OK;
}

/* A typed override of one key: put sets it on one scenario (the typed
 * field, and the key marked given so that summary.json's config says what
 * ran); set_all puts it on sc and on each of sc's disaggregated sides that
 * did not give the key itself, as laying the side's block over the
 * scenario with the key set would leave it (sides.c). */
typedef void (*put_fn)(kvsim_scenario_t *sc, int id, const void *v);

static void set_all(kvsim_scenario_t *sc, int id, put_fn put, const void *v) {
  put(sc, id, v);
  kvsim_scenario_t *side;
  for (int i = 0; (side = kvsim__sides_next(sc, id, &i));)
    put(side, id, v);
}

static void mark(kvsim_scenario_t *sc, int id) { kvsim__scenario_mark_key(sc, kvsim_param_get(id)->key); }

static void put_int(kvsim_scenario_t *sc, int id, const void *v) {
  const int64_t n = *(const int64_t *)v;
  switch (id) {
  case KVSIM_PARAM_TENSOR_PARALLEL_SIZE:
    sc->plan.tp = (int)n;
    break;
  case KVSIM_PARAM_MAX_NUM_SEQS:
    sc->plan.max_num_seqs = n;
    break;
  case KVSIM_PARAM_MAX_MODEL_LEN:
    sc->plan.max_model_len = n;
    break;
  default:
    sc->replicas = (int)n;
    break;
  }
  mark(sc, id);
}

static void put_num(kvsim_scenario_t *sc, int id, const void *v) {
  const double x = *(const double *)v;
  if (id == KVSIM_PARAM_STEP_TIME_SCALE)
    sc->step_time_scale = x;
  else
    sc->prefill_time_scale = x;
  mark(sc, id);
}

static void put_kv_dtype(kvsim_scenario_t *sc, int id, const void *v) {
  sc->plan.kv_dtype = *(const kvsim_kv_dtype *)v;
  mark(sc, id);
}

static void put_quantization(kvsim_scenario_t *sc, int id, const void *v) {
  snprintf(sc->plan.quantization, sizeof sc->plan.quantization, "%s", (const char *)v);
  mark(sc, id);
}

/* A share of GPU memory under the engine key `key` (gpu_memory_utilization
 * or a profile's fraction_key) on sc and each side that did not give it:
 * a side whose profile does not read the key is refused when built, as
 * parsing it with the key would refuse it (kvsim_sched_check_key). */
static void set_share(kvsim_scenario_t *sc, const char *key, double f) {
  char path[96];
  snprintf(path, sizeof path, "engine.%s", key);
  const kvsim_param_t *p = kvsim_param_by_key(path);
  kvsim_scenario_t *s = sc;
  for (int i = 0; s; s = p ? kvsim__sides_next(sc, p->id, &i) : NULL) {
    const kvsim_sched_ops_t *ops = s->sched_ops;
    kvsim_err e = {0};
    if (s != sc && kvsim_sched_check_key(ops, key, "", &e) < 0) {
      kvsim__sides_refuse(sc, i - 1, p->id);
      continue;
    }
    if (ops->set_fraction && ops->fraction_key && !strcmp(key, ops->fraction_key)) {
      ops->set_fraction(&s->plan, f); /* the plan checks the range, as when parsed */
      kvsim_sched_opts_mark_given(ops, &s->sched.opts, key); /* printed from the plan's */
    } else {
      s->plan.gpu_memory_utilization = f; /* the plan's range, as when parsed */
    }
    kvsim__scenario_mark_key(s, path);
  }
}

int kvsim_scenario_set_replicas(kvsim_scenario_t *sc, int64_t n, kvsim_err *err) {
  char w[4200];
  snprintf(w, sizeof w, "%s: hardware", sc->path[0] ? sc->path : sc->name);
  char name[4300];
  snprintf(name, sizeof name, "%s.replicas", w);
  int rc = kvsim_param_check_int(KVSIM_PARAM_REPLICAS, n, name, err);
  if (rc < 0)
    return rc;
  if (sc->disagg.enabled) {
    /* n deployment units: each side's instances of the block, n times
     * (disagg.h unit_prefill, unit_decode); the sides are built with them. */
    sc->disagg.replicas[KVSIM_SIDE_PREFILL] = (int32_t)(n * sc->disagg.unit_prefill);
    sc->disagg.replicas[KVSIM_SIDE_DECODE] = (int32_t)(n * sc->disagg.unit_decode);
    kvsim__scenario_mark_key(sc, "disaggregation.prefill.replicas");
    kvsim__scenario_mark_key(sc, "disaggregation.decode.replicas");
    sc->replicas = (int)n;
    return KVSIM_OK;
  }
  int64_t ep = sc->plan.ep > 1 ? sc->plan.ep : 1;
  if ((rc = kvsim__scenario_check_ep(ep, sc->plan.tp, n, w, err)) < 0)
    return rc;
  put_int(sc, KVSIM_PARAM_REPLICAS, &n);
  return KVSIM_OK;
}

int kvsim_scenario_set_disagg_replicas(kvsim_scenario_t *sc, kvsim_disagg_side side, int64_t n,
                                       kvsim_err *err) {
  const char *name = side == KVSIM_SIDE_DECODE ? "decode" : "prefill";
  if (!sc->disagg.enabled)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: no disaggregation block for %s instances",
                         sc->name, name);
  if (n < 1 || n > KVSIM_MAX_REPLICAS) /* the registry row's bound (core/params.c) */
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: disaggregation.%s.replicas: %lld is outside [1, %d]", sc->name, name,
                         (long long)n, KVSIM_MAX_REPLICAS);
  char key[64];
  snprintf(key, sizeof key, "disaggregation.%s.replicas", name);
  sc->disagg.replicas[side == KVSIM_SIDE_DECODE] = (int32_t)n;
  kvsim__scenario_mark_key(sc, key);
  return KVSIM_OK;
}

int kvsim_scenario_set_utilization(kvsim_scenario_t *sc, double u, kvsim_err *err) {
  (void)err; /* the range is the plan's to check (memory/plan.c), as when parsed */
  set_share(sc, "gpu_memory_utilization", u);
  return KVSIM_OK;
}

int kvsim_scenario_set_memory_fraction(kvsim_scenario_t *sc, double f, kvsim_err *err) {
  const kvsim_sched_ops_t *ops = sc->sched_ops;
  const char *key = kvsim_sched_fraction_key(ops);
  if (!key)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: the %s profile has no share of GPU memory to set (it sizes its cache "
                         "by batch and length)",
                         sc->name, ops->name);
  if (!ops->set_fraction)
    return kvsim_scenario_set_utilization(sc, f, err);
  set_share(sc, key, f);
  return KVSIM_OK;
}

/* The registry's range check of a typed override, named "SCENARIO: KEY". */
static int check_num(const kvsim_scenario_t *sc, int id, double v, kvsim_err *err) {
  char name[256];
  snprintf(name, sizeof name, "%s: %s", sc->name, kvsim_param_get(id)->key);
  return kvsim_param_check_num(id, v, name, err);
}
static int check_int(const kvsim_scenario_t *sc, int id, int64_t v, kvsim_err *err) {
  char name[256];
  snprintf(name, sizeof name, "%s: %s", sc->name, kvsim_param_get(id)->key);
  return kvsim_param_check_int(id, v, name, err);
}

int kvsim_scenario_set_step_time_scale(kvsim_scenario_t *sc, double scale, kvsim_err *err) {
  int rc = check_num(sc, KVSIM_PARAM_STEP_TIME_SCALE, scale, err);
  if (rc < 0)
    return rc;
  set_all(sc, KVSIM_PARAM_STEP_TIME_SCALE, put_num, &scale);
  return KVSIM_OK;
}

int kvsim_scenario_set_prefill_time_scale(kvsim_scenario_t *sc, double scale, kvsim_err *err) {
  int rc = check_num(sc, KVSIM_PARAM_PREFILL_TIME_SCALE, scale, err);
  if (rc < 0)
    return rc;
  set_all(sc, KVSIM_PARAM_PREFILL_TIME_SCALE, put_num, &scale);
  return KVSIM_OK;
}

static double clamp_scale(double x) {
  return x < KVSIM_STEP_SCALE_MIN ? KVSIM_STEP_SCALE_MIN : x > KVSIM_STEP_SCALE_MAX ? KVSIM_STEP_SCALE_MAX : x;
}

void kvsim_scenario_band_edges(const kvsim_scenario_t *sc, const kvsim_gpu_perf_t *band, kvsim_band_edge_t *lo,
                               kvsim_band_edge_t *hi) {
  kvsim_band_edge_t l, h;
  kvsim_gpu_band_edges_moe(band, sc->model.num_experts > 0, &l, &h);
  const double step = sc->step_time_scale > 0 ? sc->step_time_scale : 1;
  const double prefill = sc->prefill_time_scale > 0 ? sc->prefill_time_scale : step;
  lo->step = clamp_scale(step * l.step);
  hi->step = clamp_scale(step * h.step);
  lo->prefill = clamp_scale(prefill * l.prefill);
  hi->prefill = clamp_scale(prefill * h.prefill);
}

int kvsim_scenario_set_band_edge(kvsim_scenario_t *sc, const kvsim_band_edge_t *e, kvsim_err *err) {
  int rc = kvsim_scenario_set_step_time_scale(sc, e->step, err);
  return rc < 0 ? rc : kvsim_scenario_set_prefill_time_scale(sc, e->prefill, err);
}

int kvsim_scenario_set_kv_cache_dtype(kvsim_scenario_t *sc, kvsim_kv_dtype d, kvsim_err *err) {
  /* The step-time factor follows the dtype at plan time (perf.c) unless
   * the scenario gave perf.quant_step_factor, which stays the user's. */
  (void)err;
  set_all(sc, KVSIM_PARAM_KV_CACHE_DTYPE, put_kv_dtype, &d);
  return KVSIM_OK;
}

int kvsim_scenario_set_tensor_parallel(kvsim_scenario_t *sc, int64_t tp, kvsim_err *err) {
  char w[4200];
  snprintf(w, sizeof w, "%s: hardware", sc->path[0] ? sc->path : sc->name);
  char name[4300];
  snprintf(name, sizeof name, "%s.tensor_parallel_size", w);
  int rc = kvsim_param_check_int(KVSIM_PARAM_TENSOR_PARALLEL_SIZE, tp, name, err);
  if (rc < 0)
    return rc;
  int64_t ep = sc->plan.ep > 1 ? sc->plan.ep : 1;
  if ((rc = kvsim__scenario_check_ep(ep, tp, sc->replicas, w, err)) < 0)
    return rc;
  set_all(sc, KVSIM_PARAM_TENSOR_PARALLEL_SIZE, put_int, &tp);
  return KVSIM_OK;
}

int kvsim_scenario_set_max_num_seqs(kvsim_scenario_t *sc, int64_t n, kvsim_err *err) {
  int rc = check_int(sc, KVSIM_PARAM_MAX_NUM_SEQS, n, err);
  if (rc < 0)
    return rc;
  set_all(sc, KVSIM_PARAM_MAX_NUM_SEQS, put_int, &n);
  return KVSIM_OK;
}

int kvsim_scenario_set_max_model_len(kvsim_scenario_t *sc, int64_t n, kvsim_err *err) {
  /* The model's own bound is the plan's to check, as when parsed. */
  int rc = check_int(sc, KVSIM_PARAM_MAX_MODEL_LEN, n, err);
  if (rc < 0)
    return rc;
  set_all(sc, KVSIM_PARAM_MAX_MODEL_LEN, put_int, &n);
  return KVSIM_OK;
}

int kvsim_scenario_set_quantization(kvsim_scenario_t *sc, const char *q, kvsim_err *err) {
  /* As parsing takes it (scenario.c parse_engine): "" is a slip, not the
   * model's own; the method itself is the plan's to check. */
  const kvsim_param_t *p = kvsim_param_get(KVSIM_PARAM_QUANTIZATION);
  char name[256];
  snprintf(name, sizeof name, "%s: %s", sc->name, p->key);
  if (!q[0] || strlen(q) >= sizeof sc->plan.quantization)
    return kvsim_err_set_param(err, KVSIM_EINVAL, p->id, name,
                               "'%s' (expected none, fp8, int8, awq, gptq, int4, mxfp4)", q);
  set_all(sc, p->id, put_quantization, q);
  return KVSIM_OK;
}

/* The scenario's perf section's GPU keys (perf_given) laid over the GPU's
 * own perf, as parsing lays the section over the GPU it loads. */
static void keep_perf_overrides(const kvsim_scenario_t *sc, kvsim_gpu_perf_t *to) {
  const kvsim_gpu_perf_t *from = &sc->gpu.perf;
  for (int i = 0; kvsim__perf_gpu_keys[i]; i++) {
    const char *k = kvsim__perf_gpu_keys[i];
    if (!(sc->perf_given >> i & 1u))
      continue;
    if (!strcmp(k, "kernels"))
      snprintf(to->kernels, sizeof to->kernels, "%s", from->kernels);
    else if (!strcmp(k, "collectives"))
      snprintf(to->collectives, sizeof to->collectives, "%s", from->collectives);
    else if (!strcmp(k, "status"))
      to->status = from->status;
    else if (!strcmp(k, "source"))
      snprintf(to->source, sizeof to->source, "%s", from->source);
    else if (!strcmp(k, "host_us"))
      to->host_us = from->host_us;
    else
      to->host_per_seq_us = from->host_per_seq_us;
  }
}

/* The GPU `g` as loaded, on one scenario: its perf section's keys laid
 * over the GPU's perf, the plan to compute again. */
static void put_gpu(kvsim_scenario_t *sc, const char *gpu, kvsim_gpu_t g) {
  keep_perf_overrides(sc, &g.perf);
  sc->gpu = g;
  sc->parsed_plan.valid = false;
  snprintf(sc->gpu_id, sizeof sc->gpu_id, "%s", gpu);
  mark(sc, KVSIM_PARAM_GPU);
}

/* What parsing the scenario with hardware.gpu set would do, on the typed
 * fields: the GPU loaded (relative to the scenario's folder, as parsed),
 * the perf section's keys laid over its perf (hardware.gpu_memory_gib
 * stays in the plan's parameters), the plan computed again, and a
 * disaggregated deployment's link default following the GPU and its
 * sides (those that did not give their own GPU on it) checked again.
 * Errors leave sc as it was. */
int kvsim_scenario_set_gpu(kvsim_scenario_t *sc, const char *gpu, kvsim_err *err) {
  char where[4200];
  snprintf(where, sizeof where, "%s", sc->path[0] ? sc->path : sc->name);
  kvsim_gpu_t g;
  int rc = kvsim__scenario_load_relative(gpu, sc->base_dir, NULL, &g, err);
  if (rc < 0)
    return kvsim_err_prefix(err, "%s: hardware.gpu", where);
  kvsim_scenario_t fresh;
  if ((rc = kvsim_scenario_copy(sc, &fresh, err)) < 0)
    return rc;
  put_gpu(&fresh, gpu, g);
  if ((rc = kvsim__scenario_check_plan(&fresh, where, err)) == KVSIM_OK && fresh.disagg.enabled) {
    kvsim_scenario_t *side;
    for (int i = 0; (side = kvsim__sides_next(&fresh, KVSIM_PARAM_GPU, &i));)
      put_gpu(side, gpu, g);
    kvsim__disagg_follow_gpu(&fresh);
    rc = kvsim__disagg_check(&fresh, where, err);
  }
  if (rc < 0) {
    kvsim_scenario_fini(&fresh);
    return rc;
  }
  kvsim_scenario_fini(sc);
  *sc = fresh;
  return KVSIM_OK;
}

int kvsim_scenario_set_workload(kvsim_scenario_t *sc, const char *key, double value, kvsim_err *err) {
  char w[4200], path[256];
  snprintf(w, sizeof w, "%s: workload", sc->path[0] ? sc->path : sc->name);
  snprintf(path, sizeof path, "workload.%s", key);
  /* Set on a copy, so that an error leaves sc as it was. */
  kvsim_workload_cfg_t *cfg = NULL;
  int rc = kvsim_workload_cfg_copy(sc->workload, &cfg, err);
  if (rc == KVSIM_OK && (rc = kvsim_workload_set(cfg, key, value, w, err)) == KVSIM_OK) {
    /* The sides hold none: each built side copies the scenario's. */
    kvsim__scenario_mark_key(sc, path);
    kvsim_workload_cfg_free(sc->workload);
    sc->workload = cfg;
    return KVSIM_OK;
  }
  kvsim_workload_cfg_free(cfg);
  return rc;
}
