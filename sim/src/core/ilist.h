/* One doubly linked list over int32 indices, for LRU orders: the CPU
 * tier's offloaded slots and `trace stats`' LRU caches (the block pool
 * links its free queue through its per-block records instead, pool.c). The links live in the
 * owner's arrays (prev[i], next[i]; -1 = none) and its head and tail (-1
 * = empty), so the list allocates nothing and the owners' public structs
 * keep their fields. Internal: not part of the public API. */
#ifndef KVSIM_CORE_ILIST_H
#define KVSIM_CORE_ILIST_H

#include <stdint.h>

typedef struct kvsim__ilist {
  int32_t *prev, *next; /* the owner's link arrays */
  int32_t *head, *tail; /* the owner's ends */
} kvsim__ilist_t;

/* Takes i out of the list (it must be in it); its links become -1. */
static inline void kvsim__ilist_unlink(kvsim__ilist_t l, int32_t i) {
  int32_t pr = l.prev[i], nx = l.next[i];
  if (pr >= 0)
    l.next[pr] = nx;
  else
    *l.head = nx;
  if (nx >= 0)
    l.prev[nx] = pr;
  else
    *l.tail = pr;
  l.prev[i] = l.next[i] = -1;
}

/* Appends i (not in the list) at the tail: the most recent end. */
static inline void kvsim__ilist_push_tail(kvsim__ilist_t l, int32_t i) {
  l.prev[i] = *l.tail;
  l.next[i] = -1;
  if (*l.tail >= 0)
    l.next[*l.tail] = i;
  else
    *l.head = i;
  *l.tail = i;
}

#endif
