/* Workload: the synthetic generator (arrivals, lengths, prefix structure,
 * sessions, closed loop, tenants, priorities) and its determinism. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kvsim/workload.h"
#include "workload/wl.h"

static kvsim_workload_cfg_t *syn(const char *json) {
  cJSON *j = cJSON_Parse(json);
  cr_assert(j, "test JSON must parse: %s", json);
  kvsim_workload_cfg_t *cfg = NULL;
  kvsim_err err = {0};
  int rc = kvsim_workload_parse(j, NULL, "w", &cfg, &err);
  cJSON_Delete(j);
  cr_assert_eq(rc, 0, "workload should parse: %s (%s)", err.msg, json);
  return cfg;
}

static kvsim_source_t *open_src(const kvsim_workload_cfg_t *cfg, uint64_t seed) {
  kvsim_source_t *s = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_source_open(cfg, seed, &s, &err), 0, "opens: %s", err.msg);
  return s;
}

/* Drains an open-loop source (no feedback), hashing the stream. */
static uint64_t drain_hash(const kvsim_workload_cfg_t *cfg, uint64_t seed, int64_t *n) {
  kvsim_source_t *s = open_src(cfg, seed);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  uint64_t h = 1469598103934665603ull;
  *n = 0;
  int rc;
  while ((rc = kvsim_source_next(s, &sp, &err)) == KVSIM_SOURCE_REQUEST) {
    uint64_t v[] = {(uint64_t)sp.arrival, (uint64_t)sp.prompt_tokens,
                    (uint64_t)sp.output_tokens, (uint64_t)sp.tenant, (uint64_t)sp.priority};
    for (size_t i = 0; i < 5; i++)
      h = (h ^ v[i]) * 1099511628211ull;
    for (int32_t i = 0; i < sp.num_segments; i++)
      h = (h ^ sp.segments[i].id ^ (uint64_t)sp.segments[i].len) * 1099511628211ull;
    (*n)++;
  }
  cr_assert_eq(rc, KVSIM_SOURCE_END, "open loop ends: rc %d", rc);
  kvsim_source_close(s);
  return h;
}

#define RICH                                                                                  \
  "{\"synthetic\": {\"requests\": 3000, \"arrival\": {\"process\": \"gamma\", \"rate\": 5, "   \
  "\"cv\": 2}, \"prompt_tokens\": {\"dist\": \"lognormal\", \"mean\": 800, \"sigma\": 0.8}, "  \
  "\"output_tokens\": {\"dist\": \"uniform\", \"min\": 10, \"max\": 300}, \"prefix\": "        \
  "{\"shared_tokens\": 100, \"groups\": 5, \"popularity\": \"zipf\"}, \"tenants\": "           \
  "{\"count\": 3}, \"priority\": {\"levels\": 2, \"weights\": [0.2, 0.8]}}}"

Test(workload_synth, same_seed_same_stream_other_seed_other_stream) {
  kvsim_workload_cfg_t *cfg = syn(RICH);
  int64_t n1, n2, n3;
  uint64_t a = drain_hash(cfg, 7, &n1), b = drain_hash(cfg, 7, &n2), c = drain_hash(cfg, 8, &n3);
  cr_assert_eq(n1, 3000, "requests = 3000, got %lld", (long long)n1);
  cr_assert_eq(a, b, "same seed, same stream");
  cr_assert_neq(a, c, "different seed, different stream");
  kvsim_workload_cfg_free(cfg);
}

static double mean_of(const char *dist_json, int64_t *mn, int64_t *mx) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"synthetic\": {\"requests\": 40000, \"arrival\": {\"process\": \"constant\", "
           "\"rate\": 1000}, \"prompt_tokens\": %s, \"output_tokens\": 1}}",
           dist_json);
  kvsim_workload_cfg_t *cfg = syn(json);
  kvsim_source_t *s = open_src(cfg, 42);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  double sum = 0;
  int64_t n = 0;
  *mn = INT64_MAX;
  *mx = 0;
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    sum += (double)sp.prompt_tokens;
    n++;
    if (sp.prompt_tokens < *mn)
      *mn = sp.prompt_tokens;
    if (sp.prompt_tokens > *mx)
      *mx = sp.prompt_tokens;
  }
  cr_assert_eq(n, 40000, "all requests");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
  return sum / (double)n;
}

Test(workload_synth, distribution_means_and_caps) {
  int64_t mn, mx;
  double m = mean_of("{\"dist\": \"fixed\", \"value\": 256}", &mn, &mx);
  cr_assert(mn == 256 && mx == 256, "fixed is fixed: %lld..%lld", (long long)mn, (long long)mx);
  m = mean_of("{\"dist\": \"uniform\", \"min\": 100, \"max\": 300}", &mn, &mx);
  cr_assert(fabs(m - 200) < 2, "uniform mean 200, got %.2f", m);
  cr_assert(mn == 100 && mx == 300, "inclusive bounds reached: %lld..%lld", (long long)mn,
            (long long)mx);
  m = mean_of("{\"dist\": \"normal\", \"mean\": 1000, \"std\": 100}", &mn, &mx);
  cr_assert(fabs(m - 1000) < 3, "normal mean 1000, got %.2f", m);
  m = mean_of("{\"dist\": \"lognormal\", \"mean\": 1000, \"sigma\": 0.8}", &mn, &mx);
  cr_assert(fabs(m - 1000) < 20, "lognormal mean is the lengths' mean: 1000, got %.2f", m);
  m = mean_of("{\"dist\": \"lognormal\", \"mean\": 1000, \"sigma\": 0.8, \"max\": 1500, "
              "\"min\": 200}",
              &mn, &mx);
  cr_assert(mn >= 200 && mx <= 1500, "caps hold: %lld..%lld", (long long)mn, (long long)mx);
  cr_assert(m < 1000, "capping the tail lowers the mean: %.2f", m);
  /* Zipf over 1..100 with s = 1.2: mean = H(100, 0.2) / H(100, 1.2). */
  double num = 0, den = 0;
  for (int k = 1; k <= 100; k++) {
    num += pow(k, -0.2);
    den += pow(k, -1.2);
  }
  m = mean_of("{\"dist\": \"zipf\", \"s\": 1.2, \"max\": 100}", &mn, &mx);
  cr_assert(fabs(m - num / den) < 0.05 * num / den, "zipf mean %.3f, want %.3f", m, num / den);
  cr_assert(mn == 1 && mx <= 100, "zipf support 1..max: %lld..%lld", (long long)mn,
            (long long)mx);
  m = mean_of("{\"dist\": \"normal\", \"mean\": 2, \"std\": 50}", &mn, &mx);
  cr_assert(mn >= 1, "lengths are >= 1 even when the normal goes negative: %lld", (long long)mn);
}

static void arrivals(const char *arrival_json, int n, double *mean, double *cv) {
  char json[1024];
  snprintf(json, sizeof json,
           "{\"synthetic\": {\"requests\": %d, \"arrival\": %s, \"prompt_tokens\": 10, "
           "\"output_tokens\": 10}}",
           n, arrival_json);
  kvsim_workload_cfg_t *cfg = syn(json);
  kvsim_source_t *s = open_src(cfg, 3);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  double sum = 0, sq = 0;
  kvsim_time_ns prev = -1;
  int k = 0;
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    if (prev >= 0) {
      cr_assert_geq(sp.arrival, prev, "arrivals never go back");
      double g = kvsim_time_to_s(sp.arrival - prev);
      sum += g;
      sq += g * g;
      k++;
    } else {
      cr_assert_eq(sp.arrival, 0, "the first request at t = 0");
    }
    prev = sp.arrival;
  }
  *mean = sum / k;
  double var = sq / k - *mean * *mean;
  *cv = sqrt(var > 0 ? var : 0) / *mean;
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, arrival_processes_have_their_rate_and_cv) {
  double m, cv;
  arrivals("{\"process\": \"poisson\", \"rate\": 4}", 40000, &m, &cv);
  cr_assert(fabs(m - 0.25) < 0.005, "poisson mean gap 0.25 s, got %.4f", m);
  cr_assert(fabs(cv - 1) < 0.03, "poisson CV 1, got %.3f", cv);
  arrivals("{\"process\": \"gamma\", \"rate\": 4, \"cv\": 3}", 40000, &m, &cv);
  cr_assert(fabs(m - 0.25) < 0.015, "gamma mean gap 0.25 s, got %.4f", m);
  cr_assert(fabs(cv - 3) < 0.25, "gamma CV 3, got %.3f", cv);
  arrivals("{\"process\": \"constant\", \"rate\": 3}", 3001, &m, &cv);
  cr_assert(fabs(m - 1.0 / 3) < 1e-9, "constant gap 1/3 s, got %.9f", m);
  cr_assert(cv < 1e-6, "constant CV 0, got %g", cv);
}

Test(workload_synth, bursts_and_diurnal_follow_their_rate) {
  /* 20 req/s for 10 s in every 100 s, 1 req/s otherwise: 290 per period. */
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"duration_s\": 1000, \"arrival\": {\"process\": \"bursts\", \"rate\": 1,"
      " \"burst_rate\": 20, \"burst_s\": 10, \"period_s\": 100}, \"prompt_tokens\": 1, "
      "\"output_tokens\": 1}}");
  kvsim_source_t *s = open_src(cfg, 5);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int64_t in_burst = 0, n = 0;
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    cr_assert_leq(sp.arrival, 1000 * KVSIM_NS_PER_S, "duration_s stops the process");
    in_burst += fmod(kvsim_time_to_s(sp.arrival), 100) < 10;
    n++;
  }
  cr_assert(fabs((double)n - 2900) < 200, "about 2,900 requests, got %lld", (long long)n);
  cr_assert(fabs((double)in_burst - 2000) < 150, "about 2,000 in bursts, got %lld",
            (long long)in_burst);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);

  cfg = syn("{\"synthetic\": {\"duration_s\": 86400, \"arrival\": {\"process\": \"diurnal\", "
            "\"rate\": 0.5, \"amplitude\": 0.8}, \"prompt_tokens\": 1, \"output_tokens\": 1}}");
  s = open_src(cfg, 5);
  int64_t first_half = 0;
  n = 0;
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    first_half += sp.arrival < 43200 * KVSIM_NS_PER_S;
    n++;
  }
  /* rate(t) = 0.5 (1 + 0.8 sin(2 pi t / day)): the first half-day holds
   * (1 + 1.6/pi) / 2 = 75.5 % of the 43,200 expected requests. */
  cr_assert(fabs((double)n - 43200) < 800, "about 43,200 a day, got %lld", (long long)n);
  cr_assert(fabs((double)first_half / (double)n - 0.755) < 0.01, "day/night split %.3f",
            (double)first_half / (double)n);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, shared_prefix_groups_and_zipf_popularity) {
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"requests\": 5000, \"arrival\": {\"process\": \"poisson\", \"rate\": "
      "10}, \"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 10, \"max\": 50}, "
      "\"output_tokens\": 8, \"prefix\": {\"shared_tokens\": 2000, \"groups\": 4, "
      "\"popularity\": \"zipf\", \"zipf_s\": 1.5}}}");
  kvsim_source_t *s = open_src(cfg, 9);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int64_t count[4] = {0};
  uint64_t last_user = 0;
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    cr_assert_eq(sp.num_segments, 2, "system prompt + own text");
    uint64_t g = sp.segments[0].id & ~KVSIM__SEG_GROUP;
    cr_assert_eq(sp.segments[0].id & KVSIM__SEG_GROUP, KVSIM__SEG_GROUP, "group id space");
    cr_assert_lt(g, 4, "group in range");
    cr_assert_eq(sp.segments[0].len, 2000, "shared_tokens");
    cr_assert_eq(sp.prompt_tokens, 2000 + sp.segments[1].len, "prompt = shared + own");
    cr_assert(sp.segments[1].len >= 10 && sp.segments[1].len <= 50, "own text from the dist");
    cr_assert_neq(sp.segments[1].id, last_user, "own text is unique");
    last_user = sp.segments[1].id;
    count[g]++;
  }
  cr_assert(count[0] > count[1] && count[1] > count[2] && count[2] > count[3],
            "zipf: group 0 most popular: %lld %lld %lld %lld", (long long)count[0],
            (long long)count[1], (long long)count[2], (long long)count[3]);
  cr_assert_eq(kvsim_workload_max_total_tokens(cfg), 2000 + 50 + 8, "bound: shared + max + out");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, few_shot_templates_follow_the_system_prompt) {
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"requests\": 500, \"arrival\": {\"process\": \"poisson\", \"rate\": "
      "10}, \"prompt_tokens\": 20, \"output_tokens\": 8, \"prefix\": {\"shared_tokens\": 100}, "
      "\"few_shot\": {\"templates\": 3, \"tokens\": {\"dist\": \"uniform\", \"min\": 300, "
      "\"max\": 900}}}}");
  kvsim_source_t *s = open_src(cfg, 9);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int64_t len_of[3] = {0};
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    cr_assert_eq(sp.num_segments, 3, "system + template + question");
    cr_assert_eq(sp.segments[1].id & KVSIM__SEG_TEMPLATE, KVSIM__SEG_TEMPLATE, "template ids");
    uint64_t t = sp.segments[1].id & ~KVSIM__SEG_TEMPLATE;
    cr_assert_lt(t, 3, "template in range");
    if (!len_of[t])
      len_of[t] = sp.segments[1].len;
    cr_assert_eq(sp.segments[1].len, len_of[t], "a template always has the same length");
    cr_assert_eq(sp.prompt_tokens, 100 + len_of[t] + 20, "prompt = system + template + own");
  }
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, tenants_and_priority_draws) {
  kvsim_workload_cfg_t *cfg = syn(RICH);
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int64_t prio0 = 0, n = 0, tenants[3] = {0};
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    cr_assert(sp.tenant >= 0 && sp.tenant < 3, "tenant in range: %d", sp.tenant);
    cr_assert(sp.priority == 0 || sp.priority == 1, "priority level in range: %d", sp.priority);
    prio0 += sp.priority == 0;
    tenants[sp.tenant]++;
    n++;
  }
  cr_assert(fabs((double)prio0 / (double)n - 0.2) < 0.03, "weights [0.2, 0.8]: %.3f",
            (double)prio0 / (double)n);
  for (int t = 0; t < 3; t++)
    cr_assert(tenants[t] > 800, "uniform tenants: %lld", (long long)tenants[t]);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, lengths_from_file_samples_rows_jointly) {
  char p[256];
  snprintf(p, sizeof p, "/tmp/kvsim_wl_%ld_len.csv", (long)getpid());
  FILE *f = fopen(p, "w");
  cr_assert(f, "temp file");
  fputs("num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"
        "100,1,101,100\n200,2,202,100\n300,3,303,100\n",
        f);
  fclose(f);
  char json[512];
  snprintf(json, sizeof json,
           "{\"synthetic\": {\"requests\": 3000, \"arrival\": {\"process\": \"poisson\", "
           "\"rate\": 1}, \"lengths_from\": {\"file\": \"%s\"}}}",
           p);
  kvsim_workload_cfg_t *cfg = syn(json);
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int64_t seen[4] = {0};
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    cr_assert_eq(sp.prompt_tokens, 100 * sp.output_tokens, "pairs stay together: %lld/%lld",
                 (long long)sp.prompt_tokens, (long long)sp.output_tokens);
    cr_assert(sp.output_tokens >= 1 && sp.output_tokens <= 3, "from the file");
    seen[sp.output_tokens]++;
  }
  for (int i = 1; i <= 3; i++)
    cr_assert(seen[i] > 850, "every row sampled about a third of the time: %lld",
              (long long)seen[i]);
  cr_assert_eq(kvsim_workload_max_total_tokens(cfg), 303, "largest row");
  remove(p);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, closed_loop_clients_wait_for_feedback) {
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"requests\": 7, \"arrival\": {\"process\": \"closed_loop\", "
      "\"clients\": 3, \"think_s\": 0.5}, \"prompt_tokens\": 128, \"output_tokens\": 64}}");
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp, held[3];
  kvsim_err err = {0};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "client %d starts", i);
    cr_assert_eq(sp.arrival, 0, "all clients start at 0");
    cr_assert_eq(sp.client, i, "client index");
    cr_assert_eq(sp.prompt_tokens, 128, "fixed isl");
    held[i] = sp;
  }
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_BLOCKED,
               "no more until one finishes (concurrency = clients)");
  kvsim_time_ns t = 2 * KVSIM_NS_PER_S;
  cr_assert_eq(kvsim_source_on_finish(s, &held[1], t, 64), 1, "a new request became known");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "client 1 goes on");
  cr_assert_eq(sp.client, 1, "the same client");
  cr_assert_eq(sp.arrival, t + KVSIM_NS_PER_S / 2, "think_s after the finish");
  cr_assert_eq(sp.id, 3, "ids go on");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_BLOCKED, "blocked again");
  /* Drain to the cap, finishing the oldest outstanding request each time:
   * 7 requests in all. */
  kvsim_req_spec_t q[16] = {held[0], held[2], sp};
  int head = 0, tail = 3, total = 4, rc = KVSIM_SOURCE_BLOCKED;
  while (head < tail) {
    kvsim_req_spec_t done = q[head++];
    int more = kvsim_source_on_finish(s, &done, t + head, 64);
    rc = kvsim_source_next(s, &sp, &err);
    if (rc == KVSIM_SOURCE_REQUEST) {
      cr_assert_eq(more, 1, "on_finish said a request became known");
      cr_assert_eq(sp.client, done.client, "the finishing client sends the next one");
      q[tail++] = sp;
      total++;
    }
  }
  cr_assert_eq(rc, KVSIM_SOURCE_END, "the cap ends the stream (rc %d)", rc);
  cr_assert_eq(total, 7, "requests caps the total, got %d", total);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, sessions_extend_the_previous_turn) {
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"requests\": 100, \"arrival\": {\"process\": \"poisson\", \"rate\": "
      "0.001}, \"prompt_tokens\": 50, \"output_tokens\": 20, \"prefix\": {\"shared_tokens\": "
      "300}, \"sessions\": {\"turns\": 3, \"think_s\": 4, \"user_tokens\": 10}}}");
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "turn 0");
  cr_assert_eq(sp.turn, 0, "turn 0");
  cr_assert_eq(sp.session, 0, "session 0");
  cr_assert_eq(sp.num_segments, 2, "system prompt + first question");
  cr_assert_eq(sp.prompt_tokens, 350, "300 + 50");
  kvsim_segment_t t0[2];
  memcpy(t0, sp.segments, sizeof t0);
  kvsim_req_spec_t first = sp;
  /* The next session starts ~1000 s later: turn 1 comes before it. */
  kvsim_time_ns fin = 7 * KVSIM_NS_PER_S;
  cr_assert_eq(kvsim_source_on_finish(s, &first, fin, 17), 1, "turn 1 became known");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "turn 1");
  cr_assert_eq(sp.session, 0, "same session");
  cr_assert_eq(sp.turn, 1, "turn 1");
  cr_assert_eq(sp.arrival, fin + 4 * KVSIM_NS_PER_S, "think_s after turn 0 finished");
  cr_assert_eq(sp.num_segments, 4, "previous prompt, answer, new text");
  cr_assert(sp.segments[0].id == t0[0].id && sp.segments[1].id == t0[1].id,
            "starts with turn 0's segments");
  cr_assert_eq(sp.segments[2].id, kvsim_output_segment_id(first.id), "then turn 0's answer");
  cr_assert_eq(sp.segments[2].len, 17, "of the generated length");
  cr_assert_eq(sp.segments[3].len, 10, "then new user text (user_tokens)");
  cr_assert_eq(sp.prompt_tokens, 350 + 17 + 10, "prompt = sum of segments");
  kvsim_req_spec_t second = sp;
  cr_assert_eq(kvsim_source_on_finish(s, &second, fin + 9 * KVSIM_NS_PER_S, 20), 1, "turn 2");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "turn 2");
  cr_assert_eq(sp.turn, 2, "turn 2");
  cr_assert_eq(sp.num_segments, 6, "grows by answer + text");
  cr_assert_eq(sp.segments[4].id, kvsim_output_segment_id(second.id), "turn 1's answer");
  kvsim_req_spec_t third = sp;
  cr_assert_eq(kvsim_source_on_finish(s, &third, fin + 20 * KVSIM_NS_PER_S, 20), 0,
               "3 turns: the session is over");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "the next session");
  cr_assert_eq(sp.session, 1, "session 1");
  cr_assert_eq(sp.turn, 0, "its turn 0");
  cr_assert_neq(sp.segments[1].id, t0[1].id, "its own question");
  cr_assert_eq(sp.segments[0].id, t0[0].id, "the same system prompt (one group)");
  kvsim_req_spec_t s1 = sp;
  cr_assert_eq(kvsim_source_on_finish(s, &s1, sp.arrival + 1, 0), 0,
               "a rejected turn (0 generated) ends its session");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, session_content_does_not_depend_on_finish_order) {
  /* Two runs finish the same sessions' turns in different orders; each
   * session's lengths must be the same (per-session streams). */
  const char *json =
      "{\"synthetic\": {\"requests\": 32, \"arrival\": {\"process\": \"constant\", \"rate\": "
      "0.001}, \"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 1000}, "
      "\"output_tokens\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 1000}, \"sessions\": "
      "{\"turns\": 4, \"think_s\": 0}}}";
  kvsim_workload_cfg_t *cfg = syn(json);
  int64_t lens[2][8][4];
  memset(lens, 0, sizeof lens);
  for (int run = 0; run < 2; run++) {
    kvsim_source_t *s = open_src(cfg, 11);
    kvsim_req_spec_t sp, pend[8];
    kvsim_err err = {0};
    int np = 0;
    for (int k = 0; k < 8; k++) {
      cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "session start");
      pend[np++] = sp;
    }
    /* Finish in order (run 0) or in reverse (run 1), four rounds. */
    for (int round = 0; round < 3; round++) {
      kvsim_req_spec_t next[8];
      int nn = 0;
      for (int k = 0; k < np; k++) {
        kvsim_req_spec_t *q = &pend[run ? np - 1 - k : k];
        lens[run][q->session][q->turn] = q->prompt_tokens * 10000 + q->output_tokens;
        if (kvsim_source_on_finish(s, q, 100 * KVSIM_NS_PER_S, q->output_tokens) == 1) {
          cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "next turn");
          next[nn++] = sp;
        }
      }
      memcpy(pend, next, sizeof next);
      np = nn;
    }
    for (int k = 0; k < np; k++)
      lens[run][pend[k].session][pend[k].turn] = pend[k].prompt_tokens * 10000 + pend[k].output_tokens;
    kvsim_source_close(s);
  }
  for (int a = 0; a < 8; a++)
    for (int t = 0; t < 4; t++) {
      cr_assert_neq(lens[0][a][t], 0, "session %d turn %d was seen", a, t);
      cr_assert_eq(lens[0][a][t], lens[1][a][t], "session %d turn %d: same lengths", a, t);
    }
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, duration_and_closed_loop_sessions) {
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"duration_s\": 10, \"arrival\": {\"process\": \"closed_loop\", "
      "\"clients\": 2, \"think_s\": 1}, \"prompt_tokens\": 10, \"output_tokens\": 5, "
      "\"sessions\": {\"turns\": 2, \"think_s\": 3}}}");
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp, a, b;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_source_next(s, &a, &err), KVSIM_SOURCE_REQUEST, "client 0");
  cr_assert_eq(kvsim_source_next(s, &b, &err), KVSIM_SOURCE_REQUEST, "client 1");
  cr_assert_eq(kvsim_source_on_finish(s, &a, 2 * KVSIM_NS_PER_S, 5), 1, "turn 1 of client 0");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "turn 1");
  cr_assert_eq(sp.arrival, 5 * KVSIM_NS_PER_S, "sessions.think_s within a session");
  cr_assert_eq(sp.turn, 1, "turn 1");
  cr_assert_eq(sp.client, 0, "client 0");
  a = sp;
  cr_assert_eq(kvsim_source_on_finish(s, &a, 6 * KVSIM_NS_PER_S, 5), 1, "a new session");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_REQUEST, "new session");
  cr_assert_eq(sp.arrival, 7 * KVSIM_NS_PER_S, "client think_s between sessions");
  cr_assert_eq(sp.turn, 0, "turn 0 again");
  cr_assert_neq(sp.session, a.session, "a new session id");
  /* Past the duration a client leaves: nothing new (0). The source last
   * answered "blocked", so the run pulls after this finish anyway
   * (engine/run.c) and learns what is left: once a closed loop with
   * duration_s never ended (the run sampled for ever). */
  cr_assert_eq(kvsim_source_on_finish(s, &b, 9.5 * KVSIM_NS_PER_S, 5), 0,
               "turn at 12.5 s is past duration_s: nothing new");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_BLOCKED, "client 0 is still out");
  a = sp;
  cr_assert_eq(kvsim_source_on_finish(s, &a, 8 * KVSIM_NS_PER_S, 5), 0,
               "11 s: past 10 s, nothing new");
  cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_END, "all clients done");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, million_requests_stay_flat) {
  /* The steady state must not grow: the source's own buffers are reused.
   * (Wall time is checked by scripts; here the stream must just run.) */
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"requests\": 1000000, \"arrival\": {\"process\": \"poisson\", "
      "\"rate\": 1000}, \"prompt_tokens\": {\"dist\": \"lognormal\", \"mean\": 1000, "
      "\"sigma\": 0.5}, \"output_tokens\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 500}, "
      "\"prefix\": {\"shared_tokens\": 200, \"groups\": 8}}}");
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int64_t n = 0;
  const kvsim_segment_t *buf = NULL;
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    if (!buf)
      buf = sp.segments;
    cr_assert_eq(sp.segments, buf, "one segment buffer reused for every request");
    n++;
  }
  cr_assert_eq(n, 1000000, "a million requests");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

Test(workload_synth, resolved_json_parses_back_to_itself) {
  const char *specs[] = {
      RICH,
      "{\"synthetic\": {\"duration_s\": 100, \"arrival\": {\"process\": \"closed_loop\", "
      "\"clients\": 4, \"think_s\": 1}, \"prompt_tokens\": {\"dist\": \"zipf\", \"s\": 1.1, "
      "\"max\": 4096}, \"output_tokens\": {\"dist\": \"normal\", \"mean\": 100, \"std\": 10}, "
      "\"few_shot\": {\"templates\": 3, \"tokens\": 700, \"popularity\": \"zipf\", \"zipf_s\": "
      "2}, \"sessions\": {\"turns\": {\"dist\": \"uniform\", \"min\": 1, \"max\": 5}, "
      "\"think_s\": 3, \"user_tokens\": 50, \"max_context\": 8000}}, \"max_total_tokens\": "
      "9000}",
      "{\"synthetic\": {\"requests\": 10, \"arrival\": {\"process\": \"diurnal\", \"rate\": "
      "2, \"amplitude\": 0.5, \"phase_s\": -100}, \"prompt_tokens\": 5, \"output_tokens\": 5}}",
      "{\"synthetic\": {\"requests\": 10, \"arrival\": {\"process\": \"bursts\", \"rate\": "
      "0, \"burst_rate\": 5, \"burst_s\": 1, \"period_s\": 10}, \"prompt_tokens\": 5, "
      "\"output_tokens\": 5}}",
  };
  for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
    kvsim_workload_cfg_t *a = syn(specs[i]);
    cJSON *ja = kvsim_workload_cfg_json(a);
    char *ta = cJSON_PrintUnformatted(ja);
    kvsim_workload_cfg_t *b = syn(ta);
    cJSON *jb = kvsim_workload_cfg_json(b);
    char *tb = cJSON_PrintUnformatted(jb);
    cr_assert_str_eq(ta, tb, "spec %zu: resolved JSON is a fixed point", i);
    int64_t na, nb;
    if (i != 1) /* closed loop needs feedback to drain */
      cr_assert_eq(drain_hash(a, 3, &na), drain_hash(b, 3, &nb), "spec %zu: same stream", i);
    free(ta);
    free(tb);
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    kvsim_workload_cfg_free(a);
    kvsim_workload_cfg_free(b);
  }
}

/* Regression: a stream too slow for its count ended at the clock's
 * horizon without a word (10,000 requests at 1e-6/s gave 8,907). */
Test(workload_synth, a_stream_that_passes_the_horizon_before_its_count_is_an_error) {
  kvsim_workload_cfg_t *cfg = syn("{\"synthetic\": {\"requests\": 10000, \"arrival\": "
                                  "{\"process\": \"poisson\", \"rate\": 1e-6}, "
                                  "\"prompt_tokens\": {\"dist\": \"fixed\", \"value\": 10}, "
                                  "\"output_tokens\": {\"dist\": \"fixed\", "
                                  "\"value\": 5}}}");
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int64_t n = 0;
  int rc;
  while ((rc = kvsim_source_next(s, &sp, &err)) == KVSIM_SOURCE_REQUEST)
    n++;
  cr_assert_eq(rc, KVSIM_EINVAL, "an error, not the end of the stream (rc %d after %lld)", rc,
               (long long)n);
  cr_assert_lt(n, 10000, "fewer than asked for arrived (%lld)", (long long)n);
  cr_assert(strstr(err.msg, "arrivals passed 9e+09 s") && strstr(err.msg, "of the 10000 requests"),
            "says where and how many: %s", err.msg);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

/* Regression: a closed loop whose one client's next request fell past the
 * horizon dropped the client and returned "nothing new", and the run, which
 * then pulled only on "something new", sampled an empty engine for ever.
 * The run now pulls after every finish while the source is blocked; the
 * pull is an error naming what is missing. */
Test(workload_synth, a_closed_loop_past_the_horizon_says_so_instead_of_waiting) {
  kvsim_workload_cfg_t *cfg =
      syn("{\"synthetic\": {\"requests\": 12, \"arrival\": {\"process\": \"closed_loop\", "
          "\"clients\": 1, "
          "\"think_s\": 9e8}, \"prompt_tokens\": 10, \"output_tokens\": 5}}");
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int rc, n = 0, more = 1;
  while ((rc = kvsim_source_next(s, &sp, &err)) == KVSIM_SOURCE_REQUEST) {
    n++;
    cr_assert_eq(kvsim_source_next(s, &sp, &err), KVSIM_SOURCE_BLOCKED,
                 "one client: blocked until it finishes");
    /* Blocked: the run pulls after this finish whatever it answers. */
    more = kvsim_source_on_finish(s, &sp, sp.arrival, 5);
    cr_assert(more == 1 || n == 11, "request %d: its client's next one became known (%d)", n, more);
  }
  cr_assert_eq(rc, KVSIM_EINVAL, "an error (rc %d after %d requests)", rc, n);
  cr_assert(strstr(err.msg, "of the 12 requests"), "%s", err.msg);
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

/* Regression: bursts with no traffic between them thinned through every
 * idle second (80 requests 1e8 s apart did not finish in 10 s). */
Test(workload_synth, bursts_with_nothing_between_skip_to_the_next_window, .timeout = 10) {
  kvsim_workload_cfg_t *cfg =
      syn("{\"synthetic\": {\"requests\": 80, \"arrival\": {\"process\": \"bursts\", \"rate\": 0, "
          "\"burst_rate\": "
          "1, \"burst_s\": 1, \"period_s\": 1e8}, \"prompt_tokens\": 10, \"output_tokens\": 5}}");
  kvsim_source_t *s = open_src(cfg, 1);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int rc, n = 0;
  while ((rc = kvsim_source_next(s, &sp, &err)) == KVSIM_SOURCE_REQUEST) {
    double t = kvsim_time_to_s(sp.arrival);
    cr_assert_lt(fmod(t, 1e8), 1.0 + 1e-6, "request %d at %.3f s is inside a burst window", n, t);
    n++;
  }
  cr_assert_eq(rc, KVSIM_SOURCE_END, "the stream ends (%s)", err.msg);
  cr_assert_eq(n, 80, "all 80 arrive");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}

/* LoRA adapters: ids 1..N by popularity for `fraction` of the requests,
 * on their own stream (the traffic is the one drawn without them). */
Test(workload_synth, lora_adapters_by_popularity_on_their_own_stream) {
  kvsim_workload_cfg_t *plain = syn(
      "{\"synthetic\": {\"requests\": 4000, \"arrival\": {\"process\": \"poisson\", \"rate\": 5}, "
      "\"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 10, \"max\": 900}, \"output_tokens\": 7}}");
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"requests\": 4000, \"arrival\": {\"process\": \"poisson\", \"rate\": 5}, "
      "\"prompt_tokens\": {\"dist\": \"uniform\", \"min\": 10, \"max\": 900}, \"output_tokens\": 7, "
      "\"lora\": {\"adapters\": 5, \"popularity\": \"zipf\", \"zipf_s\": 1.5, \"fraction\": 0.75}}}");
  cr_assert_eq(kvsim_workload_lora_adapters(cfg), 5, "the workload names 5 adapters");
  cr_assert_eq(kvsim_workload_lora_adapters(plain), 0, "none without the block");
  int64_t na, nb;
  cr_assert_eq(drain_hash(plain, 9, &na), drain_hash(cfg, 9, &nb),
               "arrivals and lengths are the same with and without adapters");
  kvsim_source_t *s = open_src(cfg, 9);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int64_t count[6] = {0}, n = 0;
  while (kvsim_source_next(s, &sp, &err) == KVSIM_SOURCE_REQUEST) {
    cr_assert(sp.lora >= 0 && sp.lora <= 5, "adapter in 0..5: %d", sp.lora);
    count[sp.lora]++;
    n++;
  }
  cr_assert(fabs((double)count[0] / (double)n - 0.25) < 0.03, "a quarter on the base model: %.3f",
            (double)count[0] / (double)n);
  for (int i = 1; i < 5; i++)
    cr_assert_gt(count[i], count[i + 1], "zipf: adapter %d (%lld) before %d (%lld)", i,
                 (long long)count[i], i + 1, (long long)count[i + 1]);
  kvsim_source_close(s);
  cJSON *j = kvsim_workload_cfg_json(cfg);
  char *t = cJSON_PrintUnformatted(j);
  cr_assert(strstr(t, "\"lora\":{\"adapters\":5,\"popularity\":\"zipf\",\"zipf_s\":1.5,\"fraction\":0.75}"),
            "the resolved workload echoes the block: %s", t);
  free(t);
  cJSON_Delete(j);
  kvsim_workload_cfg_free(cfg);
  kvsim_workload_cfg_free(plain);
}

Test(workload_synth, every_turn_of_a_session_keeps_its_adapter) {
  kvsim_workload_cfg_t *cfg = syn(
      "{\"synthetic\": {\"requests\": 400, \"arrival\": {\"process\": \"poisson\", \"rate\": 1}, "
      "\"prompt_tokens\": 50, \"output_tokens\": 20, \"sessions\": {\"turns\": 4, \"think_s\": 1}, "
      "\"lora\": {\"adapters\": 50}}}");
  kvsim_source_t *s = open_src(cfg, 3);
  kvsim_req_spec_t sp;
  kvsim_err err = {0};
  int32_t first[400];
  int64_t turns_later = 0, sessions_seen = 0, distinct_first = 0;
  memset(first, 0, sizeof first);
  int rc;
  while ((rc = kvsim_source_next(s, &sp, &err)) != KVSIM_SOURCE_END) {
    if (rc == KVSIM_SOURCE_BLOCKED)
      break;
    cr_assert_eq(rc, KVSIM_SOURCE_REQUEST, "a request: %s", err.msg);
    cr_assert(sp.session >= 0 && sp.session < 400, "session in range: %lld", (long long)sp.session);
    cr_assert(sp.lora >= 1 && sp.lora <= 50, "every request names an adapter: %d", sp.lora);
    if (sp.turn == 0) {
      first[sp.session] = sp.lora;
      sessions_seen++;
      distinct_first += sessions_seen > 1 && sp.lora != first[0];
    } else {
      cr_assert_eq(sp.lora, first[sp.session], "session %lld turn %d keeps adapter %d, got %d",
                   (long long)sp.session, sp.turn, first[sp.session], sp.lora);
      turns_later++;
    }
    kvsim_req_spec_t done = sp;
    kvsim_source_on_finish(s, &done, sp.arrival + 1, 20);
  }
  cr_assert_gt(turns_later, 100, "later turns were checked: %lld", (long long)turns_later);
  cr_assert_gt(distinct_first, 0, "sessions do not all share one adapter");
  kvsim_source_close(s);
  kvsim_workload_cfg_free(cfg);
}
