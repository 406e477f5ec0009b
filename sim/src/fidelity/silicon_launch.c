/* What a silicon row's benchmark launch did that the row's own columns do
 * not say (kvsim/fidelity.h, kvsim_fid_sil_row_t): the KV cache dtype when
 * it is not the one the `precision` column implies, max_num_seqs, SGLang's
 * scheduler options, the client's length spread, or that the launch is one
 * kvsim cannot replay (the row is then skipped with the reason). Each
 * entry is one campaign, recognised by system, checkpoint and the
 * `measured=` date of silicon_data_source, and says where its launch is
 * written down. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fidelity/fid.h"
#include "kvsim/fidelity.h"

/* InferenceMAX's H100 Llama-70B FP8 sweep (SemiAnalysisAI/InferenceX; the
 * rows' 1k/1k, 1k/8k and 8k/1k lengths and 4-64 clients): image
 * vllm/vllm-openai:v0.10.2 (.github/workflows/70b-tmpl.yml, bmk-h100-fp8),
 * served by benchmarks/70b_fp8_h100_{slurm,docker}.sh as of 2025-09-23
 * (commit af4ccd03, unchanged until the model left the sweep on
 * 2025-10-29) with `--max-num-seqs=$CONC`, the clients. The scripts write
 * kv-cache-dtype fp8, async-scheduling, no-enable-prefix-caching, 8,192
 * batched tokens and max-model-len 10240 into config.yaml and pass it as
 * `--config=config.yaml`. vLLM expands a config file only for the separate
 * `--config PATH` form (FlexibleArgumentParser.parse_args tests
 * `'--config' in args`): the `=` form is accepted and the file silently
 * ignored (vllm-project/vllm issue #43252, fix proposed in PR #43548). So
 * the server ran vLLM 0.10.2's defaults plus its command line
 * (gpu-memory-utilization 0.9, the TP size, max-num-seqs): a KV cache in
 * the checkpoint's bf16 (kv_cache_dtype auto: 0.10.2 does not read the
 * ModelOpt checkpoint's kv_cache_quant_algo, vllm PR #29980 of 2025-12
 * does), synchronous scheduling, prefix caching on, the model's
 * 131,072-token context and the default batched tokens (kvsim's defaults
 * for vllm-v1). max-num-seqs matters to the pool: vLLM's profile run
 * samples that many sequences (v1/worker/gpu_model_runner.py,
 * _dummy_sampler_run), which kvsim's plan counts in the activation peak.
 * The B200 script of the same sweep had its `=` taken out on 2025-09-24
 * (InferenceX commit 5e92867f, "typo fix"): those rows ran their config.
 * The H100 gpt-oss scripts kept it until 2025-11-04 (7103d660), but their
 * config names no KV dtype: nothing here for their rows. The release and its
 * synchronous scheduler are known but not given to these rows: they would
 * leave the asynchronous host term too few rows to be fitted without the
 * B200 (docs/ACCURACY.md, "What the misses are"). */
static const struct {
  const char *system, *model_path, *measured, *kv_cache_dtype;
  bool max_num_seqs_is_clients;
} launches[] = {
    {"h100_sxm", "meta-llama/Llama-3.1-70B", "2025-10-29", "auto", true},
};

/* The date of silicon_data_source's `measured=` item (its first 10
 * characters, YYYY-MM-DD), or "". */
static void measured_date(const char *source, char *out, size_t cap) {
  const char *m = strstr(source, "measured=");
  out[0] = '\0';
  if (m)
    snprintf(out, cap, "%.10s", m + strlen("measured="));
}

/* ---- SGLang: InferenceX's DeepSeek-R1 fp8 sweeps on B200 ----
 *
 * SemiAnalysisAI/InferenceX, image lmsysorg/sglang:v0.5.9-cu130 from
 * 2026-03-25 (commit 12ba0ae0, PR #943, .github/configs/nvidia-master.yaml
 * `dsr1-fp8-b200-sglang`: TP 8 at 4-64 clients for 1k/1k and 1k/8k, TP 8 at
 * 4 and TP 4 at 4-32 clients for 8k/1k), served by
 * benchmarks/single_node/dsr1_fp8_b200.sh (unchanged from 2026-03-11,
 * 64c20b6b, to 2026-03-27): at TP 8 --max-running-requests 128,
 * --cuda-graph-max-bs 128, --mem-fraction-static 0.82,
 * --chunked-prefill-size 32768, --max-prefill-tokens 32768; at TP 4 32,
 * 32, 0.95, 8192, 8192; both --kv-cache-dtype fp8_e4m3,
 * --disable-radix-cache, --scheduler-recv-interval 10 (30 from 16 clients
 * at TP 8), --stream-interval 30, --enable-flashinfer-allreduce-fusion,
 * --attention-backend trtllm_mla, --moe-runner-backend flashinfer_trtllm.
 * The 2025-12-31 row (image v0.5.6-cu129-amd64, commit d27433df, PR #276)
 * ran benchmarks/dsr1_fp8_b200_{docker,slurm}.sh with the TP 8 settings above.
 * The client (benchmarks/benchmark_lib.sh run_benchmark_serving,
 * bench_serving's benchmark_serving.py) draws lengths uniform in
 * [0.8 x len, len] (.github/workflows/benchmark-tmpl.yml,
 * RANDOM_RANGE_RATIO 0.8), sends 10 x conc prompts after 2 x conc
 * warm-ups: not the fixed lengths of AIConfigurator's SGLang runner.
 * kvsim replays the scheduler options, the receive interval (new requests
 * are read once 10 or 30 decode steps have run, or after a prefill:
 * sched/sglang.c), the fp8 cache, the radix cache off and the spread; not
 * the stream interval (tokens reach the client 30 at a time, but the
 * first at once: scheduler_output_processor_mixin.py stream_output,
 * `len(req.output_ids) % stream_interval == 1`, so the mean TTFT and TPOT
 * do not see it), the CUDA-graph cap (equal to the running cap), the
 * fused all-reduce nor the kernels' backends (kvsim times vLLM's kernels).
 *
 * The same day the same image ran the sweep's speculative twin,
 * `dsr1-fp8-b200-sglang-mtp` (benchmarks/single_node/dsr1_fp8_b200_mtp.sh:
 * EAGLE with DeepSeek's MTP head, 2 steps, top-k 1, 3 draft tokens,
 * --max-running-requests 512, --chunked-prefill-size 16384, TP 8 only, 4-512
 * clients at every length). Its rows carry the same columns and the same
 * `measured=`: the per-day files (ids 2026_03_25_..., 2026_04_06_...) hold
 * both launches at TP 8, and only the DB dump's rows say which
 * (`config_id=87`: the plain sweep; `config_id=271`: its TP 4 part). A TP 8
 * row without that config id is the MTP launch when its clients or
 * lengths are outside the plain sweep, otherwise either; neither is
 * replayed: kvsim models SGLang's EAGLE, but no row records its
 * acceptance, and the plain twins are scored through their config_id
 * rows. */
typedef struct {
  int64_t tp, max_running_requests, chunked_prefill_size, max_prefill_tokens;
  double mem_fraction_static;
} sgl_launch_t;

static const sgl_launch_t dsr1_b200_fp8[] = {
    {8, 128, 32768, 32768, 0.82},
    {4, 32, 8192, 8192, 0.95},
};

/* InferenceX's client spread (.github/workflows/benchmark-tmpl.yml). */
#define INFERENCEX_RANGE_RATIO 0.8

/* True when the source names the DB dump's config id `id`. */
static bool has_config_id(const char *source, const char *id) {
  char key[32];
  snprintf(key, sizeof key, "config_id=%s;", id);
  return strstr(source, key) != NULL;
}

/* Where the 2026-03-25 TP 8 row is outside the plain sweep's search space
 * (clients 4-64; 8k/1k at 4 only): the MTP launch. */
static bool outside_plain_sweep(const kvsim_fid_sil_row_t *w) {
  return w->batch > 64 || (w->isl == 8192 && w->osl == 1024 && w->batch > 4);
}

static void skip(kvsim_fid_sil_row_t *w, const char *why) {
  w->skipped = true;
  snprintf(w->reason, sizeof w->reason, "%s", why);
}

static void sglang_launch(kvsim_fid_sil_row_t *w, const char *source) {
  if (w->skipped || strcasecmp(w->system, "b200_sxm") || strcmp(w->model, "deepseek-v3") ||
      strcasecmp(w->precision, "fp8"))
    return;
  const bool mar25 = !strcmp(w->measured, "2026-03-25"), dec31 = !strcmp(w->measured, "2025-12-31");
  if (!mar25 && !dec31)
    return;
  if (mar25 && w->tp == 8 && !has_config_id(source, "87")) {
    skip(w, outside_plain_sweep(w)
                ? "InferenceX's MTP launch (EAGLE speculative decoding): its acceptance is not "
                  "recorded"
                : "InferenceX 2026-03-25 at TP 8: the plain or the MTP launch, the columns do "
                  "not say (the config_id=87 rows are the plain one)");
    return;
  }
  for (size_t i = 0; i < sizeof dsr1_b200_fp8 / sizeof *dsr1_b200_fp8; i++)
    if (dsr1_b200_fp8[i].tp == w->tp && (mar25 || w->tp == 8)) {
      const sgl_launch_t *l = &dsr1_b200_fp8[i];
      w->max_running_requests = l->max_running_requests;
      w->chunked_prefill_size = l->chunked_prefill_size;
      w->max_prefill_tokens = l->max_prefill_tokens;
      w->mem_fraction_static = l->mem_fraction_static;
      snprintf(w->kv_cache_dtype, sizeof w->kv_cache_dtype, "fp8_e4m3");
      w->no_radix_cache = true;
      w->range_ratio = INFERENCEX_RANGE_RATIO;
      /* "if CONC >= 16, relax to ~30 requests between scheduler recv
       * polls" (TP 8 and the 2025-12-31 script; 10 at TP 4). */
      w->scheduler_recv_interval = w->tp == 8 && w->batch >= 16 ? 30 : 10;
      return;
    }
}

void kvsim__fid_sil_launch(kvsim_fid_sil_row_t *w, const char *source) {
  measured_date(source, w->measured, sizeof w->measured);
  w->kv_cache_dtype[0] = '\0';
  w->max_num_seqs = w->max_running_requests = w->chunked_prefill_size = w->max_prefill_tokens = 0;
  w->scheduler_recv_interval = 0;
  w->mem_fraction_static = w->range_ratio = 0;
  w->no_radix_cache = false;
  if (!strcasecmp(w->backend, "sglang")) {
    sglang_launch(w, source);
    return;
  }
  if (strcasecmp(w->backend, "vllm"))
    return;
  for (size_t i = 0; i < sizeof launches / sizeof *launches; i++)
    if (!strcasecmp(w->system, launches[i].system) && !strcasecmp(w->model_path, launches[i].model_path) &&
        !strcmp(w->measured, launches[i].measured)) {
      snprintf(w->kv_cache_dtype, sizeof w->kv_cache_dtype, "%s", launches[i].kv_cache_dtype);
      if (launches[i].max_num_seqs_is_clients)
        w->max_num_seqs = w->batch;
      return;
    }
}
