/* The sglang benchmark result reader (fidelity/bench_sglang.c) on any text
 * (fuzz_bench.h says what is checked). */
#include "fuzz_bench.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_bench(&kvsim__bench_sglang, data, size); }
