/* The text report of kvsim trace stats: counts, rate, burstiness, length
 * percentiles and prefix reuse, one line each. */
#include <stdio.h>

#include "core/util.h"
#include "trace.h"

static void len_text(const char *name, const kvsim_len_stats_t *l) {
  printf("%s: mean %.1f, p50 %.0f, p90 %.0f, p99 %.0f, min %.0f, max %.0f\n", name, l->mean, l->p50,
         l->p90, l->p99, l->min, l->max);
}

void trace_print_stats(const char *file, const char *fmt, const kvsim_trace_stats_t *st) {
  char a[32], b[32];
  printf("trace: %s (format %s)\n", file, fmt);
  printf("requests: %s", kvsim__commas(st->requests, a, sizeof a));
  if (st->skipped)
    printf(" (%s bad rows skipped)", kvsim__commas(st->skipped, b, sizeof b));
  if (st->clipped)
    printf(" (%s clipped)", kvsim__commas(st->clipped, b, sizeof b));
  if (st->arrivals) {
    printf("\nduration: %.1f s\nrate: %.2f req/s\n", st->duration_s, st->rate_rps);
    printf("inter-arrival: mean %.3f s, CV %.2f, max gap %.1f s\n", st->interarrival_mean_s,
           st->interarrival_cv, st->max_gap_s);
    printf("peak: %lld requests in one second\n", (long long)st->peak_1s);
  } else {
    printf("\narrival times: none (a length table): duration, rate, inter-arrival times and peak "
           "not computed; use it as synthetic.lengths_from with an arrival process\n");
  }
  len_text("prompt tokens", &st->prompt);
  len_text("output tokens", &st->output);
  if (!st->prefix_block)
    return;
  printf("prefix blocks of %lld tokens: %s in all, %s distinct\n", (long long)st->prefix_block,
         kvsim__commas(st->blocks, a, sizeof a), kvsim__commas(st->distinct_blocks, b, sizeof b));
  printf("ideal prefix hit rate: %.2f%% of blocks, %.2f%% of tokens\n",
         100 * st->ideal_hit_rate_blocks, 100 * st->ideal_hit_rate_tokens);
  for (int i = 0; i < st->nlru; i++)
    printf("LRU hit rate at %s blocks: %.2f%%\n", kvsim__commas(st->lru_capacity[i], a, sizeof a),
           100 * st->lru_hit_rate[i]);
}
