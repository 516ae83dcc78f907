"""SIGTERM from the first moment of a command: the entry points install :func:`early` before
anything else is imported (the modules of a command take ~0.3 s to load), so that a SIGTERM
then prints one line and exits 143 like one during the command (``cli.main`` then raises it
as ``Terminated`` so that cleanups run, once: a second SIGTERM lets them finish).  Ctrl-C
while the modules load is one line and 130, as during the command.  A terminated command
leaves without waiting for threads (:func:`leave`)."""
from __future__ import annotations

import os
import signal
import sys

EXIT_TERMINATED = 143
EXIT_INTERRUPTED = 130


def early(signum, frame):
    """SIGTERM before ``cli.main`` runs: one line, exit status 143 (once: a second SIGTERM
    while leaving changes nothing).  Remembered in ``terminated``: an import that swallows the
    ``SystemExit`` (a module's ``except BaseException``, a finaliser) must not turn it into a
    command that runs on and exits 0."""
    global terminated
    if terminated:
        return
    terminated = True
    print("minitrace: terminated", file=sys.stderr)
    raise SystemExit(EXIT_TERMINATED)


terminated = False


def interrupt(signum, frame):
    """Ctrl-C: KeyboardInterrupt, as Python's own handler, remembered (an import it interrupts
    may turn it into an ImportError)."""
    global interrupted
    interrupted = True
    raise KeyboardInterrupt


interrupted = False


def install_early() -> None:
    """Handle SIGTERM with :func:`early` and SIGINT with :func:`interrupt`, unless the process
    already handles them."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, early)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)


def leave(status: int) -> int:
    """``status`` for the entry point to return; a terminated (or interrupted) command's
    process ends here, its clean-ups done, without waiting for threads: a thread pool's worker
    started while SIGTERM interrupted ``Thread.start`` is never told to stop, and the
    interpreter's exit would wait for it forever.  Signals after the command are ignored
    (Ctrl-C during the interpreter's exit killed it silently, status -2)."""
    if status in (EXIT_TERMINATED, EXIT_INTERRUPTED):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    for sig in (signal.SIGINT, signal.SIGTERM):   # the command is done: a signal now would
        signal.signal(sig, signal.SIG_IGN)        # only interrupt the interpreter's exit
    return status
