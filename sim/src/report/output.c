#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kvsim/report.h"
#include "report/tmpfiles.h"

/* A run has two streams open, summary.json and a sweep's table one each;
 * a run's finished outputs are tracked too while it may still fail. */
#define NTMP 16
static char tmp_path[NTMP][4400];
static volatile sig_atomic_t tmp_used[NTMP];
/* The process that tracked each one: a forked child inherits the tables,
 * and must not remove what its parent still writes or keeps. */
static pid_t tmp_pid[NTMP];

/* Folders a command is about to create (kvsim_report_new_dirs): removed
 * on a signal if empty, deepest first, down to the first one it made. */
#define NDIRS 4
static char dir_path[NDIRS][4096];
static size_t dir_top[NDIRS];
static pid_t dir_pid[NDIRS];
static volatile sig_atomic_t dir_used[NDIRS];

/* A caller's last step (kvsim__signal_hook), in its own process only:
 * forked children inherit it but must not run it. */
static void (*volatile hook_fn)(int sig);
static volatile pid_t hook_pid;

int kvsim__tmp_track(const char *path) {
  for (int i = 0; i < NTMP; i++)
    if (!tmp_used[i]) {
      snprintf(tmp_path[i], sizeof tmp_path[i], "%s", path);
      tmp_pid[i] = getpid();
      tmp_used[i] = 1; /* set last: the handler reads a complete path */
      return i;
    }
  return -1;
}

void kvsim__tmp_forget(int slot) {
  if (slot >= 0 && slot < NTMP)
    tmp_used[slot] = 0;
}

int kvsim_report_track(const char *path) { return kvsim__tmp_track(path); }

void kvsim_report_untrack(int slot) { kvsim__tmp_forget(slot); }

void kvsim__signal_hook(void (*fn)(int sig)) {
  hook_fn = NULL;
  hook_pid = getpid();
  hook_fn = fn;
}

char *kvsim__put_s(char *p, const char *end, const char *s) {
  while (*s && p < end)
    *p++ = *s++;
  return p;
}

char *kvsim__put_n(char *p, const char *end, int64_t v, int width) {
  char d[24];
  int n = 0;
  do
    d[n++] = (char)('0' + v % 10);
  while ((v /= 10) > 0);
  while (n < width)
    d[n++] = '0';
  while (n && p < end)
    *p++ = d[--n];
  return p;
}

const char *kvsim__signal_name(int sig) {
  switch (sig) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  case SIGQUIT:
    return "SIGQUIT";
  case SIGPIPE:
    return "SIGPIPE";
  case SIGXCPU:
    return "SIGXCPU";
  case SIGXFSZ:
    return "SIGXFSZ";
  case SIGUSR1:
    return "SIGUSR1";
  case SIGUSR2:
    return "SIGUSR2";
  case SIGALRM:
    return "SIGALRM";
  default:
    return "a signal";
  }
}

/* rmdir removes only an empty folder: what was made, never what a user
 * put there. p is modified (parents are cut off in place). */
static void rmdir_chain(char *p, size_t top) {
  size_t n = strlen(p);
  while (top > 0 && n >= top && rmdir(p) == 0) {
    while (n > 0 && p[n - 1] != '/')
      n--;
    while (n > 0 && p[n - 1] == '/')
      n--;
    p[n] = '\0';
  }
}

/* unlink, rmdir, strlen, getpid, signal and raise are async-signal-safe
 * (POSIX). The default action then ends the process with the signal's
 * status (non-zero). */
static void on_signal(int sig) {
  pid_t self = getpid();
  for (int i = 0; i < NTMP; i++)
    if (tmp_used[i] && tmp_pid[i] == self)
      unlink(tmp_path[i]);
  void (*fn)(int) = hook_fn;
  if (fn && hook_pid == self)
    fn(sig);
  for (int i = NDIRS - 1; i >= 0; i--)
    if (dir_used[i] && dir_pid[i] == self)
      rmdir_chain(dir_path[i], dir_top[i]);
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
  /* A closed terminal or ssh session (HUP), Ctrl-\ (QUIT), a reader that
   * went away (PIPE: `kvsim run --progress 2>&1 | head`), a CPU-time or
   * file-size limit (XCPU: ulimit -t and batch schedulers; XFSZ), and the
   * signals whose default action also ends the process (USR1, USR2, ALRM:
   * `timeout -s USR1`, a job scheduler's warning signal). One
   * inherited as ignored stays ignored: nohup ignores HUP, a background
   * job QUIT, and a caller that ignores PIPE or XFSZ asks for the write
   * error instead, which the writers report. */
  static const int more[] = {SIGHUP, SIGQUIT, SIGPIPE, SIGXCPU, SIGXFSZ, SIGUSR1, SIGUSR2, SIGALRM};
  for (size_t i = 0; i < sizeof more / sizeof *more; i++) {
    struct sigaction old;
    if (sigaction(more[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
      sigaction(more[i], &sa, NULL);
  }
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

int kvsim_report_check_out_dir(const char *dir, const char *const *names, kvsim_err *err) {
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
    return kvsim_err_set(err, KVSIM_EIO, "%.64s...: cannot create folder: path too long", dir);
  size_t n = strlen(buf);
  while (n > 1 && buf[n - 1] == '/')
    buf[--n] = '\0';
  /* Walk down: every existing part is a folder; stop at the first missing. */
  struct stat st;
  char last[4096] = ".";
  bool missing = false;
  for (char *p = buf + (buf[0] == '/'); !missing; p++)
    if (*p == '/' || !*p) {
      char c = *p;
      *p = '\0';
      if (stat(buf, &st) != 0) {
        if (errno != ENOENT)
          return kvsim_err_set(err, KVSIM_EIO, "%s: cannot create folder: %s", buf, strerror(errno));
        missing = true;
      } else if (!S_ISDIR(st.st_mode)) {
        return kvsim_err_set(err, KVSIM_EIO, "%s: cannot create folder: %s", buf, strerror(ENOTDIR));
      } else {
        snprintf(last, sizeof last, "%s", buf[0] ? buf : "/");
      }
      *p = c;
      if (!c)
        break;
    }
  /* The folder that will hold the outputs, or the one new folders go in. */
  if (access(last, W_OK | X_OK) != 0)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", missing ? buf : last,
                         strerror(errno));
  for (const char *const *f = names; !missing && f && *f; f++) {
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", buf, *f);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
      return kvsim_err_set(err, KVSIM_EIO, "%s: write failed: %s", path, strerror(EISDIR));
  }
  return KVSIM_OK;
}

void kvsim_report_new_dirs(const char *dir, kvsim_new_dirs_t *m) {
  memset(m, 0, sizeof *m);
  m->slot = -1;
  snprintf(m->dir, sizeof m->dir, "%s", dir);
  size_t n = strlen(m->dir);
  while (n > 1 && m->dir[n - 1] == '/')
    m->dir[--n] = '\0';
  struct stat st;
  for (char *p = m->dir + 1; m->dir[0]; p++)
    if (*p == '/' || !*p) {
      char c = *p;
      *p = '\0';
      bool missing = stat(m->dir, &st) != 0 && errno == ENOENT;
      *p = c;
      if (missing) {
        m->top = (size_t)(p - m->dir);
        break;
      }
      if (!c)
        break;
    }
  if (!m->top)
    return;
  for (int i = 0; i < NDIRS; i++)
    if (!dir_used[i]) {
      memcpy(dir_path[i], m->dir, sizeof dir_path[i]);
      dir_top[i] = m->top;
      dir_pid[i] = getpid();
      dir_used[i] = 1; /* set last: the handler reads a complete path */
      m->slot = i;
      break;
    }
}

void kvsim_report_new_dirs_keep(kvsim_new_dirs_t *m) {
  if (m->slot >= 0 && m->slot < NDIRS)
    dir_used[m->slot] = 0;
  m->slot = -1;
  m->top = 0;
}

void kvsim_report_new_dirs_undo(kvsim_new_dirs_t *m) {
  char buf[sizeof m->dir];
  memcpy(buf, m->dir, sizeof buf);
  rmdir_chain(buf, m->top);
  kvsim_report_new_dirs_keep(m);
}
