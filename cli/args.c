#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/engine.h"

int cli_fail(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "kvsim %s: error: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 2;
}

static void print_help(const char *cmd, const char *usage, const cli_arg *args) {
  printf("usage: kvsim %s %s\n\n", cmd, usage);
  for (const cli_arg *a = args; a->name; a++) {
    bool str = a->kind == ARG_STR || a->kind == ARG_PATH || a->kind == ARG_LIST;
    const char *meta = a->kind == ARG_INT ? " N" : a->kind == ARG_NUM ? " X" : str ? " S" : "";
    char left[64];
    snprintf(left, sizeof left, "%s%s", a->name, meta);
    printf("  %-34s %s\n", left, a->help);
  }
}

static int set_value(const char *cmd, const cli_arg *a, const char *v) {
  char *end;
  switch (a->kind) {
  case ARG_INT: {
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end)
      return cli_fail(cmd, "%s: expected an integer, got '%s'", a->name, v);
    *(int64_t *)a->dest = x;
    break;
  }
  case ARG_NUM: {
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x))
      return cli_fail(cmd, "%s: expected a number, got '%s'", a->name, v);
    *(double *)a->dest = x;
    break;
  }
  case ARG_PATH:
  case ARG_STR: /* "" names no file: once "cannot create folder" without one */
    if (a->kind == ARG_PATH && !*v)
      return cli_fail(cmd, "%s: empty path", a->name);
    *(const char **)a->dest = v;
    break;
  case ARG_LIST: {
    cli_list *l = a->dest;
    if (l->n >= (int)(sizeof l->items / sizeof *l->items))
      return cli_fail(cmd, "%s: given too many times", a->name);
    l->items[l->n++] = v;
    break;
  }
  default:
    break;
  }
  if (a->seen)
    *a->seen = true;
  return 0;
}

double cli_budget_gib;
bool cli_budget_seen;

static int set_budget(const char *cmd) {
  if (cli_budget_seen && !(cli_budget_gib >= 1.0 / 1024 && cli_budget_gib <= 1048576))
    return cli_fail(cmd, "--memory-budget: %g GiB must be in [1/1024, 1048576]", cli_budget_gib);
  kvsim_memory_budget_set(cli_budget_seen ? (int64_t)(cli_budget_gib * 1073741824.0) : 0);
  return 0;
}

int cli_parse(const char *cmd, const char *usage, const cli_arg *args, int argc, char **argv,
              int first, const char **pos, int max_pos, int *npos) {
  *npos = 0;
  for (int i = first; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
      print_help(cmd, usage, args);
      return 1;
    }
    if (strncmp(s, "--", 2) != 0 || !strcmp(s, "-")) {
      if (*npos >= max_pos)
        return cli_fail(cmd, "unexpected argument '%s'", s);
      pos[(*npos)++] = s;
      continue;
    }
    char name[128];
    const char *eq = strchr(s, '=');
    size_t len = eq ? (size_t)(eq - s) : strlen(s);
    if (len >= sizeof name)
      return cli_fail(cmd, "unknown flag '%s'", s);
    memcpy(name, s, len);
    name[len] = '\0';
    const cli_arg *a = NULL;
    for (const cli_arg *c = args; c->name; c++)
      if (!strcmp(c->name, name)) {
        a = c;
        break;
      }
    if (!a) {
      const char *best = NULL;
      int bd = 1 << 30;
      for (const cli_arg *c = args; c->name; c++) {
        int d = kvsim__edit_distance(name, c->name);
        if (d < bd) {
          bd = d;
          best = c->name;
        }
      }
      if (best && bd <= 4)
        return cli_fail(cmd, "unknown flag '%s' (did you mean '%s'?)", name, best);
      return cli_fail(cmd, "unknown flag '%s' (see kvsim %s --help)", name, cmd);
    }
    if (a->kind == ARG_FLAG || a->kind == ARG_NOFLAG) {
      if (eq)
        return cli_fail(cmd, "%s takes no value", a->name);
      *(bool *)a->dest = a->kind == ARG_FLAG;
      if (a->seen)
        *a->seen = true;
      continue;
    }
    const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
    if (!v)
      return cli_fail(cmd, "%s: missing value", a->name);
    int rc = set_value(cmd, a, v);
    if (rc)
      return rc;
    for (const cli_arg *c = args; c->name; c++) /* an alias's value is the one typed last */
      if (c != a && c->dest == a->dest && c->seen)
        *c->seen = false;
  }
  return set_budget(cmd);
}

const char *cli_flag_value(int argc, char **argv, int first, const char *name) {
  const char *v = NULL;
  size_t n = strlen(name);
  for (int i = first; i < argc; i++)
    if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
      v = argv[i] + n + 1;
    else if (!strcmp(argv[i], name))
      v = i + 1 < argc ? argv[i + 1] : "";
  return v;
}
