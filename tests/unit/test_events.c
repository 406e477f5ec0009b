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
