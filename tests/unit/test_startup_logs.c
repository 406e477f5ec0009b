/* Validation against what vLLM printed at start-up
 * (../shared/validation/vllm_startup_logs.csv, read with the library's CSV
 * row reader, and the llmservingsim RTX4090 run's meta.json). With a row's measured overheads
 * given as overrides, kvsim must reproduce the logged KV budget, blocks,
 * tokens and concurrency to the rounding of the log itself: every value
 * the log prints with d decimals carries +/- half a unit of its last
 * place, and the allowed error is the sum of those, nothing more. */
#include <criterion/criterion.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
#include "workload/csvrow.h"

#define CSV_PATH KVSIM_SHARED_DIR "/validation/vllm_startup_logs.csv"
#define META_PATH KVSIM_SHARED_DIR "/validation/llmservingsim/RTX4090/Llama-3.1-8B/vllm/meta.json"

/* ---- the CSV as rows of named fields (the library's CSV row reader) ---- */

enum { MAX_COLS = 32, MAX_ROWS = 256 };

typedef struct table {
  char *head[MAX_COLS];
  int ncols;
  char *cell[MAX_ROWS][MAX_COLS];
  int nrows;
} table;

static void read_table(table *t) {
  memset(t, 0, sizeof *t);
  kvsim__csvrow_t *r;
  kvsim_err err = {0};
  cr_assert_eq(kvsim__csvrow_open(CSV_PATH, true, &r, &err), 0, "open: %s", err.msg);
  t->ncols = kvsim__csvrow_ncolumns(r);
  cr_assert(t->ncols > 10 && t->ncols <= MAX_COLS, "the CSV has a header (%d columns)", t->ncols);
  for (int c = 0; c < t->ncols; c++)
    cr_assert_not_null(t->head[c] = strdup(kvsim__csvrow_colname(r, c)), "out of memory");
  int rc;
  while ((rc = kvsim__csvrow_next(r, &err)) == 1) {
    cr_assert_lt(t->nrows, MAX_ROWS, "more than %d rows", MAX_ROWS);
    for (int c = 0; c < t->ncols; c++)
      cr_assert_not_null(t->cell[t->nrows][c] = strdup(kvsim__csvrow_field(r, c)), "out of memory");
    t->nrows++;
  }
  cr_assert_eq(rc, 0, "CSV error: %s", err.msg);
  kvsim__csvrow_close(r);
}

static void free_table(table *t) {
  for (int c = 0; c < t->ncols; c++)
    free(t->head[c]);
  for (int r = 0; r < t->nrows; r++)
    for (int c = 0; c < MAX_COLS; c++)
      free(t->cell[r][c]);
}

static const char *get(const table *t, int row, const char *col) {
  for (int c = 0; c < t->ncols; c++)
    if (!strcmp(t->head[c], col))
      return t->cell[row][c] ? t->cell[row][c] : "";
  cr_assert_fail("column %s missing from %s", col, CSV_PATH);
  return "";
}

/* A logged number and its rounding: half a unit of its last decimal. */
typedef struct logged {
  bool set;
  double v, half;
} logged;

static logged number(const char *s) {
  logged out = {0};
  while (isspace((unsigned char)*s))
    s++;
  char *end;
  double v = strtod(s, &end);
  if (end == s)
    return out;
  const char *dot = memchr(s, '.', (size_t)(end - s));
  int decimals = dot ? (int)(end - dot - 1) : 0;
  out.set = true;
  out.v = v;
  out.half = 0.5 * pow(10, -decimals);
  return out;
}

/* `key` followed by one number (not a range "a-b") in the notes. */
static logged note(const char *notes, const char *key) {
  size_t kl = strlen(key);
  for (const char *p = strstr(notes, key); p; p = strstr(p + 1, key)) {
    if (p > notes && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
      continue;
    const char *s = p + kl;
    while (*s == ' ' || *s == '(')
      s++;
    if (!isdigit((unsigned char)*s))
      continue;
    logged v = number(s);
    char *end;
    strtod(s, &end);
    if (*end == '-')
      continue;
    return v;
  }
  return (logged){0};
}

static logged note_any(const char *notes, const char *const *keys, int n) {
  for (int i = 0; i < n; i++) {
    logged v = note(notes, keys[i]);
    if (v.set)
      return v;
  }
  return (logged){0};
}

/* ---- models of the rows ---- */

/* Llama-3.2-11B-Vision is not in the catalog; its text model
 * (huggingface.co/meta-llama/Llama-3.2-11B-Vision config.json,
 * text_config) has 40 decoder layers, 8 of them cross-attention, and V0
 * gives each of the 40 a KV cache. Only the KV geometry matters here. */
static const char *mllama_text =
    "{\"model_type\": \"mllama\", \"torch_dtype\": \"bfloat16\", \"text_config\": {"
    "\"model_type\": \"mllama_text_model\", \"hidden_size\": 4096, \"num_attention_heads\": 32, "
    "\"num_key_value_heads\": 8, \"num_hidden_layers\": 40, \"intermediate_size\": 14336, "
    "\"vocab_size\": 128256, \"max_position_embeddings\": 131072}}";

static bool row_model(const char *id, bool budget_only, kvsim_model_t *m) {
  kvsim_err err = {0};
  char name[128];
  if (!*id) {
    /* No model in the log: with every term of the budget measured, the
     * available KV memory does not depend on the model, so any catalog
     * model carries the check; blocks and tokens would. */
    if (!budget_only)
      return false;
    cr_assert_eq(kvsim_model_load("llama-3.1-8b", m, &err), KVSIM_OK, "%s", err.msg);
    return true;
  }
  if (kvsim_model_catalog_name(id, name, sizeof name)) {
    cr_assert_eq(kvsim_model_load(name, m, &err), KVSIM_OK, "%s", err.msg);
    return true;
  }
  if (!strcmp(name, "deepseek-r1-distill-qwen-14b")) { /* a Qwen2.5-14B fine-tune */
    cr_assert_eq(kvsim_model_load("qwen2.5-14b", m, &err), KVSIM_OK, "%s", err.msg);
    m->max_position_embeddings = 131072;
    return true;
  }
  if (!strcmp(name, "llama-3.2-11b-vision")) {
    cr_assert_eq(kvsim_model_parse(mllama_text, "llama-3.2-11b-vision", "fixture", m, &err),
                 KVSIM_OK, "%s", err.msg);
    return true;
  }
  return false;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* ---- tests ---- */

Test(startup_logs, measured_overheads_reproduce_the_log) {
  if (access(CSV_PATH, R_OK) != 0)
    cr_skip_test("%s is absent (../shared not available)", CSV_PATH);
  table t;
  read_table(&t);
  static const char *total_keys[] = {"total_gpu_memory", "total"};
  static const char *nt_keys[] = {"non_torch_memory", "non_torch"};
  static const char *act_keys[] = {"activation peak memory", "activation peak", "activation"};
  static const char *w_keys[] = {"Loading model weights took", "Model loading took"};
  int checked = 0;
  for (int r = 0; r < t.nrows; r++) {
    const char *notes = get(&t, r, "notes");
    const char *src = get(&t, r, "source_url");
    logged total = note_any(notes, total_keys, 2), nt = note_any(notes, nt_keys, 2),
           act = note_any(notes, act_keys, 3), w = note_any(notes, w_keys, 2);
    if (!w.set)
      w = number(get(&t, r, "weights_gib"));
    logged util = number(get(&t, r, "gpu_mem_util")), tp = number(get(&t, r, "tp"));
    logged avail = number(get(&t, r, "available_kv_gib")), conc = number(get(&t, r, "max_concurrency"));
    logged blocks = number(get(&t, r, "gpu_blocks")), tokens = number(get(&t, r, "kv_cache_tokens"));
    logged mml = number(get(&t, r, "max_model_len"));
    /* A row qualifies when the log measured every term of the budget and
     * printed something to compare with. */
    if (!(total.set && nt.set && act.set && w.set && util.set && tp.set &&
          (avail.set || blocks.set || tokens.set)))
      continue;
    kvsim_model_t m;
    bool budget_only = !blocks.set && !tokens.set;
    cr_assert(row_model(get(&t, r, "model"), budget_only, &m),
              "row %d (%s): model '%s' has measured overheads but no mapping", r + 1, src,
              get(&t, r, "model"));
    char gname[64];
    kvsim_gpu_t g;
    kvsim_err err = {0};
    if (!kvsim_gpu_catalog_name(get(&t, r, "gpu"), gname, sizeof gname))
      snprintf(gname, sizeof gname, "h100-sxm"); /* the total is measured: the GPU does not matter */
    cr_assert_eq(kvsim_gpu_load(gname, &g, &err), KVSIM_OK, "%s", err.msg);
    kvsim_plan_params_t p;
    kvsim_plan_params_default(&p);
    p.engine = !strcmp(get(&t, r, "engine"), "V0") ? KVSIM_PLAN_V0 : KVSIM_PLAN_V1;
    p.tp = (int)tp.v;
    p.gpu_memory_utilization = util.v;
    p.max_model_len = mml.set ? (int64_t)mml.v : 0;
    p.total_memory_bytes = (int64_t)llround(total.v * KVSIM_GIB);
    p.weights_gib = w.v;
    p.activation_gib = act.v;
    p.non_torch_gib = nt.v;
    kvsim_plan_t pl;
    cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_OK, "row %d: %s", r + 1, err.msg);
    /* The budget's rounding: total x util, weights, activation, non-torch. */
    double tol_gib = util.v * total.half + w.half + act.half + nt.half;
    double got = (double)pl.available_kv_bytes / KVSIM_GIB;
    if (avail.set)
      cr_assert(fabs(got - avail.v) <= tol_gib + avail.half,
                "row %d (%s): available KV %.4f GiB, logged %.2f (allowed +/- %.4f)", r + 1, src,
                got, avail.v, tol_gib + avail.half);
    int64_t tol_blocks = (int64_t)ceil(tol_gib * KVSIM_GIB / (double)pl.block_bytes) + 1;
    if (blocks.set)
      cr_assert(llabs(pl.num_gpu_blocks - (int64_t)blocks.v) <= tol_blocks,
                "row %d (%s): %lld blocks, logged %.0f (allowed +/- %lld)", r + 1, src,
                (long long)pl.num_gpu_blocks, blocks.v, (long long)tol_blocks);
    if (tokens.set)
      cr_assert(llabs(pl.kv_cache_tokens - (int64_t)tokens.v) <= tol_blocks * pl.p.block_size,
                "row %d (%s): %lld tokens, logged %.0f", r + 1, src, (long long)pl.kv_cache_tokens,
                tokens.v);
    if (conc.set) {
      double per = p.engine == KVSIM_PLAN_V0
                       ? (double)pl.p.block_size / (double)pl.p.max_model_len
                       : 1.0 / (double)cdiv(pl.p.max_model_len, pl.p.block_size);
      cr_assert(fabs(pl.max_concurrency - conc.v) <= tol_blocks * per + conc.half,
                "row %d (%s): concurrency %.4f, logged %.2f", r + 1, src, pl.max_concurrency,
                conc.v);
    }
    checked++;
  }
  /* The file as shipped has four such rows (vllm#12330, #12126, #10511,
   * #14452); fewer means the notes parser lost some. */
  cr_assert_geq(checked, 4, "only %d rows with measured overheads were checked", checked);
  free_table(&t);
}

static void read_meta(cJSON **out) {
  FILE *f = fopen(META_PATH, "rb");
  cr_assert_not_null(f, "cannot open %s", META_PATH);
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  *out = cJSON_Parse(buf);
  cr_assert_not_null(*out, "%s is not JSON", META_PATH);
}

static double num(const cJSON *o, const char *a, const char *b) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
  cr_assert(cJSON_IsNumber(x), "meta.json: %s.%s missing", a, b);
  return x->valuedouble;
}

static kvsim_plan_params_t meta_params(const cJSON *j) {
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = KVSIM_PLAN_V1; /* vLLM 0.19 */
  p.tp = (int)num(j, "engine_kwargs", "tensor_parallel_size");
  p.max_model_len = (int64_t)num(j, "engine_kwargs", "max_model_len");
  p.max_num_seqs = (int64_t)num(j, "engine_kwargs", "max_num_seqs");
  p.max_num_batched_tokens = (int64_t)num(j, "engine_kwargs", "max_num_batched_tokens");
  p.gpu_memory_utilization = num(j, "kv_cache", "gpu_memory_utilization");
  p.block_size = (int)num(j, "kv_cache", "block_size");
  p.total_memory_bytes = (int64_t)num(j, "hardware", "device_total_memory_bytes");
  return p;
}

Test(startup_logs, rtx4090_run_token_count_and_concurrency) {
  if (access(META_PATH, R_OK) != 0)
    cr_skip_test("%s is absent (../shared not available)", META_PATH);
  cJSON *j;
  read_meta(&j);
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load("meta-llama/Llama-3.1-8B", &m, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("NVIDIA GeForce RTX 4090", &g, &err), KVSIM_OK, "%s", err.msg);
  kvsim_plan_params_t p = meta_params(j);
  int64_t blocks = (int64_t)num(j, "kv_cache", "num_gpu_blocks");
  p.num_gpu_blocks_override = blocks;
  kvsim_plan_t pl;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(pl.kv_cache_tokens, (int64_t)num(j, "kv_cache", "num_kv_tokens"),
               "%lld blocks make %lld tokens, the run logged %.0f", (long long)blocks,
               (long long)pl.kv_cache_tokens, num(j, "kv_cache", "num_kv_tokens"));
  double want = (double)blocks / (double)cdiv(p.max_model_len, p.block_size);
  cr_assert(fabs(pl.max_concurrency - want) < 1e-12, "V1 concurrency %.4f, want %.4f",
            pl.max_concurrency, want);
  cJSON_Delete(j);
}

Test(startup_logs, rtx4090_run_predicted_within_target) {
  if (access(META_PATH, R_OK) != 0)
    cr_skip_test("%s is absent (../shared not available)", META_PATH);
  cJSON *j;
  read_meta(&j);
  kvsim_model_t m;
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_model_load("meta-llama/Llama-3.1-8B", &m, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("NVIDIA GeForce RTX 4090", &g, &err), KVSIM_OK, "%s", err.msg);
  kvsim_plan_params_t p = meta_params(j);
  kvsim_plan_t pl;
  cr_assert_eq(kvsim_plan_compute(&m, &g, &p, &pl, &err), KVSIM_OK, "%s", err.msg);
  double run_blocks = num(j, "kv_cache", "num_gpu_blocks");
  double rel = fabs((double)pl.num_gpu_blocks - run_blocks) / run_blocks;
  /* Issue 2's target for predictions without measured overheads: 5 %. */
  cr_assert(rel <= 0.05, "predicted %lld blocks, the run had %.0f (%.1f%% off)",
            (long long)pl.num_gpu_blocks, run_blocks, 100 * rel);
  cJSON_Delete(j);
}
