#!/usr/bin/env bash
# docs/scenario.md's table of every parameter is the registry's: what
# `kvsim list params` prints today, byte for byte. After a change to
# sim/src/core/params.c regenerate it between the two markers with
#   kvsim list params
set -u
kvsim=$1 src=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
doc="$src/docs/scenario.md"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$kvsim" list params >"$tmp/generated" || fail "kvsim list params exited $?"
[ -s "$tmp/generated" ] || fail "kvsim list params printed nothing"
sed -n '/^<!-- BEGIN kvsim list params -->$/,/^<!-- END kvsim list params -->$/p' "$doc" |
  sed '1d;$d' >"$tmp/committed"
[ -s "$tmp/committed" ] || fail "$doc has no table between the markers"
diff -u "$tmp/committed" "$tmp/generated" >"$tmp/diff" ||
  fail "$doc's parameter table is not the registry's (regenerate it with kvsim list params): $(cat "$tmp/diff")"
# Every key of the registry is in the table, once.
n=$(grep -c '^| `' "$tmp/committed")
[ "$n" -ge 60 ] || fail "only $n parameters in the table"
echo "ok: $n parameters"
