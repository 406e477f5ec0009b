/* A length-only table (ShareGPT or arXiv length statistics as Vidur
 * ships them, or any CSV with prompt_tokens/output_tokens columns): no
 * arrivals, so it serves synthetic.lengths_from only and cannot be named
 * as a trace format. */
#include "workload/formats/format.h"

enum { PROMPT, OUTPUT };

static bool detect(const char *l) {
  return (kvsim__header_has(l, "num_prefill_tokens") && kvsim__header_has(l, "num_decode_tokens")) ||
         (kvsim__header_has(l, "prompt_tokens") && kvsim__header_has(l, "output_tokens"));
}

static int open_(kvsim__reader_t *r, kvsim_err *err) {
  static const char *const p[] = {"num_prefill_tokens", "prompt_tokens"},
                           *const o[] = {"num_decode_tokens", "output_tokens"};
  int rc;
  if ((rc = kvsim__fmt_column(r, p, 2, &r->col[PROMPT], &r->colname[PROMPT], err)) < 0 ||
      (rc = kvsim__fmt_column(r, o, 2, &r->col[OUTPUT], &r->colname[OUTPUT], err)) < 0)
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
                                  err)) < 0)
    return rc;
  return 1;
}

const kvsim__format_t kvsim__format_lengths = {
    .name = "lengths",
    .detect = detect,
    .open = open_,
    .next = next,
};
