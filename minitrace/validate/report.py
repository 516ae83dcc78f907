"""What the checks report (problems, exact counts per category, the report's order) and the
columns they read of a trace (or of a worker's share of one)."""
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .. import kinds as K
from ..model import TraceColumns


#: Problems kept per category (counts stay exact beyond it).
KEEP_PER_CATEGORY = 1000


@dataclass
class Problem:
    rank: int          # world rank (-1 when the problem is not one rank's)
    index: int         # action row within the rank, or -1
    category: str      # e.g. "unmatched-send", "size-mismatch", "missing-finalize"
    message: str       # one line

    def __str__(self) -> str:
        where = f"rank {self.rank}" if self.rank >= 0 else "trace"
        if self.index >= 0:
            where += f" action {self.index}"
        return f"{where}: {self.category}: {self.message}"


@dataclass
class ValidationReport:
    nranks: int
    nactions: int
    problems: list[Problem] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)   # category -> exact number of problems

    @property
    def ok(self) -> bool:
        return not self.counts

    @property
    def nproblems(self) -> int:
        return sum(self.counts.values())

    def phase(self, key: tuple, capped: bool = False) -> None:
        """Where the problems added next come in the report's order: a check's problems come
        in phases (``key``: check, step, ...), each in rank order, so that the parallel
        validate (parallel/validate.py) puts every worker's problems where the serial one
        does; ``capped``: a phase that adds at most KEEP_PER_CATEGORY problems in all."""

    def add(self, rank: int, index: int, category: str, message: str) -> None:
        self.counts[category] += 1
        if self.counts[category] <= KEEP_PER_CATEGORY:
            self.problems.append(Problem(int(rank), int(index), category, message))

    def lines(self, limit: int | None = 50) -> list[str]:
        """One line per problem (at most ``limit``, then one line counting the rest)."""
        shown = self.problems if limit is None else self.problems[:limit]
        out = [str(p) for p in shown]
        rest = self.nproblems - len(shown)
        if rest > 0:
            out.append(f"... and {rest} more problem(s)")
        return out

    def summary(self) -> str:
        if self.ok:
            return f"OK: {self.nranks} ranks, {self.nactions} actions, no problems"
        per = ", ".join(f"{n} {c}" for c, n in sorted(self.counts.items()))
        return f"{self.nproblems} problem(s) in {self.nranks} ranks, {self.nactions} actions: {per}"

    def __str__(self) -> str:
        return "\n".join([self.summary(), *self.lines()])


class CheckContext:
    """Columns shared by the checks: each action's rank and row within the rank, and the rows
    of a set of kinds.  ``data`` may hold consecutive ranks of a larger trace (a worker's share
    in the parallel validate): ``rank_base`` is its first world rank, ``row_base`` its first
    global row, ``world`` the world size."""

    def __init__(self, data: TraceColumns, rank_base: int = 0, row_base: int = 0,
                 world: int | None = None):
        self.d = data
        self.a = data.actions
        n = len(self.a)
        sizes = np.diff(data.rank_offsets)
        self.rank_base, self.row_base = rank_base, row_base
        self.world = data.nranks if world is None else world
        self.rank = data.rank_of() + rank_base
        self.index = np.arange(n, dtype=np.int64) - np.repeat(data.rank_offsets[:-1], sizes)
        self.kind = self.a["kind"]
        self._once: dict = {}

    def once(self, fn):
        """``fn(self)``, computed once for this context (what several checks derive alike)."""
        if fn not in self._once:
            self._once[fn] = fn(self)
        return self._once[fn]

    def rows(self, names) -> np.ndarray:
        return np.nonzero(K.mask(names)[self.kind])[0]
