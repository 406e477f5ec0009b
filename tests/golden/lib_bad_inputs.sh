# Shared by the golden tests of bad inputs (sourced after lib_expect_error.sh;
# needs $kvsim, an absolute path): a temporary folder that is the working
# directory, ok (the command succeeds), and base.json, a five-request
# scenario, with run=(...) the flags of a quick run into o/. Their error
# cases are data (lib_error_cases.sh), run with a fixed string, within 20 s
# and 1 GiB (@fixed @timeout=20 @vmem=1048576).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() {
  rm -rf "$tmp/o"
  "$kvsim" "$@" >"$tmp/out" 2>"$tmp/err" || fail "'$*': $(head -c 300 "$tmp/err")"
}

cd "$tmp" || exit 1
W='"workload": {"synthetic": {"requests": 5, "arrival": {"process": "poisson", "rate": 5},
   "prompt_tokens": 100, "output_tokens": 10}}'
echo "{\"name\": \"b\", \"model\": \"llama-3.1-8b\", $W}" >base.json
run=(run --no-band --no-verify-advice --quiet --out o)
