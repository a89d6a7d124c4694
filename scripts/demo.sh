#!/usr/bin/env bash
# demo.sh - the main job on a fresh Debian 12 machine: install what is missing, build,
# then take the bundled sample model through the tool.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh" build
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DONNXZ_BUILD_TESTS=OFF >/dev/null
cmake --build "$root/build" -j"$(nproc)" >/dev/null
out="$root/out"
mkdir -p "$out"
onnxz="$root/build/tools/onnxz"
set -x
"$onnxz" convert -f "$root/samples/mlp.onnx" "$out/mlp.onnx"
cmp "$root/samples/mlp.onnx" "$out/mlp.onnx"
"$onnxz" info "$out/mlp.onnx"
