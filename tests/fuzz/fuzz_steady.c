/* The steady window (kvsim/steady.h) over fuzzed arrival times: the
 * in-memory window (a sort) and the streamed one (a radix selection in
 * passes, for runs whose requests do not stay in memory) must agree on
 * both edges and on what they drop, ties at an edge kept in, whatever the
 * spread. The first byte scales the arrivals (a shift of 0 to 30 bits:
 * nanoseconds apart up to the clock's range); then four bytes an arrival. */
#include "fuzz_common.h"
#include "kvsim/steady.h"

typedef struct reader {
  const int64_t *t;
  int64_t n, i;
} reader_t;

static int rewind_(void *ctx) {
  ((reader_t *)ctx)->i = 0;
  return 0;
}
static int next_(void *ctx, int64_t *t) {
  reader_t *r = ctx;
  if (r->i == r->n)
    return 0;
  *t = r->t[r->i++];
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int shift = data[0] % 31;
  int64_t n = (int64_t)((size - 1) / 4);
  int64_t *t = malloc((size_t)(n ? n : 1) * sizeof *t);
  if (!t)
    return 0;
  int64_t first = INT64_MAX, last = 0;
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *b = data + 1 + 4 * i;
    uint32_t v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    t[i] = (int64_t)v << shift;
    first = t[i] < first ? t[i] : first;
    last = t[i] > last ? t[i] : last;
  }
  kvsim_steady_t a, s;
  reader_t rd = {t, n, 0};
  kvsim_steady_reader_t r = {rewind_, next_, &rd};
  if (kvsim_steady_window(t, n, &a) == 0 && kvsim_steady_window_stream(&r, n, first, last, &s) == 0) {
    char msg[256];
    snprintf(msg, sizeof msg, "n %lld: sorted [%lld, %lld] drops %lld + %lld, streamed [%lld, %lld] drops %lld + %lld",
             (long long)n, (long long)a.start_ns, (long long)a.end_ns, (long long)a.warmup,
             (long long)a.drain, (long long)s.start_ns, (long long)s.end_ns, (long long)s.warmup,
             (long long)s.drain);
    if (a.start_ns != s.start_ns || a.end_ns != s.end_ns || a.warmup != s.warmup ||
        a.drain != s.drain || a.arrivals != s.arrivals || a.warmup_s != s.warmup_s)
      fuzz_fail("the streamed steady window is not the sorted one", msg);
    /* At most the trim's share dropped at each end, never the whole run. */
    int64_t cut = (int64_t)((double)n * KVSIM_STEADY_TRIM);
    if (n > 0 && (a.warmup > cut || a.drain > cut || a.start_ns > a.end_ns))
      fuzz_fail("the steady window drops more than the rule's share", msg);
    kvsim_steady_judge(&a, n - a.warmup - a.drain, (double)(last - first) / 1e9);
    if (!a.reached && !a.why[0])
      fuzz_fail("a window judged too short without a reason", a.why);
  }
  free(t);
  return 0;
}
