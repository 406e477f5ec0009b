/* A pool of request objects in fixed chunks (never moved, so pointers in
 * queues stay valid), addressed by slot for events. Reused objects keep
 * the capacity of their arrays. Internal to the engine. */
#ifndef KVSIM_ENGINE_REQPOOL_H
#define KVSIM_ENGINE_REQPOOL_H

#include <stdint.h>

#include "kvsim/request.h"

#define KVSIM__REQ_CHUNK 1024

typedef struct kvsim__reqpool {
  kvsim_request_t **chunks;
  int32_t nchunks;
  int32_t *free_slots;
  int32_t nfree, free_cap;
  int32_t in_use;
} kvsim__reqpool_t;

static inline kvsim_request_t *kvsim__reqpool_at(const kvsim__reqpool_t *p, int32_t slot) {
  return &p->chunks[slot / KVSIM__REQ_CHUNK][slot % KVSIM__REQ_CHUNK];
}

/* A reset request (timestamps NEVER, counters 0), or NULL on ENOMEM. */
kvsim_request_t *kvsim__reqpool_get(kvsim__reqpool_t *p);
void kvsim__reqpool_put(kvsim__reqpool_t *p, kvsim_request_t *r);
void kvsim__reqpool_fini(kvsim__reqpool_t *p);

#endif
