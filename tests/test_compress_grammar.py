"""Compressed structure (issue 23): call signatures and loop grammars round-trip every trace
exactly; the loops found are the program's; damaged grammars are refused before expansion."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from tests.support import synthetic
from minitrace.compress import grammar as G
from minitrace.compress import loops
from minitrace.compress import signatures as S
from minitrace.converters.simgrid_ti import read_ti
from minitrace.model import ACTION_DTYPE, NONE, TraceBuilder
from tests.support import fixtures
from tests.test_storage import small_trace

STRUCTURE = ("kind", "flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "request",
             "vec_len")


def random_trace(seed: int, nranks: int = 3, n: int = 300, more: tuple = ()):
    """Random kinds (``more`` too), peers (in and outside the world), requests reused and
    fresh, vectors of every encoding: nothing a grammar could count on."""
    rng = np.random.default_rng(seed)
    names = ["send", "isend", "irecv", "wait", "waitall", "startall", "sendrecv", "bcast",
             "alltoallv", "compute", "comm_split", "testsome", *more]
    b = TraceBuilder(nranks, {"volume_unit": "seconds"})
    for r in range(nranks):
        for _ in range(n):
            k = names[rng.integers(len(names))]
            kw = dict(peer=int(rng.choice([-1, 0, 1, 2, nranks + 3, -32766])),
                      tag=int(rng.integers(-1, 3)), bytes_sent=int(rng.integers(0, 3)) * 8,
                      flags=int(rng.integers(0, 256)), comm=int(rng.integers(0, 2)))
            if k in ("isend", "irecv", "wait", "comm_split", "waitany", "testany"):
                kw["request"] = int(rng.choice([-1, 5, 6, 2 ** 62, -2 ** 62]))
            if k in ("waitall", "startall", "testsome"):
                kw["vector"] = rng.choice([-1, 0, 5, 6, 7], rng.integers(1, 4)).tolist()
            if k == "sendrecv":
                kw["vector"] = [int(rng.choice([0, 2, -1, 99])), 4]
            if k == "alltoallv":
                kw["vector"] = rng.integers(0, 3, 2 * nranks).tolist()
            b.add(r, k, **kw)
    return b.build()


def repo_traces():
    yield "small", small_trace()
    yield "loop", synthetic.loop_trace(4, 4000, True)
    yield "ring", synthetic.ring_trace(5, 1000)
    for name in fixtures.OWN_TI:
        yield name, read_ti(fixtures.DATA / "ti" / name)
    for seed in range(4):
        yield f"random{seed}", random_trace(seed)


def structure_round_trip(d, apart: bool = False):
    """Encode (``apart``: the requests waitany and testany complete apart), fold, check,
    expand and decode every rank: equal to ``d``'s structure."""
    sig = S.encode(d, completions_apart=apart)
    gram = G.build(sig.ids, d.rank_offsets, len(sig.table))
    gram.check()
    assert S.check_table(sig.table, sig.vec_offsets, sig.vec_values) is None
    for r in range(d.nranks):
        ids = gram.expand(int(gram.rank_grammar[r]))
        np.testing.assert_array_equal(ids, sig.ids[d.rank_slice(r)])
        lo, hi = sig.new_request_offsets[r:r + 2]
        out, vec = S.decode(sig.table, ids, r, d.nranks, sig.vec_offsets, sig.vec_values,
                            sig.new_requests[lo:hi])
        a = d.actions[d.rank_slice(r)]
        for f in STRUCTURE:
            np.testing.assert_array_equal(out[f], a[f], err_msg=f"rank {r} {f}")
        rows = np.nonzero(a["vec_len"] > 0)[0] + d.rank_offsets[r]
        want = np.concatenate([d.vector(i) for i in rows]) if len(rows) else np.zeros(0)
        np.testing.assert_array_equal(vec, want)
    return sig, gram


def arrival_trace(seed: int, nranks: int = 4, steps: int = 30, shuffled: bool = True):
    """A halo exchange as miniAMR's and miniGhost's (an irecv from each neighbour, an isend to
    each, one waitany per request) whose receives complete in a random order each step
    (``shuffled``) or in the order posted, then the sends: the first by a testany, the others
    each by a waitany after a testany that completes nothing (its request MPI_UNDEFINED's
    -1); request ids from a counter."""
    rng = np.random.default_rng(seed)
    b = TraceBuilder(nranks, {"volume_unit": "seconds"})
    for r in range(nranks):
        req = 0
        for step in range(steps):
            posted = []
            for d in (1, 2, nranks - 1):
                b.add(r, "irecv", peer=(r + d) % nranks, tag=d, bytes_recv=8 * (step % 3 + 1),
                      request=req)
                posted.append(req)
                req += 1
            for d in (1, 2):
                b.add(r, "isend", peer=(r - d) % nranks, tag=d, bytes_sent=8, request=req)
                posted.append(req)
                req += 1
            order = [*(rng.permutation(posted[:3]) if shuffled else posted[:3]), *posted[3:]]
            for i, q in enumerate(order):
                b.add(r, "compute", volume=1e-6)
                b.add(r, "testany", request=NONE if i else int(q), flags=int(i == 0))
                if i:
                    b.add(r, "waitany", request=int(q))
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    return b.build()


@pytest.mark.parametrize("name,data", [*repo_traces(), ("arrival", arrival_trace(3))],
                         ids=lambda x: x if isinstance(x, str) else "")
@pytest.mark.parametrize("apart", [False, True])
def test_structure_round_trips_exactly(name, data, apart):
    structure_round_trip(data, apart)


def test_apart_pays_counts_the_distinct_sequences():
    """Completions go apart where their distinct sequences of APART_SPAN in a row are fewer
    than half as many as the tokens': the hashed counts (by doubling) are those of the
    sequences themselves, for streams shorter than, as long as and longer than a span."""
    rng = np.random.default_rng(5)
    span = S.APART_SPAN

    def distinct(x):
        return len({tuple(x[i:i + span]) for i in range(len(x) - span + 1)})
    decided = set()
    for trial in range(300):
        n = int(rng.integers(0, 3 * span)) if trial % 2 else int(rng.integers(0, 400))
        default = rng.integers(0, int(rng.integers(1, 5)), n)
        apart = np.tile(rng.integers(0, 3, 4), n)[:n] if trial % 3 else \
            rng.integers(0, 2, n)
        want = 2 * distinct(apart) < distinct(default)
        assert S._apart_pays(default, apart) == want, trial
        decided.add(want)
    assert decided == {False, True}


@pytest.mark.parametrize("seed", range(4))
def test_completions_apart_round_trip_whatever_they_name(seed, monkeypatch, tmp_path):
    """Completions apart decode exactly whatever requests they name (reused, never posted,
    huge, negative, MPI_UNDEFINED), in memory and through the file, when taken apart."""
    import minitrace
    from minitrace.compress.files import write_compressed
    d = random_trace(seed, more=("waitany", "testany"))
    monkeypatch.setattr(S, "_apart_pays", lambda default, apart: True)
    sig, _ = structure_round_trip(d, apart=True)
    apart = np.isin(sig.table["kind"], [K.code("waitany"), K.code("testany")])
    assert (sig.table["req_mode"][apart & (sig.table["request"] != NONE)] == S.REQ_NEW).all()
    out = tmp_path / "r.h5"
    write_compressed(str(out), d, "exact")
    with minitrace.open(out) as t:
        e = t.data()
    for f in STRUCTURE:
        np.testing.assert_array_equal(e.actions[f], d.actions[f], err_msg=f)


def test_completions_in_arrival_order_fold_with_their_requests_apart():
    """Requests that complete in the order messages arrive leave no loop as signatures of
    their own (each step a new sequence of waitany and testany signatures); apart (in the
    stream of new ids, each signature known by the kind that posted its request) the steps
    fold.  In the order posted every step, the signatures fold either way and stay as they
    were: the stream of new ids would only grow."""
    d = arrival_trace(5)
    size = {}
    for apart in (False, True):
        sig, gram = structure_round_trip(d, apart)
        size[apart] = len(gram.top_symbols) + len(gram.rule_symbols)
    assert 4 * size[True] < size[False], size
    regular = arrival_trace(5, shuffled=False)
    want, got = S.encode(regular), S.encode(regular, completions_apart=True)
    assert np.array_equal(got.table, want.table) and np.array_equal(got.ids, want.ids)
    assert np.array_equal(got.new_requests, want.new_requests)


def test_loop_of_a_ring_is_one_rule_shared_by_every_rank():
    d = synthetic.ring_trace(8, 8 * 4002)    # 1000 iterations per rank
    sig, gram = structure_round_trip(d)
    assert len(sig.table) == 6                 # init, the 4 loop calls, finalize
    assert len(gram.top_offsets) == 2          # one grammar for the 8 ranks
    assert (gram.rank_grammar == 0).all()
    assert sorted(gram.rule_counts.tolist())[-1] == 1000
    # the request ids 2k, 2k+1 renumbered: the side stream is the only per-iteration data
    np.testing.assert_array_equal(sig.new_requests[:4], [0, 1, 2, 3])


def test_nested_loops_fold_inside_out():
    b = TraceBuilder(1)
    for _ in range(50):
        for _ in range(3):
            b.add(0, "isend", peer=0, tag=1)
            b.add(0, "compute", volume=1.0)
        b.add(0, "allreduce", bytes_sent=8, bytes_recv=8)
    d = b.build()
    sig, gram = structure_round_trip(d)
    top = gram.top(0)
    assert len(top) == 1 and gram.rule_counts[top[0] - gram.nterm] == 50
    outer = gram.body(int(top[0]) - gram.nterm)
    inner = int(outer[0]) - gram.nterm
    assert gram.rule_counts[inner] == 3 and len(gram.body(inner)) == 2
    assert loops.__module__   # (the public function is importable as minitrace.compress.loops)
    from minitrace.compress.loop_view import describe
    assert describe(gram, sig.table, int(top[0]) - gram.nterm) == \
        "[3 x [isend, compute], allreduce]"


def test_loops_gives_every_iteration_of_the_main_loop():
    d = synthetic.ring_trace(4, 4 * 4002)        # init, 1000 x (isend irecv waitall allreduce)
    df = loops(d)
    assert set(df.columns) == {"loop", "iteration", "rank", "first_row", "last_row", "main"}
    assert df.groupby("rank").size().tolist() == [1000] * 4
    assert df["main"].all()
    for rank, g in df.groupby("rank"):
        assert g["first_row"].iloc[0] == d.rank_offsets[rank] + 1
        assert (g["last_row"] - g["first_row"] + 1 == 4).all()
        np.testing.assert_array_equal(g["first_row"].iloc[1:].to_numpy(),
                                      g["last_row"].iloc[:-1].to_numpy() + 1)
        kinds = d.actions["kind"][g["first_row"].to_numpy()[:, None] + np.arange(4)]
        assert (kinds == [K.CODE[k] for k in ("isend", "irecv", "waitall", "allreduce")]).all()


def test_loops_of_a_trace_without_repetition_is_empty():
    df = loops(small_trace())
    assert len(df) == 0 and "first_row" in df.columns


def _grammar(**change):
    g = dict(nterm=2, rule_offsets=np.array([0, 2]), rule_symbols=np.array([0, 1]),
             rule_counts=np.array([3]), top_offsets=np.array([0, 2]),
             top_symbols=np.array([2, 0]), rank_grammar=np.array([0, 0]))
    g.update({k: np.asarray(v, np.int64) for k, v in change.items()})
    return G.Grammar(**g)


@pytest.mark.parametrize("change,why", [
    (dict(rule_symbols=[0, 2]), "cycle"),                       # a rule names itself
    (dict(rule_symbols=[0, 7]), "outside"),
    (dict(top_symbols=[2, -1]), "outside"),
    (dict(rank_grammar=[0, 3]), "grammar outside"),
    (dict(rule_counts=[0]), "below 1"),
    (dict(rule_offsets=[0, 5]), "offsets"),
    (dict(rule_counts=[2 ** 62]), "beyond the limits"),
])
def test_damaged_grammars_are_refused_before_expanding(change, why):
    gram = _grammar(**change)
    with pytest.raises(G.GrammarError, match=why):
        gram.check()


def test_counts_that_overflow_through_nesting_are_refused():
    # 40 rules, each twice the one before: 2**40 ... fine; 70 of them: beyond 2**48
    R = 70
    gram = G.Grammar(nterm=1, rule_offsets=np.arange(R + 1),
                     rule_symbols=np.arange(R), rule_counts=np.full(R, 2),
                     top_offsets=np.array([0, 1]), top_symbols=np.array([R]),
                     rank_grammar=np.array([0]))
    with pytest.raises(G.GrammarError, match="beyond the limits"):
        gram.check()


def test_terminal_counts_without_expanding():
    d = synthetic.loop_trace(3, 3000, False)
    sig, gram = structure_round_trip(d)
    for r in range(d.nranks):
        counts = gram.terminal_counts(int(gram.rank_grammar[r]))
        np.testing.assert_array_equal(
            counts, np.bincount(sig.ids[d.rank_slice(r)], minlength=len(sig.table)))


def test_programs_differing_only_in_loop_counts_have_one_shape(tmp_path):
    from minitrace import storage
    b = TraceBuilder(3)
    for r in range(3):
        b.add(r, "init")
        for _ in range(100 + (r == 2) * 7):
            b.add(r, "barrier")
            b.add(r, "compute", volume=1.0)
        b.add(r, "finalize")
    d = b.build()
    sig, gram = structure_round_trip(d)
    assert len(gram.top_offsets) == 3                    # two programs
    shapes = gram.shapes()
    assert shapes[0] == shapes[1]
    p = tmp_path / "t.h5"
    storage.write_trace(p, d)
    import minitrace
    from minitrace.compress.loop_view import loop_lines
    with minitrace.open(p) as t:
        lines = loop_lines(t.loops())
    assert lines[0] == "ranks 0-1 and 2 run the same loops, for different numbers of iterations"
    assert any("main loop: 107 iterations of [barrier, compute]" in ln for ln in lines)


def test_loops_of_equal_size_are_no_main_loop(tmp_path):
    """Equal loops one after another (public miniMD: a loop per 20 steps between
    re-neighbourings, the sizes changing) are each a loop, none the main one."""
    from minitrace import storage
    import minitrace
    from minitrace.compress.loop_view import loop_lines
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        for block in range(3):
            for _ in range(50):
                b.add(r, "send", peer=1 - r, tag=0, bytes_sent=8 * (block + 1))
                b.add(r, "recv", peer=1 - r, tag=0, bytes_recv=8 * (block + 1))
                b.add(r, "compute", volume=1.0)
        b.add(r, "finalize")
    p = tmp_path / "t.h5"
    storage.write_trace(p, b.build())
    with minitrace.open(p) as t:
        lines = loop_lines(t.loops())
    assert sum("50 iterations of" in ln for ln in lines) == 3, lines
    assert not any("main loop" in ln for ln in lines), lines


def test_run_test_agrees_with_the_runs_themselves():
    """has_run says whether a boolean array holds p consecutive Trues, as its run
    lengths do, for every period the folds try."""
    from minitrace.compress.grammar import has_run
    rng = np.random.default_rng(5)
    for n in (0, 1, 7, 64, 300):
        for density in (0.3, 0.8, 0.97):
            m = rng.random(n) < density
            edges = np.diff(np.concatenate([[0], m.view(np.int8), [0]]))
            longest = int((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)).max()) \
                if m.any() else 0
            for p in list(range(1, 40)) + [64, 100, 257]:
                assert has_run(m, p) == (longest >= p), (n, density, p)


def test_action_columns_are_the_fields():
    """The fields taken a block of rows at a time are each field's column (tables shorter
    than, equal to and not a multiple of a block)."""
    from minitrace.compress.signatures import COLUMN_ROWS, action_columns
    for n in (0, 5, COLUMN_ROWS, 2 * COLUMN_ROWS + 3):
        d = random_trace(n % 97, nranks=1, n=n) if n else None
        a = d.actions[:n] if d is not None else np.zeros(0, ACTION_DTYPE)
        assert len(a) == n
        cols = action_columns(a)
        assert list(cols) == list(a.dtype.names)
        for f, col in cols.items():
            want = np.ascontiguousarray(a[f]).view(np.uint8)
            assert col.flags.c_contiguous and np.array_equal(col.view(np.uint8), want), f


def motif_stream(rng, n: int) -> np.ndarray:
    """Signature ids with tandem repeats of every kind: loops of short and long bodies, nested,
    back to back, and repeats that start inside the copies of the one before (``abab`` then
    ``bcbc``)."""
    out: list[int] = []
    while len(out) < n:
        body = rng.integers(0, 4, rng.integers(1, 7)).tolist()
        if rng.random() < 0.3:            # a nested loop inside the body
            body += rng.integers(0, 4, rng.integers(1, 3)).tolist() * int(rng.integers(2, 5))
        out += body * int(rng.integers(1, 6))
        if rng.random() < 0.4:
            out += rng.integers(0, 4, rng.integers(1, 4)).tolist()
    return np.array(out[:n], np.int32)


def test_folding_every_repeat_at_once_is_folding_them_one_by_one():
    """A fold of period p replaces all its tandem repeats at once (the rule ids assigned in the
    order of their first repeat), and so does the fold of overlapping repeats after it cut
    them; the same as replacing them one at a time, each what is left of it after the one
    before, with the runs found by a plain loop."""
    rng = np.random.default_rng(38)
    folded = overlapped = many = 0
    for trial in range(300):
        seq = motif_stream(rng, int(rng.integers(2, 400) if trial % 10 else 2000))
        for p in range(1, 13):
            n, plain = len(seq), seq.tolist()
            starts, lens, i = [], [], 0
            while i < n - p:              # runs of seq[i] == seq[i + p] at least p long
                j = i
                while j < n - p and plain[j] == plain[j + p]:
                    j += 1
                if j - i >= p:
                    starts.append(i)
                    lens.append(j - i)
                i = j + 1
            at_once, one_by_one = G._Builder(4), G._Builder(4)
            got = G._fold(seq, p, at_once)
            if not starts:
                assert got is seq
                continue
            want = _fold_one_by_one(seq, p, starts, lens, one_by_one)
            np.testing.assert_array_equal(got, want, err_msg=f"trial {trial} period {p}")
            assert got.dtype == want.dtype
            assert at_once.counts == one_by_one.counts and at_once.ids == one_by_one.ids
            if len(starts) > 1:          # (the overlapping path, whether or not they overlap)
                again = G._Builder(4)
                np.testing.assert_array_equal(
                    G._fold_overlapping(seq, p, np.array(starts), np.array(lens), again), want)
                assert again.counts == one_by_one.counts and again.ids == one_by_one.ids
            folded += 1
            many += len(starts) >= G.FEW_REPEATS
            overlapped += any(s < a + (L + p) // p * p
                              for a, L, s in zip(starts, lens, starts[1:]))
    assert folded > 300 and overlapped > 10 and many > 10     # (every path taken)


def _fold_one_by_one(seq, p, starts, lens, rules):
    """The runs ``starts``, ``lens`` of ``seq[i] == seq[i + p]`` replaced one at a time, each
    what is left of it after the one before, a rule lookup per repeat."""
    keep = np.ones(len(seq), bool)
    new = seq.copy()
    end = 0
    for s, L in zip(starts, lens):
        if s < end:
            L -= end - s
            s = end
            if L < p:
                continue
        k = (L + p) // p
        new[s] = rules.rule(seq[s:s + p], k)
        keep[s + 1:s + k * p] = False
        end = s + k * p
    return new[keep]


def test_first_names_by_table_by_hash_and_by_sorting(monkeypatch):
    """Each name's first name is its rank's first use of its value, whether found by the
    table over the ranks' value ranges (small ranges), by hashing (wide ones, negative
    values) or, where the hash collides, by sorting the pairs."""
    rng = np.random.default_rng(17)
    cases = []
    for n, width, nranks in ((1, 1, 1), (50, 8, 3), (5000, 300, 4), (400, 10 ** 12, 2),
                             (300, 40, 5)):
        values = rng.integers(-width // 2, width, n).astype(np.int64)
        rank = np.sort(rng.integers(0, nranks, n)).astype(np.int64)
        seen: dict = {}
        want = np.array([seen.setdefault((r, v), i)
                         for i, (r, v) in enumerate(zip(rank.tolist(), values.tolist()))])
        cases.append((values, rank, want))
        assert np.array_equal(S._first_names(values, rank), want), (n, width)
    factorize = S.pd.factorize
    monkeypatch.setattr(S.pd, "factorize", lambda h: (np.zeros(len(h), np.int64),
                                                      factorize(h)[1][:1]))
    for values, rank, want in cases[3:4]:
        assert np.array_equal(S._first_names(values, rank), want)


def test_signatures_are_the_same_whatever_the_hash(monkeypatch):
    """Rows are told apart by their columns, not by their hash: a hash that collides
    everywhere falls back to an exact factorization with the same table and ids; the packed
    words (bytes of the columns) are the shifts and ors of other column types."""
    data = random_trace(11, nranks=3, n=400)
    sig = S.encode(data)
    cols = {f: sig.table[f][sig.ids] for f in S.SIGNATURE_DTYPE.names}
    monkeypatch.setattr(S, "_hash_words", lambda words, n: np.zeros(n, np.uint64))
    table, ids = S.factorize(cols, len(sig.ids))
    assert np.array_equal(table, sig.table) and np.array_equal(ids, sig.ids)
    wide = {f: c.astype(np.int64) for f, c in cols.items()}     # (the shifts' path)
    for a, b in zip(S._packed_words(cols), S._packed_words(wide)):
        assert np.array_equal(a, b)


def test_time_encodings_follow_every_time_not_only_the_extremes():
    """encode_times (volumes.py) judges the times by their extremes: untimed when no start is
    a number, float seconds when any start or end is not finite or the span is too wide for
    integer ns, else integer ns from the earliest start."""
    from minitrace.compress.volumes import encode_times
    offsets = np.array([0, 3, 5])
    ts = np.array([1.0, 2.0, 3.0, 1.5, 2.5])
    te = ts + 0.25
    nan, inf = np.nan, np.inf
    cases = [(ts, te, "ns-gap"), (np.full(5, nan), te, "untimed"),
             (np.where(np.arange(5) == 2, nan, ts), te, "float-seconds"),
             (ts, np.where(np.arange(5) == 4, inf, te), "float-seconds"),
             (np.where(np.arange(5) == 0, -inf, ts), te, "float-seconds"),
             (ts, np.where(np.arange(5) == 1, 1e12, te), "float-seconds")]
    for start, end, want in cases:
        enc, t0, _, (a, b), _ = encode_times(start, end, offsets, None)
        assert enc == want, (start, end)
        if want == "ns-gap":
            assert t0 == 1.0 and np.allclose(a, start) and np.allclose(b, end)


def test_recorded_exchange_in_arrival_order_round_trips_through_the_file(programs, tmp_path):
    """tests/programs/waitany2d.c (miniGhost's exchange; miniAMR's is alike) recorded on a row
    of 4 ranks, the middle ones receiving from two neighbours; each exchange's completions
    then put in an arrival order (its receives in a random order, then its sends, as a loaded
    machine may give them).  The compressed file holds the completed requests apart, folds
    the steps into loops, and expands to the trace exactly."""
    import minitrace
    from minitrace.compress.files import write_compressed
    from tests.support.record_util import record
    rec = tmp_path / "w.h5"
    record(rec, 4, [str(programs("waitany2d")), "40", "4", "1", "16"])
    d = minitrace.open(rec).data()
    a = d.actions.copy()
    rng = np.random.default_rng(8)
    waitany, compute = K.code("waitany"), K.code("compute")
    for r in range(d.nranks):
        rows = np.arange(*d.rank_offsets[r:r + 2])
        posted = {int(q): int(k) for q, k in zip(a["request"][rows], a["kind"][rows])
                  if k in (K.code("irecv"), K.code("isend"))}
        group: list = []
        for i in [*rows.tolist(), None]:
            if i is not None and a["kind"][i] == waitany:
                group.append(i)
            elif i is None or a["kind"][i] != compute:
                reqs = a["request"][group]
                recvs = [q for q in reqs if posted[int(q)] == K.code("irecv")]
                a["request"][group] = [*rng.permutation(recvs), *sorted(set(reqs) - set(recvs))]
                group = []
    d.actions = a
    out = tmp_path / "c.h5"
    write_compressed(str(out), d, "exact")
    with minitrace.open(out) as t:
        c, e = t.compressed_form, t.data()
        for f in STRUCTURE:
            np.testing.assert_array_equal(e.actions[f], a[f], err_msg=f)
    table = c.table[c.table["kind"] == waitany]
    assert (table["req_mode"] == S.REQ_NEW).all()
    sig = S.encode(d)
    folded = G.build(sig.ids, d.rank_offsets, len(sig.table))
    assert 2 * len(c.grammar.top_symbols) < len(folded.top_symbols)


def test_grammar_too_large_for_the_pack_is_deflated_harder(tmp_path):
    """A top-level sequence too large for the pack (an irregular code's) is a dataset of its
    own deflated at store.GRAMMAR_GZIP_LEVEL, not storage's level 1, and reads back."""
    import h5py
    import minitrace
    from minitrace.compress import pack as P
    from minitrace.compress import store
    from minitrace.compress.files import write_compressed
    d = random_trace(2, nranks=2, n=20000)
    out = tmp_path / "r.h5"
    write_compressed(str(out), d, "exact")
    with h5py.File(out) as f:
        ds = f["trace/grammar/top_symbols"]
        assert ds.nbytes > P.MAX_BYTES and ds.compression == "gzip" and ds.shuffle
        assert ds.compression_opts == store.GRAMMAR_GZIP_LEVEL
    with minitrace.open(out) as t:
        e = t.data()
    for f in STRUCTURE:
        np.testing.assert_array_equal(e.actions[f], d.actions[f], err_msg=f)
