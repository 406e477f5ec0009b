/* The steady window of a run (kvsim/steady.h) and the run's figures that
 * come from it. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kvsim/steady.h"
#include "kvsim/study.h"
#include "kvsim/summary.h"

Test(steady, drops_a_tenth_of_the_arrivals_at_each_end_whatever_their_order) {
  int64_t t[20];
  for (int i = 0; i < 20; i++)
    t[i] = (int64_t)(19 - i) * 1000000000; /* 19 s .. 0 s, reversed */
  kvsim_steady_t w;
  cr_assert_eq(kvsim_steady_window(t, 20, &w), 0, "window");
  cr_assert_eq(w.warmup, 2, "two of 20 dropped at the start (got %lld)", (long long)w.warmup);
  cr_assert_eq(w.drain, 2, "two at the end (got %lld)", (long long)w.drain);
  cr_assert_eq(w.start_ns, 2000000000, "window opens at the third arrival");
  cr_assert_eq(w.end_ns, 17000000000, "and closes at the 18th");
  cr_assert(fabs(w.warmup_s - 2.0) < 1e-12, "warm-up spans 2 s (got %g)", w.warmup_s);
  cr_assert(!kvsim_steady_contains(&w, 1000000000), "1 s is warm-up");
  cr_assert(kvsim_steady_contains(&w, 2000000000), "2 s is inside");
  cr_assert(!kvsim_steady_contains(&w, 18000000000), "18 s is drain");
  cr_assert_eq(t[0], 19000000000, "the input is not reordered");
}

Test(steady, ties_at_an_edge_stay_inside_and_small_runs_drop_nothing) {
  int64_t t[10] = {0, 5, 5, 5, 5, 5, 5, 5, 5, 9};
  kvsim_steady_t w;
  cr_assert_eq(kvsim_steady_window(t, 10, &w), 0, "window");
  cr_assert_eq(w.warmup, 1, "one dropped at the start (got %lld)", (long long)w.warmup);
  cr_assert_eq(w.drain, 1, "one at the end (got %lld)", (long long)w.drain);
  int64_t u[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  cr_assert_eq(kvsim_steady_window(u, 9, &w), 0, "window of 9");
  cr_assert_eq(w.warmup + w.drain, 0, "floor(0.9) = 0: nothing dropped");
  cr_assert(kvsim_steady_contains(&w, 0) && kvsim_steady_contains(&w, 8), "all kept");
  cr_assert_eq(kvsim_steady_window(u, 0, &w), 0, "no arrival");
  cr_assert(!kvsim_steady_contains(&w, 0), "an empty window holds nothing");
}

Test(steady, judged_too_short_by_warmup_then_by_count) {
  int64_t t[2000];
  for (int i = 0; i < 2000; i++)
    t[i] = (int64_t)i * 10000000; /* 100 req/s: the warm-up spans 2 s */
  kvsim_steady_t w;
  cr_assert_eq(kvsim_steady_window(t, 2000, &w), 0, "window");
  kvsim_steady_judge(&w, 1600, 0.6);
  cr_assert(w.reached, "1,600 finished, 3 x E2E 0.6 s < 2 s of warm-up: steady (%s)", w.why);
  kvsim_steady_judge(&w, 1600, 0.7);
  cr_assert(!w.reached && strstr(w.why, "shorter than 3 x a request's mean E2E"),
            "3 x 0.7 s outlasts the 2 s warm-up: %s", w.why);
  kvsim_steady_judge(&w, 999, 0.5);
  cr_assert(!w.reached && strstr(w.why, "only 999 requests"), "999 is too few: %s", w.why);
  kvsim_steady_judge(&w, 0, NAN);
  cr_assert(!w.reached && strstr(w.why, "no request finished"), "nothing finished: %s", w.why);
}

/* A run's latency figures are its window's: the first requests of an empty
 * engine are faster than the rest, so the untrimmed p99 of TTFT differs. */
Test(steady, a_run_reports_its_window_and_warns_when_short) {
  const char *text =
      "{ \"name\": \"st\", \"seed\": 3, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"l4\" },"
      "  \"engine\": { \"max_model_len\": 2048 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 200, \"arrival\": { \"process\": \"poisson\", \"rate\": 20 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 300 },"
      "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 50 } } } }";
  kvsim_scenario_t sc;
  kvsim_summary_t *s = malloc(sizeof *s);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run(&sc, NULL, s, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(s->steady.warmup, 20, "20 of 200 dropped at the start");
  cr_assert_eq(s->steady.drain, 20, "and 20 at the end");
  cr_assert_eq(s->ttft.count, 160, "the latencies count the 160 in between (got %lld)",
               (long long)s->ttft.count);
  cr_assert_eq(s->all_ttft.count, 200, "the untrimmed ones all 200");
  char line[512];
  cr_assert(kvsim_summary_steady_warning(s, line, sizeof line), "200 requests are too few");
  cr_assert(strstr(line, "too short to reach steady state") && strstr(line, KVSIM_STEADY_RULE),
            "says why: %s", line);
  cJSON *j = kvsim_summary_json(s, &sc);
  const cJSON *st = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "latency"), "steady_state");
  cr_assert_str_eq(cJSON_GetObjectItem(st, "rule")->valuestring, KVSIM_STEADY_RULE, "rule named");
  cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(st, "reached")), "reached false");
  cr_assert(cJSON_IsString(cJSON_GetObjectItem(st, "warning")), "warning given");
  cJSON_Delete(j);
  kvsim_scenario_fini(&sc);
  free(s);
}

typedef struct arr {
  const int64_t *t;
  int64_t n, pos;
  int passes;
} arr_t;

static int arr_rewind(void *ctx) {
  arr_t *a = ctx;
  a->pos = 0;
  a->passes++;
  return 0;
}

static int arr_next(void *ctx, int64_t *t) {
  arr_t *a = ctx;
  if (a->pos >= a->n)
    return 0;
  *t = a->t[a->pos++];
  return 1;
}

/* The streamed selection (the window of a run past 65,536 requests) gives
 * the sorted one's window exactly: spread, bursty (half at one instant)
 * and far-apart arrivals, in a few passes. */
Test(steady, the_streamed_window_is_the_sorted_one) {
  enum { N = 20000 };
  static int64_t t[N];
  uint64_t x = 88172645463325252ull;
  for (int shape = 0; shape < 3; shape++) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int i = 0; i < N; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
      t[i] = shape == 0   ? (int64_t)(x % 1000000000000ull)
             : shape == 1 ? (i % 2 ? 5000 : (int64_t)(x % 100000))
                          : (int64_t)(x % 3) * 4000000000000000000ll + (int64_t)(x % 1000);
      lo = t[i] < lo ? t[i] : lo;
      hi = t[i] > hi ? t[i] : hi;
    }
    kvsim_steady_t a, b;
    cr_assert_eq(kvsim_steady_window(t, N, &a), 0, "sorted window");
    arr_t ar = {t, N, 0, 0};
    const kvsim_steady_reader_t rd = {arr_rewind, arr_next, &ar};
    cr_assert_eq(kvsim_steady_window_stream(&rd, N, lo, hi, &b), 0, "streamed window");
    cr_assert(a.start_ns == b.start_ns && a.end_ns == b.end_ns, "shape %d: edges %lld..%lld, streamed %lld..%lld",
              shape, (long long)a.start_ns, (long long)a.end_ns, (long long)b.start_ns, (long long)b.end_ns);
    cr_assert(a.warmup == b.warmup && a.drain == b.drain, "shape %d: dropped %lld + %lld, streamed %lld + %lld",
              shape, (long long)a.warmup, (long long)a.drain, (long long)b.warmup, (long long)b.drain);
    cr_assert(ar.passes <= 6, "shape %d: %d passes", shape, ar.passes);
  }
}

/* Past 65,536 requests a run spills them to a temporary file: its window
 * still drops a tenth at each end and counts the rest. */
Test(steady, a_run_past_the_memory_share_keeps_its_window) {
  const char *text =
      "{ \"name\": \"big\", \"seed\": 5, \"model\": \"llama-3.2-1b\", \"hardware\": { \"gpu\": \"h100-sxm\" },"
      "  \"engine\": { \"max_model_len\": 2048 },"
      "  \"workload\": { \"synthetic\": { \"requests\": 70000, \"arrival\": { \"process\": \"poisson\", \"rate\": 100 },"
      "  \"prompt_tokens\": { \"dist\": \"fixed\", \"value\": 20 },"
      "  \"output_tokens\": { \"dist\": \"fixed\", \"value\": 2 } } } }";
  kvsim_scenario_t sc;
  kvsim_summary_t *s = malloc(sizeof *s);
  kvsim_err err = {0};
  cr_assert_eq(kvsim_scenario_parse(text, "s.json", ".", NULL, 0, &sc, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_study_run(&sc, NULL, s, &err), KVSIM_OK, "run: %s", err.msg);
  cr_assert_eq(s->requests_finished, 70000, "all finished");
  cr_assert_eq(s->steady.warmup, 7000, "7,000 dropped at the start (got %lld)", (long long)s->steady.warmup);
  cr_assert_eq(s->steady.drain, 7000, "and at the end (got %lld)", (long long)s->steady.drain);
  cr_assert_eq(s->ttft.count, 56000, "56,000 counted (got %lld)", (long long)s->ttft.count);
  cr_assert(s->steady.reached, "70,000 requests reach steady state: %s", s->steady.why);
  kvsim_scenario_fini(&sc);
  free(s);
}

static int cmp_ref(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The window as it was computed, from the whole sorted array: the
 * reference for the selection that replaced the sort. */
static void ref_window(const int64_t *v, int64_t n, kvsim_steady_t *w) {
  memset(w, 0, sizeof *w);
  w->arrivals = n;
  int64_t *t = malloc((size_t)n * sizeof *t);
  cr_assert(t);
  memcpy(t, v, (size_t)n * sizeof *t);
  qsort(t, (size_t)n, sizeof *t, cmp_ref);
  int64_t cut = (int64_t)((double)n * KVSIM_STEADY_TRIM);
  w->start_ns = t[cut];
  w->end_ns = t[n - 1 - cut];
  for (int64_t i = 0; i < n && t[i] < w->start_ns; i++)
    w->warmup++;
  for (int64_t i = n - 1; i >= 0 && t[i] > w->end_ns; i--)
    w->drain++;
  w->warmup_s = (double)(w->start_ns - t[0]) / 1e9;
  free(t);
}

/* Random, sorted, reversed, nearly sorted, few distinct values, negative
 * times, organ pipes: the same window, field for field, as the sort's. */
Test(steady, the_selected_window_is_the_sorted_one) {
  uint64_t s = 77;
  int64_t *v = malloc(70000 * sizeof *v);
  cr_assert(v);
  for (int it = 0; it < 3000; it++) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    int64_t n = it < 2900 ? 1 + (int64_t)((s >> 33) % 400) : 1 + (int64_t)((s >> 33) % 70000);
    int kind = it % 7;
    for (int64_t i = 0; i < n; i++) {
      s = s * 6364136223846793005u + 1442695040888963407u;
      int64_t r = (int64_t)(s >> 20);
      switch (kind) {
      case 0:
        v[i] = r;
        break;
      case 1:
        v[i] = i * 1000;
        break;
      case 2:
        v[i] = (n - i) * 1000;
        break;
      case 3:
        v[i] = i * 1000 + r % 5000;
        break;
      case 4:
        v[i] = r % 3;
        break;
      case 5:
        v[i] = r % 2000 - 1000;
        break;
      default:
        v[i] = i < n / 2 ? i : n - i;
        break;
      }
    }
    kvsim_steady_t a, b;
    ref_window(v, n, &a);
    cr_assert_eq(kvsim_steady_window(v, n, &b), KVSIM_OK);
    cr_assert(
        a.arrivals == b.arrivals && a.start_ns == b.start_ns && a.end_ns == b.end_ns &&
            a.warmup == b.warmup && a.drain == b.drain && a.warmup_s == b.warmup_s,
        "case %d kind %d n %lld: start %lld/%lld end %lld/%lld warmup %lld/%lld drain %lld/%lld",
        it, kind, (long long)n, (long long)a.start_ns, (long long)b.start_ns, (long long)a.end_ns,
        (long long)b.end_ns, (long long)a.warmup, (long long)b.warmup, (long long)a.drain,
        (long long)b.drain);
  }
  free(v);
}
