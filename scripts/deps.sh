#!/usr/bin/env bash
# deps.sh [build|test] - installs the Debian packages onnxz needs, only those missing.
#   build: compiler, cmake, zlib, OpenSSL and libcurl headers
#   test:  build + the independent oracles the tests compare against (python3-onnx and
#          libprotobuf via python3-protobuf, protoc, ZIP clients, python3-cryptography),
#          valgrind (the memcheck stage), nginx-light (the `remote` tests serve models
#          over HTTP and HTTPS from a private nginx on 127.0.0.1), strace (hostile_devices: how a device node is
#          opened); python3-dev, python3-venv and python3-pytest (the Python package's
#          tests: a venv, pip install --no-index ./python, pytest); for the `runtime`
#          tests python3-torch (the PyTorch exports of their corpus, about 50 MB to
#          download, two minutes to install) and node with npm (onnxruntime-node
#          comes from npm in the test run: install_ort.sh), from Debian only when no
#          node / npm is on PATH (a NodeSource node bundles npm); python3-pyflakes and
#          clang-format (the gates over the project's Python and C)
set -euo pipefail
what=${1:-build}
pkgs=(cmake gcc make zlib1g-dev libssl-dev libcurl4-openssl-dev)
if [ "$what" = test ]; then
  pkgs+=(g++ clang libclang-rt-14-dev python3 python3-onnx python3-numpy python3-protobuf protobuf-compiler
         unzip p7zip-full zipalign zipcmp libarchive-tools python3-cryptography pkgconf valgrind groff-base
         python3-torch strace python3-dev python3-venv python3-pytest nginx-light
         python3-pyflakes clang-format)
  command -v node >/dev/null || pkgs+=(nodejs)
  command -v npm >/dev/null || pkgs+=(npm)
fi
missing=()
for p in "${pkgs[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true) # no pipe: pipefail-safe
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps.sh: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
