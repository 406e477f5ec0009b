/* A whole simulation decoded from the input: the first bytes choose the
 * profile, KV dtype, block size, pool size, chunking, prefix caching, swap
 * or offload, priority; the rest are requests (arrival gap, prompt and
 * output length, segment sharing, priority), five bytes each, written as a
 * kvsim CSV trace. The run must end (no hang), lose no request, and keep
 * its invariants (checked after every step). The header's top bits add a
 * disaggregation block (vllm-v1 instances, vLLM's or SGLang's flow, a
 * prefill and a decode pool of their own sizes, NVLink or InfiniBand).
 * The fourth tier value runs SGLang's scheduler instead (pages, token
 * pool, receive interval: sched/sglang.c's recv_requests; disaggregated,
 * both sides sglang, the decode side's gate in engine/disagg_run.c). */
#include <math.h>

#include "fuzz_common.h"
#include "kvsim/scenario.h"

static const char *const profiles[] = {"vllm-v1", "vllm-v0", "static", "contiguous",
                                       "contiguous-pow2"};
static const char *const dtypes[] = {"auto", "fp8", "int8", "int4"};
static const int blocks[] = {1, 2, 8, 16, 32, 64, 128, 16};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 8)
    return 0;
  const uint8_t *h = data;
  const char *profile = profiles[h[0] % 5];
  const char *dtype = dtypes[h[1] % 4];
  int bs = blocks[h[2] % 8];
  int pool = 4 + h[3] * 4;                 /* blocks */
  int chunked = h[4] & 1, prefix = (h[4] >> 1) & 1, prio = (h[4] >> 2) & 1;
  int tier = (h[4] >> 3) & 3;               /* 0 none, 1 swap (v0), 2 offload (v1) */
  int disagg = (h[4] >> 5) & 1, sglang_flow = (h[4] >> 6) & 1, nvlink = h[4] >> 7;
  const int sgl = tier == 3;
  if (sgl) {
    profile = "sglang";
    dtype = dtypes[h[1] % 2]; /* SGLang's KV: auto or fp8 */
  } else if (disagg) { /* vllm-v1 instances, the one connector profile here */
    profile = "vllm-v1";
  }
  const int recv = 1 + (h[6] >> 3) % 32; /* scheduler_recv_interval */
  int decode_pool = 4 + (uint8_t)(h[3] ^ h[5] ^ h[6]) * 2; /* blocks */
  int max_seqs = 1 + h[5] % 16;
  int max_len = 64 << (h[6] % 6);           /* 64 .. 2048 */
  int mnbt = max_len * (1 + h[7] % 4);
  /* The trace: five bytes a request. */
  char *csv = malloc(64 + (size / 5 + 1) * 96);
  if (!csv)
    return 0;
  size_t o = (size_t)sprintf(csv, "arrival_s,prompt_tokens,output_tokens,prefix_group,prefix_tokens,priority\n");
  double t = 0;
  int nreq = 0;
  for (size_t i = 8; i + 5 <= size && nreq < 200; i += 5, nreq++) {
    t += data[i] / 64.0;
    int prompt = 1 + data[i + 1] * 8 + (data[i + 4] & 7);
    int output = 1 + data[i + 2] % 64;
    int share = data[i + 3] % 4; /* 0: unique; else one of three shared prefixes */
    int ptoks = prompt < 32 ? prompt : 32;
    if (share)
      o += (size_t)sprintf(csv + o, "%.6f,%d,%d,%d,%d,%d\n", t, prompt, output, share, ptoks,
                           (data[i + 4] >> 3) % 3);
    else
      o += (size_t)sprintf(csv + o, "%.6f,%d,%d,,,%d\n", t, prompt, output, (data[i + 4] >> 3) % 3);
  }
  const char *path = fuzz_tmpfile((const uint8_t *)csv, o, ".csv");
  free(csv);
  if (!path)
    return 0;
  char disagg_json[384] = "";
  if (disagg)
    snprintf(disagg_json, sizeof disagg_json,
             " \"disaggregation\": {\"flow\": \"%s\","
             " \"prefill\": {\"engine\": {\"%s\": %d}},"
             " \"decode\": {\"engine\": {\"%s\": %d}},"
             " \"link\": {\"kind\": \"%s\"}},",
             sglang_flow ? "sglang" : "vllm", sgl ? "max_total_tokens" : "num_gpu_blocks_override",
             sgl ? pool * bs : pool, sgl ? "max_total_tokens" : "num_gpu_blocks_override",
             sgl ? decode_pool * bs : decode_pool, nvlink ? "nvlink" : "infiniband");
  char json[2560];
  if (sgl)
    snprintf(json, sizeof json,
             "{\"name\": \"fuzz\", \"seed\": 1, \"model\": \"llama-3.2-1b\","
             " \"hardware\": {\"gpu\": \"l4\"},"
             " \"engine\": {\"profile\": \"sglang\", \"kv_cache_dtype\": \"%s\", \"page_size\": %d,"
             " \"max_total_tokens\": %d, \"max_running_requests\": %d, \"max_model_len\": %d,"
             " \"chunked_prefill_size\": %d, \"enable_prefix_caching\": %s,"
             " \"scheduler_recv_interval\": %d},%s"
             " \"workload\": {\"trace\": \"%s\", \"format\": \"kvsim\"}}",
             dtype, bs, pool * bs, max_seqs, max_len, chunked ? mnbt : -1, prefix ? "true" : "false",
             recv, disagg_json, path);
  else
    snprintf(json, sizeof json,
             "{\"name\": \"fuzz\", \"seed\": 1, \"model\": \"llama-3.2-1b\","
             " \"hardware\": {\"gpu\": \"l4\"},"
             " \"engine\": {\"profile\": \"%s\", \"kv_cache_dtype\": \"%s\", \"block_size\": %d,"
             " \"num_gpu_blocks_override\": %d, \"max_num_seqs\": %d, \"max_model_len\": %d,"
             " \"max_num_batched_tokens\": %d, \"enable_chunked_prefill\": %s,"
             " \"enable_prefix_caching\": %s%s%s%s},%s"
             " \"workload\": {\"trace\": \"%s\", \"format\": \"kvsim\"}}",
             profile, dtype, bs, pool, max_seqs, max_len, mnbt, chunked ? "true" : "false",
             prefix ? "true" : "false", prio ? ", \"scheduling_policy\": \"priority\"" : "",
             tier == 1 ? ", \"swap_space\": 0.001, \"preemption_mode\": \"swap\"" : "",
             tier == 2 ? ", \"kv_offloading_size\": 0.01" : "", disagg_json, path);
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  if (kvsim_scenario_parse(json, "fuzz: scenario", "/", NULL, 0, &sc, &err) == KVSIM_OK) {
    int64_t seen = 0;
    kvsim_sink_t sink = {.ctx = &seen, .sample = fuzz_sample, .request = fuzz_request};
    kvsim_run_opts_t opts = {.check_invariants = true, .check_period = 0};
    kvsim_run_stats_t st;
    if (kvsim_run(&sc, &opts, &sink, &st, &err) == KVSIM_OK) {
      /* No request lost: every arrival left through the sink. */
      if (seen != st.requests_arrived)
        fuzz_fail("a request never reached the sink", err.msg);
      if (st.requests_finished + st.requests_rejected + st.requests_in_flight != st.requests_arrived)
        fuzz_fail("finished + rejected + in flight != arrived", err.msg);
    }
    kvsim_scenario_fini(&sc);
  }
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  unlink(path);
  return 0;
}
