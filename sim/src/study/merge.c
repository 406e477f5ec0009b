/* kvsim sweep --merge: the tables of a sweep's shards, run on several
 * machines, joined into the sweep.csv one machine would have written.
 * Point i is row i / N of shard i % N (kvsim_sweep_run's striding), so the
 * join interleaves whole rows, byte for byte. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/vec.h"
#include "kvsim/report.h"
#include "study/shard.h"

typedef struct span {
  size_t off, len; /* one CSV record with its newline */
} span_t;

typedef struct shard {
  char record[4400]; /* its sweep.shardI.json */
  char name[128], hash[24];
  int64_t index, count, points;
  char *text;              /* its table */
  kvsim__vec(span_t) rows; /* the header first */
} shard_t;

typedef kvsim__vec(shard_t) shards_t;

/* Reads DIR/sweep.shardI.json into *sh. */
static int read_record(const char *path, shard_t *sh, kvsim_err *err) {
  memset(sh, 0, sizeof *sh);
  snprintf(sh->record, sizeof sh->record, "%s", path);
  cJSON *j = kvsim__json_load(path, err);
  if (!j)
    return err->code;
  /* Each getter: 1 present, 0 absent, < 0 wrong (err set). The shard
   * index is checked against the count, so the count comes first. The
   * getters join a `where` to the key with a dot; given none, the error
   * gets the file in front ("PATH: shards: ..."), as a scenario's do. */
  int r[5] = {0}, rc;
  bool bad = (r[0] = kvsim__json_str(j, "sweep", sh->name, sizeof sh->name, "", err)) < 0 ||
             (r[1] = kvsim__json_str(j, "sweep_hash", sh->hash, sizeof sh->hash, "", err)) < 0 ||
             (r[2] = kvsim__json_int_in(j, "shards", 1, 1 << 20, &sh->count, "", err)) < 0;
  if (!bad && r[2])
    bad = (r[3] = kvsim__json_int_in(j, "shard", 0, sh->count - 1, &sh->index, "", err)) < 0 ||
          (r[4] = kvsim__json_int_in(j, "points", 1, KVSIM_SWEEP_MAX_POINTS, &sh->points, "",
                                     err)) < 0;
  if (bad)
    rc = kvsim_err_prefix(err, "%s", path);
  else if (!(r[0] && r[1] && r[2] && r[3] && r[4] && sh->hash[0] && sh->name[0]))
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: not a shard record (sweep, sweep_hash, shard, shards, points)", path);
  else {
    /* The sweep's name names the merged table's default folder
     * (results/<name>): refused as in a sweep file, never climbing out. */
    char where[4200];
    snprintf(where, sizeof where, "%s: sweep", path);
    rc = kvsim__check_name(sh->name, where, err);
  }
  cJSON_Delete(j);
  return rc;
}

/* Every sweep.shardI.json in dir, appended to *all. */
static int scan_dir(const char *dir, shards_t *all, kvsim_err *err) {
  DIR *d = opendir(dir);
  if (!d)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot read the folder: %s", dir, strerror(errno));
  int rc = KVSIM_OK, found = 0;
  for (struct dirent *e; rc == KVSIM_OK && (e = readdir(d));) {
    int i, end = 0;
    if (sscanf(e->d_name, "sweep.shard%d.json%n", &i, &end) != 1 || e->d_name[end] || i < 0)
      continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    shard_t sh;
    if ((rc = read_record(path, &sh, err)) == KVSIM_OK && (rc = kvsim__vec_push(all, sh)) < 0)
      rc = kvsim_err_set(err, rc, "%s: out of memory", path);
    found++;
  }
  closedir(d);
  if (rc == KVSIM_OK && !found)
    rc = kvsim_err_set(
        err, KVSIM_EINVAL,
        "%s: no shard in this folder (no sweep.shardI.json: run kvsim sweep --shard I/N "
        "--out here)",
        dir);
  return rc;
}

/* Splits a table into CSV records; a quoted field may hold a newline. */
static int split_rows(shard_t *sh, const char *where, kvsim_err *err) {
  size_t n = strlen(sh->text), start = 0;
  bool quoted = false;
  for (size_t i = 0; i < n; i++) {
    if (sh->text[i] == '"')
      quoted = !quoted;
    else if (sh->text[i] == '\n' && !quoted) {
      if (kvsim__vec_push(&sh->rows, ((span_t){start, i + 1 - start})) < 0)
        return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", where);
      start = i + 1;
    }
  }
  if (start != n || !sh->rows.n)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: the table is cut short", where);
  return KVSIM_OK;
}

/* Reads shard sh's table beside its record and checks it holds the rows
 * of its points, in order, under the same header as shard 0's. */
static int read_table(shard_t *sh, const shard_t *first, kvsim_err *err) {
  char path[4500];
  snprintf(path, sizeof path, "%s", sh->record);
  char *slash = strrchr(path, '/');
  snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), KVSIM__SHARD_TABLE, (int)sh->index);
  int rc = kvsim__read_file(path, &sh->text, NULL, err);
  if (rc < 0 || (rc = split_rows(sh, path, err)) < 0)
    return rc;
  int64_t want = sh->index < sh->points ? (sh->points - sh->index + sh->count - 1) / sh->count : 0;
  if (sh->rows.n - 1 != want)
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: %lld rows, but shard %lld/%lld of %lld points has %lld", path,
                         (long long)(sh->rows.n - 1), (long long)sh->index, (long long)sh->count,
                         (long long)sh->points, (long long)want);
  const span_t *h = &sh->rows.v[0], *h0 = &first->rows.v[0];
  if (first != sh &&
      (h->len != h0->len || memcmp(sh->text + h->off, first->text + h0->off, h->len)))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: its header differs from %s's", path,
                         first->record);
  for (int64_t r = 1; r < sh->rows.n; r++) {
    char run[32];
    int len = snprintf(run, sizeof run, "run%04lld,", (long long)(sh->index + (r - 1) * sh->count));
    if (sh->rows.v[r].len <= (size_t)len || memcmp(sh->text + sh->rows.v[r].off, run, (size_t)len))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: row %lld is not %.*s", path, (long long)r,
                           len - 1, run);
  }
  return KVSIM_OK;
}

/* One sweep, every shard once: slot[i] is shard i. */
static int check_set(shards_t *all, shard_t **slot, kvsim_err *err) {
  const shard_t *a = &all->v[0];
  for (int64_t k = 0; k < all->n; k++) {
    shard_t *sh = &all->v[k];
    if (strcmp(sh->hash, a->hash) || sh->points != a->points)
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s: a shard of another sweep ('%s', hash %s) than %s ('%s', hash %s)",
                           sh->record, sh->name, sh->hash, a->record, a->name, a->hash);
    if (sh->count != a->count)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: shard %lld/%lld, but %s is one of %lld shards",
                           sh->record, (long long)sh->index, (long long)sh->count, a->record,
                           (long long)a->count);
    if (slot[sh->index])
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: shard %lld/%lld given twice (also %s)",
                           sh->record, (long long)sh->index, (long long)sh->count,
                           slot[sh->index]->record);
    slot[sh->index] = sh;
  }
  for (int64_t i = 0; i < a->count; i++)
    if (!slot[i])
      return kvsim_err_set(
          err, KVSIM_EINVAL, "shard %lld/%lld of sweep '%s' is missing (%lld of %lld shards given)",
          (long long)i, (long long)a->count, a->name, (long long)all->n, (long long)a->count);
  return KVSIM_OK;
}

static int write_merged(shard_t **slot, const char *out, char *table, size_t cap, kvsim_err *err) {
  const shard_t *a = slot[0];
  size_t len = 0;
  for (int64_t i = 0; i < a->count; i++)
    for (int64_t r = i ? 1 : 0; r < slot[i]->rows.n; r++)
      len += slot[i]->rows.v[r].len;
  char *text = kvsim__malloc(len + 1), *p = text;
  if (!text)
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory for the table", out);
  memcpy(p, a->text, a->rows.v[0].len);
  p += a->rows.v[0].len;
  for (int64_t i = 0; i < a->points; i++) {
    const shard_t *sh = slot[i % a->count];
    const span_t *row = &sh->rows.v[1 + i / a->count];
    memcpy(p, sh->text + row->off, row->len);
    p += row->len;
  }
  snprintf(table, cap, "%s/sweep.csv", out);
  /* The folders made for the table go again when it cannot be written
   * (a full disk): no empty --out left behind. */
  kvsim_new_dirs_t made;
  kvsim_report_new_dirs(out, &made);
  int rc = kvsim_report_mkdirs(out, err);
  if (rc == KVSIM_OK)
    rc = kvsim_report_write_atomic(table, text, (size_t)(p - text), err);
  if (rc < 0)
    kvsim_report_new_dirs_undo(&made);
  else
    kvsim_report_new_dirs_keep(&made);
  kvsim__free(text);
  return rc;
}

int kvsim_sweep_merge(const char *const *dirs, int ndirs, const char *out, char *table, size_t cap,
                      kvsim_err *err) {
  table[0] = '\0';
  if (ndirs < 1)
    return kvsim_err_set(err, KVSIM_EINVAL, "--merge: no folder given");
  shards_t all = {0};
  shard_t **slot = NULL;
  int rc = KVSIM_OK;
  for (int d = 0; d < ndirs && rc == KVSIM_OK; d++)
    rc = scan_dir(dirs[d], &all, err);
  if (rc == KVSIM_OK && !(slot = kvsim__calloc((size_t)all.v[0].count, sizeof *slot)))
    rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %lld shards",
                       (long long)all.v[0].count);
  if (rc == KVSIM_OK)
    rc = check_set(&all, slot, err);
  for (int64_t i = 0; rc == KVSIM_OK && i < all.v[0].count; i++)
    rc = read_table(slot[i], slot[0], err);
  /* What is wrong with the shards names --merge once; the --out check
   * and the writing below name their own flag or path. */
  if (rc < 0)
    kvsim_err_prefix(err, "--merge");
  char dir[4096];
  if (rc == KVSIM_OK) {
    snprintf(dir, sizeof dir, out ? "%s" : "results/%s", out ? out : slot[0]->name);
    /* The merged table beside a shard's own would mix one machine's
     * folder with the whole sweep's. */
    for (int d = 0; rc == KVSIM_OK && d < ndirs; d++)
      if (kvsim__same_file(dir, dirs[d]))
        rc = kvsim_err_set(err, KVSIM_EINVAL,
                           "--out: %s is the shard folder %s (the merged table needs a folder of "
                           "its own)",
                           dir, dirs[d]);
    if (rc == KVSIM_OK)
      rc = write_merged(slot, dir, table, cap, err);
  }
  for (int64_t k = 0; k < all.n; k++) {
    free(all.v[k].text);
    kvsim__vec_free(&all.v[k].rows);
  }
  kvsim__vec_free(&all);
  kvsim__free(slot);
  return rc;
}
