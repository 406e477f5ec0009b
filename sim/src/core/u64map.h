/* One u64 -> i32 hash map for every room (LRU slots, sessions, prefix
 * blocks): open addressing with linear probing and backward-shift
 * deletion, keys mixed with splitmix64 (ids are often small and
 * consecutive). Internal: not part of the public API. */
#ifndef KVSIM_CORE_U64MAP_H
#define KVSIM_CORE_U64MAP_H

#include <stdint.h>

typedef struct kvsim__u64map {
  uint64_t *keys;
  int32_t *vals; /* -1: empty slot */
  uint32_t mask;
  int64_t count;
} kvsim__u64map_t;

/* Room for `expected` keys before the first grow; KVSIM_ENOMEM on failure. */
int kvsim__u64map_init(kvsim__u64map_t *m, int64_t expected);
void kvsim__u64map_fini(kvsim__u64map_t *m);
/* Returns the value or -1. */
int32_t kvsim__u64map_get(const kvsim__u64map_t *m, uint64_t key);
/* Inserts or replaces (grows as needed); KVSIM_ENOMEM leaves m unchanged.
 * val must be >= 0. */
int kvsim__u64map_put(kvsim__u64map_t *m, uint64_t key, int32_t val);
/* Removes key if present. */
void kvsim__u64map_del(kvsim__u64map_t *m, uint64_t key);

#endif
