"""Compressed traces (issue 23): rank-relative call signatures (:mod:`.signatures`), loop
grammars shared across ranks (:mod:`.grammar`), volumes and times kept exactly or modelled
(:mod:`.volumes`), the compressed ``/trace`` in HDF5 (:mod:`.store`) and its lazy reader
(:mod:`.expand`); :func:`loops` finds each rank's main loops and their iterations."""

__all__ = ["loops"]


def __getattr__(name: str):
    """``loops`` loads pandas (:mod:`.loop_view`): only when first used, not by a module that
    needs only, say, :mod:`.volumes`' constants (``minitrace compress --help``)."""
    if name == "loops":
        from .loop_view import loops
        return loops
    raise AttributeError(f"module 'minitrace.compress' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The lazy names too (tab completion), beside what is loaded."""
    return sorted(set(globals()) | set(__all__))
