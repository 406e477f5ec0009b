#!/usr/bin/env bash
# kvsim validate --band (docs/GUIDE.md, "Ranges through the queue"): per measured run or
# silicon row, is the measured mean inside the range of the runs at the
# band's edge step times; the coverage fractions, in-sample and held-out.
set -euo pipefail
kvsim=$1
src=$2
d="$src/tests/golden/fidelity"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band >"$tmp/own.txt" || fail "--measured --band"
grep -q "h100-sxm's own fit (in-sample)" "$tmp/own.txt" || fail "own fit not labelled in-sample: $(cat "$tmp/own.txt")"
grep -Eq '^  in-sample:  TTFT [01]/1 ' "$tmp/own.txt" || fail "no in-sample fraction: $(cat "$tmp/own.txt")"
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band --perf b200 >"$tmp/held.txt"
grep -q "b200's (fitted there), held out from h100-sxm" "$tmp/held.txt" || fail "held-out label: $(cat "$tmp/held.txt")"
grep -Eq '^  held-out :  TTFT [01]/1 ' "$tmp/held.txt" || fail "no held-out fraction"
# default:GEN, the generation default a GPU without data gets (what
# validate --all holds a GPU out with), labelled as such; a wrong
# generation is one line naming the known ones.
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band --perf default:blackwell >"$tmp/gen.txt"
grep -q "blackwell default (b200 fit), held out from h100-sxm: a borrowed fit's band" "$tmp/gen.txt" \
  || fail "generation-default label: $(cat "$tmp/gen.txt")"
cmp -s "$tmp/gen.txt" "$tmp/held.txt" && fail "default:blackwell gave the b200 fit's run"
rc=0; "$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --perf default:hoper 2>"$tmp/err" || rc=$?
[ $rc = 2 ] && grep -q "unknown generation 'hoper'.*hopper" "$tmp/err" || fail "default:hoper: rc $rc, $(cat "$tmp/err")"
rc=0; "$kvsim" validate --all --perf b200 2>"$tmp/err" || rc=$?
[ $rc = 2 ] && grep -q -- '--perf goes with --measured or --silicon' "$tmp/err" || fail "--all --perf: rc $rc"
# Far slower steps: the measured TPOT falls outside every run.
"$kvsim" validate --measured "$d/requests.jsonl" "$d/scenario.json" --band --set perf.step_time_scale=8 >"$tmp/slow.txt"
grep -q 'TPOT mean .*OUTSIDE' "$tmp/slow.txt" || fail "8x slower steps still cover TPOT: $(cat "$tmp/slow.txt")"
"$kvsim" validate --silicon "$d/silicon.csv" --band --json >"$tmp/sil.json" || fail "--silicon --band --json"
grep -q '"mode":[[:space:]]*"band-coverage"' "$tmp/sil.json" || fail "silicon JSON"
grep -q '"e2e_mean_s"' "$tmp/sil.json" && fail "silicon rows have no E2E"
rc=0; "$kvsim" validate --startup "$d/requests.jsonl" --band 2>"$tmp/err" || rc=$?
[ $rc = 2 ] || fail "--startup --band exits $rc, want 2"
grep -q -- '--band goes with --measured or --silicon' "$tmp/err" || fail "error: $(cat "$tmp/err")"
echo "validate --band: ok"
