#!/usr/bin/env bash
# summary.json's "config" fed back as a scenario reproduces the run: each
# case is run, its config extracted into a scenario beside it, run again,
# and every output compared byte for byte. Cases: golden runs with a trace,
# synthetic traffic, a disaggregated deployment, SGLang (with EAGLE), HF
# Transformers and LoRA, and --set overrides whose values print in
# canonical form ("4k" as 4000, vllm_version "0.11" as "0.11.0").
# Usage: test_config_roundtrip.sh KVSIM SOURCE_DIR
set -euo pipefail
kvsim=$1
src=$2
command -v jq >/dev/null || { echo "test_config_roundtrip: jq is required (scripts/deps.sh --test)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The cases' folders copied, so that both runs read their traces by the same
# relative paths and print the same resolved ones.
cp -r "$src/tests/golden/cases" "$tmp/cases"
fail=0
# roundtrip NAME CASE [--set KEY=VALUE ...]
roundtrip() {
  local name=$1 case=$2
  shift 2
  local dir=$tmp/cases/$case
  "$kvsim" run "$dir/scenario.json" "$@" --out "$tmp/$name.1" --quiet
  jq .config "$tmp/$name.1/summary.json" >"$dir/$name.config.json"
  "$kvsim" run "$dir/$name.config.json" --out "$tmp/$name.2" --quiet
  local n=0
  for f in "$tmp/$name.1"/*; do
    f=$(basename "$f")
    n=$((n + 1))
    cmp -s "$tmp/$name.1/$f" "$tmp/$name.2/$f" || {
      echo "config round trip $name: $f differs"
      diff "$tmp/$name.1/$f" "$tmp/$name.2/$f" | head -10
      fail=1
    }
  done
  [ "$n" -ge 3 ] || { echo "config round trip $name: only $n outputs"; fail=1; }
}
for c in v1-preemption v1-two-replicas disagg-decode-full sglang-retraction sglang-eagle \
         hf-quantized v1-lora-adapters v1-speculative; do
  roundtrip "$c" "$c"
done
roundtrip canonical v1-two-replicas --set engine.max_model_len='"4k"' \
  --set engine.vllm_version='"0.11"' --set hardware.router=least_kv
# The canonical forms themselves.
cfg=$tmp/canonical.1/summary.json
[ "$(jq .config.engine.max_model_len "$cfg")" = 4000 ] || { echo "max_model_len \"4k\" not printed as 4000"; fail=1; }
[ "$(jq -r .config.engine.vllm_version "$cfg")" = 0.11.0 ] || { echo "vllm_version not canonical"; fail=1; }
# The registry's order, not the file's: hardware before engine, output
# before workload (v1-two-replicas gives them in that order too, so check
# a file that does not).
printf '%s\n' '{"workload": {"trace": "trace.csv"}, "engine": {"max_num_seqs": 8, "max_model_len": 2048},' \
  '"model": "llama-3.1-8b", "name": "order"}' >"$tmp/cases/v1-preemption/order.json"
"$kvsim" run "$tmp/cases/v1-preemption/order.json" --out "$tmp/order" --quiet
keys=$(jq -c '.config | [keys_unsorted, (.engine | keys_unsorted)]' "$tmp/order/summary.json")
want='[["name","seed","model","engine","workload"],["max_model_len","max_num_seqs"]]'
[ "$keys" = "$want" ] || { echo "config key order: $keys, expected $want"; fail=1; }
exit $fail
