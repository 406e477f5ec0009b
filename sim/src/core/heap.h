/* One binary min-heap for every room, over an array the caller owns:
 * sift an element up or down with the caller's strict order `less`.
 * Ties must be broken by the order itself (e.g. (time, seq)), never left
 * to the heap. Internal: not part of the public API. */
#ifndef KVSIM_CORE_HEAP_H
#define KVSIM_CORE_HEAP_H

#include <stddef.h>
#include <stdint.h>

typedef int (*kvsim__heap_less)(const void *a, const void *b);

/* base[0..n) is a heap except maybe at i; restore it. elem <= 64 bytes. */
void kvsim__heap_up(void *base, size_t elem, int64_t i, kvsim__heap_less less);
void kvsim__heap_down(void *base, size_t elem, int64_t n, int64_t i, kvsim__heap_less less);
/* Removes base[0] into *out (elem bytes); the heap shrinks to n - 1. */
void kvsim__heap_pop(void *base, size_t elem, int64_t n, void *out, kvsim__heap_less less);

#endif
