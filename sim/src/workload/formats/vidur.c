/* Vidur's processed traces (microsoft/vidur data/processed_traces):
 * arrived_at (seconds),num_prefill_tokens,num_decode_tokens. */
#include "workload/formats/format.h"

enum { ARR, PROMPT, OUTPUT };

static bool detect(const char *l) {
  return kvsim__header_has(l, "arrived_at") && kvsim__header_has(l, "num_prefill_tokens");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) {
  static const char *const a[] = {"arrived_at"}, *const p[] = {"num_prefill_tokens"},
                           *const o[] = {"num_decode_tokens"};
  int rc;
  if ((rc = kvsim__fmt_column(r, a, 1, &r->col[ARR], &r->colname[ARR], err)) < 0 ||
      (rc = kvsim__fmt_column(r, p, 1, &r->col[PROMPT], &r->colname[PROMPT], err)) < 0 ||
      (rc = kvsim__fmt_column(r, o, 1, &r->col[OUTPUT], &r->colname[OUTPUT], err)) < 0)
    return rc;
  return 0;
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  int rc = kvsim__fmt_csv_row(r, row, err);
  if (rc <= 0)
    return rc;
  if ((rc = kvsim__fmt_csv_tokens(r, r->col[PROMPT], r->colname[PROMPT], &row->prompt_tokens,
                                  err)) < 0 ||
      (rc = kvsim__fmt_csv_tokens(r, r->col[OUTPUT], r->colname[OUTPUT], &row->output_tokens,
                                  err)) < 0 ||
      (rc = kvsim__fmt_csv_seconds(r, r->col[ARR], r->colname[ARR], &row->arrival, err)) < 0)
    return rc;
  return 1;
}

const kvsim__format_t kvsim__format_vidur = {
    .name = "vidur",
    .arrival_column = "arrived_at",
    .hint = "Vidur arrived_at,num_prefill_tokens,num_decode_tokens",
    .selectable = true,
    .detect = detect,
    .open = open_,
    .next = next,
};
