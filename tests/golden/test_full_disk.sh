#!/usr/bin/env bash
# A full disk (a 64 KiB tmpfs, filled to leave 0 to 3 pages): `kvsim sweep`
# (with and without --report, --jobs 1 and 2) exits 2 naming the file and
# leaves nothing of itself: no sweep.csv of ENOSPC rows, no runNNNN/, no
# --out folder it made; `sweep --merge` onto it leaves no empty --out.
# Before: the sweep exited 1 with sweep.csv and run0001/summary.json left.
# Needs mount(8) of a tmpfs (root or a user namespace): skipped otherwise.
set -u
kvsim=$(realpath "$1")
src=$2
tmp=$(mktemp -d)
mnt=$tmp/mnt
mkdir -p "$mnt"
trap 'umount "$mnt" 2>/dev/null; rm -rf "$tmp"' EXIT
if ! mount -t tmpfs -o size=64k tmpfs "$mnt" 2>"$tmp/mount.err"; then
  echo "skipped: cannot mount a tmpfs here ($(head -1 "$tmp/mount.err")); run as root to test a full disk"
  exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$tmp/g.json" <<JSON
{ "name": "g", "scenario": "$src/tests/golden/data/small-synthetic.json",
  "set": { "workload.synthetic.requests": 10 }, "grid": { "engine.max_num_seqs": [2, 4] } }
JSON
fill() {  # PAGES: fill the tmpfs but PAGES pages of 4 KiB
  rm -rf "${mnt:?}"/*
  cat /dev/zero >"$mnt/fill" 2>/dev/null
  truncate -s "-$(($1 * 4096))" "$mnt/fill"
}
# The sweep as it ran on an empty disk: it fits in 4 pages (2 summaries,
# sweep.csv, REPORT.md); each fill below cuts it at another file.
"$kvsim" sweep "$tmp/g.json" --out "$mnt/ok" --report --quiet || fail "the sweep fails on an empty disk"
rm -rf "${mnt:?}/ok"
for pages in 0 1 2 3; do
  for extra in "" "--report" "--jobs 2"; do
    fill $pages
    # shellcheck disable=SC2086
    "$kvsim" sweep "$tmp/g.json" --out "$mnt/sw" --quiet $extra >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 2 ] || fail "$pages pages free, sweep $extra: exit $rc, want 2: $(cat "$tmp/err")"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "No space left on device" "$tmp/err" ||
      fail "$pages pages free, sweep $extra: one line naming ENOSPC: $(cat "$tmp/err")"
    [ ! -e "$mnt/sw" ] || fail "$pages pages free, sweep $extra left: $(find "$mnt/sw")"
  done
done
# --merge onto a full disk: the folders it made go again.
"$kvsim" sweep "$tmp/g.json" --shard 0/2 --out "$tmp/s0" >/dev/null &&
  "$kvsim" sweep "$tmp/g.json" --shard 1/2 --out "$tmp/s1" >/dev/null || fail "shards"
fill 0
"$kvsim" sweep --merge "$tmp/s0" "$tmp/s1" --out "$mnt/m/n" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q "No space left on device" "$tmp/err" || fail "merge onto a full disk: exit $rc: $(cat "$tmp/err")"
[ ! -e "$mnt/m" ] || fail "merge left $(find "$mnt/m")"
echo "ok: a sweep and a merge on a full disk exit 2 and leave nothing"
