#!/usr/bin/env bash
# The inputs a new user types: --max-model-len 8k as vLLM takes it, model
# configs kvsim does not model, config.json names, and scenario errors that
# name the key and file (a misplaced key, a trailing comma).
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$(realpath "$1")
src=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/lib_expect_error.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib_error_cases.sh"
scen=$src/tests/golden/data/small-synthetic.json

# Fixtures of the error cases (errors/calc_inputs.cases), one file each.
base='"hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 2048, "vocab_size": 32000, "num_hidden_layers": 4, "max_position_embeddings": 4096'
for a in jamba:JambaForCausalLM mamba:MambaForCausalLM t5:T5ForConditionalGeneration bart:BartForConditionalGeneration; do
  printf '{"model_type": "%s", "architectures": ["%s"], %s}\n' "${a%%:*}" "${a#*:}" "$base" >"$tmp/arch-${a%%:*}.json"
done
printf '{"model_type": "llama", "is_encoder_decoder": true, %s}\n' "$base" >"$tmp/encdec.json"
printf '{\n  "name": "x",\n  "model": "llama-3.2-1b",\n}\n' >"$tmp/comma-top.json"
printf '{"name": "x", "engine": {"block_size": [16, 32, ]}}\n' >"$tmp/comma-array.json"
printf '{"name": "a,}" "model": 1}\n' >"$tmp/nocomma.json"
# The error cases, one per line: errors/calc_inputs.cases.
run_error_cases "$src/tests/golden/errors/calc_inputs.cases"

# vLLM's human_readable_int: k is 1000, K is 1024; decimals only with k.
for pair in 8k:8,000 32k:32,000 128k:128,000 8K:8,192 32K:32,768 25.6k:25,600 4096:4,096; do
  v=${pair%%:*} want=${pair#*:}
  out=$("$kvsim" calc --max-model-len "$v") || fail "--max-model-len $v exited $?"
  grep -q "max_model_len $want," <<<"$out" || fail "--max-model-len $v should be $want: $(head -1 <<<"$out")"
  grep -q "^Maximum concurrency for $want tokens per request" <<<"$out" || fail "$v: concurrency line: $out"
done

# Reverse mode without a length: the plan keeps the model's.
out=$("$kvsim" calc --gpu l4 --target-concurrency 100000) || fail "no-length calc exited $?"
grep -q '^Reverse: 100000 requests do not fit at TP 1 on l4 at any length$' <<<"$out" || fail "no length fits: $out"
grep -q '^Model llama-3.1-8b on l4: .* max_model_len 131,072,' <<<"$out" || fail "the plan keeps the model's length: $out"

# A length as a scenario string value, as vLLM reads it.
"$kvsim" run "$scen" --quiet --set 'engine.max_model_len="2k"' --out "$tmp/r" || fail "run with \"2k\" exited $?"
grep -Eq '"max_model_len":[[:space:]]+2000,' "$tmp/r/summary.json" || fail "\"2k\" is 2000: $(grep max_model_len "$tmp/r/summary.json")"

# A config.json is named after its folder.
mkdir -p "$tmp/Tiny-Llama-4L"
printf '{"model_type": "llama", %s}\n' "$base" >"$tmp/Tiny-Llama-4L/config.json"
out=$("$kvsim" calc --model "$tmp/Tiny-Llama-4L/config.json") || fail "folder config exited $?"
grep -q '^Model Tiny-Llama-4L on h100-sxm' <<<"$out" || fail "named after its folder: $(head -1 <<<"$out")"

# --set without --out never overwrites another configuration's results.
mkdir "$tmp/cwd"
a=$(cd "$tmp/cwd" && "$kvsim" run "$scen" --set engine.max_num_seqs=16) || fail "run a exited $?"
b=$(cd "$tmp/cwd" && "$kvsim" run "$scen" --set engine.max_num_seqs=8) || fail "run b exited $?"
c=$(cd "$tmp/cwd" && "$kvsim" run "$scen") || fail "run c exited $?"
da=$(grep -Eo 'results/small-synthetic\+[0-9a-f]{8}/$' <<<"$a") || fail "run line names results/<name>+<hash>/: $a"
db=$(grep -Eo 'results/small-synthetic\+[0-9a-f]{8}/$' <<<"$b") || fail "run line names results/<name>+<hash>/: $b"
[ "$da" != "$db" ] || fail "two override sets share $da"
grep -q -- '-> results/small-synthetic/$' <<<"$c" || fail "without --set the folder is results/<name>/: $c"
for d in "$da" "$db" results/small-synthetic/; do
  [ -s "$tmp/cwd/$d/summary.json" ] || fail "no summary.json in $d"
done
grep -q '"max_num_seqs":[[:space:]]*8,' "$tmp/cwd/$db/summary.json" || fail "$db holds the max_num_seqs=8 run"
a2=$(cd "$tmp/cwd" && "$kvsim" run "$scen" --set engine.max_num_seqs=16) || fail "run a again exited $?"
grep -q -- "$da\$" <<<"$a2" || fail "the same overrides go to the same folder: $a2"
echo "ok"
