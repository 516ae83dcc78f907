"""The compiled work kernels (kernels.c: FWQ integer work, busy spin), built at install time by
build.py as ``minitrace.bench.native._kernels`` (compute nodes may lack a compiler).
cffi releases the GIL during the calls, so threads spin in parallel."""
from __future__ import annotations

from ...errors import MinitraceError


def load():
    """The kernels' ``lib``; a missing build is a one-line error telling how to fix it."""
    try:
        from ._kernels import lib
    except ImportError as e:
        raise MinitraceError(f"the benchmark kernels are not built ({e}): reinstall minitrace "
                             "(pip install --no-build-isolation .)") from None
    return lib
