/* Shared by the libFuzzer targets: a temporary file holding the input, and
 * a sink that discards what a run records. Each target must finish quickly
 * on any input (libFuzzer's -timeout turns a hang into a failure). */
#ifndef KVSIM_FUZZ_COMMON_H
#define KVSIM_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/engine.h"

/* Writes data to a fresh file under TMPDIR with the given suffix; returns
 * its path (static storage) or NULL. */
static inline const char *fuzz_tmpfile(const uint8_t *data, size_t size, const char *suffix) {
  static char path[512];
  const char *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/kvsim-fuzz-%d%s", dir && *dir ? dir : "/tmp", (int)getpid(),
           suffix);
  FILE *f = fopen(path, "wb");
  if (!f)
    return NULL;
  if (size && fwrite(data, 1, size, f) != size) {
    fclose(f);
    return NULL;
  }
  return fclose(f) == 0 ? path : NULL;
}

/* A NUL-terminated copy of the input (caller frees). */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s) {
    memcpy(s, data, size);
    s[size] = '\0';
  }
  return s;
}

/* Says which property broke, then aborts (libFuzzer keeps the input). */
static inline void fuzz_fail(const char *what, const char *msg) {
  fprintf(stderr, "kvsim fuzz: %s; last error: %s\n", what, msg);
  abort();
}

static inline int fuzz_sample(void *ctx, const kvsim_sample_t *s) {
  (void)ctx;
  (void)s;
  return 0;
}
static inline int fuzz_request(void *ctx, const kvsim_request_t *r) {
  (void)r;
  ++*(int64_t *)ctx;
  return 0;
}

#endif
