#!/usr/bin/env bash
# kvsim calc --speculative-config and kvsim run with engine.speculative:
# vLLM's speculative decoding (vllm/config/speculative.py, the drafter in
# gpu_model_runner.py load_model and get_kv_cache_spec, the scheduler's
# lookahead slots). The golden text of Llama-3.1-70B at TP 4 with its
# EAGLE-3 head, the head's bytes by hand, the pool they take, the JSON
# keys, the errors, and runs whose accepted tokens move TPOT.
# $1 = kvsim binary, $2 = source dir.
set -u
command -v jq >/dev/null || { echo "SKIP: jq is not installed (scripts/deps.sh --test installs it)"; exit 77; }
kvsim=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

e3='{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B","num_speculative_tokens":3}'
out=$("$kvsim" calc --model llama-3.1-70b --gpu h100-sxm --tensor-parallel-size 4 --max-model-len 32768 \
      --speculative-config "$e3") || fail "calc exited $?"
diff <(echo "$out") "$src/tests/golden/data/calc-vllm-spec-eagle3-llama-3.1-70b.txt" || fail "golden text moved"

# The head at TP 4: (16384 x 2560 qkv + 2048 x 8192 o + 3 x 8192 x 7168 MLP
# + 4 x 8192 norms + 3 x 8192 x 8192 fc + 8000 x 8192 lm_head) x 2 bytes
# + 32000 x 8 (d2t) = 1,003,808,768; one layer of 2 KV heads x 128 x 2 x 2.
on=$("$kvsim" calc --model llama-3.1-70b --tensor-parallel-size 4 --speculative-config "$e3" --json) || fail "on exited $?"
off=$("$kvsim" calc --model llama-3.1-70b --tensor-parallel-size 4 --json) || fail "off exited $?"
jq -e '.spec_weights_bytes == 1003808768 and .spec_kv_bytes_per_token == 1024 and .spec_draft_layers == 1
       and .num_lookahead_tokens == 3 and .speculative_method == "eagle3" and .block_bytes == 16 * 82944' \
  <<<"$on" >/dev/null || fail "eagle3 plan: $on"
[ "$(jq -n --argjson a "$off" --argjson b "$on" '$a.available_kv_bytes - $b.available_kv_bytes')" = 1003808768 ] ||
  fail "the KV budget shrinks by the head"
jq -e 'has("spec_weights_bytes") | not' <<<"$off" >/dev/null || fail "no speculative keys without it"
ng=$("$kvsim" calc --speculative-config '{"method":"ngram","num_speculative_tokens":4}' --json) || fail "ngram exited $?"
jq -e '.spec_weights_bytes == 0 and .num_lookahead_tokens == 0' <<<"$ng" >/dev/null || fail "ngram: $ng"

for bad in '{"method":"eagle3","num_speculative_tokens":3}' '{"method":"mtp"}' '{"method":"medusa","model":"x"}' \
           '{"method":"ngram","num_speculative_tokens":3,"acceptance_rate":0.7}' '{"model":"llama-3.2-1b"}' \
           '{"model":"qwen2.5-7b","num_speculative_tokens":2}' 'not json'; do
  err=$("$kvsim" calc --speculative-config "$bad" 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$bad: exit $rc"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$bad: one line: $err"
done
err=$("$kvsim" calc --engine sglang --speculative-config "$e3" 2>&1 >/dev/null); rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l <<<"$err")" -eq 1 ] || fail "sglang refused in one line: $rc $err"

# Runs: all drafts accepted yields about 1 + k tokens per step, none about
# one; outputs are complete either way, and the summary counts the drafts.
scen() { # $1 acceptance (JSON)
  cat <<JSON
{ "name": "spec", "seed": 11, "model": "llama-3.1-70b",
  "hardware": { "gpu": "h100-sxm", "tensor_parallel_size": 4 },
  "engine": { "profile": "vllm-v1", "max_model_len": 4096,
              "speculative": { "method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.3-Instruct-70B",
                               "num_speculative_tokens": 3, "acceptance_rate": $1 } },
  "workload": { "synthetic": { "requests": 20, "arrival": { "process": "poisson", "rate": 1.0 },
    "prompt_tokens": { "dist": "fixed", "value": 500 }, "output_tokens": { "dist": "fixed", "value": 120 } } } }
JSON
}
for a in 0 1 0.7 '[0.9,0.6,0.3]'; do
  scen "$a" >"$tmp/s.json"
  "$kvsim" run "$tmp/s.json" --out "$tmp/o-$a" --quiet --check-invariants || fail "run $a exited $?"
  jq -e '.speculative.num_speculative_tokens == 3' "$tmp/o-$a/summary.json" >/dev/null || fail "summary $a"
  [ "$(awk -F, 'NR > 1 { s += $8 } END { print s }' "$tmp/o-$a/requests.csv")" = 2400 ] || fail "$a: outputs"
done
jq -e '.speculative.num_accepted_tokens == 0' "$tmp/o-0/summary.json" >/dev/null || fail "none accepted"
jq -e '.speculative.draft_acceptance_rate == 1' "$tmp/o-1/summary.json" >/dev/null || fail "all accepted"
t0=$(jq '.latency.tpot_s.mean' "$tmp/o-0/summary.json")
t1=$(jq '.latency.tpot_s.mean' "$tmp/o-1/summary.json")
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b < a / 3) }' || fail "TPOT at acceptance 1 ($t1) is not below a third of 0's ($t0)"
"$kvsim" run "$tmp/s.json" --out "$tmp/again" --quiet || fail "rerun"
cmp -s "$tmp/o-[0.9,0.6,0.3]/requests.csv" "$tmp/again/requests.csv" || fail "seeded: a second run differs"

for bad in '"acceptance_rate": 1.5' '"acceptance_rate": [0.9, 0.95, 0.3]' '"acceptance_rate": [0.9, 0.8]' \
           '"acceptance_rate": "high"'; do
  sed "s/\"acceptance_rate\": \[0.9,0.6,0.3\]/$bad/" "$tmp/s.json" >"$tmp/bad.json"
  err=$("$kvsim" run "$tmp/bad.json" --out "$tmp/bad" --quiet 2>&1); rc=$?
  [ "$rc" -eq 2 ] || fail "$bad: exit $rc"
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$bad: one line: $err"
  grep -q acceptance_rate <<<"$err" || fail "$bad: names the key: $err"
  [ ! -e "$tmp/bad/summary.json" ] || fail "$bad: no output"
done
echo ok
