/* Every trace format: the first byte picks the format (or detection), the
 * second whether bad rows are skipped; the rest is the file. Pulls every
 * request the source hands out, as the engine would. */
#include "fuzz_common.h"
#include "kvsim/workload.h"

static const char *const formats[] = {NULL, "azure", "vidur", "mooncake", "kvsim", "llmservingsim", "requests"};
static const char *const suffixes[] = {".csv", ".csv", ".csv", ".jsonl", ".csv", ".jsonl", ".csv"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  unsigned f = data[0] % (sizeof formats / sizeof *formats);
  int skip = data[1] & 1;
  const char *path = fuzz_tmpfile(data + 2, size - 2, suffixes[f]);
  if (!path)
    return 0;
  cJSON *w = cJSON_CreateObject();
  cJSON_AddStringToObject(w, "trace", path);
  if (formats[f])
    cJSON_AddStringToObject(w, "format", formats[f]);
  if (skip)
    cJSON_AddBoolToObject(w, "skip_bad_rows", 1);
  kvsim_err err = {0};
  kvsim_workload_cfg_t *cfg = NULL;
  if (kvsim_workload_parse(w, "/", "fuzz: workload", &cfg, &err) == KVSIM_OK) {
    kvsim_source_t *src = NULL;
    if (kvsim_source_open(cfg, 1, &src, &err) == KVSIM_OK) {
      kvsim_req_spec_t spec;
      kvsim_time_ns last = INT64_MIN;
      for (int n = 0; n < 100000; n++) {
        int rc = kvsim_source_next(src, &spec, &err);
        if (rc != KVSIM_SOURCE_REQUEST)
          break;
        /* The reader's contract: arrivals in order, lengths that sum. */
        if (spec.arrival < last || spec.prompt_tokens < 0 || spec.output_tokens < 0)
          fuzz_fail("arrivals out of order or a negative length", err.msg);
        int64_t sum = 0;
        for (int32_t i = 0; i < spec.num_segments; i++)
          sum += spec.segments[i].len;
        if (spec.num_segments && sum != spec.prompt_tokens)
          fuzz_fail("segments do not sum to prompt_tokens", err.msg);
        last = spec.arrival;
        kvsim_source_on_finish(src, &spec, spec.arrival, spec.output_tokens);
      }
      kvsim_source_close(src);
    }
    kvsim_workload_cfg_free(cfg);
  }
  /* An error is one line. */
  if (strchr(err.msg, '\n'))
    fuzz_fail("an error message spans lines", err.msg);
  cJSON_Delete(w);
  unlink(path);
  return 0;
}
