"""The compiled SMPI replayer (``minitrace/native/replay.cpp``): SimGrid's replay at native speed.

SimGrid driven from Python must use thread contexts, about 6x slower than the raw contexts a
compiled program gets.  Set-up compiles ``replay.cpp`` against the ``libsimgrid`` the SimGrid
wheel ships (headers from SimGrid's source, cached by set-up) into the environment's
``libexec/``; :mod:`minitrace.replay` runs it as its child when it exists and falls back to the
Python bindings otherwise.  ``python -m minitrace.replay_native --include DIR`` builds it.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

SOURCE = Path(__file__).with_name("native") / "replay.cpp"
#: Where the built replayer lives in the environment (override: ``MINITRACE_REPLAYER``).
INSTALLED = Path(sys.prefix) / "libexec" / "minitrace-replay"
LIBRARY = "libsimgrid.so.4.1"


def simgrid_library() -> Path | None:
    """Directory holding the SimGrid wheel's ``libsimgrid.so.4.1``, or None."""
    paths = sysconfig.get_paths()
    for d in dict.fromkeys([paths["platlib"], paths["purelib"], *sys.path]):
        if d and os.path.exists(os.path.join(d, LIBRARY)):
            return Path(d)
    return None


def binary() -> Path | None:
    """The native replayer to run, or None when it is not built (use the Python path)."""
    env = os.environ.get("MINITRACE_REPLAYER")
    if env is not None:
        return Path(env) if env and os.access(env, os.X_OK) else None
    return INSTALLED if os.access(INSTALLED, os.X_OK) else None


def build(include: Path, out: Path = INSTALLED) -> Path:
    """Compile the replayer against the wheel's libsimgrid and SimGrid's headers in ``include``
    (SimGrid's ``include/`` plus the two headers its cmake generates: ``simgrid/config.h`` and
    ``simgrid/version.h``)."""
    lib = simgrid_library()
    if lib is None:
        raise RuntimeError(f"{LIBRARY} not found: install the SimGrid wheel first")
    if not (include / "simgrid" / "config.h").exists():
        raise RuntimeError(f"{include}: no simgrid/config.h (SimGrid's generated headers)")
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    # The wheel ships only the versioned name: link it by path, find it again through the rpath.
    cmd = [cxx, "-std=c++17", "-O2", "-I", str(include), str(SOURCE), "-o", str(tmp),
           str(lib / LIBRARY), f"-Wl,-rpath,{lib}"]
    subprocess.run(cmd, check=True)
    os.replace(tmp, out)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m minitrace.replay_native",
                                description="build minitrace's native SMPI replayer")
    p.add_argument("--include", required=True, type=Path,
                   help="SimGrid's headers (include/ of its source plus the generated ones)")
    p.add_argument("-o", "--output", type=Path, default=INSTALLED, help=f"default {INSTALLED}")
    args = p.parse_args(argv)
    try:
        print(build(args.include, args.output))
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"minitrace: cannot build the native replayer: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
