#!/usr/bin/env bash
# Coverage of the measured means by the band's ranges (kvsim validate
# --band) on the three per-request runs of ../shared/validation/llmservingsim
# (skipped when absent): each run is one item, with its GPU's own kernel
# tables (or those it borrows: the RTX4090 takes the L40S's) and held out
# with the H100's (--perf h100-sxm), whose band is that of the status those
# tables give the GPU (another architecture's: spec-only).
# Kernel tables are measured, not fitted to these runs, so every item is
# held out (in_sample false). Every range holds the nominal simulated
# mean, and the fractions count the items' verdicts.
# Coverage guard: the number of items whose measured mean lies inside the
# range, per metric and per kind of tables, must not fall below what the
# kernel-table step model covered at the commit that introduced it: all
# 3 of 3 for TTFT, TPOT and E2E, with own and with --perf h100-sxm tables
# (measured, not chosen; the MoE run's band, +/-91 % TPOT, is wide).
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure, 77 to skip.
set -euo pipefail
kvsim=$1
src=$2
ls=$src/../shared/validation/llmservingsim
[ -d "$ls" ] || { echo "skip: $ls is absent"; exit 77; }
command -v python3 >/dev/null || { echo "skip: needs python3"; exit 77; }
sc=$src/configs/scenarios
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
runs=(
  "RTX4090/Llama-3.1-8B|llmservingsim-rtx4090-llama-3.1-8b|l40s|kernels-borrowed"
  "RTXPRO6000/Llama-3.1-8B|llmservingsim-rtxpro6000-llama-3.1-8b|rtx-pro-6000|kernels"
  "RTXPRO6000/Qwen3-30B-A3B-Instruct-2507|llmservingsim-rtxpro6000-qwen3-30b-a3b|rtx-pro-6000|kernels"
)
n=0
for r in "${runs[@]}"; do
  IFS='|' read -r d s kern status <<<"$r"
  for perf in own h100-sxm; do
    args=()
    [ "$perf" = own ] || args=(--perf "$perf")
    n=$((n + 1))
    "$kvsim" validate --measured "$ls/$d/vllm/requests.jsonl" "$sc/$s.json" --band --json "${args[@]}" \
      >"$tmp/out.$n.json"
    python3 - "$tmp/out.$n.json" "$perf" "$d" "$kern" "$status" >>"$tmp/verdicts" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); perf, run, kern, status = sys.argv[2:6]
items = j["items"]
assert len(items) == 1, items
it = items[0]
assert it["in_sample"] is False, (run, perf, it["coefficients"])
lo, hi = it["step_time_scales"]
assert lo < 1 < hi, (lo, hi)
if perf == "own":
    assert it["coefficients"].startswith("kernel tables of " + kern) and it["coefficients"].endswith("(%s)" % status), \
        (run, it["coefficients"])
else:
    # Another GPU's tables: held out, with the band of the status they give
    # this GPU (same architecture: kernels-borrowed; another: spec-only).
    assert "held out" in it["coefficients"] and ("kernels-borrowed band" in it["coefficients"] or
                                                 "spec-only band" in it["coefficients"]), it["coefficients"]
for k in ("ttft_mean_s", "tpot_mean_s", "e2e_mean_s"):
    m = it[k]
    a, b = m["range"]
    assert a <= m["simulated"] <= b, (run, k, m)
    assert m["inside"] == (a <= m["measured"] <= b), (run, k, m)
    w = j["coverage"]["held_out"][k.replace("_s", "")]
    assert w["compared"] == 1 and w["inside"] == int(m["inside"]), (run, k, w)
    assert j["coverage"]["in_sample"][k.replace("_s", "")]["compared"] == 0, (run, k, j["coverage"])
    print(perf == "own" and "own" or "perf", k, int(m["inside"]))
print("%-40s %-9s TTFT %s TPOT %s E2E %s" % (run, perf, *("in" if it[k]["inside"] else "OUT"
      for k in ("ttft_mean_s", "tpot_mean_s", "e2e_mean_s"))), file=sys.stderr)
PY
  done
done
# The guard: inside counts per kind of tables and metric (figures above).
fail=0
for kind in own perf; do
  for k in ttft_mean_s tpot_mean_s e2e_mean_s; do
    got=$(awk -v a="$kind" -v b="$k" '$1 == a && $2 == b { s += $3; n++ } END { printf "%d/%d", s, n }' "$tmp/verdicts")
    [ "$got" = 3/3 ] || { echo "FAIL: $kind tables, $k covered $got, was 3/3"; fail=1; }
  done
done
[ $fail = 0 ] && echo "band coverage: ok"
exit $fail
