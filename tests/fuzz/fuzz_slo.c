/* kvsim plan --slo: the input, cut at its first NUL, is the flag's value.
 * Parsed into targets each of a known metric and statistic, once each,
 * with a limit in (0, KVSIM_TIME_MAX_S]; or refused with one "--slo: ..."
 * line. Either way nothing is read or written past the targets. */
#include <math.h>

#include "fuzz_common.h"
#include "kvsim/study.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char s[2048];
  size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
  memcpy(s, data, n);
  s[n] = '\0';
  kvsim_search_t *se = calloc(1, sizeof *se);
  if (!se)
    return 0;
  kvsim_err err = {0};
  if (kvsim_search_parse_slo(s, se, &err) == KVSIM_OK) {
    if (se->ntargets < 1 || se->ntargets > KVSIM_SLO_MAX_TARGETS)
      abort();
    for (int i = 0; i < se->ntargets; i++) {
      const kvsim_slo_target_t *t = &se->targets[i];
      if (!(t->limit_s > 0 && t->limit_s <= KVSIM_TIME_MAX_S))
        abort();
      for (int k = 0; k < i; k++)
        if (se->targets[k].metric == t->metric && se->targets[k].stat == t->stat)
          abort();
    }
  } else if (strncmp(err.msg, "--slo: ", 7) != 0 || strchr(err.msg, '\n')) {
    abort();
  }
  free(se);
  return 0;
}
