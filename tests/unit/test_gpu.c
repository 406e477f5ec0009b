/* GPU loader: the catalog parses, every number of a GPU file is
 * range-checked where it is read (values a fuzzer found accepted), each
 * GPU names the kernel tables its step times rest on and the band of that
 * status. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"
#include "kvsim/kernels.h"

/* A minimal GPU file with `key` set to `value` (replacing the base field of
 * that name). */
static void gpu_with(const char *key, const char *value, char *out, size_t cap) {
  static const char *const base[][2] = {{"name", "\"t\""},
                                        {"generation", "\"hopper\""},
                                        {"memory_total_bytes", "85045477376"},
                                        {"hbm_bandwidth_GBps", "3350"},
                                        {"bf16_tflops", "989.4"}};
  size_t o = (size_t)snprintf(out, cap, "{\"%s\": %s", key, value);
  for (size_t i = 0; i < sizeof base / sizeof *base; i++)
    if (strcmp(base[i][0], key))
      o += (size_t)snprintf(out + o, cap - o, ", \"%s\": %s", base[i][0], base[i][1]);
  snprintf(out + o, cap - o, "}");
}

Test(gpu_loader, catalog_gpus_parse) {
  static const char *const names[] = {"a10",  "a100-40g", "a100-80g", "b200",   "gb200",
                                      "h100-pcie", "h100-sxm", "h20", "h200", "l4", "l40s",
                                      "mi300x", "mi325x", "rtx-pro-6000", "rtx3090", "rtx4090",
                                      "rtx5090"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_load(names[i], &g, &err), KVSIM_OK, "load %s: %s", names[i], err.msg);
    cr_assert(g.memory_total_bytes > 0 && g.memory_total_bytes <= KVSIM_GPU_MAX_MEMORY_BYTES,
              "%s memory %lld within the bound", names[i], (long long)g.memory_total_bytes);
  }
}

Test(gpu_loader, minimal_file_takes_link_defaults) {
  char text[512];
  gpu_with("name", "\"t\"", text, sizeof text);
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(g.host_link_GBps, 32, "PCIe Gen4 default, got %g", g.host_link_GBps);
  cr_assert_eq(g.gpu_link_GBps, 32, "GPU link defaults to the host link, got %g", g.gpu_link_GBps);
}

Test(gpu_ranges, every_number_is_range_checked) {
  static const struct {
    const char *key, *value, *range;
  } cases[] = {
      {"memory_total_bytes", "1e18", "[1073741824, 4398046511104]"},
      {"memory_total_bytes", "9223372036854775807", "[1073741824, 4398046511104]"},
      {"memory_total_bytes", "0", "[1073741824, 4398046511104]"},
      {"hbm_bandwidth_GBps", "1e-300", "[1, 100000]"},
      {"hbm_bandwidth_GBps", "1e300", "[1, 100000]"},
      {"bf16_tflops", "-5", "[0.1, 1e+06]"},
      {"fp8_tflops", "1e300", "[0, 1e+06]"},
      {"host_link_GBps", "-1", "[0, 100000]"},
      {"gpu_link_GBps", "1e20", "[0, 100000]"},
      {"host_link_latency_us", "1e30", "[0, 1e+06]"},
      {"gpu_link_latency_us", "-3", "[0, 1e+06]"},
      {"tdp_w", "1e12", "[0, 100000]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512];
    gpu_with(cases[i].key, cases[i].value, text, sizeof text);
    kvsim_gpu_t g;
    kvsim_err err = {0};
    int rc = kvsim_gpu_parse(text, "t.json", &g, &err);
    cr_assert_eq(rc, KVSIM_EINVAL, "%s = %s must fail, got %d", cases[i].key, cases[i].value, rc);
    cr_assert(strstr(err.msg, cases[i].key) != NULL, "names %s: %s", cases[i].key, err.msg);
    cr_assert(strstr(err.msg, cases[i].range) != NULL, "%s gives the range %s: %s", cases[i].key,
              cases[i].range, err.msg);
    cr_assert(strstr(err.msg, "t.json") != NULL, "names the file: %s", err.msg);
  }
}

/* A "perf" object names a kernel profile, a status and the host time;
 * anything else is an error naming the file and the key. */
Test(gpu_ranges, perf_parse_errors_name_file_and_key) {
  static const struct {
    const char *perf, *msg;
  } bad[] = {
      {"{\"mfu\": 0.5}", "t.json: perf"},
      {"{\"kernels\": \"no-such-gpu\"}", "perf.kernels: 'no-such-gpu' is not a kernel profile"},
      {"{\"kernels\": \"h100-sxm\", \"collectives\": \"l4\"}", "perf.collectives: 'l4' is not a kernel profile"},
      {"{\"kernels\": \"h100-sxm\", \"status\": \"fitted\"}", "perf.status: 'fitted'"},
      {"{\"kernels\": \"h100-sxm\", \"status\": \"generation-default\"}", "perf.status: 'generation-default'"},
      {"{\"kernels\": \"h100-sxm\", \"host_us\": -5}", "perf.host_us"},
      {"{\"kernels\": \"h100-sxm\", \"host_per_seq_us\": 1e300}", "perf.host_per_seq_us"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[512];
    gpu_with("perf", bad[i].perf, text, sizeof text);
    kvsim_gpu_t g;
    kvsim_err err = {0};
    int rc = kvsim_gpu_parse(text, "t.json", &g, &err);
    cr_assert_eq(rc, KVSIM_EINVAL, "%s must fail, got %d", bad[i].perf, rc);
    cr_assert(strstr(err.msg, bad[i].msg) != NULL, "%s: message %s", bad[i].perf, err.msg);
    cr_assert(strstr(err.msg, "t.json") != NULL, "names the file: %s", err.msg);
  }
  /* The unknown key is named. */
  char text[512];
  gpu_with("perf", "{\"mfu\": 0.5}", text, sizeof text);
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_EINVAL, "unknown key");
  cr_assert(strstr(err.msg, "mfu") != NULL, "names the key: %s", err.msg);
  /* A valid perf: another profile, its status inferred, host time read. */
  gpu_with("perf", "{\"kernels\": \"h200\", \"host_us\": 900, \"host_per_seq_us\": 12}", text, sizeof text);
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_str_eq(g.perf.kernels, "h200", "kernels read");
  cr_assert_eq(g.perf.status, KVSIM_CAL_KERNELS_BORROWED, "another GPU's tables: borrowed");
  cr_assert(g.perf.host_us == 900 && g.perf.host_per_seq_us == 12, "host time read");
  cr_assert(strstr(g.perf.source, "h200") != NULL, "source names the tables: %s", g.perf.source);
  /* Without a perf the host time is the engine's (< 0). */
  gpu_with("name", "\"t\"", text, sizeof text);
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert(g.perf.host_us < 0 && g.perf.host_per_seq_us < 0, "the engine's host time");
}

/* A hopper GPU file with spec 1,000 TFLOPS / 2,000 GB/s and `extra` keys. */
static int parse_with(const char *extra, kvsim_gpu_t *g, kvsim_err *err) {
  char text[512];
  snprintf(text, sizeof text,
           "{\"name\": \"t\", \"generation\": \"hopper\", \"memory_total_bytes\": 85045477376, "
           "\"hbm_bandwidth_GBps\": 2000, \"bf16_tflops\": 1000%s%s}",
           *extra ? ", " : "", extra);
  return kvsim_gpu_parse(text, "t.json", g, err);
}

/* Measured peaks (the ratio a borrowed table is carried over by, perf.c)
 * are a share of their spec figure: one far from it is refused. */
Test(gpu_ranges, a_measured_peak_far_from_its_spec_is_refused_with_key_and_file) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(parse_with("\"achieved_bf16_tflops\": 1300", &g, &err), KVSIM_EINVAL, "above 125 %%");
  cr_assert(strstr(err.msg, "t.json: achieved_bf16_tflops") && strstr(err.msg, "[50, 1250]"), "%s", err.msg);
  cr_assert_eq(parse_with("\"achieved_bf16_tflops\": 1e-300", &g, &err), KVSIM_EINVAL, "a denormal peak");
  cr_assert(strstr(err.msg, "out of range [50, 1250]") != NULL, "%s", err.msg);
  cr_assert_eq(parse_with("\"achieved_copy_GBps\": 0", &g, &err), KVSIM_OK, "0 = not measured: %s", err.msg);
  cr_assert_eq(parse_with("\"achieved_copy_GBps\": -1", &g, &err), KVSIM_EINVAL, "negative");
  cr_assert(strstr(err.msg, "achieved_copy_GBps") != NULL, "%s", err.msg);
  cr_assert_eq(parse_with("\"achieved_fp8_tflops\": 700", &g, &err), KVSIM_EINVAL, "no fp8_tflops");
  cr_assert(strstr(err.msg, "fp8_tflops is 0") != NULL, "%s", err.msg);
  cr_assert_eq(parse_with("\"fp8_tflops\": 2000, \"achieved_fp8_tflops\": 1400", &g, &err), KVSIM_OK, "%s",
               err.msg);
  cr_assert(g.achieved_fp8_tflops == 1400, "read: %g", g.achieved_fp8_tflops);
}

Test(gpu_loader, links_default_to_the_spec_link_and_link_kind_is_checked) {
  char text[512];
  gpu_with("gpu_link_GBps", "450", text, sizeof text);
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(g.link_kind, KVSIM_LINK_NVLINK, "a GPU link faster than the host link is NVLink");
  cr_assert_eq(g.allreduce_busbw_GBps, 450, "all-reduce bandwidth defaults to the spec link");
  gpu_with("name", "\"t\"", text, sizeof text);
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(g.link_kind, KVSIM_LINK_PCIE_P2P, "no GPU link: PCIe peer-to-peer");
  gpu_with("link_kind", "\"pcie_host\"", text, sizeof text);
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(g.link_kind, KVSIM_LINK_PCIE_HOST, "pcie_host read");
  gpu_with("link_kind", "\"infiniband\"", text, sizeof text);
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_EINVAL, "unknown link kind refused");
  cr_assert(strstr(err.msg, "link_kind") != NULL, "names the key: %s", err.msg);
}

Test(gpu_loader, catalog_status_is_what_its_step_times_rest_on) {
  static const struct {
    const char *gpu, *status;
  } want[] = {{"a100-80g", "kernels"},         {"h100-sxm", "kernels"},         {"h200", "kernels"},
              {"b200", "kernels"},             {"l40s", "kernels"},             {"rtx-pro-6000", "kernels"},
              {"rtx4090", "kernels-borrowed"}, {"l4", "kernels-borrowed"},      {"a10", "kernels-borrowed"},
              {"gb200", "kernels-borrowed"},   {"h100-pcie", "kernels-borrowed"}, {"h20", "kernels-borrowed"},
              {"rtx5090", "kernels-borrowed"}, {"a100-40g", "kernels-borrowed"}, {"mi300x", "spec-only"},
              {"mi325x", "spec-only"}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_load(want[i].gpu, &g, &err), KVSIM_OK, "%s: %s", want[i].gpu, err.msg);
    cr_assert_str_eq(kvsim_cal_status_name(g.perf.status), want[i].status, "%s", want[i].gpu);
    /* Its own tables exactly when the profile is named after it. */
    cr_assert_eq(!strcmp(g.perf.kernels, g.name), g.perf.status == KVSIM_CAL_KERNELS, "%s: kernels '%s'",
                 want[i].gpu, g.perf.kernels);
    /* The profile it names loads, and was measured on the GPU it names. */
    const kvsim_kernels_t *k;
    cr_assert_eq(kvsim_kernels_get(g.perf.kernels, &k, &err), KVSIM_OK, "%s: profile %s: %s", want[i].gpu,
                 g.perf.kernels, err.msg);
    cr_assert_str_eq(kvsim_kernels_gpu(k), g.perf.kernels, "%s: profile of its GPU", want[i].gpu);
    if (g.perf.collectives[0])
      cr_assert_eq(kvsim_kernels_get(g.perf.collectives, &k, &err), KVSIM_OK, "%s: collectives %s: %s",
                   want[i].gpu, g.perf.collectives, err.msg);
    cr_assert(g.perf.source[0] != '\0', "%s: a source", want[i].gpu);
  }
  /* Parse and name round trip; an unknown status is refused. */
  static const kvsim_cal_status all[] = {KVSIM_CAL_KERNELS, KVSIM_CAL_KERNELS_BORROWED, KVSIM_CAL_SPEC_ONLY};
  for (size_t i = 0; i < 3; i++) {
    kvsim_cal_status st;
    cr_assert_eq(kvsim_cal_status_parse(kvsim_cal_status_name(all[i]), &st), 0, "parse %d", (int)all[i]);
    cr_assert_eq(st, all[i], "round trip");
  }
  kvsim_cal_status st;
  cr_assert_eq(kvsim_cal_status_parse("fitted", &st), -1, "removed status refused");
}

Test(gpu_loader, a_gpu_file_without_perf_borrows_by_compute_capability) {
  static const struct {
    const char *cc, *kernels, *status;
  } want[] = {{"8.0", "a100-80g", "kernels-borrowed"}, {"8.6", "a100-80g", "kernels-borrowed"},
              {"8.9", "l40s", "kernels-borrowed"},     {"9.0", "h100-sxm", "kernels-borrowed"},
              {"10.0", "b200", "kernels-borrowed"},    {"12.0", "rtx-pro-6000", "kernels-borrowed"},
              {"0", "h100-sxm", "spec-only"},          {"7.5", "h100-sxm", "spec-only"}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    char text[512];
    gpu_with("compute_capability", want[i].cc, text, sizeof text);
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_OK, "parse: %s", err.msg);
    cr_assert_str_eq(g.perf.kernels, want[i].kernels, "cc %s", want[i].cc);
    cr_assert_str_eq(kvsim_cal_status_name(g.perf.status), want[i].status, "cc %s", want[i].cc);
  }
  /* A GPU named after a profile uses its own tables. */
  char text[512];
  gpu_with("name", "\"h100-sxm\"", text, sizeof text);
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_parse(text, "t.json", &g, &err), KVSIM_OK, "parse: %s", err.msg);
  cr_assert_eq(g.perf.status, KVSIM_CAL_KERNELS, "own tables");
  /* PCIe cards take a PCIe GPU's collectives, by PCIe generation. */
  cr_assert_eq(kvsim_gpu_load("l4", &g, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_str_eq(g.perf.collectives, "l40s", "l4: Gen4 PCIe collectives");
  cr_assert_eq(kvsim_gpu_load("rtx5090", &g, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_str_eq(g.perf.collectives, "rtx-pro-6000", "rtx5090: Gen5 PCIe collectives");
  cr_assert_eq(kvsim_gpu_load("h20", &g, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_str_eq(g.perf.collectives, "", "NVLink: the donor's own");
}

Test(gpu_loader, the_band_of_each_status_is_its_constant) {
  static const struct {
    kvsim_cal_status st;
    double ttft, tpot;
  } want[] = {{KVSIM_CAL_KERNELS, KVSIM_GPU_BAND_KERNELS_TTFT, KVSIM_GPU_BAND_KERNELS_TPOT},
              {KVSIM_CAL_KERNELS_BORROWED, KVSIM_GPU_BAND_BORROWED_TTFT, KVSIM_GPU_BAND_BORROWED_TPOT},
              {KVSIM_CAL_SPEC_ONLY, KVSIM_GPU_BAND_SPEC_TTFT, KVSIM_GPU_BAND_SPEC_TPOT}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_gpu_perf_t p;
    memset(&p, 0, sizeof p);
    p.status = want[i].st;
    double t, d;
    kvsim_gpu_band(&p, &t, &d);
    cr_assert(t == want[i].ttft && d == want[i].tpot, "%s: %g / %g", kvsim_cal_status_name(p.status), t, d);
    kvsim_gpu_band_moe(&p, false, &t, &d);
    cr_assert(t == want[i].ttft && d == want[i].tpot, "dense: the status's band");
    double mt, md;
    kvsim_gpu_band_moe(&p, true, &mt, &md);
    cr_assert(mt >= t && md >= d, "%s: MoE %g / %g at least the dense band", kvsim_cal_status_name(p.status), mt, md);
    cr_assert(mt >= KVSIM_GPU_BAND_MOE_TTFT && md >= KVSIM_GPU_BAND_MOE_TPOT, "at least the MoE figures");
    /* Edges: step by the TPOT half-width, prefill by the TTFT one. */
    kvsim_band_edge_t lo, hi;
    kvsim_gpu_band_edges(&p, &lo, &hi);
    cr_assert_float_eq(lo.step, 1 - d, 1e-12, "low step edge");
    cr_assert_float_eq(hi.step, 1 + d, 1e-12, "high step edge");
    cr_assert_float_eq(lo.prefill, 1 - t, 1e-12, "low prefill edge");
    cr_assert_float_eq(hi.prefill, 1 + t, 1e-12, "high prefill edge");
    double slo, shi;
    kvsim_gpu_band_scales(&p, &slo, &shi);
    cr_assert(slo == lo.step && shi == hi.step, "scales are the step edges");
    kvsim_gpu_band_edges_moe(&p, true, &lo, &hi);
    cr_assert_float_eq(lo.step, fmax(1 - md, 0.05), 1e-12, "MoE low edge held at >= 0.05 (%g)", lo.step);
    cr_assert_float_eq(hi.step, 1 + md, 1e-12, "MoE high edge");
    cr_assert(lo.step >= 0.05 && lo.prefill >= 0.05, "low edges never below 0.05");
  }
  /* The bands widen (or stay) as what the times rest on weakens. */
  cr_assert(KVSIM_GPU_BAND_BORROWED_TTFT >= KVSIM_GPU_BAND_KERNELS_TTFT &&
                KVSIM_GPU_BAND_SPEC_TTFT >= KVSIM_GPU_BAND_BORROWED_TTFT,
            "TTFT bands ordered");
  cr_assert(KVSIM_GPU_BAND_BORROWED_TPOT >= KVSIM_GPU_BAND_KERNELS_TPOT &&
                KVSIM_GPU_BAND_SPEC_TPOT >= KVSIM_GPU_BAND_BORROWED_TPOT,
            "TPOT bands ordered");
}

Test(gpu_loader, use_kernels_switches_the_profile_and_the_status) {
  kvsim_gpu_t g;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("h100-sxm", &g, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_use_kernels(&g, "h200", &err), KVSIM_OK, "%s", err.msg);
  cr_assert_str_eq(g.perf.kernels, "h200", "switched");
  cr_assert_eq(g.perf.status, KVSIM_CAL_KERNELS_BORROWED, "borrowed");
  cr_assert(strstr(g.perf.source, "held out") != NULL, "source says so: %s", g.perf.source);
  cr_assert_eq(kvsim_gpu_use_kernels(&g, "h100-sxm", &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(g.perf.status, KVSIM_CAL_KERNELS, "its own again");
  cr_assert_eq(kvsim_gpu_use_kernels(&g, "rtx4090", &err), KVSIM_ENOENT, "a GPU without a profile");
  cr_assert(strstr(err.msg, "rtx4090") != NULL, "named: %s", err.msg);
  cr_assert_str_eq(g.perf.kernels, "h100-sxm", "unchanged on error");
}

/* Every catalog GPU carries measured (or explicitly borrowed) collective
 * figures with their source, and they order as the published nccl-tests
 * results do: every PCIe class has less all-reduce bus bandwidth and a
 * longer small-message time than every NVLink / xGMI class, and a GPU's
 * measured bus bandwidth does not exceed what its spec link can carry in
 * a ring (2x the one-direction link: NVLS in-switch reduction tops out at
 * ~480 GB/s busbw on 450 GB/s NVLink 4). */
Test(gpu_loader, catalog_links_are_sourced_and_pcie_is_slower_than_nvlink) {
  static const char *const names[] = {"a10",  "a100-40g", "a100-80g", "b200",   "gb200",
                                      "h100-pcie", "h100-sxm", "h20", "h200", "l4", "l40s",
                                      "mi300x", "mi325x", "rtx-pro-6000", "rtx3090", "rtx4090",
                                      "rtx5090"};
  double pcie_bw_max = 0, pcie_lat_min = 1e9, fast_bw_min = 1e9, fast_lat_max = 0;
  int npcie = 0, nfast = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_load(names[i], &g, &err), KVSIM_OK, "load %s: %s", names[i], err.msg);
    cr_assert(strlen(g.link_source) > 40, "%s: link_source names its measurement", names[i]);
    cr_assert(g.allreduce_busbw_GBps >= 5 && g.allreduce_busbw_GBps <= 2 * g.gpu_link_GBps,
              "%s: busbw %g GB/s within [5, 2 x gpu link %g]", names[i], g.allreduce_busbw_GBps,
              g.gpu_link_GBps);
    cr_assert(g.allreduce_latency_us >= 2 && g.allreduce_latency_us <= 100,
              "%s: small-message all-reduce %g us within [2, 100]", names[i], g.allreduce_latency_us);
    bool pcie = g.link_kind == KVSIM_LINK_PCIE_P2P || g.link_kind == KVSIM_LINK_PCIE_HOST;
    /* The catalog's kind agrees with its spec link: NVLink/xGMI parts have
     * a GPU link faster than the host link, PCIe parts do not. */
    cr_assert_eq(pcie, !(g.gpu_link_GBps > g.host_link_GBps), "%s: link_kind %s vs gpu link %g",
                 names[i], kvsim_link_kind_name(g.link_kind), g.gpu_link_GBps);
    if (pcie) {
      npcie++;
      pcie_bw_max = g.allreduce_busbw_GBps > pcie_bw_max ? g.allreduce_busbw_GBps : pcie_bw_max;
      pcie_lat_min = g.allreduce_latency_us < pcie_lat_min ? g.allreduce_latency_us : pcie_lat_min;
    } else {
      nfast++;
      fast_bw_min = g.allreduce_busbw_GBps < fast_bw_min ? g.allreduce_busbw_GBps : fast_bw_min;
      fast_lat_max = g.allreduce_latency_us > fast_lat_max ? g.allreduce_latency_us : fast_lat_max;
    }
    /* GeForce parts: the driver disables peer-to-peer. */
    if (!strncmp(g.name, "rtx", 3) && strcmp(g.name, "rtx-pro-6000"))
      cr_assert_eq(g.link_kind, KVSIM_LINK_PCIE_HOST, "%s: GeForce goes through host memory", g.name);
  }
  cr_assert(npcie >= 8 && nfast >= 8, "both classes present: %d PCIe, %d NVLink/xGMI", npcie, nfast);
  cr_assert(pcie_bw_max * 4 < fast_bw_min, "PCIe busbw (max %g) well below NVLink/xGMI (min %g)",
            pcie_bw_max, fast_bw_min);
  cr_assert(pcie_lat_min > fast_lat_max, "PCIe small-message time (min %g us) above NVLink/xGMI (max %g us)",
            pcie_lat_min, fast_lat_max);
}
