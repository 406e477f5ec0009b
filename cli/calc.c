/* kvsim calc: the static memory plan, in the engine's own words. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "core/util.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
#include "kvsim/report.h"
#include "kvsim/sched.h"

int cmd_calc(int argc, char **argv) {
  /* Engines with their own flags (calc_tgi.c, calc_hf.c), --compare-engines. */
  int other = calc_engine_dispatch(argc, argv);
  if (other >= 0)
    return other;
  const char *model = "llama-3.1-8b", *gpu = "h100-sxm", *engine = "vllm-v1";
  const char *kv_dtype = "auto", *dtype = "auto", *quant = "", *vllm_version = NULL;
  double util = 0.9, mem_gib = -1, w = -1, act = -1, nt = -1, cg = -1, swap = 0, offload = 0;
  const char *mml_s = "0", *seq_len_s = "0";
  int64_t mml = 0, bs = 0, tp = 1, pp = 1, seqs = 0, mbt = 0, kvbytes = 0, blocks_override = 0;
  int64_t target = 0, seq_len = 0, kv_group = 64, kv_residual = 128;
  bool chunked = false, chunked_seen = false, no_chunked = false, json = false, strict = false;
  bool eager = false, est_cg = false, no_hma = false, pc = false, no_pc = false;
  const cli_arg args[] = {
      {"--model", ARG_STR, &model, "catalog name, HF id or path to config.json (default llama-3.1-8b)", NULL},
      {"--gpu", ARG_STR, &gpu, "catalog name or path to a GPU JSON (default h100-sxm)", NULL},
      {"--gpu-memory-gib", ARG_NUM, &mem_gib, "override the GPU's total memory (the engine's total_gpu_memory)", NULL},
      {"--engine", ARG_STR, &engine, "vllm-v1 (default), vllm-v0; sglang, tgi, hf-transformers (see --engine E --help); --compare-engines", NULL},
      {"--vllm-version", ARG_STR, &vllm_version, "vLLM release X.Y.Z whose sizing rules apply (default: the newest modelled)", NULL},
      {"--gpu-memory-utilization", ARG_NUM, &util, "fraction of total memory for the instance (default 0.9)", NULL},
      {"--max-model-len", ARG_STR, &mml_s, "context length, 8192 or 8k/8K as vLLM (default: the model's max_position_embeddings)", NULL},
      {"--block-size", ARG_INT, &bs, "tokens per KV block (default 16)", NULL},
      {"--kv-cache-dtype", ARG_STR, &kv_dtype, "auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, int8, int4", NULL},
      {"--kv-quant-group", ARG_INT, &kv_group, "int8/int4 cache: elements per scale group (default 64)", NULL},
      {"--kv-residual-tokens", ARG_INT, &kv_residual, "int8/int4 cache: recent tokens kept unquantized (default 128)", NULL},
      {"--dtype", ARG_STR, &dtype, "auto, bfloat16, float16, float32 (weights and auto KV)", NULL},
      {"--quantization", ARG_STR, &quant, "weight quantization: none, fp8, int8, awq, gptq, int4, mxfp4", NULL},
      {"--tensor-parallel-size", ARG_INT, &tp, "TP degree (default 1)", NULL},
      {"--pipeline-parallel-size", ARG_INT, &pp, "PP degree (default 1)", NULL},
      {"--max-num-seqs", ARG_INT, &seqs, "default: the engine's for this GPU", NULL},
      {"--max-num-batched-tokens", ARG_INT, &mbt, "default: the engine's for this GPU", NULL},
      {"--enable-chunked-prefill", ARG_FLAG, &chunked, "V0: profile with chunked prefill", &chunked_seen},
      {"--no-enable-chunked-prefill", ARG_FLAG, &no_chunked, "disable chunked prefill", NULL},
      {"--enable-prefix-caching", ARG_FLAG, &pc, "accepted for pasted serve commands (no effect on the plan)", NULL},
      {"--no-enable-prefix-caching", ARG_FLAG, &no_pc, "accepted for pasted serve commands", NULL},
      {"--enforce-eager", ARG_FLAG, &eager, "no CUDA graphs", NULL},
      {"--estimate-cudagraphs", ARG_FLAG, &est_cg, "subtract CUDA-graph memory (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1, default from ~v0.21)", NULL},
      {"--disable-hybrid-kv-cache-manager", ARG_FLAG, &no_hma, "treat sliding-window layers as full attention", NULL},
      {"--swap-space", ARG_NUM, &swap, "V0: CPU swap space in GiB per GPU (reports # CPU blocks)", NULL},
      {"--kv-offloading-size", ARG_NUM, &offload, "V1: CPU offload buffer in GiB, total over TP ranks (reports its blocks)", NULL},
      {"--kv-cache-memory-bytes", ARG_INT, &kvbytes, "bypass profiling: KV budget in bytes", NULL},
      {"--num-gpu-blocks-override", ARG_INT, &blocks_override, "use this many blocks", NULL},
      {"--weights-gib", ARG_NUM, &w, "measured weights (GiB) instead of the prediction", NULL},
      {"--activation-gib", ARG_NUM, &act, "measured activation peak (GiB)", NULL},
      {"--non-torch-gib", ARG_NUM, &nt, "measured non-torch memory (GiB)", NULL},
      {"--cuda-graph-gib", ARG_NUM, &cg, "measured CUDA-graph memory (GiB); subtracted only with --estimate-cudagraphs", NULL},
      {"--target-concurrency", ARG_INT, &target, "reverse mode: concurrent requests to hold", NULL},
      {"--seq-len", ARG_STR, &seq_len_s, "reverse mode: tokens per request (8192, 8k)", NULL},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--strict", ARG_FLAG, &strict, "exit 1 when the plan does not fit", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("calc", "[flags]", args, argc, argv, 2, pos, 0, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;

  kvsim_err err = {0};
  if (kvsim__parse_human_int(mml_s, &mml, "--max-model-len", &err) < 0 ||
      kvsim__parse_human_int(seq_len_s, &seq_len, "--seq-len", &err) < 0)
    return cli_fail("calc", "%s", err.msg);
  kvsim_model_t m;
  kvsim_gpu_t g;
  if (kvsim_model_load(model, &m, &err) < 0)
    return cli_fail("calc", "--model: %s", err.msg);
  if (kvsim_gpu_load(gpu, &g, &err) < 0)
    return cli_fail("calc", "--gpu: %s", err.msg);

  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  const kvsim_sched_ops_t *profile = kvsim_sched_find(engine);
  if (!profile) {
    char names[256];
    kvsim_sched_names(names, sizeof names);
    return cli_fail("calc", "--engine: unknown engine '%s' (expected %s)", engine, names);
  }
  p.engine = profile->plan_engine; /* the profile's memory-plan rules */
  if (vllm_version && kvsim_plan_parse_version(vllm_version, "--vllm-version", &p.vllm_version, &err) < 0)
    return cli_fail("calc", "%s", err.msg);
  if (kvsim_kv_dtype_parse(kv_dtype, &p.kv_dtype) < 0)
    return cli_fail("calc",
                    "--kv-cache-dtype: unknown dtype '%s' (expected auto, bfloat16, float16, fp8, "
                    "fp8_e4m3, fp8_e5m2, int8, int4)",
                    kv_dtype);
  if (!strcmp(dtype, "float32") || !strcmp(dtype, "float")) {
    m.dtype_bytes = 4;
    snprintf(m.dtype, sizeof m.dtype, "float32");
  } else if (!strcmp(dtype, "bfloat16") || !strcmp(dtype, "float16") || !strcmp(dtype, "half")) {
    m.dtype_bytes = 2;
    snprintf(m.dtype, sizeof m.dtype, "%s", dtype);
  } else if (strcmp(dtype, "auto"))
    return cli_fail("calc", "--dtype: unknown dtype '%s' (expected auto, bfloat16, float16, float32)", dtype);
  if (mem_gib != -1) {
    /* The plan's bound, checked before the GiB -> bytes conversion (1e12
     * GiB overflows int64). */
    double max_gib = (double)KVSIM_GPU_MAX_MEMORY_BYTES / KVSIM_GIB;
    if (!(mem_gib > 0 && mem_gib <= max_gib))
      return cli_fail("calc", "--gpu-memory-gib (hardware.gpu_memory_gib): %g GiB is out of range (0, %g]",
                      mem_gib, max_gib);
    p.total_memory_bytes = (int64_t)(mem_gib * KVSIM_GIB + 0.5);
  }
  if (tp < 1 || tp > 1024)
    return cli_fail("calc", "--tensor-parallel-size: %lld must be in [1, 1024]", (long long)tp);
  if (pp < 1 || pp > 1024)
    return cli_fail("calc", "--pipeline-parallel-size: %lld must be in [1, 1024]", (long long)pp);
  if (mml < 0 || bs < 0 || seqs < 0 || mbt < 0 || kvbytes < 0 || blocks_override < 0)
    return cli_fail("calc", "lengths, sizes and counts must be >= 0");
  if (kv_group < 1 || kv_group > 1 << 20)
    return cli_fail("calc", "--kv-quant-group: %lld is out of range [1, 1048576]", (long long)kv_group);
  if (kv_residual < 0 || kv_residual > KVSIM_MODEL_MAX_CONTEXT)
    return cli_fail("calc", "--kv-residual-tokens: %lld is out of range [0, %lld]",
                    (long long)kv_residual, (long long)KVSIM_MODEL_MAX_CONTEXT);
  struct {
    const char *flag;
    double v;
  } gibs[] = {{"--weights-gib", w}, {"--activation-gib", act}, {"--non-torch-gib", nt}, {"--cuda-graph-gib", cg}};
  for (int i = 0; i < 4; i++)
    if (gibs[i].v != -1 && gibs[i].v < 0)
      return cli_fail("calc", "%s: %g must be >= 0", gibs[i].flag, gibs[i].v);
  p.tp = (int)tp;
  p.pp = (int)pp;
  p.gpu_memory_utilization = util;
  p.max_model_len = mml;
  p.block_size = (int)bs;
  p.kv_quant_group = (int)kv_group;
  p.kv_residual_tokens = (int)kv_residual;
  snprintf(p.quantization, sizeof p.quantization, "%s", quant);
  p.max_num_seqs = seqs;
  p.max_num_batched_tokens = mbt;
  p.enable_chunked_prefill = no_chunked ? 0 : chunked_seen ? 1 : -1;
  p.enforce_eager = eager;
  p.estimate_cudagraphs = est_cg;
  p.disable_hybrid_kv_cache_manager = no_hma;
  p.weights_gib = w;
  p.activation_gib = act;
  p.non_torch_gib = nt;
  p.cuda_graph_gib = cg;
  p.kv_cache_memory_bytes = kvbytes;
  p.num_gpu_blocks_override = blocks_override;
  p.swap_space_gib = swap;          /* range-checked by the plan */
  p.kv_offloading_gib = offload;

  /* Reverse mode: --seq-len is also the plan's max_model_len (unless
   * given), so "Maximum concurrency" and the answer describe one length;
   * without --seq-len the answer is the longest length N requests fit in. */
  kvsim_plan_reverse_t rev = {0};
  bool reverse = target > 0 || seq_len > 0;
  if (reverse && target <= 0)
    return cli_fail("calc", "--seq-len needs --target-concurrency");
  if (seq_len > 0 && mml > 0 && mml < seq_len)
    return cli_fail("calc", "--seq-len %lld is longer than --max-model-len %lld", (long long)seq_len,
                    (long long)mml);
  if (seq_len > 0 && m.max_position_embeddings > 0 && seq_len > m.max_position_embeddings)
    return cli_fail("calc", "--seq-len: %lld is greater than the model's max_position_embeddings (%lld)",
                    (long long)seq_len, (long long)m.max_position_embeddings);
  kvsim_plan_t pl;
  if (kvsim_plan_compute(&m, &g, &p, &pl, &err) < 0 ||
      (reverse && kvsim_plan_reverse(&m, &g, &p, target, seq_len, &rev, &err) < 0))
    return cli_fail("calc", "%s", err.msg);
  if (reverse && !mml && (seq_len || rev.max_seq_len) && rev.seq_len != pl.p.max_model_len) {
    p.max_model_len = rev.seq_len;
    if (kvsim_plan_compute(&m, &g, &p, &pl, &err) < 0)
      return cli_fail("calc", "%s", err.msg);
  }
  int64_t cpu_blocks = pl.swap_blocks, offload_blocks = pl.offload_blocks;
  char answer[512] = "", ver[16];
  kvsim_vllm_version_format(pl.p.vllm_version, ver, sizeof ver);
  if (reverse && seq_len > 0)
    kvsim_plan_reverse_answer(&rev, g.name, pl.p.pp, target, answer, sizeof answer);

  if (json) {
    cJSON *o = cJSON_CreateObject();
    kvsim_report_plan_json(&pl, &m, &g, o);
    cJSON_AddStringToObject(o, "vllm_version", ver);
    if (swap > 0)
      cJSON_AddNumberToObject(o, "num_cpu_blocks", (double)cpu_blocks);
    if (offload > 0)
      cJSON_AddNumberToObject(o, "num_cpu_offload_blocks", (double)offload_blocks);
    if (reverse) {
      cJSON_AddNumberToObject(o, "target_concurrency", (double)target);
      cJSON_AddNumberToObject(o, "seq_len", (double)rev.seq_len);
      cJSON_AddNumberToObject(o, "required_kv_bytes", (double)rev.required_kv_bytes);
      cJSON_AddNumberToObject(o, "required_memory_bytes", (double)rev.required_memory_bytes);
      cJSON_AddNumberToObject(o, "min_gpus", rev.min_gpus);
      cJSON_AddNumberToObject(o, "layout_tensor_parallel_size", rev.layout_tp);
      cJSON_AddNumberToObject(o, "layout_replicas", rev.layout_replicas);
      cJSON_AddNumberToObject(o, "requests_per_replica", (double)rev.per_replica);
      cJSON_AddNumberToObject(o, "min_tensor_parallel_size", rev.min_tp);
      if (!seq_len)
        cJSON_AddNumberToObject(o, "max_model_len_for_target", (double)rev.max_seq_len);
      else if (!pl.fits) /* one answer: the advice is the reverse answer */
        cJSON_ReplaceItemInObject(o, "advice", cJSON_CreateString(answer));
      if (seq_len)
        cJSON_AddStringToObject(o, "answer", answer);
    }
    char *s = kvsim_report_json_string(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  } else {
    kvsim_report_plan_text_fit(&pl, &m, &g, answer[0] ? answer : NULL, stdout);
    printf("vLLM %s sizing rules: %s\n", ver, kvsim_plan_version_rules(pl.p.engine, pl.p.vllm_version));
    if (swap > 0)
      printf("# CPU blocks: %lld (swap space %.2f GiB)\n", (long long)cpu_blocks, swap);
    if (offload > 0)
      printf("CPU offload: %lld blocks of %lld tokens (%.2f GiB over %d GPUs)\n", (long long)offload_blocks,
             (long long)pl.p.block_size, offload, pl.p.tp * pl.p.pp);
    if (reverse && !seq_len) {
      char n[32];
      if (rev.max_seq_len > 0)
        printf("Reverse: %lld requests fit in max_model_len <= %s tokens each at TP %d on %s%s\n",
               (long long)target, kvsim__commas(rev.max_seq_len, n, sizeof n), pl.p.tp, g.name,
               rev.max_seq_len == m.max_position_embeddings ? " (the model's limit)" : "");
      else
        printf("Reverse: %lld requests do not fit at TP %d on %s at any length\n", (long long)target,
               pl.p.tp, g.name);
    } else if (reverse) {
      char n[32];
      printf("Reverse: %lld requests x %s tokens need %.2f GiB of KV cache per GPU at TP %d; "
             "a GPU of %.2f GiB total at utilization %.2f\n",
             (long long)target, kvsim__commas(seq_len, n, sizeof n), (double)rev.required_kv_bytes / KVSIM_GIB,
             pl.p.tp, (double)rev.required_memory_bytes / KVSIM_GIB, pl.p.gpu_memory_utilization);
      if (pl.fits) /* else the "To fit:" line above says it */
        printf("Smallest fit: %s\n", answer);
    }
  }
  return strict && !pl.fits ? 1 : 0;
}
