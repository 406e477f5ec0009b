/* The figures of a REPORT.md, drawn by the command that writes it: the
 * plot scripts (scripts/plot*.sh, compiled into the binary) run on the
 * output folder with gnuplot. Internal to the study room. */
#ifndef KVSIM_STUDY_PLOT_H
#define KVSIM_STUDY_PLOT_H

#include <stdbool.h>
#include <stddef.h>

/* Removes every *.png directly in dir: an older report's figures, which
 * must not stand beside a new report that does not draw them. */
void kvsim__plots_clear(const char *dir);

/* Whether the figures can be drawn: gnuplot and bash on PATH. When not,
 * why ("gnuplot was not found on PATH") goes into why. */
bool kvsim__plots_available(char *why, size_t cap);

/* Runs the embedded script (its file name, "plot_compare.sh") on dir,
 * its standard output discarded, with env ("KEY=value", NULL-terminated;
 * may be NULL) added to the environment. true when it exited 0; else the
 * last line of its standard error (or how it ended) goes into why. */
bool kvsim__plots_draw(const char *script, const char *dir, const char *const *env, char *why,
                       size_t cap);

/* The names of the PNGs in dir, sorted, one per line (each ending in
 * '\n'), into list; how many. */
int kvsim__plots_list(const char *dir, char *list, size_t cap);

#endif
