/* The deployment search of a study (`kvsim compare STUDY` whose study has
 * a "search" block): for each GPU kind listed, every combination of TP,
 * max_num_seqs, max_num_batched_tokens, KV dtype and quantization is the
 * study's scenario with those settings; each that fits gets the fewest
 * replicas meeting the SLO at the target rate (every point a simulation),
 * the cheapest per GPU is named, and the SLO-meeting points give the
 * Pareto frontier of output tokens/s per GPU against tokens/s per user
 * (1 / mean TPOT), as static configurators draw it.
 *
 *   "search": { "gpus": ["h100-sxm", "h200"], "tensor_parallel_size": [2, 4, 8],
 *               "max_num_seqs": [128, 256], "max_num_batched_tokens": [8192],
 *               "kv_cache_dtype": ["auto", "fp8"], "quantization": ["none", "fp8"],
 *               "max_replicas": 32 }
 *
 * Only "gpus" is required; a list left out keeps the scenario's value.
 * "quantization" values are the scenario's engine.quantization ("none":
 * the checkpoint as it is).
 *
 * A "disaggregation" object adds disaggregated layouts beside the
 * aggregated configurations, with the scenario's own block's key names:
 *
 *   "disaggregation": { "prefill": { "replicas": [1, 2], "tensor_parallel_size": [4] },
 *                       "decode":  { "replicas": [1, 2, 3], "tensor_parallel_size": [4, 8] } }
 *
 * Each GPU x quantization x KV dtype x max_num_seqs x max_num_batched_tokens
 * combination is then also run as every prefill:decode unit (replicas and
 * TP of each side; both sides on that GPU, the link and flow the
 * scenario's disaggregation block gives, else its defaults), the replica
 * search scaling whole units. A list left out is the scenario's value
 * (replicas 1; TP hardware.tensor_parallel_size). A unit whose two counts
 * share a factor (2P:2D) is the same deployments as a smaller one (two
 * units of 1P:1D) and is listed, not run. */
#ifndef KVSIM_DEPLOY_H
#define KVSIM_DEPLOY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "kvsim/plan.h"
#include "kvsim/study.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KVSIM_DEPLOY_MAX_VALUES 8     /* values per list */
#define KVSIM_DEPLOY_MAX_POINTS 24    /* simulations of one configuration's replica search */
#define KVSIM_DEPLOY_MAX_REPLICAS 256 /* the largest max_replicas a block may ask */
#define KVSIM_DEPLOY_MAX_CONFIGS 1024 /* configurations of one search */

typedef struct kvsim_deploy_space {
  char gpus[KVSIM_DEPLOY_MAX_VALUES][64]; /* catalog names */
  int ngpus;
  int tp[KVSIM_DEPLOY_MAX_VALUES];
  int ntp;
  int64_t max_num_seqs[KVSIM_DEPLOY_MAX_VALUES];
  int nseqs;
  int64_t max_num_batched_tokens[KVSIM_DEPLOY_MAX_VALUES];
  int nmbt;
  char kv_cache_dtype[KVSIM_DEPLOY_MAX_VALUES][16];
  int nkv;
  char quantization[KVSIM_DEPLOY_MAX_VALUES][32];
  int nquant;
  int max_replicas; /* default 32 */
  /* The disaggregated layouts ("disaggregation" given: disagg true); a
   * list left out has n 0 (the scenario's value). */
  bool disagg;
  int prefill_replicas[KVSIM_DEPLOY_MAX_VALUES], nprefill;
  int decode_replicas[KVSIM_DEPLOY_MAX_VALUES], ndecode;
  int prefill_tp[KVSIM_DEPLOY_MAX_VALUES], nprefill_tp;
  int decode_tp[KVSIM_DEPLOY_MAX_VALUES], ndecode_tp;
} kvsim_deploy_space_t;

/* One configuration of the space: a list left out is 0 / "" (the
 * scenario's value). A disaggregated one (disagg) has tp 0 and its
 * sides' instances per unit and TP (0: the scenario's). */
typedef struct kvsim_deploy_config {
  char gpu[64];
  int tp;
  int64_t max_num_seqs, max_num_batched_tokens;
  char kv_cache_dtype[16], quantization[32];
  bool disagg;
  int prefill_replicas, decode_replicas, prefill_tp, decode_tp;
} kvsim_deploy_config_t;

/* Parses and checks the block (where: "FILE: search"). Errors
 * (KVSIM_EINVAL, naming the key and the bad value): an unknown key, a list
 * that is not a non-empty array of at most KVSIM_DEPLOY_MAX_VALUES, a value
 * out of range (TP in [1, 64], max_num_seqs in [1, 65536],
 * max_num_batched_tokens in [1, 10,000,000], max_replicas in [1, 256], a
 * side's replicas in [1, 64]), a value given twice, a name that is no GPU,
 * a "disaggregation" or side that is not an object. The scenario checks
 * KV dtypes and quantizations (kvsim_deploy_config_scenario). */
int kvsim_deploy_space_parse(const cJSON *block, const char *where, kvsim_deploy_space_t *s,
                             kvsim_err *err);
/* How many configurations: the product of the lists' lengths, and with
 * "disaggregation" as many again without TP, times the product of the
 * four side lists' lengths. */
int64_t kvsim_deploy_space_count(const kvsim_deploy_space_t *s);
/* How many of them are aggregated: they come first, the disaggregated ones
 * after them. */
int64_t kvsim_deploy_space_count_aggregated(const kvsim_deploy_space_t *s);
/* Configuration i, GPU outermost (then TP, quantization, KV dtype,
 * max_num_seqs, max_num_batched_tokens); past the aggregated ones, GPU,
 * quantization, KV dtype, max_num_seqs, max_num_batched_tokens, prefill
 * replicas, decode replicas, prefill TP, decode TP. */
void kvsim_deploy_space_config(const kvsim_deploy_space_t *s, int64_t i, kvsim_deploy_config_t *out);
/* The study's scenario with cfg's settings, at the target rate (fini it).
 * With the search block's "disaggregation" given, an aggregated
 * cfg drops the scenario's disaggregation block; a disaggregated one sets
 * it (both sides on cfg's GPU; the base hardware at the decode side's TP,
 * which the sides inherit and which must fit). Errors: the scenario's own
 * (a bad KV dtype or quantization named; a profile without a KV
 * connector). */
int kvsim_deploy_config_scenario(const kvsim_compare_t *c, const kvsim_deploy_config_t *cfg,
                                 kvsim_scenario_t *sc, kvsim_err *err);
/* Whether a unit of p prefill and d decode instances is k > 1 times a
 * smaller unit the space also searches (2P:2D and 1P:1D): k units of the
 * smaller one are the same deployments, and more, so it need not run.
 * Writes the smallest such unit's counts (p, d when none). */
bool kvsim_deploy_unit_covered(const kvsim_deploy_space_t *s, int p, int d, int *p_min, int *d_min);
/* A unit of a disaggregated deployment: "2P TP4 : 3D TP8". */
void kvsim_deploy_unit_name(int prefill, int prefill_tp, int decode, int decode_tp, char *buf,
                            size_t cap);

/* What the serving command needs: kvsim_serve_command. */
typedef struct kvsim_serve_args {
  kvsim_plan_engine engine;  /* V1/V0: vllm serve; SGLANG: sglang.launch_server */
  char model[256];           /* the Hugging Face id */
  int tp;
  int64_t max_num_seqs, max_num_batched_tokens, max_model_len;
  char kv_cache_dtype[16];   /* "auto", "fp8", ... */
  char quantization[32];     /* "" or "none": none given */
  double gpu_memory_utilization; /* SGLang: its mem_fraction_static */
  /* A side of a disaggregated deployment: its role and transfer flags
   * (KVSIM_SERVE_ROLE_NONE: an aggregated instance). */
  int role;
} kvsim_serve_args_t;

#define KVSIM_SERVE_ROLE_NONE 0
#define KVSIM_SERVE_ROLE_PREFILL 1
#define KVSIM_SERVE_ROLE_DECODE 2

/* The engine's launch command, ready to paste: "vllm serve MODEL
 * --tensor-parallel-size 4 --max-num-seqs 256 --max-num-batched-tokens
 * 8192 --kv-cache-dtype fp8 --quantization fp8 --gpu-memory-utilization
 * 0.9 --max-model-len 8192", or SGLang's "python -m sglang.launch_server
 * --model-path MODEL --tp-size 4 --max-running-requests 256
 * --chunked-prefill-size 8192 --kv-cache-dtype fp8_e4m3 --quantization fp8
 * --mem-fraction-static 0.9 --context-length 8192". KVSIM_EINVAL for an
 * engine with no such command (TGI, HF Transformers: why in buf). */
int kvsim_serve_command(const kvsim_serve_args_t *a, char *buf, size_t cap);

/* The Pareto frontier of n points (x, y), both larger-is-better: on[i] is
 * true when no other point is at least as good on both and better on one
 * (equal points are all on it). NAN points are never on it. Returns how
 * many are. */
int kvsim_pareto_front(const double *x, const double *y, int n, bool *on);

/* One simulated point of a configuration's replica search. */
typedef struct kvsim_deploy_point {
  int replicas;
  bool meets;
  double ttft_p99, tpot_p99, e2e_p99, tpot_mean; /* NAN: no sample */
  double output_tokens_per_s;                    /* all replicas */
  int64_t rejected;
  bool steady;                                   /* its window reached steady state (kvsim/steady.h) */
  char note[160];                                /* why it misses */
} kvsim_deploy_point_t;

/* One configuration's outcome. Plain data (sent between processes). */
typedef struct kvsim_deploy_row {
  kvsim_deploy_config_t cfg;
  int rc;                  /* KVSIM_OK; KVSIM_ENOFIT (error: the engine's words); else failed */
  char error[640];
  int gpus_per_replica;
  int64_t kv_blocks;
  kvsim_serve_args_t serve;   /* the resolved settings (disaggregated: the decode side's) */
  kvsim_serve_args_t side[2]; /* disaggregated: each side's (kvsim_disagg_side order) */
  int npoints;
  kvsim_deploy_point_t points[KVSIM_DEPLOY_MAX_POINTS];
  int best;                /* index of the point with the fewest replicas meeting; -1 none */
  char stopped[256];       /* why the replica search stopped without an answer */
  /* The best point's margin to the SLO: min over the targets of
   * 1 - p99 / target (0.2: every p99 20 % under its target); NAN none. */
  double margin;
  double cost_per_gpu_hour, cost_per_hour; /* NAN without a price */
} kvsim_deploy_row_t;

typedef struct kvsim_deploy_result {
  kvsim_deploy_row_t *rows; /* one per configuration, in space order (owned) */
  int n;
  int simulations, no_fit, failed;
  int cheapest[KVSIM_DEPLOY_MAX_VALUES]; /* per GPU of the space: a row index, -1 none */
  int winner;               /* the cheapest of all, -1 none */
  /* The cheapest aggregated and disaggregated rows (-1 none), when the
   * space has "disaggregation": does it pay, and by how much. */
  int cheapest_aggregated, cheapest_disaggregated;
  /* The winner's launch command (a disaggregated one: the prefill side's
   * line, then the decode side's); or why none (winner_has_command false). */
  char winner_command[2048];
  bool winner_has_command;
  char plots[512], plots_note[512];
} kvsim_deploy_result_t;

/* The cheaper of two rows that met (cost, or GPUs without prices; then the
 * larger margin to the SLO; then the higher output tokens/s per GPU; then
 * fewer replicas; then space order): true when a is. At one price and GPU
 * count, throughput per GPU at the target rate differs by noise only; the
 * margin says which holds the SLO with more to spare. */
bool kvsim_deploy_cheaper(const kvsim_deploy_row_t *a, const kvsim_deploy_row_t *b);

/* Totals, the cheapest per GPU of the space and of all (by
 * kvsim_deploy_cheaper), the cheapest aggregated and disaggregated, and the
 * winner's command, from res->rows. */
void kvsim_deploy_choose(const kvsim_deploy_space_t *s, kvsim_deploy_result_t *res);

/* Runs the search of c (c->search given) with opts->jobs processes and,
 * with opts->out, writes search.csv (one row per simulated point, and one
 * per configuration that did not run, with why), search_frontier.csv and
 * REPORT.md there, and draws frontier.png (gnuplot). Errors: the block's
 * (KVSIM_EINVAL), KVSIM_EIO (folders, fork, files). */
int kvsim_deploy_run(const kvsim_compare_t *c, const kvsim_compare_opts_t *opts,
                     kvsim_deploy_result_t *res, kvsim_err *err);
void kvsim_deploy_result_fini(kvsim_deploy_result_t *res);
/* The answer for a terminal: the cheapest per GPU, the winner's command. */
void kvsim_deploy_print(const kvsim_compare_t *c, const kvsim_deploy_result_t *res, const char *dir,
                        FILE *out);
/* search.csv and REPORT.md as text (malloc'd; NULL: out of memory). */
char *kvsim_deploy_csv(const kvsim_deploy_result_t *res);
char *kvsim_deploy_report_md(const kvsim_compare_t *c, const kvsim_deploy_result_t *res,
                             const char *command);

#ifdef __cplusplus
}
#endif

#endif
