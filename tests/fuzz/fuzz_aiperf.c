/* aiperf's profile_export.jsonl (workload/formats/aiperf.c) on any
 * bytes: as a trace (arrivals in order, lengths of at least one token) and
 * as a measured run (finished requests with TTFT <= E2E). */
#include "fuzz_common.h"
#include "kvsim/fidelity.h"
#include "kvsim/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_tmpfile(data, size, ".jsonl");
  if (!path)
    return 0;
  cJSON *w = cJSON_CreateObject();
  cJSON_AddStringToObject(w, "trace", path);
  cJSON_AddStringToObject(w, "format", "aiperf");
  if (size && (data[0] & 1))
    cJSON_AddBoolToObject(w, "skip_bad_rows", 1);
  kvsim_err err = {0};
  kvsim_workload_cfg_t *cfg = NULL;
  if (kvsim_workload_parse(w, "/", "fuzz: workload", &cfg, &err) == KVSIM_OK) {
    kvsim_source_t *src = NULL;
    if (kvsim_source_open(cfg, 1, &src, &err) == KVSIM_OK) {
      kvsim_req_spec_t spec;
      kvsim_time_ns last = INT64_MIN;
      for (int n = 0; n < 100000 && kvsim_source_next(src, &spec, &err) == KVSIM_SOURCE_REQUEST; n++) {
        if (spec.arrival < last || spec.prompt_tokens < 1 || spec.output_tokens < 1)
          fuzz_fail("arrivals out of order or an empty request", err.msg);
        last = spec.arrival;
        kvsim_source_on_finish(src, &spec, spec.arrival, spec.output_tokens);
      }
      kvsim_source_close(src);
    }
    kvsim_workload_cfg_free(cfg);
  }
  cJSON_Delete(w);
  kvsim_fid_lat_t l;
  kvsim_fidelity_lat_init(&l);
  kvsim_fid_fmt_t fmt;
  if (kvsim_fidelity_read_measured(path, &l, &fmt, &err) == KVSIM_OK) {
    if (l.finished < 1 || l.ttft.n != l.finished)
      fuzz_fail("a measured read without finished requests", err.msg);
    if (!(l.ttft.min >= 0))
      fuzz_fail("a negative TTFT", err.msg);
  }
  kvsim_fidelity_lat_fini(&l);
  unlink(path);
  return 0;
}
