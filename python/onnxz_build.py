"""A PEP 517 build backend for the onnxz package that needs nothing from PyPI.

It builds libonnxcore and libonnxz as static, position-independent libraries with CMake
(from the repository this folder lives in), compiles the extension src/_onnxz.c with the C
compiler Python was built with, and writes the wheel (a ZIP with METADATA, WHEEL and
RECORD) with zipfile. Debian 12 has everything it needs: cmake, gcc, python3-dev, zlib1g-dev,
libssl-dev, and libcurl4-openssl-dev when the libraries read URLs.

Environment:
  ONNXZ_PREBUILT=DIR  link the static libraries of an existing CMake build of the repository
                      (DIR/libonnxcore/libonnxcore.a, DIR/libonnxz/libonnxz.a) instead of
                      building them (the test suite does, with its own build).
  ONNXZ_SANITIZE=1    compile and link the extension with -fsanitize=address,undefined (for a
                      build whose libraries were built with -DONNXZ_SANITIZE=ON; run Python
                      with the ASan runtime in LD_PRELOAD).
  ONNXZ_CC=CC         the C compiler (default: the one Python was built with); with
                      ONNXZ_SANITIZE, the one the libraries were built with.
  ONNXZ_BUILD_JOBS=N  parallel jobs for CMake (default 2).
  ONNXZ_SKIP_DEPENDENCY_CHECK=1  do not require numpy and onnx to be importable already
                      (pip is to fetch them from an index).
"""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NAME = "onnxz"


def _version():
    """onnxz/_version.py's __version__, the one place the version is written."""
    with open(os.path.join(HERE, NAME, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    return m.group(1)


def _run(cmd, **kw):
    print("onnxz_build:", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)


def _cache_value(build_dir, key):
    try:
        with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def _libraries(tmp):
    """The build directory holding libonnxcore.a and libonnxz.a, built if need be."""
    build = os.environ.get("ONNXZ_PREBUILT")
    if not build and not os.path.isfile(os.path.join(ROOT, "libonnxcore", "CMakeLists.txt")):
        raise RuntimeError(f"onnxz_build: {ROOT} is not the onnxz repository: build from its "
                           "python/ folder in place (pip install ./python), not a copy")
    if not build:
        build = os.path.join(tmp, "cmake")
        jobs = os.environ.get("ONNXZ_BUILD_JOBS", "2")
        _run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
              "-DONNXZ_BUILD_TESTS=OFF"], stdout=subprocess.DEVNULL)
        _run(["cmake", "--build", build, "-j", jobs, "--target", "onnxcore_static",
              "onnxz_lib_static"])
    for lib in ("libonnxcore/libonnxcore.a", "libonnxz/libonnxz.a"):
        if not os.path.isfile(os.path.join(build, lib)):
            raise RuntimeError(f"onnxz_build: {os.path.join(build, lib)} is missing")
    return build


def _compile_extension(tmp):
    build = _libraries(tmp)
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    out = os.path.join(tmp, "_onnxz" + suffix)
    cc = (os.environ.get("ONNXZ_CC") or sysconfig.get_config_var("CC") or "cc").split()
    flags = ["-std=c11", "-O2", "-g", "-fPIC", "-fvisibility=hidden", "-Wall", "-Wextra",
             "-D_POSIX_C_SOURCE=200809L", "-D_FILE_OFFSET_BITS=64",
             "-DONNXZ_EXPERIMENTAL",  # built with the libraries of its own tree (docs/api.md)
             "-I" + sysconfig.get_paths()["include"],
             "-I" + os.path.join(ROOT, "libonnxcore", "include"),
             "-I" + os.path.join(ROOT, "libonnxz", "include"),
             "-I" + os.path.join(ROOT, "libonnxcore", "private")]  # fault.c: oc__map_observe
    sanitize = []
    if os.environ.get("ONNXZ_SANITIZE") == "1":
        sanitize = ["-fsanitize=address,undefined"]
        if "clang" in subprocess.run(cc + ["--version"], capture_output=True, text=True).stdout:
            sanitize.append("-shared-libasan")  # the runtime Python gets in LD_PRELOAD
        flags += sanitize + ["-fno-omit-frame-pointer"]
    libs = [os.path.join(build, "libonnxz", "libonnxz.a"),
            os.path.join(build, "libonnxcore", "libonnxcore.a"), "-lz"]
    if _cache_value(build, "ONNXZ_WITH_OPENSSL") not in ("OFF", "0", "FALSE", "NO"):
        libs.append("-lcrypto")
    if _cache_value(build, "ONNXZ_HAVE_CURL") == "ON":  # URLs (libcurl4-openssl-dev)
        libs.append("-lcurl")
    libs.append("-lpthread")
    # The libraries' symbols stay inside the extension (--exclude-libs): another copy
    # loaded in the same process (a ctypes user) never binds to ours.
    _run(cc + flags + ["-shared", "-o", out, os.path.join(HERE, "src", "_onnxz.c"),
                       os.path.join(HERE, "src", "fault.c")] + libs
         + ["-Wl,--exclude-libs,ALL"] + sanitize)
    return out


def _tag():
    impl = "cp%d%d" % sys.version_info[:2]
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return impl, impl, plat


def _metadata(version):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
            "Summary: ONNX models in every form: onnx.load/onnx.save and zero-copy numpy "
            "views of .onnxz archives\nRequires-Python: >=3.10\nRequires-Dist: numpy\n"
            "Requires-Dist: onnx\n")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}\n"


# ---- what the build and the package need, checked before anything is built ----------

def _importable(module):
    """Whether the Python being installed into imports module outside pip's isolated build
    environment (which hides the venv's site-packages: PYTHONPATH, PYTHONNOUSERSITE)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE")}
    return subprocess.run([sys.executable, "-c", f"import {module}"], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def _check_prerequisites():
    """Fails at once, saying what is missing and how to get it on Debian 12, rather than
    after a minute of building (the C toolchain) or with pip's "No matching distribution
    found for numpy" (an interpreter that does not see Debian's numpy and onnx, such as a
    pyenv `python3` first on PATH, under pip install --no-index)."""
    problems = []
    tools = [t for t in ("cmake", "cc") if shutil.which(t) is None]
    if tools:
        problems.append(f"{' and '.join(tools)} not found: sudo apt-get install cmake gcc "
                        "zlib1g-dev libssl-dev libcurl4-openssl-dev")
    if not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        problems.append(f"Python.h of {sys.executable} not found: sudo apt-get install "
                        "python3-dev (for Debian's Python)")
    if os.environ.get("ONNXZ_SKIP_DEPENDENCY_CHECK") != "1":
        missing = [m for m in ("numpy", "onnx") if not _importable(m)]
        if missing:
            problems.append(
                f"{sys.executable} (Python {sys.version.split()[0]}, {sys.base_prefix}) cannot "
                f"import {', '.join(missing)}, which onnxz needs. On Debian 12: sudo apt-get "
                "install python3-numpy python3-onnx, and make the venv with Debian's Python, "
                "named in full: /usr/bin/python3 -m venv --system-site-packages ~/venv "
                "(set ONNXZ_SKIP_DEPENDENCY_CHECK=1 to let pip fetch them from an index instead)")
    if problems:  # one message, no traceback: pip prints the hook's output as it is
        print("onnxz_build: cannot build onnxz:\n  - " + "\n  - ".join(problems), file=sys.stderr)
        raise SystemExit(1)


# ---- PEP 517 hooks ----------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    _check_prerequisites()
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    py, abi, plat = _tag()
    dist_info = f"{NAME}-{version}.dist-info"
    wheel_name = f"{NAME}-{version}-{py}-{abi}-{plat}.whl"
    tmp = tempfile.mkdtemp(prefix="onnxz-build-")
    try:
        ext = _compile_extension(tmp)
        files = []
        pkg = os.path.join(HERE, NAME)
        for name in sorted(os.listdir(pkg)):
            if name.endswith((".py", ".pyi", ".typed")):
                with open(os.path.join(pkg, name), "rb") as f:
                    files.append((f"{NAME}/{name}", f.read()))
        with open(ext, "rb") as f:
            files.append((f"{NAME}/{os.path.basename(ext)}", f.read()))
        files.append((f"{dist_info}/METADATA", _metadata(version).encode()))
        files.append((f"{dist_info}/WHEEL",
                      (f"Wheel-Version: 1.0\nGenerator: onnxz_build\nRoot-Is-Purelib: false\n"
                       f"Tag: {py}-{abi}-{plat}\n").encode()))
        record = "".join(_record_line(n, d) for n, d in files) + f"{dist_info}/RECORD,,\n"
        os.makedirs(wheel_directory, exist_ok=True)
        path = os.path.join(wheel_directory, wheel_name)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for n, d in files:
                z.writestr(n, d)
            z.writestr(f"{dist_info}/RECORD", record)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return wheel_name


def build_sdist(sdist_directory, config_settings=None):
    raise NotImplementedError("onnxz: no sdist; install from the repository's python/ folder")
