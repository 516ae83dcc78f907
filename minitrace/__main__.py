"""``python -m minitrace`` and the ``minitrace`` console script (``entry``)."""
import sys

from .signals import install_early


def entry() -> int:
    """SIGTERM handled first (:mod:`minitrace.signals`), then the command line."""
    install_early()
    from .cli import main
    return main()


if __name__ == "__main__":
    sys.exit(entry())
