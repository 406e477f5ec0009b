#!/usr/bin/env bash
# Runs where no request finished (cut off by output.max_time_s before any
# request is done, or every request rejected) have no latency figures. The
# p99 of nothing used to be 0 s, so:
# - summary.json marked every SLO target met;
# - plan and compare's goodput search counted such a point as meeting (a
#   rate so high that nothing finishes answered ">= 2048 x");
# - sweep.csv and the sweep's REPORT.md showed 0 s and counted the point
#   as meeting the SLO;
# - compare_sweep.csv showed 0 s;
# - summary.json's latency statistics and each target's actual were 0;
# - the diagnosis' verified advice compared a p99 of 0 s with the change's
#   ("p99 TTFT 0.000 s -> 0.085 s ... worse").
# Now the targets are not met with a reason, the searches count the point
# as missing, the tables leave the cells empty ("-" in markdown), the
# statistics and actuals are null, and the advice cannot tell.
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
# 400 requests of 1000 + 50 tokens, cut off at 2 s: at a low rate the first
# ones finish, at a high one the batch is so big that none does.
cat >"$tmp/flood.json" <<'JSON'
{ "name": "flood", "seed": 1, "model": "llama-3.2-1b", "hardware": { "gpu": "l4" },
  "engine": { "max_model_len": 2048 }, "output": { "max_time_s": 2 },
  "workload": { "synthetic": { "requests": 400, "arrival": { "process": "constant", "rate": 1 },
    "prompt_tokens": { "dist": "fixed", "value": 1000 },
    "output_tokens": { "dist": "fixed", "value": 50 } } } }
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
  grep -q '"target":	2,' "$tmp/slo" && grep -q '"actual":	null,' "$tmp/slo" ||
    fail "$d: target and actual (null) are not kept:" "$tmp/slo"
  ! grep -q '"actual":	0,' "$tmp/slo" || fail "$d: an actual of 0 s:" "$tmp/slo"
  # Every latency: count 0, its statistics null (the keys kept).
  sed -n $'/^\t"latency":\t{/,/^\t}/p' "$s" >"$tmp/lat"
  [ "$(grep -c '"count":	0,' "$tmp/lat")" = 4 ] || fail "$d: not 4 latencies of count 0:" "$tmp/lat"
  [ "$(grep -Ec '"(mean|p50|p90|p99|max)":	null,?$' "$tmp/lat")" = 20 ] ||
    fail "$d: not every statistic of nothing is null:" "$tmp/lat"
  ! grep -Eq '"(mean|p50|p90|p99|max)":	0,?$' "$tmp/lat" || fail "$d: a statistic of 0 s:" "$tmp/lat"
done
# A run that served requests has no reason key.
run "$tmp/cut.json" --set output.max_time_s=600 --out "$tmp/all"
grep -q '"finished":	4,' "$tmp/all/summary.json" || fail "uncut: not all 4 finished" "$tmp/all/summary.json"
! grep -q '"reason":' "$tmp/all/summary.json" || fail "uncut: a reason with requests finished" "$tmp/all/summary.json"
grep -q '"met":	true' "$tmp/all/summary.json" || fail "uncut: no target met" "$tmp/all/summary.json"

# 2. plan: a point where nothing finished misses. Nothing ever finishes
# here, so no rate meets (it answered ">= 2.048e+05 req/s").
# Exit 1 when nothing meets.
plan() { timeout 120 "$kvsim" plan "$@" --no-range; }
miss() {  # OUT ARGS...: stdout to OUT, stderr to OUT.err
  out=$1; shift
  rc=0; plan "$@" >"$out" 2>"$out.err" || rc=$?
  [ $rc = 1 ] || fail "plan $*: exit $rc, want 1 (none meets):" "$out"
}
miss "$tmp/plan.out" "$tmp/cut.json" --slo ttft_p99=2s
grep -q '^No rate meets the SLO ttft_p99=2s' "$tmp/plan.out" || fail "plan on a run that never finishes:" "$tmp/plan.out"
grep -q 'rate = 100 .* ttft_p99 - -> misses: no request finished$' "$tmp/plan.out.err" ||
  fail "plan: the point does not say it misses because nothing finished:" "$tmp/plan.out.err"
! grep -q -- '-> meets' "$tmp/plan.out.err" || fail "plan: a point meets with nothing finished:" "$tmp/plan.out.err"
miss "$tmp/rep.out" "$tmp/cut.json" --slo ttft_p99=2s --search replicas --quiet
grep -q '^No replicas meets the SLO' "$tmp/rep.out" || fail "plan --search replicas:" "$tmp/rep.out"
miss "$tmp/util.out" "$tmp/cut.json" --slo ttft_p99=2s --search util --quiet
grep -q '^No util meets the SLO' "$tmp/util.out" || fail "plan --search util:" "$tmp/util.out"
miss "$tmp/plan.json" "$tmp/cut.json" --slo ttft_p99=2s --json --quiet
grep -q '"slo_met":	false' "$tmp/plan.json" || fail "plan --json: slo_met" "$tmp/plan.json"
grep -q '"ttft_p99_s":	null,' "$tmp/plan.json" && ! grep -q '"ttft_p99_s":	0,' "$tmp/plan.json" ||
  fail "plan --json: a point's p99 of nothing is not null:" "$tmp/plan.json"
# A rate so high that nothing finishes is the opposite of meeting: the
# answer is a finite rate, not a lower bound at the largest rate tried.
plan "$tmp/flood.json" --slo ttft_p99=10s >"$tmp/flood.out" 2>"$tmp/flood.err"
grep -Eq '^Highest rate meeting ttft_p99=10s: [0-9.]+ req/s' "$tmp/flood.out" ||
  fail "plan on the flood: not a finite rate:" "$tmp/flood.out"
grep -q 'misses: no request finished' "$tmp/flood.err" || fail "plan on the flood: no point where nothing finished" "$tmp/flood.err"

# 3. sweep: empty cells in sweep.csv, "-" in its REPORT.md, and the point
# does not meet the SLO.
cat >"$tmp/sweep.json" <<JSON
{ "name": "cut-sweep", "scenario": "$tmp/cut.json", "grid": { "output.max_time_s": [0.5, 600] } }
JSON
timeout 120 "$kvsim" sweep "$tmp/sweep.json" --out "$tmp/sw" --report --quiet
csv=$tmp/sw/sweep.csv
head -1 "$csv" | grep -q ',finished,rejected,num_gpu_blocks,kv_cache_tokens,ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,e2e_p99_s,requests_per_s,' ||
  fail "sweep.csv: the columns changed" "$csv"
grep -Eq '^run0000,0.5,true,4,0,0,[0-9]+,[0-9]+,,,,,,0,' "$csv" ||
  fail "sweep.csv: the point where nothing finished does not have empty latency cells:" "$csv"
grep -Eq '^run0001,600,true,4,4,0,[0-9]+,[0-9]+,0\.[0-9]+,' "$csv" || fail "sweep.csv: the uncut point lost its figures" "$csv"
md=$tmp/sw/REPORT.md
grep -q '^1 of 2 points meet the SLO; the highest throughput among them is run0001' "$md" ||
  fail "sweep REPORT.md: the answer counts the point where nothing finished:" "$md"
grep -q '^| run0000 | 0.5 | - | - | - | 0 | .* | no: no request finished |$' "$md" ||
  fail "sweep REPORT.md: no '-' for the p99s of nothing (TTFT, TPOT and the E2E target's):" "$md"
grep -q '^-: no request finished (1 point): no latency figures.$' "$md" || fail "sweep REPORT.md: no note" "$md"

# 4. compare: the goodput search counts points where nothing finished as
# missing (a finite goodput, not ">= 2.05e+04"), and compare_sweep.csv
# leaves their p99s empty.
cat >"$tmp/study.json" <<JSON
{ "name": "flood-study", "scenario": "$tmp/flood.json", "slo": { "ttft_p99_s": 10 }, "target_rate": 10,
  "candidates": [ { "label": "L4", "set": {} } ] }
JSON
timeout 300 "$kvsim" compare "$tmp/study.json" --out "$tmp/cmp" --quiet >/dev/null
cc=$tmp/cmp/compare.csv
col=$(head -1 "$cc" | tr ',' '\n' | grep -n '^goodput_lower_bound$' | cut -d: -f1)
[ "$(sed -n 2p "$cc" | cut -d, -f"$col")" = 0 ] || fail "compare.csv: the goodput is a lower bound:" "$cc"
cs=$tmp/cmp/compare_sweep.csv
grep -Eq '^L4,[0-9.]+,,,0\.[0-9]+(,[^,]*)*$' "$cs" || fail "compare_sweep.csv: no empty p99 where nothing finished:" "$cs"
! grep -Eq '^L4,[0-9.]+,0,0,' "$cs" || fail "compare_sweep.csv: a p99 of 0 s:" "$cs"
# 5. Verified advice: every request rejected (no SLO, so no verdict by
# one): max_model_len doubled serves them, but a p99 of nothing is no
# figure to compare with ("worse" before), and none is printed as 0 s.
grep -v '"slo"' "$tmp/rejected.json" | sed 's/"value": 10 } } },/"value": 10 } } } }/' >"$tmp/rej-noslo.json"
timeout 60 "$kvsim" run "$tmp/rej-noslo.json" --out "$tmp/adv" --quiet --no-band
s=$tmp/adv/summary.json
grep -q '"verdict":	"cannot tell",' "$s" || fail "advice: a verdict on a run that finished nothing:" "$s"
grep -q '"verified":	"max_model_len 1024 -> 2048: p99 TTFT - (none finished) -> [0-9.]* s (0.00 -> ' "$s" ||
  fail "advice: the measured line" "$s"
! grep -q '0\.000 s' "$s" || fail "advice: a p99 of 0 s:" "$s"
# With the SLO the change meets it outright: that verdict needs no p99 of
# the run diagnosed.
timeout 60 "$kvsim" run "$tmp/rejected.json" --out "$tmp/adv2" --quiet --no-band
grep -q '"verdict":	"meets the SLO",' "$tmp/adv2/summary.json" || fail "advice with the SLO:" "$tmp/adv2/summary.json"
echo "nothing finished: SLOs not met with a reason, searches miss, tables leave the cells empty, advice cannot tell"
