/* Randomized property test: hundreds of small random scenarios — every
 * profile, every KV dtype, tiny pools, block sizes 1-128, chunked or not,
 * prefix caching with shared prefixes and sessions, swap and offload tiers,
 * priorities, admission limits, bursty arrivals and extreme lengths — each
 * run with the pool and request invariants checked after every step.
 * A run either ends cleanly or refuses with one line (a plan that does not
 * fit, a setting a profile does not take); when it runs:
 *   - every request that arrived leaves through the sink exactly once,
 *     and finished + rejected + in flight = arrived (none lost or doubled);
 *   - sample times never go backwards;
 *   - a second run of the same scenario records exactly the same stream.
 * A failing scenario prints its seed and JSON; kept_seeds[] holds those
 * that once failed, so they run first forever. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arith.h"
#include "kvsim/engine.h"
#include "kvsim/scenario.h"

/* Seeds that once broke a property, replayed first in their batch. */
static const uint64_t kept_seeds[] = {0};

typedef struct rng {
  uint64_t s;
} rng_t;
static uint64_t next(rng_t *r) { return kvsim__splitmix64(&r->s); }
static int pick(rng_t *r, int n) { return (int)(next(r) % (uint64_t)n); }
static double unit(rng_t *r) { return (double)(next(r) >> 11) / 9007199254740992.0; }

static const char *const profiles[] = {"vllm-v1", "vllm-v0", "static", "contiguous",
                                       "contiguous-pow2", "sglang", "tgi", "hf-transformers"};
#define NPROFILES (int)(sizeof profiles / sizeof *profiles)
static const char *const sgl_policies[] = {"fcfs", "lpm", "lof", "random"};
static const char *const dtypes[] = {"auto", "fp8", "int8", "int4"};
static const int block_sizes[] = {1, 2, 4, 8, 16, 32, 64, 128};

/* Writes a random scenario for seed into buf. */
static void make_scenario(uint64_t seed, char *buf, size_t cap) {
  rng_t r = {seed * 0x9e3779b97f4a7c15ull + 1};
  const char *profile = profiles[pick(&r, NPROFILES)];
  bool v1 = !strcmp(profile, "vllm-v1"), v0 = !strcmp(profile, "vllm-v0");
  bool sgl = !strcmp(profile, "sglang");
  bool tgi = !strcmp(profile, "tgi"), hf = !strcmp(profile, "hf-transformers");
  int bs = block_sizes[pick(&r, 8)];
  int max_len = 128 << pick(&r, 5);                 /* 128 .. 2048 */
  int blocks = 8 + pick(&r, 400);
  int seqs = 1 + pick(&r, 32);
  int mnbt = max_len * (1 + pick(&r, 3));
  bool chunked = pick(&r, 2), prefix = pick(&r, 2), prio = pick(&r, 3) == 0 && !sgl;
  char extra[512] = "";
  size_t o = 0;
  /* SGLang sizes its pool itself: the same pool as max_total_tokens, its
   * own chunk size and policy; its KV dtypes are auto and fp8. */
  if (sgl)
    o += (size_t)snprintf(extra + o, sizeof extra - o,
                          ", \"max_total_tokens\": %d, \"chunked_prefill_size\": %d,"
                          " \"max_running_requests\": %d, \"schedule_policy\": \"%s\"",
                          blocks * bs, chunked ? mnbt : -1, seqs, sgl_policies[pick(&r, 4)]);
  if (v0 && pick(&r, 2))
    o += (size_t)snprintf(extra + o, sizeof extra - o,
                          ", \"preemption_mode\": \"swap\", \"swap_space\": %.4f",
                          0.0005 + unit(&r) * 0.01);
  if (v1 && prefix && pick(&r, 3) == 0)
    o += (size_t)snprintf(extra + o, sizeof extra - o, ", \"kv_offloading_size\": %.4f",
                          0.001 + unit(&r) * 0.02);
  if (prio)
    o += (size_t)snprintf(extra + o, sizeof extra - o, ", \"scheduling_policy\": \"priority\"");
  /* TGI's backends and HF's cache classes; their pools count tokens
   * (BLOCK_SIZE 1 with flashinfer, one-token rows in HF): more blocks. */
  const char *attn[] = {"flashinfer", "flashdecoding", "paged"};
  const char *cache[] = {"dynamic", "static", "quantized", "offloaded"};
  int a = pick(&r, 3);
  if (tgi) {
    blocks = a == 0 ? blocks * 16 : a == 1 ? 8 + blocks / 16 : blocks;
    o += (size_t)snprintf(extra + o, sizeof extra - o,
                          ", \"attention\": \"%s\", \"cuda_memory_fraction\": %.2f,"
                          " \"waiting_served_ratio\": %.2f, \"max_waiting_tokens\": %d",
                          attn[a], 0.5 + unit(&r) * 0.5, unit(&r), 1 + pick(&r, 30));
  }
  if (hf) {
    blocks *= 16;
    prefix = false; /* generate() has no prefix cache: refused */
    o += (size_t)snprintf(extra + o, sizeof extra - o,
                          ", \"cache\": \"%s\", \"batch\": %d, \"nbits\": %d,"
                          " \"residual_length\": %d",
                          cache[pick(&r, 4)], seqs, 2 + 2 * pick(&r, 2), pick(&r, 64));
  }
  const char *dtype = dtypes[pick(&r, 4)];
  if ((tgi || hf || sgl) && strncmp(dtype, "int", 3) == 0)
    dtype = "auto"; /* their quantized caches are their own keys; SGLang's KV dtypes are auto and fp8 */
  /* Workload: bursty or steady arrivals, wide or extreme lengths. */
  const char *arrival[] = {"{\"process\": \"poisson\", \"rate\": %g}",
                           "{\"process\": \"gamma\", \"rate\": %g, \"cv\": 4}",
                           "{\"process\": \"constant\", \"rate\": %g}"};
  char arr[128];
  snprintf(arr, sizeof arr, arrival[pick(&r, 3)], 1 + unit(&r) * 60);
  int pmax = 1 + pick(&r, max_len * 2);
  char lens[256];
  switch (pick(&r, 3)) {
  case 0:
    snprintf(lens, sizeof lens,
             "\"prompt_tokens\": {\"dist\": \"lognormal\", \"mean\": %d, \"sigma\": 1.2, \"max\": %d},"
             " \"output_tokens\": {\"dist\": \"uniform\", \"min\": 1, \"max\": %d}",
             1 + pmax / 3, pmax, 1 + pick(&r, 300));
    break;
  case 1:
    snprintf(lens, sizeof lens,
             "\"prompt_tokens\": {\"dist\": \"fixed\", \"value\": %d},"
             " \"output_tokens\": {\"dist\": \"fixed\", \"value\": %d}",
             pmax, 1 + pick(&r, 3) * 200);
    break;
  default:
    snprintf(lens, sizeof lens,
             "\"prompt_tokens\": {\"dist\": \"zipf\", \"s\": 1.1, \"max\": %d},"
             " \"output_tokens\": {\"dist\": \"zipf\", \"s\": 1.3, \"max\": 400}",
             pmax);
  }
  char shape[256] = "";
  int sh = pick(&r, 4);
  if (sh == 1)
    snprintf(shape, sizeof shape, ", \"prefix\": {\"shared_tokens\": %d, \"groups\": %d}",
             1 + pick(&r, max_len / 2), 1 + pick(&r, 4));
  else if (sh == 2)
    snprintf(shape, sizeof shape, ", \"sessions\": {\"turns\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 4}, \"think_s\": 0.5}");
  if (prio)
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape),
             ", \"priority\": {\"levels\": 3}");
  char adm[160] = "";
  if (pick(&r, 4) == 0)
    snprintf(adm, sizeof adm,
             ", \"admission\": {\"max_queue_length\": %d, \"max_wait_s\": %g}", 1 + pick(&r, 20),
             0.5 + unit(&r) * 5);
  snprintf(buf, cap,
           "{\"name\": \"prop\", \"seed\": %llu, \"model\": \"llama-3.2-1b\","
           " \"hardware\": {\"gpu\": \"l4\", \"replicas\": %d},"
           " \"engine\": {\"profile\": \"%s\", \"kv_cache_dtype\": \"%s\", \"block_size\": %d,"
           " \"num_gpu_blocks_override\": %d, \"max_num_seqs\": %d, \"max_model_len\": %d,"
           " \"max_num_batched_tokens\": %d, \"enable_chunked_prefill\": %s,"
           " \"enable_prefix_caching\": %s%s},"
           " \"workload\": {\"synthetic\": {\"requests\": %d, \"arrival\": %s, %s%s}}%s,"
           " \"output\": {\"max_time_s\": 3600}}",
           (unsigned long long)seed, 1 + (pick(&r, 5) == 0), profile, dtype, bs,
           blocks, seqs, max_len, mnbt, chunked ? "true" : "false", prefix ? "true" : "false",
           extra, 10 + pick(&r, 60), arr, lens, shape, adm);
}

/* What a run recorded: an FNV-1a digest of the sink's stream and counts. */
typedef struct record {
  uint64_t digest;
  int64_t requests, samples;
  int64_t last_time[4];
  bool backwards, duplicate;
  uint8_t *seen; /* request ids already reported */
  int64_t seen_cap;
} record_t;

static void mix(record_t *c, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    c->digest = (c->digest ^ b[i]) * 0x100000001b3ull;
}

static int on_sample(void *ctx, const kvsim_sample_t *s) {
  record_t *c = ctx;
  int rep = s->replica & 3;
  if (s->time < c->last_time[rep])
    c->backwards = true;
  c->last_time[rep] = s->time;
  c->samples++;
  mix(c, &s->time, sizeof s->time);
  mix(c, &s->kv_blocks_used, sizeof s->kv_blocks_used);
  mix(c, &s->num_requests_running, sizeof s->num_requests_running);
  mix(c, &s->num_requests_waiting, sizeof s->num_requests_waiting);
  mix(c, &s->num_preemptions_total, sizeof s->num_preemptions_total);
  return 0;
}

static int on_request(void *ctx, const kvsim_request_t *r) {
  record_t *c = ctx;
  int64_t id = (int64_t)r->spec.id;
  if (id < c->seen_cap) {
    if (c->seen[id])
      c->duplicate = true;
    c->seen[id] = 1;
  }
  c->requests++;
  mix(c, &r->spec.id, sizeof r->spec.id);
  mix(c, &r->status, sizeof r->status);
  mix(c, &r->num_output, sizeof r->num_output);
  return 0;
}

/* A broken property: its text goes to `why` and the seed fails. */
static char why[8192];
#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      snprintf(why, sizeof why, __VA_ARGS__);             \
      return -1;                                          \
    }                                                     \
  } while (0)

/* 0 ran, 1 refused cleanly, -1 a broken property (in why). */
static int run_once(uint64_t seed, const char *json, record_t *c, kvsim_run_stats_t *st) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  memset(c, 0, sizeof *c);
  for (int i = 0; i < 4; i++)
    c->last_time[i] = INT64_MIN;
  c->digest = 0xcbf29ce484222325ull;
  c->seen_cap = 1 << 16;
  c->seen = calloc((size_t)c->seen_cap, 1);
  int rc = kvsim_scenario_parse(json, "property", ".", NULL, 0, &sc, &err);
  if (rc == KVSIM_OK) {
    kvsim_sink_t sink = {.ctx = c, .sample = on_sample, .request = on_request};
    kvsim_run_opts_t opts = {.check_invariants = true, .check_period = 0};
    rc = kvsim_run(&sc, &opts, &sink, st, &err);
    kvsim_scenario_fini(&sc);
  }
  free(c->seen);
  CHECK(rc == KVSIM_OK || (rc < 0 && err.msg[0] && !strchr(err.msg, '\n')),
            "seed %llu: failed without a one-line message (rc %d): %s\n%s",
            (unsigned long long)seed, rc, err.msg, json);
  /* A broken invariant is a bug, never a clean refusal. */
  CHECK(rc == KVSIM_OK || (rc != KVSIM_ENOMEM && !strstr(err.msg, "ref_cnt") &&
                               !strstr(err.msg, "holds") && !strstr(err.msg, "invariant")),
            "seed %llu: invariant broken: %s\n%s", (unsigned long long)seed, err.msg, json);
  return rc == KVSIM_OK ? 0 : 1;
}

static int check_seed(uint64_t seed) {
  char json[4096];
  make_scenario(seed, json, sizeof json);
  if (getenv("KVSIM_PROPERTY_VERBOSE"))
    fprintf(stderr, "seed %llu: %s\n", (unsigned long long)seed, json);
  record_t a, b;
  kvsim_run_stats_t sa, sb;
  int rc = run_once(seed, json, &a, &sa);
  if (rc)
    return rc;
  CHECK(!a.duplicate, "seed %llu: a request was reported twice\n%s", (unsigned long long)seed,
            json);
  CHECK(a.requests == sa.requests_arrived,
               "seed %llu: %lld requests arrived, %lld reported\n%s", (unsigned long long)seed,
               (long long)sa.requests_arrived, (long long)a.requests, json);
  CHECK(sa.requests_finished + sa.requests_rejected + sa.requests_in_flight ==
               sa.requests_arrived, "seed %llu: finished + rejected + in flight != arrived\n%s",
               (unsigned long long)seed, json);
  /* Every scenario's work fits well inside an hour of simulated time: a
   * run still holding requests then made no progress (a request that can
   * never be scheduled must be an error naming it, not a spin). */
  CHECK(sa.requests_in_flight == 0 || sa.end_time < (kvsim_time_ns)3600 * 1000000000,
            "seed %llu: no progress: %lld requests still in flight after 3600 s\n%s",
            (unsigned long long)seed, (long long)sa.requests_in_flight, json);
  CHECK(!a.backwards, "seed %llu: sample time went backwards\n%s", (unsigned long long)seed,
            json);
  if (run_once(seed, json, &b, &sb) != 0)
    return -1;
  CHECK(a.digest == b.digest, "seed %llu: a rerun recorded a different stream\n%s",
               (unsigned long long)seed, json);
  return 0;
}

static void batch(uint64_t first, int n) {
  int refused = 0, failed = 0;
  char failures[16384] = "";
  size_t o = 0;
  uint64_t seeds[1024];
  int ns = 0;
  for (size_t i = 0; i < sizeof kept_seeds / sizeof *kept_seeds; i++)
    if (kept_seeds[i] >= first && kept_seeds[i] < first + (uint64_t)n)
      seeds[ns++] = kept_seeds[i]; /* kept seeds of this batch first */
  for (int i = 0; i < n && ns < 1024; i++)
    seeds[ns++] = first + (uint64_t)i;
  for (int i = 0; i < ns; i++) {
    int rc = check_seed(seeds[i]);
    refused += rc == 1;
    if (rc < 0 && failed++ < 4 && o < sizeof failures)
      o += (size_t)snprintf(failures + o, sizeof failures - o, "\n%s", why);
  }
  cr_assert_eq(failed, 0, "%d of %d random scenarios broke a property (seeds above); first ones:%s",
               failed, ns, failures);
  /* The generator must mostly make runnable scenarios, or the test proves little. */
  cr_assert_lt(refused, n / 2, "%d of %d random scenarios were refused", refused, n);
}

/* 5 x 110 = 550 scenarios; batches run in parallel under --jobs. */
Test(property, batch0, .timeout = 600) { batch(1, 110); }
Test(property, batch1, .timeout = 600) { batch(1001, 110); }
Test(property, batch2, .timeout = 600) { batch(2001, 110); }
Test(property, batch3, .timeout = 600) { batch(3001, 110); }
Test(property, batch4, .timeout = 600) { batch(4001, 110); }
