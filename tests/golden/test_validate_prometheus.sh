#!/usr/bin/env bash
# kvsim validate --series on a Prometheus scrape (issue 34): the three
# hand-made files of tests/golden/fidelity/ (promtool tsdb dump text,
# SGLang OpenMetrics, query_range JSON) read to the means worked out
# below; `kvsim run --openmetrics` fed back against its own scenario
# (a round trip: exact for running and waiting, KV usage within the
# rounding of timeseries.csv); the time origin anchored on aiperf's
# wall-clock arrivals; the golden series block; input errors. With
# Debian's prometheus package, the round trip also goes through a real
# store: promtool tsdb dump and a query_range of a Prometheus server.
# $1 = kvsim binary, $2 = source dir. Exit non-zero on failure.
set -u
kvsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$2
d=$src/tests/golden/fidelity
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=lib_expect_error.sh
. "$src/tests/golden/lib_expect_error.sh"
# shellcheck source=lib_error_cases.sh
. "$src/tests/golden/lib_error_cases.sh"
# The number under key k ("running_mean_measured") in validate's JSON.
num() { awk -v k="\"$1\":" '$1 == k { gsub(/,/, "", $2); print $2; exit }'; }
near() { awk -v a="$1" -v b="$2" -v e="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= e) }'; }
series() { # FILE [REQUESTS]: validate's JSON with --series FILE
  "$kvsim" validate --measured "${2:-$d/requests.jsonl}" "$d/scenario.json" --series "$1" --json
}
check() { # WHAT JSON KEY WANT
  local v
  v=$(num "$3" <<<"$2")
  near "$v" "$4" 1e-9 || fail "$1: $3 = '$v', want $4"
}

# -- promtool tsdb dump ({__name__=...} value ms): two engines scraped
# 500 ms apart, vLLM's older vllm:gpu_cache_usage_perc. Samples at t = 0,
# 0.5, ..., 2.5 s; each engine holds its value until its next sample and
# counts from its first sample to its last:
#   running 2, 3, 2, 2, 1, 0 -> 10/6; waiting 1, 1, 0, 0, 0, 0 -> 2/6;
#   KV 0.5, (0.5+0.1)/2, (0.25+0.1)/2, (0.25+0.3)/2, (0+0.3)/2, 0 -> 23.333 %.
j=$(series "$d/prom-dump.txt") || fail "prom-dump.txt exited $?"
check "dump" "$j" ticks 6
check "dump" "$j" running_mean_measured 1.6666666666666667
check "dump" "$j" waiting_mean_measured 0.33333333333333331
check "dump" "$j" kv_usage_mean_measured_pct 23.333333333333332
grep -q '"time_origin":[[:space:]]*"first sample"' <<<"$j" || fail "dump: time origin: $j"

# -- SGLang OpenMetrics: seconds with decimals and one integer second
# (t = 0, 1, 2.5), sglang:num_running_reqs 4 2 0, sglang:num_queue_reqs
# 2 0 0, sglang:token_usage 0.8 0.4 0; # HELP/TYPE/EOF, a histogram with an
# exemplar skipped.
j=$(series "$d/sglang.om") || fail "sglang.om exited $?"
check "sglang" "$j" ticks 3
check "sglang" "$j" running_mean_measured 2
check "sglang" "$j" waiting_mean_measured 0.66666666666666663
check "sglang" "$j" kv_usage_mean_measured_pct 40

# -- query_range JSON, two answers in an array: running 3+1, 1+1 -> 3;
# waiting 2, 0 -> 1; KV (0.6+0.2)/2, (0.2+0.4)/2 -> 35 %; "up" skipped.
j=$(series "$d/query-range.json") || fail "query-range.json exited $?"
check "query_range" "$j" ticks 2
check "query_range" "$j" running_mean_measured 3
check "query_range" "$j" waiting_mean_measured 1
check "query_range" "$j" kv_usage_mean_measured_pct 35

# -- the golden: the series block of the dump against the tiny scenario.
(cd "$d" && "$kvsim" validate --measured requests.jsonl scenario.json --series prom-dump.txt --json) \
  | awk '/"series":/ { on = 1 } on { print } on && /^\t}/ { exit }' >"$tmp/series.json"
diff -u "$src/tests/golden/fidelity/expected/prom-dump-series.json" "$tmp/series.json" \
  || fail "the series block moved (regenerate only for an intended change)"

# -- round trip: a run's --openmetrics compared with its own scenario.
# Running and waiting exact, through the rows at preemptions and the
# closing row; KV usage within the 6 decimals of timeseries.csv, which
# the OpenMetrics writer reads (0.5e-6 of a fraction = 5e-5 points). The
# same samples as a promtool dump (milliseconds) give the same.
for c in v1-preemption v1-two-replicas sglang-retraction; do
  sc=$src/tests/golden/cases/$c/scenario.json
  "$kvsim" run "$sc" --out "$tmp/$c" --quiet --openmetrics "$tmp/$c.om" || fail "$c: run"
  awk -F, 'NR > 1 && $1 !~ /\.000000$/ { n++ } END { exit !(n > 0) }' "$tmp/$c/timeseries.csv" \
    || fail "$c: no rows between ticks: the round trip would not test them"
  # {__name__="name", labels} value ms, as promtool tsdb dump prints it.
  awk '/^vllm:(num_requests_|kv_cache)/ {
      n = index($1, "{"); name = substr($1, 1, n - 1); rest = substr($1, n + 1)
      printf "{__name__=\"%s\", %s %s %.0f\n", name, rest, $2, $3 * 1000 }' "$tmp/$c.om" >"$tmp/$c.dump"
  for f in "$tmp/$c.om" "$tmp/$c.dump"; do
    j=$("$kvsim" validate --measured "$tmp/$c/requests.csv" "$sc" --series "$f" --json) || fail "$c: $f"
    check "$c round trip" "$j" running_mean_abs_diff 0
    check "$c round trip" "$j" waiting_mean_abs_diff 0
    kd=$(num kv_usage_mean_abs_diff_pct <<<"$j")
    near "$kd" 0 5e-5 || fail "$c round trip: KV usage differs by $kd points"
    [ "$(num ticks <<<"$j")" -gt 2 ] || fail "$c round trip: ticks $(num ticks <<<"$j")"
  done
done

# -- the same through a real Prometheus store, when promtool is installed
# (Debian package prometheus): backfilled, dumped by promtool tsdb dump
# (which wants a wal folder), read back.
if command -v promtool >/dev/null; then
  c=v1-two-replicas
  sc=$src/tests/golden/cases/$c/scenario.json
  promtool tsdb create-blocks-from openmetrics "$tmp/$c.om" "$tmp/tsdb" >/dev/null || fail "promtool backfill"
  mkdir -p "$tmp/tsdb/wal"
  promtool tsdb dump --match='{__name__=~"vllm:(num_requests_running|num_requests_waiting|kv_cache_usage_perc)"}' \
    "$tmp/tsdb" >"$tmp/promtool.dump" || fail "promtool tsdb dump"
  j=$("$kvsim" validate --measured "$tmp/$c/requests.csv" "$sc" --series "$tmp/promtool.dump" --json) \
    || fail "promtool dump: validate exited $?"
  check "promtool dump" "$j" running_mean_abs_diff 0
  check "promtool dump" "$j" waiting_mean_abs_diff 0
  near "$(num kv_usage_mean_abs_diff_pct <<<"$j")" 0 5e-5 || fail "promtool dump: KV usage: $j"
  # And a Prometheus over those blocks asked for /api/v1/query_range
  # (step 0.5 s, each step the last sample within the lookback: the same
  # state as the run's rows), for at most 60 s.
  if command -v prometheus >/dev/null && command -v curl >/dev/null; then
    port=$((20000 + RANDOM % 20000))
    timeout 60 prometheus --config.file=/dev/null --storage.tsdb.path="$tmp/tsdb" \
      --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" >"$tmp/prom.log" 2>&1 &
    pid=$!
    for _ in $(seq 1 80); do
      curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && break
      sleep 0.25
    done
    curl -sf "http://127.0.0.1:$port/api/v1/query_range" \
      --data-urlencode 'query={__name__=~"vllm:(num_requests_running|num_requests_waiting|kv_cache_usage_perc)"}' \
      --data-urlencode start=1735689600 --data-urlencode end=1735689610 --data-urlencode step=0.5 \
      >"$tmp/qr.json" || fail "query_range: $(tail -3 "$tmp/prom.log")"
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    j=$("$kvsim" validate --measured "$tmp/$c/requests.csv" "$sc" --series "$tmp/qr.json" --json) \
      || fail "query_range: validate exited $?"
    check "query_range" "$j" ticks 21
    check "query_range" "$j" running_mean_abs_diff 0
    check "query_range" "$j" waiting_mean_abs_diff 0
    near "$(num kv_usage_mean_abs_diff_pct <<<"$j")" 0 5e-5 || fail "query_range: KV usage: $j"
  fi
else
  echo "promtool not installed: the real-store round trip skipped"
fi

# -- the time origin: aiperf stamps arrivals on the wall clock (first
# finished request at 1700000000.000 s), so t = 0 is that arrival and the
# sample half a second before it is dropped; without wall-clock arrivals
# (requests.jsonl) t = 0 is the first sample.
for k in running waiting; do
  printf '{__name__="vllm:num_requests_%s", engine="0"} %s 1699999999500\n' $k 9
  printf '{__name__="vllm:num_requests_%s", engine="0"} %s 1700000000000\n' $k 1
  printf '{__name__="vllm:num_requests_%s", engine="0"} %s 1700000001000\n' $k 0
done >"$tmp/anchor.txt"
j=$(series "$tmp/anchor.txt" "$d/aiperf.jsonl") || fail "anchor exited $?"
grep -q '"time_origin":[[:space:]]*"first request.s arrival"' <<<"$j" || fail "anchor: $j"
check "anchored" "$j" ticks 2
check "anchored" "$j" running_mean_measured 0.5
j=$(series "$tmp/anchor.txt") || fail "unanchored exited $?"
check "unanchored" "$j" ticks 3
check "unanchored" "$j" running_mean_measured 3.3333333333333335

# -- bad input: exit 2, one line naming the file (and line or JSON path),
# nothing written (errors/validate_prometheus.cases).
v=(validate --measured "$d/requests.jsonl" "$d/scenario.json" --series)
put() { printf '%b' "$2" >"$tmp/$1" && printf '%s' "$tmp/$1"; } # NAME TEXT: the file, written
run_error_cases "$src/tests/golden/errors/validate_prometheus.cases"
echo "Prometheus series: dump, OpenMetrics, query_range read; round trip exact; anchored; errors named"
