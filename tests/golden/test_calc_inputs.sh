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
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect_error PATTERN ARGS...: exit 2, one stderr line matching PATTERN.
expect_error() {
  local pattern=$1; shift
  "$kvsim" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  [ $rc -eq 2 ] || fail "'$*' exited $rc, want 2"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "'$*' printed $(wc -l <"$tmp/err") lines on stderr: $(cat "$tmp/err")"
  grep -Eq -- "$pattern" "$tmp/err" || fail "'$*' stderr does not match /$pattern/: $(cat "$tmp/err")"
}

# vLLM's human_readable_int: k is 1000, K is 1024; decimals only with k.
for pair in 8k:8,000 32k:32,000 128k:128,000 8K:8,192 32K:32,768 25.6k:25,600 4096:4,096; do
  v=${pair%%:*} want=${pair#*:}
  out=$("$kvsim" calc --max-model-len "$v") || fail "--max-model-len $v exited $?"
  grep -q "max_model_len $want," <<<"$out" || fail "--max-model-len $v should be $want: $(head -1 <<<"$out")"
  grep -q "^Maximum concurrency for $want tokens per request" <<<"$out" || fail "$v: concurrency line: $out"
done
expect_error "--max-model-len: decimals are not allowed with binary suffixes like K" calc --max-model-len 1.5K
expect_error "--max-model-len: expected an integer, got '8x'" calc --max-model-len 8x
expect_error "--max-model-len: expected an integer, got 'k'" calc --max-model-len k

# Reverse-mode lengths are checked as lengths.
expect_error "--seq-len: 200000 is greater than the model's max_position_embeddings \(131072\)" \
  calc --target-concurrency 2 --seq-len 200k
expect_error "--seq-len 8000 is longer than --max-model-len 4000" calc --target-concurrency 2 --seq-len 8k --max-model-len 4k
expect_error "--seq-len needs --target-concurrency" calc --seq-len 8k
out=$("$kvsim" calc --gpu l4 --target-concurrency 100000) || fail "no-length calc exited $?"
grep -q '^Reverse: 100000 requests do not fit at TP 1 on l4 at any length$' <<<"$out" || fail "no length fits: $out"
grep -q '^Model llama-3.1-8b on l4: .* max_model_len 131,072,' <<<"$out" || fail "the plan keeps the model's length: $out"

# ... and as a scenario string value.
scen=$src/tests/golden/data/small-synthetic.json
"$kvsim" run "$scen" --quiet --set 'engine.max_model_len="2k"' --out "$tmp/r" || fail "run with \"2k\" exited $?"
grep -Eq '"max_model_len":[[:space:]]+2000,' "$tmp/r/summary.json" || fail "\"2k\" is 2000: $(grep max_model_len "$tmp/r/summary.json")"
expect_error 'engine.max_model_len: expected an integer' run "$scen" --set 'engine.max_model_len="lots"' --out "$tmp/r"

# Architectures kvsim does not model are refused, not read as dense models.
base='"hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2, "intermediate_size": 2048, "vocab_size": 32000, "num_hidden_layers": 4, "max_position_embeddings": 4096'
for a in jamba:JambaForCausalLM mamba:MambaForCausalLM t5:T5ForConditionalGeneration bart:BartForConditionalGeneration; do
  printf '{"model_type": "%s", "architectures": ["%s"], %s}\n' "${a%%:*}" "${a#*:}" "$base" >"$tmp/arch.json"
  expect_error "arch.json: ${a#*:} \(model_type '${a%%:*}'\) is .*kvsim models decoder-only transformers" \
    calc --model "$tmp/arch.json"
done
printf '{"model_type": "llama", "is_encoder_decoder": true, %s}\n' "$base" >"$tmp/arch.json"
expect_error "is an encoder-decoder model \(is_encoder_decoder true\)" calc --model "$tmp/arch.json"

# A config.json is named after its folder.
mkdir -p "$tmp/Tiny-Llama-4L"
printf '{"model_type": "llama", %s}\n' "$base" >"$tmp/Tiny-Llama-4L/config.json"
out=$("$kvsim" calc --model "$tmp/Tiny-Llama-4L/config.json") || fail "folder config exited $?"
grep -q '^Model Tiny-Llama-4L on h100-sxm' <<<"$out" || fail "named after its folder: $(head -1 <<<"$out")"

# Scenario errors name the scenario key and file.
expect_error "small-synthetic.json: engine.gpu_memory_utilization: 1.0001 is outside \(0, 1\]" \
  run "$scen" --set engine.gpu_memory_utilization=1.0001 --out "$tmp/r"
expect_error "small-synthetic.json: engine.tensor_parallel_size: unknown key \(did you mean \`hardware.tensor_parallel_size\`\?\)" \
  run "$scen" --set engine.tensor_parallel_size=2 --out "$tmp/r"
expect_error "small-synthetic.json: hardware.max_num_seqs: unknown key \(did you mean \`engine.max_num_seqs\`\?\)" \
  run "$scen" --set hardware.max_num_seqs=2 --out "$tmp/r"
expect_error "small-synthetic.json: replicas: unknown key \(did you mean \`hardware.replicas\`\?\)" \
  run "$scen" --set replicas=2 --out "$tmp/r"
expect_error "engine.max_model_lenn: unknown key \(did you mean 'max_model_len'\?\)" \
  run "$scen" --set engine.max_model_lenn=2 --out "$tmp/r"
# The plan's own checks, for a scenario, name the key and the file, not vLLM's flag.
expect_error "small-synthetic.json: engine.max_num_seqs: 99999999 is out of range \[1, 1048576\]$" \
  run "$scen" --set engine.max_num_seqs=99999999 --out "$tmp/r"
expect_error "small-synthetic.json: hardware.tensor_parallel_size: 3 does not divide the model's 32 attention heads$" \
  run "$scen" --set hardware.tensor_parallel_size=3 --out "$tmp/r"
expect_error "small-synthetic.json: engine.max_model_len: 999999 is greater than the model's max_position_embeddings" \
  run "$scen" --set engine.max_model_len=999999 --out "$tmp/r"
printf '{\n  "name": "x",\n  "model": "llama-3.2-1b",\n}\n' >"$tmp/comma.json"
expect_error "comma.json:3: invalid JSON: trailing comma at line 3" run "$tmp/comma.json"
printf '{"name": "x", "engine": {"block_size": [16, 32, ]}}\n' >"$tmp/comma.json"
expect_error "comma.json:1: invalid JSON: trailing comma at line 1" run "$tmp/comma.json"
printf '{"name": "a,}" "model": 1}\n' >"$tmp/nocomma.json"
expect_error "nocomma.json:1: invalid JSON$" run "$tmp/nocomma.json"

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
