/* The core utilities: growable array, u64 map, heap, integer helpers and
 * the failing-allocator hook. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmpdir.h"
#include "core/alloc.h"
#include "core/arith.h"
#include "core/heap.h"
#include "core/u64map.h"
#include "core/util.h"
#include "core/vec.h"
#include "kvsim/error.h"

Test(core, vec_push_grows_and_keeps_order) {
  kvsim__vec(int64_t) v = {0};
  for (int64_t i = 0; i < 1000; i++)
    cr_assert_eq(kvsim__vec_push(&v, i * 3), KVSIM_OK, "push %ld", (long)i);
  cr_assert_eq(v.n, 1000, "length");
  cr_assert(v.cap >= 1000, "capacity %ld", (long)v.cap);
  for (int64_t i = 0; i < 1000; i++)
    cr_assert_eq(v.v[i], i * 3, "element %ld", (long)i);
  kvsim__vec_free(&v);
  cr_assert_null(v.v, "freed");
}

Test(core, vec_failed_grow_loses_nothing) {
  kvsim__vec(int32_t) v = {0};
  for (int32_t i = 0; i < 16; i++)
    cr_assert_eq(kvsim__vec_push(&v, i), KVSIM_OK, "push");
  int32_t *before = v.v;
  kvsim__alloc_fail_after(0);
  int rc = kvsim__vec_push(&v, 99); /* needs a grow past 16 */
  int64_t refused = kvsim__alloc_failures();
  kvsim__alloc_fail_after(-1);
  cr_assert_eq(rc, KVSIM_ENOMEM, "the grow fails");
  cr_assert_eq(refused, 1, "one allocation refused");
  cr_assert_eq(v.n, 16, "length unchanged");
  cr_assert_eq(v.v, before, "storage unchanged");
  for (int32_t i = 0; i < 16; i++)
    cr_assert_eq(v.v[i], i, "element %d kept", i);
  cr_assert_eq(kvsim__vec_push(&v, 99), KVSIM_OK, "works again once memory returns");
  kvsim__vec_free(&v);
}

Test(core, u64map_put_get_del) {
  kvsim__u64map_t m;
  cr_assert_eq(kvsim__u64map_init(&m, 4), KVSIM_OK, "init");
  for (uint64_t k = 0; k < 5000; k++)
    cr_assert_eq(kvsim__u64map_put(&m, k * 7919, (int32_t)k), KVSIM_OK, "put %lu", (unsigned long)k);
  cr_assert_eq(m.count, 5000, "count");
  for (uint64_t k = 0; k < 5000; k += 2)
    kvsim__u64map_del(&m, k * 7919);
  for (uint64_t k = 0; k < 5000; k++)
    cr_assert_eq(kvsim__u64map_get(&m, k * 7919), k % 2 ? (int32_t)k : -1, "key %lu",
                 (unsigned long)k);
  cr_assert_eq(kvsim__u64map_get(&m, 3), -1, "absent key");
  kvsim__u64map_fini(&m);
}

static int less_int(const void *a, const void *b) { return *(const int *)a < *(const int *)b; }

Test(core, heap_pops_in_order) {
  int a[200];
  int n = 0;
  unsigned x = 12345;
  for (int i = 0; i < 200; i++) {
    x = x * 1103515245u + 12345u;
    a[n] = (int)(x >> 8) % 1000;
    kvsim__heap_up(a, sizeof *a, n++, less_int);
  }
  int prev = -1;
  while (n > 0) {
    int top;
    kvsim__heap_pop(a, sizeof *a, n--, &top, less_int);
    cr_assert_geq(top, prev, "popped %d after %d", top, prev);
    prev = top;
  }
}

Test(core, arith) {
  cr_assert_eq(kvsim__cdiv(0, 16), 0, "cdiv 0");
  cr_assert_eq(kvsim__cdiv(17, 16), 2, "cdiv 17/16");
  cr_assert_eq(kvsim__cdiv(32, 16), 2, "cdiv 32/16");
  int64_t r = 5;
  cr_assert(!kvsim__mul_i64(INT64_MAX, 2, &r), "mul overflow detected");
  cr_assert_eq(r, 5, "out untouched on overflow");
  cr_assert(kvsim__mul_i64(1 << 20, 1 << 20, &r) && r == (int64_t)1 << 40, "mul");
  cr_assert(!kvsim__add_i64(INT64_MAX, 1, &r), "add overflow detected");
  cr_assert(!kvsim__double_to_i64(1e300, &r), "1e300 does not convert");
  cr_assert(kvsim__double_to_i64(-3.0, &r) && r == -3, "-3 converts");
  uint64_t s1 = 7, s2 = 7;
  cr_assert_eq(kvsim__splitmix64(&s1), kvsim__splitmix64(&s2), "splitmix deterministic");
  cr_assert_neq(kvsim__mix64(1), kvsim__mix64(2), "mix spreads");
}

Test(core, error_messages_are_one_printable_line) {
  kvsim_err err;
  kvsim_err_set(&err, KVSIM_EPARSE, "f.csv:3: bad value '%s'", "a\nb\x01\xff caf\xc3\xa9");
  cr_assert_str_eq(err.msg, "f.csv:3: bad value 'a\\x0ab\\x01\\xff caf\xc3\xa9'",
                   "control bytes and invalid UTF-8 escaped, valid UTF-8 kept: %s", err.msg);
  kvsim_err_prefix(&err, "scenario\n%s", "x");
  cr_assert_null(strchr(err.msg, '\n'), "a prefix cannot add a line break: %s", err.msg);
  char big[2000];
  memset(big, 1, sizeof big - 1);
  big[sizeof big - 1] = '\0';
  kvsim_err_set(&err, KVSIM_EPARSE, "%s", big);
  cr_assert_lt(strlen(err.msg), sizeof err.msg, "escaped message fits its buffer");
}

/* Regression: U+2028, U+2029 and U+0085 break lines in terminals and
 * editors, yet were echoed raw while ASCII control characters were escaped;
 * and a name holding one made a folder. */
Test(core, unicode_line_breaks_are_escaped_and_refused_in_names) {
  kvsim_err err;
  kvsim_err_set(&err, KVSIM_EINVAL, "name '%s'", "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c\xc2\x85" "d \xe2\x80\xa6");
  cr_assert_str_eq(err.msg, "name 'a\\xe2\\x80\\xa8b\\xe2\\x80\\xa9c\\xc2\\x85d \xe2\x80\xa6'",
                   "the three escaped byte by byte, an ellipsis (U+2026) kept: %s", err.msg);
  const char *bad[] = {"a\xe2\x80\xa8", "\xe2\x80\xa9" "b", "x\xc2\x85" "y"};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(kvsim__check_name(bad[i], "s.json", &err), KVSIM_EINVAL, "name %d refused", i);
    cr_assert(strstr(err.msg, "control characters"), "as control characters: %s", err.msg);
  }
  cr_assert_eq(kvsim__check_name("caf\xc3\xa9 \xe2\x80\xa6", "s.json", &err), KVSIM_OK,
               "other UTF-8 is a name: %s", err.msg);
  cr_assert_eq(kvsim__utf8_line_break((const unsigned char *)"\xe2\x80\xa7"), 0, "U+2027 is not one");
}

/* Regression: a repeated key was resolved silently (cJSON finds the first),
 * so a second "hardware" section or grid axis was ignored. */
Test(core, json_parse_refuses_a_duplicate_key_at_any_depth_and_names_it) {
  kvsim_err err = {0};
  cJSON *j =
      kvsim__json_parse("{\"a\": 1, \"b\": {\"c\": [ {\"d\": 1, \"d\": 2} ]}}", "f.json", &err);
  cr_assert_null(j, "refused");
  cr_assert_str_eq(err.msg, "f.json: duplicate key 'b.c[0].d' (JSON keeps one of them)",
                   "names the path: %s", err.msg);
  cr_assert_null(kvsim__json_parse("{\"a\": 1, \"a\": 1}", "g", &err), "even with equal values");
  cr_assert(strstr(err.msg, "duplicate key 'a'"), "%s", err.msg);
  j = kvsim__json_parse("{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}, \"l\": [1, 1]}", "h", &err);
  cr_assert_not_null(j, "one name in two objects, and equal array items, are fine: %s", err.msg);
  cJSON_Delete(j);
}

/* Regression: a name became a folder below results/ as written. */
Test(core, a_name_may_not_leave_its_results_folder) {
  kvsim_err err = {0};
  const char *bad[] = {"../up", "/abs", "a/b", "..", ".", "a\nb", "tab\there", "del\x7f"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(kvsim__check_name(bad[i], "s.json", &err), KVSIM_EINVAL, "'%s' refused", bad[i]);
  const char *good[] = {"default", "util 0.9", "a.b", "..x", "x..", "llama+fp8"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    cr_assert_eq(kvsim__check_name(good[i], "s.json", &err), KVSIM_OK, "'%s' accepted: %s", good[i],
                 err.msg);
}

Test(core, read_file_refuses_what_is_not_a_regular_file) {
  kvsim_err err = {0};
  char *text = NULL;
  /* /dev/zero never ends: once read until memory ran out. */
  cr_assert_eq(kvsim__read_file("/dev/zero", &text, NULL, &err), KVSIM_EINVAL, "/dev/zero: %s",
               err.msg);
  cr_assert_str_eq(err.msg, "/dev/zero: not a regular file (a device, pipe or socket)", "message");
  cr_assert_null(text, "nothing read");
  cr_assert_eq(kvsim__read_file(".", &text, NULL, &err), KVSIM_EINVAL, ".: %s", err.msg);
  cr_assert_str_eq(err.msg, ".: is a directory", "a directory says so, not 'read error'");
  FILE *f = NULL;
  cr_assert_eq(kvsim__open_input("/dev/null", KVSIM_ENOENT, &f, &err), KVSIM_EINVAL, "%s", err.msg);
  cr_assert_null(f, "no stream for a device");
  cr_assert_eq(kvsim__open_input("no/such/file", KVSIM_ENOENT, &f, &err), KVSIM_ENOENT,
               "a missing file keeps the caller's code: %s", err.msg);
}

Test(core, read_file_caps_the_size_it_reads_whole) {
  const char *dir = test_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/kvsim-test-core-XXXXXX", dir);
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemp failed for %s", path);
  /* Sparse: no disk or memory used. */
  cr_assert_eq(ftruncate(fd, (off_t)KVSIM__READ_FILE_MAX + 1), 0, "ftruncate");
  close(fd);
  kvsim_err err = {0};
  char *text = NULL;
  int rc = kvsim__read_file(path, &text, NULL, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a file past the cap is an error: %s", err.msg);
  cr_assert(strstr(err.msg, ": larger than 256 MiB, too large to read whole"), "message: %s",
            err.msg);
  cr_assert_null(text, "nothing read");
}

/* Read as a C string, text ended at a NUL byte: what followed it (a
 * second object, garbage) was dropped without a word. */
Test(core, read_file_refuses_a_nul_byte_at_its_line) {
  const char *dir = test_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/kvsim-test-core-XXXXXX", dir);
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemp failed for %s", path);
  const char body[] = "{\"a\": 1,\n\"b\": 2}\n\0{garbage";
  cr_assert_eq(write(fd, body, sizeof body - 1), (ssize_t)(sizeof body - 1), "write");
  close(fd);
  kvsim_err err = {0};
  char *text = NULL;
  int rc = kvsim__read_file(path, &text, NULL, &err);
  cJSON *j = kvsim__json_load(path, &err);
  unlink(path);
  cr_assert_eq(rc, KVSIM_EINVAL, "a NUL byte is an error: %s", err.msg);
  cr_assert_null(text, "nothing read");
  cr_assert_null(j, "nor parsed");
  char want[600];
  snprintf(want, sizeof want, "%s:3: a NUL byte (a binary file?)", path);
  cr_assert_str_eq(err.msg, want, "names the file and the line");
}

/* A null is the key left out; a count below its floor or past its
 * ceiling names the range taken. */
Test(core, json_int_min_names_the_range_taken) {
  cJSON *j = cJSON_Parse("{\"n\": null, \"z\": 0, \"big\": 1e30, \"ok\": 7}");
  cr_assert_not_null(j, "parse");
  kvsim_err err = {0};
  int64_t v = -5;
  cr_assert(!kvsim__json_given(j, "n"), "a null is not given");
  cr_assert(kvsim__json_given(j, "z"), "a 0 is given");
  cr_assert_eq(kvsim__json_int_min(j, "n", 1, 10, " (x)", &v, "f.json: w", &err), 0,
               "null: absent");
  cr_assert_eq(v, -5, "null leaves the value");
  cr_assert_eq(kvsim__json_int_min(j, "z", 1, 10, " (x)", &v, "f.json: w", &err), KVSIM_EINVAL,
               "0 < 1");
  cr_assert_str_eq(err.msg, "f.json: w.z: 0 must be >= 1 (x)", "the floor and the note");
  cr_assert_eq(kvsim__json_int_min(j, "big", 1, 10, " (x)", &v, "f.json: w", &err), KVSIM_EINVAL,
               "1e30");
  cr_assert_str_eq(err.msg, "f.json: w.big: 1e+30 is out of range [1, 10]", "the range taken");
  cr_assert_eq(kvsim__json_int_min(j, "ok", 1, 10, NULL, &v, "f.json: w", &err), 1, "in range");
  cr_assert_eq(v, 7, "read");
  cJSON_Delete(j);
}

/* rc is a refusal whose message is want. */
static void refused(int rc, const kvsim_err *err, const char *want) {
  cr_assert_eq(rc, KVSIM_EINVAL, "%s: refused", want);
  cr_assert_str_eq(err->msg, want, "names the file and the key: %s", err->msg);
}

/* Every getter names a key of a file "FILE: key" and one of a section
 * "FILE: section.key", as the scenario does; they once read "FILE.key". */
Test(core, getters_name_a_file_key_after_a_colon) {
  cJSON *j =
      cJSON_Parse("{\"i\": 0.5, \"r\": 20, \"n\": \"x\", \"b\": 1, \"s\": 2, \"unheard\": 1}");
  cr_assert_not_null(j, "parse");
  kvsim_err err = {0};
  int64_t i = 0;
  double d = 0;
  bool b = false;
  char s[8];
  static const char *const keys[] = {"i", "r", "n", "b", "s", NULL};
  refused(kvsim__json_int(j, "i", &i, "m.json", &err), &err, "m.json: i: expected an integer");
  refused(kvsim__json_int_in(j, "r", 0, 10, &i, "m.json", &err), &err,
          "m.json: r: 20 is out of range [0, 10]");
  refused(kvsim__json_int_min(j, "r", 30, 40, NULL, &i, "m.json", &err), &err,
          "m.json: r: 20 must be >= 30");
  refused(kvsim__json_num(j, "n", &d, "m.json", &err), &err, "m.json: n: expected a number");
  refused(kvsim__json_num_in(j, "r", 0, 10, &d, "m.json", &err), &err,
          "m.json: r: 20 is out of range [0, 10]");
  refused(kvsim__json_bool(j, "b", &b, "m.json", &err), &err, "m.json: b: expected true or false");
  refused(kvsim__json_str(j, "s", s, sizeof s, "m.json", &err), &err,
          "m.json: s: expected a string");
  refused(kvsim__json_only_keys(j, keys, "m.json", &err), &err, "m.json: unheard: unknown key");
  /* A section's key and a where left to the caller (who prefixes it). */
  refused(kvsim__json_int(j, "i", &i, "m.json: perf", &err), &err,
          "m.json: perf.i: expected an integer");
  refused(kvsim__json_only_keys(j, keys, "m.json: perf", &err), &err,
          "m.json: perf.unheard: unknown key");
  refused(kvsim__json_int(j, "i", &i, "", &err), &err, "i: expected an integer");
  cJSON_Delete(j);
}

Test(core, same_file_sees_through_links_and_spellings) {
  const char *dir = test_tmpdir();
  char path[512], link[600], dot[600];
  snprintf(path, sizeof path, "%s/kvsim-test-core-XXXXXX", dir);
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemp failed for %s", path);
  close(fd);
  snprintf(link, sizeof link, "%s.link", path);
  cr_assert_eq(symlink(path, link), 0, "symlink %s", link);
  char *slash = strrchr(path, '/');
  snprintf(dot, sizeof dot, "%.*s/./%s", (int)(slash - path), path, slash + 1);
  bool same_link = kvsim__same_file(path, link), same_dot = kvsim__same_file(dot, path);
  bool missing = kvsim__same_file(path, "no/such/file");
  unlink(link);
  unlink(path);
  cr_assert(same_link, "a symbolic link is the same file");
  cr_assert(same_dot, "another spelling of the path is the same file");
  cr_assert(!missing, "a missing file is never the same");
}

/* Regression: JSON past cJSON's nesting limit said only "invalid JSON". */
static char *nested(int arrays) {
  char *t = malloc((size_t)arrays * 2 + 64);
  int n = sprintf(t, "{\"a\": 1,\n\"x\": ");
  for (int i = 0; i < arrays; i++)
    t[n++] = '[';
  for (int i = 0; i < arrays; i++)
    t[n++] = ']';
  strcpy(t + n, "}");
  return t;
}

Test(core, json_nested_too_deep_says_so) {
  kvsim_err err = {0};
  /* The object is one level: 999 arrays in it are 1000, cJSON's limit. */
  char *t = nested(CJSON_NESTING_LIMIT - 1);
  cJSON *j = kvsim__json_parse(t, "d.json", &err);
  cr_assert_not_null(j, "%d levels parse: %s", CJSON_NESTING_LIMIT, err.msg);
  cJSON_Delete(j);
  free(t);
  t = nested(CJSON_NESTING_LIMIT);
  cr_assert_null(kvsim__json_parse(t, "d.json", &err), "%d levels are refused",
                 CJSON_NESTING_LIMIT + 1);
  char want[96];
  snprintf(want, sizeof want, "d.json:2: invalid JSON: nested deeper than %d levels",
           CJSON_NESTING_LIMIT);
  cr_assert_str_eq(err.msg, want, "names the file, the line and the limit");
  free(t);
  /* Brackets inside strings are no nesting; a plain syntax error stays one. */
  cr_assert_null(kvsim__json_parse("{\"s\": \"[[[[{{{{\", \"t\": }", "s.json", &err), "bad");
  cr_assert_str_eq(err.msg, "s.json:1: invalid JSON", "a syntax error: %s", err.msg);
}

Test(core, json_at_follows_a_dotted_path) {
  cJSON *j = cJSON_Parse("{\"engine\": {\"spec\": {\"method\": \"eagle\", \"n\": null}}, \"a\": 1}");
  cr_assert_not_null(j, "parse");
  const cJSON *m = kvsim__json_at(j, "engine.spec.method");
  cr_assert(cJSON_IsString(m) && !strcmp(m->valuestring, "eagle"), "three levels down");
  cr_assert_eq(kvsim__json_at(j, "a")->valueint, 1, "one level");
  cr_assert_null(kvsim__json_at(j, "engine.spec.n"), "a null is not given");
  cr_assert_null(kvsim__json_at(j, "engine.nope.method"), "a missing part");
  cr_assert_null(kvsim__json_at(j, "a.b"), "below a number");
  char longpart[200];
  memset(longpart, 'x', sizeof longpart - 1);
  longpart[sizeof longpart - 1] = '\0';
  cr_assert_null(kvsim__json_at(j, longpart), "a part past 127 bytes");
  cJSON_Delete(j);
}

/* An unknown key's suggestion: a near typo first, else the key whose
 * words' initials it is (users write "tp" for tensor_parallel_size). */
Test(core, unknown_key_suggests_typo_then_initials) {
  static const char *const keys[] = {"gpus", "tensor_parallel_size", "max_num_seqs",
                                     "max_num_batched_tokens", "max_replicas", NULL};
  const struct {
    const char *json, *msg;
  } cases[] = {
      {"{\"tp\": 1}", "s: tp: unknown key (did you mean 'tensor_parallel_size'?)"},
      {"{\"mnbt\": 1}", "s: mnbt: unknown key (did you mean 'max_num_batched_tokens'?)"},
      {"{\"gpu\": 1}", "s: gpu: unknown key (did you mean 'gpus'?)"},
      {"{\"mn\": 1}", "s: mn: unknown key"}, /* the initials of two keys: no guess */
      {"{\"zzzzzzzz\": 1}", "s: zzzzzzzz: unknown key"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cJSON *j = cJSON_Parse(cases[i].json);
    kvsim_err err = {0};
    cr_assert_eq(kvsim__json_only_keys(j, keys, "s", &err), KVSIM_EINVAL, "%s", cases[i].json);
    cr_assert_str_eq(err.msg, cases[i].msg, "%s", cases[i].json);
    cJSON_Delete(j);
  }
}
