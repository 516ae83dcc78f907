"""The ``minitrace`` command line: subcommands are the modules of ``minitrace.commands``.

Module ``foo_bar`` is subcommand ``foo-bar`` (a trailing ``_`` avoids a keyword: ``import_``).
Only the module of the subcommand being run (or whose ``--help`` is asked) is imported, so no
command pays for another's imports (pandas, scipy, matplotlib, SimGrid); ``minitrace --help``
lists them from ``minitrace.commands.COMMANDS`` and imports none.

Exit status: 0 success, 1 error (one line on stderr, traceback only with ``--debug``), 2 usage,
130 interrupted, 143 terminated (SIGTERM is raised as ``Terminated`` so that cleanups run).
"""
from __future__ import annotations

import os
import signal
import sys

from . import signals
from .signals import EXIT_INTERRUPTED, EXIT_TERMINATED, early, install_early

if __name__ == "__main__":      # (python -m minitrace.cli) first thing: imports take ~0.3 s
    install_early()

import argparse  # noqa: E402
import importlib  # noqa: E402
import keyword  # noqa: E402
import threading  # noqa: E402

from . import __version__, commands  # noqa: E402
from .errors import MinitraceError, Terminated  # noqa: E402


def command_name(module: str) -> str:
    """Subcommand name of a ``minitrace.commands`` module."""
    return module.rstrip("_").replace("_", "-")


def command_module(name: str) -> str:
    """The ``minitrace.commands`` module of subcommand ``name`` (``command_name``'s inverse)."""
    module = name.replace("-", "_")
    return module + "_" if keyword.iskeyword(module) else module


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with only the subcommand named in ``argv`` loaded; the others are listed
    (name and line of help: the same ``minitrace --help`` and usage errors) but not loaded."""
    p = argparse.ArgumentParser(
        prog="minitrace",
        description="Record, benchmark, convert and analyse MPI traces (HDF5 time-independent "
                    "traces).")
    p.add_argument("--version", action="version", version=f"minitrace {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    wanted = next((a for a in (argv or []) if not a.startswith("-")), None)
    for name, line in commands.COMMANDS.items():
        if name == wanted:
            importlib.import_module(f"{commands.__name__}.{command_module(name)}").register(sub)
        else:       # never parsed: argparse runs the subcommand named first in argv, wanted
            sub.add_parser(name, help=line)
    return p


_sigterm = threading.Event()


def _terminate(signum, frame):
    if not signals.raises(signum, frame, _sigterm.is_set()):   # (a second SIGTERM, a process-
        return     # group kill's, while cleaning up lets the clean-up finish; SIGKILL remains)
    _sigterm.set()
    raise signals.watched(Terminated(), signum)


def _stopped() -> bool:
    """Whether SIGTERM or Ctrl-C came during the command (whatever its exception became)."""
    return _sigterm.is_set() or signals.interrupted


@signals.settles
def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status.  SIGTERM is raised as ``Terminated``
    while it runs (when the handler is the default or the early one and this is the main
    thread), from the start: parsing and loading the subcommand included."""
    own = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, early)
    signals.reset()
    if own:
        before = signal.signal(signal.SIGTERM, _terminate)
    _sigterm.clear()
    try:
        status = _main(argv)
        if _stopped() and status not in (EXIT_INTERRUPTED, EXIT_TERMINATED):   # swallowed
            # by the code it interrupted (an ``except BaseException``) and delivered again
            # too late: the command ran on, but was told to stop
            signals.seen()
            return signals.report(EXIT_TERMINATED if _sigterm.is_set() else EXIT_INTERRUPTED)
        return status
    except BaseException as e:
        signals.seen()
        # Terminated raised while the parser and the subcommand's module load, or turned
        # into another exception by the code it interrupted (numpy's import makes it an
        # ImportError): SIGTERM came, whatever the exception says
        if _sigterm.is_set():
            return signals.report(EXIT_TERMINATED)
        if isinstance(e, KeyboardInterrupt) or signals.interrupted:   # Ctrl-C while the
            # modules load (an import it interrupts may turn it into an ImportError)
            return signals.report(EXIT_INTERRUPTED)
        raise
    finally:
        if own:
            signal.signal(signal.SIGTERM, before)


def _stdout_gone() -> bool:
    """Whether standard output is a pipe its reader has left (``poll`` says POLLERR), rather
    than another pipe the command wrote to."""
    import select
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _, ev in poller.poll(0))
    except (AttributeError, ValueError, OSError):     # (no file behind it)
        return False


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    try:
        args = parser.parse_args(argv)
    except MinitraceError as e:      # an option value out of its range (minitrace.options)
        print(f"minitrace: error: {e}", file=sys.stderr)
        return 1
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except MinitraceError as e:
        if args.debug or _stopped():
            raise
        print(f"minitrace: error: {e}", file=sys.stderr)
        return 1
    except Terminated:
        raise
    except KeyboardInterrupt:
        signals.seen()
        return signals.report(EXIT_INTERRUPTED)
    except OSError as e:  # a file the user named could not be read or written
        if isinstance(e, BrokenPipeError) and _stdout_gone():    # `minitrace info F | head`:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())   # quiet, as a
            return 128 + signal.SIGPIPE                     # tool SIGPIPE ends (exit's flush)
        if args.debug or _stopped():
            raise
        where = f"{e.filename}: " if e.filename else ""
        print(f"minitrace: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except Exception as e:  # a bug: say so plainly rather than pass it off as bad input
        if args.debug or _stopped():
            raise
        print(f"minitrace: internal error: {type(e).__name__}: {e} (rerun as `minitrace "
              f"--debug {args.command} ...` for the traceback, and please report it)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
