#!/usr/bin/env bash
# test.sh - builds and runs the whole test suite on a fresh Debian 12 machine:
#   1. a Release build (what demo.sh builds) and every test, including the `large` ones;
#   2. an ASan+UBSan build and every test but the `large` ones;
#   3. a build without OpenSSL (-DONNXZ_WITH_OPENSSL=OFF) and every test but the `large`
#      ones: everything else works, crypto and checksums fail with a clear error.
# Set ONNXZ_SKIP_SANITIZE=1 or ONNXZ_SKIP_LARGE=1 to leave a part out while developing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
"$root/scripts/deps.sh" test

run_suite() { # dir, extra cmake args..., then ctest args after --
  local dir=$1; shift
  local cm=() ct=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do cm+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ct=("$@")
  cmake -S "$root" -B "$dir" "${cm[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "${ct[@]}")
}

large=()
[ "${ONNXZ_SKIP_LARGE:-0}" = 1 ] && large=(-LE large)
echo "== release build: all tests"
run_suite "$root/build-test" -DCMAKE_BUILD_TYPE=Release -- "${large[@]}"

if [ "${ONNXZ_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== ASan+UBSan build: all tests but the large ones"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    run_suite "$root/build-asan" -DCMAKE_BUILD_TYPE=Debug -DONNXZ_SANITIZE=ON -DCMAKE_C_COMPILER=clang -- -LE large
fi
if [ "${ONNXZ_SKIP_NOSSL:-0}" != 1 ]; then
  echo "== build without OpenSSL: all tests but the large ones"
  run_suite "$root/build-nossl" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXZ_WITH_OPENSSL=OFF -- -LE large
fi
echo "== all tests passed"
