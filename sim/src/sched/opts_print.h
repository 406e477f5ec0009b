/* The printer profiles' print_opts share (kvsim/sched.h): each adds one of
 * the profile's options to the engine object when the scenario gave it. */
#ifndef KVSIM_SCHED_OPTS_PRINT_H
#define KVSIM_SCHED_OPTS_PRINT_H

#include <stdbool.h>

#include <cJSON.h>

#include "kvsim/sched.h"

typedef struct kvsim__optout {
  const char *const *keys; /* the profile's option_keys */
  uint32_t given;          /* kvsim_sched_opts_t.given */
  cJSON *engine;           /* where the keys go */
  int rc;                  /* KVSIM_ENOMEM after a failed add */
} kvsim__optout_t;

static inline kvsim__optout_t kvsim__optout(const char *const *keys, const kvsim_sched_opts_t *o,
                                            cJSON *engine) {
  return (kvsim__optout_t){keys, o->given, engine, KVSIM_OK};
}
/* Each adds key = v when key was given. */
void kvsim__optout_num(kvsim__optout_t *o, const char *key, double v);
void kvsim__optout_str(kvsim__optout_t *o, const char *key, const char *v);
void kvsim__optout_bool(kvsim__optout_t *o, const char *key, bool v);

#endif
