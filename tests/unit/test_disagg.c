/* Disaggregated deployments through the library: the scenario block
 * (kvsim/disagg.h: parsing, bounds, the sides as scenarios, units of
 * replicas) and a run (kvsim_run dispatching to the disaggregated loop):
 * every request finishes once, on a decode instance, after its prefill and
 * its transfer, with the hand-off's figures in the stats. */
#include <criterion/criterion.h>
#include <string.h>

#include "kvsim/engine.h"
#include "kvsim/params.h"
#include "kvsim/scenario.h"
#include "kvsim/study.h"

static const char *base =
    "{\"name\": \"d\", \"seed\": 2, \"model\": \"llama-3.1-8b\", \"hardware\": {\"gpu\": \"h100-sxm\"},"
    " \"engine\": {\"max_model_len\": 4096},"
    " \"disaggregation\": {\"prefill\": {\"engine\": {\"num_gpu_blocks_override\": 800}},"
    "   \"decode\": {\"replicas\": 2, \"tensor_parallel_size\": 2, \"engine\": {\"num_gpu_blocks_override\": 300}}},"
    " \"workload\": {\"synthetic\": {\"requests\": 40, \"arrival\": {\"process\": \"poisson\", \"rate\": 8},"
    "   \"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 1000, \"max\": 2000},"
    "   \"output_tokens\": {\"dist\": \"uniform\", \"min\": 50, \"max\": 100}}}}";

static int parse(const char *set, kvsim_scenario_t *sc, kvsim_err *err) {
  const char *sets[1] = {set};
  return kvsim_scenario_parse(base, "d.json", ".", sets, set ? 1 : 0, sc, err);
}

Test(disagg, the_block_parses_with_its_defaults) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(parse(NULL, &sc, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert(sc.disagg.enabled, "the block turns disaggregation on");
  cr_assert_eq(sc.disagg.flow, KVSIM_DISAGG_FLOW_VLLM, "vllm-v1's flow by default");
  cr_assert_eq(sc.disagg.link, KVSIM_XFER_INFINIBAND, "InfiniBand by default");
  cr_assert_float_eq(sc.disagg.link_GBps, 43, 1e-9, "its measured default");
  cr_assert_eq(sc.disagg.unit_prefill, 1, "one prefill instance");
  cr_assert_eq(sc.disagg.unit_decode, 2, "two decode instances");
  /* One unit: 1 x TP 1 + 2 x TP 2. */
  cr_assert_eq(kvsim_scenario_gpus_per_replica(&sc), 5, "GPUs per unit: both sides'");
  kvsim_scenario_t d;
  cr_assert_eq(kvsim_scenario_disagg_side(&sc, KVSIM_SIDE_DECODE, &d, &err), KVSIM_OK, "side: %s", err.msg);
  cr_assert_eq(d.plan.tp, 2, "the decode side's own TP");
  cr_assert_eq(d.replicas, 2, "and replicas");
  cr_assert_eq(d.plan.num_gpu_blocks_override, 300, "and engine keys");
  cr_assert(!d.disagg.enabled, "a side is an aggregated scenario");
  kvsim_scenario_fini(&d);
  /* Two units: each side's instances twice. */
  cr_assert_eq(kvsim_scenario_set_replicas(&sc, 2, &err), KVSIM_OK, "set_replicas: %s", err.msg);
  cr_assert_eq(kvsim_scenario_disagg_side(&sc, KVSIM_SIDE_PREFILL, &d, &err), KVSIM_OK, "side: %s", err.msg);
  cr_assert_eq(d.replicas, 2, "2 units: 2 prefill instances");
  kvsim_scenario_fini(&d);
  cr_assert_eq(kvsim_scenario_disagg_side(&sc, KVSIM_SIDE_DECODE, &d, &err), KVSIM_OK, "side: %s", err.msg);
  cr_assert_eq(d.replicas, 4, "2 units: 4 decode instances");
  kvsim_scenario_fini(&d);
  kvsim_scenario_fini(&sc);
}

Test(disagg, bad_blocks_name_the_key) {
  static const struct {
    const char *set, *says;
  } cases[] = {
      {"disaggregation.flow=trtllm", "disaggregation.flow: 'trtllm' (expected vllm or sglang)"},
      {"disaggregation.link.kind=pcie", "disaggregation.link.kind: 'pcie'"},
      {"disaggregation.link.bandwidth_GBps=1e9", "disaggregation.link.bandwidth_GBps"},
      {"disaggregation.prefill=null", "disaggregation.prefill: missing"},
      {"disaggregation.decode.replicas=0", "disaggregation.decode.replicas"},
      {"disaggregation.decode.tp=2", "disaggregation.decode.tp: unknown key"},
      {"disaggregation.prefill.gpu=h999", "disaggregation.prefill (as a scenario): hardware.gpu"},
      {"hardware.replicas=3", "hardware.replicas: a disaggregated deployment counts instances per side"},
      {"disaggregation.decode.engine.profile=static", "has no KV connector"},
      {"workload.synthetic.lora={\"adapters\": 3}", "requests with LoRA adapters"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    /* KVSIM_EINVAL, or KVSIM_ENOENT for a GPU that is not there. */
    cr_assert_lt(parse(cases[i].set, &sc, &err), 0, "--set %s is refused", cases[i].set);
    cr_assert(strstr(err.msg, cases[i].says), "--set %s: '%s' names it", cases[i].set, err.msg);
  }
}

/* The block's parameters are the registry's rows: a bad value's error
 * carries the row's id and its range, and the side's TP is held to the
 * hardware section's limit under its own key. */
Test(disagg, bad_values_carry_the_registry_row) {
  static const struct {
    const char *set;
    int id;
    const char *says;
  } cases[] = {
      {"disaggregation.flow=trtllm", KVSIM_PARAM_DISAGG_FLOW, "'trtllm' (expected vllm or sglang)"},
      {"disaggregation.link.kind=pcie", KVSIM_PARAM_DISAGG_LINK_KIND,
       "'pcie' (expected nvlink, infiniband or roce)"},
      {"disaggregation.link.bandwidth_GBps=0.05", KVSIM_PARAM_DISAGG_LINK_BANDWIDTH_GBPS,
       "0.05 is outside [0.1, 10000]"},
      {"disaggregation.link.latency_us=-1", KVSIM_PARAM_DISAGG_LINK_LATENCY_US,
       "-1 is outside [0, 1e+06]"},
      {"disaggregation.link=3", KVSIM_PARAM_DISAGG_LINK, "expected an object"},
      {"disaggregation.decode=null", KVSIM_PARAM_DISAGG_DECODE,
       "missing (a deployment needs both sides)"},
      {"disaggregation.decode.replicas=5000", KVSIM_PARAM_DISAGG_DECODE_REPLICAS,
       "5000 is out of range [1, 4096]"},
      {"disaggregation.prefill.tensor_parallel_size=2048", KVSIM_PARAM_DISAGG_PREFILL_TP,
       "2048 is out of range [1, 1024]"},
      {"disaggregation.prefill.engine=4", KVSIM_PARAM_DISAGG_PREFILL_ENGINE, "expected an object"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    kvsim_scenario_t sc;
    kvsim_err err = {0};
    cr_assert_lt(parse(cases[i].set, &sc, &err), 0, "--set %s is refused", cases[i].set);
    cr_assert_eq(err.param, cases[i].id, "--set %s: '%s' carries the row's id", cases[i].set,
                 err.msg);
    const char *key = kvsim_param_get(cases[i].id)->key;
    cr_assert(strstr(err.msg, key), "--set %s: '%s' names %s", cases[i].set, err.msg, key);
    cr_assert_str_eq(kvsim_err_what(&err), cases[i].says, "--set %s: what is wrong", cases[i].set);
  }
  /* A value at the edge of the range is taken. */
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(parse("disaggregation.link.bandwidth_GBps=0.1", &sc, &err), KVSIM_OK, "0.1: %s",
               err.msg);
  cr_assert_float_eq(sc.disagg.link_GBps, 0.1, 1e-12, "the given bandwidth");
  kvsim_scenario_fini(&sc);
}

typedef struct seen {
  int64_t finished, ids[64];
  bool bad;
  kvsim_time_ns first_after_sched;
} seen_t;

static int on_request(void *ctx, const kvsim_request_t *r) {
  seen_t *s = ctx;
  if (r->status != KVSIM_REQ_FINISHED || r->replica < 1 || r->replica > 2 ||
      r->num_output != r->spec.output_tokens || r->first_token <= r->first_scheduled ||
      r->first_scheduled < r->arrival)
    s->bad = true;
  for (int64_t i = 0; i < s->finished; i++)
    if (s->ids[i] == (int64_t)r->spec.id)
      s->bad = true; /* reported twice */
  if (s->finished < 64)
    s->ids[s->finished] = (int64_t)r->spec.id;
  s->finished++;
  return KVSIM_OK;
}

Test(disagg, a_run_finishes_every_request_once_on_the_decode_side) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(parse(NULL, &sc, &err), KVSIM_OK, "parse: %s", err.msg);
  seen_t s = {0};
  kvsim_sink_t sink = {.ctx = &s, .request = on_request};
  kvsim_run_opts_t opts = {.check_invariants = true};
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(s.finished, 40, "every request reported, got %lld", (long long)s.finished);
  cr_assert(!s.bad, "each finished once, on a decode instance (1 or 2), after its prefill");
  cr_assert(st.disaggregated, "the stats say so");
  cr_assert_eq(st.disagg.transfers, 40, "one transfer per request");
  cr_assert_eq(st.disagg.prefill_replicas, 1, "1 prefill instance");
  cr_assert_eq(st.disagg.decode_replicas, 2, "2 decode instances");
  cr_assert_gt(st.disagg.bytes_transferred, 40LL * 1000 * 131072, "at least 1,000 tokens x 128 KiB each");
  cr_assert_eq(st.disagg.decode_pool_blocks, 299, "the decode side's pool (its override, less the null block)");
  kvsim_scenario_fini(&sc);
}

/* The top level of a disaggregated scenario is no instance: a model that
 * fits only at the sides' TP (Llama-3.1-70B bf16, 141 GB, on 80 GB H100s
 * at TP 4) runs, though the top level's TP 1 would not fit. */
Test(disagg, a_run_needs_only_the_sides_to_fit) {
  static const char *big =
      "{\"name\": \"d\", \"seed\": 2, \"model\": \"llama-3.1-70b\", \"hardware\": {\"gpu\": \"h100-sxm\"},"
      " \"engine\": {\"max_model_len\": 4096},"
      " \"disaggregation\": {\"prefill\": {\"tensor_parallel_size\": 4}, \"decode\": {\"tensor_parallel_size\": 4}},"
      " \"workload\": {\"synthetic\": {\"requests\": 8, \"arrival\": {\"process\": \"poisson\", \"rate\": 4},"
      "   \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 1000},"
      "   \"output_tokens\": {\"dist\": \"fixed\", \"value\": 20}}}}";
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(big, "d.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "parse: %s", err.msg);
  kvsim_resolved_t res;
  cr_assert_eq(kvsim_scenario_resolve(&sc, &res, &err), KVSIM_ENOFIT, "the top level alone does not fit");
  kvsim_summary_t sum;
  cr_assert_eq(kvsim_study_run(&sc, NULL, &sum, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(sum.requests_finished, 8, "every request finished, got %lld", (long long)sum.requests_finished);
  kvsim_scenario_fini(&sc);
}

/* The side's instances, from the block's typed count or an override's. */
static int side_replicas(const kvsim_scenario_t *sc, kvsim_disagg_side side) {
  kvsim_scenario_t d;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_disagg_side(sc, side, &d, &err), KVSIM_OK, "side: %s", err.msg);
  const int n = d.replicas;
  kvsim_scenario_fini(&d);
  return n;
}

/* Each side's instances are typed (disagg.h replicas): the overrides set
 * them, the sides and summary.json's config read them, a new GPU keeps
 * them. */
Test(disagg, each_sides_instances_are_typed) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(parse(NULL, &sc, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(sc.disagg.replicas[KVSIM_SIDE_PREFILL], 1, "the prefill side left out: one");
  cr_assert_eq(sc.disagg.replicas[KVSIM_SIDE_DECODE], 2, "the decode side's as given");
  cr_assert_eq(kvsim_scenario_set_disagg_replicas(&sc, KVSIM_SIDE_PREFILL, 3, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(side_replicas(&sc, KVSIM_SIDE_PREFILL), 3, "the override's count");
  cr_assert_eq(side_replicas(&sc, KVSIM_SIDE_DECODE), 2, "the other side as it was");
  cJSON *c = kvsim_scenario_config_json(&sc);
  cr_assert(c, "the config prints");
  char *s = cJSON_PrintUnformatted(c);
  cr_assert(strstr(s, "\"prefill\":{\"replicas\":3,"), "the override in the config: %s", s);
  cJSON_free(s);
  cJSON_Delete(c);
  /* A new GPU reads the block again for the link; the counts stay. */
  cr_assert_eq(kvsim_scenario_set_gpu(&sc, "h200", &err), KVSIM_OK, "set_gpu: %s", err.msg);
  cr_assert_eq(side_replicas(&sc, KVSIM_SIDE_PREFILL), 3, "kept across set_gpu");
  /* n units: the block's counts n times, the override's replaced. */
  cr_assert_eq(kvsim_scenario_set_replicas(&sc, 3, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(side_replicas(&sc, KVSIM_SIDE_PREFILL), 3, "3 units x 1");
  cr_assert_eq(side_replicas(&sc, KVSIM_SIDE_DECODE), 6, "3 units x 2");
  c = kvsim_scenario_config_json(&sc);
  s = cJSON_PrintUnformatted(c);
  cr_assert(strstr(s, "\"decode\":{\"tensor_parallel_size\":2,\"replicas\":6,"), "%s", s);
  cJSON_free(s);
  cJSON_Delete(c);
  kvsim_scenario_fini(&sc);
}

/* A new GPU moves NVLink's default bandwidth (its spec link x 378/450,
 * kvsim_xfer_link_defaults) unless the block gave one; the latency and the
 * instances stay. */
Test(disagg, set_gpu_moves_the_links_default_only) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(parse("disaggregation.link.kind=nvlink", &sc, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_float_eq(sc.disagg.link_GBps, 378, 1e-9, "H100's 450 GB/s link x 378/450");
  cr_assert_eq(kvsim_scenario_set_disagg_replicas(&sc, KVSIM_SIDE_DECODE, 5, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert_eq(kvsim_scenario_set_gpu(&sc, "b200", &err), KVSIM_OK, "set_gpu: %s", err.msg);
  cr_assert_float_eq(sc.disagg.link_GBps, 900 * 378.0 / 450, 1e-9, "B200's 900 GB/s link");
  cr_assert_float_eq(sc.disagg.link_latency_s, 10e-6, 1e-12, "NVLink's latency");
  cr_assert_eq(sc.disagg.replicas[KVSIM_SIDE_DECODE], 5, "the override kept");
  cr_assert_eq(kvsim_scenario_set_disagg_replicas(&sc, KVSIM_SIDE_DECODE, KVSIM_MAX_REPLICAS + 1,
                                                  &err),
               KVSIM_EINVAL, "past hardware.replicas' bound");
  cr_assert(strstr(err.msg, "disaggregation.decode.replicas: 4097 is outside [1, 4096]"), "%s",
            err.msg);
  cr_assert_eq(sc.disagg.replicas[KVSIM_SIDE_DECODE], 5, "a refused value changes nothing");
  kvsim_scenario_fini(&sc);
  cr_assert_eq(
      parse("disaggregation.link={\"kind\": \"nvlink\", \"bandwidth_GBps\": 100}", &sc, &err),
      KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(kvsim_scenario_set_gpu(&sc, "b200", &err), KVSIM_OK, "set_gpu: %s", err.msg);
  cr_assert_float_eq(sc.disagg.link_GBps, 100, 1e-9, "the given bandwidth stays");
  kvsim_scenario_fini(&sc);
}

/* summary.json's config prints the block's flow, transfer and link from
 * the typed block, which keys from the given marks: link.latency_us
 * prints as given (15, though 15 us read as seconds and back is
 * 14.999999999999998). */
Test(disagg, the_blocks_link_and_transfer_print_from_the_typed_block) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(
      parse("disaggregation.link={\"kind\": \"roce\", \"bandwidth_GBps\": 25, \"latency_us\": 15}",
            &sc, &err),
      KVSIM_OK, "parse: %s", err.msg);
  cJSON *c = kvsim_scenario_config_json(&sc);
  cr_assert(c, "the config prints");
  char *s = cJSON_PrintUnformatted(c);
  cr_assert(strstr(s, "\"link\":{\"kind\":\"roce\",\"bandwidth_GBps\":25,\"latency_us\":15}}"),
            "the typed link: %s", s);
  cr_assert(!strstr(s, "\"transfer\""), "transfer was not given: %s", s);
  cJSON_free(s);
  cJSON_Delete(c);
  kvsim_scenario_fini(&sc);
}

typedef struct preempted {
  int64_t finished, preempted, preemptions;
} preempted_t;

static int on_preempted(void *ctx, const kvsim_request_t *r) {
  preempted_t *p = ctx;
  p->finished += r->status == KVSIM_REQ_FINISHED;
  p->preempted += r->status == KVSIM_REQ_FINISHED && r->num_preemptions > 0;
  p->preemptions += r->num_preemptions;
  return KVSIM_OK;
}

/* A request preempted on the prefill side counts as preempted: a
 * 149-block prefill pool with 512-token chunks preempts prompts halfway
 * (the decode pool of 9,999 blocks never does), and each request's count
 * is both sides' (requests.csv's num_preemptions, requests_preempted),
 * adding up to the instances' total. The decode objects once carried
 * only the decode side's: 0 preempted requests beside 11 preemptions. */
Test(disagg, prefill_side_preemptions_count_in_the_requests) {
  const char *sets[] = {"disaggregation.prefill.engine.num_gpu_blocks_override=150",
                        "disaggregation.prefill.engine.max_num_batched_tokens=512",
                        "disaggregation.decode.replicas=1",
                        "disaggregation.decode.engine.num_gpu_blocks_override=10000",
                        "workload.synthetic.arrival.rate=40"};
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(base, "d.json", ".", sets, 5, &sc, &err), KVSIM_OK, "parse: %s",
               err.msg);
  preempted_t p = {0};
  kvsim_sink_t sink = {.ctx = &p, .request = on_preempted};
  kvsim_run_opts_t opts = {.check_invariants = true};
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(p.finished, 40, "every request finishes, got %lld", (long long)p.finished);
  cr_assert_gt(st.preemptions, 0, "the small prefill pool preempts");
  cr_assert_gt(st.requests_preempted, 0, "so some requests were preempted (%lld preemptions)",
               (long long)st.preemptions);
  cr_assert_eq(st.requests_preempted, p.preempted,
               "the stats count the requests reported preempted");
  cr_assert_eq(p.preemptions, st.preemptions,
               "the requests' counts add up to the instances' total: %lld vs %lld",
               (long long)p.preemptions, (long long)st.preemptions);
  kvsim_scenario_fini(&sc);
}

/* A max_time_s stop while the decode side is saturated (a 199-block pool:
 * one or two prompts at a time, the prefill side backed up behind it)
 * ends the run at max_time_s with the rest reported unfinished, as an
 * aggregated run ends; the loop's "cannot make progress" check does not
 * take the saturated side for a stuck one. */
Test(disagg, a_max_time_stop_while_a_side_is_saturated_ends_the_run) {
  const char *sets[] = {"disaggregation.decode.replicas=1",
                        "disaggregation.decode.engine.num_gpu_blocks_override=200",
                        "workload.synthetic.arrival.rate=40", "output.max_time_s=3"};
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(base, "d.json", ".", sets, 4, &sc, &err), KVSIM_OK, "parse: %s",
               err.msg);
  preempted_t p = {0};
  kvsim_sink_t sink = {.ctx = &p, .request = on_preempted};
  kvsim_run_opts_t opts = {.check_invariants = true};
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(st.end_time, kvsim_time_from_s(3), "the run ends at max_time_s (%.3f s)",
               kvsim_time_to_s(st.end_time));
  cr_assert_gt(st.requests_in_flight, 0, "requests are left in the saturated system");
  cr_assert_lt(p.finished, 40, "not every request finished (%lld)", (long long)p.finished);
  cr_assert_gt(st.disagg.handoff_wait_s_sum, 0, "prompts waited for decode blocks");
  kvsim_scenario_fini(&sc);
}

/* SGLang's decode scheduler with --scheduler-recv-interval N polls for
 * new requests once every N decode steps (SchedulerRecvSkipper), and a
 * request it has not received cannot bootstrap, so its prefill waits: the
 * second request arrives while the first decodes. */
static const char *recv_base =
    "{\"name\": \"r\", \"seed\": 1, \"model\": \"llama-3.1-8b\", \"hardware\": {\"gpu\": \"h100-sxm\"},"
    " \"engine\": {\"profile\": \"sglang\", \"max_model_len\": 4096},"
    " \"disaggregation\": {\"flow\": \"sglang\", \"prefill\": {}, \"decode\": {}},"
    " \"workload\": {\"synthetic\": {\"requests\": 2, \"arrival\": {\"process\": \"constant\", \"rate\": 4},"
    "   \"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 1000},"
    "   \"output_tokens\": {\"dist\": \"fixed\", \"value\": 200}}}}";

typedef struct two {
  kvsim_time_ns arrival[2], sched[2];
  double tpot[2];
} two_t;

static int on_two(void *ctx, const kvsim_request_t *r) {
  two_t *t = ctx;
  if (r->status == KVSIM_REQ_FINISHED && r->spec.id < 2) {
    t->arrival[r->spec.id] = r->arrival;
    t->sched[r->spec.id] = r->first_scheduled;
    t->tpot[r->spec.id] = kvsim_time_to_s(r->finish - r->first_token) / (double)(r->num_output - 1);
  }
  return KVSIM_OK;
}

static void run_two(const char *set, two_t *t) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  const char *sets[1] = {set};
  cr_assert_eq(kvsim_scenario_parse(recv_base, "r.json", ".", sets, set ? 1 : 0, &sc, &err), KVSIM_OK,
               "parse: %s", err.msg);
  memset(t, 0, sizeof *t);
  kvsim_sink_t sink = {.ctx = t, .request = on_two};
  kvsim_run_opts_t opts = {.check_invariants = true};
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, &st, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(st.requests_finished, 2, "both finish");
  kvsim_scenario_fini(&sc);
}

Test(disagg, sglang_decode_side_receives_every_recv_interval_decode_steps) {
  two_t every, ten;
  run_two(NULL, &every);
  run_two("disaggregation.decode.engine.scheduler_recv_interval=10", &ten);
  /* The first request finds both instances idle: received at once. */
  cr_assert_eq(ten.sched[0], ten.arrival[0], "an idle decode instance receives at once");
  /* The second arrives while the first decodes: without the interval its
   * prefill starts on arrival (the prefill instance is idle). */
  cr_assert_gt(every.arrival[1], every.sched[0], "the second arrives after the first's prefill began");
  cr_assert_eq(every.sched[1], every.arrival[1], "interval 1: bootstrapped on arrival");
  /* With 10 it waits for the decode instance's next poll: more than
   * nothing, at most 10 of its decode steps (the first one's TPOT). */
  double wait = kvsim_time_to_s(ten.sched[1] - ten.arrival[1]);
  cr_assert_gt(wait, 0, "interval 10: the prefill waits for the decode side's poll");
  cr_assert_leq(wait, 10 * ten.tpot[0] * 1.01, "at most 10 decode steps (%.4f s, TPOT %.4f s)", wait,
                ten.tpot[0]);
}

Test(disagg, recv_interval_is_sglangs_and_bounded) {
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  const char *big[1] = {"disaggregation.decode.engine.scheduler_recv_interval=1001"};
  cr_assert_neq(kvsim_scenario_parse(recv_base, "r.json", ".", big, 1, &sc, &err), KVSIM_OK);
  cr_assert(strstr(err.msg, "scheduler_recv_interval"), "names the key: %s", err.msg);
  kvsim_err err2 = {0};
  const char *vllm[1] = {"engine.scheduler_recv_interval=10"};
  cr_assert_neq(kvsim_scenario_parse(base, "d.json", ".", vllm, 1, &sc, &err2), KVSIM_OK,
                "vllm-v1 refuses SGLang's key");
  cr_assert(strstr(err2.msg, "scheduler_recv_interval"), "names the key: %s", err2.msg);
}

/* SGLang's first token is the prefill side's: it travels with the KV and
 * the decode side streams it without a forward (decode.py
 * get_new_prebuilt_batch), so a request of N output tokens takes N - 1
 * decode steps there; vLLM's decode side recomputes the prompt's last
 * token, N steps. A lone token finishes as its KV lands. */
static int64_t steps_of(const char *flow, int out, int64_t *finished, int64_t *xfers) {
  char sets[2][96];
  snprintf(sets[0], sizeof sets[0], "disaggregation.flow=%s", flow);
  snprintf(sets[1], sizeof sets[1], "workload.synthetic.output_tokens={\"dist\":\"fixed\",\"value\":%d}", out);
  const char *set[3] = {sets[0], sets[1], "workload.synthetic.requests=1"};
  kvsim_scenario_t sc;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(recv_base, "r.json", ".", set, 3, &sc, &err), KVSIM_OK, "parse: %s",
               err.msg);
  two_t t;
  memset(&t, 0, sizeof t);
  kvsim_sink_t sink = {.ctx = &t, .request = on_two};
  kvsim_run_opts_t opts = {.check_invariants = true};
  kvsim_run_stats_t st;
  cr_assert_eq(kvsim_run(&sc, &opts, &sink, &st, &err), KVSIM_OK, "run: %s", err.msg);
  *finished = st.requests_finished;
  *xfers = st.disagg.transfers;
  kvsim_scenario_fini(&sc);
  return st.steps;
}

Test(disagg, sglang_streams_the_prefill_sides_first_token) {
  int64_t fin;
  int64_t xfers;
  cr_assert_eq(steps_of("sglang", 50, &fin, &xfers), 1 + 49, "SGLang: 1 prefill step, 49 decode steps");
  cr_assert_eq(fin, 1);
  cr_assert_eq(steps_of("vllm", 50, &fin, &xfers), 1 + 50, "vLLM: 1 prefill step, 50 decode steps");
  cr_assert_eq(steps_of("sglang", 1, &fin, &xfers), 1, "a lone token: no decode step");
  cr_assert_eq(fin, 1, "and the request finished");
  cr_assert_eq(xfers, 1, "after its transfer");
}
