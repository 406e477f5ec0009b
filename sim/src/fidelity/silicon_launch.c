/* What a silicon row's benchmark launch did that the row's own columns do
 * not say (kvsim/fidelity.h, kvsim_fid_sil_row_t): the KV cache dtype when
 * it is not the one the `precision` column implies, and max_num_seqs. Each
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

void kvsim__fid_sil_launch(kvsim_fid_sil_row_t *w, const char *source) {
  measured_date(source, w->measured, sizeof w->measured);
  w->kv_cache_dtype[0] = '\0';
  w->max_num_seqs = 0;
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
