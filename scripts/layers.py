#!/usr/bin/env python3
"""layers.py - file-level dependencies of libonnxcore, libonnxz and the tool; fails on cycles.

Reads every .c file of libonnxcore/src, libonnxz/src (all their floors) and tools/ and the headers they can
include (the libraries' public and internal headers, the tool's headers), and finds which
file uses which:

  - a definition is a function or a global variable at file scope; a `static` one is
    local to its file (and shadows a global of the same name there);
  - a use is any identifier inside a function body or a global initializer that names a
    definition of another file: a call `name(`, or a function passed by name as a
    callback, or a table referenced;
  - a macro or a header's `static inline` function stands for what its body uses (one
    level after another: OC_NEW -> oc_msg_new -> message.c), so a call hidden in a
    header is a use of the file that defines its callee;
  - comments, string and character literals are removed first; `x.name` and `x->name` are
    members, never uses.

A file uses another when it uses one of its definitions. Two or more files that reach each
other are a cycle (a strongly connected component of that graph): each is printed as a
path A -> B -> ... -> A, with the names that make each step. Cycles in ALLOWED below are
known and reported; any other fails, and so does an entry of ALLOWED that no longer occurs
(the list only shrinks). Then the layer order is printed: a file's layer is one more than
the highest layer of the files it uses (a cycle counts as one node).

Limits, by design of a script rather than a compiler: definitions that only a macro spells
(schema.c's ONNX_MESSAGES(OC_X_DESC_) tables) are not seen; both branches of an #if are
read. Neither hides a call between .c files in this code.

Then the floors (FLOORS, GROUP_RANK below; ARCHITECTURE.md): a use of a higher floor of its
library, of another floor of the same rank, of libonnxz by libonnxcore, or of a client
(tools/, python/src/) by a library is printed as UPWARD and fails.

The clients include only public headers and libonnxcore/private/: an include by tools/ or
python/src/ of a library's internal/ or src/ header is printed as INTERNAL and fails.

Last, copies (TWIN, fails): a macro or static inline function of libonnxz/internal whose
name, with oz/OZ for oc/OC, is one of libonnxcore/internal's. libonnxz reaches those
headers through the onnxcore_internal target; each convention has one home.

Usage: layers.py [--root DIR] [--verbose]
(exit 0: no cycle beyond ALLOWED, no UPWARD, INTERNAL nor TWIN)
"""
import argparse
import os
import re
import sys
from collections import defaultdict

# Known cycles, each the exact set of files of one cycle: none. A cycle found later is
# fixed, not listed here; an entry that no longer occurs fails the check.
ALLOWED = []

GROUPS = [
    ("libonnxcore", "libonnxcore/src", ["libonnxcore/internal", "libonnxcore/private",
                                         "libonnxcore/include/onnxcore"]),
    ("libonnxz", "libonnxz/src", ["libonnxz/internal", "libonnxz/include/onnxz"]),
    ("tool", "tools", []),
    ("python", "python/src", []),
]

# The order of the groups (a group uses only groups of a lower rank) and of each library's
# floors (its src/ subfolders; a floor uses only floors of a lower rank, so that floors of
# one rank never use each other). ARCHITECTURE.md describes them.
GROUP_RANK = {"libonnxcore": 0, "libonnxz": 1, "tool": 2, "python": 2}
FLOORS = {
    "libonnxcore": {"base": 0, "io": 1, "codec": 2, "crypto": 2, "http": 3, "model": 4},
    "libonnxz": {"zip": 0, "archive": 1, "edit": 2, "sign": 3},
}

KEYWORDS = set("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
_Imaginary _Noreturn _Static_assert _Thread_local bool defined __attribute__ __typeof__
typeof asm __asm__ __extension__
""".split())

TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|->|\.\.\.|[{}()\[\];=,.#]|\S")


def strip(text):
    """Comments, string and char literals out (newlines kept); continued lines joined."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j) or " ")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" ")
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out).replace("\\\n", " ")


def split_preproc(text):
    """(code without preprocessor lines, {macro: body}, [included headers])."""
    code, macros, includes = [], {}, []
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("#"):
            m = re.match(r"#\s*define\s+(\w+)(\([^)]*\))?(.*)", s)
            if m:
                macros[m.group(1)] = m.group(3)
            m = re.match(r'#\s*include\s*[<"]([^>"]+)[>"]', s)
            if m:
                includes.append(m.group(1))
            code.append("")
        else:
            code.append(line)
    return "\n".join(code), macros, includes


def parse(code):
    """Walks the top level. Returns (functions, variables, inline bodies, uses):
    functions / variables: {name: is_static}; bodies: {name: [identifiers]} of the
    file's functions (for static inline functions of headers); uses: identifiers used in
    bodies and initializers, with the function each one is in ('' for initializers)."""
    toks = TOKEN.findall(code)
    funcs, vars_, bodies, uses, protos = {}, {}, {}, [], set()
    stmt, i, n = [], 0, len(toks)
    while i < n:
        t = toks[i]
        if t == "{":
            name = function_name(stmt)
            j, body = match_braces(toks, i)
            if name and not is_aggregate(stmt):
                funcs[name] = "static" in stmt
                ids = identifiers(body)
                bodies[name] = ids
                uses.extend((name, x) for x in ids)
                stmt, i = [], j
                continue
            # a struct/union/enum body or an initializer: its contents are part of stmt
            stmt.extend(body)
            i = j
            continue
        if t == ";":
            record_variable(stmt, vars_, uses)
            name = function_name(stmt)  # a prototype
            if name:
                protos.add(name)
            stmt = []
        else:
            stmt.append(t)
        i += 1
    return funcs, vars_, bodies, uses, protos


def match_braces(toks, i):
    depth, j = 0, i
    while j < len(toks):
        if toks[j] == "{":
            depth += 1
        elif toks[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1, toks[i:j + 1]
        j += 1
    return j, toks[i:]


def is_aggregate(stmt):
    return any(t in ("struct", "union", "enum") for t in stmt[-3:]) or "=" in stmt


def function_name(stmt):
    """The name of `... name(params)` ending stmt (a definition's head), else None."""
    if not stmt or stmt[-1] != ")" or "=" in stmt or stmt[0] in ("typedef",):
        return None
    depth = 0
    for k in range(len(stmt) - 1, -1, -1):
        if stmt[k] == ")":
            depth += 1
        elif stmt[k] == "(":
            depth -= 1
            if depth == 0:
                if k > 0 and re.match(r"[A-Za-z_]\w*$", stmt[k - 1]) and stmt[k - 1] not in KEYWORDS:
                    return stmt[k - 1]
                return None
    return None


def record_variable(stmt, vars_, uses):
    """A global variable definition `type name [= init]` (not extern, not a typedef, not a
    prototype, not a struct/union/enum declaration); its initializer's identifiers are
    uses of the file."""
    if not stmt or stmt[0] in ("typedef", "extern") or "_Static_assert" in stmt:
        return
    head, depth = [], 0  # up to the first `=` outside braces, brace contents left out
    for t in stmt:
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
        elif depth == 0:
            if t == "=":
                break
            head.append(t)
    if "[" in head:
        head = head[:head.index("[")]
    if "(" in head:
        # a prototype or a macro call at file scope; only `(*name)` is a variable
        m = re.search(r"\( \* (?:const )?([A-Za-z_]\w*) \)", " ".join(head))
        if not m:
            return
        name = m.group(1)
    else:
        ids = [k for k, t in enumerate(head) if re.match(r"[A-Za-z_]\w*$", t) and t not in KEYWORDS]
        if not ids or ids[-1] == 0 or head[ids[-1] - 1] in ("struct", "union", "enum"):
            return
        name = head[ids[-1]]
    vars_[name] = "static" in stmt
    if "=" in stmt:
        uses.extend(("", x) for x in identifiers(stmt[stmt.index("="):]))


def identifiers(toks):
    out = []
    for k, t in enumerate(toks):
        if re.match(r"[A-Za-z_]\w*$", t) and t not in KEYWORDS:
            if k > 0 and toks[k - 1] in (".", "->"):
                continue
            out.append(t)
    return out


class Unit:
    def __init__(self, path, group):
        self.path, self.group = path, group
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        code, self.macros, _ = split_preproc(strip(text))
        # read before strip(), which blanks the quoted names
        self.includes = re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', text, re.M)
        self.funcs, self.vars, self.bodies, self.uses, self.protos = parse(code)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    root = os.path.abspath(args.root)

    units, headers = [], []
    for group, src, hdirs in GROUPS:
        for p in sorted(os.path.join(dp, x) for dp, _, xs in os.walk(os.path.join(root, src))
                        for x in xs):
            name = os.path.basename(p)
            if name.endswith(".c"):
                units.append(Unit(p, group))
            elif name.endswith(".h"):
                headers.append(Unit(p, group))
        for h in hdirs:
            hd = os.path.join(root, h)
            headers.extend(Unit(os.path.join(hd, x), group)
                           for x in sorted(os.listdir(hd)) if x.endswith(".h"))

    rel = {u.path: os.path.relpath(u.path, root) for u in units}
    # What a macro or a header's static inline function stands for.
    expand = {}
    for h in headers:
        for m, body in h.macros.items():
            expand.setdefault(m, set()).update(identifiers(TOKEN.findall(body)))
        for f, ids in h.bodies.items():
            if h.funcs.get(f):  # static inline in a header
                expand.setdefault(f, set()).update(ids)

    owner = defaultdict(set)  # global name -> defining files
    for u in units:
        for name, is_static in list(u.funcs.items()) + list(u.vars.items()):
            if not is_static:
                owner[name].add(u.path)

    edges = defaultdict(lambda: defaultdict(set))  # file -> file -> names
    for u in units:
        local = {k for k, s in list(u.funcs.items()) + list(u.vars.items()) if s}
        local_expand = {m: set(identifiers(TOKEN.findall(b))) for m, b in u.macros.items()}
        seen = set()
        todo = [x for _, x in u.uses]
        while todo:
            x = todo.pop()
            if x in seen:
                continue
            seen.add(x)
            if x in local_expand:
                todo.extend(local_expand[x])
            if x in local:
                continue
            if x in expand and x not in owner:
                todo.extend(expand[x])
            for f in owner.get(x, ()):
                if f != u.path:
                    edges[u.path][f].add(x)

    # An internal header ties a file that includes it to the files that provide what it
    # declares (prototypes, extern variables) and what its macros and inline functions use:
    # a file that includes internal/schema.h depends on the files behind that header.
    # libonnxcore/private/'s header (included by its name alone) does the same.
    internal = {}
    for h in headers:
        if os.sep + "private" + os.sep in h.path:
            spelled = os.path.basename(h.path)
        elif os.sep + "internal" + os.sep in h.path:
            spelled = "internal/" + os.path.basename(h.path)
        else:
            continue
        names = set(h.protos) | set(h.vars)
        for f, ids in h.bodies.items():
            names.update(ids)
        for body in h.macros.values():
            names.update(identifiers(TOKEN.findall(body)))
        internal[spelled, h.group] = {f for x in names for f in owner.get(x, ())}
    # Files that define the same name are alternatives that one build picks between
    # (source_http.c or source_http_none.c, as CMake chooses): never each other's users.
    alternatives = {(a, b) for files in owner.values() if len(files) > 1
                    for a in files for b in files}
    # A file that provides part of a header includes it for its own declarations: it is
    # not tied to the header's other providers by that include (only by what it uses).
    for u in units:
        for inc in u.includes:
            behind = internal.get((inc, u.group), set())
            if u.path in behind:
                continue
            for f in behind:
                if (u.path, f) not in alternatives:
                    edges[u.path][f].add("#include " + inc)

    group_of = {u.path: u.group for u in units}
    upward = (check_floors(root, group_of, edges, rel) + check_client_includes(root, units, headers)
              + check_twins(root, headers))
    for line in upward:
        print(line)

    dup = {k: v for k, v in owner.items() if len(v) > 1}
    for name, files in sorted(dup.items()):
        print("note: %s is defined in %s" % (name, ", ".join(sorted(rel[f] for f in files))))

    nodes = [u.path for u in units]
    sccs = tarjan(nodes, edges)
    cyc = [s for s in sccs if len(s) > 1]
    allowed = [frozenset(a) for a in ALLOWED]
    failed = False
    found_allowed = set()
    for s in cyc:
        names = frozenset(rel[f] for f in s)
        path = a_cycle(s, edges)
        if names in allowed:
            found_allowed.add(names)
            print("known cycle (ALLOWED, to be removed): %s" % " ".join(sorted(names)))
        else:
            failed = True
            print("CYCLE: %s" % " ".join(sorted(names)))
        print("  for example " + " -> ".join(rel[f] for f in path))
        for a in s:  # every use inside the cycle, with the names that make it
            for b in sorted(edges[a]):
                if b in s:
                    print("  %s -> %s  (%s)" % (rel[a], rel[b], ", ".join(sorted(edges[a][b]))))
    for a in allowed:
        if a not in found_allowed:
            failed = True
            print("ALLOWED lists a cycle that no longer occurs: %s (remove it)" % ", ".join(sorted(a)))

    # Layers over the condensation.
    comp = {f: k for k, s in enumerate(sccs) for f in s}
    layer = {}

    def depth(k):
        if k not in layer:
            layer[k] = 0
            deps = {comp[g] for f in sccs[k] for g in edges[f] if comp[g] != k}
            layer[k] = 1 + max((depth(d) for d in deps), default=-1)
        return layer[k]

    sys.setrecursionlimit(10000)
    for group, _, _ in GROUPS:
        print("\nlayers of %s (0: uses no other file):" % group)
        by = defaultdict(list)
        for u in units:
            if u.group == group:
                by[depth(comp[u.path])].append(os.path.basename(u.path))
        for lv in sorted(by):
            print("  %2d  %s" % (lv, " ".join(sorted(by[lv]))))
    if args.verbose:
        print("\nuses:")
        for a in nodes:
            for b, names in sorted(edges[a].items()):
                print("  %s -> %s: %s" % (rel[a], rel[b], ", ".join(sorted(names))))
    print("\n%d files, %d cycles (%d known)" % (len(nodes), len(cyc), len(found_allowed)))
    return 1 if failed or upward else 0


def floor_of(root, path, group):
    """(group rank, floor rank, floor) of a file; a file outside the floors: rank 0."""
    src = dict((g, d) for g, d, _ in GROUPS)[group]
    sub = os.path.relpath(path, os.path.join(root, src)).split(os.sep)
    floors = FLOORS.get(group, {})
    if len(sub) < 2 or sub[0] not in floors:
        if floors:
            return None  # a library file outside every floor: reported
        return GROUP_RANK[group], 0, ""
    return GROUP_RANK[group], floors[sub[0]], sub[0]


def check_floors(root, group_of, edges, rel):
    """UPWARD lines: a use of a higher group (libonnxcore of libonnxz, a library of a
    client) or of a higher floor, or of another floor of the same rank; and library files
    outside every floor."""
    out = []
    for a, targets in sorted(edges.items()):
        fa = floor_of(root, a, group_of[a])
        if fa is None:
            out.append("UPWARD: %s lies in no floor of %s" % (rel[a], group_of[a]))
            continue
        for b, names in sorted(targets.items()):
            fb = floor_of(root, b, group_of[b])
            if fb is None:
                continue
            if fb[0] > fa[0] or (group_of[a] == group_of[b] and
                                  (fb[1] > fa[1] or (fb[1] == fa[1] and fb[2] != fa[2]))):
                out.append("UPWARD: %s -> %s (%s)" % (rel[a], rel[b], ", ".join(sorted(names))))
    return out


def check_client_includes(root, units, headers):
    """INTERNAL lines: a file of tools/ or python/src/ that includes a library's internal/
    or src/ header (any spelling: "internal/x.h", "../libonnxcore/src/...")."""
    out = []
    for u in units + headers:
        if u.group not in ("tool", "python"):
            continue
        for inc in u.includes:
            parts = inc.replace("\\", "/").split("/")
            if "internal" in parts[:-1] or "src" in parts[:-1]:
                out.append("INTERNAL: %s includes %s (clients use public headers and "
                           "libonnxcore/private/)" % (os.path.relpath(u.path, root), inc))
    return out


def check_twins(root, headers):
    """TWIN lines: a macro or static inline function of libonnxz/internal that copies one
    of libonnxcore/internal under the oz prefix."""
    def defined(h):
        return list(h.macros) + [f for f, is_static in h.funcs.items() if is_static]

    core = {}
    for h in headers:
        if h.group == "libonnxcore" and os.sep + "internal" + os.sep in h.path:
            for name in defined(h):
                core.setdefault(name, os.path.relpath(h.path, root))
    out = []
    for h in headers:
        if h.group != "libonnxz" or os.sep + "internal" + os.sep not in h.path:
            continue
        for name in defined(h):
            twin = re.sub(r"^oz", "oc", re.sub(r"^OZ", "OC", name))
            if twin != name and twin in core:
                out.append("TWIN: %s defines %s, a copy of %s's %s (include that header)" %
                           (os.path.relpath(h.path, root), name, core[twin], twin))
    return out


def tarjan(nodes, edges):
    index, low, onstack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        work = [(v, iter(sorted(edges[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        onstack.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    onstack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in onstack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                s = []
                while True:
                    w = stack.pop()
                    onstack.discard(w)
                    s.append(w)
                    if w == node:
                        break
                out.append(sorted(s))

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def a_cycle(scc, edges):
    """A path start -> ... -> start through the component (shortest from its first file)."""
    members = set(scc)
    start = scc[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for a in frontier:
            for b in sorted(edges[a]):
                if b not in members:
                    continue
                if b == start:
                    path = [a]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if b not in prev:
                    prev[b] = a
                    nxt.append(b)
        frontier = nxt
    return [start, start]


if __name__ == "__main__":
    sys.exit(main())
