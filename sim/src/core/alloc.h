/* Every allocation of the library goes through these, so a test can make
 * the n-th one fail (as Lua's test build does with its failing allocator)
 * and check that an out-of-memory path loses nothing: no request dropped,
 * no half-made allocation, the pool invariants intact.
 * Internal: not part of the public API. */
#ifndef KVSIM_CORE_ALLOC_H
#define KVSIM_CORE_ALLOC_H

#include <stddef.h>
#include <stdint.h>

void *kvsim__malloc(size_t n);
void *kvsim__calloc(size_t count, size_t n);
void *kvsim__realloc(void *p, size_t n);
void kvsim__free(void *p);
/* strdup through the hook. */
char *kvsim__strdup(const char *s);

/* Test hook: after `n` more successful allocations, every one fails until
 * the hook is reset with a negative n (the default: never fail). */
void kvsim__alloc_fail_after(int64_t n);
/* Allocations refused since the hook was last set. */
int64_t kvsim__alloc_failures(void);

#endif
