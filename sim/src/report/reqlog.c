/* A run's requests for its steady window (report/reqlog.h). */
#include "report/reqlog.h"

#include <string.h>

#include "core/vec.h"
#include "kvsim/error.h"

/* As many as a distribution keeps exact values (kvsim/stats.h): 3 MiB. */
#define REQLOG_MEM 65536

void kvsim__reqlog_init(kvsim__reqlog_t *l) { memset(l, 0, sizeof *l); }

void kvsim__reqlog_fini(kvsim__reqlog_t *l) {
  kvsim__free(l->mem);
  if (l->spill)
    fclose(l->spill);
  memset(l, 0, sizeof *l);
}

int kvsim__reqlog_add(kvsim__reqlog_t *l, const kvsim__req_rec_t *r) {
  if (!l->n || r->arrival < l->first)
    l->first = r->arrival;
  if (!l->n || r->arrival > l->last)
    l->last = r->arrival;
  if (l->nmem < REQLOG_MEM) {
    if (kvsim__grow((void **)&l->mem, &l->cap, l->nmem + 1, sizeof *l->mem) < 0)
      return KVSIM_ENOMEM;
    l->mem[l->nmem++] = *r;
  } else {
    /* tmpfile(): unlinked at once, so nothing is left behind whatever
     * ends the process. */
    if (!l->spill && !(l->spill = tmpfile()))
      return KVSIM_EIO;
    if (fwrite(r, sizeof *r, 1, l->spill) != 1)
      return KVSIM_EIO;
  }
  l->n++;
  return KVSIM_OK;
}

int kvsim__reqlog_rewind(kvsim__reqlog_t *l) {
  l->pos = 0;
  if (l->spill && (fflush(l->spill) != 0 || fseek(l->spill, 0, SEEK_SET) != 0))
    return KVSIM_EIO;
  return KVSIM_OK;
}

int kvsim__reqlog_next(kvsim__reqlog_t *l, kvsim__req_rec_t *out) {
  if (l->pos < l->nmem) {
    *out = l->mem[l->pos++];
    return 1;
  }
  if (l->pos >= l->n)
    return 0;
  if (fread(out, sizeof *out, 1, l->spill) != 1)
    return KVSIM_EIO;
  l->pos++;
  return 1;
}
