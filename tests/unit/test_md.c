/* The reports' one Markdown escape: each construct-starting character
 * after a backslash, control characters as spaces, snprintf's contract
 * (the length needed, a terminated prefix, never half an escape); and
 * code spans and blocks whose fence outlasts any backtick run inside. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "study/md.h"

Test(md, escapes_what_would_start_markdown_and_keeps_the_rest) {
  char out[256];
  const char *in = "a|b *c* _d_ #e `f` <g> [h](i) \\ ~j~ &k; $l$ !m 0.5-n";
  size_t need = kvsim__md_escape(out, sizeof out, in);
  cr_assert_str_eq(out, "a\\|b \\*c\\* \\_d\\_ \\#e \\`f\\` \\<g\\> \\[h\\](i) \\\\ \\~j\\~ \\&k; "
                        "\\$l\\$ \\!m 0.5-n");
  cr_assert_eq(need, strlen(out), "the length needed: %zu, written %zu", need, strlen(out));
}

Test(md, a_control_character_is_a_space) {
  char out[16];
  kvsim__md_escape(out, sizeof out, "a\nb\tc\x7f");
  cr_assert_str_eq(out, "a b c ", "a line break would end a table row: '%s'", out);
}

Test(md, a_short_buffer_gets_whole_characters_and_the_length_needed) {
  char out[4];
  size_t need = kvsim__md_escape(out, sizeof out, "ab*c");
  cr_assert_eq(need, 5, "\"ab\\*c\" needs 5 (%zu)", need);
  cr_assert_str_eq(out, "ab", "no backslash without its character: '%s'", out);
  cr_assert_eq(kvsim__md_escape(NULL, 0, "|||"), 6, "the length alone with cap 0");
  char big[2 * 5 + 1];
  cr_assert_eq(kvsim__md_escape(big, sizeof big, "*****"), 10, "2 x strlen + 1 always fits");
  cr_assert_str_eq(big, "\\*\\*\\*\\*\\*");
}

/* What f wrote (a memstream), freed by the caller. */
static char *written(void (*put)(FILE *, const char *), const char *s) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  cr_assert_not_null(f, "memstream");
  put(f, s);
  fclose(f);
  return text;
}

Test(md, text_of_any_length_is_escaped_whole) {
  char in[1001];
  for (int i = 0; i < 1000; i++)
    in[i] = i % 2 ? '_' : 'a';
  in[1000] = '\0';
  char *out = written(kvsim__md_text, in);
  cr_assert_eq(strlen(out), 1500, "500 escaped underscores past each piece's end (%zu)",
               strlen(out));
  cr_assert(!strncmp(out, "a\\_a\\_", 6) && !strcmp(out + 1494, "a\\_a\\_"), "%.12s...", out);
  free(out);
}

Test(md, a_code_span_outlasts_the_backticks_inside) {
  char *a = written(kvsim__md_code, "kvsim run s.json");
  cr_assert_str_eq(a, "`kvsim run s.json`");
  char *b = written(kvsim__md_code, "kvsim run --out a``b`");
  cr_assert_str_eq(b, "``` kvsim run --out a``b` ```",
                   "three backticks around a run of two, and a space "
                   "inside each fence for a trailing backtick: %s",
                   b);
  char *c = written(kvsim__md_code, "`x");
  cr_assert_str_eq(c, "`` `x ``");
  free(a);
  free(b);
  free(c);
}

/* A plan names its model and GPU: a name holding "```" ended the plan's
 * code block early and the rest of it read as Markdown. */
Test(md, a_code_block_outlasts_the_backticks_inside) {
  char *a = written(kvsim__md_block, "Model m on g\nline 2\n");
  cr_assert_str_eq(a, "```\nModel m on g\nline 2\n```\n");
  char *b = written(kvsim__md_block, "Model m on g```x\n````y");
  cr_assert_str_eq(b, "`````\nModel m on g```x\n````y\n`````\n",
                   "one backtick more than the longest run, a line end before the fence: %s", b);
  free(a);
  free(b);
}
