#!/usr/bin/env bash
# test.sh - builds and runs every test on a fresh Debian 12 machine (CI runs it: .ci/run).
#
# Stages (each prints its wall time as it ends, and a summary at the end):
#   gates      pyflakes over the Python of python/, bench/, tests/, scripts/ and samples/;
#              clang-format (.clang-format) over every C and C++ file in git, the
#              extension and the tests included: a file it would change fails the gate
#              (fix with `git ls-files '*.c' '*.h' '*.cc' | xargs clang-format -i`);
#              the layers and symbols checks run in every build below (ctest arch.*);
#   release    a Release build (what demo.sh builds) and every test, the `large` ones last;
#   asan       an ASan+UBSan build (clang) and every test but the `large` ones;
#   nossl      a build without OpenSSL (-DONNXZ_WITH_OPENSSL=OFF) and every test but the
#              `large` ones: everything else works, crypto and checksums fail with a clear
#              error;
#   valgrind   a plain -O1 -g build and the tests below under valgrind memcheck;
#   fuzz       the libFuzzer targets (clang, ASan+UBSan, tests/fuzz) from their seeds for a
#              fixed number of runs each from seed 1: the same inputs on every machine, so
#              a red run is a real defect; the crashing input's path is printed.
#
# Side by side, on a 2-core machine: the release tests leave the cores idle while they wait
# on the disk, on nginx and on the stopped processes of the hostile scenes, so the builds of
# the asan, fuzz, nossl and valgrind stages run meanwhile at the lowest priority (nice 19:
# they take only CPU time nothing else wants, and never slow a test down). The `large`
# release tests mostly write and read gigabytes, so the fuzzers run beside them, at nice 10
# (each input has 60 s before libFuzzer calls it a timeout, far above what it needs). A
# background stage's output goes to build-logs/STAGE.log and is printed when it is joined.
#
# Valgrind runs where it finds what the sanitizer build cannot: reads of uninitialised
# memory (MemorySanitizer needs an instrumented libc; ASan does not see them). That is
# the library's own code, exercised by the C unit tests (unit.*, headers.*, schema), the
# codec, external-data, ZIP, archive and crypto drivers (oracle_*, external.*, zip.*,
# crypto.*, archive.{convert,open,read_tensor,inspect}), the ABI test and the fuzz corpora
# and crashers replayed (fuzz.*: the hostile inputs found so far). Every process of ours
# those tests start runs under memcheck (tests/valgrind/memcheck.sh, CMake option
# ONNXZ_TEST_WRAPPER). Left to the ASan build: the tests of the tool's arguments and
# output (cli.*, hundreds of processes whose library paths the drivers above cover), the
# Python package (python.*), the hostile scenes and HTTP tests (hostile*, remote.*: timing
# and processes stopped at points, which valgrind's 30-100x slowdown distorts),
# archive_edit.*, archive.models_and_clients and install.*; and the `large` and `runtime`
# tests everywhere but in the release stage.
# Tests that would take minutes under valgrind run a reduced mode (ONNXZ_TEST_REDUCED,
# tests/CMakeLists.txt).
#
# Set ONNXZ_SKIP_SANITIZE=1, ONNXZ_SKIP_LARGE=1, ONNXZ_SKIP_NOSSL=1, ONNXZ_SKIP_VALGRIND=1 or
# ONNXZ_SKIP_FUZZ=1 to leave a part out while developing.
set -euo pipefail
set -m # each background stage in a process group of its own, which an early exit ends
root=$(cd "$(dirname "$0")/.." && pwd)
jobs=$(nproc)
"$root/scripts/deps.sh" test
logs=$root/build-logs
rm -rf "$logs"
mkdir -p "$logs"
skip() { [ "${!1:-0}" = 1 ]; }

# The tests valgrind runs (see above): a ctest name regex.
valgrind_tests='^(schema_|headers\.|unit\.|oracle_|external\.|zip\.|crypto\.|api\.|fuzz\.)|^archive\.(convert|open|read_tensor|reader|slice|read_many|info|inspect|stub|unpack|meta)$'

# ---- timing ------------------------------------------------------------------------
t_all=$(date +%s)
record() { # name, seconds, status: one line of the summary
  printf '%-34s %3d:%02d  %s\n' "$1" $(($2 / 60)) $(($2 % 60)) "$3" >>"$logs/summary"
  echo "== $1: $2 s ($3)"
}
timed() { # name, command...: runs it in the foreground and records its wall time
  local name=$1 t0 rc=0
  shift
  echo "== $name"
  t0=$(date +%s)
  "$@" || rc=$?
  record "$name" $(($(date +%s) - t0)) "$([ $rc = 0 ] && echo passed || echo "FAILED ($rc)")"
  return $rc
}
declare -A bg_pid
background() { # name, nice level, command...: starts it, output to build-logs/NAME.log
  local name=$1 level=$2
  shift 2
  echo "== $name: started in the background (nice $level; build-logs/$name.log)"
  (
    renice -n "$level" -p "$BASHPID" >/dev/null # this subshell and all it starts
    t0=$(date +%s)
    rc=0
    "$@" >"$logs/$name.log" 2>&1 || rc=$?
    echo "$(($(date +%s) - t0)) $rc" >"$logs/$name.status"
    exit $rc
  ) &
  bg_pid[$name]=$!
}
join() { # name: waits for a background stage, prints its output and records its time
  local name=$1 rc=0 secs status
  wait "${bg_pid[$name]}" || rc=$?
  unset "bg_pid[$name]"
  echo "== $name (background) output:"
  cat "$logs/$name.log"
  read -r secs status <"$logs/$name.status" || { secs=0; status=$rc; }
  record "$name (background)" "$secs" "$([ "$status" = 0 ] && echo passed || echo "FAILED ($status)")"
  return $rc
}
wait_for() { # stage: waits for the marker of its background build; fails if it failed
  while [ ! -e "$logs/$1.built" ]; do
    if ! kill -0 "${bg_pid[builds]}" 2>/dev/null; then
      [ -e "$logs/$1.built" ] && return 0
      join builds || true
      record "$1: build" 0 "FAILED (build-logs/builds.log)"
      echo "== the $1 build failed: its output is above and in build-logs/builds.log" >&2
      return 1
    fi
    sleep 2
  done
}
summary() {
  local rc=$? name
  for name in "${!bg_pid[@]}"; do # a stage failed first: the background ones are not needed
    echo "== stopping $name (background)"
    kill -- "-${bg_pid[$name]}" 2>/dev/null || true
  done
  echo "== stage times (wall; background stages overlap the others):"
  cat "$logs/summary" 2>/dev/null || true
  local dt=$(($(date +%s) - t_all))
  printf '%-34s %3d:%02d\n' "total" $((dt / 60)) $((dt % 60))
  [ $rc = 0 ] && echo "== all tests passed" || echo "== FAILED (exit $rc)"
}
trap summary EXIT

# ---- builds and suites -------------------------------------------------------------
configure() { # dir, extra cmake args... (with the test points the hostile and edit tests need)
  local dir=$1
  shift
  cmake -S "$root" -B "$dir" -DONNXZ_TEST_POINTS=ON "$@" >/dev/null
}
build() { # dir, extra cmake args... (callers test its status: `set -e` does not hold there)
  configure "$@" && cmake --build "$1" -j"$jobs"
}
space() { # the free space where a stage writes its test files: tests need a few GiB
  df -h --output=avail,target "$1" | awk -v d="$1" 'NR == 2 {print "== free space for " d ": " $1 " on " $2}' || true
}
suite() { # dir, ctest args...
  local dir=$1
  shift
  space "$dir"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@")
}

asan_args=(-DCMAKE_BUILD_TYPE=Debug -DONNXZ_SANITIZE=ON -DCMAKE_C_COMPILER=clang)
nossl_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXZ_WITH_OPENSSL=OFF)
vg=$root/build-valgrind
vg_args=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-O1 -g"
         "-DONNXZ_TEST_WRAPPER=$root/tests/valgrind/memcheck.sh;$vg/memcheck")
fuzz_args=(-DCMAKE_C_COMPILER=clang -DONNXZ_FUZZ=ON)

fuzz_build() {
  configure "$root/build-fuzz" "${fuzz_args[@]}" &&
    cmake --build "$root/build-fuzz" -j"$jobs" --target fuzzers
}
later_build() { # stage, command...: the build a later stage needs; its marker if it built
  local stage=$1
  shift
  if ! "$@"; then
    echo "== the $stage build FAILED (build-logs/builds.log)"
    return 1
  fi
  touch "$logs/$stage.built"
}
# The later stages' builds, in the order they are needed. It runs in the background, where
# `set -e` does not hold (it is tested), so each step's status is tested here: the first
# that fails ends it, and the stage waiting for that build fails (wait_for).
later_builds() {
  skip ONNXZ_SKIP_FUZZ || later_build fuzz fuzz_build || return 1
  skip ONNXZ_SKIP_SANITIZE || later_build asan build "$root/build-asan" "${asan_args[@]}" || return 1
  skip ONNXZ_SKIP_NOSSL || later_build nossl build "$root/build-nossl" "${nossl_args[@]}" || return 1
  skip ONNXZ_SKIP_VALGRIND || later_build valgrind build "$vg" "${vg_args[@]}" || return 1
}

fuzzers() {
  local failed=0
  # About 9,000 runs a second for the parsers, 350 for fuzz_external (files on disk), 5,500
  # for fuzz_archive and 4,500 for fuzz_archive_roundtrip (archives in /dev/shm): about a
  # minute per target on an idle core, two at a time.
  ONNXZ_FUZZ_JOBS=$jobs "$root/tests/fuzz/run_fuzzers.sh" --runs 400000 "$root/build-fuzz" \
    fuzz_decode_model fuzz_decode_any fuzz_consolidate fuzz_decrypt || failed=1
  ONNXZ_FUZZ_JOBS=$jobs "$root/tests/fuzz/run_fuzzers.sh" --runs 300000 "$root/build-fuzz" \
    fuzz_archive fuzz_archive_roundtrip || failed=1
  ONNXZ_FUZZ_JOBS=$jobs "$root/tests/fuzz/run_fuzzers.sh" --runs 20000 "$root/build-fuzz" \
    fuzz_external fuzz_external-no-openat2 || failed=1
  [ $failed = 0 ]
}

valgrind_suite() {
  rm -rf "$vg/memcheck"
  local failed=0
  suite "$vg" -R "$valgrind_tests" -LE 'large|runtime' || failed=1
  "$root/tests/valgrind/memcheck.sh" --check "$vg/memcheck" || failed=1 # reports of every run
  [ $failed = 0 ]
}

pyflakes_gate() {
  find "$root/python" "$root/bench" "$root/tests" "$root/scripts" "$root/samples" -name '*.py' \
    -not -path '*/build*' -print0 | sort -z | xargs -0 /usr/bin/python3 -m pyflakes
}

format_gate() {
  (cd "$root" && git ls-files -z '*.c' '*.h' '*.cc' | xargs -0 clang-format --dry-run -Werror)
}

# ---- the run -----------------------------------------------------------------------
timed "gates: pyflakes" pyflakes_gate
timed "gates: clang-format" format_gate
timed "release: build" build "$root/build-test" -DCMAKE_BUILD_TYPE=Release
background builds 19 later_builds
timed "release: tests but large" suite "$root/build-test" -LE large
if ! skip ONNXZ_SKIP_FUZZ; then
  wait_for fuzz
  background fuzz 10 fuzzers
fi
if ! skip ONNXZ_SKIP_LARGE; then
  timed "release: large tests" suite "$root/build-test" -L large
fi
rm -rf "$root/build-test/testwork" # passed: its gigabytes of test files are not needed
if ! skip ONNXZ_SKIP_SANITIZE; then
  wait_for asan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    timed "asan: tests but large" suite "$root/build-asan" -LE large
  rm -rf "$root/build-asan/testwork"
fi
if ! skip ONNXZ_SKIP_NOSSL; then
  wait_for nossl
  timed "nossl: tests but large" suite "$root/build-nossl" -LE large
  rm -rf "$root/build-nossl/testwork"
fi
if ! skip ONNXZ_SKIP_VALGRIND; then
  wait_for valgrind
  timed "valgrind: memcheck of the C tests" valgrind_suite
  rm -rf "$vg/testwork"
fi
join builds
if ! skip ONNXZ_SKIP_FUZZ; then join fuzz; fi
