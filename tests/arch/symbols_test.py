#!/usr/bin/env python3
"""One library core (ARCHITECTURE.md): what each shared library exports, under which
symbol version, and that no process-wide state of libonnxcore exists twice.

  - libonnxcore.so: every exported symbol is in ONNXCORE_0 or ONNXCORE_EXPERIMENTAL (the
    stable and the experimental API, checked name by name by api.exports) or
    ONNXCORE_PRIVATE; the private node holds exactly the declarations marked OC_PRIVATE
    in libonnxcore/internal/*.h and private/*.h, and they are the names the version
    script lists; each is used outside libonnxcore (by libonnxz, the tool or the Python
    extension): what only libonnxcore uses stays local;
  - libonnxz.so: every exported symbol is in ONNXZ_0 or ONNXZ_EXPERIMENTAL, none internal
    (no "__");
  - libonnxz.so's NEEDED has libonnxcore and no libcurl, and its symbol table (locals
    included) defines none of libonnxcore's objects (the HTTP handles and cache, the count
    of kept descriptors, the cleanup registry ...): those exist once, in libonnxcore.so;
  - libonnxz/CMakeLists.txt names no file under libonnxcore/.

usage: symbols_test.py CC NM READELF SOURCE_DIR LIBONNXCORE_SO LIBONNXZ_SO
"""
import glob
import os
import re
import subprocess
import sys
import tempfile


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def marked(cc, src, mark, points):
    """Names declared with `mark` in libonnxcore/internal/*.h and private/*.h (the
    preprocessor's view, with the test points declared only in a build that has them:
    ONNXZ_TEST_POINTS)."""
    token = "ONNXZ_PRIVATE_MARK_"
    inc = os.path.join(src, "libonnxcore")
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        for h in sorted(glob.glob(os.path.join(inc, "private", "*.h"))):
            f.write('#include "%s"\n' % os.path.basename(h))
        for h in sorted(glob.glob(os.path.join(inc, "internal", "*.h"))):
            f.write('#include "internal/%s"\n' % os.path.basename(h))
        path = f.name
    try:
        points_flag = ["-DONNXZ_TEST_POINTS"] if points else []
        text = run([cc, "-E", "-P", "-D%s=%s" % (mark, token)] + points_flag
                   + ["-I" + inc, "-I" + os.path.join(inc, "private"),
                      "-I" + os.path.join(inc, "include"), path])
    finally:
        os.unlink(path)
    return {re.findall(r"[A-Za-z_]\w*", m.group(1))[-1]
            for m in re.finditer(re.escape(token) + r"([^;(]*)\(", text)}


def dynamic(nm, lib):
    """{name: version node} of the defined dynamic symbols, version nodes left out."""
    out = {}
    for line in run([nm, "-D", "--defined-only", lib]).splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":
            continue
        name, _, version = parts[2].partition("@")
        out[name] = version.lstrip("@")
    return out


def objects(nm, lib):
    """Names of the data objects a library's symbol table defines, locals included."""
    return {p[2] for p in (l.split() for l in run([nm, lib]).splitlines())
            if len(p) == 3 and p[1] in "bBdD" and not p[2].startswith("_") and "." not in p[2]}


def main():
    cc, nm, readelf, src, core, z, points = sys.argv[1:8]
    points = points.upper() in ("ON", "1", "TRUE", "YES")
    fails = []

    core_syms = dynamic(nm, core)
    private = {n for n, v in core_syms.items() if v == "ONNXCORE_PRIVATE"}
    public = {n for n, v in core_syms.items() if v in ("ONNXCORE_0", "ONNXCORE_EXPERIMENTAL")}
    other = {n: v for n, v in core_syms.items() if n not in private | public}
    declared = marked(cc, src, "OC_PRIVATE", points)  # what this build must export
    listed = marked(cc, src, "OC_PRIVATE", True)  # the map names the test points too
    with open(os.path.join(src, "libonnxcore", "libonnxcore.map")) as f:
        mapped = set(re.findall(r"\b(oc_\w+);", f.read().split("ONNXCORE_PRIVATE {", 1)[1]))
    print("libonnxcore.so: %d in ONNXCORE_0, %d in ONNXCORE_EXPERIMENTAL, %d in ONNXCORE_PRIVATE; "
          "%d declarations marked OC_PRIVATE"
          % (sum(1 for v in core_syms.values() if v == "ONNXCORE_0"),
             sum(1 for v in core_syms.values() if v == "ONNXCORE_EXPERIMENTAL"), len(private),
             len(declared)))
    if other:
        fails.append("libonnxcore.so exports outside its three nodes: %s" % sorted(other))
    if any("__" in n for n in public):
        fails.append("internal names in the public nodes: %s"
                     % sorted(n for n in public if "__" in n))
    if private != declared:
        fails.append("ONNXCORE_PRIVATE differs from the OC_PRIVATE marks: only exported %s, "
                     "only marked %s" % (sorted(private - declared), sorted(declared - private)))
    if mapped != listed:
        fails.append("libonnxcore.map's private node differs from the OC_PRIVATE marks: only "
                     "listed %s, only marked %s" % (sorted(mapped - listed), sorted(listed - mapped)))

    # Used: what libonnxz.so links against, and what the tool and the Python extension name.
    used = {w.partition("@")[0] for w in run([nm, "-D", "--undefined-only", z]).split()}
    for d in ("tools", os.path.join("python", "src")):
        for path in sorted(glob.glob(os.path.join(src, d, "**", "*.[ch]"), recursive=True)):
            with open(path, errors="replace") as f:
                used |= set(re.findall(r"\w+", f.read()))
    unused = sorted(n for n in listed if n not in used)
    if unused:
        fails.append("private exports used by nothing outside libonnxcore (make them local): %s"
                     % unused)

    z_syms = dynamic(nm, z)
    z_nodes = ("ONNXZ_0", "ONNXZ_EXPERIMENTAL")
    print("libonnxz.so: %s" % ", ".join("%d in %s" % (sum(1 for v in z_syms.values() if v == n), n)
                                         for n in z_nodes))
    bad = {n: v for n, v in z_syms.items()
           if v not in z_nodes or "__" in n or not n.startswith("oz_")}
    if bad:
        fails.append("libonnxz.so exports beyond its oz_ API: %s" % sorted(bad.items()))

    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", run([readelf, "-d", z]))
    print("libonnxz.so NEEDED: %s" % " ".join(needed))
    if any("curl" in n for n in needed):
        fails.append("libonnxz.so needs libcurl: %s" % needed)
    if not any(n.startswith("libonnxcore.so") for n in needed):
        fails.append("libonnxz.so does not need libonnxcore.so: %s" % needed)

    twice = objects(nm, z) & objects(nm, core)
    print("data objects of libonnxcore.so also defined in libonnxz.so: %s" % (sorted(twice) or "none"))
    if twice:
        fails.append("process-wide state in both libraries: %s" % sorted(twice))

    with open(os.path.join(src, "libonnxz", "CMakeLists.txt")) as f:
        lines = [l for l in f.read().splitlines() if "libonnxcore/" in l.split("#")[0]]
    if lines:
        fails.append("libonnxz/CMakeLists.txt names files under libonnxcore/: %s" % lines)

    for f in fails:
        print("FAIL " + f)
    print("%d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
