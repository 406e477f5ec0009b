/* kvsim's own CSV (`trace convert`, `trace gen`), written to a temporary
 * file beside the target and renamed into place, so nothing is left
 * half-written. Columns: arrival_s,prompt_tokens,output_tokens, then the
 * optional tenant, priority, session, turn, segments.
 *
 * The rename only ever replaces a regular file: renaming over a device
 * (--out /dev/full run as root) would replace the device node with a
 * regular file, and over a directory it fails late. A write, flush or
 * close that fails (a full disk) is an error and removes the temporary. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workload/wl.h"

/* 0 when path is absent or a regular file (symbolic links followed). */
static int check_target(const char *path, kvsim_err *err) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return errno == ENOENT ? 0
                           : kvsim_err_set(err, KVSIM_EIO, "%s: cannot check the output: %s",
                                           path, strerror(errno));
  if (S_ISREG(sb.st_mode))
    return 0;
  return kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: not a regular file (%s); give a file path to write the CSV to",
                       path, S_ISDIR(sb.st_mode) ? "a directory" : "a device, pipe or socket");
}

int kvsim__csv_writer_open(kvsim__csv_writer_t *w, const char *path, unsigned columns,
                           kvsim_err *err) {
  memset(w, 0, sizeof *w);
  int rc = check_target(path, err);
  if (rc < 0)
    return rc;
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
  if (columns & KVSIM__COL_LORA)
    fputs(",lora", w->f);
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
  if (w->columns & KVSIM__COL_LORA)
    fprintf(w->f, ",%d", (int)s->lora);
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
  int e = 0;
  errno = 0;
  if (fflush(w->f) != 0 || ferror(w->f))
    e = errno ? errno : EIO;
  if (fclose(w->f) != 0 && !e)
    e = errno ? errno : EIO;
  w->f = NULL;
  if (e) {
    remove(w->tmp);
    return kvsim_err_set(err, KVSIM_EIO, "%s: write error: %s", w->path, strerror(e));
  }
  /* The target may have appeared since open. */
  int rc = check_target(w->path, err);
  if (rc < 0) {
    remove(w->tmp);
    return rc;
  }
  if (rename(w->tmp, w->path) != 0) {
    e = errno;
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
