"""Each action's *call signature*: every column but the volume and the times, made the same on
every rank and in every iteration of a loop, so that a rank's program is a short sequence of
signature ids (Pilgrim's call signatures, ScalaTrace's rank-relative peers).

- ``peer`` is rank-relative, ``(peer - rank) mod nranks`` (``peer_mode`` 1), except for roots of
  rooted collectives, negative peers (none, MPI_UNDEFINED) and peers outside the world, which are
  kept as they are (``peer_mode`` 0).
- Request ids (the ``request`` column, the ids in the vectors of waitall/startall...) become
  tokens: the first time a rank names an id it is *new* (``req_mode`` 1; its value goes to the
  rank's side stream of new ids, which is usually 0, 1, 2...), later names are *references*
  (``req_mode`` 2) stored as the distance back from the latest new id, the same in every
  iteration.  Communicator ids in ``request`` (creations) are kept (``req_mode`` 0).
- With ``completions_apart`` (compressed files since session 20), the request a waitany or
  testany completes is a new token too where messages arrive in changing orders
  (:data:`APART`): its value goes to the stream of new ids, and the signature stays the same
  whatever the order.
- Vectors are stored once per distinct content (``vec`` is the content id, -1 none), after the
  same rewriting: a sendrecv's source is rank-relative, request-id vectors are tokens.

Everything is reversible (:func:`decode`), so the grammar built on signature ids is lossless.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import kinds as K
from ..model import ACTION_DTYPE, NONE, TraceColumns, vector_entries
from . import rans as R
from .volumes import segment_sums

SIGNATURE_DTYPE = np.dtype([
    ("kind", "u1"), ("flags", "u1"), ("peer_mode", "u1"), ("req_mode", "u1"), ("peer", "i4"),
    ("tag", "i4"), ("comm", "i4"), ("vec", "i4"), ("bytes_sent", "i8"), ("bytes_recv", "i8"),
    ("request", "i8"),
])
#: Vector encodings: the first entry of each stored content says how to decode the rest.
VEC_RAW, VEC_SENDRECV, VEC_REQUESTS = 0, 1, 2
REQ_LITERAL, REQ_NEW, REQ_REF = 0, 1, 2

_RELATIVE_KIND = ~K.mask(K.ROOTED)
_TOKEN_REQUEST = ~K.mask(K.NEW_COMM_KINDS)
_REQUEST_VECTOR = K.mask(K.MULTI_COMPLETIONS | {"startall"})
_SENDRECV_VECTOR = K.mask(K.SENDRECVS | K.NONBLOCKING_SENDRECVS)
_FIELDS = ("kind", "flags", "tag", "comm", "bytes_sent", "bytes_recv")
#: Completions of one request of several, in any order (the first to arrive): with
#: ``encode(completions_apart=True)`` the request each one completes is not part of its
#: signature but a value of the rank's stream of new request ids (``req_mode`` new), so that
#: the order in which messages arrive does not make each step's sequence of signatures a new
#: one (miniAMR 4r: 22 k waitany; 57 k top-level symbols left by the loop folding, 6.6 k so).
#: Such a signature's ``request``, which decoding does not read, holds the kind of the call
#: that posted the request: the contexts of the time and volume coders tell a receive's wait
#: from a send's (miniAMR 4r bounded: 1.183 B/action without, 1.166 with).
APART = frozenset({"waitany", "testany"})
_APART = K.mask(APART)
_APART_CODES = tuple(K.code(k) for k in sorted(APART))


@dataclass
class Signatures:
    """The signature table and, per action, its signature id; plus what decoding needs."""

    table: np.ndarray            # SIGNATURE_DTYPE, one row per distinct signature
    ids: np.ndarray              # int64 per action (rank-major, as the trace's rows)
    vec_offsets: np.ndarray      # int64 [nvec+1]: CSR of the distinct vector contents
    vec_values: np.ndarray       # int64: encoding code then the entries, per content
    new_requests: np.ndarray     # int64: per rank, the values of its new request ids, in order
    new_request_offsets: np.ndarray  # int64 [nranks+1]


def _relative(peer: np.ndarray, rank: np.ndarray, nranks: int, allowed: np.ndarray):
    """(mode, stored peer): rank-relative where allowed and inside the world, else as is
    (``peer`` int32, as the actions hold it: inside the world is below ``nranks`` as
    unsigned, one comparison)."""
    rel = allowed & (peer.view(np.uint32) < nranks)
    return rel.view(np.uint8), np.where(rel, _modulo(peer - rank, nranks), peer)


def _modulo(d: np.ndarray, nranks: int) -> np.ndarray:
    """``d % nranks`` for integers ``d`` in (-nranks, nranks) (a peer less a rank, both in the
    world), in place: nranks added below 0 by the sign's bits (4x faster than numpy's modulo,
    2x than an add where d < 0; a sendrecv vector's source took 0.13 ms of public miniMD 2r's
    2 ms of signatures by the modulo)."""
    d += (d >> (8 * d.itemsize - 1)) & nranks
    return d


#: Slots of :func:`_first_names`' direct table at most, per name (a request id is usually a
#: rank's count of requests so far: 0, 1, 2...; a table over each rank's range of ids finds
#: first uses in ~2 ms where hashing 346 k names took 21 ms, CloverLeaf 16).
DIRECT_SLOTS = 4


def _first_names(values: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Index of the first name of each name's (rank, value): a table indexed by rank and value
    where the values span a small range, else a hash table of the pairs, checked exactly (a
    collision falls back to sorting the pairs)."""
    n = len(values)
    lo, hi = (int(values.min()), int(values.max())) if n else (0, 0)
    nrank = int(rank.max()) + 1 if n else 0
    if n and rank.min() >= 0 and (hi - lo + 1) * nrank <= DIRECT_SLOTS * n + 4096:
        slot = rank.astype(np.int64) * (hi - lo + 1) + (values - lo)
        first = np.full((hi - lo + 1) * nrank, n, np.int64)
        first[slot[::-1]] = np.arange(n - 1, -1, -1)      # (the last assignment stays)
        return first[slot]
    u = np.uint64
    with np.errstate(over="ignore"):
        h = (values.view(u) * u(0x9E3779B97F4A7C15)) ^ (rank.astype(np.int64).view(u) *
                                                         u(0xC2B2AE3D27D4EB4F))
    codes, uniq = pd.factorize(h)
    first = _first_of(codes, len(uniq))[codes]
    if not (np.array_equal(values[first], values) and np.array_equal(rank[first], rank)):
        order = np.lexsort((np.arange(n), values, rank))
        sv, sr = values[order], rank[order]
        head = np.ones(n, bool)
        head[1:] = (sv[1:] != sv[:-1]) | (sr[1:] != sr[:-1])
        first = np.empty(n, np.int64)
        first[order] = order[head][np.cumsum(head) - 1]
    return first


def _request_tokens(values: np.ndarray, first: np.ndarray, side: np.ndarray | None = None):
    """Tokens of the ranks' streams of request-id names (rank-major; ``first``: each name's
    :func:`_first_names`): (mode, stored value, new ids in order).  A rank's first name is
    always new, so the latest new id never comes from another rank; names where ``side`` is
    True are new too (their values in the stream of new ids, the next references counted back
    from them)."""
    n = len(values)
    if not n:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    new = first == np.arange(n)
    if side is not None:
        new |= side
    pos = np.where(new, np.arange(n), -1)
    np.maximum.accumulate(pos, out=pos)
    with np.errstate(over="ignore"):
        dist = values[pos] - values          # wraps like the decoder's inverse
    return np.where(new, REQ_NEW, REQ_REF), np.where(new, 0, dist), values[new]


#: Completions in a row whose distinct sequences :func:`_apart_pays` counts (a power of two).
APART_SPAN = 16


def _apart_pays(default: np.ndarray, apart: np.ndarray) -> bool:
    """Whether the completions of :data:`APART` take fewer distinct sequences of
    :data:`APART_SPAN` in a row (rank-major) with their requests apart (each known by the kind
    of the call that posted it, ``apart``) than as their own tokens (``default``), by half at
    least: where messages arrive in the same order every step, the grammar folds either alike
    and the stream of new ids would only grow (miniAMR 2r: 48 sequences as tokens, 64 apart;
    +69 bytes); where the order changes from step to step, the tokens leave no loop (miniAMR
    4r: 9,150 and 607; its top-level sequences took 57 k symbols, 6.6 k apart).  Sequences of
    8 took 32 and 16 on tests/programs/waitany2d.c's exchange in random orders of 2 receives,
    which apart fold.  (A count of hashes, ~1 ms for 22 k completions, where folding both
    took ~15 ms.)"""
    count = []
    for x in (default, apart):
        h = pd.factorize(x)[0].astype(np.uint64)
        mul = np.uint64(0x9E3779B97F4A7C15)
        with np.errstate(over="ignore"):
            # the polynomial sum(x[i + j] * mul**(SPAN - 1 - j)) of each sequence, by
            # doubling: sequences of 2, 4, 8... from two of half the length (log2(SPAN)
            # passes where Horner's rule took SPAN)
            for half in (1 << k for k in range(APART_SPAN.bit_length() - 1)):
                h = h[:-half] * mul + h[half:] if len(h) > half else h[:0]
                mul = mul * mul
        count.append(len(pd.unique(h)))
    return 2 * count[1] < count[0]


#: Rows of the actions' table copied at a time by :func:`action_columns` (~600 KB: the
#: table's rows stay in cache while every field is taken from them).
COLUMN_ROWS = 1 << 13


def action_columns(actions: np.ndarray) -> dict:
    """Every field of a structured actions table as a contiguous array: taken a block of rows
    at a time, each block read from memory once for all the fields (a field at a time reads
    the whole table once per field: 1.6x the time on a 628 k-action trace)."""
    out = {f: np.empty(len(actions), actions.dtype[f]) for f in actions.dtype.names}
    for lo in range(0, len(actions), COLUMN_ROWS):
        block = actions[lo:lo + COLUMN_ROWS]
        for f, col in out.items():
            col[lo:lo + COLUMN_ROWS] = block[f]
    return out


def encode(data: TraceColumns, columns: dict | None = None,
           completions_apart: bool = False) -> Signatures:
    """The signature of every action of ``data`` (see the module docstring); ``columns``: its
    actions' :func:`action_columns`, when the caller has them; ``completions_apart``: the
    requests that waitany and testany complete in the stream of new ids (:data:`APART`)."""
    a = data.actions
    n, P = len(a), data.nranks
    rank = data.rank_of()
    columns = action_columns(a) if columns is None else columns
    kind = columns["kind"]
    cols = {f: columns[f] for f in _FIELDS}
    cols["peer_mode"], cols["peer"] = _relative(columns["peer"].astype(np.int32, copy=False),
                                                rank, P, _RELATIVE_KIND[kind])
    req = columns["request"]
    vec_len = columns["vec_len"].astype(np.int64)
    is_token = _TOKEN_REQUEST[kind] & (req != NONE)
    # the stream of request-id names, in row order: the request column, then vector entries
    token_vec_rows = np.nonzero(_REQUEST_VECTOR[kind] & (vec_len > 0))[0]
    vrow, vval = vector_entries(data.vectors, vec_len, columns["vec_off"], token_vec_rows)
    token_rows = np.nonzero(is_token)[0]
    rows = np.concatenate([token_rows, vrow])
    vals = np.concatenate([req[token_rows], vval]).astype(np.int64, copy=False)
    where = np.concatenate([np.zeros(len(token_rows), np.int64),
                            np.arange(1, len(vrow) + 1, dtype=np.int64)])
    order = np.argsort(rows * 2 + (where > 0), kind="stable")   # a row's column, then vector
    rows, vals, where = rows[order], vals[order], where[order]
    first = _first_names(vals, rank[rows])
    side = tokens = None   # (the kinds compared over the actions' bytes first: 0.05 ms
    if completions_apart and any((kind == c).any() for c in _APART_CODES):   # where a lookup
        side = _APART[kind[rows]] & (where == 0)                       # per token took 0.4)
        hint = kind[rows[first[side]]].astype(np.int64)     # (the posting call's kind)
        tokens = _request_tokens(vals, first)
        mode, stored = tokens[:2]
        if not side.any() or not _apart_pays((mode * (1 << 32) + stored)[side], hint):
            side = None
    if tokens is None or side is not None:       # (else those without completions apart)
        tokens = _request_tokens(vals, first, side)
    mode, stored, new_values = tokens
    if side is not None:
        stored[side] = hint
    new_counts = np.bincount(rank[rows][mode == REQ_NEW], minlength=P)
    new_off = np.concatenate([[0], np.cumsum(new_counts)]).astype(np.int64)
    col = where == 0
    cols["req_mode"] = np.zeros(n, np.uint8)
    cols["req_mode"][rows[col]] = mode[col]
    cols["request"] = req.copy()
    cols["request"][rows[col]] = stored[col]
    # vector contents: [encoding, entries...], the entries rewritten, then deduplicated
    vrows = np.nonzero(vec_len > 0)[0]
    lens = vec_len[vrows]
    first_entry = np.cumsum(lens) - lens
    total = int(lens.sum())
    if len(vrows) and np.array_equal(columns["vec_off"][vrows], first_entry):
        entries = data.vectors[:total].astype(np.int64)      # stored back to back: as is
    else:
        entries = data.vector_entries(vrows)[1].astype(np.int64)
    code = np.full(len(vrows), VEC_RAW, np.int64)
    src = entries[first_entry] if total else np.zeros(0, np.int64)
    sr = _SENDRECV_VECTOR[kind[vrows]] & (src >= 0) & (src < P)
    code[sr] = VEC_SENDRECV
    entries[first_entry[sr]] = _modulo(src[sr] - rank[vrows[sr]], P)
    tok = _REQUEST_VECTOR[kind[vrows]]
    code[tok] = VEC_REQUESTS
    modes = np.zeros(total, np.int64)        # a token entry is (mode, value)
    if len(vrow):
        at = np.repeat(first_entry[tok], lens[tok]) + \
            np.arange(len(vrow)) - np.repeat(np.cumsum(lens[tok]) - lens[tok], lens[tok])
        modes[at], entries[at] = mode[~col], stored[~col]
    content_ids, vec_off, vec_values = _dedup_contents(code, entries, modes, lens)
    cols["vec"] = np.full(n, -1, np.int32)
    cols["vec"][vrows] = content_ids
    table, ids = factorize(cols, n)
    return Signatures(table, ids, vec_off, vec_values, new_values, new_off)


_SMALL = ("kind", "flags", "peer_mode", "req_mode")
_PAIRS = (("peer", "tag"), ("comm", "vec"))


def _packed_words(cols: dict) -> list[np.ndarray]:
    """The signature columns packed without loss into six 64-bit words (the four one-byte
    columns into one, the 32-bit ones in pairs, each 32 bits as the table keeps them): fewer
    to hash and to check.  Written as the bytes of the words where the columns are integers
    (one copy per column: shifts and ors took 3x as long)."""
    n = len(cols["kind"])
    if all(cols[f].dtype == np.uint8 for f in _SMALL) and \
            all(cols[f].dtype.kind in "iu" for pair in _PAIRS for f in pair):
        small = np.zeros((n, 8), np.uint8)
        for j, f in enumerate(_SMALL):
            small[:, j] = cols[f]
        pairs = []
        for hi, lo in _PAIRS:
            both = np.empty((n, 2), "<u4")           # (integers: their low 32 bits)
            both[:, 0], both[:, 1] = cols[lo], cols[hi]
            pairs.append(both.view("<i8").reshape(n))
        small = small.view("<i8").reshape(n)
    else:
        small = cols["kind"].astype(np.int64)
        for shift, f in ((8, "flags"), (16, "peer_mode"), (24, "req_mode")):
            small |= cols[f].astype(np.int64) << shift
        low = np.int64(0xFFFFFFFF)
        pairs = [(cols[hi].astype(np.int64) << 32) | (cols[lo].astype(np.int64) & low)
                 for hi, lo in _PAIRS]
    return [small, *pairs, cols["bytes_sent"], cols["bytes_recv"], cols["request"]]


#: Rows hashed and checked at a time (512 KB a column: the hash and the shift's temporary
#: stay in cache while every word goes through them; whole columns took 7.2 ms, these 3.9,
#: on CloverLeaf 16's 495 k actions).
HASH_ROWS = 1 << 16


def _hash_words(words: list[np.ndarray], n: int) -> np.ndarray:
    """A 64-bit hash of each row of equal-length integer columns."""
    h = np.zeros(n, np.uint64)
    tmp = np.empty(min(n, HASH_ROWS), np.uint64)
    shift, mul = np.uint64(29), np.uint64(0x9E3779B97F4A7C15)
    words = [w.astype(np.int64, copy=False).view(np.uint64) for w in words]
    with np.errstate(over="ignore"):
        for lo in range(0, n, HASH_ROWS):
            part = h[lo:lo + HASH_ROWS]
            t = tmp[:len(part)]
            for w in words:                  # (in place: no temporary)
                part ^= w[lo:lo + HASH_ROWS]
                part *= mul
                np.right_shift(part, shift, out=t)
                part ^= t
    return h


def _rows_are(words: list[np.ndarray], first: np.ndarray, ids: np.ndarray) -> bool:
    """Whether every row's words are those of the first row of its id (a block of rows at a
    time: the ids read from cache for every word)."""
    table = [w[first] for w in words]
    for lo in range(0, len(ids), HASH_ROWS):
        at = ids[lo:lo + HASH_ROWS]
        if not all((t.take(at) == w[lo:lo + HASH_ROWS]).all() for t, w in zip(table, words)):
            return False
    return True


def _first_of(ids: np.ndarray, k: int) -> np.ndarray:
    """Index of the first row of each of ``k`` ids."""
    first = np.zeros(k, np.int64)
    first[ids[::-1]] = np.arange(len(ids) - 1, -1, -1)
    return first


def _content_keys(code: np.ndarray, entries: np.ndarray, modes: np.ndarray,
                  lens: np.ndarray, starts: np.ndarray) -> np.ndarray | None:
    """Each vector's content (its encoding, length, entries and their modes) as one int64,
    the digits of a mixed radix, where they fit, else None: the entries of recorded vectors
    span a few values (sources less ranks, request tokens), and a number needs no check where
    a hash does (public miniMD 2r's 8,422 vectors: 0.35 ms hashed and checked, 0.24 so;
    miniMD 4r's 33,684: 1.15, 0.74 ms)."""
    (e_lo, e_hi), longest = _bounds(entries), int(lens.max())
    span_e = e_hi - e_lo + 1
    if _too_wide(span_e, longest) or span_e ** longest >= 1 << 63:   # (the entries alone)
        return None
    (m_lo, m_hi), (c_lo, c_hi) = _bounds(modes), _bounds(code)
    span_m, span_c = m_hi - m_lo + 1, c_hi - c_lo + 1
    base = span_e * span_m                       # (an entry and its mode: a digit)
    if _too_wide(base, longest) or base ** longest * (longest + 1) * span_c >= 1 << 63:
        return None
    place = np.arange(len(entries)) - np.repeat(starts, lens)
    power = np.array([base ** j for j in range(longest)], np.int64)
    body = segment_sums(((entries - e_lo) * span_m + (modes - m_lo)) * power[place], starts,
                        lens)
    return (body * (longest + 1) + lens) * span_c + (code - c_lo)


def _too_wide(base: int, digits: int) -> bool:
    """Whether ``digits`` digits of ``base`` surely exceed an int64, by their bit lengths: the
    exact power of a long vector's digits is a number of millions of bits (a vector of 1 M
    entries over 1,001 values: 0.94 s, the reviewer's case)."""
    return digits * (base.bit_length() - 1) >= 63


def _bounds(x: np.ndarray) -> tuple[int, int]:
    """(least, largest) of integers ``x``, (0, 0) for none (vectors all empty)."""
    return (int(x.min()), int(x.max())) if len(x) else (0, 0)


def _hashed_contents(code: np.ndarray, entries: np.ndarray, modes: np.ndarray,
                     lens: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(content id of each vector, the first vector of each id) of :func:`_dedup_contents`'
    vectors by a hash, checked exactly (a collision: exact, by bytes)."""
    u = np.uint64
    with np.errstate(over="ignore"):
        mix = (entries.view(u) + u(0x9E3779B97F4A7C15)) * u(0xBF58476D1CE4E5B9) + modes.view(u)
        mix ^= mix >> u(31)
        g = np.arange(1, len(entries) + 1, dtype=u)    # sum(mix * (pos + 1)): a vector's first
        #   entry weighs too (with pos alone [0, 0] and [1, 0] hashed alike, and every vector
        #   of CoMD fell back to the exact, per-vector path: 2.7 ms of its 6 ms)
        h = segment_sums(mix * g, starts, lens) - starts.astype(u) * \
            segment_sums(mix, starts, lens)
        h ^= (lens.astype(u) * u(0x94D049BB133111EB)) ^ (code.view(u) * u(0xD6E8FEB86659FD93))
    ids, uniq = pd.factorize(h)
    first = _first_of(ids, len(uniq))
    rep = first[ids]
    same = np.array_equal(lens[rep], lens) and np.array_equal(code[rep], code)
    if same:
        at = np.repeat(starts[rep] - starts, lens) + np.arange(len(entries))
        same = np.array_equal(entries[at], entries) and np.array_equal(modes[at], modes)
    if not same:                 # a collision: exact, by bytes
        keys: dict[bytes, int] = {}
        ids = np.array([keys.setdefault(b"%d:" % c + entries[s:s + k].tobytes()
                                        + modes[s:s + k].tobytes(), len(keys))
                        for c, s, k in zip(code.tolist(), starts.tolist(), lens.tolist())],
                       np.int64)
        first = _first_of(ids, len(keys))
    return ids, first


def _dedup_contents(code: np.ndarray, entries: np.ndarray, modes: np.ndarray,
                    lens: np.ndarray):
    """(content id of each vector, CSR offsets, values) of the distinct contents among vectors
    given as their encoding, entries back to back (lengths ``lens``) and the entries' token
    modes; a content is stored as ``[code, entries]``, or ``[code, (mode, value)...]`` for
    request tokens.  Each content as one exact number where it fits (:func:`_content_keys`),
    else a hash, checked exactly (:func:`_hashed_contents`); ids in order of first
    appearance either way."""
    if not len(lens):
        return np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(0, np.int64)
    starts = np.cumsum(lens) - lens
    keys = _content_keys(code, entries, modes, lens, starts)
    if keys is None:
        ids, first = _hashed_contents(code, entries, modes, lens, starts)
    else:
        ids, uniq = pd.factorize(keys)
        first = _first_of(ids, len(uniq))
    # each distinct content [code, entries] or [code, (mode, entry)...], back to back (at
    # once: a loop over the contents took 2.8 ms of miniMD 4r's 10 ms of signatures)
    k, pairs = lens[first], code[first] == VEC_REQUESTS
    size = 1 + k * (1 + pairs)
    off = np.concatenate([[0], np.cumsum(size)]).astype(np.int64)
    values = np.empty(int(off[-1]), np.int64)
    values[off[:-1]] = code[first]
    within = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
    src = np.repeat(starts[first], k) + within
    dst = np.repeat(off[:-1] + 1, k) + within * np.repeat(1 + pairs, k)
    two = np.repeat(pairs, k)
    values[dst[two]] = modes[src[two]]
    values[dst + two] = entries[src]
    return ids.astype(np.int32), off, values


def factorize(cols: dict, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(distinct signatures, id of each row), ids in order of first appearance.  A 64-bit hash
    is factorized (a hash table, no sort of wide rows) and checked exactly: a collision falls
    back to an exact factorization."""
    if not n:
        return np.zeros(0, SIGNATURE_DTYPE), np.zeros(0, np.int64)
    names = SIGNATURE_DTYPE.names
    words = _packed_words(cols)
    ids, uniq = pd.factorize(_hash_words(words, n))
    first = _first_of(ids, len(uniq))
    if not _rows_are(words, first, ids):
        sig = np.zeros(n, SIGNATURE_DTYPE)
        for f in names:
            sig[f] = cols[f]
        _, first, ids = np.unique(sig, return_index=True, return_inverse=True)
        order = np.argsort(first)
        remap = np.empty_like(order)
        remap[order] = np.arange(len(order))
        first, ids = first[order], remap[ids.ravel()]
    table = np.zeros(len(first), SIGNATURE_DTYPE)
    for f in names:
        table[f] = cols[f][first]
    return table, ids.astype(np.int64)


def size_sites(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the site of each signature, its bytes): a site is a signature with its message sizes
    (``bytes_sent``, ``bytes_recv``) set aside, numbered in order of its first signature; its
    bytes the two sizes' sum.  A call whose sizes change every few steps (public miniMD's
    sendrecvs at each re-neighbouring: 504 of its 513 signatures on 2 ranks) is one site, so
    that what is kept per site (model times) is kept once, with a per-byte term."""
    cols = {f: table[f] for f in SIGNATURE_DTYPE.names}
    cols["bytes_sent"] = cols["bytes_recv"] = np.zeros(len(table), np.int64)
    return factorize(cols, len(table))[1], \
        table["bytes_sent"].astype(np.int64) + table["bytes_recv"].astype(np.int64)


def decode(table: np.ndarray, ids: np.ndarray, rank: int, nranks: int,
           vec_offsets: np.ndarray, vec_values: np.ndarray, new_requests: np.ndarray,
           latest: int | None = None):
    """Actions of ``rank`` (ACTION_DTYPE, no volume or times) and their vectors back to back,
    from their signature ids.  ``new_requests``: the new request ids these actions name, in
    order; ``latest``: the last new request id named before them (None at the rank's start)."""
    s = table[ids]
    n = len(ids)
    out = np.zeros(n, ACTION_DTYPE)
    for f in _FIELDS:
        out[f] = s[f]
    rel = s["peer_mode"] == 1
    P = max(nranks, 1)
    out["peer"] = np.where(rel, (s["peer"].astype(np.int64) + rank) % P, s["peer"])
    vec = s["vec"].astype(np.int64)
    has_vec = vec >= 0
    safe = np.where(has_vec, vec, 0)
    off = np.concatenate([vec_offsets, vec_offsets[-1:]])    # (index 0 valid when empty)
    lens = np.where(has_vec, off[safe + 1] - off[safe], 0)
    codes = np.where(has_vec, np.concatenate([vec_values, [-1]])[off[safe]], -1)
    tok_vec = codes == VEC_REQUESTS
    vec_len = np.where(tok_vec, (lens - 1) // 2, np.maximum(lens - 1, 0)).astype(np.int64)
    out["vec_len"] = vec_len
    # the token stream in row order: request column, then request-vector entries
    col_tok = s["req_mode"] != REQ_LITERAL
    tv_rows = np.nonzero(tok_vec)[0]
    tv_len = vec_len[tv_rows]
    total = int(tv_len.sum())
    # (pairs: mode at start + 2i, value at start + 2i + 1)
    idx = np.repeat(off[vec[tv_rows]] + 1, tv_len) + \
        2 * (np.arange(total) - np.repeat(np.cumsum(tv_len) - tv_len, tv_len))
    crow = np.nonzero(col_tok)[0]
    rows = np.concatenate([crow, np.repeat(tv_rows, tv_len)])
    where = np.concatenate([np.zeros(len(crow), np.int64), np.arange(1, total + 1)])
    mode = np.concatenate([s["req_mode"][crow].astype(np.int64), vec_values[idx]])
    val = np.concatenate([s["request"][crow], vec_values[idx + 1]])
    order = np.lexsort((where, rows))
    mode, val = mode[order], val[order]
    new = mode == REQ_NEW
    if int(new.sum()) != len(new_requests) or ((mode != REQ_NEW) & (mode != REQ_REF)).any():
        raise ValueError("request tokens do not match the new request ids")
    values = np.zeros(len(mode) + 1, np.int64)
    values[1:][new] = new_requests
    pos = np.where(new, np.arange(1, len(mode) + 1), 0)
    if len(pos):
        np.maximum.accumulate(pos, out=pos)
        if (pos == 0).any():        # references before the first new id here
            if latest is None:
                raise ValueError("a request is referenced before any was created")
            values[0] = latest
    with np.errstate(over="ignore"):
        values = np.where(new, values[1:], values[pos] - val)
    back = np.empty(len(order), np.int64)
    back[order] = np.arange(len(order))
    values = values[back]
    out["request"] = np.where(col_tok, 0, s["request"])
    out["request"][crow] = values[:len(crow)]
    # vectors, back to back in row order: gathered from the contents, tokens from their values
    starts = np.cumsum(vec_len) - vec_len
    nvec = int(vec_len.sum())
    vectors = np.zeros(nvec, np.int64)
    plain = np.nonzero(has_vec & ~tok_vec & (vec_len > 0))[0]
    pl = vec_len[plain]
    at = np.repeat(starts[plain], pl) + np.arange(int(pl.sum())) - np.repeat(np.cumsum(pl) - pl,
                                                                              pl)
    src = np.repeat(off[vec[plain]] + 1, pl) + (at - np.repeat(starts[plain], pl))
    vectors[at] = vec_values[src]
    sr = plain[codes[plain] == VEC_SENDRECV]
    vectors[starts[sr]] = (vectors[starts[sr]] + rank) % P
    tat = np.repeat(starts[tv_rows], tv_len) + np.arange(total) - \
        np.repeat(np.cumsum(tv_len) - tv_len, tv_len)
    vectors[tat] = values[len(crow):]
    if ((codes < -1) | (codes > VEC_REQUESTS)).any():
        raise ValueError("unknown vector encoding")
    return out, vectors


def check_table(table: np.ndarray, vec_offsets: np.ndarray, vec_values: np.ndarray) -> str | None:
    """What is wrong with a stored signature table (None when nothing): modes, kinds and
    vector references inside their ranges."""
    if len(vec_offsets) < 1 or vec_offsets[0] != 0 or (np.diff(vec_offsets) < 1).any() or \
            vec_offsets[-1] != len(vec_values):
        return "signature vector table inconsistent"
    if (table["peer_mode"] > 1).any() or (table["req_mode"] > REQ_REF).any():
        return "unknown peer or request mode in a signature"
    if ((table["vec"] < -1) | (table["vec"] >= len(vec_offsets) - 1)).any():
        return "a signature names a vector outside the vector table"
    known = np.zeros(256, bool)
    known[list(K.NAME)] = True
    if not known[table["kind"]].all():
        return "unknown action kind in a signature"
    starts = vec_offsets[:-1]
    codes = vec_values[starts] if len(starts) else np.zeros(0, np.int64)
    if ((codes < VEC_RAW) | (codes > VEC_REQUESTS)).any():
        return "unknown vector encoding"
    lens = np.diff(vec_offsets)
    if ((codes == VEC_REQUESTS) & ((lens - 1) % 2 != 0)).any() or \
            ((codes == VEC_SENDRECV) & (lens < 2)).any():
        return "vector of the wrong length for its encoding"
    return None



# -- message sizes apart from the grammar (format version 12) ---------------------------------

@dataclass
class SizeTokens:
    """Message sizes as tokens where they change from step to step: at such a call site
    (:func:`size_sites`) each action's grammar symbol is a *token*, ``(site, distance)``: new
    (distance 0: its signature id is the next of its rank's stream ``new``) or the same
    signature as the site's occurrence ``distance`` back on its rank.  Public miniMD's halo
    sendrecvs take new sizes at each re-neighbouring: each step's signatures were new ones
    and the grammar kept every block of 20 steps (1.8 KB of 2r's 3.6 KB of structure); as
    tokens, every block reads alike (``new`` the first step, then 4 back) and folds."""

    sites: np.ndarray            # int64 per token: a signature of its site (the site's first)
    distances: np.ndarray        # int64 per token: 0 new, else occurrences back at the site
    new: np.ndarray              # int64: per rank, the signature ids of its new tokens
    new_offsets: np.ndarray      # int64 [nranks+1]


#: Occurrences in a row of a call site whose distinct sequences :func:`size_tokens` counts.
SIZE_SPAN = 16
#: Signatures a call site has at least for its sizes to be tokens: a site of a few sizes
#: alternates between them, and its signatures fold as they are (on 30 public recordings,
#: sites of 3-7 that would pass :func:`size_tokens`' count, miniAMR's, made its files 60-250
#: bytes larger; IMB's sites of 12-27 sizes and miniMD's of 500-1,000 pay).
SIZE_MIN_SIGNATURES = 8


def _distinct_runs(x: np.ndarray, group: np.ndarray, ngroups: int) -> np.ndarray:
    """Per group, the distinct sequences of :data:`SIZE_SPAN` values of ``x`` (integers >= 0)
    in a row within it (``x`` sorted by group): a polynomial hash of each sequence (as
    :func:`_apart_pays`', of the values themselves: no factorization), counted once per
    (group, hash)."""
    h = x.astype(np.uint64)
    mul = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        for half in (1 << k for k in range(SIZE_SPAN.bit_length() - 1)):
            h = h[:-half] * mul + h[half:] if len(h) > half else h[:0]
            mul = mul * mul
        inside = group[:len(h)] == group[SIZE_SPAN - 1:]
        if ngroups <= 1 << 16:       # (the group in the low bits: distinct keys, no codes)
            key = (h[inside] << np.uint64(16)) | group[:len(h)][inside].astype(np.uint64)
            return np.bincount((pd.unique(key) & np.uint64(0xFFFF)).astype(np.int64),
                               minlength=ngroups)
        g = group[:len(h)][inside]
        key = h[inside] ^ (g.astype(np.uint64) * np.uint64(0xD6E8FEB86659FD93))
    codes, uniq = pd.factorize(key)
    return np.bincount(g[_first_of(codes, len(uniq))], minlength=ngroups)


def _stable_order(key: np.ndarray, top: int) -> np.ndarray:
    """A stable argsort of integer keys in [0, ``top``): as 16-bit keys where they fit
    (numpy's radix sort: 5x faster than a merge sort of 64-bit ones)."""
    if top <= 1 << 16:
        key = key.astype(np.uint16)
    return np.argsort(key, kind="stable")


def size_tokens(ids: np.ndarray, rank: np.ndarray, nranks: int, table: np.ndarray,
                has_volume: np.ndarray, site: np.ndarray | None = None
                ) -> tuple[np.ndarray, SizeTokens] | None:
    """(each action's grammar symbol, the tokens) where message sizes as tokens pay, else
    None: at the call sites of :data:`SIZE_MIN_SIGNATURES` sizes or more (all with or all
    without volumes) whose tokens take fewer than half the distinct sequences of
    :data:`SIZE_SPAN` occurrences in a row that their signatures take (miniMD 2r: its
    sendrecvs' site of 504 sizes; CloverLeaf, PENNANT, TeaLeaf, miniGhost, Nekbone, whose
    sizes alternate between a few, none: their tokens would only peel each loop's first
    iteration).  A token's distance is back to the latest occurrence
    of the same signature at the site on the rank; symbols ``len(table) + token``.
    ``site``: :func:`size_sites`' of the table, when the caller has them."""
    nsig = len(table)
    if not len(ids) or not nsig:
        return None
    site = size_sites(table)[0] if site is None else site
    nsite = int(site.max()) + 1
    per_site = np.bincount(site, minlength=nsite)
    volumes = np.bincount(site, weights=has_volume, minlength=nsite)
    candidate = (per_site >= SIZE_MIN_SIGNATURES) & ((volumes == 0) | (volumes == per_site))
    if not candidate.any():
        return None
    rows = np.flatnonzero(candidate[site][ids])
    if len(rows) < SIZE_SPAN:
        return None
    s, r, f = site[ids[rows]], rank[rows].astype(np.int64), ids[rows].astype(np.int64)
    order = _stable_order(s * nranks + r, nsite * nranks)     # by site, rank, then row
    s, r, f, rows = s[order], r[order], f[order], rows[order]
    n = len(rows)
    at = np.arange(n)
    start = np.ones(n, bool)
    start[1:] = (s[1:] != s[:-1]) | (r[1:] != r[:-1])
    local = at - np.maximum.accumulate(np.where(start, at, 0))
    key = r * nsig + f                      # (an id is of one site: its rank's stream's)
    by_id = _stable_order(key, nranks * nsig)   # each stream's occurrences of an id in order
    sorted_key = key[by_id]
    same = sorted_key[1:] == sorted_key[:-1]
    dist = np.zeros(n, np.int64)
    later = by_id[1:][same]
    dist[later] = local[later] - local[by_id[:-1][same]]
    runs = _distinct_runs(np.concatenate([f, dist]), np.concatenate([s, s + nsite]),
                          2 * nsite)       # (both at once: the halves are groups apart)
    pays = 2 * runs[nsite:] < runs[:nsite]
    tok = pays[s]
    if not tok.any():
        return None
    first = np.zeros(nsite, np.int64)
    first[site[::-1]] = np.arange(nsig - 1, -1, -1)
    rep, d = first[s[tok]], dist[tok]
    which, _ = pd.factorize(d * nsig + rep)       # (distances below the actions: no overflow)
    head = _first_of(which, int(which.max()) + 1)
    sites, distances = rep[head], d[head]
    symbols = ids.astype(np.int64, copy=True)
    symbols[rows[tok]] = nsig + which
    new_rows = np.sort(rows[tok][d == 0])
    counts = np.bincount(rank[new_rows], minlength=nranks)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return symbols, SizeTokens(sites.astype(np.int64), distances.astype(np.int64),
                               ids[new_rows].astype(np.int64), offsets)


def terminal_signatures(nsig: int, tokens: SizeTokens | None) -> np.ndarray:
    """A signature of each terminal of a grammar of ``nsig`` signatures and ``tokens``:
    itself, or a size token's site's (what every signature of its site shares: all but the
    sizes)."""
    own = np.arange(nsig, dtype=np.int64)
    return own if tokens is None else np.concatenate([own, tokens.sites])


def resolve_sizes(symbols: np.ndarray, nsig: int, tokens: SizeTokens, site: np.ndarray,
                  has_volume: np.ndarray, new: np.ndarray) -> np.ndarray:
    """One rank's signature ids from its grammar symbols (its whole expansion) and its new
    tokens' ids ``new`` (:class:`SizeTokens`; ``site``: :func:`size_sites`' of the table):
    each reference followed back to a new token, by pointer doubling (ValueError where they
    do not match)."""
    ntok = len(tokens.sites)
    at = np.flatnonzero(symbols >= nsig)
    if not len(at):
        if len(new):
            raise ValueError("more new message sizes stored than named")
        return symbols
    t = symbols[at] - nsig
    if t.max() >= ntok:
        raise ValueError("a symbol outside the signature and size tables")
    s = site[tokens.sites[t]]
    order = np.argsort(s, kind="stable")
    s, d = s[order], tokens.distances[t][order]
    n = len(at)
    idx = np.arange(n)
    start = np.ones(n, bool)
    start[1:] = s[1:] != s[:-1]
    is_new = d == 0
    if int(is_new.sum()) != len(new):
        raise ValueError("new message sizes do not match their tokens")
    if len(new) and (new.min() < 0 or new.max() >= nsig):
        raise ValueError("a new message size names a signature outside the table")
    ptr = np.where(is_new, idx, idx - d)
    if (ptr < np.maximum.accumulate(np.where(start, idx, 0))).any():
        raise ValueError("a message size refers back beyond its call site's first")
    by_row = np.zeros(n, np.int64)
    newly = np.zeros(n, bool)
    newly[order[is_new]] = True
    by_row[newly] = new
    value = by_row[order]
    while True:                                    # (references point back: no cycle)
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        ptr = nxt
    full = value[ptr]
    rep = tokens.sites[t][order]
    if (site[full] != s).any() or (has_volume[full] != has_volume[rep]).any():
        raise ValueError("a message size names a signature of another call site")
    out = symbols.copy()
    out[at[order]] = full
    return out


# -- message sizes coded for what they are (format version 13) --------------------------------

#: Kinds whose actions receive nothing: their received size is predicted as 0, every other's
#: as the size it sends (a sendrecv's or a collective's two sizes are mostly near or equal).
_SEND_ONLY = K.mask(K.SENDS | K.SEND_INITS)
#: How :func:`code_sizes` stores each swapped signature's partner: the distance back to it,
#: or its distance from the partner after the previous swapped signature's (where partners
#: come in order: public miniMD 2r's second rank takes the first's signatures one by one).
SWAP_BACK, SWAP_AFTER_PREVIOUS = 0, 1


def _swap_partners(sent: np.ndarray, recv: np.ndarray) -> np.ndarray:
    """Per signature, the latest one before it whose sizes are its own swapped (-1: none, or
    sent == received): a message's size is the sent size of one rank's call and the received
    size of its peer's."""
    n = len(sent)
    codes, uniq = pd.factorize(np.concatenate([sent, recv]))
    codes = codes.astype(np.int64)
    k = max(len(uniq), 1)
    key = np.concatenate([codes[:n] * k + codes[n:], codes[n:] * k + codes[:n]])
    pos = np.concatenate([np.arange(n), np.arange(n)])
    is_def = np.concatenate([np.ones(n, bool), np.zeros(n, bool)])
    order = np.lexsort((is_def, pos, key))       # (a signature's query before its own pair)
    key, pos, is_def = key[order], pos[order], is_def[order]
    base = key * (n + 1)
    latest = np.maximum.accumulate(np.where(is_def, base + pos + 1, 0))
    out = np.full(n, -1, np.int64)
    out[pos[~is_def]] = np.where(latest > base, latest - base - 1, -1)[~is_def]
    out[sent == recv] = -1
    return out


def code_sizes(table: np.ndarray) -> list[dict[str, np.ndarray]]:
    """The signatures' message sizes coded for what they are (format version 13), one coding
    per way of coding the swaps: in a unit (their greatest common divisor), a signature whose
    two sizes are an earlier one's swapped by a reference to it (``size_swaps``: 0 none, else
    :data:`SWAP_BACK` or :data:`SWAP_AFTER_PREVIOUS`), the others' sent size and their
    received size less its prediction (:data:`_SEND_ONLY`; these two arrays the same in
    every coding).  Public miniMD 2r: 513 signatures, 249 swapped, unit 4; its two size
    columns took 1.8 KB deflated, 0.9 so."""
    sent = table["bytes_sent"].astype(np.int64)
    recv = table["bytes_recv"].astype(np.int64)
    nonzero = np.abs(np.concatenate([sent, recv]))
    nonzero = nonzero[nonzero != 0]
    unit = max(int(np.gcd.reduce(nonzero)) if len(nonzero) else 1, 1)
    partner = _swap_partners(sent, recv)
    own = partner < 0
    at = np.flatnonzero(~own)
    predicted = np.where(_SEND_ONLY[table["kind"]], 0, sent)
    # (in units before the difference: recv - predicted may overflow int64, which its
    # quotients' difference may too, but exactly modulo 2**64, as the reader adds it back)
    coding = {"bytes_sent": sent[own] // unit,
              "bytes_recv": recv[own] // unit - predicted[own] // unit}
    after_previous = np.diff(np.concatenate([[-1], partner[at]])) - 1
    out = []
    for how, ref in ((SWAP_BACK, at - partner[at]),
                     (SWAP_AFTER_PREVIOUS, 1 + R.zigzag(after_previous).view(np.int64))):
        swaps = np.zeros(len(sent), np.int64)
        swaps[at] = ref
        out.append({"size_coding": np.array([unit, how], np.int64), "size_swaps": swaps,
                    **coding})                   # (the sizes themselves: the same arrays)
    return out


def decode_sizes(kind: np.ndarray, coding: np.ndarray, swaps: np.ndarray, sent: np.ndarray,
                 recv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes_sent, bytes_recv) of every signature from :func:`code_sizes`' arrays
    (ValueError where they do not match)."""
    if len(coding) != 2 or coding[0] < 1 or coding[1] not in (SWAP_BACK, SWAP_AFTER_PREVIOUS):
        raise ValueError("unknown message size coding")
    n = len(swaps)
    own = swaps == 0
    if len(kind) and (kind.min() < 0 or kind.max() >= len(_SEND_ONLY)):
        raise ValueError("a signature of an unknown kind")
    if len(kind) != n or int(own.sum()) != len(sent) or len(sent) != len(recv) or \
            (swaps < 0).any():
        raise ValueError("message sizes do not match the signature table")
    at = np.flatnonzero(~own)
    if coding[1] == SWAP_BACK:
        partner = at - swaps[at]
    else:
        partner = np.cumsum(R.unzigzag(swaps[at] - 1) + 1) - 1
    if ((partner < 0) | (partner >= at)).any():
        raise ValueError("a message size refers to a later signature")
    unit = int(coding[0])
    out_sent, out_recv = np.zeros(n, np.int64), np.zeros(n, np.int64)
    with np.errstate(over="ignore"):
        out_sent[own] = sent * unit
        out_recv[own] = recv * unit + np.where(_SEND_ONLY[kind[own]], 0, out_sent[own])
    ptr = np.arange(n)
    ptr[at] = partner
    odd = ~own                              # (swapped an odd number of times on the way)
    while True:                             # (partners point back: no cycle)
        nxt = ptr[ptr]
        if np.array_equal(nxt, ptr):
            break
        odd = odd ^ odd[ptr]
        ptr = nxt
    return np.where(odd, out_recv[ptr], out_sent[ptr]), np.where(odd, out_sent[ptr],
                                                                 out_recv[ptr])


def fresh_code(new: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The ranks' new size tokens' signature ids (:class:`SizeTokens`' ``new``, rank after
    rank) coded for how they come (``sizes/fresh``, format version 13): an id above every id
    before it (a signature no rank named yet) as 2 * its distance above the largest, another
    as 1 + 2 * (zigzag) its difference from the rank's previous such (0 at its first): public
    miniMD 2r's second rank takes the first's signatures back one by one between its own new
    ones (as differences within a rank: 237 bytes deflated; so, 42)."""
    new = new.astype(np.int64)
    n = len(new)
    if not n:
        return new
    top = np.maximum.accumulate(np.concatenate([[-1], new[:-1]]))
    fresh = new > top
    out = 2 * (new - top - 1)
    other = np.flatnonzero(~fresh)
    rank = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[other]
    ref = np.concatenate([[0], new[other[:-1]]])
    ref[np.concatenate([[True], rank[1:] != rank[:-1]])] = 0
    out[other] = 1 + 2 * R.zigzag(new[other] - ref).view(np.int64)
    return out


def fresh_decode(code: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Inverse of :func:`fresh_code` (ValueError where it names negative ids)."""
    code = code.astype(np.int64)
    n = len(code)
    if not n:
        return code
    if code.min() < 0:
        raise ValueError("a new message size's code is negative")
    fresh = (code & 1) == 0
    out = np.zeros(n, np.int64)
    out[fresh] = np.cumsum((code[fresh] >> 1) + 1) - 1
    # the others: per rank, a running sum of differences restarted at the rank's start
    other = np.flatnonzero(~fresh)
    if len(other):
        rank = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[other]
        d = R.unzigzag(code[other] >> 1)
        with np.errstate(over="ignore"):
            total = np.cumsum(d)
            start = np.ones(len(other), bool)
            start[1:] = rank[1:] != rank[:-1]
            base = np.maximum.accumulate(np.where(start, np.arange(len(other)), 0))
            out[other] = total - (total - d)[base]
    top = np.maximum.accumulate(np.where(fresh, out, -1))
    if (~fresh & ((out > top) | (out < 0))).any():
        raise ValueError("a new message size's code names an id it cannot")
    return out
