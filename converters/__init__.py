"""Readers and writers of foreign trace formats, all producing minitrace TraceColumns, and
:func:`convert`, one call between any of them and a minitrace file."""
from .conversion import EXPORTS, Converted, convert

__all__ = ["EXPORTS", "Converted", "convert"]
