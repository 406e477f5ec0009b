#include "core/catalog.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"

const kvsim__catalog_entry *kvsim__catalog_find(int kind, const char *name) {
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind; e++)
    if (e->kind == kind && strcasecmp(e->name, name) == 0)
      return e;
  return NULL;
}

void kvsim__catalog_suggest(int kind, const char *name, char *buf, size_t cap, int max) {
  /* Selection of the `max` closest names; the catalog has tens of entries. */
  enum { N = 256 };
  const kvsim__catalog_entry *cand[N];
  int dist[N], n = 0;
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind && n < N; e++)
    if (e->kind == kind) {
      cand[n] = e;
      dist[n++] = kvsim__edit_distance(name, e->name);
    }
  buf[0] = '\0';
  size_t o = 0;
  for (int k = 0; k < max && k < n && o < cap; k++) {
    int best = k;
    for (int i = k + 1; i < n; i++)
      if (dist[i] < dist[best])
        best = i;
    const kvsim__catalog_entry *te = cand[k];
    int td = dist[k];
    cand[k] = cand[best];
    dist[k] = dist[best];
    cand[best] = te;
    dist[best] = td;
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? ", " : "", cand[k]->name);
  }
}

void kvsim__catalog_list(int kind, char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = '\0';
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind && o < cap; e++)
    if (e->kind == kind)
      o += (size_t)snprintf(buf + o, cap - o, "%s\n", e->name);
}
