/* Coefficients by name (gpu.h kvsim_gpu_perf_named): what kvsim validate
 * --perf holds a run out with. "default:GEN" is what kvsim validate --all
 * holds a GPU out with (fidelity/logo.c kvsim__logo_donor): the default a
 * GPU of that generation without data of its own gets, so a coverage
 * report and the leave-one-group-out table can use the same coefficients. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "core/catalog.h"
#include "kvsim/gpu.h"

#define DEFAULT_PREFIX "default:"

#define MAX_GENERATIONS 16

/* 1 when some catalog GPU is of generation `gen`; `all` gets the
 * catalog's generations, each once, for the error line. Only each file's
 * "generation" member is read (kvsim_gpu_load would validate all of it:
 * the whole catalog on every call). */
static int known_generation(const char *gen, char *all, size_t cap) {
  char seen[MAX_GENERATIONS][sizeof ((kvsim_gpu_t *)0)->generation];
  int nseen = 0, found = 0;
  size_t n = 0;
  all[0] = '\0';
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind; e++) {
    if (e->kind != KVSIM_CATALOG_GPU)
      continue;
    cJSON *j = cJSON_Parse(e->json);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "generation");
    char g[sizeof seen[0]];
    snprintf(g, sizeof g, "%s", cJSON_IsString(v) ? v->valuestring : "");
    cJSON_Delete(j);
    if (!g[0])
      continue;
    found |= !strcasecmp(g, gen);
    int k = 0;
    while (k < nseen && strcmp(seen[k], g))
      k++;
    if (k < nseen || nseen == MAX_GENERATIONS)
      continue;
    snprintf(seen[nseen++], sizeof seen[0], "%s", g);
    if (n < cap)
      n += (size_t)snprintf(all + n, cap - n, "%s%s", n ? ", " : "", g);
  }
  return found;
}

int kvsim_gpu_perf_named(const char *spec, const kvsim_gpu_t *target, kvsim_gpu_perf_t *p, char *label,
                         size_t cap, kvsim_err *err) {
  if (!strncasecmp(spec, DEFAULT_PREFIX, strlen(DEFAULT_PREFIX))) {
    const char *gen = spec + strlen(DEFAULT_PREFIX);
    char all[256];
    if (!known_generation(gen, all, sizeof all) || !*gen)
      /* At most 24 bytes of it echoed, so that the list always fits the line. */
      return kvsim_err_set(err, KVSIM_EINVAL, "unknown generation '%.24s%s' in '" DEFAULT_PREFIX
                           "GEN' (GEN one of %s)", gen, strlen(gen) > 24 ? "..." : "", all);
    char lower[sizeof ((kvsim_gpu_t *)0)->generation]; /* gen matched a catalog generation: it fits */
    size_t i = 0;
    for (; gen[i] && i + 1 < sizeof lower; i++)
      lower[i] = (char)tolower((unsigned char)gen[i]);
    lower[i] = '\0';
    if (target)
      kvsim_gpu_borrow_perf(target, lower, p);
    else {
      kvsim_gpu_default_perf(lower, p);
      snprintf(p->default_of, sizeof p->default_of, "%s", lower);
    }
    snprintf(label, cap, "%s default (%s fit)", lower, kvsim_gpu_default_perf_origin(lower));
    return KVSIM_OK;
  }
  kvsim_gpu_t g;
  int rc = kvsim_gpu_load(spec, &g, err);
  if (rc < 0)
    return rc;
  *p = g.perf;
  snprintf(label, cap, "%s", g.name);
  return KVSIM_OK;
}
