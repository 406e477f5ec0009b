/* What the scenario parser knows, shared with the overrides (override.c).
 * Internal to the engine. */
#ifndef KVSIM_ENGINE_SCENARIO_KEYS_H
#define KVSIM_ENGINE_SCENARIO_KEYS_H

#include <cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "kvsim/error.h"

/* The keys a section's parser accepts ("" for the top level), NULL for
 * sections whose keys belong to another room (workload, perf) and are
 * checked when parsed. */
const char *const *kvsim__scenario_keys(const char *section);

/* engine.speculative's keys (vLLM's --speculative-config, kvsim/spec.h,
 * then kvsim's acceptance_rate), in the order summary.json's config prints
 * them; bit i of kvsim_scenario_t.spec_given is key i. NULL-ended. */
extern const char *const kvsim__spec_keys[];

/* The GPU's "perf" keys a scenario's perf section may override
 * (kvsim_gpu_perf_parse); bit i of kvsim_scenario_t.perf_given is key i.
 * NULL-ended. */
extern const char *const kvsim__perf_gpu_keys[];

/* KVSIM_EINVAL naming the first key of `o` that section `self` ("" for the
 * top level) does not take, as "W.key: unknown key" ("W: key" at the top
 * level), with "did you mean `engine.block_size`?" when it is a key (or a
 * near miss of one) of another section. */
int kvsim__scenario_check_keys(const cJSON *o, const char *self, const char *w, kvsim_err *err);

/* kvsim_scenario_from_json with the scenario named `where` in its errors
 * and, when it has no "name", named after the stem of `file` (the file it
 * was read from, or the where it has elsewhere): a caller that names the
 * scenario its own way in errors keeps its name. */
struct kvsim_scenario;
int kvsim__scenario_from_json_as(cJSON *root, const char *where, const char *file,
                                 const char *base_dir, struct kvsim_scenario *sc, kvsim_err *err);

/* What kind of kvsim input file `root` is, by a key only that kind has:
 * "study" (candidates, target_rate), "sweep" (grid) or "scenario" (model,
 * hardware, engine, workload); NULL when none is present. *key names the
 * key that told. So a study passed to `kvsim run` (or a scenario to
 * `kvsim compare`) is named for what it is, not as its first unknown key. */
const char *kvsim__json_file_kind(const cJSON *root, const char **key);

/* The top-level sections, in the order of kvsim_scenario_t's
 * given_sections bits; NULL-ended. Their index, or -1. */
extern const char *const kvsim__scenario_sections[];
int kvsim__scenario_section(const char *name);

/* Given marks (given.c): every key `root` (the scenario's tree) gives,
 * recorded into sc at parse; `key` (a dotted path) given by a typed
 * override; whether registry row id was given. */
void kvsim__scenario_mark_tree(struct kvsim_scenario *sc, const cJSON *root);
void kvsim__scenario_mark_key(struct kvsim_scenario *sc, const char *key);
bool kvsim__scenario_row_given(const struct kvsim_scenario *sc, int id);

/* Parses the "engine" section `o` (named `w` in errors) into sc's plan
 * parameters and scheduler settings (scenario_engine.c); returns whether
 * enable_prefix_caching was given (the profile's default applies
 * otherwise), or a negative code. */
int kvsim__scenario_parse_engine(struct kvsim_scenario *sc, const cJSON *o, const char *w,
                                 kvsim_err *err);

/* Loads the model (m) or GPU (g) `name`: a path relative to base when
 * one is there, else a catalog name or a path as given. */
struct kvsim_model;
struct kvsim_gpu;
int kvsim__scenario_load_relative(const char *name, const char *base, struct kvsim_model *m,
                                  struct kvsim_gpu *g, kvsim_err *err);
/* Computes sc's memory plan (kept as sc->parsed_plan); an error names
 * `where` and the parameter's scenario key. */
int kvsim__scenario_check_plan(struct kvsim_scenario *sc, const char *where, kvsim_err *err);
/* summary.json's config: the typed value of the engine section's shared
 * registry row id (its canonical form), NULL when the row has no typed
 * field there or out of memory (config_engine.c). */
cJSON *kvsim__config_engine_value(const struct kvsim_scenario *sc, int id);
/* Whether sc->parsed_plan is still sc's plan: computed from the model,
 * GPU and plan parameters sc holds now (resolve.c). */
bool kvsim__scenario_plan_holds(const struct kvsim_scenario *sc);

/* The expert-parallel rule (tp >= 1): ep is tp x a number of replicas <=
 * rep. `w` names the hardware section in the error. */
int kvsim__scenario_check_ep(int64_t ep, int64_t tp, int64_t rep, const char *w, kvsim_err *err);

#endif
