"""SIGTERM from the first moment of a command: the entry points install :func:`early` before
anything else is imported (the modules of a command take ~0.3 s to load), so that a SIGTERM
then prints one line and exits 143 like one during the command (``cli.main`` then raises it
as ``Terminated`` so that cleanups run)."""
from __future__ import annotations

import signal
import sys

EXIT_TERMINATED = 143


def early(signum, frame):
    """SIGTERM before ``cli.main`` runs: one line, exit status 143."""
    print("minitrace: terminated", file=sys.stderr)
    raise SystemExit(EXIT_TERMINATED)


def install_early() -> None:
    """Handle SIGTERM with :func:`early`, unless the process already handles it."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, early)
