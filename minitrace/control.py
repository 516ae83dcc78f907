"""Pause, resume and named regions from a traced Python program (no-ops when not traced).

The shim exports ``minitrace_shim_present`` when it is loaded (LD_PRELOAD by
``minitrace record``); only then is the ``minitrace._shim`` extension imported - it is that
same, already loaded library - and its functions called.  Untraced, nothing is loaded.
"""
from __future__ import annotations

import ctypes
from contextlib import contextmanager

_lib = None
_checked = False


def _shim():
    global _lib, _checked
    if not _checked:
        _checked = True
        if hasattr(ctypes.CDLL(None), "minitrace_shim_present"):
            from ._shim import lib
            _lib = lib
    return _lib


def tracing() -> bool:
    """True when this process is being traced right now (shim loaded, started, not paused)."""
    lib = _shim()
    return bool(lib and lib.minitrace_shim_tracing())


def pause() -> None:
    """Stop recording MPI calls (recorded as a ``pause`` action) until resume()."""
    lib = _shim()
    if lib:
        lib.minitrace_pause()


def resume() -> None:
    """Record again (a ``resume`` action); the paused stretch is not counted as compute."""
    lib = _shim()
    if lib:
        lib.minitrace_resume()


@contextmanager
def region(name: str):
    """``with minitrace.region("solve"):`` marks a phase (region_begin / region_end actions,
    the name in the trace's string table)."""
    lib = _shim()
    b = name.encode()
    if lib:
        lib.minitrace_region(1, b)
    try:
        yield
    finally:
        if lib:
            lib.minitrace_region(0, b)
