/* The KV hand-off between a prefill and a decode instance (engine/handoff.h):
 * blocks held on the prefill side until the transfer is done, the decode
 * side's pre-allocation and its back-pressure, transfers contending for an
 * endpoint, and the accounting: no block lost, none counted twice. The
 * prefill side is a real vllm-v1 scheduler (its finish keeps a hold_kv
 * request's blocks); the decode side a KV manager of 7 usable blocks of 4
 * tokens. */
#include "engine/handoff.h"
#include "sched_harness.h"

typedef struct pair_env {
  env_t pf, dc;          /* prefill scheduler + pool; decode pool (its scheduler unused) */
  kvsim_kvcache_t *pkv[1], *dkv[1];
  kvsim__handoff_t h;
  kvsim_request_t dec[4];
} pair_env_t;

/* A link of 1 GB/s (1000 bytes, one block, in 1 us) and latency_s per
 * send; a model of 4 layers. */
static void pair_setup_link(pair_env_t *e, kvsim_disagg_flow flow, int32_t decode_blocks,
                            kvsim_disagg_unit unit, double latency_s) {
  memset(e, 0, sizeof *e);
  env_setup(&e->pf, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1, .blocks = 33,
                                 .budget = 64, .max_seqs = 8, .chunked = true});
  env_setup(&e->dc, (env_opts_t){.profile = "vllm-v1", .engine = KVSIM_PLAN_V1,
                                 .blocks = decode_blocks, .budget = 64, .max_seqs = 8});
  e->pkv[0] = &e->pf.kv;
  e->dkv[0] = &e->dc.kv;
  kvsim_disagg_cfg_t cfg = {.enabled = true,
                            .flow = flow,
                            .link = KVSIM_XFER_INFINIBAND,
                            .link_GBps = 1,
                            .link_latency_s = latency_s};
  kvsim__handoff_side_t p = {1, e->pkv, 1, 1000, 4}, d = {1, e->dkv, 1, 1000, 4};
  kvsim_err err = {0};
  cr_assert_eq(kvsim__handoff_init(&e->h, &cfg, unit, &p, &d, &err), KVSIM_OK, "init: %s", err.msg);
}

static void pair_setup_unit(pair_env_t *e, kvsim_disagg_flow flow, int32_t decode_blocks,
                            kvsim_disagg_unit unit) {
  pair_setup_link(e, flow, decode_blocks, unit, 1e-3);
}

static void pair_setup(pair_env_t *e, kvsim_disagg_flow flow, int32_t decode_blocks) {
  pair_setup_unit(e, flow, decode_blocks, KVSIM_DISAGG_UNIT_REQUEST);
}

static void pair_teardown(pair_env_t *e) {
  kvsim__handoff_fini(&e->h);
  for (int i = 0; i < 4; i++) {
    for (int g = 0; g < KVSIM_MAX_KV_GROUPS; g++)
      free(e->dec[i].blocks[g].ids);
    free(e->dec[i].hashes);
    free(e->dec[i].segs);
  }
  teardown_env(&e->pf);
  teardown_env(&e->dc);
}

/* Request i: its prefill twin (max_tokens=1) in the prefill scheduler and
 * its decode object, with slots apart. */
static kvsim__handoff_entry_t *pair_add(pair_env_t *e, int i, int64_t prompt, kvsim__ho_state first,
                                        int32_t d) {
  kvsim_request_t *pre = add(&e->pf, i, prompt, 1);
  pre->slot = i;
  kvsim_request_t *dec = &e->dec[i];
  dec->spec.id = (uint64_t)i;
  dec->spec.prompt_tokens = prompt;
  dec->spec.output_tokens = 20;
  dec->num_prompt = dec->num_tokens = prompt;
  dec->slot = 100 + i;
  dec->first_scheduled = dec->first_token = dec->finish = KVSIM_TIME_NEVER;
  cr_assert_eq(kvsim_kvcache_prepare(&e->dc.kv, dec), KVSIM_OK, "request %d's identity", i);
  kvsim_err err = {0};
  cr_assert_eq(kvsim__handoff_add(&e->h, pre, dec, 0, d, first, e->pf.now, &err), KVSIM_OK, "add: %s",
               err.msg);
  cr_assert(pre->hold_kv, "the prefill twin keeps its blocks when it finishes");
  return kvsim__handoff_of(&e->h, dec);
}

/* The accounting with the schedulers' own holds: the prefill scheduler's
 * running requests, and on the decode side the requests `landed` there. */
static int pair_check(pair_env_t *e, int64_t decode_sched, kvsim_err *err) {
  int64_t blocks[2] = {0, decode_sched};
  for (int64_t j = 0; j < e->pf.s->running.n; j++)
    blocks[0] += kvsim_kvcache_held(&e->pf.kv, e->pf.s->running.v[j]);
  return kvsim__handoff_check(&e->h, blocks, err);
}

static int64_t used(const kvsim_kvcache_t *kv) {
  return kvsim_pool_usable(&kv->pool) - kvsim_pool_num_free(&kv->pool);
}

Test(handoff, vllm_flow_holds_back_pressures_and_frees) {
  pair_env_t e;
  pair_setup(&e, KVSIM_DISAGG_FLOW_VLLM, 8); /* 7 usable decode blocks */
  kvsim_err err = {0};
  kvsim__handoff_entry_t *en[3];
  for (int i = 0; i < 3; i++)
    pair_add(&e, i, 10, KVSIM__HO_PREFILL, -1); /* 3 blocks each */
  for (int i = 0; i < 3; i++) /* entries move while the table grows */
    en[i] = kvsim__handoff_of(&e.h, &e.dec[i]);
  /* The prefill: one step computes the three prompts and samples each one
   * token; the requests finish and keep their blocks. */
  schedule(&e.pf);
  cr_assert_eq(e.pf.step.reqs.n, 3, "the three prompts are prefilled together");
  finish_step(&e.pf);
  cr_assert_eq(e.pf.done.n, 3, "max_tokens=1: each finishes with its first token");
  cr_assert_eq(used(&e.pf.kv), 9, "finished with hold_kv, their 9 blocks stay allocated");
  for (int i = 0; i < 3; i++)
    cr_assert_eq(kvsim__handoff_prefill_done(&e.h, en[i], 0, e.pf.now, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(e.h.held[0], 9, "the hand-off counts the 9 held blocks");
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "after the prefill: %s", err.msg);

  /* The decode pool takes two prompts (6 of 7 blocks); the third waits,
   * its prefill blocks still held: back-pressure. */
  int32_t n = 0;
  kvsim_request_t *started[4];
  cr_assert_eq(kvsim__handoff_alloc(&e.h, 0, 0, 8, 0, e.pf.now, started, 4, &n, &err), 2,
               "two prompts fit the decode pool");
  cr_assert_eq(en[2]->state, KVSIM__HO_PREALLOC, "the third waits for decode blocks");
  cr_assert_eq(used(&e.dc.kv), 6, "6 decode blocks pre-allocated");
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "after the allocation: %s", err.msg);

  /* One endpoint pair: the two transfers go one after the other. */
  int32_t slots[2];
  kvsim_time_ns ends[2];
  cr_assert_eq(kvsim__handoff_start(&e.h, e.pf.now, slots, ends, 2), 1, "one transfer at a time");
  cr_assert_eq(e.h.bytes_in_flight, 3000, "3 blocks x 1000 bytes on the link");
  /* 1 ms + 3000 B / 1 GB/s = 1.003 ms. */
  cr_assert_eq(ends[0] - e.pf.now, 1003000, "latency + bytes / bandwidth, got %lld ns",
               (long long)(ends[0] - e.pf.now));
  cr_assert_eq(kvsim__handoff_start(&e.h, e.pf.now, slots, ends, 2), 0, "the link is busy");
  kvsim__handoff_entry_t *d0 = kvsim__handoff_done(&e.h, slots[0], ends[0]);
  cr_assert_eq(used(&e.pf.kv), 6, "the first's prefill blocks are freed when its transfer ends");
  cr_assert_eq(e.h.held[0], 6, "and no longer counted held");
  kvsim_request_t *landed = d0->dec;
  kvsim__handoff_landed(&e.h, d0);
  int64_t landed_blocks = kvsim_kvcache_held(&e.dc.kv, landed);
  cr_assert_eq(landed_blocks, 3, "the landed request keeps its 3 decode blocks");
  cr_assert_eq(pair_check(&e, landed_blocks, &err), KVSIM_OK, "after a transfer: %s", err.msg);
  cr_assert_eq(kvsim__handoff_start(&e.h, ends[0], slots, ends, 2), 1, "the second starts");

  /* The landed request finishes on the decode side: its blocks free, the
   * third prompt now fits. */
  kvsim_kvcache_free(&e.dc.kv, landed);
  cr_assert_eq(kvsim__handoff_alloc(&e.h, 0, 0, 8, 0, ends[0], started, 4, &n, &err), 1,
               "the waiting prompt is allocated once blocks free");
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "at the end: %s", err.msg);
  cr_assert_eq(e.h.st.transfers, 1, "one transfer completed");
  cr_assert_eq(e.h.st.prealloc_queue_peak, 3, "three waited for decode blocks at once");
  pair_teardown(&e);
}

Test(handoff, max_num_seqs_bounds_the_requests_allocated) {
  pair_env_t e;
  pair_setup(&e, KVSIM_DISAGG_FLOW_VLLM, 32); /* room for all three prompts */
  kvsim_err err = {0};
  for (int i = 0; i < 3; i++)
    pair_add(&e, i, 10, KVSIM__HO_PREFILL, -1);
  schedule(&e.pf);
  finish_step(&e.pf);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(kvsim__handoff_prefill_done(&e.h, kvsim__handoff_of(&e.h, &e.dec[i]), 0, e.pf.now, &err),
                 KVSIM_OK, "%s", err.msg);
  int32_t n = 0;
  kvsim_request_t *started[4];
  /* 6 running of max_num_seqs 8: two more may come in, the third waits. */
  cr_assert_eq(kvsim__handoff_alloc(&e.h, 0, 6, 8, 0, e.pf.now, started, 4, &n, &err), 2,
               "running + inbound stay within max_num_seqs");
  cr_assert_eq(e.h.inbound[0], 2, "two inbound");
  cr_assert_eq(kvsim__handoff_alloc(&e.h, 0, 6, 8, 0, e.pf.now, started, 4, &n, &err), 0,
               "none while they are inbound");
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "%s", err.msg);
  pair_teardown(&e);
}

Test(handoff, a_lost_or_double_counted_block_is_caught) {
  pair_env_t e;
  pair_setup(&e, KVSIM_DISAGG_FLOW_VLLM, 8);
  kvsim_err err = {0};
  kvsim__handoff_entry_t *en = pair_add(&e, 0, 10, KVSIM__HO_PREFILL, -1);
  schedule(&e.pf);
  finish_step(&e.pf);
  cr_assert_eq(kvsim__handoff_prefill_done(&e.h, en, 0, e.pf.now, &err), KVSIM_OK, "%s", err.msg);
  /* Counted twice: the scheduler claims the held blocks too. */
  int64_t twice[2] = {3, 0};
  cr_assert_eq(kvsim__handoff_check(&e.h, twice, &err), KVSIM_EINVAL, "a double count is an error");
  cr_assert(strstr(err.msg, "pool references 3 != scheduler 3 + hand-off 3"), "names it: %s", err.msg);
  /* Lost: freed behind the hand-off's back. */
  kvsim_kvcache_free(&e.pf.kv, en->pre);
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_EINVAL, "a lost hold is an error");
  cr_assert(strstr(err.msg, "holds 0 prefill blocks, counted 3"), "names it: %s", err.msg);
  en->pre_blocks = 0;
  e.h.held[0] = 0;
  pair_teardown(&e);
}

Test(handoff, sglang_flow_allocates_before_the_prefill) {
  pair_env_t e;
  pair_setup(&e, KVSIM_DISAGG_FLOW_SGLANG, 16); /* 15 usable blocks, 60 tokens */
  kvsim_err err = {0};
  /* The twins must not be in the prefill engine before their bootstrap:
   * take them back out of the harness's queue. */
  kvsim__handoff_entry_t *en[2];
  for (int i = 0; i < 2; i++)
    cr_assert(kvsim_waitq_remove(&e.pf.s->waiting, pair_add(&e, i, 10, KVSIM__HO_BOOTSTRAP, 0)->pre),
              "dequeued");
  for (int i = 0; i < 2; i++)
    en[i] = kvsim__handoff_of(&e.h, &e.dec[i]);
  cr_assert_eq(e.h.prealloc_waiting, 2, "both wait in the bootstrap queue");
  /* With 16 tokens reserved per running request and 4 running, 60 - 64
   * tokens are free: not even one 12-token prompt allocation. */
  int32_t n = 0;
  kvsim_request_t *started[4];
  cr_assert_eq(kvsim__handoff_alloc(&e.h, 0, 4, 8, 16, 0, started, 4, &n, &err), 0,
               "the reserve for 4 running requests leaves no room");
  cr_assert_eq(kvsim__handoff_alloc(&e.h, 0, 0, 8, 16, 0, started, 4, &n, &err), 2,
               "with nothing running both fit");
  cr_assert_eq(n, 2, "both twins may now run their prefill");
  cr_assert_eq(en[0]->state, KVSIM__HO_PREFILL, "bootstrapped");
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "before the prefill: %s", err.msg);
  for (int i = 0; i < 2; i++)
    cr_assert_eq(kvsim_waitq_push_back(&e.pf.s->waiting, started[i]), KVSIM_OK, "queued");
  schedule(&e.pf);
  finish_step(&e.pf);
  for (int i = 0; i < 2; i++)
    cr_assert_eq(kvsim__handoff_prefill_done(&e.h, en[i], 0, e.pf.now, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(en[1]->state, KVSIM__HO_QUEUED, "its decode blocks were there: straight to the link");
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "after the prefill: %s", err.msg);
  pair_teardown(&e);
}

Test(handoff, transfer_time_uses_the_narrower_side) {
  kvsim_disagg_cfg_t d = {.link_GBps = 50, .link_latency_s = 30e-6};
  /* 1 GB over TP 4 -> TP 2: two links in parallel, 10 ms + 30 us. */
  cr_assert_float_eq(kvsim_disagg_transfer_s(&d, 1000000000, 4, 2), 0.01003, 1e-12,
                     "min(tp) links carry the shards");
  double bw, lat;
  const char *src;
  kvsim_xfer_link_defaults(KVSIM_XFER_NVLINK, 450, &bw, &lat, &src);
  cr_assert_float_eq(bw, 378, 1e-9, "NVLink default: the measured fraction of H100's 450 GB/s");
  kvsim_xfer_link_defaults(KVSIM_XFER_INFINIBAND, 450, &bw, &lat, &src);
  cr_assert_float_eq(bw, 43, 1e-9, "InfiniBand default: DeepEP's measured RDMA figure");
  cr_assert(strstr(src, "DeepEP"), "the source is named: %s", src);
}

/* Runs one 100-token prompt (25 blocks of 4 tokens; chunks of 64 and 36
 * tokens under the 64-token budget) through the sglang flow with the given
 * transfer unit, checking the accounting after every move. Returns its
 * entry's figures through the hand-off's stats; *land is when the decode
 * side has its KV. */
static void run_one_prompt_on(pair_env_t *e, kvsim_disagg_unit unit, double latency_s,
                              kvsim_time_ns *land) {
  pair_setup_link(e, KVSIM_DISAGG_FLOW_SGLANG, 32, unit, latency_s);
  kvsim_err err = {0};
  kvsim__handoff_entry_t *en = pair_add(e, 0, 100, KVSIM__HO_BOOTSTRAP, 0);
  cr_assert(kvsim_waitq_remove(&e->pf.s->waiting, en->pre), "dequeued until bootstrapped");
  int32_t n = 0, slots[1];
  kvsim_request_t *started[1];
  kvsim_time_ns ends[1];
  cr_assert_eq(kvsim__handoff_alloc(&e->h, 0, 0, 8, 0, 0, started, 1, &n, &err), 1,
               "pre-allocated");
  cr_assert_eq(kvsim_waitq_push_back(&e->pf.s->waiting, started[0]), KVSIM_OK, "queued");
  en = kvsim__handoff_of(&e->h, &e->dec[0]);
  int64_t decode_blocks = kvsim_kvcache_held(&e->dc.kv, &e->dec[0]);
  /* The first chunk: 64 tokens, 16 full blocks. */
  schedule(&e->pf);
  finish_step(&e->pf);
  cr_assert_eq(en->pre->num_computed, 64, "the first chunk is the budget");
  kvsim__handoff_chunk(&e->h, en, en->pre->num_computed, e->pf.now);
  cr_assert_eq(pair_check(e, 0, &err), KVSIM_OK, "after the first chunk: %s", err.msg);
  if (unit == KVSIM_DISAGG_UNIT_CHUNK) {
    cr_assert_eq(e->h.xferq.n, 1, "its full blocks queue for the link");
    cr_assert_eq(kvsim__handoff_start(&e->h, e->pf.now, slots, ends, 1), 1,
                 "the chunk's send starts");
    cr_assert_eq(e->h.bytes_in_flight, 16000, "16 full blocks x 1000 bytes on the link");
    cr_assert_eq(pair_check(e, 0, &err), KVSIM_OK, "a chunk on the link: %s", err.msg);
  } else {
    cr_assert_eq(e->h.xferq.n, 0, "a whole-request transfer waits for the prefill's end");
  }
  /* The last chunk, while the first's send is on the link: its forward
   * takes 2 ms, longer than the send. */
  schedule(&e->pf);
  e->pf.now += 2000000;
  finish_step(&e->pf);
  cr_assert_eq(e->pf.done.n, 1, "the prefill ends with the second chunk");
  cr_assert_eq(kvsim__handoff_prefill_done(&e->h, en, 0, e->pf.now, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(pair_check(e, 0, &err), KVSIM_OK, "after the prefill: %s", err.msg);
  if (unit == KVSIM_DISAGG_UNIT_CHUNK) {
    cr_assert_eq(e->h.xferq.n, 0,
                 "the rest waits for the chunk on the link, not in the queue twice");
    cr_assert_null(kvsim__handoff_done(&e->h, slots[0], ends[0]), "a chunk's end lands nothing");
    cr_assert_eq(e->h.st.chunk_sends, 1, "one chunk sent");
    cr_assert_eq(e->h.bytes_in_flight, 0, "nothing on the link between the sends");
    cr_assert_eq(e->h.xferq.n, 1, "the rest queues as the chunk ends");
    cr_assert_eq(used(&e->pf.kv), en->pre_blocks, "the prefill side still holds every block");
    cr_assert_eq(pair_check(e, 0, &err), KVSIM_OK, "between the sends: %s", err.msg);
  }
  cr_assert_eq(kvsim__handoff_start(&e->h, e->pf.now, slots, ends, 1), 1, "the last send starts");
  cr_assert_eq(e->h.bytes_in_flight, en->bytes - (unit == KVSIM_DISAGG_UNIT_CHUNK ? 16000 : 0),
               "the last send moves what the chunks did not");
  kvsim__handoff_entry_t *d = kvsim__handoff_done(&e->h, slots[0], ends[0]);
  cr_assert_not_null(d, "the last send lands the request");
  cr_assert_eq(used(&e->pf.kv), 0, "the prefill side frees every block at the end");
  kvsim__handoff_landed(&e->h, d);
  cr_assert_eq(pair_check(e, decode_blocks, &err), KVSIM_OK, "landed: %s", err.msg);
  *land = ends[0];
}

static void run_one_prompt(pair_env_t *e, kvsim_disagg_unit unit, kvsim_time_ns *land) {
  run_one_prompt_on(e, unit, 1e-3, land);
}

/* The same 100-token prompt through the vllm flow with layer transfers:
 * a first step of 1 ms (64 tokens, 16 full blocks) and a last of 2 ms (36
 * tokens, the other 9 blocks), each sending its blocks as its 4 layers
 * finish; the link's events in time order, the accounting checked after
 * every move. *land is when the decode side has the KV. */
static void run_layer_prompt(pair_env_t *e, double latency_s, kvsim_time_ns *land) {
  pair_setup_link(e, KVSIM_DISAGG_FLOW_VLLM, 32, KVSIM_DISAGG_UNIT_LAYER, latency_s);
  kvsim_err err = {0};
  pair_add(e, 0, 100, KVSIM__HO_PREFILL, -1);
  kvsim__handoff_entry_t *en = kvsim__handoff_of(&e->h, &e->dec[0]);
  int32_t n = 0, slots[1];
  kvsim_request_t *started[1];
  kvsim_time_ns ends[1];
  const kvsim_time_ns t0 = e->pf.now;
  schedule(&e->pf);
  e->pf.now += 1000000 - 10; /* finish_step adds 10 ns */
  finish_step(&e->pf);
  const kvsim_time_ns t1 = e->pf.now;
  cr_assert_eq(en->pre->num_computed, 64, "the first chunk is the budget");
  kvsim__handoff_layer(&e->h, en, en->pre->num_computed, false, t0, t1);
  cr_assert_eq(e->h.xferq.n, 1, "the step's layer sends queue with no decode instance yet");
  cr_assert_eq(kvsim__handoff_start(&e->h, t1, slots, ends, 1), 1, "the layer sends start");
  cr_assert_eq(e->h.bytes_in_flight, 16000, "16 full blocks x 1000 bytes");
  cr_assert_eq(pair_check(e, 0, &err), KVSIM_OK, "layers on the link: %s", err.msg);
  schedule(&e->pf);
  e->pf.now += 2000000 - 10;
  finish_step(&e->pf);
  const kvsim_time_ns t2 = e->pf.now;
  cr_assert_eq(e->pf.done.n, 1, "the prefill ends with the second chunk");
  if (ends[0] <= t2)
    cr_assert_null(kvsim__handoff_done(&e->h, slots[0], ends[0]), "a step's layers land nothing");
  kvsim__handoff_layer(&e->h, en, en->pre->num_computed, true, t1, t2);
  cr_assert_eq(kvsim__handoff_prefill_done(&e->h, en, 0, t2, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__handoff_alloc(&e->h, 0, 0, 8, 0, t2, started, 1, &n, &err), 1, "allocated");
  cr_assert_eq(pair_check(e, 0, &err), KVSIM_OK, "after the prefill: %s", err.msg);
  cr_assert_leq(e->h.xferq.n, 1, "queued once at most");
  if (ends[0] > t2)
    cr_assert_null(kvsim__handoff_done(&e->h, slots[0], ends[0]), "a step's layers land nothing");
  kvsim_time_ns now = ends[0] > t2 ? ends[0] : t2;
  cr_assert_eq(kvsim__handoff_start(&e->h, now, slots, ends, 1), 1, "the last step's layers");
  cr_assert_eq(e->h.bytes_in_flight, 9000, "the other 9 blocks");
  cr_assert_eq(pair_check(e, 0, &err), KVSIM_OK, "the last layers on the link: %s", err.msg);
  cr_assert_null(kvsim__handoff_done(&e->h, slots[0], ends[0]), "layers again");
  cr_assert_eq(used(&e->pf.kv), 25, "the prefill side holds its 25 blocks until the last send");
  cr_assert_eq(kvsim__handoff_start(&e->h, ends[0], slots, ends, 1), 1, "the last send");
  cr_assert_eq(e->h.bytes_in_flight, 0, "it moves nothing: every block went with its layer");
  kvsim__handoff_entry_t *d = kvsim__handoff_done(&e->h, slots[0], ends[0]);
  cr_assert_not_null(d, "the last send lands the request");
  cr_assert_eq(used(&e->pf.kv), 0, "the prefill side frees every block at the end");
  kvsim__handoff_landed(&e->h, d);
  cr_assert_eq(pair_check(e, kvsim_kvcache_held(&e->dc.kv, &e->dec[0]), &err), KVSIM_OK,
               "landed: %s", err.msg);
  *land = ends[0] - t2; /* after the prefill */
}

Test(handoff, layer_transfers_overlap_the_forward_and_expose_the_last_layer) {
  pair_env_t l, c, w;
  kvsim_time_ns land_l, land_c, land_w;
  /* A link of bandwidth only: the sends' times are their bytes. */
  run_layer_prompt(&l, 0, &land_l);
  run_one_prompt_on(&c, KVSIM_DISAGG_UNIT_CHUNK, 0, &land_c);
  run_one_prompt_on(&w, KVSIM_DISAGG_UNIT_REQUEST, 0, &land_w);
  cr_assert_eq(l.h.st.unit, KVSIM_DISAGG_UNIT_LAYER, "the unit is the run's");
  cr_assert_eq(l.h.st.transfers, 1, "one hand-off");
  cr_assert_eq(l.h.st.chunk_sends, 2, "two steps' layer sends before the last");
  cr_assert_eq(l.h.st.bytes_transferred, 25000, "each of the 25 blocks once, got %lld",
               (long long)l.h.st.bytes_transferred);
  cr_assert_eq(l.h.st.bytes_transferred, w.h.st.bytes_transferred, "as a whole-request transfer");
  cr_assert_float_eq(l.h.st.transfer_s_sum, 25e-6, 1e-9, "25,000 bytes of link time");
  /* The last step's 9 blocks leave a quarter at a time as its layers end,
   * each in 2.25 us, well within the step's 0.5 ms per layer: only the
   * last layer's share is left when the step ends. Chunks leave the last
   * chunk's 9 blocks (9 us), a whole request all 25 (25 us). */
  cr_assert_float_eq(l.h.st.transfer_exposed_s_sum, 2.25e-6, 1e-9, "the last layer's share");
  cr_assert_float_eq(c.h.st.transfer_exposed_s_sum, 9e-6, 1e-9, "the last chunk");
  cr_assert_float_eq(w.h.st.transfer_exposed_s_sum, 25e-6, 1e-9, "the whole request");
  cr_assert_leq(llabs(land_l - 2251), 1, "the KV lands 2.25 us after the prefill (+1 ns), got %lld",
                (long long)land_l);
  pair_teardown(&l);
  pair_teardown(&c);
  pair_teardown(&w);
}

Test(handoff, layer_transfers_pay_a_latency_per_layer) {
  pair_env_t l, w;
  kvsim_time_ns land_l, land_w;
  run_layer_prompt(&l, 1e-3, &land_l);
  run_one_prompt_on(&w, KVSIM_DISAGG_UNIT_REQUEST, 1e-3, &land_w);
  /* With 1 ms per send, the first step's four sends (4 x 1.004 ms from
   * its first layer's end at 0.25 ms) run to 4.266 ms, past the prefill's
   * end at 3 ms; the last step's four (4 x 1.00225 ms) follow: 8.275 ms,
   * 5.275 ms after the prefill, where one whole-request send is 1.025 ms. */
  cr_assert_float_eq(l.h.st.transfer_exposed_s_sum, 0.005275, 1e-9, "got %.9f",
                     l.h.st.transfer_exposed_s_sum);
  cr_assert_float_eq(w.h.st.transfer_exposed_s_sum, 0.001025, 1e-9, "one send");
  cr_assert_gt(land_l, land_w, "per-layer latencies can cost more than they overlap");
  cr_assert_eq(l.h.st.bytes_transferred, 25000, "the bytes do not change");
  pair_teardown(&l);
  pair_teardown(&w);
}

/* vLLM preempts a prefill (recompute) after its first step's layers went:
 * the receiver has them, so while it recomputes it has sent more blocks
 * than it holds, which is no block sent twice; its recompute sends nothing
 * again and the last step only the rest. */
Test(handoff, a_preempted_layered_prefill_sends_no_block_twice) {
  pair_env_t e;
  pair_setup_link(&e, KVSIM_DISAGG_FLOW_VLLM, 32, KVSIM_DISAGG_UNIT_LAYER, 0);
  kvsim_err err = {0};
  pair_add(&e, 0, 100, KVSIM__HO_PREFILL, -1);
  kvsim__handoff_entry_t *en = kvsim__handoff_of(&e.h, &e.dec[0]);
  int32_t slots[1], n = 0;
  kvsim_time_ns ends[1];
  kvsim_request_t *started[1];
  kvsim_time_ns t = e.pf.now;
  schedule(&e.pf);
  finish_step(&e.pf);
  kvsim__handoff_layer(&e.h, en, en->pre->num_computed, false, t, e.pf.now);
  cr_assert_eq(kvsim__handoff_start(&e.h, e.pf.now, slots, ends, 1), 1, "the first step's layers");
  cr_assert_null(kvsim__handoff_done(&e.h, slots[0], ends[0]), "sent");
  e.pf.now = ends[0];
  /* The preemption, as the scheduler's recompute does it. */
  kvsim_request_t *pre = en->pre;
  cr_assert_eq(e.pf.s->running.n, 1, "the prefill runs alone");
  e.pf.s->running.n = 0;
  kvsim_kvcache_free(&e.pf.kv, pre);
  pre->num_computed = 0;
  pre->num_preemptions++;
  pre->status = KVSIM_REQ_WAITING;
  cr_assert_eq(kvsim_waitq_push_front(&e.pf.s->waiting, pre), KVSIM_OK, "requeued");
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "16 blocks sent, none held: %s", err.msg);
  /* The recompute of the first chunk: nothing new to send. */
  t = e.pf.now;
  schedule(&e.pf);
  finish_step(&e.pf);
  cr_assert_eq(pre->num_computed, 64, "the first chunk again");
  kvsim__handoff_layer(&e.h, en, pre->num_computed, false, t, e.pf.now);
  cr_assert_eq(e.h.xferq.n, 0, "the recomputed blocks are not sent again");
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "recomputed: %s", err.msg);
  t = e.pf.now;
  schedule(&e.pf);
  finish_step(&e.pf);
  cr_assert_eq(e.pf.done.n, 1, "the prefill ends");
  kvsim__handoff_layer(&e.h, en, pre->num_computed, true, t, e.pf.now);
  cr_assert_eq(kvsim__handoff_prefill_done(&e.h, en, 0, e.pf.now, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim__handoff_alloc(&e.h, 0, 0, 8, 0, e.pf.now, started, 1, &n, &err), 1,
               "allocated");
  cr_assert_eq(kvsim__handoff_start(&e.h, e.pf.now, slots, ends, 1), 1, "the last step's layers");
  cr_assert_eq(e.h.bytes_in_flight, 9000, "only the 9 blocks past the first chunk");
  cr_assert_null(kvsim__handoff_done(&e.h, slots[0], ends[0]), "layers");
  cr_assert_eq(kvsim__handoff_start(&e.h, ends[0], slots, ends, 1), 1, "the last send");
  kvsim__handoff_entry_t *d = kvsim__handoff_done(&e.h, slots[0], ends[0]);
  cr_assert_not_null(d, "landed");
  kvsim__handoff_landed(&e.h, d);
  cr_assert_eq(e.h.st.bytes_transferred, 25000, "each block once, got %lld",
               (long long)e.h.st.bytes_transferred);
  cr_assert_eq(pair_check(&e, kvsim_kvcache_held(&e.dc.kv, &e.dec[0]), &err), KVSIM_OK, "%s",
               err.msg);
  pair_teardown(&e);
}

Test(handoff, chunk_transfers_move_each_block_once_and_expose_only_the_tail) {
  pair_env_t c, w;
  kvsim_time_ns land_c, land_w;
  run_one_prompt(&w, KVSIM_DISAGG_UNIT_REQUEST, &land_w);
  run_one_prompt(&c, KVSIM_DISAGG_UNIT_CHUNK, &land_c);
  cr_assert_eq(c.h.st.unit, KVSIM_DISAGG_UNIT_CHUNK, "the unit is the run's");
  cr_assert_eq(c.h.st.transfers, 1, "one hand-off");
  cr_assert_eq(w.h.st.chunk_sends, 0, "a whole-request transfer sends no chunk");
  /* The prompt's 25 blocks: every one crosses the link once, whatever
   * the unit. */
  cr_assert_eq(c.h.st.bytes_transferred, w.h.st.bytes_transferred,
               "chunks move the same bytes in total (%lld vs %lld)",
               (long long)c.h.st.bytes_transferred, (long long)w.h.st.bytes_transferred);
  cr_assert_eq(c.h.st.bytes_transferred, 25000, "25 blocks x 1000 bytes, got %lld",
               (long long)c.h.st.bytes_transferred);
  /* The link time: the chunks pay one more latency (1 ms), but the
   * request waits after its prefill for the last 9 blocks only. */
  cr_assert_float_eq(c.h.st.transfer_s_sum, 0.001016 + 0.001009, 1e-9, "two sends' link time");
  cr_assert_float_eq(w.h.st.transfer_s_sum, 0.001025, 1e-9, "one send's link time");
  cr_assert_float_eq(c.h.st.transfer_exposed_s_sum, 0.001009, 1e-9, "the last send is exposed");
  cr_assert_float_eq(w.h.st.transfer_exposed_s_sum, w.h.st.transfer_s_sum, 1e-12,
                     "a whole-request transfer is all exposed");
  /* Both last sends start as the prefill ends, 2 ms in: the chunked one
   * is 16 blocks (16,000 bytes at 1 GB/s) shorter, 16 us earlier (to the
   * nanosecond the durations are truncated to). */
  cr_assert_leq(llabs(land_w - land_c - 16000), 1,
                "the chunked request lands 16 us earlier, got %lld ns",
                (long long)(land_w - land_c));
  pair_teardown(&c);
  pair_teardown(&w);
}

Test(handoff, a_chunk_sent_twice_or_bytes_off_the_link_are_caught) {
  pair_env_t e;
  kvsim_time_ns land;
  pair_setup_unit(&e, KVSIM_DISAGG_FLOW_SGLANG, 32, KVSIM_DISAGG_UNIT_CHUNK);
  kvsim_err err = {0};
  kvsim__handoff_entry_t *en = pair_add(&e, 0, 100, KVSIM__HO_BOOTSTRAP, 0);
  cr_assert(kvsim_waitq_remove(&e.pf.s->waiting, en->pre), "dequeued");
  int32_t n = 0, slots[1];
  kvsim_request_t *started[1];
  kvsim_time_ns ends[1];
  cr_assert_eq(kvsim__handoff_alloc(&e.h, 0, 0, 8, 0, 0, started, 1, &n, &err), 1, "pre-allocated");
  cr_assert_eq(kvsim_waitq_push_back(&e.pf.s->waiting, started[0]), KVSIM_OK, "queued");
  en = kvsim__handoff_of(&e.h, &e.dec[0]);
  schedule(&e.pf);
  finish_step(&e.pf);
  kvsim__handoff_chunk(&e.h, en, en->pre->num_computed, e.pf.now);
  cr_assert_eq(kvsim__handoff_start(&e.h, e.pf.now, slots, ends, 1), 1, "the chunk's send starts");
  /* Bytes on the link that no send carries. */
  e.h.bytes_in_flight += 1000;
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_EINVAL, "bytes off the link are an error");
  cr_assert(strstr(err.msg, "17000 bytes in flight on 1 sends"), "names it: %s", err.msg);
  e.h.bytes_in_flight -= 1000;
  /* More blocks sent than the prefill computed and holds. */
  en->sent_blocks += 100;
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_EINVAL, "a block sent twice is an error");
  cr_assert(strstr(err.msg, "sent 116 blocks of"), "names it: %s", err.msg);
  en->sent_blocks -= 100;
  cr_assert_eq(pair_check(&e, 0, &err), KVSIM_OK, "restored: %s", err.msg);
  (void)land;
  pair_teardown(&e);
}
