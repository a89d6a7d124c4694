"""The package's version: the one place it is written. The build backend
(python/onnxz_build.py) reads it for the wheel's metadata; onnxz.__version__ is it."""
__version__ = "0.1.0"
