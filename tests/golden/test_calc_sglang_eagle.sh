#!/usr/bin/env bash
# kvsim calc --engine sglang --speculative-config and kvsim run with the
# sglang profile's engine.speculative: SGLang's EAGLE (server_args.py
# _handle_speculative_decoding and _handle_gpu_memory_settings,
# pool_configurator.py DefaultPoolConfigurator, eagle_worker.py,
# mem_cache/common.py get_alloc_len_per_decode). The golden start-up text
# of Llama-3.1-70B at TP 4 with its EAGLE-3 head, the pool by hand, the
# JSON keys, SGLang's errors, and runs whose accepted tokens move TPOT.
# $1 = kvsim binary, $2 = source dir.
set -u
command -v jq >/dev/null || { echo "SKIP: jq is not installed (scripts/deps.sh --test installs it)"; exit 77; }
kvsim=$1
src=$2
tmp=$(mktemp -d)
scens=$(mktemp -d)
trap 'rm -rf "$tmp" "$scens"' EXIT
# shellcheck source=lib_expect_error.sh
. "$src/tests/golden/lib_expect_error.sh"
# shellcheck source=lib_error_cases.sh
. "$src/tests/golden/lib_error_cases.sh"

e3='{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"}'
c=(calc --engine sglang --model llama-3.1-70b --gpu h100-sxm --tp-size 4 --context-length 32768)
calc() { "$kvsim" "${c[@]}" "$@"; }
out=$(calc --speculative-config "$e3") || fail "calc exited $?"
diff <(echo "$out") "$src/tests/golden/data/calc-sglang-eagle3-llama-3.1-70b.txt" || fail "golden text moved"

# At one fraction the target's pool is the same (the draft is not in its
# budget); the draft pool holds one layer of 2 KV heads x 128 x 2 bytes (K
# and V 512 each) over the same tokens + the padded page, and the head
# weighs what vLLM's does.
on=$(calc --speculative-config "$e3" --mem-fraction-static 0.8 --json) || fail "on exited $?"
off=$(calc --mem-fraction-static 0.8 --json) || fail "off exited $?"
jq -e '.cell_size == 81920 and .spec_kv_bytes_per_token == 1024 and .max_running_requests == 48
       and .speculative_num_steps == 5 and .speculative_eagle_topk == 4
       and .speculative_num_draft_tokens == 8 and .alloc_len_per_decode == 20
       and .draft_k_size_bytes == (.max_total_num_tokens + 1) * 512
       and .draft_v_size_bytes == .draft_k_size_bytes and .spec_weights_bytes == 1003808768
       and .max_total_num_tokens == ((.rest_memory_gib * 1073741824 | trunc) / 81920 | floor)' \
  <<<"$on" >/dev/null || fail "eagle3 plan: $on"
[ "$(jq '.max_total_num_tokens' <<<"$on")" = "$(jq '.max_total_num_tokens' <<<"$off")" ] ||
  fail "the same target pool at one fraction"
# No room left for the draft at 0.99: out of memory, not a fit.
tight=$(calc --speculative-config "$e3" --mem-fraction-static 0.99 --json) || fail "tight exited $?"
jq -e '.fits == false' <<<"$tight" >/dev/null || fail "0.99 leaves no room for the draft: $tight"
jq -e 'has("draft_k_size_bytes") or has("speculative_num_steps") | not' <<<"$off" >/dev/null ||
  fail "no speculative keys without it"
# The automatic fraction reserves 2048 MB more.
auto_on=$(calc --speculative-config "$e3" --json) && auto_off=$(calc --json) || fail "auto exited"
[ "$(jq -n --argjson a "$auto_on" --argjson b "$auto_off" '$a.mem_fraction_static < $b.mem_fraction_static')" = true ] ||
  fail "EAGLE lowers the automatic fraction"
# topk 1: num_draft_tokens = steps + 1, 4 slots a step.
chain=$(calc --speculative-config "$e3" --speculative-num-steps 3 --speculative-eagle-topk 1 \
        --speculative-num-draft-tokens 9 --json) || fail "chain exited $?"
jq -e '.speculative_num_draft_tokens == 4 and .alloc_len_per_decode == 4' <<<"$chain" >/dev/null || fail "chain: $chain"

# calc --scenario's per-token line: the draft has its own pool, so the
# target's 81,920 bytes are not read as padded heads plus a drafter layer.
line=$("$kvsim" calc --scenario "$src/tests/golden/cases/sglang-eagle/scenario.json" | grep '^KV cache per token') ||
  fail "calc --scenario exited"
[ "$line" = "KV cache per token: 81,920 bytes (80 layers x 2 KV heads x 128 head_dim x 2 (K,V) x 2 bytes); block: 81,920 bytes" ] ||
  fail "per-token line: $line"

# Runs: all drafts accepted yields up to num_steps + 1 tokens a step, none
# one; outputs are complete either way.
scen() { # $1 acceptance (JSON), $2 more engine keys
  cat <<JSON
{ "name": "sgl-eagle", "seed": 11, "model": "llama-3.1-70b",
  "hardware": { "gpu": "h100-sxm", "tensor_parallel_size": 4 },
  "engine": { "profile": "sglang", "max_model_len": 4096 $2,
              "speculative": { "method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B",
                               "acceptance_rate": $1 } },
  "workload": { "synthetic": { "requests": 20, "arrival": { "process": "poisson", "rate": 1.0 },
    "prompt_tokens": { "dist": "fixed", "value": 500 }, "output_tokens": { "dist": "fixed", "value": 120 } } } }
JSON
}
for a in 0 1 0.7; do
  scen "$a" "" >"$tmp/s.json"
  "$kvsim" run "$tmp/s.json" --out "$tmp/o-$a" --quiet --check-invariants || fail "run $a exited $?"
  [ "$(awk -F, 'NR > 1 { s += $8 } END { print s }' "$tmp/o-$a/requests.csv")" = 2400 ] || fail "$a: outputs"
done
jq -e '.speculative.num_accepted_tokens == 0' "$tmp/o-0/summary.json" >/dev/null || fail "none accepted"
t0=$(jq '.latency.tpot_s.mean' "$tmp/o-0/summary.json")
t1=$(jq '.latency.tpot_s.mean' "$tmp/o-1/summary.json")
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b < a / 4) }' || fail "TPOT at acceptance 1 ($t1) is not below a quarter of 0's ($t0)"
# With nothing accepted the tree only costs: SGLang's 5 x topk 4 tree
# (8 rows verified, 4 draft rows a depth) takes longer steps than a chain
# of 5 (6 rows, 1 a depth).
scen 0 ', "speculative_num_steps": 5, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 6' >"$tmp/c0.json"
"$kvsim" run "$tmp/c0.json" --out "$tmp/c0" --quiet || fail "chain at 0 exited $?"
tc=$(jq '.latency.tpot_s.mean' "$tmp/c0/summary.json")
awk -v t="$t0" -v c="$tc" 'BEGIN { exit !(t > c) }' || fail "the tree's steps ($t0) are not longer than the chain's ($tc)"
# A chain of 2 (topk 1) verifies 2 drafts a step: at acceptance 1 every
# step accepts both.
scen 1 ', "speculative_num_steps": 2, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 3' >"$tmp/c.json"
"$kvsim" run "$tmp/c.json" --out "$tmp/chain" --quiet --check-invariants || fail "chain run exited $?"
jq -e '.speculative.draft_acceptance_rate == 1' "$tmp/chain/summary.json" >/dev/null || fail "chain: all accepted"

# One rate a depth of the tree (5 depths here) runs.
scen '[0.9, 0.7, 0.5, 0.3, 0.1]' "" >"$tmp/depth.json"
"$kvsim" run "$tmp/depth.json" --out "$tmp/depth" --quiet --check-invariants || fail "per-depth rates exited $?"

# Bad flags and engine keys: one line each naming them, exit 2, nothing
# written (errors/calc_sglang_eagle.cases).
eagle_scen() { # ACCEPTANCE [ENGINE-KEYS [JQ]]: scen's file, jq applied, outside $tmp
  rm -f "$scens/bad.json"
  scen "$1" "${2-}" | jq "${3-.}" >"$scens/bad.json" && printf '%s' "$scens/bad.json"
}
run_error_cases "$src/tests/golden/errors/calc_sglang_eagle.cases"
echo ok
