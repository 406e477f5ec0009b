#include "engine/reqpool.h"

#include <string.h>

#include "core/alloc.h"

static void reset(kvsim_request_t *r) {
  /* Keep the arrays and their capacities; clear everything else. */
  kvsim_request_t keep = *r;
  memset(r, 0, sizeof *r);
  for (int g = 0; g < KVSIM_MAX_KV_GROUPS; g++) {
    r->blocks[g].ids = keep.blocks[g].ids;
    r->blocks[g].cap = keep.blocks[g].cap;
  }
  r->hashes = keep.hashes;
  r->hashes_cap = keep.hashes_cap;
  r->segs = keep.segs;
  r->segs_cap = keep.segs_cap;
  r->slot = keep.slot;
  r->arrival = r->first_scheduled = r->first_token = r->last_token = r->finish = KVSIM_TIME_NEVER;
  r->ready_at = 0;
}

kvsim_request_t *kvsim__reqpool_get(kvsim__reqpool_t *p) {
  if (p->nfree == 0) {
    kvsim_request_t **chunks = kvsim__realloc(p->chunks, (size_t)(p->nchunks + 1) * sizeof *chunks);
    if (!chunks)
      return NULL;
    p->chunks = chunks;
    kvsim_request_t *c = kvsim__calloc(KVSIM__REQ_CHUNK, sizeof *c);
    int32_t *fs = kvsim__realloc(p->free_slots, (size_t)(p->free_cap + KVSIM__REQ_CHUNK) * sizeof *fs);
    if (!c || !fs) {
      kvsim__free(c);
      if (fs)
        p->free_slots = fs;
      return NULL;
    }
    p->free_slots = fs;
    p->free_cap += KVSIM__REQ_CHUNK;
    int32_t base = p->nchunks * KVSIM__REQ_CHUNK;
    p->chunks[p->nchunks++] = c;
    /* Hand out low slots first: push in reverse. */
    for (int32_t i = KVSIM__REQ_CHUNK - 1; i >= 0; i--) {
      c[i].slot = base + i;
      p->free_slots[p->nfree++] = base + i;
    }
  }
  kvsim_request_t *r = kvsim__reqpool_at(p, p->free_slots[--p->nfree]);
  reset(r);
  p->in_use++;
  return r;
}

void kvsim__reqpool_put(kvsim__reqpool_t *p, kvsim_request_t *r) {
  p->free_slots[p->nfree++] = r->slot;
  p->in_use--;
}

void kvsim__reqpool_fini(kvsim__reqpool_t *p) {
  for (int32_t c = 0; c < p->nchunks; c++) {
    for (int32_t i = 0; i < KVSIM__REQ_CHUNK; i++) {
      kvsim_request_t *r = &p->chunks[c][i];
      for (int g = 0; g < KVSIM_MAX_KV_GROUPS; g++)
        kvsim__free(r->blocks[g].ids);
      kvsim__free(r->hashes);
      kvsim__free(r->segs);
    }
    kvsim__free(p->chunks[c]);
  }
  kvsim__free(p->chunks);
  kvsim__free(p->free_slots);
  memset(p, 0, sizeof *p);
}
