/* Azure LLM inference traces (Azure/AzurePublicDataset, 2023 and 2024):
 * TIMESTAMP,ContextTokens,GeneratedTokens; arrivals count from the first
 * row's timestamp, read to the nanosecond without a float. */
#include "workload/formats/format.h"

enum { ARR = KVSIM__COL_NEXT };

static bool detect(const char *l) {
  return kvsim__header_has(l, "TIMESTAMP") && kvsim__header_has(l, "ContextTokens");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) {
  static const char *const a[] = {"TIMESTAMP"}, *const p[] = {"ContextTokens"},
                           *const o[] = {"GeneratedTokens"};
  int rc = kvsim__fmt_column(r, a, 1, &r->col[ARR], &r->colname[ARR], err);
  return rc < 0 ? rc : kvsim__fmt_length_columns(r, p, 1, o, 1, err);
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  int rc = kvsim__fmt_csv_lengths(r, row, err);
  if (rc <= 0)
    return rc;
  int64_t ns;
  rc = kvsim__parse_azure_ts(kvsim__csvrow_field(r->csv, r->col[ARR]), &ns);
  if (rc == -1)
    return kvsim__fmt_csv_bad(r, r->col[ARR], "TIMESTAMP", "'YYYY-MM-DD HH:MM:SS.fffffff'", err);
  if (rc == -2)
    return kvsim__fmt_csv_bad(r, r->col[ARR], "TIMESTAMP", "a date in the years 1678..2261",
                              err);
  if (kvsim__fmt_from_base(r, ns, &row->arrival) < 0)
    return kvsim__fmt_csv_bad(r, r->col[ARR], "TIMESTAMP",
                              "at most 9000000000 s after the first row", err);
  return 1;
}

const kvsim__format_t kvsim__format_azure = {
    .name = "azure",
    .arrival_column = "TIMESTAMP",
    .hint = "Azure TIMESTAMP,ContextTokens,GeneratedTokens",
    .selectable = true,
    .detect = detect,
    .open = open_,
    .next = next,
};
