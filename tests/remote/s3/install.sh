#!/usr/bin/env bash
# install.sh DIR - installs the S3 tests' npm packages (package.json beside this script,
# pinned by package-lock.json: s3rver, @aws-sdk/client-s3, @smithy/signature-v4,
# @aws-crypto/sha256-js) into DIR/node_modules with `npm ci --ignore-scripts`. Once per
# DIR: a second run with the same lock file in place does nothing, and npm's own cache
# makes the install in another build tree an offline copy (--prefer-offline). A failed
# install fails the test run (the remote.s3 tests need it; CI reaches npm).
set -euo pipefail
dir=$1
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "install.sh: node and npm are needed (scripts/deps.sh test)" >&2; exit 1; }
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9 # two build trees' tests may install at once
stamp=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$stamp" ] && [ -d "$dir/node_modules" ]; then
  exit 0
fi
rm -f "$dir/.installed"
cp "$here/package.json" "$here/package-lock.json" "$dir/"
cd "$dir"
npm ci --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error
# each package the tests require loads here
node -e "for (const m of ['s3rver', '@aws-sdk/client-s3', '@smithy/signature-v4', '@aws-crypto/sha256-js']) require(m)"
echo "$stamp" >.installed
