#!/usr/bin/python3
"""onnxz on s3:// URLs, end to end, against s3rver behind the SigV4 gate (README.md here).

    s3_test.py --onnxz PATH --node-modules DIR --work DIR

The objects are uploaded by Amazon's client (@aws-sdk/client-s3, sdk.js): an .onnxz
archive, a .onnx with one external-data file beside its key, one with N of them, a .onnx
holding all its tensors, and an encrypted archive. Checked, each against the same command on
the local file (the oracle: what onnxz does on disk, itself checked against python3-onnx by
the other suites):
  same      info/ls (text and --json), get of a tensor, verify, convert to .onnxz and to
            .onnx: the same output and bytes by s3:// URL as locally;
  encrypted the encrypted archive: the library decrypts files on disk only, so each
            command says so in one line naming the object (as for https://);
  budget    open + list + one tensor of an archive in at most 3 requests (the gate's log),
            every one signed with the account's key, bytes within the listing budget;
  parallel  a 32 MiB tensor (get, convert) in 4 MiB ranges, 2 to 4 at once, each signed,
            covering its bytes once, equal to the local file's;
  errors    a wrong secret, an expired session token, an unknown key id, a missing key, a missing bucket, a
            bucket in another region, no credentials on a private bucket: exit 1, one line
            `onnxz: error: s3://BUCKET/KEY: ...` naming what the store said, nothing on
            stdout, and no secret anywhere in stdout or stderr (nor in any run's output);
  creds     credentials from AWS_* variables (a key; a key with a session token), from
            ~/.aws/credentials with AWS_PROFILE (a temporary HOME; its region from
            ~/.aws/config), and none at all (the public bucket: unsigned requests).
Built without OpenSSL (ONNXZ_HAVE_OPENSSL=0: no signing, no encryption), same and budget
run on the public bucket with no credentials, and credentials given must be refused in one
line. Exit 0 on pass, 1 on failure (each failed check printed), 77 (ctest's skip, with the
reason printed) when this onnxz cannot read s3:// (built without HTTP), its --help names no
AWS_ENDPOINT_URL_S3 yet, or python3-onnx is missing.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import s3_env  # noqa: E402
import remote_test  # noqa: E402
from remote_test import ERROR_RE, PAR_CHUNK, RANGE_RE, TAIL, listing_budget, same_json  # noqa: E402

SKIP = 77
KEY = "s3 test passphrase"
FORMS = ("model.onnxz", "model.onnx", "two.onnx", "split.onnx")
ARCHIVES = ("model.onnxz",)
SECRETS = [a["secret"] for a in s3_env.ACCOUNTS.values()] + [
    a["token"] for a in s3_env.ACCOUNTS.values() if "token" in a]
WRONG_SECRET = "Wrong/Secret+Key0001abcdefghijklmnopqrstu"
# A build without OpenSSL cannot sign (nor encrypt): it reads public buckets only.
NOSSL = os.environ.get("ONNXZ_HAVE_OPENSSL", "1") == "0"
SECRETS.append(WRONG_SECRET)


class Unsupported(Exception):
    """This onnxz cannot read s3:// URLs: the reason."""


class Context:
    def __init__(self, args, gate):
        self.onnxz = args.onnxz
        self.work = args.work
        self.gate = gate
        self.failures = []
        # what the reads go through: the private bucket with the key, or without OpenSSL
        # the public one with no credentials
        self.bucket, self.account = ("public-models", None) if NOSSL else ("models", "main")
        self.home = self.path("home")  # an empty HOME: no ~/.aws of the machine's
        os.makedirs(self.home, exist_ok=True)

    def path(self, *names):
        return os.path.join(self.work, *names)

    def env(self, account="main", region=s3_env.REGION, **extra):
        env = self.gate.env(account, region)
        for k in list(env):
            if k.startswith("ONNXZ_") or k.lower().endswith("_proxy"):
                del env[k]
        env["HOME"] = self.home
        # A safety net: a request meant for anywhere but the gate on 127.0.0.1 (AWS itself,
        # were an endpoint setting ignored) goes to a closed local port, never out.
        for k in ("http_proxy", "https_proxy", "all_proxy"):
            env[k] = "http://127.0.0.1:9"
        env["no_proxy"] = "127.0.0.1,localhost"
        env.update(extra)
        return env

    def run(self, argv, env):
        """(exit status, stdout bytes, stderr text). Every run's output is searched for the
        secrets: none may appear, whatever the command did."""
        p = subprocess.run([self.onnxz, *argv], capture_output=True, env=env, timeout=120,
                           stdin=subprocess.DEVNULL, start_new_session=True)
        err = p.stderr.decode("utf-8", "replace")
        for s in SECRETS:
            self.check(s.encode() not in p.stdout and s not in err,
                       f"onnxz {' '.join(argv)}: a secret ({s[:6]}...) in its output")
        if re.search(r"built without HTTP|without libcurl", err):
            raise Unsupported(err.strip())
        return p.returncode, p.stdout, err

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
        return cond

    def equal(self, got, want, what):
        return self.check(got == want, f"{what}: got {got!r}, want {want!r}")

    def ok(self, argv, what, env):
        rc, out, err = self.run(argv, env)
        good = self.check(rc == 0, f"{what}: onnxz {' '.join(argv)}: exit {rc}, stderr {err!r}")
        good = good and self.equal(err, "", f"{what}: stderr")
        return out if good else None

    def local(self, argv, what):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "ONNXZ_"))}
        env["ONNXZ_KEY"] = KEY
        out = self.ok(argv, f"{what} (local)", env)
        if out is None:
            raise RuntimeError(f"{what}: the local run failed: {self.failures[-1]}")
        return out

    def error(self, argv, url, what, message, env):
        """Exit 1, nothing on stdout, one stderr line `onnxz: error: URL: MESSAGE` with
        MESSAGE matching `message`."""
        rc, out, err = self.run(argv, env)
        self.equal(rc, 1, f"{what}: exit status of onnxz {' '.join(argv)} (stderr {err!r})")
        self.equal(out, b"", f"{what}: stdout on failure")
        lines = err.splitlines()
        if self.equal(len(lines), 1, f"{what}: stderr lines ({err!r})"):
            m = ERROR_RE.match(lines[0])
            if self.check(m is not None, f"{what}: error line format: {lines[0]!r}"):
                self.equal(m.group("file"), url, f"{what}: the object named in the error")
                self.check(re.search(message, m.group("msg"), re.I) is not None,
                           f"{what}: message {m.group('msg')!r} does not match {message!r}")


def text_facts(text, name, command):
    """The lines of `info` or `ls` text output that must be the same by URL as locally:
    the file's name replaced, and what a URL's reader does not know until it reads an
    entry (remote_test.UNKNOWN_BY_URL: ls's OFFSET and ALIGN columns, info's alignment
    lines) left out."""
    out = []
    for line in text.replace(name, "FILE").splitlines():
        if command == "ls":
            cols = line.split()
            out.append(" ".join(cols[:3] + cols[5:]) if len(cols) >= 6 else line)
        elif not re.search(r"align|offset", line, re.I):
            out.append(line)
    return out


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- fixtures ------------------------------------------------------------------------

def build_fixtures(ctx, d):
    """In d: model.onnx (python3-onnx), model.onnxz, two.onnx + two.data, split.onnx +
    split.data[.N], enc.onnxz (model.onnxz encrypted); returns the files to upload."""
    os.makedirs(d, exist_ok=True)
    remote_test.save_model(os.path.join(d, "model.onnx"), remote_test.model_tensors(), "model")
    with open(os.path.join(d, "key.txt"), "w") as f:
        f.write(KEY)

    def p(name):
        return os.path.join(d, name)

    for argv in (["convert", p("model.onnx"), p("model.onnxz")],
                 ["convert", p("model.onnx"), p("two.onnx"), "--external-data", "two.data"],
                 ["convert", p("model.onnx"), p("split.onnx"), "--external-data", "split.data",
                  "--max-file-size", "100K"],
                 *([] if NOSSL else [["encrypt", "--key-file", p("key.txt"), "--iterations", "1000",
                                      p("model.onnxz"), p("enc.onnxz")]])):
        ctx.local(["-q", *argv], "build the fixtures")
    # big.onnxz: one tensor of 32 MiB, which a read by URL fetches in parallel ranges
    big = remote_test.numpy.random.default_rng(7).integers(0, 256, 32 << 20, dtype=remote_test.numpy.uint8)
    remote_test.save_model(p("big.onnx"), [remote_test.numpy_helper.from_array(big, "big")], "big")
    ctx.local(["-q", "convert", p("big.onnx"), p("big.onnxz")], "build the fixtures")
    os.unlink(p("big.onnx"))
    files = sorted(os.listdir(d))
    if not ctx.check("split.data.1" in files, f"split.onnx has more than one data file: {files}"):
        raise RuntimeError("fixtures")
    return [f for f in files if f != "key.txt"]


def upload(ctx, d, files):
    """The SDK puts every file under models/m/ and public-models/m/ (big.onnxz in the
    bucket read only), and model.onnxz in eu-models/m/."""
    ops = [{"op": "put", "bucket": b, "key": f"m/{f}", "file": os.path.join(d, f)}
           for b in ("models", "public-models") for f in files
           if f != "big.onnxz" or b == ctx.bucket]  # 32 MiB: where it is read only
    ops.append({"op": "put", "bucket": "eu-models", "key": "m/model.onnxz", "file": os.path.join(d, "model.onnxz")})
    regions = {"eu-models": "eu-west-1"}
    for op in ops:  # eu-models takes requests signed for its region only
        op["region"] = regions.get(op["bucket"], s3_env.REGION)
    for region in sorted({op["region"] for op in ops}):
        batch = [op for op in ops if op["region"] == region]
        for op, r in zip(batch, ctx.gate.sdk(batch, region=region)):
            if "error" in r:
                raise RuntimeError(f"the SDK could not put {op['bucket']}/{op['key']}: {r}")


def supports_s3(ctx):
    """Raises Unsupported when this onnxz does not read s3:// URLs with the AWS settings:
    its --help names no AWS_ENDPOINT_URL_S3 (issue 29, landing in steps). Once it does,
    every failure below is a failure."""
    p = subprocess.run([ctx.onnxz, "--help"], capture_output=True, text=True)
    if "AWS_ENDPOINT_URL_S3" not in p.stdout + p.stderr:
        raise Unsupported("this onnxz does not take S3 settings yet (no AWS_ENDPOINT_URL_S3 in "
                          "its --help; issue 29)")


# ---- same output as the local file ---------------------------------------------------

def check_same(ctx, d):
    env = ctx.env(ctx.account, ONNXZ_KEY=KEY)
    for name in FORMS:
        url, local = f"s3://{ctx.bucket}/m/{name}", os.path.join(d, name)
        what = f"{name} by s3://"
        listings = (["info"], ["ls"]) if name in ARCHIVES else (["info"],)  # ls: archives only
        for argv in ([*a, "--json"] for a in listings):
            out = ctx.ok([*argv, url], f"{what}: {' '.join(argv)}", env)
            if out is not None:
                same_json(ctx, out, ctx.local([*argv, local], what), f"{what}: {' '.join(argv)}")
        for argv in listings:  # text: the same but for the file's name and UNKNOWN_BY_URL
            out = ctx.ok([*argv, url], f"{what}: {argv[0]}", env)
            want = ctx.local([*argv, local], what)
            if out is not None:
                got, want = (text_facts(x.decode(), f, argv[0]) for x, f in ((out, url), (want, local)))
                diff = [f"{a!r} by URL, {b!r} locally" for a, b in zip(got, want) if a != b]
                ctx.check(got == want, f"{what}: {argv[0]} text: {'; '.join(diff[:4]) or (len(got), len(want))}")
        out = ctx.ok(["get", url, "w1"], f"{what}: get w1", env)
        want = ctx.local(["get", local, "w1"], what)
        ctx.check(out is None or out == want, f"{what}: get w1: {len(out or b'')} bytes, not the "
                                              f"{len(want)} of the local get")
        ctx.ok(["verify", url], f"{what}: verify", env)
        for suffix, extra in ((".onnxz", []), (".onnx", [])):
            mine, theirs = ctx.path(f"c-{name}{suffix}"), ctx.path(f"c-{name}-local{suffix}")
            for p in (mine, theirs):
                if os.path.exists(p):
                    os.unlink(p)
            if ctx.ok(["-q", "convert", url, mine, *extra], f"{what}: convert to {suffix}", env) is not None:
                ctx.local(["-q", "convert", local, theirs, *extra], what)
                ctx.check(read(mine) == read(theirs), f"{what}: convert to {suffix}: not the bytes of the local convert")


def check_encrypted(ctx, d):
    """An encrypted archive (ONNXZEC1) at a URL: the library decrypts files on disk only
    (the tool and the package say "download it first", for https:// as for s3://). Each
    command, given the passphrase, gives that one line naming the object and writes nothing; the local file, as a control, reads with the passphrase."""
    url, local = "s3://models/m/enc.onnxz", os.path.join(d, "enc.onnxz")
    ctx.local(["verify", local], "enc.onnxz")
    env = ctx.env(ONNXZ_KEY=KEY)
    for argv in (["info", url], ["get", url, "w1"], ["verify", url],
                 ["convert", url, ctx.path("never.onnx")]):
        ctx.error(argv, url, f"enc.onnxz: {argv[0]}", r"encrypted.*URL.*download it first", env)
    ctx.check(not os.path.exists(ctx.path("never.onnx")), "enc.onnxz: convert wrote its output")


# ---- requests ------------------------------------------------------------------------

def check_budget(ctx, d):
    """Open + list + one tensor of an archive: at most 3 requests, each signed with the
    account's key (without OpenSSL: unsigned, of the public bucket) and answered 2xx, and
    no more bytes than the listing and the tensor."""
    env = ctx.env(ctx.account)
    url, local = f"s3://{ctx.bucket}/m/model.onnxz", os.path.join(d, "model.onnxz")
    tensor = len(ctx.local(["get", local, "w1"], "w1's size"))
    budget = listing_budget(local)
    signed = ("anonymous", "") if NOSSL else ("sigv4", s3_env.ACCOUNTS["main"]["key_id"])
    for argv, limit, most in ((["ls", url], 3, budget), (["info", url], 3, budget),
                              (["get", url, "w1"], 3, budget + tensor)):
        mark = ctx.gate.mark()
        if ctx.ok(argv, f"budget: {' '.join(argv)}", env) is None:
            continue
        reqs = ctx.gate.requests_since(mark)
        shown = [(r["method"], r["range"], r["status"]) for r in reqs]
        print(f"budget: {' '.join(argv)}: {len(reqs)} requests, {sum(r['bytes_sent'] for r in reqs)} bytes: {shown}")
        ctx.check(1 <= len(reqs) <= limit, f"budget: {' '.join(argv)}: {len(reqs)} requests, at most {limit}: {shown}")
        for r in reqs:
            ctx.check((r["auth"], r["key_id"]) == signed,
                      f"budget: {' '.join(argv)}: a request not {signed}: {r}")
            ctx.check(200 <= r["status"] < 300, f"budget: {' '.join(argv)}: {shown}")
            ctx.check(r["path"] == f"/{ctx.bucket}/m/model.onnxz", f"budget: {' '.join(argv)}: path {r['path']}")
        got = sum(r["bytes_sent"] for r in reqs)
        ctx.check(got <= most, f"budget: {' '.join(argv)}: {got} bytes, at most {most}")
        if reqs and reqs[0]["method"] == "GET":
            ctx.check(reqs[0]["range"] in (f"bytes=-{TAIL}",) or reqs[0]["range"].startswith("bytes="),
                      f"budget: {' '.join(argv)}: the first request reads a range: {shown}")


def check_parallel(ctx, d):
    """get and convert of big.onnxz's 32 MiB tensor with ONNXZ_HTTP_PARALLEL=4: the bytes of
    the local file's, in ranges of 4 MiB fetched at most 4 at once, more than one at a time,
    each signed on its own, that cover what they read once (no gap, no overlap)."""
    url, local = f"s3://{ctx.bucket}/m/big.onnxz", os.path.join(d, "big.onnxz")
    size = os.path.getsize(local)
    for kind in ("get", "convert"):
        what = f"{kind} of a 32 MiB entry in parallel"
        out = ctx.path(f"par-{kind}")
        argv = ["get", url, "big", "-o", out] if kind == "get" else ["-q", "convert", url, out + ".onnxz"]
        mark = ctx.gate.mark()
        if ctx.ok(argv, what, ctx.env(ctx.account, ONNXZ_HTTP_PARALLEL="4")) is None:
            continue
        reqs = ctx.gate.requests_since(mark)
        if kind == "get":
            want = ctx.local(["get", local, "big"], what)
            ctx.check(read(out) == want, f"{what}: not the local get's bytes")
        else:
            ctx.local(["-q", "convert", local, out + "-local.onnxz"], what)
            ctx.check(read(out + ".onnxz") == read(out + "-local.onnxz"), f"{what}: not the local convert's bytes")
        spans = []
        for r in reqs:
            ctx.check(r["status"] == 206 and r["auth"] == ("anonymous" if NOSSL else "sigv4"),
                      f"{what}: {r['range']}: {r['status']} {r['auth']}")
            m = RANGE_RE.match(r["range"])
            spans.append((int(m.group(1)), int(m.group(2))) if m else (max(0, size - TAIL), size - 1))
        spans.sort()
        ctx.check(all(b[0] == a[1] + 1 for a, b in zip(spans, spans[1:])),
                  f"{what}: ranges overlap or leave a gap: {spans}")
        chunks = sum(1 for a, b in spans if b - a + 1 == PAR_CHUNK)
        ctx.check(chunks >= 4, f"{what}: {chunks} ranges of {PAR_CHUNK} bytes, want 4 or more: {spans}")
        events = sorted([(r["time"], 1) for r in reqs] + [(r["time"] + r["ms"] / 1000, -1) for r in reqs])
        most = now = 0
        for _, step in events:
            now += step
            most = max(most, now)
        ctx.check(1 < most <= 4, f"{what}: {most} requests at once, want 2 to 4")
        print(f"parallel: {what}: {len(reqs)} requests, at most {most} at once")


# ---- errors --------------------------------------------------------------------------

def check_errors(ctx):
    url = "s3://models/m/model.onnxz"
    wrong = dict(s3_env.ACCOUNTS["main"], secret=WRONG_SECRET)
    cases = [
        ("a wrong secret", url, ctx.env(wrong), r"SignatureDoesNotMatch"),
        ("an expired session token", url, ctx.env("expired"), r"ExpiredToken|expired"),
        ("an unknown key id", url, ctx.env({"key_id": "AKIAUNKNOWNKEY000000", "secret": WRONG_SECRET}),
         r"InvalidAccessKeyId"),
        ("a missing key", "s3://models/m/nothing.onnxz", ctx.env(), r"NoSuchKey|no such key"),
        ("a missing bucket", "s3://no-such-bucket/m/model.onnxz", ctx.env(), r"NoSuchBucket|no such bucket"),
        ("a bucket in another region", "s3://eu-models/m/model.onnxz", ctx.env(), r"region.*eu-west-1"),
        ("no credentials on a private bucket", url, ctx.env(None), r"AccessDenied|access denied"),
    ]
    for what, u, env, message in cases:
        for argv in (["info", u], ["ls", "--json", u], ["get", u, "w1"], ["verify", u],
                     ["convert", u, ctx.path("never.onnx")]):
            ctx.error(argv, u, f"{what}: {argv[0]}", message, env)
        ctx.check(not os.path.exists(ctx.path("never.onnx")), f"{what}: convert wrote its output")


def check_nossl(ctx):
    """Without OpenSSL: credentials given, a request cannot be signed, and the tool says so
    in one line naming the object (never an unsigned request in their stead)."""
    print("s3: built without OpenSSL: the public bucket read unsigned; the store's refusals, "
          "the credential sources and the encrypted archive are checked in the OpenSSL builds")
    url = "s3://models/m/model.onnxz"
    mark = ctx.gate.mark()
    ctx.error(["info", url], url, "without OpenSSL, credentials given", r"OpenSSL", ctx.env("main"))
    ctx.equal(ctx.gate.requests_since(mark), [], "without OpenSSL, credentials given: requests sent")


# ---- credentials ---------------------------------------------------------------------

def logged_keys(ctx, mark):
    return sorted({(r["auth"], r["key_id"]) for r in ctx.gate.requests_since(mark)})


def check_credentials(ctx, d):
    url = "s3://models/m/model.onnxz"
    want = ctx.local(["ls", "--json", os.path.join(d, "model.onnxz")], "ls")

    def reads(what, env, key, u=url):
        mark = ctx.gate.mark()
        out = ctx.ok(["ls", "--json", u], what, env)
        if out is not None:
            same_json(ctx, out, want, what)
        ctx.equal(logged_keys(ctx, mark), [key], f"{what}: how its requests were signed")

    main, temp = s3_env.ACCOUNTS["main"], s3_env.ACCOUNTS["temp"]
    reads("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", ctx.env("main"), ("sigv4", main["key_id"]))
    reads("with AWS_SESSION_TOKEN", ctx.env("temp"), ("sigv4", temp["key_id"]))
    reads("AWS_REGION=eu-west-1 for a bucket there", ctx.env("main", region="eu-west-1"),
          ("sigv4", main["key_id"]), "s3://eu-models/m/model.onnxz")

    # ~/.aws as `aws configure` writes it: a default profile with the wrong secret, the
    # right one under a name, its region in config
    home = ctx.path("aws-home")
    os.makedirs(os.path.join(home, ".aws"), exist_ok=True)
    with open(os.path.join(home, ".aws", "credentials"), "w") as f:
        f.write(f"[default]\naws_access_key_id = {main['key_id']}\naws_secret_access_key = {WRONG_SECRET}\n\n"
                f"[gate]\naws_access_key_id = {main['key_id']}\naws_secret_access_key = {main['secret']}\n\n"
                f"[gate-temp]\naws_access_key_id = {temp['key_id']}\naws_secret_access_key = {temp['secret']}\n"
                f"aws_session_token = {temp['token']}\n")
    with open(os.path.join(home, ".aws", "config"), "w") as f:
        f.write("[default]\nregion = us-east-1\n\n[profile gate]\nregion = us-east-1\n\n"
                "[profile gate-temp]\nregion = eu-west-1\n")

    def profile_env(profile):
        env = ctx.env(None, HOME=home)
        for k in ("AWS_REGION", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
            env.pop(k, None)
        if profile:
            env["AWS_PROFILE"] = profile
        return env

    reads("~/.aws/credentials with AWS_PROFILE=gate", profile_env("gate"), ("sigv4", main["key_id"]))
    reads("~/.aws/credentials with AWS_PROFILE=gate-temp (token; region eu-west-1 from ~/.aws/config)",
          profile_env("gate-temp"), ("sigv4", temp["key_id"]), "s3://eu-models/m/model.onnxz")
    ctx.error(["ls", url], url, "~/.aws/credentials' default profile (its secret is wrong)",
              r"SignatureDoesNotMatch", profile_env(None))
    # the files named by AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE instead of ~/.aws
    env = ctx.env(None)
    env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(home, ".aws", "credentials")
    env["AWS_CONFIG_FILE"] = os.path.join(home, ".aws", "config")
    env["AWS_PROFILE"] = "gate"
    reads("AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE", env, ("sigv4", main["key_id"]))

    # no credentials anywhere: unsigned requests, which the public bucket answers
    reads("no credentials, a public bucket", ctx.env(None), ("anonymous", ""),
          "s3://public-models/m/model.onnxz")


# ---- what the request carries -------------------------------------------------------

def check_wire(ctx, d):
    """What is signed is what is sent: a 2 KiB session token whole (its header line sized
    to it), a key with "." and ".." segments as written (CURLOPT_PATH_AS_IS: libcurl would
    fold them, sending another path than the one signed), and a data file's location
    "./two.data" joined as the path on disk names it (m/two.data)."""
    url = "s3://models/m/model.onnxz"
    want = ctx.local(["ls", "--json", os.path.join(d, "model.onnxz")], "ls")
    long = s3_env.ACCOUNTS["long"]
    mark = ctx.gate.mark()
    out = ctx.ok(["ls", "--json", url], "a 2 KiB session token", ctx.env("long"))
    if out is not None:
        same_json(ctx, out, want, "a 2 KiB session token")
    ctx.equal(logged_keys(ctx, mark), [("sigv4", long["key_id"])], "a 2 KiB session token: signed with")
    for key in ("m/x/../m/model.onnxz", "m/./model.onnxz"):
        u = f"s3://models/{key}"
        mark = ctx.gate.mark()
        ctx.run(["ls", "--json", u], ctx.env())  # the store may or may not hold that key
        reqs = ctx.gate.requests_since(mark)
        ctx.check(reqs and all(r["path"] == f"/models/{key}" for r in reqs),
                  f"{u}: paths sent {[r['path'] for r in reqs]}, want /models/{key}")
        ctx.check(reqs and all(r["code"] != "SignatureDoesNotMatch" for r in reqs),
                  f"{u}: the gate found the signature wrong: {[r['code'] for r in reqs]}")
    # a model whose data file's location is "./two.data": the same tensors as on disk
    import onnx
    m = onnx.load(os.path.join(d, "two.onnx"), load_external_data=False)
    for t in m.graph.initializer:
        for e in t.external_data:
            if e.key == "location":
                e.value = "./two.data"
    onnx.save(m, os.path.join(d, "dot.onnx"))
    for r in ctx.gate.sdk([{"op": "put", "bucket": "models", "key": "m/dot.onnx",
                            "file": os.path.join(d, "dot.onnx")}], region=s3_env.REGION):
        if "error" in r:
            raise RuntimeError(f"the SDK could not put models/m/dot.onnx: {r}")
    name = "w1"
    local = ctx.local(["get", os.path.join(d, "dot.onnx"), name], "get of ./two.data")
    mark = ctx.gate.mark()
    got = ctx.ok(["get", "s3://models/m/dot.onnx", name], "location ./two.data", ctx.env())
    ctx.equal(got, local, "location ./two.data: the tensor's bytes")
    paths = sorted({r["path"] for r in ctx.gate.requests_since(mark)})
    ctx.equal(paths, ["/models/m/dot.onnx", "/models/m/two.data"], "location ./two.data: paths sent")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnxz", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.onnxz = os.path.abspath(args.onnxz)
    if remote_test.numpy is None:
        print("SKIP s3: python3-onnx is not available to " + sys.executable)
        return SKIP
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    t0 = time.monotonic()
    with s3_env.Gate(os.path.join(args.work, "gate"), args.node_modules) as gate:
        ctx = Context(args, gate)
        try:
            supports_s3(ctx)
            d = ctx.path("local")
            upload(ctx, d, build_fixtures(ctx, d))
            check_same(ctx, d)
            check_budget(ctx, d)
            check_parallel(ctx, d)
            if NOSSL:
                check_nossl(ctx)
            else:
                check_encrypted(ctx, d)
                check_errors(ctx)
                check_credentials(ctx, d)
                check_wire(ctx, d)
        except Unsupported as e:
            print(f"SKIP s3: {e}")
            return SKIP
        except BaseException:
            for f in ctx.failures:
                print("FAIL", f)
            raise
    for f in ctx.failures:
        print("FAIL", f)
    print(f"s3: {len(ctx.failures)} failure(s) in {time.monotonic() - t0:.1f} s")
    return 1 if ctx.failures else 0


if __name__ == "__main__":
    sys.exit(main())
