/* A study's cache of simulated points: the same scenario (its resolved
 * configuration, the overrides recorded in it, and the typed settings a
 * run reads) with the same step-time scales gives the same summary, so a
 * point a search already ran (a replicas search's run at the answer, the
 * band's edges of it, a sweep point at the goodput) is not run again.
 * Active between kvsim__study_memo_begin and _end (nestable), within one
 * process: a compare candidate, a plan search. Only runs without output
 * files, progress or checks are kept; failures are not kept. A search
 * point stopped early (study/early.h) is kept as its verdict alone, under
 * its key and the targets it was stopped for: it serves the same search
 * point again, never a run whose figures are wanted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/alloc.h"
#include "study/run.h"

typedef struct entry {
  char *key;
  kvsim_summary_t *sum;
} entry_t;

static int depth;
static entry_t *entries;
static int64_t n, cap;
static int64_t hits_total; /* for tests */

void kvsim__study_memo_begin(void) { depth++; }

void kvsim__study_memo_end(void) {
  if (depth > 0 && --depth == 0) {
    for (int64_t i = 0; i < n; i++) {
      free(entries[i].key);
      kvsim__free(entries[i].sum); /* NULL for a stopped point */
    }
    kvsim__free(entries);
    entries = NULL;
    n = cap = 0;
  }
}

int64_t kvsim__study_memo_hits(void) { return hits_total; }

/* Everything a run reads: the scenario's canonical configuration (every
 * typed override in it, kvsim_scenario_config_json), where it came from,
 * and the typed settings besides, exactly (%a); a stopped point's tag last
 * (NULL: a full run). NULL when out of memory (the point then simply runs). */
static char *key_of(const kvsim_scenario_t *sc, const char *tag) {
  cJSON *cfg = kvsim_scenario_config_json(sc);
  char *json = cfg ? cJSON_PrintUnformatted(cfg) : NULL;
  cJSON_Delete(cfg);
  if (!json)
    return NULL;
  char *key = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&key, &len);
  if (f) {
    fprintf(f, "%s\n%s\n%s\n%s\n%s\n%llu %d %d %lld %lld %lld %lld %a %a %a %a %a %a %a %a %a %a\n",
            json, sc->name, sc->path, sc->base_dir, sc->profile, (unsigned long long)sc->seed,
            sc->replicas, (int)sc->router, (long long)sc->router_imbalance,
            (long long)sc->sched.max_num_seqs, (long long)sc->sched.max_num_batched_tokens,
            (long long)sc->sched.max_model_len, sc->step_time_scale, sc->prefill_time_scale,
            sc->quant_step_factor, sc->swap_space_gib, sc->plan.gpu_memory_utilization,
            sc->slo_ttft_p99_s, sc->slo_tpot_p99_s, sc->slo_e2e_p99_s, sc->sample_interval_s,
            sc->max_time_s);
    if (tag) /* a stopped point's: the targets it was stopped for */
      fprintf(f, "stopped %s\n", tag);
    if (fclose(f) != 0) {
      free(key);
      key = NULL;
    }
  }
  cJSON_free(json);
  return key;
}

/* The entry under sc (and tag), or NULL. */
static entry_t *find(const kvsim_scenario_t *sc, const char *tag) {
  if (!depth || !n)
    return NULL;
  char *key = key_of(sc, tag);
  entry_t *hit = NULL;
  for (int64_t i = 0; key && i < n && !hit; i++)
    if (!strcmp(entries[i].key, key) && (tag != NULL) == (entries[i].sum == NULL))
      hit = &entries[i];
  free(key);
  if (hit)
    hits_total++;
  return hit;
}

bool kvsim__study_memo_get(const kvsim_scenario_t *sc, kvsim_summary_t *out) {
  entry_t *e = find(sc, NULL);
  if (e)
    *out = *e->sum;
  return e != NULL;
}

bool kvsim__study_memo_get_stopped(const kvsim_scenario_t *sc, const char *tag) {
  return find(sc, tag) != NULL;
}

/* Adds sc's entry (tag: a stopped point's, s NULL); nothing when out of
 * memory (the point then simply runs again). */
static void put(const kvsim_scenario_t *sc, const char *tag, const kvsim_summary_t *s) {
  if (!depth)
    return;
  if (n == cap) {
    int64_t c = cap ? 2 * cap : 16;
    entry_t *e = kvsim__realloc(entries, (size_t)c * sizeof *e);
    if (!e)
      return;
    entries = e;
    cap = c;
  }
  char *key = key_of(sc, tag);
  kvsim_summary_t *copy = key && s ? kvsim__malloc(sizeof *copy) : NULL;
  if (!key || (s && !copy)) {
    free(key);
    return;
  }
  if (s)
    *copy = *s;
  entries[n++] = (entry_t){key, copy};
}

void kvsim__study_memo_put(const kvsim_scenario_t *sc, const kvsim_summary_t *s) { put(sc, NULL, s); }

void kvsim__study_memo_put_stopped(const kvsim_scenario_t *sc, const char *tag) {
  put(sc, tag, NULL);
}
