#include "core/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/alloc.h"

static int not_regular(const char *path, const struct stat *st, kvsim_err *err) {
  if (S_ISDIR(st->st_mode))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: is a directory", path);
  return kvsim_err_set(err, KVSIM_EINVAL, "%s: not a regular file (a device, pipe or socket)",
                       path);
}

int kvsim__open_input(const char *path, int open_code, FILE **out, kvsim_err *err) {
  *out = NULL;
  struct stat st;
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return not_regular(path, &st, err);
  FILE *f = fopen(path, "rb");
  if (!f)
    return kvsim_err_set(err, open_code, "%s: cannot open: %s", path, strerror(errno));
  /* The path may have been replaced between the two looks. */
  if (fstat(fileno(f), &st) == 0 && !S_ISREG(st.st_mode)) {
    fclose(f);
    return not_regular(path, &st, err);
  }
  *out = f;
  return KVSIM_OK;
}

bool kvsim__same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static int too_large(const char *path, kvsim_err *err) {
  return kvsim_err_set(err, KVSIM_EINVAL, "%s: larger than %zu MiB, too large to read whole", path,
                       KVSIM__READ_FILE_MAX >> 20);
}

int kvsim__read_file(const char *path, char **out, size_t *len, kvsim_err *err) {
  FILE *f;
  int rc = kvsim__open_input(path, KVSIM_EIO, &f, err);
  if (rc < 0)
    return rc;
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && (uintmax_t)st.st_size > KVSIM__READ_FILE_MAX) {
    fclose(f);
    return too_large(path, err);
  }
  size_t cap = 4096, n = 0;
  char *buf = kvsim__malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      return kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
    }
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1)
      break;
    /* The file may grow while it is read. */
    if (n > KVSIM__READ_FILE_MAX) {
      free(buf);
      fclose(f);
      return too_large(path, err);
    }
    cap *= 2;
    char *grown = kvsim__realloc(buf, cap);
    if (!grown)
      free(buf);
    buf = grown;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return kvsim_err_set(err, KVSIM_EIO, "%s: read error", path);
  }
  /* Read as a C string, the text would end at a NUL byte: what follows
   * one (a second object, garbage) was silently dropped. */
  const char *nul = memchr(buf, '\0', n);
  if (nul) {
    long long line = 1;
    for (const char *p = buf; p < nul; p++)
      line += *p == '\n';
    free(buf);
    return kvsim_err_set(err, KVSIM_EINVAL, "%s:%lld: a NUL byte (a binary file?)", path, line);
  }
  buf[n] = '\0';
  *out = buf;
  if (len)
    *len = n;
  return KVSIM_OK;
}

/* Puts seg in front of the path found below it: "name" then ".rest", or
 * "[i]" then the rest as it is. */
static void path_prepend(char *path, size_t cap, const char *seg) {
  char tail[4096];
  snprintf(tail, sizeof tail, "%s", path);
  const char *sep = tail[0] && tail[0] != '[' ? "." : "";
  snprintf(path, cap, "%s%s%s", seg, sep, tail);
}

/* Whether an object anywhere below j has two members of one name; path
 * gets the dotted path of the second (arrays as [i]). The path is built
 * on the way back from a duplicate only: a clean file of a few hundred
 * thousand nodes (a kernel profile) costs no formatting. */
static bool duplicate_key(const cJSON *j, char *path, size_t cap) {
  const bool object = cJSON_IsObject(j);
  int i = 0;
  for (const cJSON *c = j->child; c; c = c->next, i++) {
    if (object)
      for (const cJSON *d = j->child; d != c; d = d->next)
        if (c->string && d->string && !strcmp(c->string, d->string)) {
          snprintf(path, cap, "%s", c->string);
          return true;
        }
    if (c->child && duplicate_key(c, path, cap)) {
      char seg[256];
      if (object)
        snprintf(seg, sizeof seg, "%s", c->string ? c->string : "");
      else
        snprintf(seg, sizeof seg, "[%d]", i);
      path_prepend(path, cap, seg);
      return true;
    }
  }
  return false;
}

/* One step of a scan of JSON text that skips strings: the character at
 * *p when it stands outside a string, else 0 (inside one, or a quote);
 * moves *p onto an escaped character so that the caller's p++ passes it. */
static char json_step(const char **p, bool *in_str) {
  if (*in_str) {
    if (**p == '\\' && (*p)[1])
      (*p)++;
    else if (**p == '"')
      *in_str = false;
    return 0;
  }
  if (**p == '"') {
    *in_str = true;
    return 0;
  }
  return **p;
}

bool kvsim__json_too_deep(const char *text, const char *stop) {
  int depth = 0;
  bool in_str = false;
  for (const char *p = text; stop && *p && p <= stop; p++) {
    char ch = json_step(&p, &in_str);
    if ((ch == '[' || ch == '{') && ++depth > CJSON_NESTING_LIMIT)
      return true;
    if (ch == ']' || ch == '}')
      depth--;
  }
  return false;
}

cJSON *kvsim__json_parse(const char *text, const char *where, kvsim_err *err) {
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithOpts(text, &end, 1);
  if (!j) {
    /* cJSON reports the failing position; turn it into a line number. */
    int line = 1;
    const char *stop = end ? end : cJSON_GetErrorPtr();
    for (const char *p = text; stop && p < stop && *p; p++)
      line += *p == '\n';
    /* A trailing comma is the usual culprit (editors and JSON5 allow it):
     * the first ',' outside a string followed by '}' or ']', up to where
     * cJSON stopped (just past the bracket, at worst). */
    int comma_line = 0;
    bool in_str = false;
    for (const char *p = text; stop && *p && p <= stop && !comma_line; p++) {
      if (json_step(&p, &in_str) != ',')
        continue;
      const char *q = p + 1;
      while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')
        q++;
      if ((*q == '}' || *q == ']') && q <= stop) {
        comma_line = 1;
        for (const char *r = text; r < p; r++)
          comma_line += *r == '\n';
      }
    }
    if (kvsim__json_too_deep(text, stop))
      kvsim_err_set(err, KVSIM_EPARSE, "%s:%d: invalid JSON: nested deeper than %d levels", where,
                    line, CJSON_NESTING_LIMIT);
    else if (comma_line)
      kvsim_err_set(err, KVSIM_EPARSE, "%s:%d: invalid JSON: trailing comma at line %d", where,
                    comma_line, comma_line);
    else
      kvsim_err_set(err, KVSIM_EPARSE, "%s:%d: invalid JSON", where, line);
    return NULL;
  }
  /* JSON leaves a repeated key to the reader, and cJSON keeps both and
   * finds the first: a second "hardware" would be ignored without a word. */
  char path[256] = "";
  if (duplicate_key(j, path, sizeof path)) {
    kvsim_err_set(err, KVSIM_EPARSE, "%s: duplicate key '%s' (JSON keeps one of them)", where,
                  path);
    cJSON_Delete(j);
    return NULL;
  }
  return j;
}

static const cJSON *field(const cJSON *obj, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return (v && !cJSON_IsNull(v)) ? v : NULL;
}

bool kvsim__json_given(const cJSON *obj, const char *key) { return field(obj, key) != NULL; }

const cJSON *kvsim__json_at(const cJSON *obj, const char *path) {
  char part[128];
  while (obj && *path) {
    const char *dot = strchr(path, '.');
    size_t l = dot ? (size_t)(dot - path) : strlen(path);
    if (l >= sizeof part)
      return NULL;
    memcpy(part, path, l);
    part[l] = '\0';
    obj = cJSON_GetObjectItemCaseSensitive(obj, part);
    path += l + (dot != NULL);
  }
  return obj && !cJSON_IsNull(obj) ? obj : NULL;
}

/* The integers a JSON number carries exactly: cJSON keeps every number as a
 * double, whose 53-bit mantissa holds every integer of magnitude up to
 * 2^53 - 1 (JavaScript's Number.MAX_SAFE_INTEGER); beyond it neighbouring
 * integers share one double, so 9223372036854775807 would silently read as
 * 9223372036854775808. */
#define JSON_INT_MAX KVSIM__JSON_INT_MAX

/* A where names a key path once it holds the ": " after its file; a file
 * name itself holds none (a path with ": " in it reads as a key path, the
 * message still naming the file). */
const char *kvsim__json_sep(const char *where) {
  if (!*where)
    return "";
  return strstr(where, ": ") ? "." : ": ";
}

/* Reads an integer in [lo, hi]; lo/hi within +-JSON_INT_MAX. */
static int json_int_in(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out,
                       const char *where, kvsim_err *err) {
  const cJSON *v = field(obj, key);
  if (!v)
    return 0;
  double d = v->valuedouble;
  if (!cJSON_IsNumber(v) || d != floor(d))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: expected an integer", where,
                         kvsim__json_sep(where), key);
  if (!(d >= (double)lo && d <= (double)hi))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: %.16g is out of range [%lld, %lld]", where,
                         kvsim__json_sep(where), key, d, (long long)lo, (long long)hi);
  *out = (int64_t)d;
  return 1;
}

int kvsim__json_int(const cJSON *obj, const char *key, int64_t *out, const char *where,
                    kvsim_err *err) {
  return json_int_in(obj, key, -JSON_INT_MAX, JSON_INT_MAX, out, where, err);
}

int kvsim__json_int_in(const cJSON *obj, const char *key, int64_t lo, int64_t hi, int64_t *out,
                       const char *where, kvsim_err *err) {
  if (lo < -JSON_INT_MAX)
    lo = -JSON_INT_MAX;
  if (hi > JSON_INT_MAX)
    hi = JSON_INT_MAX;
  return json_int_in(obj, key, lo, hi, out, where, err);
}

int kvsim__json_int_min(const cJSON *obj, const char *key, int64_t lo, int64_t hi, const char *note,
                        int64_t *out, const char *where, kvsim_err *err) {
  const cJSON *v = field(obj, key);
  if (!v)
    return 0;
  if (cJSON_IsNumber(v) && v->valuedouble < (double)lo && v->valuedouble == floor(v->valuedouble))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: %.16g must be >= %lld%s", where,
                         kvsim__json_sep(where), key, v->valuedouble, (long long)lo,
                         note ? note : "");
  return kvsim__json_int_in(obj, key, lo, hi, out, where, err);
}

int kvsim__json_num(const cJSON *obj, const char *key, double *out, const char *where,
                    kvsim_err *err) {
  const cJSON *v = field(obj, key);
  if (!v)
    return 0;
  if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: expected a number", where,
                         kvsim__json_sep(where), key);
  *out = v->valuedouble;
  return 1;
}

int kvsim__json_num_in(const cJSON *obj, const char *key, double lo, double hi, double *out,
                       const char *where, kvsim_err *err) {
  double d = 0;
  int rc = kvsim__json_num(obj, key, &d, where, err);
  if (rc <= 0)
    return rc;
  if (!(d >= lo && d <= hi))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: %g is out of range [%g, %g]", where,
                         kvsim__json_sep(where), key, d, lo, hi);
  *out = d;
  return 1;
}

int kvsim__json_bool(const cJSON *obj, const char *key, bool *out, const char *where,
                     kvsim_err *err) {
  const cJSON *v = field(obj, key);
  if (!v)
    return 0;
  if (!cJSON_IsBool(v))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: expected true or false", where,
                         kvsim__json_sep(where), key);
  *out = cJSON_IsTrue(v);
  return 1;
}

int kvsim__json_str(const cJSON *obj, const char *key, char *out, size_t cap,
                    const char *where, kvsim_err *err) {
  const cJSON *v = field(obj, key);
  if (!v)
    return 0;
  if (!cJSON_IsString(v))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: expected a string", where,
                         kvsim__json_sep(where), key);
  if (strlen(v->valuestring) >= cap)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: string longer than %zu characters", where,
                         kvsim__json_sep(where), key, cap - 1);
  strcpy(out, v->valuestring);
  return 1;
}

int kvsim__utf8_line_break(const unsigned char *s) {
  if (s[0] == 0xc2 && s[1] == 0x85)
    return 2;
  return s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9) ? 3 : 0;
}

int kvsim__check_name(const char *name, const char *where, kvsim_err *err) {
  if (!strcmp(name, ".") || !strcmp(name, ".."))
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: name '%s' is not a folder name (it names results/ output)", where,
                         name);
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    if (*c == '/' || *c < 0x20 || *c == 0x7f || kvsim__utf8_line_break(c))
      return kvsim_err_set(err, KVSIM_EINVAL,
                           "%s: name may not contain %s (it names a folder below results/)", where,
                           *c == '/' ? "'/'" : "control characters");
  return KVSIM_OK;
}

/* Whether abbr (two or more letters, no '_') is the first letters of the
 * words of key ("tp" of tensor_parallel_size, "mnbt" of
 * max_num_batched_tokens): the shorthand users write for long keys. */
static bool initials_of(const char *abbr, const char *key) {
  size_t n = strlen(abbr);
  if (n < 2 || strchr(abbr, '_'))
    return false;
  size_t i = 0;
  for (const char *k = key; *k && i < n; k = strchr(k, '_') ? strchr(k, '_') + 1 : "")
    if (*k != abbr[i++])
      return false;
  return i == n;
}

/* The allowed key unknown most likely meant: one whose words' initials it
 * is, unless a key is one edit away; else the nearest within 3 edits. */
static const char *suggest(const char *unknown, const char *const *allowed) {
  const char *best = NULL, *abbr = NULL;
  int best_d = 1 << 30, nabbr = 0;
  for (const char *const *a = allowed; *a; a++) {
    int d = kvsim__edit_distance(*a, unknown);
    if (d < best_d) {
      best_d = d;
      best = *a;
    }
    if (initials_of(unknown, *a))
      abbr = *a, nabbr++;
  }
  if (nabbr == 1 && best_d > 1)
    return abbr;
  return best && best_d <= 3 ? best : NULL;
}

int kvsim__json_only_keys(const cJSON *obj, const char *const *allowed, const char *where,
                          kvsim_err *err) {
  if (!cJSON_IsObject(obj))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an object", where);
  for (const cJSON *c = obj->child; c; c = c->next) {
    int found = 0;
    for (const char *const *a = allowed; *a && !found; a++)
      found = strcmp(*a, c->string) == 0;
    if (!found) {
      /* The suggestion only for a key that is unknown: an edit distance
       * against every allowed key for every valid one cost 1.8 % of a run. */
      const char *best = suggest(c->string, allowed);
      if (best)
        return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: unknown key (did you mean '%s'?)", where,
                             kvsim__json_sep(where), c->string, best);
      return kvsim_err_set(err, KVSIM_EINVAL, "%s%s%s: unknown key", where, kvsim__json_sep(where),
                           c->string);
    }
  }
  return KVSIM_OK;
}

int kvsim__edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 128 || lb > 128)
    return 1 << 20;
  int row[129];
  for (size_t j = 0; j <= lb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int cost = a[i - 1] != b[j - 1];
      int v = diag + cost;
      if (row[j] + 1 < v)
        v = row[j] + 1;
      if (row[j - 1] + 1 < v)
        v = row[j - 1] + 1;
      row[j] = v;
      diag = up;
    }
  }
  return row[lb];
}

const char *kvsim__commas(int64_t v, char *buf, size_t cap) {
  char digits[32];
  int neg = v < 0;
  uint64_t u = neg ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
  int n = snprintf(digits, sizeof digits, "%llu", (unsigned long long)u);
  size_t o = 0;
  if (neg && o + 1 < cap)
    buf[o++] = '-';
  for (int i = 0; i < n && o + 1 < cap; i++) {
    if (i > 0 && (n - i) % 3 == 0 && o + 1 < cap)
      buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = '\0';
  return buf;
}

cJSON *kvsim__json_load(const char *path, kvsim_err *err) {
  char *text;
  if (kvsim__read_file(path, &text, NULL, err) < 0)
    return NULL;
  cJSON *j = kvsim__json_parse(text, path, err);
  free(text);
  return j;
}

bool kvsim__dirname(const char *path, char *dir, size_t cap) {
  snprintf(dir, cap, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf(dir, cap, ".");
  return slash != NULL;
}

bool kvsim__ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lx = strlen(suffix);
  return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

int kvsim__parse_human_int(const char *s, int64_t *out, const char *what, kvsim_err *err) {
  const char *p = s;
  while (*p == ' ' || *p == '\t')
    p++;
  size_t n = strlen(p);
  while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
    n--;
  char buf[64];
  if (n == 0 || n >= sizeof buf)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an integer, got '%s' (8192, 8k = 8,000 or 8K = 8,192)",
                         what, s);
  memcpy(buf, p, n);
  buf[n] = '\0';
  /* (\d+(?:\.\d+)?)([kKmMgGtT]) or a plain integer, as vLLM's regex. */
  const char *sfx = "kmgtKMGT";
  char last = buf[n - 1];
  const char *hit = strchr(sfx, last);
  size_t digits = hit ? n - 1 : n;
  int dots = 0, ok = digits > 0 && buf[0] != '.' && buf[digits - 1] != '.';
  for (size_t i = 0; ok && i < digits; i++) {
    if (buf[i] == '.')
      dots++;
    else if (buf[i] < '0' || buf[i] > '9')
      ok = 0;
  }
  if (!ok || dots > 1 || (dots && !hit))
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: expected an integer, got '%s' (8192, 8k = 8,000 or 8K = 8,192)",
                         what, s);
  buf[digits] = '\0';
  const int64_t limit = INT64_C(1) << 62;
  if (hit && last >= 'a') {
    /* Decimal suffix: int(float(number) * mult), truncated as Python's int(). */
    static const double mult[] = {1e3, 1e6, 1e9, 1e12};
    double v = strtod(buf, NULL) * mult[hit - sfx];
    if (!(v < (double)limit))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: '%s' is too large", what, s);
    *out = (int64_t)v;
    return KVSIM_OK;
  }
  if (dots)
    /* vLLM: "Decimals are not allowed with binary suffixes like K". */
    return kvsim_err_set(err, KVSIM_EINVAL,
                         "%s: decimals are not allowed with binary suffixes like %c; did you mean "
                         "%s%c?",
                         what, last, buf, (char)(last - 'A' + 'a'));
  errno = 0;
  char *end;
  long long v = strtoll(buf, &end, 10);
  int shift = hit ? 10 * (int)(hit - sfx - 3) : 0;
  if (errno || v >= limit >> shift)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: '%s' is too large", what, s);
  *out = (int64_t)v << shift;
  return KVSIM_OK;
}
