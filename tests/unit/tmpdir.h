/* Where unit tests write their temporary files: $TMPDIR, or /tmp when it is
 * unset or empty. Never the current folder: a run from the checkout's root
 * would leave (and let someone commit) folders like kvsim-study-XXXXXX. */
#ifndef KVSIM_TEST_TMPDIR_H
#define KVSIM_TEST_TMPDIR_H

#include <stdlib.h>

static inline const char *test_tmpdir(void) {
  const char *d = getenv("TMPDIR");
  return d && *d ? d : "/tmp";
}

#endif
