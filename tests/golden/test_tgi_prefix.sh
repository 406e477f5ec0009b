#!/usr/bin/env bash
# TGI's prefix reuse by attention backend (launcher resolve_attention,
# backends/v3/src/radix.rs): flashinfer matches every token (BLOCK_SIZE 1),
# flashdecoding only whole 256-token blocks, paged attention none; and
# nothing is ever preempted. $1 = kvsim binary, $2 = source dir.
set -u
kvsim=$1
src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
scen="$src/configs/scenarios/shared-system-prompt.json"
for a in flashinfer flashdecoding paged; do
  "$kvsim" run "$scen" --set engine.profile=tgi --set engine.attention=$a \
    --set engine.max_batch_prefill_tokens=16384 --set workload.synthetic.requests=300 \
    --out "$tmp/$a" --quiet --check-invariants || fail "$a run exited $?"
done
read -r fi fd pg pre fin <<<"$(python3 - "$tmp" <<'PY'
import json, sys
d = {a: json.load(open(f"{sys.argv[1]}/{a}/summary.json")) for a in ("flashinfer", "flashdecoding", "paged")}
print(*(d[a]["prefix_cache"]["hit_rate"] for a in d),
      sum(d[a]["preemptions"]["total"] for a in d),
      min(d[a]["requests"]["finished"] for a in d))
PY
)"
python3 -c "import sys; a, b, c = map(float, sys.argv[1:]); sys.exit(not (a > b > 0.5 and c == 0))" "$fi" "$fd" "$pg" ||
  fail "hit rates flashinfer $fi > flashdecoding $fd > 0.5, paged $pg = 0"
[ "$pre" = 0 ] || fail "TGI preempted $pre times"
[ "$fin" = 300 ] || fail "every request finishes: $fin"
echo "ok: hit rate flashinfer $fi, flashdecoding $fd, paged $pg"
