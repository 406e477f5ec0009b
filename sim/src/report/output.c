#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvsim/report.h"

char *kvsim_report_json_string(const cJSON *j) { return cJSON_Print(j); }

int kvsim_report_write_atomic(const char *path, const char *text, size_t len, kvsim_err *err) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
  size_t n = fwrite(text, 1, len, f);
  int bad = n != len || fflush(f) != 0;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    return kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", path, strerror(e));
  }
  return KVSIM_OK;
}

int kvsim_report_mkdirs(const char *dir, kvsim_err *err) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(buf, 0777) < 0 && errno != EEXIST)
        return kvsim_err_set(err, KVSIM_EIO, "%s: cannot create folder: %s", buf, strerror(errno));
      *p = '/';
    }
  if (mkdir(buf, 0777) < 0 && errno != EEXIST)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot create folder: %s", buf, strerror(errno));
  return KVSIM_OK;
}
