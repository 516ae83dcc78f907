"""The compiled adaptive context coder (adaptive.c), built at install time by build.py as
``minitrace.compress.native._adaptive`` (the system C compiler, no MPI): a sequential coder,
which numpy cannot vectorize."""
from __future__ import annotations

from ...errors import MinitraceError


def load():
    """The coder's ``(ffi, lib)``; a missing build is a one-line error telling how to fix it."""
    try:
        from ._adaptive import ffi, lib
    except ImportError as e:
        raise MinitraceError(f"the adaptive context coder is not built ({e}): reinstall "
                             "minitrace (pip install --no-build-isolation .)") from None
    return ffi, lib
