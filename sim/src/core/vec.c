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

int kvsim__grow32(void **p, int32_t *cap, int64_t need, size_t elem) {
  if (need > INT32_MAX)
    return KVSIM_ENOMEM;
  int64_t c = *cap;
  /* Capped so the doubling cannot pass INT32_MAX. */
  int rc = kvsim__grow(p, &c, need > INT32_MAX / 2 ? INT32_MAX : need, elem);
  if (rc == KVSIM_OK)
    *cap = c > INT32_MAX ? INT32_MAX : (int32_t)c;
  return rc;
}
