/* TGI's warmup sizing (server/text_generation_server/models/
 * flash_causal_lm.py FlashCausalLM.warmup; globals.py BLOCK_SIZE and
 * TGI_WIGGLE_ROOM; utils/import_utils.py get_cuda_free_memory), with the
 * memory terms given as measured so that the arithmetic is checked exactly. */
#include <criterion/criterion.h>

#include <math.h>
#include <string.h>

#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"

#define GIB (1024LL * 1024 * 1024)

static kvsim_model_t model(const char *name) {
  kvsim_model_t m;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load(name, &m, &err), KVSIM_OK, "load %s: %s", name, err.msg);
  return m;
}

static kvsim_gpu_t gpu(const char *name) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load(name, &g, &err), KVSIM_OK, "load %s: %s", name, err.msg);
  return g;
}

/* TGI on Llama-3.1-8B, an 80 GiB card, 15 + 1 + 0.5 GiB measured. */
static kvsim_plan_params_t params(void) {
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_TGI;
  p.total_memory_bytes = 80 * GIB;
  p.weights_gib = 15;
  p.activation_gib = 1;
  p.non_torch_gib = 0.5;
  return p;
}

static kvsim_plan_t plan(const kvsim_plan_params_t *p) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_t pl;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_plan_compute(&m, &g, p, &pl, &err), KVSIM_OK, "plan: %s", err.msg);
  return pl;
}

/* The warmup's arithmetic, written out independently. */
static int64_t expected_blocks(double frac, double wiggle, int64_t bs, int64_t prefill) {
  int64_t bpb = 32 * bs * 8 * 128 * 2 * 2;
  int64_t warm = (prefill + 1 + bs - 1) / bs; /* one request of prefill tokens + 1 new */
  double free_now = 80.0 * GIB - 15.0 * GIB - 1.0 * GIB - 0.5 * GIB - (double)(warm * bpb);
  double kv = free_now - (1 - frac * wiggle) * 80.0 * GIB;
  return (int64_t)floor(kv / (double)bpb) + warm;
}

Test(plan_tgi, warmup_blocks_from_free_memory_fraction_and_wiggle_room) {
  kvsim_plan_params_t p = params();
  kvsim_plan_t pl = plan(&p);
  cr_assert_eq(pl.tgi.block_size, 1, "flashinfer: BLOCK_SIZE 1");
  cr_assert_eq(pl.block_bytes, 131072, "32 layers x 1 x 8 heads x 128 x 2 x 2 bytes");
  cr_assert_float_eq(pl.tgi.wiggle_room, 0.90, 1e-12, "3.3: TGI_WIGGLE_ROOM 0.90");
  int64_t want = expected_blocks(1.0, 0.90, 1, 4096);
  cr_assert_eq(pl.tgi.num_blocks, want, "num_blocks %lld, want %lld", (long long)pl.tgi.num_blocks,
               (long long)want);
  cr_assert_eq(pl.tgi.max_batch_total_tokens, want, "max_batch_total_tokens = num_blocks x 1");
  cr_assert_eq(pl.kv_cache_tokens, want, "kv_cache_tokens is max_batch_total_tokens");
  cr_assert_eq(pl.tgi.max_batch_prefill_tokens, 4096, "the launcher's default prefill budget");
  cr_assert(pl.fits, "fits");
}

Test(plan_tgi, cuda_memory_fraction_scales_what_is_kept) {
  kvsim_plan_params_t p = params();
  p.tgi.cuda_memory_fraction = 0.5;
  kvsim_plan_t pl = plan(&p);
  int64_t want = expected_blocks(0.5, 0.90, 1, 4096);
  cr_assert_eq(pl.tgi.num_blocks, want, "fraction 0.5: %lld, want %lld",
               (long long)pl.tgi.num_blocks, (long long)want);
}

Test(plan_tgi, wiggle_room_by_version) {
  const struct {
    int minor;
    double w;
  } v[] = {{0, 0.95}, {1, 0.93}, {2, 0.93}, {3, 0.90}, {4, 0.90}};
  int64_t prev = INT64_MAX;
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    kvsim_plan_params_t p = params();
    p.tgi.version_minor = v[i].minor;
    kvsim_plan_t pl = plan(&p);
    cr_assert_float_eq(pl.tgi.wiggle_room, v[i].w, 1e-12, "3.%d: wiggle %g", v[i].minor, v[i].w);
    cr_assert_eq(pl.tgi.num_blocks, expected_blocks(1.0, v[i].w, 1, 4096), "3.%d: blocks",
                 v[i].minor);
    cr_assert_leq(pl.tgi.num_blocks, prev, "a later version never keeps less back");
    prev = pl.tgi.num_blocks;
  }
  int minor = -1;
  cr_assert_eq(kvsim_tgi_version_parse("3.3.7", &minor), KVSIM_OK, "3.3.7 parses");
  cr_assert_eq(minor, 3, "3.3.7 is 3.3");
  cr_assert_lt(kvsim_tgi_version_parse("2.4", &minor), 0, "this parser is 3.x only");
  cr_assert_lt(kvsim_tgi_version_parse("3.x", &minor), 0, "garbage is refused");
}

Test(plan_tgi, block_size_by_attention_backend) {
  const struct {
    kvsim_tgi_attention a;
    int64_t bs;
    bool prefix;
  } v[] = {{KVSIM_TGI_FLASHINFER, 1, true},
           {KVSIM_TGI_FLASHDECODING, 256, true},
           {KVSIM_TGI_PAGED, 16, false}};
  for (size_t i = 0; i < 3; i++) {
    kvsim_plan_params_t p = params();
    p.tgi.attention = v[i].a;
    p.tgi.max_batch_prefill_tokens = 8192; /* paged: a prompt must fit one prefill */
    p.tgi.max_total_tokens = 8192;
    p.tgi.max_input_tokens = 8000;
    kvsim_plan_t pl = plan(&p);
    cr_assert_eq(pl.tgi.block_size, v[i].bs, "%s: BLOCK_SIZE %lld",
                 kvsim_tgi_attention_name(v[i].a), (long long)v[i].bs);
    cr_assert_eq(pl.block_bytes, 131072 * v[i].bs, "block bytes scale with BLOCK_SIZE");
    cr_assert_eq(pl.tgi.prefix_caching, v[i].prefix, "prefix caching with %s",
                 kvsim_tgi_attention_name(v[i].a));
    cr_assert_eq(pl.tgi.num_blocks, expected_blocks(1.0, 0.9, v[i].bs, 8192), "blocks of %lld",
                 (long long)v[i].bs);
    cr_assert_eq(pl.tgi.max_batch_total_tokens, pl.tgi.num_blocks * v[i].bs,
                 "tokens = blocks x size");
  }
}

Test(plan_tgi, defaults_of_max_total_and_input_tokens) {
  kvsim_plan_params_t p = params();
  kvsim_plan_t pl = plan(&p);
  cr_assert_eq(pl.tgi.max_total_tokens, 131072, "min(pool, max_position_embeddings 131,072)");
  cr_assert_eq(pl.tgi.max_input_tokens, 131071, "max_total_tokens - 1");
  p.total_memory_bytes = 24 * GIB; /* a pool smaller than the context */
  pl = plan(&p);
  cr_assert_eq(pl.tgi.max_total_tokens, pl.tgi.max_batch_total_tokens, "capped by the pool");
  cr_assert(pl.fits, "the default always fits");
  p.max_model_len = 4096; /* a scenario shared with vLLM: max_model_len is max_total_tokens */
  pl = plan(&p);
  cr_assert_eq(pl.tgi.max_total_tokens, 4096, "max_model_len stands for max_total_tokens");
  cr_assert_eq(pl.p.max_model_len, 4096, "the scheduler's limit");
}

Test(plan_tgi, a_total_length_past_the_pool_does_not_fit) {
  kvsim_plan_params_t p = params();
  p.total_memory_bytes = 24 * GIB;
  p.tgi.max_total_tokens = 100000;
  kvsim_plan_t pl = plan(&p);
  cr_assert(!pl.fits, "100,000 total tokens exceed the pool of %lld",
            (long long)pl.tgi.max_batch_total_tokens);
  cr_assert(strstr(pl.error, "max_batch_total_tokens"), "the router's reason: %s", pl.error);
  p.tgi.max_input_tokens = 200000;
  pl = plan(&p);
  cr_assert(!pl.fits && strstr(pl.error, "must be < `max_total_tokens`"), "input >= total: %s",
            pl.error);
}

Test(plan_tgi, num_shard_splits_the_kv_heads) {
  kvsim_plan_params_t p = params();
  p.tp = 2;
  kvsim_plan_t pl = plan(&p);
  cr_assert_eq(pl.kv_heads_per_rank, 4, "8 KV heads over 2 shards");
  cr_assert_eq(pl.block_bytes, 65536, "half the bytes per token");
}

Test(plan_tgi, refused_settings) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_t pl;
  kvsim_err err = {0};
  kvsim_plan_params_t p = params();
  p.kv_dtype = KVSIM_KV_FP8;
  p.tgi.attention = KVSIM_TGI_FLASHDECODING;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "FP8 with flashdecoding");
  cr_assert(strstr(err.msg, "flashdecoding"), "names the backend: %s", err.msg);
  p = params();
  p.kv_dtype = KVSIM_KV_INT8;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "no int8 KV in TGI");
  p = params();
  p.tgi.cuda_memory_fraction = 1.5;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "fraction above 1");
  cr_assert(strstr(err.msg, "--cuda-memory-fraction"), "names the flag: %s", err.msg);
  p = params();
  p.pp = 2;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "no pipeline parallelism");
}

/* A total of 1 leaves the default input limit (total - 1) at 0: a plan
 * that admits no prompt does not fit (as input >= total does, above); and
 * vLLM's kv_cache_memory_bytes is no TGI option, refused, not dropped. */
Test(plan_tgi, no_input_limit_left_and_vllm_pool_bytes) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_err err = {0};
  kvsim_plan_params_t p = params();
  p.tgi.max_total_tokens = 1;
  kvsim_plan_t pl = plan(&p);
  cr_assert(!pl.fits && strstr(pl.error, "max_input_tokens is 0 (max_total_tokens 1 - 1)"), "%s",
            pl.error);
  p.tgi.max_total_tokens = 2;
  pl = plan(&p);
  cr_assert(pl.fits, "a total of 2 leaves one input token: %s", pl.error);
  p = params();
  p.kv_cache_memory_bytes = 1 << 30;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "kv_cache_memory_bytes");
  cr_assert(strstr(err.msg,
                   "engine.kv_cache_memory_bytes): 1073741824 is vLLM's; TGI has no such option"),
            "%s", err.msg);
}

Test(plan_tgi, fp8_kv_halves_the_block) {
  kvsim_plan_params_t p = params();
  p.kv_dtype = KVSIM_KV_FP8;
  kvsim_plan_t pl = plan(&p);
  cr_assert_eq(pl.block_bytes, 65536, "1-byte KV");
  cr_assert_gt(pl.tgi.num_blocks, 2 * expected_blocks(1.0, 0.9, 1, 4096) - 8200,
               "about twice the blocks");
}

/* TGI 2.x (flash_causal_lm.py FlashCausalLM.warmup at v2.0.0-v2.4.1): the
 * room multiplies what cuda_memory_fraction leaves of the free memory,
 * and up to 2.4.0 the launcher's 4096-capped defaults fix the warmup
 * batch: ceil(4145 / 4095) = 2 requests of ceil((4096 - 1) / 16) = 256
 * blocks of 2 MiB (32 layers x 16 x 8 heads x 128 x 2 x 2 bytes). */
static kvsim_plan_params_t params_v2(int minor, int patch) {
  kvsim_plan_params_t p = params();
  p.tgi.version_major = 2;
  p.tgi.version_minor = minor;
  p.tgi.version_patch = patch;
  p.tgi.attention = KVSIM_TGI_PAGED;
  return p;
}

static int64_t expected_blocks_v2(double frac, double room) {
  const double bpb = 2.0 * 1024 * 1024;
  double free_now = 80.0 * GIB - 15.0 * GIB - 1.0 * GIB - 0.5 * GIB - 512 * bpb;
  double left = free_now - (1 - frac) * 80.0 * GIB;
  return (int64_t)floor(room * left / bpb) + 512;
}

Test(plan_tgi, v2_room_multiplies_the_free_memory) {
  kvsim_plan_params_t p = params_v2(2, 0);
  kvsim_plan_t pl = plan(&p);
  cr_assert(pl.tgi.room_on_free && pl.tgi.launcher_fixed_defaults, "2.2: the 2.x rules");
  cr_assert_eq(pl.tgi.block_size, 16, "paged: BLOCK_SIZE 16");
  cr_assert_eq(pl.tgi.max_input_tokens, 4095, "launcher: min(max_position_embeddings, 4096) - 1");
  cr_assert_eq(pl.tgi.max_total_tokens, 4096, "launcher: min(max_position_embeddings, 4096)");
  cr_assert_eq(pl.tgi.max_batch_prefill_tokens, 4145, "launcher: max_input_tokens + 50");
  cr_assert_eq(pl.tgi.warmup_requests, 2, "ceil(4145 / 4095) warmup requests");
  cr_assert_eq(pl.tgi.warmup_blocks, 512, "2 x ceil(4095 / 16) blocks");
  /* 0.95 x 62.5 GiB = 59.375 GiB = 30,400 blocks, plus the warmup's 512. */
  cr_assert_eq(pl.tgi.num_blocks, 30912, "num_blocks %lld", (long long)pl.tgi.num_blocks);
  cr_assert_eq(pl.tgi.num_blocks, expected_blocks_v2(1.0, 0.95), "the formula");
  cr_assert_eq(pl.tgi.max_batch_total_tokens, 30912 * 16, "Setting max batch total tokens");
  cr_assert(!pl.p.enable_chunked_prefill, "no chunked prefill in 2.x");
  cr_assert(!pl.tgi.prefix_caching, "no prefix caching before 2.3");
  p.tgi.cuda_memory_fraction = 0.8;
  pl = plan(&p);
  cr_assert_eq(pl.tgi.num_blocks, expected_blocks_v2(0.8, 0.95),
               "fraction 0.8: 0.95 x (62.5 - 16 GiB): %lld", (long long)pl.tgi.num_blocks);
}

Test(plan_tgi, v2_wiggle_room_and_launcher_by_release) {
  const struct {
    int minor, patch;
    double room;
    bool fixed;
  } v[] = {{0, 3, 0.95, true}, {3, 1, 0.95, true}, {4, 0, 0.90, true}, {4, 1, 0.90, false}};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    kvsim_plan_params_t p = params_v2(v[i].minor, v[i].patch);
    kvsim_plan_t pl = plan(&p);
    cr_assert_float_eq(pl.tgi.wiggle_room, v[i].room, 1e-12, "2.%d.%d: room", v[i].minor,
                       v[i].patch);
    cr_assert_eq(pl.tgi.launcher_fixed_defaults, v[i].fixed, "2.%d.%d: launcher defaults",
                 v[i].minor, v[i].patch);
    if (v[i].fixed)
      cr_assert_eq(pl.tgi.num_blocks, expected_blocks_v2(1.0, v[i].room), "2.%d.%d: blocks",
                   v[i].minor, v[i].patch);
    else
      cr_assert_eq(pl.tgi.max_batch_prefill_tokens, 4096, "2.4.1: the 3.x launcher's default");
  }
}

Test(plan_tgi, v2_warmup_charges_the_prefill_logprob_logits) {
  const int64_t full = 4145LL * 128256 * 2; /* one [4145 x 128256] tensor, 2 B */
  /* The forward alone: 3.x (no logprobs) at the same 4,145 tokens. */
  kvsim_plan_params_t q = params();
  q.activation_gib = -1;
  q.tgi.max_batch_prefill_tokens = 4145;
  kvsim_plan_t pl3 = plan(&q);
  cr_assert_eq(pl3.tgi.prefill_logits_bytes, 0, "3.x is unchanged (REQUEST_LOGPROBS off)");
  int64_t fwd = pl3.activation_bytes;
  cr_assert(fwd > 0 && fwd < full, "the forward is smaller than one logits tensor: %lld",
            (long long)fwd);

  kvsim_plan_params_t p = params_v2(2, 0);
  p.activation_gib = -1; /* predicted */
  kvsim_plan_t pl = plan(&p);
  cr_assert_eq(pl.tgi.prefill_logits_bytes, 2 * full, "2.2: logits and their log_softmax");
  /* The logits get segments of their own on top of the forward's cached
   * ones: the two add (was the larger of the two). */
  cr_assert_eq(pl.activation_bytes, fwd + 2 * full, "forward + logits: %lld",
               (long long)pl.activation_bytes);

  /* v2.4.0: log_softmax in place (#2661), one tensor. */
  p = params_v2(4, 0);
  p.activation_gib = -1;
  pl = plan(&p);
  cr_assert_eq(pl.tgi.prefill_logits_bytes, full, "2.4.0: in place");
  cr_assert_eq(pl.activation_bytes, fwd + full, "2.4.0: forward + one tensor");

  /* TP 2: the gathered logits are a transposed view, so log_softmax copies
   * them; this rank's [64128 x 4145] slice is cached too. */
  p = params_v2(2, 0);
  p.activation_gib = -1;
  p.tp = 2;
  pl = plan(&p);
  cr_assert_eq(pl.tgi.prefill_logits_bytes, 3 * full + 4145LL * 64128 * 2,
               "2.2 at TP 2: gathered, copied, log_softmax and the slice: %lld",
               (long long)pl.tgi.prefill_logits_bytes);
  p = params_v2(4, 0);
  p.activation_gib = -1;
  p.tp = 2;
  pl = plan(&p);
  cr_assert_eq(pl.tgi.prefill_logits_bytes, 2 * full + 4145LL * 64128 * 2,
               "2.4.0 at TP 2: gathered, copied (in place into the view) and the slice");
}

Test(plan_tgi, v2_refuses_what_the_release_lacks) {
  kvsim_model_t m = model("llama-3.1-8b");
  kvsim_gpu_t g = gpu("h100-sxm");
  kvsim_plan_t pl;
  kvsim_err err = {0};
  kvsim_plan_params_t p = params_v2(2, 0);
  p.tgi.attention = KVSIM_TGI_FLASHINFER;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "flashinfer in 2.2");
  cr_assert(strstr(err.msg, "2.3.0"), "says when flashinfer came: %s", err.msg);
  p = params_v2(3, 0);
  p.kv_dtype = KVSIM_KV_FP8;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "fp8 KV in 2.3");
  p = params_v2(4, 2);
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "no 2.4.2 release");
  /* One-token prompts filling a 2^30-token prefill, each holding 2^30
   * total tokens: 2^56 warmup blocks, an error rather than an overflow. */
  p = params_v2(2, 0);
  p.tgi.max_input_tokens = 1;
  p.tgi.max_total_tokens = KVSIM_MODEL_MAX_CONTEXT;
  p.tgi.max_batch_prefill_tokens = KVSIM_MODEL_MAX_CONTEXT;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_EINVAL, "warmup overflow");
  cr_assert(strstr(err.msg, "warmup batch"), "says what overflowed: %s", err.msg);
  /* The 2.x launcher: a max_total_tokens alone keeps max_input_tokens at 4095. */
  p = params_v2(2, 0);
  p.tgi.max_total_tokens = 2048;
  pl = plan(&p);
  cr_assert(!pl.fits, "4095 input tokens do not fit 2048 total");
  cr_assert(strstr(pl.error, "max_input_tokens"), "the launcher's words: %s", pl.error);
}

Test(plan_tgi, release_parse_and_default_backend) {
  int a = 0, b = 0, c = 0;
  cr_assert_eq(kvsim_tgi_release_parse("v2.2.0", &a, &b, &c), KVSIM_OK, "v2.2.0");
  cr_assert(a == 2 && b == 2 && c == 0, "2.2.0: %d.%d.%d", a, b, c);
  cr_assert_eq(kvsim_tgi_release_parse("2.4.1", &a, &b, &c), KVSIM_OK, "2.4.1");
  cr_assert_eq(c, 1, "patch 1");
  cr_assert_eq(kvsim_tgi_release_parse("3.3.7", &a, &b, &c), KVSIM_OK, "3.3.7");
  cr_assert(a == 3 && b == 3 && c == 7, "3.3.7");
  const char *bad[] = {"2.4.2", "2.5", "1.4", "4.0", "2.2.0rc1", "2", "2.x", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_lt(kvsim_tgi_release_parse(bad[i], &a, &b, &c), 0, "'%s' is refused", bad[i]);
  cr_assert_eq(kvsim_tgi_default_attention(2, 2), KVSIM_TGI_PAGED, "paged before 2.3");
  cr_assert_eq(kvsim_tgi_default_attention(2, 3), KVSIM_TGI_FLASHINFER, "flashinfer from 2.3");
  cr_assert_eq(kvsim_tgi_default_attention(3, 0), KVSIM_TGI_FLASHINFER, "and in 3.x");
  char buf[16];
  kvsim_tgi_release_format(2, 4, 1, buf, sizeof buf);
  cr_assert_str_eq(buf, "2.4.1", "patch shown when not 0");
  kvsim_tgi_release_format(0, 3, 0, buf, sizeof buf);
  cr_assert_str_eq(buf, "3.3", "major 0 is 3");
}
