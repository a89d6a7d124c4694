#!/usr/bin/env python3
"""What onnxz sends an S3 store, seen on the wire (spec/remote.md R-17, R-19, R-20).

Two small servers of this test's own on 127.0.0.1 record every request's headers; onnxz
(the tool) reads s3:// URLs at the first, with credentials and a session token:

- a redirect to another host (a 307, as S3 answers for a bucket in another region, and a
  301 naming the region) is reported, never followed: the second server gets no request,
  so neither the Authorization nor the token ever reach it (R-19);
- a 503 is retried, and every attempt carries its own signature and x-amz-date: the
  request lines are signed again, never replayed (R-17);
- each signed request holds host, range, x-amz-content-sha256 (the empty body's hash) and
  x-amz-date, and the token in x-amz-security-token, all in SignedHeaders; without
  credentials nothing of that kind is sent;
- the secret appears nowhere: not on the command line, not in any message, not in any
  header (only in the signature it computes).

The signatures themselves are checked elsewhere: against AWS's published examples
(unit.test_s3), the AWS SDK's signer (remote.s3_sigv4) and the gate (remote.s3_read).
Exit 0 on pass, 1 on failure, 77 (skipped) when the tool has no HTTP support.
"""
import argparse
import http.server
import os
import subprocess
import sys
import tempfile
import threading
import time

SECRET = "wire/Secret+Key/ABCDEFGHIJKLMNOP0123456789"
TOKEN = "wire-session-token//+="
EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


class Server:
    """A server that records each request's path and headers and answers with plan(path,
    count): (status, headers, body)."""

    def __init__(self, plan):
        self.requests = []
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, headers, body = plan(self.path, len(outer.requests))
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def run(onnxz, args, endpoint, creds=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_ENDPOINT_URL_S3": endpoint, "AWS_REGION": "us-east-1",
                "HOME": "/nonexistent", "ONNXZ_HTTP_RETRIES": "2"})
    if creds:
        env.update({"AWS_ACCESS_KEY_ID": "AKIAWIRETEST", "AWS_SECRET_ACCESS_KEY": SECRET,
                    "AWS_SESSION_TOKEN": TOKEN})
    argv = [onnxz] + args
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    check(SECRET not in " ".join(argv) + p.stdout + p.stderr, "no secret in argv or output: " + " ".join(args))
    return p


def signed_ok(headers, with_token=True):
    auth = headers.get("authorization", "")
    signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";") if "SignedHeaders=" in auth else []
    want = ["host", "range", "x-amz-content-sha256", "x-amz-date"] + (["x-amz-security-token"] if with_token else [])
    return (auth.startswith("AWS4-HMAC-SHA256 Credential=AKIAWIRETEST/") and signed == want
            and headers.get("x-amz-content-sha256") == EMPTY
            and headers.get("x-amz-security-token") == (TOKEN if with_token else None)
            and SECRET not in str(headers))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnxz", required=True)
    args = ap.parse_args()
    v = subprocess.run([args.onnxz, "--help"], capture_output=True, text=True).stdout
    if "AWS_ENDPOINT_URL_S3" not in v:
        print("SKIP: this onnxz does not read s3:// URLs")
        return 77

    other = Server(lambda path, n: (200, {}, b"not for you"))
    try:
        # redirects: never followed; the other host gets nothing
        for status, extra, want in (
                (307, {}, "region mismatch (HTTP 307"),
                (301, {"x-amz-bucket-region": "eu-west-1"}, "region mismatch (the bucket is in eu-west-1")):
            hdrs = dict(extra, Location=f"http://127.0.0.1:{other.port}/b/k")
            first = Server(lambda path, n: (status, hdrs, b""))
            p = run(args.onnxz, ["info", "s3://b/k"], f"http://127.0.0.1:{first.port}")
            check(p.returncode == 1 and want in p.stderr and p.stderr.startswith("onnxz: error: s3://b/k: "),
                  f"{status}: one-line error naming the object: {p.stderr.strip()}")
            check(len(first.requests) >= 1 and all(signed_ok(h) for _, h in first.requests),
                  f"{status}: the store got signed requests with the token")
            check(other.requests == [], f"{status}: the redirect's host got no request")
            first.close()

        # a 503, then the object: the retry is signed afresh
        body = b"x" * 1000
        def flaky(path, n):
            if n == 1:
                time.sleep(1.2)  # the retry falls in another second: its x-amz-date differs
                return 503, {}, b"<Error><Code>SlowDown</Code></Error>"
            return 206, {"Content-Range": f"bytes 0-{len(body) - 1}/{len(body)}", "ETag": '"e"'}, body
        srv = Server(flaky)
        p = run(args.onnxz, ["info", "s3://bucket/dir/a b+c.onnx"], f"http://127.0.0.1:{srv.port}")
        paths = [r[0] for r in srv.requests]
        check(len(srv.requests) >= 2 and paths[0] == "/bucket/dir/a%20b%2Bc.onnx" and len(set(paths)) == 1,
              f"the key encoded once, path-style at the endpoint: {paths[:2]}")
        check(all(signed_ok(h) for _, h in srv.requests), "every attempt signed, with the token")
        auths = [h["authorization"] for _, h in srv.requests[:2]]
        dates = [h["x-amz-date"] for _, h in srv.requests[:2]]
        check(len(auths) == 2 and dates[0] != dates[1] and auths[0] != auths[1],
              f"the retry carries its own x-amz-date and signature: {dates}")
        check(all(h.get("host") == f"127.0.0.1:{srv.port}" for _, h in srv.requests), "Host as signed, port included")
        srv.close()

        # a store that echoes what it was sent (the token, the Authorization, the secret)
        # in its error: no piece of any of them in the message, text or --json
        seen = {}
        def echo(path, n):
            h = srv.requests[-1][1]
            seen["auth"] = h.get("authorization", "")
            tok = h.get("x-amz-security-token", "")
            text = f"<Error><Code>Weird{tok[:20]}</Code><Message>tok={tok} auth={seen['auth']} key={SECRET}</Message></Error>"
            return 500, {"x-amz-bucket-region": tok}, text.encode()
        srv = Server(echo)
        for argv in (["info", "s3://b/k"], ["info", "--json", "s3://b/k"]):
            p = run(args.onnxz, argv, f"http://127.0.0.1:{srv.port}")
            shown = p.stdout + p.stderr
            sig = seen.get("auth", "").rsplit("Signature=", 1)[-1]
            leaks = [w for w in (TOKEN, SECRET, sig, seen.get("auth", ""))
                     for i in range(0, max(len(w) - 7, 0)) if w[i:i + 8] in shown]
            check(p.returncode == 1 and "***" in shown and not leaks,
                  f"{' '.join(argv)}: the echoed secrets masked: {shown.strip()[:300]!r}")
        srv.close()

        # the same store written to: an upload's refusal masks them too
        def echo_write(path, n):
            h = srv.requests[-1][1]
            seen["auth"] = h.get("authorization", "")
            sig = seen["auth"].rsplit("Signature=", 1)[-1]
            text = f"<Error><Code>Weird{sig[:20]}</Code><Message>auth={seen['auth']} key={SECRET}</Message></Error>"
            return 400, {}, text.encode()
        srv = Server(echo_write)
        with tempfile.TemporaryDirectory() as work:
            model = os.path.join(work, "wire.onnx")
            with open(model, "wb") as f:
                f.write(b"\x08\x07")  # ir_version 7: a model with nothing else
            p = run(args.onnxz, ["convert", model, "s3://b/k.onnx"], f"http://127.0.0.1:{srv.port}")
        shown = p.stdout + p.stderr
        sig = seen.get("auth", "").rsplit("Signature=", 1)[-1]
        leaks = [w for w in (SECRET, sig, seen.get("auth", ""))
                 for i in range(0, max(len(w) - 7, 0)) if w[i:i + 8] in shown]
        check(p.returncode == 1 and "***" in shown and seen.get("auth") and not leaks,
              f"convert to s3://: the echoed signature masked: {shown.strip()[:300]!r}")
        srv.close()

        # no credentials: nothing signed, no token
        srv = Server(lambda path, n: (403, {}, b"<Error><Code>AccessDenied</Code></Error>"))
        p = run(args.onnxz, ["info", "s3://bucket/k"], f"http://127.0.0.1:{srv.port}", creds=False)
        check(p.returncode == 1 and "s3://bucket/k: access denied (403 AccessDenied)" in p.stderr,
              f"unsigned: the store's refusal named: {p.stderr.strip()}")
        check(srv.requests and all("authorization" not in h and "x-amz-security-token" not in h
                                   for _, h in srv.requests), "unsigned: no Authorization, no token")
        srv.close()
    finally:
        other.close()
    print(f"s3_wire: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
