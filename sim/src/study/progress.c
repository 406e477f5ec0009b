/* Progress of long work (sweep points, plan simulations) on stderr: one
 * line redrawn in place on a terminal, or one line per finished point for
 * a log. The only place that formats progress. */
#include <stdio.h>
#include <time.h>

#include "kvsim/study.h"

static double monotonic_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "4.2 s", "3m07s", "2h05m": short enough to redraw. */
static void duration(double s, char *buf, size_t cap) {
  if (!(s >= 0))
    s = 0;
  long t = (long)(s + 0.5);
  if (s < 60)
    snprintf(buf, cap, "%.1f s", s);
  else if (t < 3600)
    snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(buf, cap, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
}

void kvsim_progress_init(kvsim_progress_t *p, FILE *out, kvsim_progress_mode mode, const char *what,
                         int64_t total, double (*clock)(void)) {
  p->out = out;
  p->mode = out ? mode : KVSIM_PROGRESS_NONE;
  p->what = what;
  p->total = total > 0 ? total : 0;
  p->done = p->failed = 0;
  p->clock = clock ? clock : monotonic_s;
  p->t0 = p->clock();
}

void kvsim_progress_step(kvsim_progress_t *p, const char *label, const char *outcome, bool failed) {
  if (!p)
    return;
  p->done++;
  p->failed += failed;
  if (p->mode == KVSIM_PROGRESS_NONE)
    return;
  double elapsed = p->clock() - p->t0;
  char count[64], el[32], eta[48] = "";
  if (p->total)
    snprintf(count, sizeof count, "%lld/%lld", (long long)p->done, (long long)p->total);
  else
    snprintf(count, sizeof count, "%lld", (long long)p->done);
  duration(elapsed, el, sizeof el);
  if (p->total && p->done < p->total) {
    char d[32];
    duration(elapsed / (double)p->done * (double)(p->total - p->done), d, sizeof d);
    snprintf(eta, sizeof eta, ", ETA %s", d);
  }
  if (p->mode == KVSIM_PROGRESS_LINE)
    fprintf(p->out, "\r\033[Kkvsim %s: %s done, %lld failed, %s elapsed%s", p->what, count,
            (long long)p->failed, el, eta);
  else
    fprintf(p->out, "kvsim %s: %s %s (%s, %lld failed, %s elapsed%s)\n", p->what,
            label ? label : "point",
            outcome  ? outcome
            : failed ? "failed"
                     : "done",
            count, (long long)p->failed, el, eta);
  fflush(p->out);
}

void kvsim_progress_end(kvsim_progress_t *p) {
  if (p && p->mode == KVSIM_PROGRESS_LINE && p->done) {
    fputs("\r\033[K", p->out);
    fflush(p->out);
  }
}
