#!/usr/bin/env bash
# Runs where no request finished (cut off by output.max_time_s before any
# request is done, or every request rejected) have no latency figures. The
# p99 of nothing used to be 0 s, so:
# - summary.json marked every SLO target met.
# Now the targets are not met, each with a reason.
set -euo pipefail
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "$1" >&2; [ -z "${2:-}" ] || cat "$2" >&2; exit 1; }

# Four requests of 1000 output tokens, cut off at 0.5 s: none finishes.
cat >"$tmp/cut.json" <<'JSON'
{ "name": "cut", "seed": 1, "model": "llama-3.2-1b", "hardware": { "gpu": "l4" },
  "engine": { "max_model_len": 2048 }, "output": { "max_time_s": 0.5 },
  "workload": { "synthetic": { "requests": 4, "arrival": { "process": "constant", "rate": 100 },
    "prompt_tokens": { "dist": "fixed", "value": 200 },
    "output_tokens": { "dist": "fixed", "value": 1000 } } },
  "slo": { "ttft_p99_s": 2, "tpot_p99_s": 0.1, "e2e_p99_s": 30 } }
JSON
# Every prompt longer than max_model_len: all three rejected.
cat >"$tmp/rejected.json" <<'JSON'
{ "name": "rejected", "seed": 1, "model": "llama-3.2-1b", "hardware": { "gpu": "l4" },
  "engine": { "max_model_len": 1024 },
  "workload": { "synthetic": { "requests": 3, "arrival": { "process": "constant", "rate": 1 },
    "prompt_tokens": { "dist": "fixed", "value": 2000 },
    "output_tokens": { "dist": "fixed", "value": 10 } } },
  "slo": { "ttft_p99_s": 2 } }
JSON
run() { timeout 60 "$kvsim" run "$@" --quiet --no-band --no-verify-advice; }

# 1. summary.json: not met, with the reason beside met; the keys kept.
run "$tmp/cut.json" --out "$tmp/cut"
run "$tmp/rejected.json" --out "$tmp/rej"
for d in cut rej; do
  s=$tmp/$d/summary.json
  grep -q '"finished":	0,' "$s" || fail "$d: a request finished, the test is void" "$s"
  sed -n $'/^\t"slo":\t{/,/^\t}/p' "$s" >"$tmp/slo"
  ! grep -q '"met":	true' "$tmp/slo" || fail "$d: a target is met with no request finished:" "$tmp/slo"
  n=$(grep -c '"met":	false,' "$tmp/slo" || true)
  want=$([ $d = cut ] && echo 3 || echo 1)
  [ "$n" = "$want" ] || fail "$d: $n targets not met, want $want:" "$tmp/slo"
  [ "$(grep -c '"reason":	"no request finished"' "$tmp/slo" || true)" = "$want" ] ||
    fail "$d: no reason beside each target:" "$tmp/slo"
  grep -q '"target":	2,' "$tmp/slo" && grep -q '"actual":	0,' "$tmp/slo" ||
    fail "$d: target and actual are not kept:" "$tmp/slo"
done
# A run that served requests has no reason key.
run "$tmp/cut.json" --set output.max_time_s=600 --out "$tmp/all"
grep -q '"finished":	4,' "$tmp/all/summary.json" || fail "uncut: not all 4 finished" "$tmp/all/summary.json"
! grep -q '"reason":' "$tmp/all/summary.json" || fail "uncut: a reason with requests finished" "$tmp/all/summary.json"
grep -q '"met":	true' "$tmp/all/summary.json" || fail "uncut: no target met" "$tmp/all/summary.json"
echo "nothing finished: SLOs not met with a reason"
