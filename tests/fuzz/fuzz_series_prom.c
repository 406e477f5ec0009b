/* The Prometheus text reader of measured series (fidelity/series_prom.c)
 * on any bytes (fuzz_series.h says what is checked). */
#include "fuzz_series.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_series(kvsim__fid_read_prom_text, ".prom", data, size);
}
