/* A kernel profile (configs/kernels/<gpu>.json, kvsim/kernels.h): refused
 * with one line naming the file, or a profile whose every lookup is finite
 * and non-negative, and positive where the table has the operation:
 * interpolation inside the grids, extrapolation past them, the nearest
 * head shape, the collectives and MoE curves. The fast JSON reader the
 * profiles go through (core/jsonfast.h) must build, on every text it
 * takes, the very tree cJSON builds: it is compared node by node. */
#include <math.h>
#include <string.h>

#include "core/jsonfast.h"

#include "fuzz_common.h"
#include "kvsim/kernels.h"

static void check(double v, const char *what) {
  if (!isfinite(v) || v < 0)
    fuzz_fail("a lookup that is not finite and >= 0", what);
}

/* Same type, key, string, number (bit for bit: -0 is not 0), valueint and
 * children in order, with the head's prev at the last child. */
static void same_tree(const cJSON *f, const cJSON *c, int depth) {
  for (; f || c; f = f->next, c = c->next) {
    if (!f || !c)
      fuzz_fail("jsonfast and cJSON differ", "child count");
    if (f->type != c->type || !f->string != !c->string || (f->string && strcmp(f->string, c->string)))
      fuzz_fail("jsonfast and cJSON differ", "type or key");
    if (f->type == cJSON_String && strcmp(f->valuestring, c->valuestring))
      fuzz_fail("jsonfast and cJSON differ", "string value");
    if (f->type == cJSON_Number && (memcmp(&f->valuedouble, &c->valuedouble, sizeof(double)) ||
                                    f->valueint != c->valueint))
      fuzz_fail("jsonfast and cJSON differ", "number");
    if (f->valueint != c->valueint)
      fuzz_fail("jsonfast and cJSON differ", "valueint");
    if (!f->child != !c->child)
      fuzz_fail("jsonfast and cJSON differ", "children");
    if (f->child) {
      const cJSON *last = f->child;
      while (last->next)
        last = last->next;
      if (f->child->prev != last)
        fuzz_fail("jsonfast's first child's prev is not the last child", "prev");
      same_tree(f->child, c->child, depth + 1);
    }
    if (depth == 0)
      break; /* the root has no siblings */
  }
}

static void differential(const char *text) {
  kvsim__jsonfast arena = {0};
  const cJSON *f = kvsim__jsonfast_parse(text, &arena);
  if (!f)
    return;
  cJSON *c = cJSON_ParseWithOpts(text, NULL, 1);
  if (!c)
    fuzz_fail("jsonfast takes a text cJSON refuses", text);
  same_tree(f, c, 0);
  cJSON_Delete(c);
  kvsim__jsonfast_free(&arena);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  if (!text)
    return 0;
  differential(text);
  kvsim_kernels_t *k = NULL;
  kvsim_err err = {0};
  if (kvsim_kernels_parse(text, "fuzz.json", &k, &err) == KVSIM_OK) {
    static const double ms[] = {0.5, 1, 3, 100, 5e4}, dims[] = {1, 32, 4096, 1e5};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
      for (size_t j = 0; j < sizeof dims / sizeof *dims; j++) {
        const double g = kvsim_kernels_gemm_us(k, KVSIM_KGEMM_BF16, ms[i], dims[j], dims[sizeof dims / sizeof *dims - 1 - j]);
        check(g, "gemm");
        if (!(g > 0))
          fuzz_fail("a bf16 GEMM of a positive shape is not positive", "gemm");
        for (int d = 1; d < KVSIM_KGEMM_COUNT; d++)
          check(kvsim_kernels_gemm_us(k, (kvsim_kgemm)d, ms[i], dims[j], dims[j]), "gemm dtype");
        for (int p = 0; p < 2; p++)
          check(kvsim_kernels_attn_us(k, p, i & 1, (int)dims[j] % 97 + 1, (int)dims[j] % 9 + 1, 128, ms[i], ms[i] * 7),
                "attention");
        const double ar = kvsim_kernels_allreduce_us(k, 1 + (int)i, ms[i] * dims[j], j & 1);
        if (ar != KVSIM_ENOENT)
          check(ar, "all-reduce");
        const double nc = kvsim_kernels_nccl_us(k, "all_gather", 2 + (int)j, ms[i] * dims[j]);
        if (nc != KVSIM_ENOENT)
          check(nc, "nccl");
        const double moe = kvsim_kernels_moe_us(k, "bfloat16", 2048, 768, 8, 128, 1, 1, ms[i]);
        if (moe != KVSIM_ENOENT)
          check(moe, "moe");
      }
    check(kvsim_kernels_peak_flops(k, KVSIM_KGEMM_BF16), "peak");
    check(kvsim_kernels_stream_bw(k), "stream");
    check(kvsim_kernels_min_kernel_us(k), "min kernel");
    kvsim_kernels_free(k);
  } else if (strchr(err.msg, '\n') || strncmp(err.msg, "fuzz.json", 9) != 0) {
    fuzz_fail("a refused profile's error is not one line naming the file", err.msg);
  }
  free(text);
  return 0;
}
