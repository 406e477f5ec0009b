/* The hand-off of a disaggregated request's KV from a prefill instance to
 * a decode instance: who holds which blocks when, the decode side's
 * pre-allocation queue, and the transfers on the link. Internal to the
 * engine; the run loop (disagg_run.c) drives it, tests/unit/test_handoff.c
 * checks its accounting.
 *
 * A request is two request objects: `pre` (prompt, max_tokens=1) in a
 * prefill instance's scheduler and pool, `dec` (the request as sent) in a
 * decode instance's. Its hand-off goes through:
 *   PREFILL   pre in the prefill engine (vLLM: from arrival; SGLang: once
 *             the decode side has pre-allocated, see BOOTSTRAP)
 *   BOOTSTRAP (SGLang) waiting for decode blocks before the prefill runs
 *   PREALLOC  (vLLM) pre finished, its blocks held, waiting for decode blocks
 *   QUEUED    both sides hold the prompt's blocks; waiting for the link
 *   XFER      on the link
 *   DONE      pre's blocks freed; dec in the decode engine
 * With chunk transfers (h->chunked) an entry in PREFILL may also queue and
 * send the full blocks its prefill has computed so far (QUEUED and XFER
 * then name only the last send, of the rest, after the prefill): one send
 * of an entry on the link at a time, each block sent once.
 * With layer transfers (h->layered, vLLM flow) every prefill step's blocks
 * go on the link layer by layer during the step (kvsim__handoff_layer):
 * the send is timed as if it began when the step's first layer finished,
 * and the last send after the prefill moves nothing and only waits for the
 * link; a prefill preempted after some of its layers went (vLLM's
 * recompute) does not send them again, the receiver has them (LMCache's
 * RequestTracker.update resets num_saved_tokens to what LMCache holds),
 * so while it recomputes it may have sent more blocks than it holds;
 * pre's blocks are freed when both the last layer's send has ended
 * and the decode side has its blocks (kvsim keeps no receive buffer
 * outside the decode pool). Layer sends take only the prefill instance's
 * link (the decode instance is picked after the prefill).
 * Blocks: pre holds its prompt's blocks from its prefill until DONE; dec
 * holds the prompt's blocks from its allocation (QUEUED, or BOOTSTRAP's
 * end) on. No block is held by two entries, and each pool's used blocks
 * are its scheduler's requests' plus its hand-off holds
 * (kvsim__handoff_check). */
#ifndef KVSIM_ENGINE_HANDOFF_H
#define KVSIM_ENGINE_HANDOFF_H

#include <stdbool.h>

#include "core/vec.h"
#include "kvsim/disagg.h"
#include "kvsim/kvcache.h"
#include "kvsim/request.h"

typedef enum {
  KVSIM__HO_FREE = 0,
  KVSIM__HO_PREFILL,
  KVSIM__HO_BOOTSTRAP,
  KVSIM__HO_PREALLOC,
  KVSIM__HO_QUEUED,
  KVSIM__HO_XFER,
  KVSIM__HO_DONE
} kvsim__ho_state;

typedef struct kvsim__handoff_entry {
  kvsim_request_t *pre, *dec;
  int32_t p, d;          /* prefill and decode instance */
  kvsim__ho_state state;
  int64_t pre_blocks;    /* blocks pre holds while held (PREALLOC .. XFER) */
  bool dec_alloc;        /* dec holds the prompt's decode blocks */
  int64_t bytes;         /* KV bytes to move, over all TP ranks */
  kvsim_time_ns waiting_since, xfer_start;
  /* Chunk transfers: blocks computed and ready to send, blocks sent or on
   * the link, the send on the link now (blocks, bytes), whether the entry
   * waits in the transfer queue or has a send on the link, and the link
   * time of its sends so far. */
  int64_t ready_blocks, sent_blocks, send_blocks, send_bytes;
  bool queued, on_link;
  bool holds_p, holds_d; /* the send on the link holds the prefill / decode endpoint */
  double link_s;
  /* Layer transfers: the step whose blocks are ready (its start and end),
   * when the prefill ended, and when its last layer send ended. */
  kvsim_time_ns step_start, step_end, prefill_end, layers_end;
} kvsim__handoff_entry_t;

/* One side's instances as the hand-off sees them. */
typedef struct kvsim__handoff_side {
  int32_t n;
  kvsim_kvcache_t **kv;   /* each instance's KV manager (not owned) */
  int32_t tp;
  int64_t block_bytes_all_ranks; /* one block over every TP (and PP) rank */
  int32_t layers;                /* the model's layers (layer transfers' sends per step) */
} kvsim__handoff_side_t;

typedef struct kvsim__handoff {
  kvsim_disagg_cfg_t cfg;
  kvsim__handoff_side_t side[2];
  bool chunked;                         /* chunk transfers (kvsim_disagg_unit CHUNK) */
  bool layered;                         /* layer transfers (kvsim_disagg_unit LAYER) */
  kvsim_time_ns *p_free;                /* per prefill instance: when its link last fell idle */
  kvsim__vec(kvsim__handoff_entry_t) e; /* indexed by dec's slot */
  kvsim__vec(int32_t) dec_of;           /* pre's slot -> dec's slot */
  /* Per decode instance: FIFO of entries waiting for its blocks. */
  kvsim__vec(int32_t) *waitq;
  int64_t *waitq_head;
  kvsim__vec(int32_t) xferq;            /* QUEUED entries, in order */
  bool *p_busy, *d_busy;                /* an endpoint's link carries a transfer */
  int64_t *held;                        /* per prefill instance: blocks held */
  int64_t *inbound;                     /* per decode instance: allocated, not yet in its engine */
  int64_t bytes_in_flight, in_flight, prealloc_waiting, held_reqs;
  kvsim_disagg_stats_t st;
} kvsim__handoff_t;

/* unit: REQUEST, CHUNK or LAYER (the run's, resolved from the profile). */
int kvsim__handoff_init(kvsim__handoff_t *h, const kvsim_disagg_cfg_t *cfg, kvsim_disagg_unit unit,
                        const kvsim__handoff_side_t *prefill, const kvsim__handoff_side_t *decode,
                        kvsim_err *err);
void kvsim__handoff_fini(kvsim__handoff_t *h);

/* A new request: pre goes to prefill instance p, dec (already prepared on
 * its decode instance's KV manager) will go to decode instance d (vLLM
 * picks d when the prefill is done: pass -1 and set it with _prefill_done).
 * Marks pre hold_kv. KVSIM_ENOMEM. */
int kvsim__handoff_add(kvsim__handoff_t *h, kvsim_request_t *pre, kvsim_request_t *dec, int32_t p,
                       int32_t d, kvsim__ho_state first, kvsim_time_ns now, kvsim_err *err);
/* The entry of a request object (pre or dec), or NULL. */
kvsim__handoff_entry_t *kvsim__handoff_of(kvsim__handoff_t *h, const kvsim_request_t *r);

/* pre finished its prefill with its blocks kept. vLLM: it waits for
 * decode instance d's blocks (PREALLOC); SGLang: its decode blocks are
 * already there (QUEUED). KVSIM_ENOMEM. */
int kvsim__handoff_prefill_done(kvsim__handoff_t *h, kvsim__handoff_entry_t *e, int32_t d,
                                kvsim_time_ns now, kvsim_err *err);

/* Chunk transfers: pre's prefill has computed `computed` prompt tokens
 * and goes on; its full blocks not yet sent join the transfer queue (the
 * partial last block waits for the next chunk, as SGLang's send_kv_chunk
 * with last_chunk=False). No-op unless h->chunked and e's decode blocks
 * are allocated. */
void kvsim__handoff_chunk(kvsim__handoff_t *h, kvsim__handoff_entry_t *e, int64_t computed,
                          kvsim_time_ns now);

/* Layer transfers: pre's prefill step [step_start, step_end] has computed
 * `computed` prompt tokens (`last`: the whole prompt). The blocks it
 * completed (full ones; all pre holds after the last step) join the
 * transfer queue as the step's layer sends. No-op unless h->layered and e
 * is still in PREFILL. */
void kvsim__handoff_layer(kvsim__handoff_t *h, kvsim__handoff_entry_t *e, int64_t computed,
                          bool last, kvsim_time_ns step_start, kvsim_time_ns step_end);

/* Allocates decode instance d's blocks to the entries waiting for them,
 * in order, while `room` allows: blocks for the prompt free in its pool
 * and (`max_seqs`) fewer than that many requests running + inbound;
 * `reserve_tokens` per running or inbound request are kept free besides
 * (SGLang's num_reserved_decode_tokens; 0 for vLLM). Head of line: stops
 * at the first that does not fit. Entries allocated leave BOOTSTRAP for
 * PREFILL (their `pre` is returned in `started` for the caller to put in
 * its prefill engine) or PREALLOC for QUEUED. Returns how many were
 * allocated, or KVSIM_ENOMEM. */
int kvsim__handoff_alloc(kvsim__handoff_t *h, int32_t d, int64_t running, int64_t max_seqs,
                         int64_t reserve_tokens, kvsim_time_ns now, kvsim_request_t **started,
                         int32_t started_cap, int32_t *nstarted, kvsim_err *err);

/* Starts every QUEUED transfer whose two endpoints are idle (a layer
 * send: its prefill instance's; the last send after layer sends: none),
 * in order:
 * their entries go to XFER and their indices (dec slots) and end times to
 * the arrays (room for the queue's length). Returns how many started. */
int32_t kvsim__handoff_start(kvsim__handoff_t *h, kvsim_time_ns now, int32_t *slots, kvsim_time_ns *ends,
                             int32_t cap);

/* A send of entry `slot` ended and its endpoints are idle. Its last send
 * (the whole request, or the rest after the prefill): pre's blocks are
 * freed (pre is then the caller's to recycle), the entry DONE and dec
 * ready for its decode engine (still counted inbound until
 * kvsim__handoff_landed); returns the entry. A chunk before it: the entry
 * queues again if it has more to send; returns NULL. */
kvsim__handoff_entry_t *kvsim__handoff_done(kvsim__handoff_t *h, int32_t slot, kvsim_time_ns now);
/* dec entered its decode engine: the entry is released. */
void kvsim__handoff_landed(kvsim__handoff_t *h, kvsim__handoff_entry_t *e);

/* A transfer queue and prealloc queue sample (transfer.csv's columns). */
void kvsim__handoff_sample(const kvsim__handoff_t *h, kvsim_disagg_sample_t *s);

/* The hand-off's accounting against the pools: every held count equals
 * the blocks its requests hold, and each pool's references (the sum of
 * its blocks' ref counts: a block shared by a prefix counts once per
 * holder) are the scheduler's requests' (`sched_blocks[i]`, per instance,
 * prefill instances first) plus the hand-off's: no block lost, none
 * counted twice. KVSIM_EINVAL naming the first difference. */
int kvsim__handoff_check(const kvsim__handoff_t *h, const int64_t *sched_blocks, kvsim_err *err);

#endif
