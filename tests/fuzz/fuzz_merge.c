/* sweep --merge on shard files decoded from the input: "RECORD\0TABLE\0
 * RECORD\0TABLE..." become sweep.shardI.json / sweep.shardI.csv in a fresh
 * folder (at most four shards), merged into a table beside them. Refused
 * with one line, or merged. */
#include <dirent.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "kvsim/study.h"

static void put(const char *dir, const char *name, const char *data, size_t n) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f) {
    fwrite(data, 1, n, f);
    fclose(f);
  }
}

/* Removes dir and the files in it, one level of folders deep. */
static void remove_tree(const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) != 0 && depth > 0)
      remove_tree(path, depth - 1);
  }
  closedir(d);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *tmp = getenv("TMPDIR");
  char dir[512], out[560];
  snprintf(dir, sizeof dir, "%s/kvsim-fuzz-merge-%d", tmp && *tmp ? tmp : "/tmp", (int)getpid());
  remove_tree(dir, 1);
  if (mkdir(dir, 0700) != 0)
    return 0;
  const char *p = (const char *)data, *end = p + size;
  for (int i = 0; i < 8 && p < end; i++) {
    const char *nul = memchr(p, '\0', (size_t)(end - p));
    size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);
    char name[64];
    snprintf(name, sizeof name, "sweep.shard%d.%s", i / 2, i % 2 ? "csv" : "json");
    put(dir, name, p, n);
    p += n + (nul != NULL);
  }
  snprintf(out, sizeof out, "%s/merged", dir);
  const char *dirs[] = {dir};
  char table[4200];
  kvsim_err err = {0};
  (void)kvsim_sweep_merge(dirs, 1, out, table, sizeof table, &err);
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  remove_tree(dir, 1);
  return 0;
}
