#include "core/vec.h"

int kvsim__grow(void **p, int64_t *cap, int64_t need, size_t elem) {
  if (need <= *cap)
    return KVSIM_OK;
  int64_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > INT64_MAX / 2)
      return KVSIM_ENOMEM;
    c *= 2;
  }
  if ((uint64_t)c > SIZE_MAX / elem)
    return KVSIM_ENOMEM;
  void *n = kvsim__realloc(*p, (size_t)c * elem);
  if (!n)
    return KVSIM_ENOMEM;
  *p = n;
  *cap = c;
  return KVSIM_OK;
}
