#!/usr/bin/env bash
# install_sigstore.sh DIR - installs sigstore's JavaScript verifier (@sigstore/verify and
# @sigstore/bundle, pinned) into DIR/node_modules, once per build tree: a second run with
# the same versions in place does nothing. --ignore-scripts: nothing runs at install; the
# packages are plain JavaScript. A failed install fails the test run (crypto.sign_sigstore
# needs it; CI reaches npm).
set -euo pipefail
dir=$1
verify=4.1.3 bundle=5.0.1
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "install_sigstore.sh: node and npm are needed (scripts/deps.sh test)" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
have() { node -e "process.exit(require('./node_modules/$1/package.json').version === '$2' ? 0 : 1)" 2>/dev/null; }
if have @sigstore/verify "$verify" && have @sigstore/bundle "$bundle"; then
  exit 0
fi
[ -f package.json ] || echo '{"private": true}' > package.json
npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
  "@sigstore/verify@$verify" "@sigstore/bundle@$bundle"
node -e "require('./node_modules/@sigstore/verify'); require('./node_modules/@sigstore/bundle')"
