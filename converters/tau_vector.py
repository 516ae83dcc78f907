"""TAU records -> actions with numpy, for traces whose requests complete in order.

``converters/tau.py`` reads records one by one (``RankStream`` and the request bookkeeping of
``_Rank``); here the same rules are applied to whole columns: MPI nesting from a per-rank
cumulative sum of enters and leaves, a row per outermost call, the messages and size counters
inside a call found by its index, compute gaps summed per group of calls, and requests matched
first-in first-out.  That last step is only TAU's rule when every completion is a ``wait`` or
``waitany`` and every match it makes is possible (the k-th received message inside waits is the
k-th irecv's and comes after it; the k-th wait without a message completes the k-th isend, posted
before it); ``decode`` returns None for any other trace (persistent requests, waitall, tests,
nesting cut short...), which the record-by-record reader then converts.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from minitrace import kinds as K
from minitrace.model import ACTION_DTYPE, EMPTY_ROW, TraceData, assign_vec_offsets

from .callstream import mpi_kind

_C = K.CODE
#: Kinds the first-in first-out request matching can handle (with every kind that neither makes
#: nor completes a request).
_FALLBACK = K.INITS | K.STARTS | (K.COMPLETIONS - {"wait", "waitany"}) | K.MATCHED_RECVS \
    | {"comm_idup"}


def _first(idx: np.ndarray, n: int, last: bool = False) -> np.ndarray:
    """Position in ``idx`` (sorted group numbers) of each group's first (or last) element; -1
    for the groups 0..n-1 without one."""
    out = np.full(n, -1, np.int64)
    if len(idx):
        change = idx[1:] != idx[:-1]
        pos = np.nonzero(np.r_[change, True] if last else np.r_[True, change])[0]
        out[idx[pos]] = pos
    return out


def _blank(n: int) -> dict[str, np.ndarray]:
    """Columns of ``n`` actions with every field 'none' (model.EMPTY_ROW): the rows are built
    column by column and packed into ACTION_DTYPE once (``_pack``)."""
    return {f: np.full(n, v, ACTION_DTYPE[f]) for f, v in zip(ACTION_DTYPE.names, EMPTY_ROW)}


def _pack(cols: dict[str, np.ndarray]) -> np.ndarray:
    out = np.empty(len(cols["kind"]), ACTION_DTYPE)
    for f in ACTION_DTYPE.names:
        out[f] = cols[f]
    return out


def _seen_before(flag: np.ndarray, first_of_rank: np.ndarray) -> np.ndarray:
    """Whether an earlier element of the same rank has ``flag`` (``first_of_rank``: index of
    each element's rank's first element)."""
    prior = np.cumsum(flag) - flag
    return prior - prior[first_of_rank] > 0


def decode(rec: np.ndarray, events: dict, nranks: int, t0: int, keep_regions: bool,
           coll_bytes: dict, send_tag: int, recv_tag: int):
    """TraceData of ``rec`` (thread 0 of every rank, each rank's in time order; ``t0`` the
    first time stamp, ``coll_bytes`` tau._COLL_BYTES) with the meta the record reader would
    give (sizes, roots, drops, pending requests, completeness; the caller adds provenance), or
    None when its requests need the record-by-record reader."""
    nid = rec["nid"]
    order = None if (nid[1:] >= nid[:-1]).all() else np.argsort(nid, kind="stable")
    ev, par, nid, ti = (rec[f] if order is None else rec[f][order]      # ranks one after
                        for f in ("ev", "par", "nid", "ti"))            # the other, columns
    ids = np.array(sorted(events), dtype=np.int64)
    defs = [events[i] for i in ids.tolist()]
    at = np.searchsorted(ids, ev)
    n_ev = len(ids)
    entry = np.array([d[3] == "EntryExit" for d in defs] + [False])
    mpi = np.array([d[3] == "EntryExit" and (d[0] == "MPI" or d[2].startswith("MPI_"))
                    for d in defs] + [False])
    user = entry & ~mpi & np.array([d[0] != "TRACER" for d in defs] + [False])
    code = np.array([_C[k] if (k := mpi_kind(d[2])) is not None else -1 for d in defs] + [-1])
    side = np.array([0 if d[3] == "EntryExit" else 1 if d[1] == send_tag else
                     -1 if d[1] == recv_tag else 0 for d in defs] + [0])
    sized = np.array([d[3] != "EntryExit" and d[1] not in (send_tag, recv_tag)
                      and d[3] == "TriggerValue" and " | " not in d[2]
                      and d[2].startswith("Message size for") for d in defs] + [False])
    at = np.where(at < n_ev, at, n_ev)
    nid = nid.astype(np.int64)
    t = (ti.astype(np.int64) - t0) * 1e-6
    is_mpi = mpi[at]
    enter = is_mpi & (par == 1)
    leave = is_mpi & (par == -1)
    delta = enter.astype(np.int64) - leave
    depth = np.cumsum(delta)
    n = len(ev)
    starts = np.searchsorted(nid, np.arange(nranks))           # first record of each rank
    base = np.zeros(n, np.int64)
    if n:
        base_at = np.r_[0, depth][starts]
        base = np.repeat(base_at, np.diff(np.r_[starts, n]))
    depth -= base                                              # per-rank nesting after a record
    before = depth - delta
    ends = np.r_[starts[1:], n]
    last_of_rank = (ends - 1)[ends > starts]
    if (depth < 0).any() or (depth[last_of_rank] != 0).any():
        return None                                            # cut or ill-nested calls
    outer_in = np.nonzero(enter & (before == 0))[0]
    outer_out = np.nonzero(leave & (depth == 0))[0]
    call_of = np.cumsum(enter & (before == 0)) - 1             # call of each record inside one
    kind = code[at[outer_in]]
    present = {K.NAME[k] for k in np.unique(kind[kind >= 0]).tolist()}
    if present & _FALLBACK:
        return None
    inside = before > 0
    ncalls = len(outer_in)
    c_rank = nid[outer_in]
    kept = kind >= 0

    # -- messages and sizes inside kept calls ------------------------------------------------
    msg = inside & (side[at] != 0)
    msg &= kept[np.where(msg, call_of, 0)] if ncalls else msg
    x = par.view(np.uint64)                                    # decode_message, on columns
    m_tag = (((x >> 16) & 0xFF) | (((x >> 48) & 0xFF) << 8)).astype(np.int64)
    m_other = (((x >> 24) & 0xFF) | (((x >> 56) & 0xFF) << 8)).astype(np.int64)
    m_len = ((x & 0xFFFF) | (((x >> 32) & 0x3FF) << 16)).astype(np.int64)
    sends = np.nonzero(msg & (side[at] == 1))[0]
    recvs = np.nonzero(msg & (side[at] == -1))[0]
    last_send = _first(call_of[sends], ncalls, last=True)
    first_recv = _first(call_of[recvs], ncalls)
    sz = np.nonzero(inside & sized[at])[0]           # (only kept collectives use them)
    size = np.zeros(ncalls, np.int64)
    if len(sz):
        np.maximum.at(size, call_of[sz], par[sz])

    # -- rows of kept calls --------------------------------------------------------------------
    rows = _blank(ncalls)
    kind0 = np.where(kept, kind, 0)
    rows["kind"] = kind0
    rows["t_start"], rows["t_end"] = t[outer_in], t[outer_out]
    is_k = {name: K.mask(s)[kind0] & kept
            for name, s in (("send", K.SENDS | K.SENDRECVS), ("recv", {"recv"}),
                            ("sr", K.SENDRECVS), ("isend", K.NONBLOCKING_SENDS),
                            ("irecv", {"irecv"}), ("wait", {"wait", "waitany"}))}
    has = is_k["send"] & (last_send >= 0)
    j = sends[last_send[has]]
    rows["peer"][has], rows["tag"][has], rows["bytes_sent"][has] = m_other[j], m_tag[j], m_len[j]
    has = is_k["recv"] & (first_recv >= 0)
    j = recvs[first_recv[has]]
    rows["peer"][has], rows["tag"][has], rows["bytes_recv"][has] = m_other[j], m_tag[j], m_len[j]
    sr = np.nonzero(is_k["sr"] & (first_recv >= 0))[0]
    j = recvs[first_recv[sr]]
    rows["bytes_recv"][sr] = m_len[j]
    rows["vec_len"][sr] = 2
    sr_vec = np.stack([m_other[j], m_tag[j]], 1).astype(np.int64)
    unsized, rootless = Counter(), Counter()
    for name in present & (K.COLLECTIVES - {"barrier"}):
        mine = kept & (kind == _C[name])
        ok = mine & (size > 0) & (name in coll_bytes)
        if ok.any():
            bs, br = coll_bytes[name](size[ok], nranks)
            rows["bytes_sent"][ok], rows["bytes_recv"][ok] = bs, br
        if (mine & ~ok).any():
            unsized[name] = int((mine & ~ok).sum())
        if name in K.ROOTED:
            rootless[name] = int(mine.sum())

    # -- requests, first in first out ---------------------------------------------------------
    reqs = np.nonzero(is_k["isend"] | is_k["irecv"])[0]
    rank_first = np.searchsorted(c_rank[reqs], np.arange(nranks))
    rows["request"][reqs] = np.arange(len(reqs)) - rank_first[c_rank[reqs]]
    w_msgs = recvs[is_k["wait"][call_of[recvs]]] if ncalls else recvs
    irecv = np.nonzero(is_k["irecv"])[0]
    isend = np.nonzero(is_k["isend"])[0]
    waits = np.nonzero(is_k["wait"])[0]
    with_msg = np.zeros(ncalls, bool)
    with_msg[call_of[w_msgs]] = True
    bare = waits[~with_msg[waits]]
    pending = 0
    for r in range(nranks):
        mi = w_msgs[nid[w_msgs] == r]
        ir = irecv[c_rank[irecv] == r]
        bw = bare[c_rank[bare] == r]
        iS = isend[c_rank[isend] == r]
        if len(mi) > len(ir) or len(bw) > len(iS):
            return None
        if (outer_in[ir[:len(mi)]] > mi).any() or (iS[:len(bw)] > bw).any():
            return None
        rows["peer"][ir[:len(mi)]] = m_other[mi]
        rows["tag"][ir[:len(mi)]] = m_tag[mi]
        rows["bytes_recv"][ir[:len(mi)]] = m_len[mi]
        first_of = _first(call_of[mi], ncalls)
        w = np.nonzero(first_of >= 0)[0]
        rows["request"][w] = rows["request"][ir[first_of[w]]]
        rows["request"][bw] = rows["request"][iS[:len(bw)]]
        pending += len(ir) - len(mi) + len(iS) - len(bw)

    # -- user regions, compute gaps, assembly -------------------------------------------------
    marks = np.nonzero(user[at] & (depth == 0) & (before == 0))[0] if keep_regions \
        else np.zeros(0, np.int64)
    strings: list[str] = []
    m_tagv = np.zeros(len(marks), np.int64)
    if len(marks):
        m_names = [defs[i][2] for i in at[marks].tolist()]
        index = {}
        for n in m_names:
            index.setdefault(n, len(index))
        strings = list(index)
        m_tagv = np.array([index[n] for n in m_names], np.int64)
    # items: calls (kept or dropped) and markers, in record order per rank
    item_pos = np.r_[outer_in, marks]
    o = np.argsort(item_pos, kind="stable")
    item_pos = item_pos[o]
    is_call = o < ncalls
    call_ix = np.where(is_call, o, 0)
    i_rank = nid[item_pos]
    i_start = t[item_pos]
    i_end = np.where(is_call, rows["t_end"][call_ix] if ncalls else i_start, i_start)
    i_kind = np.where(is_call, kind[call_ix] if ncalls else -1, -2)
    flush = (i_kind >= 0) | (i_kind == -2)
    n_items = len(item_pos)
    prev_same = np.r_[False, i_rank[1:] == i_rank[:-1]]
    first_of_rank = np.searchsorted(i_rank, i_rank)
    init_seen = _seen_before(i_kind == _C["init"], first_of_rank)
    fin_seen = _seen_before(i_kind == _C["finalize"], first_of_rank)
    prev_end = np.r_[0.0, i_end[:-1]]
    piece_ok = prev_same & init_seen & ~fin_seen & (i_start > prev_end)
    piece = np.where(piece_ok, i_start - prev_end, 0.0)
    c = np.cumsum(flush)
    grp = c - flush                                   # the flushing item each piece joins
    nflush = int(c[-1]) if n_items else 0
    flush_rank = i_rank[flush]
    valid = piece_ok & (grp < nflush)
    valid[valid] = flush_rank[grp[valid]] == i_rank[valid]
    vol = np.bincount(grp[valid], piece[valid], minlength=nflush)
    has_gap = np.bincount(grp[valid], minlength=nflush) > 0
    first_p = _first(grp[valid], nflush)
    last_p = _first(grp[valid], nflush, last=True)
    vi = np.nonzero(valid)[0]
    fl = np.nonzero(flush)[0]
    fc = is_call[fl]
    slots = 1 + has_gap
    body_at = np.cumsum(slots) - 1
    out = _blank(int(slots.sum()))
    at_call, src = body_at[fc], call_ix[fl[fc]]
    for f in ACTION_DTYPE.names:
        out[f][at_call] = rows[f][src]
    at_mark, mk = body_at[~fc], fl[~fc]
    out["kind"][at_mark] = np.where(par[item_pos[mk]] == 1, _C["region_begin"],
                                    _C["region_end"])
    out["tag"][at_mark] = m_tagv[o[mk] - ncalls]
    out["t_start"][at_mark] = out["t_end"][at_mark] = i_start[mk]
    at_gap = body_at[has_gap] - 1
    out["kind"][at_gap] = _C["compute"]
    out["volume"][at_gap] = vol[has_gap]
    out["t_start"][at_gap] = prev_end[vi[first_p[has_gap]]]
    out["t_end"][at_gap] = i_start[vi[last_p[has_gap]]]
    vectors = sr_vec.ravel()          # sendrecvs keep their order: calls are kept in order
    out = _pack(out)
    out_rank = np.repeat(flush_rank, slots)
    offsets = np.r_[0, np.cumsum(np.bincount(out_rank, minlength=nranks))].astype(np.int64)
    assign_vec_offsets(out)
    dropped = Counter(defs[i][2].strip().removesuffix("()").strip()
                      for i in at[outer_in[~kept]].tolist())
    meta = {"volume_unit": "seconds"}
    if dropped:
        meta["dropped_mpi_calls"] = dict(sorted(dropped.items()))
    if unsized:
        meta["collectives_without_sizes"] = dict(unsized)
    if rootless:
        meta["collectives_without_root"] = dict(rootless)
    n_user = int(user[at].sum())
    if n_user and not keep_regions:
        meta["user_regions_dropped"] = n_user // 2
    if pending:
        meta["requests_never_completed"] = pending
    fin = np.zeros(nranks, bool)
    fin[out_rank[out["kind"] == _C["finalize"]]] = True
    meta["complete"] = bool(fin.all())
    return TraceData(out, offsets, vectors, {0: np.arange(nranks, dtype=np.int32)}, strings,
                     meta)
