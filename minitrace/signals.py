"""SIGTERM from the first moment of a command: the entry points install :func:`early` before
anything else is imported (the modules of a command take ~0.3 s to load), so that a SIGTERM
then prints one line and exits 143 like one during the command (``cli.main`` then raises it
as ``Terminated`` so that cleanups run, once: a second SIGTERM lets them finish).  Ctrl-C
while the modules load is one line and 130, as during the command.  A terminated command
leaves without waiting for threads (:func:`leave`).

A handler's exception can be dropped where it lands: an extension module's initialisation
(numpy.random, h5py, pandas' C parts) and the callbacks whose exceptions Python only prints
(weakref callbacks, the import system's locks) lose it, and the command then ran on to its end
and exited 0.  Each one raised is therefore watched (:func:`watched`) until the command line
has it (:func:`seen`); one freed before that delivers its signal to the main thread again.
Nor is one raised inside importlib's own code (:func:`defer`), where it could leave the
import lock held."""
from __future__ import annotations

import _thread
import os
import signal
import sys
import time
import weakref

EXIT_TERMINATED = 143
EXIT_INTERRUPTED = 130


def early(signum, frame):
    """SIGTERM before ``cli.main`` runs: one line, exit status 143 (once: a second SIGTERM
    while leaving changes nothing).  Remembered in ``terminated``: an import that swallows the
    ``SystemExit`` (a module's ``except BaseException``, a finaliser) must not turn it into a
    command that runs on and exits 0."""
    global terminated
    if not raises(signum, frame, terminated):
        return
    if not terminated:
        report(EXIT_TERMINATED)
    terminated = True
    raise watched(EarlyExit(EXIT_TERMINATED), signum)


terminated = False


class EarlyExit(SystemExit):
    """:func:`early`'s exit (a class of its own: a watched exception needs weak references)."""


class Interrupted(KeyboardInterrupt):
    """:func:`interrupt`'s KeyboardInterrupt (a class of its own, as :class:`EarlyExit`)."""


def interrupt(signum, frame):
    """Ctrl-C: KeyboardInterrupt, as Python's own handler, remembered (an import it interrupts
    may turn it into an ImportError)."""
    global interrupted
    if not raises(signum, frame, False):
        return
    interrupted = True
    raise watched(Interrupted(), signum)


interrupted = False


def raises(signum: int, frame, stopping: bool) -> bool:
    """Whether a handler of minitrace's raises for this delivery of ``signum``: not once the
    command's line is out (:func:`report`), not inside importlib (:func:`defer`), not for a
    repeat landing where the command line handles the stop (:func:`again`), and, when the
    command is already ``stopping`` (its clean-up running), only to repeat a dropped one."""
    if reported or defer(signum, frame):
        return False
    repeat = again(signum, frame)
    return repeat is not None and (repeat or not stopping)


def report(status: int) -> int:
    """Print the stopped command's one line (``status`` 143 or 130) and return ``status``; a
    signal after it is ignored (``reported``): one more during the exit (a process-group kill
    sends two) printed the line again."""
    global reported
    word = "terminated" if status == EXIT_TERMINATED else "interrupted"
    print(f"minitrace: {word}", file=sys.stderr)
    reported = True
    return status


reported = False


def in_import(frame) -> bool:
    """Whether a signal came while the import system itself ran (its locks, its module
    table): an exception raised there can leave the import lock held (raised just after a
    module lock's callback took it), and every other thread's next import then waits for
    ever, the replay's feeder thread among them, and with it the command's clean-up.  Its
    handler then delivers it :func:`later`."""
    return frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")


def defer(signum: int, frame) -> bool:
    """Whether the handler of ``signum`` delivers it :func:`later` (it came inside importlib's
    code: :func:`in_import`), for at most ``DEFER_SECONDS`` from the first deferral: a main
    thread blocked on a module lock that another thread holds (a deadlocked import) would
    otherwise stop for no signal but SIGKILL."""
    if not in_import(frame):
        _deferred_since.pop(signum, None)
        return False
    since = _deferred_since.setdefault(signum, time.monotonic())
    if time.monotonic() - since > DEFER_SECONDS:
        _deferred_since.pop(signum)
        return False
    later(signum)
    return True


DEFER_SECONDS = 1.0
_deferred_since: dict[int, float] = {}


def later(signum: int) -> None:
    """Deliver ``signum`` again once the handler has returned (at the next check of the code
    it interrupted), through a weak reference's C-only callback: a Python call here would run
    the handler again inside this one."""
    box = _Box()
    ref = _Delivery(box, signum, False)   # noqa: F841 (alive while box dies)
    del box


def watched(exc: BaseException, signum: int) -> BaseException:
    """``exc``, about to be raised by the handler of ``signum``, watched until :func:`seen`:
    freed before that (dropped), it delivers ``signum`` again, once per signal (the repeat
    can be dropped too, in another callback or at the interpreter's exit, and each drop
    would deliver it again, for ever; after one repeat the command line's checks when the
    command returns remain).

    Parameters
    ----------
    exc : BaseException
        An instance of a Python-defined class (weak references).
    signum : int
        The signal its handler handles.

    Returns
    -------
    BaseException
        ``exc``.
    """
    _watching.append(_Delivery(exc, signum, True if signum not in _repeated else None))
    return exc


class _Box:
    """An object to hold a weak reference to (a plain ``object`` has none)."""


class _Delivery(weakref.ref):
    """A weak reference whose callback, ``_thread.interrupt_main(ref)``, delivers its signal
    (``__index__``) when the object dies: a C call that only marks the signal as arrived, so
    that its handler runs at the next check of the code that let the object go, not inside
    the callback (where its exception would be dropped).  A repeat (of a dropped exception)
    is counted; no delivery at all when ``repeat`` is None.  interrupt_main delivers nothing
    once the handler is gone."""

    __slots__ = ("signum", "repeat")

    def __new__(cls, obj, signum: int, repeat: bool | None):
        return super().__new__(cls, obj, None if repeat is None else _thread.interrupt_main)

    def __init__(self, obj, signum: int, repeat: bool | None):
        super().__init__(obj, None if repeat is None else _thread.interrupt_main)
        self.signum, self.repeat = int(signum), repeat

    def __index__(self) -> int:
        if self.repeat and callable(signal.getsignal(self.signum)):   # (else nothing comes)
            _repeated.add(self.signum)
            _pending.add(self.signum)
        return self.signum


_watching: list[_Delivery] = []
_repeated: set[int] = set()
_pending: set[int] = set()


def again(signum: int, frame) -> bool | None:
    """Whether this delivery of ``signum`` repeats one whose exception was dropped: True, its
    handler raises again (where a second signal would otherwise let the clean-up finish);
    None when the repeat lands in the command line's own handling of a stop or of the
    command's end (:func:`settles`), which checks the first delivery's flags: raised there,
    it would escape as a traceback; False when it is no repeat."""
    if signum not in _pending:
        return False
    _pending.discard(signum)
    return None if frame is not None and frame.f_code in _settled else True


def settles(func):
    """Mark ``func`` as the command line's handling of a stop or of the command's end, where a
    repeated signal raises nothing (:func:`again`)."""
    _settled.add(func.__code__)
    return func


_settled: set = set()


def handled(exc: BaseException) -> None:
    """``exc`` (a handler's) was caught on purpose (a second Ctrl-C that stops a wait): freed,
    it must not deliver its signal again."""
    _watching[:] = [ref for ref in _watching if ref() is not exc]


def reset() -> None:
    """A new command in this process: no watched exception, repeat or deferral of an earlier
    one carries over (``cli.main`` called again, as the tests do)."""
    global reported
    _watching.clear()
    _repeated.clear()
    _pending.clear()
    _deferred_since.clear()
    reported = False


@settles
def seen() -> None:
    """The command line has the exception a handler raised (or the one it became): it is no
    longer watched."""
    _watching.clear()


def install_early() -> None:
    """Handle SIGTERM with :func:`early` and SIGINT with :func:`interrupt`, unless the process
    already handles them; keep Python's report of a dropped watched exception quiet."""
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, early)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)
    sys.unraisablehook = _unraisable


def _unraisable(unraisable) -> None:
    """Python's report of an exception it could not raise (a callback's), quiet for a watched
    one: it is delivered again, and a traceback would bury the command's one line."""
    if not any(ref() is unraisable.exc_value for ref in _watching):
        sys.__unraisablehook__(unraisable)


@settles
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
