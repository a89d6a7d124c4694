#!/usr/bin/python3
"""The onnxz tool on hf:// URLs against a local emulation of the Hugging Face hub in
Debian's nginx (hub_env.py: the hub and a second server standing for its storage host),
with python3-onnx's reading of the same files on disk as the oracle
(spec/remote.md, "The Hugging Face hub").

    hub_test.py --onnxz PATH --work DIR

Exit 0 on pass, 1 on failure (every failed check is printed), 77 (ctest's skip) when the
tool was built without HTTP support or nginx or python3-onnx is missing.
"""

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nginx_env  # noqa: E402
from remote_test import SKIP, Context, NoHttp  # noqa: E402

try:
    import numpy
    import onnx
    from onnx import helper, numpy_helper
except ImportError:
    onnx = None

TOKEN = "hf_onnxzTestToken0123456789"
N_TENSORS, TENSOR = 8, 64 << 10  # a data file past the first request's 65 KiB tail


def make_model(work, value):
    """(model.onnx bytes, model.onnx_data bytes, {name: array}): N_TENSORS float32
    tensors whose values start at value, in one data file."""
    d = os.path.join(work, f"src{value}")
    os.makedirs(d, exist_ok=True)
    arrays = {f"w{i}": numpy.full(TENSOR // 4, value + i, numpy.float32) for i in range(N_TENSORS)}
    graph = helper.make_graph([], "g", [], [], [numpy_helper.from_array(a, n)
                                                for n, a in arrays.items()])
    onnx.save(helper.make_model(graph), os.path.join(d, "model.onnx"), save_as_external_data=True,
              location="model.onnx_data", size_threshold=0)
    with open(os.path.join(d, "model.onnx"), "rb") as f, \
            open(os.path.join(d, "model.onnx_data"), "rb") as g:
        return f.read(), g.read(), arrays, d


def env_for(hub, home, token=None, **more):
    """The tool's environment: the emulated hub, an empty HF_HOME, the token or none."""
    e = {"HF_ENDPOINT": hub.endpoint, "HF_HOME": home, "HF_TOKEN": token or "",
         "HUGGING_FACE_HUB_TOKEN": "", "HF_TOKEN_PATH": "", "XDG_CACHE_HOME": ""}
    e.update(more)
    return e


def run(ctx):
    work = ctx.work
    hub_env = __import__("hub_env")
    m1, d1, a1, src1 = make_model(work, 1)
    m2, d2, a2, _ = make_model(work, 100)
    home = os.path.join(work, "home")
    os.makedirs(home)
    arc = os.path.join(work, "model.onnxz")  # the same model as an archive, made locally
    ctx.ok(["convert", os.path.join(src1, "model.onnx"), arc], "the archive to publish")
    with open(arc, "rb") as f:
        a_bytes = f.read()
    with hub_env.Hub(os.path.join(work, "hub"), TOKEN) as hub:
        c1 = hub.commit({"model.onnx": m1, "model.onnx_data": d1, "onnx/model.onnx": m1,
                         "onnx/model.onnx_data": d1, "model.onnxz": a_bytes},
                        lfs={"model.onnx_data", "onnx/model.onnx_data", "model.onnxz"})
        c2 = hub.commit({"model.onnx": m2, "model.onnx_data": d2}, lfs={"model.onnx_data"})
        hub.publish("org/public", c1)
        hub.publish("org/private", c1, private=True)
        hub.publish("org/nocommit", c1, commit_header=False)
        pub, priv = "hf://org/public/model.onnx", "hf://org/private/model.onnx"
        tok = env_for(hub, home, TOKEN)

        # The resolve path, the 302 to the storage host, the token on the hub only.
        mark = hub.mark()
        out = ctx.ok(["get", priv, "w3"], "get w3 of a private repository", env=tok)
        ctx.check(out == a1["w3"].tobytes(), "get w3: the bytes python3-onnx reads on disk")
        hubs, stores = hub.hub_requests_since(mark), hub.storage_requests_since(mark)
        ctx.equal([r["request"].split()[1] for r in hubs],
                  ["/org/private/resolve/main/model.onnx",
                   f"/org/private/resolve/{c1}/model.onnx_data",
                   f"/org/private/resolve/{c1}/model.onnx_data"],
                  "get: the model at main, then its data file at the commit main was")
        ctx.equal([r["status"] for r in hubs], [206, 302, 302], "get: the hub's answers")
        ctx.check(all(r["authorization"] == "Bearer " + TOKEN for r in hubs),
                  f"get: the token went to the hub: {hubs}")
        ctx.check(stores and all(r["request"].startswith("GET /blobs/") for r in stores),
                  f"get: the data file's bytes from the storage host: {stores}")
        ctx.check(all(r["authorization"] == "" for r in stores),
                  f"get: no token reached the storage host: {stores}")

        # Every command reads the repository as the same files on disk.
        ctx.ok(["verify", priv], "verify", env=tok)
        local = os.path.join(src1, "model.onnx")
        for side, src in (("r", priv), ("l", local)):
            os.makedirs(ctx.path(side))
            e = tok if side == "r" else None
            ctx.ok(["convert", src, ctx.path(side, "a.onnxz")], f"convert {src} to .onnxz", env=e)
            ctx.ok(["convert", src, ctx.path(side, "b.onnx"), "--external-data", "b.data"],
                   f"convert {src} to two files", env=e)
        for name in ("a.onnxz", "b.onnx", "b.data"):
            with open(ctx.path("r", name), "rb") as f, open(ctx.path("l", name), "rb") as g:
                ctx.check(f.read() == g.read(), f"convert to {name}: the local conversion's bytes")
        sub = ctx.ok(["get", "hf://org/public/onnx/model.onnx", "w5"], "a model in a folder",
                     env=tok)
        ctx.check(sub == a1["w5"].tobytes(), "a model in a folder: its data file beside it")
        # An archive on the storage host: ls is its tail (one request to the hub, redirected),
        # get one more.
        az = "hf://org/private/model.onnxz"
        mark = hub.mark()
        listing = ctx.ok(["ls", az], "ls of an archive", env=tok)
        ctx.check(listing is not None and b"w7" in listing, f"ls of an archive: {listing!r}")
        ctx.equal(len(hub.hub_requests_since(mark)), 1, "ls of an archive: requests to the hub")
        ctx.check(ctx.ok(["get", az, "w6"], "get from an archive", env=tok) == a1["w6"].tobytes(),
                  "get from an archive: the bytes python3-onnx reads on disk")
        ctx.ok(["get", "hf://old-org/private/model.onnx", "w1"],
               "a renamed repository (a redirect on the hub itself keeps the token)", env=tok)

        # No token, a wrong one, a token file.
        no = env_for(hub, home)
        ctx.error(["info", priv], priv, "no token", r"^HTTP 401 \(GatedRepo\): the hub wants a "
                  r"token", env=no)
        ctx.error(["info", priv], priv, "a wrong token", r"^HTTP 401 .*refused the token given",
                  env=env_for(hub, home, "hf_wrong"))
        with open(os.path.join(home, "token"), "w") as f:
            f.write(TOKEN + "\n")
        ctx.ok(["info", priv], "the token file in HF_HOME", env=no)
        path = ctx.path("elsewhere-token")
        with open(path, "w") as f:
            f.write(TOKEN)
        os.unlink(os.path.join(home, "token"))
        ctx.ok(["info", priv], "HF_TOKEN_PATH", env=dict(no, HF_TOKEN_PATH=path))
        ctx.ok(["info", pub], "a public repository without a token", env=no)
        ctx.error(["info", "hf://org/public/nope.onnx"], "hf://org/public/nope.onnx",
                  "a file the repository lacks", r"^HTTP 404 \(EntryNotFound\)$", env=no)
        ctx.error(["info", "hf://org/nocommit/model.onnx"], "hf://org/nocommit/model.onnx",
                  "a server that is no hub", r"sent nothing for X-Repo-Commit", env=no)
        ctx.error(["info", "hf://org/public/a/../model.onnx"], "hf://org/public/a/../model.onnx",
                  "a path with ..", r"not a hub URL .*'\.\.' component", env=no)
        ctx.error(["info", "hf://org/public"], "hf://org/public", "no path",
                  r"not a hub URL", env=no)
        ctx.error(["convert", local, "hf://org/public/x.onnxz"], "hf://org/public/x.onnxz",
                  "a hub URL as an output", r"is a URL: onnxz writes local files only", env=no)

        # The revision: pinned at open, or named. main moves to c2 between two processes.
        hub.publish("org/public", c2)
        ctx.check(ctx.ok(["get", pub, "w2"], "after the push", env=no) == a2["w2"].tobytes(),
                  "after the push: main is the new commit")
        ctx.check(ctx.ok(["get", f"hf://org/public@{c1}/model.onnx", "w2"], "@commit", env=no)
                  == a1["w2"].tobytes(), "hf://org/public@COMMIT: that commit")
        ctx.error(["get", f"hf://org/public@{c2[:-1]}0/model.onnx", "w2"],
                  f"hf://org/public@{c2[:-1]}0/model.onnx", "an unknown commit", r"^HTTP 404",
                  env=no)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxz", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    why = nginx_env.available()
    if onnx is None:
        why = "python3-onnx is missing"
    if why:
        print(f"SKIP: {why}")
        return SKIP
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    ctx = Context(args)
    try:
        run(ctx)
    except NoHttp as e:
        print(f"SKIP: {e}")
        return SKIP
    for f in ctx.failures:
        print("FAIL", f)
    print(f"{len(ctx.failures)} failure(s)")
    return 1 if ctx.failures else 0


if __name__ == "__main__":
    sys.exit(main())
