/* The fast JSON reader (jsonfast.h). Its subset is strict JSON: whitespace
 * is space, tab, CR and LF; numbers follow RFC 8259's grammar; strings hold
 * no backslash and no byte below 0x20. Everything outside it returns NULL
 * and the caller's cJSON parse decides, so the subset's edge only has to
 * lie inside what cJSON accepts, with the same tree. */
#include "core/jsonfast.h"

#include <limits.h>
#include <locale.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

/* Nodes are handed out from blocks of this many, never moved (the tree
 * links them by pointer). */
enum { CHUNK_NODES = 4096 };
/* Deeper nesting goes to cJSON (its own limit is CJSON_NESTING_LIMIT,
 * 1000, and kvsim__json_parse words the error). */
enum { MAX_DEPTH = 256 };

struct kvsim__jsonfast_chunk {
  kvsim__jsonfast_chunk *next;
  int used;
  cJSON nodes[CHUNK_NODES];
};

typedef struct rd {
  const char *p;
  kvsim__jsonfast *a;
  char *s; /* next free byte of a->strings */
} rd_t;

static cJSON *node(rd_t *r) {
  kvsim__jsonfast_chunk *c = r->a->chunks;
  if (!c || c->used == CHUNK_NODES) {
    c = kvsim__malloc(sizeof *c);
    if (!c)
      return NULL;
    c->next = r->a->chunks;
    c->used = 0;
    r->a->chunks = c;
  }
  cJSON *n = &c->nodes[c->used++];
  memset(n, 0, sizeof *n);
  return n;
}

static void skip_ws(rd_t *r) {
  while (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t')
    r->p++;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Exact powers of ten: every one up to 1e22 is a double. */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

int kvsim__jsonfast_number(const char *s, double *out, size_t *len) {
  const char *p = s;
  const bool neg = *p == '-';
  p += neg;
  if (!is_digit(*p))
    return 0;
  uint64_t m = 0;
  int sig = 0;   /* significant digits gathered into m */
  int drop = 0;  /* integer digits past the 19 m holds */
  int frac = 0;  /* fraction digits gathered into m */
  bool many = false;
  if (*p == '0') {
    p++;
  } else {
    for (; is_digit(*p); p++) {
      if (sig < 19) {
        m = m * 10 + (uint64_t)(*p - '0');
        sig++;
      } else {
        drop++;
        many = true;
      }
    }
  }
  if (*p == '.') {
    p++;
    if (!is_digit(*p))
      return 0;
    for (; is_digit(*p); p++) {
      if (m == 0 && *p == '0') {
        frac++; /* a leading zero: scales, adds no significant digit */
      } else if (sig < 19) {
        m = m * 10 + (uint64_t)(*p - '0');
        sig++;
        frac++;
      } else {
        many = true;
      }
    }
  }
  long ex = 0;
  if (*p == 'e' || *p == 'E') {
    p++;
    const bool eneg = *p == '-';
    if (*p == '-' || *p == '+')
      p++;
    if (!is_digit(*p))
      return 0;
    for (; is_digit(*p); p++)
      if (ex < 100000)
        ex = ex * 10 + (*p - '0');
    if (eneg)
      ex = -ex;
  }
  const size_t n = (size_t)(p - s);
  /* A longer number goes to cJSON: upstream cJSON 1.7.15's parse_number
   * copies at most 63 characters before strtod, while some distribution
   * builds read longer ones; either way the tree is cJSON's own. */
  if (n > 63)
    return 0;
  const long e10 = ex + drop - frac;
  double v;
  if (!many && m <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22) {
    /* Clinger's fast path: m and 10^|e10| are exact doubles, so one
     * multiplication or division rounds once, correctly, to strtod's
     * value (glibc's strtod is correctly rounded). */
    v = e10 >= 0 ? (double)m * POW10[e10] : (double)m / POW10[-e10];
    if (neg)
      v = -v;
  } else {
    /* As cJSON's parse_number: a copy with the locale's decimal point. */
    char buf[64];
    const char dp = localeconv()->decimal_point[0];
    for (size_t i = 0; i < n; i++)
      buf[i] = s[i] == '.' ? dp : s[i];
    buf[n] = '\0';
    char *end;
    v = strtod(buf, &end);
    if ((size_t)(end - buf) != n)
      return 0;
  }
  *out = v;
  *len = n;
  return 1;
}

/* A string's body into the arena: NULL past the subset. */
static char *string(rd_t *r) {
  const char *q = ++r->p;
  while (*q != '"') {
    if ((unsigned char)*q < 0x20 || *q == '\\')
      return NULL; /* the end of the text, a control byte, an escape */
    q++;
  }
  const size_t n = (size_t)(q - r->p);
  char *out = r->s;
  memcpy(out, r->p, n);
  out[n] = '\0';
  r->s += n + 1;
  r->p = q + 1;
  return out;
}

static bool value(rd_t *r, cJSON *item, int depth);

/* Arrays and objects: children linked as cJSON links them (next, prev,
 * and the first child's prev at the last). */
static bool members(rd_t *r, cJSON *item, int depth, bool object) {
  const char close = object ? '}' : ']';
  r->p++;
  skip_ws(r);
  if (*r->p == close) {
    r->p++;
    return true;
  }
  cJSON *head = NULL, *last = NULL;
  for (;;) {
    cJSON *c = node(r);
    if (!c)
      return false;
    if (object) {
      if (*r->p != '"' || !(c->string = string(r)))
        return false;
      skip_ws(r);
      if (*r->p != ':')
        return false;
      r->p++;
      skip_ws(r);
    }
    if (!value(r, c, depth + 1))
      return false;
    if (!head) {
      head = c;
    } else {
      last->next = c;
      c->prev = last;
    }
    last = c;
    skip_ws(r);
    if (*r->p == ',') {
      r->p++;
      skip_ws(r);
      continue;
    }
    if (*r->p != close)
      return false;
    r->p++;
    head->prev = last;
    item->child = head;
    return true;
  }
}

static bool literal(rd_t *r, const char *word, size_t n, cJSON *item, int type) {
  if (strncmp(r->p, word, n) != 0)
    return false;
  r->p += n;
  item->type = type;
  item->valueint = type == cJSON_True; /* as cJSON's parse_value */
  return true;
}

static bool value(rd_t *r, cJSON *item, int depth) {
  if (depth > MAX_DEPTH)
    return false;
  const char c = *r->p;
  if (c == '{' || c == '[') {
    item->type = c == '{' ? cJSON_Object : cJSON_Array;
    return members(r, item, depth, c == '{');
  }
  if (c == '"') {
    item->type = cJSON_String;
    return (item->valuestring = string(r)) != NULL;
  }
  if (c == '-' || is_digit(c)) {
    double v;
    size_t n;
    if (!kvsim__jsonfast_number(r->p, &v, &n))
      return false;
    r->p += n;
    item->type = cJSON_Number;
    item->valuedouble = v;
    /* cJSON's parse_number: valueint saturates. */
    if (v >= INT_MAX)
      item->valueint = INT_MAX;
    else if (v <= (double)INT_MIN)
      item->valueint = INT_MIN;
    else
      item->valueint = (int)v;
    return true;
  }
  if (c == 't')
    return literal(r, "true", 4, item, cJSON_True);
  if (c == 'f')
    return literal(r, "false", 5, item, cJSON_False);
  if (c == 'n')
    return literal(r, "null", 4, item, cJSON_NULL);
  return false;
}

void kvsim__jsonfast_free(kvsim__jsonfast *a) {
  while (a->chunks) {
    kvsim__jsonfast_chunk *c = a->chunks;
    a->chunks = c->next;
    kvsim__free(c);
  }
  kvsim__free(a->strings);
  a->strings = NULL;
}

cJSON *kvsim__jsonfast_parse(const char *text, kvsim__jsonfast *a) {
  /* Every string's copy is shorter than its quoted form: the text's
   * length bounds them all. */
  a->strings = kvsim__malloc(strlen(text) + 1);
  if (!a->strings)
    return NULL;
  rd_t r = {text, a, a->strings};
  skip_ws(&r);
  cJSON *root = node(&r);
  bool ok = root && value(&r, root, 0);
  if (ok) {
    skip_ws(&r);
    ok = *r.p == '\0'; /* cJSON_ParseWithOpts(..., require_null_terminated) */
  }
  if (!ok) {
    kvsim__jsonfast_free(a);
    return NULL;
  }
  return root;
}
