#!/usr/bin/env bash
# Engine profiles on the same traffic (issue 5): how much of the KV memory
# allocated to requests holds real tokens, and the highest Poisson request
# rate each profile sustains under a p99 TTFT target (bisection over
# workload.synthetic.arrival.rate). Runs `kvsim run SCENARIO --set ...` and
# reads summary.json; bash + awk only.
#
# usage: scripts/compare_profiles.sh [KVSIM] [SCENARIO]
#   KVSIM     the kvsim binary (default: build/kvsim, or $KVSIM)
#   SCENARIO  default configs/scenarios/compare-sharegpt-a100.json (ShareGPT
#             lengths from ../shared, Poisson arrivals)
# environment:
#   REQUESTS=2000   requests per run
#   RATE=1.0        request rate (req/s) of the memory table
#   TTFT_P99=20     p99 TTFT target (s) of the rate search
#   ITERS=10        bisection steps after bracketing
#   PROFILES="vllm-v1 vllm-v0 contiguous contiguous:oracle contiguous-pow2 static"
# Exit 77 when the scenario's trace (in ../shared) is absent.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kvsim=${1:-${KVSIM:-$here/build/kvsim}}
scenario=${2:-$here/configs/scenarios/compare-sharegpt-a100.json}
requests=${REQUESTS:-2000}
rate=${RATE:-1.0}
target=${TTFT_P99:-20}
iters=${ITERS:-10}
profiles=${PROFILES:-"vllm-v1 vllm-v0 contiguous contiguous:oracle contiguous-pow2 static"}

[ -x "$kvsim" ] || { echo "compare_profiles: no kvsim binary at $kvsim" >&2; exit 2; }
[ -f "$scenario" ] || { echo "compare_profiles: no scenario $scenario" >&2; exit 2; }
lengths=$(awk -F'"' '/"file"/ { for (i = 1; i < NF; i++) if ($i == "file") { print $(i + 2); exit } }' "$scenario")
if [ -n "$lengths" ] && [ ! -f "$(dirname "$scenario")/$lengths" ]; then
  echo "SKIP: $(dirname "$scenario")/$lengths is absent"
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run PROFILE RATE: one run; prints "token_fraction unused_bytes frag_bytes
# p99_ttft finished rejected".
run() {
  # null: the default, accepted by every profile (oracle_lengths is the
  # contiguous profiles' own key, refused elsewhere).
  local name=${1%%:*} oracle=null
  [ "$1" != "$name" ] && oracle=true
  "$kvsim" run "$scenario" --quiet --no-band --out "$tmp/run" \
    --set "engine.profile=$name" --set "engine.oracle_lengths=$oracle" \
    --set "workload.synthetic.requests=$requests" \
    --set "workload.synthetic.arrival.rate=$2" >/dev/null
  awk '
    /"ttft_s"/ { in_ttft = 1 }
    in_ttft && /"p99"/ { p99 = $2; in_ttft = 0 }
    /"kv_allocated_token_fraction"/ { frac = $2 }
    /"kv_reserved_unused_bytes_mean"/ { unused = $2 }
    /"kv_internal_fragmentation_bytes_mean"/ { frag = $2 }
    /"finished":/ && !fin { fin = $2 }
    /"rejected":/ && !rej { rej = $2 }
    END { gsub(/,/, "", p99); gsub(/,/, "", frac); gsub(/,/, "", unused); gsub(/,/, "", frag)
          gsub(/,/, "", fin); gsub(/,/, "", rej)
          printf "%s %s %s %s %s %s\n", frac, unused, frag, p99 == "" || p99 == "null" ? "inf" : p99, fin, rej }
  ' "$tmp/run/summary.json"
}

# meets PROFILE RATE: 0 when p99 TTFT <= target.
meets() {
  local p99
  p99=$(run "$1" "$2" | awk '{ print $4 }')
  awk -v p="$p99" -v t="$target" 'BEGIN { exit !(p != "inf" && p + 0 <= t + 0) }'
}

# max_rate PROFILE: bracket from 0.25 req/s (doubling up or halving down),
# then bisect.
max_rate() {
  local lo hi=0.25
  if meets "$1" "$hi"; then
    lo=$hi
    while hi=$(awk -v h="$hi" 'BEGIN { print h * 2 }') && meets "$1" "$hi"; do
      lo=$hi
      if awk -v h="$hi" 'BEGIN { exit !(h >= 256) }'; then
        echo ">=256"
        return
      fi
    done
  else
    lo=$hi
    while hi=$lo && lo=$(awk -v l="$lo" 'BEGIN { print l / 2 }') && ! meets "$1" "$lo"; do
      if awk -v l="$lo" 'BEGIN { exit !(l < 0.001) }'; then
        echo "<0.001"
        return
      fi
    done
  fi
  for ((i = 0; i < iters; i++)); do
    local mid
    mid=$(awk -v a="$lo" -v b="$hi" 'BEGIN { printf "%.6f", (a + b) / 2 }')
    if meets "$1" "$mid"; then lo=$mid; else hi=$mid; fi
  done
  awk -v l="$lo" 'BEGIN { printf "%.3f\n", l }'
}

echo "scenario: $scenario"
echo "requests per run: $requests; memory columns at $rate req/s; rate search: p99 TTFT <= $target s"
printf '%-18s %-14s %10s %8s %14s %12s %12s %16s\n' profile reservation token_frac waste \
  unused_GiB_mean frag_MiB_mean "p99_ttft_s" "max_rate_req_s"
declare -A best
for p in $profiles; do
  case $p in
    vllm-v1 | vllm-v0) res=paged ;;
    contiguous) res=max_model_len ;;
    contiguous:oracle) res=oracle ;;
    contiguous-pow2) res=pow2 ;;
    static) res=max_model_len ;;
    *) res=- ;;
  esac
  read -r frac unused frag p99 fin rej < <(run "$p" "$rate")
  mr=$(max_rate "$p")
  best[$p]=$mr
  awk -v p="$p" -v r="$res" -v f="$frac" -v u="$unused" -v g="$frag" -v t="$p99" -v m="$mr" 'BEGIN {
    printf "%-18s %-14s %10.3f %7.1f%% %14.3f %12.1f %12.3f %16s\n",
           p, r, f, 100 * (1 - f), u / 2^30, g / 2^20, t, m }'
done
if [ -n "${best[vllm-v1]:-}" ] && [ -n "${best[static]:-}" ]; then
  awk -v a="${best[vllm-v1]}" -v b="${best[static]}" 'BEGIN {
    if (b + 0 > 0) printf "vllm-v1 sustains %.1fx the request rate of static at p99 TTFT <= target\n", a / b }'
fi
