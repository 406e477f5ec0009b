/* A length-only table (ShareGPT or arXiv length statistics as Vidur
 * ships them, or any CSV with prompt_tokens/output_tokens columns): no
 * arrivals, so it serves synthetic.lengths_from only and cannot be named
 * as a trace format. */
#include "workload/formats/format.h"

static bool detect(const char *l) {
  return (kvsim__header_has(l, "num_prefill_tokens") && kvsim__header_has(l, "num_decode_tokens")) ||
         (kvsim__header_has(l, "prompt_tokens") && kvsim__header_has(l, "output_tokens"));
}

static int open_(kvsim__reader_t *r, kvsim_err *err) {
  static const char *const p[] = {"num_prefill_tokens", "prompt_tokens"},
                           *const o[] = {"num_decode_tokens", "output_tokens"};
  return kvsim__fmt_length_columns(r, p, 2, o, 2, err);
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  return kvsim__fmt_csv_lengths(r, row, err);
}

const kvsim__format_t kvsim__format_lengths = {
    .name = "lengths",
    .detect = detect,
    .open = open_,
    .next = next,
};
