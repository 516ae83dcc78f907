"""Loops of phases.  An all-to-all exchanged in P - 1 phases (public PRK MPI1 Transpose: at phase
j rank r receives from r + j and sends to r - j, tag j) is one block of calls repeated with its
peers and tags advancing by a fixed step.  The loop grammar (``compress/grammar.py``) folds
identical repeats only, so each run held P - 1 blocks of other calls, another program at each
scale, and its partners (every other rank) happened to be a small torus's neighbours (2x2 at 4
ranks, 2x2x2 at 8): it was refused as grid positions seen in too few runs.

Here, in the largest run, consecutive blocks of a loop tree's items that are equal but for
their rank-relative peers and tags, where at block j each is the first block's plus j times a
step (peers modulo P), 3 blocks or more with some peer advancing, become one *phased* loop
(:class:`.structure.Node`): the first block, each of its leaves with its step.  A sendrecv's
source and receive tag (its vector, the source stored relative to the rank) are a peer and a
tag of their own (PRK Transpose built SYNCHRONOUS: one MPI_Sendrecv per phase, each another
vector content, was another program at each scale, refused with --force too).  The smaller
runs' blocks are folded where the largest run's are, item by item (2 ranks have one phase: a
loop of one iteration, its steps unknown).  The loop's count is fitted as any loop's (P - 1:
1, 2, 3 at 2, 3, 4 ranks); at the target each phase's peers, tags, sources and receive tags
are made from the first one's and the steps (:func:`shifts`, :func:`move`).
"""
from __future__ import annotations

import numpy as np

from ..compress import signatures as SG
from . import structure as ST

#: longest block (items of a loop body) searched for
MAX_BLOCK = 256
#: blocks the largest run must have (two exchanges in two directions are two blocks whose
#: peers "advance")
LEAST = 3
#: what advances per phase, a leaf's :attr:`.structure.Node.step`: peer, tag, a sendrecv's
#: source and receive tag (0 where it has none)
MOVING = 4


def _moving(sig: SG.Signatures) -> tuple[np.ndarray, np.ndarray]:
    """(signatures, 4) each signature's peer, tag, sendrecv source and receive tag, and which
    are rank-relative (a rank-relative peer, a sendrecv's source: stored as source - rank)."""
    table = sig.table
    vec = table["vec"].astype(np.int64)
    off = sig.vec_offsets[np.maximum(vec, 0)]
    sr = vec >= 0
    sr[sr] = sig.vec_values[off[sr]] == SG.VEC_SENDRECV
    values = np.zeros((len(table), MOVING), np.int64)
    values[:, 0], values[:, 1] = table["peer"], table["tag"]
    values[sr, 2], values[sr, 3] = sig.vec_values[off[sr] + 1], sig.vec_values[off[sr] + 2]
    return values, np.stack([table["peer_mode"] == 1, np.zeros(len(table), bool), sr,
                             np.zeros(len(table), bool)], axis=1)


class _Keys:
    """One run's items (leaves and loops) as integers, equal for items equal but for their
    rank-relative peers, tags, sendrecv sources and receive tags (every sendrecv vector one
    content); with each signature's :func:`_moving`."""

    def __init__(self, sig: SG.Signatures):
        self.values, self.relative = _moving(sig)
        masked = sig.table.copy()
        masked["peer"][masked["peer_mode"] == 1] = 0
        masked["tag"] = 0
        masked["vec"][self.relative[:, 2]] = -2
        self.leaf = np.unique(masked, return_inverse=True)[1].ravel()
        self.loops: dict = {}

    def of(self, node: ST.Node) -> int:
        if node.leaf:
            return int(self.leaf[node.sig])
        key = (node.count, node.phased, tuple(self.of(c) for c in node.children))
        return -1 - self.loops.setdefault(key, len(self.loops))


def _leaf_nodes(items: list):
    for c in items:
        if c.leaf:
            yield c
        else:
            yield from _leaf_nodes(c.children)


def _form(items: list, table: np.ndarray) -> tuple:
    """What must be equal in another run's block: kinds, modes, communicators, nesting."""
    return tuple((int(table["kind"][c.sig]), int(table["flags"][c.sig]),
                  int(table["peer_mode"][c.sig]), int(table["req_mode"][c.sig]),
                  int(table["comm"][c.sig])) if c.leaf else
                 (c.phased, _form(c.children, table)) for c in items)


def _progression(keys: _Keys, blocks: list, nranks: int):
    """(how many of ``blocks``, equal up to peers and tags, advance from the first on by one
    step per block; the steps, (leaves, 4): :data:`MOVING`'s, rank steps signed)."""
    sigs = np.array([[c.sig for c in _leaf_nodes(b)] for b in blocks], np.int64)
    if len(blocks) < 2:
        return len(blocks), np.zeros((sigs.shape[1], MOVING), np.int64)
    values, rel = keys.values[sigs], keys.relative[sigs[0]]
    step = np.where(rel, (values[1] - values[0]) % nranks, values[1] - values[0])
    off = values - values[0] - np.arange(len(blocks))[:, None, None] * step
    ok = np.all(np.where(rel, off % nranks, off) == 0, axis=(1, 2))
    return (len(blocks) if ok.all() else int(np.argmin(ok))), \
        np.where(rel, ST.signed(step, nranks), step)


def _phased(block: list, count: int, steps) -> ST.Node:
    loop = ST.Node(count=count, children=list(block), phased=True)
    for k, leaf in enumerate(_leaf_nodes(block)):
        leaf.step = None if count < 2 else tuple(steps[k].tolist())
    return loop


def _find(node: ST.Node, keys: _Keys, nranks: int) -> int:
    """Fold the progressions among ``node``'s items (those covering most items first, then
    the shortest blocks, then the earliest) and in its loops'; how many were folded."""
    items = node.children
    key = np.array([keys.of(c) for c in items], np.int64)
    found = []
    for length in range(1, min(len(items) // 2, MAX_BLOCK) + 1):
        edge = np.diff(np.r_[0, (key[:-length] == key[length:]).astype(np.int8), 0])
        for a, b in zip(np.flatnonzero(edge == 1).tolist(), np.flatnonzero(edge == -1).tolist()):
            if (b - a) // length + 1 < LEAST:
                continue
            blocks = [items[a + i * length:a + (i + 1) * length]
                      for i in range((b - a) // length + 1)]
            count, steps = _progression(keys, blocks, nranks)
            if count >= LEAST and steps[:, ::2].any():      # (a peer or a source)
                found.append((a, length, count, steps))
    found.sort(key=lambda f: (-f[1] * f[2], f[1], f[0]))
    taken = np.zeros(len(items), bool)
    chosen = []
    for a, length, count, steps in found:
        if not taken[a:a + length * count].any():
            taken[a:a + length * count] = True
            chosen.append((a, length, count, steps))
    out, at = [], 0
    for a, length, count, steps in sorted(chosen, key=lambda f: f[0]):
        out += items[at:a] + [_phased(items[a:a + length], count, steps)]
        at = a + length * count
    node.children = out + items[at:]
    return len(chosen) + sum(_find(c, keys, nranks) for c in node.children
                             if not c.leaf and not c.phased)


def _follow(ref: ST.Node, ref_table: np.ndarray, node: ST.Node, keys: _Keys,
            table: np.ndarray, nranks: int) -> None:
    """Fold ``node``'s blocks where ``ref`` (its class's tree in the largest run, folded) has
    its phased loops, item by item (as many blocks as are equal but for peers and tags and
    advance by one step each)."""
    items, out, at = node.children, [], 0
    for a in ref.children:
        if at >= len(items):
            break
        size = len(a.children)
        if a.phased and _form(items[at:at + size], table) == _form(a.children, ref_table):
            first = [keys.of(c) for c in items[at:at + size]]
            count = 1
            while [keys.of(c) for c in items[at + count * size:at + (count + 1) * size]] == \
                    first:
                count += 1
            count, steps = _progression(
                keys, [items[at + i * size:at + (i + 1) * size] for i in range(count)], nranks)
            out.append(_phased(items[at:at + size], count, steps))
            at += count * size
            continue
        if not a.leaf and not a.phased and not items[at].leaf and not items[at].phased:
            _follow(a, ref_table, items[at], keys, table, nranks)
        out.append(items[at])
        at += 1
    node.children = out + items[at:]


def _rewalk(run: ST.Run) -> None:
    for rc in run.classes.values():
        rc.loops, rc.leaves = [], []
        ST.walk(rc.tree, rc.loops, rc.leaves)


def follow(ref: ST.Run, run: ST.Run) -> None:
    """Fold ``run``'s classes' blocks where the same classes of ``ref`` (folded) have phased
    loops."""
    keys = _Keys(run.sig)
    for name, rc in run.classes.items():
        if name in ref.classes:
            _follow(ref.classes[name].tree, ref.sig.table, rc.tree, keys, run.sig.table,
                    run.nranks)
    _rewalk(run)


def fold(runs: list[ST.Run]) -> int:
    """Fold the loops of phases of the runs' class trees: the largest run's where it has them,
    the others' where it does; how many the largest run has."""
    ref = max(runs, key=lambda r: r.nranks)
    keys = _Keys(ref.sig)
    made = sum(_find(rc.tree, keys, ref.nranks) for rc in ref.classes.values())
    if made:
        _rewalk(ref)
        for run in runs:
            if run is not ref:
                follow(ref, run)
    return made


def counts(run: ST.Run) -> dict:
    """Each class's phased loops' counts, in tree order."""
    return {name: [lp.count for lp in rc.loops if lp.phased]
            for name, rc in run.classes.items()}


def shifts(tree: ST.Node, loop_counts: list) -> np.ndarray:
    """(actions, 4): per action of the tree's expansion with ``loop_counts`` (its loops in
    pre-order, as :func:`.structure.leaf_stream`), how far its peer, tag, sendrecv source and
    receive tag (:data:`MOVING`) are from its leaf's: the iteration of its phased loop times
    the leaf's step (outside phased loops a leaf keeps :class:`.structure.Node`'s (0, 0))."""
    it = iter(loop_counts)

    def expand(n: ST.Node) -> tuple[np.ndarray, np.ndarray]:
        steps, moved = [np.zeros((0, MOVING), np.int64)], [np.zeros((0, MOVING), np.int64)]
        for c in n.children:
            if c.leaf:
                steps.append(np.zeros((1, MOVING), np.int64))
                steps[-1][0, :len(c.step or ())] = c.step or ()
                moved.append(np.zeros((1, MOVING), np.int64))
                continue
            count = int(next(it))
            s, m = expand(c)
            s, m = np.tile(s, (count, 1)), np.tile(m, (count, 1))
            if c.phased:
                m = m + np.repeat(np.arange(count, dtype=np.int64), len(s) // max(count, 1)
                                  )[:, None] * s
                s = np.zeros_like(s)
            steps.append(s)
            moved.append(m)
        return np.concatenate(steps), np.concatenate(moved)
    return expand(tree)[1]


def move(a: np.ndarray, vec: np.ndarray, moved: np.ndarray, nranks: int) -> None:
    """Rank 0's program ``a`` (its vector entries ``vec``, sendrecv sources set) with each
    action's peer, tag, sendrecv source and receive tag moved by :func:`shifts`'s ``moved``."""
    a["peer"] = np.where(moved[:, 0] != 0, (a["peer"] + moved[:, 0]) % nranks, a["peer"])
    a["tag"] += moved[:, 1].astype(a["tag"].dtype)
    sr = np.flatnonzero(moved[:, 2:].any(axis=1))
    at = (np.cumsum(a["vec_len"]) - a["vec_len"])[sr]
    vec[at] = (vec[at] + moved[sr, 2]) % nranks
    vec[at + 1] += moved[sr, 3]
