"""onnxz.sign and onnxz.verify_signature (spec/signing.md): every form, both key types
from `openssl genpkey`, the DSSE signature checked by the openssl command line, the
manifest by zipfile and hashlib, and what a tampered model raises."""
import base64
import hashlib
import json
import os
import subprocess
import zipfile

import numpy as np
import pytest

import onnxz
from conftest import make_model

PAYLOAD_TYPE = b"application/vnd.in-toto+json"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    out = {}
    for name, spec in (("ed", ["-algorithm", "ed25519"]),
                       ("ec", ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])):
        priv, pub = str(d / (name + ".pem")), str(d / (name + ".pub.pem"))
        subprocess.run(["openssl", "genpkey"] + spec + ["-out", priv], check=True,
                       capture_output=True)
        subprocess.run(["openssl", "pkey", "-in", priv, "-pubout", "-out", pub], check=True,
                       capture_output=True)
        out[name] = (priv, pub)
    enc = str(d / "enc.pem")
    subprocess.run(["openssl", "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", out["ec"][0],
                    "-out", enc, "-passout", "pass:secret"], check=True, capture_output=True)
    out["enc"] = (enc, out["ec"][1])
    return out


def forms(tmp_path):
    m = make_model(n_weights=3, size=64)
    archive = str(tmp_path / "m.onnxz")
    onnxz.save(m, archive)
    single = str(tmp_path / "single.onnx")
    onnxz.save(m, single)
    two = str(tmp_path / "two.onnx")
    onnxz.save(m, two, external_data="two.data")
    return {"archive": archive, "single": single, "two": two}


def bundle(path):
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read("__ONNXZ_SIGNATURE"))
    with open(path + ".sig") as f:
        return json.load(f)


def openssl_verifies(tmp_path, pub, kind, b):
    env = b["dsseEnvelope"]
    payload = base64.b64decode(env["payload"])
    pae = b"DSSEv1 %d %s %d " % (len(PAYLOAD_TYPE), PAYLOAD_TYPE, len(payload)) + payload
    m, s = tmp_path / "pae", tmp_path / "sig"
    m.write_bytes(pae)
    s.write_bytes(base64.b64decode(env["signatures"][0]["sig"]))
    if kind == "ed25519":
        cmd = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", pub, "-rawin", "-in",
               str(m), "-sigfile", str(s)]
    else:
        cmd = ["openssl", "dgst", "-sha256", "-verify", pub, "-signature", str(s), str(m)]
    return subprocess.run(cmd, capture_output=True).returncode == 0


@pytest.mark.parametrize("form", ["archive", "single", "two"])
@pytest.mark.parametrize("k", ["ed", "ec"])
def test_sign_verify(tmp_path, keys, form, k):
    path = forms(tmp_path)[form]
    priv, pub = keys[k]
    r = onnxz.sign(path, priv)
    assert r["key_type"] == ("ed25519" if k == "ed" else "ecdsa-p256")
    with open(pub, "rb") as f:
        assert r["key_fingerprint"] == hashlib.sha256(f.read()).hexdigest()
    assert r["in_archive"] == (form == "archive")
    assert onnxz.verify_signature(path, pub) == r
    b = bundle(path)
    assert openssl_verifies(tmp_path, pub, r["key_type"], b)
    statement = json.loads(base64.b64decode(b["dsseEnvelope"]["payload"]))
    listed = {x["name"]: x["digest"] for x in statement["predicate"]["resources"]}
    if form == "archive":
        with zipfile.ZipFile(path) as z:
            want = {n: hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist()
                    if n != "__ONNXZ_SIGNATURE"}
    else:
        files = [os.path.basename(path)] + (["two.data"] if form == "two" else [])
        want = {n: hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in files}
    assert listed == want
    other = keys["ec" if k == "ed" else "ed"][1]
    with pytest.raises(onnxz.Error, match="signed by another key"):
        onnxz.verify_signature(path, other)
    # the model still loads as it did
    assert onnxz.load(path).graph.initializer[0].name == "w0"


def test_tampered(tmp_path, keys):
    f = forms(tmp_path)
    priv, pub = keys["ed"]
    onnxz.sign(f["two"], priv)
    data = tmp_path / "two.data"
    b = bytearray(data.read_bytes())
    b[100] ^= 1
    data.write_bytes(bytes(b))
    with pytest.raises(onnxz.Error, match="file 'two.data' has changed"):
        onnxz.verify_signature(f["two"], pub)
    with pytest.raises(onnxz.Error, match="is not signed"):
        onnxz.verify_signature(f["single"], pub)


def test_encrypted_key(tmp_path, keys):
    path = forms(tmp_path)["archive"]
    with pytest.raises(onnxz.Error, match="encrypted and no passphrase"):
        onnxz.sign(path, keys["enc"][0])
    with pytest.raises(onnxz.Error, match="wrong passphrase"):
        onnxz.sign(path, keys["enc"][0], passphrase="nope")
    onnxz.sign(path, keys["enc"][0], passphrase=b"secret")
    assert onnxz.verify_signature(path, keys["enc"][1])["key_type"] == "ecdsa-p256"


def test_signature_path(tmp_path, keys):
    path = forms(tmp_path)["single"]
    sig = str(tmp_path / "elsewhere.json")
    r = onnxz.sign(path, keys["ed"][0], signature=sig)
    assert r["location"] == sig and os.path.exists(sig)
    assert onnxz.verify_signature(path, keys["ed"][1], signature=sig)["parts"] == 1


def test_file_verify_trust(tmp_path, keys):
    f = forms(tmp_path)
    onnxz.sign(f["archive"], keys["ed"][0])
    with onnxz.open(f["archive"]) as fh:
        assert fh.verify() is None
        r = fh.verify(trust=keys["ed"][1])
        assert r["key_type"] == "ed25519" and r["in_archive"]
        with pytest.raises(onnxz.Error, match="signed by another key"):
            fh.verify(trust=keys["ec"][1])
    with onnxz.open(f["two"]) as fh:
        with pytest.raises(onnxz.Error, match="is not signed"):
            fh.verify(trust=keys["ed"][1])


@pytest.mark.parametrize("form", ["archive", "two"])
def test_meta_of_signed(tmp_path, keys, form):
    """onnxz.meta on a signed model (G-40): refused, or signed again (sign_key), or the
    signature dropped (unsign); checked by zipfile, openssl and verify_signature."""
    path = forms(tmp_path)[form]
    priv, pub = keys["ed"]
    onnxz.sign(path, priv)
    with open(path, "rb") as f:
        before = f.read()
    with pytest.raises(onnxz.Error, match="is signed.*--unsign") as e:
        onnxz.meta(path, set={"k": "1"})
    assert e.value.status == "unsupported"
    with open(path, "rb") as f:
        assert f.read() == before
    with pytest.raises(onnxz.Error, match="not both"):
        onnxz.meta(path, set={"k": "1"}, sign_key=priv, unsign=True)
    enc, enc_pub = keys["enc"]
    out = onnxz.meta(path, set={"k": "2"}, sign_key=enc, passphrase="secret")
    assert {"key": "k", "value": "2"} in out["metadata_props"]
    assert openssl_verifies(tmp_path, enc_pub, "ecdsa-p256", bundle(path))
    assert onnxz.verify_signature(path, enc_pub)["key_type"] == "ecdsa-p256"
    with pytest.raises(onnxz.Error):
        onnxz.verify_signature(path, pub)
    onnxz.meta(path, set={"k": "3"}, unsign=True)
    if form == "archive":
        with zipfile.ZipFile(path) as z:
            assert "__ONNXZ_SIGNATURE" not in z.namelist() and z.testzip() is None
    else:
        assert not os.path.exists(path + ".sig")
    with pytest.raises(onnxz.Error, match="is not signed"):
        onnxz.verify_signature(path, pub)
    assert onnxz.meta(path)["metadata_props"][-1] == {"key": "k", "value": "3"}


def _entry_data_offset(path, name):
    with zipfile.ZipFile(path) as z:
        i = z.getinfo(name)
    with open(path, "rb") as f:
        f.seek(i.header_offset + 26)
        n, e = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
    return i.header_offset + 30 + n + e


def test_trust_on_read(tmp_path, keys):
    """spec/signing.md G-50..G-55: open(trust=) checks each tensor as it is first read,
    load(trust=) and convert(trust=) the whole signature first."""
    f = forms(tmp_path)
    priv, pub = keys["ed"]
    onnxz.sign(f["archive"], priv)
    with onnxz.open(f["archive"], trust=pub) as fh:
        assert all(fh[n].size for n in fh.names)
    assert len(onnxz.load(f["archive"], trust=pub).graph.initializer) == 3
    with pytest.warns(onnxz.UnsignedWarning):  # out.onnx is not signed (G-42)
        onnxz.convert(f["archive"], str(tmp_path / "out.onnx"), trust=pub)
    # one tensor byte changed in place: the open and the other tensors are fine
    with zipfile.ZipFile(f["archive"]) as z:
        entries = [n for n in z.namelist() if not n.startswith("__")]
    bad = entries[0]
    at = _entry_data_offset(f["archive"], bad) + 5
    with open(f["archive"], "r+b") as out:
        out.seek(at)
        b = out.read(1)
        out.seek(at)
        out.write(bytes([b[0] ^ 1]))
    with onnxz.open(f["archive"], trust=pub) as fh:
        for n in fh.names:
            if n != bad:
                assert fh[n].size
        with pytest.raises(onnxz.Error, match="tensor '%s' .*has changed since it was "
                           "signed" % bad) as e:
            fh[bad]
        assert "m.onnxz" in str(e.value)
        # a slice, read_into and read_into_many of it: its whole entry checked first (G-52)
        with pytest.raises(onnxz.Error, match="has changed since it was signed"):
            fh.get_slice(bad)[0:1]
        buf = np.empty(fh.get_slice(bad).shape, np.float32)
        with pytest.raises(onnxz.Error, match="has changed since it was signed"):
            fh.read_into(bad, buf)
        with pytest.raises(onnxz.Error, match="has changed since it was signed"):
            fh.read_into_many({bad: buf}, num_threads=2)
        good = [n for n in fh.names if n != bad][0]
        out = np.empty(fh.get_slice(good).shape, np.float32)
        assert fh.read_into_many({good: out}, num_threads=2) == out.nbytes
        assert np.array_equal(out, fh[good])
    with pytest.raises(onnxz.Error, match="entry '%s' has changed" % bad):
        onnxz.load(f["archive"], trust=pub)
    with pytest.raises(onnxz.Error, match="entry '%s' has changed" % bad):
        onnxz.convert(f["archive"], str(tmp_path / "out2.onnx"), trust=pub)
    assert not os.path.exists(tmp_path / "out2.onnx")
    # unsigned, or another key: refused at open
    with pytest.raises(onnxz.Error, match="is not signed"):
        onnxz.open(f["single"], trust=pub)
    with pytest.raises(onnxz.Error, match="is not signed"):
        onnxz.load(f["single"], trust=pub)
    with pytest.raises(onnxz.Error, match="signed by another key"):
        onnxz.open(f["archive"], trust=keys["ec"][1])
    # a .onnx: its files hashed at open
    onnxz.sign(f["two"], priv)
    with onnxz.open(f["two"], trust=pub) as fh:
        assert all(fh[n].size for n in fh.names)
    data = tmp_path / "two.data"
    b = bytearray(data.read_bytes())
    b[100] ^= 1
    data.write_bytes(bytes(b))
    with pytest.raises(onnxz.Error, match="file 'two.data' has changed"):
        onnxz.open(f["two"], trust=pub)
    with pytest.raises(onnxz.Error, match="file 'two.data' has changed"):
        onnxz.load(f["two"], trust=pub)


@pytest.mark.parametrize("form", ["archive", "two"])
def test_info_of_signed(tmp_path, keys, form):
    """File.info() names the signature's key and what it covers (G-41); an unsigned
    model's report has no signature key at all."""
    path = forms(tmp_path)[form]
    with onnxz.open(path) as f:
        assert "signature" not in f.info()
    priv, pub = keys["ec"]
    onnxz.sign(path, priv)
    b = bundle(path)
    n = len(json.loads(base64.b64decode(b["dsseEnvelope"]["payload"]))["predicate"]["resources"])
    with open(pub, "rb") as f:
        fp = hashlib.sha256(f.read()).hexdigest()
    with onnxz.open(path) as f:
        sig = f.info()["signature"]
    assert sig == {"location": "__ONNXZ_SIGNATURE" if form == "archive" else path + ".sig",
                   "key_fingerprint": fp, "parts": n, "verified": False, "problem": None}
    assert n == (len(zipfile.ZipFile(path).namelist()) - 1 if form == "archive" else 2)


@pytest.mark.parametrize("form", ["archive", "two"])
def test_convert_of_signed(tmp_path, keys, form):
    """convert() of a signed model (G-42): an UnsignedWarning and an unsigned dst, or dst
    signed with sign_key (openssl verifies it); an unsigned src: no warning."""
    import warnings
    path = forms(tmp_path)[form]
    priv, pub = keys["ed"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        onnxz.convert(path, str(tmp_path / "plain.onnxz"))
    onnxz.sign(path, priv)
    out = str(tmp_path / "out.onnxz")
    with pytest.warns(onnxz.UnsignedWarning, match="is not"):
        onnxz.convert(path, out)
    with pytest.raises(onnxz.Error, match="is not signed"):
        onnxz.verify_signature(out, pub)
    out2 = str(tmp_path / "out2.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        onnxz.convert(path, out2, sign_key=keys["enc"][0], sign_passphrase="secret")
    assert onnxz.verify_signature(out2, keys["enc"][1])["parts"] == 1
    assert openssl_verifies(tmp_path, keys["enc"][1], "ecdsa-p256", bundle(out2))
