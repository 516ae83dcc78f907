"""One exception type for every problem a user can fix: the CLI prints it on one line."""


class MinitraceError(Exception):
    """A user-facing error; ``str()`` is a complete one-line message naming the file."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised by the CLI's handler so that ``finally`` blocks and context managers
    run (temporary files removed, raw data reported) as for Ctrl-C."""
