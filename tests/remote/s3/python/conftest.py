"""Fixtures' environment of the package's s3:// tests (test_s3.py).

Under ASan (run_pytest.sh asan) the sanitizer runtime is preloaded into this interpreter;
the processes the tests start (the gate and the SDK in node, the onnxz tool with its own
copy) must not get it, as in python/tests/conftest.py; a Python they start does (PRELOAD).
"""
import os

PRELOAD = os.environ.pop("LD_PRELOAD", None)  # for a Python the tests start
