/* The silicon comparison as `kvsim validate --silicon --json` prints it
 * (kvsim/fidelity.h). */
#include <math.h>

#include <cJSON.h>

#include "fidelity/fid.h"
#include "kvsim/fidelity.h"

static cJSON *row_json(const kvsim_fid_sil_row_t *r, const kvsim_fid_sil_result_t *s) {
  cJSON *e = cJSON_CreateObject();
  cJSON_AddStringToObject(e, "id", r->id);
  cJSON_AddNumberToObject(e, "line", r->line);
  cJSON_AddStringToObject(e, "system", r->system);
  cJSON_AddStringToObject(e, "gpu", r->gpu);
  cJSON_AddStringToObject(e, "model", r->model);
  cJSON_AddStringToObject(e, "precision", r->precision[0] ? r->precision : "bf16");
  cJSON_AddNumberToObject(e, "tp", (double)r->tp);
  cJSON_AddNumberToObject(e, "batch_size", (double)r->batch);
  cJSON_AddNumberToObject(e, "isl", (double)r->isl);
  cJSON_AddNumberToObject(e, "osl", (double)r->osl);
  cJSON *m = cJSON_AddObjectToObject(e, "measured");
  cJSON_AddNumberToObject(m, "ttft_ms", r->ttft_ms);
  cJSON_AddNumberToObject(m, "tpot_ms", r->tpot_ms);
  if (s->ok) {
    cJSON *sm = cJSON_AddObjectToObject(e, "simulated");
    cJSON_AddNumberToObject(sm, "ttft_ms", s->ttft_ms);
    cJSON_AddNumberToObject(sm, "tpot_ms", s->tpot_ms);
    const kvsim_step_cost_t *c = &s->decode_step;
    cJSON *d = cJSON_AddObjectToObject(sm, "decode_step_ms");
    cJSON_AddNumberToObject(d, "gemm", c->gemm_s * 1e3);
    cJSON_AddNumberToObject(d, "attention", c->attn_s * 1e3);
    cJSON_AddNumberToObject(d, "moe", c->moe_s * 1e3);
    cJSON_AddNumberToObject(d, "comm", c->comm_s * 1e3);
    cJSON_AddNumberToObject(d, "elementwise", c->elem_s * 1e3);
    cJSON_AddNumberToObject(d, "host", c->host_s * 1e3);
    cJSON_AddNumberToObject(d, "roofline", c->roofline_s * 1e3);
    cJSON_AddNumberToObject(d, "total", c->total_s * 1e3);
    cJSON *ep = cJSON_AddObjectToObject(e, "error_pct");
    cJSON_AddNumberToObject(ep, "ttft", s->err_ttft);
    cJSON_AddNumberToObject(ep, "tpot", s->err_tpot);
  } else {
    cJSON_AddStringToObject(e, "error", s->error);
  }
  return e;
}

static cJSON *group_json(const kvsim_fid_silicon_t *s, const kvsim_fid_sil_group_t *gr) {
  const kvsim_fid_sil_row_t *first = &s->table.rows[s->order[gr->lo]];
  cJSON *g = cJSON_CreateObject();
  cJSON_AddStringToObject(g, "system", first->system);
  cJSON_AddStringToObject(g, "model", first->model);
  cJSON_AddNumberToObject(g, "rows", gr->n);
  cJSON *gm = cJSON_AddObjectToObject(g, "median_abs_error_pct");
  cJSON_AddNumberToObject(gm, "ttft", gr->ttft_med);
  cJSON_AddNumberToObject(gm, "tpot", gr->tpot_med);
  return g;
}

char *kvsim_fidelity_silicon_to_json(const kvsim_fid_silicon_t *s, const char *file) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "mode", "silicon");
  cJSON_AddStringToObject(o, "file", file);
  cJSON *rows = cJSON_AddArrayToObject(o, "rows");
  cJSON *groups = cJSON_AddArrayToObject(o, "groups");
  /* Skipped rows by reason, in the order of the sorted rows. */
  cJSON *why = cJSON_CreateObject();
  for (int64_t i = 0; i < s->table.n; i++) {
    const kvsim_fid_sil_row_t *r = &s->table.rows[s->order[i]];
    if (r->skipped) {
      cJSON *n = cJSON_GetObjectItemCaseSensitive(why, r->reason);
      if (n)
        cJSON_SetNumberValue(n, n->valuedouble + 1);
      else
        cJSON_AddNumberToObject(why, r->reason, 1);
      continue;
    }
    cJSON_AddItemToArray(rows, row_json(r, &s->res[s->order[i]]));
  }
  for (int64_t i = 0; i < s->ngroups; i++)
    if (s->groups[i].n > 0)
      cJSON_AddItemToArray(groups, group_json(s, &s->groups[i]));
  cJSON *mm = cJSON_AddObjectToObject(o, "median_abs_error_pct");
  if (s->compared > 0) {
    cJSON_AddNumberToObject(mm, "ttft", s->ttft_med);
    cJSON_AddNumberToObject(mm, "tpot", s->tpot_med);
  } else {
    cJSON_AddNullToObject(mm, "ttft");
    cJSON_AddNullToObject(mm, "tpot");
  }
  cJSON_AddNumberToObject(o, "simulated", s->simulated);
  cJSON_AddNumberToObject(o, "failed", s->failed);
  cJSON_AddNumberToObject(o, "skipped", s->skipped);
  cJSON_AddItemToObject(o, "skipped_reasons", why);
  return kvsim__fid_print(o);
}
