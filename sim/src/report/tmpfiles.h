/* Temporary output files of this process (name.tmp.PID, renamed into
 * place when complete), so that a run stopped by a signal removes
 * them instead of leaving them behind. Internal to the library. */
#ifndef KVSIM_REPORT_TMPFILES_H
#define KVSIM_REPORT_TMPFILES_H

#include <stdint.h>

/* Remembers path until kvsim__tmp_forget(slot); returns the slot, or -1
 * when every slot is taken (the file is then not removed on a signal). */
int kvsim__tmp_track(const char *path);
void kvsim__tmp_forget(int slot);

/* fn runs in the signal handler after the temporary files are removed and
 * before the process ends, in the process that set it only (not in forked
 * children); it must be async-signal-safe. NULL clears it. */
void kvsim__signal_hook(void (*fn)(int sig));

/* Async-signal-safe formatting of a hook's one line (no stdio in a
 * handler): appends s, or v in decimal with at least width digits, up to
 * end; returns the new end of the text. */
char *kvsim__put_s(char *p, const char *end, const char *s);
char *kvsim__put_n(char *p, const char *end, int64_t v, int width);
/* "SIGINT", "SIGTERM", ... for the signals handled, else "a signal". */
const char *kvsim__signal_name(int sig);

#endif
