#!/usr/bin/env bash
# kvsim run --openmetrics: the file ends in # EOF, a bad destination
# leaves nothing, and (with Debian's prometheus package: promtool and
# prometheus) the file backfills a TSDB that a Prometheus on 127.0.0.1
# answers PromQL from: vllm:kv_cache_usage_perc at a tick is the run's
# timeseries.csv value, and the TTFT histogram counts every finished request.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
prom_pid=
cleanup() {
  [ -n "$prom_pid" ] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
sc="$src/tests/golden/cases/v1-two-replicas/scenario.json"
start=1735689600
"$kvsim" run "$sc" --quiet --no-band --no-verify-advice --out "$tmp/run" --openmetrics "$tmp/om.txt"
[ "$(tail -n 1 "$tmp/om.txt")" = "# EOF" ] || { echo "no # EOF at the end"; exit 1; }
grep -qx '# TYPE vllm:time_to_first_token_seconds histogram' "$tmp/om.txt" || { echo "no TTFT histogram"; exit 1; }

# A destination that cannot be written: exit 2, one line, no file, no temporary.
set +e
msg=$("$kvsim" run "$sc" --quiet --no-band --no-verify-advice --out "$tmp/run2" \
  --openmetrics "$tmp/missing/om.txt" 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] || { echo "unwritable --openmetrics: exit $rc, expected 2"; exit 1; }
[ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] && [[ $msg == *"missing/om.txt: cannot write"* ]] ||
  { echo "unexpected message: $msg"; exit 1; }
[ ! -e "$tmp/run2" ] || { echo "a failed run left its folder"; exit 1; }

set +e
"$kvsim" run "$sc" --quiet --no-band --no-verify-advice --out "$tmp/run3" --openmetrics-start 5 2>/dev/null
rc=$?
set -e
[ $rc -eq 2 ] && [ ! -e "$tmp/run3" ] || { echo "--openmetrics-start alone: exit $rc, expected 2 and no run"; exit 1; }

if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then
  echo "promtool / prometheus not installed (scripts/deps.sh --test installs Debian's prometheus): backfill not checked, skipped"
  exit 77
fi
promtool tsdb create-blocks-from openmetrics "$tmp/om.txt" "$tmp/db" >/dev/null

# A Prometheus over the backfilled blocks, on a loopback port, for at most 60 s.
ready=
for attempt in 1 2 3; do
  port=$((20000 + RANDOM % 20000))
  timeout 60 prometheus --config.file=/dev/null --storage.tsdb.path="$tmp/db" \
    --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" \
    >"$tmp/prom.log" 2>&1 &
  prom_pid=$!
  for _ in $(seq 1 40); do
    if promtool query instant "http://127.0.0.1:$port" 'vector(1)' >/dev/null 2>&1; then
      ready=1
      break
    fi
    kill -0 "$prom_pid" 2>/dev/null || break
    sleep 0.25
  done
  [ -n "$ready" ] && break
  kill "$prom_pid" 2>/dev/null || true
  wait "$prom_pid" 2>/dev/null || true
  prom_pid=
done
[ -n "$ready" ] || { echo "prometheus did not start:"; tail -5 "$tmp/prom.log"; exit 1; }
url="http://127.0.0.1:$port"

# The KV usage of replica 0 at the tick t = 1 s, as the run wrote it.
want=$(awk -F, 'NR > 1 && $1 == "1.000000" && $2 == "0" { v = $3 } END { print v }' "$tmp/run/timeseries.csv")
[ -n "$want" ] || { echo "no row at t = 1 s in timeseries.csv"; exit 1; }
got=$(promtool query instant --time=$((start + 1)) "$url" 'vllm:kv_cache_usage_perc{engine="0"}')
[[ $got == *'model_name="Qwen/Qwen3-8B"'* ]] || { echo "no model_name label: $got"; exit 1; }
val=$(printf '%s\n' "$got" | sed -n 's/.*=> \([^ ]*\) @.*/\1/p')
awk -v a="$val" -v b="$want" 'BEGIN { exit !(a + 0 == b + 0) }' ||
  { echo "vllm:kv_cache_usage_perc at t = 1 s: PromQL $val, timeseries.csv $want"; exit 1; }

# Every finished request is in the TTFT histograms by the run's end.
finished=$(awk -F, 'NR > 1 && $NF == "finished"' "$tmp/run/requests.csv" | wc -l)
end=$(awk -F, 'NR > 1 { t = $1 } END { printf "%.3f", t + '"$start"' }' "$tmp/run/timeseries.csv")
got=$(promtool query instant --time="$end" "$url" 'sum(vllm:time_to_first_token_seconds_count)')
val=$(printf '%s\n' "$got" | sed -n 's/.*=> \([^ ]*\) @.*/\1/p')
[ "$val" = "$finished" ] || { echo "TTFT count at the end: PromQL $val, finished requests $finished"; exit 1; }
echo "OpenMetrics backfilled: vllm:kv_cache_usage_perc{engine=\"0\"} = $want at t = 1 s, $finished TTFT observations"
