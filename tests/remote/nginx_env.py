"""Debian's nginx as a throw-away static file server for the remote tests.

    with Nginx(root_dir, tmp_dir) as ng:
        mark = ng.mark()
        ... fetch ng.url("x.onnxz") or ng.url("x.onnxz", https=True) ...
        for r in ng.requests_since(mark): r["range"], r["body_bytes_sent"], ...

nginx runs in the foreground (`daemon off`) as a child process, from a prefix directory of
its own (configuration, pid file, logs, temporary paths), on 127.0.0.1 with one free port
for HTTP and one for HTTPS. The HTTPS certificate is issued by a CA made here with the
openssl command line (ca_file: the CA's PEM, for ONNXZ_CA_FILE); it names IP:127.0.0.1 and
DNS:localhost. The access log holds one JSON object per request.
"""

import json
import os
import signal
import socket
import subprocess
import time

NGINX = "/usr/sbin/nginx"
OPENSSL = "openssl"

# Each field of a logged request; numbers are converted to int by requests_since.
LOG_FIELDS = {
    "request": "$request", "status": "$status", "bytes_sent": "$bytes_sent",
    "body_bytes_sent": "$body_bytes_sent", "range": "$http_range",
    "authorization": "$http_authorization", "content_range": "$sent_http_content_range",
    "connection": "$connection", "connection_requests": "$connection_requests",
    "scheme": "$scheme",
    # when the request ended (seconds since the epoch) and how long it took (seconds),
    # both to the millisecond: numbers as text, for the tests that overlap requests
    "msec": "$msec", "request_time": "$request_time",
}
INT_FIELDS = {"status", "bytes_sent", "body_bytes_sent", "connection", "connection_requests"}

CONF = """\
{user}worker_processes 1;
daemon off;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log info;
events {{ worker_connections 256; }}
http {{
    default_type application/octet-stream;
    sendfile on;
    etag on;
    keepalive_timeout 30s;
    client_body_temp_path {prefix}/tmp/body;
    proxy_temp_path {prefix}/tmp/proxy;
    fastcgi_temp_path {prefix}/tmp/fastcgi;
    uwsgi_temp_path {prefix}/tmp/uwsgi;
    scgi_temp_path {prefix}/tmp/scgi;
    log_format onnxz_json escape=json '{log_format}';
    access_log {prefix}/logs/access.log onnxz_json;
    server {{
        listen 127.0.0.1:{http_port};
        root {root};
    }}
    server {{
        listen 127.0.0.1:{https_port} ssl;
        ssl_certificate {prefix}/tls/server.pem;
        ssl_certificate_key {prefix}/tls/server.key;
        root {root};
    }}
}}
"""


def available():
    """Why nginx cannot run here, or None when it can."""
    if not os.access(NGINX, os.X_OK):
        return f"{NGINX} is not installed"
    if subprocess.run(["sh", "-c", f"command -v {OPENSSL}"], capture_output=True).returncode:
        return "the openssl command line is not installed"
    return None


def free_port():
    """A port nothing listens on now (another process may still take it: start retries)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tls(directory):
    """A CA (ca.pem) and a server certificate it signed (server.pem, server.key) for
    IP:127.0.0.1 and DNS:localhost, in directory; returns the CA's path."""
    os.makedirs(directory, exist_ok=True)

    def p(name):
        return os.path.join(directory, name)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    with open(p("server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n")
    for argv in (
        ["req", "-x509", *ec, "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2",
         "-subj", "/CN=onnxz test CA", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
        ["req", "-new", *ec, "-keyout", p("server.key"), "-out", p("server.csr"),
         "-subj", "/CN=localhost"],
        ["x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
         "-CAcreateserial", "-days", "2", "-out", p("server.pem"), "-extfile", p("server.ext")],
    ):
        subprocess.run([OPENSSL, *argv], check=True, capture_output=True)
    return p("ca.pem")


class Nginx:
    """nginx serving root over HTTP and HTTPS on 127.0.0.1; a context manager."""

    def __init__(self, root, prefix):
        self.root = os.path.abspath(root)
        self.prefix = os.path.abspath(prefix)
        self.proc = None
        self.http_port = self.https_port = None
        self.ca_file = None

    @property
    def access_log(self):
        return os.path.join(self.prefix, "logs", "access.log")

    def url(self, name, https=False, host="127.0.0.1"):
        if https:
            return f"https://{host}:{self.https_port}/{name}"
        return f"http://{host}:{self.http_port}/{name}"

    def start(self):
        for sub in ("logs", "tmp", "conf"):
            os.makedirs(os.path.join(self.prefix, sub), exist_ok=True)
        self.ca_file = make_tls(os.path.join(self.prefix, "tls"))
        fmt = "{" + ",".join(f'"{k}":"{v}"' for k, v in LOG_FIELDS.items()) + "}"
        for attempt in range(5):  # a port taken between free_port() and nginx's bind
            self.http_port, self.https_port = free_port(), free_port()
            conf = os.path.join(self.prefix, "conf", "nginx.conf")
            with open(conf, "w") as f:
                f.write(CONF.format(user="user root;\n" if os.geteuid() == 0 else "",
                                    prefix=self.prefix, root=self.root, log_format=fmt,
                                    http_port=self.http_port, https_port=self.https_port))
            err = open(os.path.join(self.prefix, "logs", "stderr.log"), "wb")
            self.proc = subprocess.Popen(
                [NGINX, "-p", self.prefix, "-c", conf, "-e", os.path.join(self.prefix, "logs", "error.log")],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
            err.close()
            if self._wait_ready():
                return self
            self.stop()
        raise RuntimeError(f"nginx did not start; see {self.prefix}/logs/stderr.log and error.log")

    def _wait_ready(self, timeout=10):
        """True once both ports accept connections; False if nginx exited."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                for port in (self.http_port, self.https_port):
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.05)
        return False

    def stop(self):
        """Graceful shutdown (SIGQUIT), then SIGTERM, then SIGKILL."""
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGQUIT, 5), (signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            if self.proc.poll() is not None:
                break
            self.proc.send_signal(sig)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                continue
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def mark(self):
        """A position in the access log, for requests_since."""
        try:
            return os.path.getsize(self.access_log)
        except FileNotFoundError:
            return 0

    def requests_since(self, mark, settle=0.2, timeout=5):
        """The requests logged after mark, in order, as dicts of LOG_FIELDS. nginx logs a
        request when it finishes, which can be just after the client has its bytes: waits
        until the log has not grown for `settle` seconds."""
        size, stable_since = self.mark(), time.monotonic()
        deadline = stable_since + timeout
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.mark()
            if now != size:
                size, stable_since = now, time.monotonic()
            elif time.monotonic() - stable_since >= settle:
                break
        with open(self.access_log, "rb") as f:
            f.seek(mark)
            lines = f.read(size - mark).decode().splitlines()
        out = []
        for line in lines:
            r = json.loads(line)
            for k in INT_FIELDS:
                r[k] = int(r[k]) if r[k].isdigit() else r[k]
            out.append(r)
        return out
