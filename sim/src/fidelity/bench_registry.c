/* The benchmark result readers, in detection order: the first whose
 * detect accepts the file's run reads it. A new benchmark is one file
 * (bench_<name>.c) plus one line here. SGLang's result shares most of
 * vLLM's keys (it was adapted from vLLM's benchmark_serving.py) and is
 * told by its own: it goes first. */
#include <stddef.h>
#include <stdio.h>

#include "fidelity/bench.h"

static const kvsim__bench_fmt_t *const formats[] = {&kvsim__bench_sglang, &kvsim__bench_vllm, NULL};

int kvsim__bench_read(const char *text, const char *path, kvsim_fid_lat_t *lat, kvsim_fid_measured_t *m,
                      kvsim_err *err) {
  cJSON *o;
  char where[4200];
  int rc = kvsim__bench_parse(text, path, &o, &m->run, &m->runs, where, sizeof where, err);
  if (rc < 0)
    return rc;
  const kvsim__bench_fmt_t *const *f = formats;
  while (*f && !(*f)->detect(o))
    f++;
  if (*f) {
    m->fmt = (*f)->fmt;
    rc = (*f)->read(o, where, lat, m, err);
  } else {
    rc = kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: a JSON object of no benchmark kvsim reads (expected vllm bench serve "
                       "--save-result or SGLang bench_serving output)",
                       where);
  }
  cJSON_Delete(o);
  return rc;
}
