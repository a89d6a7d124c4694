"""What the scripted hostile scenes share (scene_*.py beside this file).

A scene stops onnxz at a named point (ONNXZ_TEST_STOP=point[:N], libonnxcore's
onnxcore_private.h: the process raises SIGSTOP there), does something to it or beside
it, and lets it continue: interleavings are forced, never timed. Snapshots of a directory
tree show that nothing else changed.
"""

import hashlib
import os
import signal
import subprocess
import sys

FAILED = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILED.append(what)
    return cond


def finish():
    if FAILED:
        print(f"{len(FAILED)} failed", flush=True)
        sys.exit(1)
    print("all passed", flush=True)


def snapshot(root):
    """{relative path: (kind, sha256 of content or link target, mode)} for the tree."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p), 0)
            elif os.path.isdir(p):
                out[rel] = ("dir", "", st.st_mode & 0o7777)
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    out[rel] = ("file", hashlib.sha256(f.read()).hexdigest(), st.st_mode & 0o7777)
            else:
                out[rel] = ("other", "", st.st_mode)
    return out


def diff(before, after):
    """A short text of what differs between two snapshots ('' when nothing)."""
    lines = []
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            lines.append(f"{k}: {before.get(k, 'absent')} -> {after.get(k, 'absent')}")
    return "; ".join(lines)


def start_stopped(cmd, point, cwd, env=None):
    """Starts cmd with ONNXZ_TEST_STOP=point and waits until it stops there. Returns the
    Popen, or None (after reaping it) when it ended without stopping."""
    e = dict(os.environ if env is None else env)
    e["ONNXZ_TEST_STOP"] = point
    p = subprocess.Popen(cmd, cwd=cwd, env=e, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status = os.waitpid(p.pid, os.WUNTRACED)
    if os.WIFSTOPPED(status):
        return p
    # it ended: let Popen know how (waitpid already reaped it)
    p.returncode = (-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status))
    p.stdout.close()
    p.stderr.close()
    print(f"     {cmd} ended without stopping at {point}: status {p.returncode}")
    return None


def resume(p, sig=None):
    """Sends sig (if any) to a stopped process, continues it, and returns (status, stderr)."""
    if sig is not None:
        os.kill(p.pid, sig)
    os.kill(p.pid, signal.SIGCONT)
    _, err = p.communicate(timeout=120)
    return p.returncode, err.decode("utf-8", "replace")
