"""One exception type for every problem a user can fix: the CLI prints it on one line."""
from contextlib import contextmanager


class MinitraceError(Exception):
    """A user-facing error; ``str()`` is a complete one-line message naming the file."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        self.message = message        # (without the file: a caller may name another)
        super().__init__(f"{path}: {message}" if path else message)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised by the CLI's handler so that ``finally`` blocks and context managers
    run (temporary files removed, raw data reported) as for Ctrl-C."""


@contextmanager
def naming(path):
    """Name ``path`` in a :class:`MinitraceError` raised inside without a file: a replay of a
    trace read into memory (``--sample``, ``predict``) refused it in a line naming no file
    (public Intel MPI Benchmarks IMB-RMA: "cannot replay: SimGrid's TI format cannot express
    ...", where ``replay`` without ``--sample`` names it)."""
    try:
        yield
    except MinitraceError as e:
        if e.path is not None or not path:
            raise
        named = MinitraceError(str(e), str(path))
        for k, v in vars(e).items():      # (what a raiser added: replay's tests_as_waits)
            if k not in ("path", "message"):
                setattr(named, k, v)
        raise named from None

