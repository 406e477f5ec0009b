/* vLLM releases and the memory-sizing rules each one follows. The engine
 * changed how it measures the memory outside PyTorch three times; the
 * rest of the plan (weights, activation peak, pages, block counts) is the
 * same across the modelled releases.
 *
 * - V0 0.6.4 (vllm#9352, "Use torch.cuda.memory_stats() to profile peak
 *   memory usage"): vllm/worker/worker.py determine_num_available_blocks
 *   charges non_torch = (total - free) - torch allocated, i.e. everything
 *   on the device outside PyTorch: the CUDA context, NCCL buffers and
 *   other processes.
 * - V0 0.6.5 to the end of V0 (vllm#10511, polished by #12126): the
 *   increase since a baseline snapshot taken in Worker.init_device after
 *   the context exists but before init_worker_distributed_environment, so
 *   the context is not charged and NCCL buffers are. V0 was removed in
 *   0.11 (the "[V0 Deprecation]" series, e.g. vllm#25033).
 * - V1 0.8.0 to 0.9.1: vllm/v1/worker/gpu_worker.py
 *   determine_available_memory copied the 0.6.4 formula (everything in
 *   use outside PyTorch).
 * - V1 0.9.2 to 0.10.x (vllm#19312): budget = total x util minus the
 *   increases since the init snapshot, taken before NCCL init: NCCL
 *   buffers charged, the context not.
 * - V1 0.11 on (vllm#25359, "ensuring consistent NCCL memory accounting"):
 *   NCCL initialised before the snapshot, so its buffers are not charged.
 * From 0.21 the engine also subtracts its CUDA-graph estimate by default
 * (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, vllm#30515; "default since
 * v0.21.0" in start-up logs); that default is not modelled as a version
 * rule, so 0.20.x is the newest release modelled and 0.21+ is refused with
 * that reason. */
#include "kvsim/plan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "memory/overheads.h"

#define V KVSIM_VLLM_VERSION

typedef struct epoch {
  kvsim_plan_engine engine;
  int from, until; /* [from, until) */
  kvsim__nontorch_rule rule;
  const char *rules;
} epoch;

static const epoch epochs[] = {
    {KVSIM_PLAN_V0, V(0, 6, 4), V(0, 6, 5), KVSIM__NONTORCH_ALL_USED,
     "V0 0.6.4 (vllm#9352): non-torch memory is all device memory outside PyTorch, the CUDA "
     "context and NCCL buffers included"},
    {KVSIM_PLAN_V0, V(0, 6, 5), V(0, 11, 0), KVSIM__NONTORCH_SINCE_SNAPSHOT_NCCL,
     "V0 0.6.5+ (vllm#10511, #12126): non-torch growth since the baseline snapshot; NCCL "
     "buffers charged"},
    {KVSIM_PLAN_V1, V(0, 8, 0), V(0, 9, 2), KVSIM__NONTORCH_ALL_USED,
     "V1 0.8.0-0.9.1: non-torch memory is all device memory outside PyTorch, the CUDA context "
     "and NCCL buffers included"},
    {KVSIM_PLAN_V1, V(0, 9, 2), V(0, 11, 0), KVSIM__NONTORCH_SINCE_SNAPSHOT_NCCL,
     "V1 0.9.2-0.10.x (vllm#19312): non-torch growth since the init snapshot; NCCL buffers "
     "charged"},
    {KVSIM_PLAN_V1, V(0, 11, 0), V(0, 21, 0), KVSIM__NONTORCH_SINCE_SNAPSHOT,
     "V1 0.11+ (vllm#25359): NCCL initialised before the memory snapshot, its buffers not "
     "charged"},
};
#define NEPOCHS (sizeof epochs / sizeof *epochs)

static const epoch *find(kvsim_plan_engine e, int version) {
  for (size_t i = 0; i < NEPOCHS; i++)
    if (epochs[i].engine == e && version >= epochs[i].from && version < epochs[i].until)
      return &epochs[i];
  return NULL;
}

/* One part of X.Y.Z: 1-2 digits. */
static const char *part(const char *s, int *out) {
  if (!isdigit((unsigned char)s[0]))
    return NULL;
  char *end;
  long v = strtol(s, &end, 10);
  if (end - s > 2 || v > 99)
    return NULL;
  *out = (int)v;
  return end;
}

int kvsim_vllm_version_parse(const char *s, int *out) {
  if (!s)
    return KVSIM_EINVAL;
  if (*s == 'v' || *s == 'V')
    s++;
  int x, y, z = 0;
  if (!(s = part(s, &x)) || *s++ != '.' || !(s = part(s, &y)))
    return KVSIM_EINVAL;
  if (*s == '.' && isdigit((unsigned char)s[1]) && !(s = part(s + 1, &z)))
    return KVSIM_EINVAL;
  /* A release suffix: .postN, rcN, .devN, +local, -tag. */
  if (*s && !(*s == '.' || *s == '+' || *s == '-' || isalpha((unsigned char)*s)))
    return KVSIM_EINVAL;
  *out = V(x, y, z);
  return KVSIM_OK;
}

int kvsim_plan_parse_version(const char *s, const char *where, int *out, kvsim_err *err) {
  if (kvsim_vllm_version_parse(s, out) == KVSIM_OK)
    return KVSIM_OK;
  char v1[48], v0[48];
  kvsim_plan_versions_modelled(KVSIM_PLAN_V1, v1, sizeof v1);
  kvsim_plan_versions_modelled(KVSIM_PLAN_V0, v0, sizeof v0);
  return kvsim_err_set(err, KVSIM_EINVAL,
                       "%s: '%s' is not a vLLM release X.Y.Z (modelled: vllm-v1 %s, vllm-v0 %s)",
                       where, s ? s : "", v1, v0);
}

void kvsim_vllm_version_format(int version, char *buf, size_t cap) {
  snprintf(buf, cap, "%d.%d.%d", version / 10000, version / 100 % 100, version % 100);
}

int kvsim_plan_version_newest(kvsim_plan_engine e) {
  /* The last release of the engine's last epoch: x.y.0 of its minor. */
  int newest = 0;
  for (size_t i = 0; i < NEPOCHS; i++)
    if (epochs[i].engine == e && epochs[i].until > newest)
      newest = epochs[i].until;
  int minor = newest / 100 % 100;
  return minor > 0 ? V(newest / 10000, minor - 1, 0) : newest;
}

void kvsim_plan_versions_modelled(kvsim_plan_engine e, char *buf, size_t cap) {
  int lo = 0;
  for (size_t i = 0; i < NEPOCHS; i++)
    if (epochs[i].engine == e && (!lo || epochs[i].from < lo))
      lo = epochs[i].from;
  char a[16];
  kvsim_vllm_version_format(lo, a, sizeof a);
  int hi = kvsim_plan_version_newest(e);
  snprintf(buf, cap, "%s to %d.%d.x", a, hi / 10000, hi / 100 % 100);
}

const char *kvsim_plan_version_rules(kvsim_plan_engine e, int version) {
  const epoch *ep = find(e, version);
  return ep ? ep->rules : NULL;
}

kvsim__nontorch_rule kvsim__plan_nontorch_rule(kvsim_plan_engine e, int version) {
  const epoch *ep = find(e, version ? version : kvsim_plan_version_newest(e));
  /* Unmodelled versions are refused by kvsim_plan_compute before this. */
  return ep ? ep->rule : e == KVSIM_PLAN_V1 ? KVSIM__NONTORCH_SINCE_SNAPSHOT
                                            : KVSIM__NONTORCH_SINCE_SNAPSHOT_NCCL;
}

int kvsim__plan_check_version(kvsim_plan_engine e, int version, kvsim_err *err) {
  if (!version || find(e, version))
    return KVSIM_OK;
  char v[16], range[48];
  kvsim_vllm_version_format(version, v, sizeof v);
  kvsim_plan_versions_modelled(e, range, sizeof range);
  const char *why = "";
  if (e == KVSIM_PLAN_V1 && version >= V(0, 21, 0))
    why = "; 0.21+ also subtracts the CUDA-graph estimate by default: use 0.20.0 with "
          "--estimate-cudagraphs";
  else if (e == KVSIM_PLAN_V0 && version >= V(0, 11, 0))
    why = "; V0 was removed in 0.11: use engine vllm-v1";
  return kvsim_err_set_param(err, KVSIM_EINVAL, KVSIM_PARAM_VLLM_VERSION,
                             "--vllm-version (engine.vllm_version)",
                             "%s is not modelled for %s "
                             "(modelled: %s%s)",
                             v, e == KVSIM_PLAN_V1 ? "vllm-v1" : "vllm-v0", range, why);
}
