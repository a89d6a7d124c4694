#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR WORK C_COMPILER [WRAPPER...] - cmake --install into a
# fresh prefix, then build a consumer against it four ways (CMake package shared and static,
# pkg-config shared and static) and run each on the sample model (under WRAPPER, the
# ONNXZ_TEST_WRAPPER command of tests/CMakeLists.txt, when given).
set -euo pipefail
build=$1 src=$2 work=$3 cc=$4
shift 4
wrapper=("$@")
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
model="$src/samples/mlp.onnx"
fail=0
# The manual page comes with the tool.
if [ -s "$prefix/share/man/man1/onnxz.1" ]; then echo "ok   man page"; else echo "FAIL no share/man/man1/onnxz.1 in the prefix"; fail=1; fi
# The public headers, the export marks and the umbrella are installed; the header the
# libraries and the tool share (libonnxcore/internal) is not.
for h in onnxcore/onnxcore.h onnxcore/export.h onnxz/onnxz.h onnxz/export.h; do
  if [ -s "$prefix/include/$h" ]; then echo "ok   include/$h"; else echo "FAIL no include/$h"; fail=1; fi
done
if find "$prefix" -name onnxcore_shared.h | grep -q .; then
  echo "FAIL the internal onnxcore_shared.h is installed"; fail=1
else
  echo "ok   no internal header installed"
fi
run() { # name, executable, [env]
  local name=$1 exe=$2
  if out=$(LD_LIBRARY_PATH="${3:-}" "${wrapper[@]}" "$exe" "$model" "$work/$name.onnxz" 2>&1); then
    echo "ok   $name: $out"
  else
    echo "FAIL $name: $out"; fail=1
  fi
}
for kind in shared static; do
  flag=OFF; [ $kind = static ] && flag=ON
  cmake -S "$src/tests/install/consumer" -B "$work/cmake-$kind" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_C_COMPILER="$cc" -DCONSUMER_STATIC=$flag >/dev/null
  cmake --build "$work/cmake-$kind" >/dev/null
  run "cmake-$kind" "$work/cmake-$kind/consumer"
done
# The shared consumer must really use the installed .so, the static one must not need it.
# (ldd's output is captured first: with pipefail, grep -q closing the pipe early could
# fail the pipeline through ldd's SIGPIPE.)
shared_libs=$(ldd "$work/cmake-shared/consumer")
static_libs=$(ldd "$work/cmake-static/consumer")
case "$shared_libs" in *"$prefix/lib/libonnxz.so"*) ;; *) echo "FAIL shared consumer does not load $prefix/lib/libonnxz.so"; fail=1 ;; esac
case "$static_libs" in *libonnx*) echo "FAIL static consumer needs a shared onnx library"; fail=1 ;; esac
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046
"$cc" -o "$work/pc-shared" "$src/tests/install/consumer/main.c" $(pkg-config --cflags --libs onnxz)
run pc-shared "$work/pc-shared" "$prefix/lib"
# shellcheck disable=SC2046
"$cc" -o "$work/pc-static" "$src/tests/install/consumer/main.c" $(pkg-config --cflags onnxz) \
      -Wl,-Bstatic -lonnxz -lonnxcore -Wl,-Bdynamic -L"$prefix/lib" \
      $(pkg-config --libs-only-other --libs-only-l --static onnxz | sed 's/-lonnxz//; s/-lonnxcore//g')
run pc-static "$work/pc-static"
exit $fail
