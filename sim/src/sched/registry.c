/* Engine profiles: one line each. */
#include <stdio.h>
#include <string.h>

#include "kvsim/sched.h"

extern const kvsim_sched_ops_t kvsim__sched_vllm_v1;
extern const kvsim_sched_ops_t kvsim__sched_vllm_v0;
extern const kvsim_sched_ops_t kvsim__sched_static;
extern const kvsim_sched_ops_t kvsim__sched_contiguous;
extern const kvsim_sched_ops_t kvsim__sched_contiguous_pow2;

static const kvsim_sched_ops_t *const registry[] = {
    &kvsim__sched_vllm_v1,
    &kvsim__sched_vllm_v0,
    &kvsim__sched_static,
    &kvsim__sched_contiguous,
    &kvsim__sched_contiguous_pow2,
};

const kvsim_sched_ops_t *kvsim_sched_find(const char *name) {
  for (size_t i = 0; i < sizeof registry / sizeof *registry; i++)
    if (!strcmp(registry[i]->name, name))
      return registry[i];
  return NULL;
}

void kvsim_sched_names(char *buf, size_t cap) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof registry / sizeof *registry && o < cap; i++)
    o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", registry[i]->name);
}
