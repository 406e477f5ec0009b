/* A program outside the kvsim tree, built against an installed libkvsim
 * with nothing but `pkg-config --cflags --libs kvsim` (test_install.sh).
 * It uses the library the way an embedding program would: the memory plan
 * of Llama-3.1-8B on an H100, checked against what the installed `kvsim calc
 * --json` printed (argv[1]), an error return, and a small seeded synthetic
 * run, checked for accounting and determinism. Exits 1 on any failure. */
#include <kvsim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "consumer.c:%d: check failed: %s: ", __LINE__, #cond);                       \
      fprintf(stderr, __VA_ARGS__);                                                                \
      fputc('\n', stderr);                                                                         \
      failures++;                                                                                  \
    }                                                                                              \
  } while (0)

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  char chunk[4096];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      char *grown = realloc(buf, cap);
      if (!grown) {
        free(buf);
        fclose(f);
        return NULL;
      }
      buf = grown;
    }
    memcpy(buf + len, chunk, n);
    len += n;
  }
  fclose(f);
  if (buf)
    buf[len] = '\0';
  return buf;
}

static double json_number(const cJSON *obj, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The memory plan, as `kvsim calc --model llama-3.1-8b --gpu h100-sxm`. */
static void check_plan(const char *calc_json_path) {
  char *text = read_file(calc_json_path);
  CHECK(text != NULL, "cannot read %s", calc_json_path);
  cJSON *calc = text ? cJSON_Parse(text) : NULL;
  free(text);
  CHECK(calc != NULL, "%s is not JSON", calc_json_path);
  if (!calc)
    return;

  kvsim_err err = {0};
  kvsim_model_t m;
  kvsim_gpu_t g;
  CHECK(kvsim_model_load("llama-3.1-8b", &m, &err) == KVSIM_OK, "model: %s", err.msg);
  CHECK(kvsim_gpu_load("h100-sxm", &g, &err) == KVSIM_OK, "gpu: %s", err.msg);
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_V1;
  p.gpu_memory_utilization = 0.9;
  kvsim_plan_t pl;
  CHECK(kvsim_plan_compute(&m, &g, &p, &pl, &err) == KVSIM_OK, "plan: %s", err.msg);

  CHECK(pl.fits, "Llama-3.1-8B fits an H100 at 0.9: %s", pl.error);
  CHECK(pl.kv_cache_tokens > 0 &&
            (double)pl.kv_cache_tokens == json_number(calc, "kv_cache_tokens"),
        "KV tokens %lld, kvsim calc says %.0f", (long long)pl.kv_cache_tokens,
        json_number(calc, "kv_cache_tokens"));
  CHECK((double)pl.num_gpu_blocks == json_number(calc, "num_gpu_blocks"),
        "blocks %lld, kvsim calc says %.0f", (long long)pl.num_gpu_blocks,
        json_number(calc, "num_gpu_blocks"));
  CHECK((double)pl.available_kv_bytes == json_number(calc, "available_kv_bytes"),
        "KV bytes %lld, kvsim calc says %.0f", (long long)pl.available_kv_bytes,
        json_number(calc, "available_kv_bytes"));
  /* K and V, every layer, every KV head, in the model's 2-byte dtype. */
  int64_t per_token = 2 * (int64_t)m.num_layers * m.num_kv_heads * m.head_dim * m.dtype_bytes;
  CHECK(pl.per_token_kv_bytes == per_token, "per-token KV %lld, geometry gives %lld",
        (long long)pl.per_token_kv_bytes, (long long)per_token);
  CHECK(pl.kv_cache_tokens == pl.num_gpu_blocks * pl.p.block_size,
        "%lld tokens are not %lld blocks of %d", (long long)pl.kv_cache_tokens,
        (long long)pl.num_gpu_blocks, pl.p.block_size);

  /* The same plan through the library's JSON form (cJSON is in the API). */
  cJSON *mine = cJSON_CreateObject();
  kvsim_report_plan_json(&pl, &m, &g, mine);
  CHECK(json_number(mine, "kv_cache_tokens") == json_number(calc, "kv_cache_tokens"),
        "plan JSON says %.0f tokens", json_number(mine, "kv_cache_tokens"));
  cJSON_Delete(mine);
  cJSON_Delete(calc);
}

/* Errors come back as a negative code and one line naming what. */
static void check_error(void) {
  kvsim_err err = {0};
  kvsim_model_t m;
  int rc = kvsim_model_load("no-such-model-xyz", &m, &err);
  CHECK(rc < 0, "loading an unknown model returned %d", rc);
  CHECK(err.code == rc && strstr(err.msg, "no-such-model-xyz") != NULL,
        "the error names the model: code %d '%s'", err.code, err.msg);
  CHECK(kvsim_strerror(rc) != NULL && kvsim_strerror(rc)[0] != '\0', "strerror(%d) is empty", rc);
}

#define NREQ 40

static const char *const scenario_json =
    "{ \"name\": \"consumer\", \"seed\": 11, \"model\": \"llama-3.2-1b\","
    "  \"hardware\": { \"gpu\": \"l4\" },"
    "  \"engine\": { \"max_model_len\": 2048, \"max_num_seqs\": 16 },"
    "  \"workload\": { \"synthetic\": { \"requests\": 40,"
    "     \"arrival\": { \"process\": \"poisson\", \"rate\": 8 },"
    "     \"prompt_tokens\": { \"dist\": \"uniform\", \"min\": 50, \"max\": 900 },"
    "     \"output_tokens\": { \"dist\": \"uniform\", \"min\": 5, \"max\": 120 } } } }";

typedef struct tally {
  int64_t finished, other, samples, output_tokens;
  int seen[NREQ];
  int bad_times;
} tally_t;

static int on_sample(void *ctx, const kvsim_sample_t *s) {
  tally_t *t = ctx;
  t->samples++;
  if (s->kv_cache_usage < 0 || s->kv_cache_usage > 1)
    t->bad_times++;
  return 0;
}

static int on_request(void *ctx, const kvsim_request_t *r) {
  tally_t *t = ctx;
  if (r->status != KVSIM_REQ_FINISHED) {
    t->other++;
    return 0;
  }
  t->finished++;
  t->output_tokens += r->num_output;
  if (r->spec.id < NREQ)
    t->seen[r->spec.id]++;
  if (!(r->arrival <= r->first_token && r->first_token <= r->finish &&
        r->finish != KVSIM_TIME_NEVER))
    t->bad_times++;
  return 0;
}

static void check_run(void) {
  kvsim_err err = {0};
  kvsim_scenario_t sc;
  int rc = kvsim_scenario_parse(scenario_json, "consumer", ".", NULL, 0, &sc, &err);
  CHECK(rc == KVSIM_OK, "scenario: %s", err.msg);
  if (rc != KVSIM_OK)
    return;

  tally_t t;
  memset(&t, 0, sizeof t);
  kvsim_sink_t sink = {&t, on_sample, on_request, NULL, NULL};
  kvsim_run_opts_t opts = {.check_invariants = true, .check_period = 0};
  kvsim_run_stats_t st;
  rc = kvsim_run(&sc, &opts, &sink, &st, &err);
  CHECK(rc == KVSIM_OK, "run: %s", err.msg);
  CHECK(st.requests_arrived == NREQ, "%lld requests arrived", (long long)st.requests_arrived);
  CHECK(st.requests_finished == NREQ && t.finished == NREQ && t.other == 0,
        "finished: stats %lld, sink %lld (other %lld)", (long long)st.requests_finished,
        (long long)t.finished, (long long)t.other);
  for (int i = 0; i < NREQ; i++)
    CHECK(t.seen[i] == 1, "request %d reported %d times", i, t.seen[i]);
  CHECK(t.bad_times == 0, "%d requests or samples out of order or range", t.bad_times);
  CHECK(t.samples > 0, "no time-series sample");
  CHECK(st.generation_tokens == t.output_tokens, "generated %lld tokens, requests hold %lld",
        (long long)st.generation_tokens, (long long)t.output_tokens);
  CHECK(st.plan.fits && st.plan.num_gpu_blocks > 0, "run plan: %lld blocks",
        (long long)st.plan.num_gpu_blocks);

  /* Again through the library's own sink, without files: the same seed
   * gives the same totals, and the summary reports them. */
  kvsim_run_output_t *out = NULL;
  rc = kvsim_run_output_open(NULL, &sc, false, &out, &err);
  CHECK(rc == KVSIM_OK, "run output: %s", err.msg);
  if (rc == KVSIM_OK) {
    kvsim_sink_t lib_sink = kvsim_run_output_sink(out);
    kvsim_run_stats_t st2;
    rc = kvsim_run(&sc, NULL, &lib_sink, &st2, &err);
    CHECK(rc == KVSIM_OK, "second run: %s", err.msg);
    if (rc == KVSIM_OK) {
      CHECK(kvsim_run_output_finish(out, &st2, false, &err) == KVSIM_OK, "finish: %s", err.msg);
      CHECK(st2.steps == st.steps && st2.end_time == st.end_time,
            "same seed, different run: %lld/%lld steps", (long long)st.steps, (long long)st2.steps);
      const kvsim_summary_t *sum = kvsim_run_output_summary(out);
      CHECK(sum && sum->requests_finished == NREQ, "summary says %lld finished",
            sum ? (long long)sum->requests_finished : -1LL);
    }
    kvsim_run_output_close(out);
  }
  kvsim_scenario_fini(&sc);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: consumer CALC.json   (the output of kvsim calc --json)\n");
    return 2;
  }
  check_plan(argv[1]);
  check_error();
  check_run();
  if (failures) {
    fprintf(stderr, "consumer: %d checks failed\n", failures);
    return 1;
  }
  printf("consumer: libkvsim %d.%d.%d: plan, error and run checks passed\n", KVSIM_VERSION_MAJOR,
         KVSIM_VERSION_MINOR, KVSIM_VERSION_PATCH);
  return 0;
}
