/* Vidur's processed traces (microsoft/vidur data/processed_traces):
 * arrived_at (seconds),num_prefill_tokens,num_decode_tokens. */
#include "workload/formats/format.h"

enum { ARR = KVSIM__COL_NEXT };

static bool detect(const char *l) {
  return kvsim__header_has(l, "arrived_at") && kvsim__header_has(l, "num_prefill_tokens");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) {
  static const char *const a[] = {"arrived_at"}, *const p[] = {"num_prefill_tokens"},
                           *const o[] = {"num_decode_tokens"};
  int rc = kvsim__fmt_column(r, a, 1, &r->col[ARR], &r->colname[ARR], err);
  return rc < 0 ? rc : kvsim__fmt_length_columns(r, p, 1, o, 1, err);
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  int rc = kvsim__fmt_csv_lengths(r, row, err);
  if (rc <= 0)
    return rc;
  return kvsim__fmt_csv_seconds(r, r->col[ARR], r->colname[ARR], &row->arrival, err);
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
