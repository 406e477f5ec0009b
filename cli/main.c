/* kvsim: a discrete-event simulator of how LLM serving engines spend GPU
 * memory. Dispatches to one file per subcommand. */
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "kvsim/model.h"
#include "kvsim/report.h"

static const struct {
  const char *name;
  int (*fn)(int, char **);
  const char *help;
} commands[] = {
    {"calc", cmd_calc, "static memory plan: what the engine prints at start-up"},
    {"run", cmd_run, "simulate a scenario: time series, per-request table, summary"},
    {"trace", cmd_trace, "inspect, convert and generate workloads (stats|convert|gen)"},
    {"validate", cmd_validate, "compare a simulated run with a measured engine run"},
    {"calibrate", cmd_calibrate, "fit the step-time model's coefficients to measured runs"},
    {"sweep", cmd_sweep, "run a grid of scenarios and write one comparison table"},
    {"plan", cmd_plan, "search the rate, replicas or utilization that meets an SLO"},
    {"compare", cmd_compare, "candidate deployments x workload x SLO -> table, REPORT.md, plots"},
    {"list", cmd_list, "the built-in models or GPUs, or the scenario parameters (list models|gpus|params)"},
};

/* An assumption made to load a model id, once per id however many
 * scenarios (sweep points, compare candidates, threads) load it. */
static void print_model_note(const char *note) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char seen[16][320];
  static int nseen;
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < nseen && strcmp(seen[i], note))
    i++;
  if (i == nseen) {
    fprintf(stderr, "note: %s\n", note);
    if (nseen < 16)
      snprintf(seen[nseen++], sizeof seen[0], "%s", note);
  }
  pthread_mutex_unlock(&lock);
}

static void usage(FILE *out) {
  fprintf(out, "usage: kvsim COMMAND [ARGS]...\n\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].help);
  fprintf(out, "\n`kvsim COMMAND --help` describes a command's flags.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("kvsim %s\n", KVSIM_VERSION);
    return 0;
  }
#ifdef __GLIBC__
  /* Freed KV pools would raise glibc's mmap threshold and fragment the heap (mallopt(3)). */
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  /* A run stopped by Ctrl-C, a scheduler's SIGTERM, a hang-up or a
   * reader that went away leaves no half-written *.tmp.PID files behind. */
  kvsim_report_cleanup_on_signals();
  kvsim_model_set_note_fn(print_model_note);
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(argv[1], commands[i].name)) {
      int rc = commands[i].fn(argc, argv);
      /* A reader that went away with SIGPIPE ignored, or a full disk:
       * output cut short is a failure, not exit 0. */
      errno = 0;
      if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        fprintf(stderr, "kvsim %s: error: standard output: write failed%s%s\n", argv[1],
                errno ? ": " : "", errno ? strerror(errno) : "");
        return 2;
      }
      return rc;
    }
  fprintf(stderr, "kvsim: error: unknown command '%s' (see kvsim --help)\n", argv[1]);
  return 2;
}
