/* Scheduler interface. An engine profile (vllm-v1, vllm-v0, static, ...)
 * is one file in src/sched/ implementing kvsim_sched_ops_t, plus one line
 * in the registry. A scheduler owns its replica's waiting and running
 * queues and decides, each step, which requests compute how many tokens;
 * it knows nothing of files, events or time series. */
#ifndef KVSIM_SCHED_H
#define KVSIM_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvsim/clock.h"
#include "kvsim/cputier.h"
#include "kvsim/error.h"
#include "kvsim/kvcache.h"
#include "kvsim/lora.h"
#include "kvsim/request.h"
#include "kvsim/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { KVSIM_POLICY_FCFS = 0, KVSIM_POLICY_PRIORITY } kvsim_policy;
typedef enum { KVSIM_PREEMPT_RECOMPUTE = 0, KVSIM_PREEMPT_SWAP } kvsim_preempt_mode;

/* A profile's own options (vllm-v0's watermark, contiguous's
 * oracle_lengths, ...), parsed by the profile into this opaque buffer and
 * read back through its own struct (at most KVSIM_SCHED_OPTS_BYTES), and
 * which of them the scenario gave. Held by value so that a configuration
 * copies without owning anything. */
#define KVSIM_SCHED_OPTS_BYTES 96
/* A profile has at most this many options (bits of `given`). */
#define KVSIM_SCHED_MAX_OPTIONS 32
typedef struct kvsim_sched_opts {
  union {
    unsigned char bytes[KVSIM_SCHED_OPTS_BYTES];
    int64_t align_i;
    double align_d;
    void *align_p;
  };
  /* Bit i: the profile's option_keys[i] was given (not null), set by
   * kvsim_sched_parse_opts and kvsim_sched_opts_mark_given; what
   * print_opts prints. */
  uint32_t given;
} kvsim_sched_opts_t;

/* Engine settings a scheduler reads (resolved: no "default" left). What
 * only one profile reads lives in `opts`, owned by that profile. */
typedef struct kvsim_sched_cfg {
  int64_t max_num_seqs;
  int64_t max_num_batched_tokens;
  int64_t max_model_len;
  int32_t block_size;
  bool enable_chunked_prefill;
  bool enable_prefix_caching;
  kvsim_policy policy;
  kvsim_preempt_mode preemption_mode;
  kvsim_sched_opts_t opts;              /* the profile's own options (parse_opts) */
  /* Speculative decoding (vllm-v1, sglang; kvsim/spec.h): drafts per
   * running request and step (0: off), the slots reserved past them
   * (num_lookahead_tokens; sglang: the slots a decode step may take, its
   * get_alloc_len_per_decode), and how many the target accepts. */
  int32_t num_spec_tokens, num_lookahead_tokens;
  kvsim_spec_accept_t accept;
  /* The drafter's forwards per step after its first over the step's
   * tokens (draft_steps - 1 of them) and the rows each gives a request:
   * vLLM's EAGLE k and 1, SGLang's EAGLE tree num_steps and topk. */
  int32_t draft_steps, draft_width;
  /* LoRA (--enable-lora): the adapters a step may use (max_loras; 0: LoRA
   * off), the host cache's capacity, one adapter's bytes on one rank's
   * GPU slot and its checkpoint's bytes. */
  int32_t max_loras, max_cpu_loras;
  int64_t lora_slot_bytes, lora_file_bytes;
} kvsim_sched_cfg_t;

/* A growable array of requests (running list, step list); the layout of
 * the core growable array, grown through the library's allocator. A failed
 * push or reserve leaves the array as it was. */
typedef struct kvsim_reqvec {
  kvsim_request_t **v;
  int64_t n, cap;
} kvsim_reqvec_t;

int kvsim__reqvec_grow(kvsim_reqvec_t *a, int64_t need);
/* Makes room for `need` requests; KVSIM_OK or KVSIM_ENOMEM (unchanged). */
static inline int kvsim_reqvec_reserve(kvsim_reqvec_t *a, int64_t need) {
  return need <= a->cap ? KVSIM_OK : kvsim__reqvec_grow(a, need);
}
static inline int kvsim_reqvec_push(kvsim_reqvec_t *a, kvsim_request_t *r) {
  if (a->n == a->cap && kvsim__reqvec_grow(a, a->n + 1) < 0)
    return KVSIM_ENOMEM;
  a->v[a->n++] = r;
  return KVSIM_OK;
}
void kvsim_reqvec_fini(kvsim_reqvec_t *a);

/* The waiting queue: FIFO with push-front for preempted requests, or a
 * heap on (priority, arrival, id) under the priority policy. Pushes return
 * KVSIM_OK or KVSIM_ENOMEM with the queue unchanged; after a successful
 * kvsim_waitq_reserve(q, n) pushes up to n requests in all cannot fail. */
typedef struct kvsim_waitq {
  kvsim_request_t **v;
  int32_t head, n, cap; /* ring buffer (fcfs) or heap in v[0..n) (priority) */
  bool heap;
} kvsim_waitq_t;

int kvsim_waitq_reserve(kvsim_waitq_t *q, int64_t need);
int kvsim_waitq_push_back(kvsim_waitq_t *q, kvsim_request_t *r);
int kvsim_waitq_push_front(kvsim_waitq_t *q, kvsim_request_t *r);
kvsim_request_t *kvsim_waitq_peek(const kvsim_waitq_t *q);
kvsim_request_t *kvsim_waitq_pop(kvsim_waitq_t *q);
/* Removes r wherever it is in the queue; returns false if absent. O(n). */
bool kvsim_waitq_remove(kvsim_waitq_t *q, kvsim_request_t *r);
/* The i-th request in queue order (FIFO only; heap order is unspecified). */
kvsim_request_t *kvsim_waitq_at(const kvsim_waitq_t *q, int32_t i);
void kvsim_waitq_fini(kvsim_waitq_t *q);

/* A step's batch shape as running integer sums, kept by a profile while
 * it schedules the step (vllm-v1) so that the engine need not walk the
 * step's rows a second time: rows, prefill rows, new and prefill tokens,
 * attention pairs (a, full and sliding), keys read (k), decode keys (d).
 * Every term is a whole number, so the sums are exact whatever the order
 * (kvsim_batch_shape_add's doubles equal them while they stay below 2^53,
 * which the engine checks with maxcn). */
typedef struct kvsim_step_sums {
  bool on;        /* the profile summed every row of this step */
  bool big;       /* a row past int32 tokens: the engine sums in doubles */
  int64_t window; /* the model's sliding window (0: none), set by the engine */
  uint64_t seqs, pseqs, newt, pft, af, as, kf, ks, df, ds;
  int64_t maxcn;  /* the largest context + new tokens of a row */
} kvsim_step_sums_t;

/* Starts the sums of a step (the window kept): the profile will add every
 * row it schedules. */
void kvsim_step_sums_begin(kvsim_step_sums_t *s);
/* One row: `context` tokens cached, `new_tokens` computed this step. */
void kvsim_step_sums_row(kvsim_step_sums_t *s, int64_t context, int64_t new_tokens);
/* `rows` decode rows at once (one new token each after a context of 1 to
 * INT32_MAX - 1 tokens; no sliding window): their contexts sum to
 * `context`, none is above `max_context` (a bound is enough: it only
 * feeds the engine's exactness check). */
void kvsim_step_sums_decode(kvsim_step_sums_t *s, int64_t rows, int64_t context, int64_t max_context);

/* One step: the scheduled requests, each with r->step_new tokens. */
typedef struct kvsim_step {
  kvsim_reqvec_t reqs;
  kvsim_step_sums_t sums; /* the rows' shape, when the profile keeps it (sums.on) */
  /* Rows of one decode token each that the profile advanced without
   * listing them in reqs (implicit decode, vllm-v1): counted in num_tokens
   * and in sums, which is then always on. */
  int32_t implicit_rows;
  int32_t num_preempted;    /* preemptions while building this step */
  int64_t num_tokens;       /* sum of step_new */
  kvsim_time_ns extra_ns;   /* transfer time the step waits for (swap, offload loads) */
  /* LoRA adapters loaded into GPU slots before the step's forward (vLLM
   * does it synchronously in set_active_adapters): added to the step. */
  kvsim_time_ns lora_ns;
} kvsim_step_t;

typedef struct kvsim_sched kvsim_sched_t;

/* What a scenario takes from its profile when the engine object leaves a
 * setting out, and what the profile allows. */
typedef struct kvsim_sched_defaults {
  bool enable_prefix_caching;
  bool transfer_overlap;     /* a step's transfers overlap its compute */
  double swap_space_gib;     /* CPU swap space per GPU */
  bool offload_connector;    /* has the offloading connector (kv_offloading_size) */
  /* Preempts by recompute only: a swap_space without preemption_mode
   * swap is an error naming the profile. */
  bool recompute_only;
  /* Its preemptions are SGLang's retractions (summary kind "retraction",
   * the engine's num_retractions). */
  bool retracts;
  /* Serves disaggregated prefill and decode (kvsim/disagg.h): it finishes
   * requests through kvsim_sched_update_tokens (which keeps the blocks of
   * a request marked hold_kv) and takes a request into `running` with its
   * prompt's KV already in its blocks. */
  bool kv_connector;
  /* On the prefill side of a disaggregated deployment whose decode side
   * allocated before the prefill (the sglang flow), sends each
   * chunked-prefill chunk's KV as it is computed instead of the whole
   * request after its prefill (kvsim/disagg.h, KVSIM_DISAGG_UNIT_CHUNK). */
  bool kv_send_chunks;
  /* Schedules and swaps LoRA adapters per request (kvsim/lora.h): a
   * workload whose requests name adapters runs only under it. */
  bool lora_adapters;
} kvsim_sched_defaults_t;

struct cJSON;

/* kvsim_sched_ops_t.implicit_sums' answer. */
typedef struct kvsim_sched_isums {
  int64_t blocks, tokens, needed;
  kvsim_request_t *const *rest; /* the running requests not in the sums */
  int32_t nrest;
} kvsim_sched_isums_t;

/* The ops table of an engine profile. Hot-path ops (add, schedule,
 * update) return KVSIM_OK or a negative code (KVSIM_ENOMEM); on failure
 * no request is lost — each stays in exactly one of waiting, running,
 * the profile's held list or the finished list — the KV pool is as
 * consistent as before the call, and the op can be called again. */
typedef struct kvsim_sched_ops {
  const char *name;
  const char *help;
  size_t size; /* sizeof the profile's struct, which starts with kvsim_sched_t */
  /* Which memory-plan rules the engine follows (kvsim/plan.h). */
  kvsim_plan_engine plan_engine;
  kvsim_sched_defaults_t defaults;
  /* The profile's own keys of the scenario's engine object (NULL-ended;
   * NULL = none) and their parser: reads them from `engine` (may be NULL:
   * all defaults) into opts, checking types and ranges; errors name
   * "<where>.<key>", the bad value and the allowed range. */
  const char *const *option_keys;
  int (*parse_opts)(const struct cJSON *engine, const char *where, kvsim_sched_opts_t *opts,
                    kvsim_err *err);
  /* Optional (NULL = none): copies the options that are memory-plan
   * settings (SGLang's mem_fraction_static and page_size, TGI's
   * cuda_memory_fraction, HF's cache class) from the parsed opts into the
   * plan's parameters, after parse_opts. */
  void (*plan_params)(const kvsim_sched_opts_t *opts, kvsim_plan_params_t *p);
  /* Optional (NULL = none; a profile with option_keys has one): the given
   * options (opts->given) back as the scenario's engine keys, added to
   * `engine` from the typed opts in canonical form, so that parse_opts
   * reads them back into the same opts (summary.json's config). The
   * memory share (set_fraction's) is printed from p, where
   * kvsim_scenario_set_memory_fraction changes it. KVSIM_OK or
   * KVSIM_ENOMEM. */
  int (*print_opts)(const kvsim_sched_opts_t *opts, const kvsim_plan_params_t *p,
                    struct cJSON *engine);
  /* Optional: the shared engine keys the profile does not read (SGLang's
   * pool ignores gpu_memory_utilization), refused in a scenario as another
   * profile's options are, rather than accepted and echoed unused. */
  const char *const *ignored_keys;
  /* Optional: the profile's own share of GPU memory for weights and KV
   * (the key and its setter on the plan's parameters), what `kvsim plan
   * --search util` varies; NULL: vLLM's gpu_memory_utilization, unless
   * ignored_keys names it (the profile then has none). */
  const char *fraction_key;
  void (*set_fraction)(kvsim_plan_params_t *p, double f);
  int (*init)(kvsim_sched_t *s, kvsim_err *err);
  void (*fini)(kvsim_sched_t *s);
  /* A request arrives (status WAITING, num_computed 0). */
  int (*add)(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now);
  /* Builds the next step into `step` (cleared by the caller). On failure
   * the caller discards the partial step (its requests keep their KV and
   * are scheduled again by the next call). */
  int (*schedule)(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step);
  /* The step ended at `now`: account computed and generated tokens, move
   * finished requests to `finished` (their KV freed). Fails, before it
   * changes anything, only when `finished` cannot grow. */
  int (*update)(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step, kvsim_reqvec_t *finished);
  /* Optional (NULL = none): requests that hold KV outside `running` and
   * `waiting` — V0's swapped queue (status SWAPPED, CPU blocks in
   * swapped_blocks), a static batch's finished members that keep their
   * slot until the batch ends (status FINISHED, already reported). The
   * engine counts their GPU blocks in the invariant check and their KV in
   * the waste sampling. Sets *out to the profile's array (owned by it,
   * valid until the next call into the scheduler); returns its length. */
  int32_t (*held)(const kvsim_sched_t *s, kvsim_request_t *const **out);
  /* Optional (NULL = none): the engine's own refusal of a request as it
   * arrives, beyond the engine-independent checks (max_model_len, a pool
   * that can never hold it): the reason, or NULL to admit. A request this
   * lets in must be one the profile can schedule alone in an empty pool. */
  const char *(*refuse)(const kvsim_sched_t *s, const kvsim_request_t *r);
  /* Optional (NULL = none): brings every running request's token counts
   * up to date (a profile with implicit decode keeps them behind), and
   * their step_new while a step is in flight. The engine calls it before
   * it reads running requests' counts (sampling, the run's end). */
  void (*sync)(kvsim_sched_t *s);
  /* Optional (NULL = none): the running requests a profile advances
   * without touching (kvsim_request_t.imp), as sums, so that a sampler
   * reads them without a sync: the blocks they hold (one table, none
   * skipped), their tokens as the sampler counts them (computed, plus the
   * step in flight), and the blocks those tokens fill or start; and the
   * other running requests, whose counts are up to date (valid until the
   * next call into the scheduler). False when no request is kept so or
   * the sums may be stale (the sampler then syncs and reads every
   * running request). */
  bool (*implicit_sums)(const kvsim_sched_t *s, kvsim_sched_isums_t *out);
} kvsim_sched_ops_t;

struct kvsim_sched {
  const kvsim_sched_ops_t *ops;
  kvsim_sched_cfg_t cfg;
  kvsim_kvcache_t *kv;       /* the replica's KV manager (not owned) */
  kvsim_cpu_tier_t *cpu;     /* the replica's CPU tier (not owned; 0 blocks when none) */
  kvsim_waitq_t waiting;
  kvsim_reqvec_t running;
  int64_t num_preemptions;   /* cumulative (vllm:num_preemptions) */
  int64_t num_swapped;       /* requests whose KV is in the CPU tier now */
  int64_t prompt_tokens_total, generation_tokens_total;
  /* Speculative decoding: the run's generator of accepted-token draws (a
   * gsl_rng, not owned; set when cfg.num_spec_tokens > 0), and the drafts
   * verified and accepted (vllm:spec_decode_num_draft_tokens,
   * vllm:spec_decode_num_accepted_tokens). */
  void *spec_rng;
  int64_t spec_drafts_total, spec_accepted_total;
  /* LoRA: the replica's adapter caches (not owned; NULL when LoRA is off)
   * and the waiting requests a step skipped for max_loras (scratch). */
  kvsim_lora_cache_t *lora;
  kvsim_reqvec_t lora_skipped;
  int64_t lora_skips;        /* waiting requests skipped for max_loras, summed over steps */
  /* The engine allows implicit decode (set by the aggregated run, which
   * calls sync before it reads running requests' counts). */
  bool implicit_ok;
};

/* The profile's options of a scheduler (the struct its parse_opts filled). */
static inline const void *kvsim_sched_opts(const kvsim_sched_t *s) { return s->cfg.opts.bytes; }

/* Looks up a profile by name; NULL if unknown. */
const kvsim_sched_ops_t *kvsim_sched_find(const char *name);
/* "vllm-v1, vllm-v0, ..." for messages. */
void kvsim_sched_names(char *buf, size_t cap);

/* Appends every profile's option keys (each once) to keys[*n..cap - 1],
 * keeping a NULL after the last; returns KVSIM_EINVAL if cap is too small.
 * The scenario's key check knows them all, so that another profile's key
 * is not "unknown" with a did-you-mean: kvsim_sched_parse_opts refuses it
 * by name ("an option of the sglang profile, not of vllm-v1"). */
int kvsim_sched_option_keys(const char **keys, size_t *n, size_t cap);

/* The engine key of ops' share of GPU memory (see fraction_key), or NULL
 * when the profile sizes its cache otherwise (HF Transformers). */
const char *kvsim_sched_fraction_key(const kvsim_sched_ops_t *ops);
/* Parses the engine object's profile options: a key of another profile's
 * (or one ops ignores) is refused by name, every profile checks its own
 * keys' values, and `ops`' values land in *opts. engine may be NULL (all
 * defaults). Returns KVSIM_OK or the first error (KVSIM_EINVAL, naming
 * "<where>.<key>"). */
int kvsim_sched_parse_opts(const kvsim_sched_ops_t *ops, const struct cJSON *engine,
                           const char *where, kvsim_sched_opts_t *opts, kvsim_err *err);
/* The first check kvsim_sched_parse_opts makes of one engine key: KVSIM_EINVAL,
 * named "<where>.<key>", when ops ignores it or it is another profile's
 * option; KVSIM_OK otherwise (ops' own option or a shared key). A typed
 * override that sets a key on a disaggregated side whose profile differs
 * is refused with it, as parsing the side with the key would. */
int kvsim_sched_check_key(const kvsim_sched_ops_t *ops, const char *key, const char *where,
                          kvsim_err *err);
/* Marks ops' option `key` given in opts (a typed override that sets it,
 * e.g. the memory share); false when key is none of ops' options. */
bool kvsim_sched_opts_mark_given(const kvsim_sched_ops_t *ops, kvsim_sched_opts_t *opts,
                                 const char *key);
/* ops' given options added to `engine` (its print_opts); KVSIM_OK for a
 * profile without options, or KVSIM_ENOMEM. */
int kvsim_sched_print_opts(const kvsim_sched_ops_t *ops, const kvsim_sched_opts_t *opts,
                           const kvsim_plan_params_t *p, struct cJSON *engine);

/* Creates a scheduler of the given profile over kv. */
int kvsim_sched_new(const kvsim_sched_ops_t *ops, const kvsim_sched_cfg_t *cfg,
                    kvsim_kvcache_t *kv, kvsim_sched_t **out, kvsim_err *err);
void kvsim_sched_free(kvsim_sched_t *s);

/* Shared building blocks for profiles. */

/* Token accounting after a step, identical for every profile: computed
 * tokens advance; a request whose computed tokens catch up with its known
 * tokens samples one; requests done are removed from running (order kept),
 * their KV freed, and appended to `finished`. With speculative decoding a
 * request that verified d drafts keeps the a accepted (cfg.accept, one
 * draw from spec_rng) and samples a + 1 tokens, then holds
 * cfg.num_spec_tokens new drafts for its next step. KVSIM_ENOMEM, with nothing
 * changed, when `finished` cannot take every request of the step. */
int kvsim_sched_update_tokens(kvsim_sched_t *s, kvsim_time_ns now, kvsim_step_t *step,
                               kvsim_reqvec_t *finished);

/* One sampled token for r at `now`: output and token counts, first and
 * last token times. Returns true, with r marked finished, when r has all
 * its output. */
bool kvsim_sched_emit_token(kvsim_sched_t *s, kvsim_request_t *r, kvsim_time_ns now);

/* LoRA: brings the adapters of the step's requests into GPU slots
 * (kvsim_lora_cache_use, in the step's order) and adds the time to
 * step->lora_ns. No-op when s->lora is NULL. */
void kvsim_sched_lora_load(kvsim_sched_t *s, kvsim_step_t *step);

/* Recompute preemption (V1 _preempt_request): free KV, computed tokens to
 * 0, count it, put the request at the front of the waiting queue. The
 * caller takes r out of `running` after a success; on KVSIM_ENOMEM
 * (the queue or r's hashes cannot grow) nothing has changed. */
int kvsim_sched_preempt(kvsim_sched_t *s, kvsim_request_t *r);

#ifdef __cplusplus
}
#endif

#endif
