/* Reading the start-up log table (vllm_startup_logs.csv: what vLLM printed
 * at start-up, one row per quoted log) with the workload room's CSV row
 * reader (workload/csvrow.h), and a run's meta.json
 * (the llmservingsim layout: engine_kwargs, kv_cache, hardware) as one
 * more row (kvsim/fidelity.h). The measured overheads and settings come
 * from the log lines and serve commands quoted in a row's notes. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "core/alloc.h"
#include "core/util.h"
#include "core/vec.h"
#include "fidelity/fid.h"
#include "kvsim/fidelity.h"
#include "workload/csvrow.h"

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

static bool parse_value(const char *s, kvsim_fid_su_value_t *out) {
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
static bool note_value(const char *notes, const char *key, kvsim_fid_su_value_t *out) {
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
  kvsim_fid_su_value_t v = {0};
  if (!note_value(notes, key, &v) || v.v <= 0 || v.v != floor(v.v))
    return false;
  *out = (int64_t)v.v;
  return true;
}

/* The measured overheads and settings a row's notes carry (the log lines
 * and serve commands quoted there). */
static void parse_notes(const char *notes, kvsim_fid_su_row_t *r) {
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
   * weights took 14.9595 GB" (V0, vllm/worker/model_runner.py load_model:
   * the unit is really GiB, bytes / 2**30) or "Model loading took 65.9651
   * GiB" (V1, vllm/v1/worker/gpu_model_runner.py load_model). */
  kvsim_fid_su_value_t w = {0};
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

/* ---- reading the CSV ---- */

enum { COL_SOURCE, COL_VERSION, COL_ENGINE, COL_MODEL, COL_GPU, COL_NUM_GPUS, COL_TP, COL_UTIL,
       COL_MML, COL_KV_DTYPE, COL_BLOCK_SIZE, COL_WEIGHTS, COL_AVAIL, COL_TOKENS, COL_BLOCKS,
       COL_CONC, COL_NOTES, COL_N };

static const char *const col_names[COL_N] = {
    "source_url", "vllm_version", "engine", "model", "gpu", "num_gpus", "tp", "gpu_mem_util",
    "max_model_len", "kv_cache_dtype", "block_size", "weights_gib", "available_kv_gib",
    "kv_cache_tokens", "gpu_blocks", "max_concurrency", "notes"};

typedef struct table_cols {
  const kvsim__csvrow_t *csv;
  int col_of[COL_N]; /* column index of each known field */
} table_cols;

static const char *field(const table_cols *tc, int col) {
  const char *v = kvsim__csvrow_field(tc->csv, tc->col_of[col]);
  return v ? v : "";
}

static void row_from_fields(const table_cols *st, int index, kvsim_fid_su_row_t *r) {
  memset(r, 0, sizeof *r);
  r->chunked = -1;
  r->index = index;
  short_source(field(st, COL_SOURCE), r->source, sizeof r->source);
  snprintf(r->engine, sizeof r->engine, "%s", field(st, COL_ENGINE));
  snprintf(r->vllm_version, sizeof r->vllm_version, "%s", field(st, COL_VERSION));
  snprintf(r->model, sizeof r->model, "%s", field(st, COL_MODEL));
  snprintf(r->gpu, sizeof r->gpu, "%s", field(st, COL_GPU));
  snprintf(r->kv_dtype, sizeof r->kv_dtype, "%s", field(st, COL_KV_DTYPE));
  kvsim_fid_su_value_t v = {0};
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

int kvsim_fidelity_startup_read(const char *path, kvsim_fid_startup_t *t, kvsim_err *err) {
  kvsim__csvrow_t *csv;
  int rc = kvsim__csvrow_open(path, true, &csv, err);
  if (rc < 0)
    return kvsim__fid_recode(rc, KVSIM_EPARSE, err);
  table_cols tc = {.csv = csv};
  for (int c = 0; c < COL_N && rc == KVSIM_OK; c++)
    if ((tc.col_of[c] = kvsim__csvrow_column(csv, col_names[c])) < 0)
      rc = kvsim_err_set(err, KVSIM_EPARSE, "%s:1: missing column '%s' in the header", path,
                         col_names[c]);
  int index = 0;
  while (rc == KVSIM_OK && (rc = kvsim__csvrow_next(csv, err)) == 1) {
    if (kvsim__grow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows) < 0) {
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "%s: out of memory", path);
      break;
    }
    /* A row's index counts the data rows from 1. */
    row_from_fields(&tc, ++index, &t->rows[t->n++]);
    rc = KVSIM_OK;
  }
  kvsim__csvrow_close(csv);
  return kvsim__fid_recode(rc, KVSIM_EPARSE, err);
}

/* ---- reading a run's meta.json (llmservingsim layout) ---- */

static int read_meta(const char *path, kvsim_fid_su_row_t *r, kvsim_err *err);

int kvsim_fidelity_startup_add_meta(const char *path, kvsim_fid_startup_t *t, kvsim_err *err) {
  if (kvsim__grow((void **)&t->rows, &t->cap, t->n + 1, sizeof *t->rows) < 0)
    return kvsim_err_set(err, KVSIM_ENOMEM, "out of memory");
  int rc = read_meta(path, &t->rows[t->n], err);
  if (rc == KVSIM_OK)
    t->n++;
  return rc;
}

static int read_meta(const char *path, kvsim_fid_su_row_t *r, kvsim_err *err) {
  cJSON *j = kvsim__json_load(path, err);
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
  int rc = KVSIM_OK;
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
  snprintf(r->vllm_version, sizeof r->vllm_version, "%s", ver);
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

