/* The coverage report (kvsim/fidelity.h): one line per dev run or silicon
 * row, then the fraction of measured means inside their ranges, held-out
 * and in-sample apart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "fidelity/fid.h"
#include "kvsim/fidelity.h"

static const char *const names[KVSIM_FID_COVER_NLAT] = {"TTFT", "TPOT", "E2E"};
static const char *const keys[KVSIM_FID_COVER_NLAT] = {"ttft_mean", "tpot_mean", "e2e_mean"};

static void print_item(const kvsim_fid_cover_item_t *it, const char *prev_coef, FILE *out) {
  if (!prev_coef || strcmp(prev_coef, it->coefficients))
    fprintf(out, "coefficients: %s; step-time scales %.4g and %.4g, prefill %.4g and %.4g\n",
            it->coefficients, it->scale_lo, it->scale_hi, it->prefill_lo, it->prefill_hi);
  fprintf(out, "  %s (%s)\n", it->label, it->gpu);
  if (!it->ok) {
    fprintf(out, "    not simulated: %s\n", it->error);
    return;
  }
  for (int k = 0; k < KVSIM_FID_COVER_NLAT; k++) {
    const kvsim_fid_band_mean_t *b = &it->mean[k];
    if (b->has)
      fprintf(out,
              "    %-4s mean  measured %9.2f ms  simulated %9.2f ms  range [%9.2f, %9.2f]  %s\n",
              names[k], 1e3 * b->meas, 1e3 * b->sim, 1e3 * b->lo, 1e3 * b->hi,
              b->inside ? "inside" : "OUTSIDE");
  }
}

static void print_fractions(const kvsim_fid_coverage_t *c, FILE *out) {
  static const char *const which[2] = {"held-out ", "in-sample"};
  fprintf(out, "coverage (measured mean inside [lo, hi]):\n");
  for (int s = 0; s < 2; s++) {
    fprintf(out, "  %s:", which[s]);
    for (int k = 0; k < KVSIM_FID_COVER_NLAT; k++) {
      int n = c->compared[s][k], in = c->inside[s][k];
      if (n)
        fprintf(out, "  %s %d/%d (%.0f%%)", names[k], in, n, 100.0 * in / n);
      else
        fprintf(out, "  %s -", names[k]);
    }
    fputc('\n', out);
  }
  if (c->skipped)
    fprintf(out,
            "%d rows skipped (kvsim cannot reproduce them; kvsim validate --silicon says why)\n",
            c->skipped);
}

static cJSON *item_json(const kvsim_fid_cover_item_t *it) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "item", it->label);
  cJSON_AddStringToObject(o, "gpu", it->gpu);
  cJSON_AddStringToObject(o, "coefficients", it->coefficients);
  cJSON_AddBoolToObject(o, "in_sample", it->in_sample);
  cJSON *sc = cJSON_AddArrayToObject(o, "step_time_scales");
  cJSON_AddItemToArray(sc, cJSON_CreateNumber(it->scale_lo));
  cJSON_AddItemToArray(sc, cJSON_CreateNumber(it->scale_hi));
  sc = cJSON_AddArrayToObject(o, "prefill_time_scales");
  cJSON_AddItemToArray(sc, cJSON_CreateNumber(it->prefill_lo));
  cJSON_AddItemToArray(sc, cJSON_CreateNumber(it->prefill_hi));
  if (!it->ok) {
    cJSON_AddStringToObject(o, "error", it->error);
    return o;
  }
  for (int k = 0; k < KVSIM_FID_COVER_NLAT; k++) {
    const kvsim_fid_band_mean_t *b = &it->mean[k];
    if (!b->has)
      continue;
    char key[32];
    snprintf(key, sizeof key, "%s_s", keys[k]);
    cJSON *m = cJSON_AddObjectToObject(o, key);
    cJSON_AddItemToObject(m, "measured", kvsim__fid_num_or_null(b->meas));
    cJSON_AddItemToObject(m, "simulated", kvsim__fid_num_or_null(b->sim));
    cJSON *r = cJSON_AddArrayToObject(m, "range");
    cJSON_AddItemToArray(r, kvsim__fid_num_or_null(b->lo));
    cJSON_AddItemToArray(r, kvsim__fid_num_or_null(b->hi));
    cJSON_AddBoolToObject(m, "inside", b->inside);
  }
  return o;
}

static char *to_json(const kvsim_fid_coverage_t *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mode", "band-coverage");
  cJSON *items = cJSON_AddArrayToObject(o, "items");
  for (int i = 0; i < c->n; i++)
    cJSON_AddItemToArray(items, item_json(&c->items[i]));
  cJSON *cov = cJSON_AddObjectToObject(o, "coverage");
  static const char *const which[2] = {"held_out", "in_sample"};
  for (int s = 0; s < 2; s++) {
    cJSON *w = cJSON_AddObjectToObject(cov, which[s]);
    for (int k = 0; k < KVSIM_FID_COVER_NLAT; k++) {
      int n = c->compared[s][k], in = c->inside[s][k];
      cJSON *e = cJSON_AddObjectToObject(w, keys[k]);
      cJSON_AddNumberToObject(e, "compared", n);
      cJSON_AddNumberToObject(e, "inside", in);
      cJSON_AddItemToObject(e, "fraction",
                            n ? cJSON_CreateNumber((double)in / n) : cJSON_CreateNull());
    }
  }
  cJSON_AddNumberToObject(o, "skipped", c->skipped);
  return kvsim__fid_print(o);
}

int kvsim_fidelity_coverage_report(const kvsim_fid_coverage_t *c, bool json, FILE *out) {
  if (json) {
    char *s = to_json(c);
    if (!s)
      return KVSIM_ENOMEM;
    fprintf(out, "%s\n", s);
    free(s);
    return KVSIM_OK;
  }
  fprintf(out,
          "Band coverage: each measured mean against [min, max] of the simulated mean over the "
          "nominal run and the runs at the band's two edge step times.\n");
  for (int i = 0; i < c->n; i++)
    print_item(&c->items[i], i ? c->items[i - 1].coefficients : NULL, out);
  print_fractions(c, out);
  return KVSIM_OK;
}
