#include <criterion/criterion.h>

#include "kvsim/error.h"
#include "kvsim/events.h"

Test(events, pops_in_time_then_push_order) {
  kvsim_eventq_t q;
  kvsim_eventq_init(&q);
  cr_assert_eq(kvsim_eventq_push(&q, 30, 1, 0), KVSIM_OK);
  cr_assert_eq(kvsim_eventq_push(&q, 10, 2, 0), KVSIM_OK);
  cr_assert_eq(kvsim_eventq_push(&q, 30, 3, 0), KVSIM_OK);
  cr_assert_eq(kvsim_eventq_push(&q, 10, 4, 0), KVSIM_OK);
  int expect[] = {2, 4, 1, 3};
  kvsim_event_t ev;
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(kvsim_eventq_pop(&q, &ev), 1, "event %d should be there", i);
    cr_assert_eq(ev.kind, expect[i], "event %d: got kind %d, want %d (ties by push order)", i,
                 ev.kind, expect[i]);
  }
  cr_assert_eq(kvsim_eventq_pop(&q, &ev), 0, "queue should be empty");
  cr_assert_eq(kvsim_eventq_now(&q), 30, "clock is the last popped time");
  kvsim_eventq_fini(&q);
}

Test(events, many_random_events_come_out_sorted) {
  kvsim_eventq_t q;
  kvsim_eventq_init(&q);
  unsigned x = 12345;
  for (int i = 0; i < 10000; i++) {
    x = x * 1103515245u + 12345u;
    cr_assert_eq(kvsim_eventq_push(&q, (kvsim_time_ns)(x % 1000), i, 0), KVSIM_OK);
  }
  kvsim_event_t prev = {-1, 0, 0, 0}, ev;
  int n = 0;
  while (kvsim_eventq_pop(&q, &ev)) {
    cr_assert(ev.time > prev.time || (ev.time == prev.time && ev.seq > prev.seq),
              "order broken at %d: (%lld,%llu) after (%lld,%llu)", n, (long long)ev.time,
              (unsigned long long)ev.seq, (long long)prev.time, (unsigned long long)prev.seq);
    prev = ev;
    n++;
  }
  cr_assert_eq(n, 10000, "all events popped");
  kvsim_eventq_fini(&q);
}

/* The vacant root a pop leaves (filled by the next push, closed by the
 * next pop): random pops, pushes and peeks against a plain list scanned
 * for its (time, seq) minimum, on heaps of 0 to ~300 events (a
 * many-replica run keeps one step event per replica). */
Test(events, interleaved_pop_push_peek_match_a_scanned_list) {
  enum { CAP = 4096 };
  static kvsim_event_t ref[CAP];
  int n = 0;
  uint64_t seq = 0;
  kvsim_eventq_t q;
  kvsim_eventq_init(&q);
  unsigned x = 777;
  kvsim_time_ns now = 0;
  for (int step = 0; step < 200000; step++) {
    x = x * 1103515245u + 12345u;
    unsigned op = (x >> 16) % 10;
    /* Phases grow the heap to ~300 and drain it again. */
    int grow = (step / 5000) % 2 == 0 ? n < 320 : n < 8;
    if (op < (grow ? 6u : 3u) && n < CAP) {
      x = x * 1103515245u + 12345u;
      kvsim_time_ns t = now + (kvsim_time_ns)((x >> 8) % 64); /* many time ties */
      cr_assert_eq(kvsim_eventq_push(&q, t, (int32_t)seq, 0), KVSIM_OK);
      ref[n++] = (kvsim_event_t){t, seq++, 0, 0};
    } else {
      int best = -1;
      for (int i = 0; i < n; i++)
        if (best < 0 || ref[i].time < ref[best].time ||
            (ref[i].time == ref[best].time && ref[i].seq < ref[best].seq))
          best = i;
      cr_assert_eq(kvsim_eventq_peek_time(&q), best < 0 ? KVSIM_TIME_NEVER : ref[best].time,
                   "step %d: peek", step);
      kvsim_event_t ev;
      cr_assert_eq(kvsim_eventq_pop(&q, &ev), best >= 0, "step %d: pop's answer", step);
      if (best < 0)
        continue;
      cr_assert(ev.time == ref[best].time && ev.seq == ref[best].seq,
                "step %d: popped (%lld,%llu), want (%lld,%llu)", step, (long long)ev.time,
                (unsigned long long)ev.seq, (long long)ref[best].time,
                (unsigned long long)ref[best].seq);
      now = ev.time;
      ref[best] = ref[--n];
    }
    cr_assert_eq(kvsim_eventq_len(&q), (size_t)n, "step %d: length", step);
  }
  kvsim_eventq_fini(&q);
}
