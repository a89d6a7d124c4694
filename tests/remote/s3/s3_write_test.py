#!/usr/bin/python3
"""onnxz writing s3:// objects (multipart upload), against s3rver behind the SigV4 gate.

    s3_write_test.py --onnxz PATH --node-modules DIR --work DIR

Amazon's client (@aws-sdk/client-s3, sdk.js) is the oracle: it reads back what onnxz
wrote and lists the bucket's pending multipart uploads. Checked:
  same      `onnxz convert m.onnx s3://models/K.onnxz` (and to K.onnx, and from an
            archive): the object the SDK reads back is byte for byte the file the same
            convert writes locally; the gate saw CreateMultipartUpload, parts of 8 MiB but
            the last, CompleteMultipartUpload, each signed with the account's key;
  memory    peak RSS of the upload beside the local convert's: within the parts in flight;
  exists    an existing key without -f: refused in one line, the object untouched; with
            -f: replaced;
  failures  a part the store refuses (the gate's fault knob), a wrong secret, SIGTERM and
            SIGINT mid-upload: exit 1 (or death by the signal), one line naming the object,
            no pending multipart upload left (ListMultipartUploads) and no object;
  pairs     two-file and N-file models: each object equal to the local convert's file, every
            data object completed before the model's; a refused part leaves none of them;
            an encrypted .onnxc, decrypted by the local tool, is the plain local convert.
Exit 0 on pass, 1 on failure, 77 (skipped, the reason printed) without HTTP or OpenSSL.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import s3_env  # noqa: E402

SKIP = 77
BUCKET = "models"
WRONG_SECRET = "Wrong/Secret+Key0001abcdefghijklmnopqrstu"
SECRETS = [a["secret"] for a in s3_env.ACCOUNTS.values()] + [WRONG_SECRET]
ERROR_RE = re.compile(r"^onnxz: error: (?P<file>s3://\S+): (?P<msg>.+)$")


class T:
    def __init__(self, args, gate):
        self.onnxz, self.work, self.gate = args.onnxz, args.work, gate
        self.failures = []
        self.home = os.path.join(self.work, "home")
        os.makedirs(self.home, exist_ok=True)

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
        return cond

    def env(self, account="main"):
        env = self.gate.env(account)
        for k in list(env):
            if k.startswith("ONNXZ_") or k.lower().endswith("_proxy"):
                del env[k]
        env["HOME"] = self.home
        for k in ("http_proxy", "https_proxy", "all_proxy"):
            env[k] = "http://127.0.0.1:9"
        env["no_proxy"] = "127.0.0.1,localhost"
        return env

    def run(self, argv, account="main"):
        p = subprocess.run([self.onnxz, *argv], capture_output=True, env=self.env(account),
                           timeout=120, stdin=subprocess.DEVNULL)
        err = p.stderr.decode("utf-8", "replace")
        for s in SECRETS:
            self.check(s.encode() not in p.stdout and s not in err,
                       f"onnxz {' '.join(argv)}: a secret in its output")
        return p.returncode, p.stdout.decode("utf-8", "replace"), err

    def sdk(self, *ops):
        return self.gate.sdk(list(ops))

    def object_bytes(self, key):
        dst = os.path.join(self.work, "back-" + key.replace("/", "_"))
        r = self.sdk({"op": "get", "bucket": BUCKET, "key": key, "file": dst})[0]
        if "error" in r:
            return None
        with open(dst, "rb") as f:
            return f.read()

    def nothing_left(self, key, what):
        r = self.sdk({"op": "uploads", "bucket": BUCKET},
                     {"op": "head", "bucket": BUCKET, "key": key})
        self.check(r[0]["uploads"] == [], f"{what}: pending multipart uploads {r[0]['uploads']}")
        self.check(r[1].get("error") == "NotFound", f"{what}: the key exists: {r[1]}")

    def one_error(self, rc, out, err, key, message, what):
        self.check(rc == 1, f"{what}: exit {rc} (stderr {err!r})")
        self.check(out == "", f"{what}: stdout {out!r}")
        lines = err.splitlines()
        m = ERROR_RE.match(lines[0]) if len(lines) == 1 else None
        if self.check(m is not None, f"{what}: not one error line: {err!r}"):
            self.check(m.group("file") == f"s3://{BUCKET}/{key}", f"{what}: names {m.group('file')}")
            self.check(re.search(message, m.group("msg")) is not None,
                       f"{what}: {m.group('msg')!r} does not match {message!r}")


def build_model(path, seed, mib):
    """A model of some `mib` MiB of weights in three tensors (python3-onnx writes it)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.RandomState(seed)
    n = mib * (1 << 20) // 4
    shapes = [(n * 3 // 4 // 1024, 1024), (n // 4 // 1024, 1024), (100,)]
    ts = [numpy_helper.from_array(rng.rand(*s).astype(np.float32), f"w{i}")
          for i, s in enumerate(shapes)]
    g = helper.make_graph([helper.make_node("Identity", ["w0"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], ts)
    onnx.save(helper.make_model(g), path)


def local_convert(t, src, dst):
    p = subprocess.run([t.onnxz, "convert", "-f", src, dst], capture_output=True)
    if p.returncode:
        raise RuntimeError(f"local convert failed: {p.stderr!r}")
    with open(dst, "rb") as f:
        return f.read()


def peak_rss_kib(argv, env):
    """Peak RSS of one run (a child of its own: the resource counters of its wait)."""
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_maxrss


def check_same(t, m, a):
    for src, key, local in ((m, "w/m.onnxz", "m.onnxz"), (m, "w/m.onnx", "m.onnx"),
                            (a, "w/from-archive.onnxz", "a2.onnxz")):
        want = local_convert(t, src, os.path.join(t.work, local))
        mark = t.gate.mark()
        rc, out, err = t.run(["convert", src, f"s3://{BUCKET}/{key}"])
        if not t.check(rc == 0 and err == "", f"same {key}: exit {rc}, stderr {err!r}"):
            continue
        t.check(f"s3://{BUCKET}/{key}" in out, f"same {key}: report {out!r}")
        got = t.object_bytes(key)
        t.check(got == want, f"same {key}: the SDK's bytes ({None if got is None else len(got)})"
                f" differ from the local convert's ({len(want)})")
        reqs = [r for r in t.gate.requests_since(mark)
                if r["key"] == key and r["user_agent"] == "onnxz"]
        kinds = [(r["method"], "uploads" in r["query"], "partNumber" in r["query"]) for r in reqs]
        parts = [r for r in reqs if r["method"] == "PUT" and "partNumber" in r["query"]]
        t.check(("POST", True, False) in kinds, f"same {key}: no CreateMultipartUpload: {kinds}")
        t.check(len(parts) == (len(want) + (8 << 20) - 1) // (8 << 20),
                f"same {key}: {len(parts)} parts for {len(want)} bytes")
        sizes = sorted((int(re.search(r"partNumber=(\d+)", r["query"]).group(1)), r["bytes_in"])
                       for r in parts)
        t.check(all(s == 8 << 20 for _, s in sizes[:-1]), f"same {key}: part sizes {sizes}")
        t.check(all(r["auth"] == "sigv4" and (r["status"] < 300 or r["method"] == "HEAD")
                    for r in reqs),
                f"same {key}: a request unsigned or refused: {reqs}")
        t.check(reqs and reqs[-1]["method"] == "POST" and "uploadId" in reqs[-1]["query"],
                f"same {key}: the last request is not CompleteMultipartUpload")


def check_memory(t, big):
    """The upload holds the parts in flight (4 by default, 8 MiB each), the part being
    filled and at most two held back for a patch, beside what a local convert holds."""
    local = os.path.join(t.work, "big-local.onnxz")
    rc1, rss_local = peak_rss_kib([t.onnxz, "convert", "-f", big, local], t.env())
    rc2, rss_s3 = peak_rss_kib([t.onnxz, "convert", "-f", big, f"s3://{BUCKET}/w/big.onnxz"],
                               t.env())
    t.check(rc1 == 0 and rc2 == 0, f"memory: exits {rc1} {rc2}")
    extra_mib = (rss_s3 - rss_local) / 1024
    print(f"memory: peak RSS local {rss_local // 1024} MiB, to s3 {rss_s3 // 1024} MiB "
          f"({os.path.getsize(local) >> 20} MiB object)")
    t.check(extra_mib < 7 * 8 + 16, f"memory: the upload took {extra_mib:.0f} MiB more")


def check_exists(t, m, m2):
    key = "w/exists.onnxz"
    rc, out, err = t.run(["convert", m, f"s3://{BUCKET}/{key}"])
    t.check(rc == 0, f"exists: first write: {err!r}")
    before = t.object_bytes(key)
    rc, out, err = t.run(["convert", m2, f"s3://{BUCKET}/{key}"])
    t.one_error(rc, out, err, key, r"already exists", "exists without -f")
    t.check(t.object_bytes(key) == before, "exists without -f: the object changed")
    t.check(t.sdk({"op": "uploads", "bucket": BUCKET})[0]["uploads"] == [],
            "exists without -f: a pending upload")
    rc, out, err = t.run(["convert", "-f", m2, f"s3://{BUCKET}/{key}"])
    t.check(rc == 0, f"exists with -f: {err!r}")
    want = local_convert(t, m2, os.path.join(t.work, "m2.onnxz"))
    t.check(t.object_bytes(key) == want, "exists with -f: not replaced by the new bytes")


def check_failures(t, m):
    key = "w/fail-part.onnxz"
    mark = t.gate.mark()
    t.gate.faults({"part": 2, "status": 400, "code": "InvalidRequest"})
    try:
        rc, out, err = t.run(["convert", m, f"s3://{BUCKET}/{key}"])
    finally:
        t.gate.faults(None)
    t.one_error(rc, out, err, key, r"part 2 refused: HTTP 400 InvalidRequest", "a part refused")
    reqs = t.gate.requests_since(mark)
    t.check(any(r["method"] == "DELETE" and "uploadId" in r["query"] and r["status"] == 204
                for r in reqs), f"a part refused: no AbortMultipartUpload: {[(r['method'], r['query'], r['status']) for r in reqs]}")
    t.nothing_left(key, "a part refused")

    key = "w/wrong-secret.onnxz"
    wrong = dict(s3_env.ACCOUNTS["main"], secret=WRONG_SECRET)
    rc, out, err = t.run(["convert", m, f"s3://{BUCKET}/{key}"], account=wrong)
    t.one_error(rc, out, err, key, r"access denied \(403 SignatureDoesNotMatch\)", "wrong secret")
    t.nothing_left(key, "wrong secret")

    for sig in (signal.SIGTERM, signal.SIGINT):
        key = f"w/signal-{sig.name}.onnxz"
        mark = t.gate.mark()
        t.gate.faults({"delay_ms": 3000})
        try:
            p = subprocess.Popen([t.onnxz, "convert", m, f"s3://{BUCKET}/{key}"], env=t.env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 20
            started = False
            while time.monotonic() < deadline and not started:  # the upload was created
                time.sleep(0.1)
                started = any("uploads" in r["query"] and r["method"] == "POST"
                              for r in t.gate.requests_since(mark, settle=0, timeout=0))
            time.sleep(0.5)  # parts in flight, held by the gate
            p.send_signal(sig)
            out, err = p.communicate(timeout=60)
        finally:
            t.gate.faults(None)
        t.check(started, f"{sig.name}: the upload never started")
        t.check(p.returncode == -sig, f"{sig.name}: exit {p.returncode} (stderr {err!r})")
        reqs = t.gate.requests_since(mark)
        t.check(any(r["method"] == "DELETE" and "uploadId" in r["query"] for r in reqs),
                f"{sig.name}: no AbortMultipartUpload")
        t.nothing_left(key, sig.name)


def check_pairs(t, m):
    """Two-file and N-file models: each object the SDK reads back is the file the local
    convert writes beside the model; every data object is completed before the model's;
    a refused part leaves none of them, and no pending upload."""
    for name, extra, files in (("two", ["--external-data", "two.data"], ["two.data"]),
                               ("n", ["--external-data", "n.data", "--max-file-size", "9000000"],
                                ["n.data", "n.data.1"])):
        d = os.path.join(t.work, f"local-{name}")
        os.makedirs(d, exist_ok=True)
        subprocess.run([t.onnxz, "convert", "-f", *extra, m, os.path.join(d, f"{name}.onnx")],
                       check=True, capture_output=True)
        t.check(sorted(os.listdir(d)) == sorted(files + [f"{name}.onnx"]),
                f"{name}: the local files {os.listdir(d)}")
        mark = t.gate.mark()
        rc, out, err = t.run(["convert", *extra, m, f"s3://{BUCKET}/p/{name}.onnx"])
        if not t.check(rc == 0 and err == "", f"{name}: exit {rc}, stderr {err!r}"):
            continue
        for f in files + [f"{name}.onnx"]:
            with open(os.path.join(d, f), "rb") as fh:
                want = fh.read()
            got = t.object_bytes(f"p/{f}")
            t.check(got == want, f"{name}: object p/{f} differs from the local file")
        done = [r["key"] for r in t.gate.requests_since(mark)
                if r["method"] == "POST" and "uploadId" in r["query"] and r["status"] == 200]
        t.check(done and done[-1] == f"p/{name}.onnx" and sorted(done[:-1]) == [f"p/{f}" for f in files],
                f"{name}: completion order {done}")
    mark = t.gate.mark()
    t.gate.faults({"part": 2, "status": 400, "code": "InvalidRequest"})
    try:
        rc, out, err = t.run(["convert", "--external-data", "f.data", m, f"s3://{BUCKET}/p/f.onnx"])
    finally:
        t.gate.faults(None)
    t.one_error(rc, out, err, "p/f.onnx", r"s3://models/p/f\.data: part 2 refused",
                "a pair's part refused")
    t.nothing_left("p/f.onnx", "a pair's part refused (the model)")
    t.nothing_left("p/f.data", "a pair's part refused (the data)")
    # an encrypted model: its bytes are random (salt, nonces), so the oracle is the
    # object decrypted by the local tool, equal to the plain local convert
    key = "p/c.onnxc"
    kf = os.path.join(t.work, "key.txt")
    with open(kf, "w") as f:
        f.write("s3 write passphrase")
    rc, out, err = t.run(["convert", "--key-file", kf, m, f"s3://{BUCKET}/{key}"])
    if t.check(rc == 0 and err == "", f"encrypted: exit {rc}, stderr {err!r}"):
        enc = t.object_bytes(key)
        back = os.path.join(t.work, "back.onnxc")
        with open(back, "wb") as f:
            f.write(enc or b"")
        plain = os.path.join(t.work, "back-plain.onnx")
        p = subprocess.run([t.onnxz, "convert", "-f", "--key-file", kf, back, plain],
                           capture_output=True)
        want = local_convert(t, m, os.path.join(t.work, "plain.onnx"))
        t.check(p.returncode == 0 and open(plain, "rb").read() == want,
                f"encrypted: the object decrypted differs from the plain convert ({p.stderr!r})")
    t.check(t.sdk({"op": "uploads", "bucket": BUCKET})[0]["uploads"] == [],
            "encrypted: a pending upload")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnxz", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.onnxz = os.path.abspath(args.onnxz)
    if os.environ.get("ONNXZ_HAVE_OPENSSL", "1") == "0":
        print("SKIP s3 write: built without OpenSSL (writes need signed requests)")
        return SKIP
    try:
        __import__("numpy")
        __import__("onnx")
    except ImportError:
        print("SKIP s3 write: python3-onnx is not available to " + sys.executable)
        return SKIP
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    t0 = time.monotonic()
    m, m2, big = (os.path.join(args.work, n) for n in ("m.onnx", "m2.onnx", "big.onnx"))
    build_model(m, 1, 20)
    build_model(m2, 2, 12)
    build_model(big, 3, 64)
    a = os.path.join(args.work, "a.onnxz")
    subprocess.run([args.onnxz, "convert", "-f", m2, a], check=True, capture_output=True)
    with s3_env.Gate(os.path.join(args.work, "gate"), args.node_modules) as gate:
        t = T(args, gate)
        rc, _, err = t.run(["convert", m, f"s3://{BUCKET}/probe.onnxz"])
        if rc != 0 and re.search(r"built without HTTP", err):
            print(f"SKIP s3 write: {err.strip()}")
            return SKIP
        try:
            check_same(t, m, a)
            check_memory(t, big)
            check_exists(t, m, m2)
            check_failures(t, m)
            check_pairs(t, m)
        finally:
            for f in t.failures:
                print("FAIL", f)
    print(f"s3 write: {len(t.failures)} failure(s) in {time.monotonic() - t0:.1f} s")
    return 1 if t.failures else 0


if __name__ == "__main__":
    sys.exit(main())
