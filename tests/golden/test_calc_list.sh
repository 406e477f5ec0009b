#!/usr/bin/env bash
# kvsim list models|gpus [--json]: the catalog, one row per config file.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$kvsim" list models) || fail "list models exited $?"
nmodels=$(ls "$src"/configs/models/*.json | wc -l)
[ "$(($(wc -l <<<"$out") - 1))" -eq "$nmodels" ] || fail "one row per model config ($nmodels): $out"
grep -Eq '^llama-3\.1-8b +meta-llama/Llama-3\.1-8B +32 +8 +128 8\.03B$' <<<"$out" || fail "llama-3.1-8b row: $out"
grep -Eq '^deepseek-v3 +deepseek-ai/DeepSeek-V3 +61 +1 MLA +576 671B \(36\.[0-9]B active\)$' <<<"$out" \
  || fail "deepseek-v3 row (MLA latent 512 + 64 rope): $out"

out=$("$kvsim" list gpus) || fail "list gpus exited $?"
ngpus=$(ls "$src"/configs/gpus/*.json | wc -l)
[ "$(($(wc -l <<<"$out") - 1))" -eq "$ngpus" ] || fail "one row per GPU config ($ngpus): $out"
grep -Eq '^h100-sxm .* 79\.20 GiB +3350 GB/s +989\.4 +1978\.9 +794\.5 kernels$' <<<"$out" || fail "h100-sxm row: $out"
grep -Eq '^a10 .* 125\.0 +- +- kernels-borrowed$' <<<"$out" || fail "a10 row (no FP8, no measured peak, borrowed tables): $out"
grep -Eq '^mi300x .* spec-only$' <<<"$out" || fail "mi300x row (another architecture's tables): $out"
# The perf model is "kernels" exactly for a GPU whose kernel profile is its
# own (configs/kernels/NAME.json); every other GPU borrows one.
for f in "$src"/configs/gpus/*.json; do
  g=$(basename "$f" .json)
  if [ -f "$src/configs/kernels/$g.json" ]; then want=kernels; else want='(kernels-borrowed|spec-only)'; fi
  grep -Eq "^$g .* $want\$" <<<"$out" || fail "$g should be $want: $(grep "^$g " <<<"$out")"
done

if command -v python3 >/dev/null; then
  "$kvsim" list models --json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
r = {x["name"]: x for x in rows}["llama-3.1-8b"]
assert r["hf_id"] == "meta-llama/Llama-3.1-8B" and r["num_layers"] == 32, r
assert r["num_kv_heads"] == 8 and r["head_dim"] == 128 and r["params_total"] == 8030261248, r
assert len(rows) == int(sys.argv[1]), len(rows)' "$nmodels" || fail "list models --json"
  "$kvsim" list gpus --json | python3 -c '
import json, sys
r = {x["name"]: x for x in json.load(sys.stdin)}
assert r["h100-sxm"]["status"] == "kernels" and r["h100-sxm"]["kernels"] == "h100-sxm", r["h100-sxm"]
assert r["l4"]["status"] == "kernels-borrowed" and r["l4"]["kernels"] == "l40s", r["l4"]
assert r["l4"]["band_ttft_rel"] >= r["h100-sxm"]["band_ttft_rel"], r["l4"]
assert r["h100-sxm"]["hbm_bandwidth_GBps"] == 3350 and r["h100-sxm"]["memory_total_bytes"] == 85045477376
assert r["h100-sxm"]["achieved_bf16_tflops"] == 794.5 and r["h100-sxm"]["achieved_fp8_tflops"] == 1402.6 and r["h100-sxm"]["achieved_copy_GBps"] == 2900, r["h100-sxm"]
assert r["a10"]["achieved_bf16_tflops"] == 0, r["a10"]' \
    || fail "list gpus --json"
fi

"$kvsim" list things 2>"$tmp/err" && fail "list things must fail"
grep -q "kvsim list: error: expected 'models', 'gpus' or 'params', got 'things'" "$tmp/err" \
  || fail "bad subject: $(cat "$tmp/err")"
echo "ok"
