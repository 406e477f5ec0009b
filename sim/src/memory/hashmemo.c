/* First segments' block hashes (hashmemo.h). */
#include "memory/hashmemo.h"

#include <stdbool.h>
#include <string.h>

#include "core/alloc.h"
#include "core/arith.h"

/* Slots, direct-mapped by segment id: a few system prompts or sessions
 * at a time. A slot keeps at most MAX_BLOCKS hashes (32 KiB), so the memo
 * stays under 2 MiB whatever the workload. */
#define SLOTS 64
#define MAX_BLOCKS 4096

typedef struct slot {
  uint64_t id;   /* the segment kept (valid when n > 0) */
  uint64_t cand; /* the last other segment offered here, kept when offered again */
  int32_t n, cap;
  uint64_t *h;
} slot_t;

struct kvsim__hmemo {
  slot_t slot[SLOTS];
};

kvsim__hmemo_t *kvsim__hmemo_new(void) { return kvsim__calloc(1, sizeof(kvsim__hmemo_t)); }

void kvsim__hmemo_free(kvsim__hmemo_t *m) {
  if (!m)
    return;
  for (int i = 0; i < SLOTS; i++)
    kvsim__free(m->slot[i].h);
  kvsim__free(m);
}

static slot_t *slot_of(const kvsim__hmemo_t *m, uint64_t id) {
  return (slot_t *)&m->slot[kvsim__mix64(id) & (SLOTS - 1)];
}

const uint64_t *kvsim__hmemo_get(const kvsim__hmemo_t *m, uint64_t id, int32_t *n) {
  const slot_t *s = slot_of(m, id);
  if (s->n > 0 && s->id == id) {
    *n = s->n;
    return s->h;
  }
  *n = 0;
  return NULL;
}

void kvsim__hmemo_offer(kvsim__hmemo_t *m, uint64_t id, const uint64_t *h, int32_t n) {
  slot_t *s = slot_of(m, id);
  if (n > MAX_BLOCKS)
    n = MAX_BLOCKS;
  const bool same = s->n > 0 && s->id == id;
  if (n <= 0 || (same && n <= s->n))
    return;
  if (!same && s->cand != id) {
    s->cand = id; /* seen once: kept if it comes again */
    return;
  }
  if (n > s->cap) {
    uint64_t *g = kvsim__realloc(s->h, (size_t)n * sizeof *g);
    if (!g)
      return;
    s->h = g;
    s->cap = n;
  }
  memcpy(s->h, h, (size_t)n * sizeof *h);
  s->id = id;
  s->n = n;
}
