"""minitrace: MPI instrumentation, time-independent traces, benchmarks and their analysis."""
__version__ = "0.1.0"

from .errors import MinitraceError  # noqa: E402
from .trace import Trace, open  # noqa: E402,A004
from .control import pause, region, resume, tracing  # noqa: E402

__all__ = ["MinitraceError", "Trace", "open", "__version__"]
