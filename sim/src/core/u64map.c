#include "core/u64map.h"

#include <stdbool.h>

#include "core/alloc.h"
#include "core/arith.h"
#include "kvsim/error.h"

static uint32_t mix64(uint64_t k) { return (uint32_t)kvsim__mix64(k); }

int kvsim__u64map_init(kvsim__u64map_t *m, int64_t expected) {
  uint64_t cap = 16;
  while ((int64_t)cap < expected * 2 && cap < (UINT64_C(1) << 31))
    cap <<= 1;
  m->keys = kvsim__malloc(cap * sizeof *m->keys);
  m->vals = kvsim__malloc(cap * sizeof *m->vals);
  if (!m->keys || !m->vals) {
    kvsim__free(m->keys);
    kvsim__free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    return KVSIM_ENOMEM;
  }
  for (uint64_t i = 0; i < cap; i++)
    m->vals[i] = -1;
  m->mask = (uint32_t)(cap - 1);
  m->count = 0;
  return 0;
}

void kvsim__u64map_fini(kvsim__u64map_t *m) {
  kvsim__free(m->keys);
  kvsim__free(m->vals);
  m->keys = NULL;
  m->vals = NULL;
}

int32_t kvsim__u64map_get(const kvsim__u64map_t *m, uint64_t key) {
  for (uint32_t i = mix64(key) & m->mask;; i = (i + 1) & m->mask) {
    if (m->vals[i] < 0)
      return -1;
    if (m->keys[i] == key)
      return m->vals[i];
  }
}

static int grow(kvsim__u64map_t *m) {
  kvsim__u64map_t n;
  if (kvsim__u64map_init(&n, (int64_t)(m->mask + 1)) < 0)
    return KVSIM_ENOMEM;
  for (uint32_t i = 0; i <= m->mask; i++)
    if (m->vals[i] >= 0)
      kvsim__u64map_put(&n, m->keys[i], m->vals[i]);
  kvsim__u64map_fini(m);
  *m = n;
  return 0;
}

int kvsim__u64map_put(kvsim__u64map_t *m, uint64_t key, int32_t val) {
  if ((uint64_t)(m->count + 1) * 2 > (uint64_t)m->mask + 1 && grow(m) < 0)
    return KVSIM_ENOMEM;
  for (uint32_t i = mix64(key) & m->mask;; i = (i + 1) & m->mask) {
    if (m->vals[i] < 0) {
      m->keys[i] = key;
      m->vals[i] = val;
      m->count++;
      return 0;
    }
    if (m->keys[i] == key) {
      m->vals[i] = val;
      return 0;
    }
  }
}

void kvsim__u64map_del(kvsim__u64map_t *m, uint64_t key) {
  uint32_t i = mix64(key) & m->mask;
  for (;; i = (i + 1) & m->mask) {
    if (m->vals[i] < 0)
      return;
    if (m->keys[i] == key)
      break;
  }
  /* Backward-shift: move later members of the probe run into the hole. */
  uint32_t hole = i;
  for (uint32_t j = (i + 1) & m->mask; m->vals[j] >= 0; j = (j + 1) & m->mask) {
    uint32_t home = mix64(m->keys[j]) & m->mask;
    /* j may move to the hole if its home is not in (hole, j]. */
    bool in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
    if (!in_range) {
      m->keys[hole] = m->keys[j];
      m->vals[hole] = m->vals[j];
      hole = j;
    }
  }
  m->vals[hole] = -1;
  m->count--;
}
