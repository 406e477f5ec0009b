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

/* A fence of backticks one longer than the longest run of them in s (at
 * least `least`), so that nothing in s closes it. */
static void fence(FILE *f, const char *s, int least) {
  int longest = least - 1, run = 0;
  for (const char *p = s; *p; p++) {
    run = *p == '`' ? run + 1 : 0;
    longest = run > longest ? run : longest;
  }
  for (int k = 0; k <= longest; k++)
    fputc('`', f);
}

void kvsim__md_code(FILE *f, const char *s) {
  /* A span that starts or ends with a backtick needs a space inside its
   * fence; CommonMark strips one from each side. */
  size_t n = strlen(s);
  bool pad = n && (s[0] == '`' || s[n - 1] == '`');
  fence(f, s, 1);
  fputs(pad ? " " : "", f);
  fputs(s, f);
  fputs(pad ? " " : "", f);
  fence(f, s, 1);
}

void kvsim__md_block(FILE *f, const char *s) {
  /* At least the usual three (a model or GPU name may hold backticks). */
  size_t n = strlen(s);
  fence(f, s, 3);
  fputc('\n', f);
  fputs(s, f);
  fputs(n && s[n - 1] != '\n' ? "\n" : "", f);
  fence(f, s, 3);
  fputc('\n', f);
}
