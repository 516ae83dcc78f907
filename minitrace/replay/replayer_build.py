"""The compiled SMPI replayer (``minitrace/replay/native/replay.cpp``): SimGrid's replay at native speed.

SimGrid driven from Python must use thread contexts, about 6x slower than the raw contexts a
compiled program gets.  Set-up compiles ``replay.cpp`` against the ``libsimgrid`` the SimGrid
wheel ships (headers from SimGrid's source, cached by set-up) into the environment's
``libexec/``; :mod:`minitrace.replay` runs it as its child when it exists and falls back to the
Python bindings otherwise.  ``python -m minitrace.replay.replayer_build build --include DIR`` builds it;
``headers --sdist SIMGRID.tar.gz --out DIR`` makes that DIR from SimGrid's source archive when
the wheel was built elsewhere.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from .libsimgrid import LIBRARY, library_dir

SOURCE = Path(__file__).with_name("native") / "replay.cpp"
#: Where set-up (and ``build``) puts the replayer in the environment (override:
#: ``MINITRACE_REPLAYER``), and where ``pip install`` puts it in the package when it finds
#: SimGrid's headers (setup.py, ``headers_for_install``).
INSTALLED = Path(sys.prefix) / "libexec" / "minitrace-replay"
PACKAGED = Path(__file__).with_name("bin") / "minitrace-replay"
SIMGRID_VERSION = "4.1"


def binary() -> Path | None:
    """The native replayer to run, or None when it is not built (use the Python path)."""
    env = os.environ.get("MINITRACE_REPLAYER")
    if env is not None:
        return Path(env) if env and os.access(env, os.X_OK) else None
    return next((p for p in (INSTALLED, PACKAGED) if os.access(p, os.X_OK)), None)


def headers_for_install() -> Path | None:
    """SimGrid's headers for building the replayer at install time: ``MINITRACE_SIMGRID_INCLUDE``
    (empty: do not build), else those set-up caches (``MINITRACE_CACHE``, default
    ``~/.cache/minitrace``), when they hold the generated ``simgrid/config.h``."""
    env = os.environ.get("MINITRACE_SIMGRID_INCLUDE")
    if env is not None:
        return Path(env) if env else None
    cache = os.environ.get("MINITRACE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "minitrace")
    d = Path(cache) / f"simgrid-{SIMGRID_VERSION}-include"
    return d if (d / "simgrid" / "config.h").exists() else None


def build(include: Path, out: Path = INSTALLED) -> Path:
    """Compile the replayer against the wheel's libsimgrid and SimGrid's headers in ``include``
    (SimGrid's ``include/`` plus the two headers its cmake generates: ``simgrid/config.h`` and
    ``simgrid/version.h``)."""
    lib = library_dir()
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


#: What SimGrid's cmake writes into the two generated headers for the wheel set-up builds
#: (``setup.py --enable-smpi``: mallocators and model checking on, no ns-3, Eigen3 or JSON).
_GENERATED = {
    "simgrid/config.h": {"#cmakedefine01 SIMGRID_HAVE_MALLOCATOR": "#define SIMGRID_HAVE_MALLOCATOR 1",
                         "#cmakedefine01 SIMGRID_HAVE_MC": "#define SIMGRID_HAVE_MC 1",
                         "#cmakedefine01 SIMGRID_HAVE_NS3": "#define SIMGRID_HAVE_NS3 0",
                         "#cmakedefine NS3_MINOR_VERSION @NS3_MINOR_VERSION@": "",
                         "#cmakedefine01 SIMGRID_HAVE_EIGEN3": "#define SIMGRID_HAVE_EIGEN3 0",
                         "#cmakedefine01 SIMGRID_HAVE_JSON": "#define SIMGRID_HAVE_JSON 0"},
    "simgrid/version.h": {"@GIT_VERSION@": "none, release version", "@SIMGRID_VERSION_MAJOR@": "4",
                          "@SIMGRID_VERSION_MINOR@": "1", "@SIMGRID_VERSION_PATCH@": "0",
                          "@CMAKE_INSTALL_PREFIX@": "/usr/local",
                          "@SIMGRID_VERSION_STRING@": "SimGrid version 4.1"},
}


def headers(sdist: Path, out: Path) -> Path:
    """SimGrid's public headers from its 4.1 source archive, with the two cmake-generated ones
    written as the wheel's build writes them."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        root = tar.getnames()[0].split("/")[0]
        members = [m for m in tar.getmembers() if m.name.startswith(f"{root}/include/")]
        tar.extractall(tmp, members=members, filter="data")
    inc = tmp / root / "include"
    for name, subst in _GENERATED.items():
        text = (inc / f"{name}.in").read_text()
        for k, v in subst.items():
            if k not in text:
                raise RuntimeError(f"{sdist}: {name}.in is not SimGrid 4.1's (no {k!r})")
            text = text.replace(k, v)
        (inc / name).write_text(text)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(inc, out)
    shutil.rmtree(tmp)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m minitrace.replay.replayer_build",
                                description="build minitrace's native SMPI replayer")
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("build", help="compile the replayer")
    b.add_argument("--include", required=True, type=Path,
                   help="SimGrid's headers (include/ of its source plus the generated ones)")
    b.add_argument("-o", "--output", type=Path, default=INSTALLED, help=f"default {INSTALLED}")
    h = sub.add_parser("headers", help="SimGrid's headers from its source archive")
    h.add_argument("--sdist", required=True, type=Path, help="simgrid-4.1.tar.gz")
    h.add_argument("--out", required=True, type=Path, help="directory to create")
    args = p.parse_args(argv)
    try:
        print(build(args.include, args.output) if args.what == "build"
              else headers(args.sdist, args.out))
    except (RuntimeError, OSError, tarfile.TarError, subprocess.CalledProcessError) as e:
        print(f"minitrace: cannot build the native replayer: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
