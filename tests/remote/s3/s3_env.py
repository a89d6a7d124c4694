"""The S3 tests' server for Python: gate.js (s3rver behind the gate that checks SigV4 with
the AWS SDK's signer), started on 127.0.0.1, and Amazon's own client through sdk.js.

    with Gate(work_dir, node_modules) as gate:
        gate.sdk([{"op": "put", "bucket": "models", "key": "m.onnxz", "file": path}])
        mark = gate.mark()
        ... run onnxz on s3://models/m.onnxz with gate.env("main") ...
        for r in gate.requests_since(mark): r["method"], r["range"], r["bytes_sent"], ...

The accounts and buckets are fixture.json's. The gate listens on a port the kernel picks
(no race for a free port) and prints it when s3rver and the gate both listen. It exits when
its stdin closes: the pipe this process holds, so a test killed outright still leaves no
server behind. See README.md beside this file.
"""

import json
import os
import select
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = "node"

with open(os.path.join(HERE, "fixture.json")) as _f:
    FIXTURE = json.load(_f)
ACCOUNTS = FIXTURE["accounts"]
# Temporary credentials with a 2 KiB session token, as STS gives for a role with a session
# policy (its tokens run to kilobytes): a header sized for a short one would cut it.
ACCOUNTS["long"] = {"key_id": "ASIAONNXZTESTKEY0004", "secret": "gate/long/Secret+Key0004abcdefghijklmnop",
                    "token": "IQoJb3JpZ2luX2VjELong" + "".join(
                        "abcdefghijklmnopqrstuvwxyz0123456789/+="[(i * 7) % 39] for i in range(2027))}
REGION = FIXTURE["region"]


class Gate:
    def __init__(self, work, node_modules, buckets=None):
        self.work = os.path.abspath(work)
        self.node_modules = os.path.abspath(node_modules)
        self.buckets = buckets if buckets is not None else [
            {k: v for k, v in b.items() if k != "comment"} for b in FIXTURE["buckets"]]
        self.proc = None
        self.port = self.endpoint = None

    @property
    def faults_file(self):
        return os.path.join(self.work, "faults.json")

    def faults(self, faults=None):
        """The gate's faults for UploadPart from now on (gate.js): {"part": N, "status",
        "code"} refuses part N, {"delay_ms": T} answers every part T ms late; None: none."""
        if faults is None:
            if os.path.exists(self.faults_file):
                os.unlink(self.faults_file)
            return
        tmp = self.faults_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(faults, f)
        os.replace(tmp, self.faults_file)

    @property
    def log(self):
        return os.path.join(self.work, "requests.jsonl")

    def node_env(self):
        env = dict(os.environ)
        env["NODE_PATH"] = self.node_modules
        env["NODE_NO_WARNINGS"] = "1"  # the SDK's notice about node versions
        for k in list(env):  # the SDK reads none of the machine's AWS settings
            if k.startswith("AWS_"):
                del env[k]
        return env

    def start(self, timeout=30):
        os.makedirs(self.work, exist_ok=True)
        conf = {
            "directory": os.path.join(self.work, "store"),
            "log": self.log,
            "region": REGION,
            "credentials": list(ACCOUNTS.values()),
            "buckets": self.buckets,
            "faults": self.faults_file,
        }
        if os.path.exists(self.log):
            os.unlink(self.log)
        conf_path = os.path.join(self.work, "gate.json")
        with open(conf_path, "w") as f:
            json.dump(conf, f, indent=1)
        with open(os.path.join(self.work, "gate.stderr"), "wb") as err:
            self.proc = subprocess.Popen(
                [NODE, os.path.join(HERE, "gate.js"), conf_path], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, env=self.node_env(), start_new_session=True)
        line = b""
        deadline = time.monotonic() + timeout
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                self.stop()
                raise RuntimeError(f"the S3 gate did not start in {timeout} s; see {self.work}/gate.stderr")
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            if not chunk:
                self.stop()
                raise RuntimeError(f"the S3 gate exited before it was ready; see {self.work}/gate.stderr")
            line += chunk
        info = json.loads(line.split(b"\n")[0])
        self.port, self.endpoint = info["port"], info["endpoint"]
        return self

    def stop(self):
        """stdin closed (the gate exits), then SIGTERM, then SIGKILL."""
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        for sig, wait in ((None, 5), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            if sig is not None and self.proc.poll() is None:
                self.proc.send_signal(sig)
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc.stdout.close()
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # ---- what a client needs -------------------------------------------------------------
    def url(self, bucket, key):
        return f"s3://{bucket}/{key}"

    def env(self, account="main", region=REGION, base=None):
        """An environment as a user's would be, for the tool or Python: credentials of
        `account` (None: none at all), the region and the gate's endpoint; every other AWS_
        variable of this machine removed."""
        env = dict(os.environ if base is None else base)
        for k in list(env):
            if k.startswith("AWS_"):
                del env[k]
        env["AWS_ENDPOINT_URL_S3"] = self.endpoint
        env["AWS_REGION"] = region
        # no ~/.aws of the machine's: a user with nothing configured but what the test sets
        env["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(self.work, "no-credentials")
        env["AWS_CONFIG_FILE"] = os.path.join(self.work, "no-config")
        if account is not None:
            a = ACCOUNTS[account] if isinstance(account, str) else account
            env["AWS_ACCESS_KEY_ID"] = a["key_id"]
            env["AWS_SECRET_ACCESS_KEY"] = a["secret"]
            if "token" in a:
                env["AWS_SESSION_TOKEN"] = a["token"]
        return env

    def sdk(self, ops, account="main", region=REGION):
        """Runs ops (sdk.js's) with Amazon's client; their results, in order."""
        a = ACCOUNTS[account] if isinstance(account, str) else account
        req = os.path.join(self.work, "sdk-request.json")
        with open(req, "w") as f:
            json.dump({"endpoint": self.endpoint, "region": region, "account": a, "ops": ops}, f)
        p = subprocess.run([NODE, os.path.join(HERE, "sdk.js"), req], capture_output=True,
                           env=self.node_env(), timeout=120)
        if p.returncode:
            raise RuntimeError(f"sdk.js failed: {p.stderr.decode(errors='replace')}")
        return json.loads(p.stdout)

    # ---- the request log -----------------------------------------------------------------
    def mark(self):
        """A position in the request log, for requests_since."""
        try:
            return os.path.getsize(self.log)
        except FileNotFoundError:
            return 0

    def requests_since(self, mark, settle=0.2, timeout=5):
        """The requests logged after mark, in order. The gate logs a request when its
        response has gone, which can be just after the client has its bytes: waits until the
        log has not grown for `settle` seconds."""
        size, stable_since = self.mark(), time.monotonic()
        deadline = stable_since + timeout
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.mark()
            if now != size:
                size, stable_since = now, time.monotonic()
            elif time.monotonic() - stable_since >= settle:
                break
        with open(self.log, "rb") as f:
            f.seek(mark)
            return [json.loads(line) for line in f.read(size - mark).decode().splitlines()]
