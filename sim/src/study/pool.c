/* The parallel runner: a pool of forked processes, each running one job
 * and sending back {code, error, result} through its own pipe. A result is
 * plain data (a summary, summary.h; or a caller's record), so the bytes
 * are the struct. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "kvsim/study.h"
#include "study/run.h"

/* Results travel in records of this size: a summary, or a caller's plain
 * struct of at most KVSIM_STUDY_RECORD_MAX bytes. */
typedef struct record {
  int rc;
  kvsim_err err;
  union {
    kvsim_summary_t sum;
    unsigned char bytes[KVSIM_STUDY_RECORD_MAX];
  } u;
} record_t;

/* kvsim_study_parallel: summaries through the record runner. */
typedef struct sumctx {
  kvsim_study_job_fn job;
  kvsim_study_done_fn done;
  void *ctx;
} sumctx_t;

typedef struct slot {
  pid_t pid;
  int fd;
  int64_t index;
} slot_t;

/* The running children, for kvsim__study_pool_stop in a signal handler. */
#define LIVE_MAX 256
static volatile sig_atomic_t live[LIVE_MAX];

void kvsim__study_pool_stop(void) {
  for (int k = 0; k < LIVE_MAX; k++) {
    pid_t pid = (pid_t)live[k];
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, NULL, 0);
      live[k] = 0;
    }
  }
}

static int run_inline(int64_t first, int64_t end, int64_t stride, kvsim_study_rjob_fn job,
                      kvsim_study_rdone_fn done, void *ctx) {
  record_t *r = kvsim__malloc(sizeof *r);
  if (!r)
    return KVSIM_ENOMEM;
  int rc = KVSIM_OK;
  for (int64_t i = first; i < end && rc >= 0; i += stride) {
    memset(r, 0, sizeof *r);
    r->rc = job(ctx, i, r->u.bytes, &r->err);
    rc = done(ctx, i, r->rc, r->rc == KVSIM_OK ? r->u.bytes : NULL, &r->err);
  }
  kvsim__free(r);
  return rc;
}

static void child(int fd, int64_t i, kvsim_study_rjob_fn job, void *ctx) {
  static record_t r;
  memset(&r, 0, sizeof r);
  r.rc = job(ctx, i, r.u.bytes, &r.err);
  const char *p = (const char *)&r;
  size_t left = sizeof r;
  while (left > 0) {
    ssize_t n = write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(3);
    p += n;
    left -= (size_t)n;
  }
  _exit(r.rc == KVSIM_OK ? 0 : 1);
}

/* Reads a child's whole record (the child may still be writing). Returns
 * false when the child ended without one. */
static bool read_record(int fd, record_t *r) {
  char *p = (char *)r;
  size_t left = sizeof *r;
  while (left > 0) {
    ssize_t n = read(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    left -= (size_t)n;
  }
  return true;
}

/* A child ended: its record is in its pipe (a record is far smaller than a
 * pipe's buffer, so a child never waits on its write). */
static int collect(slot_t *s, bool died_ok, record_t *r, kvsim_study_rdone_fn done, void *ctx) {
  memset(r, 0, sizeof *r);
  bool ok = read_record(s->fd, r);
  close(s->fd);
  s->pid = 0;
  if (!ok || !died_ok)
    r->rc = kvsim_err_set(&r->err, KVSIM_EIO, "run failed");
  return done(ctx, s->index, r->rc, r->rc == KVSIM_OK ? r->u.bytes : NULL, &r->err);
}

static int sum_job(void *ctx, int64_t i, void *out, kvsim_err *err) {
  const sumctx_t *c = ctx;
  return c->job(c->ctx, i, out, err);
}

static int sum_done(void *ctx, int64_t i, int rc, const void *r, const kvsim_err *e) {
  const sumctx_t *c = ctx;
  return c->done(c->ctx, i, rc, r, e);
}

int kvsim_study_parallel(int64_t first, int64_t end, int64_t stride, int jobs,
                         kvsim_study_job_fn job, kvsim_study_done_fn done, void *ctx,
                         kvsim_err *err) {
  sumctx_t c = {job, done, ctx};
  return kvsim_study_parallel_records(first, end, stride, jobs, sum_job, sum_done, &c, err);
}

/* Forks the child that runs job i into a free slot, its record coming
 * back through a pipe. Signals wait from the fork until the child is in
 * live[]: a stop arriving between the two (the moment a finished run's
 * slot is refilled, when a user most often stops a sweep) left that child
 * unknown to kvsim__study_pool_stop, running its whole simulation after
 * the sweep had exited. */
static int spawn(slot_t *slots, int jobs, int64_t i, kvsim_study_rjob_fn job, void *ctx, kvsim_err *err) {
  int fds[2];
  if (pipe(fds) < 0)
    return kvsim_err_set(err, KVSIM_EIO, "pipe: %s", strerror(errno));
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(fds[0]);
    close(fds[1]);
    return kvsim_err_set(err, KVSIM_EIO, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    for (int k = 0; k < LIVE_MAX; k++)
      live[k] = 0; /* the parent's children are not this one's */
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(fds[0]);
    for (int k = 0; k < jobs; k++)
      if (slots[k].pid)
        close(slots[k].fd);
    child(fds[1], i, job, ctx);
  }
  close(fds[1]);
  int k = 0;
  while (slots[k].pid)
    k++;
  slots[k] = (slot_t){pid, fds[0], i};
  if (k < LIVE_MAX)
    live[k] = pid;
  sigprocmask(SIG_SETMASK, &old, NULL);
  return KVSIM_OK;
}

/* Waits for a child and hands its record to done: *rc is done's answer
 * (or wait's error). Returns whether one of the slots' children ended. */
static bool reap(slot_t *slots, int jobs, record_t *r, kvsim_study_rdone_fn done, void *ctx, int *rc,
                 kvsim_err *err) {
  int status;
  pid_t pid = wait(&status);
  if (pid < 0) {
    if (errno != EINTR)
      *rc = kvsim_err_set(err, KVSIM_EIO, "wait: %s", strerror(errno));
    return false;
  }
  for (int k = 0; k < jobs; k++)
    if (slots[k].pid == pid) {
      if (k < LIVE_MAX)
        live[k] = 0;
      bool exited = WIFEXITED(status) && WEXITSTATUS(status) <= 1;
      *rc = collect(&slots[k], exited, r, done, ctx);
      return true;
    }
  return false;
}

/* Stopped early: end the children still running. */
static void stop_all(slot_t *slots, int jobs) {
  for (int k = 0; k < jobs; k++)
    if (slots[k].pid) {
      kill(slots[k].pid, SIGTERM);
      close(slots[k].fd);
      waitpid(slots[k].pid, NULL, 0);
      if (k < LIVE_MAX)
        live[k] = 0;
    }
}

int kvsim_study_parallel_records(int64_t first, int64_t end, int64_t stride, int jobs,
                                 kvsim_study_rjob_fn job, kvsim_study_rdone_fn done, void *ctx,
                                 kvsim_err *err) {
  if (stride < 1)
    stride = 1;
  if (jobs <= 1) {
    int rc = run_inline(first, end, stride, job, done, ctx);
    return rc == KVSIM_ENOMEM ? kvsim_err_set(err, rc, "out of memory for a run's record") : rc;
  }
  slot_t *slots = kvsim__calloc((size_t)jobs, sizeof *slots);
  record_t *r = kvsim__malloc(sizeof *r);
  if (!slots || !r) {
    kvsim__free(slots);
    kvsim__free(r);
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for %d jobs", jobs);
  }
  _Static_assert(sizeof(record_t) < 65536, "a record must fit a pipe's buffer");
  _Static_assert(sizeof(kvsim_summary_t) <= KVSIM_STUDY_RECORD_MAX, "a summary is a record");
  int n = 0, rc = KVSIM_OK;
  fflush(NULL); /* children must not flush the parent's buffers again */
  for (int64_t i = first; (i < end || n > 0) && rc >= 0;) {
    if (i < end && n < jobs) {
      if ((rc = spawn(slots, jobs, i, job, ctx, err)) < 0)
        break;
      n++;
      i += stride;
      continue;
    }
    if (reap(slots, jobs, r, done, ctx, &rc, err))
      n--;
  }
  stop_all(slots, jobs);
  kvsim__free(slots);
  kvsim__free(r);
  return rc;
}

int kvsim_study_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}
