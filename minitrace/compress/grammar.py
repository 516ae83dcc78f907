"""Loop grammars of signature streams: each rank's sequence of signature ids folded into nested
loops with repetition counts (ScalaTrace's loop folding, Pilgrim's run-length rules), rules
shared by every rank and identical top-level sequences stored once (a rank -> grammar table).

A symbol below ``nterm`` is a signature id (a terminal); symbol ``nterm + j`` is rule ``j``: its
body ``symbols[offsets[j]:offsets[j+1]]`` repeated ``counts[j]`` times.  A rule's body names only
terminals and *earlier* rules, so a grammar has no cycle by construction and :meth:`check`
proves it before anything is expanded; every expansion knows its length before it starts.

Folding is linear in the stream: for each candidate period p (the small ones and the most
frequent distances between a symbol and its next occurrence), one vectorized comparison of the
stream with itself shifted by p finds every tandem repeat of period p; each becomes one rule
symbol.  Rounds repeat until the stream stops shrinking, so inner loops fold first and outer
loops fold over them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Periods always tried; longer ones only when frequent in the stream.
SMALL_PERIODS = 8
MAX_PERIOD = 1 << 14
CANDIDATES = 24
MAX_ROUNDS = 64
#: Deepest nesting accepted from a file (a damaged file must not exhaust the stack).
MAX_DEPTH = 64
#: Longest expansion (actions of one rank) accepted.
MAX_LENGTH = 1 << 48
_CACHE_ROWS = 1 << 16


class GrammarError(ValueError):
    """A stored grammar is inconsistent (the reader turns it into a ``corrupt trace`` error)."""


@dataclass
class Grammar:
    """Rules shared by all ranks, one top-level sequence per distinct rank program, and which
    sequence each rank runs."""

    nterm: int
    rule_offsets: np.ndarray     # int64 [R+1]
    rule_symbols: np.ndarray     # int64
    rule_counts: np.ndarray      # int64 [R]
    top_offsets: np.ndarray      # int64 [G+1]
    top_symbols: np.ndarray      # int64
    rank_grammar: np.ndarray     # int64 [nranks]

    def __post_init__(self):
        self._lengths = None
        self._cache: dict[int, np.ndarray] = {}

    @property
    def nrules(self) -> int:
        return len(self.rule_counts)

    # -- checks and sizes -------------------------------------------------------------------
    def check(self) -> None:
        """Raise GrammarError unless every reference is inside its table, every rule names only
        earlier rules (no cycle), counts are positive and no expansion is longer than
        MAX_LENGTH or nested deeper than MAX_DEPTH."""
        R, G = self.nrules, len(self.top_offsets) - 1
        for name, off, n in (("rule", self.rule_offsets, len(self.rule_symbols)),
                             ("top-level", self.top_offsets, len(self.top_symbols))):
            if len(off) < 1 or off[0] != 0 or off[-1] != n or (np.diff(off) < 0).any():
                raise GrammarError(f"{name} offsets inconsistent")
        if len(self.rule_offsets) != R + 1:
            raise GrammarError("rule tables of different lengths")
        if (np.diff(self.rule_offsets) < 1).any():
            raise GrammarError("a rule has an empty body")
        if (self.rule_counts < 1).any():
            raise GrammarError("a rule has a repetition count below 1")
        if len(self.rank_grammar) and (self.rank_grammar.min() < 0 or
                                       self.rank_grammar.max() >= G):
            raise GrammarError("a rank names a grammar outside the table")
        for syms in (self.rule_symbols, self.top_symbols):
            if len(syms) and (syms.min() < 0 or syms.max() >= self.nterm + R):
                raise GrammarError("a symbol outside the signature and rule tables")
        owner = np.repeat(np.arange(R), np.diff(self.rule_offsets))
        if (self.rule_symbols >= self.nterm + owner).any():
            raise GrammarError("a rule refers to itself or a later rule (a cycle)")
        self.lengths()

    def lengths(self) -> np.ndarray:
        """Expanded length of every symbol (terminals 1), checked against overflow and depth."""
        if self._lengths is None:
            n, R = self.nterm, self.nrules
            length = [1] * n + [0] * R
            depth = [0] * n + [0] * R
            syms = self.rule_symbols.tolist()
            offs = self.rule_offsets.tolist()
            counts = self.rule_counts.tolist()
            for j in range(R):
                body = syms[offs[j]:offs[j + 1]]
                total = sum(length[s] for s in body) * counts[j]
                d = 1 + max(depth[s] for s in body)
                if total > MAX_LENGTH or d > MAX_DEPTH:
                    raise GrammarError("a rule expands beyond the limits (overflowing counts or "
                                       "nesting)")
                length[n + j], depth[n + j] = total, d
            self._lengths = np.array(length, np.int64)
        return self._lengths

    def rank_length(self, g: int) -> int:
        """Actions of grammar ``g``'s expansion."""
        lens = self.lengths()
        top = self.top_symbols[self.top_offsets[g]:self.top_offsets[g + 1]]
        total = int(lens[top].sum()) if len(top) else 0
        if total > MAX_LENGTH:
            raise GrammarError("a rank expands beyond the limits")
        return total

    def top(self, g: int) -> np.ndarray:
        return self.top_symbols[self.top_offsets[g]:self.top_offsets[g + 1]]

    def body(self, rule: int) -> np.ndarray:
        return self.rule_symbols[self.rule_offsets[rule]:self.rule_offsets[rule + 1]]

    # -- counting without expanding ---------------------------------------------------------
    def terminal_counts(self, g: int) -> np.ndarray:
        """How many times each signature occurs in grammar ``g``'s expansion (int64 [nterm]),
        from the rule table alone: multiplicities flow from the top through each rule once."""
        n, R = self.nterm, self.nrules
        mult = np.zeros(n + R, np.int64)
        np.add.at(mult, self.top(g), 1)
        syms = self.rule_symbols
        for j in range(R - 1, -1, -1):
            m = mult[n + j]
            if m:
                np.add.at(mult, syms[self.rule_offsets[j]:self.rule_offsets[j + 1]],
                          m * int(self.rule_counts[j]))
        return mult[:n]

    def shapes(self) -> np.ndarray:
        """A number per rank program, equal for programs that differ only in loop counts
        (ranks running the same loops for more or fewer iterations)."""
        n = self.nterm
        rule_shape: list[int] = []
        ids: dict[tuple, int] = {}
        for j in range(self.nrules):
            key = tuple(s if s < n else n + rule_shape[s - n] for s in self.body(j).tolist())
            rule_shape.append(ids.setdefault(key, len(ids)))
        tops: dict[tuple, int] = {}
        out = []
        for g in range(len(self.top_offsets) - 1):
            key = tuple(s if s < n else n + rule_shape[s - n] for s in self.top(g).tolist())
            out.append(tops.setdefault(key, len(tops)))
        return np.array(out, np.int64)

    # -- expansion --------------------------------------------------------------------------
    def _rule_array(self, rule: int) -> np.ndarray:
        """The whole expansion of a (short) rule, cached."""
        got = self._cache.get(rule)
        if got is None:
            body = np.concatenate([self._symbol_array(int(s)) for s in self.body(rule)])
            got = np.tile(body, int(self.rule_counts[rule]))
            self._cache[rule] = got
        return got

    def _symbol_array(self, s: int) -> np.ndarray:
        if s < self.nterm:
            return np.array([s], np.int64)
        return self._rule_array(s - self.nterm)

    def expand(self, g: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Signature ids of actions ``lo:hi`` of grammar ``g``'s expansion (only that part is
        built: whole iterations and rules outside it are skipped by their lengths)."""
        total = self.rank_length(g)
        hi = total if hi is None else min(hi, total)
        lo = max(0, lo)
        out: list[np.ndarray] = []
        if hi > lo:
            self._expand_seq(self.top(g), lo, hi, out)
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def _expand_seq(self, seq: np.ndarray, lo: int, hi: int, out: list) -> None:
        lens = self.lengths()[seq]
        ends = np.cumsum(lens)
        first = int(np.searchsorted(ends, lo, side="right"))
        start = int(ends[first - 1]) if first else 0
        for i in range(first, len(seq)):
            if start >= hi:
                break
            n = int(lens[i])
            self._expand_symbol(int(seq[i]), max(lo - start, 0), min(hi - start, n), n, out)
            start += n

    def _expand_symbol(self, s: int, lo: int, hi: int, n: int, out: list) -> None:
        if s < self.nterm:
            out.append(np.array([s], np.int64))
            return
        rule = s - self.nterm
        if n <= _CACHE_ROWS:
            out.append(self._rule_array(rule)[lo:hi])
            return
        body = self.body(rule)
        per = n // int(self.rule_counts[rule])
        it = lo // per
        while it * per < hi:
            base = it * per
            a, b = max(lo - base, 0), min(hi - base, per)
            if a == 0 and b == per and per <= _CACHE_ROWS:   # whole short iterations: tile
                k = min((hi - base) // per, int(self.rule_counts[rule]) - it)
                piece = np.concatenate([self._symbol_array(int(x)) for x in body])
                out.append(np.tile(piece, k))
                it += k
                continue
            self._expand_seq(body, a, b, out)
            it += 1


# -- building ----------------------------------------------------------------------------------

class _Builder:
    """Rules being collected: a body and count map to one rule id, shared by all streams."""

    def __init__(self, nterm: int):
        self.nterm = nterm
        self.ids: dict[tuple, int] = {}
        self.bodies: list[np.ndarray] = []
        self.counts: list[int] = []

    def rule(self, body: np.ndarray, count: int) -> int:
        if len(body) == 1 and body[0] >= self.nterm:   # a loop of one loop: one loop
            inner = int(body[0]) - self.nterm
            body, count = self.bodies[inner], count * self.counts[inner]
        key = (body.tobytes(), count)
        j = self.ids.get(key)
        if j is None:
            j = self.ids[key] = len(self.counts)
            self.bodies.append(body.copy())
            self.counts.append(count)
        return self.nterm + j


def _long_periods(seq: np.ndarray) -> list[int]:
    """Periods above SMALL_PERIODS worth a fold: the most frequent distances from a symbol to
    its next occurrence (asked for only when no small period folds: ~30 us a stream)."""
    n = len(seq)
    if n < 2 * SMALL_PERIODS:
        return []
    narrow = seq.astype(np.uint16) if seq.max() < 1 << 16 else seq   # (ids >= 0)
    order = np.argsort(narrow, kind="stable")         # (16-bit keys: numpy's radix sort)
    sorted_seq = narrow[order]
    same = sorted_seq[1:] == sorted_seq[:-1]
    dist = (order[1:] - order[:-1])[same]
    dist = dist[(dist > SMALL_PERIODS) & (dist <= min(MAX_PERIOD, n // 2))]
    if not len(dist):
        return []
    counts = np.bincount(dist)                        # (distances <= MAX_PERIOD: no sort)
    values = np.flatnonzero(counts)
    counts = counts[values]
    top = np.argsort(-counts, kind="stable")[:CANDIDATES]
    keep = values[top[counts[top] >= 2]]
    return sorted(int(p) for p in keep)


def has_run(m: np.ndarray, p: int) -> bool:
    """Whether the boolean array ``m`` holds ``p`` consecutive Trues: ``p`` one bytes found in
    its bytes (a copy and one search in C: 3-6x faster than log2(p) doublings of numpy arrays,
    2-6 us each on 5 k symbols, of which the grammar of a trace of 15-40 k actions tries
    30-200)."""
    return b"\x01" * p in np.ascontiguousarray(m, bool).view(np.uint8).tobytes()


def _fold(seq: np.ndarray, p: int, rules: _Builder) -> np.ndarray:
    """Every tandem repeat of period ``p`` (at least two copies) replaced by one rule symbol."""
    n = len(seq)
    if n < 2 * p:
        return seq
    m = seq[:-p] == seq[p:]
    if not has_run(m, p):           # (most candidates: decided without index arrays)
        return seq
    edges = np.flatnonzero(m[1:] != m[:-1]) + 1      # where runs of equal ones start and end
    if m[0]:
        edges = np.concatenate([[0], edges])
    if m[-1]:
        edges = np.concatenate([edges, [len(m)]])
    starts = edges[0::2]
    lens = edges[1::2] - starts
    ok = lens >= p
    starts, lens = starts[ok], lens[ok]
    copies = (lens + p) // p
    if (starts[1:] < (starts + copies * p)[:-1]).any():
        return _fold_overlapping(seq, p, starts, lens, rules)
    return _replace(seq, p, starts, copies, rules)


def _replace(seq: np.ndarray, p: int, starts: np.ndarray, copies: np.ndarray,
             rules: _Builder) -> np.ndarray:
    """``seq`` with each repeat (``copies`` times ``seq[s:s+p]`` from each of ``starts``, none
    overlapping the next) replaced by its rule symbol."""
    n = len(seq)
    ends = starts + copies * p
    if len(starts) < 16:
        keep = np.ones(n, bool)
        for s, e in zip(starts.tolist(), ends.tolist()):
            keep[s + 1:e] = False
    else:                            # a toggle where a repeat's tail starts and after it
        tails = np.zeros(n + 1, bool)    # (the repeats apart: no two at one place; a running
        tails[starts + 1] = True         # xor of bytes took half a running sum's time)
        tails[ends] = True
        keep = ~np.logical_xor.accumulate(tails[:n])
    new = seq[keep]                  # (each repeat's first symbol kept, at its place less
    gone = copies * p - 1            # the symbols the repeats before it left out)
    new[starts - (np.cumsum(gone) - gone)] = _rule_symbols(seq, p, starts, copies, rules)
    return new


#: Below this many repeats in a fold, a rule lookup per repeat (above, one per distinct repeat
#: after a sort of the repeats: ~25 us, which 60-70 lookups take).
FEW_REPEATS = 64


def _rule_symbols(seq: np.ndarray, p: int, starts: np.ndarray, copies: np.ndarray,
                  rules: _Builder) -> np.ndarray:
    """The rule symbol of each repeat (body ``seq[s:s+p]``, ``copies`` times), rules added in
    the order of their first repeat (one :meth:`_Builder.rule` call per distinct repeat)."""
    if len(starts) < FEW_REPEATS:
        return np.array([rules.rule(seq[s:s + p], k)
                         for s, k in zip(starts.tolist(), copies.tolist())], seq.dtype)
    rows = np.empty((len(starts), p + 1), seq.dtype)
    rows[:, :p] = seq[starts[:, None] + np.arange(p)]
    rows[:, p] = copies
    _, first, which = np.unique(_row_keys(rows), return_index=True, return_inverse=True)
    order = np.argsort(first)
    symbols = np.empty(len(first), seq.dtype)
    for u, i in zip(order.tolist(), first[order].tolist()):
        symbols[u] = rules.rule(rows[i, :p], int(copies[i]))
    return symbols[which.ravel()]


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """A key per row of non-negative integers, equal where the rows are: the row's digits in
    base (largest + 1) where they fit an int64 (np.unique took 0.05 ms of 2,032 repeats of 3
    numbers so, 0.14 of their bytes: grammar.build of miniMD 4r 3.90 -> 3.52 ms, of miniAMR
    4r 12.4 -> 11.9), else its bytes."""
    base = int(rows.max()) + 1
    if base ** rows.shape[1] >= 1 << 63:
        return rows.view(np.dtype((np.void, rows.itemsize * rows.shape[1]))).ravel()
    key = np.zeros(len(rows), np.int64)
    for col in rows.T:                   # (Horner's rule, a column at a time)
        key = key * base + col
    return key


def _fold_overlapping(seq: np.ndarray, p: int, starts: np.ndarray, lens: np.ndarray,
                      rules: _Builder) -> np.ndarray:
    """:func:`_fold` where a repeat starts inside the previous one's copies: each repeat what
    is left of it after the previous one (a loop over the runs' numbers), then all replaced
    at once (:func:`_replace`: a rule lookup per distinct repeat, where one per repeat took
    ~0.7 ms of HPCG 2r's ~1,000 overlapping repeats)."""
    kept, copies = [], []
    end = 0
    for s, L in zip(starts.tolist(), lens.tolist()):
        if s < end:              # overlaps the previous repeat: what is left of it
            L -= end - s
            s = end
            if L < p:
                continue
        k = (L + p) // p
        kept.append(s)
        copies.append(k)
        end = s + k * p
    return _replace(seq, p, np.array(kept, np.int64), np.array(copies, np.int64), rules)


def _periods(seq: np.ndarray):
    """The periods to try, in order: 1..SMALL_PERIODS, then the long ones (found only when
    no small one folded: a fold starts a new round)."""
    yield from range(1, min(SMALL_PERIODS, len(seq) // 2) + 1)
    yield from _long_periods(seq)


def fold_stream(seq: np.ndarray, rules: _Builder) -> np.ndarray:
    """One rank's signature ids folded into nested loops (rules added to ``rules``)."""
    for _ in range(MAX_ROUNDS):      # after any fold, the short periods first again: bodies
        before = len(seq)            # stay primitive and inner loops fold before outer ones
        for p in _periods(seq):
            seq = _fold(seq, p, rules)
            if len(seq) < before:
                break
        if len(seq) == before:
            break
    return seq


def build(ids: np.ndarray, rank_offsets: np.ndarray, nterm: int,
          apart: list[bytes] | None = None) -> Grammar:
    """The grammar of a whole trace: ``ids`` the signature id of every action, rank-major;
    ranks of different ``apart`` keys run programs of their own even where their streams are
    the same (store.py: the same symbols with other message sizes, whose time statistics a
    model keeps per program)."""
    rules = _Builder(nterm)
    tops: dict[tuple, int] = {}
    top_seqs: list[np.ndarray] = []
    rank_grammar = np.zeros(len(rank_offsets) - 1, np.int64)
    folded: dict[tuple, int] = {}
    # symbols (signatures, then at most one rule per action) as int32 where they fit: the
    # folds compare half the bytes
    ids = np.asarray(ids, np.int32 if nterm + len(ids) < 1 << 31 else np.int64)
    for r in range(len(rank_offsets) - 1):
        stream = ids[rank_offsets[r]:rank_offsets[r + 1]]
        own = b"" if apart is None else apart[r]
        key = (stream.tobytes(), own)
        g = folded.get(key)
        if g is None:
            top = fold_stream(stream, rules)
            tkey = (top.tobytes(), own)
            g = tops.get(tkey)
            if g is None:
                g = tops[tkey] = len(top_seqs)
                top_seqs.append(top)
            folded[key] = g
        rank_grammar[r] = g
    lens = [len(b) for b in rules.bodies]
    return Grammar(
        nterm=nterm,
        rule_offsets=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
        rule_symbols=np.concatenate(rules.bodies).astype(np.int64) if rules.bodies
        else np.zeros(0, np.int64),
        rule_counts=np.array(rules.counts, np.int64),
        top_offsets=np.concatenate([[0], np.cumsum([len(t) for t in top_seqs])]).astype(np.int64),
        top_symbols=np.concatenate(top_seqs).astype(np.int64) if top_seqs
        else np.zeros(0, np.int64),
        rank_grammar=rank_grammar)
