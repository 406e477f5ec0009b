/* kvsim sweep: run a grid of variations of one scenario (in parallel
 * processes) and write one comparison table, sweep.csv. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "args.h"
#include "commands.h"
#include "core/util.h"
#include "kvsim/report.h"
#include "runner.h"

#define MAX_KEYS 8
#define MAX_SETS 72

typedef struct sweep {
  char name[128];
  char scenario[4096];
  char *fixed[MAX_SETS]; /* "key=value" applied to every run */
  int nfixed;
  char *keys[MAX_KEYS];
  cJSON *values[MAX_KEYS]; /* arrays */
  int nkeys;
  int64_t runs;
} sweep_t;

static void sweep_fini(sweep_t *s, cJSON *root) {
  for (int i = 0; i < s->nfixed; i++)
    free(s->fixed[i]);
  cJSON_Delete(root);
}

/* "key=value" with the value as JSON text (strings keep their quotes). */
static char *assignment(const char *key, const cJSON *v) {
  char *text = cJSON_PrintUnformatted(v);
  size_t n = strlen(key) + strlen(text) + 2;
  char *a = malloc(n);
  if (a)
    snprintf(a, n, "%s=%s", key, text);
  free(text);
  return a;
}

static int load_sweep(const char *path, sweep_t *s, cJSON **root, kvsim_err *err) {
  memset(s, 0, sizeof *s);
  char *text;
  int rc = kvsim__read_file(path, &text, NULL, err);
  if (rc < 0)
    return rc;
  *root = kvsim__json_parse(text, path, err);
  free(text);
  if (!*root)
    return err->code;
  static const char *const keys[] = {"name", "description", "scenario", "set", "grid", NULL};
  if ((rc = kvsim__json_only_keys(*root, keys, path, err)) < 0)
    return rc;
  char scen[4096] = "";
  if ((rc = kvsim__json_str(*root, "name", s->name, sizeof s->name, path, err)) < 0 ||
      (rc = kvsim__json_str(*root, "scenario", scen, sizeof scen, path, err)) < 0)
    return rc;
  if (!scen[0])
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: missing key 'scenario'", path);
  if (!s->name[0]) {
    const char *slash = strrchr(path, '/');
    snprintf(s->name, sizeof s->name, "%s", slash ? slash + 1 : path);
    char *dot = strstr(s->name, ".json");
    if (dot)
      *dot = '\0';
  }
  /* The scenario path is relative to the sweep file's folder. */
  const char *slash = strrchr(path, '/');
  if (scen[0] != '/' && slash)
    snprintf(s->scenario, sizeof s->scenario, "%.*s/%s", (int)(slash - path), path, scen);
  else
    snprintf(s->scenario, sizeof s->scenario, "%s", scen);
  const cJSON *set = cJSON_GetObjectItemCaseSensitive(*root, "set");
  if (set) {
    if (!cJSON_IsObject(set))
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: set: expected an object of key paths", path);
    for (const cJSON *c = set->child; c; c = c->next) {
      if (s->nfixed == MAX_SETS)
        return kvsim_err_set(err, KVSIM_EINVAL, "%s: set: too many keys", path);
      s->fixed[s->nfixed++] = assignment(c->string, c);
    }
  }
  const cJSON *grid = cJSON_GetObjectItemCaseSensitive(*root, "grid");
  if (!cJSON_IsObject(grid) || !grid->child)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: grid: expected an object of key path -> [values]", path);
  s->runs = 1;
  for (cJSON *c = grid->child; c; c = c->next) {
    if (s->nkeys == MAX_KEYS)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: grid: at most %d keys", path, MAX_KEYS);
    if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) < 1)
      return kvsim_err_set(err, KVSIM_EINVAL, "%s: grid.%s: expected a non-empty array", path, c->string);
    s->keys[s->nkeys] = c->string;
    s->values[s->nkeys++] = c;
    s->runs *= cJSON_GetArraySize(c);
  }
  if (s->runs > 100000)
    return kvsim_err_set(err, KVSIM_EINVAL, "%s: grid: %lld runs is too many", path, (long long)s->runs);
  return KVSIM_OK;
}

/* The grid point of run i (last key varies fastest). */
static void point(const sweep_t *s, int64_t i, const cJSON **vals) {
  for (int k = s->nkeys - 1; k >= 0; k--) {
    int n = cJSON_GetArraySize(s->values[k]);
    vals[k] = cJSON_GetArrayItem(s->values[k], (int)(i % n));
    i /= n;
  }
}

static void run_dir(const sweep_t *s, const char *out, int64_t i, char *buf, size_t cap) {
  (void)s;
  snprintf(buf, cap, "%s/run%04lld", out, (long long)i);
}

/* One run in a child process: outputs into its folder, errors into
 * error.txt there (the parent reads them for the table). */
static int child(const sweep_t *s, const char *out, int64_t i) {
  const cJSON *vals[MAX_KEYS];
  point(s, i, vals);
  const char *sets[MAX_SETS + MAX_KEYS];
  char *own[MAX_KEYS];
  int n = 0;
  for (int k = 0; k < s->nfixed; k++)
    sets[n++] = s->fixed[k];
  for (int k = 0; k < s->nkeys; k++)
    sets[n++] = own[k] = assignment(s->keys[k], vals[k]);
  char dir[4300];
  run_dir(s, out, i, dir, sizeof dir);
  kvsim_err err = {0};
  cli_run_result res;
  int rc = cli_run_scenario(s->scenario, sets, n, dir, false, 0, &res, &err);
  if (rc == KVSIM_OK)
    cli_run_result_fini(&res);
  else {
    char path[4400];
    snprintf(path, sizeof path, "%s/error.txt", dir);
    FILE *f = fopen(path, "w");
    if (f) {
      fprintf(f, "%s\n", err.msg);
      fclose(f);
    }
  }
  for (int k = 0; k < s->nkeys; k++)
    free(own[k]);
  return rc == KVSIM_OK ? 0 : 1;
}

static const struct {
  const char *col, *path;
} metrics[] = {
    {"requests", "requests.total"},
    {"finished", "requests.finished"},
    {"rejected", "requests.rejected"},
    {"num_gpu_blocks", "memory_plan.num_gpu_blocks"},
    {"kv_cache_tokens", "memory_plan.kv_cache_tokens"},
    {"ttft_p50_s", "latency.ttft_s.p50"},
    {"ttft_p99_s", "latency.ttft_s.p99"},
    {"tpot_p50_s", "latency.tpot_s.p50"},
    {"tpot_p99_s", "latency.tpot_s.p99"},
    {"e2e_p99_s", "latency.e2e_s.p99"},
    {"requests_per_s", "throughput.requests_per_s"},
    {"output_tokens_per_s", "throughput.output_tokens_per_s"},
    {"kv_usage_peak", "kv_cache.usage_peak"},
    {"kv_usage_mean", "kv_cache.usage_mean"},
    {"kv_allocated_token_fraction", "kv_cache.kv_allocated_token_fraction"},
    {"preemptions", "preemptions.total"},
    {"prefix_hit_rate", "prefix_cache.hit_rate"},
    {"slo_attainment", "slo.attainment"},
};

/* Appends one CSV field, quoted when it needs to be. */
static void csv_field(FILE *f, const char *v, bool last) {
  if (strpbrk(v, ",\"\n")) {
    fputc('"', f);
    for (const char *p = v; *p; p++) {
      if (*p == '"')
        fputc('"', f);
      fputc(*p, f);
    }
    fputc('"', f);
  } else {
    fputs(v, f);
  }
  fputc(last ? '\n' : ',', f);
}

static int write_table(const sweep_t *s, const char *out, int shard, int nshards, kvsim_err *err) {
  char path[4300], tmp[4400];
  snprintf(path, sizeof path, nshards > 1 ? "%s/sweep.shard%d.csv" : "%s/sweep.csv", out, shard);
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f)
    return kvsim_err_set(err, KVSIM_EIO, "%s: cannot write: %s", path, strerror(errno));
  fputs("run,", f);
  for (int k = 0; k < s->nkeys; k++)
    csv_field(f, s->keys[k], false);
  fputs("fits,", f);
  for (size_t m = 0; m < sizeof metrics / sizeof *metrics; m++)
    fprintf(f, "%s,", metrics[m].col);
  fputs("error\n", f);
  int failed = 0;
  for (int64_t i = shard; i < s->runs; i += nshards) {
    const cJSON *vals[MAX_KEYS];
    point(s, i, vals);
    fprintf(f, "run%04lld,", (long long)i);
    for (int k = 0; k < s->nkeys; k++) {
      char *v = cJSON_IsString(vals[k]) ? strdup(vals[k]->valuestring) : cJSON_PrintUnformatted(vals[k]);
      csv_field(f, v, false);
      free(v);
    }
    char dir[4300], file[4400];
    run_dir(s, out, i, dir, sizeof dir);
    snprintf(file, sizeof file, "%s/summary.json", dir);
    char *text = NULL;
    kvsim_err e2 = {0};
    cJSON *sum = NULL;
    if (kvsim__read_file(file, &text, NULL, &e2) == KVSIM_OK) {
      sum = cJSON_Parse(text);
      free(text);
    }
    if (sum) {
      fputs("true,", f);
      for (size_t m = 0; m < sizeof metrics / sizeof *metrics; m++) {
        double v = cli_summary_num(sum, metrics[m].path);
        if (isnan(v))
          fputc(',', f);
        else
          fprintf(f, "%.9g,", v);
      }
      fputc('\n', f);
      cJSON_Delete(sum);
    } else {
      failed++;
      char msg[600] = "run failed";
      snprintf(file, sizeof file, "%s/error.txt", dir);
      FILE *ef = fopen(file, "r");
      if (ef) {
        if (fgets(msg, sizeof msg, ef))
          msg[strcspn(msg, "\n")] = '\0';
        fclose(ef);
      }
      bool nofit = strstr(msg, "does not fit") != NULL;
      fputs(nofit ? "false," : ",", f);
      for (size_t m = 0; m < sizeof metrics / sizeof *metrics; m++)
        fputc(',', f);
      csv_field(f, msg, true);
    }
  }
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    remove(tmp);
    return kvsim_err_set(err, KVSIM_EIO, "%s: write failed", path);
  }
  printf("%s: %d runs failed or did not fit (see the error column)\n", path, failed);
  return KVSIM_OK;
}

int cmd_sweep(int argc, char **argv) {
  int64_t jobs = 1;
  const char *out = NULL, *shard_s = NULL;
  const cli_arg args[] = {
      {"--jobs", ARG_INT, &jobs, "runs in parallel (processes; default 1)", NULL},
      {"--out", ARG_STR, &out, "output folder (default results/<sweep name>)", NULL},
      {"--shard", ARG_STR, &shard_s, "I/N: run only runs I, I+N, I+2N, ... (for several machines)", NULL},
      {NULL, 0, NULL, NULL, NULL}};
  const char *pos[1];
  int npos;
  int rc = cli_parse("sweep", "SWEEP.json [--jobs N] [--out DIR] [--shard I/N]", args, argc, argv, 2,
                     pos, 1, &npos);
  if (rc)
    return rc == 1 ? 0 : rc;
  if (npos != 1)
    return cli_fail("sweep", "expected one SWEEP.json (see kvsim sweep --help)");
  if (jobs < 1 || jobs > 256)
    return cli_fail("sweep", "--jobs: %lld must be in [1, 256]", (long long)jobs);
  int shard = 0, nshards = 1;
  if (shard_s && (sscanf(shard_s, "%d/%d", &shard, &nshards) != 2 || nshards < 1 || shard < 0 ||
                  shard >= nshards))
    return cli_fail("sweep", "--shard: '%s' is not I/N with 0 <= I < N", shard_s);
  kvsim_err err = {0};
  sweep_t s;
  cJSON *root = NULL;
  if (load_sweep(pos[0], &s, &root, &err) < 0) {
    sweep_fini(&s, root);
    return cli_fail("sweep", "%s", err.msg);
  }
  char dir[4096];
  snprintf(dir, sizeof dir, out ? "%s" : "results/%s", out ? out : s.name);
  /* The base scenario must load before forking a hundred children to say so. */
  kvsim_scenario_t probe;
  if (kvsim_scenario_load(s.scenario, (const char *const *)s.fixed, s.nfixed, &probe, &err) < 0) {
    sweep_fini(&s, root);
    return cli_fail("sweep", "%s", err.msg);
  }
  kvsim_scenario_fini(&probe);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "%s/", dir);
  for (char *p = cmd + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(cmd, 0777);
      *p = '/';
    }
  int64_t running = 0, failed = 0;
  fflush(stdout);
  for (int64_t i = shard; i < s.runs || running > 0;) {
    if (i < s.runs && running < jobs) {
      pid_t pid = fork();
      if (pid < 0) {
        sweep_fini(&s, root);
        return cli_fail("sweep", "fork: %s", strerror(errno));
      }
      if (pid == 0)
        _exit(child(&s, dir, i));
      running++;
      i += nshards;
      continue;
    }
    int status;
    if (wait(&status) > 0) {
      running--;
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
  }
  rc = write_table(&s, dir, shard, nshards, &err);
  sweep_fini(&s, root);
  if (rc < 0)
    return cli_fail("sweep", "%s", err.msg);
  return 0;
}
