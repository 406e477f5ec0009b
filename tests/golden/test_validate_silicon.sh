#!/usr/bin/env bash
# kvsim validate --silicon on tests/golden/fidelity/silicon.csv (five rows
# written for this test, AIConfigurator's columns): the mapping of model,
# system and precision, the skipped rows and their reasons, filters, the
# JSON contract (issue 6), --gpu / --perf overrides, input errors.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$1
src=$2
d=$src/tests/golden/fidelity
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib_expect_error.sh
. "$src/tests/golden/lib_expect_error.sh"
# shellcheck source=lib_error_cases.sh
. "$src/tests/golden/lib_error_cases.sh"

out=$("$kvsim" validate --silicon "$d/silicon.csv") || fail "text mode exited $?"
# meta-llama/Llama-3.1-8B-Instruct and nvidia/Llama-3.1-8B-Instruct-FP8 both
# map to llama-3.1-8b; h100_sxm to h100-sxm; an empty precision is bf16.
grep -q '^h100_sxm / llama-3.1-8b$' <<<"$out" || fail "table per system and model: $out"
grep -Eq '^ +2 bf16 +1 +512 +64 +4 \| +60\.0 ' <<<"$out" || fail "row 2 (bf16, tp1, 512/64, c4): $out"
grep -Eq '^ +3 fp8 +1 +256 +32 +8 \| +40\.0 ' <<<"$out" || fail "row 3 (fp8): $out"
grep -q "^skipped 1 row: system 'b300_sxm' is not in the GPU catalog$" <<<"$out" || fail "b300 skipped: $out"
grep -q "^skipped 1 row: mode 'disagg'" <<<"$out" || fail "disagg skipped: $out"
grep -q "^skipped 1 row: model 'acme/NotAModel-7B' is not in the catalog$" <<<"$out" || fail "unknown model: $out"
grep -Eq '^2 rows simulated \(0 failed, 3 skipped\): median \|error\| TTFT [0-9.]+%, TPOT [0-9.]+%$' <<<"$out" \
  || fail "summary line: $out"

json=$("$kvsim" validate --silicon "$d/silicon.csv" --json) || fail "--json exited $?"
grep -Eq '"skipped":[[:space:]]+3,' <<<"$json" || fail "skipped count 3: $json"
grep -Eq '"id":[[:space:]]+"tiny_llama8b_h100_c4"' <<<"$json" || fail "row id: $json"
# Each row: measured and simulated ttft_ms / tpot_ms; error in percent.
rows=$(awk '$1 == "\"measured\":" && $2 == "{" { m++ } $1 == "\"simulated\":" && $2 == "{" { s++ } END { print m + 0, s + 0 }' <<<"$json")
[ "$rows" = "2 2" ] || fail "two rows with measured and simulated objects, got $rows"
t=$(awk '$1 == "\"simulated\":" { on = 1 } on && $1 == "\"ttft_ms\":" { printf "%.17g\n", $2 + 0; exit }' <<<"$json")
e=$(awk '$1 == "\"error_pct\":" { on = 1 } on && $1 == "\"ttft\":" { printf "%.17g\n", $2 + 0; exit }' <<<"$json")
awk -v t="$t" -v e="$e" 'BEGIN { w = (t - 60) / 60 * 100; d = w - e; exit !(t > 0 && d < 1e-6 && d > -1e-6) }' \
  || fail "row 2: error_pct.ttft $e is not (sim $t - 60) / 60 x 100"
grep -Eq '"median_abs_error_pct":[[:space:]]+\{' <<<"$json" || fail "median object: $json"

# Filters: KEY=VALUE on a column or the catalog model; same key = either.
f=$("$kvsim" validate --silicon "$d/silicon.csv" --filter precision=fp8 --json) || fail "filter exited $?"
grep -Eq '"simulated":[[:space:]]+1,' <<<"$f" && grep -Eq '"skipped":[[:space:]]+0,' <<<"$f" \
  || fail "precision=fp8 keeps one row: $f"
f=$("$kvsim" validate --silicon "$d/silicon.csv" --filter model=llama-3.1-8b --filter system=h100_sxm \
  --filter system=b300_sxm --json) || fail "filters exited $?"
grep -Eq '"simulated":[[:space:]]+2,' <<<"$f" && grep -Eq '"skipped":[[:space:]]+2,' <<<"$f" \
  || fail "llama-3.1-8b on h100 or b300: 2 simulated, b300 and disagg skipped: $f"

# --gpu FILE replaces the catalog GPU of the same name: a host term of
# 5 ms per step on the H100's own kernel tables must slow the decode (TPOT)
# down.
tpot() { awk '$1 == "\"simulated\":" { on = 1 } on && $1 == "\"tpot_ms\":" { print $2 + 0; exit }'; }
base=$("$kvsim" validate --silicon "$d/silicon.csv" --filter precision=bf16 --json | tpot)
jq '.perf = {"kernels": "h100-sxm", "host_us": 5000}' "$2/configs/gpus/h100-sxm.json" >"$tmp/h100-slow.json"
slow=$("$kvsim" validate --silicon "$d/silicon.csv" --filter precision=bf16 --gpu "$tmp/h100-slow.json" --json | tpot)
awk -v a="$base" -v b="$slow" 'BEGIN { exit !(a > 0 && b > 1.2 * a) }' || fail "--gpu host_us 5000: TPOT $slow vs $base ms"
# --terms: each simulated row's mean decode step by term; the six terms
# add up to the total, and the host term is the --gpu file's 5,000 us plus
# its part per request.
terms=$("$kvsim" validate --silicon "$d/silicon.csv" --filter precision=bf16 --gpu "$tmp/h100-slow.json" --terms) \
  || fail "--terms exited $?"
grep -q '^mean decode step by term (ms): gemm, attention, moe, comm, elementwise, host = total$' <<<"$terms" \
  || fail "--terms header: $terms"
awk '$1 == 2 && $(NF - 1) == "=" { s = $(NF-7) + $(NF-6) + $(NF-5) + $(NF-4) + $(NF-3) + $(NF-2); d = s - $NF
     ok = d < 0.0035 && d > -0.0035 && $(NF-2) >= 5.0; found = 1 }
     END { exit !(found && ok) }' <<<"$terms" || fail "--terms row 2: terms do not add up or host < 5 ms: $terms"
dj=$("$kvsim" validate --silicon "$d/silicon.csv" --filter precision=bf16 --json | jq '.rows[0].simulated.decode_step_ms | .total > 0 and .gemm > 0 and .host > 0')
[ "$dj" = true ] || fail "--json: simulated.decode_step_ms with its terms"
# --perf NAME replaces the H100's kernel tables with another profile's (a
# change in the simulated TPOT), and --perf FILE with a profile file gives
# the same tables as its name.
h200=$("$kvsim" validate --silicon "$d/silicon.csv" --filter precision=bf16 --perf h200 --json | tpot)
[ -n "$h200" ] && [ "$h200" != "$base" ] || fail "--perf h200 left TPOT at $base ms"
via=$("$kvsim" validate --silicon "$d/silicon.csv" --filter precision=bf16 --perf "$2/configs/kernels/h200.json" --json | tpot)
[ "$via" = "$h200" ] || fail "--perf FILE gives the same tables as --perf NAME: $via vs $h200"

# Bad input: exit 2, one line naming the file (line, column) or flag,
# nothing written (errors/validate_silicon.cases). Its tables, cut from
# silicon.csv: a header without 'system', a row with isl 5x2, the b300 row alone.
head -1 "$d/silicon.csv" | cut -d, -f1-5 >"$tmp/short.csv"
{ head -2 "$d/silicon.csv"; sed -n 2p "$d/silicon.csv" | sed 's/,512,64,/,5x2,64,/'; } >"$tmp/badnum.csv"
grep -q ',5x2,64,' "$tmp/badnum.csv" || fail "test setup: no isl 512 to replace"
{ head -1 "$d/silicon.csv"; grep b300_sxm "$d/silicon.csv"; } >"$tmp/b300.csv"
run_error_cases "$src/tests/golden/errors/validate_silicon.cases"
exit 0
