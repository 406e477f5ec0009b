/* The accepted-token process of speculative decoding (kvsim/spec.h): how
 * many of a step's drafts the target accepts. vLLM's rejection sampler
 * (vllm/v1/sample/rejection_sampler.py) accepts drafts left to right and
 * stops at the first rejection, so a step's accepted count is the longest
 * accepted prefix; its logged "Per-position acceptance rate"
 * (vllm/v1/spec_decode/metrics.py SpecDecodingLogging) is, at position
 * i, the fraction of drafts whose first i + 1 tokens were all accepted. */
#include <math.h>

#include "kvsim/spec.h"

int kvsim_spec_accept_set(kvsim_spec_accept_t *a, int k, const double *rates, int n,
                          const char *where, kvsim_err *err) {
  if (k < 1 || k > KVSIM_SPEC_MAX_TOKENS)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: num_speculative_tokens %d is out of range [1, %d]",
                         where, k, KVSIM_SPEC_MAX_TOKENS);
  if (n != 1 && n != k)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %d per-position rates for num_speculative_tokens %d (give one number, "
                         "or one rate per position as vLLM logs them)",
                         where, n, k);
  for (int i = 0; i < n; i++)
    if (!(rates[i] >= 0 && rates[i] <= 1))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%g is outside [0, 1]", where,
                           n > 1 ? "[" : ": ", rates[i]);
  a->k = k;
  for (int i = 0; i < k; i++) {
    if (n == 1) {
      /* Each draft accepted with probability r after the ones before it. */
      a->pos[i] = pow(rates[0], i + 1);
      continue;
    }
    /* A later position cannot be reached more often than an earlier one
     * (vLLM's synthetic rates carry the same rule: "must be
     * non-increasing"). */
    if (i > 0 && rates[i] > rates[i - 1])
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s[%d]: %g exceeds position %d's %g; per-position rates cannot grow",
                           where, i, rates[i], i - 1, rates[i - 1]);
    a->pos[i] = rates[i];
  }
  return KVSIM_OK;
}

int kvsim_spec_accepted(const kvsim_spec_accept_t *a, int drafts, double u) {
  if (drafts > a->k)
    drafts = a->k;
  int j = 0;
  while (j < drafts && u < a->pos[j])
    j++;
  return j;
}

double kvsim_spec_mean_accepted(const kvsim_spec_accept_t *a, int drafts) {
  if (drafts > a->k)
    drafts = a->k;
  double s = 0;
  for (int i = 0; i < drafts; i++)
    s += a->pos[i];
  return s;
}
