/* Output edge: JSON forms of results shared by several commands. Writers
 * of run outputs (time series, per-request table, summary) live in
 * run_output.h. */
#ifndef KVSIM_REPORT_H
#define KVSIM_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
#include "kvsim/scenario.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds the memory plan's keys (those of `kvsim calc --json`) to obj. */
void kvsim_report_plan_json(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g,
                            cJSON *obj);

/* Prints the plan in the engine's own log words. */
void kvsim_report_plan_text(const kvsim_plan_t *pl, const kvsim_model_t *m, const kvsim_gpu_t *g,
                            FILE *out);
/* The same, with the "To fit:" line's text given (calc's reverse answer,
 * so that one answer is printed); NULL prints kvsim_plan_advice's. */
void kvsim_report_plan_text_fit(const kvsim_plan_t *pl, const kvsim_model_t *m,
                                const kvsim_gpu_t *g, const char *to_fit, FILE *out);

/* kvsim calc, engine by engine. Each engine's launch flags are data: a
 * table of {flag as the engine spells it, kind, where its value goes,
 * help} that the command line parses with one generic loop; the engine
 * then turns its arguments into a plan (every bad value one error line,
 * worded as the engine's flags are) and prints it in its own start-up
 * words, or as one JSON object. */
typedef enum kvsim_calc_kind {
  KVSIM_CALC_INT,  /* int64_t */
  KVSIM_CALC_NUM,  /* double */
  KVSIM_CALC_STR,  /* const char * (points into argv) */
  KVSIM_CALC_FLAG, /* bool, set to true when given */
} kvsim_calc_kind;

typedef struct kvsim_calc_flag {
  const char *name; /* "--num-shard" */
  kvsim_calc_kind kind;
  size_t offset;    /* of the value inside the engine's kvsim_calc_args_t */
  const char *help; /* one line of --help */
  /* The registry's parameter the flag sets (kvsim/params.h), 0 for calc's
   * own flags; name and help of such a row are the registry's flag and
   * doc, filled in by kvsim_calc_engine_find. */
  int param;
} kvsim_calc_flag_t;

/* The arguments every engine's calc has, first in its arguments. */
typedef struct kvsim_calc_common {
  const char *model, *gpu, *engine;
  bool json, strict;
} kvsim_calc_common_t;

/* The most flags an engine's table may hold (the command line's parser
 * takes them into a fixed table; a unit test keeps every table below). */
#define KVSIM_CALC_MAX_FLAGS 63

/* Storage for one engine's arguments (each engine lays out its own), and
 * which flags of its table were given: an explicit value is range-checked
 * as the engine's flag, an absent one keeps the engine's default (a
 * default such as -1 or 0 is never mistaken for a value the user typed). */
typedef struct kvsim_calc_args {
  union {
    kvsim_calc_common_t common;
    max_align_t align_;
    unsigned char bytes[1024];
  };
  bool given[KVSIM_CALC_MAX_FLAGS]; /* given[i]: flags[i] was on the command line */
} kvsim_calc_args_t;

#define KVSIM_CALC_MAX_ROWS 16

/* What calc computed, for its printer. */
typedef struct kvsim_calc {
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_plan_t pl;
  kvsim_plan_t v1;            /* SGLang: vLLM V1 for the same model and GPUs */
  bool have_v1;
  bool reverse;               /* vLLM: --target-concurrency given */
  kvsim_plan_reverse_t rev;
  char answer[512];           /* vLLM: the reverse answer, "" if none */
  kvsim_plan_compare_row_t rows[KVSIM_CALC_MAX_ROWS]; /* --compare-engines */
  int nrows;
  int64_t seq_len;            /* --compare-engines: the request length used */
} kvsim_calc_t;

typedef struct kvsim_calc_engine {
  const char *usage;              /* "--engine tgi [flags]" */
  const kvsim_calc_flag_t *flags; /* ended by a NULL name; at most KVSIM_CALC_MAX_FLAGS */
  void (*defaults)(kvsim_calc_args_t *a); /* the engine's defaults, no flag given */
  /* Loads model and GPU, checks the arguments, computes the plan. Errors:
   * KVSIM_E* with one line naming the flag and the bad value. */
  int (*compute)(const kvsim_calc_args_t *a, kvsim_calc_t *c, kvsim_err *err);
  /* Text in the engine's words, or JSON (--json), to out. */
  void (*print)(const kvsim_calc_args_t *a, const kvsim_calc_t *c, FILE *out);
} kvsim_calc_engine_t;

/* The calc of an engine profile name (vLLM's for NULL, an unknown name or
 * vllm-v0/v1: its compute names the unknown one), or of the comparison.
 * Its flags table is complete once this returns (the rows of registry
 * parameters take their name and help from the registry). */
const kvsim_calc_engine_t *kvsim_calc_engine_find(const char *engine, bool compare);

/* kvsim calc --scenario: the scenario's memory plan; for a disaggregated
 * one, each side's in its engine's words, then the KV bytes a request
 * moves to the decode side and their time on an idle link (or one JSON
 * object: "prefill", "decode", the flow, link and bytes per prompt
 * token). A plan that does not fit is printed with the engine's error.
 * Errors: a side that cannot be built, KVSIM_ENOMEM. */
int kvsim_report_scenario_calc(const kvsim_scenario_t *sc, bool json, FILE *out, kvsim_err *err);

/* calc's exit status: 1 for --strict with a plan that does not fit, else 0. */
int kvsim_calc_status(const kvsim_calc_args_t *a, const kvsim_calc_t *c);

/* Serialises a cJSON tree deterministically (fixed number formatting) to a
 * malloc'd string; the caller frees it. */
char *kvsim_report_json_string(const cJSON *j);

/* Creates dir and its missing parents (mkdir -p). Errors: KVSIM_EIO
 * naming the folder that could not be made. */
int kvsim_report_mkdirs(const char *dir, kvsim_err *err);

/* Checks, without creating anything, that dir can become an output folder
 * holding the files `names` (NULL-terminated, may be NULL): each part of
 * its path that exists is a folder, the deepest existing one is writable,
 * and none of the names is a folder there. For commands that work for
 * minutes before they write (compare): a bad --out is refused first.
 * Errors: KVSIM_EIO "PATH: cannot create folder: Not a directory" (the
 * words kvsim_report_mkdirs and the writers use). */
int kvsim_report_check_out_dir(const char *dir, const char *const *names, kvsim_err *err);

/* The folders of dir that do not exist yet, noted before a command
 * creates them, so that a failure (kvsim_report_new_dirs_undo) or a signal
 * (kvsim_report_cleanup_on_signals) removes them again: only those, and
 * only while empty, so an existing folder and what a user put in one are
 * never removed. top is 0 when dir exists. */
typedef struct kvsim_new_dirs {
  char dir[4096];
  size_t top; /* length of the first missing folder's path */
  int slot;
} kvsim_new_dirs_t;
void kvsim_report_new_dirs(const char *dir, kvsim_new_dirs_t *m);
/* The command succeeded: its folders stay. */
void kvsim_report_new_dirs_keep(kvsim_new_dirs_t *m);
/* The command failed: removes its folders that are empty (remove its
 * files first), deepest first. */
void kvsim_report_new_dirs_undo(kvsim_new_dirs_t *m);

/* Writes `text` to path atomically: a temporary file in the same folder,
 * then rename. */
int kvsim_report_write_atomic(const char *path, const char *text, size_t len, kvsim_err *err);

/* Installs handlers for SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE,
 * SIGXCPU and SIGXFSZ (the last five unless inherited as ignored) that
 * remove this process's temporary output files (run outputs, summaries,
 * tables being written), the files given to kvsim_report_track and the
 * empty folders of kvsim_report_new_dirs, then end the process with the
 * signal's default action (a non-zero status). Call once at start-up;
 * forked children inherit it. */
void kvsim_report_cleanup_on_signals(void);
/* Removes path too if a signal stops the process, until untracked (a
 * finished output that is only worth keeping if the command succeeds).
 * Returns the slot, -1 when all are taken. */
int kvsim_report_track(const char *path);
void kvsim_report_untrack(int slot);

#ifdef __cplusplus
}
#endif

#endif
