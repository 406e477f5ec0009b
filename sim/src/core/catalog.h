/* The JSON files of configs/models and configs/gpus, compiled into the
 * binary (see cmake/embed_catalog.cmake). Internal. */
#ifndef KVSIM_CORE_CATALOG_H
#define KVSIM_CORE_CATALOG_H

#include <stddef.h>

enum { KVSIM_CATALOG_MODEL = 1, KVSIM_CATALOG_GPU = 2, KVSIM_CATALOG_SCENARIO = 3, KVSIM_CATALOG_STUDY = 4, KVSIM_CATALOG_KERNELS = 5, KVSIM_CATALOG_SCRIPT = 6 };

typedef struct kvsim__catalog_entry {
  int kind;
  const char *name; /* file name without .json */
  const char *json;
} kvsim__catalog_entry;

/* Terminated by an entry with kind 0. */
extern const kvsim__catalog_entry kvsim__catalog[];

/* Case-insensitive lookup by name; NULL if absent. */
const kvsim__catalog_entry *kvsim__catalog_find(int kind, const char *name);

/* Writes up to `max` catalog names closest to `name` (edit distance) as
 * "a, b, c" into buf. */
void kvsim__catalog_suggest(int kind, const char *name, char *buf, size_t cap, int max);

/* Lists all names of a kind, one per line, to buf. */
void kvsim__catalog_list(int kind, char *buf, size_t cap);

#endif
