/* Drawing a report's figures with the plot scripts compiled into the
 * binary (study/plot.h). A REPORT.md linked PNGs that only a separate
 * script drew, so a report could link figures of an older run, or none
 * at all; the command that writes the report now draws them, and the
 * report links what it drew or says why there are none. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/catalog.h"
#include "study/plot.h"

static bool is_png(const char *name) {
  size_t n = strlen(name);
  return n > 4 && !strcmp(name + n - 4, ".png");
}

void kvsim__plots_clear(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  char path[4400];
  while ((e = readdir(d)))
    if (is_png(e->d_name)) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      remove(path);
    }
  closedir(d);
}

static bool on_path(const char *prog) {
  const char *p = getenv("PATH");
  if (!p || !*p)
    return false;
  char path[4400];
  while (*p) {
    size_t n = strcspn(p, ":");
    snprintf(path, sizeof path, "%.*s/%s", (int)n, n ? p : ".", prog);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
      return true;
    p += n + (p[n] == ':');
  }
  return false;
}

bool kvsim__plots_available(char *why, size_t cap) {
  static const char *const progs[] = {"gnuplot", "bash"};
  for (size_t k = 0; k < sizeof progs / sizeof *progs; k++)
    if (!on_path(progs[k])) {
      snprintf(why, cap, "%s was not found on PATH", progs[k]);
      return false;
    }
  return true;
}

/* The scripts into a fresh folder (plot.sh runs plot_sweep.sh and sources
 * plot_lib.sh beside itself). */
static bool unpack(char *dir, size_t cap) {
  const char *t = getenv("TMPDIR");
  snprintf(dir, cap, "%s/kvsim-plot-XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(dir))
    return false;
  char path[4400];
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind; e++) {
    if (e->kind != KVSIM_CATALOG_SCRIPT)
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->name);
    FILE *f = fopen(path, "w");
    bool ok = f && fputs(e->json, f) >= 0;
    if (f && fclose(f) != 0)
      ok = false;
    if (!ok)
      return false;
  }
  return true;
}

static void wipe(const char *dir) {
  char path[4400];
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind; e++)
    if (e->kind == KVSIM_CATALOG_SCRIPT) {
      snprintf(path, sizeof path, "%s/%s", dir, e->name);
      remove(path);
    }
  remove(dir);
}

/* The last non-empty line of a file, into why. */
static void last_line(const char *path, char *why, size_t cap) {
  FILE *f = fopen(path, "r");
  char line[1024];
  while (f && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0])
      snprintf(why, cap, "%s", line);
  }
  if (f)
    fclose(f);
}

bool kvsim__plots_draw(const char *script, const char *dir, const char *const *env, char *why,
                       size_t cap) {
  char tmp[4200], path[4400], errs[4400];
  snprintf(why, cap, "the plot script failed");
  if (!unpack(tmp, sizeof tmp)) {
    snprintf(why, cap, "cannot write the plot scripts to a temporary folder: %s", strerror(errno));
    return false;
  }
  snprintf(path, sizeof path, "%s/%s", tmp, script);
  snprintf(errs, sizeof errs, "%s/stderr", tmp);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int out = open("/dev/null", O_WRONLY);
    int err = open(errs, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out >= 0)
      dup2(out, STDOUT_FILENO);
    if (err >= 0)
      dup2(err, STDERR_FILENO);
    for (const char *const *e = env; e && *e; e++) {
      char kv[1024];
      snprintf(kv, sizeof kv, "%s", *e);
      char *eq = strchr(kv, '=');
      if (eq) {
        *eq = '\0';
        setenv(kv, eq + 1, 1);
      }
    }
    execlp("bash", "bash", path, dir, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  bool ok = false;
  if (pid > 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
    ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
      if (WIFSIGNALED(status))
        snprintf(why, cap, "the plot script ended by signal %d", WTERMSIG(status));
      last_line(errs, why, cap);
    }
  } else {
    snprintf(why, cap, "cannot start the plot script: %s", strerror(errno));
  }
  remove(errs);
  wipe(tmp);
  return ok;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int kvsim__plots_list(const char *dir, char *list, size_t cap) {
  list[0] = '\0';
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  char *names[64];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 64)
    if (is_png(e->d_name) && (names[n] = kvsim__strdup(e->d_name)))
      n++;
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, by_name);
  size_t at = 0;
  for (int i = 0; i < n; i++) {
    if (at < cap)
      at += (size_t)snprintf(list + at, cap - at, "%s\n", names[i]);
    free(names[i]);
  }
  return n;
}
