/* kvsim's own CSV (`trace convert`, `trace gen`), written to a temporary
 * file beside the target and renamed into place, so nothing is left
 * half-written. Columns: arrival_s,prompt_tokens,output_tokens, then the
 * optional tenant, priority, session, turn, segments. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workload/wl.h"

int kvsim__csv_writer_open(kvsim__csv_writer_t *w, const char *path, unsigned columns,
                           kvsim_err *err) {
  memset(w, 0, sizeof *w);
  snprintf(w->path, sizeof w->path, "%s", path);
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid());
  w->columns = columns;
  w->f = fopen(w->tmp, "wb");
  if (!w->f)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot create: %s", w->tmp, strerror(errno));
  fputs("arrival_s,prompt_tokens,output_tokens", w->f);
  if (columns & KVSIM__COL_TENANT)
    fputs(",tenant", w->f);
  if (columns & KVSIM__COL_PRIORITY)
    fputs(",priority", w->f);
  if (columns & KVSIM__COL_SESSION)
    fputs(",session", w->f);
  if (columns & KVSIM__COL_TURN)
    fputs(",turn", w->f);
  if (columns & KVSIM__COL_SEGMENTS)
    fputs(",segments", w->f);
  fputc('\n', w->f);
  return 0;
}

int kvsim__csv_writer_row(kvsim__csv_writer_t *w, const kvsim_req_spec_t *s, kvsim_err *err) {
  /* Arrival with nanosecond digits: exact, so a round trip is lossless. */
  int64_t t = s->arrival;
  fprintf(w->f, "%s%" PRId64 ".%09" PRId64 ",%" PRId64 ",%" PRId64, t < 0 ? "-" : "",
          (t < 0 ? -t : t) / KVSIM_NS_PER_S, (t < 0 ? -t : t) % KVSIM_NS_PER_S,
          s->prompt_tokens, s->output_tokens);
  if (w->columns & KVSIM__COL_TENANT)
    fprintf(w->f, ",%d", (int)s->tenant);
  if (w->columns & KVSIM__COL_PRIORITY)
    fprintf(w->f, ",%d", (int)s->priority);
  if (w->columns & KVSIM__COL_SESSION) {
    if (s->session >= 0)
      fprintf(w->f, ",%" PRId64, s->session);
    else
      fputc(',', w->f);
  }
  if (w->columns & KVSIM__COL_TURN)
    fprintf(w->f, ",%d", (int)s->turn);
  if (w->columns & KVSIM__COL_SEGMENTS) {
    fputc(',', w->f);
    /* Ids in kvsim's own namespaces (top bits set) are written in hex,
     * trace ids (Mooncake hash ids) in decimal; the reader takes both. */
    for (int32_t i = 0; i < s->num_segments; i++)
      fprintf(w->f,
              s->segments[i].id >> 60 ? "%s0x%" PRIx64 ":%" PRId64 : "%s%" PRIu64 ":%" PRId64,
              i ? " " : "", s->segments[i].id, s->segments[i].len);
  }
  if (fputc('\n', w->f) == EOF)
    return kvsim_err_set(err, KVSIM_EIO, "%s: write error: %s", w->tmp, strerror(errno));
  return 0;
}

int kvsim__csv_writer_commit(kvsim__csv_writer_t *w, kvsim_err *err) {
  int bad = ferror(w->f);
  if (fclose(w->f) != 0)
    bad = 1;
  w->f = NULL;
  if (bad) {
    remove(w->tmp);
    return kvsim_err_set(err, KVSIM_EIO, "%s: write error", w->tmp);
  }
  if (rename(w->tmp, w->path) != 0) {
    int e = errno;
    remove(w->tmp);
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot rename into place: %s", w->path,
                         strerror(e));
  }
  return 0;
}

void kvsim__csv_writer_abort(kvsim__csv_writer_t *w) {
  if (w->f) {
    fclose(w->f);
    w->f = NULL;
    remove(w->tmp);
  }
}
