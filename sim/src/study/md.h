/* Markdown for the study room's REPORT.md pages: user text (labels, names,
 * grid values) as literal text, and commands as code spans. Internal to
 * the study room. */
#ifndef KVSIM_STUDY_MD_H
#define KVSIM_STUDY_MD_H

#include <stdio.h>

/* s as Markdown text that reads back as s: each character that could
 * start a construct (emphasis, code, a link, HTML, a heading's closing
 * '#', a table's cell break) after a backslash, a control character as a
 * space (a line break would end a table row or a heading). Writes what
 * fits of it into dst (cap > 0: always terminated, never half an escape)
 * and returns the length the whole needs, as snprintf does; 2 x
 * strlen(s) + 1 always fits. The one escape of the reports: every label
 * or name goes through it. */
size_t kvsim__md_escape(char *dst, size_t cap, const char *s);

/* Writes s escaped (kvsim__md_escape) to f, whatever its length. */
void kvsim__md_text(FILE *f, const char *s);

/* Writes s as one code span: a fence of one backtick more than the longest
 * run of them in s, so that a backtick in a path cannot end it early. */
void kvsim__md_code(FILE *f, const char *s);

/* Writes s (lines of text) as one fenced code block: its fence longer
 * than any run of backticks in s, so none of them ends it early. */
void kvsim__md_block(FILE *f, const char *s);

#endif
