#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvsim/report.h"
#include "report/tmpfiles.h"

/* A run has two streams open, summary.json and a sweep's table one each. */
#define NTMP 8
static char tmp_path[NTMP][4400];
static volatile sig_atomic_t tmp_used[NTMP];

int kvsim__tmp_track(const char *path) {
  for (int i = 0; i < NTMP; i++)
    if (!tmp_used[i]) {
      snprintf(tmp_path[i], sizeof tmp_path[i], "%s", path);
      tmp_used[i] = 1; /* set last: the handler reads a complete path */
      return i;
    }
  return -1;
}

void kvsim__tmp_forget(int slot) {
  if (slot >= 0 && slot < NTMP)
    tmp_used[slot] = 0;
}

/* unlink, signal and raise are async-signal-safe (POSIX). The default
 * action then ends the process with the signal's status (non-zero). */
static void on_signal(int sig) {
  for (int i = 0; i < NTMP; i++)
    if (tmp_used[i])
      unlink(tmp_path[i]);
  signal(sig, SIG_DFL);
  raise(sig);
}

void kvsim_report_cleanup_on_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

char *kvsim_report_json_string(const cJSON *j) { return cJSON_Print(j); }

int kvsim_report_write_atomic(const char *path, const char *text, size_t len, kvsim_err *err) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  int slot = kvsim__tmp_track(tmp);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    kvsim__tmp_forget(slot);
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
  }
  size_t n = fwrite(text, 1, len, f);
  int bad = n != len || fflush(f) != 0;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) {
    int e = errno;
    remove(tmp);
    kvsim__tmp_forget(slot);
    return kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", path, strerror(e));
  }
  kvsim__tmp_forget(slot);
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
