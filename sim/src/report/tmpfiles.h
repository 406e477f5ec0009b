/* Temporary output files of this process (name.tmp.PID, renamed into
 * place when complete), so that a run stopped by a signal removes
 * them instead of leaving them behind. Internal to the library. */
#ifndef KVSIM_REPORT_TMPFILES_H
#define KVSIM_REPORT_TMPFILES_H

/* Remembers path until kvsim__tmp_forget(slot); returns the slot, or -1
 * when every slot is taken (the file is then not removed on a signal). */
int kvsim__tmp_track(const char *path);
void kvsim__tmp_forget(int slot);

/* fn runs in the signal handler after the temporary files are removed and
 * before the process ends, in the process that set it only (not in forked
 * children); it must be async-signal-safe. NULL clears it. */
void kvsim__signal_hook(void (*fn)(int sig));

#endif
