/* A disaggregated scenario's two sides, each a typed scenario of its own.
 * A side is the scenario with the side's hardware (gpu,
 * tensor_parallel_size, replicas, router) and engine keys laid over it,
 * read once by the scenario parser when the scenario is parsed, so that
 * every check an aggregated scenario gets, a side gets too. The scenario
 * owns its sides; a typed override reaches each side that did not give
 * its key itself (override.c); kvsim_scenario_disagg_side hands out a copy
 * with the side's checks run again, so that an override that leaves a
 * side invalid is the error parsing the side with it would be. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "engine/disagg.h"
#include "engine/scenario_keys.h"
#include "kvsim/params.h"
#include "kvsim/scenario.h"

#define ROW_WORDS ((KVSIM_PARAM_COUNT + 63) / 64)

typedef struct side {
  kvsim_scenario_t sc;     /* as parsed and overridden; workload NULL: the scenario's is lent */
  /* The rows of the scenario's own keys the side's block gave, null
   * included (a null there is the key's default, not the scenario's):
   * hardware.gpu, .tensor_parallel_size, .router, engine.KEY. */
  uint64_t own[ROW_WORDS];
  int16_t engine[KVSIM_PARAM_COUNT]; /* its engine keys given (not null), in order */
  int nengine;
  int refused;             /* an engine key an override set that its profile refuses; 0: none */
} side_t;

struct kvsim__sides {
  side_t side[2];
};

static const char *side_name(int s) { return s == KVSIM_SIDE_DECODE ? "decode" : "prefill"; }

static bool owns(const side_t *sd, int row) { return sd->own[row / 64] >> (row % 64) & 1u; }

/* Lays the side's keys over a copy of the scenario's tree, its instances
 * the typed count (disagg.h replicas). A side is one instance unless it
 * says otherwise: the scenario's own hardware.replicas describes an
 * aggregated deployment. */
static int overlay(cJSON *root, const cJSON *g, int32_t replicas, kvsim_err *err) {
  cJSON_DeleteItemFromObjectCaseSensitive(root, "disaggregation");
  for (const cJSON *c = g->child; c; c = c->next) {
    char path[160];
    if (!strcmp(c->string, "replicas"))
      continue;
    if (!strcmp(c->string, "engine")) {
      for (const cJSON *k = c->child; k; k = k->next) {
        snprintf(path, sizeof path, "engine.%s", k->string);
        int rc = kvsim_json_set_value(root, path, cJSON_Duplicate(k, 1), err);
        if (rc < 0)
          return rc;
      }
      continue;
    }
    snprintf(path, sizeof path, "hardware.%s", c->string);
    int rc = kvsim_json_set_value(root, path, cJSON_Duplicate(c, 1), err);
    if (rc < 0)
      return rc;
  }
  return kvsim_json_set_value(root, "hardware.replicas", cJSON_CreateNumber(replicas), err);
}

/* Records that the side's block gave the scenario key SECTION.NAME (null
 * included); an engine key not null also in the order given. */
static void own_key(side_t *sd, const char *section, const cJSON *k) {
  char key[160];
  snprintf(key, sizeof key, "%s.%s", section, k->string);
  const kvsim_param_t *p = kvsim_param_by_key(key);
  if (!p)
    return;
  sd->own[p->id / 64] |= UINT64_C(1) << (p->id % 64);
  if (!strcmp(section, "engine") && !cJSON_IsNull(k) && sd->nengine < KVSIM_PARAM_COUNT)
    sd->engine[sd->nengine++] = (int16_t)p->id;
}

/* What the side's block `g` (parsed, so every key known) gave: its
 * hardware keys and its engine object's keys. */
static void record_own(side_t *sd, const cJSON *g) {
  for (const cJSON *c = g->child; c; c = c->next) {
    if (strcmp(c->string, "engine")) {
      own_key(sd, "hardware", c);
      continue;
    }
    for (const cJSON *k = c->child; k; k = k->next)
      own_key(sd, "engine", k);
  }
}

/* What the hand-off does not model yet, refused rather than run wrong. */
static const char *unmodelled(const kvsim_scenario_t *s) {
  if (!s->sched_ops->defaults.kv_connector)
    return "its engine profile has no KV connector (vllm-v1 and sglang do)";
  if (s->plan.ep > 1)
    return "expert parallelism inside a side is not modelled yet";
  if (s->sched.num_spec_tokens > 0 || s->plan.spec.method)
    return "speculative decoding inside a side is not modelled yet";
  if (s->offload.cpu_gib > 0)
    return "a CPU offloading tier beside the transfer connector is not modelled";
  if (s->workload && kvsim_workload_lora_adapters(s->workload) > 0)
    return "requests with LoRA adapters (workload.synthetic.lora) are not modelled in a "
           "disaggregated deployment yet";
  return NULL;
}

/* The checks parsing the side makes that an override can change, in the
 * parser's order (`w` names the side): its instances' range and the
 * expert-parallel rule (hardware), an engine key its profile refuses
 * (engine), the memory plan, then what a side does not model. */
static int check(kvsim_scenario_t *out, const side_t *sd, int32_t n, const char *w,
                 kvsim_err *err) {
  char hw[4400], name[4500];
  snprintf(hw, sizeof hw, "%s: hardware", w);
  snprintf(name, sizeof name, "%s.replicas", hw);
  int rc = kvsim_param_check_int(KVSIM_PARAM_REPLICAS, n, name, err);
  if (rc < 0 || (rc = kvsim__scenario_check_ep(out->plan.ep > 1 ? out->plan.ep : 1, out->plan.tp, n,
                                               hw, err)) < 0)
    return rc;
  out->replicas = n;
  if (sd->refused) {
    snprintf(name, sizeof name, "%s: engine", w);
    rc = kvsim_sched_check_key(out->sched_ops, kvsim_param_leaf(kvsim_param_get(sd->refused)), name, err);
    if (rc < 0)
      return rc;
  }
  if (!kvsim__scenario_plan_holds(out) && (rc = kvsim__scenario_check_plan(out, w, err)) < 0)
    return rc;
  const char *why = unmodelled(out);
  return why ? kvsim_err_set(err, KVSIM_EINVAL, "%s: profile %s: %s", w, out->profile, why) : KVSIM_OK;
}

static int build(const kvsim_scenario_t *sc, int s, const char *where, kvsim_scenario_t *out,
                 kvsim_err *err) {
  memset(out, 0, sizeof *out);
  if (!sc->disagg.enabled || !sc->sides)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: no disaggregation block", sc->name);
  const side_t *sd = &sc->sides->side[s];
  int rc = kvsim_scenario_copy(&sd->sc, out, err);
  if (rc == KVSIM_OK && sc->workload && kvsim_workload_cfg_copy(sc->workload, &out->workload, err) < 0)
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory copying the scenario", sc->name);
  char w[4300];
  snprintf(w, sizeof w, "%s: disaggregation.%s (as a scenario)", where, side_name(s));
  snprintf(out->path, sizeof out->path, "%s", sc->path);
  if (rc == KVSIM_OK)
    rc = check(out, sd, sc->disagg.replicas[s], w, err);
  if (rc < 0)
    kvsim_scenario_fini(out);
  return rc;
}

int kvsim_scenario_disagg_side(const kvsim_scenario_t *sc, kvsim_disagg_side side,
                               kvsim_scenario_t *out, kvsim_err *err) {
  return build(sc, side == KVSIM_SIDE_DECODE, sc->path[0] ? sc->path : sc->name, out, err);
}

/* One side read from root: the side's keys over a copy of the tree,
 * through the parser, named "<where>: disaggregation.SIDE (as a
 * scenario)". */
static int parse_side(kvsim_scenario_t *sc, int s, const cJSON *root, const char *where,
                      kvsim_err *err) {
  side_t *sd = &sc->sides->side[s];
  const cJSON *g = cJSON_GetObjectItemCaseSensitive(
      cJSON_GetObjectItemCaseSensitive(root, "disaggregation"), side_name(s));
  cJSON *tree = cJSON_Duplicate(root, 1);
  if (!tree)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory copying the scenario", sc->name);
  int rc = overlay(tree, g, sc->disagg.replicas[s], err);
  if (rc < 0) {
    cJSON_Delete(tree);
    return kvsim_err_prefix(err, "%s: disaggregation.%s", where, side_name(s));
  }
  char w[4300];
  snprintf(w, sizeof w, "%s: disaggregation.%s (as a scenario)", where, side_name(s));
  if ((rc = kvsim_scenario_from_json(tree, w, sc->base_dir, &sd->sc, err)) < 0)
    return rc;
  /* The workload is the scenario's, lent to each side built. */
  kvsim_workload_cfg_free(sd->sc.workload);
  sd->sc.workload = NULL;
  record_own(sd, g);
  return KVSIM_OK;
}

int kvsim__disagg_check_keys(const kvsim_scenario_t *sc, const char *where, kvsim_err *err) {
  if (kvsim__scenario_row_given(sc, KVSIM_PARAM_REPLICAS))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: hardware.replicas: a disaggregated deployment counts instances per "
                         "side (disaggregation.prefill.replicas, disaggregation.decode.replicas)",
                         where);
  if (sc->admission.max_queue_length || sc->admission.max_wait_s > 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: admission.%s is not applied to a disaggregated deployment yet", where,
                         sc->admission.max_queue_length ? "max_queue_length" : "max_wait_s");
  return KVSIM_OK;
}

/* Each side parsed, then checked as built, before the next is read: the
 * first side's error is the one reported, as it was read first. */
int kvsim__sides_parse(kvsim_scenario_t *sc, const cJSON *root, const char *where, kvsim_err *err) {
  int rc = kvsim__disagg_check_keys(sc, where, err);
  if (rc < 0)
    return rc;
  if (!(sc->sides = kvsim__calloc(1, sizeof *sc->sides)))
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory for the sides", where);
  for (int s = 0; s < 2; s++) {
    kvsim_scenario_t built;
    if ((rc = parse_side(sc, s, root, where, err)) < 0 || (rc = build(sc, s, where, &built, err)) < 0)
      return rc;
    kvsim_scenario_fini(&built);
  }
  return KVSIM_OK;
}

int kvsim__disagg_check(const kvsim_scenario_t *sc, const char *where, kvsim_err *err) {
  int rc = kvsim__disagg_check_keys(sc, where, err);
  for (int s = 0; s < 2 && rc == KVSIM_OK; s++) {
    kvsim_scenario_t built;
    if ((rc = build(sc, s, where, &built, err)) == KVSIM_OK)
      kvsim_scenario_fini(&built);
  }
  return rc;
}

void kvsim__sides_free(kvsim_scenario_t *sc) {
  for (int s = 0; sc->sides && s < 2; s++)
    kvsim_scenario_fini(&sc->sides->side[s].sc);
  kvsim__free(sc->sides);
  sc->sides = NULL;
}

int kvsim__sides_copy(const kvsim_scenario_t *src, kvsim_scenario_t *dst, kvsim_err *err) {
  dst->sides = NULL;
  if (!src->sides)
    return KVSIM_OK;
  if (!(dst->sides = kvsim__malloc(sizeof *dst->sides)))
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory copying the sides", src->name);
  *dst->sides = *src->sides;
  for (int s = 0; s < 2; s++)
    dst->sides->side[s].sc.description = NULL;
  for (int s = 0; s < 2; s++) {
    const char *d = src->sides->side[s].sc.description;
    if (d && !(dst->sides->side[s].sc.description = kvsim__strdup(d))) {
      kvsim__sides_free(dst);
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory copying the sides", src->name);
    }
  }
  return KVSIM_OK;
}

kvsim_scenario_t *kvsim__sides_next(kvsim_scenario_t *sc, int row, int *i) {
  while (sc->sides && *i < 2) {
    side_t *sd = &sc->sides->side[(*i)++];
    if (!owns(sd, row))
      return &sd->sc;
  }
  return NULL;
}

void kvsim__sides_refuse(kvsim_scenario_t *sc, int side, int row) {
  if (sc->sides && !sc->sides->side[side].refused)
    sc->sides->side[side].refused = row;
}

const kvsim_scenario_t *kvsim__sides_get(const kvsim_scenario_t *sc, int side) {
  return sc->sides ? &sc->sides->side[side].sc : NULL;
}

const int16_t *kvsim__sides_engine_keys(const kvsim_scenario_t *sc, int side, int *n) {
  *n = sc->sides ? sc->sides->side[side].nengine : 0;
  return sc->sides ? sc->sides->side[side].engine : NULL;
}

int kvsim_scenario_gpus_per_replica(const kvsim_scenario_t *sc) {
  if (!sc->disagg.enabled)
    return sc->plan.tp * sc->plan.pp;
  int gpus = 0;
  for (int k = 0; k < 2; k++) {
    kvsim_scenario_t side;
    kvsim_err err = {0};
    if (kvsim_scenario_disagg_side(sc, (kvsim_disagg_side)k, &side, &err) < 0)
      return 0;
    gpus += (k ? sc->disagg.unit_decode : sc->disagg.unit_prefill) * side.plan.tp * side.plan.pp;
    kvsim_scenario_fini(&side);
  }
  return gpus;
}
