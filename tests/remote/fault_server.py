"""A small HTTP/1.1 file server (keep-alive, single byte ranges, ETag) that misbehaves on
request, for the remote tests' fault cases.

    with FaultServer() as srv:
        srv.put("m.onnxz", data)
        srv.reset(Fault("reset", start=1, times=1, after=1000))
        ... fetch srv.url("m.onnxz") ...
        srv.finish()  # the client is done: release stalled responses, wait for the rest
        srv.requests  # every request: index, method, path, range, headers, status, sent, done

Requests are numbered from 0 since the last reset(); a fault applies to the requests
numbered start .. start+times-1 (times None: every one from start). With from_byte set,
only requests for bytes=A-B with A >= from_byte are numbered (and can be hit): a fault
aimed at the ranges of one large read, whichever order they come in. Modes:
  ignore_range      200 with the whole body, whatever the Range
  shift_range       206 whose Content-Range (and body) are one byte off what was asked
  no_content_range  206 without a Content-Range header
  short             Content-Length as asked, `after` bytes of body, then the connection closes
  reset             `after` bytes of body, then a TCP reset (SO_LINGER 0)
  status            the status `status` with a small body
  replace           the object is `data` from now on (another ETag unless the server has none)
  stall             headers and `after` bytes of body, then nothing until finish() or the end
  redirect          307 to `location` + the request's path
  drip_headers      the status line, then the headers (with `after` short padding lines,
                    2,000 by default) one byte every `interval` seconds, until finish() or
                    the end: a line arrives every few intervals, never a full stall
  drip_body         headers, then the body one byte every `interval` seconds
  big_headers       `after` bytes of extra header lines at full speed, then the response
  interim           `HTTP/1.1 102 Processing` interim responses (each with `after` bytes of
                    header lines) one every `interval` seconds, never the final response,
                    until finish() or the end
  drip_redirect     307 to the request's path with "/r" before it, each of its header
                    lines (three) after `interval` seconds: a chain of redirects in which
                    no response alone is slow
  etag              the ETag is `location` (a str of latin-1 code points: any bytes), so
                    that with start=1 the second request's "changed" error shows it
"""

import hashlib
import re
import socket
import struct
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RANGE_RE = re.compile(r"^bytes=(\d*)-(\d*)$")
LAST_MODIFIED = "Mon, 01 Jan 2024 00:00:00 GMT"


@dataclass
class Fault:
    """What the server does wrong, and to which requests (see the module's doc)."""
    mode: str
    start: int = 0
    times: int = None
    after: int = 0
    status: int = 500
    data: bytes = None
    location: str = None
    from_byte: int = None
    interval: float = 1.0

    def counts(self, rng):
        """Whether a request with this Range header is numbered for this fault."""
        if self.from_byte is None:
            return True
        m = RANGE_RE.match(rng or "")
        return bool(m and m.group(1) and int(m.group(1)) >= self.from_byte)

    def applies(self, index):
        return index >= self.start and (self.times is None or index < self.start + self.times)


def parse_range(header, size):
    """(first, last) of a single-range header against size; None: no usable range (serve
    200); "unsatisfiable" for a range past the end."""
    m = RANGE_RE.match(header or "")
    if not m or m.group(1) == m.group(2) == "":
        return None
    if m.group(1) == "":  # suffix: the last N bytes, all of them when N >= size
        n = int(m.group(2))
        return (max(0, size - n), size - 1) if n and size else "unsatisfiable"
    first = int(m.group(1))
    last = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
    return (first, last) if first <= last else "unsatisfiable"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.owner.serve(self)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def handle_error(self, request, client_address):
        """A client that resets an idle keep-alive connection is no error of ours."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FaultServer:
    """The server on 127.0.0.1 and a free port, in a thread; a context manager. etag:
    whether responses carry an ETag (set it to False to test a server without)."""

    def __init__(self):
        self.etag = True
        self.files = {}
        self.fault = None
        self.requests = []
        self.counted = 0  # requests numbered for the fault (see Fault.from_byte)
        self.lock = threading.Lock()
        self.unstall = threading.Event()
        self.httpd = _Server(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, name, host="127.0.0.1"):
        return f"http://{host}:{self.port}/{name}"

    def put(self, name, data):
        self.files["/" + name] = bytes(data)

    def reset(self, fault=None):
        """A new test: this fault (or none), no requests recorded, numbering from 0."""
        with self.lock:
            self.fault = fault
            self.requests = []
            self.counted = 0
            self.unstall = threading.Event()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.unstall.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def finish(self, timeout=5):
        """Releases stalled responses and waits until every recorded request has finished
        (a client that gave up early is only noticed by the handler's next write)."""
        self.unstall.set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not all(r["done"] for r in self.requests):
            time.sleep(0.02)

    # ---- one request --------------------------------------------------------------
    def serve(self, h):
        with self.lock:
            rec = {"index": len(self.requests), "method": h.command, "path": h.path,
                   "range": h.headers.get("Range"), "headers": {k.lower(): v for k, v in h.headers.items()},
                   "status": None, "sent": 0, "done": False}
            self.requests.append(rec)
            fault = None
            if self.fault and self.fault.counts(rec["range"]):
                fault = self.fault if self.fault.applies(self.counted) else None
                self.counted += 1
            unstall = self.unstall
            if fault and fault.mode == "replace":
                self.files[h.path] = fault.data
            data = self.files.get(h.path)
        try:
            self._respond(h, rec, fault, data, unstall)
        except (BrokenPipeError, ConnectionResetError):
            h.close_connection = True
        finally:
            rec["done"] = True

    def _respond(self, h, rec, fault, data, unstall):
        mode = fault.mode if fault else None
        if mode == "redirect":
            return self._small(h, rec, 307, {"Location": fault.location + h.path})
        if mode == "status":
            return self._small(h, rec, fault.status)
        if mode == "interim":
            return self._interim(h, rec, fault, unstall)
        if mode == "drip_redirect":
            return self._drip_redirect(h, rec, fault, unstall)
        if data is None:
            return self._small(h, rec, 404)
        size = len(data)
        headers = {"Accept-Ranges": "bytes", "Last-Modified": LAST_MODIFIED}
        if self.etag:
            headers["ETag"] = '"' + hashlib.sha1(data).hexdigest()[:16] + '"'
        if mode == "etag":
            headers["ETag"] = fault.location
        rng = None if mode == "ignore_range" else parse_range(rec["range"], size)
        if rng == "unsatisfiable":
            return self._small(h, rec, 416, {"Content-Range": f"bytes */{size}"})
        if rng is None:
            status, first, last = 200, 0, size - 1
        else:
            status, (first, last) = 206, rng
            if mode == "shift_range":  # one byte later, or earlier at the end
                shift = 1 if last + 1 < size else -1
                first, last = first + shift, last + shift
            if mode != "no_content_range":
                headers["Content-Range"] = f"bytes {first}-{last}/{size}"
        body = memoryview(data)[first:last + 1]
        rec["status"] = status
        if mode in ("drip_headers", "big_headers", "drip_body"):
            return self._drip(h, rec, fault, status, headers, body, unstall)
        h.send_response(status)
        for k, v in {**headers, "Content-Type": "application/octet-stream",
                     "Content-Length": str(len(body))}.items():
            h.send_header(k, v)
        h.end_headers()
        if mode in ("short", "reset", "stall"):
            self._send(h, rec, body[:fault.after])
            if mode == "stall":
                unstall.wait()
            elif mode == "reset":
                h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            h.close_connection = True
            h.connection.close()
            return
        self._send(h, rec, body)

    @staticmethod
    def _drip(h, rec, fault, status, headers, body, unstall):
        """The three slow or bloated responses: written raw, byte by byte where slow."""
        headers = {**headers, "Content-Type": "application/octet-stream",
                   "Content-Length": str(len(body))}
        if fault.mode == "drip_headers":
            for i in range(fault.after or 2000):
                headers[f"X{i}"] = "p"
        elif fault.mode == "big_headers":
            pad = "q" * 1000
            for i in range(max(1, fault.after // 1012)):
                headers[f"X-Pad-{i:05d}"] = pad
        lines = [f"HTTP/1.1 {status} {'Partial Content' if status == 206 else 'OK'}"]
        head = ("\r\n".join(lines + [f"{k}: {v}" for k, v in headers.items()]) + "\r\n\r\n").encode()
        drip = fault.mode == "drip_headers"
        status_line = len(lines[0]) + 2 if drip else len(head)  # at once: then lines drip
        for part, slow in ((head[:status_line], False), (head[status_line:], drip),
                           (bytes(body), fault.mode == "drip_body")):
            if not slow:
                h.wfile.write(part)
                h.wfile.flush()
                continue
            for i in range(len(part)):
                if unstall.wait(fault.interval):
                    h.close_connection = True
                    return
                h.wfile.write(part[i:i + 1])
                h.wfile.flush()
        rec["sent"] += len(body)

    @staticmethod
    def _interim(h, rec, fault, unstall):
        """Interim responses without end: each alone is complete and quick, so only a
        bound that counts them together can end the request."""
        pad = "".join(f"X-Pad-{i:05d}: {'q' * 1000}\r\n" for i in range(fault.after // 1016))
        rec["status"] = 102
        while not unstall.wait(fault.interval):
            h.wfile.write(f"HTTP/1.1 102 Processing\r\n{pad}\r\n".encode())
            h.wfile.flush()
        h.close_connection = True

    @staticmethod
    def _drip_redirect(h, rec, fault, unstall):
        """A 307 whose lines come `interval` seconds apart, to a path that redirects again."""
        rec["status"] = 307
        lines = ["HTTP/1.1 307 Temporary Redirect\r\n", f"Location: /r{h.path}\r\n",
                 "Content-Length: 0\r\n", "\r\n"]
        for line in lines:
            h.wfile.write(line.encode())
            h.wfile.flush()
            if unstall.wait(fault.interval):
                h.close_connection = True
                return

    @staticmethod
    def _send(h, rec, body, chunk=1 << 16):
        for i in range(0, len(body), chunk):
            h.wfile.write(body[i:i + chunk])
            rec["sent"] += len(body[i:i + chunk])

    @staticmethod
    def _small(h, rec, status, headers=None):
        body = f"{status}\n".encode()
        rec["status"] = status
        h.send_response(status)
        for k, v in {**(headers or {}), "Content-Type": "text/plain",
                     "Content-Length": str(len(body))}.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)
