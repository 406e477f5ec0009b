/* LLMServingSim workloads (casys-kaist/LLMServingSim): JSON lines of
 * input_toks, output_toks and arrival_time_ns; arrivals count from the
 * first row's. */
#include "workload/formats/format.h"

static bool detect(const char *l) {
  return kvsim__json_has(l, "input_toks") || kvsim__json_has(l, "arrival_time_ns");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) { return 0; }

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  cJSON *o;
  int rc = kvsim__fmt_jsonl_row(r, row, &o, err);
  if (rc <= 0)
    return rc;
  double in, out, ts;
  const double max_ns = (double)(KVSIM__MAX_TRACE_S * KVSIM_NS_PER_S);
  if ((rc = kvsim__fmt_json_num(r, o, "input_toks", true, 1, (double)KVSIM__MAX_TRACE_TOKENS,
                                &in, err)) < 0 ||
      (rc = kvsim__fmt_json_num(r, o, "output_toks", true, 1, (double)KVSIM__MAX_TRACE_TOKENS,
                                &out, err)) < 0 ||
      (rc = kvsim__fmt_json_num(r, o, "arrival_time_ns", true, 0, max_ns, &ts, err)) < 0)
    goto done;
  /* Both in 0..9e18: the difference cannot overflow. */
  kvsim__fmt_from_base(r, (int64_t)ts, &row->arrival);
  row->prompt_tokens = (int64_t)in;
  row->output_tokens = (int64_t)out;
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
    .detect = detect,
    .open = open_,
    .next = next,
};
