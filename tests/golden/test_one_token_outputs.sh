#!/usr/bin/env bash
# Requests of one output token have no TPOT (no second token), yet they
# finish. The TPOT of none used to be 0 s, so:
# - the run line printed "TPOT p50 0.0000 s [nan, nan]";
# - summary.json's latency.tpot_s had count 0 beside 0 s statistics, and
#   slo.tpot_p99_s an actual of 0 (met by a figure that does not exist);
# - plan's points read "tpot_p99 0 s -> meets";
# - compare's answer read "TPOT 0 s [nan, nan]" and said the candidate
#   misses at the band's slow edge; compare_sweep.csv and sweep.csv 0 s;
# - the run's REPORT.md "p99 TPOT 0 s [nan, nan]"; compare's REPORT.md a
#   "-" for that TPOT with no note saying what it means.
# Now the statistics are null, the target is met (no request missed it)
# with a reason and no actual, and every table and line says there is no
# TPOT.
set -euo pipefail
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "$1" >&2; [ -z "${2:-}" ] || cat "$2" >&2; exit 1; }
nonan() { ! grep -qi 'nan' "$1" || fail "$2: a nan:" "$1"; }

cat >"$tmp/one.json" <<'JSON'
{ "name": "one", "seed": 1, "model": "llama-3.2-1b", "hardware": { "gpu": "l4" },
  "engine": { "max_model_len": 2048 },
  "workload": { "synthetic": { "requests": 4, "arrival": { "process": "constant", "rate": 1 },
    "prompt_tokens": { "dist": "fixed", "value": 200 },
    "output_tokens": { "dist": "fixed", "value": 1 } } },
  "slo": { "ttft_p99_s": 2, "tpot_p99_s": 0.1 } }
JSON

# 1. The run line and summary.json (with the band's ranges).
timeout 60 "$kvsim" run "$tmp/one.json" --out "$tmp/run" --no-verify-advice >"$tmp/line"
grep -q '(4 finished, 0 rejected)' "$tmp/line" || fail "run: not all 4 finished" "$tmp/line"
grep -q '; TPOT - (no request had a second token); ' "$tmp/line" || fail "run line: no TPOT not said" "$tmp/line"
grep -q 'TTFT p50 [0-9.]* s, p99 [0-9.]* s \[' "$tmp/line" || fail "run line: the TTFT figures went" "$tmp/line"
nonan "$tmp/line" "run line"
python3 - "$tmp/run/summary.json" <<'PY' || fail "summary.json:" "$tmp/run/summary.json"
import json, sys
j = json.load(open(sys.argv[1]))
t = j["latency"]["tpot_s"]
assert t["count"] == 0, t
for k in ("mean", "p50", "p90", "p99", "max"):
    assert k in t and t[k] is None, (k, t)
    assert t[k + "_range"] == [None, None], (k, t)
for m in ("ttft_s", "e2e_s", "queue_s"):
    assert j["latency"][m]["count"] == 4 and j["latency"][m]["p99"] is not None, m
assert j["latency"]["uncertainty"]["tpot_p99_s"] is None, j["latency"]["uncertainty"]
s = j["slo"]["tpot_p99_s"]
assert s == {"target": 0.1, "actual": None, "met": True,
             "reason": "no request had a second token"}, s
assert "reason" not in j["slo"]["ttft_p99_s"] and j["slo"]["ttft_p99_s"]["met"], j["slo"]
assert j["slo"]["attainment"] == 1, j["slo"]
PY

# 2. run --report: no TPOT figure, no nan.
timeout 60 "$kvsim" run "$tmp/one.json" --out "$tmp/rep" --report --quiet --no-verify-advice
md=$tmp/rep/REPORT.md
grep -q '^Meets the SLO: p99 TTFT [0-9.e-]* s \[[^]]*\], no TPOT (no request had a second token);' "$md" ||
  fail "run REPORT.md: the answer" "$md"
grep -q '^| TPOT p50 / p99 s | - | no request had a second token |$' "$md" || fail "run REPORT.md: the table" "$md"
nonan "$md" "run REPORT.md"

# 3. plan: each point meets the TPOT target with no figure and says why.
timeout 120 "$kvsim" plan "$tmp/one.json" --slo tpot_p99=100ms --no-range >"$tmp/plan.out" 2>"$tmp/plan.err"
grep -q 'tpot_p99 - -> meets: no request had a second token$' "$tmp/plan.err" || fail "plan: the points" "$tmp/plan.err"
! grep -q 'tpot_p99 0 s' "$tmp/plan.err" || fail "plan: a TPOT of 0 s" "$tmp/plan.err"
timeout 120 "$kvsim" plan "$tmp/one.json" --slo tpot_p99=100ms --no-range --json --quiet >"$tmp/plan.json"
python3 - "$tmp/plan.json" <<'PY' || fail "plan --json:" "$tmp/plan.json"
import json, sys
j = json.load(open(sys.argv[1]))
pts = j["points"]
assert pts and all(p["meets"] and p["tpot_p99_s"] is None for p in pts), pts
assert all(p["note"] == "no request had a second token" for p in pts), pts
PY

# 4. compare: the answer has no TPOT figure and the candidate holds at
# the band's slow edge; compare_sweep.csv leaves TPOT empty.
cat >"$tmp/study.json" <<JSON
{ "name": "one-study", "scenario": "$tmp/one.json", "slo": { "ttft_p99_s": 2, "tpot_p99_s": 0.1 },
  "target_rate": 2, "candidates": [ { "label": "L4", "set": {} } ] }
JSON
timeout 300 "$kvsim" compare "$tmp/study.json" --out "$tmp/cmp" >"$tmp/cmp.out" 2>/dev/null
grep -q '^1 x (L4) meets 2 req/s at p99 TTFT [0-9.e-]* s \[[^]]*\], no TPOT (no request had a second token) on 1 GPU\.$' "$tmp/cmp.out" ||
  fail "compare: the answer" "$tmp/cmp.out"
grep -q '1 replica = 1 GPU, p99 TTFT [0-9.e-]* s, no TPOT' "$tmp/cmp.out" || fail "compare: the candidate's line" "$tmp/cmp.out"
nonan "$tmp/cmp.out" "compare"
nonan "$tmp/cmp/REPORT.md" "compare REPORT.md"
grep -Eq '^\| L4 \| .* \| [0-9.e-]+ \[[^]]*\] \| - \| [0-9.]+ % \|' "$tmp/cmp/REPORT.md" &&
  grep -q '^-: no request had a second token (1 candidate): no TPOT\.$' "$tmp/cmp/REPORT.md" ||
  fail "compare REPORT.md: no '-' for the TPOT of none, or no note saying so" "$tmp/cmp/REPORT.md"
cs=$tmp/cmp/compare_sweep.csv
[ "$(grep -c '^L4,' "$cs")" -gt 0 ] && ! grep -Evq '^(label,|L4,[0-9.]+,[0-9.]+,,[0-9.]+,[0-9.]*,[0-9.inf]*,,$)' "$cs" ||
  fail "compare_sweep.csv: a TPOT where none exists:" "$cs"
col=$(head -1 "$tmp/cmp/compare.csv" | tr ',' '\n' | grep -n '^tpot_p99_s$' | cut -d: -f1)
[ -z "$(sed -n 2p "$tmp/cmp/compare.csv" | cut -d, -f"$col")" ] || fail "compare.csv: a TPOT" "$tmp/cmp/compare.csv"

# 5. sweep: empty TPOT cells, "-" in REPORT.md with its note.
cat >"$tmp/sweep.json" <<JSON
{ "name": "one-sweep", "scenario": "$tmp/one.json", "grid": { "workload.synthetic.output_tokens.value": [1, 20] } }
JSON
timeout 120 "$kvsim" sweep "$tmp/sweep.json" --out "$tmp/sw" --report --quiet
grep -Eq '^run0000,1,true,4,4,0,[0-9]+,[0-9]+,[0-9.]+,[0-9.]+,,,[0-9.]+,' "$tmp/sw/sweep.csv" ||
  fail "sweep.csv: one-token point" "$tmp/sw/sweep.csv"
grep -Eq '^run0001,20,true,4,4,0,[0-9]+,[0-9]+,[0-9.]+,[0-9.]+,0\.[0-9]+,0\.[0-9]+,' "$tmp/sw/sweep.csv" ||
  fail "sweep.csv: the 20-token point lost its TPOT" "$tmp/sw/sweep.csv"
md=$tmp/sw/REPORT.md
grep -q '^| run0000 | 1 | [0-9.e-]* | - | ' "$md" || fail "sweep REPORT.md: no '-' for the TPOT of none" "$md"
grep -q '^-: no request had a second token (1 point): no TPOT\.$' "$md" || fail "sweep REPORT.md: no note" "$md"
nonan "$md" "sweep REPORT.md"
echo "one output token: no TPOT, said so; the target met with a reason; no 0 s and no nan"
