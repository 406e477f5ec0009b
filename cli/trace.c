/* kvsim trace stats|convert|gen: inspect a trace (counts, rate,
 * burstiness, length percentiles, prefix reuse), convert any format to
 * kvsim CSV, and write a synthetic workload out as kvsim CSV. Flags ->
 * the workload room's trace tool (sim/src/workload/tool.c) -> print
 * (trace_print.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "core/util.h"
#include "kvsim/report.h"
#include "kvsim/workload.h"
#include "trace.h"

#define DEFAULT_LRU "1000,5000,20000,50000"
#define FORMAT_HELP "auto (default), azure, vidur, mooncake, llmservingsim, kvsim, requests"

static bool is_spec(const char *path) { return kvsim__ends_with(path, ".json"); }

/* The workload for FILE: a trace (with the flags) or, for a .json file,
 * the workload object it holds (a workload, or a scenario's "workload"). */
static int load_workload(const char *cmd, const char *file, const kvsim_trace_opts_t *o,
                         bool trace_flags, int64_t *seed, bool seed_given,
                         kvsim_workload_cfg_t **cfg) {
  kvsim_err err = {0};
  if (!is_spec(file))
    return kvsim_workload_for_trace(file, o, cfg, &err) < 0 ? cli_fail(cmd, "%s", err.msg) : 0;
  if (trace_flags)
    return cli_fail(cmd, "%s: --format, --time-scale, --limit, --skip-bad-rows and "
                         "--hash-block-tokens apply to trace files, not to a JSON spec",
                    file);
  if (kvsim_workload_for_spec(file, seed, seed_given, cfg, &err) < 0)
    return cli_fail(cmd, "%s", err.msg);
  if (o->max_total_tokens > 0)
    fprintf(stderr, "kvsim %s: note: --max-total-tokens ignored for a JSON spec (set "
                    "workload.max_total_tokens)\n", cmd);
  return 0;
}

/* Opens the source of FILE; on failure prints the error and returns 2. */
static int open_source(const char *cmd, const char *file, const kvsim_trace_opts_t *o,
                       bool trace_flags, int64_t *seed, bool seed_given, kvsim_workload_cfg_t **cfg,
                       kvsim_source_t **src) {
  int rc = load_workload(cmd, file, o, trace_flags, seed, seed_given, cfg);
  kvsim_err err = {0};
  if (rc)
    return rc;
  if (kvsim_source_open(*cfg, (uint64_t)*seed, src, &err) < 0) {
    kvsim_workload_cfg_free(*cfg);
    return cli_fail(cmd, "%s", err.msg);
  }
  return 0;
}

static int cmd_stats(int argc, char **argv) {
  const char *cmd = "trace stats";
  kvsim_trace_opts_t o = {"auto", 1.0, 0, 0, 512, false, false, true};
  bool json = false, tflag = false, block_given = false, limit_given = false, max_given = false;
  int64_t block = 0, seed = 1;
  const char *lru = NULL;
  const cli_arg args[] = {
      {"--format", ARG_STR, &o.format, FORMAT_HELP, &tflag},
      {"--json", ARG_FLAG, &json, "print one JSON object", NULL},
      {"--prefix-block-size", ARG_INT, &block,
       "count prefix reuse in blocks of B tokens (512 = Mooncake hash ids)", &block_given},
      {"--lru-blocks", ARG_STR, &lru,
       "LRU capacities in blocks, comma-separated (default " DEFAULT_LRU ")", NULL},
      {"--time-scale", ARG_NUM, &o.time_scale, "multiply inter-arrival times (0.5 = twice as fast)",
       &tflag},
      {"--limit", ARG_INT, &o.limit, "first N requests only (default: all)", &limit_given},
      {"--skip-bad-rows", ARG_FLAG, &o.skip_bad_rows, "skip and count malformed rows", &tflag},
      {"--max-total-tokens", ARG_INT, &o.max_total_tokens,
       "clip prompt (then output) so prompt + output <= N", &max_given},
      {"--hash-block-tokens", ARG_INT, &o.hash_block_tokens,
       "tokens per Mooncake hash id (default 512)", &tflag},
      {"--seed", ARG_INT, &seed, "seed for a synthetic JSON spec (default: the scenario's, else 1)",
       &o.seed_given},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse(cmd, "FILE|SPEC.json [flags]", args, argc, argv, 3, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail(cmd, "expected one trace file (see kvsim trace stats --help)");
  if (limit_given && o.limit < 1) /* 0 is "all" only when absent */
    return cli_fail(cmd, "--limit: bad value %lld (expected >= 1)", (long long)o.limit);
  if (max_given && o.max_total_tokens < 2) /* 0 is "no clipping" only when absent */
    return cli_fail(cmd, "--max-total-tokens: bad value %lld (expected >= 2)",
                    (long long)o.max_total_tokens);
  tflag = tflag || limit_given;
  if (block_given && block < 1) /* 0 is "not counted", not a value to give */
    return cli_fail(cmd, "--prefix-block-size: bad value %lld (expected >= 1)", (long long)block);
  if (lru && !block)
    return cli_fail(cmd, "--lru-blocks: needs --prefix-block-size");
  kvsim_trace_stats_t st;
  memset(&st, 0, sizeof st);
  st.prefix_block = block;
  if (block && kvsim_trace_parse_lru_caps(lru ? lru : DEFAULT_LRU, st.lru_capacity, &st.nlru) < 0)
    return cli_fail(cmd,
                    "--lru-blocks: bad value '%s' (expected up to %d integers >= 1, "
                    "comma-separated)",
                    lru, KVSIM_TRACE_MAX_LRU);
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_source_t *src;
  if ((rc =
           open_source(cmd, pos[0], &o, tflag && is_spec(pos[0]), &seed, o.seed_given, &cfg, &src)))
    return rc;
  kvsim_err err = {0};
  const char *fmt = kvsim_source_format_name(src);
  rc = kvsim_trace_stats(src, true, &st, &err);
  kvsim_source_close(src);
  kvsim_workload_cfg_free(cfg);
  if (rc < 0)
    return cli_fail(cmd, "%s", err.msg);
  if (!json)
    return trace_print_stats(pos[0], fmt, &st), 0;
  cJSON *j = kvsim_trace_stats_json(&st, pos[0], fmt);
  char *s = kvsim_report_json_string(j);
  puts(s);
  free(s);
  cJSON_Delete(j);
  return 0;
}

static int cmd_convert(int argc, char **argv) {
  const char *cmd = "trace convert";
  kvsim_trace_opts_t o = {"auto", 1.0, 0, 0, 512, false, false, false};
  const char *out = NULL;
  int64_t seed = 1;
  bool limit_given = false, max_given = false;
  const cli_arg args[] = {
      {"--out", ARG_PATH, &out, "output kvsim CSV (written atomically)", NULL},
      {"--format", ARG_STR, &o.format, FORMAT_HELP, NULL},
      {"--time-scale", ARG_NUM, &o.time_scale, "multiply inter-arrival times", NULL},
      {"--limit", ARG_INT, &o.limit, "first N requests only (default: all)", &limit_given},
      {"--skip-bad-rows", ARG_FLAG, &o.skip_bad_rows,
       "skip malformed rows (their count goes to stderr)", NULL},
      {"--max-total-tokens", ARG_INT, &o.max_total_tokens,
       "clip prompt (then output) so prompt + output <= N", &max_given},
      {"--hash-block-tokens", ARG_INT, &o.hash_block_tokens,
       "tokens per Mooncake hash id (default 512)", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse(cmd, "FILE --out OUT.csv [flags]", args, argc, argv, 3, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail(cmd, "expected one trace file (see kvsim trace convert --help)");
  if (limit_given && o.limit < 1) /* 0 is "all" only when absent */
    return cli_fail(cmd, "--limit: bad value %lld (expected >= 1)", (long long)o.limit);
  if (max_given && o.max_total_tokens < 2) /* 0 is "no clipping" only when absent */
    return cli_fail(cmd, "--max-total-tokens: bad value %lld (expected >= 2)",
                    (long long)o.max_total_tokens);
  if (!out)
    return cli_fail(cmd, "--out: missing (the kvsim CSV to write)");
  if (is_spec(pos[0]))
    return cli_fail(cmd, "%s: a JSON spec; use kvsim trace gen", pos[0]);
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_source_t *src;
  if ((rc = open_source(cmd, pos[0], &o, false, &seed, false, &cfg, &src)))
    return rc;
  kvsim_err err = {0};
  int64_t n;
  rc = kvsim_trace_convert(cfg, pos[0], src, out, &n, &err);
  int64_t skipped = kvsim_source_skipped(src);
  kvsim_source_close(src);
  kvsim_workload_cfg_free(cfg);
  if (rc < 0)
    return cli_fail(cmd, "%s", err.msg);
  if (skipped)
    fprintf(stderr, "kvsim %s: skipped %lld bad rows\n", cmd, (long long)skipped);
  fprintf(stderr, "kvsim %s: wrote %lld requests to %s\n", cmd, (long long)n, out);
  return 0;
}

static int cmd_gen(int argc, char **argv) {
  const char *cmd = "trace gen";
  const char *out = NULL;
  int64_t seed = 1;
  double latency = 0;
  bool seed_given = false;
  const cli_arg args[] = {
      {"--out", ARG_PATH, &out, "output kvsim CSV (written atomically)", NULL},
      {"--seed", ARG_INT, &seed, "random seed (default: the scenario's, else 1)", &seed_given},
      {"--latency-s", ARG_NUM, &latency, "closed loop and sessions: each request finishes this long after it arrives (default 0)", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse(cmd, "SPEC.json --out OUT.csv [flags]", args, argc, argv, 3, pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail(cmd, "expected one workload spec (see kvsim trace gen --help)");
  if (!out)
    return cli_fail(cmd, "--out: missing (the kvsim CSV to write)");
  if (!(latency >= 0 && latency <= 9e9))
    return cli_fail(cmd, "--latency-s: bad value %g (expected 0..9e+09)", latency);
  if (!is_spec(pos[0]))
    return cli_fail(cmd, "%s: expected a JSON workload spec (SPEC.json)", pos[0]);
  kvsim_trace_opts_t o = {"auto", 1.0, 0, 0, 512, false, false, false};
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_source_t *src;
  if ((rc = open_source(cmd, pos[0], &o, false, &seed, seed_given, &cfg, &src)))
    return rc;
  kvsim_err err = {0};
  int64_t n = 0;
  rc = kvsim_trace_gen(cfg, pos[0], src, out, kvsim_time_from_s(latency), &n, &err);
  kvsim_source_close(src);
  kvsim_workload_cfg_free(cfg);
  if (rc < 0)
    return cli_fail(cmd, "%s", err.msg);
  fprintf(stderr, "kvsim %s: wrote %lld requests to %s (seed %lld)\n", cmd, (long long)n, out,
          (long long)seed);
  return 0;
}

int cmd_trace(int argc, char **argv) {
  const char *sub = argc > 2 ? argv[2] : NULL;
  if (!sub || !strcmp(sub, "--help") || !strcmp(sub, "-h")) {
    FILE *f = sub ? stdout : stderr;
    fprintf(f, "usage: kvsim trace stats FILE [--json] [--prefix-block-size B] [--lru-blocks "
               "C1,C2,...] [flags]\n"
               "       kvsim trace convert FILE --out OUT.csv [flags]\n"
               "       kvsim trace gen SPEC.json --out OUT.csv [--seed N] [--latency-s X]\n\n"
               "Formats (detected from the header or given with --format): azure, vidur, "
               "mooncake, llmservingsim, kvsim, requests (a run's requests.csv).\n"
               "`kvsim trace SUBCOMMAND --help` describes its flags; workloads/README.md the "
               "formats.\n");
    return sub ? 0 : 2;
  }
  if (!strcmp(sub, "stats"))
    return cmd_stats(argc, argv);
  if (!strcmp(sub, "convert"))
    return cmd_convert(argc, argv);
  if (!strcmp(sub, "gen"))
    return cmd_gen(argc, argv);
  return cli_fail("trace", "unknown subcommand '%s' (expected stats, convert or gen)", sub);
}
