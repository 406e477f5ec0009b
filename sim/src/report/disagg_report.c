/* kvsim calc --scenario: a scenario's memory plan, and for a
 * disaggregated one each side's plan in its engine's words and the KV
 * each request moves from the prefill side to the decode side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kvsim/report.h"

/* Prompt lengths the transfer line is shown for: a chat turn and a
 * long-context prompt (the 8k of the docs' study). */
static const int64_t shown_prompts[] = {1024, 8192};

static void side_text(const char *name, const kvsim_scenario_t *s, const kvsim_resolved_t *res, FILE *out) {
  fprintf(out, "== %s: %d x %s (TP %d), profile %s ==\n", name, s->replicas, s->gpu.name,
          res->plan.p.tp, s->profile);
  kvsim_report_plan_text(&res->plan, &s->model, &s->gpu, out);
}

/* The bytes of a prompt's KV over every rank: the connectors move whole
 * blocks (NixlConnectorWorker._read_blocks by block ids). */
static int64_t prompt_bytes(const kvsim_plan_t *pl, int64_t tokens) {
  int64_t bs = pl->p.block_size > 0 ? pl->p.block_size : 1;
  return (tokens + bs - 1) / bs * pl->block_bytes * pl->p.tp * (pl->p.pp > 0 ? pl->p.pp : 1);
}

int kvsim_report_scenario_calc(const kvsim_scenario_t *sc, bool json, FILE *out, kvsim_err *err) {
  kvsim_scenario_t side[2];
  kvsim_resolved_t res[2];
  const char *names[2] = {"prefill", "decode"};
  int n = sc->disagg.enabled ? 2 : 1, rc = KVSIM_OK;
  memset(side, 0, sizeof side);
  for (int k = 0; k < n && rc == KVSIM_OK; k++) {
    const kvsim_scenario_t *s = sc;
    if (sc->disagg.enabled && (rc = kvsim_scenario_disagg_side(sc, (kvsim_disagg_side)k, &side[k], err)) == KVSIM_OK)
      s = &side[k];
    /* A plan that does not fit is printed with the engine's error, as calc does. */
    if (rc == KVSIM_OK && (rc = kvsim_scenario_resolve(s, &res[k], err)) == KVSIM_ENOFIT)
      rc = KVSIM_OK;
  }
  if (rc == KVSIM_OK && json) {
    cJSON *j = cJSON_CreateObject();
    for (int k = 0; k < n; k++) {
      const kvsim_scenario_t *s = sc->disagg.enabled ? &side[k] : sc;
      cJSON *o = n == 1 ? j : cJSON_AddObjectToObject(j, names[k]);
      kvsim_report_plan_json(&res[k].plan, &s->model, &s->gpu, o);
      if (n == 2)
        cJSON_AddNumberToObject(o, "replicas", s->replicas);
    }
    if (n == 2) {
      cJSON_AddStringToObject(j, "flow", kvsim_disagg_flow_name(sc->disagg.flow));
      cJSON_AddStringToObject(j, "transfer",
                              kvsim_disagg_unit_name(kvsim_disagg_unit_of(
                                  &sc->disagg, side[0].sched_ops->defaults.kv_send_chunks)));
      cJSON_AddStringToObject(j, "link", kvsim_xfer_link_name(sc->disagg.link));
      cJSON_AddNumberToObject(j, "link_bandwidth_GBps", sc->disagg.link_GBps);
      cJSON_AddNumberToObject(j, "transfer_bytes_per_prompt_token",
                              (double)(res[0].plan.per_token_kv_bytes * res[0].plan.p.tp));
    }
    char *text = kvsim_report_json_string(j);
    cJSON_Delete(j);
    if (!text)
      rc = kvsim_err_set(err, KVSIM_ENOMEM, "out of memory for calc's JSON");
    else
      fprintf(out, "%s\n", text);
    free(text);
  } else if (rc == KVSIM_OK) {
    for (int k = 0; k < n; k++)
      if (n == 2)
        side_text(names[k], &side[k], &res[k], out);
      else
        kvsim_report_plan_text(&res[k].plan, &sc->model, &sc->gpu, out);
    if (n == 2) {
      const kvsim_plan_t *pp = &res[0].plan;
      char b[32], t[32];
      fprintf(out, "== hand-off (flow %s, %s at %.4g GB/s per GPU, %.4g us per transfer) ==\n",
              kvsim_disagg_flow_name(sc->disagg.flow), kvsim_xfer_link_name(sc->disagg.link),
              sc->disagg.link_GBps, sc->disagg.link_latency_s * 1e6);
      fprintf(out, "KV to transfer per request: %s bytes per prompt token over %d prefill rank%s, in whole blocks of %lld tokens\n",
              kvsim__commas(pp->per_token_kv_bytes * pp->p.tp, b, sizeof b), pp->p.tp,
              pp->p.tp > 1 ? "s" : "", (long long)pp->p.block_size);
      /* The idle-link times below are one whole transfer's; per chunk, the
       * prefill's later chunks hide all but the last send, per layer the
       * step's own forward hides all but the link's tail (kvsim/disagg.h). */
      const kvsim_disagg_unit unit =
          kvsim_disagg_unit_of(&sc->disagg, side[0].sched_ops->defaults.kv_send_chunks);
      if (unit == KVSIM_DISAGG_UNIT_CHUNK)
        fprintf(out, "Sent per chunked-prefill chunk as it is computed (transfer chunk): after the "
                     "prefill only the last chunk's share is left to move\n");
      else if (unit == KVSIM_DISAGG_UNIT_LAYER)
        fprintf(out,
                "Sent per layer as each layer's forward ends (transfer layer, %d sends per "
                "step): after the prefill only what the link has not finished is left\n",
                side[0].model.num_layers);
      else
        fprintf(out, "Sent whole after the prefill (transfer request)\n");
      for (size_t i = 0; i < sizeof shown_prompts / sizeof *shown_prompts; i++) {
        int64_t bytes = prompt_bytes(pp, shown_prompts[i]);
        fprintf(out, "  prompt of %s tokens: %s bytes (%.3f GiB), %.2f ms on an idle link\n",
                kvsim__commas(shown_prompts[i], t, sizeof t), kvsim__commas(bytes, b, sizeof b),
                (double)bytes / (double)(1LL << 30),
                1e3 * kvsim_disagg_transfer_s(&sc->disagg, bytes, pp->p.tp, res[1].plan.p.tp));
      }
    }
  }
  for (int k = 0; k < 2; k++)
    if (sc->disagg.enabled)
      kvsim_scenario_fini(&side[k]);
  return rc;
}
