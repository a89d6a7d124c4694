#!/usr/bin/env python3
"""Side files and concurrent processes around in-place edits (spec/onnxz.md, spec/security.md).

Each scene builds its files in a directory of its own, runs the onnxz tool, and asserts
the exit status, the message, what the target holds (read with python's zipfile and
python3-onnx, and `unzip -p`, never with our reader) and that nothing else in the
directory changed. Interleavings are forced, never timed: a process is stopped at a named
point (ONNXZ_TEST_STOP, spec/onnxz.md A-58: it raises SIGSTOP there), the competitor
runs, and the first is continued (SIGCONT).

  journal_*   spec/onnxz.md A-55, A-56 and security.md "Side files": a FIFO, a dangling
              link, a directory or a device at the journal's name; a forged journal beside
              a complete archive, and beside one that onnxz refuses but other readers read
              (entries appended after its end); a torn tail with its genuine journal, and
              with one that does not fit
  edit_*      A-58: two edits at once (archive, .onnx); readers against a compacting edit,
              and against an edit half-way through appending; --append-only beside readers
  save_*      W-32 (spec/onnx-wire.md): a save keeps the replaced file's mode and owner, and
              replaces a link rather than write through it; meta edits the file a link
              names, .onnx and .onnxz alike

usage: scene_edit.py ONNXZ WORKDIR
"""
import hashlib
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import zipfile
import zlib

import onnx

ONNXZ, WORK = sys.argv[1], sys.argv[2]
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "samples", "mlp.onnx")
MODEL = "__MODEL_PROTO"
TIMEOUT = 600  # seconds; a blocked process (a FIFO) fails the scene instead of hanging it
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def run(*a, env=None, timeout=TIMEOUT):
    """Runs onnxz to completion: (status, stdout, stderr)."""
    try:
        p = subprocess.run([ONNXZ, *a], capture_output=True, text=True, timeout=timeout,
                           env=env)
    except subprocess.TimeoutExpired:
        return None, "", "timed out (blocked)"
    return p.returncode, p.stdout, p.stderr


def stopped_at(point, *a):
    """Starts onnxz and waits until it stops itself at `point`."""
    env = dict(os.environ, ONNXZ_TEST_STOP=point)
    p = subprocess.Popen([ONNXZ, *a], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    _, status = os.waitpid(p.pid, os.WUNTRACED)
    if not check(os.WIFSTOPPED(status), f"{a[0]} did not stop at {point} (status {status:#x})"):
        p.returncode = os.waitstatus_to_exitcode(status)
    return p


def resume(p):
    """Continues a process stopped by stopped_at and collects it: (status, out, err)."""
    if p.returncode is None:
        os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=TIMEOUT)
    return p.returncode, out, err


def snapshot(d, but=()):
    """Every name in d with its type and contents (links by their target), but `but`."""
    got = {}
    for n in sorted(os.listdir(d)):
        if n in but:
            continue
        p = os.path.join(d, n)
        if os.path.islink(p):
            got[n] = ("link", os.readlink(p))
        elif os.path.isdir(p):
            got[n] = ("dir", tuple(sorted(os.listdir(p))))
        elif os.path.isfile(p):
            got[n] = ("file", hashlib.sha256(open(p, "rb").read()).hexdigest())
        else:
            got[n] = ("other", os.stat(p).st_mode)
    return got


def scene(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def archive(d, name="a.onnxz"):
    path = os.path.join(d, name)
    rc, _, err = run("convert", SAMPLE, path)
    check(rc == 0, f"{d}: convert: {err}")
    return path


def model_by_zipfile(path):
    """__MODEL_PROTO as python's zipfile reads it, decoded by python3-onnx; and the same
    bytes from `unzip -p` (a second reader, when installed)."""
    with zipfile.ZipFile(path) as z:
        data = z.read(MODEL)
    if shutil.which("unzip"):
        u = subprocess.run(["unzip", "-p", path, MODEL], capture_output=True)
        check(u.returncode == 0 and u.stdout == data, f"{path}: unzip and zipfile disagree")
    return onnx.ModelProto.FromString(data)


def props(m):
    return {e.key: e.value for e in m.metadata_props}


def tensors_by_zipfile(path):
    with zipfile.ZipFile(path) as z:
        return {i.filename: z.read(i.filename) for i in z.infolist() if i.filename != MODEL}


def meta_props(path):
    """What `onnxz meta` reports: the metadata_props lines."""
    rc, out, err = run("meta", "--json", path)
    if not check(rc == 0, f"meta {path}: {err}"):
        return None
    import json
    return {e["key"]: e["value"] for e in json.loads(out)["metadata_props"]}


def one_error(err, *fragments):
    lines = err.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("onnxz: error: ") and all(f in lines[0] for f in fragments)


BIG = "x" * 20000  # a doc_string that makes the model grow: the edit appends


# ---- section 1: the journal -------------------------------------------------------------

def journal_not_a_file():
    """A FIFO, a dangling link, a directory at `<archive>-journal`: readers do not look at
    it (they neither block nor change what they read); an edit refuses it with a message
    that names it, and leaves the archive, the name and what a link points at alone."""
    for kind in ("fifo", "dangling_link", "directory"):
        d = scene(f"journal_{kind}")
        arc = archive(d)
        j = arc + "-journal"
        victim = os.path.join(d, "victim")
        if kind == "fifo":
            os.mkfifo(j)
        elif kind == "dangling_link":
            os.symlink(victim, j)
        else:
            os.mkdir(j)
        before = snapshot(d)
        for cmd in (["info"], ["verify"], ["ls"], ["meta"]):
            rc, _, err = run(*cmd, arc, timeout=60)
            check(rc == 0, f"{kind}: {cmd[0]} with a {kind} journal: rc={rc} {err.strip()}")
        rc, _, err = run("meta", arc, "--doc-string", BIG, "--set", "k=v", timeout=60)
        what = {"fifo": "is a FIFO", "dangling_link": "is a symbolic link",
                "directory": "is a directory"}[kind]
        check(rc == 1 and one_error(err, j, what, "A-55"),
              f"{kind}: meta must refuse, naming the journal: rc={rc} {err.strip()}")
        check(snapshot(d) == before, f"{kind}: something changed on disk")
        check(not os.path.lexists(victim), f"{kind}: the link's target was created")


def forged(old_size, new_size, check_from, crc):
    body = b"OZJRNL01" + struct.pack("<QQQI", old_size, new_size, check_from, crc)
    return body + struct.pack("<I", zlib.crc32(body))


def model_offset(path):
    with zipfile.ZipFile(path) as z:
        return z.getinfo(MODEL).header_offset


def journal_forged():
    """A well-formed journal beside a complete archive whose first bytes are themselves an
    archive (the state an append-only edit leaves): onnxz reads what zipfile and unzip read,
    and an edit neither cuts the file (no tensor byte lost) nor reads the prefix; it removes
    the stale journal. And a 40-byte forged journal whose old_size lies inside the tensors."""
    d = scene("journal_forged")
    arc = archive(d)
    old = open(arc, "rb").read()
    m_off = model_offset(arc)
    rc, _, err = run("meta", arc, "--append-only", "--set", "stage=new", "-q")
    check(rc == 0, f"forged: append-only edit: {err}")
    size = os.path.getsize(arc)
    tensors = tensors_by_zipfile(arc)
    # each forgery is made for the file as it is when it is laid beside it
    cases = {"fits the old archive": lambda now: forged(len(old), size, m_off, zlib.crc32(old[m_off:])),
             "inside the tensors": lambda now: forged(4096, len(now) + 1, 0, zlib.crc32(now[:4096]))}
    for what, make in cases.items():
        open(arc + "-journal", "wb").write(make(open(arc, "rb").read()))
        before = snapshot(d)
        want = props(model_by_zipfile(arc))
        check(want.get("stage") == "new", f"forged ({what}): zipfile reads another model")
        check(meta_props(arc) == want, f"forged ({what}): onnxz reads another model than zipfile")
        rc, out, err = run("verify", arc)
        check(rc == 0, f"forged ({what}): verify: {err.strip()}")
        check(snapshot(d) == before, f"forged ({what}): a reader changed something")
        rc, _, err = run("meta", arc, "--set", f"edit={len(what)}", "-q")
        check(rc == 0, f"forged ({what}): edit refused: {err.strip()}")
        check(not os.path.exists(arc + "-journal"), f"forged ({what}): the stale journal stayed")
        check(tensors_by_zipfile(arc) == tensors, f"forged ({what}): tensor entries changed (data loss)")
        got = props(model_by_zipfile(arc))
        check(got.get("stage") == "new" and got.get("edit") == str(len(what)),
              f"forged ({what}): the edit did not start from the whole archive: {got}")
        check(snapshot(d, (os.path.basename(arc),)) == {k: v for k, v in before.items()
                                                       if k not in (os.path.basename(arc),
                                                                    os.path.basename(arc) + "-journal")},
              f"forged ({what}): something beside the archive changed")


def journal_torn():
    """An edit killed while it appends (stopped there, then SIGKILL): every reader, ours and
    zipfile, refuses the file, ours naming the journal; the next edit rolls it back to the
    exact old bytes and completes. With a journal that does not fit (its CRC), nothing is
    cut: the edit is refused and the file stays as it is."""
    for fits in (True, False):
        d = scene(f"journal_torn_{'genuine' if fits else 'mismatch'}")
        arc = archive(d)
        old = open(arc, "rb").read()
        p = stopped_at("appending", "meta", arc, "--doc-string", BIG, "--set", "torn=1")
        os.kill(p.pid, signal.SIGKILL)
        p.communicate()
        torn = open(arc, "rb").read()
        check(len(torn) > len(old) and torn[:len(old)] == old, "torn: not the old archive and a tail")
        check(os.path.exists(arc + "-journal"), "torn: no journal")
        if not fits:
            j = bytearray(open(arc + "-journal", "rb").read())
            j[32:36] = struct.pack("<I", struct.unpack("<I", j[32:36])[0] ^ 1)
            j[36:40] = struct.pack("<I", zlib.crc32(bytes(j[:36])))
            open(arc + "-journal", "wb").write(bytes(j))
        rc, _, err = run("info", arc)
        check(rc == 1 and one_error(err, "Z-6", arc + "-journal"),
              f"torn: info must refuse, naming the journal: rc={rc} {err.strip()}")
        # the journal changes nothing of what is read, only the message
        os.rename(arc + "-journal", arc + ".aside")
        rc2, _, err2 = run("info", arc)
        os.rename(arc + ".aside", arc + "-journal")
        check(rc2 == 1 and re.sub(r" \(an in-place edit of it was interrupted: .*?A-56\)", "", err) == err2,
              f"torn: without the journal info says another thing: {err2.strip()}")
        before = snapshot(d)
        rc, _, err = run("meta", arc, "--set", "next=1", "-q")
        if fits:
            check(rc == 0, f"torn: the next edit: {err.strip()}")
            check(err.strip() == f"onnxz: {arc}: rolled back an interrupted edit: removed its "
                  f"torn tail, the bytes from offset {len(old)} to the end at {len(torn)} (A-56)",
                  f"torn: the rollback must be reported, even with -q: {err.strip()}")
            got = props(model_by_zipfile(arc))
            check(got.get("next") == "1" and "torn" not in got, f"torn: after the rollback: {got}")
            check(not os.path.exists(arc + "-journal"), "torn: the journal stayed")
            check(tensors_by_zipfile(arc) == tensors_by_zipfile_bytes(old), "torn: tensors changed")
        else:
            check(rc == 1 and one_error(err, "Z-6"), f"torn, journal does not fit: rc={rc} {err.strip()}")
            check(snapshot(d) == before, "torn, journal does not fit: something changed")


def journal_killed_while_written():
    """An edit killed while it writes its journal (stopped once the journal's file is
    created, then SIGKILL) leaves no journal name behind, only at most its hidden
    temporary: the next edit goes ahead. (A journal created under its own name and killed
    before its 40 bytes were written stopped every later edit.)"""
    d = scene("journal_killed_while_written")
    arc = archive(d)
    old = open(arc, "rb").read()
    p = stopped_at("journal-opened", "meta", arc, "--doc-string", BIG, "--set", "k=1")
    os.kill(p.pid, signal.SIGKILL)
    p.communicate()
    check(open(arc, "rb").read() == old, "killed while writing the journal: the archive changed")
    check(not os.path.lexists(arc + "-journal"), "killed while writing the journal: a journal name is left")
    rc, _, err = run("meta", arc, "--set", "next=1", "-q")
    check(rc == 0, f"killed while writing the journal: the next edit fails: {err.strip()}")
    check(props(model_by_zipfile(arc)).get("next") == "1", "killed while writing the journal: the next edit is not there")


def append_entries(old, name, bodies, trailer=b""):
    """old (an archive with no comment) followed by STORED entries all named `name`, a new
    central directory (the old headers, then theirs) and end record, then `trailer`: what
    another ZIP tool could leave after an interrupted edit's torn tail was cut, or an
    attacker appends so that the file is more than onnxz takes it for."""
    count, cd_size, cd_off = struct.unpack("<HII", old[-12:-2])
    data, central = bytearray(old), bytearray(old[cd_off:cd_off + cd_size])
    for body in bodies:
        crc, at, n = zlib.crc32(body), len(data), name.encode()
        data += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0x21, crc, len(body),
                            len(body), len(n), 0) + n + body
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0x21, crc,
                               len(body), len(body), len(n), 0, 0, 0, 0, 0, at) + n
    n = count + len(bodies)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(central), len(data), 0)
    return bytes(data + central + end + trailer)


def journal_foreign_end():
    """A genuine-looking journal (the 40 bytes anyone can compute: old size, the model's
    offset, an unkeyed CRC) beside an archive to which ZIP entries were appended, with a
    central directory and end record of their own: python's zipfile and unzip read them,
    onnxz refuses the file (Z-71, duplicate names), and the journal's numbers fit. An edit
    must not roll back to the old end (that would cut the appended entries away for every
    reader): it is refused, naming the journal, and nothing changes (A-56). The same with
    a few stray bytes after the appended end record (readers that search for the last end
    signature still take it)."""
    for what, trailer in (("appended end", b""), ("stray bytes after it", b"\0" * 7)):
        d = scene("journal_foreign_end" + ("_trailer" if trailer else ""))
        arc = archive(d)
        old = open(arc, "rb").read()
        m_off = model_offset(arc)
        new = append_entries(old, "notes.txt", (b"first note\n", b"second note\n"), trailer)
        open(arc, "wb").write(new)
        open(arc + "-journal", "wb").write(forged(len(old), len(new) + 1, m_off,
                                                  zlib.crc32(old[m_off:])))
        with zipfile.ZipFile(arc) as z:
            names = [i.filename for i in z.infolist()]
        check(names.count("notes.txt") == 2, f"foreign end ({what}): zipfile reads {names}")
        if shutil.which("unzip") and not trailer:
            u = subprocess.run(["unzip", "-t", arc], capture_output=True, text=True)
            check(u.returncode == 0, f"foreign end ({what}): unzip -t: {u.stdout}")
        rc, _, err = run("info", arc)
        check(rc == 1, f"foreign end ({what}): onnxz opens the file: rc={rc}")
        before = snapshot(d)
        rc, _, err = run("meta", arc, "--set", "k=v", "-q")
        check(rc == 1 and one_error(err, arc + "-journal", "nothing cut", f"cut the file to {len(old)} bytes", "A-56"),
              f"foreign end ({what}): the edit must be refused, naming the journal: rc={rc} {err.strip()}")
        check(snapshot(d) == before,
              f"foreign end ({what}): the file changed ({len(new)} -> {os.path.getsize(arc)} bytes)")


def journal_device():
    """A character device (/dev/null's numbers) at the journal's name: the edit refuses it
    as not a regular file without ever opening it (an open runs the device's driver),
    which strace shows (security.md "Side files")."""
    d = scene("journal_device")
    arc = archive(d)
    j = arc + "-journal"
    try:
        os.mknod(j, 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 3))
    except OSError as e:
        print(f"skip journal_device: cannot make a device node here ({e})")
        return
    before = snapshot(d)
    strace = shutil.which("strace")
    trace = os.path.join(d, "trace")
    cmd = [strace, "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", trace] if strace else []
    # LeakSanitizer cannot run under ptrace; the runs without strace check for leaks
    env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    p = subprocess.run(cmd + [ONNXZ, "meta", arc, "--set", "k=v"], capture_output=True, text=True,
                       timeout=TIMEOUT, env=env)
    if strace and p.returncode != 1 and "ptrace" in p.stderr:
        print(f"skip journal_device's strace part: {p.stderr.strip()}")
        p = subprocess.run([ONNXZ, "meta", arc, "--set", "k=v"], capture_output=True, text=True)
        strace = None
    check(p.returncode == 1 and one_error(p.stderr, j, "not a regular file", "A-55"),
          f"device journal: meta must refuse it: rc={p.returncode} {p.stderr.strip()}")
    if strace:
        opened = [l for l in open(trace) if j in l]
        check(not opened, f"device journal: opened: {opened}")
        os.remove(trace)
    else:
        print("skip journal_device's open check: no strace")
    check(snapshot(d) == before, "device journal: something changed")


def tensors_by_zipfile_bytes(data):
    import io
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {i.filename: z.read(i.filename) for i in z.infolist() if i.filename != MODEL}


# ---- section 4: concurrent editors and readers --------------------------------------------

def edit_two_editors():
    """Two edits of one file at once: the second is refused as busy while the first holds
    the file (stopped after it read the model, or half-way through appending); then it
    succeeds, and the file holds both changes."""
    for form, point in (("onnxz", "journaled"), ("onnxz", "meta-read"), ("onnx", "meta-read")):
        d = scene(f"edit_two_{form}_{point}")
        if form == "onnxz":
            path = archive(d)
        else:
            path = os.path.join(d, "m.onnx")
            shutil.copy(SAMPLE, path)
        first = stopped_at(point, "meta", path, "--doc-string", BIG, "--set", "first=1", "-q")
        before = snapshot(d)
        rc, _, err = run("meta", path, "--set", "second=2", "-q")
        check(rc == 1 and one_error(err, "busy", "A-58"),
              f"{form} at {point}: the second edit must be busy: rc={rc} {err.strip()}")
        check(snapshot(d) == before, f"{form} at {point}: the refused edit changed something")
        rc, _, err = resume(first)
        check(rc == 0, f"{form} at {point}: the first edit: {err.strip()}")
        rc, _, err = run("meta", path, "--set", "second=2", "-q")
        check(rc == 0, f"{form} at {point}: the second edit, later: {err.strip()}")
        m = model_by_zipfile(path) if form == "onnxz" else onnx.load(path, load_external_data=False)
        got = props(m)
        check(got.get("first") == "1" and got.get("second") == "2" and m.doc_string == BIG,
              f"{form} at {point}: a change was lost: {got}")


def edit_readers_vs_compaction():
    """A reader (info, verify, ls, convert, meta) that has the archive open, stopped there:
    an edit that would overwrite or shorten the file is refused as busy and changes nothing;
    an --append-only edit goes ahead; the reader then finishes cleanly (no SIGBUS)."""
    for cmd in (["info"], ["verify"], ["ls"], ["meta"], ["convert", "-f", None]):
        d = scene(f"edit_reader_{cmd[0]}")
        arc = archive(d)
        args = [c if c is not None else os.path.join(d, "out.onnx") for c in cmd]
        reader = stopped_at("reader-open", *args[:1], *args[1:], arc) if cmd[0] != "convert" \
            else stopped_at("reader-open", "convert", "-f", arc, args[2])
        before = snapshot(d)
        rc, _, err = run("meta", arc, "--doc-string", BIG, "--set", "k=v", "-q")
        check(rc == 1 and one_error(err, "busy", "open in another process", "A-58"),
              f"{cmd[0]} open: a compacting edit must be busy: rc={rc} {err.strip()}")
        check(snapshot(d) == before, f"{cmd[0]} open: the refused edit changed something")
        rc, _, err = run("meta", arc, "--append-only", "--doc-string", BIG, "--set", "k=v", "-q")
        check(rc == 0, f"{cmd[0]} open: --append-only: {err.strip()}")
        rc, out, err = resume(reader)
        check(rc == 0, f"{cmd[0]}: the reader failed beside an append-only edit: rc={rc} {err.strip()}")
        check(props(model_by_zipfile(arc)).get("k") == "v", f"{cmd[0]}: the edit is not there")


def edit_reader_during_append():
    """An edit stopped half-way through appending (the file ends in a torn tail), or while
    compacting: a reader that starts then is refused as busy at once (no SIGBUS, no
    misleading Z-60), and reads the new model once the edit is done."""
    for point in ("appending", "compacting"):
        d = scene(f"edit_reader_during_{point}")
        arc = archive(d)
        ed = stopped_at(point, "meta", arc, "--doc-string", BIG, "--set", "k=v", "-q")
        for cmd in ("info", "verify", "ls", "meta"):
            rc, _, err = run(cmd, arc)
            check(rc == 1 and one_error(err, "busy", "being edited", "A-58"),
                  f"{cmd} during {point}: must be busy: rc={rc} {err.strip()}")
        rc, _, err = resume(ed)
        check(rc == 0, f"edit stopped at {point}: {err.strip()}")
        check(meta_props(arc) == props(model_by_zipfile(arc)) and
              props(model_by_zipfile(arc)).get("k") == "v", f"after {point}: not the new model")


# ---- the atomic save: mode, owner, links ---------------------------------------------------

def save_mode_owner_links():
    d = scene("save_mode")
    m = os.path.join(d, "m.onnx")
    shutil.copy(SAMPLE, m)
    os.chmod(m, 0o600)
    rc, _, err = run("meta", m, "--set", "k=v", "-q")
    check(rc == 0 and os.stat(m).st_mode & 0o7777 == 0o600,
          f"meta kept mode {os.stat(m).st_mode & 0o7777:o}, not 0600: {err.strip()}")
    out = os.path.join(d, "out.onnx")
    shutil.copy(SAMPLE, out)
    os.chmod(out, 0o640)
    rc, _, err = run("convert", "-f", m, out)
    check(rc == 0 and os.stat(out).st_mode & 0o7777 == 0o640, f"convert -f: mode {os.stat(out).st_mode & 0o7777:o}")
    if os.geteuid() == 0:
        os.chown(m, 1234, 2345)
        rc, _, err = run("meta", m, "--set", "k=w", "-q")
        st = os.stat(m)
        check(rc == 0 and (st.st_uid, st.st_gid) == (1234, 2345), f"meta: owner {st.st_uid}:{st.st_gid}")

    d = scene("save_links")
    for form in ("onnx", "onnxz"):
        target = os.path.join(d, f"target.{form}")
        if form == "onnx":
            shutil.copy(SAMPLE, target)
        else:
            archive(d, f"target.{form}")
        link = os.path.join(d, f"link.{form}")
        os.symlink(f"target.{form}", link)
        rc, _, err = run("meta", link, "--set", "via=link", "-q")
        check(rc == 0 and os.path.islink(link) and os.readlink(link) == f"target.{form}",
              f"meta through a link to .{form}: the link was replaced: {err.strip()}")
        m = model_by_zipfile(target) if form == "onnxz" else onnx.load(target, load_external_data=False)
        check(props(m).get("via") == "link", f"meta through a link to .{form}: the target was not edited")
        if form == "onnxz":  # one journal for every name of the archive: the target's
            os.mkfifo(target + "-journal")
            rc, _, err = run("meta", link, "--set", "via=again", "-q", timeout=60)
            check(rc == 1 and one_error(err, os.path.realpath(target) + "-journal", "FIFO"),
                  f"meta through a link: the journal beside the target was not found: {err.strip()}")
            os.remove(target + "-journal")
    # a save (not an edit) replaces the name: a link there is replaced, never written
    # through, as the hostile suite's unpack_over_symlink_* cases require (W-32)
    link = os.path.join(d, "out.onnx")
    os.symlink("target.onnx", link)
    target_before = open(os.path.join(d, "target.onnx"), "rb").read()
    rc, _, err = run("convert", "-f", SAMPLE, link)
    check(rc == 0 and not os.path.islink(link) and
          open(os.path.join(d, "target.onnx"), "rb").read() == target_before,
          f"convert -f to a link: {err.strip()}")
    dangling = os.path.join(d, "dangling.onnx")
    os.symlink("nowhere/nothing.onnx", dangling)
    rc, _, err = run("meta", dangling, "--set", "k=v")
    check(rc == 1 and one_error(err, "symbolic link"), f"meta of a dangling link: rc={rc} {err.strip()}")
    check(not os.path.lexists(os.path.join(d, "nowhere")), "meta of a dangling link created something")


os.makedirs(WORK, exist_ok=True)
for f in (journal_not_a_file, journal_forged, journal_torn, journal_killed_while_written,
          journal_foreign_end, journal_device, edit_two_editors,
          edit_readers_vs_compaction, edit_reader_during_append, save_mode_owner_links):
    before = len(failures)
    f()
    print(("ok  " if len(failures) == before else "FAIL"), f.__name__)
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all scenes passed")
