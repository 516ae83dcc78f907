"""minitrace: MPI instrumentation, time-independent traces, benchmarks and their analysis."""
__version__ = "0.1.0"

from .control import pause, region, resume, tracing  # noqa: E402
from .errors import MinitraceError  # noqa: E402

__all__ = ["MinitraceError", "Trace", "open", "pause", "region", "resume", "tracing",
           "__version__"]


def __getattr__(name: str):
    """``open`` and ``Trace`` load pandas and h5py: only when first used (a traced mpi4py
    program that calls ``minitrace.pause()`` must not pay for them)."""
    if name in ("open", "Trace"):
        from . import trace
        return getattr(trace, name)
    raise AttributeError(f"module 'minitrace' has no attribute {name!r}")
