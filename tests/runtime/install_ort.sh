#!/usr/bin/env bash
# install_ort.sh DIR VERSION - installs onnxruntime-node@VERSION (ONNX Runtime's CPU build
# for node) into DIR/node_modules, once per build tree: a second run with the same version
# in place does nothing. `--ignore-scripts` skips the package's postinstall, which fetches
# a CUDA provider from outside npm; the CPU runtime ships inside the package itself.
# A failed install fails the test run (the `runtime` tests need it; CI reaches npm).
set -euo pipefail
dir=$1 version=$2
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "install_ort.sh: node and npm are needed (scripts/deps.sh test)" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
pkg=./node_modules/onnxruntime-node/package.json
if [ -f "$pkg" ] && node -e "process.exit(require('$pkg').version === '$version' ? 0 : 1)"; then
  exit 0
fi
[ -f package.json ] || echo '{"private": true}' > package.json
npm install --ignore-scripts --no-audit --no-fund --loglevel=error "onnxruntime-node@$version"
node -e "require('./node_modules/onnxruntime-node')" # the native binding loads here
