/* The scenario's "workload" object: strict parsing (unknown keys are errors
 * with the key path and a did-you-mean), defaults, resolved JSON. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "kvsim/params.h"
#include "workload/wl.h"

#define WHERE_MAX 512

static void path_join(char *out, size_t cap, const char *base, const char *where_key) {
  snprintf(out, cap, "%s%s%s", base, *base ? "." : "", where_key);
}

/* The workload's keys take their bounds from the parameter registry
 * (kvsim/params.h, the rows KVSIM_PARAM_WL_*) and keep this room's wording:
 * "WHERE.KEY: bad value V (expected ...)". An error carries the row's id. */

/* An integer of row id, in [min, max]. */
static int req_int(const cJSON *o, const char *key, int id, int64_t *out, bool required,
                   const char *where, kvsim_err *err) {
  const kvsim_param_t *p = kvsim_param_get(id);
  const int64_t lo = (int64_t)p->min, hi = (int64_t)p->max;
  char name[WHERE_MAX + 64];
  snprintf(name, sizeof name, "%s.%s", where, key);
  /* Past what a JSON number holds exactly the getter would name its own
   * range, [-2^53 + 1, 2^53 - 1]; the key takes [lo, 2^53 - 1]. */
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (cJSON_IsNumber(v) && !(fabs(v->valuedouble) <= (double)KVSIM__JSON_INT_MAX))
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "bad value %g (expected %lld..%lld)",
                               v->valuedouble, (long long)lo, (long long)KVSIM__JSON_INT_MAX);
  int rc = kvsim__json_int(o, key, out, where, err);
  if (rc < 0)
    return rc;
  if (rc == 0) {
    if (required)
      return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "missing");
    return 0;
  }
  if (*out < lo)
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "bad value %lld (expected >= %lld)",
                               (long long)*out, (long long)lo);
  if (*out > hi)
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "bad value %lld (expected <= %lld)",
                               (long long)*out, (long long)hi);
  return 1;
}

/* A number of row id within [lo, max] ((lo, max] for a MIN_OPEN row): lo is
 * the row's min but where one process takes a wider range of the same key. */
static int req_num_from(const cJSON *o, const char *key, int id, double lo, double *out,
                        bool required, const char *where, kvsim_err *err) {
  const kvsim_param_t *p = kvsim_param_get(id);
  const bool strict = p->flags & KVSIM_PARAM_MIN_OPEN;
  const double hi = p->max;
  char name[WHERE_MAX + 64];
  snprintf(name, sizeof name, "%s.%s", where, key);
  int rc = kvsim__json_num(o, key, out, where, err);
  if (rc < 0)
    return rc;
  if (rc == 0) {
    if (required)
      return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "missing");
    return 0;
  }
  if (strict ? !(*out > lo && *out <= hi) : !(*out >= lo && *out <= hi)) {
    if (strict)
      return kvsim_err_set_param(err, KVSIM_EINVAL, id, name,
                                 "bad value %g (expected > %g and <= %g)", *out, lo, hi);
    return kvsim_err_set_param(err, KVSIM_EINVAL, id, name, "bad value %g (expected %g..%g)",
                               *out, lo, hi);
  }
  return 1;
}

/* A number of row id within the row's bounds. */
static int req_num(const cJSON *o, const char *key, int id, double *out, bool required,
                   const char *where, kvsim_err *err) {
  return req_num_from(o, key, id, kvsim_param_get(id)->min, out, required, where, err);
}

int kvsim__wl_req_int(const cJSON *o, const char *key, int id, int64_t *out, const char *where,
                      kvsim_err *err) {
  return req_int(o, key, id, out, true, where, err);
}

int kvsim__wl_req_num_from(const cJSON *o, const char *key, int id, double lo, double *out,
                           const char *where, kvsim_err *err) {
  return req_num_from(o, key, id, lo, out, true, where, err);
}

static void resolve_path(char *out, size_t cap, const char *base_dir, const char *p) {
  if (p[0] == '/' || !base_dir || !*base_dir)
    snprintf(out, cap, "%s", p);
  else
    snprintf(out, cap, "%s/%s", base_dir, p);
}

static const cJSON *get(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return v && !cJSON_IsNull(v) ? v : NULL;
}

/* ---- arrival ---------------------------------------------------------------- */

static int parse_arrival(const cJSON *a, const char *where, kvsim__synth_cfg_t *c,
                         kvsim_err *err) {
  static const char *const keys[] = {"process", "rate", "cv", "clients", "think_s",
                                     "burst_rate", "burst_s", "period_s", "amplitude",
                                     "phase_s", NULL};
  int rc = kvsim__json_only_keys(a, keys, where, err);
  if (rc < 0)
    return rc;
  char proc[32] = "";
  if ((rc = kvsim__json_str(a, "process", proc, sizeof proc, where, err)) < 0)
    return rc;
  if (rc == 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.process: missing (poisson, gamma, constant, closed_loop, bursts or "
                         "diurnal)",
                         where);
  const char *allowed;
  if (!strcmp(proc, "poisson")) {
    c->arrival = KVSIM__ARR_POISSON;
    allowed = "rate";
    rc = req_num(a, "rate", KVSIM_PARAM_WL_ARRIVAL_RATE, &c->rate, true, where, err);
  } else if (!strcmp(proc, "gamma")) {
    c->arrival = KVSIM__ARR_GAMMA;
    allowed = "rate cv";
    if ((rc = req_num(a, "rate", KVSIM_PARAM_WL_ARRIVAL_RATE, &c->rate, true, where, err)) >= 0)
      rc = req_num(a, "cv", KVSIM_PARAM_WL_ARRIVAL_CV, &c->cv, true, where, err);
  } else if (!strcmp(proc, "constant")) {
    c->arrival = KVSIM__ARR_CONSTANT;
    allowed = "rate";
    rc = req_num(a, "rate", KVSIM_PARAM_WL_ARRIVAL_RATE, &c->rate, true, where, err);
  } else if (!strcmp(proc, "closed_loop")) {
    c->arrival = KVSIM__ARR_CLOSED;
    allowed = "clients think_s";
    if ((rc = req_int(a, "clients", KVSIM_PARAM_WL_ARRIVAL_CLIENTS, &c->clients, true, where,
                      err)) >= 0)
      rc = req_num(a, "think_s", KVSIM_PARAM_WL_ARRIVAL_THINK_S, &c->think_s, false, where, err);
  } else if (!strcmp(proc, "bursts")) {
    c->arrival = KVSIM__ARR_BURSTS;
    allowed = "rate burst_rate burst_s period_s";
    /* The rate between bursts may be 0 (the registry's row says so). */
    if ((rc = req_num_from(a, "rate", KVSIM_PARAM_WL_ARRIVAL_RATE, 0, &c->rate, true, where,
                           err)) >= 0 &&
        (rc = req_num(a, "burst_rate", KVSIM_PARAM_WL_ARRIVAL_BURST_RATE, &c->burst_rate, true,
                      where, err)) >= 0 &&
        (rc = req_num(a, "burst_s", KVSIM_PARAM_WL_ARRIVAL_BURST_S, &c->burst_s, true, where,
                      err)) >= 0)
      rc = req_num(a, "period_s", KVSIM_PARAM_WL_ARRIVAL_PERIOD_S, &c->period_s, true, where, err);
    if (rc >= 0 && c->burst_s > c->period_s)
      rc = kvsim_err_set(err, KVSIM_EINVAL, "%s.burst_s: bad value %g (longer than period_s %g)",
                         where, c->burst_s, c->period_s);
  } else if (!strcmp(proc, "diurnal")) {
    c->arrival = KVSIM__ARR_DIURNAL;
    allowed = "rate amplitude period_s phase_s";
    c->period_s = 86400;
    if ((rc = req_num(a, "rate", KVSIM_PARAM_WL_ARRIVAL_RATE, &c->rate, true, where, err)) >= 0 &&
        (rc = req_num(a, "amplitude", KVSIM_PARAM_WL_ARRIVAL_AMPLITUDE, &c->amplitude, true,
                      where, err)) >= 0 &&
        (rc = req_num(a, "period_s", KVSIM_PARAM_WL_ARRIVAL_PERIOD_S, &c->period_s, false, where,
                      err)) >= 0)
      rc = req_num(a, "phase_s", KVSIM_PARAM_WL_ARRIVAL_PHASE_S, &c->phase_s, false, where, err);
  } else {
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.process: bad value '%s' (expected poisson, gamma, constant, "
                         "closed_loop, bursts or diurnal)",
                         where, proc);
  }
  if (rc < 0)
    return rc;
  for (const cJSON *k = a->child; k; k = k->next) {
    if (!strcmp(k->string, "process"))
      continue;
    const char *p = strstr(allowed, k->string);
    size_t l = strlen(k->string);
    if (!p || (p[l] != ' ' && p[l] != '\0') || (p != allowed && p[-1] != ' '))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s: not a parameter of process '%s' (takes %s)",
                           where, k->string, proc, allowed);
  }
  return 0;
}

/* ---- synthetic ----------------------------------------------------------------- */

/* Lengths: from a file of (prompt, output) pairs, or two distributions. */
static int parse_lengths(const cJSON *s, const char *base_dir, const char *where, kvsim__synth_cfg_t *c,
                         kvsim_err *err) {
  const cJSON *lf = get(s, "lengths_from");
  const cJSON *pt = get(s, "prompt_tokens"), *ot = get(s, "output_tokens");
  char w[WHERE_MAX];
  int rc;
  if (!lf) {
    if (!pt || !ot)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s: missing (or give lengths_from)", where,
                           pt ? "output_tokens" : "prompt_tokens");
    path_join(w, sizeof w, where, "prompt_tokens");
    if ((rc = kvsim__dist_parse(pt, w, &c->prompt, err)) < 0)
      return rc;
    path_join(w, sizeof w, where, "output_tokens");
    return kvsim__dist_parse(ot, w, &c->output, err);
  }
  if (pt || ot)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.lengths_from: give either lengths_from or prompt_tokens and "
                         "output_tokens, not both",
                         where);
  path_join(w, sizeof w, where, "lengths_from");
  char file[KVSIM__WL_PATH_MAX] = "";
  if (cJSON_IsString(lf)) {
    snprintf(file, sizeof file, "%s", lf->valuestring);
  } else {
    static const char *const lkeys[] = {"file", NULL};
    if ((rc = kvsim__json_only_keys(lf, lkeys, w, err)) < 0 ||
        (rc = kvsim__json_str(lf, "file", file, sizeof file, w, err)) < 0)
      return rc;
    if (rc == 0)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.file: missing", w);
  }
  resolve_path(c->lengths_path, sizeof c->lengths_path, base_dir, file);
  c->lengths_file = true;
  if ((rc = kvsim__load_lengths(c->lengths_path, &c->lengths, &c->num_lengths, err)) < 0)
    return kvsim_err_prefix(err, "%s.file", w);
  return 0;
}

/* A shared system prompt (w = its path). */
static int parse_prefix(const cJSON *pf, const char *w, kvsim__synth_cfg_t *c, kvsim_err *err) {
  static const char *const pkeys[] = {"shared_tokens", "groups", "popularity", "zipf_s",
                                      "fraction", NULL};
  int rc;
  if ((rc = kvsim__json_only_keys(pf, pkeys, w, err)) < 0)
    return rc;
  c->prefix = true;
  c->groups = 1;
  c->prefix_fraction = 1;
  if ((rc = req_int(pf, "shared_tokens", KVSIM_PARAM_WL_PREFIX_SHARED_TOKENS, &c->shared_tokens,
                    true, w, err)) < 0 ||
      (rc = req_int(pf, "groups", KVSIM_PARAM_WL_PREFIX_GROUPS, &c->groups, false, w, err)) < 0 ||
      (rc = req_num(pf, "fraction", KVSIM_PARAM_WL_PREFIX_FRACTION, &c->prefix_fraction, false, w,
                    err)) < 0)
    return rc;
  return kvsim__pick_parse(pf, w, c->groups, &c->group_pick, err);
}

/* Few-shot templates (w = its path). */
static int parse_few_shot(const cJSON *fs, const char *w, kvsim__synth_cfg_t *c, kvsim_err *err) {
  static const char *const fkeys[] = {"templates", "tokens", "popularity", "zipf_s",
                                      "fraction", NULL};
  int rc;
  if ((rc = kvsim__json_only_keys(fs, fkeys, w, err)) < 0)
    return rc;
  c->few_shot = true;
  c->few_shot_fraction = 1;
  if ((rc = req_int(fs, "templates", KVSIM_PARAM_WL_FEW_SHOT_TEMPLATES, &c->templates, true, w,
                    err)) < 0 ||
      (rc = req_num(fs, "fraction", KVSIM_PARAM_WL_FEW_SHOT_FRACTION, &c->few_shot_fraction,
                    false, w, err)) < 0)
    return rc;
  const cJSON *tt = get(fs, "tokens");
  char w2[WHERE_MAX];
  path_join(w2, sizeof w2, w, "tokens");
  if (!tt)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing", w2);
  if ((rc = kvsim__dist_parse(tt, w2, &c->template_tokens, err)) < 0)
    return rc;
  return kvsim__pick_parse(fs, w, c->templates, &c->template_pick, err);
}

/* Multi-turn sessions (w = its path). */
static int parse_sessions(const cJSON *se, const char *w, kvsim__synth_cfg_t *c, kvsim_err *err) {
  static const char *const skeys[] = {"turns", "think_s", "user_tokens", "max_context", NULL};
  int rc;
  if ((rc = kvsim__json_only_keys(se, skeys, w, err)) < 0)
    return rc;
  c->sessions = true;
  char w2[WHERE_MAX];
  const cJSON *tu = get(se, "turns");
  path_join(w2, sizeof w2, w, "turns");
  if (!tu)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing", w2);
  if ((rc = kvsim__dist_parse(tu, w2, &c->turns, err)) < 0)
    return rc;
  if ((rc = req_num(se, "think_s", KVSIM_PARAM_WL_SESSIONS_THINK_S, &c->session_think_s, false, w,
                    err)) < 0 ||
      (rc = req_int(se, "max_context", KVSIM_PARAM_WL_SESSIONS_MAX_CONTEXT, &c->max_context, false,
                    w, err)) < 0)
    return rc;
  const cJSON *ut = get(se, "user_tokens");
  if (!ut)
    return 0;
  path_join(w2, sizeof w2, w, "user_tokens");
  if ((rc = kvsim__dist_parse(ut, w2, &c->user, err)) < 0)
    return rc;
  c->user_set = true;
  return 0;
}

/* Tenants, each its own cache salt (w = its path). */
static int parse_tenants(const cJSON *te, const char *w, kvsim__synth_cfg_t *c, kvsim_err *err) {
  static const char *const tkeys[] = {"count", "popularity", "zipf_s", NULL};
  int rc;
  if ((rc = kvsim__json_only_keys(te, tkeys, w, err)) < 0 ||
      (rc = req_int(te, "count", KVSIM_PARAM_WL_TENANTS_COUNT, &c->tenants, true, w, err)) < 0)
    return rc;
  return kvsim__pick_parse(te, w, c->tenants, &c->tenant_pick, err);
}

/* LoRA adapters named by the requests (w = its path): `adapters`
 * distinct adapters picked uniformly or by Zipf popularity, by `fraction`
 * of the requests (default 1; the rest use the base model). */
static int parse_lora(const cJSON *lo, const char *w, kvsim__synth_cfg_t *c, kvsim_err *err) {
  static const char *const lkeys[] = {"adapters", "popularity", "zipf_s", "fraction", NULL};
  int rc;
  c->lora_fraction = 1;
  if ((rc = kvsim__json_only_keys(lo, lkeys, w, err)) < 0 ||
      (rc = req_int(lo, "adapters", KVSIM_PARAM_WL_LORA_ADAPTERS, &c->lora_adapters, true, w,
                    err)) < 0 ||
      (rc = req_num(lo, "fraction", KVSIM_PARAM_WL_LORA_FRACTION, &c->lora_fraction, false, w,
                    err)) < 0)
    return rc;
  return kvsim__pick_parse(lo, w, c->lora_adapters, &c->lora_pick, err);
}

/* Priority levels and their weights (w = its path). */
static int parse_priority(const cJSON *pr, const char *w, kvsim__synth_cfg_t *c, kvsim_err *err) {
  static const char *const rkeys[] = {"levels", "weights", NULL};
  int64_t levels = 0;
  int rc;
  if ((rc = kvsim__json_only_keys(pr, rkeys, w, err)) < 0 ||
      (rc = req_int(pr, "levels", KVSIM_PARAM_WL_PRIORITY_LEVELS, &levels, true, w, err)) < 0)
    return rc;
  c->priority_levels = (int32_t)levels;
  const cJSON *wt = get(pr, "weights");
  for (int i = 0; i < levels; i++)
    c->priority_weights[i] = 1;
  if (wt) {
    if (!cJSON_IsArray(wt) || cJSON_GetArraySize(wt) != levels)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s.weights: bad value (expected an array of %lld numbers)", w,
                           (long long)levels);
    int i = 0;
    double sum = 0;
    for (const cJSON *x = wt->child; x; x = x->next, i++) {
      if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0) || !isfinite(x->valuedouble))
        return kvsim_err_set(err, KVSIM_EINVAL,
                             "%s.weights[%d]: bad value (expected a number >= 0)", w, i);
      c->priority_weights[i] = x->valuedouble;
      sum += x->valuedouble;
    }
    if (!(sum > 0))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.weights: all zero", w);
  }
  c->priority_table = gsl_ran_discrete_preproc((size_t)levels, c->priority_weights);
  if (!c->priority_table)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", w);
  return 0;
}

/* An optional block: parsed by fn when present, at where.key. */
static int parse_block(const cJSON *s, const char *key, const char *where, kvsim__synth_cfg_t *c,
                       int (*fn)(const cJSON *, const char *, kvsim__synth_cfg_t *, kvsim_err *),
                       kvsim_err *err) {
  const cJSON *b = get(s, key);
  if (!b)
    return 0;
  char w[WHERE_MAX];
  path_join(w, sizeof w, where, key);
  return fn(b, w, c, err);
}

static int parse_synth(const cJSON *s, const char *base_dir, const char *where,
                       kvsim__synth_cfg_t *c, kvsim_err *err) {
  static const char *const keys[] = {"requests", "duration_s", "arrival", "prompt_tokens",
                                     "output_tokens", "lengths_from", "prefix", "few_shot",
                                     "sessions", "tenants", "priority", "lora", NULL};
  int rc = kvsim__json_only_keys(s, keys, where, err);
  if (rc < 0)
    return rc;
  char w[WHERE_MAX];
  c->requests = -1;
  c->duration_s = -1;
  if ((rc = req_int(s, "requests", KVSIM_PARAM_WL_REQUESTS, &c->requests, false, where, err)) < 0)
    return rc;
  if ((rc = req_num(s, "duration_s", KVSIM_PARAM_WL_DURATION_S, &c->duration_s, false, where,
                    err)) < 0)
    return rc;
  if (c->requests < 0 && c->duration_s < 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: give requests or duration_s (or both)", where);

  const cJSON *a = get(s, "arrival");
  path_join(w, sizeof w, where, "arrival");
  if (!a)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing", w);
  if ((rc = parse_arrival(a, w, c, err)) < 0 || (rc = parse_lengths(s, base_dir, where, c, err)) < 0 ||
      (rc = parse_block(s, "prefix", where, c, parse_prefix, err)) < 0 ||
      (rc = parse_block(s, "few_shot", where, c, parse_few_shot, err)) < 0 ||
      (rc = parse_block(s, "sessions", where, c, parse_sessions, err)) < 0 ||
      (rc = parse_block(s, "tenants", where, c, parse_tenants, err)) < 0 ||
      (rc = parse_block(s, "priority", where, c, parse_priority, err)) < 0 ||
      (rc = parse_block(s, "lora", where, c, parse_lora, err)) < 0)
    return rc;
  return 0;
}

static void synth_free(kvsim__synth_cfg_t *c) {
  kvsim__dist_fini(&c->prompt);
  kvsim__dist_fini(&c->output);
  kvsim__dist_fini(&c->template_tokens);
  kvsim__dist_fini(&c->turns);
  kvsim__dist_fini(&c->user);
  kvsim__pick_fini(&c->group_pick);
  kvsim__pick_fini(&c->template_pick);
  kvsim__pick_fini(&c->tenant_pick);
  kvsim__pick_fini(&c->lora_pick);
  if (c->priority_table)
    gsl_ran_discrete_free(c->priority_table);
  kvsim__free(c->lengths);
}

/* ---- workload -------------------------------------------------------------------- */

/* A synthetic workload: none of the trace's keys apply. */
static int parse_synthetic(const cJSON *obj, const cJSON *sy, const char *base_dir, const char *where,
                           kvsim_workload_cfg_t *c, kvsim_err *err) {
  static const char *const trace_only[] = {"format", "time_scale", "limit", "skip_bad_rows",
                                           "hash_block_tokens", NULL};
  for (const char *const *k = trace_only; *k; k++)
    if (get(obj, *k))
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s.%s: applies to traces only (synthetic workloads set requests "
                           "and arrival.rate)",
                           where, *k);
  c->synthetic = true;
  char w[WHERE_MAX];
  path_join(w, sizeof w, where, "synthetic");
  return parse_synth(sy, base_dir, w, &c->syn, err);
}

/* Where the trace's format comes from: found by content (a length table
 * only where allowed), or named, and then the file must open. */
static int check_trace_file(kvsim_workload_cfg_t *c, bool autodetect, const char *where, bool trace_key,
                            bool allow_lengths, kvsim_err *err) {
  int rc;
  if (!autodetect) {
    /* Fail early when the file cannot be opened, or is not a file (a pipe
     * would block here, a device never end). */
    FILE *f = NULL;
    if ((rc = kvsim__open_input(c->path, KVSIM_ENOENT, &f, err)) < 0)
      return trace_key ? kvsim_err_prefix(err, "%s.trace", where) : rc;
    fclose(f);
    return 0;
  }
  if ((rc = kvsim__detect_format(c->path, &c->format, err)) < 0)
    return trace_key ? kvsim_err_prefix(err, "%s.trace", where) : rc;
  /* trace stats reads a length table for its lengths (and says what it
   * cannot compute without arrival times); a run cannot. */
  if (kvsim__format_has_arrivals(c->format))
    return 0;
  if (allow_lengths) {
    c->lengths_only = true;
    return 0;
  }
  return kvsim_err_set(err, KVSIM_EINVAL,
                       "%s%s%s has lengths but no arrival times; use it as "
                       "synthetic.lengths_from with an arrival process",
                       trace_key ? where : "", trace_key ? ".trace: " : "", c->path);
}

/* A trace file and its reading options. */
static int parse_trace(const cJSON *obj, const cJSON *tr, const char *base_dir, const char *where,
                       bool trace_key, bool allow_lengths, kvsim_workload_cfg_t *c, kvsim_err *err) {
  if (!cJSON_IsString(tr))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.trace: expected a path (string)", where);
  snprintf(c->given_path, sizeof c->given_path, "%s", tr->valuestring);
  resolve_path(c->path, sizeof c->path, base_dir, tr->valuestring);
  char fmt[32] = "auto";
  int rc;
  if ((rc = kvsim__json_str(obj, "format", fmt, sizeof fmt, where, err)) < 0)
    return rc;
  bool autodetect = !strcmp(fmt, "auto");
  c->format = autodetect ? NULL : kvsim__format_find(fmt);
  if (!autodetect && !c->format) {
    char esc[KVSIM__ESCAPE_MAX];
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.format: bad value '%s' (expected %s)", where,
                         kvsim__escape(fmt, strlen(fmt), esc, sizeof esc), kvsim__format_choices());
  }
  if ((rc = req_num(obj, "time_scale", KVSIM_PARAM_WL_TIME_SCALE, &c->time_scale, false, where,
                    err)) < 0 ||
      (rc = req_int(obj, "limit", KVSIM_PARAM_WL_LIMIT, &c->limit, false, where, err)) < 0 ||
      (rc = kvsim__json_bool(obj, "skip_bad_rows", &c->skip_bad_rows, where, err)) < 0 ||
      (rc = req_int(obj, "hash_block_tokens", KVSIM_PARAM_WL_HASH_BLOCK_TOKENS,
                    &c->hash_block_tokens, false, where, err)) < 0)
    return rc;
  return check_trace_file(c, autodetect, where, trace_key, allow_lengths, err);
}

/* What the config prints as given (wl.h kvsim__wl_given_t), from the
 * parsed object: before workload.rate derives the scale and the rate. */
static void record_given(kvsim_workload_cfg_t *c, const cJSON *obj) {
  kvsim__wl_mark_tree(c, obj);
  kvsim__wl_given_t *g = &c->given;
  const cJSON *f = get(obj, "format");
  snprintf(g->format, sizeof g->format, "%s", cJSON_IsString(f) ? f->valuestring : "auto");
  g->time_scale = c->time_scale;
  g->arrival_rate = c->syn.rate;
  const cJSON *lf = get(get(obj, "synthetic"), "lengths_from");
  g->lengths_object = cJSON_IsObject(lf);
  if (g->lengths_object)
    lf = get(lf, "file");
  snprintf(g->lengths_from, sizeof g->lengths_from, "%s",
           cJSON_IsString(lf) ? lf->valuestring : "");
}

/* trace_key: errors about the trace file name where's "trace" key (a
 * scenario's); false: the file alone (a path from the command line). */
static int parse(const cJSON *obj, const char *base_dir, const char *where, bool trace_key,
                 bool allow_lengths, kvsim_workload_cfg_t **out, kvsim_err *err) {
  *out = NULL;
  if (!where)
    where = "workload";
  static const char *const keys[] = {"trace", "synthetic", "format", "time_scale", "limit",
                                     "skip_bad_rows", "max_total_tokens", "hash_block_tokens",
                                     "rate", NULL};
  int rc = kvsim__json_only_keys(obj, keys, where, err);
  if (rc < 0)
    return rc;
  kvsim_workload_cfg_t *c = kvsim__calloc(1, sizeof *c);
  if (!c)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", where);
  c->time_scale = 1;
  c->limit = -1;
  c->hash_block_tokens = 512;
  const cJSON *tr = get(obj, "trace"), *sy = get(obj, "synthetic");
  double rate = 0;
  if (!tr == !sy)
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: give exactly one of \"trace\" or \"synthetic\"", where);
  else if ((rc = req_int(obj, "max_total_tokens", KVSIM_PARAM_WL_MAX_TOTAL_TOKENS,
                         &c->max_total_tokens, false, where, err)) >= 0 &&
           (rc = req_num(obj, "rate", KVSIM_PARAM_WL_RATE, &rate, false, where, err)) >= 0)
    rc = sy ? parse_synthetic(obj, sy, base_dir, where, c, err)
            : parse_trace(obj, tr, base_dir, where, trace_key, allow_lengths, c, err);
  if (rc >= 0)
    record_given(c, obj);
  /* A rate replaces any time_scale given (--set workload.rate=10 on a
   * scenario that has one means the rate). */
  if (rc >= 0 && rate > 0)
    rc = kvsim__workload_apply_rate(c, rate, where, err);
  if (rc < 0) {
    kvsim_workload_cfg_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

int kvsim_workload_parse(const cJSON *obj, const char *base_dir, const char *where,
                         kvsim_workload_cfg_t **out, kvsim_err *err) {
  return parse(obj, base_dir, where, true, false, out, err);
}

int kvsim__workload_parse_file(const cJSON *obj, bool allow_lengths, kvsim_workload_cfg_t **out,
                               kvsim_err *err) {
  return parse(obj, NULL, "workload", false, allow_lengths, out, err);
}

void kvsim_workload_cfg_free(kvsim_workload_cfg_t *cfg) {
  if (!cfg)
    return;
  synth_free(&cfg->syn);
  kvsim__free(cfg);
}

static const char *arrival_name(int k) {
  static const char *const n[] = {"poisson", "gamma", "constant", "closed_loop", "bursts",
                                  "diurnal"};
  return n[k];
}

/* The arrival process with the parameters its kind takes. */
static void arrival_json(const kvsim__synth_cfg_t *c, cJSON *s) {
  cJSON *a = cJSON_AddObjectToObject(s, "arrival");
  cJSON_AddStringToObject(a, "process", arrival_name(c->arrival));
  switch (c->arrival) {
  case KVSIM__ARR_CLOSED:
    cJSON_AddNumberToObject(a, "clients", (double)c->clients);
    cJSON_AddNumberToObject(a, "think_s", c->think_s);
    break;
  case KVSIM__ARR_GAMMA:
    cJSON_AddNumberToObject(a, "rate", c->rate);
    cJSON_AddNumberToObject(a, "cv", c->cv);
    break;
  case KVSIM__ARR_BURSTS:
    cJSON_AddNumberToObject(a, "rate", c->rate);
    cJSON_AddNumberToObject(a, "burst_rate", c->burst_rate);
    cJSON_AddNumberToObject(a, "burst_s", c->burst_s);
    cJSON_AddNumberToObject(a, "period_s", c->period_s);
    break;
  case KVSIM__ARR_DIURNAL:
    cJSON_AddNumberToObject(a, "rate", c->rate);
    cJSON_AddNumberToObject(a, "amplitude", c->amplitude);
    cJSON_AddNumberToObject(a, "period_s", c->period_s);
    cJSON_AddNumberToObject(a, "phase_s", c->phase_s);
    break;
  default:
    cJSON_AddNumberToObject(a, "rate", c->rate);
    break;
  }
}

/* The optional blocks that are set: prefix, few_shot, sessions, tenants,
 * priority. */
static void blocks_json(const kvsim__synth_cfg_t *c, cJSON *s) {
  if (c->prefix) {
    cJSON *p = cJSON_AddObjectToObject(s, "prefix");
    cJSON_AddNumberToObject(p, "shared_tokens", (double)c->shared_tokens);
    cJSON_AddNumberToObject(p, "groups", (double)c->groups);
    kvsim__pick_json(&c->group_pick, p);
    cJSON_AddNumberToObject(p, "fraction", c->prefix_fraction);
  }
  if (c->few_shot) {
    cJSON *p = cJSON_AddObjectToObject(s, "few_shot");
    cJSON_AddNumberToObject(p, "templates", (double)c->templates);
    cJSON_AddItemToObject(p, "tokens", kvsim__dist_json(&c->template_tokens));
    kvsim__pick_json(&c->template_pick, p);
    cJSON_AddNumberToObject(p, "fraction", c->few_shot_fraction);
  }
  if (c->sessions) {
    cJSON *p = cJSON_AddObjectToObject(s, "sessions");
    cJSON_AddItemToObject(p, "turns", kvsim__dist_json(&c->turns));
    cJSON_AddNumberToObject(p, "think_s", c->session_think_s);
    if (c->user_set)
      cJSON_AddItemToObject(p, "user_tokens", kvsim__dist_json(&c->user));
    if (c->max_context > 0)
      cJSON_AddNumberToObject(p, "max_context", (double)c->max_context);
  }
  if (c->tenants > 0) {
    cJSON *p = cJSON_AddObjectToObject(s, "tenants");
    cJSON_AddNumberToObject(p, "count", (double)c->tenants);
    kvsim__pick_json(&c->tenant_pick, p);
  }
  if (c->priority_levels > 0) {
    cJSON *p = cJSON_AddObjectToObject(s, "priority");
    cJSON_AddNumberToObject(p, "levels", c->priority_levels);
    cJSON *w = cJSON_AddArrayToObject(p, "weights");
    for (int i = 0; i < c->priority_levels; i++)
      cJSON_AddItemToArray(w, cJSON_CreateNumber(c->priority_weights[i]));
  }
  if (c->lora_adapters > 0) {
    cJSON *p = cJSON_AddObjectToObject(s, "lora");
    cJSON_AddNumberToObject(p, "adapters", (double)c->lora_adapters);
    kvsim__pick_json(&c->lora_pick, p);
    cJSON_AddNumberToObject(p, "fraction", c->lora_fraction);
  }
}

int64_t kvsim_workload_lora_adapters(const kvsim_workload_cfg_t *cfg) {
  return cfg->synthetic ? cfg->syn.lora_adapters : 0;
}

void kvsim_workload_shape(const kvsim_workload_cfg_t *cfg, kvsim_workload_shape_t *out) {
  memset(out, 0, sizeof *out);
  out->synthetic = cfg->synthetic;
  out->rate_given = cfg->rate > 0; /* a given rate is >= 1e-6 (the registry's row) */
  if (!cfg->synthetic) {
    out->limit = cfg->limit > 0 ? cfg->limit : 0;
    return;
  }
  const kvsim__synth_cfg_t *c = &cfg->syn;
  out->requests = c->requests > 0 ? c->requests : 0;
  out->duration_given = c->duration_s > 0; /* -1: not given; a given one is > 0 */
  out->arrival_has_rate = c->arrival != KVSIM__ARR_CLOSED;
  out->arrival_rate = out->arrival_has_rate ? c->rate : 0;
}

cJSON *kvsim_workload_cfg_json(const kvsim_workload_cfg_t *cfg) {
  cJSON *o = cJSON_CreateObject();
  if (cfg->max_total_tokens > 0)
    cJSON_AddNumberToObject(o, "max_total_tokens", (double)cfg->max_total_tokens);
  if (cfg->rate > 0)
    cJSON_AddNumberToObject(o, "rate", cfg->rate);
  if (!cfg->synthetic && cfg->rate > 0)
    cJSON_AddNumberToObject(o, "trace_rate", cfg->trace_rate);
  if (!cfg->synthetic) {
    cJSON_AddStringToObject(o, "trace", cfg->path);
    cJSON_AddStringToObject(o, "format", kvsim__format_name(cfg->format));
    cJSON_AddNumberToObject(o, "time_scale", cfg->time_scale);
    if (cfg->limit > 0)
      cJSON_AddNumberToObject(o, "limit", (double)cfg->limit);
    cJSON_AddBoolToObject(o, "skip_bad_rows", cfg->skip_bad_rows);
    if (kvsim__format_uses_hash_block(cfg->format))
      cJSON_AddNumberToObject(o, "hash_block_tokens", (double)cfg->hash_block_tokens);
    return o;
  }
  const kvsim__synth_cfg_t *c = &cfg->syn;
  cJSON *s = cJSON_AddObjectToObject(o, "synthetic");
  if (c->requests > 0)
    cJSON_AddNumberToObject(s, "requests", (double)c->requests);
  if (c->duration_s > 0)
    cJSON_AddNumberToObject(s, "duration_s", c->duration_s);
  arrival_json(c, s);
  if (c->lengths_file) {
    cJSON *l = cJSON_AddObjectToObject(s, "lengths_from");
    cJSON_AddStringToObject(l, "file", c->lengths_path);
  } else {
    cJSON_AddItemToObject(s, "prompt_tokens", kvsim__dist_json(&c->prompt));
    cJSON_AddItemToObject(s, "output_tokens", kvsim__dist_json(&c->output));
  }
  blocks_json(c, s);
  return o;
}

static int64_t sat_add(int64_t a, int64_t b) {
  return (a == INT64_MAX || b == INT64_MAX || a > INT64_MAX - b) ? INT64_MAX : a + b;
}

int64_t kvsim_workload_max_total_tokens(const kvsim_workload_cfg_t *cfg) {
  int64_t clip = cfg->max_total_tokens > 0 ? cfg->max_total_tokens : INT64_MAX;
  int64_t m = INT64_MAX;
  if (cfg->synthetic) {
    const kvsim__synth_cfg_t *c = &cfg->syn;
    if (c->sessions) {
      m = c->max_context > 0 ? c->max_context : INT64_MAX;
    } else {
      if (c->lengths_file) {
        m = 0;
        for (int64_t i = 0; i < c->num_lengths; i++)
          if ((int64_t)c->lengths[2 * i] + c->lengths[2 * i + 1] > m)
            m = (int64_t)c->lengths[2 * i] + c->lengths[2 * i + 1];
      } else {
        m = sat_add(kvsim__dist_max(&c->prompt), kvsim__dist_max(&c->output));
      }
      if (c->prefix)
        m = sat_add(m, c->shared_tokens);
      if (c->few_shot)
        m = sat_add(m, kvsim__dist_max(&c->template_tokens));
    }
  }
  m = m < clip ? m : clip;
  return m == INT64_MAX ? -1 : m;
}
