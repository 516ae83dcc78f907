"""Call signatures whose peers are grid offsets: the compressed signatures
(``compress/signatures.py``) store a peer as ``(peer - rank) mod P``, which for a 2-D grid
changes with the row length and at the end of each row; here every rank-relative peer (and a
sendrecv's source) is replaced by its encoded offset on the run's grid (:mod:`.grid`), so
that ranks at the same position have one program at every scale."""
from __future__ import annotations

import numpy as np

from .. import kinds as K
from ..compress import signatures as SG
from ..errors import MinitraceError
from . import grid as G
from . import grid_comms as GC

#: ``decode`` at this many ranks leaves encoded offsets as they are
UNWRAPPED = 1 << 40


def encode(data, grid: G.Grid, sig: SG.Signatures | None = None,
           comm_labels: dict | None = None) -> SG.Signatures:
    """The signatures of ``data`` (``sig`` when already encoded) with grid-offset peers and
    cart_sub communicators as their labels (:mod:`.grid_comms`)."""
    sig = sig if sig is not None else SG.encode(data)
    rows = sig.table[sig.ids]
    rank = data.rank_of().astype(np.int64)
    rel = rows["peer_mode"] == 1
    cols = {f: np.ascontiguousarray(rows[f]) for f in SG.SIGNATURE_DTYPE.names}
    cols["peer"] = cols["peer"].astype(np.int64)
    cols["peer"][rel] = G.encode(grid.offsets(rank[rel], data.actions["peer"][rel]))
    off, values = sig.vec_offsets, sig.vec_values
    vec = rows["vec"].astype(np.int64)
    has = vec >= 0
    code = np.full(len(vec), -1, np.int64)
    code[has] = values[off[vec[has]]]
    sr = np.flatnonzero(code == SG.VEC_SENDRECV)
    if len(sr):
        source = (values[off[vec[sr]] + 1] + rank[sr]) % data.nranks
        where = G.encode(grid.offsets(rank[sr], source))
        pairs, inverse = np.unique(np.stack([vec[sr], where], axis=1), axis=0,
                                   return_inverse=True)
        contents, ids = {}, []             # one id per distinct new content
        for v, w in pairs.tolist():
            c = values[off[v]:off[v + 1]].copy()
            c[1] = w
            ids.append(contents.setdefault(c.tobytes(), (len(contents), c))[0])
        contents = [c for _, c in contents.values()]
        nvec = len(off) - 1
        cols["vec"] = cols["vec"].copy()
        cols["vec"][sr] = nvec + np.array(ids, np.int64)[inverse.ravel()]
        off = np.concatenate([off, off[-1] + np.cumsum([len(c) for c in contents])])
        values = np.concatenate([values] + contents)
    cols["peer"] = cols["peer"].astype(np.int32)
    if comm_labels:
        cols["comm"] = GC.relabel(cols["comm"], comm_labels)
        made = rows["kind"] == K.CODE["cart_sub"]
        cols["request"] = np.where(made, GC.relabel(cols["request"], comm_labels),
                                   cols["request"])
        at, codes = GC.roots(grid, cols["comm"], cols["kind"],
                             data.actions["peer"].astype(np.int64))
        cols["peer"][at] = codes
    table, ids = SG.factorize(cols, len(rows))
    return SG.Signatures(table, ids, off, values, sig.new_requests, sig.new_request_offsets)


def offsets_equal(a, b, grid: G.Grid) -> np.ndarray:
    """Whether encoded offsets ``a`` (a run on ``grid``) are ``b`` (a larger run's): equal
    along open dimensions, equal modulo the extent along periodic ones (at extent 2 the +1 and
    -1 neighbours are one rank)."""
    x, y = G.decode(a, grid.ndims), G.decode(b, grid.ndims)
    same = np.ones(np.shape(a), bool)
    for k, (d, p) in enumerate(zip(grid.dims, grid.periods)):
        same &= ((x[..., k] - y[..., k]) % d == 0) if p else (x[..., k] == y[..., k])
    return same


def sendrecv_source(sig: SG.Signatures, leaves) -> np.ndarray:
    """The stored source (an encoded offset) of each leaf's sendrecv vector, -1 when none."""
    vec = sig.table["vec"][leaves].astype(np.int64)
    out = np.full(len(vec), -1, np.int64)
    has = vec >= 0
    off = sig.vec_offsets[vec[has]]
    is_sr = sig.vec_values[off] == SG.VEC_SENDRECV
    idx = np.flatnonzero(has)[is_sr]
    out[idx] = sig.vec_values[off[is_sr] + 1]
    return out


def resolve(members: list, key: str) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The grid offsets of each leaf of class ``key`` (leaf order, encoded; -1 where none):
    its peer and its sendrecv's source; and notes on how they were found.  Along each
    dimension the offset is the one of the run where that dimension is longest; along a
    periodic dimension of extent 2 or less in every run the direction is lost (the +1 and
    -1 neighbours are one rank): it is taken from a dimension the same calls use in the same
    order where it is known (the program treats its dimensions alike), else refused."""
    ref = members[-1]
    rows = ref.sig.table[ref.classes[key].leaves]
    peers = [r.sig.table[r.classes[key].leaves]["peer"] for r in members]
    sources = [sendrecv_source(r.sig, r.classes[key].leaves) for r in members]
    peer, notes = _resolve(members, key, peers, rows["peer_mode"] == 1, rows, "call")
    source, more = _resolve(members, key, sources, sources[-1] >= 0, rows, "sendrecv source")
    return peer, source, notes + more


def _resolve(members: list, key: str, codes: list, rel: np.ndarray, rows: np.ndarray,
             what: str) -> tuple[np.ndarray, list[str]]:
    """:func:`resolve` for one kind of offset: ``codes`` per run (leaf order), ``rel`` the
    leaves that have one."""
    ref = members[-1]
    ndims = ref.grid.ndims
    per_run = np.stack([G.decode(c, ndims) for c in codes])          # (runs, leaves, ndims)
    extents = np.array([r.grid.dims for r in members])              # (runs, ndims)
    best = extents.argmax(axis=0)
    out = per_run[best, :, np.arange(ndims)].T.copy()               # (leaves, ndims)
    longest = extents.max(axis=0)
    lost = [k for k in range(ndims) if ref.grid.periods[k] and longest[k] <= 2]
    known = [k for k in range(ndims) if k not in lost]
    notes = []
    for k in lost:
        along = np.flatnonzero(rel & (out[:, k] != 0))
        if not len(along):
            continue
        source = next((j for j in known if _alike(out, rel, rows, along, j, k)), None)
        if source is None:
            raise MinitraceError(
                f"rank class {key}: along the periodic dimension {k} (extent "
                f"{longest[k]} at most in the runs) the direction of {len(along)} {what}(s) "
                "is lost and no other dimension shows the same calls: record a scale with an "
                f"extent of 3 or more along dimension {k}")
        out[along, k] = np.sign(out[_axis(out, rel, source), source])
        notes.append(f"rank class {key}: directions of {what}s along periodic dimension {k} "
                     f"(extent {longest[k]} at most) taken from dimension {source}'s")
    return np.where(rel, G.encode(out), -1), notes


def _axis(out: np.ndarray, rel: np.ndarray, k: int) -> np.ndarray:
    """Leaves whose peer is a neighbour along dimension k only, in order."""
    others = np.delete(out, k, axis=1)
    return np.flatnonzero(rel & (out[:, k] != 0) & (np.abs(others).sum(axis=1) == 0))


def _alike(out, rel, rows, along, j, k) -> bool:
    """Dimension j's axis calls are dimension k's, call for call (same kinds in order)."""
    a, b = _axis(out, rel, j), _axis(out, rel, k)
    return len(a) == len(b) == len(along) and len(a) > 0 and \
        np.array_equal(rows["kind"][a], rows["kind"][b])
