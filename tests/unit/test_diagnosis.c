/* The diagnosis rules on hand-made summaries (each rule fires on its case
 * and not on the others), the advice they list, and verified advice on a
 * small scenario. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "kvsim/study.h"
#include "report/diagnosis.h"

/* A healthy run: 1,000 requests served at the offered 10 req/s, one
 * replica of TP1 on a 3,350 GB/s GPU, short steps, nothing waiting. */
static void healthy(kvsim_summary_t *s, kvsim__diag_input_t *in) {
  memset(s, 0, sizeof *s);
  memset(in, 0, sizeof *in);
  snprintf(s->name, sizeof s->name, "hand");
  s->replicas = 1;
  s->plan.p.tp = 1;
  s->plan.p.pp = 1;
  s->plan.p.gpu_memory_utilization = 0.9;
  s->plan.p.max_num_seqs = 256;
  s->plan.p.max_model_len = 8192;
  s->plan.max_model_len_fit = 131072;
  s->plan.kv_bytes_per_element = 2;
  s->plan.weights_bytes = 16000000000; /* 4.8 ms to stream at 3,350 GB/s */
  s->pool_usable_blocks = 20000;
  s->requests_total = s->requests_finished = 1000;
  s->requests_per_s = 9.9;
  s->ttft.p50 = 0.05;
  s->ttft.p99 = 0.3;
  s->queue.p99 = 0.1;
  s->running_mean = 40;
  s->waiting_mean = 0.1;
  s->kv_usage_mean = 0.3;
  s->steps = 10000;
  s->busy_s = 80; /* 8 ms steps: 1.7x the floor */
  in->offered_rate = 10;
  in->hbm_GBps = 3350;
}

static const kvsim_diagnosis_t *find(const kvsim_summary_t *s, const char *code) {
  for (int i = 0; i < s->ndiagnosis; i++)
    if (!strcmp(s->diagnosis[i].code, code))
      return &s->diagnosis[i];
  return NULL;
}

static const kvsim_advice_t *advice(const kvsim_diagnosis_t *d, kvsim_advice_kind k) {
  for (int i = 0; d && i < d->nadvice; i++)
    if (d->advice[i].kind == k)
      return &d->advice[i];
  return NULL;
}

Test(diagnosis, healthy_run_has_no_finding) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  kvsim__diagnose(&in, &s);
  cr_assert_eq(s.ndiagnosis, 0, "healthy run: %d findings, first %s", s.ndiagnosis,
               s.ndiagnosis ? s.diagnosis[0].code : "");
}

/* Issue 11 (a): served 4.2 of 12 offered, 960 waiting, KV not full. */
Test(diagnosis, compute_bound_when_served_below_offered_and_kv_not_full) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  in.offered_rate = 12;
  s.requests_per_s = 4.2;
  s.waiting_mean = 960;
  s.queue.p99 = 300;
  s.ttft.p50 = 150;
  s.ttft.p99 = 310;
  in.frac_kv_full = 0;
  kvsim__diagnose(&in, &s);
  const kvsim_diagnosis_t *d = find(&s, "compute_bound");
  cr_assert(d, "compute_bound found (%d findings)", s.ndiagnosis);
  cr_assert(strstr(d->message, "4.20 of 12.00 offered"), "message names the rates: %s", d->message);
  cr_assert_null(find(&s, "kv_bound"), "not KV-bound with the pool not full");
  const kvsim_advice_t *r = advice(d, KVSIM_ADVICE_REPLICAS);
  cr_assert(r, "advises replicas");
  /* ceil(1.15 x 1 x 12 / 4.2) = 4 */
  cr_assert_eq((int)r->value, 4, "replicas for the offered rate: %g", r->value);
  cr_assert_str_eq(r->change, "hardware.replicas=4", "the --set: %s", r->change);
  cr_assert(advice(d, KVSIM_ADVICE_TP), "advises TP");
  cr_assert_null(advice(d, KVSIM_ADVICE_KV_FP8), "no FP8 KV when the pool was not full");
  cr_assert_null(advice(d, KVSIM_ADVICE_GPU), "no GPU given, no faster GPU");
}

/* Overloaded at TP 4 with the all-reduce over a third of a mean step:
 * tp_communication advises halving TP (and replicas), and compute_bound no
 * longer advises more TP. Under a third, or at TP 1, neither happens. */
Test(diagnosis, tp_communication_when_the_allreduce_sets_the_step) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  s.plan.p.tp = 4;
  in.offered_rate = 12;
  s.requests_per_s = 4.2;
  s.waiting_mean = 60;
  s.queue.p99 = 30;
  in.comm_share = 0.85;
  kvsim__diagnose(&in, &s);
  const kvsim_diagnosis_t *d = find(&s, "tp_communication");
  cr_assert(d, "tp_communication found (%d findings)", s.ndiagnosis);
  cr_assert(strstr(d->message, "85% of a mean step at TP 4"), "message: %s", d->message);
  const kvsim_advice_t *t = advice(d, KVSIM_ADVICE_TP);
  cr_assert(t, "advises a TP change");
  cr_assert_eq((int)t->value, 2, "halves TP: %g", t->value);
  cr_assert_str_eq(t->change, "hardware.tensor_parallel_size=2", "the --set: %s", t->change);
  cr_assert(advice(d, KVSIM_ADVICE_REPLICAS), "and replicas");
  cr_assert_null(advice(find(&s, "compute_bound"), KVSIM_ADVICE_TP), "compute_bound advises no more TP");
  for (int k = 0; k < 2; k++) {
    healthy(&s, &in);
    s.plan.p.tp = k ? 1 : 4;
    in.offered_rate = 12;
    s.requests_per_s = 4.2;
    s.waiting_mean = 60;
    s.queue.p99 = 30;
    in.comm_share = k ? 0.85 : 0.3;
    kvsim__diagnose(&in, &s);
    cr_assert_null(find(&s, "tp_communication"), "%s: no tp_communication", k ? "TP 1" : "share 0.3");
    cr_assert(advice(find(&s, "compute_bound"), KVSIM_ADVICE_TP), "compute_bound advises TP");
  }
}

/* The faster GPU: the next step up in FLOPs with more bandwidth and about
 * as much memory, from the catalog. */
Test(diagnosis, compute_bound_advises_the_next_faster_gpu) {
  const char *cases[][2] = {{"a100-80g", "h100-sxm"}, {"h100-sxm", "b200"}, {"l40s", "rtx-pro-6000"}};
  for (int i = 0; i < 3; i++) {
    kvsim_summary_t s;
    kvsim__diag_input_t in;
    healthy(&s, &in);
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_load(cases[i][0], &g, &err), KVSIM_OK, "%s", err.msg);
    in.gpu = &g;
    in.offered_rate = 12;
    s.requests_per_s = 4;
    s.waiting_mean = 900;
    s.queue.p99 = 300;
    kvsim__diagnose(&in, &s);
    const kvsim_advice_t *a = advice(find(&s, "compute_bound"), KVSIM_ADVICE_GPU);
    cr_assert(a, "%s: a faster GPU advised", cases[i][0]);
    cr_assert_str_eq(a->gpu, cases[i][1], "%s -> %s, not %s", cases[i][0], cases[i][1], a->gpu);
  }
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("gb200", &g, &err), KVSIM_OK, "%s", err.msg);
  in.gpu = &g;
  in.offered_rate = 12;
  s.requests_per_s = 4;
  s.waiting_mean = 900;
  s.queue.p99 = 300;
  kvsim__diagnose(&in, &s);
  cr_assert_null(advice(find(&s, "compute_bound"), KVSIM_ADVICE_GPU), "nothing faster than gb200");
}

/* Issue 11 (b): the pool is full, but the steps are 10x the weight
 * floor: compute-bound, FP8 only as the counter-check. */
Test(diagnosis, full_pool_with_long_steps_is_compute_bound_not_kv_bound) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  s.plan.p.tp = 4;
  s.plan.weights_bytes = 35000000000; /* 10.4 ms floor */
  in.offered_rate = 24;
  s.requests_per_s = 10;
  s.waiting_mean = 900;
  s.queue.p99 = 190;
  in.frac_kv_full = 0.8;
  s.steps = 3600;
  s.busy_s = 390; /* 108 ms steps */
  kvsim__diagnose(&in, &s);
  const kvsim_diagnosis_t *d = find(&s, "compute_bound");
  cr_assert(d, "compute_bound found");
  cr_assert_null(find(&s, "kv_bound"), "not kv_bound when batch work dominates the steps");
  cr_assert(advice(d, KVSIM_ADVICE_KV_FP8), "FP8 KV listed to show what it buys");
  const kvsim_advice_t *tp = advice(d, KVSIM_ADVICE_TP);
  cr_assert(tp && tp->value == 8, "TP 4 -> 8");
}

Test(diagnosis, kv_bound_when_pool_full_and_steps_short) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  in.offered_rate = 16;
  s.requests_per_s = 9;
  s.waiting_mean = 800;
  s.queue.p99 = 150;
  in.frac_kv_full = 0.45;
  s.preemptions = 1300;
  s.busy_s = 126; /* 12.6 ms: 2.6x the floor */
  kvsim__diagnose(&in, &s);
  const kvsim_diagnosis_t *d = find(&s, "kv_bound");
  cr_assert(d, "kv_bound found");
  cr_assert_null(find(&s, "compute_bound"), "not compute-bound");
  cr_assert(find(&s, "frequent_preemption"), "1300 preemptions for 1000 requests");
  cr_assert(advice(d, KVSIM_ADVICE_KV_FP8), "advises FP8 KV");
  const kvsim_advice_t *u = advice(d, KVSIM_ADVICE_UTILIZATION);
  cr_assert(u && u->value > 0.949 && u->value < 0.951, "utilization 0.9 -> 0.95");
}

Test(diagnosis, no_fp8_advice_for_an_fp8_cache) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  s.plan.kv_bytes_per_element = 1;
  s.preemptions = 200;
  kvsim__diagnose(&in, &s);
  const kvsim_diagnosis_t *d = find(&s, "frequent_preemption");
  cr_assert(d, "frequent_preemption found");
  cr_assert_null(advice(d, KVSIM_ADVICE_KV_FP8), "the cache is already 8-bit");
}

Test(diagnosis, full_pool_without_waiting_or_preemption_is_not_kv_bound) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  in.frac_kv_full = 0.5;
  s.waiting_mean = 0.5;
  kvsim__diagnose(&in, &s);
  cr_assert_null(find(&s, "kv_bound"), "nothing waits for blocks and nothing is preempted");
}

/* Served below offered because max_num_seqs caps the batch (steps at the
 * weight floor): max_num_seqs_bound, not compute_bound. */
Test(diagnosis, overload_capped_by_max_num_seqs_is_not_compute_bound) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  in.offered_rate = 9.5;
  s.requests_per_s = 6.4;
  s.waiting_mean = 19;
  s.queue.p99 = 6;
  in.frac_seq_bound = 0.83;
  kvsim__diagnose(&in, &s);
  cr_assert_null(find(&s, "compute_bound"), "the batch is capped by max_num_seqs");
  cr_assert(find(&s, "max_num_seqs_bound"), "max_num_seqs_bound found");
}

Test(diagnosis, max_num_seqs_bound_advises_higher) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  in.frac_seq_bound = 0.6;
  s.waiting_mean = 5;
  kvsim__diagnose(&in, &s);
  const kvsim_diagnosis_t *d = find(&s, "max_num_seqs_bound");
  cr_assert(d, "max_num_seqs_bound found");
  const kvsim_advice_t *a = advice(d, KVSIM_ADVICE_MAX_NUM_SEQS);
  cr_assert(a && a->value == 512, "max_num_seqs 256 -> 512");
}

Test(diagnosis, long_tail_advises_fewer_sequences_and_a_replica) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  s.ttft.p50 = 0.1;
  s.ttft.p99 = 3;
  kvsim__diagnose(&in, &s);
  const kvsim_diagnosis_t *d = find(&s, "long_tail_latency");
  cr_assert(d, "long_tail_latency found");
  const kvsim_advice_t *a = advice(d, KVSIM_ADVICE_MAX_NUM_SEQS);
  cr_assert(a && a->value == 20, "max_num_seqs -> half the running mean (40)");
  const kvsim_advice_t *r = advice(d, KVSIM_ADVICE_REPLICAS);
  cr_assert(r && r->value == 2, "one more replica");
}

Test(diagnosis, low_prefix_hit_rate_and_rejections) {
  kvsim_summary_t s;
  kvsim__diag_input_t in;
  healthy(&s, &in);
  s.prefix_caching = true;
  s.prefix_queries = 1000;
  s.prefix_hits = 10;
  s.requests_rejected = 5;
  in.rejected_too_long = 5;
  kvsim__diagnose(&in, &s);
  cr_assert(find(&s, "low_prefix_hit_rate"), "low_prefix_hit_rate found");
  const kvsim_diagnosis_t *d = find(&s, "rejected_requests");
  cr_assert(d, "rejected_requests found");
  const kvsim_advice_t *a = advice(d, KVSIM_ADVICE_MAX_MODEL_LEN);
  cr_assert(a && a->value == 16384, "max_model_len 8192 -> 16384");
}

/* A small overload, verified: the advice is run and its effect recorded;
 * one more replica must serve more than the run diagnosed. */
static const char *overload =
    "{ \"name\": \"ov\", \"seed\": 3, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
    "  \"engine\": { \"max_model_len\": 4096 }, \"slo\": { \"ttft_p99_s\": 1 },"
    "  \"workload\": { \"synthetic\": { \"requests\": 400, \"arrival\": { \"process\": \"poisson\", \"rate\": 200 },"
    "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 2000 },"
    "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 16 } } } }";

Test(diagnosis, verified_advice_is_measured_and_deterministic) {
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_scenario_parse(overload, "ov.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  static kvsim_summary_t a, b;
  cr_assert_eq(kvsim_study_run(&sc, NULL, &a, &err), KVSIM_OK, "run: %s", err.msg);
  b = a;
  const kvsim_diagnosis_t *d = find(&a, "compute_bound");
  cr_assert(d, "the overload is compute-bound (%d findings, first %s)", a.ndiagnosis,
            a.ndiagnosis ? a.diagnosis[0].code : "");
  cr_assert(!d->advice[0].tried, "not tried before verification");
  cr_assert_eq(kvsim_study_verify_advice(&sc, &a, 1, &err), KVSIM_OK, "verify: %s", err.msg);
  cr_assert_eq(kvsim_study_verify_advice(&sc, &b, 2, &err), KVSIM_OK, "verify, 2 jobs: %s", err.msg);
  d = find(&a, "compute_bound");
  const kvsim_advice_t *r = advice(d, KVSIM_ADVICE_REPLICAS);
  cr_assert(r && r->tried && r->rc == KVSIM_OK, "replicas tried");
  cr_assert_gt(r->requests_per_s, a.requests_per_s, "more replicas serve more: %g vs %g",
               r->requests_per_s, a.requests_per_s);
  cr_assert_lt(r->ttft_p99_s, a.ttft.p99, "and cut p99 TTFT: %g vs %g", r->ttft_p99_s, a.ttft.p99);
  cr_assert(strstr(d->verified, r->label), "the verified line names the change: %s", d->verified);
  for (int i = 0; i < a.ndiagnosis; i++) {
    cr_assert_str_eq(a.diagnosis[i].verified, b.diagnosis[i].verified, "1 and 2 jobs agree");
    for (int k = 0; k < a.diagnosis[i].nadvice; k++)
      cr_assert_eq(a.diagnosis[i].advice[k].ttft_p99_s, b.diagnosis[i].advice[k].ttft_p99_s,
                   "1 and 2 jobs: the same p99 TTFT");
  }
  kvsim_scenario_fini(&sc);
}

/* A change that cannot run is a verdict, not an error: a pool that does
 * not fit says so with the engine's message. */
Test(diagnosis, advice_that_does_not_fit_is_a_verdict) {
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_scenario_parse(overload, "ov.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  static kvsim_summary_t s;
  cr_assert_eq(kvsim_study_run(&sc, NULL, &s, &err), KVSIM_OK, "run: %s", err.msg);
  s.ndiagnosis = 1;
  kvsim_diagnosis_t *d = &s.diagnosis[0];
  memset(d, 0, sizeof *d);
  snprintf(d->code, sizeof d->code, "hand");
  d->nadvice = 2;
  d->advice[0] = (kvsim_advice_t){.kind = KVSIM_ADVICE_UTILIZATION, .value = 0.05};
  snprintf(d->advice[0].label, sizeof d->advice[0].label, "util 0.05");
  d->advice[1] = (kvsim_advice_t){.kind = KVSIM_ADVICE_MAX_NUM_SEQS, .value = 0};
  snprintf(d->advice[1].label, sizeof d->advice[1].label, "no seqs");
  cr_assert_eq(kvsim_study_verify_advice(&sc, &s, 1, &err), KVSIM_OK, "verify: %s", err.msg);
  cr_assert_eq(d->advice[0].rc, KVSIM_ENOFIT, "0.05 of an L4 does not hold the weights");
  cr_assert_str_eq(d->advice[0].verdict, "does not fit", "verdict: %s", d->advice[0].verdict);
  cr_assert(strstr(d->advice[0].note, "does not fit"), "the engine's message: %s", d->advice[0].note);
  cr_assert_str_eq(d->advice[1].verdict, "failed", "max_num_seqs 0 is refused: %s",
                   d->advice[1].verdict);
  cr_assert(strstr(d->advice[1].note, "max_num_seqs"), "names the key: %s", d->advice[1].note);
  cr_assert(strstr(d->verified, "util 0.05: does not fit"), "verified line: %s", d->verified);
  kvsim_scenario_fini(&sc);
}

/* One hand-made advice of max_model_len = len on s, verified. */
static const kvsim_advice_t *verify_len(const kvsim_scenario_t *sc, kvsim_summary_t *s,
                                        double len) {
  kvsim_err err = {0};
  s->ndiagnosis = 1;
  kvsim_diagnosis_t *d = &s->diagnosis[0];
  memset(d, 0, sizeof *d);
  snprintf(d->code, sizeof d->code, "hand");
  d->nadvice = 1;
  d->advice[0] = (kvsim_advice_t){.kind = KVSIM_ADVICE_MAX_MODEL_LEN, .value = len};
  snprintf(d->advice[0].label, sizeof d->advice[0].label, "len %g", len);
  cr_assert_eq(kvsim_study_verify_advice(sc, s, 1, &err), KVSIM_OK, "verify: %s", err.msg);
  cr_assert_eq(d->advice[0].rc, KVSIM_OK, "len %g ran: %s", len, d->advice[0].note);
  return &d->advice[0];
}

/* Regression: the verdict compared p99 TTFTs of 0 s where a side had no
 * finished request: a change that rejects every request "helps" (0 s
 * below the run's p99), one that serves a run that served nothing is
 * "worse". With no p99 on one side there is nothing to compare. */
Test(diagnosis, advice_where_a_side_finished_nothing_cannot_tell) {
  static const char *short_prompts =
      "{ \"name\": \"sp\", \"seed\": 1, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": "
      "\"l4\" }, \"engine\": { \"max_model_len\": 1024 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 4, \"arrival\": { \"process\": "
      "\"constant\", \"rate\": 1 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 300 },"
      "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 10 } } } }";
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_scenario_parse(short_prompts, "sp.json", ".", NULL, 0, &sc, &err), KVSIM_OK,
               "%s", err.msg);
  static kvsim_summary_t s;
  cr_assert_eq(kvsim_study_run(&sc, NULL, &s, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(s.requests_finished, 4, "all 4 served at max_model_len 1024");
  /* max_model_len 256 rejects every 300-token prompt: nothing finishes. */
  const kvsim_advice_t *a = verify_len(&sc, &s, 256);
  cr_assert_eq(a->rejected, 4, "all rejected with the change (%lld)", (long long)a->rejected);
  cr_assert_str_eq(a->verdict, "cannot tell", "no p99 with the change: %s", a->verdict);
  cr_assert(isnan(a->ttft_p99_s), "no p99 TTFT measured, not 0 s: %g", a->ttft_p99_s);
  cr_assert(strstr(s.diagnosis[0].verified, "-> - (none finished)"), "the line says so: %s",
            s.diagnosis[0].verified);
  cr_assert_null(strstr(s.diagnosis[0].verified, "0.000 s"), "no 0 s p99: %s",
                 s.diagnosis[0].verified);
  kvsim_scenario_fini(&sc);

  /* The other way round: the run diagnosed rejected every request. */
  const char *sets[] = {"engine.max_model_len=256"};
  cr_assert_eq(kvsim_scenario_parse(short_prompts, "sp.json", ".", sets, 1, &sc, &err), KVSIM_OK,
               "%s", err.msg);
  cr_assert_eq(kvsim_study_run(&sc, NULL, &s, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(s.requests_finished, 0, "nothing served at max_model_len 256");
  a = verify_len(&sc, &s, 1024);
  cr_assert_eq(a->rejected, 0, "the change serves them");
  cr_assert_str_eq(a->verdict, "cannot tell", "no p99 in the run diagnosed: %s", a->verdict);
  cr_assert(strstr(s.diagnosis[0].verified, "p99 TTFT - (none finished) -> "),
            "the line says so: %s", s.diagnosis[0].verified);
  kvsim_scenario_fini(&sc);
}

/* The setters the advice uses: checked like parsing, and recorded in the
 * summary's config. */
Test(diagnosis, advice_setters_check_and_record) {
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  cr_assert_eq(kvsim_scenario_parse(overload, "ov.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&sc, 0, &err), KVSIM_EINVAL, "0 sequences");
  cr_assert_eq(kvsim_scenario_set_tensor_parallel(&sc, 0, &err), KVSIM_EINVAL, "TP 0");
  cr_assert_eq(kvsim_scenario_set_max_model_len(&sc, 0, &err), KVSIM_EINVAL, "length 0");
  cr_assert_eq(kvsim_scenario_set_kv_cache_dtype(&sc, KVSIM_KV_FP8, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_scenario_set_max_num_seqs(&sc, 12, &err), KVSIM_OK, "%s", err.msg);
  kvsim_resolved_t res;
  cr_assert_eq(kvsim_scenario_resolve(&sc, &res, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(res.plan.kv_bytes_per_element, 1, "FP8: one byte per element");
  cr_assert_eq(res.sched.max_num_seqs, 12, "max_num_seqs reaches the scheduler");
  cJSON *config = kvsim_scenario_config_json(&sc);
  const cJSON *eng = cJSON_GetObjectItemCaseSensitive(config, "engine");
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(eng, "kv_cache_dtype");
  cr_assert(cJSON_IsString(dt) && !strcmp(dt->valuestring, "fp8"), "config records fp8");
  cJSON_Delete(config);
  cr_assert_lt(kvsim_scenario_set_gpu(&sc, "h900", &err), 0, "an unknown GPU is an error");
  cr_assert_str_eq(sc.gpu.name, "l4", "and leaves the scenario as it was: %s", sc.gpu.name);
  cr_assert_eq(kvsim_scenario_set_gpu(&sc, "h100-sxm", &err), KVSIM_OK, "%s", err.msg);
  cr_assert_str_eq(sc.gpu.name, "h100-sxm", "the GPU changed: %s", sc.gpu.name);
  cr_assert_eq(sc.plan.max_num_seqs, 12, "earlier overrides kept: %lld", (long long)sc.plan.max_num_seqs);
  cr_assert_eq(sc.plan.kv_dtype, KVSIM_KV_FP8, "FP8 kept");
  kvsim_scenario_fini(&sc);
}

/* A disaggregated run of 1P:1D over 100 s: TTFT 2 s on average, of which
 * `queue`, `wait` and `xfer` are the waits (s); the prefill side busy
 * prefill_busy of the span, the link link_busy. */
static void disagg_run(kvsim_summary_t *s, double queue, double wait, double xfer,
                       double prefill_busy, double link_busy) {
  memset(s, 0, sizeof *s);
  s->disaggregated = true;
  s->requests_finished = 200;
  s->ttft.mean = 2;
  s->queue.count = 200;
  s->queue.mean = queue;
  s->simulated_time_s = 100;
  s->plan.kv_bytes_per_element = 2;
  kvsim_disagg_stats_t *d = &s->disagg;
  d->prefill_replicas = d->decode_replicas = 1;
  d->transfers = 200;
  d->handoff_wait_s_sum = 200 * wait;
  d->transfer_s_sum = link_busy > 0 ? 100 * link_busy : 200 * xfer;
  d->transfer_exposed_s_sum = 200 * xfer; /* whole-request transfers: all of it after the prefill */
  d->prefill_busy_s = 100 * prefill_busy;
  d->decode_busy_s = 100;
  d->prefill_kv_usage_peak = 0.3;
  d->decode_kv_usage_peak = 0.5;
}

Test(diagnosis, disaggregated_run_names_the_side_that_bounds_it) {
  kvsim_summary_t s;
  kvsim__diag_input_t in = {0};
  /* Requests queue for the prefill instance, which is busy. */
  disagg_run(&s, 1.2, 0.05, 0.01, 0.9, 0);
  kvsim__diagnose_disagg(&in, &s);
  const kvsim_diagnosis_t *d = find(&s, "disagg_prefill_bound");
  cr_assert_not_null(d, "prefill-bound: got %s", s.ndiagnosis ? s.diagnosis[0].code : "nothing");
  cr_assert_str_eq(d->severity, "warning", "1.2 of 2 s is past the warning share");
  const kvsim_advice_t *a = advice(d, KVSIM_ADVICE_PREFILL_REPLICAS);
  cr_assert(a && a->value == 2 && !strcmp(a->change, "disaggregation.prefill.replicas=2"),
            "one more prefill instance advised");
  cr_assert_null(advice(d, KVSIM_ADVICE_DECODE_REPLICAS),
                 "the decode pool has room: no decode advice");
  cr_assert(strstr(d->message, "prefill instances busy 90%"), "%s", d->message);
  /* Prompts wait for decode blocks. */
  disagg_run(&s, 0.1, 0.8, 0.01, 0.5, 0);
  s.disagg.decode_kv_usage_peak = 1;
  kvsim__diagnose_disagg(&in, &s);
  d = find(&s, "disagg_decode_pool_bound");
  cr_assert(d && advice(d, KVSIM_ADVICE_DECODE_REPLICAS) && advice(d, KVSIM_ADVICE_KV_FP8),
            "decode-pool-bound, with one more decode instance and FP8 KV");
  /* A prefill queue behind a full prefill pool of idle instances is the
   * decode pool's back-pressure, not the prefill side's. */
  disagg_run(&s, 1.2, 0.4, 0.01, 0.1, 0);
  s.disagg.prefill_kv_usage_peak = 1;
  kvsim__diagnose_disagg(&in, &s);
  d = find(&s, "disagg_decode_pool_bound");
  cr_assert(d && strstr(d->message, "back-pressure"), "back-pressure to the decode pool: %s",
            s.ndiagnosis ? s.diagnosis[0].message : "nothing");
  /* A saturated link bounds, whatever queues behind it. */
  disagg_run(&s, 1.2, 0.1, 0, 0.3, 0.95);
  kvsim__diagnose_disagg(&in, &s);
  d = find(&s, "disagg_link_bound");
  cr_assert(d && d->nadvice == 0, "link-bound, with no typed change: %s",
            s.ndiagnosis ? s.diagnosis[0].code : "nothing");
  /* Nothing waits: info only, no advice. */
  disagg_run(&s, 0.05, 0, 0.015, 0.2, 0);
  kvsim__diagnose_disagg(&in, &s);
  d = find(&s, "disagg_unbound");
  cr_assert(d && !strcmp(d->severity, "info") && d->nadvice == 0,
            "an unloaded run bounds on nothing");
  /* Per-chunk transfers: 0.3 s of link time per request, 60 % of the run,
   * but the earlier chunks' sends overlap the prefill and only 15 ms is
   * left after it: TTFT does not wait on the link. As whole transfers the
   * same link time bounds. */
  disagg_run(&s, 0.05, 0, 0.3, 0.2, 0);
  kvsim__diagnose_disagg(&in, &s);
  cr_assert_not_null(find(&s, "disagg_link_bound"), "whole transfers of 0.3 s bound on the link");
  disagg_run(&s, 0.05, 0, 0.3, 0.2, 0);
  s.disagg.transfer_exposed_s_sum = 200 * 0.015;
  kvsim__diagnose_disagg(&in, &s);
  cr_assert_not_null(find(&s, "disagg_unbound"), "chunked, 15 ms exposed: got %s",
                     s.ndiagnosis ? s.diagnosis[0].code : "nothing");
  /* An aggregated run gets none of these. */
  disagg_run(&s, 1.2, 0.05, 0.01, 0.9, 0);
  s.disaggregated = false;
  kvsim__diagnose_disagg(&in, &s);
  cr_assert_eq(s.ndiagnosis, 0, "not disaggregated: no finding");
}
