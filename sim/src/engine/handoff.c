/* The hand-off's accounting (handoff.h). */
#include "engine/handoff.h"

#include <string.h>

#include "core/alloc.h"

int kvsim__handoff_init(kvsim__handoff_t *h, const kvsim_disagg_cfg_t *cfg, kvsim_disagg_unit unit,
                        const kvsim__handoff_side_t *prefill, const kvsim__handoff_side_t *decode,
                        kvsim_err *err) {
  memset(h, 0, sizeof *h);
  h->cfg = *cfg;
  h->side[KVSIM_SIDE_PREFILL] = *prefill;
  h->side[KVSIM_SIDE_DECODE] = *decode;
  const size_t np = (size_t)prefill->n, nd = (size_t)decode->n;
  h->waitq = kvsim__calloc(nd, sizeof *h->waitq);
  h->waitq_head = kvsim__calloc(nd, sizeof *h->waitq_head);
  h->p_busy = kvsim__calloc(np, sizeof *h->p_busy);
  h->d_busy = kvsim__calloc(nd, sizeof *h->d_busy);
  h->held = kvsim__calloc(np, sizeof *h->held);
  h->inbound = kvsim__calloc(nd, sizeof *h->inbound);
  h->p_free = kvsim__calloc(np, sizeof *h->p_free);
  if (!h->waitq || !h->waitq_head || !h->p_busy || !h->d_busy || !h->held || !h->inbound ||
      !h->p_free)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for the KV hand-off");
  h->chunked = unit == KVSIM_DISAGG_UNIT_CHUNK;
  h->layered = unit == KVSIM_DISAGG_UNIT_LAYER;
  h->st.unit = h->chunked   ? KVSIM_DISAGG_UNIT_CHUNK
               : h->layered ? KVSIM_DISAGG_UNIT_LAYER
                            : KVSIM_DISAGG_UNIT_REQUEST;
  h->st.prefill_replicas = prefill->n;
  h->st.decode_replicas = decode->n;
  return KVSIM_OK;
}

void kvsim__handoff_fini(kvsim__handoff_t *h) {
  for (int32_t i = 0; h->waitq && i < h->side[KVSIM_SIDE_DECODE].n; i++)
    kvsim__vec_free(&h->waitq[i]);
  kvsim__free(h->waitq);
  kvsim__free(h->waitq_head);
  kvsim__free(h->p_busy);
  kvsim__free(h->d_busy);
  kvsim__free(h->held);
  kvsim__free(h->inbound);
  kvsim__free(h->p_free);
  kvsim__vec_free(&h->e);
  kvsim__vec_free(&h->dec_of);
  kvsim__vec_free(&h->xferq);
  memset(h, 0, sizeof *h);
}

/* Grows a slot-indexed vector to hold index `slot`. */
#define GROW_TO(vec, slot)                                                           \
  (kvsim__vec_reserve((vec), (int64_t)(slot) + 1) < 0                                \
       ? KVSIM_ENOMEM                                                                \
       : ((vec)->n <= (slot) ? (memset((vec)->v + (vec)->n, 0,                       \
                                       (size_t)((slot) + 1 - (vec)->n) * sizeof *(vec)->v), \
                                (vec)->n = (slot) + 1, KVSIM_OK)                    \
                             : KVSIM_OK))

static int enqueue(kvsim__handoff_t *h, int32_t d, int32_t slot, kvsim_err *err) {
  if (kvsim__vec_push(&h->waitq[d], slot) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for the decode pre-allocation queue");
  h->prealloc_waiting++;
  if (h->prealloc_waiting > h->st.prealloc_queue_peak)
    h->st.prealloc_queue_peak = h->prealloc_waiting;
  return KVSIM_OK;
}

int kvsim__handoff_add(kvsim__handoff_t *h, kvsim_request_t *pre, kvsim_request_t *dec, int32_t p,
                       int32_t d, kvsim__ho_state first, kvsim_time_ns now, kvsim_err *err) {
  /* The transfer queue holds an entry at most once (its `queued` flag):
   * room for every entry now, so that queueing never fails. */
  if (GROW_TO(&h->e, dec->slot) < 0 || GROW_TO(&h->dec_of, pre->slot) < 0 ||
      kvsim__vec_reserve(&h->xferq, h->e.n) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for the KV hand-off");
  kvsim__handoff_entry_t *e = &h->e.v[dec->slot];
  *e = (kvsim__handoff_entry_t){.pre = pre, .dec = dec, .p = p, .d = d, .state = first,
                                .waiting_since = now};
  h->dec_of.v[pre->slot] = dec->slot;
  pre->hold_kv = true;
  /* SGLang: the request waits in the prefill's bootstrap queue until its
   * decode instance has pre-allocated (disaggregation/prefill.py
   * PrefillBootstrapQueue.pop_bootstrapped; decode.py DecodePreallocQueue). */
  return first == KVSIM__HO_BOOTSTRAP ? enqueue(h, d, dec->slot, err) : KVSIM_OK;
}

kvsim__handoff_entry_t *kvsim__handoff_of(kvsim__handoff_t *h, const kvsim_request_t *r) {
  if (r->slot < h->e.n && h->e.v[r->slot].state != KVSIM__HO_FREE && h->e.v[r->slot].dec == r)
    return &h->e.v[r->slot];
  if (r->slot < h->dec_of.n) {
    int32_t s = h->dec_of.v[r->slot];
    if (s < h->e.n && h->e.v[s].state != KVSIM__HO_FREE && h->e.v[s].pre == r)
      return &h->e.v[s];
  }
  return NULL;
}

/* e joins the transfer queue unless it is there or has a send on the
 * link (kvsim__handoff_done queues it again then). Room was reserved when
 * the entry was added: the queue never outgrows the entries. */
static void enqueue_send(kvsim__handoff_t *h, kvsim__handoff_entry_t *e) {
  if (e->queued || e->on_link)
    return;
  e->queued = true;
  h->xferq.v[h->xferq.n++] = e->dec->slot;
  if (h->xferq.n > h->st.transfer_queue_peak)
    h->st.transfer_queue_peak = h->xferq.n;
}

/* e's last send (the whole request, or the rest after the prefill) waits
 * for the link. */
static void to_xferq(kvsim__handoff_t *h, kvsim__handoff_entry_t *e, kvsim_time_ns now) {
  e->state = KVSIM__HO_QUEUED;
  e->waiting_since = now;
  enqueue_send(h, e);
}

void kvsim__handoff_chunk(kvsim__handoff_t *h, kvsim__handoff_entry_t *e, int64_t computed,
                          kvsim_time_ns now) {
  (void)now;
  if (!h->chunked || !e->dec_alloc || e->state != KVSIM__HO_PREFILL)
    return;
  /* Only full pages leave before the last chunk (send_kv_chunk:
   * end_idx - end_idx % page_size). */
  int64_t full = computed / h->side[KVSIM_SIDE_PREFILL].kv[e->p]->block_size;
  if (full > e->ready_blocks)
    e->ready_blocks = full;
  if (e->ready_blocks > e->sent_blocks)
    enqueue_send(h, e);
}

void kvsim__handoff_layer(kvsim__handoff_t *h, kvsim__handoff_entry_t *e, int64_t computed,
                          bool last, kvsim_time_ns step_start, kvsim_time_ns step_end) {
  if (!h->layered || e->state != KVSIM__HO_PREFILL)
    return;
  /* The step's forward saved every layer of the tokens it computed
   * (vLLM: attention/layer.py maybe_save_kv_layer_to_connector ->
   * KVConnectorBase_V1.save_kv_layer per layer, wait_for_save at the
   * forward's end). LMCache (vllm_v1_adapter.py, use_layerwise) saves each
   * step's new tokens past skip_leading_tokens, as here; P2pNcclConnector
   * (build_connector_meta skips a chunked prompt until its last chunk)
   * sends the whole prompt's layers in the last chunk's forward, the same
   * for an unchunked prompt. kvsim moves whole blocks as the other units
   * do: a chunk's full blocks, all of them after the last. */
  const kvsim_kvcache_t *kv = h->side[KVSIM_SIDE_PREFILL].kv[e->p];
  int64_t ready = last ? kvsim_kvcache_held(kv, e->pre) : computed / kv->block_size;
  if (ready > e->ready_blocks)
    e->ready_blocks = ready;
  e->step_start = step_start;
  e->step_end = step_end;
  if (e->ready_blocks > e->sent_blocks)
    enqueue_send(h, e);
}

/* The end of a step's layer sends of `bytes` that may start at `now`
 * (the prefill's link idle since p_free): layer i's share is ready when
 * its forward ends, step_start + i T/L, and the link sends the shares in
 * order, each paying the link's latency (one send per layer, as
 * P2pNcclConnector.save_kv_layer). The last share ends at
 * max(first start + L b, step_end + b), b one share's link time. */
static kvsim_time_ns layer_send_end(const kvsim__handoff_t *h, const kvsim__handoff_entry_t *e,
                                    int64_t bytes, kvsim_time_ns now, kvsim_time_ns *start) {
  const int32_t L = h->side[KVSIM_SIDE_PREFILL].layers > 0 ? h->side[KVSIM_SIDE_PREFILL].layers : 1;
  const double b = 1e9 * kvsim_disagg_transfer_s(&h->cfg, bytes / L, h->side[KVSIM_SIDE_PREFILL].tp,
                                                 h->side[KVSIM_SIDE_DECODE].tp);
  const double T = (double)(e->step_end - e->step_start);
  double r1 = (double)e->step_start + T / L, idle = (double)h->p_free[e->p];
  double first = idle > r1 ? idle : r1;
  if (first > (double)now) /* not before the link is free now */
    first = (double)now;
  double end = first + L * b, tail = (double)e->step_end + b;
  if (tail > end)
    end = tail;
  kvsim_time_ns t = (kvsim_time_ns)end;
  if (t <= now)
    t = now + 1;
  /* The link time is the shares' own (L b), not the gaps between layers:
   * the send is counted as if it ran in one piece up to its end. */
  *start = t - (kvsim_time_ns)(L * b);
  return t;
}

/* What the prefill side holds for e from now until the transfer is done;
 * the bytes to move are its blocks over every rank (the connectors move
 * whole blocks: NixlConnectorWorker._read_blocks by block ids). */
static void hold(kvsim__handoff_t *h, kvsim__handoff_entry_t *e) {
  const kvsim__handoff_side_t *ps = &h->side[KVSIM_SIDE_PREFILL];
  e->pre_blocks = kvsim_kvcache_held(ps->kv[e->p], e->pre);
  e->bytes = e->pre_blocks * ps->block_bytes_all_ranks;
  h->held[e->p] += e->pre_blocks;
  h->held_reqs++;
  if (h->held[e->p] > h->st.held_blocks_peak)
    h->st.held_blocks_peak = h->held[e->p];
}

int kvsim__handoff_prefill_done(kvsim__handoff_t *h, kvsim__handoff_entry_t *e, int32_t d,
                                kvsim_time_ns now, kvsim_err *err) {
  if (kvsim__vec_reserve(&h->xferq, h->xferq.n + 1) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for the transfer queue");
  hold(h, e);
  e->prefill_end = now;
  if (e->dec_alloc) { /* SGLang: decode blocks are there; send now */
    to_xferq(h, e, now);
    return KVSIM_OK;
  }
  e->d = d;
  e->state = KVSIM__HO_PREALLOC;
  e->waiting_since = now;
  return enqueue(h, d, e->dec->slot, err);
}

int kvsim__handoff_alloc(kvsim__handoff_t *h, int32_t d, int64_t running, int64_t max_seqs,
                         int64_t reserve_tokens, kvsim_time_ns now, kvsim_request_t **started,
                         int32_t started_cap, int32_t *nstarted, kvsim_err *err) {
  kvsim_kvcache_t *kv = h->side[KVSIM_SIDE_DECODE].kv[d];
  int allocated = 0;
  *nstarted = 0;
  while (h->waitq_head[d] < h->waitq[d].n) {
    kvsim__handoff_entry_t *e = &h->e.v[h->waitq[d].v[h->waitq_head[d]]];
    if (running + h->inbound[d] >= max_seqs)
      break;
    /* SGLang keeps num_reserved_decode_tokens free for every running and
     * incoming request (decode.py DecodePreallocQueue._allocatable_tokens). */
    int64_t free_tokens = (int64_t)kvsim_pool_num_free(&kv->pool) * kv->block_size;
    int64_t need = kvsim_kvcache_blocks_for(kv, e->dec->num_prompt) * kv->block_size;
    if (free_tokens - reserve_tokens * (running + h->inbound[d]) < need)
      break;
    if (e->state == KVSIM__HO_BOOTSTRAP && *nstarted >= started_cap)
      break;
    if (kvsim__vec_reserve(&h->xferq, h->xferq.n + 1) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for the transfer queue");
    /* vLLM's decode side looks its own prefix cache up first and pulls
     * only the rest (Scheduler.schedule: get_computed_blocks, then the
     * connector's get_num_new_matched_tokens counts the prompt beyond the
     * local hit). SGLang's pre-allocation takes the whole prompt. */
    int64_t hit = 0;
    if (h->cfg.flow == KVSIM_DISAGG_FLOW_VLLM && kv->prefix_caching &&
        (hit = kvsim_kvcache_lookup(kv, e->dec, false)) < 0)
      return kvsim_err_set(err, (int)hit, "decode instance %d: out of memory for a prefix lookup", d);
    /* The prompt's slots (vLLM: allocate_slots with the external tokens,
     * Scheduler.schedule for a request whose connector reports
     * load_kv_async; SGLang: DecodePreallocQueue._pre_alloc). */
    int rc = kvsim_kvcache_allocate(kv, e->dec, hit, e->dec->num_prompt - hit, 0);
    if (rc < 0)
      return kvsim_err_set(err, rc, "decode instance %d: out of memory for a block table", d);
    if (rc == 0)
      break; /* head of line, as the engines' waiting queues */
    if (hit > 0) {
      /* The blocks found need no transfer: the prefill side's whole blocks
       * that they cover leave the bytes to move. */
      const kvsim__handoff_side_t *ps = &h->side[KVSIM_SIDE_PREFILL];
      int64_t covered = hit / ps->kv[e->p]->block_size;
      int64_t keep = e->pre_blocks - covered;
      e->bytes = (keep > 0 ? keep : 0) * ps->block_bytes_all_ranks;
      h->st.decode_hit_tokens += hit;
    }
    e->dec_alloc = true;
    h->inbound[d]++;
    h->waitq_head[d]++;
    h->prealloc_waiting--;
    allocated++;
    double waited = (double)(now - e->waiting_since) / 1e9;
    h->st.handoff_wait_s_sum += waited;
    if (waited > h->st.handoff_wait_s_max)
      h->st.handoff_wait_s_max = waited;
    if (e->state == KVSIM__HO_BOOTSTRAP) {
      e->state = KVSIM__HO_PREFILL;
      started[(*nstarted)++] = e->pre;
    } else {
      to_xferq(h, e, now);
    }
  }
  /* Reuse the consumed front. */
  if (h->waitq_head[d] == h->waitq[d].n)
    h->waitq[d].n = h->waitq_head[d] = 0;
  return allocated;
}

int32_t kvsim__handoff_start(kvsim__handoff_t *h, kvsim_time_ns now, int32_t *slots, kvsim_time_ns *ends,
                             int32_t cap) {
  int32_t started = 0;
  int64_t w = 0;
  const int32_t tp_p = h->side[KVSIM_SIDE_PREFILL].tp, tp_d = h->side[KVSIM_SIDE_DECODE].tp;
  for (int64_t i = 0; i < h->xferq.n; i++) {
    int32_t s = h->xferq.v[i];
    kvsim__handoff_entry_t *e = &h->e.v[s];
    /* One transfer at a time per endpoint: a prefill instance's NICs
     * serve its pulls in turn, a decode instance's receive one request's
     * blocks at a time. */
    /* Layer transfers: blocks the prefill computed go first, as layer
     * sends (only the prefill's link: the decode side is picked later);
     * the last send after them moves nothing and holds no endpoint. */
    const bool layer = h->layered && e->ready_blocks > e->sent_blocks;
    const bool last_of_layers = h->layered && !layer;
    if (started >= cap || (!last_of_layers && h->p_busy[e->p]) ||
        (!layer && !last_of_layers && h->d_busy[e->d])) {
      h->xferq.v[w++] = s;
      continue;
    }
    e->holds_p = !last_of_layers;
    e->holds_d = !layer && !last_of_layers;
    if (e->holds_p)
      h->p_busy[e->p] = true;
    if (e->holds_d)
      h->d_busy[e->d] = true;
    /* The send: after the prefill, what is left of the request (all of it
     * unless chunks went before); during it, the blocks computed since the
     * last send. Each block leaves once. */
    const int64_t bb = h->side[KVSIM_SIDE_PREFILL].block_bytes_all_ranks;
    if (layer) {
      e->send_blocks = e->ready_blocks - e->sent_blocks;
      e->send_bytes = e->send_blocks * bb;
    } else if (e->state == KVSIM__HO_QUEUED) {
      e->state = KVSIM__HO_XFER;
      e->send_blocks = e->pre_blocks - e->sent_blocks;
      e->send_bytes = e->bytes - e->sent_blocks * bb;
    } else {
      e->send_blocks = e->ready_blocks - e->sent_blocks;
      e->send_bytes = e->send_blocks * bb;
    }
    if (e->send_blocks < 0)
      e->send_blocks = 0;
    if (e->send_bytes < 0)
      e->send_bytes = 0;
    e->sent_blocks += e->send_blocks;
    e->queued = false;
    e->on_link = true;
    e->xfer_start = now;
    kvsim_time_ns end;
    if (layer) {
      end = layer_send_end(h, e, e->send_bytes, now, &e->xfer_start);
    } else {
      double secs =
          last_of_layers ? 0 : kvsim_disagg_transfer_s(&h->cfg, e->send_bytes, tp_p, tp_d);
      kvsim_time_ns dt = (kvsim_time_ns)(secs * 1e9);
      end = now + (dt > 0 ? dt : 1);
    }
    slots[started] = s;
    ends[started++] = end;
    h->bytes_in_flight += e->send_bytes;
    h->in_flight++;
    if (h->bytes_in_flight > h->st.bytes_in_flight_peak)
      h->st.bytes_in_flight_peak = h->bytes_in_flight;
  }
  h->xferq.n = w;
  return started;
}

kvsim__handoff_entry_t *kvsim__handoff_done(kvsim__handoff_t *h, int32_t slot, kvsim_time_ns now) {
  kvsim__handoff_entry_t *e = &h->e.v[slot];
  if (e->holds_p) {
    h->p_busy[e->p] = false;
    h->p_free[e->p] = now;
  }
  if (e->holds_d)
    h->d_busy[e->d] = false;
  e->holds_p = e->holds_d = false;
  h->bytes_in_flight -= e->send_bytes;
  h->in_flight--;
  h->st.bytes_transferred += e->send_bytes;
  e->on_link = false;
  double secs = (double)(now - e->xfer_start) / 1e9;
  e->link_s += secs;
  if (e->state != KVSIM__HO_XFER) {
    /* A chunk: the next waits for more blocks, or for the prefill's end. */
    h->st.chunk_sends++;
    e->layers_end = now;
    if (e->state == KVSIM__HO_QUEUED || e->ready_blocks > e->sent_blocks)
      enqueue_send(h, e);
    return NULL;
  }
  h->st.transfers++;
  h->st.transfer_s_sum += e->link_s;
  /* Layer sends: what the TTFT waits for after the prefill is the link's
   * tail past the step's end. */
  h->st.transfer_exposed_s_sum +=
      h->layered
          ? (e->layers_end > e->prefill_end ? (double)(e->layers_end - e->prefill_end) / 1e9 : 0)
          : secs;
  if (e->link_s > h->st.transfer_s_max)
    h->st.transfer_s_max = e->link_s;
  /* The decode side reported the pull done: the prefill side frees
   * (vLLM: get_finished's done_sending -> Scheduler._update_from_kv_xfer_finished
   * frees the blocks; SGLang: the inflight queue releases on KVPoll.Success). */
  kvsim_kvcache_free(h->side[KVSIM_SIDE_PREFILL].kv[e->p], e->pre);
  h->held[e->p] -= e->pre_blocks;
  h->held_reqs--;
  e->pre_blocks = 0;
  e->pre->hold_kv = false;
  e->state = KVSIM__HO_DONE;
  return e;
}

void kvsim__handoff_landed(kvsim__handoff_t *h, kvsim__handoff_entry_t *e) {
  h->inbound[e->d]--;
  if (e->pre->slot < h->dec_of.n)
    h->dec_of.v[e->pre->slot] = 0;
  memset(e, 0, sizeof *e);
}

void kvsim__handoff_sample(const kvsim__handoff_t *h, kvsim_disagg_sample_t *s) {
  int64_t held = 0;
  for (int32_t i = 0; i < h->side[KVSIM_SIDE_PREFILL].n; i++)
    held += h->held[i];
  s->prefill_blocks_held = held;
  s->prefill_inflight = h->held_reqs;
  s->prealloc_queue = h->prealloc_waiting;
  s->transfer_queue = h->xferq.n;
  s->transfers_in_flight = h->in_flight;
  s->bytes_in_flight = h->bytes_in_flight;
}

int kvsim__handoff_check(const kvsim__handoff_t *h, const int64_t *sched_blocks, kvsim_err *err) {
  const int32_t np = h->side[KVSIM_SIDE_PREFILL].n, nd = h->side[KVSIM_SIDE_DECODE].n;
  int64_t *mine = kvsim__calloc((size_t)(np + nd), sizeof *mine);
  if (!mine)
    return kvsim_err_set(err, KVSIM_ENOMEM, "hand-off check: out of memory");
  int rc = KVSIM_OK;
  int64_t link_bytes = 0, on_link = 0, queued = 0;
  for (int64_t s = 0; s < h->e.n && rc == KVSIM_OK; s++) {
    const kvsim__handoff_entry_t *e = &h->e.v[s];
    if (e->state == KVSIM__HO_FREE)
      continue;
    link_bytes += e->on_link ? e->send_bytes : 0;
    on_link += e->on_link;
    queued += e->queued;
    /* Chunk sends never pass what pre's prefill holds: no block leaves
     * twice (a layered prefill preempted after some of its layers went
     * recomputes what the receiver already has: it sends only past them). */
    const bool recomputing =
        h->layered && e->state == KVSIM__HO_PREFILL && e->pre->num_preemptions > 0;
    if (e->sent_blocks > 0 && e->state != KVSIM__HO_DONE && !recomputing &&
        e->sent_blocks > kvsim_kvcache_held(h->side[KVSIM_SIDE_PREFILL].kv[e->p], e->pre)) {
      rc = kvsim_err_set(
          err, KVSIM_EINVAL, "hand-off: request %llu sent %lld blocks of %lld held",
          (unsigned long long)e->dec->spec.id, (long long)e->sent_blocks,
          (long long)kvsim_kvcache_held(h->side[KVSIM_SIDE_PREFILL].kv[e->p], e->pre));
      break;
    }
    /* Layer sends: the last send (XFER) starts only once every block pre
     * holds has gone on the link, so the prefill frees none before. */
    if (h->layered && e->state == KVSIM__HO_XFER && e->sent_blocks != e->pre_blocks) {
      rc = kvsim_err_set(err, KVSIM_EINVAL,
                         "hand-off: request %llu's last send started with %lld of %lld blocks sent",
                         (unsigned long long)e->dec->spec.id, (long long)e->sent_blocks,
                         (long long)e->pre_blocks);
      break;
    }
    const bool pre_held = e->state == KVSIM__HO_PREALLOC || e->state == KVSIM__HO_QUEUED ||
                          e->state == KVSIM__HO_XFER;
    if (pre_held) {
      int64_t b = kvsim_kvcache_held(h->side[KVSIM_SIDE_PREFILL].kv[e->p], e->pre);
      if (b != e->pre_blocks)
        rc = kvsim_err_set(err, KVSIM_EINVAL, "hand-off: request %llu holds %lld prefill blocks, counted %lld",
                           (unsigned long long)e->dec->spec.id, (long long)b, (long long)e->pre_blocks);
      mine[e->p] += b;
    }
    if (e->dec_alloc)
      mine[np + e->d] += kvsim_kvcache_held(h->side[KVSIM_SIDE_DECODE].kv[e->d], e->dec);
  }
  if (rc == KVSIM_OK &&
      (link_bytes != h->bytes_in_flight || on_link != h->in_flight || queued != h->xferq.n))
    rc =
        kvsim_err_set(err, KVSIM_EINVAL,
                      "hand-off: %lld bytes in flight on %lld sends and %lld queued, entries have "
                      "%lld bytes on %lld sends and %lld queued",
                      (long long)h->bytes_in_flight, (long long)h->in_flight, (long long)h->xferq.n,
                      (long long)link_bytes, (long long)on_link, (long long)queued);
  for (int32_t i = 0; i < np + nd && rc == KVSIM_OK; i++) {
    const bool pre = i < np;
    const kvsim_kvcache_t *kv = pre ? h->side[0].kv[i] : h->side[1].kv[i - np];
    int64_t refs = kvsim_pool_refs(&kv->pool);
    if (pre && mine[i] != h->held[i])
      rc = kvsim_err_set(err, KVSIM_EINVAL, "hand-off: prefill instance %d: held %lld, entries hold %lld",
                         i, (long long)h->held[i], (long long)mine[i]);
    else if (refs != sched_blocks[i] + mine[i])
      rc = kvsim_err_set(err, KVSIM_EINVAL,
                         "hand-off: %s instance %d: pool references %lld != scheduler %lld + hand-off %lld",
                         pre ? "prefill" : "decode", pre ? i : i - np, (long long)refs,
                         (long long)sched_blocks[i], (long long)mine[i]);
  }
  kvsim__free(mine);
  return rc;
}
