#!/usr/bin/env bash
# The Python module (python/) over the installed library, as docs/library.md's
# "Using kvsim from Python" installs it: cmake --install into a temporary
# prefix, pip install of python/ (offline: Debian's setuptools, no build
# isolation) into a temporary folder, the one-line use of docs/library.md, then
# python/tests with pytest. Pytest's exit 5 (no test collected) fails.
# Skipped (77) under the sanitizers (an ASan library cannot be loaded into
# an uninstrumented python) and when no python3 has pytest.
# Usage: test_python.sh KVSIM SRC_DIR BUILD_DIR
set -euo pipefail
kvsim=$1 src=$2 build=$3
if [ "${KVSIM_SANITIZED:-0}" = 1 ]; then
  echo "sanitized build: libkvsim.so needs the ASan runtime, which python3 lacks; the Release pass runs this"
  exit 77
fi
py=
for cand in "${KVSIM_PYTHON:-python3}" /usr/bin/python3; do
  if command -v "$cand" >/dev/null && "$cand" -c 'import pytest, setuptools' 2>/dev/null; then py=$cand; break; fi
done
[ -n "$py" ] || { echo "no python3 with pytest and setuptools (scripts/deps.sh --test installs python3-pytest): skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_python: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
cp -r "$src/python" "$tmp/python-src" # pip builds in the folder it is given
"$py" -m pip install --quiet --no-build-isolation --no-deps --target "$tmp/site" "$tmp/python-src" \
  >"$tmp/pip.log" 2>&1 || { cat "$tmp/pip.log"; fail "pip install"; }
export PYTHONPATH=$tmp/site KVSIM_PREFIX=$tmp/prefix KVSIM_BIN=$kvsim KVSIM_SRC=$src
unset KVSIM_LIB

# docs/library.md's line, from the checkout, against the binary's own summary.
cd "$src"
got=$("$py" -c "import kvsim; s = kvsim.run('configs/scenarios/shared-system-prompt.json'); print(s['latency']['ttft_s']['p99'])")
"$kvsim" run configs/scenarios/shared-system-prompt.json --quiet --no-band --no-verify-advice --out "$tmp/run"
want=$("$py" -c "import json, sys; print(json.load(open(sys.argv[1]))['latency']['ttft_s']['p99'])" "$tmp/run/summary.json")
[ "$got" = "$want" ] || fail "kvsim.run TTFT p99 $got, kvsim run $want"
"$py" -c "import kvsim, sys; sys.exit(not kvsim.library_path().startswith('$tmp/prefix/'))" ||
  fail "the module did not load the installed library"

set +e
"$py" -m pytest -q -p no:cacheprovider "$src/python/tests"
rc=$?
set -e
[ $rc -ne 5 ] || fail "pytest collected no test"
[ $rc -eq 0 ] || fail "pytest exited $rc"
echo "python: kvsim.run TTFT p99 $got = kvsim run's; pytest passed"
