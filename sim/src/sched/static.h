/* Static batching (static.c), shared with the profiles built on it
 * (hf-transformers): fixed batches that run to their longest member, each
 * row either a reservation of slot_tokens (FasterTransformer, HF
 * StaticCache) or, with `grow`, a row that starts at the padded prompt
 * length and takes one token per step (HF DynamicCache: torch.cat on the
 * [batch, heads, seq, dim] tensor). Internal to the sched room. */
#ifndef KVSIM_SCHED_STATIC_H
#define KVSIM_SCHED_STATIC_H

#include "kvsim/sched.h"

typedef struct static_sched {
  kvsim_sched_t s;
  int64_t slot_tokens; /* KV reserved per slot */
  int32_t slots;       /* batch size: min(max_num_seqs, pool / slot) */
  bool active;         /* a batch is in flight */
  bool prefilled;      /* its (padded) prefill step has run */
  bool grow;           /* rows grow per token from the padded prompt */
  int64_t pad_len;     /* the batch's longest prompt */
  int64_t max_out;     /* grow: the batch's longest output */
  int64_t decoded;     /* grow: decode steps the batch has run */
  /* Slots of finished members: placeholders that own the blocks. */
  kvsim_request_t *ghosts;
  kvsim_request_t **ghost_ptrs;
  int32_t nghosts;
  /* The prefill step's padding: per short member, a placeholder computing
   * its prompt's padding, so that the step pays for it while the member's
   * own tokens (and the waste sampling) stay real. */
  kvsim_request_t *pads;
} static_t;

/* The static profile's ops, for a profile of struct static_t (or one that
 * begins with it). */
int kvsim__static_init(kvsim_sched_t *s, bool grow, kvsim_err *err);
void kvsim__static_fini(kvsim_sched_t *s);
int kvsim__static_add(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now);
int kvsim__static_schedule(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step);
int kvsim__static_update(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step,
                         kvsim_reqvec_t *finished);
int32_t kvsim__static_held(const kvsim_sched_t *s, kvsim_request_t *const **out);

#endif
