#!/usr/bin/env bash
# test.sh - builds and runs the whole test suite on a fresh Debian 12 machine:
#   1. a Release build (what demo.sh builds) and every test, including the `large` ones;
#   2. an ASan+UBSan build and every test but the `large` ones;
#   3. a build without OpenSSL (-DONNXZ_WITH_OPENSSL=OFF) and every test but the `large`
#      ones: everything else works, crypto and checksums fail with a clear error;
#   4. a plain -O1 -g build and every test but the `large` and `runtime` ones under
#      valgrind memcheck:
#      every process of ours (test executables, the onnxz tool and the C drivers the Python
#      tests start) runs through tests/valgrind/memcheck.sh, and any error or definitely /
#      indirectly lost block fails the stage (tests that would take more than about 3
#      minutes under valgrind run a reduced mode: ONNXZ_TEST_REDUCED, tests/CMakeLists.txt);
#   5. the libFuzzer targets (clang, ASan+UBSan, tests/fuzz) from their seeds for a fixed
#      number of runs each from seed 1: the same inputs on every machine, so a red run is a
#      real defect; the crashing input's path is printed.
# The `runtime` tests (ONNX Runtime as an oracle, tests/runtime: about a minute and a half
# in Release; the sanitizer build runs them on the small corpus) run in stages 1 to 3;
# stage 4 leaves them out (-LE runtime): every onnxz process under memcheck would take them
# to a quarter of an hour, and what they check is what ORT reads, not our memory use,
# which the other tests cover under valgrind.
# Set ONNXZ_SKIP_SANITIZE=1, ONNXZ_SKIP_LARGE=1, ONNXZ_SKIP_NOSSL=1, ONNXZ_SKIP_VALGRIND=1 or
# ONNXZ_SKIP_FUZZ=1 to leave a part out while developing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
"$root/scripts/deps.sh" test

build() { # dir, extra cmake args...
  local dir=$1; shift
  cmake -S "$root" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
}
run_suite() { # dir, extra cmake args..., then ctest args after --
  local dir=$1; shift
  local cm=() ct=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do cm+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  ct=("$@")
  build "$dir" "${cm[@]}"
  space "$dir"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "${ct[@]}")
  rm -rf "$dir/testwork" # passed: its gigabytes of test files are not needed for the next stage
}
space() { # the free space where a stage writes its test files: tests need a few GiB
  df -h --output=avail,target "$1" | awk -v d="$1" 'NR == 2 {print "== free space for " d ": " $1 " on " $2}' || true
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
if [ "${ONNXZ_SKIP_VALGRIND:-0}" != 1 ]; then
  echo "== valgrind memcheck: all tests but the large and runtime ones"
  vg=$root/build-valgrind
  build "$vg" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g" \
    "-DONNXZ_TEST_WRAPPER=$root/tests/valgrind/memcheck.sh;$vg/memcheck"
  rm -rf "$vg/memcheck"
  space "$vg"
  failed=0
  (cd "$vg" && ctest --output-on-failure -j"$jobs" -LE 'large|runtime') || failed=1
  "$root/tests/valgrind/memcheck.sh" --check "$vg/memcheck" || failed=1 # reports of every run
  [ $failed = 0 ]
  rm -rf "$vg/testwork"
fi
if [ "${ONNXZ_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== libFuzzer targets: a fixed number of runs each, seed 1"
  cmake -S "$root" -B "$root/build-fuzz" -DCMAKE_C_COMPILER=clang -DONNXZ_FUZZ=ON >/dev/null
  cmake --build "$root/build-fuzz" -j"$jobs" --target fuzzers
  failed=0
  # About 9,000 runs a second for the parsers, 350 for fuzz_external (files on disk), 5,500
  # for fuzz_archive and 4,500 for fuzz_archive_roundtrip (archives in /dev/shm): about a
  # minute per target, two at a time.
  ONNXZ_FUZZ_JOBS=$jobs "$root/tests/fuzz/run_fuzzers.sh" --runs 400000 "$root/build-fuzz" \
    fuzz_decode_model fuzz_decode_any fuzz_consolidate fuzz_decrypt || failed=1
  ONNXZ_FUZZ_JOBS=$jobs "$root/tests/fuzz/run_fuzzers.sh" --runs 300000 "$root/build-fuzz" \
    fuzz_archive fuzz_archive_roundtrip || failed=1
  ONNXZ_FUZZ_JOBS=$jobs "$root/tests/fuzz/run_fuzzers.sh" --runs 20000 "$root/build-fuzz" \
    fuzz_external fuzz_external-no-openat2 || failed=1
  [ $failed = 0 ]
fi
echo "== all tests passed"
