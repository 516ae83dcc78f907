"""``python -m minitrace`` and the ``minitrace`` console script (``entry``)."""
import sys

from . import signals
from .signals import EXIT_INTERRUPTED, EXIT_TERMINATED, install_early, leave


@signals.settles
def entry() -> int:
    """SIGTERM handled first (:mod:`minitrace.signals`), then the command line."""
    install_early()
    try:
        from .cli import main
    except BaseException:             # Ctrl-C while the command line's modules load (an
        signals.seen()                # import it interrupts may turn it into an ImportError)
        if not signals.interrupted:
            raise
        return leave(signals.report(EXIT_INTERRUPTED))
    if signals.terminated:            # SIGTERM's SystemExit swallowed by an import
        return leave(EXIT_TERMINATED)
    if signals.interrupted:           # Ctrl-C's KeyboardInterrupt swallowed by an import
        return leave(signals.report(EXIT_INTERRUPTED))
    return leave(main())


if __name__ == "__main__":
    sys.exit(entry())
