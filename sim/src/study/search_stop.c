/* kvsim plan's search as a command runs it (kvsim/study.h
 * kvsim_search_run_stoppable): a signal that stops it is said in one line.
 * A plan writes no file, so there is nothing to remove; the line says so,
 * below the points it listed (clearing a terminal's progress line). */
#include <unistd.h>

#include "kvsim/study.h"
#include "report/tmpfiles.h"

static struct {
  const char *what;
  bool progress_line;
} stop;

static void on_stop(int sig) {
  char msg[4400] = "", *m = msg, *end = msg + sizeof msg - 1;
  if (stop.progress_line)
    m = kvsim__put_s(m, end, "\r\033[K");
  m = kvsim__put_s(m, end, "kvsim plan: error: ");
  m = kvsim__put_s(m, end, stop.what);
  m = kvsim__put_s(m, end, ": stopped by ");
  m = kvsim__put_s(m, end, kvsim__signal_name(sig));
  m = kvsim__put_s(m, end, " before an answer (nothing written)\n");
  ssize_t w = write(2, msg, (size_t)(m - msg));
  (void)w;
}

int kvsim_search_run_stoppable(kvsim_search_t *se, const char *what, bool progress_line,
                               kvsim_err *err) {
  stop.what = what;
  stop.progress_line = progress_line;
  kvsim__signal_hook(on_stop);
  int rc = kvsim_search_run(se, err);
  kvsim__signal_hook(NULL);
  return rc;
}
