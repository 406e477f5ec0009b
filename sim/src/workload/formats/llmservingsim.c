/* LLMServingSim (casys-kaist/LLMServingSim), JSON lines.
 * - Its workloads: input_toks, output_toks and arrival_time_ns.
 * - Its measured runs (vllm/requests.jsonl of a recorded vLLM run): the
 *   same token keys and the engine's monotonic queued_ts, scheduled_ts,
 *   first_token_ts and last_token_ts in seconds. Read as a trace, such a
 *   file arrives as the engine queued it (queued_ts, the anchor of its
 *   latencies); read as a measured run, each row also carries the four
 *   times as recorded, checked to be in order.
 * Arrivals count from the first row's. */
#include <math.h>

#include "workload/formats/format.h"

static bool detect(const char *l) {
  return kvsim__json_has(l, "input_toks") || kvsim__json_has(l, "arrival_time_ns");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) { return 0; }

/* A measured time: any finite number (the engine's clock has no range). */
static int meas_num(const kvsim__reader_t *r, const cJSON *o, const char *key, double *out,
                    kvsim_err *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return kvsim_err_set(err, KVSIM_EPARSE, "%s:%lld: '%s' missing or not a number", r->path,
                         (long long)r->line, key);
  *out = v->valuedouble;
  return 0;
}

static int measured(const kvsim__reader_t *r, const cJSON *o, kvsim__row_t *row,
                    kvsim_err *err) {
  kvsim__measured_t *m = &row->measured;
  int rc;
  if ((rc = meas_num(r, o, "queued_ts", &m->arrival_s, err)) < 0 ||
      (rc = meas_num(r, o, "scheduled_ts", &m->scheduled_s, err)) < 0 ||
      (rc = meas_num(r, o, "first_token_ts", &m->first_token_s, err)) < 0 ||
      (rc = meas_num(r, o, "last_token_ts", &m->finish_s, err)) < 0)
    return rc;
  if (m->first_token_s < m->arrival_s || m->finish_s < m->first_token_s ||
      m->scheduled_s < m->arrival_s)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: inconsistent request (input %lld, output %lld, queued %.6f, "
                         "scheduled %.6f, first %.6f, last %.6f)",
                         r->path, (long long)r->line, (long long)row->prompt_tokens,
                         (long long)row->output_tokens, m->arrival_s, m->scheduled_s,
                         m->first_token_s, m->finish_s);
  /* Every row of a measured run is a request that finished. */
  m->finished = true;
  return 0;
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  cJSON *o;
  int rc = kvsim__fmt_jsonl_row(r, row, &o, err);
  if (rc <= 0)
    return rc;
  double in, out, ts;
  const double max_s = (double)KVSIM__MAX_TRACE_S, max_ns = max_s * KVSIM_NS_PER_S;
  if ((rc = kvsim__fmt_json_num(r, o, "input_toks", true, 1, (double)KVSIM__MAX_TRACE_TOKENS,
                                &in, err)) < 0 ||
      (rc = kvsim__fmt_json_num(r, o, "output_toks", true, 1, (double)KVSIM__MAX_TRACE_TOKENS,
                                &out, err)) < 0)
    goto done;
  row->prompt_tokens = (int64_t)in;
  row->output_tokens = (int64_t)out;
  /* A workload gives arrival_time_ns; a measured run, queued_ts. */
  if (!cJSON_GetObjectItemCaseSensitive(o, "arrival_time_ns") &&
      cJSON_GetObjectItemCaseSensitive(o, "queued_ts")) {
    if ((rc = kvsim__fmt_json_num(r, o, "queued_ts", false, 0, max_s, &ts, err)) < 0)
      goto done;
    ts = round(ts * KVSIM_NS_PER_S);
  } else if ((rc = kvsim__fmt_json_num(r, o, "arrival_time_ns", true, 0, max_ns, &ts, err)) <
             0) {
    goto done;
  }
  /* Both in 0..9e18: the difference cannot overflow. */
  kvsim__fmt_from_base(r, (int64_t)ts, &row->arrival);
  if (r->measured && (rc = measured(r, o, row, err)) < 0)
    goto done;
  rc = 1;
done:
  cJSON_Delete(o);
  return rc;
}

const kvsim__format_t kvsim__format_llmservingsim = {
    .name = "llmservingsim",
    .arrival_column = "arrival_time_ns",
    .jsonl = true,
    .selectable = true,
    .measures = true,
    .detect = detect,
    .open = open_,
    .next = next,
};
