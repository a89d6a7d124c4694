#!/bin/sh
# run_pytest.sh SRC BUILD WORK TOOL CORPUS CC [asan] - the onnxz Python package as a user
# gets it: a fresh venv (--system-site-packages: Debian's numpy, onnx and pytest), `pip
# install --no-index SRC/python` (offline: the in-tree backend builds the extension against
# BUILD's static libraries), then its tests with Debian's python3-pytest: SRC/python/tests,
# or the directory ONNXZ_PYTEST_DIR names (tests/hostile/python, label hostile).
#   asan: the extension built with -fsanitize=address,undefined by CC (the compiler of
#   BUILD, whose libraries carry the sanitizer), Python run with the ASan runtime preloaded
#   (leak detection off: the interpreter keeps memory to its end). The RSS test is left out
#   there: ASan's quarantine holds freed memory by design.
set -eu
src=$1 build=$2 work=$3 tool=$4 corpus=$5 cc=$6 mode=${7:-}
py=/usr/bin/python3
tests=${ONNXZ_PYTEST_DIR:-$src/python/tests}
rm -rf "$work"
mkdir -p "$work"
"$py" -m venv --system-site-packages "$work/venv"
export ONNXZ_PREBUILT="$build" ONNXZ_CC="$cc"
deselect=""
if [ "$mode" = asan ]; then
  export ONNXZ_SANITIZE=1
  case "$("$cc" --version)" in
    *clang*) rt=$("$cc" -print-file-name=libclang_rt.asan-x86_64.so) ;;
    *) rt=$("$cc" -print-file-name=libasan.so) ;;
  esac
  deselect="not rss"
fi
"$work/venv/bin/pip" install -q --no-index --no-cache-dir "$src/python"
cd "$work"
export ONNXZ_TOOL="$tool" ONNXZ_CORPUS="$corpus"
if [ "$mode" = asan ]; then
  LD_PRELOAD="$rt" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    exec "$work/venv/bin/python" -B -m pytest -q -p no:cacheprovider -k "$deselect" "$tests"
fi
exec "$work/venv/bin/python" -B -m pytest -q -p no:cacheprovider "$tests"
