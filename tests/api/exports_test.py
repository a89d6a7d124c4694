#!/usr/bin/env python3
"""The shared libraries export exactly their documented API, each name in its version node.

For each library, the public headers (onnxcore/*.h, onnxz/*.h) are run through the C
preprocessor twice, with the library's export mark (OC_API, OZ_API) defined as a token of
its own: without ONNXZ_EXPERIMENTAL, the marked declarations are the stable API; with it,
the rest are the experimental API (macros such as the message descriptors' X-macro are
expanded as a caller sees them). Declarations that end with OZ_DEPRECATED are the
deprecated ones: kept working, in the stable node, outside the stable set.
`nm -D --defined-only` of the built library must then show:
  - every stable and deprecated name in the stable node (ONNXCORE_0, ONNXZ_0), and the
    version script list exactly those names there (so a name joins the stable set only by
    an edit of the map);
  - every experimental name in the experimental node (ONNXCORE_EXPERIMENTAL,
    ONNXZ_EXPERIMENTAL), which the map gives by pattern;
  - nothing else but the private node (ONNXCORE_PRIVATE, what libonnxcore.so exports to
    libonnxz.so only: tests/arch/symbols_test.py), and no internal name ("__").
docs/api.md must list the stable set, one bullet per function, and the deprecated set in
its own section; the stable set of both libraries together must stay within LIMIT
names. Prints the counts per node.

usage: exports_test.py CC NM DOC LIMIT INCLUDE_DIR... -- LIB:MARK:HEADER_DIR:MAP ...
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

GUARD = "ONNXZ_EXPERIMENTAL"
NODES = {"OC_API": ("ONNXCORE_0", "ONNXCORE_EXPERIMENTAL", "OC_DEPRECATED"),
         "OZ_API": ("ONNXZ_0", "ONNXZ_EXPERIMENTAL", "OZ_DEPRECATED")}


def marked_names(cc, include_dirs, header_dir, mark, deprecated_mark, experimental):
    """{name: (is_function, is_deprecated)} of the declarations marked `mark`."""
    headers = sorted(glob.glob(os.path.join(header_dir, "*.h")))
    if not headers:
        sys.exit("no headers in %s" % header_dir)
    lib = os.path.basename(header_dir)
    token, dep = "ONNXZ_EXPORT_MARK_", "ONNXZ_DEPRECATED_MARK_"
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        for h in headers:
            f.write("#include <%s/%s>\n" % (lib, os.path.basename(h)))
        src = f.name
    try:
        cmd = [cc, "-E", "-P", "-D%s=%s" % (mark, token), "-D%s(x)=%s" % (deprecated_mark, dep)]
        cmd += ["-D" + GUARD] if experimental else ["-U" + GUARD]
        cmd += ["-I" + d for d in include_dirs] + [src]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(src)
    names = {}
    # From the mark to the first '(' (a function) or ';' (an object): the declared name is
    # the last identifier before it.
    # The deprecated mark ends the declaration (after its parameters).
    for m in re.finditer(r"%s([^;(]*)([;(])" % token, text):
        ids = re.findall(r"[A-Za-z_]\w*", m.group(1))
        if not ids:
            sys.exit("cannot read the declaration after %s: %r" % (mark, m.group(0)[:80]))
        rest = text[m.end() - 1:text.find(";", m.end() - 1)]
        names[ids[-1]] = (m.group(2) == "(", dep in rest)
    return names, len(headers)


def exported(nm, lib):
    """{name: version node} of the defined dynamic symbols, version nodes left out."""
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True, capture_output=True,
                         text=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":  # version nodes
            continue
        name, _, version = parts[2].partition("@")
        syms[name] = version.lstrip("@")
    return syms


def map_node(path, node):
    """The exact names the version script lists in node's global part."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    m = re.search(r"\b%s\s*\{(.*?)\}" % re.escape(node), text, re.S)
    if not m:
        sys.exit("%s has no node %s" % (path, node))
    body = m.group(1).split("local:")[0].replace("global:", "")
    return {n.strip() for n in body.split(";") if n.strip() and "*" not in n}


def doc_names(path):
    """The functions docs/api.md lists: {section: names}, a bullet's first `name`."""
    sections, current = {}, None
    for line in open(path):
        if line.startswith("## "):
            current = line[3:].strip().lower()
        m = re.match(r"- `((?:oc|oz)_\w+)`", line)
        if m and current:
            sections.setdefault(current, set()).add(m.group(1))
    return sections


# AddressSanitizer's ODR indicator of an exported global (-DONNXZ_SANITIZE=ON): it comes
# with the global, which is checked itself.
ODR_PREFIX = "__odr_asan."


def main():
    args = sys.argv[1:]
    sep = args.index("--")
    cc, nm, doc, limit = args[0], args[1], args[2], int(args[3])
    include_dirs, specs = args[4:sep], args[sep + 1:]
    fails = []
    stable_all, deprecated_all = set(), set()
    for spec in specs:
        lib, mark, header_dir, map_path = spec.split(":")
        stable_node, exp_node, dep_mark = NODES[mark]
        stable, nheaders = marked_names(cc, include_dirs, header_dir, mark, dep_mark, False)
        every, _ = marked_names(cc, include_dirs, header_dir, mark, dep_mark, True)
        experimental = {n for n in every if n not in stable}
        syms = exported(nm, lib)
        syms = {n: v for n, v in syms.items()
                if not (n.startswith(ODR_PREFIX) and n[len(ODR_PREFIX):] in syms)}
        name = os.path.basename(lib)
        in_node = {}
        for n, v in syms.items():
            in_node.setdefault(v, set()).add(n)
        dep = {n for n, (_, d) in stable.items() if d}
        funcs = {n for n, (f, d) in stable.items() if f and not d}
        print("%s: %s; declared in %d headers: %d stable functions, %d stable objects, "
              "%d deprecated, %d experimental"
              % (name, ", ".join("%d in %s" % (len(s), v) for v, s in sorted(in_node.items())),
                 nheaders, len(funcs), len(stable) - len(funcs) - len(dep), len(dep),
                 len(experimental)))
        stable_all |= set(stable) - dep
        deprecated_all |= dep
        for n, v in sorted(syms.items()):
            if v.endswith("_PRIVATE"):  # internals for the sibling library: arch.symbols
                continue
            if "__" in n:
                fails.append("%s exports an internal name: %s" % (name, n))
            elif n in stable and v != stable_node:
                fails.append("%s exports stable %s in %s, not %s" % (name, n, v, stable_node))
            elif n in experimental and v != exp_node:
                fails.append("%s exports experimental %s in %s, not %s" % (name, n, v, exp_node))
            elif n not in every:
                fails.append("%s exports %s, which no public header declares with %s"
                             % (name, n, mark))
        for d in sorted(set(every) - set(syms)):
            fails.append("%s does not export %s, declared with %s" % (name, d, mark))
        listed = map_node(map_path, stable_node)
        if listed != set(stable):
            fails.append("%s's node %s differs from the stable declarations: only listed %s, "
                         "only declared %s" % (os.path.basename(map_path), stable_node,
                                               sorted(listed - set(stable)),
                                               sorted(set(stable) - listed)))
        if not syms or not stable or not experimental:
            fails.append("%s: nothing found (%d symbols, %d stable, %d experimental)"
                         % (name, len(syms), len(stable), len(experimental)))
    documented = doc_names(doc)
    doc_dep = documented.pop("deprecated", set())
    doc_stable = set().union(*documented.values()) if documented else set()
    if doc_stable != stable_all or doc_dep != deprecated_all:
        fails.append("%s differs from the headers: stable only documented %s, only declared %s;"
                     " deprecated only documented %s, only declared %s"
                     % (os.path.basename(doc), sorted(doc_stable - stable_all),
                        sorted(stable_all - doc_stable), sorted(doc_dep - deprecated_all),
                        sorted(deprecated_all - doc_dep)))
    print("stable set: %d names (limit %d), %d deprecated" % (len(stable_all), limit,
                                                             len(deprecated_all)))
    if len(stable_all) > limit:
        fails.append("the stable set has %d names, more than %d" % (len(stable_all), limit))
    for f in fails:
        print("FAIL " + f)
    print("%d failure(s)" % len(fails) if fails else "ok")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
