/* Engine profiles: one line each. The registry also gathers the
 * profiles' own options, so that a scenario checks them without knowing
 * which profile owns which key. */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "kvsim/sched.h"

extern const kvsim_sched_ops_t kvsim__sched_vllm_v1;
extern const kvsim_sched_ops_t kvsim__sched_vllm_v0;
extern const kvsim_sched_ops_t kvsim__sched_static;
extern const kvsim_sched_ops_t kvsim__sched_contiguous;
extern const kvsim_sched_ops_t kvsim__sched_contiguous_pow2;
extern const kvsim_sched_ops_t kvsim__sched_sglang;
extern const kvsim_sched_ops_t kvsim__sched_tgi;
extern const kvsim_sched_ops_t kvsim__sched_hf;

static const kvsim_sched_ops_t *const registry[] = {
    &kvsim__sched_vllm_v1,
    &kvsim__sched_vllm_v0,
    &kvsim__sched_static,
    &kvsim__sched_contiguous,
    &kvsim__sched_contiguous_pow2,
    &kvsim__sched_sglang,
    &kvsim__sched_tgi,
    &kvsim__sched_hf,
};

const kvsim_sched_ops_t *kvsim_sched_find(const char *name) {
  for (size_t i = 0; i < sizeof registry / sizeof *registry; i++)
    if (!strcmp(registry[i]->name, name))
      return registry[i];
  return NULL;
}

void kvsim_sched_names(char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof registry / sizeof *registry && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", registry[i]->name);
}

int kvsim_sched_option_keys(const char **keys, size_t *n, size_t cap) {
  for (size_t i = 0; i < sizeof registry / sizeof *registry; i++) {
    for (const char *const *k = registry[i]->option_keys; k && *k; k++) {
      size_t j = 0;
      while (j < *n && strcmp(keys[j], *k))
        j++;
      if (j < *n)
        continue; /* another profile's key too */
      if (*n + 1 >= cap)
        return KVSIM_EINVAL;
      keys[(*n)++] = *k;
    }
  }
  keys[*n] = NULL;
  return KVSIM_OK;
}

static bool listed(const char *const *keys, const char *k) {
  for (; keys && *keys; keys++)
    if (!strcmp(*keys, k))
      return true;
  return false;
}

const char *kvsim_sched_fraction_key(const kvsim_sched_ops_t *ops) {
  if (ops->fraction_key)
    return ops->fraction_key;
  return listed(ops->ignored_keys, "gpu_memory_utilization") ? NULL : "gpu_memory_utilization";
}

/* A key of the engine object that another profile reads and this one
 * does not: refused (kvsim calc refuses the same flag), not ignored. */
static int foreign_key(const kvsim_sched_ops_t *ops, const char *k, const char *where,
                       kvsim_err *err) {
  if (listed(ops->option_keys, k))
    return KVSIM_OK;
  if (listed(ops->ignored_keys, k))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s: not read by the %s profile (engine.profile)%s%s",
                         where, k, ops->name, ops->fraction_key ? "; its own is engine." : "",
                         ops->fraction_key ? ops->fraction_key : "");
  for (size_t i = 0; i < sizeof registry / sizeof *registry; i++)
    if (listed(registry[i]->option_keys, k))
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s.%s: an option of the %s profile, not of %s (engine.profile)", where,
                           k, registry[i]->name, ops->name);
  return KVSIM_OK;
}

int kvsim_sched_check_key(const kvsim_sched_ops_t *ops, const char *key, const char *where,
                          kvsim_err *err) {
  return foreign_key(ops, key, where, err);
}

int kvsim_sched_parse_opts(const kvsim_sched_ops_t *ops, const struct cJSON *engine,
                           const char *where, kvsim_sched_opts_t *opts, kvsim_err *err) {
  memset(opts, 0, sizeof *opts);
  /* null is "the default", as everywhere: not an option given. */
  for (const cJSON *c = engine ? engine->child : NULL; c; c = c->next) {
    int rc = c->string && !cJSON_IsNull(c) ? foreign_key(ops, c->string, where, err) : KVSIM_OK;
    if (rc < 0)
      return rc;
  }
  for (size_t i = 0; i < sizeof registry / sizeof *registry; i++) {
    const kvsim_sched_ops_t *p = registry[i];
    if (!p->parse_opts)
      continue;
    kvsim_sched_opts_t scratch;
    memset(&scratch, 0, sizeof scratch);
    int rc = p->parse_opts(engine, where, p == ops ? opts : &scratch, err);
    if (rc < 0)
      return rc;
  }
  /* A profile outside the registry (a test's) still parses its own. */
  bool known = false;
  for (size_t i = 0; i < sizeof registry / sizeof *registry; i++)
    known = known || registry[i] == ops;
  int rc = !known && ops->parse_opts ? ops->parse_opts(engine, where, opts, err) : KVSIM_OK;
  if (rc < 0)
    return rc;
  /* Which were given, for print_opts: the keys present and not null. */
  for (const char *const *k = ops->option_keys; engine && k && *k; k++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(engine, *k);
    if (v && !cJSON_IsNull(v))
      kvsim_sched_opts_mark_given(ops, opts, *k);
  }
  return KVSIM_OK;
}

bool kvsim_sched_opts_mark_given(const kvsim_sched_ops_t *ops, kvsim_sched_opts_t *opts,
                                 const char *key) {
  int i = 0;
  for (const char *const *k = ops->option_keys; k && *k; k++, i++)
    if (!strcmp(*k, key)) {
      /* A profile past the mask's bits fails the registry's unit test. */
      if (i >= KVSIM_SCHED_MAX_OPTIONS)
        return false;
      opts->given |= 1u << i;
      return true;
    }
  return false;
}

int kvsim_sched_print_opts(const kvsim_sched_ops_t *ops, const kvsim_sched_opts_t *opts,
                           const kvsim_plan_params_t *p, struct cJSON *engine) {
  return ops->print_opts && opts->given ? ops->print_opts(opts, p, engine) : KVSIM_OK;
}
