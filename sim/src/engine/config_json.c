/* summary.json's "config": the scenario as it ran, printed through the
 * parameter registry (kvsim/params.h). The keys are those the scenario file
 * and --set gave (and the typed overrides made), in the registry's order;
 * a parameter the scenario holds typed is printed from its typed field, so
 * its value is in canonical form ("8k" prints as 8000, version "0.11" as
 * "0.11.0"). Fed back as a scenario, the config reproduces the run
 * (tests/golden/test_config_roundtrip.sh).
 *
 * A profile's own options are printed by the profile from its typed
 * options (kvsim/sched.h print_opts); engine.speculative, engine.dtype,
 * perf's GPU keys and the description from the scenario's own records of
 * them; the workload by its room (kvsim_workload_given_json), which
 * records its own given keys; the disaggregation block from
 * kvsim_disagg_cfg_t and each side's keys from the side's own typed
 * scenario (engine/sides.c: its engine keys in the order given). Which
 * keys were given is the scenario's record (given.c: given_rows,
 * given_sections, perf_order). */
#include <stdio.h>
#include <string.h>

#include "engine/disagg.h"
#include "engine/scenario_keys.h"
#include "kvsim/params.h"
#include "kvsim/scenario.h"
#include "kvsim/workload.h"

static cJSON *num(double v) { return cJSON_CreateNumber(v); }
static cJSON *str(const char *s) { return cJSON_CreateString(s); }

/* What the printer reads: the scenario, and its profile's given options as
 * the profile prints them back from its typed options (sched.h
 * print_opts). */
typedef struct printer {
  const kvsim_scenario_t *sc;
  cJSON *opts;
} printer_t;

/* The typed value of a registry row, or NULL (none, or out of memory). */
static cJSON *typed_value(const printer_t *pr, int id) {
  const kvsim_scenario_t *sc = pr->sc;
  switch (id) {
  case KVSIM_PARAM_SEED:
    return num((double)sc->seed);
  case KVSIM_PARAM_MODEL:
    return sc->model_id[0] ? str(sc->model_id) : NULL;
  case KVSIM_PARAM_GPU:
    return sc->gpu_id[0] ? str(sc->gpu_id) : NULL;
  case KVSIM_PARAM_TENSOR_PARALLEL_SIZE:
    return num(sc->plan.tp);
  case KVSIM_PARAM_PIPELINE_PARALLEL_SIZE:
    return num(sc->plan.pp);
  case KVSIM_PARAM_REPLICAS:
    return num(sc->replicas);
  case KVSIM_PARAM_ROUTER:
    return str(kvsim_router_name(sc->router));
  case KVSIM_PARAM_ROUTER_IMBALANCE:
    return num((double)sc->router_imbalance);
  case KVSIM_PARAM_EXPERT_PARALLEL_SIZE:
    return num(sc->plan.ep > 1 ? sc->plan.ep : 1);
  case KVSIM_PARAM_TTFT_P99_S:
    return num(sc->slo_ttft_p99_s);
  case KVSIM_PARAM_TPOT_P99_S:
    return num(sc->slo_tpot_p99_s);
  case KVSIM_PARAM_E2E_P99_S:
    return num(sc->slo_e2e_p99_s);
  case KVSIM_PARAM_SAMPLE_INTERVAL_S:
    return num(sc->sample_interval_s);
  case KVSIM_PARAM_MAX_TIME_S:
    return num(sc->max_time_s);
  case KVSIM_PARAM_MAX_PROMPT_TOKENS:
    return num((double)sc->admission.max_prompt_tokens);
  case KVSIM_PARAM_MAX_OUTPUT_TOKENS:
    return num((double)sc->admission.max_output_tokens);
  case KVSIM_PARAM_MAX_QUEUE_LENGTH:
    return num((double)sc->admission.max_queue_length);
  case KVSIM_PARAM_MAX_WAIT_S:
    return num(sc->admission.max_wait_s);
  case KVSIM_PARAM_STEP_TIME_SCALE:
    return num(sc->step_time_scale);
  case KVSIM_PARAM_PREFILL_TIME_SCALE:
    return num(sc->prefill_time_scale);
  case KVSIM_PARAM_DISAGG_FLOW:
    return str(kvsim_disagg_flow_name(sc->disagg.flow));
  case KVSIM_PARAM_DISAGG_TRANSFER:
    return sc->disagg.unit == KVSIM_DISAGG_UNIT_PROFILE
               ? NULL
               : str(kvsim_disagg_unit_name(sc->disagg.unit));
  case KVSIM_PARAM_DISAGG_LINK_KIND:
    return str(kvsim_xfer_link_name(sc->disagg.link));
  case KVSIM_PARAM_DISAGG_LINK_BANDWIDTH_GBPS:
    return num(sc->disagg.link_GBps);
  case KVSIM_PARAM_DISAGG_LINK_LATENCY_US:
    /* Seconds back to us is off by an ulp (15 -> 14.999999999999998);
     * cJSON prints the shortest form that reads back within its epsilon
     * (cJSON.c print_number), which is the value given: checked for
     * 0.1 .. 9999.9 us in steps of 0.1. */
    return num(sc->disagg.link_latency_s * 1e6);
  case KVSIM_PARAM_DISAGG_PREFILL_REPLICAS:
    return num(sc->disagg.replicas[KVSIM_SIDE_PREFILL]);
  case KVSIM_PARAM_DISAGG_DECODE_REPLICAS:
    return num(sc->disagg.replicas[KVSIM_SIDE_DECODE]);
  default:
    break;
  }
  const kvsim_param_t *p = kvsim_param_get(id);
  if (strncmp(p->key, "engine.", 7))
    return NULL;
  /* A profile's own option is the profile's to print (sched/). */
  if (p->flags & KVSIM_PARAM_PROFILE_OPTION) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pr->opts, kvsim_param_leaf(p));
    return v ? cJSON_Duplicate(v, 1) : NULL;
  }
  return kvsim__config_engine_value(sc, id);
}

/* The value of a key outside the registry the scenario holds typed: the
 * workload as its room prints it given, the GPU's perf keys of the perf
 * section as the GPU holds them overridden; NULL otherwise. */
static cJSON *unregistered_value(const printer_t *pr, const char *key) {
  const kvsim_gpu_perf_t *g = &pr->sc->gpu.perf;
  if (strncmp(key, "perf.", 5))
    return NULL;
  for (int i = 0; kvsim__perf_gpu_keys[i]; i++) {
    const char *k = kvsim__perf_gpu_keys[i];
    if (strcmp(key + 5, k) || !(pr->sc->perf_given >> i & 1u))
      continue;
    if (!strcmp(k, "kernels"))
      return str(g->kernels);
    if (!strcmp(k, "collectives"))
      return str(g->collectives);
    if (!strcmp(k, "status"))
      return str(kvsim_cal_status_name(g->status));
    if (!strcmp(k, "source"))
      return str(g->source);
    return num(!strcmp(k, "host_us") ? g->host_us : g->host_per_seq_us);
  }
  return NULL;
}

/* The next part of `key` after the object path `prefix` ("" at the top):
 * "engine" for ("", "engine.block_size"), "block_size" for ("engine",
 * ...); false when key is not below prefix. */
static bool child_of(const char *prefix, const char *key, char *part, size_t cap) {
  size_t n = strlen(prefix);
  if (n) {
    if (strncmp(key, prefix, n) || key[n] != '.')
      return false;
    key += n + 1;
  }
  const char *dot = strchr(key, '.');
  size_t l = dot ? (size_t)(dot - key) : strlen(key);
  if (l >= cap)
    return false;
  memcpy(part, key, l);
  part[l] = '\0';
  return true;
}

static int print_rows(const printer_t *pr, const char *path, cJSON *out);
static cJSON *side_value(const printer_t *pr, int side);

/* A given row's value from its typed field: hardware.gpu_memory_gib as
 * given, the link's rows below it, a side from its own scenario, an object
 * row given without keys (engine.speculative {}) empty. NULL: out of
 * memory. */
static cJSON *row_value(const printer_t *pr, const kvsim_param_t *p) {
  if (p->id == KVSIM_PARAM_GPU_MEMORY_GIB)
    return num(pr->sc->gpu_memory_gib);
  if (p->id == KVSIM_PARAM_DISAGG_PREFILL || p->id == KVSIM_PARAM_DISAGG_DECODE)
    return side_value(pr, p->id == KVSIM_PARAM_DISAGG_DECODE);
  cJSON *v = p->id == KVSIM_PARAM_DISAGG_LINK ? NULL : typed_value(pr, p->id);
  if (v || p->type != KVSIM_PARAM_OBJECT)
    return v;
  if ((v = cJSON_CreateObject()) && p->id == KVSIM_PARAM_DISAGG_LINK && print_rows(pr, p->key, v) < 0) {
    cJSON_Delete(v);
    v = NULL;
  }
  return v;
}

/* A side's engine keys given, in the order given, from the side's
 * scenario as its own printer prints them (its profile's options too). */
static cJSON *side_engine(const kvsim_scenario_t *side, const int16_t *ids, int n) {
  printer_t sp = {side, cJSON_CreateObject()};
  cJSON *o = cJSON_CreateObject();
  if (!o || !sp.opts || kvsim_sched_print_opts(side->sched_ops, &side->sched.opts, &side->plan, sp.opts) < 0) {
    cJSON_Delete(o);
    o = NULL;
  }
  for (int i = 0; o && i < n; i++) {
    const kvsim_param_t *p = kvsim_param_get(ids[i]);
    cJSON *v = row_value(&sp, p);
    if (!v) {
      cJSON_Delete(o);
      o = NULL;
    } else {
      cJSON_AddItemToObject(o, kvsim_param_leaf(p), v);
    }
  }
  cJSON_Delete(sp.opts);
  return o;
}

/* disaggregation.SIDE: the block's rows the given marks name, in the
 * registry's order, from the side's typed scenario (engine/sides.c) as
 * the scenario's own keys (disaggregation.SIDE.gpu is the side's
 * hardware.gpu), its instances from disagg.replicas. NULL: out of memory. */
static cJSON *side_value(const printer_t *pr, int side) {
  const kvsim_scenario_t *s = kvsim__sides_get(pr->sc, side);
  const kvsim_param_t *obj = kvsim_param_get(side ? KVSIM_PARAM_DISAGG_DECODE : KVSIM_PARAM_DISAGG_PREFILL);
  const size_t len = strlen(obj->key);
  const printer_t sp = {s, NULL}; /* the side's hardware keys need no options */
  int n;
  const int16_t *ids = kvsim__sides_engine_keys(pr->sc, side, &n);
  cJSON *o = cJSON_CreateObject();
  for (int id = obj->id + 1; o && s && id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    if (strncmp(p->key, obj->key, len) || p->key[len] != '.')
      break;
    if (!kvsim__scenario_row_given(pr->sc, id))
      continue;
    const char *leaf = kvsim_param_leaf(p);
    char key[96];
    snprintf(key, sizeof key, "hardware.%s", leaf);
    const kvsim_param_t *own = kvsim_param_by_key(key);
    cJSON *v = !strcmp(leaf, "engine")     ? side_engine(s, ids, n)
               : !strcmp(leaf, "replicas") ? typed_value(pr, id)
               : own                       ? typed_value(&sp, own->id)
                                           : NULL;
    if (!v) {
      cJSON_Delete(o);
      return NULL;
    }
    cJSON_AddItemToObject(o, leaf, v);
  }
  return o;
}

/* The perf section's GPU keys, in the order given, after its rows. */
static int print_perf_keys(const printer_t *pr, cJSON *out) {
  for (int i = 0; i < pr->sc->nperf_order; i++) {
    const char *k = kvsim__perf_gpu_keys[pr->sc->perf_order[i]];
    char key[64];
    snprintf(key, sizeof key, "perf.%s", k);
    cJSON *v = unregistered_value(pr, key);
    if (!v)
      return KVSIM_ENOMEM;
    cJSON_AddItemToObject(out, k, v);
  }
  return KVSIM_OK;
}

static int print_section(const printer_t *pr, const char *name, cJSON *out);

/* The rows given directly below the object `path` ("" at the top, a
 * section, or an object row), in the registry's order; a section below
 * the top printed in its turn when given. */
static int print_rows(const printer_t *pr, const char *path, cJSON *out) {
  for (int id = 1; id < KVSIM_PARAM_COUNT; id++) {
    const kvsim_param_t *p = kvsim_param_get(id);
    char part[128];
    if (!child_of(path, p->key, part, sizeof part) || cJSON_GetObjectItemCaseSensitive(out, part))
      continue;
    /* Below the top, only the object's own rows (not its objects' rows). */
    if (path[0] && strlen(p->key) != strlen(path) + 1 + strlen(part))
      continue;
    cJSON *item = NULL;
    int s = path[0] ? -1 : kvsim__scenario_section(part);
    if (s >= 0) {
      if (!(pr->sc->given_sections >> s & 1u))
        continue;
      if (print_section(pr, part, out) < 0)
        return KVSIM_ENOMEM;
      continue;
    }
    if (!kvsim__scenario_row_given(pr->sc, id))
      continue;
    if (!(item = row_value(pr, p)))
      return KVSIM_ENOMEM;
    cJSON_AddItemToObject(out, part, item);
  }
  return KVSIM_OK;
}

/* A section given: the workload by its room, the others row by row. */
static int print_section(const printer_t *pr, const char *name, cJSON *out) {
  cJSON *item = NULL;
  if (!strcmp(name, "workload")) {
    item = pr->sc->workload ? kvsim_workload_given_json(pr->sc->workload) : cJSON_CreateObject();
  } else if ((item = cJSON_CreateObject())) {
    int rc = print_rows(pr, name, item);
    if (rc == KVSIM_OK && !strcmp(name, "perf"))
      rc = print_perf_keys(pr, item);
    if (rc < 0) {
      cJSON_Delete(item);
      item = NULL;
    }
  }
  if (!item)
    return KVSIM_ENOMEM;
  cJSON_AddItemToObject(out, name, item);
  return KVSIM_OK;
}

cJSON *kvsim_scenario_config_json(const kvsim_scenario_t *sc) {
  printer_t pr = {sc, cJSON_CreateObject()};
  cJSON *out = cJSON_CreateObject();
  if (!out || !pr.opts ||
      (sc->sched_ops &&
       kvsim_sched_print_opts(sc->sched_ops, &sc->sched.opts, &sc->plan, pr.opts) < 0)) {
    cJSON_Delete(out);
    cJSON_Delete(pr.opts);
    return NULL;
  }
  /* Name and seed always (the name a file's stem may have given; the seed
   * the default), the description when there is one. */
  if (!cJSON_AddStringToObject(out, "name", sc->name) ||
      (sc->description && !cJSON_AddStringToObject(out, "description", sc->description)) ||
      !cJSON_AddNumberToObject(out, "seed", (double)sc->seed) || print_rows(&pr, "", out) < 0) {
    cJSON_Delete(out);
    out = NULL;
  }
  cJSON_Delete(pr.opts);
  return out;
}
