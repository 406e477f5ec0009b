#!/usr/bin/env bash
# kvsim validate --all: the leave-one-group-out protocol over the dev data
# of ../shared/validation (skipped when absent; under the sanitizer build,
# KVSIM_SANITIZED=1, skipped: it replays every run and row twice).
# Checks the table's shape, not its figures' size: every dev source has
# its groups (the three per-request runs, the silicon groups, the start-up
# logs), each latency group has held-out and shipped errors, the
# per-request runs are held out by GPU (a generation default that never saw
# the GPU), the rows that
# imply more than 80 % of the dense peak or a TPOT below the decode step's
# bytes at 100 % of HBM bandwidth are excluded with the reason, and
# the text and JSON forms agree. --no-refit keeps it to the replays (the
# held-out fits of the silicon groups are what README's table ran). A
# borrowed band is at least what the table's groups held out by GPU miss
# by (its "bands.borrowed"), and a per-request GPU's band is its held-out
# error.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure, 77 to skip.
set -u
kvsim=$1
src=$2
v=$src/../shared/validation
[ -d "$v/llmservingsim" ] && [ -f "$v/aiconfigurator/silicon_vllm.csv" ] || { echo "skip: $v is absent"; exit 77; }
[ "${KVSIM_SANITIZED:-0}" = 1 ] && { echo "skip: long replays under the sanitizer"; exit 77; }
command -v jq >/dev/null || { echo "skip: no jq"; exit 77; }
fail=0
cd "$src" || exit 1 # --all reads ../shared/validation and configs/scenarios from the checkout
j=$("$kvsim" validate --all --no-refit --json) \
  || { echo "FAIL: validate --all --json"; exit 1; }
n() { jq "$1" <<<"$j"; }
[ "$(n '[.groups[] | select(.source == "per-request")] | length')" = 3 ] || { echo "FAIL: 3 per-request groups"; fail=1; }
[ "$(n '[.groups[] | select(.source == "silicon")] | length')" -ge 4 ] || { echo "FAIL: silicon groups"; fail=1; }
[ "$(n '[.groups[] | select(.source == "startup")] | length')" -ge 3 ] || { echo "FAIL: start-up groups"; fail=1; }
# Every latency group has finite held-out and shipped TTFT and TPOT.
bad=$(n '[.groups[] | select(.source != "startup" and .rows > 0)
          | select(.held_out.ttft == null or .held_out.tpot == null or .shipped.tpot == null)] | length')
[ "$bad" = 0 ] || { echo "FAIL: $bad latency groups without errors"; fail=1; }
# The per-request runs: held out by GPU, i.e. a default built from another GPU.
bad=$(n '[.groups[] | select(.source == "per-request") | select(.held_out_from | test("held out") | not)] | length')
[ "$bad" = 0 ] || { echo "FAIL: a per-request run not held out by GPU"; fail=1; }
# Held-out errors are not the in-sample ones for the fitted groups.
same=$(n '[.groups[] | select(.source == "per-request" and .held_out.tpot == .shipped.tpot)] | length')
[ "$same" = 0 ] || { echo "FAIL: $same per-request groups with held-out = shipped"; fail=1; }
# Exclusions name the peak they exceed.
bad=$(n '[.excluded[] | select(.reason | test("dense .* peak|HBM bandwidth|not reproducible") | not)] | length')
[ "$bad" = 0 ] || { echo "FAIL: an exclusion without its reason"; fail=1; }
# A bandwidth exclusion's measured TPOT is below the floor it states.
bad=$(n '[.excluded[] | .reason | capture("TPOT (?<t>[0-9.]+) ms is below the (?<f>[0-9.]+) ms")?
  | select((.t | tonumber) >= (.f | tonumber))] | length')
[ "$bad" = 0 ] || { echo "FAIL: a bandwidth exclusion above its floor"; fail=1; }
# A GPU that borrows its coefficients gets a band at least what the
# table says a borrowed fit misses by (gpu.h KVSIM_GPU_BAND_BORROWED_*).
gpus=$("$kvsim" list gpus --json) || { echo "FAIL: list gpus --json"; exit 1; }
bt=$(n '.bands.borrowed.ttft'); bd=$(n '.bands.borrowed.tpot')
bad=$(jq --argjson t "$bt" --argjson d "$bd" '[.[] | select(.status == "generation-default")
  | select(.band_ttft_rel < $t or .band_tpot_rel < $d) | .name]' <<<"$gpus")
[ "$bad" = "[]" ] || { echo "FAIL: borrowed bands narrower than the table's $bt / $bd: $bad"; fail=1; }
# A fitted GPU's band is its held-out one: for the GPUs whose groups are
# per-request runs (held out by GPU alike with or without the refit) the
# catalog file's band_*_rel is the table's, to its 4 decimals; a change
# to the step model or the defaults fails here until
# scripts/validate_all.sh --write-bands is rerun.
for g in rtx4090 rtx-pro-6000; do
  bad=$(jq --argjson b "$(n ".bands[\"$g\"]")" '.perf
    | select((.band_ttft_rel - $b.ttft | fabs) > 6e-5 or (.band_tpot_rel - $b.tpot | fabs) > 6e-5)
    | "\(.band_ttft_rel) / \(.band_tpot_rel) against \($b.ttft) / \($b.tpot)"' "configs/gpus/$g.json")
  [ -z "$bad" ] || { echo "FAIL: $g's band is not its held-out one: $bad"; fail=1; }
done
# The text form lists the same groups.
t=$("$kvsim" validate --all --no-refit 2>/dev/null) \
  || { echo "FAIL: validate --all"; exit 1; }
grep -q "rtx-pro-6000 *qwen3-30b-a3b" <<<"$t" || { echo "FAIL: text table lacks the MoE run"; fail=1; }
grep -q "memory side" <<<"$t" || { echo "FAIL: text table lacks the start-up logs"; fail=1; }
# Elsewhere (no ../shared beside): one clear error line, exit 2.
d=$(mktemp -d)
msg=$(cd "$d" && "$kvsim" validate --all 2>&1 >/dev/null); rc=$?
rmdir "$d"
[ "$rc" = 2 ] && [ "$(wc -l <<<"$msg")" = 1 ] || { echo "FAIL: no data: exit $rc, '$msg'"; fail=1; }
[ $fail = 0 ] && echo "validate --all: $(n '.groups | length') groups, $(n '.excluded | length') excluded rows"
exit $fail
