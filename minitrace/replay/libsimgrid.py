"""Where the SimGrid wheel leaves ``libsimgrid.so.4.1`` (beside its Python module, where the
dynamic loader does not look), found in one place for the compiled replayer's build (it links
it by path), the bindings' child (it loads it before ``import simgrid``) and the benchmarks."""
from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

LIBRARY = "libsimgrid.so.4.1"


def library_dir() -> Path | None:
    """Directory holding the SimGrid wheel's ``libsimgrid.so.4.1``, or None."""
    paths = sysconfig.get_paths()
    for d in dict.fromkeys([paths["platlib"], paths["purelib"], *sys.path]):
        if d and os.path.exists(os.path.join(d, LIBRARY)):
            return Path(d)
    return None


def load_simgrid():
    """SimGrid's Python module, its library loaded first, globally (ImportError: not
    installed)."""
    import ctypes
    d = library_dir()
    if d is not None:
        ctypes.CDLL(str(d / LIBRARY), mode=ctypes.RTLD_GLOBAL)
    import simgrid
    return simgrid
