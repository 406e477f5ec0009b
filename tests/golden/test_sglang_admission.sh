#!/usr/bin/env bash
# SGLang refuses at arrival a prompt of max_req_input_len tokens or more
# (validate_input_length: max_req_len - 5, max_req_len = min(context_len,
# max_total_num_tokens) - 1). Such a prompt once fitted kvsim's pool check
# but never passed the prefill adder's, and the run stopped as stuck
# ("needs 73 blocks, the pool has 74"). One below the limit runs.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
scen() { # PROMPT_TOKENS
  cat >"$tmp/s$1.json" <<JSON
{ "name": "sgl-admission", "seed": 1, "model": "llama-3.1-8b", "hardware": { "gpu": "h100-sxm" },
  "engine": { "profile": "sglang", "max_total_tokens": 74, "max_model_len": 128 },
  "workload": { "synthetic": { "requests": 3, "arrival": { "process": "poisson", "rate": 1 },
    "prompt_tokens": { "dist": "fixed", "value": $1 }, "output_tokens": { "dist": "fixed", "value": 1 } } } }
JSON
}
# max_req_len = min(127, 73) = 73, max_req_input_len = 68.
scen 68
"$kvsim" run "$tmp/s68.json" --out "$tmp/r68" --no-band --no-verify-advice --quiet 2>"$tmp/err" \
  || fail "a 68-token prompt stopped the run: $(cat "$tmp/err")"
grep -Eq '"rejected":[[:space:]]+3,' "$tmp/r68/summary.json" || fail "68 tokens: not 3 rejected: $(grep rejected "$tmp/r68/summary.json")"
grep -q "max_req_input_len" "$tmp/r68/summary.json" || fail "68 tokens: the reason is not SGLang's limit"
scen 67
"$kvsim" run "$tmp/s67.json" --out "$tmp/r67" --no-band --no-verify-advice --quiet 2>"$tmp/err" \
  || fail "a 67-token prompt stopped the run: $(cat "$tmp/err")"
grep -Eq '"finished":[[:space:]]+3,' "$tmp/r67/summary.json" || fail "67 tokens: not 3 finished: $(grep finished "$tmp/r67/summary.json")"
echo "ok: SGLang's input limit at arrival"
