/* The CSV row reader: quoting, the line where each row and field starts,
 * line endings, rows of the wrong width, bad bytes, and out of memory. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmpdir.h"
#include "core/alloc.h"
#include "workload/csvrow.h"

static char paths[8][512];
static int next;

static void remove_tmp(void) {
  for (int i = 0; i < next && i < 8; i++)
    remove(paths[i]);
}

TestSuite(csvrow, .fini = remove_tmp);

static const char *tmp_write(const char *name, const char *text, size_t len) {
  cr_assert_lt(next, 8, "too many temp files in one test");
  char *p = paths[next++];
  const char *dir = test_tmpdir();
  snprintf(p, 512, "%s/kvsim_csvrow_%ld_%s", dir, (long)getpid(), name);
  FILE *f = fopen(p, "wb");
  cr_assert(f, "cannot create %s", p);
  cr_assert_eq(fwrite(text, 1, len, f), len, "writes %s", p);
  fclose(f);
  return p;
}

static kvsim__csvrow_t *open_text(const char *name, const char *text) {
  const char *p = tmp_write(name, text, strlen(text));
  kvsim__csvrow_t *r = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_open(p, true, &r, &err), 0, "opens %s: %s", name, err.msg);
  return r;
}

Test(csvrow, quoting_and_header_by_name) {
  kvsim__csvrow_t *r = open_text("q.csv", "\xEF\xBB\xBF Alpha ,\"b\",c\n1,\"x, \"\"y\"\"\",3\n");
  cr_assert_eq(kvsim__csvrow_ncolumns(r), 3, "three columns");
  cr_assert_str_eq(kvsim__csvrow_colname(r, 0), "Alpha", "BOM and spaces trimmed");
  cr_assert_eq(kvsim__csvrow_column(r, "alpha"), 0, "names ignore case");
  cr_assert_eq(kvsim__csvrow_column(r, "b"), 1, "a quoted name");
  cr_assert_eq(kvsim__csvrow_column(r, "d"), -1, "absent");
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_next(r, &err), 1, "a row: %s", err.msg);
  cr_assert_str_eq(kvsim__csvrow_field(r, 1), "x, \"y\"", "comma and doubled quotes kept");
  cr_assert_null(kvsim__csvrow_field(r, 3), "NULL past the last field");
  cr_assert_eq(kvsim__csvrow_next(r, &err), 0, "then the end");
  kvsim__csvrow_close(r);
}

Test(csvrow, lines_of_rows_and_fields_across_quoted_newlines) {
  kvsim__csvrow_t *r = open_text("ml.csv", "a,b,c\n\n1,\"two\nlines\n\",3\r\n  \n4,5,6");
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_next(r, &err), 1, "first row: %s", err.msg);
  cr_assert_eq(kvsim__csvrow_line(r), 3, "starts after the blank line, got %lld",
               (long long)kvsim__csvrow_line(r));
  cr_assert_str_eq(kvsim__csvrow_field(r, 1), "two\nlines\n", "newlines inside quotes kept");
  cr_assert_eq(kvsim__csvrow_field_line(r, 1), 3, "field 1 starts on line 3");
  cr_assert_eq(kvsim__csvrow_field_line(r, 2), 5, "field 2 starts on line 5, got %lld",
               (long long)kvsim__csvrow_field_line(r, 2));
  cr_assert_eq(kvsim__csvrow_next(r, &err), 1, "last row without a newline: %s", err.msg);
  cr_assert_eq(kvsim__csvrow_line(r), 7, "CRLF and a blank line counted, got %lld",
               (long long)kvsim__csvrow_line(r));
  cr_assert_str_eq(kvsim__csvrow_field(r, 2), "6", "last field");
  cr_assert_eq(kvsim__csvrow_next(r, &err), 0, "end");
  kvsim__csvrow_close(r);
}

Test(csvrow, bare_cr_is_a_bad_row_then_reading_goes_on) {
  kvsim__csvrow_t *r = open_text("cr.csv", "a,b\n1,2\r3,4\n5,6\n");
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_next(r, &err), KVSIM_EPARSE, "a row cut by a bare CR");
  cr_assert(strstr(err.msg, "cr.csv:2: a bare carriage return"), "names line 2: %s", err.msg);
  cr_assert_eq(kvsim__csvrow_next(r, &err), 1, "the rest of line 2 is a row: %s", err.msg);
  cr_assert_str_eq(kvsim__csvrow_field(r, 0), "3", "after the CR");
  cr_assert_eq(kvsim__csvrow_line(r), 2, "on line 2");
  cr_assert_eq(kvsim__csvrow_next(r, &err), 1, "line 3");
  cr_assert_eq(kvsim__csvrow_line(r), 3, "line 3");
  cr_assert_eq(kvsim__csvrow_next(r, &err), 0, "end, no loop");
  kvsim__csvrow_close(r);
}

Test(csvrow, crlf_split_across_reads_is_one_line_ending) {
  /* The CR is the last byte of the reader's 64 KiB chunk, its LF the first
   * of the next: still a CRLF, not a bare CR. */
  size_t n = 65536 + 64;
  char *t = malloc(n + 1);
  cr_assert(t, "memory");
  strcpy(t, "a,b\n");
  size_t o = strlen(t);
  t[o++] = '"';
  while (o < 65536 - 4)
    t[o++] = 'x';
  memcpy(t + o, "\",1\r", 4);
  o += 4;
  cr_assert_eq(o, 65536, "the CR ends the first chunk");
  memcpy(t + o, "\n2,3\n", 6);
  o += 5;
  const char *p = tmp_write("split.csv", t, o);
  free(t);
  kvsim__csvrow_t *r = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_open(p, true, &r, &err), 0, "opens: %s", err.msg);
  cr_assert_eq(kvsim__csvrow_next(r, &err), 1, "the long row: %s", err.msg);
  cr_assert_str_eq(kvsim__csvrow_field(r, 1), "1", "its last field");
  cr_assert_eq(kvsim__csvrow_next(r, &err), 1, "the next row: %s", err.msg);
  cr_assert_eq(kvsim__csvrow_line(r), 3, "on line 3");
  kvsim__csvrow_close(r);
}

Test(csvrow, wrong_width_nul_and_unclosed_quote) {
  kvsim__csvrow_t *r = open_text("w.csv", "a,b,c\n1,2,3,4\n1,2\n1,2,3\n");
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_next(r, &err), KVSIM_EPARSE, "wider");
  cr_assert(strstr(err.msg, "w.csv:2: row has 4 fields, the header has 3"), "%s", err.msg);
  cr_assert_eq(kvsim__csvrow_next(r, &err), KVSIM_EPARSE, "narrower");
  cr_assert(strstr(err.msg, ":3: row has 2 fields, the header has 3"), "%s", err.msg);
  cr_assert_eq(kvsim__csvrow_next(r, &err), 1, "then a good row");
  kvsim__csvrow_close(r);

  const char nul[] = "a,b\n1,2\0x\n3,4\n";
  const char *p = tmp_write("nul.csv", nul, sizeof nul - 1);
  cr_assert_eq(kvsim__csvrow_open(p, true, &r, &err), 0, "opens");
  cr_assert_eq(kvsim__csvrow_next(r, &err), KVSIM_EINVAL, "a NUL byte is fatal, not a bad row");
  cr_assert(strstr(err.msg, "nul.csv:2: a NUL byte (a binary file?)"), "%s", err.msg);
  kvsim__csvrow_close(r);

  r = open_text("open.csv", "a,b\n1,\"2\n3,4\n");
  cr_assert_eq(kvsim__csvrow_next(r, &err), KVSIM_EPARSE, "unclosed quote at the end");
  cr_assert(strstr(err.msg, "open.csv:2: a quoted field is not closed"), "%s", err.msg);
  cr_assert_eq(kvsim__csvrow_next(r, &err), 0, "then the end");
  kvsim__csvrow_close(r);

  p = tmp_write("empty.csv", "\n\n", 2);
  cr_assert_eq(kvsim__csvrow_open(p, true, &r, &err), KVSIM_EPARSE, "an empty file");
  cr_assert(strstr(err.msg, "empty file"), "%s", err.msg);
}

Test(csvrow, out_of_memory_at_every_step_fails_cleanly) {
  const char *p = tmp_write("oom.csv", "a,b\n1,2\n3,4\n", 12);
  bool completed = false;
  for (int64_t n = 0; n < 64 && !completed; n++) {
    kvsim__alloc_fail_after(n);
    kvsim__csvrow_t *r = NULL;
    kvsim_err err = {0};
    int rc = kvsim__csvrow_open(p, true, &r, &err);
    int rows = 0;
    while (rc >= 0 && (rc = kvsim__csvrow_next(r, &err)) == 1)
      rows++;
    kvsim__alloc_fail_after(-1);
    cr_assert(rc == 0 || rc == KVSIM_ENOMEM, "after %lld allocations: rc %d (%s)", (long long)n,
              rc, err.msg);
    if (rc == 0) {
      cr_assert_eq(rows, 2, "all rows when nothing failed");
      completed = true;
    }
    kvsim__csvrow_close(r);
  }
  cr_assert(completed, "enough allocations let it finish");
}

Test(csvrow, a_column_named_twice_is_an_error) {
  const char *text = "\n arrival_s,ARRIVAL_S ,prompt_tokens\n0,7,100\n";
  const char *p = tmp_write("dup.csv", text, strlen(text));
  kvsim__csvrow_t *r = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_open(p, true, &r, &err), KVSIM_EPARSE,
               "the second column was once silently ignored");
  cr_assert_null(r, "no reader");
  cr_assert(strstr(err.msg, "dup.csv:2: duplicate column 'ARRIVAL_S'"),
            "names the header's line and the column (case aside): %s", err.msg);
  p = tmp_write("unnamed.csv", ",a,,b,\n1,2,3,4,5\n", 17);
  cr_assert_eq(kvsim__csvrow_open(p, true, &r, &err), 0, "unnamed columns may repeat: %s", err.msg);
  kvsim__csvrow_close(r);
}

/* Regression: a NUL byte was found only once its row ended, so a row of
 * NULs was read on to the row limit; now the first one stops the read,
 * on its own line (here inside a quoted field that began a line above). */
Test(csvrow, the_first_nul_byte_stops_the_read_on_its_line) {
  const size_t big = 8u << 20;
  char *t = calloc(1, big);
  cr_assert_not_null(t, "buffer");
  const char head[] = "a,b\n1,\"two\nlines";
  memcpy(t, head, sizeof head - 1);
  const char *p = tmp_write("zeros.csv", t, big);
  free(t);
  kvsim__csvrow_t *r = NULL;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_open(p, true, &r, &err), 0, "the header is fine: %s", err.msg);
  cr_assert_eq(kvsim__csvrow_next(r, &err), KVSIM_EINVAL, "the NUL is fatal");
  cr_assert(strstr(err.msg, "zeros.csv:3: a NUL byte (a binary file?)"),
            "names the NUL's line, not the row's: %s", err.msg);
  kvsim__csvrow_close(r);
  /* In the header too. */
  p = tmp_write("nulhead.csv", "a,\0b\n1,2\n", 10);
  cr_assert_eq(kvsim__csvrow_open(p, true, &r, &err), KVSIM_EINVAL, "a NUL in the header");
  cr_assert(strstr(err.msg, "nulhead.csv:1: a NUL byte"), "%s", err.msg);
  cr_assert_null(r, "no reader");
}

/* Everything a reader hands out for one file, in order: open's code and
 * message, then each record's code, message, width, lines and fields. */
static size_t transcript(const char *path, bool header, char *out, size_t cap) {
  size_t n = 0;
#define PUT(...) (n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, __VA_ARGS__))
  kvsim__csvrow_t *r = NULL;
  kvsim_err err = {0};
  int rc = kvsim__csvrow_open(path, header, &r, &err);
  PUT("open %d %s\n", rc, rc < 0 ? err.msg : "");
  if (rc == 0 && header)
    for (int i = 0; i < kvsim__csvrow_ncolumns(r); i++)
      PUT("h[%s]", kvsim__csvrow_colname(r, i));
  for (int k = 0; rc >= 0 && r && k < 200; k++) {
    err.msg[0] = '\0';
    rc = kvsim__csvrow_next(r, &err);
    PUT("\nnext %d %s line %lld:", rc, rc < 0 ? err.msg : "", (long long)kvsim__csvrow_line(r));
    for (int i = 0; rc == 1 && i < kvsim__csvrow_nfields(r); i++)
      PUT("[%s]@%lld", kvsim__csvrow_field(r, i), (long long)kvsim__csvrow_field_line(r, i));
    if (rc == KVSIM_EPARSE && strstr(err.msg, "bare carriage"))
      rc = 1; /* reading goes on after a bare CR or a wrong width */
    if (rc == KVSIM_EPARSE && strstr(err.msg, "fields, the header"))
      rc = 1;
  }
#undef PUT
  kvsim__csvrow_close(r);
  return n;
}

/* The reader splits plain lines itself; libcsv reads the rest. Over
 * random files of commas, blanks, quotes, CR, LF and text (and some
 * without any quote, where most lines take the reader's own path), both
 * ways give the same transcript: fields, lines, codes and messages. */
Test(csvrow, own_splitting_reads_as_libcsv_does) {
  static const char *atoms[] = {"a",
                                "17",
                                ",",
                                ",",
                                " ",
                                "\t",
                                "\"",
                                "\n",
                                "\r\n",
                                "\r",
                                "x y",
                                "\xc3\xa9",
                                "2023-11-16 18:15:46.6805900",
                                ",,",
                                "  \n",
                                "\"\""};
  const int natoms = (int)(sizeof atoms / sizeof *atoms);
  static char text[4096], a[65536], b[65536];
  uint64_t s = 0x9e3779b97f4a7c15u;
  int plain_rows = 0;
  for (int it = 0; it < 4000; it++) {
    size_t len = 0;
    int quotes = it % 2; /* half the files have no quote */
    int atomsn = 1 + (int)((s >> 33) % 120);
    for (int k = 0; k < atomsn; k++) {
      s = s * 6364136223846793005u + 1442695040888963407u;
      int i = (int)((s >> 35) % (uint64_t)natoms);
      if (!quotes && strchr(atoms[i], '"'))
        continue;
      if (it % 3 == 0 && !strcmp(atoms[i], "\r"))
        continue; /* some files with no bare CR */
      size_t l = strlen(atoms[i]);
      if (len + l >= sizeof text)
        break;
      memcpy(text + len, atoms[i], l);
      len += l;
    }
    if (it % 5 == 0 && len + 1 < sizeof text)
      text[len++] = '\n';
    char name[32];
    snprintf(name, sizeof name, "rand%d.csv", it);
    next = 0;
    const char *p = tmp_write(name, text, len);
    bool header = it % 4 != 0;
    kvsim__csvrow_libcsv_only(true);
    size_t na = transcript(p, header, a, sizeof a);
    kvsim__csvrow_libcsv_only(false);
    size_t nb = transcript(p, header, b, sizeof b);
    remove(p);
    cr_assert(na < sizeof a, "transcript fits");
    cr_assert(na == nb && !memcmp(a, b, na),
              "file %d (%zu bytes) reads differently:\n%.*s\n--- libcsv:\n%s\n--- own:\n%s", it,
              len, (int)len, text, a, b);
    plain_rows += strstr(a, "next 1") != NULL;
  }
  cr_assert_gt(plain_rows, 1000, "most files had rows (%d)", plain_rows);
}

/* Edge lines, each against libcsv: blanks around and inside fields, empty
 * fields, a line of blanks, CRLF, a tab before the comma, UTF-8. */
Test(csvrow, own_splitting_edge_lines) {
  static const char *files[] = {
      "a,b,c\n 1 , 2 ,3 \n",
      "a,b\n,\n",
      "a\n \t \n\n x \n",
      "a,b\r\n1,\t2\t\r\n",
      "a,b\n1 2,\xc3\xa9 \n",
      "a,b,c\n,,\n  ,\t,\n",
      "a\n1\n2",
      "a,b\n1,2\r\n\r\n3,4\r\n",
      "a,b\n1,2,3\n4,5\n",
      " a ,b\n1,2\n",
  };
  static char a[8192], b[8192];
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    next = 0;
    char name[32];
    snprintf(name, sizeof name, "edge%zu.csv", i);
    const char *p = tmp_write(name, files[i], strlen(files[i]));
    for (int header = 0; header < 2; header++) {
      kvsim__csvrow_libcsv_only(true);
      size_t na = transcript(p, header, a, sizeof a);
      kvsim__csvrow_libcsv_only(false);
      size_t nb = transcript(p, header, b, sizeof b);
      cr_assert(na == nb && !memcmp(a, b, na), "file %zu header %d:\n%s\n---\n%s", i, header, a, b);
    }
    remove(p);
  }
}
