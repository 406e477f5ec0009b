#include "core/heap.h"

#include <assert.h>
#include <string.h>

#define AT(i) ((char *)base + (size_t)(i) * elem)

void kvsim__heap_up(void *base, size_t elem, int64_t i, kvsim__heap_less less) {
  unsigned char x[64];
  assert(elem <= sizeof x);
  memcpy(x, AT(i), elem);
  while (i > 0) {
    int64_t parent = (i - 1) / 2;
    if (!less(x, AT(parent)))
      break;
    memcpy(AT(i), AT(parent), elem);
    i = parent;
  }
  memcpy(AT(i), x, elem);
}

void kvsim__heap_down(void *base, size_t elem, int64_t n, int64_t i, kvsim__heap_less less) {
  unsigned char x[64];
  assert(elem <= sizeof x);
  memcpy(x, AT(i), elem);
  for (;;) {
    int64_t l = 2 * i + 1, m = i;
    const void *best = x;
    if (l < n && less(AT(l), best)) {
      m = l;
      best = AT(l);
    }
    if (l + 1 < n && less(AT(l + 1), best))
      m = l + 1;
    if (m == i)
      break;
    memcpy(AT(i), AT(m), elem);
    i = m;
  }
  memcpy(AT(i), x, elem);
}

void kvsim__heap_pop(void *base, size_t elem, int64_t n, void *out, kvsim__heap_less less) {
  memcpy(out, AT(0), elem);
  if (--n > 0) {
    memcpy(AT(0), AT(n), elem);
    kvsim__heap_down(base, elem, n, 0, less);
  }
}
