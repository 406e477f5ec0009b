#include "core/alloc.h"

#include <stdlib.h>
#include <string.h>

/* Process-wide test hook; -1 = off. Tests set it around one call. */
static int64_t fail_after = -1;
static int64_t failures;

static int refuse(void) {
  if (fail_after < 0)
    return 0;
  if (fail_after == 0) {
    failures++;
    return 1;
  }
  fail_after--;
  return 0;
}

void *kvsim__malloc(size_t n) { return refuse() ? NULL : malloc(n); }
void *kvsim__calloc(size_t count, size_t n) { return refuse() ? NULL : calloc(count, n); }
void *kvsim__realloc(void *p, size_t n) { return refuse() ? NULL : realloc(p, n); }
void kvsim__free(void *p) { free(p); }

char *kvsim__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = kvsim__malloc(n);
  return d ? memcpy(d, s, n) : NULL;
}

void kvsim__alloc_fail_after(int64_t n) {
  fail_after = n;
  failures = 0;
}

int64_t kvsim__alloc_failures(void) { return failures; }
