"""What the hostile scenes (scene_*.py) share: their command line and how cases run.

    scene_X.py [--only REGEX] ONNXZ_EXE WORKDIR

Each case is a function that raises AssertionError when it fails. WORKDIR is made afresh
and is the working directory while the cases run; it is removed when all passed.
"""

import argparse
import os
import re
import shutil


def run_scenes(cases, configure):
    """Parses the command line, calls configure(exe, workdir) with absolute paths, runs
    the cases whose names match --only; returns the exit status (0: all passed)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("exe")
    ap.add_argument("work")
    a = ap.parse_args()
    exe, work = os.path.abspath(a.exe), os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    os.chdir(work)
    configure(exe, work)
    failed = 0
    for case in cases:
        if not re.search(a.only, case.__name__):
            continue
        print("%s:" % case.__name__)
        try:
            case()
            print("  ok")
        except AssertionError as e:
            print("  FAILED: %s" % e)
            failed += 1
    os.chdir("/")
    if not failed:
        shutil.rmtree(work, ignore_errors=True)
    print("all passed" if not failed else "%d failed" % failed)
    return 1 if failed else 0
