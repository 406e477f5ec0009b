/* Table-driven flag parsing for the subcommands: --flag VALUE and
 * --flag=VALUE, errors that name the flag, --help text from the table. */
#ifndef KVSIM_CLI_ARGS_H
#define KVSIM_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  ARG_INT,    /* int64_t */
  ARG_NUM,    /* double */
  ARG_STR,    /* const char * (points into argv) */
  ARG_PATH,   /* const char *, a file or folder: an empty value is an error */
  ARG_FLAG,   /* bool set to true */
  ARG_NOFLAG, /* bool set to false */
  ARG_LIST,   /* repeatable string: appended to a cli_list */
} arg_kind;

typedef struct cli_list {
  const char *items[64];
  int n;
} cli_list;

typedef struct cli_arg {
  const char *name; /* "--max-model-len" */
  arg_kind kind;
  void *dest;
  const char *help;
  bool *seen; /* optional: set when the flag was given (cleared by an alias given later) */
} cli_arg;

/* Parses argv[first..argc). Positional arguments go to pos[] (up to
 * max_pos). Returns 0, 1 when --help was given (help printed), or 2 after
 * printing one error line to stderr. */
int cli_parse(const char *cmd, const char *usage, const cli_arg *args, int argc, char **argv,
              int first, const char **pos, int max_pos, int *npos);

/* The value of flag `name` in argv[first..argc) (--name V or --name=V),
 * the last given; NULL if absent. For choosing a flag table before
 * parsing (calc --engine). */
const char *cli_flag_value(int argc, char **argv, int first, const char *name);

/* A flag table's --memory-budget GIB: cli_parse sets it (kvsim_memory_budget_set). */
extern double cli_budget_gib;
extern bool cli_budget_seen;
#define CLI_MEMORY_BUDGET_ARG                                                                      \
  {"--memory-budget", ARG_NUM, &cli_budget_gib,                                                    \
   "GiB one simulation may hold (KV pools, requests; default 4), per process", &cli_budget_seen}

/* Prints "kvsim CMD: error: ..." to stderr; returns 2. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
