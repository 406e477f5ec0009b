/* kvsim's own per-request output (requests.csv of `kvsim run`, columns
 * in docs/scenario.md, "Outputs").
 * - Read as a trace: arrival_s, prompt_tokens and output_tokens of every
 *   request, whatever its status. The file is written as requests
 *   finish, so its rows are read whole and handed out by (arrival,
 *   request_id): the workload's own order. Memory is O(rows) (32 bytes a
 *   row) for this format only.
 * - Read as a measured run (validation): rows in file order, one at a
 *   time; a row whose status is "finished" also carries its recorded
 *   arrival_s, first_scheduled_s, first_token_s and finish_s. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "workload/formats/format.h"

enum { ID, ARR, PROMPT, OUTPUT, SCHED, FIRST, FINISH, STATUS };

typedef struct req {
  kvsim_time_ns arrival;
  int64_t id, prompt, output;
  int64_t line;
} req_t;

typedef struct state {
  kvsim__vec(req_t) rows;
  int64_t next;
  bool loaded;
} state_t;

static bool detect(const char *l) {
  return kvsim__header_has(l, "request_id") && kvsim__header_has(l, "arrival_s") &&
         kvsim__header_has(l, "finish_s");
}

static int open_(kvsim__reader_t *r, kvsim_err *err) {
  static const char *const id[] = {"request_id"}, *const a[] = {"arrival_s"},
                           *const p[] = {"prompt_tokens"}, *const o[] = {"output_tokens"};
  int rc;
  if ((rc = kvsim__fmt_column(r, id, 1, &r->col[ID], &r->colname[ID], err)) < 0 ||
      (rc = kvsim__fmt_column(r, a, 1, &r->col[ARR], &r->colname[ARR], err)) < 0 ||
      (rc = kvsim__fmt_column(r, p, 1, &r->col[PROMPT], &r->colname[PROMPT], err)) < 0 ||
      (rc = kvsim__fmt_column(r, o, 1, &r->col[OUTPUT], &r->colname[OUTPUT], err)) < 0)
    return rc;
  if (r->measured) {
    static const char *const sc[] = {"first_scheduled_s"}, *const ft[] = {"first_token_s"},
                             *const fi[] = {"finish_s"}, *const st[] = {"status"};
    if ((rc = kvsim__fmt_column(r, sc, 1, &r->col[SCHED], &r->colname[SCHED], err)) < 0 ||
        (rc = kvsim__fmt_column(r, ft, 1, &r->col[FIRST], &r->colname[FIRST], err)) < 0 ||
        (rc = kvsim__fmt_column(r, fi, 1, &r->col[FINISH], &r->colname[FINISH], err)) < 0 ||
        (rc = kvsim__fmt_column(r, st, 1, &r->col[STATUS], &r->colname[STATUS], err)) < 0)
      return rc;
  }
  r->state = kvsim__calloc(1, sizeof(state_t));
  if (!r->state)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  return 0;
}

static int by_arrival(const void *a, const void *b) {
  const req_t *x = a, *y = b;
  if (x->arrival != y->arrival)
    return x->arrival < y->arrival ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* Reads the next CSV row's trace columns: 1, 0 at the end, or an error
 * (KVSIM_EPARSE: this row is bad, the next call goes on). */
static int read_req(kvsim__reader_t *r, req_t *q, kvsim_err *err) {
  kvsim__row_t row;
  int rc = kvsim__fmt_csv_row(r, &row, err);
  if (rc <= 0)
    return rc;
  *q = (req_t){.line = row.line};
  if ((rc = kvsim__fmt_csv_int(r, r->col[ID], "request_id", 0, INT64_MAX, true, &q->id, err)) <
          0 ||
      (rc = kvsim__fmt_csv_tokens(r, r->col[PROMPT], "prompt_tokens", &q->prompt, err)) < 0 ||
      (rc = kvsim__fmt_csv_tokens(r, r->col[OUTPUT], "output_tokens", &q->output, err)) < 0 ||
      (rc = kvsim__fmt_csv_seconds(r, r->col[ARR], "arrival_s", &q->arrival, err)) < 0)
    return rc;
  return 1;
}

static void fill_row(const req_t *q, kvsim__row_t *row) {
  memset(row, 0, sizeof *row);
  row->line = q->line;
  row->arrival = q->arrival;
  row->prompt_tokens = q->prompt;
  row->output_tokens = q->output;
  row->session = -1;
}

/* Reads one row into the table. Returns as read_req. */
static int load_row(kvsim__reader_t *r, state_t *s, kvsim_err *err) {
  req_t q;
  int rc = read_req(r, &q, err);
  if (rc <= 0)
    return rc;
  if (kvsim__vec_push(&s->rows, q) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", r->path);
  return 1;
}

/* A measured run: the next row in file order with its recorded times
 * (rejected and unfinished rows have none; they are not read). */
static int next_measured(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  req_t q;
  int rc = read_req(r, &q, err);
  if (rc <= 0)
    return rc;
  fill_row(&q, row);
  kvsim__measured_t *m = &row->measured;
  m->finished = !strcmp(kvsim__csvrow_field(r->csv, r->col[STATUS]), "finished");
  if (m->finished &&
      ((rc = kvsim__fmt_csv_num(r, r->col[ARR], "arrival_s", &m->arrival_s, err)) < 0 ||
       (rc = kvsim__fmt_csv_num(r, r->col[SCHED], "first_scheduled_s", &m->scheduled_s, err)) <
           0 ||
       (rc = kvsim__fmt_csv_num(r, r->col[FIRST], "first_token_s", &m->first_token_s, err)) < 0 ||
       (rc = kvsim__fmt_csv_num(r, r->col[FINISH], "finish_s", &m->finish_s, err)) < 0))
    return rc;
  return 1;
}

static int next(kvsim__reader_t *r, kvsim__row_t *row, kvsim_err *err) {
  if (r->measured)
    return next_measured(r, row, err);
  state_t *s = r->state;
  while (!s->loaded) {
    int rc = load_row(r, s, err);
    if (rc < 0)
      return rc;
    if (rc == 0) {
      if (s->rows.n > 1)
        qsort(s->rows.v, (size_t)s->rows.n, sizeof *s->rows.v, by_arrival);
      s->loaded = true;
    }
  }
  if (s->next == s->rows.n)
    return 0;
  fill_row(&s->rows.v[s->next++], row);
  return 1;
}

static void close_(kvsim__reader_t *r) {
  state_t *s = r->state;
  if (s)
    kvsim__vec_free(&s->rows);
  kvsim__free(s);
  r->state = NULL;
}

const kvsim__format_t kvsim__format_requests = {
    .name = "requests",
    .arrival_column = "arrival_s",
    .selectable = true,
    .measures = true,
    .detect = detect,
    .open = open_,
    .next = next,
    .close = close_,
};
