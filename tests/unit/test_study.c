/* The study room: grid and zip expansion, the plan bisection on synthetic
 * predicates, a tiny sweep run in memory, its per-point outputs, shards
 * and their merge, and the progress lines. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmpdir.h"
#include "kvsim/study.h"

/* A scenario inline in the sweep file, so no file is needed. */
#define SCENARIO                                                                                  \
  "{ \"name\": \"tiny\", \"seed\": 2, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" }," \
  "  \"engine\": { \"max_model_len\": 2048 },"                                                    \
  "  \"workload\": { \"synthetic\": { \"requests\": 12, \"arrival\": { \"process\": \"poisson\", \"rate\": 20 }," \
  "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 100 },"                                \
  "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 8 } } } }"

static int parse(const char *grid_and_mode, kvsim_sweep_t *s, kvsim_err *err) {
  char text[4096];
  snprintf(text, sizeof text, "{ \"name\": \"t\", \"scenario\": " SCENARIO ", %s }", grid_and_mode);
  return kvsim_sweep_parse(text, "t.json", NULL, s, err);
}

Test(study, grid_expands_every_combination_last_key_fastest) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("\"grid\": { \"engine.max_num_seqs\": [4, 8], \"engine.kv_cache_dtype\": [\"auto\", \"fp8\", \"int8\"] }",
                     &s, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(s.points, 6, "2 x 3 points (got %lld)", (long long)s.points);
  cr_assert_eq(s.nkeys, 2, "two axes");
  const int seqs[] = {4, 4, 4, 8, 8, 8};
  const char *dt[] = {"auto", "fp8", "int8", "auto", "fp8", "int8"};
  for (int i = 0; i < 6; i++) {
    cr_assert_eq(kvsim_sweep_value(&s, i, 0)->valueint, seqs[i], "point %d: max_num_seqs", i);
    cr_assert_str_eq(kvsim_sweep_value(&s, i, 1)->valuestring, dt[i], "point %d: kv dtype", i);
  }
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_sweep_scenario(&s, 4, &sc, &err), KVSIM_OK, "point 4 builds: %s", err.msg);
  cr_assert_eq(sc.plan.max_num_seqs, 8, "point 4 has its max_num_seqs");
  cr_assert_eq(sc.plan.kv_dtype, KVSIM_KV_FP8, "and its dtype");
  kvsim_scenario_fini(&sc);
  kvsim_sweep_fini(&s);
}

Test(study, zip_pairs_lists_of_equal_length) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("\"mode\": \"zip\", \"grid\": { \"hardware.gpu\": [\"l4\", \"h100-sxm\", \"a100-80g\"],"
                     " \"hardware.tensor_parallel_size\": [1, 2, 4] }", &s, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(s.points, 3, "zip: one point per pair (got %lld)", (long long)s.points);
  const char *gpu[] = {"l4", "h100-sxm", "a100-80g"};
  for (int i = 0; i < 3; i++) {
    cr_assert_str_eq(kvsim_sweep_value(&s, i, 0)->valuestring, gpu[i], "pair %d: gpu", i);
    cr_assert_eq(kvsim_sweep_value(&s, i, 1)->valueint, 1 << i, "pair %d: its tp", i);
  }
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_sweep_scenario(&s, 2, &sc, &err), KVSIM_OK, "pair 2 builds: %s", err.msg);
  cr_assert_eq(sc.plan.tp, 4, "a100 with tp 4");
  kvsim_scenario_fini(&sc);
  kvsim_sweep_fini(&s);
}

Test(study, an_axis_may_take_whole_sections) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("\"grid\": { \"hardware\": [{ \"gpu\": \"l4\" },"
                     " { \"gpu\": \"a100-80g\", \"tensor_parallel_size\": 2 }] }", &s, &err),
               KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(s.points, 2, "two sections, two points");
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_sweep_scenario(&s, 1, &sc, &err), KVSIM_OK, "point 1 builds: %s", err.msg);
  cr_assert_eq(sc.plan.tp, 2, "the section's TP");
  cr_assert_str_eq(sc.gpu.name, "a100-80g", "the section's GPU");
  kvsim_scenario_fini(&sc);
  kvsim_sweep_fini(&s);
}

Test(study, a_bad_sweep_is_one_error_line_naming_what) {
  const char *bad[][2] = {
      {"\"grid\": { \"engine.max_num_seq\": [4, 8] }", "engine.max_num_seq"},
      {"\"grid\": { \"engine.max_num_seqs\": [] }", "non-empty"},
      {"\"mode\": \"zip\", \"grid\": { \"engine.max_num_seqs\": [4, 8], \"engine.block_size\": [16] }",
       "equal length"},
      {"\"mode\": \"cross\", \"grid\": { \"engine.max_num_seqs\": [4] }", "grid or zip"},
      {"\"grid\": { \"engine.max_num_seqs\": 8 }", "grid.engine.max_num_seqs: expected a non-empty array"},
      {"\"grid\": {}", "grid: expected an object"},
      {"\"grid\": [1, 2]", "grid: expected an object"},
      {"\"grids\": { \"engine.max_num_seqs\": [4] }", "grids"},
      {"\"set\": { \"engine.max_num_seq\": 4 }, \"grid\": { \"seed\": [1] }", "engine.max_num_seq"},
      {"\"set\": 4, \"grid\": { \"seed\": [1] }", "set: expected an object"},
      {"\"grid\": { \"seed\": [1,2,3,4,5,6,7,8,9,10], \"engine.max_num_seqs\": [1,2,3,4,5,6,7,8,9,10],"
       " \"engine.block_size\": [1,2,3,4,5,6,7,8,9,10], \"engine.max_model_len\": [1,2,3,4,5,6,7,8,9,10],"
       " \"engine.gpu_memory_utilization\": [1,2,3,4,5,6,7,8,9,10], \"engine.kv_cache_dtype\": [1,2] }",
       "200000 runs is too many"},
      {"\"mode\": \"zip\", \"grid\": { \"engine.max_num_seqs\": [4, 8], \"seed\": [1, 2],"
       " \"engine.block_size\": [16] }", "engine.block_size has 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_sweep_t s;
    kvsim_err err = {0};
    cr_assert_eq(parse(bad[i][0], &s, &err), KVSIM_EINVAL, "case %zu is refused", i);
    cr_assert(strstr(err.msg, bad[i][1]) != NULL, "case %zu: '%s' names '%s'", i, err.msg, bad[i][1]);
    cr_assert(strchr(err.msg, '\n') == NULL, "case %zu: one line", i);
    cr_assert_null(s.root, "case %zu: nothing kept", i);
  }
}

/* Monotone predicates: meets while x <= edge (rate), x >= edge (others). */
typedef struct pred {
  double edge;
  int calls;
  bool up;
} pred_t;

static int below(void *ctx, double x, kvsim_err *err) {
  pred_t *p = ctx;
  p->calls++;
  return p->up ? x <= p->edge : x >= p->edge;
}

Test(study, bisection_finds_the_boundary_within_tolerance) {
  kvsim_err err = {0};
  pred_t p = {7.3, 0, true};
  double best;
  cr_assert_eq(kvsim_search_bisect_up(below, &p, 1, 16, 0.01, false, &best, &err), KVSIM_OK, "runs");
  cr_assert(best <= 7.3 && 7.3 - best <= 0.01 * best, "largest meeting x: %g within 1%% of 7.3", best);
  p.calls = 0;
  cr_assert_eq(kvsim_search_rate(below, &p, 0.02, &best, &err), KVSIM_OK, "rate search runs");
  cr_assert(best <= 7.3 && 7.3 - best <= 0.02 * best, "rate multiplier %g within 2%% of 7.3", best);
  p = (pred_t){0.47, 0, false};
  cr_assert_eq(kvsim_search_util(below, &p, &best, &err), KVSIM_OK, "util search runs");
  cr_assert(best >= 0.47 && best - 0.47 <= 0.005, "lowest util %g within 0.005 above 0.47", best);
  p = (pred_t){5, 0, false};
  cr_assert_eq(kvsim_search_replicas(below, &p, &best, &err), KVSIM_OK, "replica search runs");
  cr_assert_eq(best, 5, "fewest replicas is exactly 5 (got %g)", best);
}

Test(study, bisection_handles_never_and_always_meeting) {
  kvsim_err err = {0};
  double best;
  pred_t never = {-1, 0, true}, always = {1e300, 0, true};
  cr_assert_eq(kvsim_search_rate(below, &never, 0.02, &best, &err), KVSIM_OK, "never: runs");
  cr_assert(isnan(best), "never meeting: no rate (got %g)", best);
  cr_assert_eq(never.calls, 12, "halved 12 times before giving up (%d)", never.calls);
  cr_assert_eq(kvsim_search_rate(below, &always, 0.02, &best, &err), KVSIM_OK, "always: runs");
  cr_assert_eq(best, 2048, "always meeting: the largest multiplier tried (got %g)", best);
  pred_t none = {1e300, 0, false}, all = {-1, 0, false};
  cr_assert_eq(kvsim_search_replicas(below, &none, &best, &err), KVSIM_OK, "replicas never");
  cr_assert(isnan(best), "no replica count meets");
  cr_assert_eq(kvsim_search_util(below, &none, &best, &err), KVSIM_OK, "util never");
  cr_assert(isnan(best), "no utilization meets");
  cr_assert_eq(kvsim_search_util(below, &all, &best, &err), KVSIM_OK, "util always");
  cr_assert_eq(best, 0.3, "the lowest utilization searched");
}

/* Regression: a tolerance below the spacing of doubles never let the
 * bracket close (plan/compare --tolerance 1e-17 spun for ever). */
Test(study, a_tolerance_finer_than_doubles_is_refused_and_bisection_always_ends) {
  kvsim_err err = {0};
  double best;
  pred_t p = {7.3, 0, true};
  cr_assert_eq(kvsim_search_rate(below, &p, 1e-17, &best, &err), KVSIM_EINVAL, "1e-17 is refused");
  cr_assert(strstr(err.msg, "--tolerance") && strstr(err.msg, "1e-06"), "names flag and floor: %s",
            err.msg);
  cr_assert_eq(p.calls, 0, "before any simulation");
  cr_assert_eq(kvsim_search_rate(below, &p, KVSIM_SEARCH_MIN_TOLERANCE, &best, &err), KVSIM_OK,
               "the floor runs");
  cr_assert(best <= 7.3 && 7.3 - best <= 1e-6 * best, "within 1e-6 of 7.3 (got %.12g)", best);
  /* The bisection itself, asked for 0: it stops at adjacent doubles. */
  p.calls = 0;
  cr_assert_eq(kvsim_search_bisect_up(below, &p, 1, 16, 0, false, &best, &err), KVSIM_OK,
               "tol 0 ends");
  cr_assert_lt(p.calls, 80, "one call per bit of the mantissa at most (%d)", p.calls);
  cr_assert_eq(best, 7.3, "the largest double meeting is the edge itself (%.17g)", best);
  pred_t q = {0.47, 0, false};
  cr_assert_eq(kvsim_search_bisect_down(below, &q, 0.3, 0.98, 0, false, &best, &err), KVSIM_OK,
               "down ends");
  cr_assert_lt(q.calls, 80, "bounded calls (%d)", q.calls);
  cr_assert_eq(best, 0.47, "the smallest double meeting (%.17g)", best);
}

static int fatal(void *ctx, double x, kvsim_err *err) {
  return kvsim_err_set(err, KVSIM_EINVAL, "bad scenario");
}

Test(study, a_fatal_predicate_stops_the_search) {
  kvsim_err err = {0};
  double best;
  cr_assert_eq(kvsim_search_rate(fatal, NULL, 0.02, &best, &err), KVSIM_EINVAL, "code passed up");
  cr_assert_eq(kvsim_search_replicas(fatal, NULL, &best, &err), KVSIM_EINVAL, "code passed up");
}

static void run_tiny(int jobs, kvsim_sweep_result_t *res) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("\"grid\": { \"engine.max_num_seqs\": [2, 16], \"engine.gpu_memory_utilization\": [0.9, 0.02] }",
                     &s, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_sweep_opts_t o = {.jobs = jobs, .shard = 0, .nshards = 1};
  cr_assert_eq(kvsim_sweep_run(&s, &o, res, &err), KVSIM_OK, "sweep runs: %s", err.msg);
  kvsim_sweep_fini(&s);
}

Test(study, a_tiny_sweep_runs_in_memory_the_same_with_any_jobs) {
  kvsim_sweep_result_t a, b;
  run_tiny(1, &a);
  run_tiny(2, &b);
  for (int i = 0; i < 4; i++) {
    cr_assert(a.rows[i].ran, "point %d ran", i);
    bool fits = i % 2 == 0; /* utilization 0.02 leaves no KV cache */
    cr_assert_eq(a.rows[i].rc, fits ? KVSIM_OK : KVSIM_ENOFIT, "point %d: rc %d", i, a.rows[i].rc);
    cr_assert_eq(b.rows[i].rc, a.rows[i].rc, "point %d: same outcome with 2 jobs", i);
    if (fits) {
      cr_assert_eq(a.rows[i].fig[0], 12, "point %d: 12 requests", i);
      cr_assert(memcmp(a.rows[i].fig, b.rows[i].fig, sizeof a.rows[i].fig) == 0,
                "point %d: same figures through the fork pool", i);
    } else {
      cr_assert_str_eq(a.rows[i].error, b.rows[i].error, "point %d: same error", i);
    }
  }
  cr_assert_neq(a.rows[0].fig[5], a.rows[2].fig[5], "max_num_seqs 2 vs 16 changes TTFT p50");
  cr_assert_eq(a.no_fit, 2, "two points do not fit");
  cr_assert_eq(a.failed, 0, "no point failed otherwise");
  kvsim_sweep_result_fini(&a);
  kvsim_sweep_result_fini(&b);
}

/* ---- Per-point outputs, shards and their merge -------------------------- */

static char tmp_root[512];

static void make_tmp(void) {
  const char *d = test_tmpdir();
  snprintf(tmp_root, sizeof tmp_root, "%s/kvsim-study-XXXXXX", d);
  cr_assert_not_null(mkdtemp(tmp_root), "temporary folder %s", tmp_root);
}

static void remove_tmp(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
  cr_assert_eq(system(cmd), 0, "removes %s", tmp_root);
}

static bool exists(const char *dir, const char *name) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "reads %s", path);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strdup(buf);
}

#define TINY_GRID "\"grid\": { \"engine.max_num_seqs\": [2, 16, 4], \"engine.gpu_memory_utilization\": [0.9, 0.02] }"

/* Runs the tiny 3 x 2 sweep (shard I of N) into tmp_root/sub. */
static void run_into(const char *grid, const char *sub, int shard, int nshards, bool keep) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse(grid, &s, &err), KVSIM_OK, "parse: %s", err.msg);
  char out[1024];
  snprintf(out, sizeof out, "%s/%s", tmp_root, sub);
  kvsim_sweep_opts_t o = {.out = out, .jobs = 1, .shard = shard, .nshards = nshards, .keep_runs = keep};
  kvsim_sweep_result_t res;
  cr_assert_eq(kvsim_sweep_run(&s, &o, &res, &err), KVSIM_OK, "sweep runs: %s", err.msg);
  kvsim_sweep_result_fini(&res);
  kvsim_sweep_fini(&s);
}

Test(study, a_sweep_keeps_only_summaries_unless_keep_runs) {
  make_tmp();
  run_into(TINY_GRID, "lean", 0, 1, false);
  run_into(TINY_GRID, "all", 0, 1, true);
  char lean[1024], all[1024];
  snprintf(lean, sizeof lean, "%s/lean", tmp_root);
  snprintf(all, sizeof all, "%s/all", tmp_root);
  cr_assert(exists(lean, "run0000/summary.json"), "default: a point's summary.json");
  cr_assert(!exists(lean, "run0000/timeseries.csv") && !exists(lean, "run0000/requests.csv"),
            "default: no per-point CSV");
  cr_assert(exists(all, "run0000/timeseries.csv") && exists(all, "run0000/requests.csv"),
            "--keep-runs: the point's CSV files");
  cr_assert(!exists(lean, "run0001"), "a point that does not fit has no folder");
  char a[1100], b[1100];
  snprintf(a, sizeof a, "%s/run0002/summary.json", lean);
  snprintf(b, sizeof b, "%s/run0002/summary.json", all);
  char *ta = slurp(a), *tb = slurp(b);
  cr_assert_str_eq(ta, tb, "the same summary.json either way");
  free(ta);
  free(tb);
  remove_tmp();
}

static uint64_t hash_of(const char *grid) {
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse(grid, &s, &err), KVSIM_OK, "parse: %s", err.msg);
  uint64_t h = 0;
  cr_assert_eq(kvsim_sweep_hash(&s, &h, &err), KVSIM_OK, "hash: %s", err.msg);
  kvsim_sweep_fini(&s);
  return h;
}

Test(study, the_sweep_hash_names_its_definition) {
  uint64_t h = hash_of(TINY_GRID);
  cr_assert_eq(h, hash_of(TINY_GRID), "the same sweep hashes the same");
  cr_assert_neq(h, hash_of("\"grid\": { \"engine.max_num_seqs\": [2, 16, 5], \"engine.gpu_memory_utilization\": [0.9, 0.02] }"),
                "one value changed: another sweep");
  cr_assert_neq(h, hash_of("\"mode\": \"zip\", \"grid\": { \"engine.max_num_seqs\": [2, 16], \"engine.gpu_memory_utilization\": [0.9, 0.02] }"),
                "zip vs grid");
  cr_assert_neq(h, hash_of("\"set\": { \"seed\": 3 }, " TINY_GRID), "a fixed override changed");
}

static int merge_dirs(const char *const *subs, int n, const char *out_sub, kvsim_err *err) {
  char paths[8][1024], out[1024], table[1200];
  const char *dirs[8];
  for (int i = 0; i < n; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/%s", tmp_root, subs[i]);
    dirs[i] = paths[i];
  }
  snprintf(out, sizeof out, "%s/%s", tmp_root, out_sub);
  return kvsim_sweep_merge(dirs, n, out, table, sizeof table, err);
}

Test(study, shards_merge_into_the_one_machine_table) {
  make_tmp();
  run_into(TINY_GRID, "whole", 0, 1, false);
  for (int i = 0; i < 4; i++) { /* 4 shards of 6 points: 2, 2, 1, 1 rows */
    char sub[16];
    snprintf(sub, sizeof sub, "s%d", i);
    run_into(TINY_GRID, sub, i, 4, false);
  }
  cr_assert(exists(tmp_root, "s2/sweep.shard2.json") && exists(tmp_root, "s2/sweep.shard2.csv"),
            "a shard leaves its table and its record");
  cr_assert(!exists(tmp_root, "whole/sweep.shard0.json"), "an unsharded sweep writes no record");
  kvsim_err err = {0};
  const char *all[] = {"s3", "s1", "s0", "s2"};
  cr_assert_eq(merge_dirs(all, 4, "m", &err), KVSIM_OK, "merge: %s", err.msg);
  char a[1100], b[1100];
  snprintf(a, sizeof a, "%s/whole/sweep.csv", tmp_root);
  snprintf(b, sizeof b, "%s/m/sweep.csv", tmp_root);
  char *ta = slurp(a), *tb = slurp(b);
  cr_assert_str_eq(tb, ta, "merged table is byte-identical to the one-machine table");
  free(ta);
  free(tb);

  const char *missing[] = {"s0", "s1", "s3"};
  cr_assert_eq(merge_dirs(missing, 3, "m2", &err), KVSIM_EINVAL, "a missing shard is refused");
  cr_assert(strstr(err.msg, "shard 2/4") && strstr(err.msg, "missing"), "names it: %s", err.msg);
  const char *twice[] = {"s0", "s1", "s2", "s3", "s1"};
  cr_assert_eq(merge_dirs(twice, 5, "m2", &err), KVSIM_EINVAL, "a duplicate shard is refused");
  cr_assert(strstr(err.msg, "shard 1/4 given twice"), "names it: %s", err.msg);
  run_into("\"grid\": { \"engine.max_num_seqs\": [2, 16, 8], \"engine.gpu_memory_utilization\": [0.9, 0.02] }",
           "other", 1, 4, false);
  const char *mixed[] = {"s0", "other", "s2", "s3"};
  cr_assert_eq(merge_dirs(mixed, 4, "m2", &err), KVSIM_EINVAL, "shards of two sweeps are refused");
  cr_assert(strstr(err.msg, "another sweep"), "says so: %s", err.msg);
  const char *none[] = {"whole"};
  cr_assert_eq(merge_dirs(none, 1, "m2", &err), KVSIM_EINVAL, "a folder without shards is refused");
  cr_assert(strstr(err.msg, "no shard"), "says so: %s", err.msg);
  cr_assert(!exists(tmp_root, "m2"), "a refused merge writes nothing");
  remove_tmp();
}

/* ---- Progress ----------------------------------------------------------- */

static double fake_now;
static double fake_clock(void) { return fake_now; }

static char *progress_of(kvsim_progress_mode mode, int64_t total) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_not_null(f, "memory stream");
  kvsim_progress_t p;
  fake_now = 100;
  kvsim_progress_init(&p, f, mode, "sweep", total, fake_clock);
  fake_now = 102;
  kvsim_progress_step(&p, "run0000", NULL, false);
  fake_now = 104;
  kvsim_progress_step(&p, "run0001", NULL, true);
  kvsim_progress_end(&p);
  fclose(f);
  return buf;
}

Test(study, progress_lines_count_failures_and_estimate_the_rest) {
  char *lines = progress_of(KVSIM_PROGRESS_LINES, 5);
  cr_assert_str_eq(lines,
                   "kvsim sweep: run0000 done (1/5, 0 failed, 2.0 s elapsed, ETA 8.0 s)\n"
                   "kvsim sweep: run0001 failed (2/5, 1 failed, 4.0 s elapsed, ETA 6.0 s)\n",
                   "one line per point, 2 s per point so far: %s", lines);
  free(lines);
  char *line = progress_of(KVSIM_PROGRESS_LINE, 2);
  cr_assert_str_eq(line,
                   "\r\033[Kkvsim sweep: 1/2 done, 0 failed, 2.0 s elapsed, ETA 2.0 s"
                   "\r\033[Kkvsim sweep: 2/2 done, 1 failed, 4.0 s elapsed"
                   "\r\033[K", "one line redrawn, erased at the end");
  free(line);
  char *unknown = progress_of(KVSIM_PROGRESS_LINES, 0);
  cr_assert(strstr(unknown, "(2, 1 failed, 4.0 s elapsed)\n") != NULL, "no total: no ETA: %s", unknown);
  free(unknown);
  char *none = progress_of(KVSIM_PROGRESS_NONE, 5);
  cr_assert_str_eq(none, "", "--quiet: nothing");
  free(none);
}

/* ---- One run with its band ---------------------------------------------- */

/* Llama-3.2-1B on an L4 (generation-default coefficients) at `rate`. */
static void band_scenario(double rate, kvsim_scenario_t *sc) {
  char text[1024], r[64];
  snprintf(r, sizeof r, "workload.synthetic.arrival.rate=%g", rate);
  snprintf(text, sizeof text,
           "{ \"name\": \"band\", \"seed\": 4, \"model\": \"llama-3.2-1b\", \"hardware\": { "
           "\"gpu\": \"l4\" },"
           "  \"engine\": { \"max_model_len\": 4096, \"max_num_seqs\": 32 },"
           "  \"workload\": { \"synthetic\": { \"requests\": 200, \"arrival\": { \"process\": "
           "\"poisson\", \"rate\": 10 },"
           "  \"prompt_tokens\": { \"dist\": \"lognormal\", \"mean\": 500, \"sigma\": 0.5, "
           "\"max\": 3000 },"
           "  \"output_tokens\": { \"dist\": \"uniform\", \"min\": 20, \"max\": 200 } } } }");
  const char *sets[] = {r};
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "band.json", ".", sets, 1, sc, &err), KVSIM_OK, "%s",
               err.msg);
}

static void assert_holds(const kvsim_range_t *r, double v, const char *what) {
  cr_assert(r->lo <= r->hi, "%s: lo %g <= hi %g", what, r->lo, r->hi);
  cr_assert(r->lo <= v && v <= r->hi, "%s: [%g, %g] holds the nominal %g", what, r->lo, r->hi, v);
}

Test(study, the_band_runs_the_edges_and_its_ranges_hold_the_nominal_run) {
  kvsim_scenario_t sc;
  band_scenario(10, &sc);
  kvsim_summary_t *s = calloc(3, sizeof *s);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, false, &s[0], &err), KVSIM_OK, "%s", err.msg);
  cr_assert(!s[0].has_ranges, "no band: no ranges");
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, &s[1], &err), KVSIM_OK, "%s", err.msg);
  cr_assert(s[1].has_ranges, "band: ranges");
  cr_assert_eq(s[1].ttft.p99, s[0].ttft.p99, "the nominal figures are the single run's");
  cr_assert_eq(s[1].requests_per_s, s[0].requests_per_s, "nominal throughput");
  double lo, hi;
  kvsim_study_band_scales(&sc, &lo, &hi);
  cr_assert(lo < 1 && hi > 1, "edges %g, %g around 1", lo, hi);
  cr_assert_eq(s[1].band_scale_lo, lo, "lo scale recorded");
  cr_assert_eq(s[1].band_scale_hi, hi, "hi scale recorded");
  const kvsim_latency_range_t *lr[] = {&s[1].ttft_range, &s[1].tpot_range, &s[1].e2e_range};
  const kvsim_latency_t *l[] = {&s[1].ttft, &s[1].tpot, &s[1].e2e};
  for (int k = 0; k < 3; k++) {
    assert_holds(&lr[k]->mean, l[k]->mean, "mean");
    assert_holds(&lr[k]->p50, l[k]->p50, "p50");
    assert_holds(&lr[k]->p90, l[k]->p90, "p90");
    assert_holds(&lr[k]->p99, l[k]->p99, "p99");
  }
  cr_assert_lt(s[1].tpot_range.mean.lo, s[1].tpot.mean, "faster steps, lower TPOT");
  cr_assert_gt(s[1].tpot_range.mean.hi, s[1].tpot.mean, "slower steps, higher TPOT");
  assert_holds(&s[1].output_tokens_per_s_range, s[1].output_tokens_per_s, "throughput");
  assert_holds(&s[1].kv_usage_peak_range, s[1].kv_usage_peak, "kv peak");
  assert_holds(&s[1].preemptions_range, (double)s[1].preemptions, "preemptions");
  /* Deterministic: the same seed gives the same ranges. */
  cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, &s[2], &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(memcmp(&s[1].ttft_range, &s[2].ttft_range, sizeof s[1].ttft_range), 0,
               "same ranges");
  cr_assert_eq(memcmp(&s[1].e2e_range, &s[2].e2e_range, sizeof s[1].e2e_range), 0, "same ranges");
  kvsim_scenario_fini(&sc);
  free(s);
}

Test(study, the_band_edges_scale_the_scenarios_own_step_time_scale) {
  kvsim_scenario_t sc;
  band_scenario(10, &sc);
  double lo, hi, lo2, hi2, glo, ghi;
  kvsim_gpu_band_scales(&sc.gpu.perf, &glo, &ghi);
  kvsim_study_band_scales(&sc, &lo, &hi);
  cr_assert(lo == glo && hi == ghi, "at scale 1 the GPU's edges");
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&sc, 2, &err), KVSIM_OK, "%s", err.msg);
  kvsim_study_band_scales(&sc, &lo2, &hi2);
  cr_assert_float_eq(lo2, 2 * lo, 1e-12, "lo edge relative to the scenario's own scale");
  cr_assert_float_eq(hi2, 2 * hi, 1e-12, "hi edge relative to the scenario's own scale");
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&sc, 90, &err), KVSIM_OK, "%s", err.msg);
  kvsim_study_band_scales(&sc, &lo2, &hi2);
  cr_assert_eq(hi2, KVSIM_STEP_SCALE_MAX, "held at the knob's maximum");
  /* The prefill edges follow the step scale until the scenario gives
   * its own prefill scale. */
  kvsim_band_edge_t g[2], e[2];
  kvsim_gpu_band_edges(&sc.gpu.perf, &g[0], &g[1]);
  cr_assert_eq(kvsim_scenario_set_step_time_scale(&sc, 2, &err), KVSIM_OK, "%s", err.msg);
  kvsim_study_band_edges(&sc, e);
  cr_assert_float_eq(e[1].prefill, 2 * g[1].prefill, 1e-12, "prefill edge follows the step scale");
  cr_assert_eq(kvsim_scenario_set_prefill_time_scale(&sc, 0.5, &err), KVSIM_OK, "%s", err.msg);
  kvsim_study_band_edges(&sc, e);
  cr_assert_float_eq(e[1].prefill, 0.5 * g[1].prefill, 1e-12, "then its own");
  cr_assert_float_eq(e[1].step, 2 * g[1].step, 1e-12, "the step edge keeps the step scale");
  kvsim_scenario_fini(&sc);
}

Test(study, near_saturation_the_range_is_asymmetric) {
  /* A rate that a step at the band's slow edge (1.15x on the L4's
   * kernels-borrowed band) cannot serve while the nominal one can: the
   * p99's upper end runs away, its lower end barely moves. The rates span
   * 16x in steps of 10 %, finer than the band, so that a change of the
   * step model moves the saturation point within them, not between them. */
  double rates[30];
  for (int i = 0; i < 30; i++)
    rates[i] = 5 * pow(1.1, i);
  bool asymmetric = false;
  kvsim_summary_t *s = malloc(sizeof *s);
  for (size_t i = 0; i < sizeof rates / sizeof *rates && !asymmetric; i++) {
    kvsim_scenario_t sc;
    band_scenario(rates[i], &sc);
    kvsim_err err = {0};
    cr_assert_eq(kvsim_study_run_band(&sc, NULL, true, s, &err), KVSIM_OK, "%s", err.msg);
    const kvsim_range_t *r = &s->ttft_range.p99;
    asymmetric = r->hi - s->ttft.p99 > 3 * (s->ttft.p99 - r->lo);
    kvsim_scenario_fini(&sc);
  }
  cr_assert(asymmetric, "some rate puts the p99 TTFT range well above the nominal value");
  free(s);
}

Test(study, only_the_nominal_run_writes_files_and_they_are_the_single_runs) {
  make_tmp();
  kvsim_scenario_t sc;
  band_scenario(20, &sc);
  kvsim_summary_t *s = malloc(sizeof *s);
  kvsim_err err = {0};
  char a[1024], b[1024], p[1100];
  snprintf(a, sizeof a, "%s/band", tmp_root);
  snprintf(b, sizeof b, "%s/single", tmp_root);
  kvsim_study_run_opts_t oa = {a, false, 0}, ob = {b, false, 0};
  cr_assert_eq(kvsim_study_run_band(&sc, &oa, true, s, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run_band(&sc, &ob, false, s, &err), KVSIM_OK, "%s", err.msg);
  static const char *const files[] = {"requests.csv", "timeseries.csv"};
  for (int i = 0; i < 2; i++) {
    snprintf(p, sizeof p, "%s/%s", a, files[i]);
    char *x = slurp(p);
    snprintf(p, sizeof p, "%s/%s", b, files[i]);
    char *y = slurp(p);
    cr_assert_str_eq(x, y, "%s is the nominal run's", files[i]);
    free(x);
    free(y);
  }
  snprintf(p, sizeof p, "%s/summary.json", a);
  char *j = slurp(p);
  cr_assert(strstr(j, "\"p99_range\"") != NULL, "the band's summary.json has ranges");
  free(j);
  snprintf(p, sizeof p, "%s/summary.json", b);
  j = slurp(p);
  cr_assert(strstr(j, "_range\"") == NULL, "--no-band's summary.json has none");
  free(j);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "test $(ls '%s' | wc -l) -eq 3", a);
  cr_assert_eq(system(cmd), 0, "three files, nothing from the edge runs");
  kvsim_scenario_fini(&sc);
  free(s);
  remove_tmp();
}

/* ---- Points where no request finished ----------------------------------- */

/* Four requests of 1000 output tokens cut off at 0.5 s: none finishes. */
#define CUT                                                                                        \
  "{ \"name\": \"cut\", \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": "       \
  "\"l4\" },"                                                                                      \
  "  \"engine\": { \"max_model_len\": 2048 }, \"output\": { \"max_time_s\": 0.5 },"                \
  "  \"slo\": { \"ttft_p99_s\": 2, \"tpot_p99_s\": 0.1 },"                                         \
  "  \"workload\": { \"synthetic\": { \"requests\": 4, \"arrival\": { \"process\": \"constant\", " \
  "\"rate\": 100 },"                                                                               \
  "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 200 },"                                  \
  "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 1000 } } } }"

/* 400 requests cut off at 2 s: the first ones finish at a low rate, none
 * at a rate so high that the batch is too big for any to finish. */
#define FLOOD                                                                                      \
  "{ \"name\": \"flood\", \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": "     \
  "\"l4\" },"                                                                                      \
  "  \"engine\": { \"max_model_len\": 2048 }, \"output\": { \"max_time_s\": 2 },"                  \
  "  \"workload\": { \"synthetic\": { \"requests\": 400, \"arrival\": { \"process\": "             \
  "\"constant\", \"rate\": 1 },"                                                                   \
  "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 1000 },"                                 \
  "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 50 } } } }"

/* A rate search for p99 TTFT <= limit_s on the scenario text, no range. */
static kvsim_search_t *search_rate(const char *text, double limit_s, kvsim_scenario_t *sc) {
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, sc, &err), KVSIM_OK, "%s",
               err.msg);
  kvsim_search_t *se = calloc(1, sizeof *se);
  cr_assert_not_null(se, "search allocated");
  se->base = sc;
  se->kind = KVSIM_SEARCH_RATE;
  se->targets[0] = (kvsim_slo_target_t){KVSIM_METRIC_TTFT, KVSIM_STAT_P99, limit_s};
  se->ntargets = 1;
  se->tolerance = 0.02;
  se->no_range = true;
  cr_assert_eq(kvsim_search_run(se, &err), KVSIM_OK, "search runs: %s", err.msg);
  return se;
}

/* Regression: the p99 of nothing was 0 s, so a point where no request
 * finished met every target: a run that never finishes answered
 * ">= 2048 x", and a rate too high for anything to finish counted as met. */
Test(study, a_point_where_no_request_finished_misses_the_plan_search) {
  kvsim_scenario_t sc;
  kvsim_search_t *se = search_rate(CUT, 2, &sc);
  cr_assert(isnan(se->best), "no rate meets when nothing ever finishes (%g)", se->best);
  cr_assert_gt(se->npoints, 0, "points were tried");
  for (int i = 0; i < se->npoints; i++) {
    const kvsim_search_point_t *p = &se->points[i];
    cr_assert(p->ran && !p->meets, "point %d (%g req/s) misses", i, p->value);
    cr_assert(strstr(p->note, "no request finished"), "point %d says why: '%s'", i, p->note);
    cr_assert(isnan(p->actual[0]), "point %d has no p99 of nothing (%g)", i, p->actual[0]);
  }
  free(se);
  kvsim_scenario_fini(&sc);

  se = search_rate(FLOOD, 10, &sc);
  cr_assert(!isnan(se->best) && !se->lower_bound,
            "a finite answer, not a lower bound at the largest rate tried (%g, lower bound %d)",
            se->best, se->lower_bound);
  bool none = false;
  for (int i = 0; i < se->npoints; i++) {
    const kvsim_search_point_t *p = &se->points[i];
    if (strstr(p->note, "no request finished")) {
      none = true;
      cr_assert(!p->meets && p->value > se->best, "%g req/s: nothing finished, above the answer %g",
                p->value, se->best);
    }
  }
  cr_assert(none, "some rate was too high for any request to finish");
  free(se);
  kvsim_scenario_fini(&sc);
}

/* Regression: with one output token per request no request has a TPOT,
 * and the p99 of none was 0 s, which met a TPOT target by a figure that
 * does not exist. The point still meets (no request missed the target, as
 * summary.json's slo says), with no TPOT and the reason. */
Test(study, a_tpot_target_with_no_second_token_meets_without_a_figure) {
  static const char *one =
      "{ \"name\": \"one\", \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": "
      "\"l4\" }, \"engine\": { \"max_model_len\": 2048 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 4, \"arrival\": { \"process\": "
      "\"constant\", \"rate\": 1 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 200 },"
      "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 1 } } } }";
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_scenario_parse(one, "s.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  kvsim_search_t *se = calloc(1, sizeof *se);
  cr_assert_not_null(se, "search allocated");
  se->base = &sc;
  se->kind = KVSIM_SEARCH_RATE;
  se->targets[0] = (kvsim_slo_target_t){KVSIM_METRIC_TTFT, KVSIM_STAT_P99, 2};
  se->targets[1] = (kvsim_slo_target_t){KVSIM_METRIC_TPOT, KVSIM_STAT_P99, 0.1};
  se->ntargets = 2;
  se->tolerance = 0.02;
  se->no_range = true;
  cr_assert_eq(kvsim_search_run(se, &err), KVSIM_OK, "search runs: %s", err.msg);
  cr_assert_gt(se->npoints, 0, "points were tried");
  for (int i = 0; i < se->npoints; i++) {
    const kvsim_search_point_t *p = &se->points[i];
    /* Only its TTFT decides: at the workload's duration a high rate's
     * queue misses 2 s (4 requests all at once once met at any rate). */
    cr_assert(p->ran && p->meets == (p->actual[0] <= 2), "point %d (%g req/s) meets by its TTFT (%g s)",
              i, p->value, p->actual[0]);
    cr_assert(isfinite(p->actual[0]) && p->actual[0] > 0, "point %d: a p99 TTFT (%g)", i,
              p->actual[0]);
    cr_assert(isnan(p->actual[1]), "point %d: no p99 TPOT, not 0 s (%g)", i, p->actual[1]);
    cr_assert(strstr(p->note, "no request had a second token"), "point %d says why: '%s'", i,
              p->note);
  }
  /* A target on TPOT alone: met by no request missing it, as above. */
  se->targets[0] = se->targets[1];
  se->ntargets = 1;
  cr_assert_eq(kvsim_search_run(se, &err), KVSIM_OK, "search runs: %s", err.msg);
  cr_assert(se->points[0].meets && isnan(se->points[0].actual[0]), "TPOT only: meets, no figure");
  free(se);
  kvsim_scenario_fini(&sc);
}

/* Regression: sweep.csv and its REPORT.md showed 0 s latencies for a
 * point where no request finished, and counted it as meeting the SLO. */
Test(study, a_sweep_point_where_no_request_finished_has_no_latency_figures) {
  make_tmp();
  kvsim_sweep_t s;
  kvsim_err err = {0};
  char text[4096];
  snprintf(text, sizeof text,
           "{ \"name\": \"t\", \"scenario\": " CUT
           ", \"grid\": { \"output.max_time_s\": [0.5, 600] } }");
  cr_assert_eq(kvsim_sweep_parse(text, "t.json", NULL, &s, &err), KVSIM_OK, "parse: %s", err.msg);
  char out[1024];
  snprintf(out, sizeof out, "%s/cut", tmp_root);
  kvsim_sweep_opts_t o = {.out = out, .jobs = 1, .shard = 0, .nshards = 1};
  kvsim_sweep_result_t res;
  cr_assert_eq(kvsim_sweep_run(&s, &o, &res, &err), KVSIM_OK, "sweep runs: %s", err.msg);
  cr_assert_eq(res.rows[0].rc, KVSIM_OK, "the cut point ran: %s", res.rows[0].error);
  cr_assert_eq(res.rows[0].fig[1], 0, "nothing finished at 0.5 s (%g)", res.rows[0].fig[1]);
  cr_assert_eq(res.rows[1].fig[1], 4, "all 4 finished at 600 s (%g)", res.rows[1].fig[1]);
  for (int m = 5; m <= 9; m++) {
    cr_assert(isnan(res.rows[0].fig[m]), "%s: no figure where nothing finished (%g)",
              kvsim_sweep_columns[m], res.rows[0].fig[m]);
    cr_assert(isfinite(res.rows[1].fig[m]) && res.rows[1].fig[m] > 0,
              "%s: a figure where all finished (%g)", kvsim_sweep_columns[m], res.rows[1].fig[m]);
  }
  cr_assert_eq(res.rows[0].fig[10], 0, "requests_per_s is known: 0 (%g)", res.rows[0].fig[10]);
  char path[1100];
  snprintf(path, sizeof path, "%s/sweep.csv", out);
  char *csv = slurp(path);
  cr_assert(strstr(csv, "\nrun0000,0.5,true,4,0,0,") && strstr(csv, ",,,,,0,0,"),
            "sweep.csv: empty latency cells, the columns kept:\n%s", csv);
  free(csv);
  cr_assert_eq(kvsim_report_md_sweep_write(&s, &res, out, "t.json", &err), KVSIM_OK,
               "REPORT.md: %s", err.msg);
  snprintf(path, sizeof path, "%s/REPORT.md", out);
  char *md = slurp(path);
  cr_assert(strstr(md, "1 of 2 points meet the SLO; the highest throughput among them is run0001"),
            "REPORT.md: the point where nothing finished does not meet:\n%s", md);
  cr_assert(strstr(md, "| run0000 | 0.5 | - | - | 0 |"), "REPORT.md: '-' for its p99s:\n%s", md);
  cr_assert(strstr(md, "-: no request finished (1 point): no latency figures."),
            "REPORT.md: a note:\n%s", md);
  free(md);
  kvsim_sweep_result_fini(&res);
  kvsim_sweep_fini(&s);
  remove_tmp();
}

/* Regression: the sweep's question showed the base scenario's SLO target
 * where the grid set that target per point: "p99 E2E <= 5 s", which no
 * point was judged by. */
Test(study, a_sweep_question_says_a_target_the_grid_sets_per_point) {
  make_tmp();
  kvsim_sweep_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("\"set\": { \"slo.ttft_p99_s\": 2, \"slo.e2e_p99_s\": 5 }, "
                     "\"grid\": { \"slo.e2e_p99_s\": [3, 0.5] }",
                     &s, &err),
               KVSIM_OK, "parse: %s", err.msg);
  char out[1024];
  snprintf(out, sizeof out, "%s/slo", tmp_root);
  kvsim_sweep_opts_t o = {.out = out, .jobs = 1, .shard = 0, .nshards = 1};
  kvsim_sweep_result_t res;
  cr_assert_eq(kvsim_sweep_run(&s, &o, &res, &err), KVSIM_OK, "sweep runs: %s", err.msg);
  cr_assert_eq(kvsim_report_md_sweep_write(&s, &res, out, "t.json", &err), KVSIM_OK,
               "REPORT.md: %s", err.msg);
  char path[1100];
  snprintf(path, sizeof path, "%s/REPORT.md", out);
  char *md = slurp(path);
  cr_assert(strstr(md, "within the SLO p99 TTFT <= 2 s, p99 E2E as each point sets it (0.5 to 3 "
                       "s)?\n"),
            "the points' E2E targets, not the base's:\n%s", md);
  free(md);
  kvsim_sweep_result_fini(&res);
  kvsim_sweep_fini(&s);
  remove_tmp();
}

/* Regression: compare's goodput search counted rates where nothing
 * finished as met (a lower bound at the largest rate tried), and its
 * sweep showed their p99s as 0 s. */
Test(study, a_compare_counts_no_request_finished_as_missing) {
  kvsim_compare_t c;
  kvsim_err err = {0};
  const char *text = "{ \"name\": \"t\", \"scenario\": " FLOOD ", \"slo\": { \"ttft_p99_s\": 10 },"
                     " \"target_rate\": 10, \"candidates\": [ { \"label\": \"L4\" } ] }";
  cr_assert_eq(kvsim_compare_parse(text, "t.json", NULL, &c, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_compare_row_t *r = malloc(sizeof *r);
  cr_assert_not_null(r, "row allocated");
  cr_assert_eq(kvsim_compare_candidate(&c, 0, 0.02, r, &err), KVSIM_OK, "candidate 0");
  cr_assert_eq(r->rc, KVSIM_OK, "runs: %s", r->error);
  cr_assert(isfinite(r->goodput) && !r->goodput_lower_bound[0],
            "a finite goodput, not a lower bound (%g, lower bound %d)", r->goodput,
            r->goodput_lower_bound[0]);
  int none = 0;
  for (int k = 0; k < r->nsweep; k++) {
    cr_assert(!(r->sweep_ttft_p99[k] == 0), "%g req/s: no p99 of 0 s", r->sweep_rate[k]);
    none += isnan(r->sweep_ttft_p99[k]) && isnan(r->sweep_tpot_p99[k]);
  }
  cr_assert_gt(none, 0, "the sweep above the goodput has rates where nothing finished");
  char *csv = kvsim_compare_sweep_csv(&c, r, 1);
  cr_assert(csv && strstr(csv, ",,,"), "compare_sweep.csv: empty p99 cells:\n%s", csv ? csv : "");
  free(csv);
  free(r);
  kvsim_compare_fini(&c);
}

/* Regression: strtok_r passed over empty items, so "ttft_p99=1s,," (a
 * target lost in editing) was taken as one target; an item with no value
 * or no name must name that item too. */
Test(study, an_empty_or_half_slo_item_is_refused_by_name) {
  const char *bad[][2] = {
      {"ttft_p99=1s,,", "--slo: item 2 of 'ttft_p99=1s,,' is empty"},
      {"ttft_p99=1s,", "--slo: item 2 of 'ttft_p99=1s,' is empty"},
      {",ttft_p99=1s", "--slo: item 1 of ',ttft_p99=1s' is empty"},
      {"ttft_p99=1s,,tpot_p99=50ms", "--slo: item 2 of 'ttft_p99=1s,,tpot_p99=50ms' is empty"},
      {",", "--slo: item 1 of ',' is empty"},
      {"ttft_p99=", "--slo: 'ttft_p99=' has no value after '='"},
      {"ttft_p99=1s,tpot_p99=", "--slo: 'tpot_p99=' has no value after '='"},
      {"=1s", "--slo: '=1s' has no METRIC_STAT before '='"},
      {"ttft_p99=1s,=", "--slo: '=' has no METRIC_STAT before '='"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim_search_t se;
    memset(&se, 0, sizeof se);
    kvsim_err err = {0};
    cr_assert_eq(kvsim_search_parse_slo(bad[i][0], &se, &err), KVSIM_EINVAL, "'%s' refused",
                 bad[i][0]);
    cr_assert(strstr(err.msg, bad[i][1]) == err.msg, "'%s': '%s' lacks '%s'", bad[i][0], err.msg,
              bad[i][1]);
  }
  /* Past the buffer, the last item was cut short and read as another value. */
  char long_slo[600];
  memset(long_slo, '0', sizeof long_slo);
  memcpy(long_slo, "ttft_p99=", 9);
  strcpy(long_slo + sizeof long_slo - 3, "1s");
  kvsim_search_t se;
  memset(&se, 0, sizeof se);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_search_parse_slo(long_slo, &se, &err), KVSIM_EINVAL, "a 599-character --slo");
  cr_assert_str_eq(err.msg, "--slo: longer than 511 characters", "says so");
  cr_assert_eq(kvsim_search_parse_slo("ttft_p99=1s,tpot_p99=50ms", &se, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(se.ntargets, 2, "two targets (%d)", se.ntargets);
}

/* Regression: "tpot_p99=50" (meant as 50 ms) was read as 50 s, a target
 * every run meets; a value without a unit is refused, naming the unit
 * that is missing, and s, ms and us are read as before. */
Test(study, an_slo_value_without_a_unit_is_refused) {
  kvsim_search_t se;
  memset(&se, 0, sizeof se);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_search_parse_slo("tpot_p99=50", &se, &err), KVSIM_EINVAL,
               "a bare 50 is refused");
  cr_assert_str_eq(err.msg, "--slo: tpot_p99=50 has no unit (write 50s, 50ms or 50us)",
                   "names the missing unit: %s", err.msg);
  cr_assert_eq(kvsim_search_parse_slo("ttft_p99=2s,tpot_p99=0.5", &se, &err), KVSIM_EINVAL,
               "the second item too");
  cr_assert(strstr(err.msg, "tpot_p99=0.5 has no unit"), "names that item: %s", err.msg);
  cr_assert_eq(kvsim_search_parse_slo("ttft_p99=2s,tpot_p99=50ms,e2e_p50=300000us", &se, &err),
               KVSIM_OK, "units are read: %s", err.msg);
  cr_assert_float_eq(se.targets[0].limit_s, 2.0, 1e-12, "2s");
  cr_assert_float_eq(se.targets[1].limit_s, 0.05, 1e-12, "50ms");
  cr_assert_float_eq(se.targets[2].limit_s, 0.3, 1e-12, "300000us");
}

/* Regression: --slo ttft_p99=1s,ttft_p99=2s was taken, both limits held
 * and the stricter silently counted; a target given twice is an error
 * naming it. Another statistic of the same metric is another target. */
Test(study, an_slo_target_given_twice_is_refused) {
  kvsim_search_t se;
  memset(&se, 0, sizeof se);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_search_parse_slo("ttft_p99=1s,ttft_p99=2s", &se, &err), KVSIM_EINVAL,
               "ttft_p99 twice is refused");
  cr_assert_str_eq(err.msg, "--slo: ttft_p99 is given twice", "names the target");
  cr_assert_eq(kvsim_search_parse_slo("tpot_p99=100ms,ttft_p50=1s,tpot_p99=50ms", &se, &err),
               KVSIM_EINVAL, "tpot_p99 twice, apart, is refused");
  cr_assert_str_eq(err.msg, "--slo: tpot_p99 is given twice", "names the later one");
  cr_assert_eq(kvsim_search_parse_slo("ttft_p99=1s,ttft_p50=500ms", &se, &err), KVSIM_OK,
               "two statistics of one metric are two targets: %s", err.msg);
  cr_assert_eq(se.ntargets, 2, "both kept (%d)", se.ntargets);
}

/* Regression (issue 28, sustained rates): a search point at a higher rate
 * ran the scenario's request count, so 150 requests at 1,000 req/s all
 * arrived within 0.15 s and a study answered "5 x L4 meet 1,000 req/s"
 * with its warm-up. A point keeps the workload's duration instead. */
Test(study, a_higher_rate_keeps_the_workload_duration_not_its_count) {
  static const char *text =
      "{ \"name\": \"d\", \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
      "  \"workload\": { \"synthetic\": { \"requests\": 150, \"arrival\": { \"process\": "
      "\"poisson\", \"rate\": 10 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 100 },"
      "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 8 } } } }";
  kvsim_err err = {0};
  kvsim_scenario_t sc, up, down;
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_copy(&sc, &up, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_set_rate(&up, "synthetic.arrival.rate", 1000, &err), KVSIM_OK, "%s", err.msg);
  kvsim_summary_t *s = malloc(sizeof *s);
  cr_assert_not_null(s, "summary allocated");
  cr_assert_eq(kvsim_study_run(&up, NULL, s, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(s->requests_total, 15000, "15 s at 1,000 req/s: 15,000 requests (got %lld)",
               (long long)s->requests_total);
  /* A lower rate keeps its request count (and its p99's samples). */
  cr_assert_eq(kvsim_scenario_copy(&sc, &down, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_set_rate(&down, "rate", 2, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run(&down, NULL, s, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(s->requests_total, 150, "a lower rate keeps 150 requests (got %lld)",
               (long long)s->requests_total);
  double r = 0;
  cr_assert_eq(kvsim_workload_mean_rate(down.workload, &r, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_float_eq(r, 2, 1e-12, "at the rate asked");
  free(s);
  kvsim_scenario_fini(&down);
  kvsim_scenario_fini(&up);
  kvsim_scenario_fini(&sc);
}

/* A band edge's rate search starts from a guess of its answer: within
 * tolerance of the boundary, in fewer points than the doubling from 1
 * when the guess is near, and as the doubling at the ends of its range. */
Test(study, a_rate_search_from_a_guess_finds_the_boundary_in_fewer_points) {
  kvsim_err err = {0};
  double best, from1;
  const double edges[] = {0.37, 1.956, 7.3, 40};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
    pred_t a = {edges[i], 0, true}, b = a;
    cr_assert_eq(kvsim_search_rate(below, &a, 0.02, &from1, &err), KVSIM_OK);
    for (int g = 0; g < 3; g++) {
      const double guess = edges[i] * (g == 0 ? 0.96 : g == 1 ? 1.05 : 0.5);
      b.calls = 0;
      cr_assert_eq(kvsim_search_rate_near(below, &b, guess, 0.02, &best, &err), KVSIM_OK);
      cr_assert(best <= edges[i] && edges[i] - best <= 0.02 * best, "edge %g guess %g: %g",
                edges[i], guess, best);
      if (g < 2)
        cr_assert_lt(b.calls, a.calls, "edge %g guess %g: %d points against %d from 1", edges[i],
                     guess, b.calls, a.calls);
    }
  }
  pred_t never = {-1, 0, true}, always = {1e300, 0, true};
  cr_assert_eq(kvsim_search_rate_near(below, &never, 3, 0.02, &best, &err), KVSIM_OK);
  cr_assert(isnan(best), "never meeting: no rate (got %g)", best);
  cr_assert_eq(kvsim_search_rate_near(below, &always, 3, 0.02, &best, &err), KVSIM_OK);
  cr_assert_eq(best, 2048, "always meeting: the largest multiplier tried (got %g)", best);
  cr_assert_eq(kvsim_search_rate_near(below, &always, 3, 1e-17, &best, &err), KVSIM_EINVAL);
  /* No guess: the doubling from 1, point for point. */
  pred_t c = {7.3, 0, true}, d = c;
  cr_assert_eq(kvsim_search_rate(below, &c, 0.02, &from1, &err), KVSIM_OK);
  cr_assert_eq(kvsim_search_rate_near(below, &d, 0, 0.02, &best, &err), KVSIM_OK);
  cr_assert_eq(best, from1);
  cr_assert_eq(c.calls, d.calls);
}
