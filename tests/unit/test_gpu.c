/* GPU loader: the catalog parses, and every number of a GPU file is
 * range-checked where it is read (values a fuzzer found accepted). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kvsim/error.h"
#include "kvsim/gpu.h"

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

Test(gpu_ranges, perf_coefficients_name_key_and_range) {
  char text[512];
  gpu_with("perf", "{\"mfu\": 2}", text, sizeof text);
  kvsim_gpu_t g;
  kvsim_err err = {0};
  int rc = kvsim_gpu_parse(text, "t.json", &g, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "mfu 2 must fail, got %d", rc);
  cr_assert(strstr(err.msg, "perf.mfu: 2 is out of range [0.001, 1]") != NULL, "message: %s",
            err.msg);
  gpu_with("perf", "{\"per_token_us\": 1e300}", text, sizeof text);
  rc = kvsim_gpu_parse(text, "t.json", &g, &err);
  cr_assert_eq(rc, KVSIM_EINVAL, "per_token_us 1e300 must fail, got %d", rc);
  cr_assert(strstr(err.msg, "perf.per_token_us") != NULL, "message: %s", err.msg);
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

Test(gpu_loader, calibration_status_by_what_the_coefficients_rest_on) {
  struct {
    const char *gpu, *status;
  } want[] = {{"h100-sxm", "fitted"}, {"b200", "fitted"}, {"h200", "generation-default"},
              {"l40s", "generation-default"}, {"a100-80g", "spec-only"}, {"mi300x", "spec-only"}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_load(want[i].gpu, &g, &err), KVSIM_OK, "load %s: %s", want[i].gpu, err.msg);
    cr_assert_str_eq(kvsim_cal_status_name(g.perf.status), want[i].status, "%s", want[i].gpu);
  }
  kvsim_gpu_perf_t fitted = {.status = KVSIM_CAL_FITTED, .ttft_rel_sigma = 0.1, .tpot_rel_sigma = 0.06};
  kvsim_gpu_perf_t borrowed = fitted;
  borrowed.status = KVSIM_CAL_GENERATION_DEFAULT;
  double ft, fd, bt, bd;
  kvsim_gpu_band(&fitted, &ft, &fd);
  kvsim_gpu_band(&borrowed, &bt, &bd);
  cr_assert(bt > ft && bd > fd, "a borrowed fit has a wider band (%g > %g, %g > %g)", bt, ft, bd, fd);
  fitted.band_tpot_rel = 0.08;
  kvsim_gpu_band(&fitted, &ft, &fd);
  cr_assert_eq(fd, 0.08, "a measured held-out band is used as is");
  double lo, hi;
  kvsim_gpu_band_scales(&fitted, &lo, &hi);
  cr_assert(fabs(lo - 0.92) < 1e-12 && fabs(hi - 1.08) < 1e-12, "edges at 1 -/+ the TPOT band (%g, %g)", lo, hi);
  /* The prefill share takes the TTFT band, its fast edge held at 0.05. */
  fitted.band_ttft_rel = 0.3;
  kvsim_band_edge_t l, h;
  kvsim_gpu_band_edges(&fitted, &l, &h);
  cr_assert(fabs(l.step - 0.92) < 1e-12 && fabs(h.step - 1.08) < 1e-12, "step edges (%g, %g)", l.step, h.step);
  cr_assert(fabs(l.prefill - 0.7) < 1e-12 && fabs(h.prefill - 1.3) < 1e-12, "prefill edges at 1 -/+ TTFT (%g, %g)",
            l.prefill, h.prefill);
  fitted.band_ttft_rel = 1.2;
  kvsim_gpu_band_edges(&fitted, &l, &h);
  cr_assert(fabs(l.prefill - 0.05) < 1e-12 && fabs(h.prefill - 2.2) < 1e-12, "held at 0.05 (%g, %g)", l.prefill,
            h.prefill);
}

/* Compute capability 12.0 takes the fused-MoE kernel's measured
 * streaming rate as its default moe_efficiency; other classes and a GPU
 * with its own fit keep theirs. */
Test(gpu_loader, sm120_defaults_take_the_fused_moe_streaming_rate) {
  kvsim_gpu_t g5090, b200, pro, h200;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("rtx5090", &g5090, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("b200", &b200, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("rtx-pro-6000", &pro, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("h200", &h200, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_float_eq(g5090.perf.moe_efficiency * g5090.perf.mbu, KVSIM_GPU_SM120_MOE_STREAM, 1e-12,
                     "rtx5090 streams experts at the measured share of its HBM (%g x %g)",
                     g5090.perf.moe_efficiency, g5090.perf.mbu);
  cr_assert_eq(h200.perf.moe_efficiency, 1.0, "hopper keeps 1.0");
  cr_assert_eq(pro.perf.moe_efficiency, 0.7166, "a fitted value is kept (configs/gpus/rtx-pro-6000.json)");
  kvsim_gpu_perf_t p;
  kvsim_gpu_default_perf(b200.generation, &p);
  kvsim_gpu_class_perf(&b200, &p);
  cr_assert_eq(p.moe_efficiency, 1.0, "compute capability 10.0 keeps 1.0");
  kvsim_gpu_default_perf(pro.generation, &p);
  kvsim_gpu_class_perf(&pro, &p);
  cr_assert(p.moe_efficiency < 1.0, "the rtx-pro-6000 held out gets the SM120 default (%g)", p.moe_efficiency);
}

/* A GPU that borrows its coefficients gets a band at least as wide as
 * every fitted GPU's held-out one, and spec-only figures a wider one
 * still: refitting a GPU (new band figures in its file) cannot leave the
 * borrowed default narrower than the evidence. */
Test(gpu_loader, a_borrowed_band_is_at_least_the_widest_fitted_band) {
  static const char *const names[] = {"a10",  "a100-40g", "a100-80g", "b200",   "gb200",
                                      "h100-pcie", "h100-sxm", "h20", "h200", "l4", "l40s",
                                      "mi300x", "mi325x", "rtx-pro-6000", "rtx3090", "rtx4090",
                                      "rtx5090"};
  double fit_t = 0, fit_d = 0, gen_t = 1e9, gen_d = 1e9, spec_t = 1e9, spec_d = 1e9;
  int nfit = 0;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    kvsim_gpu_t g;
    kvsim_err err = {0};
    cr_assert_eq(kvsim_gpu_load(names[i], &g, &err), KVSIM_OK, "load %s: %s", names[i], err.msg);
    double t, d;
    kvsim_gpu_band(&g.perf, &t, &d);
    if (g.perf.status == KVSIM_CAL_FITTED) {
      nfit++;
      fit_t = t > fit_t ? t : fit_t;
      fit_d = d > fit_d ? d : fit_d;
    } else if (g.perf.status == KVSIM_CAL_GENERATION_DEFAULT) {
      gen_t = t < gen_t ? t : gen_t;
      gen_d = d < gen_d ? d : gen_d;
    } else {
      spec_t = t < spec_t ? t : spec_t;
      spec_d = d < spec_d ? d : spec_d;
    }
  }
  cr_assert(nfit >= 2, "the catalog has fitted GPUs (%d)", nfit);
  cr_assert(gen_t >= fit_t && gen_d >= fit_d, "borrowed band %g / %g below the widest fitted %g / %g", gen_t,
            gen_d, fit_t, fit_d);
  cr_assert(spec_t > gen_t && spec_d > gen_d, "spec-only %g / %g not wider than borrowed %g / %g", spec_t, spec_d,
            gen_t, gen_d);
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

/* kvsim validate --perf: a GPU's name gives its own coefficients;
 * default:GEN the generation default a GPU without data gets, with the
 * target's class (SM120's moe_efficiency), as kvsim validate --all holds
 * a GPU out; an unknown generation is an error that lists the known. */
Test(gpu_loader, perf_named_gives_a_gpus_fit_or_a_generation_default) {
  kvsim_gpu_t pro, b200;
  kvsim_err err = {0};
  cr_assert_eq(kvsim_gpu_load("rtx-pro-6000", &pro, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(kvsim_gpu_load("b200", &b200, &err), KVSIM_OK, "%s", err.msg);
  kvsim_gpu_perf_t p, d;
  char label[96];
  cr_assert_eq(kvsim_gpu_perf_named("b200", &pro, &p, label, sizeof label, &err), KVSIM_OK, "%s", err.msg);
  cr_assert_eq(p.mbu, b200.perf.mbu);
  cr_assert_eq(p.status, KVSIM_CAL_FITTED);
  cr_assert_str_eq(label, "b200");

  cr_assert_eq(kvsim_gpu_perf_named("default:Blackwell", &pro, &p, label, sizeof label, &err), KVSIM_OK, "%s",
               err.msg);
  kvsim_gpu_default_perf("blackwell", &d);
  cr_assert_eq(p.mbu, d.mbu, "the generation's default, not the b200 fit");
  cr_assert_eq(p.status, KVSIM_CAL_GENERATION_DEFAULT);
  cr_assert_float_eq(p.moe_efficiency * p.mbu, KVSIM_GPU_SM120_MOE_STREAM, 1e-12, "the target's class applies");
  cr_assert(strstr(label, "blackwell default") != NULL, "%s", label);
  cr_assert_eq(kvsim_gpu_perf_named("default:blackwell", NULL, &p, label, sizeof label, &err), KVSIM_OK);
  cr_assert_eq(p.moe_efficiency, 1.0, "no target, no class");

  cr_assert_eq(kvsim_gpu_perf_named("default:hoper", NULL, &p, label, sizeof label, &err), KVSIM_EINVAL);
  cr_assert(strstr(err.msg, "hoper") && strstr(err.msg, "hopper") && strstr(err.msg, "blackwell"), "%s", err.msg);
  cr_assert_eq(kvsim_gpu_perf_named("default:", NULL, &p, label, sizeof label, &err), KVSIM_EINVAL);
  cr_assert(strstr(err.msg, "hopper") != NULL, "an empty generation lists the known: %s", err.msg);
  cr_assert_lt(kvsim_gpu_perf_named("no-such-gpu", NULL, &p, label, sizeof label, &err), 0);
}
