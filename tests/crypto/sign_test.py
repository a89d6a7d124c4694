#!/usr/bin/python3
"""tests/crypto/sign_test.py - signed models (onnxz/sign.h, spec/signing.md) against
independent oracles. Run by ctest (tests/crypto/CMakeLists.txt) with Debian's python3:

    sign_test.py sign --osign PATH --onnxz PATH --work DIR
    sign_test.py sigstore --osign PATH --onnxz PATH --work DIR --node-modules DIR
    sign_test.py nossl --osign PATH --onnxz PATH --work DIR

  sign      for every form (an .onnxz archive, a single .onnx, a two-file and an N-file
            model) and both key types (Ed25519, ECDSA P-256; encrypted PKCS#8 too), made
            by `openssl genpkey`: signing through the library (osign) and the tool; the
            manifest recomputed with hashlib over zipfile's entries or the files the
            model names (python3-onnx); the subject digest; the key hint; the DSSE
            signature verified by the `openssl` command line over the PAE bytes rebuilt
            here from the bundle (json, base64); bundles signed here by the openssl
            command line over statements written here verify in the library. Then every
            tamper case of G-31, each its own check with the status and the name it must
            give, and hostile bundles (huge, deep, duplicate keys, wrong types, bad
            base64, not UTF-8, truncated) refused quickly.
  sigstore  every bundle of the round trips verified by sigstore's JavaScript verifier
            (@sigstore/verify, @sigstore/bundle; tests/crypto/sigstore_verify.js) with
            the public key alone, offline; a tampered payload refused by it.
  nossl     a build without OpenSSL refuses to sign and to verify, saying why.
  onread    verify on read (spec/signing.md G-50..G-55), through osign read / open and
            the tool's get / info / convert --trust: a
            changed tensor byte of a signed archive opens and fails the read of that
            tensor only (naming it; a slice of it too); a changed model, an added entry,
            an unsigned archive, another key refused at open; oz_open with trust; a local
            .onnx's changed data file refused at open; the archive at a URL (Debian's
            nginx, tests/remote/nginx_env.py): one tensor read, with no more bytes fetched
            than the directory, the model and that tensor's entry, and a tampered one
            caught.
With ONNXZ_TEST_REDUCED=1 (under valgrind) the round trips and the tamper cases of .onnx
models run on the archive and the two-file form only.
"""
import argparse
import base64
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SAMPLE = os.path.join(ROOT, "samples", "mlp.onnx")
# oc_status numbers (libonnxcore/include/onnxcore/status.h)
ST = {"ok": 0, "truncated": 3, "malformed": 4, "depth": 5, "limit": 6, "invalid_arg": 7,
      "not_found": 8, "unsupported": 9, "checksum": 11, "bad_key": 13, "inconsistent": 15,
      "busy": 16}
SIG_ENTRY = "__ONNXZ_SIGNATURE"
# Under valgrind (the wrapper sets it): the archive and the two-file form only, every other
# check as in the other builds, which cover every form.
REDUCED = os.environ.get("ONNXZ_TEST_REDUCED") == "1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
PASS = "sign test passphrase"

failures = []
checks = [0]


def check(cond, what):
    checks[0] += 1
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class Ctx:
    def __init__(self, args):
        self.osign = args.osign
        self.onnxz = args.onnxz
        self.work = args.work

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def osign_run(self, *argv):
        r = run([self.osign] + list(argv))
        return r.returncode, r.stdout + r.stderr

    def expect(self, what, status, argv, needle=None, max_seconds=None):
        t = time.monotonic()
        rc, out = self.osign_run(*argv)
        dt = time.monotonic() - t
        ok = rc == ST[status] and (needle is None or needle in out)
        check(ok, "%s: expected %s%s, got %d: %s" % (
            what, status, " naming %r" % needle if needle else "", rc, out.strip()))
        if max_seconds is not None:
            check(dt < max_seconds, "%s: took %.2f s (at most %s expected)" % (what, dt,
                                                                             max_seconds))
        return out


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def make_keys(ctx):
    keys = {}
    d = ctx.path("keys")
    os.makedirs(d)
    specs = {
        "ed": ["-algorithm", "ed25519"],
        "ec": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        "ec2": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        "p384": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"],
        "rsa": ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
    }
    for name, spec in specs.items():
        priv, pub = os.path.join(d, name + ".pem"), os.path.join(d, name + ".pub.pem")
        subprocess.run(["openssl", "genpkey"] + spec + ["-out", priv], check=True,
                       capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", priv, "-pubout", "-out", pub], check=True,
                       capture_output=True)
        keys[name] = (priv, pub)
    # the P-256 key again, encrypted (PKCS#8, AES-256)
    enc = os.path.join(d, "ec_enc.pem")
    subprocess.run(["openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", keys["ec"][0],
                    "-out", enc, "-passout", "pass:" + PASS], check=True, capture_output=True)
    keys["ec_enc"] = (enc, keys["ec"][1])
    return keys


def make_forms(ctx, src, tag):
    """The four forms of the sample model, each in a directory of its own."""
    forms = {}
    d = ctx.path("forms-" + tag)
    for sub in ("archive", "single", "two", "nfile", "odd"):
        os.makedirs(os.path.join(d, sub))
    cv = [ctx.onnxz, "-q", "convert"]
    forms["archive"] = os.path.join(d, "archive", "m.onnxz")
    subprocess.run(cv + [src, forms["archive"]], check=True)
    forms["single"] = os.path.join(d, "single", "m.onnx")
    shutil.copy(src, forms["single"])
    forms["two"] = os.path.join(d, "two", "m.onnx")
    subprocess.run(cv + [src, forms["two"], "--external-data", "m.data"], check=True)
    forms["nfile"] = os.path.join(d, "nfile", "m.onnx")
    subprocess.run(cv + [src, forms["nfile"], "--external-data", "w.bin", "--max-file-size",
                         "100000"], check=True)
    # a data file whose name needs JSON escapes and is not ASCII (G-14)
    forms["odd"] = os.path.join(d, "odd", "m.onnx")
    subprocess.run(cv + [src, forms["odd"], "--external-data", 'w\u00e9"i\\ghts.bin'],
                   check=True)
    return forms


def bundle_of(path):
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return z.read(SIG_ENTRY)
    with open(path + ".sig", "rb") as f:
        return f.read()


def expected_parts(path):
    """The manifest as this test computes it: name -> SHA-256 hex."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return {i.filename: hashlib.sha256(z.read(i)).hexdigest()
                    for i in z.infolist() if i.filename != SIG_ENTRY}
    import onnx
    from onnx import external_data_helper as edh
    m = onnx.load(path, load_external_data=False)
    parts = {os.path.basename(path): sha256_file(path)}
    for t in edh._get_all_tensors(m):
        if edh.uses_external_data(t):
            loc = {e.key: e.value for e in t.external_data}["location"]
            parts[loc] = sha256_file(os.path.join(os.path.dirname(path), loc))
    return parts


def pae(payload):
    return b"DSSEv1 %d %s %d " % (len(PAYLOAD_TYPE), PAYLOAD_TYPE.encode(), len(payload)) + payload


def openssl_verify(ctx, pub, kind, message, sig):
    m, s = ctx.path("pae.bin"), ctx.path("sig.bin")
    with open(m, "wb") as f:
        f.write(message)
    with open(s, "wb") as f:
        f.write(sig)
    if kind == "ed25519":
        cmd = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in", m,
               "-sigfile", s]
    else:
        cmd = ["openssl", "dgst", "-sha256", "-verify", pub, "-signature", s, m]
    return run(cmd).returncode == 0


def openssl_sign(ctx, priv, kind, message):
    m, s = ctx.path("pae.bin"), ctx.path("sig.bin")
    with open(m, "wb") as f:
        f.write(message)
    if kind == "ed25519":
        cmd = ["openssl", "pkeyutl", "-sign", "-inkey", priv, "-rawin", "-in", m, "-out", s]
    else:
        cmd = ["openssl", "dgst", "-sha256", "-sign", priv, "-out", s, m]
    subprocess.run(cmd, check=True, capture_output=True)
    with open(s, "rb") as f:
        return f.read()


def fingerprint(pub):
    with open(pub, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_bundle(ctx, what, path, priv, pub, kind):
    """The oracles on a bundle we wrote."""
    raw = bundle_of(path)
    b = json.loads(raw)
    check(b["mediaType"] == "application/vnd.dev.sigstore.bundle.v0.3+json", what + ": mediaType")
    check(b["verificationMaterial"]["publicKey"]["hint"] == fingerprint(pub), what + ": key hint")
    env = b["dsseEnvelope"]
    check(env["payloadType"] == PAYLOAD_TYPE, what + ": payloadType")
    payload = base64.b64decode(env["payload"], validate=True)
    sig = base64.b64decode(env["signatures"][0]["sig"], validate=True)
    check(openssl_verify(ctx, pub, kind, pae(payload), sig), what + ": openssl verifies the "
          "DSSE signature over the PAE")
    check(not openssl_verify(ctx, pub, kind, pae(payload + b" "), sig),
          what + ": openssl refuses the signature over another payload")
    st = json.loads(payload)
    check(st["_type"] == "https://in-toto.io/Statement/v1", what + ": statement type")
    check(st["predicateType"] == "https://model_signing/signature/v1.0", what + ": predicate")
    res = st["predicate"]["resources"]
    names = [r["name"] for r in res]
    check(names == sorted(names, key=lambda n: n.encode()), what + ": resources sorted")
    got = {r["name"]: r["digest"] for r in res}
    want = expected_parts(path)
    check(got == want, "%s: manifest %s, recomputed %s" % (what, got, want))
    root = hashlib.sha256(b"".join(bytes.fromhex(r["digest"]) for r in res)).hexdigest()
    check(st["subject"][0]["digest"]["sha256"] == root, what + ": subject digest")
    method = st["predicate"]["serialization"]["method"]
    check(method == ("onnxz-archive" if zipfile.is_zipfile(path) else "files"), what + ": method")
    return b


def write_bundle(path, text):
    """Puts a bundle where the model's verify reads it (a .onnx model's .sig)."""
    with open(path + ".sig", "wb") as f:
        f.write(text if isinstance(text, bytes) else text.encode())


def replace_entry(path, name, data, drop=(), add=None):
    """Rewrites an archive with python's zipfile: entry name's data replaced, entries in
    drop left out, add = (name, data) appended before the model."""
    tmp = path + ".tmp"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(tmp, "w") as zout:
        for i in zin.infolist():
            if i.filename in drop:
                continue
            if add and i.filename == "__MODEL_PROTO":
                zout.writestr(add[0], add[1])
            zout.writestr(i, data if i.filename == name else zin.read(i),
                          compress_type=i.compress_type)
    os.replace(tmp, path)


def data_offset(path, name):
    with zipfile.ZipFile(path) as z:
        i = z.getinfo(name)
    with open(path, "rb") as f:
        f.seek(i.header_offset)
        h = f.read(30)
    n, e = struct.unpack("<HH", h[26:30])
    return i.header_offset + 30 + n + e


def flip(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 1]))


def signed_statement(ctx, parts, method, name="m"):
    """A statement as spec/signing.md G-10 describes it, written here."""
    res = [{"name": n, "algorithm": "sha256", "digest": d}
           for n, d in sorted(parts.items(), key=lambda kv: kv[0].encode())]
    root = hashlib.sha256(b"".join(bytes.fromhex(r["digest"]) for r in res)).hexdigest()
    return {"_type": "https://in-toto.io/Statement/v1",
            "subject": [{"name": name, "digest": {"sha256": root}}],
            "predicateType": "https://model_signing/signature/v1.0",
            "predicate": {"serialization": {"method": method, "hash_type": "sha256",
                                            "allow_symlinks": False, "ignore_paths": []},
                          "resources": res}}


def our_bundle(ctx, statement, priv, pub, kind, hint=True):
    """A bundle signed by the openssl command line over a statement made here."""
    payload = json.dumps(statement, indent=2).encode() if isinstance(statement, dict) else statement
    sig = openssl_sign(ctx, priv, kind, pae(payload))
    vm = {"publicKey": {"hint": fingerprint(pub)} if hint else {}, "tlogEntries": []}
    return json.dumps({"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                       "verificationMaterial": vm,
                       "dsseEnvelope": {"payload": base64.b64encode(payload).decode(),
                                        "payloadType": PAYLOAD_TYPE,
                                        "signatures": [{"sig": base64.b64encode(sig).decode(),
                                                        "keyid": ""}]}})


def round_trips(ctx, keys, forms):
    bundles = []
    kinds = {"ed": "ed25519", "ec": "ecdsa-p256"}
    for form, path in forms.items():
        if REDUCED and form not in ("archive", "two"):
            continue
        for k in ("ed", "ec"):
            priv, pub = keys[k]
            what = "%s/%s" % (form, k)
            out = ctx.expect(what + " sign", "ok", ["sign", path, priv])
            check("key=%s" % kinds[k] in out and "fingerprint=%s" % fingerprint(pub) in out,
                  what + ": report " + out)
            ctx.expect(what + " verify", "ok", ["verify", path, pub])
            b = check_bundle(ctx, what, path, priv, pub, kinds[k])
            bundles.append((what, b, pub, kinds[k]))
            other = keys["ed" if k == "ec" else "ec"][1]
            ctx.expect(what + " verify with another key", "bad_key", ["verify", path, other],
                       "signed by another key")
            # onnxz verify --trust: the signature first, then every other check, one call
            r = run([ctx.onnxz, "verify", path, "--trust", pub])
            check(r.returncode == 0 and r.stdout.startswith("OK signed with the trusted %s key %s"
                                                            % (kinds[k], fingerprint(pub)[:16])),
                  what + ": onnxz verify --trust: " + r.stdout + r.stderr)
            r = run([ctx.onnxz, "verify", "--json", path, "--trust", pub])
            j = json.loads(r.stdout) if r.returncode == 0 else {}
            check(j.get("signature", {}).get("key_fingerprint") == fingerprint(pub) and
                  j.get("ok") is True, what + ": onnxz verify --json --trust: " + r.stdout)
            r = run([ctx.onnxz, "verify", path, "--trust", other])
            check(r.returncode == 1 and "signed by another key" in r.stderr,
                  what + ": onnxz verify --trust another key: " + r.stderr)
        # signed again: the archive's signature entry is replaced, not added
        ctx.expect(form + " signed twice", "ok", ["sign", path, keys["ed"][0]])
        ctx.expect(form + " signed twice verifies", "ok", ["verify", path, keys["ed"][1]])
        if form == "archive":
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
            check(names.count(SIG_ENTRY) == 1 and names[-1] == "__MODEL_PROTO" and
                  names[-2] == SIG_ENTRY, "archive signed twice: entries " + str(names))
            r = run([ctx.onnxz, "verify", path])
            check(r.returncode == 0, "the signed archive passes onnxz verify: " + r.stdout +
                  r.stderr)
            import onnx
            onnx.checker.check_model(onnx.load(forms["single"]))
    # an encrypted key
    path = forms["archive"]
    ctx.expect("encrypted key, reported", "ok", ["encrypted", keys["ec_enc"][0]])
    check(ctx.osign_run("encrypted", keys["ec_enc"][0])[1].strip() == "yes", "encrypted: yes")
    check(ctx.osign_run("encrypted", keys["ec"][0])[1].strip() == "no", "plain key: no")
    ctx.expect("encrypted key, no passphrase", "invalid_arg", ["sign", path, keys["ec_enc"][0]],
               "encrypted")
    ctx.expect("encrypted key, wrong passphrase", "bad_key",
               ["sign", path, keys["ec_enc"][0], "--pass", "wrong"], "wrong passphrase")
    ctx.expect("encrypted key", "ok", ["sign", path, keys["ec_enc"][0], "--pass", PASS])
    ctx.expect("encrypted key verifies", "ok", ["verify", path, keys["ec_enc"][1]])
    # keys of other types
    ctx.expect("a P-384 key", "unsupported", ["sign", path, keys["p384"][0]], "P-256")
    ctx.expect("an RSA key", "unsupported", ["sign", path, keys["rsa"][0]], "Ed25519")
    ctx.expect("a public key to sign with", "malformed", ["sign", path, keys["ec"][1]],
               "private key")
    ctx.expect("a private key to trust", "ok", ["verify", path, keys["ec_enc"][1]])
    # the tool
    env = dict(os.environ, ONNXZ_KEY=PASS)
    r = run([ctx.onnxz, "sign", forms["two"], "--key", keys["ec_enc"][0]], env=env,
            stdin=subprocess.DEVNULL)
    check(r.returncode == 0 and "signed with ecdsa-p256" in r.stdout,
          "onnxz sign with ONNXZ_KEY: " + r.stdout + r.stderr)
    ctx.expect("onnxz sign's bundle verifies", "ok", ["verify", forms["two"], keys["ec"][1]])
    pf = ctx.path("pass.txt")
    with open(pf, "w") as f:
        f.write(PASS + "\n")
    r = run([ctx.onnxz, "sign", forms["nfile"], "--key", keys["ec_enc"][0], "--passphrase-file",
             pf], stdin=subprocess.DEVNULL)
    check(r.returncode == 0, "onnxz sign --passphrase-file: " + r.stdout + r.stderr)
    r = run([ctx.onnxz, "sign", forms["nfile"]])
    check(r.returncode == 2 and "--key" in r.stderr, "onnxz sign without --key: " + r.stderr)
    return bundles


def tamper_archive(ctx, keys, forms, other):
    priv, pub = keys["ed"]
    src = forms["archive"]
    t = ctx.path("tamper")
    os.makedirs(t, exist_ok=True)

    def fresh(name):
        p = os.path.join(t, name + ".onnxz")
        shutil.copy(src, p)
        rc, out = ctx.osign_run("sign", p, priv)
        check(rc == 0, "sign " + p + ": " + out)
        return p

    p = fresh("tensor-byte")
    flip(p, data_offset(p, "fc2_weight") + 1000)
    ctx.expect("archive: a changed tensor byte", "checksum", ["verify", p, pub],
               "entry 'fc2_weight' has changed")
    r = run([ctx.onnxz, "verify", p, "--trust", pub])
    check(r.returncode == 1 and "entry 'fc2_weight' has changed since it was signed" in r.stderr,
          "onnxz verify --trust of a changed tensor: " + r.stderr)
    # __MODEL_PROTO rewritten by another writer (onnxz meta refuses to, G-40): the
    # signature no longer holds until signed again
    p = fresh("meta")
    import onnx
    with zipfile.ZipFile(p) as z:
        m = onnx.load_from_string(z.read("__MODEL_PROTO"))
    m.metadata_props.add(key="k", value="v")
    replace_entry(p, "__MODEL_PROTO", m.SerializeToString())
    ctx.expect("archive: its model edited by another writer", "checksum", ["verify", p, pub],
               "entry '__MODEL_PROTO' has changed")
    ctx.expect("archive: signed again after meta", "ok", ["sign", p, priv])
    ctx.expect("archive: signed again after meta verifies", "ok", ["verify", p, pub])
    with zipfile.ZipFile(p) as z:
        check(z.namelist()[-2:] == [SIG_ENTRY, "__MODEL_PROTO"], "meta, sign: entries " +
              str(z.namelist()))
    p = fresh("model-byte")
    flip(p, data_offset(p, "__MODEL_PROTO") + 10)
    ctx.expect("archive: a changed byte of the model", "checksum", ["verify", p, pub],
               "entry '__MODEL_PROTO' has changed")
    p = fresh("removed")
    replace_entry(p, None, None, drop=("fc3_weight",))
    ctx.expect("archive: a removed entry", "not_found", ["verify", p, pub],
               "entry 'fc3_weight' is listed by the signed manifest but is missing")
    p = fresh("added")
    replace_entry(p, None, None, add=("extra.bin", b"hello"))
    ctx.expect("archive: an added entry", "inconsistent", ["verify", p, pub],
               "entry 'extra.bin' is not listed")
    p = fresh("other-manifest")
    replace_entry(p, SIG_ENTRY, bundle_of(other))
    ctx.expect("archive: the manifest of another signed model", "checksum", ["verify", p, pub],
               "has changed since it was signed")
    p = fresh("unsigned")
    replace_entry(p, None, None, drop=(SIG_ENTRY,))
    ctx.expect("archive: not signed", "not_found", ["verify", p, pub], "is not signed")
    p = fresh("other-key")
    ctx.osign_run("sign", p, keys["ec2"][0])
    ctx.expect("archive: signed by another key", "bad_key", ["verify", p, pub],
               "signed by another key")
    # another key's signature under the trusted key's hint: the signature itself fails
    b = json.loads(bundle_of(p))
    b["verificationMaterial"]["publicKey"]["hint"] = fingerprint(pub)
    replace_entry(p, SIG_ENTRY, json.dumps(b).encode())
    ctx.expect("archive: a signature by another key", "bad_key", ["verify", p, pub],
               "does not verify")
    p = fresh("payload")
    b = json.loads(bundle_of(p))
    st = json.loads(base64.b64decode(b["dsseEnvelope"]["payload"]))
    st["predicate"]["resources"][0]["digest"] = "0" * 64
    b["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(st).encode()).decode()
    replace_entry(p, SIG_ENTRY, json.dumps(b).encode())
    ctx.expect("archive: a changed statement", "bad_key", ["verify", p, pub], "does not verify")
    p = fresh("truncated")
    replace_entry(p, SIG_ENTRY, bundle_of(p)[:300])
    ctx.expect("archive: a truncated bundle", "malformed", ["verify", p, pub], "not valid JSON")
    p = fresh("bundle-for-onnx")
    # a .onnx's bundle stored in an archive: the method differs
    replace_entry(p, SIG_ENTRY, bundle_of(forms["two"]))
    ctx.expect("archive: a bundle made for a .onnx", "inconsistent", ["verify", p, keys["ec"][1]],
               "not for an archive")


def tamper_models(ctx, keys, forms):
    priv, pub = keys["ec"]
    for form in ("two",) if REDUCED else ("single", "two", "nfile"):
        d = ctx.path("tamper-" + form)
        shutil.copytree(os.path.dirname(forms[form]), d)
        model = os.path.join(d, "m.onnx")
        data = sorted(f for f in os.listdir(d) if f not in ("m.onnx", "m.onnx.sig"))
        rc, out = ctx.osign_run("sign", model, priv)
        check(rc == 0, form + ": sign: " + out)
        saved = {f: open(os.path.join(d, f), "rb").read() for f in os.listdir(d)}

        def restore():
            for f in os.listdir(d):
                if f not in saved:
                    os.unlink(os.path.join(d, f))
            for f, b in saved.items():
                with open(os.path.join(d, f), "wb") as fh:
                    fh.write(b)

        size = os.path.getsize(model)
        flip(model, size // 2)
        ctx.expect(form + ": a changed byte of the model", "checksum", ["verify", model, pub],
                   "file 'm.onnx' has changed")
        restore()
        for f in data:
            flip(os.path.join(d, f), os.path.getsize(os.path.join(d, f)) - 1)
            ctx.expect("%s: a changed byte of %s" % (form, f), "checksum",
                       ["verify", model, pub], "file '%s' has changed" % f)
            restore()
            os.unlink(os.path.join(d, f))
            ctx.expect("%s: %s missing" % (form, f), "not_found", ["verify", model, pub], f)
            restore()
        os.unlink(model + ".sig")
        ctx.expect(form + ": not signed", "not_found", ["verify", model, pub], "is not signed")
        restore()
        # statements signed here: the library reads the format, not just its own output
        parts = expected_parts(model)
        write_bundle(model, our_bundle(ctx, signed_statement(ctx, parts, "files"), priv, pub,
                                       "ecdsa-p256"))
        ctx.expect(form + ": a bundle signed by openssl", "ok", ["verify", model, pub])
        write_bundle(model, our_bundle(ctx, signed_statement(ctx, parts, "files"), priv, pub,
                                       "ecdsa-p256", hint=False))
        ctx.expect(form + ": a bundle with no key hint", "ok", ["verify", model, pub])
        ctx.expect(form + ": no hint, another key", "bad_key",
                   ["verify", model, keys["ec2"][1]], "does not verify")
        if data:
            less = dict(parts)
            del less[data[0]]
            write_bundle(model, our_bundle(ctx, signed_statement(ctx, less, "files"), priv, pub,
                                           "ecdsa-p256"))
            ctx.expect(form + ": a data file the manifest does not list", "inconsistent",
                       ["verify", model, pub], "file '%s' is not listed" % data[0])
        more = dict(parts, **{"ghost.bin": "ab" * 32})
        write_bundle(model, our_bundle(ctx, signed_statement(ctx, more, "files"), priv, pub,
                                       "ecdsa-p256"))
        ctx.expect(form + ": a listed file that is missing", "not_found",
                   ["verify", model, pub], "file 'ghost.bin' is listed")
        st = signed_statement(ctx, parts, "files")
        st["subject"][0]["digest"]["sha256"] = "00" * 32
        write_bundle(model, our_bundle(ctx, st, priv, pub, "ecdsa-p256"))
        ctx.expect(form + ": a subject digest that is not the resources'", "inconsistent",
                   ["verify", model, pub], "subject digest")
        restore()


def hostile(ctx, keys, forms):
    """Bundles that are no bundles, beside a .onnx model: each refused quickly."""
    priv, pub = keys["ed"]
    d = ctx.path("hostile")
    shutil.copytree(os.path.dirname(forms["single"]), d)
    model = os.path.join(d, "m.onnx")
    ctx.osign_run("sign", model, priv)
    good = bundle_of(model)
    cases = [
        ("an empty bundle", b"", "malformed", "not valid JSON"),
        ("a truncated bundle", good[: len(good) // 2], "malformed", "not valid JSON"),
        ("trailing bytes", good + b"x", "malformed", "after the value"),
        ("not UTF-8", good.replace(b'"mediaType"', b'"media\xffType"'), "malformed", "UTF-8"),
        ("a bundle that is an array", b"[1,2,3]", "malformed", "not a JSON object"),
        ("deep nesting", b"[" * 100000 + b"]" * 100000, "depth", "deeper"),
        ("deep objects", b'{"a":' * 50 + b"1" + b"}" * 50, "depth", "deeper"),
        ("over the size limit", b" " * (33 << 20) + good, "limit", "limit"),
        ("too many values", b"[" + b"0," * (3 << 20) + b"0]", "limit", "JSON values"),
        ("a bad escape", good.replace(b'"mediaType"', b'"media\\xType"'), "malformed", "escape"),
    ]
    dup = good.replace(b'{"mediaType"', b'{"mediaType":"x","mediaType"', 1)
    cases.append(("a duplicate key", dup, "malformed", "more than once"))
    for what, mutate, status, needle in [
        ("payload is a number", lambda x: x["dsseEnvelope"].update(payload=5), "malformed",
         "is not a string"),
        ("signatures is an object", lambda x: x["dsseEnvelope"].update(signatures={}),
         "malformed", "is not an array"),
        ("no envelope", lambda x: x.pop("dsseEnvelope"), "malformed", "no \"dsseEnvelope\""),
        ("another media type", lambda x: x.update(mediaType="application/json"), "unsupported",
         "mediaType"),
        ("a payload that is not base64", lambda x: x["dsseEnvelope"].update(payload="@@@"),
         "malformed", "not base64"),
        ("a signature that is not base64",
         lambda x: x["dsseEnvelope"]["signatures"][0].update(sig="abc"), "malformed",
         "not base64"),
        ("no signature", lambda x: x["dsseEnvelope"].update(signatures=[]), "malformed",
         "0 signatures"),
        ("many signatures", lambda x: x["dsseEnvelope"].update(
            signatures=x["dsseEnvelope"]["signatures"] * 1000), "malformed", "signatures"),
        ("a hint that is a number",
         lambda x: x["verificationMaterial"]["publicKey"].update(hint=1), "malformed",
         "not a string"),
    ]:
        x = json.loads(good)
        mutate(x)
        cases.append((what, json.dumps(x).encode(), status, needle))
    # statements that are no statements, signed with the trusted key
    parts = expected_parts(model)
    for what, st, status, needle in [
        ("a statement that is not JSON", b"{", "malformed", "not valid JSON"),
        ("another predicate", dict(signed_statement(ctx, parts, "files"),
                                   predicateType="https://example.com/x"), "unsupported",
         "predicateType"),
        ("resources that are strings", {**signed_statement(ctx, parts, "files"),
                                        "predicate": {"serialization": {"method": "files"},
                                                      "resources": ["a"]}}, "malformed",
         "not an object"),
        ("a digest that is not hex", json.loads(json.dumps(
            signed_statement(ctx, parts, "files")).replace(parts["m.onnx"], "zz" * 32)),
         "malformed", "hex"),
        ("a name listed twice", None, "malformed", "more than once"),
    ]:
        if st is None:
            st = signed_statement(ctx, parts, "files")
            st["predicate"]["resources"].append(st["predicate"]["resources"][0])
            root = hashlib.sha256(b"".join(bytes.fromhex(r["digest"])
                                           for r in st["predicate"]["resources"])).hexdigest()
            st["subject"][0]["digest"]["sha256"] = root
        cases.append((what, our_bundle(ctx, st, priv, pub, "ed25519").encode(), status, needle))
    for what, text, status, needle in cases:
        write_bundle(model, text)
        ctx.expect("hostile: " + what, status, ["verify", model, pub], needle, max_seconds=10)


def sigstore(ctx, args, bundles):
    js = os.path.join(HERE, "sigstore_verify.js")
    env = dict(os.environ, NODE_PATH=args.node_modules)
    for what, b, pub, kind in bundles:
        p = ctx.path("bundle.json")
        with open(p, "w") as f:
            json.dump(b, f)
        r = run(["node", js, p, pub], env=env)
        check(r.returncode == 0 and "verified" in r.stdout,
              "sigstore-js verifies %s: %s" % (what, r.stdout + r.stderr))
        # a changed payload and a wrong key: refused by it as well
        bad = json.loads(json.dumps(b))
        payload = base64.b64decode(bad["dsseEnvelope"]["payload"]).replace(b"sha256", b"sha257", 1)
        bad["dsseEnvelope"]["payload"] = base64.b64encode(payload).decode()
        with open(p, "w") as f:
            json.dump(bad, f)
        r = run(["node", js, p, pub], env=env)
        check(r.returncode == 1 and "refused" in r.stdout,
              "sigstore-js refuses a changed payload of %s: %s" % (what, r.stdout + r.stderr))
    print("sigstore-js verified %d bundles" % len(bundles))


def props_of(path):
    """metadata_props as python3-onnx reads them (an archive's __MODEL_PROTO via zipfile)."""
    import onnx
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            m = onnx.load_from_string(z.read("__MODEL_PROTO"))
    else:
        m = onnx.load(path, load_external_data=False)
    return {p.key: p.value for p in m.metadata_props}


def shown(ctx, keys):
    """onnxz info and ls (text and --json) show a signed model's signature as its bundle
    states it (G-41): the key's fingerprint (hashlib over the public key's PEM) and the
    parts (the manifest recomputed with zipfile or python3-onnx); unsigned, nothing."""
    forms = make_forms(ctx, SAMPLE, "shown")
    priv, pub = keys["ed"]
    fp = fingerprint(pub)
    for form in ("archive", "two")[:1 if REDUCED else 2]:
        path = forms[form]
        what = "info of a signed " + form
        cmds = [["info"], ["info", "--json"]] + ([["ls"], ["ls", "--json"]]
                                                 if form == "archive" else [])
        before = [run([ctx.onnxz] + c + [path]).stdout for c in cmds]
        check(all("signature" not in o and "signed" not in o for o in before),
              what + ": unsigned: no signature shown")
        subprocess.run([ctx.onnxz, "-q", "sign", path, "--key", priv], check=True)
        n = len(expected_parts(path))
        loc = SIG_ENTRY if form == "archive" else path + ".sig"
        want = {"location": loc, "key_fingerprint": fp, "parts": n, "verified": False,
                "problem": None}
        after = [run([ctx.onnxz] + c + [path]).stdout for c in cmds]
        j = json.loads(after[1])
        check(j.get("signature") == want, "%s: --json %s, want %s" % (what, j.get("signature"),
                                                                     want))
        del j["signature"]
        check(j == json.loads(before[1]) or form == "archive",
              what + ": --json: nothing else changed")
        kind = "entries" if form == "archive" else "files"
        check("signature:" in after[0] and fp in after[0] and "%d %s signed" % (n, kind)
              in after[0] and after[0].startswith(before[0]) if form != "archive"
              else fp in after[0] and "%d entries signed" % n in after[0],
              what + ": text: " + after[0])
        if form == "archive":
            check(after[2].endswith("signed by key %s over %d entries (not verified: onnxz "
                                    "verify --trust)\n" % (fp, n)), "ls: text: " + after[2])
            check(json.loads(after[3]).get("signature") == want, "ls --json: " + after[3])
        # a bundle that is no bundle: shown as unreadable, info still works
        if form == "two":
            write_bundle(path, "{\"mediaType\": 1")
            r = run([ctx.onnxz, "info", "--json", path])
            g = json.loads(r.stdout).get("signature", {}) if r.returncode == 0 else {}
            check(g.get("problem") and g.get("key_fingerprint") is None,
                  what + ": a truncated bundle: " + r.stdout + r.stderr)


def converted(ctx, keys):
    """onnxz convert of a signed model (G-42): OUT unsigned with a one-line note, or
    signed with --sign-key (checked by openssl and the manifest recomputed by zipfile or
    python3-onnx); an unsigned IN converts as before, with no note."""
    forms = make_forms(ctx, SAMPLE, "convert")
    priv, pub = keys["ed"]
    d = ctx.path("convert-out")
    os.makedirs(d)
    for form in ("archive", "two")[:1 if REDUCED else 2]:
        src = forms[form]
        what = "convert of a signed " + form
        r = run([ctx.onnxz, "convert", src, os.path.join(d, form + "-plain.onnxz")])
        check(r.returncode == 0 and "signed" not in r.stderr, what + ": unsigned IN: " +
              r.stderr)
        subprocess.run([ctx.onnxz, "-q", "sign", src, "--key", priv], check=True)
        for out in (os.path.join(d, form + ".onnxz"), os.path.join(d, form + ".onnx")):
            r = run([ctx.onnxz, "convert", src, out])
            notes = [ln for ln in r.stderr.splitlines() if "signed" in ln]
            check(r.returncode == 0 and len(notes) == 1 and "is not" in notes[0]
                  and "--sign-key" in notes[0], what + " to " + out + ": note: " + r.stderr)
            if out.endswith(".onnxz"):
                with zipfile.ZipFile(out) as z:
                    check(SIG_ENTRY not in z.namelist(), what + ": OUT has no signature entry")
            else:
                check(not os.path.exists(out + ".sig"), what + ": OUT has no .sig")
            ctx.expect(what + " to " + out + ": not signed", "not_found", ["verify", out, pub])
            r = run([ctx.onnxz, "-q", "convert", "-f", src, out])
            check(r.returncode == 0 and r.stderr == "", what + ": -q: no note: " + r.stderr)
            r = run([ctx.onnxz, "convert", "-f", src, out, "--sign-key", keys["ec_enc"][0],
                     "--sign-passphrase-file", ctx.path("pass.txt")])
            check(r.returncode == 0 and "signed" not in r.stderr, what + " --sign-key: " +
                  r.stderr)
            check_bundle(ctx, what + " --sign-key " + out, out, keys["ec"][0], keys["ec"][1],
                         "ec")
            ctx.expect(what + " --sign-key: verifies", "ok", ["verify", out, keys["ec"][1]])
        r = run([ctx.onnxz, "convert", src, os.path.join(d, "x.onnxc"), "--sign-key", priv])
        check(r.returncode == 2 and "--sign-key" in r.stderr, what + ": to .onnxc: " + r.stderr)


def stopped(pid):
    """True once the process pid is stopped (ONNXZ_TEST_STOP raised SIGSTOP); a minute at
    most (under valgrind the editor takes seconds to get there)."""
    for _ in range(6000):
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return True
        time.sleep(0.01)
    return False


def resign_crash(ctx, keys):
    """G-40 with A-54: onnxz meta --key on a signed archive, stopped at each step of the
    in-place edit. Meanwhile a reader is refused as busy (A-58); killed there, the archive
    verifies (openssl-checked key, the manifest recomputed by zipfile) as the old signed
    one or the new signed one, never with a signature that does not match; a torn tail
    (killed while appending) is refused until the next edit rolls it back (A-56)."""
    import onnx
    priv, pub = keys["ed"]
    steps = ["journaled", "appending", "appended", "committed", "compacting", "compacted",
             "truncated"]
    if REDUCED:
        steps = ["appending", "appended", "compacting"]
    d = ctx.path("resign")
    os.makedirs(d)
    for step in steps:
        path = os.path.join(d, step + ".onnxz")
        subprocess.run([ctx.onnxz, "-q", "convert", SAMPLE, path], check=True)
        subprocess.run([ctx.onnxz, "-q", "sign", path, "--key", priv], check=True)
        env = dict(os.environ, ONNXZ_TEST_STOP=step)
        p = subprocess.Popen([ctx.onnxz, "-q", "meta", path, "--set", "k=new", "--key", priv],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            check(stopped(p.pid), step + ": the editor stops there")
            ctx.expect(step + ": a reader during the edit", "busy", ["verify", path, pub],
                       "being edited")
        finally:
            p.kill()
            p.wait()
        rc, out = ctx.osign_run("verify", path, pub)
        if step == "appending":
            check(rc not in (ST["ok"], ST["checksum"], ST["bad_key"]),
                  step + ": a torn tail is refused as such: %d %s" % (rc, out))
            r = run([ctx.onnxz, "-q", "meta", path, "--set", "k=again", "--key", priv])
            check(r.returncode == 0 and "rolled back" in r.stderr,
                  step + ": the next edit rolls it back: " + r.stderr)
            rc, out = ctx.osign_run("verify", path, pub)
        check(rc == ST["ok"], step + ": killed there, it verifies: %d %s" % (rc, out))
        with zipfile.ZipFile(path) as z:
            k = {x.key: x.value for x in
                 onnx.load_from_string(z.read("__MODEL_PROTO")).metadata_props}.get("k")
        check(k in (None, "new", "again"), step + ": the old model or the new: k=%r" % k)
        check_bundle(ctx, step + ": killed there", path, priv, pub, "ed25519")


def edits(ctx, keys):
    """onnxz meta on signed models (G-40): refused unless --key signs again or --unsign
    drops the signature; what it leaves checked by zipfile, python3-onnx and openssl."""
    forms = make_forms(ctx, SAMPLE, "edits")
    priv, pub = keys["ed"]
    for form in ("archive", "two")[:1 if REDUCED else 2]:
        path = forms[form]
        what = "meta on a signed " + form
        subprocess.run([ctx.onnxz, "-q", "sign", path, "--key", priv], check=True)
        before = sha256_file(path)
        r = run([ctx.onnxz, "meta", path, "--set", "k=1"])
        check(r.returncode == 1 and "is signed" in r.stderr and "--unsign" in r.stderr
              and "--key" in r.stderr and r.stderr.count("\n") == 1,
              what + ": refused in one line naming --key and --unsign: " + r.stderr)
        check(sha256_file(path) == before and props_of(path).get("k") is None,
              what + ": the refused edit changed nothing")
        r = run([ctx.onnxz, "meta", path, "--set", "k=1", "--key", priv, "--unsign"])
        check(r.returncode == 1 and "not both" in r.stderr, what + ": --key with --unsign: " +
              r.stderr)
        # signed again, with another key type, its passphrase from a file
        pf = ctx.path("pass.txt")
        with open(pf, "w") as f:
            f.write(PASS)
        r = run([ctx.onnxz, "meta", path, "--set", "k=2", "--key", keys["ec_enc"][0],
                 "--passphrase-file", pf])
        check(r.returncode == 0 and "signed again" in r.stderr, what + ": --key: " + r.stderr)
        check(props_of(path).get("k") == "2", what + ": --key: the edit is made")
        check_bundle(ctx, what + " --key", path, keys["ec"][0], keys["ec"][1], "ec")
        ctx.expect(what + ": --key: verifies", "ok", ["verify", path, keys["ec"][1]])
        ctx.expect(what + ": --key: the old key no longer", "bad_key", ["verify", path, pub])
        if form == "archive":
            r = run(["unzip", "-tq", path])
            check(r.returncode == 0, what + ": --key: unzip -t: " + r.stdout + r.stderr)
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
            check(names.count(SIG_ENTRY) == 1 and names[-2:] == [SIG_ENTRY, "__MODEL_PROTO"],
                  what + ": --key: one signature entry, before the model: %s" % names[-3:])
        # dropped
        r = run([ctx.onnxz, "meta", path, "--set", "k=3", "--unsign"])
        check(r.returncode == 0 and "unsigned" in r.stderr, what + ": --unsign: " + r.stderr)
        check(props_of(path).get("k") == "3", what + ": --unsign: the edit is made")
        if form == "archive":
            with zipfile.ZipFile(path) as z:
                check(SIG_ENTRY not in z.namelist() and z.testzip() is None,
                      what + ": --unsign: no signature entry, every CRC right")
            check(run(["unzip", "-tq", path]).returncode == 0, what + ": --unsign: unzip -t")
        else:
            check(not os.path.exists(path + ".sig"), what + ": --unsign: MODEL.sig removed")
        ctx.expect(what + ": --unsign: not signed", "not_found", ["verify", path, pub],
                   "is not signed")
        # an unsigned model: edited as before; --key signs it
        r = run([ctx.onnxz, "meta", path, "--set", "k=4"])
        check(r.returncode == 0, what + ": unsigned: edited: " + r.stderr)
        r = run([ctx.onnxz, "-q", "meta", path, "--set", "k=5", "--key", priv])
        check(r.returncode == 0, what + ": unsigned, --key: " + r.stderr)
        check_bundle(ctx, what + " unsigned, --key", path, priv, pub, "ed25519")
        ctx.expect(what + ": unsigned, --key: verifies", "ok", ["verify", path, pub])


def tensor_entries(path):
    """{tensor name: its entry's name and size} of an archive (python3-onnx reads the
    model's locations)."""
    import onnx
    with zipfile.ZipFile(path) as z:
        sizes = {i.filename: i.file_size for i in z.infolist()}
        m = onnx.ModelProto.FromString(z.read("__MODEL_PROTO"))
    out = {}
    for t in m.graph.initializer:
        loc = [e.value for e in t.external_data if e.key == "location"]
        if loc:
            out[t.name] = (loc[0], sizes[loc[0]])
    return out


def on_read(ctx, keys, forms):
    priv, pub = keys["ed"]
    d = ctx.path("onread")
    os.makedirs(d)
    src = os.path.join(d, "m.onnxz")
    shutil.copy(forms["archive"], src)
    rc, out = ctx.osign_run("sign", src, priv)
    check(rc == 0, "sign: " + out)
    ents = tensor_entries(src)
    names = sorted(ents, key=lambda n: -ents[n][1])
    big, small = names[0], names[1]
    rc, out = ctx.osign_run("read", src, pub, *names)
    check(rc == 0 and all("read %s " % n in out for n in names), "signed, every tensor: " + out)
    rc, out = ctx.osign_run("open", src, pub)
    check(rc == 0 and "opened" in out, "oz_open, signed: " + out)

    def copy(name):
        p = os.path.join(d, name + ".onnxz")
        shutil.copy(src, p)
        return p

    p = copy("tensor-byte")
    flip(p, data_offset(p, ents[big][0]) + 7)
    rc, out = ctx.osign_run("read", p, pub, small, big, "slice:" + big)
    check("opened" in out, "a changed tensor byte: open succeeds: " + out)
    check("read %s " % small in out, "a changed tensor byte: another tensor reads: " + out)
    check(("fail %s checksum" % big) in out and ("tensor '%s'" % big) in out and p in out and
          "has changed since it was signed" in out, "a changed tensor byte: its read fails: " + out)
    check(("fail slice:" not in out) and out.count("fail %s checksum" % big) == 2,
          "a changed tensor byte: a slice of it fails too: " + out)
    check(rc == ST["checksum"], "a changed tensor byte: status %d" % rc)
    ctx.expect("oz_open, a changed tensor byte", "checksum", ["open", p, pub],
               "entry '%s' has changed" % ents[big][0])

    p = copy("model")
    flip(p, data_offset(p, "__MODEL_PROTO") + 3)
    ctx.expect("a changed model byte: refused at open", "checksum", ["read", p, pub, small],
               "entry '__MODEL_PROTO' has changed")
    p = copy("added")
    replace_entry(p, None, None, add=("extra", b"x" * 100))
    ctx.expect("an added entry: refused at open", "inconsistent", ["read", p, pub],
               "entry 'extra' is not listed by the signed manifest")
    p = copy("removed")
    replace_entry(p, None, None, drop=(ents[small][0],))
    ctx.expect("a removed entry: refused at open", "not_found", ["read", p, pub],
               "entry '%s' is listed by the signed manifest but is missing" % ents[small][0])
    ctx.expect("unsigned: refused at open", "not_found", ["read", forms["archive"], pub],
               "is not signed")
    ctx.expect("oz_open, unsigned: refused", "not_found", ["open", forms["archive"], pub],
               "is not signed")
    ctx.expect("another key: refused at open", "bad_key", ["read", src, keys["ec"][1]],
               "another key")
    # the tool: --trust on get, info, convert
    r = run([ctx.onnxz, "get", src, small, "--trust", pub, "-o", os.path.join(d, "t.bin")])
    check(r.returncode == 0, "get --trust: " + r.stderr)
    r = run([ctx.onnxz, "get", os.path.join(d, "tensor-byte.onnxz"), big, "--trust", pub, "-o",
             os.path.join(d, "t2.bin")])
    check(r.returncode == 1 and ("tensor '%s'" % big) in r.stderr and
          "tensor-byte.onnxz" in r.stderr and not os.path.exists(os.path.join(d, "t2.bin")),
          "get --trust, the changed tensor: " + r.stderr)
    r = run([ctx.onnxz, "get", os.path.join(d, "tensor-byte.onnxz"), small, "--trust", pub,
             "-o", os.path.join(d, "t3.bin")])
    check(r.returncode == 0, "get --trust, another tensor: " + r.stderr)
    r = run([ctx.onnxz, "info", src, "--trust", pub])
    check(r.returncode == 0, "info --trust: " + r.stderr)
    r = run([ctx.onnxz, "info", forms["archive"], "--trust", pub])
    check(r.returncode == 1 and "is not signed" in r.stderr, "info --trust, unsigned: " + r.stderr)
    r = run([ctx.onnxz, "-q", "convert", src, os.path.join(d, "c.onnx"), "--trust", pub])
    check(r.returncode == 0, "convert --trust: " + r.stderr)
    r = run([ctx.onnxz, "-q", "convert", os.path.join(d, "model.onnxz"), os.path.join(d, "c2.onnx"),
             "--trust", pub])
    check(r.returncode == 1 and "'__MODEL_PROTO' has changed" in r.stderr and
          not os.path.exists(os.path.join(d, "c2.onnx")), "convert --trust, changed: " + r.stderr)
    # a local .onnx: every file hashed at open
    two = os.path.join(d, "two")
    shutil.copytree(os.path.dirname(forms["two"]), two)
    m = os.path.join(two, "m.onnx")
    rc, out = ctx.osign_run("sign", m, priv)
    check(rc == 0, "sign .onnx: " + out)
    rc, out = ctx.osign_run("read", m, pub, small)
    check(rc == 0 and "read %s " % small in out, ".onnx, signed: " + out)
    flip(os.path.join(two, "m.data"), 5)
    ctx.expect(".onnx, a changed data file: refused at open", "checksum", ["read", m, pub],
               "file 'm.data' has changed")
    ctx.expect("oz_open .onnx, a changed data file: refused", "checksum", ["open", m, pub],
               "file 'm.data' has changed")
    # the archive at a URL: what was read is checked, nothing else is fetched
    sys.path.insert(0, os.path.join(ROOT, "tests", "remote"))
    import nginx_env
    if not os.path.exists(nginx_env.NGINX):
        print("skipped: the URL case (no nginx)")
        return
    root = os.path.join(d, "www")
    os.makedirs(root)
    shutil.copy(src, os.path.join(root, "m.onnxz"))
    # a tensor changed with its CRC-32 made to match (zipfile rewrites it): only the
    # signed manifest tells
    forged = os.path.join(root, "t.onnxz")
    shutil.copy(src, forged)
    with zipfile.ZipFile(src) as z:
        data = bytearray(z.read(ents[big][0]))
    data[7] ^= 1
    replace_entry(forged, ents[big][0], bytes(data))
    sizes = {n: e[1] for n, e in ents.items()}
    with nginx_env.Nginx(root, os.path.join(d, "nginx")) as ng:
        mark = ng.mark()
        rc, out = ctx.osign_run("read", ng.url("m.onnxz"), pub)
        opening = sum(r["body_bytes_sent"] for r in ng.requests_since(mark))
        check(rc == 0, "URL: open: " + out)
        mark = ng.mark()
        rc, out = ctx.osign_run("read", ng.url("m.onnxz"), pub, small)
        sent = sum(r["body_bytes_sent"] for r in ng.requests_since(mark)) - opening
        check(rc == 0 and "read %s " % small in out, "URL: one tensor: " + out)
        whole = os.path.getsize(src)
        print("URL: open fetched %d bytes, reading %s (%d bytes) %d more, of %d" %
              (opening, small, sizes[small], sent, whole))
        check(sizes[small] <= sent <= sizes[small] + 4096,
              "URL: only the tensor read is fetched: %d of %d" % (sent, whole))
        rc, out = ctx.osign_run("read", ng.url("t.onnxz"), pub, small, big)
        check("read %s " % small in out and ("fail %s checksum" % big) in out and
              "t.onnxz" in out, "URL: the served tampered tensor caught: " + out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("area", choices=["sign", "sigstore", "nossl", "onread", "resign_crash"])
    ap.add_argument("--osign", required=True)
    ap.add_argument("--onnxz", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--node-modules")
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    ctx = Ctx(args)
    keys = make_keys(ctx)
    forms = make_forms(ctx, SAMPLE, "a")
    if args.area == "nossl":
        for form, path in forms.items():
            ctx.expect(form + ": sign without OpenSSL", "unsupported",
                       ["sign", path, keys["ed"][0]], "built without")
            ctx.expect(form + ": verify without OpenSSL", "unsupported",
                       ["verify", path, keys["ed"][1]], "built without")
        r = run([ctx.onnxz, "sign", forms["archive"], "--key", keys["ed"][0]])
        check(r.returncode == 1 and "built without" in r.stderr, "onnxz sign: " + r.stderr)
        print("all %d checks passed" % checks[0] if not failures else "%d failures" % len(failures))
        return 1 if failures else 0
    if args.area == "resign_crash":
        resign_crash(ctx, keys)
        print("all %d checks passed" % checks[0] if not failures else "%d failures" % len(failures))
        return 1 if failures else 0
    if args.area == "onread":
        on_read(ctx, keys, forms)
        print("all %d checks passed" % checks[0] if not failures else "%d failures" % len(failures))
        return 1 if failures else 0
    bundles = round_trips(ctx, keys, forms)
    if args.area == "sign":
        # another model (the sample with its first weight changed), signed with the same key
        import onnx
        from onnx import numpy_helper
        m = onnx.load(SAMPLE)
        w = numpy_helper.to_array(m.graph.initializer[0]).copy()
        w.flat[0] += 1
        m.graph.initializer[0].CopyFrom(numpy_helper.from_array(w, m.graph.initializer[0].name))
        other_src = ctx.path("other.onnx")
        onnx.save(m, other_src)
        other = make_forms(ctx, other_src, "b")["archive"]
        ctx.osign_run("sign", other, keys["ed"][0])
        tamper_archive(ctx, keys, forms, other)
        tamper_models(ctx, keys, forms)
        hostile(ctx, keys, forms)
        edits(ctx, keys)
        shown(ctx, keys)
        converted(ctx, keys)
    else:
        sigstore(ctx, args, bundles)
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("all %d checks passed" % checks[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
