#!/usr/bin/env bash
# Coverage of the measured means by the band's ranges (kvsim validate
# --band) on the three per-request runs of ../shared/validation/llmservingsim
# (skipped when absent): each run is one item, labelled in-sample on its own
# GPU's fit and held out with another GPU's coefficients (--perf), whose
# band is a borrowed fit's; every range holds
# the nominal simulated mean, and the fractions count the items' verdicts.
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
  "RTX4090/Llama-3.1-8B|llmservingsim-rtx4090-llama-3.1-8b"
  "RTXPRO6000/Llama-3.1-8B|llmservingsim-rtxpro6000-llama-3.1-8b"
  "RTXPRO6000/Qwen3-30B-A3B-Instruct-2507|llmservingsim-rtxpro6000-qwen3-30b-a3b"
)
for r in "${runs[@]}"; do
  d=${r%%|*} s=${r##*|}
  for perf in own h100-sxm; do
    args=()
    [ "$perf" = own ] || args=(--perf "$perf")
    "$kvsim" validate --measured "$ls/$d/vllm/requests.jsonl" "$sc/$s.json" --band --json "${args[@]}" \
      >"$tmp/out.json"
    python3 - "$tmp/out.json" "$perf" "$d" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); perf, run = sys.argv[2], sys.argv[3]
items = j["items"]
assert len(items) == 1, items
it = items[0]
assert it["in_sample"] == (perf == "own"), (run, perf, it["coefficients"])
lo, hi = it["step_time_scales"]
assert lo < 1 < hi, (lo, hi)
if perf != "own":
    assert "held out" in it["coefficients"] and "borrowed" in it["coefficients"], it["coefficients"]
for k in ("ttft_mean_s", "tpot_mean_s", "e2e_mean_s"):
    m = it[k]
    a, b = m["range"]
    assert a <= m["simulated"] <= b, (run, k, m)
    assert m["inside"] == (a <= m["measured"] <= b), (run, k, m)
    w = j["coverage"]["in_sample" if perf == "own" else "held_out"][k.replace("_s", "")]
    assert w["compared"] == 1 and w["inside"] == int(m["inside"]), (run, k, w)
print("%-40s %-9s TTFT %s TPOT %s E2E %s" % (run, perf, *("in" if it[k]["inside"] else "OUT"
      for k in ("ttft_mean_s", "tpot_mean_s", "e2e_mean_s"))))
PY
  done
done
echo "band coverage: ok"
