"""Compressed traces (issue 23): rank-relative call signatures (:mod:`.signatures`), loop
grammars shared across ranks (:mod:`.grammar`), volumes and times kept exactly or modelled
(:mod:`.volumes`), the compressed ``/trace`` in HDF5 (:mod:`.store`) and its lazy reader
(:mod:`.expand`); :func:`loops` finds each rank's main loops and their iterations."""
from .loop_view import loops

__all__ = ["loops"]
