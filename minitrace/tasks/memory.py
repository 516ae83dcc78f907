"""The data a task moves, for the COMM and CACHE models: its dependences' bytes between their
home NUMA node's memory and the core running it, and (CACHE) what an LRU model of each L3
lets through -- hits move nothing, misses read from memory, evicted written data goes back."""
from __future__ import annotations

from collections import OrderedDict

READS = {"in", "inout", "mutexinoutset", "inoutset"}
WRITES = {"out", "inout", "mutexinoutset", "inoutset"}


class L3Caches:
    """An LRU list of data handles per L3, sized in bytes; a write invalidates the other L3s'
    copies (their data is stale, not written back)."""

    def __init__(self, sizes: dict[int, int]):
        self.size = dict(sizes)
        self.lines: dict[int, OrderedDict] = {k: OrderedDict() for k in sizes}
        self.used = {k: 0 for k in sizes}

    def access(self, l3: int, handle: int, nbytes: int, mode: str) -> tuple[int, list]:
        """(bytes to read from memory, [(handle, bytes) written back]) of one dependence."""
        lines = self.lines.setdefault(l3, OrderedDict())
        self.used.setdefault(l3, 0)
        write = mode in WRITES
        if write:
            for other, ol in self.lines.items():
                if other != l3 and handle in ol:
                    self.used[other] -= ol.pop(handle)[0]
        if handle in lines:
            lines.move_to_end(handle)
            if write:
                lines[handle] = (nbytes, True)
            return 0, []
        read = nbytes if mode in READS else 0
        if nbytes > self.size.get(l3, 0):     # larger than the cache: streams through it
            return read, ([(handle, nbytes)] if write else [])
        evicted = []
        while self.used[l3] + nbytes > self.size[l3] and lines:
            h, (b, dirty) = lines.popitem(last=False)
            self.used[l3] -= b
            if dirty:
                evicted.append((h, b))
        lines[handle] = (nbytes, write)
        self.used[l3] += nbytes
        return read, evicted


def comm_flows(deps: list[tuple[int, str]], sizes: dict[int, int]) -> tuple[list, list]:
    """COMM: ([(handle, bytes) read], [(handle, bytes) written]) of one task: every
    dependence's data comes from its memory, written data goes back."""
    reads = [(h, sizes[h]) for h, m in deps if m in READS and sizes[h] > 0]
    writes = [(h, sizes[h]) for h, m in deps if m in WRITES and sizes[h] > 0]
    return reads, writes
