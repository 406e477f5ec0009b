/* The sglang benchmark result reader (fidelity/bench_sglang.c) on any text,
 * called whether or not its detect accepts the run, then the whole
 * measured-file path (detection included) on the same bytes. Properties:
 * no crash or leak, and what is read is usable: finished requests, or
 * stated aggregates of at least one completed request with finite
 * non-negative numbers. */
#include <math.h>

#include "fidelity/bench.h"
#include "fuzz_common.h"

static void check(const kvsim_fid_lat_t *l, const kvsim_fid_measured_t *m, const char *msg) {
  if (!m->aggregates_only && l->finished < 1)
    fuzz_fail("read with no finished request", msg);
  if (m->aggregates_only && m->stated_n < 1)
    fuzz_fail("aggregates of no completed request", msg);
  for (int k = 0; k < KVSIM_FID_NLAT; k++)
    if (m->aggregates_only && (m->stated[k].mean < 0 || isinf(m->stated[k].mean)))
      fuzz_fail("a stated mean that is negative or infinite", msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  cJSON *o = NULL;
  char where[64];
  int run, runs;
  kvsim_err err = {0};
  if (kvsim__bench_parse(text, "fuzz", &o, &run, &runs, where, sizeof where, &err) == KVSIM_OK) {
    kvsim_fid_measured_t m;
    memset(&m, 0, sizeof m);
    kvsim_fidelity_lat_init(&m.lat);
    if (kvsim__bench_sglang.read(o, where, &m.lat, &m, &err) == KVSIM_OK && (m.aggregates_only || m.lat.finished))
      check(&m.lat, &m, err.msg);
    kvsim_fidelity_lat_fini(&m.lat);
    cJSON_Delete(o);
  }
  free(text);
  const char *path = fuzz_tmpfile(data, size, ".json");
  if (!path)
    return 0;
  kvsim_fid_measured_t m;
  if (kvsim_fidelity_measured_load(path, NULL, &m, &err) == KVSIM_OK)
    check(&m.lat, &m, err.msg);
  kvsim_fidelity_measured_fini(&m);
  unlink(path);
  return 0;
}
