/* Length distributions, popularity pickers and a small u64 hash map. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "workload/wl.h"

/* Zipf tables are O(max): refuse absurd sizes instead of exhausting memory. */
#define KVSIM__ZIPF_MAX_N 10000000

static gsl_ran_discrete_t *zipf_table(int64_t n, double s, int64_t first) {
  double *w = kvsim__malloc((size_t)n * sizeof *w);
  if (!w)
    return NULL;
  for (int64_t k = 0; k < n; k++)
    w[k] = pow((double)(k + first), -s);
  gsl_ran_discrete_t *t = gsl_ran_discrete_preproc((size_t)n, w);
  kvsim__free(w);
  return t;
}

/* The bounds of every number a distribution or a popularity picker takes,
 * in one table: the checks and their wording read it. A length (a bare
 * number, value, min, max) is a token count, capped at 1e15 so that it
 * stays exact in a double and far below INT64_MAX; sigma past 10 makes
 * exp(sigma^2 / 2) overflow the lengths' mean; zipf's exponent only needs
 * to be positive. */
typedef struct field {
  const char *name;
  double lo, hi;    /* hi: HUGE_VAL for none */
  bool integer, lo_open;
} field_t;

enum { F_LENGTH, F_STD, F_MEAN, F_SIGMA, F_EXPONENT };
static const field_t fields[] = {
    [F_LENGTH] = {"length", 1, 1e15, true, false},
    [F_STD] = {"std", 0, 1e15, false, false},
    [F_MEAN] = {"lognormal mean", 0, 1e15, false, true},
    [F_SIGMA] = {"sigma", 0, 10, false, false},
    [F_EXPONENT] = {"zipf exponent", 0, HUGE_VAL, false, true},
};

static bool field_ok(const field_t *f, double v) {
  if (!(f->lo_open ? v > f->lo : v >= f->lo) || !(v <= f->hi))
    return false;
  return !f->integer || v == floor(v);
}

/* "WHERE.KEY: bad value V (expected ...)", the range from the table. */
static int field_check(int id, double v, const char *where, const char *key, kvsim_err *err) {
  const field_t *f = &fields[id];
  if (field_ok(f, v))
    return 0;
  char range[64];
  if (f->hi == HUGE_VAL)
    snprintf(range, sizeof range, "%s %g", f->lo_open ? ">" : ">=", f->lo);
  else
    snprintf(range, sizeof range, "%s%s%g, %g]", f->integer ? "an integer " : "", f->lo_open ? "in (" : "in [",
             f->lo, f->hi);
  return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: bad value %g (expected %s)", where, key ? "." : "",
                       key ? key : "", v, range);
}

static int need_num(const cJSON *j, const char *key, double *out, const char *where,
                    kvsim_err *err) {
  int rc = kvsim__json_num(j, key, out, where, err);
  if (rc < 0)
    return rc;
  if (rc == 0)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s: missing (required for this dist)", where,
                         key);
  return 0;
}

/* min and max, integers >= 1 when given (has_* = given). */
typedef struct bounds {
  int has_min, has_max;
  double mn, mx;
} bounds_t;

static int parse_bounds(const cJSON *j, const char *where, kvsim__dist_t *d, bounds_t *b,
                        kvsim_err *err) {
  if ((b->has_min = kvsim__json_num(j, "min", &b->mn, where, err)) < 0)
    return b->has_min;
  if ((b->has_max = kvsim__json_num(j, "max", &b->mx, where, err)) < 0)
    return b->has_max;
  int rc;
  if (b->has_min && (rc = field_check(F_LENGTH, b->mn, where, "min", err)) < 0)
    return rc;
  if (b->has_max && (rc = field_check(F_LENGTH, b->mx, where, "max", err)) < 0)
    return rc;
  if (b->has_min && b->has_max && b->mx < b->mn)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.max: %g is below min %g", where, b->mx, b->mn);
  if (b->has_min)
    d->lo = (int64_t)b->mn;
  if (b->has_max)
    d->hi = (int64_t)b->mx;
  return 0;
}

/* One dist's own parameters; *allowed lists every key it takes. */
static int parse_params(const cJSON *j, const char *name, const bounds_t *b, const char *where,
                        kvsim__dist_t *d, const char **allowed, kvsim_err *err) {
  int rc;
  if (!strcmp(name, "fixed")) {
    d->kind = KVSIM__DIST_FIXED;
    *allowed = "value min max";
    if ((rc = need_num(j, "value", &d->a, where, err)) < 0)
      return rc;
    if ((rc = field_check(F_LENGTH, d->a, where, "value", err)) < 0)
      return rc;
  } else if (!strcmp(name, "uniform")) {
    d->kind = KVSIM__DIST_UNIFORM;
    *allowed = "min max";
    if (!b->has_min || !b->has_max)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: uniform needs min and max", where);
    d->a = b->mn;
    d->b = b->mx;
  } else if (!strcmp(name, "normal")) {
    d->kind = KVSIM__DIST_NORMAL;
    *allowed = "mean std min max";
    if ((rc = need_num(j, "mean", &d->a, where, err)) < 0 ||
        (rc = need_num(j, "std", &d->b, where, err)) < 0)
      return rc;
    if ((rc = field_check(F_STD, d->b, where, "std", err)) < 0)
      return rc;
  } else if (!strcmp(name, "lognormal")) {
    d->kind = KVSIM__DIST_LOGNORMAL;
    *allowed = "mean sigma min max";
    if ((rc = need_num(j, "mean", &d->a, where, err)) < 0 ||
        (rc = need_num(j, "sigma", &d->b, where, err)) < 0)
      return rc;
    if ((rc = field_check(F_MEAN, d->a, where, "mean", err)) < 0 ||
        (rc = field_check(F_SIGMA, d->b, where, "sigma", err)) < 0)
      return rc;
    /* "mean" is the mean of the lengths, not of the underlying normal:
     * E[X] = exp(mu + sigma^2 / 2). */
    d->mu = log(d->a) - d->b * d->b / 2;
  } else if (!strcmp(name, "zipf")) {
    d->kind = KVSIM__DIST_ZIPF;
    *allowed = "s min max";
    if ((rc = need_num(j, "s", &d->a, where, err)) < 0)
      return rc;
    if ((rc = field_check(F_EXPONENT, d->a, where, "s", err)) < 0)
      return rc;
    if (!b->has_max)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.max: missing (required for zipf)", where);
    if (b->mx > KVSIM__ZIPF_MAX_N)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.max: bad value %g (zipf supports <= %d)",
                           where, b->mx, KVSIM__ZIPF_MAX_N);
    d->b = b->mx;
  } else {
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.dist: bad value '%s' (expected fixed, uniform, normal, lognormal "
                         "or zipf)",
                         where, name);
  }
  return 0;
}

/* Keys that belong to another dist are errors, so typos do not pass. */
static int check_keys(const cJSON *j, const char *name, const char *allowed, const char *where,
                      kvsim_err *err) {
  for (const cJSON *c = j->child; c; c = c->next) {
    if (!strcmp(c->string, "dist"))
      continue;
    const char *p = strstr(allowed, c->string);
    size_t l = strlen(c->string);
    if (!p || (p[l] != ' ' && p[l] != '\0') || (p != allowed && p[-1] != ' '))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s.%s: not a parameter of dist '%s' (takes %s)",
                           where, c->string, name, allowed);
  }
  return 0;
}

const char *const kvsim__dist_keys[] = {"dist", "value", "min", "max", "mean",
                                        "std",  "sigma", "s",   NULL};

/* The keys j gives (not null), in its order, indices into list. */
static uint8_t given_order(const cJSON *j, const char *const *list, uint8_t *out, uint8_t cap) {
  uint8_t n = 0;
  for (const cJSON *c = j->child; c; c = c->next)
    for (uint8_t i = 0; list[i] && !cJSON_IsNull(c) && n < cap; i++)
      if (!strcmp(c->string, list[i]))
        out[n++] = i;
  return n;
}

int kvsim__dist_parse(const cJSON *j, const char *where, kvsim__dist_t *d, kvsim_err *err) {
  memset(d, 0, sizeof *d);
  d->lo = 1;
  d->hi = INT64_MAX;
  if (cJSON_IsNumber(j)) {
    double v = j->valuedouble;
    int rc = field_check(F_LENGTH, v, where, NULL, err);
    if (rc < 0)
      return rc;
    d->kind = KVSIM__DIST_FIXED;
    d->a = v;
    d->bare = true;
    return 0;
  }
  const char *const *keys = kvsim__dist_keys;
  int rc = kvsim__json_only_keys(j, keys, where, err);
  if (rc < 0)
    return rc;
  char name[32] = "";
  if ((rc = kvsim__json_str(j, "dist", name, sizeof name, where, err)) < 0)
    return rc;
  if (rc == 0)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.dist: missing (fixed, uniform, normal, lognormal or zipf)", where);
  bounds_t b;
  const char *allowed = "";
  if ((rc = parse_bounds(j, where, d, &b, err)) < 0 ||
      (rc = parse_params(j, name, &b, where, d, &allowed, err)) < 0 ||
      (rc = check_keys(j, name, allowed, where, err)) < 0)
    return rc;
  d->ngiven = given_order(j, keys, d->given, sizeof d->given);
  if (d->kind == KVSIM__DIST_ZIPF) {
    d->table = zipf_table((int64_t)d->b, d->a, 1);
    if (!d->table)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory for the zipf table", where);
  }
  return 0;
}

int64_t kvsim__dist_draw(const kvsim__dist_t *d, gsl_rng *r) {
  double x;
  int64_t v;
  switch (d->kind) {
  case KVSIM__DIST_UNIFORM:
    v = (int64_t)d->a + (int64_t)gsl_rng_uniform_int(r, (unsigned long)(d->b - d->a + 1));
    break;
  case KVSIM__DIST_NORMAL:
    x = d->a + gsl_ran_gaussian(r, d->b);
    v = x < 1 ? 1 : x > 1e15 ? (int64_t)1e15 : llround(x);
    break;
  case KVSIM__DIST_LOGNORMAL:
    x = gsl_ran_lognormal(r, d->mu, d->b);
    v = x < 1 ? 1 : x > 1e15 ? (int64_t)1e15 : llround(x);
    break;
  case KVSIM__DIST_ZIPF:
    v = (int64_t)gsl_ran_discrete(r, d->table) + 1;
    break;
  default:
    v = (int64_t)d->a;
    break;
  }
  if (v < d->lo)
    v = d->lo;
  if (v > d->hi)
    v = d->hi;
  return v;
}

int64_t kvsim__dist_max(const kvsim__dist_t *d) {
  int64_t m = INT64_MAX;
  if (d->kind == KVSIM__DIST_FIXED)
    m = (int64_t)d->a;
  else if (d->kind == KVSIM__DIST_UNIFORM || d->kind == KVSIM__DIST_ZIPF)
    m = (int64_t)d->b;
  if (m < d->lo)
    m = d->lo;
  return m < d->hi ? m : d->hi;
}

static const char *dist_name(int k) {
  static const char *const names[] = {"fixed", "uniform", "normal", "lognormal", "zipf"};
  return names[k];
}

cJSON *kvsim__dist_json(const kvsim__dist_t *d) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "dist", dist_name(d->kind));
  switch (d->kind) {
  case KVSIM__DIST_FIXED:
    cJSON_AddNumberToObject(o, "value", d->a);
    break;
  case KVSIM__DIST_NORMAL:
    cJSON_AddNumberToObject(o, "mean", d->a);
    cJSON_AddNumberToObject(o, "std", d->b);
    break;
  case KVSIM__DIST_LOGNORMAL:
    cJSON_AddNumberToObject(o, "mean", d->a);
    cJSON_AddNumberToObject(o, "sigma", d->b);
    break;
  case KVSIM__DIST_ZIPF:
    cJSON_AddNumberToObject(o, "s", d->a);
    break;
  default:
    break;
  }
  cJSON_AddNumberToObject(o, "min", (double)d->lo);
  if (d->hi != INT64_MAX)
    cJSON_AddNumberToObject(o, "max", (double)d->hi);
  return o;
}

int kvsim__dist_copy(const kvsim__dist_t *src, kvsim__dist_t *dst) {
  *dst = *src;
  /* A zipf table is built from its parameters as kvsim__dist_parse builds
   * it: the same weights, the same draws. */
  dst->table = src->table ? zipf_table((int64_t)src->b, src->a, 1) : NULL;
  return src->table && !dst->table ? KVSIM_ENOMEM : KVSIM_OK;
}

void kvsim__dist_fini(kvsim__dist_t *d) {
  if (d->table)
    gsl_ran_discrete_free(d->table);
  d->table = NULL;
}

int kvsim__pick_parse(const cJSON *obj, const char *where, int64_t n, kvsim__pick_t *p,
                      kvsim_err *err) {
  memset(p, 0, sizeof *p);
  p->n = n;
  p->s = 1.0;
  char pop[16] = "uniform";
  int rc = kvsim__json_str(obj, "popularity", pop, sizeof pop, where, err);
  if (rc < 0)
    return rc;
  if (!strcmp(pop, "zipf"))
    p->zipf = true;
  else if (strcmp(pop, "uniform"))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s.popularity: bad value '%s' (expected uniform or zipf)", where, pop);
  if ((rc = kvsim__json_num(obj, "zipf_s", &p->s, where, err)) < 0)
    return rc;
  if (rc && !p->zipf)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s.zipf_s: needs \"popularity\": \"zipf\"", where);
  if ((rc = field_check(F_EXPONENT, p->s, where, "zipf_s", err)) < 0)
    return rc;
  static const char *const keys[] = {"popularity", "zipf_s", NULL};
  p->ngiven = given_order(obj, keys, p->given, sizeof p->given);
  if (p->zipf) {
    if (n > KVSIM__ZIPF_MAX_N)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: zipf popularity supports <= %d items", where,
                           KVSIM__ZIPF_MAX_N);
    p->table = zipf_table(n, p->s, 1);
    if (!p->table)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", where);
  }
  return 0;
}

int64_t kvsim__pick_draw(const kvsim__pick_t *p, gsl_rng *r) {
  if (p->n <= 1)
    return 0;
  if (p->zipf)
    return (int64_t)gsl_ran_discrete(r, p->table);
  return (int64_t)gsl_rng_uniform_int(r, (unsigned long)p->n);
}

void kvsim__pick_json(const kvsim__pick_t *p, cJSON *obj) {
  cJSON_AddStringToObject(obj, "popularity", p->zipf ? "zipf" : "uniform");
  if (p->zipf)
    cJSON_AddNumberToObject(obj, "zipf_s", p->s);
}

int kvsim__pick_copy(const kvsim__pick_t *src, kvsim__pick_t *dst) {
  *dst = *src;
  dst->table = src->table ? zipf_table(src->n, src->s, 1) : NULL;
  return src->table && !dst->table ? KVSIM_ENOMEM : KVSIM_OK;
}

void kvsim__pick_fini(kvsim__pick_t *p) {
  if (p->table)
    gsl_ran_discrete_free(p->table);
  p->table = NULL;
}
