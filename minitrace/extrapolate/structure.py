"""Are these runs one program at several scales?  Each run's rank programs as loop trees
(the compressed grammar, ``compress/grammar.py``), grouped into rank classes, compared class
by class up to loop counts and parameters; where they differ is said precisely.

Rank classes (the reduced scope, docs/EXTRAPOLATE.md): ranks whose rank-relative programs are
identical but for the sizes of their point-to-point messages (which a rank's data sets:
miniMD's ghost atoms), the class's sizes its ranks' median.  The class of the middle rank
(``P // 2``) is the *bulk*, which every rank not anchored elsewhere joins at the target scale;
the other classes are *anchored* at their ranks counted from both ends of the world (rank 0
is ``0``, the last rank ``-1``): a root, the ends of a non-periodic line.  Peers are
rank-relative offsets, read signed (``d`` or ``d - P``, whichever is nearer 0, as the largest
run shows them) so that a left neighbour stays ``-1`` at every scale; a smaller run agrees
when its offset is that one modulo its size.

On a 2-D or 3-D grid (:mod:`.grid`) peers are grid offsets (:mod:`.grid_peers`) and the
classes are positions: per open dimension low boundary, middle or high boundary (corners,
edges, faces, interior), every rank along periodic ones; within a position, ranks whose
program is not the one of the position's middle rank are anchored at their ranks as above.
A position may be absent at small scales (a 2x2 grid has no interior): each class is
compared, and fitted, over the runs that have it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import MinitraceError
from .. import kinds as K
from ..model import TraceColumns
from ..compress import grammar as G
from ..compress import signatures as SG
from . import grid as GR
from . import grid_comms as GC
from . import grid_peers as GP
from . import split_comms as SC

#: signature fields that must be equal at every scale (the rest are fitted or mapped)
SHAPE_FIELDS = ("kind", "flags", "peer_mode", "req_mode", "tag", "comm")
_PER_MEMBER = frozenset(K.CODE[k] for k in K.VECTOR_KINDS)


@dataclass
class Node:
    """A loop (``count`` repetitions of ``children``) or a leaf (one signature, ``sig``).
    A ``phased`` loop's iterations are not repeats (:mod:`.phases`): at iteration j each of
    its leaves' rank-relative peer and tag (a sendrecv's source and receive tag too) is the
    first iteration's plus j times the leaf's ``step`` (peer, tag, source, receive tag;
    outside phased loops (0, 0)); None: not known, the run had one phase."""

    count: int = 1
    children: list = field(default_factory=list)
    sig: int = -1
    phased: bool = False
    step: tuple | None = (0, 0)

    @property
    def leaf(self) -> bool:
        return self.sig >= 0


@dataclass
class RankClass:
    """Ranks of one run sharing a program: its loop tree and, in tree order, its loops and
    leaves (signature ids into the run's table)."""

    key: str                     # "bulk" or the anchored ranks, e.g. "0" or "0,-1"
    ranks: np.ndarray
    tree: Node
    loops: list                  # Node, pre-order
    leaves: list                 # signature ids, pre-order
    #: a class composed from others' parts (:mod:`.compose`), no rank of its own: the
    #: volume of each action of its composed sequence (taken from the calls it was made of)
    parts: np.ndarray | None = None


@dataclass
class Run:
    """One recorded run: its trace, signatures and rank classes."""

    path: str
    data: TraceColumns
    sig: SG.Signatures
    classes: dict                # key -> RankClass
    grid: GR.Grid | None = None  # None: a 1-D program (peers rank-relative)
    comm_labels: dict = field(default_factory=dict)   # cart_sub communicator id -> label
    #: classes :func:`common_part` left out (key -> why), which a class of that name in the
    #: largest run is not: a refusal names them so
    left_out: dict = field(default_factory=dict)
    #: each rank's [color, key] of its comm_splits (:mod:`.split_comms`)
    splits: SC.Splits = field(default_factory=SC.Splits)

    @property
    def nranks(self) -> int:
        return self.data.nranks


def tree_of(gram: G.Grammar, symbols, count: int = 1) -> Node:
    node = Node(count=count)
    for s in symbols:
        s = int(s)
        if s < gram.nterm:
            node.children.append(Node(sig=s))
        else:
            rule = s - gram.nterm
            node.children.append(tree_of(gram, gram.body(rule), int(gram.rule_counts[rule])))
    return node


def leaf_steps(node: Node) -> list:
    """Each leaf's ``step`` in pre-order (leaf order)."""
    out = []
    for child in node.children:
        out += [child.step] if child.leaf else leaf_steps(child)
    return out


def walk(node: Node, loops: list, leaves: list) -> None:
    for child in node.children:
        if child.leaf:
            leaves.append(child.sig)
        else:
            loops.append(child)
            walk(child, loops, leaves)


def leaf_stream(node: Node, counts: list | None = None) -> np.ndarray:
    """Leaf numbers (pre-order) of a loop tree's expansion; ``counts`` (loops in pre-order)
    replaces the tree's own."""
    it = iter(counts) if counts is not None else None
    leaf = iter(range(1 << 62))

    def expand(n: Node) -> np.ndarray:
        parts = []
        for c in n.children:
            if c.leaf:
                parts.append(np.array([next(leaf)], np.int64))
            else:
                count = c.count if it is None else next(it)
                parts.append(np.tile(expand(c), int(count)))
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return expand(node)


def signed(ranks: np.ndarray, nranks: int) -> np.ndarray:
    """Ranks (or rank-relative offsets) counted from the nearer end: ``r`` or ``r - P``."""
    ranks = np.asarray(ranks, np.int64)
    return np.where(ranks < (nranks + 1) // 2, ranks, ranks - nranks)


def signed_by_runs(values: list[np.ndarray], nranks: list[int]) -> np.ndarray:
    """Rank-relative offsets stored mod P in several runs (``values[0]`` the largest run's, the
    others aligned with it, element for element) as signed offsets: the largest run's, but
    where it holds exactly half its (even) size, +P/2 and -P/2 being one rank there, the sign
    another run tells apart (a sendrecv to rank + 2 from rank - 2 recorded at 4 ranks: both
    -2 there, +2 and -2 at 3 and 5 ranks); -P/2 where none does."""
    out = signed(values[0], nranks[0])
    half = nranks[0] // 2
    open_ = (nranks[0] % 2 == 0) & (np.asarray(values[0]) == half)
    for v, p in zip(values[1:], nranks[1:]):
        if not open_.any():
            break
        v = np.asarray(v)
        up, down = open_ & (v == half % p), open_ & (v == -half % p)
        out = np.where(up & ~down, half, out)
        open_ &= ~(up ^ down)
    return out


def load(path: str, data: TraceColumns, grid: GR.Grid | None = None,
         sig: SG.Signatures | None = None) -> Run:
    """A run's signatures, grammar and rank classes (on ``grid``: by grid position); its
    comm_splits named by what they are (:mod:`.split_comms`)."""
    sig = sig if sig is not None else SG.encode(data)
    labels = {}
    if grid is not None:
        labels = GC.labels(data)
        sig = GP.encode(data, grid, sig, labels)
    sig, split_labels, splits = SC.rewrite(data, sig)
    labels = {**labels, **split_labels}
    sig = _vector_sizes(sig, data.rank_of(), data.nranks)
    gram = G.build(sig.ids, data.rank_offsets, len(sig.table))
    P = data.nranks
    program = _sizeless(gram, sig.table)
    if grid is None:
        groups = [(("bulk", int(program[P // 2])), np.arange(P))]
    else:
        where = np.array(grid.positions(np.arange(P)), object)
        groups = []
        for pos in sorted(set(where)):
            ranks = np.flatnonzero(where == pos)
            programs, counts = np.unique(program[ranks], return_counts=True)
            middle = program[ranks[len(ranks) // 2]]
            main = middle if counts[programs == middle][0] == counts.max() else \
                programs[counts.argmax()]
            groups.append(((pos, int(main)), ranks))
    classes, table = {}, sig.table
    for (name, main), members in groups:
        programs = program[members]
        for g in np.unique(programs):
            ranks = members[programs == g]
            key = name if g == main else (grid and _pinned(grid, name, members, ranks)) or \
                ",".join(map(str, sorted(signed(ranks, P).tolist())))
            if key in classes:      # one anchored program at several positions
                ranks = np.union1d(classes[key].ranks, ranks)
            tree = tree_of(gram, gram.top(int(g)))
            loops, leaves = [], []
            walk(tree, loops, leaves)
            if len(np.unique(gram.rank_grammar[ranks])) > 1:    # sizes differ
                table, leaves = _typical_sizes(gram, table, ranks, tree)
            classes[key] = RankClass(key, ranks, tree, loops, leaves)
    if table is not sig.table:      # typical sizes added: the caller's signatures unchanged
        sig = replace(sig, table=table)
    return Run(path, data, sig, classes, grid, labels, splits=splits)


#: the signature fields that a rank's data may set (miniMD's ghost atoms per rank): ranks
#: whose programs differ in these only, in point-to-point calls, are one class
SIZE_FIELDS = ("bytes_sent", "bytes_recv")
#: the calls whose sizes may differ within a class; a collective's may not (a gather's root
#: receives the others' data: it stays a class of its own) but a vector collective's, whose
#: sizes per member are made at the target (:mod:`.per_member`; a gatherv's root, which
#: alone holds a vector, still a class of its own)
_POINT_TO_POINT = np.isin(np.arange(max(K.NAME) + 1), [
    K.CODE[n] for n in K.SENDS | K.RECVS | K.SENDRECVS | K.NONBLOCKING_SENDRECVS])
_VECTOR = np.isin(np.arange(max(K.NAME) + 1), list(_PER_MEMBER))


def _sizeless(gram: G.Grammar, table: np.ndarray) -> np.ndarray:
    """Per rank, a program id that is the same for ranks whose loop trees are equal (loop
    counts too) up to the sizes of their point-to-point messages and vector collectives: the
    smallest of their grammar's program ids."""
    same = _sizeless_rows(table)

    def form(node: Node) -> tuple:
        return tuple(int(same[c.sig]) if c.leaf else (c.count, form(c))
                     for c in node.children)
    first: dict = {}
    out = gram.rank_grammar.copy()
    for g in np.unique(gram.rank_grammar):
        out[gram.rank_grammar == g] = first.setdefault(form(tree_of(gram, gram.top(int(g)))),
                                                       int(g))
    return out


def _sizeless_rows(table: np.ndarray) -> np.ndarray:
    """Per signature, an id equal for signatures that differ only in the sizes of a
    point-to-point message or a vector collective (and, for the latter, in which vector it
    holds, not whether it holds one)."""
    plain = table.copy()
    v = _VECTOR[plain["kind"]]
    for f in SIZE_FIELDS:
        plain[f][_POINT_TO_POINT[plain["kind"]] | v] = 0
    plain["vec"][v] = np.minimum(plain["vec"][v], 0)        # (whether it holds one)
    return np.unique(plain, return_inverse=True)[1].ravel()


def _vector_sizes(sig: SG.Signatures, rank: np.ndarray, P: int) -> SG.Signatures:
    """``sig`` with each rank's vector collectives of one call but for their sizes one
    signature, of the lower median of their totals (a size one call had): where the sizes
    depend on the data (NPB IS's keys bucketed by destination) each step's call was another
    signature and the steps folded into no loop.  Their vectors, one size per member, are
    made at the target from the totals (:mod:`.per_member`)."""
    table = sig.table
    on = _VECTOR[table["kind"]]
    rows = np.flatnonzero(on[sig.ids])
    if not len(rows):
        return sig
    group = _sizeless_rows(table)
    ids = sig.ids[rows]
    key = group[ids].astype(np.int64) * P + rank[rows]
    keys, which = np.unique(key, return_inverse=True)
    new = table[ids[np.unique(which, return_index=True)[1]]].copy()    # (each key's first)
    for f in SIZE_FIELDS:
        x = table[f][ids]
        order = np.lexsort((x, which))
        count = np.bincount(which, minlength=len(keys))
        new[f] = x[order][np.cumsum(count) - count + (count - 1) // 2]
    table, index = _with_rows(table, new)
    out = sig.ids.copy()
    out[rows] = index[which]
    return replace(sig, table=table, ids=out)


def _with_rows(table: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(``table`` with those of signature ``rows`` it lacks added, each row's index in it)."""
    known = {row.tobytes(): k for k, row in enumerate(table)}
    extra = []
    index = np.empty(len(rows), np.int64)
    for k, row in enumerate(rows):
        at = known.get(row.tobytes())
        if at is None:
            at = known[row.tobytes()] = len(table) + len(extra)
            extra.append(row)
        index[k] = at
    if extra:
        table = np.concatenate([table, np.array(extra, table.dtype)])
    return table, index


def _typical_sizes(gram: G.Grammar, table: np.ndarray, ranks: np.ndarray, tree: Node):
    """(table, leaves) for ``tree``, the program of ``ranks`` up to their message sizes:
    each leaf's signature with the median of its ranks' sizes (the lower median: a size one
    rank sent), added to the table when no row has it.  Like a call's typical volume (the
    median over its class's ranks), it is fitted across runs; which rank sent which size is
    not kept (every rank of the class at the target sends the typical size)."""
    own: dict = {}
    for g in gram.rank_grammar[ranks]:
        if int(g) not in own:
            leaves: list = []
            walk(tree_of(gram, gram.top(int(g))), [], leaves)
            own[int(g)] = table[leaves][list(SIZE_FIELDS)]
    sizes = np.stack([own[int(g)] for g in gram.rank_grammar[ranks]])
    nodes = list(_leaf_nodes(tree))
    rows = table[[n.sig for n in nodes]].copy()
    for f in SIZE_FIELDS:
        rows[f] = np.sort(sizes[f], axis=0)[(len(ranks) - 1) // 2]
    table, index = _with_rows(table, rows)
    for node, k in zip(nodes, index.tolist()):
        node.sig = k
    return table, [n.sig for n in nodes]


def _leaf_nodes(node: Node):
    for child in node.children:
        if child.leaf:
            yield child
        else:
            yield from _leaf_nodes(child)


def _pinned(grid: GR.Grid, position: str, members: np.ndarray, ranks: np.ndarray):
    """``position@(c0,*,...)`` when ``ranks`` are exactly the ``members`` (one position's
    ranks) with these coordinates, counted from both ends, along some dimensions (the roots
    of a grid's rows or columns); else None."""
    coords = grid.coords(members)
    dims = np.array(grid.dims)
    place = np.where(coords < (dims + 1) // 2, coords, coords - dims)
    mine = np.isin(members, ranks)
    fixed = [k for k in range(grid.ndims) if len(set(place[mine, k].tolist())) == 1 and
             len(set(place[:, k].tolist())) > 1]      # one value, which tells ranks apart
    if not fixed:
        return None
    value = {k: int(place[mine, k][0]) for k in fixed}
    match = np.all([place[:, k] == v for k, v in value.items()], axis=0)
    if not np.array_equal(match, mine):
        return None
    return position + "@(" + ",".join(str(value[k]) if k in value else "*"
                                      for k in range(grid.ndims)) + ")"


def pinned_ranks(key: str, grid: GR.Grid, ranks: np.ndarray) -> np.ndarray:
    """Which of ``ranks`` (one position's, on ``grid``) a ``position@(...)`` class holds."""
    pattern = key.split("@")[1].strip("()").split(",")
    coords = grid.coords(ranks)
    dims = np.array(grid.dims)
    keep = np.ones(len(ranks), bool)
    for k, v in enumerate(pattern):
        if v != "*":
            keep &= coords[:, k] == int(v) % dims[k]
    return ranks[keep]


def anchored(key: str) -> bool:
    """An anchored class (its ranks, counted from both ends) rather than the bulk or a grid
    position (or a pinned place in one: ``position@(...)``)."""
    return key != "bulk" and not key.startswith("(")


def shape(node: Node, table: np.ndarray, vectors) -> tuple:
    if node.leaf:
        row = table[node.sig]
        return tuple(int(row[f]) for f in SHAPE_FIELDS) + (vectors(int(row["vec"]),
                                                                     int(row["kind"])),)
    return ("phases" if node.phased else "loop",) + tuple(shape(c, table, vectors)
                                                        for c in node.children)


def _looped(s: tuple) -> bool:
    return s[:1] in (("loop",), ("phases",))


def vector_reader(run: "Run"):
    """A vector's content as the shape compares it, without what changes with the scale: a
    sendrecv's source (compared as a peer: :func:`_peer_mismatches`), on a grid
    cart_create's extents, and a vector collective's sizes, one per member (made at the
    target from its totals: :mod:`.per_member`)."""
    sig = run.sig

    def content(v: int, kind: int) -> tuple:
        if v < 0:
            return ()
        if kind in _PER_MEMBER:
            return ("per member",)
        c = sig.vec_values[sig.vec_offsets[v]:sig.vec_offsets[v + 1]].tolist()
        if c[0] == SG.VEC_SENDRECV:
            c[1] = "source"
        if run.grid is not None and kind == K.CODE["cart_create"]:
            c = c[:1] + c[1 + (len(c) - 1) // 2:]
        return tuple(c)
    return content


def _describe(shape) -> str:
    if _looped(shape):
        return ("loop of " if shape[0] == "loop" else "loop of phases of ") + \
            str(len(shape) - 1) + " items"
    return f"{K.NAME[shape[0]]} (tag {shape[4]}, comm {shape[5]})"


def _first_difference(a: tuple, b: tuple, where: str = "") -> str:
    """Where two shapes first differ, as a path of positions ("item 3 of loop 2 ...")."""
    if a[:1] == b[:1] and _looped(a):
        for k, (x, y) in enumerate(zip(a[1:], b[1:])):
            if x != y:
                return _first_difference(x, y, f"{where}item {k + 1}/")
        return f"{where}: {len(a) - 1} items vs {len(b) - 1}"
    return f"{where.rstrip('/')}: {_describe(a)} vs {_describe(b)}{fields_differing(a, b)}"


def fields_differing(a: tuple, b: tuple) -> str:
    """What differs between two calls of one kind, tag and communicator, which
    :func:`_describe` writes alike (a test that completed a request and one that did not)."""
    if _looped(a) or _looped(b) or _describe(a) != _describe(b):
        return ""
    names = SHAPE_FIELDS + ("vector",)
    diff = [f"{n} {x} vs {y}" for n, x, y in zip(names, a, b) if x != y]
    return f" (differing in {', '.join(diff)})" if diff else ""


def _apart_from_bulk(run: Run, ref: Run, keys: list[str]) -> str:
    """Why a class of these runs is one of its own: where its program first differs from the
    bulk's (a comm_split_type with key = rank makes each rank a class: '(rank class 1 differs
    from the bulk at item 2: comm_split_type (tag -1, comm 0) vs comm_split_type (tag -1,
    comm 0) (differing in vector (0, 0, 1) vs (0, 0, 2)))'); empty without a bulk class."""
    for r in (ref, run):
        key = next((k for k in keys if k in r.classes), None)
        if key is not None and "bulk" in r.classes:
            read = vector_reader(r)
            a = shape(r.classes[key].tree, r.sig.table, read)
            b = shape(r.classes["bulk"].tree, r.sig.table, read)
            if a != b:
                return f" (rank class {key} differs from the bulk at {_first_difference(a, b)})"
    return ""


def each_its_own(run: Run) -> str:
    """Said when every rank of ``run`` (4 or more, no grid: an open line's 3 ranks are its
    two ends and its middle) is a class of its own: other scales have as many programs, none
    of which is in 3 runs (public HPL: each rank's part in the panel broadcasts and row swaps
    depends on its place in the grid)."""
    if run.grid is not None or run.nranks < 4 or len(run.classes) < run.nranks:
        return ""
    return (f"; every rank of {run.path} runs a program of its own ({run.nranks} classes for "
            f"{run.nranks} ranks): its calls depend on the rank, not only on its offset from "
            "the others")


def differences(runs: list[Run], peers: bool = True, partial: bool = False) -> list[str]:
    """Where the runs are not one program: one line per difference (empty: they are).  The
    largest run is the reference; ``peers=False`` compares the shapes only.  On a grid a
    position class may be missing from a run (a scale too small to have it); ``partial``:
    any class may (what is left after :func:`common_part`)."""
    ref = max(runs, key=lambda r: r.nranks)
    out = []
    for run in runs:
        if run is ref:
            continue
        where = f"{run.path} ({run.nranks} ranks) vs {ref.path} ({ref.nranks} ranks)"
        missing = sorted(k for k in set(ref.classes) ^ set(run.classes)
                         if not partial and (ref.grid is None or anchored(k)))
        if missing:
            out.append(f"{where}: rank classes differ: {sorted(run.classes)} vs "
                       f"{sorted(ref.classes)}{_apart_from_bulk(run, ref, missing)}"
                       f"{each_its_own(ref)}")
            continue
        for key, rc in ref.classes.items():
            if key not in run.classes:
                continue
            other = run.classes[key]
            a = shape(other.tree, run.sig.table, vector_reader(run))
            b = shape(rc.tree, ref.sig.table, vector_reader(ref))
            if a != b:
                out.append(f"{where}, rank class {key}: {_first_difference(a, b)}")
                continue
            if peers:
                out.extend(f"{where}, rank class {key}: {m}" for m in _peer_mismatches(
                    run, other, ref, rc))
    return out


def _peer_mismatches(run: Run, rc: RankClass, ref: Run, ref_rc: RankClass) -> list[str]:
    """Leaves whose peers or sendrecv sources are not the reference's (signed offsets modulo
    the run's size, or grid offsets modulo its extents; absolute peers equal)."""
    mine, theirs = run.sig.table[rc.leaves], ref.sig.table[ref_rc.leaves]
    rel = theirs["peer_mode"] == 1
    a, b = GP.sendrecv_source(run.sig, rc.leaves), GP.sendrecv_source(ref.sig, ref_rc.leaves)
    if run.grid is not None:
        bad = rel & ~GP.offsets_equal(mine["peer"], theirs["peer"], run.grid)
        bad |= ~rel & (mine["peer"] != theirs["peer"])
        bad_source = (b >= 0) & ~GP.offsets_equal(a, b, run.grid)
    else:
        # (half the reference's even size is +P/2 or -P/2: either agrees)
        def agree(ref_offsets, run_values):
            ok = signed(ref_offsets, ref.nranks) % run.nranks == run_values
            half = ref.nranks // 2 if ref.nranks % 2 == 0 else -1
            return ok | ((ref_offsets == half) & (half % run.nranks == run_values))
        bad = np.where(rel, ~agree(theirs["peer"], mine["peer"]),
                       (theirs["peer"] != mine["peer"]) & ~last_roots(theirs["peer"], ref,
                                                                     mine["peer"], run))
        bad_source = (b >= 0) & ~agree(b, a)
    out = [f"call {k + 1} ({_kind(theirs[k])}): peer {_peer(mine[k], run)} vs "
           f"{_peer(theirs[k], ref)}" for k in np.flatnonzero(bad)]
    out += [f"call {k + 1} ({_kind(theirs[k])}): source {_source(a[k], run)} vs "
            f"{_source(b[k], ref)}" for k in np.flatnonzero(bad_source & ~bad)]
    out += [f"call {k + 1} ({_kind(theirs[k])}): each phase's peer and tag advance by "
            f"{x} vs {y}" for k, (x, y) in enumerate(zip(leaf_steps(rc.tree),
                                                         leaf_steps(ref_rc.tree)))
            if x is not None and y is not None and _steps_differ(x, y, run.nranks)]
    return out[:5]


def _steps_differ(x: tuple, y: tuple, nranks: int) -> bool:
    """Whether two runs' steps of a phased leaf differ: the tags (the peer's, the receive's)
    as numbers, the peer and a sendrecv's source modulo the smaller run's ranks."""
    a, b = (np.pad(np.array(s, np.int64), (0, 4 - len(s))) for s in (x, y))
    return bool((a[1::2] != b[1::2]).any() or ((a[::2] - b[::2]) % nranks).any())


def last_roots(ref_peers: np.ndarray, ref: Run, peers: np.ndarray, run: Run) -> np.ndarray:
    """Mask of absolute peers (roots) that are each run's last rank: a reduction to the end
    of a pipeline (public PRK Synch_p2p reduces to rank size - 1, which the runs' roots 2, 3,
    4, 5 at 3-6 ranks made "peers differ": QA M7, session 33)."""
    return (ref_peers == ref.nranks - 1) & (peers == run.nranks - 1) & (ref.nranks > 1)


def _source(offset: int, run: Run) -> str:
    """A sendrecv's stored source, as :func:`_peer` writes a rank-relative peer."""
    if run.grid is not None:
        return "grid" + str(tuple(GR.decode(int(offset), run.grid.ndims).tolist()))
    return f"rank{int(signed(offset, run.nranks)):+d}"


def _kind(row) -> str:
    return K.NAME[int(row["kind"])]


def _peer(row, run: Run) -> str:
    if row["peer_mode"] == 1 and run.grid is not None:
        return "grid" + str(tuple(GR.decode(int(row["peer"]), run.grid.ndims).tolist()))
    if row["peer_mode"] == 1:
        return f"rank{int(signed(row['peer'], run.nranks)):+d}"
    return f"rank {int(row['peer'])}"


def check(runs: list[Run], force: bool = False) -> list[str]:
    """The differences in peers and the wildcard receives, which ``force`` overrides (the
    largest run's peers are extrapolated), and with ``force`` the classes of smaller runs left
    out because their loops or calls differ (:func:`common_part`); raise on any of these
    without ``force``."""
    shapes = differences(runs, peers=False)
    if shapes and not force:
        raise MinitraceError("the runs are not one program at several scales (their loops "
                             "or calls differ; --force extrapolates what they have in common "
                             "and says what it left out):\n  " + "\n  ".join(shapes))
    left_out = common_part(runs) if shapes else []
    found = differences(runs, partial=bool(shapes)) + wildcards(runs)
    if found and not force:
        raise MinitraceError("the runs' peers differ or depend on the data (--force to "
                             "extrapolate the largest run's):\n  " + "\n  ".join(found))
    return left_out + found


def common_part(runs: list[Run]) -> list[str]:
    """Leave out of the smaller runs each rank class that the largest run does not have or
    whose loops or calls differ from its (the class is then fitted over the other runs, 3 or
    more); one line per class left out."""
    ref = max(runs, key=lambda r: r.nranks)
    out = []
    for run in runs:
        if run is ref:
            continue
        for key in list(run.classes):
            where = f"left out: {run.path} ({run.nranks} ranks), rank class {key}"
            if key not in ref.classes:
                if ref.grid is None or anchored(key):
                    out.append(f"{where}: not in {ref.path} ({ref.nranks} ranks)")
                    del run.classes[key]
                continue
            a = shape(run.classes[key].tree, run.sig.table, vector_reader(run))
            b = shape(ref.classes[key].tree, ref.sig.table, vector_reader(ref))
            if a != b:
                out.append(f"{where}: {_first_difference(a, b)}")
                run.left_out[key] = "its loops or calls differ"
                del run.classes[key]
    return out


def wildcards(runs: list[Run]) -> list[str]:
    """Receives posted with MPI_ANY_SOURCE in the largest run: the peers recorded are the
    ones that matched, which may change with scale."""
    ref = max(runs, key=lambda r: r.nranks)
    out = []
    for key, rc in ref.classes.items():
        rows = ref.sig.table[rc.leaves]
        out += [f"{ref.path}, rank class {key}, call {k + 1} ({_kind(rows[k])}): posted with "
                "MPI_ANY_SOURCE (its matching may change with scale)"
                for k in np.flatnonzero(rows["flags"] & K.FLAG_ANY_SOURCE)[:5]]
    return out
