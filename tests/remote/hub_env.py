"""A local emulation of the Hugging Face hub's download URLs in Debian's nginx, for the
hf:// tests (spec/remote.md, "The Hugging Face hub").

    with Hub(work_dir, token="hf_...") as hub:
        c1 = hub.commit({"model.onnx": b"...", "model.onnx_data": b"..."}, lfs={"model.onnx_data"})
        hub.publish("org/public", c1)             # main -> c1 (nginx reloaded)
        ... onnxz with HF_ENDPOINT=hub.endpoint reads hf://org/public/model.onnx ...
        hub.hub_requests_since(mark), hub.storage_requests_since(mark)

Two nginx servers on 127.0.0.1, as the hub has two hosts: the hub itself (the endpoint)
and the storage host its large files are redirected to. The hub answers
`GET /ORG/NAME/resolve/REVISION/PATH` as the real one does (huggingface_hub's
file_download.py is the reference for the headers):

- a small file ("regular", kept in git) is served by the hub itself, with range requests,
  `X-Repo-Commit: COMMIT` and an ETag;
- a large file ("LFS") is a `302 Found` to `STORAGE/blobs/SHA256` with `X-Repo-Commit`,
  `X-Linked-Etag: "SHA256"` and `X-Linked-Size`; the storage host serves the blob with
  range requests and an ETag of its own;
- REVISION is a branch ("main") or a commit (40 hex digits); a branch resolves to the
  commit `publish` last set, which can change while a reader reads (`nginx -s reload`:
  requests in flight finish on the old configuration);
- a private repository wants `Authorization: Bearer TOKEN`: without it, or with another,
  `401` with `X-Error-Code: GatedRepo`; an unknown path is `404` with
  `X-Error-Code: EntryNotFound`;
- `/old-org/NAME/...` redirects to `/org/NAME/...` on the hub itself (a renamed
  repository): a redirect on the same host, where the token goes on.

Both access logs hold each request's Authorization header: a test checks that the token
reaches the hub and never the storage host.
"""

import hashlib
import json
import os
import subprocess
import time
import urllib.request

from nginx_env import INT_FIELDS, LOG_FIELDS, NGINX, Nginx, free_port

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
    server {{
        listen 127.0.0.1:{hub_port};
        access_log {prefix}/logs/hub.log onnxz_json;
        absolute_redirect on;
        location / {{
            add_header X-Error-Code EntryNotFound always;
            return 404;
        }}
        location = /_generation {{
            return 200 "{generation}";
        }}
{locations}
    }}
    server {{
        listen 127.0.0.1:{storage_port};
        access_log {prefix}/logs/storage.log onnxz_json;
        location /blobs/ {{
            root {storage};
        }}
    }}
}}
"""


class Hub(Nginx):
    """The hub and its storage host; a context manager (nginx_env.Nginx's start/stop)."""

    def __init__(self, work, token):
        super().__init__(os.path.join(work, "git"), os.path.join(work, "nginx"))
        self.work = os.path.abspath(work)
        self.token = token
        self.storage = os.path.join(self.work, "storage")
        self.commits = {}  # commit -> {path: (data, lfs)}
        self.repos = {}  # "org/name" -> (commit of main, private)
        self.hub_port = self.storage_port = None
        self.generation = 0
        os.makedirs(os.path.join(self.storage, "blobs"), exist_ok=True)
        os.makedirs(self.root, exist_ok=True)

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.hub_port}"

    def commit(self, files, lfs=()):
        """A new commit holding files ({path: bytes}); those in lfs go to the storage host.
        Returns its id (40 hex digits)."""
        h = hashlib.sha1()
        for p in sorted(files):
            h.update(p.encode() + b"\0" + hashlib.sha256(files[p]).digest())
        c = h.hexdigest()
        self.commits[c] = {}
        for p, data in files.items():
            big = p in lfs
            if big:
                sha = hashlib.sha256(data).hexdigest()
                with open(os.path.join(self.storage, "blobs", sha), "wb") as f:
                    f.write(data)
            else:
                d = os.path.join(self.root, c, os.path.dirname(p))
                os.makedirs(d, exist_ok=True)
                with open(os.path.join(self.root, c, p), "wb") as f:
                    f.write(data)
            self.commits[c][p] = (data, big)
        return c

    def publish(self, repo, commit, private=False, commit_header=True):
        """Points repo's main at commit (reloading nginx when it runs); without
        commit_header the repository's answers lack X-Repo-Commit (a server that is no
        hub)."""
        self.repos[repo] = (commit, private, commit_header)
        if self.proc is not None:
            self._write_conf()
            subprocess.run([NGINX, "-p", self.prefix, "-c", self._conf, "-s", "reload"],
                           check=True, capture_output=True)
            self._wait_generation()

    def _workers(self):
        """The pids of nginx's workers (the master's children)."""
        out = []
        for p in os.listdir("/proc"):
            try:
                with open(f"/proc/{p}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                        out.append(p)
            except (OSError, ValueError, IndexError):
                pass
        return out

    def _wait_generation(self, timeout=10):
        """Until the old worker has exited (until then it may still take a new connection)
        and a new connection reaches a worker of the configuration written last."""
        deadline = time.monotonic() + timeout
        new = False
        while time.monotonic() < deadline:
            if new and len(self._workers()) == 1:  # the old one is gone: only the new is left
                return
            try:
                with urllib.request.urlopen(f"{self.endpoint}/_generation", timeout=2) as r:
                    new = new or r.read().decode() == str(self.generation)
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"nginx did not reload; see {self.prefix}/logs/")

    def _locations(self):
        out = []
        for repo, (main, private, commit_header) in sorted(self.repos.items()):
            guard = ""
            if private:
                guard = (f'            if ($http_authorization != "Bearer {self.token}") {{\n'
                         "                add_header X-Error-Code GatedRepo always;\n"
                         "                return 401;\n            }\n")
            for rev_name, c in [(c, c) for c in self.commits] + [("main", main)]:
                for p, (data, big) in sorted(self.commits[c].items()):
                    loc = f"/{repo}/resolve/{rev_name}/{p}"
                    head = f"        location = {loc} {{\n{guard}"
                    if commit_header:
                        head += f"            add_header X-Repo-Commit {c};\n"
                    if big:
                        sha = hashlib.sha256(data).hexdigest()
                        out.append(
                            head + f'            add_header X-Linked-Etag \'"{sha}"\';\n'
                            f"            add_header X-Linked-Size {len(data)};\n"
                            f"            return 302 http://127.0.0.1:{self.storage_port}"
                            f"/blobs/{sha};\n        }}\n")
                    else:
                        out.append(head + f"            alias {self.root}/{c}/{p};\n        }}\n")
            name = repo.split("/", 1)[1]
            out.append(f"        location /old-org/{name}/ {{\n"
                       f"            rewrite ^/old-org/{name}/(.*)$ /{repo}/$1 redirect;\n"
                       "        }\n")
        return "".join(out)

    def _write_conf(self):
        self.generation += 1
        fmt = "{" + ",".join(f'"{k}":"{v}"' for k, v in LOG_FIELDS.items()) + "}"
        with open(self._conf, "w") as f:
            f.write(CONF.format(user="user root;\n" if os.geteuid() == 0 else "",
                                prefix=self.prefix, log_format=fmt, hub_port=self.hub_port,
                                storage_port=self.storage_port, storage=self.storage,
                                generation=self.generation,
                                locations=self._locations()))

    @property
    def _conf(self):
        return os.path.join(self.prefix, "conf", "nginx.conf")

    def start(self):
        for sub in ("logs", "tmp", "conf"):
            os.makedirs(os.path.join(self.prefix, sub), exist_ok=True)
        for attempt in range(5):  # a port taken between free_port() and nginx's bind
            self.hub_port, self.storage_port = free_port(), free_port()
            self.http_port, self.https_port = self.hub_port, self.storage_port  # _wait_ready
            self._write_conf()
            err = open(os.path.join(self.prefix, "logs", "stderr.log"), "wb")
            self.proc = subprocess.Popen(
                [NGINX, "-p", self.prefix, "-c", self._conf, "-e",
                 os.path.join(self.prefix, "logs", "error.log")],
                stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True)
            err.close()
            if self._wait_ready():
                return self
            self.stop()
        raise RuntimeError(f"nginx did not start; see {self.prefix}/logs/")

    def _log(self, name):
        return os.path.join(self.prefix, "logs", name)

    def mark(self):
        """A position in both access logs, for *_requests_since."""
        return tuple(os.path.getsize(self._log(n)) if os.path.exists(self._log(n)) else 0
                     for n in ("hub.log", "storage.log"))

    def _since(self, mark, which):
        """The requests logged after mark in one log, waiting until it has settled (nginx
        logs a request when it ends), as nginx_env.Nginx.requests_since."""
        log = self._log(("hub.log", "storage.log")[which])

        def size():
            return os.path.getsize(log) if os.path.exists(log) else 0
        last, stable = size(), time.monotonic()
        deadline = stable + 5
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = size()
            if now != last:
                last, stable = now, time.monotonic()
            elif time.monotonic() - stable >= 0.2:
                break
        if not last:
            return []
        with open(log, "rb") as f:
            f.seek(mark[which])
            lines = f.read(last - mark[which]).decode().splitlines()
        out = []
        for line in lines:
            r = json.loads(line)
            for k in INT_FIELDS:
                r[k] = int(r[k]) if r[k].isdigit() else r[k]
            out.append(r)
        return out

    def hub_requests_since(self, mark):
        return self._since(mark, 0)

    def storage_requests_since(self, mark):
        return self._since(mark, 1)
