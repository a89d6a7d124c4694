#!/usr/bin/env bash
# demo.sh - the main job on a fresh Debian 12 machine: install what is missing, build,
# then pack the bundled sample model into an .onnxz archive and show it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh" build
echo "demo: building onnxz (Release, without tests) in $root/build; this takes a minute..."
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DONNXZ_BUILD_TESTS=OFF >/dev/null
cmake --build "$root/build" -j"$(nproc)" >/dev/null
out="$root/out"
mkdir -p "$out"
onnxz="$root/build/tools/onnxz"
echo "demo: built $onnxz (put $root/build/tools on PATH, or: sudo cmake --install $root/build)"
echo "demo: packing samples/mlp.onnx into $out/mlp.onnxz and showing it"
set -x
"$onnxz" convert -f "$root/samples/mlp.onnx" "$out/mlp.onnxz"   # pack: tensors 64-byte aligned
"$onnxz" ls "$out/mlp.onnxz"                                      # entries, offsets, alignment
"$onnxz" verify "$out/mlp.onnxz"                                  # every check, CRCs included
"$onnxz" info "$out/mlp.onnxz"
"$onnxz" convert -f "$out/mlp.onnxz" "$out/mlp.onnx"             # and back
cmp "$root/samples/mlp.onnx" "$out/mlp.onnx"                     # the very same bytes
