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

Speed (issue 11): few full-length passes, over narrow columns.  Each record gets a one-byte
class from a table indexed by event id (MPI enter or leave, send or receive message, size
counter, user region); only that byte and the event's number are put in rank order and summed
for the nesting; times, message fields and names are read for the selected records only.  Each
stage is a function whose large temporaries go when it returns: on the 2-core VM, faulting in
the pages of fresh arrays took as long as the arithmetic.  The actions are written once, field
by field, into an array of empty rows copied as bytes.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from minitrace import kinds as K
from minitrace.model import ACTION_DTYPE, EMPTY_ROW, NONE, TraceColumns

from .callstream import mpi_kind

_C = K.CODE
#: Kinds the first-in first-out request matching can handle (with every kind that neither makes
#: nor completes a request).
_FALLBACK = K.INITS | K.STARTS | (K.COMPLETIONS - {"wait", "waitany"}) | K.MATCHED_RECVS \
    | {"comm_idup"}
#: A record's class (its event's, and for MPI events its ``par``: 1 enters, -1 leaves, anything
#: else is neither); _MPI only until ``par`` is looked at.
_OTHER, _ENTER, _LEAVE, _SEND, _RECV, _SIZE, _USER, _MPI = range(8)
_DELTA = np.array([0, 1, -1, 0, 0, 0, 0, 0], np.int8)
#: The empty action's bytes, copied into every output row before the fields are set.
_EMPTY = np.frombuffer(np.array(EMPTY_ROW, ACTION_DTYPE).tobytes(), np.uint8)
#: Event ids up to this are looked up in a table indexed by id, larger ones by binary search.
_TABLE_IDS = 1 << 20


def _mask(names) -> np.ndarray:
    """K.mask with a last False entry, so that kind -1 (a dropped call) is in no set."""
    return np.r_[K.mask(names), False]


_IS = {name: _mask(s) for name, s in (
    ("send", K.SENDS | K.SENDRECVS), ("recv", {"recv"}), ("sr", K.SENDRECVS),
    ("isend", K.NONBLOCKING_SENDS), ("irecv", {"irecv"}), ("wait", {"wait", "waitany"}),
    ("request", K.NONBLOCKING_SENDS | {"irecv"}))}


def _tables(defs: list, send_tag: int, recv_tag: int) -> tuple[np.ndarray, np.ndarray]:
    """Per event definition (and a last entry for none): its record class and its kind code
    (-1: not a kind)."""
    cls, code = [], []
    for group, tag, name, param in defs:
        if param == "EntryExit":
            cls.append(_MPI if group == "MPI" or name.startswith("MPI_") else
                       _USER if group != "TRACER" else _OTHER)
        else:
            cls.append(_SEND if tag == send_tag else _RECV if tag == recv_tag else
                       _SIZE if param == "TriggerValue" and " | " not in name
                       and name.startswith("Message size for") else _OTHER)
        code.append(_C[k] if (k := mpi_kind(name)) is not None else -1)
    return np.array(cls + [_OTHER], np.uint8), np.array(code + [-1], np.int16)


def _lookup(ids: np.ndarray):
    """A function giving, for an array of event ids, the values of a per-definition table
    (``len(ids) + 1`` entries, the last one for an id that is not defined)."""
    n = len(ids)
    if n and ids[0] >= 0 and ids[-1] < _TABLE_IDS:
        where = np.full(int(ids[-1]) + 2, n, np.intp)
        where[ids] = np.arange(n)
        return lambda table, ev: np.take(table[where], ev, mode="clip")
    return lambda table, ev: table[np.searchsorted(ids, ev)]


def _empty_actions(n: int) -> np.ndarray:
    """``n`` empty actions (model.empty_actions), copied as bytes: the first row, then the
    rows filled so far, doubling (np.full with a structured value is ten times slower)."""
    out = np.empty(n, ACTION_DTYPE)
    b = out.view(np.uint8)
    b[:len(_EMPTY)] = _EMPTY[:len(b)]
    done = len(_EMPTY)
    while done < len(b):
        step = min(done, len(b) - done)
        b[done:done + step] = b[:step]
        done += step
    return out


def _message(par: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(tag, other node, length) of message records (tau.decode_message on a column)."""
    x = par.view(np.uint64)
    tag = ((x >> 16) & 0xFF) | (((x >> 48) & 0xFF) << 8)
    other = ((x >> 24) & 0xFF) | (((x >> 56) & 0xFF) << 8)
    length = (x & 0xFFFF) | (((x >> 32) & 0x3FF) << 16)
    return tag.astype(np.int64), other.astype(np.int64), length.astype(np.int64)


def _edges(group: np.ndarray, last: bool = False) -> np.ndarray:
    """Positions of each run's first (or last) element in ``group`` (sorted group numbers)."""
    if not len(group):
        return np.zeros(0, np.intp)
    change = group[1:] != group[:-1]
    return np.flatnonzero(np.r_[change, True] if last else np.r_[True, change])


def _kth(a_rank: np.ndarray, b_rank: np.ndarray, nranks: int):
    """For each element of ``a`` (sorted by rank), the index of the element of ``b`` (sorted by
    rank) in the same place of its rank's run (the k-th a of rank r -> the k-th b of rank r);
    None when a rank has more a than b."""
    na = np.bincount(a_rank, minlength=nranks)
    nb = np.bincount(b_rank, minlength=nranks)
    if (na > nb).any():
        return None
    first_a, first_b = np.cumsum(na) - na, np.cumsum(nb) - nb
    return np.arange(len(a_rank)) - first_a[a_rank] + first_b[a_rank]


def _first_per_rank(items: np.ndarray, rank_ends: np.ndarray, none: int) -> np.ndarray:
    """The first of ``items`` (sorted indices) in each rank (``rank_ends``: where each rank's
    indices end), ``none`` for a rank without one."""
    out = np.full(len(rank_ends), none, np.intp)
    rank = np.searchsorted(rank_ends, items, "right")
    run = _edges(rank)
    out[rank[run]] = items[run]
    return out


def _rank_order(rec: np.ndarray, ids: np.ndarray, cls: np.ndarray, nranks: int):
    """(class, event number) of every record in rank order (rank after rank, each in time
    order), that order (None when the records are in it already) and where each rank's
    records end."""
    par, nid = rec["par"], np.ascontiguousarray(rec["nid"])
    e = _lookup(ids)(np.arange(len(ids) + 1, dtype=np.uint8 if len(ids) < 255 else np.int32),
                     rec["ev"])
    c = cls[e]
    mpi = c == _MPI
    c[mpi & (par == 1)] = _ENTER
    c[mpi & (par == -1)] = _LEAVE
    c[c == _MPI] = _OTHER
    ends = np.cumsum(np.bincount(nid, minlength=nranks))
    if (nid[1:] >= nid[:-1]).all():
        return c, e, None, ends
    order = np.argsort(nid, kind="stable")
    return np.take(c, order), np.take(e, order), order, ends   # (take: faster than indexing)


def _nesting(s: np.ndarray, ends: np.ndarray):
    """Outermost MPI calls from the classes ``s`` (rank order): positions of their enter and
    leave records, positions of the message, size and user records with their class, depth and
    call (the last outermost call entered); None when a rank's calls are cut or ill-nested."""
    depth = np.cumsum(_DELTA[s], dtype=np.int32 if len(s) < 2 ** 31 else np.int64)
    # each rank must come back to depth 0 (then the running sum is every rank's own nesting)
    if len(s) and (depth.min() < 0 or depth[ends[np.diff(np.r_[0, ends]) > 0] - 1].any()):
        return None
    first_in = (s == _ENTER) & (depth == 1)
    outer_in = np.flatnonzero(first_in)
    outer_out = np.flatnonzero((s == _LEAVE) & (depth == 0))
    sel = np.flatnonzero(s >= _SEND)
    d_sel = depth[sel]
    call_of = np.cumsum(first_in, dtype=depth.dtype, out=depth)[sel] - 1
    return outer_in, outer_out, sel, s[sel], d_sel, call_of


def _seconds(ti: np.ndarray, t0: int) -> np.ndarray:
    """TAU's microseconds (a fresh array, reused in place) as seconds from ``t0``."""
    t = ti.view(np.int64)
    t -= t0
    return np.multiply(t, 1e-6, out=t.view(np.float64))


def _requests(kind, c_rank, rc, recv_pos, outer_in, nranks: int):
    """Request ids, first in first out: per call (isend/irecv numbered per rank, a wait given
    the one it completes), the irecv each received message inside a wait resolves (``rc``: the
    call of each received message, ``recv_pos`` its record), those messages and how many
    requests stay pending; None when a match is impossible (more completions than requests,
    a request completed before it was made)."""
    ncalls = len(kind)
    request = np.full(ncalls, NONE, np.int64)
    reqs = np.flatnonzero(_IS["request"][kind])
    request[reqs] = np.arange(len(reqs)) - np.searchsorted(c_rank[reqs], np.arange(nranks))[
        c_rank[reqs]]
    in_wait = _IS["wait"][kind[rc]]
    w_msg, w_call = np.flatnonzero(in_wait), rc[in_wait]       # received messages in waits
    irecv = np.flatnonzero(kind == _C["irecv"])
    isend = np.flatnonzero(_IS["isend"][kind])
    waits = np.flatnonzero(_IS["wait"][kind])
    with_msg = np.zeros(ncalls, bool)
    with_msg[w_call] = True
    bare = waits[~with_msg[waits]]
    to_irecv = _kth(c_rank[w_call], c_rank[irecv], nranks)
    to_isend = _kth(c_rank[bare], c_rank[isend], nranks)
    if to_irecv is None or to_isend is None:
        return None
    resolved, completed = irecv[to_irecv], isend[to_isend]
    if (outer_in[resolved] > recv_pos[w_msg]).any() or (completed > bare).any():
        return None
    first = _edges(w_call)
    request[w_call[first]] = request[resolved[first]]
    request[bare] = request[completed]
    return request, resolved, w_msg, len(irecv) - len(w_msg) + len(isend) - len(bare)


def _layout(item_pos, i_start, i_end, i_kind, ends):
    """Rows of the items (calls and markers in record order, ``i_kind`` the kind of their row,
    -1 for a dropped call, which has none) and of the compute gaps before them: the items with
    a row and their rows, where each rank's rows start (and the last ends), the gaps' rows,
    volumes, starts and ends."""
    n_items = len(item_pos)
    item_ends = np.searchsorted(item_pos, ends)
    fl = np.flatnonzero(i_kind >= 0)
    # time passed since the previous item is a piece of computation after the rank's first
    # init and up to its first finalize, joining the next item with a row of the same rank
    lo = _first_per_rank(np.flatnonzero(i_kind == _C["init"]), item_ends, n_items)
    hi = _first_per_rank(np.flatnonzero(i_kind == _C["finalize"]), item_ends, n_items)
    last = np.r_[-1, fl][np.searchsorted(fl, item_ends)]      # each rank's last item with a row
    hi = np.minimum(hi, np.where(last >= item_ends - np.diff(np.r_[0, item_ends]), last, -1))
    open_ = lo < hi
    window = np.zeros(n_items + 1, np.int8)
    window[lo[open_] + 1] = 1
    window[hi[open_] + 1] = -1
    vi = np.flatnonzero((np.cumsum(window[:-1], dtype=np.int8)[1:] > 0)
                        & (i_start[1:] > i_end[:-1]))         # (the first item is in none)
    vi += 1
    piece = i_start[vi] - i_end[vi - 1]
    if len(fl) == n_items:            # every item has a row: a gap is the piece before it
        with_gap, vol, gap_start, gap_end = vi, piece, i_end[vi - 1], i_start[vi]
    else:
        g = np.searchsorted(fl, vi)                            # the row item each piece joins
        vol = np.bincount(g, piece, minlength=len(fl))
        first, last = _edges(g), _edges(g, last=True)
        with_gap, gap_start, gap_end = g[first], i_end[vi[first] - 1], i_start[vi[last]]
        vol = vol[with_gap]
    body_at = np.zeros(len(fl), np.intp)                       # row of each item with a row
    body_at[with_gap] = 1
    np.cumsum(body_at, out=body_at)
    body_at += np.arange(len(fl))
    rows = np.r_[0, body_at + 1]                               # rows before each item with one
    offsets = rows[np.r_[0, np.searchsorted(fl, item_ends)]]    # (per rank)
    return fl, body_at, offsets, body_at[with_gap] - 1, vol, gap_start, gap_end


def decode(rec: np.ndarray, events: dict, nranks: int, t0: int, keep_regions: bool,
           coll_bytes: dict, send_tag: int, recv_tag: int):
    """TraceColumns of ``rec`` (thread 0 of every rank, each rank's in time order; ``t0`` the
    first time stamp, ``coll_bytes`` tau._COLL_BYTES) with the meta the record reader would
    give (sizes, roots, drops, pending requests, completeness; the caller adds provenance), or
    None when its requests need the record-by-record reader."""
    ids = np.array(sorted(events), dtype=np.int64)
    defs = [events[i] for i in ids.tolist()]
    cls, code = _tables(defs, send_tag, recv_tag)
    s, e, order, ends = _rank_order(rec, ids, cls, nranks)
    nest = _nesting(s, ends)
    if nest is None:
        return None
    outer_in, outer_out, sel, s_sel, d_sel, call_of = nest
    del s, nest
    ev_in = e[outer_in]
    kind = code[ev_in]                                         # -1: dropped
    per_event = np.bincount(ev_in, minlength=len(ids) + 1)
    present = {K.NAME[int(k)] for k in code[(per_event > 0) & (code >= 0)].tolist()}
    if present & _FALLBACK:
        return None
    ncalls = len(outer_in)
    c_rank = np.repeat(np.arange(nranks, dtype=np.int32),
                       np.diff(np.searchsorted(outer_in, np.r_[0, ends])))

    # -- values of the selected records: times, messages, sizes, markers ----------------------
    users = s_sel == _USER
    n_user = int(np.count_nonzero(users))
    marks = sel[users & (d_sel == 0)] if keep_regions else np.zeros(0, np.intp)
    mark_names = [defs[i][2] for i in e[marks].tolist()]
    inside = d_sel > 0
    i_send, i_recv, i_size = (np.flatnonzero(inside & (s_sel == k))
                              for k in (_SEND, _RECV, _SIZE))
    del e, users, inside, s_sel, d_sel

    def take(column, pos):            # a column's values at positions in rank order
        return np.take(column, pos if order is None else np.take(order, pos))

    par = rec["par"]
    t_in, t_out, t_mark = (_seconds(take(rec["ti"], p), t0) for p in (outer_in, outer_out, marks))
    recv_pos = sel[i_recv]
    s_tag, s_other, s_len = _message(take(par, sel[i_send]))
    r_tag, r_other, r_len = _message(take(par, recv_pos))
    size_par, mark_par = take(par, sel[i_size]), take(par, marks)
    sc, rc, zc = call_of[i_send], call_of[i_recv], call_of[i_size]
    del order, sel, call_of, outer_out, i_send, i_recv, i_size
    size = np.zeros(ncalls, np.int64)                          # TAU's "Message size for ..."
    if len(zc):
        run = _edges(zc)
        size[zc[run]] = np.maximum(np.maximum.reduceat(size_par, run), 0)
    found = _requests(kind, c_rank, rc, recv_pos, outer_in, nranks)
    if found is None:
        return None
    request, resolved, w_msg, pending = found

    # -- rows: calls, markers, compute gaps ---------------------------------------------------
    if len(marks):
        item_pos = np.r_[outer_in, marks]
        o = np.argsort(item_pos, kind="stable")
        item_pos, is_call = item_pos[o], o < ncalls
        i_start, i_end = np.r_[t_in, t_mark][o], np.r_[t_out, t_mark][o]
        i_kind = np.r_[kind, np.where(mark_par == 1, _C["region_begin"],
                                      _C["region_end"])][o]    # the kind of its row
    else:
        item_pos, i_start, i_end, i_kind = outer_in, t_in, t_out, kind
    fl, body_at, offsets, at_gap, vol, gap_start, gap_end = _layout(item_pos, i_start, i_end,
                                                                    i_kind, ends)
    n_out = int(offsets[-1])
    out = _empty_actions(n_out)
    col = np.full(n_out, _C["compute"], np.uint8)
    col[body_at] = i_kind[fl]
    out["kind"] = col
    col = np.empty(n_out)
    for field, item, gap in (("t_start", i_start, gap_start), ("t_end", i_end, gap_end)):
        col[body_at] = item[fl]
        col[at_gap] = gap
        out[field] = col
    del col, i_start, i_end, t_in, t_out
    out["volume"][at_gap] = vol
    row = np.full(len(item_pos), -1, np.intp)                  # row of each item (or -1)
    row[fl] = body_at
    del fl, body_at, at_gap, vol
    strings: list[str] = []
    if len(marks):
        index: dict[str, int] = {}
        out["tag"][row[~is_call]] = [index.setdefault(n, len(index)) for n in mark_names]
        strings = list(index)
        row = row[is_call]                                     # row of each call (or -1)

    # -- what the records inside each call say ------------------------------------------------
    last = _edges(sc, last=True)                               # last send message of a call
    has = _IS["send"][kind[sc[last]]]
    r, j = row[sc[last][has]], last[has]
    out["peer"][r], out["tag"][r], out["bytes_sent"][r] = s_other[j], s_tag[j], s_len[j]
    first = _edges(rc)                                         # first received message
    has = _IS["recv"][kind[rc[first]]]
    r, j = row[rc[first][has]], first[has]
    out["peer"][r], out["tag"][r], out["bytes_recv"][r] = r_other[j], r_tag[j], r_len[j]
    has = _IS["sr"][kind[rc[first]]]
    r, j = row[rc[first][has]], first[has]
    out["bytes_recv"][r] = r_len[j]
    out["vec_len"][r] = 2
    out["vec_off"][r] = 2 * np.arange(len(r))
    vectors = np.stack([r_other[j], r_tag[j]], 1).ravel()     # sendrecvs, in call order
    r = row[resolved]
    out["peer"][r], out["tag"][r], out["bytes_recv"][r] = r_other[w_msg], r_tag[w_msg], \
        r_len[w_msg]
    unsized, rootless = Counter(), Counter()
    for name in present & (K.COLLECTIVES - {"barrier"}):
        mine = np.flatnonzero(kind == _C[name])
        ok = mine[size[mine] > 0] if name in coll_bytes else mine[:0]
        if len(ok):
            bs, br = coll_bytes[name](size[ok], nranks)
            out["bytes_sent"][row[ok]], out["bytes_recv"][row[ok]] = bs, br
        if len(mine) > len(ok):
            unsized[name] = len(mine) - len(ok)
        if name in K.ROOTED:
            rootless[name] = len(mine)
    has = np.flatnonzero(request >= 0)
    out["request"][row[has]] = request[has]

    # -- meta ---------------------------------------------------------------------------------
    dropped = Counter()
    for i in np.flatnonzero((per_event[:-1] > 0) & (code[:-1] < 0)).tolist():
        dropped[defs[i][2].strip().removesuffix("()").strip()] += int(per_event[i])
    meta = {"volume_unit": "seconds"}
    if dropped:
        meta["dropped_mpi_calls"] = dict(sorted(dropped.items()))
    if unsized:
        meta["collectives_without_sizes"] = dict(unsized)
    if rootless:
        meta["collectives_without_root"] = dict(rootless)
    if n_user and not keep_regions:
        meta["user_regions_dropped"] = n_user // 2
    if pending:
        meta["requests_never_completed"] = pending
    fin = np.zeros(nranks, bool)
    fin[c_rank[kind == _C["finalize"]]] = True
    meta["complete"] = bool(fin.all())
    return TraceColumns(out, offsets, vectors, {0: np.arange(nranks, dtype=np.int32)}, strings,
                     meta)
