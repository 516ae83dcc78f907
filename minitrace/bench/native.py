"""The compiled work kernels (FWQ integer work, busy spin), built at install time by
c_shim/build_native.py as ``minitrace.bench._native`` (compute nodes may lack a compiler).
cffi releases the GIL during the calls, so threads spin in parallel."""
from __future__ import annotations

from ..errors import MinitraceError


def load():
    """The kernels' ``lib``; a missing build is a one-line error telling how to fix it."""
    try:
        from ._native import lib
    except ImportError as e:
        raise MinitraceError(f"the benchmark kernels are not built ({e}): reinstall minitrace "
                             "(pip install --no-build-isolation .)") from None
    return lib
