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
  kvsim_serve_args_t a = {KVSIM_PLAN_V1, "meta-llama/Llama-3.1-70B-Instruct", 4, 256, 8192, 8192,
                          "fp8", "fp8", 0.9};
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
  kvsim_serve_args_t a = {KVSIM_PLAN_SGLANG, "Qwen/Qwen3-32B", 2, 128, 4096, 32768, "fp8", "", 0.85};
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
