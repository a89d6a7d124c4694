"""refcrypt.py - a second, independent implementation of spec/encryption.md.

Written from the spec alone on top of Debian's python3-cryptography (AES-GCM, AES-CBC,
PBKDF2) and the standard library (HMAC, SHA-256), so that files libonnxcore writes can be
checked here and files written here can be fed to libonnxcore. It is strict: every rule a
reader must check raises ZecError with the kind the spec gives.
"""
import hashlib
import hmac
import os
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

ZEC1_MAGIC = b"ONNXZEC1"
CRY1_MAGIC = b"ONNXCRY1"
HEADER = 72  # C-10
FRAME = 16   # C-31
TAG = 16
DEFAULT_ITERATIONS = 600_000
DEFAULT_CHUNK = 1 << 20
CRY1_ITERATIONS = 100_000


class ZecError(Exception):
    """kind: 'bad_key', 'checksum', 'truncated', 'inconsistent', 'malformed', 'unsupported'."""

    def __init__(self, kind, message):
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def pbkdf2(passphrase, salt, iterations):
    kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=32, salt=salt, iterations=iterations)
    return kdf.derive(passphrase)


def zec1_keys(passphrase, salt, iterations):
    """C-20..C-22: (chunk key, key check)."""
    master = pbkdf2(passphrase, salt, iterations)
    chunk_key = hmac.new(master, b"ONNXZEC1 chunk key", hashlib.sha256).digest()
    check = hmac.new(master, b"ONNXZEC1 key check", hashlib.sha256).digest()[:16]
    return chunk_key, check


def zec1_header(passphrase, iterations, chunk_size, salt, prefix, version=1, cipher=1, kdf=1):
    """C-10..C-17; returns (header, chunk key)."""
    chunk_key, check = zec1_keys(passphrase, salt, iterations)
    h = ZEC1_MAGIC + bytes([version, cipher, kdf, 0]) + struct.pack("<II", iterations, chunk_size)
    h += prefix + salt + check
    assert len(h) == 56
    h += hashlib.sha256(h).digest()[:16]
    return h, chunk_key


def nonce(header, index):
    """C-32: the 4-byte prefix, then the chunk index as 8 bytes little-endian."""
    return header[20:24] + struct.pack("<Q", index)


def seal_chunk(aead, header, index, data, final, flags=None, reserved=b"\0\0\0"):
    """C-30..C-34: frame + ciphertext + tag of one chunk."""
    fl = (1 if final else 0) if flags is None else flags
    frame = struct.pack("<QIB", index, len(data), fl) + reserved
    return frame + aead.encrypt(nonce(header, index), data, header + frame)


def zec1_encrypt(plain, passphrase, iterations=DEFAULT_ITERATIONS, chunk_size=DEFAULT_CHUNK,
                 salt=None, prefix=None):
    salt = os.urandom(16) if salt is None else salt
    prefix = os.urandom(4) if prefix is None else prefix
    header, key = zec1_header(passphrase, iterations, chunk_size, salt, prefix)
    aead = AESGCM(key)
    out = [header]
    n = max(1, -(-len(plain) // chunk_size))  # C-35
    for i in range(n):
        out.append(seal_chunk(aead, header, i, plain[i * chunk_size:(i + 1) * chunk_size], i == n - 1))
    return b"".join(out)


class Zec1Writer:
    """Streaming encryption, for the large test."""

    def __init__(self, f, passphrase, iterations, chunk_size=DEFAULT_CHUNK):
        self.f = f
        self.header, key = zec1_header(passphrase, iterations, chunk_size, os.urandom(16), os.urandom(4))
        self.aead = AESGCM(key)
        self.cs = chunk_size
        self.index = 0
        self.pending = b""
        f.write(self.header)

    def write(self, data):
        self.pending += data
        while len(self.pending) > self.cs:  # a full chunk may be the last: keep it
            self._seal(self.pending[:self.cs], False)
            self.pending = self.pending[self.cs:]

    def _seal(self, data, final):
        self.f.write(seal_chunk(self.aead, self.header, self.index, data, final))
        self.index += 1

    def finish(self):
        self._seal(self.pending, True)


def _read_exact(f, n):
    parts, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            break
        parts.append(b)
        got += len(b)
    return b"".join(parts)


def zec1_decrypt_stream(f, passphrase, max_iterations=10_000_000):
    """C-40..C-46: yields plaintext chunk by chunk; raises ZecError."""
    h = _read_exact(f, HEADER)
    if len(h) < 8 or h[:8] != ZEC1_MAGIC:
        raise ZecError("malformed", "not ONNXZEC1")
    if len(h) < HEADER:
        raise ZecError("truncated", "inside the header")
    if h[8] != 1:
        raise ZecError("unsupported", f"version {h[8]}")
    if hashlib.sha256(h[:56]).digest()[:16] != h[56:72]:
        raise ZecError("checksum", "header digest")
    if h[9] != 1 or h[10] != 1:
        raise ZecError("unsupported", "cipher or kdf")
    if h[11] != 0:
        raise ZecError("malformed", "reserved byte")
    iterations, cs = struct.unpack("<II", h[12:20])
    if iterations == 0:
        raise ZecError("malformed", "zero iterations")
    if iterations > max_iterations:
        raise ZecError("limit", "iterations")
    if not 64 <= cs <= 64 << 20:
        raise ZecError("malformed", "chunk size")
    key, check = zec1_keys(passphrase, h[24:40], iterations)
    if not hmac.compare_digest(check, h[40:56]):
        raise ZecError("bad_key", "key check")
    aead = AESGCM(key)
    i = 0
    while True:
        frame = _read_exact(f, FRAME)
        if not frame:
            raise ZecError("truncated", "final chunk missing")
        if len(frame) < FRAME:
            raise ZecError("truncated", "inside a frame")
        index, length, flags = struct.unpack("<QIB", frame[:13])
        if length > cs:
            raise ZecError("malformed", "chunk length above the chunk size")
        body = _read_exact(f, length + TAG)
        if len(body) < length + TAG:
            raise ZecError("truncated", "inside a chunk")
        try:
            data = aead.decrypt(nonce(h, index), body, h + frame)
            ok = True
        except InvalidTag:
            ok = False
        if index != i and ok:
            raise ZecError("inconsistent", f"chunk {index} at position {i}")
        if not ok:
            raise ZecError("checksum", f"chunk {i}")
        final = flags & 1
        if flags & ~1 or frame[13:16] != b"\0\0\0":
            raise ZecError("malformed", "reserved frame bits")
        if not final and length != cs:
            raise ZecError("malformed", "short non-final chunk")
        if final and length == 0 and i > 0:
            raise ZecError("malformed", "empty final chunk after full ones")
        yield data
        if final:
            if f.read(1):
                raise ZecError("malformed", "appended bytes")
            return
        i += 1


def zec1_decrypt(data, passphrase, **kw):
    import io
    return b"".join(zec1_decrypt_stream(io.BytesIO(data), passphrase, **kw))


def cry1_key(passphrase, salt):
    return pbkdf2(passphrase, salt, CRY1_ITERATIONS)


def cry1_encrypt(plain, passphrase, salt=None, iv=None, key=None):
    """C-50, C-51."""
    salt = os.urandom(16) if salt is None else salt
    iv = os.urandom(16) if iv is None else iv
    key = cry1_key(passphrase, salt) if key is None else key
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plain) + padder.finalize()
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return CRY1_MAGIC + salt + iv + enc.update(padded) + enc.finalize()


def cry1_decrypt(data, passphrase, key=None):
    if data[:8] != CRY1_MAGIC:
        raise ZecError("malformed", "not ONNXCRY1")
    if len(data) < 56 or (len(data) - 40) % 16:
        raise ZecError("truncated", "ciphertext length")
    salt, iv = data[8:24], data[24:40]
    key = cry1_key(passphrase, salt) if key is None else key
    dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
    padded = dec.update(data[40:]) + dec.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    try:
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError:
        raise ZecError("bad_key", "padding") from None
