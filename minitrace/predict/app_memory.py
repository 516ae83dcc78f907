"""Memory as a compiled application gets it, for the calibration's buffers.

numpy asks the kernel for transparent huge pages on large arrays (``madvise``); a C or Fortran
application's ``malloc`` does not, and where the machine's setting is ``madvise`` (Debian's
default) its buffers are in 4 KiB pages.  The copies of an MPI message between such buffers
ran 1.9x as slow as between numpy's here (4 MiB one way: 840 us against 453 us, 2026-11-28):
a calibration on numpy's arrays measured a machine faster than the one applications run on.
Anonymous ``mmap`` gives what ``malloc`` gives for large blocks (huge pages only where the
setting is ``always``, as for the application).
"""
from __future__ import annotations

import mmap

import numpy as np


def array(n: int, dtype=np.uint8, fill=1) -> np.ndarray:
    """``n`` elements of ``dtype`` set to ``fill`` (every page touched), in pages as an
    application's large ``malloc`` gets them."""
    itemsize = np.dtype(dtype).itemsize
    out = np.frombuffer(mmap.mmap(-1, max(n * itemsize, 1)), dtype=dtype, count=n)
    out[:] = fill
    return out
