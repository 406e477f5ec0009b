/* The deployment search's pieces (kvsim/deploy.h): the search block, the
 * Pareto frontier and the launch command. */
#include <criterion/criterion.h>

#include <math.h>
#include <string.h>

#include "kvsim/deploy.h"

Test(deploy, pareto_front_keeps_the_undominated_points) {
  /* (tokens/s per user, tokens/s per GPU) */
  const double x[] = {10, 20, 30, 15, 20, NAN, 5};
  const double y[] = {300, 200, 100, 150, 200, 999, 300};
  bool on[7];
  int n = kvsim_pareto_front(x, y, 7, on);
  cr_assert_eq(n, 4, "four on the frontier (got %d)", n);
  cr_assert(on[0] && on[1] && on[2] && on[4], "10/300, 20/200 twice and 30/100 are on it");
  cr_assert(!on[3], "15/150 is dominated by 20/200");
  cr_assert(!on[5], "a NAN point is never on it");
  cr_assert(!on[6], "5/300 is dominated by 10/300 (as good on y, better on x)");
  cr_assert_eq(kvsim_pareto_front(x, y, 0, on), 0, "no point, no frontier");
}

Test(deploy, vllm_serve_line_carries_every_setting) {
  kvsim_serve_args_t a = {KVSIM_PLAN_V1,
                          "meta-llama/Llama-3.1-70B-Instruct",
                          4,
                          256,
                          8192,
                          8192,
                          "fp8",
                          "fp8",
                          0.9,
                          KVSIM_SERVE_ROLE_NONE};
  char buf[1024];
  cr_assert_eq(kvsim_serve_command(&a, buf, sizeof buf), 0, "vLLM has a command");
  cr_assert_str_eq(buf,
                   "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4 "
                   "--max-num-seqs 256 --max-num-batched-tokens 8192 --kv-cache-dtype fp8 "
                   "--quantization fp8 --gpu-memory-utilization 0.9 --max-model-len 8192",
                   "got %s", buf);
  snprintf(a.quantization, sizeof a.quantization, "none");
  kvsim_serve_command(&a, buf, sizeof buf);
  cr_assert_null(strstr(buf, "--quantization"), "no --quantization for none: %s", buf);
}

Test(deploy, sglang_launch_line_uses_its_own_flags) {
  kvsim_serve_args_t a = {
      KVSIM_PLAN_SGLANG,    "Qwen/Qwen3-32B", 2, 128, 4096, 32768, "fp8", "", 0.85,
      KVSIM_SERVE_ROLE_NONE};
  char buf[1024];
  cr_assert_eq(kvsim_serve_command(&a, buf, sizeof buf), 0, "SGLang has a command");
  cr_assert_str_eq(buf,
                   "python -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp-size 2 "
                   "--max-running-requests 128 --chunked-prefill-size 4096 --kv-cache-dtype fp8_e4m3 "
                   "--mem-fraction-static 0.85 --context-length 32768",
                   "got %s", buf);
  a.engine = KVSIM_PLAN_TGI;
  cr_assert_eq(kvsim_serve_command(&a, buf, sizeof buf), KVSIM_EINVAL, "TGI: none");
  cr_assert(strstr(buf, "no serve command"), "says why: %s", buf);
}

static int parse(const char *text, kvsim_deploy_space_t *s, kvsim_err *err) {
  cJSON *j = cJSON_Parse(text);
  cr_assert_not_null(j, "test JSON parses");
  int rc = kvsim_deploy_space_parse(j, "s.json: search", s, err);
  cJSON_Delete(j);
  return rc;
}

Test(deploy, space_spans_every_combination_gpu_outermost) {
  kvsim_deploy_space_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("{\"gpus\": [\"h100\", \"l40s\"], \"tensor_parallel_size\": [2, 4],"
                     " \"kv_cache_dtype\": [\"auto\", \"fp8\"]}",
                     &s, &err),
               0, "%s", err.msg);
  cr_assert_str_eq(s.gpus[0], "h100-sxm", "loose GPU names map onto the catalog");
  cr_assert_eq(kvsim_deploy_space_count(&s), 8, "2 x 2 x 2");
  cr_assert_eq(s.max_replicas, 32, "default max_replicas");
  kvsim_deploy_config_t c;
  kvsim_deploy_space_config(&s, 5, &c);
  cr_assert(!strcmp(c.gpu, "l40s") && c.tp == 2 && !strcmp(c.kv_cache_dtype, "fp8"),
            "config 5 = l40s TP2 fp8 (got %s TP%d %s)", c.gpu, c.tp, c.kv_cache_dtype);
  cr_assert_eq(c.max_num_seqs, 0, "a list left out is the scenario's value");
}

Test(deploy, a_bad_block_names_its_key) {
  kvsim_deploy_space_t s;
  kvsim_err err = {0};
  const struct {
    const char *text, *want;
  } bad[] = {
      {"{\"gpus\": [\"l4\"], \"tp\": [1]}", "search.tp: unknown key"},
      {"{\"tensor_parallel_size\": [1]}", "missing key 'gpus'"},
      {"{\"gpus\": []}", "search.gpus: expected a non-empty list"},
      {"{\"gpus\": [\"l4\"], \"max_num_seqs\": [0]}", "search.max_num_seqs[0]: expected an integer in [1, 65536]"},
      {"{\"gpus\": [\"l4\"], \"tensor_parallel_size\": [2, 2]}", "tensor_parallel_size[1]: 2 is given twice"},
      {"{\"gpus\": [\"l4\", \"L4\"]}", "search.gpus[1]: l4 is given twice"},
      {"{\"gpus\": [\"l4\"], \"max_replicas\": 0.5}", "search.max_replicas: expected an integer"},
      {"{\"gpus\": [\"l4\"], \"kv_cache_dtype\": [1]}", "search.kv_cache_dtype[0]: expected a name"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err = (kvsim_err){0};
    cr_assert_eq(parse(bad[i].text, &s, &err), KVSIM_EINVAL, "%s refused", bad[i].text);
    cr_assert(strstr(err.msg, bad[i].want), "%s: want '%s', got '%s'", bad[i].text, bad[i].want, err.msg);
  }
}

static void row(kvsim_deploy_row_t *r, double cost, int replicas, int tp, double margin, double tok) {
  memset(r, 0, sizeof *r);
  r->best = 0;
  r->npoints = 1;
  r->points[0].replicas = replicas;
  r->points[0].meets = true;
  r->points[0].output_tokens_per_s = tok;
  r->gpus_per_replica = tp;
  r->cost_per_hour = cost;
  r->margin = margin;
}

Test(deploy, cheaper_by_cost_then_gpus_then_margin) {
  kvsim_deploy_row_t a, b;
  row(&a, 10, 1, 4, 0.1, 2000);
  row(&b, 10.5, 3, 1, 0.5, 2000);
  cr_assert(kvsim_deploy_cheaper(&a, &b) && !kvsim_deploy_cheaper(&b, &a), "$10 before $10.50");
  row(&b, 10, 2, 2, 0.3, 2000);
  cr_assert(kvsim_deploy_cheaper(&b, &a), "same price, same 4 GPUs: the larger margin (0.3 > 0.1)");
  row(&b, 10, 1, 4, 0.1, 2001);
  cr_assert(kvsim_deploy_cheaper(&b, &a), "then the higher throughput per GPU");
  row(&a, NAN, 1, 2, 0.1, 2000);
  row(&b, NAN, 1, 4, 0.9, 2000);
  cr_assert(kvsim_deploy_cheaper(&a, &b), "no prices: the fewer GPUs first");
  row(&b, 5, 1, 4, 0.9, 2000);
  cr_assert(kvsim_deploy_cheaper(&b, &a), "a known price before an unknown one");
}

/* The disaggregated layouts: the aggregated configurations first, as
 * before, then GPU x settings x prefill x decode x prefill TP x decode TP. */
Test(deploy, disaggregated_layouts_follow_the_aggregated_configurations) {
  kvsim_deploy_space_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("{\"gpus\": [\"h100\", \"h200\"], \"tensor_parallel_size\": [4, 8],"
                     " \"disaggregation\": {\"prefill\": {\"replicas\": [1, 2], "
                     "\"tensor_parallel_size\": [4]},"
                     " \"decode\": {\"replicas\": [1, 2, 3], \"tensor_parallel_size\": [4, 8]}}}",
                     &s, &err),
               0, "%s", err.msg);
  cr_assert(s.disagg, "the block turns the layouts on");
  cr_assert_eq(kvsim_deploy_space_count_aggregated(&s), 4, "2 GPUs x 2 TPs");
  cr_assert_eq(kvsim_deploy_space_count(&s), 4 + 2 * 2 * 3 * 1 * 2, "and 2 GPUs x 12 layouts");
  kvsim_deploy_config_t c;
  kvsim_deploy_space_config(&s, 3, &c);
  cr_assert(!c.disagg && c.tp == 8 && !strcmp(c.gpu, "h200"), "config 3: the last aggregated one");
  kvsim_deploy_space_config(&s, 4, &c);
  cr_assert(c.disagg && c.tp == 0 && !strcmp(c.gpu, "h100-sxm") && c.prefill_replicas == 1 &&
                c.decode_replicas == 1 && c.prefill_tp == 4 && c.decode_tp == 4,
            "config 4: h100 1P TP4 : 1D TP4 (got %s %dP TP%d : %dD TP%d)", c.gpu,
            c.prefill_replicas, c.prefill_tp, c.decode_replicas, c.decode_tp);
  kvsim_deploy_space_config(&s, 4 + 5, &c);
  cr_assert(c.prefill_replicas == 1 && c.decode_replicas == 3 && c.decode_tp == 8,
            "decode TP innermost, then decode replicas (got %dP : %dD TP%d)", c.prefill_replicas,
            c.decode_replicas, c.decode_tp);
  kvsim_deploy_space_config(&s, 4 + 12, &c);
  cr_assert(!strcmp(c.gpu, "h200") && c.prefill_replicas == 1 && c.decode_replicas == 1,
            "GPU outermost: the 13th layout is the second GPU's first");
  kvsim_deploy_space_config(&s, 4 + 23, &c);
  cr_assert(!strcmp(c.gpu, "h200") && c.prefill_replicas == 2 && c.decode_replicas == 3 &&
                c.decode_tp == 8,
            "the last one");
  /* Lists left out are the scenario's values (0). */
  cr_assert_eq(parse("{\"gpus\": [\"l4\"], \"disaggregation\": {}}", &s, &err), 0, "%s", err.msg);
  cr_assert_eq(kvsim_deploy_space_count(&s), 2, "one aggregated, one disaggregated");
  kvsim_deploy_space_config(&s, 1, &c);
  cr_assert(c.disagg && !c.prefill_replicas && !c.decode_replicas && !c.prefill_tp && !c.decode_tp,
            "the scenario's unit");
  /* Without the block the space is what it was. */
  cr_assert_eq(parse("{\"gpus\": [\"l4\"], \"tensor_parallel_size\": [1, 2]}", &s, &err), 0, "%s",
               err.msg);
  cr_assert(!s.disagg && kvsim_deploy_space_count(&s) == 2 &&
                kvsim_deploy_space_count_aggregated(&s) == 2,
            "no layouts");
}

Test(deploy, a_unit_with_a_common_factor_is_left_to_the_smaller_one) {
  kvsim_deploy_space_t s;
  kvsim_err err = {0};
  cr_assert_eq(
      parse("{\"gpus\": [\"l4\"], \"disaggregation\": {\"prefill\": {\"replicas\": [1, 2]},"
            " \"decode\": {\"replicas\": [1, 2, 4]}}}",
            &s, &err),
      0, "%s", err.msg);
  int p, d;
  cr_assert(kvsim_deploy_unit_covered(&s, 2, 2, &p, &d) && p == 1 && d == 1, "2P:2D = 2 x 1P:1D");
  cr_assert(kvsim_deploy_unit_covered(&s, 2, 4, &p, &d) && p == 1 && d == 2, "2P:4D = 2 x 1P:2D");
  cr_assert(!kvsim_deploy_unit_covered(&s, 1, 4, &p, &d) && p == 1 && d == 4, "1P:4D is its own");
  cr_assert(!kvsim_deploy_unit_covered(&s, 2, 1, &p, &d), "2P:1D is its own");
  /* The smaller unit must be searched too: 2P:2D alone runs. */
  cr_assert_eq(parse("{\"gpus\": [\"l4\"], \"disaggregation\": {\"prefill\": {\"replicas\": [2]},"
                     " \"decode\": {\"replicas\": [2]}}}",
                     &s, &err),
               0, "%s", err.msg);
  cr_assert(!kvsim_deploy_unit_covered(&s, 2, 2, &p, &d) && p == 2 && d == 2,
            "no 1P:1D to leave it to");
  char name[64];
  kvsim_deploy_unit_name(2, 4, 3, 8, name, sizeof name);
  cr_assert_str_eq(name, "2P TP4 : 3D TP8");
}

Test(deploy, a_bad_disaggregation_block_names_its_key) {
  kvsim_deploy_space_t s;
  kvsim_err err = {0};
  const struct {
    const char *text, *want;
  } bad[] = {
      {"{\"gpus\": [\"l4\"], \"disaggregation\": [1]}",
       "search.disaggregation: expected an object"},
      {"{\"gpus\": [\"l4\"], \"disaggregation\": {\"prefil\": {}}}",
       "search.disaggregation.prefil: unknown key (did you mean 'prefill'?)"},
      {"{\"gpus\": [\"l4\"], \"disaggregation\": {\"decode\": 2}}",
       "search.disaggregation.decode: expected an object"},
      {"{\"gpus\": [\"l4\"], \"disaggregation\": {\"decode\": {\"tp\": [1]}}}",
       "search.disaggregation.decode.tp: unknown key"},
      {"{\"gpus\": [\"l4\"], \"disaggregation\": {\"prefill\": {\"replicas\": [0]}}}",
       "search.disaggregation.prefill.replicas[0]: expected an integer in [1, 64]"},
      {"{\"gpus\": [\"l4\"], \"disaggregation\": {\"prefill\": {\"replicas\": []}}}",
       "search.disaggregation.prefill.replicas: expected a non-empty list"},
      {"{\"gpus\": [\"l4\"], \"disaggregation\": {\"decode\": {\"tensor_parallel_size\": [4, 4]}}}",
       "search.disaggregation.decode.tensor_parallel_size[1]: 4 is given twice"},
      {"{\"gpus\": [\"l4\"], \"disaggregation\": {\"decode\": {\"tensor_parallel_size\": [65]}}}",
       "search.disaggregation.decode.tensor_parallel_size[0]: expected an integer in [1, 64]"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err = (kvsim_err){0};
    cr_assert_eq(parse(bad[i].text, &s, &err), KVSIM_EINVAL, "%s refused", bad[i].text);
    cr_assert(strstr(err.msg, bad[i].want), "%s: want '%s', got '%s'", bad[i].text, bad[i].want,
              err.msg);
  }
}

/* A disaggregated row: one unit of p prefill and d decode instances of TP tp. */
static void unit_row(kvsim_deploy_row_t *r, double cost, int units, int p, int d, int tp,
                     double margin) {
  row(r, cost, units, (p + d) * tp, margin, 2000);
  r->cfg.disagg = true;
  r->cfg.prefill_replicas = p;
  r->cfg.decode_replicas = d;
  r->cfg.prefill_tp = r->cfg.decode_tp = tp;
  kvsim_serve_args_t a = {KVSIM_PLAN_V1, "m/M",  tp, 256, 8192,
                          8192,          "auto", "", 0.9, KVSIM_SERVE_ROLE_PREFILL};
  r->side[0] = a;
  a.role = KVSIM_SERVE_ROLE_DECODE;
  r->side[1] = r->serve = a;
}

Test(deploy, choose_ranks_aggregated_and_disaggregated_by_cost) {
  kvsim_deploy_space_t s;
  kvsim_err err = {0};
  cr_assert_eq(parse("{\"gpus\": [\"h100\"], \"disaggregation\": {}}", &s, &err), 0, "%s", err.msg);
  kvsim_deploy_row_t rows[4];
  row(&rows[0], 50, 5, 4, 0.2, 2000); /* aggregated: 5 x TP4, $50 */
  snprintf(rows[0].cfg.gpu, sizeof rows[0].cfg.gpu, "h100-sxm");
  rows[0].serve =
      (kvsim_serve_args_t){KVSIM_PLAN_V1, "m/M", 4, 256, 8192, 8192, "auto", "", 0.9, 0};
  unit_row(&rows[1], 60, 3, 1, 1, 4, 0.3); /* 3 x 1P:1D, $60 */
  unit_row(&rows[2], 45, 3, 2, 1, 2, 0.1); /* 3 x 2P:1D TP2, $45 */
  unit_row(&rows[3], 40, 1, 1, 1, 4, 0.1); /* never met */
  rows[3].best = -1;
  for (int i = 1; i < 4; i++)
    snprintf(rows[i].cfg.gpu, sizeof rows[i].cfg.gpu, "h100-sxm");
  kvsim_deploy_result_t res = {.rows = rows, .n = 4};
  kvsim_deploy_choose(&s, &res);
  cr_assert_eq(res.cheapest_aggregated, 0, "the one aggregated row");
  cr_assert_eq(res.cheapest_disaggregated, 2,
               "$45 before $60; the row that never met is no answer");
  cr_assert_eq(res.winner, 2, "the disaggregated $45 wins over the aggregated $50");
  cr_assert_eq(res.cheapest[0], 2, "and is the GPU's cheapest");
  cr_assert_eq(res.simulations, 4, "every row's points counted");
  cr_assert(res.winner_has_command, "vLLM has a command");
  cr_assert(strstr(res.winner_command,
                   "# prefill: 2 instance(s) a unit\nvllm serve m/M --tensor-parallel-size 2") &&
                strstr(res.winner_command, "\n# decode: 1 instance(s) a unit\nvllm serve m/M"),
            "both sides' lines, each named: %s", res.winner_command);
  cr_assert(
      strstr(res.winner_command,
             "--kv-transfer-config '{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}'"),
      "with the connector: %s", res.winner_command);
  /* The aggregated row cheaper: it wins, with its one line. */
  rows[0].cost_per_hour = 40;
  kvsim_deploy_choose(&s, &res);
  cr_assert(res.winner == 0 && res.cheapest_disaggregated == 2, "the aggregated $40 wins");
  cr_assert_null(strchr(res.winner_command, '\n'), "one line: %s", res.winner_command);
  cr_assert_null(strstr(res.winner_command, "--kv-transfer-config"),
                 "no connector when aggregated");
}

Test(deploy, sglang_sides_name_their_disaggregation_mode) {
  kvsim_serve_args_t a = {KVSIM_PLAN_SGLANG,       "m/M", 4, 128, 8192, 8192, "auto", "", 0.85,
                          KVSIM_SERVE_ROLE_PREFILL};
  char buf[1024];
  cr_assert_eq(kvsim_serve_command(&a, buf, sizeof buf), 0, "SGLang has a command");
  cr_assert(
      strstr(buf, " --disaggregation-mode prefill --disaggregation-transfer-backend mooncake"),
      "%s", buf);
  a.role = KVSIM_SERVE_ROLE_DECODE;
  kvsim_serve_command(&a, buf, sizeof buf);
  cr_assert(strstr(buf, " --disaggregation-mode decode"), "%s", buf);
  a.role = KVSIM_SERVE_ROLE_NONE;
  kvsim_serve_command(&a, buf, sizeof buf);
  cr_assert_null(strstr(buf, "--disaggregation"), "none for an aggregated instance: %s", buf);
}
