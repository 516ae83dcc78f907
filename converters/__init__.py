"""Readers and writers of foreign trace formats, all producing minitrace TraceColumns, and
:func:`convert`, one call between any of them and a minitrace file."""

__all__ = ["EXPORTS", "Converted", "convert"]


def __getattr__(name: str):
    """The names of :mod:`.conversion` (every reader and writer, h5py), loaded when first used:
    a module that needs one converter (the replay's :mod:`.ti_files`) loads that one only."""
    if name in __all__:
        from . import conversion
        return getattr(conversion, name)
    raise AttributeError(f"module 'minitrace.converters' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The lazy names too (tab completion), beside what is loaded."""
    return sorted(set(globals()) | set(__all__))
