/* Runs that cannot make progress (issue 14): requests the pool can never
 * hold are rejected at admission, counting the int8/int4 residual window;
 * a replica stalled with requests waiting and nothing running stops with
 * an error naming the request; an output length near 2^63 does not wrap
 * past max_model_len; contiguous reservations hold the whole request. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmpdir.h"
#include "engine/replica.h"
#include "kvsim/engine.h"
#include "kvsim/perf.h"
#include "kvsim/scenario.h"

typedef struct tally {
  int finished, rejected, other;
  int short_reservations; /* finished contiguous requests that outgrew their reservation */
} tally_t;

static int on_request(void *ctx, const kvsim_request_t *r) {
  tally_t *t = ctx;
  if (r->status == KVSIM_REQ_FINISHED) {
    t->finished++;
    if (r->reserved_tokens > 0 && r->num_computed > r->reserved_tokens)
      t->short_reservations++;
  } else if (r->status == KVSIM_REQ_REJECTED) {
    t->rejected++;
  } else {
    t->other++;
  }
  return 0;
}

static int run_text(const char *text, const char *base, tally_t *t, kvsim_run_stats_t *st,
                    kvsim_err *err) {
  kvsim_scenario_t sc;
  int rc = kvsim_scenario_parse(text, "inline", base, NULL, 0, &sc, err);
  cr_assert_eq(rc, KVSIM_OK, "scenario: %s", err->msg);
  memset(t, 0, sizeof *t);
  kvsim_sink_t sink = {t, NULL, on_request, NULL, NULL};
  kvsim_run_opts_t opts = {.check_invariants = true};
  rc = kvsim_run(&sc, &opts, &sink, st, err);
  kvsim_scenario_fini(&sc);
  return rc;
}

/* Llama-3.2-1B on an L4 with an int4 cache: 16-token blocks of 147,456
 * bytes; a 32-token residual window is 1 MiB = 8 blocks per request. */
static void int4_scenario(char *buf, size_t cap, const char *profile, int blocks, int block_size,
                          int mml, int residual, const char *lengths, int requests) {
  snprintf(buf, cap,
           "{ \"seed\": 3, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
           "  \"engine\": { \"profile\": \"%s\", \"kv_cache_dtype\": \"int4\", \"kv_residual_tokens\": %d,"
           "    \"num_gpu_blocks_override\": %d, \"block_size\": %d, \"max_model_len\": %d },"
           "  \"workload\": { \"synthetic\": { \"requests\": %d,"
           "     \"arrival\": { \"process\": \"poisson\", \"rate\": 2 }, %s } },"
           "  \"output\": { \"max_time_s\": 60 } }",
           profile, residual, blocks, block_size, mml, requests, lengths);
}

#define FORTY "\"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 30 }, " \
              "\"output_tokens\": { \"dist\": \"fixed\", \"value\": 10 }"

Test(sched_progress, int4_residual_window_counts_at_admission) {
  const char *profiles[] = {"vllm-v1", "contiguous", "vllm-v0", "static"};
  for (int b = 9; b <= 17; b += 4)
    for (size_t i = 0; i < sizeof profiles / sizeof *profiles; i++) {
      char text[2048];
      int4_scenario(text, sizeof text, profiles[i], b, 16, 128, 32, FORTY, 5);
      tally_t t;
      kvsim_run_stats_t st;
      kvsim_err err = {0};
      int rc = run_text(text, ".", &t, &st, &err);
      if (rc == KVSIM_ENOFIT)
        continue; /* static: a pool that holds no slot is an error at start-up */
      cr_assert_eq(rc, KVSIM_OK, "%s, %d blocks: %s", profiles[i], b, err.msg);
      /* 39 stored tokens need 3 blocks beside the 8 residual ones. */
      bool fits = 3 + 8 <= st.pool_blocks;
      cr_assert_eq(t.other, 0, "%s, %d blocks: no request left waiting (%d)", profiles[i], b, t.other);
      cr_assert_eq(st.requests_in_flight, 0, "%s, %d blocks: nothing in flight", profiles[i], b);
      cr_assert_eq(t.finished, fits ? 5 : 0, "%s, %d blocks: %d finished", profiles[i], b, t.finished);
      cr_assert_eq(st.rejected_no_fit, fits ? 0 : 5, "%s, %d blocks: rejected as not fitting",
                   profiles[i], b);
    }
}

Test(sched_progress, contiguous_int4_block_size_1_reserves_the_whole_request) {
  for (int blocks = 600; blocks <= 800; blocks += 100) {
    char text[2048];
    /* A 128-token residual window: about 450 one-token blocks. */
    int4_scenario(text, sizeof text, "contiguous", blocks, 1, 512, 128,
                  "\"prompt_tokens\": { \"dist\": \"uniform\", \"min\": 10, \"max\": 300 }, "
                  "\"output_tokens\": { \"dist\": \"uniform\", \"min\": 1, \"max\": 200 }",
                  20);
    tally_t t;
    kvsim_run_stats_t st;
    kvsim_err err = {0};
    cr_assert_eq(run_text(text, ".", &t, &st, &err), KVSIM_OK, "%d blocks: %s", blocks, err.msg);
    cr_assert_eq(t.finished + t.rejected, 20, "%d blocks: every request ends (%d + %d)", blocks,
                 t.finished, t.rejected);
    cr_assert_gt(t.finished, 0, "%d blocks: some requests run", blocks);
    cr_assert_eq(t.short_reservations, 0, "%d blocks: no request computes past its reservation", blocks);
  }
}

Test(sched_progress, output_length_near_int64_max_is_rejected_not_wrapped) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/kvsim-progress-XXXXXX", test_tmpdir());
  cr_assert_not_null(mkdtemp(dir), "temporary folder");
  char path[600];
  snprintf(path, sizeof path, "%s/big.csv", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "trace file");
  fputs("arrival_s,prompt_tokens,output_tokens\n0.000,100,9223372036854775807\n0.5,100,5\n", f);
  fclose(f);
  const char *text = "{ \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
                     "  \"engine\": { \"max_model_len\": 4096 },"
                     "  \"workload\": { \"trace\": \"big.csv\" }, \"output\": { \"max_time_s\": 30 } }";
  tally_t t;
  kvsim_run_stats_t st;
  kvsim_err err = {0};
  int rc = run_text(text, dir, &t, &st, &err);
  remove(path);
  rmdir(dir);
  /* The trace reader refuses the length where it reads it, naming the
   * column and the range ... */
  cr_assert_eq(rc, KVSIM_EPARSE, "the row is refused, not run: %s", err.msg);
  cr_assert(strstr(err.msg, "output_tokens") && strstr(err.msg, "2147483647"),
            "the message names the column and the range: %s", err.msg);
  /* ... and a request that reaches the engine anyway cannot wrap its
   * total past the max_model_len check: the sum saturates. */
  kvsim_request_t r;
  memset(&r, 0, sizeof r);
  r.spec.prompt_tokens = r.num_prompt = 100;
  r.spec.output_tokens = INT64_MAX;
  cr_assert_eq(kvsim_request_total_tokens(&r), INT64_MAX, "prompt + INT64_MAX saturates");
}

/* The guard itself, on a replica given a request admission would refuse:
 * attempts without progress end in an error that says why. */
Test(sched_progress, stalled_replica_stops_with_the_request_and_why) {
  char text[2048];
  int4_scenario(text, sizeof text, "vllm-v1", 10, 16, 128, 32, FORTY, 1);
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "inline", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  kvsim_resolved_t res;
  cr_assert_eq(kvsim_scenario_resolve(&sc, &res, &err), KVSIM_OK, "%s", err.msg);
  const kvsim_plan_t pl = res.plan;
  kvsim_perf_t perf;
  cr_assert_eq(kvsim_perf_init(&perf, &sc.model, &sc.gpu, &pl, &err), KVSIM_OK, "%s", err.msg);
  /* As kvsim_scenario_load names it: the error names the file. */
  snprintf(sc.path, sizeof sc.path, "%s", "stall.json");
  kvsim__replica_t rep;
  cr_assert_eq(kvsim__replica_init(&rep, 0, &sc, &res, &err), KVSIM_OK, "%s", err.msg);
  cr_assert(!kvsim__replica_fits(&rep, &pl, 39), "admission refuses it: 3 + 8 residual > 9 blocks");
  kvsim_request_t r;
  memset(&r, 0, sizeof r);
  r.spec.id = 7;
  r.spec.prompt_tokens = r.num_prompt = r.num_tokens = 30;
  r.spec.output_tokens = 10;
  r.arrival = 0;
  r.first_scheduled = r.first_token = r.last_token = r.finish = KVSIM_TIME_NEVER;
  r.status = KVSIM_REQ_WAITING;
  cr_assert_eq(kvsim__replica_add(&rep, &r, 0, &err), KVSIM_OK, "%s", err.msg);
  int rc = KVSIM_OK;
  int attempts = 0;
  while (rc == KVSIM_OK && attempts < 10 * KVSIM__STALL_LIMIT) {
    kvsim_time_ns dt;
    rc = kvsim__replica_start_step(&rep, &perf, NULL, 0, attempts, &dt, &err);
    if (rc == KVSIM_OK)
      cr_assert_eq(dt, -1, "nothing can run");
    attempts++;
  }
  cr_assert_eq(rc, KVSIM_ETHRESH, "the guard stops the stall (after %d attempts)", attempts);
  cr_assert_eq(attempts, KVSIM__STALL_LIMIT, "after exactly the limit");
  cr_assert(strstr(err.msg, "request 7: a 40-token request needs 3 blocks, the pool has 1 after the "
                            "residual window") != NULL,
            "the message names the request and why: %s", err.msg);
  cr_assert(strncmp(err.msg, "stall.json: replica 0: request 7:", 33) == 0,
            "the message names the scenario file first: %s", err.msg);
  kvsim_sched_t *s = rep.sched;
  cr_assert_eq(s->waiting.n, 1, "the request is still accounted for");
  kvsim_waitq_pop(&s->waiting);
  kvsim__replica_fini(&rep);
  for (int g = 0; g < KVSIM_MAX_KV_GROUPS; g++)
    free(r.blocks[g].ids);
  free(r.hashes);
  free(r.segs);
  kvsim_scenario_fini(&sc);
}

/* vLLM V1's priority policy may preempt the request it is scheduling
 * itself (the worst of the running ones) and stop there, before the
 * running requests behind it; with nothing else scheduled the step is
 * empty, and the engine's busy loop schedules again at once. Here the
 * low-priority request X, admitted first, outgrows the 11 usable blocks
 * (block size 1) at its third step while the high-priority Y holds the
 * rest: X is preempted and Y must still run. It once left the replica
 * idle with Y running and no step to come, and the run ticked its time
 * series forever. */
Test(sched_progress, a_priority_self_preemption_still_runs_the_requests_behind_it, .timeout = 30) {
  char trace[512], text[1024];
  snprintf(trace, sizeof trace, "%s/kvsim-test-prio-%d.csv", test_tmpdir(), (int)getpid());
  FILE *f = fopen(trace, "w");
  cr_assert(f != NULL, "writing %s", trace);
  fputs("arrival_s,prompt_tokens,output_tokens,priority\n0,5,5,1\n0.001,5,5,0\n", f);
  fclose(f);
  snprintf(text, sizeof text,
           "{ \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
           "  \"engine\": { \"profile\": \"vllm-v1\", \"block_size\": 1, \"num_gpu_blocks_override\": 12,"
           "    \"max_num_seqs\": 4, \"max_model_len\": 64, \"max_num_batched_tokens\": 64,"
           "    \"enable_prefix_caching\": false, \"scheduling_policy\": \"priority\" },"
           "  \"workload\": { \"trace\": \"%s\", \"format\": \"kvsim\" } }",
           trace);
  tally_t t;
  kvsim_run_stats_t st;
  kvsim_err err = {0};
  int rc = run_text(text, ".", &t, &st, &err);
  unlink(trace);
  cr_assert_eq(rc, KVSIM_OK, "the run ends: %s", err.msg);
  cr_assert_eq(t.finished, 2, "both requests finish (finished %d, rejected %d, other %d)", t.finished,
               t.rejected, t.other);
  cr_assert_geq(st.preemptions, 1, "X was preempted (%lld)", (long long)st.preemptions);
}

/* A pool the static profile cannot cut one slot from (an int8 cache whose
 * residual window takes more blocks than the pool has) is one line naming
 * the scenario and why, not the profile alone. */
Test(sched_progress, a_static_pool_without_a_slot_names_the_scenario_and_the_residual_window) {
  const char *text =
      "{ \"name\": \"tiny-static\", \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
      "  \"engine\": { \"profile\": \"static\", \"kv_cache_dtype\": \"int8\", \"block_size\": 1,"
      "    \"num_gpu_blocks_override\": 195, \"max_model_len\": 128, \"max_num_seqs\": 4 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 3, \"arrival\": { \"process\": \"poisson\", \"rate\": 2 },"
      "    \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 8 }, \"output_tokens\": { \"dist\": \"fixed\", \"value\": 2 } } } }";
  tally_t t;
  kvsim_run_stats_t st;
  kvsim_err err = {0};
  int rc = run_text(text, ".", &t, &st, &err);
  cr_assert_eq(rc, KVSIM_ENOFIT, "refused: %s", err.msg);
  cr_assert(strncmp(err.msg, "tiny-static: static: 195 KV blocks hold no slot beside the int8/int4 "
                             "cache's residual window of ", 95) == 0,
            "names the scenario and why: %s", err.msg);
  cr_assert(strchr(err.msg, '\n') == NULL, "one line: %s", err.msg);
}
