/* The fast JSON reader (core/jsonfast.h) against cJSON itself: the trees
 * of every kernel profile in the catalog and of hand-written documents
 * compared node by node (types, keys, links, valueint, the doubles' bits);
 * numbers against strtod; and the texts outside its subset, which it must
 * leave to cJSON. */
#include <criterion/criterion.h>

#include <gsl/gsl_rng.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/catalog.h"
#include "core/jsonfast.h"

/* Walks both trees together; the first difference names its path. */
static void same_tree(const cJSON *a, const cJSON *b, const char *path) {
  cr_assert_eq(a->type, b->type, "%s: type %d, cJSON %d", path, a->type, b->type);
  cr_assert_eq(a->valueint, b->valueint, "%s: valueint %d, cJSON %d", path, a->valueint, b->valueint);
  cr_assert(memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) == 0, "%s: %.17g, cJSON %.17g", path,
            a->valuedouble, b->valuedouble);
  cr_assert_eq(!a->string, !b->string, "%s: key presence", path);
  if (a->string)
    cr_assert_str_eq(a->string, b->string, "%s: key", path);
  cr_assert_eq(!a->valuestring, !b->valuestring, "%s: string presence", path);
  if (a->valuestring)
    cr_assert_str_eq(a->valuestring, b->valuestring, "%s: string", path);
  cr_assert_eq(!a->child, !b->child, "%s: children", path);
  if (!a->child)
    return;
  const cJSON *x = a->child, *y = b->child;
  int i = 0;
  for (; x && y; x = x->next, y = y->next, i++) {
    char sub[256];
    snprintf(sub, sizeof sub, "%.200s/%d", path, i);
    same_tree(x, y, sub);
    /* the links: prev is the previous child; the head's, the last */
    cr_assert(x->prev && (x == a->child ? x->prev->next == NULL : x->prev->next == x), "%s: prev", sub);
  }
  cr_assert(!x && !y, "%s: %d children on one side, more on the other", path, i);
}

static void both_ways(const char *text, const char *name) {
  kvsim__jsonfast a = {0};
  cJSON *fast = kvsim__jsonfast_parse(text, &a);
  cr_assert_not_null(fast, "%s: the fast reader refused well-formed text", name);
  cJSON *ref = cJSON_ParseWithOpts(text, NULL, 1);
  cr_assert_not_null(ref, "%s: cJSON refused it", name);
  same_tree(fast, ref, name);
  /* Lookups as the readers make them: the first of duplicate keys. */
  if (cJSON_IsObject(ref))
    for (const cJSON *c = ref->child; c; c = c->next)
      cr_assert_eq(cJSON_GetObjectItemCaseSensitive(fast, c->string)->valuedouble,
                   cJSON_GetObjectItemCaseSensitive(ref, c->string)->valuedouble, "%s: lookup %s", name, c->string);
  cJSON_Delete(ref);
  kvsim__jsonfast_free(&a);
  cr_assert_null(a.chunks, "%s: freed", name);
}

Test(jsonfast, every_kernel_profile_as_cjson_reads_it) {
  int n = 0;
  for (const kvsim__catalog_entry *e = kvsim__catalog; e->kind; e++) {
    if (e->kind != KVSIM_CATALOG_KERNELS)
      continue;
    both_ways(e->json, e->name);
    n++;
  }
  cr_assert_geq(n, 6, "the catalog's kernel profiles: %d", n);
}

Test(jsonfast, documents_as_cjson_reads_them) {
  static const char *const docs[] = {
      "{\"a\": [1, 2.5, -0, -0.0, 0e5, 1E+2, 1e-2, 123456789012345678901234567890, 0.1, 1e308, 1e-320],"
      " \"b\": {\"c\": true, \"d\": false, \"e\": null, \"f\": \"x y\", \"\": []}, \"a\": 7}",
      "[]", "{}", " \r\n\t[ [ ], { } , \"\" ]\n", "3", "-2147483648", "2147483647", "2147483648",
      "-2147483649", "1e400", "-1e400", "[9007199254740993, 9007199254740992.0, 4.9406564584124654e-324]",
      "[0.30000000000000004, 2.2250738585072011e-308, 1.7976931348623157e308, 123.456e-7]",
      "{\"k\": \"caf\xc3\xa9\"}",
  };
  for (size_t i = 0; i < sizeof docs / sizeof *docs; i++)
    both_ways(docs[i], docs[i]);
}

/* Random decimal strings of every shape the grammar allows, read as strtod
 * reads them: short ones take the exact fast path, long mantissas and far
 * exponents the copy through strtod. */
Test(jsonfast, numbers_as_strtod) {
  gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng_set(rng, 29);
  char s[96];
  for (int t = 0; t < 200000; t++) {
    size_t n = 0;
    if (gsl_rng_uniform_int(rng, 2))
      s[n++] = '-';
    const int idig = 1 + (int)gsl_rng_uniform_int(rng, 22);
    s[n++] = (char)('1' + gsl_rng_uniform_int(rng, 9));
    for (int i = 1; i < idig && gsl_rng_uniform_int(rng, 4); i++)
      s[n++] = (char)('0' + gsl_rng_uniform_int(rng, 10));
    if (gsl_rng_uniform_int(rng, 3)) {
      s[n++] = '.';
      const int fd = 1 + (int)gsl_rng_uniform_int(rng, 22);
      for (int i = 0; i < fd; i++)
        s[n++] = (char)('0' + gsl_rng_uniform_int(rng, 10));
    }
    if (gsl_rng_uniform_int(rng, 3) == 0)
      n += (size_t)snprintf(s + n, sizeof s - n, "e%d", (int)gsl_rng_uniform_int(rng, 80) - 40);
    s[n] = '\0';
    if (t % 3 == 0) /* a double printed back, as the tables' writer does */
      snprintf(s, sizeof s, "%.*g", 1 + (int)gsl_rng_uniform_int(rng, 17),
               (gsl_rng_uniform(rng) - 0.5) * 1e4 * gsl_rng_uniform(rng));
    double v;
    size_t len;
    cr_assert_eq(kvsim__jsonfast_number(s, &v, &len), 1, "%s: refused", s);
    char *end;
    const double want = strtod(s, &end);
    cr_assert_eq(len, (size_t)(end - s), "%s: length %zu", s, len);
    cr_assert(memcmp(&v, &want, sizeof v) == 0, "%s: %.17g, strtod %.17g", s, v, want);
  }
  gsl_rng_free(rng);
}

Test(jsonfast, leaves_everything_else_to_cjson) {
  char deep[2 * 300 + 1];
  memset(deep, '[', 300);
  memset(deep + 300, ']', 300);
  deep[600] = '\0';
  static const char *const bad[] = {
      "[1,]", "{\"a\":1,}", "[+1]", "[.5]", "[1.]", "[1e]", "[01]", "[-]", "[1e+]",
      "[\"a\\nb\"]", "[\"a\tb\"]", "\xef\xbb\xbf[1]", "[1]\f", "[1] x", "{\"a\" 1}", "{1: 2}", "[tru]",
      "[nul]", "[\"open]", "", "[0x10]", "[Infinity]", "[NaN]", "[-inf]",
      "[1234567890123456789012345678901234567890123456789012345678901234]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    kvsim__jsonfast a = {0};
    cr_assert_null(kvsim__jsonfast_parse(bad[i], &a), "took %s", bad[i]);
    cr_assert(!a.chunks && !a.strings, "%s: nothing held", bad[i]);
  }
  kvsim__jsonfast a = {0};
  cr_assert_null(kvsim__jsonfast_parse(deep, &a), "300 levels go to cJSON");
}
