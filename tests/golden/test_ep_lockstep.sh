#!/usr/bin/env bash
# Data-parallel ranks of an expert-parallel model step together (vLLM
# DPEngineCoreProc runs a dummy batch on an idle rank; the MoE collectives
# join the ranks every layer): a short prompt arriving on one rank while the
# other runs a long prefill waits for that step to end, so its first token
# comes after the long one's. Without expert parallelism the replicas are
# independent and the short one is served at once.
set -euo pipefail
kvsim=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/tests/golden/data/ep-lockstep.json"
first() { awk -F, -v id="$2" 'NR > 1 && $1 == id { print $5 }' "$1/requests.csv"; }
"$kvsim" run "$scen" --quiet --out "$tmp/ep" --check-invariants
"$kvsim" run "$scen" --quiet --out "$tmp/dp" --set hardware.expert_parallel_size=1
a=$(first "$tmp/ep" 0); b=$(first "$tmp/ep" 1)
c=$(first "$tmp/dp" 0); d=$(first "$tmp/dp" 1)
echo "first tokens with EP: $a s and $b s; without: $c s and $d s"
awk -v a="$a" -v b="$b" 'BEGIN { exit !(b > a) }' || { echo "EP ranks did not step together"; exit 1; }
awk -v c="$c" -v d="$d" 'BEGIN { exit !(d < c) }' || { echo "independent replicas should not wait"; exit 1; }
