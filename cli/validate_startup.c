/* kvsim validate --startup: the start-up log table (../shared/validation/
 *   vllm_startup_logs.csv). For each row, the logged KV budget / blocks /
 *   tokens against kvsim's plan (a) with the row's measured overheads as
 *   overrides, where the log has them, and (b) predicted from the model,
 *   GPU and settings alone. --meta FILE adds a run's meta.json (the
 *   llmservingsim format: engine_kwargs, kv_cache, hardware) as one more
 *   row. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>
#include <csv.h>

#include "args.h"
#include "commands.h"
#include "core/util.h"
#include "kvsim/gpu.h"
#include "kvsim/model.h"
#include "kvsim/plan.h"
#include "validate_common.h"

/* ---- one start-up observation ---- */

typedef struct su_value {
  bool set;
  double v;
  int decimals; /* as written in the log: the value carries +/- half a unit of the last place */
} su_value;

typedef struct su_row {
  int index;               /* 1-based data row of the file, or meta.json */
  char source[96];         /* short form of the source URL ("vllm#12330") */
  char engine[8];          /* "V0" / "V1" */
  char model[128], gpu[64];
  int tp, num_gpus;        /* 0: not logged */
  double util;             /* 0: not logged */
  int64_t max_model_len;   /* 0: the model's default */
  int block_size;          /* 0: 16 */
  char kv_dtype[16];
  /* What the engine logged. */
  su_value weights, avail_gib, concurrency;
  int64_t tokens, blocks;  /* 0: not logged */
  /* Measured overheads and settings found in the notes. */
  su_value total_gib, non_torch, activation;
  int64_t total_bytes;     /* exact total (meta.json) */
  int64_t max_num_seqs, max_num_batched_tokens;
  int chunked;             /* -1 unknown */
  bool enforce_eager;
} su_row;

/* ---- result of one row ---- */

typedef struct su_result {
  bool skipped;
  char reason[160];
  char model_name[64], gpu_name[64];
  bool has_overrides;
  kvsim_plan_t with, pred;
  double err_with, err_pred; /* percent; NAN when not comparable */
  char metric[8];            /* what was compared: "blocks", "tokens", "GiB" */
  double logged_gib;         /* the logged pool in GiB (blocks/tokens via kvsim's block bytes) */
} su_result;

/* ---- small parsers ---- */

static void short_source(const char *url, char *out, size_t cap) {
  /* https://github.com/OWNER/REPO/(issues|pull)/N -> REPO#N */
  const char *p = strstr(url, "github.com/");
  if (p) {
    p += 11;
    const char *repo = strchr(p, '/');
    const char *kind = repo ? strchr(repo + 1, '/') : NULL;
    const char *num = kind ? strchr(kind + 1, '/') : NULL;
    if (repo && kind && num) {
      snprintf(out, cap, "%.*s#%s", (int)(kind - repo - 1), repo + 1, num + 1);
      return;
    }
  }
  snprintf(out, cap, "%s", url);
}

static int count_decimals(const char *s, const char *end) {
  const char *dot = memchr(s, '.', (size_t)(end - s));
  return dot ? (int)(end - dot - 1) : 0;
}

static bool parse_value(const char *s, su_value *out) {
  while (isspace((unsigned char)*s))
    s++;
  if (!*s)
    return false;
  char *end;
  double v = strtod(s, &end);
  if (end == s)
    return false;
  out->set = true;
  out->v = v;
  out->decimals = count_decimals(s, end);
  return true;
}

/* Finds `key` followed by a number (and not by a range "a-b") in the
 * notes; the first such occurrence wins. */
static bool note_value(const char *notes, const char *key, su_value *out) {
  size_t kl = strlen(key);
  for (const char *p = strstr(notes, key); p; p = strstr(p + 1, key)) {
    if (p > notes && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
      continue; /* part of a longer word */
    const char *s = p + kl;
    while (*s == ' ' || *s == '(' || *s == '=')
      s++;
    if (!isdigit((unsigned char)*s))
      continue;
    char *end;
    double v = strtod(s, &end);
    if (*end == '-')
      continue; /* a range: not one measurement */
    out->set = true;
    out->v = v;
    out->decimals = count_decimals(s, end);
    return true;
  }
  return false;
}

static bool note_int(const char *notes, const char *key, int64_t *out) {
  su_value v = {0};
  if (!note_value(notes, key, &v) || v.v <= 0 || v.v != floor(v.v))
    return false;
  *out = (int64_t)v.v;
  return true;
}

/* The measured overheads and settings a row's notes carry (the log lines
 * and serve commands quoted there). */
static void parse_notes(const char *notes, su_row *r) {
  static const char *total_keys[] = {"total_gpu_memory", "total"};
  static const char *nt_keys[] = {"non_torch_memory", "non_torch"};
  static const char *act_keys[] = {"activation peak memory", "activation peak", "activation"};
  for (size_t k = 0; k < 2 && !r->total_gib.set; k++)
    note_value(notes, total_keys[k], &r->total_gib);
  for (size_t k = 0; k < 2 && !r->non_torch.set; k++)
    note_value(notes, nt_keys[k], &r->non_torch);
  for (size_t k = 0; k < 3 && !r->activation.set; k++)
    note_value(notes, act_keys[k], &r->activation);
  /* A more precise weight than the 2-decimal column: "Loading model
   * weights took 14.9595 GB" (V0; the unit is really GiB, VLLM.md 1.1) or
   * "Model loading took 65.9651 GiB" (V1). */
  su_value w = {0};
  if ((note_value(notes, "Loading model weights took", &w) ||
       note_value(notes, "Model loading took", &w)) &&
      (!r->weights.set || w.decimals > r->weights.decimals))
    r->weights = w;
  if (!note_int(notes, "--max-num-seqs", &r->max_num_seqs))
    note_int(notes, "max_num_seqs=", &r->max_num_seqs);
  /* vllm#40691 writes the flag without its final 's'. */
  if (!note_int(notes, "--max-num-batched-tokens", &r->max_num_batched_tokens))
    note_int(notes, "--max-num-batched-token", &r->max_num_batched_tokens);
  if (strstr(notes, "--enforce-eager"))
    r->enforce_eager = true;
  if (strstr(notes, "enable_chunked_prefill=True") || strstr(notes, "--enable-chunked-prefill"))
    r->chunked = 1;
  if (strstr(notes, "enable_chunked_prefill=False"))
    r->chunked = 0;
}

/* ---- reading the CSV with libcsv ---- */

enum { COL_SOURCE, COL_VERSION, COL_ENGINE, COL_MODEL, COL_GPU, COL_NUM_GPUS, COL_TP, COL_UTIL,
       COL_MML, COL_KV_DTYPE, COL_BLOCK_SIZE, COL_WEIGHTS, COL_AVAIL, COL_TOKENS, COL_BLOCKS,
       COL_CONC, COL_NOTES, COL_N };

static const char *const col_names[COL_N] = {
    "source_url", "vllm_version", "engine", "model", "gpu", "num_gpus", "tp", "gpu_mem_util",
    "max_model_len", "kv_cache_dtype", "block_size", "weights_gib", "available_kv_gib",
    "kv_cache_tokens", "gpu_blocks", "max_concurrency", "notes"};

typedef struct csv_state {
  int col_of[COL_N];   /* column index of each known field */
  char *fields[64];
  int nfields;
  int line;            /* data rows seen */
  bool header_done;
  su_row *rows;
  int nrows, cap;
  char error[256];
} csv_state;

static void on_field(void *s, size_t len, void *data) {
  csv_state *st = data;
  if (st->nfields < 64) {
    char *f = malloc(len + 1);
    if (f) {
      memcpy(f, s ? s : "", len);
      f[len] = '\0';
    }
    st->fields[st->nfields++] = f;
  }
}

static const char *field(const csv_state *st, int col) {
  int i = st->col_of[col];
  return i >= 0 && i < st->nfields && st->fields[i] ? st->fields[i] : "";
}

static void row_from_fields(csv_state *st, su_row *r) {
  memset(r, 0, sizeof *r);
  r->chunked = -1;
  r->index = st->line;
  short_source(field(st, COL_SOURCE), r->source, sizeof r->source);
  snprintf(r->engine, sizeof r->engine, "%s", field(st, COL_ENGINE));
  snprintf(r->model, sizeof r->model, "%s", field(st, COL_MODEL));
  snprintf(r->gpu, sizeof r->gpu, "%s", field(st, COL_GPU));
  snprintf(r->kv_dtype, sizeof r->kv_dtype, "%s", field(st, COL_KV_DTYPE));
  su_value v = {0};
  if (parse_value(field(st, COL_TP), &v))
    r->tp = (int)v.v;
  v.set = false;
  if (parse_value(field(st, COL_NUM_GPUS), &v))
    r->num_gpus = (int)v.v;
  v.set = false;
  if (parse_value(field(st, COL_UTIL), &v))
    r->util = v.v;
  v.set = false;
  if (parse_value(field(st, COL_MML), &v))
    r->max_model_len = (int64_t)v.v;
  v.set = false;
  if (parse_value(field(st, COL_BLOCK_SIZE), &v))
    r->block_size = (int)v.v;
  v.set = false;
  if (parse_value(field(st, COL_TOKENS), &v))
    r->tokens = (int64_t)v.v;
  v.set = false;
  if (parse_value(field(st, COL_BLOCKS), &v))
    r->blocks = (int64_t)v.v;
  parse_value(field(st, COL_WEIGHTS), &r->weights);
  parse_value(field(st, COL_AVAIL), &r->avail_gib);
  parse_value(field(st, COL_CONC), &r->concurrency);
  parse_notes(field(st, COL_NOTES), r);
}

static void on_row(int term, void *data) {
  (void)term;
  csv_state *st = data;
  if (!st->header_done) {
    for (int c = 0; c < COL_N; c++) {
      st->col_of[c] = -1;
      for (int i = 0; i < st->nfields; i++)
        if (st->fields[i] && !strcmp(st->fields[i], col_names[c]))
          st->col_of[c] = i;
      if (st->col_of[c] < 0 && !st->error[0])
        snprintf(st->error, sizeof st->error, "missing column '%s' in the header", col_names[c]);
    }
    st->header_done = true;
  } else if (st->nfields > 1 || (st->nfields == 1 && st->fields[0] && st->fields[0][0])) {
    st->line++;
    if (st->nrows == st->cap) {
      int cap = st->cap ? 2 * st->cap : 32;
      su_row *g = realloc(st->rows, (size_t)cap * sizeof *g);
      if (!g) {
        snprintf(st->error, sizeof st->error, "out of memory");
        goto out;
      }
      st->rows = g;
      st->cap = cap;
    }
    row_from_fields(st, &st->rows[st->nrows++]);
  }
out:
  for (int i = 0; i < st->nfields; i++)
    free(st->fields[i]);
  st->nfields = 0;
}

static int read_startup_csv(const char *path, su_row **rows, int *n, kvsim_err *err) {
  char *text;
  size_t len;
  int rc = kvsim__read_file(path, &text, &len, err);
  if (rc < 0)
    return rc;
  struct csv_parser p;
  csv_state st;
  memset(&st, 0, sizeof st);
  if (csv_init(&p, CSV_APPEND_NULL) != 0) {
    free(text);
    return kvsim_err_set(err, KVSIM_ENOMEM, "%s: cannot start the CSV parser", path);
  }
  if (csv_parse(&p, text, len, on_field, on_row, &st) != len)
    snprintf(st.error, sizeof st.error, "%s", csv_strerror(csv_error(&p)));
  csv_fini(&p, on_field, on_row, &st);
  csv_free(&p);
  free(text);
  if (!st.error[0] && !st.header_done)
    snprintf(st.error, sizeof st.error, "empty file");
  if (st.error[0]) {
    free(st.rows);
    return kvsim_err_set(err, KVSIM_EPARSE, "%s: %s", path, st.error);
  }
  *rows = st.rows;
  *n = st.nrows;
  return KVSIM_OK;
}

/* ---- reading a run's meta.json (llmservingsim layout) ---- */

static int read_meta(const char *path, su_row *r, kvsim_err *err) {
  char *text;
  int rc = kvsim__read_file(path, &text, NULL, err);
  if (rc < 0)
    return rc;
  cJSON *j = kvsim__json_parse(text, path, err);
  free(text);
  if (!j)
    return err->code;
  memset(r, 0, sizeof *r);
  r->chunked = -1;
  r->index = 0;
  const cJSON *kw = cJSON_GetObjectItemCaseSensitive(j, "engine_kwargs");
  const cJSON *kv = cJSON_GetObjectItemCaseSensitive(j, "kv_cache");
  const cJSON *hw = cJSON_GetObjectItemCaseSensitive(j, "hardware");
  char ver[32] = "";
  int64_t tp = 0, blocks = 0, tokens = 0, bs = 0;
  double util = 0;
  rc = KVSIM_OK;
  if (!cJSON_IsObject(kw) || !cJSON_IsObject(kv) || !cJSON_IsObject(hw)) {
    rc = kvsim_err_set(err, KVSIM_EINVAL, "%s: expected engine_kwargs, kv_cache and hardware objects",
                       path);
    goto out;
  }
  if (kvsim__json_str(j, "vllm_version", ver, sizeof ver, path, err) < 0 ||
      kvsim__json_str(kw, "model", r->model, sizeof r->model, path, err) < 0 ||
      kvsim__json_int(kw, "tensor_parallel_size", &tp, path, err) < 0 ||
      kvsim__json_int(kw, "max_model_len", &r->max_model_len, path, err) < 0 ||
      kvsim__json_int(kw, "max_num_seqs", &r->max_num_seqs, path, err) < 0 ||
      kvsim__json_int(kw, "max_num_batched_tokens", &r->max_num_batched_tokens, path, err) < 0 ||
      kvsim__json_str(kw, "kv_cache_dtype", r->kv_dtype, sizeof r->kv_dtype, path, err) < 0 ||
      kvsim__json_int(kv, "num_gpu_blocks", &blocks, path, err) < 0 ||
      kvsim__json_int(kv, "num_kv_tokens", &tokens, path, err) < 0 ||
      kvsim__json_int(kv, "block_size", &bs, path, err) < 0 ||
      kvsim__json_num(kv, "gpu_memory_utilization", &util, path, err) < 0 ||
      kvsim__json_str(hw, "device_name", r->gpu, sizeof r->gpu, path, err) < 0 ||
      kvsim__json_int(hw, "device_total_memory_bytes", &r->total_bytes, path, err) < 0) {
    rc = err->code;
    goto out;
  }
  snprintf(r->source, sizeof r->source, "meta vLLM %s", ver[0] ? ver : "?");
  /* vLLM 0.19 is V1 (V0 was removed in 2025). */
  snprintf(r->engine, sizeof r->engine, "V1");
  r->tp = (int)tp;
  r->num_gpus = (int)tp;
  r->util = util;
  r->blocks = blocks;
  r->tokens = tokens;
  r->block_size = (int)bs;
out:
  cJSON_Delete(j);
  return rc;
}

/* ---- mapping a row onto the catalogs ---- */

/* Models the catalog holds under another name: fine-tunes and repacks that
 * keep the base architecture. */
static const struct {
  const char *from, *to, *quantization;
} model_alias[] = {
    {"deepseek-r1-distill-qwen-14b", "qwen2.5-14b", ""},  /* a Qwen2.5-14B fine-tune */
    {"deepseek-coder-v2-lite", "deepseek-v2-lite", ""},  /* DeepSeek-V2-Lite architecture */
    {"llama-3.1-70b-instruct-quantized.w8a8", "llama-3.1-70b", "w8a8"}, /* int8 w8a8 repack */
};

static bool map_model(const su_row *r, kvsim_model_t *m, char *quant, size_t qcap,
                      char *reason, size_t rcap) {
  kvsim_err err = {0};
  char name[128];
  quant[0] = '\0';
  if (!r->model[0]) {
    snprintf(reason, rcap, "model not stated");
    return false;
  }
  if (!kvsim_model_catalog_name(r->model, name, sizeof name)) {
    bool found = false;
    for (size_t i = 0; i < sizeof model_alias / sizeof *model_alias; i++)
      if (!strcmp(name, model_alias[i].from)) {
        snprintf(name, sizeof name, "%s", model_alias[i].to);
        snprintf(quant, qcap, "%s", model_alias[i].quantization);
        found = true;
      }
    if (!found) {
      snprintf(reason, rcap, "model '%s' not in the catalog", r->model);
      return false;
    }
  }
  if (kvsim_model_load(name, m, &err) < 0) {
    snprintf(reason, rcap, "model '%s': %s", r->model, err.msg);
    return false;
  }
  /* The engine started with this length, so the served config allowed it
   * (e.g. R1-Distill-Qwen-14B sets max_position_embeddings 131072). */
  if (r->max_model_len > m->max_position_embeddings)
    m->max_position_embeddings = r->max_model_len;
  return true;
}

static bool map_gpu(const su_row *r, kvsim_gpu_t *g, char *reason, size_t rcap) {
  char name[128];
  kvsim_err err = {0};
  if (!r->gpu[0]) {
    snprintf(reason, rcap, "GPU not stated");
    return false;
  }
  if (!kvsim_gpu_catalog_name(r->gpu, name, sizeof name)) {
    snprintf(reason, rcap, "GPU '%s' not in the catalog", r->gpu);
    return false;
  }
  if (kvsim_gpu_load(name, g, &err) < 0) {
    snprintf(reason, rcap, "GPU '%s': %s", r->gpu, err.msg);
    return false;
  }
  return true;
}

/* ---- one row ---- */

static double pct(double got, double want) { return want != 0 ? 100.0 * (got - want) / want : NAN; }

/* Error of a plan against what the row logged, on the pool size: the
 * block count if logged (an exact engine integer, the minimum over
 * workers), else the token count, else the 2-decimal GiB budget. */
static double row_error(const su_row *r, const kvsim_plan_t *pl, char *metric, size_t cap) {
  if (r->blocks > 0) {
    snprintf(metric, cap, "blocks");
    return pct((double)pl->num_gpu_blocks, (double)r->blocks);
  }
  if (r->tokens > 0) {
    snprintf(metric, cap, "tokens");
    return pct((double)pl->kv_cache_tokens, (double)r->tokens);
  }
  snprintf(metric, cap, "GiB");
  return pct((double)pl->available_kv_bytes / KVSIM_GIB, r->avail_gib.v);
}

static void startup_row(const su_row *r, su_result *res) {
  memset(res, 0, sizeof *res);
  res->err_with = res->err_pred = NAN;
  kvsim_model_t m;
  kvsim_gpu_t g;
  char quant[32];
  if (!map_model(r, &m, quant, sizeof quant, res->reason, sizeof res->reason) ||
      !map_gpu(r, &g, res->reason, sizeof res->reason)) {
    res->skipped = true;
    return;
  }
  snprintf(res->model_name, sizeof res->model_name, "%s", m.name);
  snprintf(res->gpu_name, sizeof res->gpu_name, "%s", g.name);
  if (strcmp(r->engine, "V0") && strcmp(r->engine, "V1")) {
    snprintf(res->reason, sizeof res->reason, "engine '%s' not V0 or V1", r->engine);
    res->skipped = true;
    return;
  }
  if (r->tp <= 0) {
    snprintf(res->reason, sizeof res->reason, "tensor-parallel size not logged");
    res->skipped = true;
    return;
  }
  if (r->util <= 0) {
    snprintf(res->reason, sizeof res->reason, "gpu_memory_utilization not logged");
    res->skipped = true;
    return;
  }
  if (r->blocks <= 0 && r->tokens <= 0 && !r->avail_gib.set) {
    snprintf(res->reason, sizeof res->reason, "no KV figure in the log (blocks, tokens or GiB)");
    res->skipped = true;
    return;
  }
  kvsim_plan_params_t p;
  kvsim_plan_params_default(&p);
  p.engine = !strcmp(r->engine, "V0") ? KVSIM_PLAN_V0 : KVSIM_PLAN_V1;
  p.tp = r->tp;
  p.gpu_memory_utilization = r->util;
  p.max_model_len = r->max_model_len;
  p.block_size = r->block_size;
  p.max_num_seqs = r->max_num_seqs;
  p.max_num_batched_tokens = r->max_num_batched_tokens;
  p.enable_chunked_prefill = r->chunked;
  p.enforce_eager = r->enforce_eager;
  p.total_memory_bytes = r->total_bytes;
  snprintf(p.quantization, sizeof p.quantization, "%s", quant);
  if (r->kv_dtype[0] && kvsim_kv_dtype_parse(r->kv_dtype, &p.kv_dtype) < 0) {
    snprintf(res->reason, sizeof res->reason, "kv_cache_dtype '%s' unknown", r->kv_dtype);
    res->skipped = true;
    return;
  }
  kvsim_err err = {0};
  /* (b) pure prediction: the GPU's own total, every overhead predicted. */
  if (kvsim_plan_compute(&m, &g, &p, &res->pred, &err) < 0) {
    snprintf(res->reason, sizeof res->reason, "%s", err.msg);
    res->skipped = true;
    return;
  }
  res->err_pred = row_error(r, &res->pred, res->metric, sizeof res->metric);
  /* (a) with what the log measured. */
  res->has_overrides = r->weights.set || r->activation.set || r->non_torch.set || r->total_gib.set;
  if (res->has_overrides) {
    kvsim_plan_params_t q = p;
    if (r->total_gib.set)
      q.total_memory_bytes = (int64_t)llround(r->total_gib.v * KVSIM_GIB);
    q.weights_gib = r->weights.set ? r->weights.v : -1;
    q.activation_gib = r->activation.set ? r->activation.v : -1;
    q.non_torch_gib = r->non_torch.set ? r->non_torch.v : -1;
    if (kvsim_plan_compute(&m, &g, &q, &res->with, &err) < 0) {
      res->has_overrides = false;
    } else if (r->avail_gib.set) {
      /* The overheads and the GiB figure come from the same worker's log
       * line; blocks and tokens are the minimum over workers. */
      res->err_with = pct((double)res->with.available_kv_bytes / KVSIM_GIB, r->avail_gib.v);
    } else {
      char metric[8];
      res->err_with = row_error(r, &res->with, metric, sizeof metric);
    }
  }
  /* The logged pool in GiB, for the table. */
  if (r->blocks > 0)
    res->logged_gib = (double)r->blocks * (double)res->pred.block_bytes / KVSIM_GIB;
  else if (r->tokens > 0)
    res->logged_gib = (double)r->tokens / res->pred.p.block_size * res->pred.num_groups *
                      (double)res->pred.block_bytes / KVSIM_GIB;
  else
    res->logged_gib = r->avail_gib.v;
}

/* ---- output ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_abs_error(const su_result *res, int n, int *count) {
  double *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e);
  int k = 0;
  for (int i = 0; e && i < n; i++)
    if (!res[i].skipped && !isnan(res[i].err_pred))
      e[k++] = fabs(res[i].err_pred);
  *count = k;
  double med = NAN;
  if (k > 0) {
    qsort(e, (size_t)k, sizeof *e, cmp_double);
    med = k % 2 ? e[k / 2] : (e[k / 2 - 1] + e[k / 2]) / 2;
  }
  free(e);
  return med;
}

static void pool_text(const kvsim_plan_t *pl, const char *metric, char *buf, size_t cap) {
  char n[32];
  if (!strcmp(metric, "tokens"))
    snprintf(buf, cap, "%7.2f GiB %9s tok", (double)pl->available_kv_bytes / KVSIM_GIB,
             kvsim__commas(pl->kv_cache_tokens, n, sizeof n));
  else
    snprintf(buf, cap, "%7.2f GiB %9s blk", (double)pl->available_kv_bytes / KVSIM_GIB,
             kvsim__commas(pl->num_gpu_blocks, n, sizeof n));
}

static void print_text(const su_row *rows, const su_result *res, int n, const char *file) {
  printf("Start-up validation against %s\n", file);
  printf("%-4s %-20s %-3s %-16s %-12s %3s %5s | %-26s | %-26s %8s | %-26s %8s\n", "row", "source",
         "eng", "model", "gpu", "tp", "util", "logged", "(a) measured overrides", "err",
         "(b) predicted", "err");
  for (int i = 0; i < n; i++) {
    const su_row *r = &rows[i];
    const su_result *s = &res[i];
    char idx[16];
    snprintf(idx, sizeof idx, r->index ? "%d" : "meta", r->index);
    if (s->skipped)
      continue;
    char logged[48], a[48] = "-", b[48], ea[16] = "-", eb[16], n1[32];
    /* The logged GiB where the log has it, else the pool the logged
     * blocks / tokens make with kvsim's block size. */
    double lg = r->avail_gib.set ? r->avail_gib.v : s->logged_gib;
    if (!strcmp(s->metric, "blocks"))
      snprintf(logged, sizeof logged, "%7.2f GiB %9s blk", lg,
               kvsim__commas(r->blocks, n1, sizeof n1));
    else if (!strcmp(s->metric, "tokens"))
      snprintf(logged, sizeof logged, "%7.2f GiB %9s tok", lg,
               kvsim__commas(r->tokens, n1, sizeof n1));
    else
      snprintf(logged, sizeof logged, "%7.2f GiB", lg);
    if (s->has_overrides) {
      pool_text(&s->with, s->metric, a, sizeof a);
      snprintf(ea, sizeof ea, "%+.1f%%", s->err_with);
    }
    pool_text(&s->pred, s->metric, b, sizeof b);
    snprintf(eb, sizeof eb, "%+.1f%%", s->err_pred);
    printf("%-4s %-20s %-3s %-16s %-12s %3d %5.2f | %-26s | %-26s %8s | %-26s %8s\n", idx,
           r->source, r->engine, s->model_name, s->gpu_name, r->tp, r->util, logged, a, ea, b, eb);
  }
  for (int i = 0; i < n; i++)
    if (res[i].skipped) {
      char idx[16];
      snprintf(idx, sizeof idx, rows[i].index ? "%d" : "meta", rows[i].index);
      printf("skipped row %s (%s): %s\n", idx, rows[i].source, res[i].reason);
    }
  int k;
  double med = median_abs_error(res, n, &k);
  if (k > 0)
    printf("Median absolute error of the prediction (b): %.1f%% over %d rows\n", med, k);
  else
    printf("Median absolute error of the prediction (b): n/a (no row with full inputs)\n");
}

static cJSON *plan_obj(const kvsim_plan_t *pl, double err_pct) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "available_kv_gib", (double)pl->available_kv_bytes / KVSIM_GIB);
  cJSON_AddNumberToObject(o, "weights_gib", (double)pl->weights_bytes / KVSIM_GIB);
  cJSON_AddNumberToObject(o, "activation_gib", (double)pl->activation_bytes / KVSIM_GIB);
  cJSON_AddNumberToObject(o, "non_torch_gib", (double)pl->non_torch_bytes / KVSIM_GIB);
  cJSON_AddNumberToObject(o, "num_gpu_blocks", (double)pl->num_gpu_blocks);
  cJSON_AddNumberToObject(o, "kv_cache_tokens", (double)pl->kv_cache_tokens);
  cJSON_AddNumberToObject(o, "max_concurrency", pl->max_concurrency);
  cJSON_AddNumberToObject(o, "error_pct", err_pct);
  return o;
}

static void print_json(const su_row *rows, const su_result *res, int n, const char *file) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mode", "startup");
  cJSON_AddStringToObject(o, "file", file);
  cJSON *arr = cJSON_AddArrayToObject(o, "rows");
  for (int i = 0; i < n; i++) {
    const su_row *r = &rows[i];
    const su_result *s = &res[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "row", r->index);
    cJSON_AddStringToObject(e, "source", r->source);
    cJSON_AddStringToObject(e, "engine", r->engine);
    cJSON_AddStringToObject(e, "model", r->model);
    cJSON_AddStringToObject(e, "gpu", r->gpu);
    if (s->skipped) {
      cJSON_AddStringToObject(e, "skipped", s->reason);
    } else {
      cJSON_AddStringToObject(e, "catalog_model", s->model_name);
      cJSON_AddStringToObject(e, "catalog_gpu", s->gpu_name);
      cJSON_AddNumberToObject(e, "tp", r->tp);
      cJSON_AddNumberToObject(e, "gpu_memory_utilization", r->util);
      cJSON_AddNumberToObject(e, "max_model_len", (double)s->pred.p.max_model_len);
      cJSON_AddStringToObject(e, "compared", s->metric);
      cJSON *lg = cJSON_AddObjectToObject(e, "logged");
      if (r->avail_gib.set)
        cJSON_AddNumberToObject(lg, "available_kv_gib", r->avail_gib.v);
      if (r->blocks > 0)
        cJSON_AddNumberToObject(lg, "gpu_blocks", (double)r->blocks);
      if (r->tokens > 0)
        cJSON_AddNumberToObject(lg, "kv_cache_tokens", (double)r->tokens);
      if (r->concurrency.set)
        cJSON_AddNumberToObject(lg, "max_concurrency", r->concurrency.v);
      cJSON_AddNumberToObject(lg, "pool_gib", s->logged_gib);
      if (s->has_overrides)
        cJSON_AddItemToObject(e, "with_overrides", plan_obj(&s->with, s->err_with));
      cJSON_AddItemToObject(e, "predicted", plan_obj(&s->pred, s->err_pred));
    }
    cJSON_AddItemToArray(arr, e);
  }
  int k;
  double med = median_abs_error(res, n, &k);
  cJSON_AddNumberToObject(o, "rows_predicted", k);
  if (k > 0)
    cJSON_AddNumberToObject(o, "median_abs_error_pct", med);
  else
    cJSON_AddNullToObject(o, "median_abs_error_pct");
  char *s = cJSON_Print(o);
  puts(s);
  free(s);
  cJSON_Delete(o);
}

/* ---- modes ---- */

int fid_cmd_startup(const char *file, const cli_list *metas, bool json, double max_error) {
  su_row *rows = NULL;
  int n = 0;
  kvsim_err err = {0};
  if (read_startup_csv(file, &rows, &n, &err) < 0)
    return cli_fail("validate", "--startup: %s", err.msg);
  if (metas->n > 0) {
    su_row *g = realloc(rows, (size_t)(n + metas->n) * sizeof *g);
    if (!g) {
      free(rows);
      return cli_fail("validate", "out of memory");
    }
    rows = g;
    for (int i = 0; i < metas->n; i++)
      if (read_meta(metas->items[i], &rows[n++], &err) < 0) {
        free(rows);
        return cli_fail("validate", "--meta: %s", err.msg);
      }
  }
  su_result *res = calloc((size_t)(n > 0 ? n : 1), sizeof *res);
  if (!res) {
    free(rows);
    return cli_fail("validate", "out of memory");
  }
  for (int i = 0; i < n; i++)
    startup_row(&rows[i], &res[i]);
  if (json)
    print_json(rows, res, n, file);
  else
    print_text(rows, res, n, file);
  int k;
  double med = median_abs_error(res, n, &k);
  free(res);
  free(rows);
  if (max_error >= 0 && (k == 0 || med > max_error)) {
    fprintf(stderr, "kvsim validate: median absolute error %.1f%% exceeds --max-error %.1f%%\n",
            med, max_error);
    return 1;
  }
  return 0;
}

