"""The temporary buffers of a collective whose pages a rank faults in at every call: work that
SimGrid's replay does not model and that can outweigh the call's messages.

MPICH's reduce of a large message (``scatter_gather``: MPICH's ``reduce_scatter_gather``, what
Debian's MPICH 4.0.2 runs on one node for a builtin operation) allocates a buffer of the whole
message on every rank and, on a rank that is not the root, a second one that it copies its data
into.  glibc maps a block of ``MMAP_THRESHOLD`` bytes or more anew; once one is freed it serves
blocks of that size from its heap, but the non-root's two together outgrow its trim threshold
(twice the largest block it mapped), so it gives them back at their free and the next call
faults their pages in again.  At 2 ranks the non-root rank faulted in 1.5 pages a page of the
message at every call (the copy, and the half it receives), the root none; its 4 MiB reduce
took 3.2-3.7 ms, 0.9-1.1 ms with glibc told to keep its memory (``MALLOC_TOP_PAD_=64M
MALLOC_TRIM_THRESHOLD_=1G``; either alone: as slow); 2.9 us a page
at calibrate's rate of fresh pages, 1.4 GB/s (session 35, loaded).
"""
from __future__ import annotations

from .algorithms.common import pof2_below
from .selection import select

#: glibc's initial mmap threshold (M_MMAP_THRESHOLD): smaller blocks come from its heap
MMAP_THRESHOLD = 128 << 10


def fresh_bytes(library: str, kind: str, p: int, me: int, root: int, nbytes: int) -> int:
    """Bytes of temporary buffers that member ``me`` of ``p`` writes into pages mapped anew at
    each call of a ``kind`` of ``nbytes`` bytes a member rooted at ``root``, as ``library``
    runs it (0 where nothing is known to be)."""
    if library != "mpich" or kind != "reduce" or me == root or nbytes < MMAP_THRESHOLD \
            or select(library, kind, p, nbytes, nbytes) != "scatter_gather":
        return 0
    pof2 = pof2_below(p)
    rem = p - pof2
    if me < 2 * rem:        # (odd: sends its whole copy away; even: receives one whole)
        return nbytes if me % 2 else 2 * nbytes
    return nbytes + nbytes - nbytes // pof2        # the copy, and the blocks it receives
