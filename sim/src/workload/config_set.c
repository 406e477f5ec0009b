/* Copies and typed setters of a parsed workload configuration: what a
 * study does to a scenario's workload (another rate, more requests) without
 * parsing its JSON again. Each setter leaves the configuration as parsing
 * the "workload" object with that key set would, checks and error words
 * included (tests/unit/test_workload_set.c holds them to it). */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workload/wl.h"

int kvsim_workload_cfg_copy(const kvsim_workload_cfg_t *src, kvsim_workload_cfg_t **out,
                            kvsim_err *err) {
  *out = NULL;
  kvsim_workload_cfg_t *c = kvsim__malloc(sizeof *c);
  if (!c)
    return kvsim_err_set(err, KVSIM_ENOMEM, "workload: out of memory copying it");
  *c = *src;
  const kvsim__synth_cfg_t *s = &src->syn;
  kvsim__synth_cfg_t *d = &c->syn;
  /* Nothing of src's is owned by the copy until copied (a failure frees
   * what was). */
  d->prompt.table = d->output.table = d->template_tokens.table = d->turns.table = d->user.table =
      NULL;
  d->group_pick.table = d->template_pick.table = d->tenant_pick.table = d->lora_pick.table = NULL;
  d->priority_table = NULL;
  d->lengths = NULL;
  int rc = KVSIM_OK;
  if (kvsim__dist_copy(&s->prompt, &d->prompt) < 0 ||
      kvsim__dist_copy(&s->output, &d->output) < 0 ||
      kvsim__dist_copy(&s->template_tokens, &d->template_tokens) < 0 ||
      kvsim__dist_copy(&s->turns, &d->turns) < 0 || kvsim__dist_copy(&s->user, &d->user) < 0 ||
      kvsim__pick_copy(&s->group_pick, &d->group_pick) < 0 ||
      kvsim__pick_copy(&s->template_pick, &d->template_pick) < 0 ||
      kvsim__pick_copy(&s->tenant_pick, &d->tenant_pick) < 0 ||
      kvsim__pick_copy(&s->lora_pick, &d->lora_pick) < 0)
    rc = KVSIM_ENOMEM;
  if (rc == KVSIM_OK && s->priority_table &&
      !(d->priority_table =
            gsl_ran_discrete_preproc((size_t)s->priority_levels, s->priority_weights)))
    rc = KVSIM_ENOMEM;
  if (rc == KVSIM_OK && s->lengths) {
    size_t bytes = (size_t)s->num_lengths * 2 * sizeof *s->lengths;
    if ((d->lengths = kvsim__malloc(bytes)))
      memcpy(d->lengths, s->lengths, bytes);
    else
      rc = KVSIM_ENOMEM;
  }
  if (rc < 0) {
    kvsim_workload_cfg_free(c);
    return kvsim_err_set(err, KVSIM_ENOMEM, "workload: out of memory copying it");
  }
  *out = c;
  return KVSIM_OK;
}

/* The check parsing makes of `key` = v under `where` (row id; a number
 * from lo, an integer when integer). */
static int check(const char *where, const char *key, int id, double lo, bool integer, double v,
                 kvsim_err *err) {
  cJSON *o = cJSON_CreateObject();
  if (!o || !cJSON_AddNumberToObject(o, key, v)) {
    cJSON_Delete(o);
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s.%s: out of memory", where, key);
  }
  int64_t i;
  double d;
  int rc = integer ? kvsim__wl_req_int(o, key, id, &i, where, err)
                   : kvsim__wl_req_num_from(o, key, id, lo, &d, where, err);
  cJSON_Delete(o);
  return rc < 0 ? rc : KVSIM_OK;
}

static double row_min(int id) { return kvsim_param_get(id)->min; }

/* A trace's own key on a synthetic workload, or a synthetic one on a trace:
 * parsing's error. */
static int wrong_kind(const kvsim_workload_cfg_t *c, const char *key, const char *where,
                      kvsim_err *err) {
  if (c->synthetic)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.%s: applies to traces only (synthetic workloads set requests "
                         "and arrival.rate)",
                         where, key);
  return kvsim_err_set(err, KVSIM_EINVAL, "%s: give exactly one of \"trace\" or \"synthetic\"",
                       where);
}

/* synthetic.arrival.rate: the process's own range (bursts' from 0); a
 * workload.rate given replaces it, as parsing applies it last. */
static int set_arrival_rate(kvsim_workload_cfg_t *c, double v, const char *where, kvsim_err *err) {
  char w[600];
  snprintf(w, sizeof w, "%s.synthetic.arrival", where);
  if (c->syn.arrival == KVSIM__ARR_CLOSED)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.rate: not a parameter of process 'closed_loop' (takes clients "
                         "think_s)",
                         w);
  double lo = c->syn.arrival == KVSIM__ARR_BURSTS ? 0 : row_min(KVSIM_PARAM_WL_ARRIVAL_RATE);
  int rc = check(w, "rate", KVSIM_PARAM_WL_ARRIVAL_RATE, lo, false, v, err);
  if (rc == KVSIM_OK && !(c->rate > 0))
    c->syn.rate = v;
  return rc;
}

static int set(kvsim_workload_cfg_t *c, const char *key, double v, const char *where,
               kvsim_err *err) {
  char w[600];
  snprintf(w, sizeof w, "%s.synthetic", where);
  int rc;
  if (!strcmp(key, "rate")) {
    if ((rc = check(where, key, KVSIM_PARAM_WL_RATE, row_min(KVSIM_PARAM_WL_RATE), false, v, err)) <
        0)
      return rc;
    return kvsim__workload_apply_rate(c, v, where, err);
  }
  if (!strcmp(key, "max_total_tokens")) {
    if ((rc = check(where, key, KVSIM_PARAM_WL_MAX_TOTAL_TOKENS, 0, true, v, err)) == KVSIM_OK)
      c->max_total_tokens = (int64_t)v;
    return rc;
  }
  if (!strncmp(key, "synthetic.", 10) && !c->synthetic)
    return wrong_kind(c, key, where, err);
  if (!strcmp(key, "synthetic.requests")) {
    if ((rc = check(w, "requests", KVSIM_PARAM_WL_REQUESTS, 0, true, v, err)) == KVSIM_OK)
      c->syn.requests = (int64_t)v;
    return rc;
  }
  if (!strcmp(key, "synthetic.duration_s")) {
    if ((rc = check(w, "duration_s", KVSIM_PARAM_WL_DURATION_S, row_min(KVSIM_PARAM_WL_DURATION_S),
                    false, v, err)) == KVSIM_OK)
      c->syn.duration_s = v;
    return rc;
  }
  if (!strcmp(key, "synthetic.arrival.rate"))
    return set_arrival_rate(c, v, where, err);
  if ((!strcmp(key, "limit") || !strcmp(key, "time_scale")) && c->synthetic)
    return wrong_kind(c, key, where, err);
  if (!strcmp(key, "limit")) {
    if ((rc = check(where, key, KVSIM_PARAM_WL_LIMIT, 0, true, v, err)) < 0)
      return rc;
    c->limit = (int64_t)v;
    /* The trace's mean rate is over its first `limit` rows. */
    return c->rate > 0 ? kvsim__workload_apply_rate(c, c->rate, where, err) : KVSIM_OK;
  }
  if (!strcmp(key, "time_scale")) {
    if ((rc = check(where, key, KVSIM_PARAM_WL_TIME_SCALE, row_min(KVSIM_PARAM_WL_TIME_SCALE),
                    false, v, err)) == KVSIM_OK &&
        !(c->rate > 0)) /* a rate given derives the scale */
      c->time_scale = v;
    return rc;
  }
  return kvsim_err_set(err, KVSIM_EINVAL,
                       "%s.%s: not a key set by number (rate, max_total_tokens, limit, "
                       "time_scale, synthetic.requests, synthetic.duration_s, "
                       "synthetic.arrival.rate)",
                       where, key);
}

/* The key set is given from now on, with v as its given value (what the
 * config prints: a rate given still prints time_scale as given). */
int kvsim_workload_set(kvsim_workload_cfg_t *c, const char *key, double v, const char *where,
                       kvsim_err *err) {
  int rc = set(c, key, v, where, err);
  char full[128];
  snprintf(full, sizeof full, "workload.%s", key);
  const kvsim_param_t *p = kvsim_param_by_key(full);
  if (rc < 0 || !p)
    return rc;
  kvsim__wl_mark(c, p->id);
  if (p->id == KVSIM_PARAM_WL_TIME_SCALE)
    c->given.time_scale = v;
  else if (p->id == KVSIM_PARAM_WL_ARRIVAL_RATE)
    c->given.arrival_rate = v;
  return rc;
}
