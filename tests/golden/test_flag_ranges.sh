#!/usr/bin/env bash
# A flag's default (-1: none, 0: off) is not a value to give: given, an
# out-of-range value is one line on stderr naming the flag and its range,
# exit 2, nothing on stdout. And a command with nothing to report says so.
# The cases are data (errors/flag_ranges.cases); here, their fixtures and
# the in-range values that must still be taken.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib_expect_error.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib_error_cases.sh"

# A start-up table with no row, and one whose every row is skipped.
head='source_url,vllm_version,engine,model,gpu,num_gpus,tp,gpu_mem_util,max_model_len,kv_cache_dtype,block_size,weights_gib,available_kv_gib,kv_cache_tokens,gpu_blocks,max_concurrency,notes'
printf '%s\n' "$head" >"$tmp/header_only.csv"
{
  printf '%s\n' "$head"
  printf 'x,0.9.0,vllm-v1,no-such-model,h100-sxm,1,1,0.9,8192,auto,16,15,60,100000,6000,12.2,\n'
  printf 'y,0.9.0,vllm-v1,llama-3.1-8b,no-such-gpu,1,1,0.9,8192,auto,16,15,60,100000,6000,12.2,\n'
  printf 'z,0.9.0,tgi,llama-3.1-8b,h100-sxm,1,1,0.9,8192,auto,16,15,60,100000,6000,12.2,\n'
} >"$tmp/skipped.csv"
# A shard folder for --merge.
mkdir -p "$tmp/shard0"
run_error_cases "$src/tests/golden/errors/flag_ranges.cases"

# In range, each is taken.
"$kvsim" trace stats "$src/tests/golden/data/ep-lockstep.csv" --prefix-block-size 16 >/dev/null \
  || fail "--prefix-block-size 16 was refused"
"$kvsim" trace stats "$src/tests/golden/data/ep-lockstep.csv" --limit 1 | grep -qx 'requests: 1' \
  || fail "--limit 1 did not keep one request"
"$kvsim" trace stats "$src/tests/golden/data/ep-lockstep.csv" | grep -qx 'requests: 2' \
  || fail "without --limit, not every request was kept"
sw="$src/tests/golden/data/small-sweep.json"
(cd "$tmp" && "$kvsim" sweep "$sw" --quiet --shard 1/2147483647 --out "$tmp/sw" >/dev/null) \
  || fail "--shard 1/2147483647 was refused"
[ -e "$tmp/sw/sweep.shard1.csv" ] || fail "--shard 1/2147483647 wrote no shard table: $(ls "$tmp/sw")"

echo ok
