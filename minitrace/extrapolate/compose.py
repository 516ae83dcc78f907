"""Rank programs composed from per-direction parts: on a grid, a rank's program is one
skeleton (the calls that name no neighbour) plus one block per neighbour direction that exists
at its position (faces, edges, corners: up to 26 in 3-D).  A position that fewer than 3 runs
have (the interior of a 3-D grid exists from 3x3x3 ranks on) is built in each run that lacks it
from the skeleton of the nearest position the run has and, per direction, the block of the
nearest position that has that neighbour; its sizes and volumes are then fitted over the runs
like any class's (:mod:`.build`).

A leaf's direction is its peer's grid offset; a completion's is the one of the call that posted
its request; compute between calls goes with the call after it.  The blocks of one stretch of
skeleton come in phases (a run of irecvs, of sends, of waits): the composed stretch keeps the
phases, each in the canonical order (:mod:`.canonical`: by tag, then offset; waits in posting
order), and each wait's request reference is counted again.  Where this does not apply, the
position is not composed and the refusal says why: donors whose skeletons differ, phases that
differ, a request completed by a call that completes several (waitall) or in another loop than
the one that posted it, a request id posted twice.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import numpy as np

from .. import kinds as K
from ..compress import signatures as SG
from . import grid as GR
from . import structure as ST

_COMPUTE = K.code("compute")
_SORTED_POSTS = (K.code("irecv"), K.code("isend"), K.code("send"))
_WAIT = K.code("wait")
_POSTING = K.mask(K.REQUEST_KINDS)
#: neighbour steps along one dimension at each place on it
_STEPS = {GR.LOW: (0, 1), GR.HIGH: (-1, 0), GR.MIDDLE: (-1, 0, 1), GR.ALONE: (0,),
          "*": (-1, 0, 1)}


class NotComposable(Exception):
    """Why a position cannot be composed from the others' parts (one line)."""


def neighbours(position: str) -> set:
    """The grid offsets a rank at ``position`` (e.g. ``(lo,mid,hi)``) has a neighbour at."""
    steps = [_STEPS[x] for x in position.strip("()").split(",")]
    return {d for d in itertools.product(*steps) if any(d)}


def composable(key: str) -> bool:
    """A plain grid position (not an anchored rank nor a pinned place in a position)."""
    return key.startswith("(") and "@" not in key


@dataclass
class _Donor:
    """A recorded position class and, per leaf (pre-order), its direction (None: skeleton)
    and the leaf that posted the request it names (-1: none)."""

    key: str
    rc: ST.RankClass
    direction: list
    link: np.ndarray
    kind: np.ndarray
    index: dict = field(default_factory=dict)        # id(leaf node) -> leaf number

    @property
    def used(self) -> set:
        return {d for d in self.direction if d is not None}


@dataclass
class _Unit:
    """A skeleton item (one leaf or loop) or a direction's item: the compute leaves before
    it and its call (or a loop of that direction only)."""

    direction: tuple | None
    nodes: list


def _donor(run: ST.Run, key: str) -> _Donor:
    rc = run.classes[key]
    rows = run.sig.table[rc.leaves]
    off = GR.decode(rows["peer"], run.grid.ndims)
    direction = [tuple(int(x) for x in off[k]) if rows["peer_mode"][k] == 1 else None
                 for k in range(len(rows))]
    vec = rows["vec"].astype(np.int64)
    has = vec >= 0
    if has.any() and (run.sig.vec_values[run.sig.vec_offsets[vec[has]]] ==
                      SG.VEC_REQUESTS).any():
        raise NotComposable(f"rank class {key} completes several requests in one call "
                            "(waitall ...): the directions' blocks are not separable")
    link = np.full(len(rows), -1, np.int64)
    refs = rows["req_mode"] == SG.REQ_REF
    if (refs & _POSTING[rows["kind"]]).any():
        raise NotComposable(f"rank class {key} posts a request id it named before")
    if refs.any():
        sl = run.data.rank_slice(int(rc.ranks[0]))
        modes = run.sig.table["req_mode"][run.sig.ids[sl]]
        request = run.data.actions["request"][sl].astype(np.int64)
        stream = ST.leaf_stream(rc.tree)
        new = np.flatnonzero(modes == SG.REQ_NEW)
        order = np.argsort(request[new], kind="stable")
        ref = np.flatnonzero(modes == SG.REQ_REF)
        at = np.clip(np.searchsorted(request[new][order], request[ref]), 0, max(len(new) - 1, 0))
        post = new[order][at]
        if not len(new) or not np.array_equal(request[post], request[ref]):
            raise NotComposable(f"rank class {key} names a request it did not post")
        pairs = np.unique(np.stack([stream[ref], stream[post]], axis=1), axis=0)
        if len(np.unique(pairs[:, 0])) != len(pairs):
            raise NotComposable(f"rank class {key}: one call completes requests of several "
                                "calls")
        link[pairs[:, 0]] = pairs[:, 1]
        for leaf, posted in pairs.tolist():
            direction[leaf] = direction[posted]
    donor = _Donor(key, rc, direction, link, rows["kind"])
    leaves = iter(range(len(rows)))

    def number(node: ST.Node) -> None:
        for c in node.children:
            if c.leaf:
                donor.index[id(c)] = next(leaves)
            else:
                number(c)
    number(rc.tree)
    return donor


def _directions(node: ST.Node, donor: _Donor) -> set:
    """The directions of a node's leaves (None for skeleton calls; compute is neither)."""
    if node.leaf:
        k = donor.index[id(node)]
        if int(donor.kind[k]) == _COMPUTE:
            return set()
        return {donor.direction[k]}
    out = set()
    for c in node.children:
        out |= _directions(c, donor)
    return out


def _units(children: list, donor: _Donor) -> list:
    out, pending = [], []
    for child in children:
        if child.leaf and int(donor.kind[donor.index[id(child)]]) == _COMPUTE:
            pending.append(child)
            continue
        found = _directions(child, donor)
        d = next(iter(found)) if len(found) == 1 else None
        if d is None:
            out += [_Unit(None, [c]) for c in pending] + [_Unit(None, [child])]
        else:
            out.append(_Unit(d, pending + [child]))
        pending = []
    return out + [_Unit(None, [c]) for c in pending]


class _Composer:
    """One position of one run, built from donors (the skeleton's first)."""

    def __init__(self, run: ST.Run, donors: list, assign: dict):
        self.run, self.donors, self.assign = run, donors, assign
        self.origin = {}                # id(new leaf) -> (donor number, donor leaf)
        self.table = run.sig.table

    def copy(self, node: ST.Node, i: int) -> ST.Node:
        if node.leaf:
            new = ST.Node(sig=node.sig)
            self.origin[id(new)] = (i, self.donors[i].index[id(node)])
            return new
        return ST.Node(count=node.count, children=[self.copy(c, i) for c in node.children])

    def merge(self, nodes: list) -> list:
        """The composed children of corresponding loops (one per donor)."""
        units = [_units(n.children, d) for n, d in zip(nodes, self.donors)]
        skeletons = [[u for u in us if u.direction is None] for us in units]
        ref = skeletons[0]
        for i, sk in enumerate(skeletons[1:], 1):
            if len(sk) != len(ref) or any(
                    a.nodes[0].leaf != b.nodes[0].leaf or
                    (a.nodes[0].sig != b.nodes[0].sig if a.nodes[0].leaf else
                     a.nodes[0].count != b.nodes[0].count) for a, b in zip(ref, sk)):
                raise NotComposable(f"rank classes {self.donors[0].key} and "
                                    f"{self.donors[i].key} differ in more than their "
                                    "neighbours' calls")
        gaps = [self._gaps(us) for us in units]
        out = []
        for g in range(len(ref) + 1):
            out += self._stretch([gs[g] for gs in gaps], g)
            if g < len(ref):
                first = ref[g].nodes[0]
                out.append(self.copy(first, 0) if first.leaf else ST.Node(
                    count=first.count, children=self.merge([sk[g].nodes[0]
                                                             for sk in skeletons])))
        return out

    @staticmethod
    def _gaps(units: list) -> list:
        """The direction units between consecutive skeleton items."""
        gaps = [[]]
        for u in units:
            if u.direction is None:
                gaps.append([])
            else:
                gaps[-1].append(u)
        return gaps

    def _phase_kind(self, unit: _Unit, i: int):
        last = unit.nodes[-1]
        return int(self.donors[i].kind[self.donors[i].index[id(last)]]) if last.leaf \
            else "loop"

    def _stretch(self, per_donor: list, g: int) -> list:
        """One stretch between skeleton items: the assigned directions' units, phase by
        phase, each phase in canonical order."""
        phases = []
        for i, units in enumerate(per_donor):
            kinds = [self._phase_kind(u, i) for u in units]
            runs = [k for k, _ in itertools.groupby(kinds)]
            phases.append((runs, kinds))
        shapes = {tuple(r) for (r, _), units in zip(phases, per_donor) if units}
        if len(shapes) > 1:
            raise NotComposable("the neighbours' calls come in different phases at different "
                                "positions (e.g. " + " vs ".join(
                                    "/".join(K.NAME.get(k, str(k)) if isinstance(k, int) else k
                                             for k in s) for s in sorted(shapes, key=len)[:2])
                                + ")")
        chosen = []
        for i, units in enumerate(per_donor):
            kinds = phases[i][1]
            phase = np.cumsum([0] + [a != b for a, b in zip(kinds, kinds[1:])])
            chosen += [(int(phase[q]), i, q, u) for q, u in enumerate(units)
                       if self.assign.get(u.direction) == i]
        chosen.sort(key=lambda x: x[:3])
        out, posted = [], {}
        for _, group in itertools.groupby(chosen, key=lambda x: x[0]):
            group = list(group)
            kind = self._phase_kind(group[0][3], group[0][1])
            if kind in _SORTED_POSTS:
                group.sort(key=lambda x: (int(self.table["tag"][x[3].nodes[-1].sig]),
                                          x[3].direction))
            elif kind == _WAIT:
                group.sort(key=lambda x: posted.get(self._posted_by(x), len(posted)))
            for _, i, _, u in group:
                for n in u.nodes:
                    new = self.copy(n, i)
                    out.append(new)
                    if n.leaf:
                        posted[self.origin[id(new)]] = len(posted)
        return out

    def _posted_by(self, item) -> tuple:
        _, i, _, u = item
        d = self.donors[i]
        return (i, int(d.link[d.index[id(u.nodes[-1])]]))

    def requests(self, node: ST.Node) -> list:
        """Each completion's reference counted again in the composed order: the number of
        requests posted after the one it completes (same loop body); new signature rows."""
        rows = []
        for k, c in enumerate(node.children):
            if not c.leaf:
                rows += self.requests(c)
                continue
            i, leaf = self.origin[id(c)]
            posted = int(self.donors[i].link[leaf])
            if posted < 0:
                continue
            at = next((j for j in range(k) if node.children[j].leaf and
                       self.origin[id(node.children[j])] == (i, posted)), None)
            if at is None:
                raise NotComposable(f"rank class {self.donors[i].key} completes a request in "
                                    "another loop than the one that posted it")
            between = node.children[at + 1:k]
            if any(not n.leaf and self._news(n) for n in between):
                raise NotComposable(f"rank class {self.donors[i].key}: requests are posted in "
                                    "a loop between a post and its completion")
            row = self.table[c.sig].copy()
            row["request"] = sum(self._news(n) for n in between)
            rows.append((c, row))
        return rows

    def _news(self, node: ST.Node) -> int:
        if node.leaf:
            return int(self.table["req_mode"][node.sig] == SG.REQ_NEW)
        return sum(self._news(c) for c in node.children)


def _nearness(key: str, position: str) -> int:
    return sum(a == b for a, b in zip(key.strip("()").split(","),
                                      position.strip("()").split(",")))


def donors_of(run: ST.Run) -> dict:
    """The run's recorded grid positions as donors (NotComposable: one cannot be)."""
    return {k: _donor(run, k) for k, rc in run.classes.items()
            if composable(k) and rc.parts is None}


def compose_run(run: ST.Run, position: str, directions: set, donors: dict) -> ST.RankClass:
    """Class ``position`` of ``run`` composed from the run's position classes (``donors``,
    :func:`donors_of`): the skeleton of the nearest (most places alike, then most
    directions), each direction's block from the nearest that has it.  NotComposable says
    why it cannot be."""
    if not donors:
        raise NotComposable(f"{run.path} has no grid position to compose it from")
    order = sorted(donors, key=lambda k: (-_nearness(k, position), -len(donors[k].used), k))
    assign = {}
    for d in sorted(directions):
        having = [k for k in order if d in donors[k].used]
        if not having:
            raise NotComposable(f"no rank of {run.path} ({run.nranks} ranks) has a neighbour "
                                f"at {d}")
        assign[d] = having[0]
    taking = [order[0]] + sorted({k for k in assign.values()} - {order[0]},
                                 key=order.index)
    composer = _Composer(run, [donors[k] for k in taking],
                         {d: taking.index(k) for d, k in assign.items()})
    tree = ST.Node(children=composer.merge([donors[k].rc.tree for k in taking]))
    rows = composer.requests(tree)
    if rows:
        table = run.sig.table
        known = {table[k].tobytes(): k for k in range(len(table))}
        extra = []
        for node, row in rows:
            node.sig = known.setdefault(row.tobytes(), len(table) + len(extra))
            if node.sig == len(table) + len(extra):
                extra.append(row)
        if extra:
            run.sig = replace(run.sig, table=np.concatenate([table, np.array(extra)]))
    loops, leaves = [], []
    ST.walk(tree, loops, leaves)
    origin = []

    def collect(node: ST.Node) -> None:
        for c in node.children:
            if c.leaf:
                origin.append(composer.origin[id(c)])
            else:
                collect(c)
    collect(tree)
    which = np.array([w for w, _ in origin], np.int64)
    leaf = np.array([x for _, x in origin], np.int64)
    return ST.RankClass(position, np.zeros(0, np.int64), tree, loops, leaves,
                        parts=([donors[k].rc for k in taking], which, leaf))


def compose(runs: list[ST.Run], keys: list) -> tuple[list[str], dict]:
    """Compose, in each run that lacks it, every grid position of ``keys`` (the target's
    classes) that fewer than 3 runs have; the composed classes join the runs' classes.
    Returns notes (which positions were composed in which runs) and, per position that
    could not be, why (for the refusal)."""
    notes, why = [], {}
    if not runs or runs[0].grid is None:
        return notes, why
    used = set()
    for run in runs:
        for k in run.classes:
            if composable(k):
                rows = run.sig.table[run.classes[k].leaves]
                rel = rows["peer_mode"] == 1
                used |= {tuple(int(x) for x in o)
                         for o in GR.decode(rows["peer"][rel], run.grid.ndims)}
    donors = {}
    for key in keys:
        having = [r for r in runs if key in r.classes]
        if not composable(key) or len(having) >= 3:
            continue
        directions = neighbours(key) & used
        made, reasons = [], []
        for run in runs:
            if key in run.classes:
                continue
            try:
                if run.path not in donors:
                    donors[run.path] = donors_of(run)
                run.classes[key] = compose_run(run, key, directions, donors[run.path])
                made.append(run)
            except NotComposable as e:
                donors.setdefault(run.path, {})
                reasons.append(str(e))
        shapes = _shapes(having + made, key)
        if len(shapes) > 1:
            for run in made:
                del run.classes[key]
            reasons.append("its composed program is not the recorded one's (or differs "
                           "between runs)")
            made = []
        if made:
            notes.append(f"rank class {key} composed from the skeleton and per-direction "
                         "blocks of other positions in the runs at " + ", ".join(
                             str(r.nranks) for r in sorted(made, key=lambda r: r.nranks))
                         + " ranks")
        if reasons:
            why[key] = reasons[0]
    return notes, why


def _shapes(runs: list[ST.Run], key: str) -> set:
    return {repr(ST.shape(r.classes[key].tree, r.sig.table, ST.vector_reader(r)))
            for r in runs}
