#!/usr/bin/env bash
# A flag's default (-1: none, 0: off) is not a value to give: given, an
# out-of-range value is one line on stderr naming the flag and its range,
# exit 2, nothing on stdout. And a command with nothing to report says so.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib_expect_error.sh"

# validate --max-error: -1 was taken for "no threshold".
head='source_url,vllm_version,engine,model,gpu,num_gpus,tp,gpu_mem_util,max_model_len,kv_cache_dtype,block_size,weights_gib,available_kv_gib,kv_cache_tokens,gpu_blocks,max_concurrency,notes'
printf '%s\n' "$head" >"$tmp/header_only.csv"
for v in -1 -5; do
  expect_error "^kvsim validate: error: --max-error: $v must be >= 0$" \
    validate --startup "$tmp/header_only.csv" --max-error "$v"
done

# validate --startup with no row to validate: an error (exit 2), with or
# without --max-error, and before any table (once "median absolute error
# nan% exceeds --max-error 1.0%", or exit 0 with "n/a").
for extra in "" "--max-error 1" "--json"; do
  # shellcheck disable=SC2086
  expect_error "^kvsim validate: error: --startup: .*header_only.csv: no row could be validated \(the table has no rows\)$" \
    validate --startup "$tmp/header_only.csv" $extra
done
{
  printf '%s\n' "$head"
  printf 'x,0.9.0,vllm-v1,no-such-model,h100-sxm,1,1,0.9,8192,auto,16,15,60,100000,6000,12.2,\n'
  printf 'y,0.9.0,vllm-v1,llama-3.1-8b,no-such-gpu,1,1,0.9,8192,auto,16,15,60,100000,6000,12.2,\n'
  printf 'z,0.9.0,tgi,llama-3.1-8b,h100-sxm,1,1,0.9,8192,auto,16,15,60,100000,6000,12.2,\n'
} >"$tmp/skipped.csv"
for extra in "" "--max-error 1"; do
  # shellcheck disable=SC2086
  expect_error "^kvsim validate: error: --startup: .*skipped.csv: no row could be validated \(3 skipped\)$" \
    validate --startup "$tmp/skipped.csv" $extra
done

# validate --silicon whose filters leave no row: the same (it printed a
# median of nan% against --max-error).
for extra in "" "--max-error 1"; do
  # shellcheck disable=SC2086
  expect_error "^kvsim validate: error: --silicon: .*silicon.csv: no row could be compared \(0 skipped; 0 failed; check --filter\)$" \
    validate --silicon "$src/tests/golden/fidelity/silicon.csv" --filter system=no_such_system $extra
done

# trace stats --prefix-block-size: 0 was "not counted" and exited 0 (-1 was
# refused).
for v in 0 -1; do
  expect_error "^kvsim trace stats: error: --prefix-block-size: bad value $v \(expected >= 1\)$" \
    trace stats "$src/tests/golden/data/ep-lockstep.csv" --prefix-block-size "$v"
done
"$kvsim" trace stats "$src/tests/golden/data/ep-lockstep.csv" --prefix-block-size 16 >/dev/null \
  || fail "--prefix-block-size 16 was refused"

# trace --limit 0 was "no limit" (every request), which only an absent
# --limit means (-1 was already refused).
expect_error "^kvsim trace stats: error: --limit: bad value 0 \(expected >= 1\)$" \
  trace stats "$src/tests/golden/data/ep-lockstep.csv" --limit 0
expect_error "^kvsim trace convert: error: --limit: bad value 0 \(expected >= 1\)$" \
  trace convert "$src/tests/golden/data/ep-lockstep.csv" --limit 0 --out "$tmp/limit.csv"
expect_error "^kvsim trace stats: error: --limit: bad value 0 \(expected >= 1\)$" \
  trace stats "$src/tests/golden/data/small-synthetic.json" --limit 0
[ ! -e "$tmp/limit.csv" ] || fail "a refused --limit wrote its output"
"$kvsim" trace stats "$src/tests/golden/data/ep-lockstep.csv" --limit 1 | grep -qx 'requests: 1' \
  || fail "--limit 1 did not keep one request"
"$kvsim" trace stats "$src/tests/golden/data/ep-lockstep.csv" | grep -qx 'requests: 2' \
  || fail "without --limit, not every request was kept"
# trace --max-total-tokens 0 was "no clipping" likewise (1 was refused).
expect_error "^kvsim trace stats: error: --max-total-tokens: bad value 0 \(expected >= 2\)$" \
  trace stats "$src/tests/golden/data/ep-lockstep.csv" --max-total-tokens 0
expect_error "^kvsim trace convert: error: --max-total-tokens: bad value 0 \(expected >= 2\)$" \
  trace convert "$src/tests/golden/data/ep-lockstep.csv" --max-total-tokens 0 --out "$tmp/limit.csv"
expect_error "^kvsim trace stats: error: --max-total-tokens: bad value 0 \(expected >= 2\)$" \
  trace stats "$src/tests/golden/data/small-synthetic.json" --max-total-tokens 0
[ ! -e "$tmp/limit.csv" ] || fail "a refused --max-total-tokens wrote its output"

# sweep --shard is read strictly: "0/2/3" once ran as 0/2 (the rest
# ignored), and a valid N beyond int was "not I/N with 0 <= I < N".
sw="$src/tests/golden/data/small-sweep.json"
for v in 0/2/3 "0/2 " " 0/2" +0/2 -1/2 0/ /2 abc 0x1/2; do
  re=$(printf '%s' "$v" | sed 's/[+]/\\&/g')
  expect_error "^kvsim sweep: error: --shard: '$re' is not I/N \(two integers, 0 <= I < N\)$" \
    sweep "$sw" --shard "$v" --out "$tmp/sw"
done
expect_error "^kvsim sweep: error: --shard: '2/2' is not I/N with 0 <= I < N$" sweep "$sw" --shard 2/2 --out "$tmp/sw"
expect_error "^kvsim sweep: error: --shard: '0/0' is not I/N with 0 <= I < N$" sweep "$sw" --shard 0/0 --out "$tmp/sw"
expect_error "^kvsim sweep: error: --shard: '0/9223372036854775807': N is out of range \[1, 2147483647\]$" \
  sweep "$sw" --shard 0/9223372036854775807 --out "$tmp/sw"
expect_error "^kvsim sweep: error: --shard: '99999999999999999999/3': I is out of range \[0, 2147483647\]$" \
  sweep "$sw" --shard 99999999999999999999/3 --out "$tmp/sw"
[ ! -e "$tmp/sw" ] || fail "a refused --shard wrote outputs"
# sweep --merge refused --jobs 2 but took an explicit --jobs 1 (the default).
mkdir -p "$tmp/shard0"
for v in 1 2; do
  expect_error "^kvsim sweep: error: --merge: takes the shards' folders and --out only, not --jobs$" \
    sweep --merge "$tmp/shard0" --jobs $v --out "$tmp/merged"
done
[ ! -e "$tmp/merged" ] || fail "a refused --merge wrote outputs"
(cd "$tmp" && "$kvsim" sweep "$sw" --quiet --shard 1/2147483647 --out "$tmp/sw" >/dev/null) \
  || fail "--shard 1/2147483647 was refused"
[ -e "$tmp/sw/sweep.shard1.csv" ] || fail "--shard 1/2147483647 wrote no shard table: $(ls "$tmp/sw")"

echo ok
