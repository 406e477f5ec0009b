/* The body of the benchmark result readers' fuzz targets (fuzz_bench_vllm.c,
 * fuzz_bench_sglang.c): the reader on any text, called whether or not its
 * detect accepts the run, then the whole measured-file path (detection
 * included) on the same bytes. Properties: no crash or leak, and what is
 * read is usable: finished requests, or stated aggregates of at least one
 * completed request with finite non-negative numbers. */
#ifndef KVSIM_FUZZ_BENCH_H
#define KVSIM_FUZZ_BENCH_H

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

static int fuzz_bench(const kvsim__bench_fmt_t *reader, const uint8_t *data, size_t size) {
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
    if (reader->read(o, where, &m.lat, &m, &err) == KVSIM_OK && (m.aggregates_only || m.lat.finished))
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

#endif
