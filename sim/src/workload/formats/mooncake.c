/* Mooncake traces (kvcache-ai/Mooncake FAST'25 traces): JSON lines of
 * timestamp (ms from the trace start), input_length, output_length and
 * hash_ids, one id per block of hash_block_tokens (512) prompt tokens,
 * the last block partial. Each id becomes a segment, so prompts that
 * share leading ids share a cached prefix. */
#include <math.h>

#include "workload/formats/format.h"

#define MAX_TIMESTAMP_MS ((double)KVSIM__MAX_TRACE_S * 1e3)

static bool detect(const char *l) {
  return kvsim__json_has(l, "input_length") || kvsim__json_has(l, "hash_ids");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) { return 0; }

static int hash_segments(kvsim__reader_t *r, const cJSON *arr, int64_t prompt, int64_t line,
                         kvsim_err *err) {
  int64_t b = r->hash_block;
  int32_t n = cJSON_GetArraySize(arr);
  /* ceil(prompt / b) without prompt + b overflowing for a huge b. */
  int64_t want = prompt / b + (prompt % b != 0);
  if (n != want)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: column 'hash_ids': bad value (%d ids, but input_length %lld "
                         "needs ceil(%lld/%lld) = %lld)",
                         r->path, (long long)line, n, (long long)prompt, (long long)prompt,
                         (long long)b, (long long)want);
  r->segs.n = 0;
  int32_t i = 0;
  for (const cJSON *c = arr->child; c; c = c->next, i++) {
    double v = c->valuedouble;
    if (!cJSON_IsNumber(c) || !(v >= 0) || v != floor(v) || v > 9007199254740992.0)
      return kvsim_err_set(err, KVSIM_EPARSE,
                           "%s:%lld: column 'hash_ids': bad value at index %d (expected an "
                           "integer 0..9007199254740992)",
                           r->path, (long long)line, i);
    int64_t len = i + 1 < n ? b : prompt - b * (n - 1);
    if (kvsim__fmt_seg_push(r, (uint64_t)v, len) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  }
  return 0;
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  cJSON *o;
  int rc = kvsim__fmt_jsonl_row(r, row, &o, err);
  if (rc <= 0)
    return rc;
  double ts, in, out;
  if ((rc = kvsim__fmt_json_num(r, o, "timestamp", false, 0, MAX_TIMESTAMP_MS, &ts, err)) < 0 ||
      (rc = kvsim__fmt_json_num(r, o, "input_length", true, 1, (double)KVSIM__MAX_TRACE_TOKENS,
                                &in, err)) < 0 ||
      (rc = kvsim__fmt_json_num(r, o, "output_length", true, 1, (double)KVSIM__MAX_TRACE_TOKENS,
                                &out, err)) < 0)
    goto done;
  /* Milliseconds from the trace start. */
  row->arrival = (kvsim_time_ns)llround(ts * 1e6);
  row->prompt_tokens = (int64_t)in;
  row->output_tokens = (int64_t)out;
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "hash_ids");
  if (h && !cJSON_IsNull(h)) {
    if (!cJSON_IsArray(h)) {
      rc = kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: column 'hash_ids': bad value (expected an array)", r->path,
                         (long long)row->line);
      goto done;
    }
    if ((rc = hash_segments(r, h, row->prompt_tokens, row->line, err)) < 0)
      goto done;
  }
  kvsim__fmt_seg_done(r, row);
  rc = 1;
done:
  cJSON_Delete(o);
  return rc;
}

static unsigned columns(const kvsim__reader_t *r) { return KVSIM__COL_SEGMENTS; }

const kvsim__format_t kvsim__format_mooncake = {
    .name = "mooncake",
    .arrival_column = "timestamp",
    .jsonl = true,
    .selectable = true,
    .hash_block = true,
    .detect = detect,
    .open = open_,
    .next = next,
    .columns = columns,
};
