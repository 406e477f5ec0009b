/* kvsim's own trace CSV (what `kvsim trace convert` and `trace gen`
 * write): arrival_s,prompt_tokens,output_tokens, then optional tenant,
 * priority, session, turn, lora (the LoRA adapter, vLLM's lora_int_id: 1
 * and up; 0 or empty: the base model), and a prompt identity given either as
 * segments "id:len id:len ..." or as prefix_group + prefix_tokens (a
 * shared system prompt, the rest of the prompt unique to the row). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workload/formats/format.h"

enum { ARR, PROMPT, OUTPUT, TENANT, PRIORITY, SESSION, TURN, SEGMENTS, GROUP, GROUP_TOKENS,
       LORA, NCOL };

static const char *const names[NCOL] = {"arrival_s", "prompt_tokens", "output_tokens",
                                        "tenant", "priority", "session", "turn", "segments",
                                        "prefix_group", "prefix_tokens", "lora"};

/* Group ids share the id space of the synthetic system prompts
 * (KVSIM__SEG_GROUP | group): they must leave its top bits alone. */
#define MAX_GROUP INT64_C(0x0FFFFFFFFFFFFFFF)

static bool detect(const char *l) {
  return kvsim__header_has(l, "arrival_s") && kvsim__header_has(l, "prompt_tokens");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) {
  for (int k = 0; k < NCOL; k++) {
    r->colname[k] = names[k];
    r->col[k] = kvsim__fmt_opt_column(r, names[k]);
  }
  for (int k = ARR; k <= OUTPUT; k++)
    if (r->col[k] < 0)
      return kvsim_err_set(err, KVSIM_EPARSE, "%s:1: missing column '%s' for format kvsim",
                           r->path, names[k]);
  return 0;
}

/* 'segments': "id:len id:len ..." summing to prompt_tokens. */
static int parse_segments(kvsim__reader_t *r, const char *s, int64_t prompt, kvsim_err *err) {
  r->segs.n = 0;
  int64_t sum = 0;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == ';' || *p == '\t')
      p++;
    if (!*p)
      break;
    char *end;
    errno = 0;
    /* Decimal, or hex with 0x (never octal: "010" is ten). */
    bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
    if (*p == '-' || *p == '+')
      goto bad;
    unsigned long long id = strtoull(p, &end, hex ? 16 : 10);
    if (errno || end == p || *end != ':')
      goto bad;
    p = end + 1;
    long long len = strtoll(p, &end, 10);
    if (errno || end == p || len < 1 || len > KVSIM__MAX_TRACE_TOKENS ||
        (*end && *end != ' ' && *end != ';'))
      goto bad;
    p = end;
    sum += len;
    if (sum > KVSIM__MAX_TRACE_TOKENS)
      break; /* cannot match prompt_tokens: reported below */
    if (kvsim__fmt_seg_push(r, (uint64_t)id, len) < 0)
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  }
  if (sum != prompt)
    return kvsim_err_set(err, KVSIM_EPARSE,
                         "%s:%lld: column 'segments': bad value (lengths sum to %lld, "
                         "prompt_tokens is %lld)",
                         r->path, (long long)kvsim__csvrow_field_line(r->csv, r->col[SEGMENTS]),
                         (long long)sum, (long long)prompt);
  return 0;
bad:
  return kvsim__fmt_csv_bad(r, r->col[SEGMENTS], "segments",
                            "'id:len id:len ...', each len 1..2147483647", err);
}

static int opt_int(kvsim__reader_t *r, int k, int64_t lo, int64_t hi, int64_t *out,
                   kvsim_err *err) {
  return kvsim__fmt_csv_int(r, r->col[k], names[k], lo, hi, false, out, err);
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  int rc = kvsim__fmt_csv_row(r, row, err);
  if (rc <= 0)
    return rc;
  if ((rc = kvsim__fmt_csv_tokens(r, r->col[PROMPT], names[PROMPT], &row->prompt_tokens, err)) <
          0 ||
      (rc = kvsim__fmt_csv_tokens(r, r->col[OUTPUT], names[OUTPUT], &row->output_tokens, err)) <
          0 ||
      (rc = kvsim__fmt_csv_seconds(r, r->col[ARR], names[ARR], &row->arrival, err)) < 0)
    return rc;
  int64_t x;
  if ((rc = opt_int(r, TENANT, 0, INT32_MAX, &x, err)) < 0)
    return rc;
  if (rc)
    row->tenant = (int32_t)x;
  if ((rc = opt_int(r, LORA, 0, INT32_MAX, &x, err)) < 0)
    return rc;
  if (rc)
    row->lora = (int32_t)x;
  if ((rc = opt_int(r, PRIORITY, INT32_MIN, INT32_MAX, &x, err)) < 0)
    return rc;
  if (rc)
    row->priority = (int32_t)x;
  if ((rc = opt_int(r, SESSION, 0, INT64_MAX, &row->session, err)) < 0)
    return rc;
  if ((rc = opt_int(r, TURN, 0, INT32_MAX, &x, err)) < 0)
    return rc;
  if (rc)
    row->turn = (int32_t)x;
  const char *sg = kvsim__csvrow_field(r->csv, r->col[SEGMENTS]);
  int64_t group = -1, ptoks = 0;
  if ((rc = opt_int(r, GROUP, 0, MAX_GROUP, &group, err)) < 0)
    return rc;
  if (rc && (rc = kvsim__fmt_csv_int(r, r->col[GROUP_TOKENS], names[GROUP_TOKENS], 1,
                                     KVSIM__MAX_TRACE_TOKENS, true, &ptoks, err)) < 0)
    return rc;
  while (sg && (*sg == ' ' || *sg == '\t'))
    sg++;
  if (sg && *sg) {
    if (group >= 0)
      return kvsim_err_set(err, KVSIM_EPARSE,
                           "%s:%lld: column 'prefix_group': give either segments or "
                           "prefix_group, not both",
                           r->path, (long long)row->line);
    if ((rc = parse_segments(r, sg, row->prompt_tokens, err)) < 0)
      return rc;
  } else if (group >= 0) {
    if (ptoks > row->prompt_tokens)
      return kvsim_err_set(err, KVSIM_EPARSE,
                           "%s:%lld: column 'prefix_tokens': bad value %lld (more than "
                           "prompt_tokens %lld)",
                           r->path, (long long)row->line, (long long)ptoks,
                           (long long)row->prompt_tokens);
    /* Same id space as the synthetic shared system prompts; the rest of
     * the prompt is unique to this line. */
    if (kvsim__fmt_seg_push(r, KVSIM__SEG_GROUP | (uint64_t)group, ptoks) < 0 ||
        (ptoks < row->prompt_tokens &&
         kvsim__fmt_seg_push(r, KVSIM__SEG_ROWTEXT | (uint64_t)row->line,
                             row->prompt_tokens - ptoks) < 0))
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  }
  kvsim__fmt_seg_done(r, row);
  return 1;
}

static unsigned columns(const kvsim__reader_t *r) {
  unsigned m = 0;
  if (r->col[TENANT] >= 0)
    m |= KVSIM__COL_TENANT;
  if (r->col[PRIORITY] >= 0)
    m |= KVSIM__COL_PRIORITY;
  if (r->col[LORA] >= 0)
    m |= KVSIM__COL_LORA;
  if (r->col[SESSION] >= 0)
    m |= KVSIM__COL_SESSION;
  if (r->col[TURN] >= 0)
    m |= KVSIM__COL_TURN;
  if (r->col[SEGMENTS] >= 0 || r->col[GROUP] >= 0)
    m |= KVSIM__COL_SEGMENTS;
  return m;
}

const kvsim__format_t kvsim__format_kvsim = {
    .name = "kvsim",
    .arrival_column = "arrival_s",
    .hint = "kvsim arrival_s,prompt_tokens,output_tokens",
    .selectable = true,
    .detect = detect,
    .open = open_,
    .next = next,
    .columns = columns,
};
