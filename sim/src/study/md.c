/* Markdown for the reports: the one escape of user text, and code spans. */
#include "study/md.h"

#include <stdbool.h>
#include <string.h>

/* The ASCII punctuation that starts or ends a construct somewhere inside a
 * line (CommonMark and GitHub's tables, strikethrough and math): a
 * backslash before any of it makes it the character itself. */
static const char md_special[] = "\\`*_[]<>#|~&$!";

size_t kvsim__md_escape(char *dst, size_t cap, const char *s) {
  size_t need = 0, at = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    bool esc = strchr(md_special, *p) != NULL;
    char c = *p < 0x20 || *p == 0x7f ? ' ' : (char)*p;
    size_t n = esc ? 2 : 1;
    if (cap && at == need && at + n < cap) {
      if (esc)
        dst[at++] = '\\';
      dst[at++] = c;
    }
    need += n;
  }
  if (cap)
    dst[at] = '\0';
  return need;
}

void kvsim__md_text(FILE *f, const char *s) {
  /* In pieces: each character escapes on its own, so a piece boundary
   * changes nothing. */
  char in[256], out[2 * sizeof in];
  for (size_t n; (n = strlen(s)) > 0; s += n) {
    if (n > sizeof in - 1)
      n = sizeof in - 1;
    memcpy(in, s, n);
    in[n] = '\0';
    kvsim__md_escape(out, sizeof out, in);
    fputs(out, f);
  }
}

void kvsim__md_code(FILE *f, const char *s) {
  int longest = 0, run = 0;
  for (const char *p = s; *p; p++) {
    run = *p == '`' ? run + 1 : 0;
    longest = run > longest ? run : longest;
  }
  /* A span that starts or ends with a backtick needs a space inside its
   * fence; CommonMark strips one from each side. */
  size_t n = strlen(s);
  bool pad = n && (s[0] == '`' || s[n - 1] == '`');
  for (int k = 0; k <= longest; k++)
    fputc('`', f);
  fputs(pad ? " " : "", f);
  fputs(s, f);
  fputs(pad ? " " : "", f);
  for (int k = 0; k <= longest; k++)
    fputc('`', f);
}

void kvsim__md_block(FILE *f, const char *s) {
  /* A fence longer than any run of backticks in s (a model or GPU name
   * may hold some), at least the usual three. */
  int longest = 2, run = 0;
  for (const char *p = s; *p; p++) {
    run = *p == '`' ? run + 1 : 0;
    longest = run > longest ? run : longest;
  }
  size_t n = strlen(s);
  for (int k = 0; k <= longest; k++)
    fputc('`', f);
  fputc('\n', f);
  fputs(s, f);
  fputs(n && s[n - 1] != '\n' ? "\n" : "", f);
  for (int k = 0; k <= longest; k++)
    fputc('`', f);
  fputc('\n', f);
}
