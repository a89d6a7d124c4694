#!/usr/bin/python3
"""Runs the hostile-input suite that gen_hostile.py wrote.

    run_hostile.py [--generate] [--jobs N] [--only REGEX] [--scratch DIR] [--log FILE]
                   ONNXZ_EXE OUTDIR

With --generate, gen_hostile.py (beside this script) first writes OUTDIR afresh with the
same tool; exit status 77 (skipped) when it cannot (python3-onnx missing).

Each case runs in a fresh scratch copy of its file(s) or directory (SLOT/case, the
command's working directory) beside a copy of OUTDIR/dirs/sentinel (SLOT/sentinel), with a
timeout, a memory cap, no ONNXZ_KEY and no controlling terminal. (Each job reuses one SLOT directory under
SCRATCH: it is emptied after every case, and its sentinel rebuilt if a case changed it.
What a failed case left is kept in SCRATCH/failed/<id>.) A case passes when:
  - the exit status is the expected one (1 for defects: not 2, not a signal, not a
    sanitizer report);
  - stderr is exactly one line, "onnxz: error: FILE: MESSAGE[ (at offset N)]", without
    raw control characters (escape sequences from a file must not reach the terminal),
    naming the case's FILE, whose MESSAGE matches the case's regex (and which ends with an offset
    when the case says the tool must give one); exit-0 controls print nothing on stderr
    and match their stdout regex;
  - nothing changed anywhere in SLOT: no file created, removed or modified, in
    the case directory (a failing command writes nothing) or beside it (the sentinel),
    and none of the case's must_not_exist paths appeared. (Exit-0 controls may write the
    paths their "writes" key lists, inside their case directory.)
Cases marked known_bug that fail are reported as XFAIL; if they pass, as XPASS (the mark
should then be removed). Cases that need OpenSSL are skipped when ONNXZ_HAVE_OPENSSL=0.
Exit status: 0 when every case passed (or XFAILed, or was skipped), 1 otherwise.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import queue
import re
import resource
import shutil
import stat
import subprocess
import sys
import time

TIMEOUT = 20            # seconds per case
MEMORY = 2 << 30        # bytes of address space (RLIMIT_AS), or of RSS under ASan
ERROR_RE = re.compile(r"^onnxz: error: (?P<file>.+?): (?P<msg>.*?)(?P<off> \(at offset \d+\))?$")
CONTROL_RE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x9b]")
SANITIZER_RE = re.compile(r"(AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|"
                          r"runtime error:|MemorySanitizer|ThreadSanitizer)")
ASAN_EXIT, UBSAN_EXIT = 86, 87


def inspect(exe):
    """(sanitized, wrapped). sanitized: the binary carries a sanitizer runtime (an ASan
    build needs terabytes of address space: RLIMIT_AS cannot be used, its allocator is
    capped instead). wrapped: exe is a script that runs the binary under another program
    (ONNXZ_TEST_WRAPPER, e.g. valgrind): no RLIMIT_AS either, and a longer timeout."""
    with open(exe, "rb") as f:
        data = f.read()
    wrapped = data.startswith(b"#!")
    binaries = [exe]
    if wrapped:   # the binary is one of the script's quoted arguments
        binaries = [p for p in re.findall(r"'([^']+)'", data.decode("utf-8", "replace"))
                    if os.path.isfile(p) and open(p, "rb").read(4) == b"\x7fELF"]
    for b in binaries:
        with open(b, "rb") as f:
            content = f.read()
        if b"AddressSanitizer" in content or b"__asan_init" in content:
            return True, wrapped
        try:
            out = subprocess.run(["ldd", b], capture_output=True, text=True, timeout=30).stdout
            if "libasan" in out or "libclang_rt.asan" in out:
                return True, wrapped
        except (OSError, subprocess.SubprocessError):
            pass
    return False, wrapped


def set_limits(memory):
    """Limits for this process, inherited by every tool it starts (set here rather than in
    a preexec_fn, which would make each start a full fork of this process): no core files,
    and unless memory is None, at most that much address space."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory is not None:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            memory = min(memory, hard)
        resource.setrlimit(resource.RLIMIT_AS, (memory, hard))


def make_env(sanitized):
    env = {k: v for k, v in os.environ.items() if k != "ONNXZ_KEY"}
    if sanitized:
        mb = MEMORY >> 20
        # The memory cap under ASan: no single allocation above MEMORY (it returns NULL,
        # as under RLIMIT_AS), and the allocator may map no more than MEMORY in all.
        # (hard_rss_limit_mb would do too, but its watcher thread costs ~8 ms a run.)
        ours = ("exitcode=%d:allocator_may_return_null=1:max_allocation_size_mb=%d:"
                "mmap_limit_mb=%d:detect_leaks=1:abort_on_error=0:"
                "handle_segv=1:handle_abort=1" % (ASAN_EXIT, mb, mb))
        # The caller's options win over ours (they come later).
        env["ASAN_OPTIONS"] = ours + (":" + env["ASAN_OPTIONS"] if env.get("ASAN_OPTIONS") else "")
        ub = "halt_on_error=1:print_stacktrace=1:exitcode=%d" % UBSAN_EXIT
        env["UBSAN_OPTIONS"] = ub + (":" + env["UBSAN_OPTIONS"] if env.get("UBSAN_OPTIONS") else "")
    return env


# ---- scratch copies and snapshots ---------------------------------------------------------


def copy_tree(src, dst, skip=()):
    """Copies a case directory: regular files, directories and symbolic links as links (never
    followed). FIFOs and hard links are made by make_specials from the manifest."""
    os.makedirs(dst)
    for name in sorted(os.listdir(src)):
        s, d = os.path.join(src, name), os.path.join(dst, name)
        rel = os.path.relpath(s, src)
        if rel in skip:
            continue
        st = os.lstat(s)
        if stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(s), d)
        elif stat.S_ISDIR(st.st_mode):
            copy_tree(s, d, {os.path.relpath(x, rel) for x in skip if x.startswith(rel + "/")})
        elif stat.S_ISREG(st.st_mode):
            shutil.copyfile(s, d)
        # FIFOs and other special files: made afresh by make_specials


def specials(case):
    return {p for p, _ in case.get("hardlinks", [])} | set(case.get("fifos", []))


def make_specials(case, casedir):
    for path, target in case.get("hardlinks", []):
        os.link(os.path.normpath(os.path.join(casedir, os.path.dirname(path), target)),
                os.path.join(casedir, path))
    for path in case.get("fifos", []):
        os.mkfifo(os.path.join(casedir, path))


def snapshot(root):
    """Everything under root, links not followed: path -> (type, size, mtime, digest, inode,
    mode) of files, the target of links, the mode of directories. (Not the link count: a
    command that replaces a hard link to a file outside changes that file's count only.)"""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                out[rel] = ("file", st.st_size, st.st_mtime_ns, digest, st.st_ino,
                            stat.S_IMODE(st.st_mode))
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("special", stat.S_IFMT(st.st_mode), st.st_ino)
    return out


def diff_snapshots(before, after):
    changes = []
    for p in sorted(set(before) | set(after)):
        if p not in after:
            changes.append("removed " + p)
        elif p not in before:
            changes.append("created " + p)
        elif before[p] != after[p]:
            changes.append("modified " + p)
    return changes


# ---- one case -------------------------------------------------------------------------


class Result:
    def __init__(self, case, status, problems, rc, stdout, stderr, secs):
        self.case, self.status, self.problems = case, status, problems
        self.rc, self.stdout, self.stderr, self.secs = rc, stdout, stderr, secs


def check(case, rc, out, err, changes, timed_out, appeared):
    problems = []
    if timed_out:
        return ["timed out after %d s (a hang)" % TIMEOUT]
    if SANITIZER_RE.search(err) or rc in (ASAN_EXIT, UBSAN_EXIT):
        problems.append("sanitizer report")
    if rc < 0:
        problems.append("killed by signal %d" % -rc)
    elif rc != case["exit"]:
        problems.append("exit status %d, expected %d" % (rc, case["exit"]))
    lines = err.splitlines()
    if CONTROL_RE.search(err.rstrip("\n")):
        # ESC, BEL, CR... from a file reach the user's terminal (clear it, retitle it, hide
        # text): what a file says must be escaped, as entry names are ('\x1b').
        problems.append("raw control characters on stderr: %r" % CONTROL_RE.findall(err.rstrip("\n"))[:4])
    if case["exit"] == 0:
        if err.strip():
            problems.append("unexpected stderr")
        if case.get("stdout") and not re.search(case["stdout"], out):
            problems.append("stdout does not match /%s/" % case["stdout"])
    else:
        if len(lines) != 1 or not err.endswith("\n"):
            problems.append("stderr has %d lines, expected exactly one" % len(lines))
        m = ERROR_RE.match(lines[0]) if lines else None
        if not m:
            problems.append("stderr is not 'onnxz: error: FILE: MESSAGE'")
        else:
            if m.group("file") != case["file"]:
                problems.append("the error names %r, expected %r" % (m.group("file"), case["file"]))
            if case.get("offset") and not m.group("off"):
                problems.append("no '(at offset N)'")
            if case.get("expect") and not re.search(case["expect"], m.group("msg") + (m.group("off") or "")):
                problems.append("message does not match /%s/" % case["expect"])
    for c in changes:
        problems.append("file system: " + c)
    for p in appeared:
        problems.append("file system: %s appeared" % p)
    return problems


class Slot:
    """A scratch directory reused from case to case (creating and removing directories is
    slow on some file systems): SLOT/case, the command's working directory, emptied after
    each case, and SLOT/sentinel, checked after each case and rebuilt if it changed."""

    def __init__(self, scratch, index, sentinel_src):
        self.root = os.path.join(scratch, "slot%d" % index)
        self.casedir = os.path.join(self.root, "case")
        self.sentinel_src = sentinel_src
        self.sentinel = os.path.join(self.root, "sentinel")
        os.makedirs(self.casedir)
        copy_tree(self.sentinel_src, self.sentinel)
        self.clean = snapshot(self.root)

    def reset(self):
        for name in os.listdir(self.root):
            if name not in ("case", "sentinel"):
                remove(os.path.join(self.root, name))
        for name in os.listdir(self.casedir):
            remove(os.path.join(self.casedir, name))
        if not os.path.isdir(self.casedir) or os.path.islink(self.casedir):
            remove(self.casedir)
            os.makedirs(self.casedir)
        if snapshot(self.root) != self.clean:
            remove(self.sentinel)
            copy_tree(self.sentinel_src, self.sentinel)
            self.clean = snapshot(self.root)


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def run_case(exe, outdir, scratch, case, env, slot):
    root, casedir = slot.root, slot.casedir
    if case.get("dir"):
        src_dir = os.path.join(outdir, case["dir"])
        for name in sorted(os.listdir(src_dir)):
            src = os.path.join(src_dir, name)
            if name in specials(case):
                continue
            if os.path.isdir(src) and not os.path.islink(src):
                copy_tree(src, os.path.join(casedir, name),
                          {os.path.relpath(x, name) for x in specials(case) if x.startswith(name + "/")})
            elif os.path.islink(src):
                os.symlink(os.readlink(src), os.path.join(casedir, name))
            elif os.path.isfile(src):
                shutil.copyfile(src, os.path.join(casedir, name))
    for name, src in case.get("files", {}).items():
        shutil.copyfile(os.path.join(outdir, src), os.path.join(casedir, name))
    make_specials(case, casedir)
    pre_existing = [p for p in case.get("must_not_exist", []) if os.path.lexists(p)]
    before = snapshot(root)
    t0 = time.monotonic()
    timed_out = False
    try:
        p = subprocess.run([exe] + case["cmd"], cwd=casedir, env=env, capture_output=True,
                           stdin=subprocess.DEVNULL, start_new_session=True, timeout=TIMEOUT)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err, timed_out = None, e.stdout or b"", e.stderr or b"", True
    secs = time.monotonic() - t0
    out = out.decode("utf-8", "replace")
    err = err.decode("utf-8", "replace")
    after = snapshot(root)
    changes = diff_snapshots(before, after)
    if case["exit"] == 0:
        # A control may write the outputs it names ("writes": paths in its case directory).
        allowed = tuple("case/" + w for w in case.get("writes", []))
        changes = [c for c in changes if not any(
            c.split(" ", 1)[1] == a or c.split(" ", 1)[1].startswith(a + "/") for a in allowed)]
    appeared = [p for p in case.get("must_not_exist", []) if os.path.lexists(p) and p not in pre_existing]
    problems = check(case, rc if rc is not None else -9, out, err, changes, timed_out, appeared)
    if pre_existing:
        problems.append("must_not_exist paths existed before the run: %s" % pre_existing)
    for p in appeared:
        remove(p)
    ok = not problems
    if case.get("known_bug"):
        status = "XPASS" if ok else "XFAIL"
    else:
        status = "PASS" if ok else "FAIL"
    if status == "FAIL":   # keep what the case left behind, for a look
        copy_tree(root, os.path.join(scratch, "failed", case["id"]))
    slot.reset()
    return Result(case, status, problems, rc, out, err, secs)


def reproducer(case, exe, outdir):
    """A shell command that recreates the case in a new directory and runs it."""
    q = lambda a: "'%s'" % a.replace("'", "'\\''") if (not a or re.search(r"[^\w./=+-]", a)) else a
    steps = ["d=$(mktemp -d)", "mkdir $d/case", "cp -r %s $d/sentinel" % q(os.path.join(outdir, "dirs", "sentinel"))]
    if case.get("dir"):
        steps.append("cp -a %s/. $d/case/" % q(os.path.join(outdir, case["dir"])))
    for name, src in case.get("files", {}).items():
        steps.append("cp %s $d/case/%s" % (q(os.path.join(outdir, src)), q(name)))
    for path, target in case.get("hardlinks", []):
        steps.append("rm -f $d/case/%s && ln %s $d/case/%s" % (
            q(path), q(os.path.join("$d/case", os.path.dirname(path), target)).replace("'$d", "$d'"), q(path)))
    for path in case.get("fifos", []):
        steps.append("rm -f $d/case/%s && mkfifo $d/case/%s" % (q(path), q(path)))
    steps.append("cd $d/case && %s %s" % (exe, " ".join(q(a) for a in case["cmd"])))
    return " && ".join(steps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("onnxz")
    ap.add_argument("outdir")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", help="run only the cases whose id matches this regex")
    ap.add_argument("--scratch", help="where the scratch copies go (default OUTDIR-scratch)")
    ap.add_argument("--verbose", action="store_true", help="print every case")
    ap.add_argument("--generate", action="store_true",
                    help="run gen_hostile.py into OUTDIR first")
    ap.add_argument("--loop-stride", type=int, default=1, metavar="N",
                    help="of the cases generated in loops (ids ending in _NNNN: truncation at "
                    "every byte), run only every Nth (for slow wrapped runs, e.g. valgrind)")
    ap.add_argument("--log", help="write every case's id, status, exit status and stderr "
                    "to this file (JSON lines), to review the messages")
    args = ap.parse_args()
    exe = os.path.abspath(args.onnxz)
    outdir = os.path.abspath(args.outdir)
    t_gen = time.monotonic()
    if args.generate:
        gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_hostile.py")
        rc = subprocess.call([sys.executable, gen, "--onnxz", exe, outdir])
        if rc != 0:
            return rc
    t_gen = time.monotonic() - t_gen
    with open(os.path.join(outdir, "manifest.json")) as f:
        manifest = json.load(f)
    scratch = os.path.abspath(args.scratch or outdir.rstrip("/") + "-scratch")
    marker = os.path.join(scratch, ".hostile-scratch")
    if os.path.exists(scratch):
        if os.listdir(scratch) and not os.path.exists(marker):
            print("run_hostile.py: %s exists and is not a scratch directory of this suite"
                  % scratch, file=sys.stderr)
            return 2
        shutil.rmtree(scratch)
    os.makedirs(scratch)
    open(marker, "w").close()
    have_openssl = os.environ.get("ONNXZ_HAVE_OPENSSL", "1") == "1"
    sanitized, wrapped = inspect(exe)
    global TIMEOUT
    if wrapped:
        TIMEOUT *= 10
    set_limits(None if (sanitized or wrapped) else MEMORY)
    env = make_env(sanitized)
    cases, skipped, strided = [], [], []
    for c in manifest["cases"]:
        if args.only and not re.search(args.only, c["id"]):
            continue
        if "openssl" in c.get("needs", []) and not have_openssl:
            skipped.append(c)
            continue
        loop = re.search(r"_(\d{4})$", c["id"])
        if loop and int(loop.group(1)) % max(1, args.loop_stride) and not c.get("known_bug"):
            strided.append(c)
            continue
        cases.append(c)
    t0 = time.monotonic()
    results = []
    jobs = max(1, args.jobs)
    slots = queue.Queue()
    for i in range(jobs):
        slots.put(Slot(scratch, i, os.path.join(outdir, manifest["sentinel"])))

    def task(c):
        slot = slots.get()
        try:
            return run_case(exe, outdir, scratch, c, env, slot)
        finally:
            slots.put(slot)

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = [pool.submit(task, c) for c in cases]
        for f in futs:
            r = f.result()
            results.append(r)
            if args.verbose:
                print("%-5s %s (%.2f s)" % (r.status, r.case["id"], r.secs))
    wall = time.monotonic() - t0
    if args.log:
        with open(args.log, "w") as f:
            for r in results:
                f.write(json.dumps(dict(id=r.case["id"], status=r.status, rc=r.rc,
                                        stderr=r.stderr, stdout=r.stdout[:200],
                                        expect=r.case.get("expect"))) + "\n")
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1

    def show(r):
        c = r.case
        print("%s %s [%s]: %s" % (r.status, c["id"], c["family"], c["desc"]))
        print("    reproduce: " + reproducer(c, exe, outdir))
        if c.get("known_bug"):
            print("    known bug: %s" % c["known_bug"])
        print("    expected: exit %d%s" % (c["exit"], ", /%s/" % c["expect"] if c.get("expect") else ""))
        print("    got:      exit %s" % ("timeout" if r.rc is None else r.rc))
        for line in (r.stderr.splitlines()[:12] or ["(no stderr)"]):
            print("    stderr:   " + line)
        for p in r.problems:
            print("    problem:  " + p)

    fails = [r for r in results if r.status == "FAIL"]
    xfails = [r for r in results if r.status == "XFAIL"]
    xpasses = [r for r in results if r.status == "XPASS"]
    for r in fails:
        show(r)
    if xfails:
        print("--- expected failures (known_bug: the tool is wrong; remove the mark once fixed):")
        bugs = {}
        for r in xfails:
            bugs.setdefault(r.case["known_bug"], []).append(r)
        for bug, rs in bugs.items():
            print("XFAIL x%d: %s" % (len(rs), bug))
            print("    cases: %s" % " ".join(r.case["id"] for r in rs[:8]) + (" ..." if len(rs) > 8 else ""))
            first = rs[0]
            print("    e.g. %s: exit %s, %s" % (first.case["id"], first.rc,
                                                 (first.stderr.splitlines() or ["(no stderr)"])[0]))
            print("    expected: exit %d%s" % (first.case["exit"], ", /%s/" % first.case["expect"]
                                                  if first.case.get("expect") else ""))
            for p in first.problems[:6]:
                print("    problem:  " + p)
            print("    reproduce: " + reproducer(first.case, exe, outdir))
    for r in xpasses:
        print("XPASS %s: passes now; remove its known_bug mark (%s)" % (r.case["id"], r.case["known_bug"]))
    if skipped:
        print("--- skipped: %d cases need OpenSSL (ONNXZ_HAVE_OPENSSL=0): %s" % (
            len(skipped), ", ".join(sorted({c["family"] for c in skipped}))))
    if strided:
        print("--- not run: %d loop cases (--loop-stride %d)" % (len(strided), args.loop_stride))
    slowest = max(results, key=lambda r: r.secs) if results else None
    print("hostile suite: %d cases: %d passed, %d failed, %d xfail (known bugs), %d xpass, "
          "%d skipped; %s%.1f s with %d jobs%s%s" % (
              len(results) + len(skipped) + len(strided), counts.get("PASS", 0), len(fails),
              len(xfails), len(xpasses), len(skipped) + len(strided),
              "generated in %.1f s, run in " % t_gen if args.generate else "", wall, args.jobs,
              " (sanitizer build: ASan allocator capped at %d MiB)" % (MEMORY >> 20) if sanitized
              else " (wrapped: no memory cap, timeout %d s)" % TIMEOUT if wrapped
              else " (RLIMIT_AS %d MiB)" % (MEMORY >> 20),
              "; slowest %s %.2f s" % (slowest.case["id"], slowest.secs) if slowest else ""))
    if not fails:
        shutil.rmtree(scratch, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
