#!/usr/bin/env python3
"""The shared libraries export exactly their documented API.

For each library: the names the public headers declare with its export mark (OC_API in
onnxcore/*.h, OZ_API in onnxz/*.h) are found by running the C preprocessor over every
public header with the mark defined as a token of its own (macros such as the message
descriptors' X-macro are then expanded as a caller sees them). `nm -D --defined-only` of
the built library must list no symbol outside that set and none containing "__" (internal
names), and every marked declaration must be exported (a marked name missing from the
library would fail at a caller's link). Symbols of a private version node (ONNXCORE_PRIVATE,
what libonnxcore.so exports to libonnxz.so only) are left to tests/arch/symbols_test.py.
Prints the counts.

usage: exports_test.py CC NM INCLUDE_DIR... -- LIB:MARK:HEADER_DIR ...
"""
import glob
import os
import re
import subprocess
import sys
import tempfile


def marked_names(cc, include_dirs, header_dir, mark):
    headers = sorted(glob.glob(os.path.join(header_dir, "*.h")))
    if not headers:
        sys.exit("no headers in %s" % header_dir)
    lib = os.path.basename(header_dir)
    token = "ONNXZ_EXPORT_MARK_"
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        for h in headers:
            f.write("#include <%s/%s>\n" % (lib, os.path.basename(h)))
        src = f.name
    try:
        cmd = [cc, "-E", "-P", "-D%s=%s" % (mark, token)]
        cmd += ["-I" + d for d in include_dirs] + [src]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(src)
    names = set()
    # From the mark to the first '(' (a function) or ';' (an object): the declared name is
    # the last identifier before it.
    for m in re.finditer(re.escape(token) + r"([^;(]*)[;(]", text):
        ids = re.findall(r"[A-Za-z_]\w*", m.group(1))
        if not ids:
            sys.exit("cannot read the declaration after %s: %r" % (mark, m.group(0)[:80]))
        names.add(ids[-1])
    return names, len(headers)


def exported(nm, lib):
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] in ("A",):  # version nodes
            continue
        name, _, version = parts[2].partition("@")
        if version.lstrip("@").endswith("_PRIVATE"):  # internals for the sibling library:
            continue                                   # test arch.symbols
        syms.add(name)
    return syms


# AddressSanitizer's ODR indicator of an exported global (-DONNXZ_SANITIZE=ON): it comes
# with the global, which is checked itself.
ODR_PREFIX = "__odr_asan."


def main():
    args = sys.argv[1:]
    sep = args.index("--")
    cc, nm, include_dirs, specs = args[0], args[1], args[2:sep], args[sep + 1:]
    failures = 0
    for spec in specs:
        lib, mark, header_dir = spec.split(":")
        declared, nheaders = marked_names(cc, include_dirs, header_dir, mark)
        syms = exported(nm, lib)
        syms = {x for x in syms if not (x.startswith(ODR_PREFIX)
                                        and x[len(ODR_PREFIX):] in syms)}
        name = os.path.basename(lib)
        print("%s: %d symbols exported, %d declarations marked %s in %d headers"
              % (name, len(syms), len(declared), mark, nheaders))
        for s in sorted(syms):
            if "__" in s:
                print("  FAIL %s exports an internal name: %s" % (name, s))
                failures += 1
            elif s not in declared:
                print("  FAIL %s exports %s, which no public header declares with %s"
                      % (name, s, mark))
                failures += 1
        for d in sorted(declared - syms):
            print("  FAIL %s does not export %s, declared with %s" % (name, d, mark))
            failures += 1
        if not syms or not declared:
            print("  FAIL nothing found (%d symbols, %d declarations)"
                  % (len(syms), len(declared)))
            failures += 1
    if failures:
        print("%d failure(s)" % failures)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
