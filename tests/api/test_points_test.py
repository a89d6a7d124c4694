#!/usr/bin/env python3
"""Test points only in test builds (libonnxcore/private/onnxcore_private.h, spec/security.md
S-4).

The list file names, under "without", binaries built without ONNXZ_TEST_POINTS (the
libraries and the tool of a default build, or, in a test build, files that have points
compiled once more without the option) and, under "with", binaries built with it. Without:
no byte string ONNXZ_TEST_STOP (the variable is never read) and no symbol of a test point
or hook (`nm`). With: symbols in each and the string in one (libonnxcore, whose
oc__test_point libonnxz calls), so that the check is seen to find them.

usage: test_points_test.py NM LIST_FILE
"""
import subprocess
import sys

NAME = b"ONNXZ_TEST_STOP"
SYMBOLS = ("test_point", "test_hook")


def symbols(nm, path):
    out = subprocess.run([nm, path], capture_output=True, text=True).stdout
    names = [line.split()[-1] for line in out.splitlines() if line.strip() and ":" not in line]
    return [n for n in names if any(s in n for s in SYMBOLS)]


def main():
    nm, listing = sys.argv[1], sys.argv[2]
    groups = {"without": [], "with": []}
    current = None
    with open(listing) as f:
        for line in f.read().splitlines():
            if line in groups:
                current = groups[line]
            elif line:
                current.append(line)
    failures = 0
    if not groups["without"]:
        print("FAIL nothing to check")
        failures += 1
    for path in groups["without"]:
        with open(path, "rb") as f:
            has_name = NAME in f.read()
        syms = symbols(nm, path)
        ok = not has_name and not syms
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} without test points: {path}: "
              f"{NAME.decode()} {'found' if has_name else 'absent'}, symbols {sorted(set(syms)) or 'none'}")
    # With: each binary has point symbols (libonnxz's are calls of libonnxcore's
    # oc__test_point); the name is read where the points live, in libonnxcore.
    named = 0
    for path in groups["with"]:
        with open(path, "rb") as f:
            has_name = NAME in f.read()
        named += has_name
        syms = symbols(nm, path)
        ok = bool(syms)
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} with test points: {path}: "
              f"{NAME.decode()} {'found' if has_name else 'absent'}, symbols {sorted(set(syms)) or 'none'}")
    if groups["with"] and not named:
        print(f"FAIL with test points: no binary holds {NAME.decode()}")
        failures += 1
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
