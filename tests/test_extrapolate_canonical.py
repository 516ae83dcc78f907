"""Commuting operations in a canonical order (minitrace/extrapolate/canonical.py): ranks that
post the same receives in a rank-dependent order (HPCCG's neighbour list comes out of a hash)
are one rank class, and the program of tests/programs/hashorder.c, which does that, extrapolates
from 3, 4, 5 ranks to 6 with the structure of the recorded 6-rank run.  Sends and receives
posted per direction (CloverLeaf's isend, irecv to the left, then to the right) are one run of
receives and one of sends, and tests/programs/clover2d.c, which posts them so on its own
x-fastest grid, extrapolates from 4, 8, 12 to 16 ranks (its interior composed)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import minitrace
from minitrace import kinds as K
from minitrace.cli import main
from minitrace.extrapolate import check as C
from minitrace.extrapolate import structure as ST
from minitrace.extrapolate.canonical import canonical
from minitrace.model import TraceBuilder
from minitrace.validate import validate
from tests.support.record_util import record


def _exchange(nranks: int, right_first) -> "TraceColumns":
    """Each rank posts an irecv from each neighbour (the right one first where
    ``right_first(r)``), sends to each, and two more to its right (same tag: they keep their
    order), waits in posting order."""
    b = TraceBuilder(nranks, meta={"volume_unit": "flops"})
    t = 0.0
    for r in range(nranks):
        nb = [q for q in ((r + 1, r - 1) if right_first(r) else (r - 1, r + 1))
              if 0 <= q < nranks]
        b.add(r, "init", t_start=t, t_end=t + 1)
        for it in range(3):
            reqs = []
            for i, q in enumerate(nb):
                reqs.append(10 * it + i)
                b.add(r, "irecv", peer=q, tag=5, bytes_recv=800, request=reqs[-1],
                      t_start=t, t_end=t + 1)
                b.add(r, "compute", volume=1.0, t_start=t, t_end=t + 1)
            for q in nb:
                b.add(r, "send", peer=q, tag=5, bytes_sent=800, t_start=t, t_end=t + 1)
            for q in [r + 1] if r + 1 < nranks else []:     # two to the right, in order
                b.add(r, "send", peer=q, tag=6, bytes_sent=8, t_start=t, t_end=t + 1)
                b.add(r, "send", peer=q, tag=6, bytes_sent=16, t_start=t, t_end=t + 1)
            for q in reqs:
                b.add(r, "wait", request=q, t_start=t, t_end=t + 1)
            for q in [r - 1] if r > 0 else []:
                b.add(r, "recv", peer=q, tag=6, bytes_recv=8, t_start=t, t_end=t + 1)
                b.add(r, "recv", peer=q, tag=6, bytes_recv=16, t_start=t, t_end=t + 1)
            t += 1
        b.add(r, "finalize", t_start=t, t_end=t + 1)
    return b.build()


def _relative(data, r):
    a = data.actions[data.rank_slice(r)]
    off = np.where(a["peer"] >= 0, a["peer"] - r, a["peer"])
    return [(K.NAME[k], int(o), int(g), int(s + v)) for k, o, g, s, v in
            zip(a["kind"], off, a["tag"], a["bytes_sent"], a["bytes_recv"])]


def test_rank_dependent_post_order_becomes_one_program():
    data = _exchange(6, lambda r: (7 * r) % 3 == 1)
    assert _relative(data, 2) != _relative(data, 4)           # rank 4 posts right first
    out, moved = canonical(data)
    assert moved > 0
    for r in (2, 3, 4):
        assert _relative(out, r) == _relative(out, 1)
    assert sorted(ST.load("raw", data).classes) != sorted(ST.load("c", out).classes)
    assert sorted(ST.load("c", out).classes) == ["-1", "0", "bulk"]
    # the same peer and tag keep their recorded order (8 bytes before 16); times stay in place
    rows = _relative(out, 3)
    tag6 = [x for x in rows if x[0] == "send" and x[2] == 6]
    assert [x[3] for x in tag6[:2]] == [8, 16]
    assert np.array_equal(out.actions["t_start"], data.actions["t_start"])
    # every wait names a request posted before it, each once: the program is still valid
    assert validate(out).ok
    a = out.actions[out.rank_slice(3)]
    posted = a["request"][a["kind"] == K.code("irecv")]
    waited = a["request"][a["kind"] == K.code("wait")]
    assert posted.tolist() == waited.tolist()


def test_recorded_hash_order_extrapolates(programs, tmp_path, capsys):
    exe = programs("hashorder")
    paths = []
    for p in (3, 4, 5, 6):
        paths.append(str(tmp_path / f"h{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "20", "2000"])
    with minitrace.open(paths[-1]) as t:
        recorded = t.data()
    assert len(ST.load("raw", recorded).classes) > 3          # as recorded: rank-dependent
    # --force: volumes of an oversubscribed recording are noisy; the structure is what is
    # checked (its MPI_ANY_SOURCE set-up is reported and kept from the largest run)
    assert main(["extrapolate", *paths, "--check", "--force"]) == 0
    assert "structure at 6 ranks: identical to the recorded run" in capsys.readouterr().out


def _per_direction(nranks: int) -> "TraceColumns":
    """A line of ranks posting, per neighbour, an isend to it then an irecv from it (tags 1, 2
    to the left, 2, 1 to the right), some compute between the two neighbours, one waitall."""
    b = TraceBuilder(nranks, meta={"volume_unit": "flops"})
    for r in range(nranks):
        b.add(r, "init", t_start=0, t_end=1)
        for it in range(2):
            reqs = []
            for q, tags in ((r - 1, (1, 2)), (r + 1, (2, 1))):
                if not 0 <= q < nranks:
                    continue
                for kind, tag, size in (("isend", tags[0], "bytes_sent"),
                                        ("irecv", tags[1], "bytes_recv")):
                    reqs.append(len(reqs) + 10 * it)
                    b.add(r, kind, peer=q, tag=tag, request=reqs[-1], t_start=1, t_end=2,
                          **{size: 80})
                b.add(r, "compute", volume=1.0, t_start=2, t_end=3)
            b.add(r, "waitall", vector=reqs, t_start=3, t_end=4)
        b.add(r, "finalize", t_start=4, t_end=5)
    return b.build()


def test_sends_and_receives_posted_per_direction_are_ordered_by_kind():
    data = _per_direction(5)
    out, moved = canonical(data)
    assert moved > 0 and validate(out).ok
    middle = [x for x in _relative(out, 2) if x[0] in ("irecv", "isend")]
    # receives first, then sends, each by tag then offset; an edge's posts are one of each
    assert middle[:4] == [("irecv", 1, 1, 80), ("irecv", -1, 2, 80), ("isend", -1, 1, 80),
                          ("isend", 1, 2, 80)]
    for edge in (0, 4):
        posts = [x for x in _relative(out, edge) if x[0] in ("irecv", "isend")][:2]
        assert [x[0] for x in posts] == ["irecv", "isend"]
    # each waitall still completes what its rank posted: the requests renamed alike
    a = out.actions[out.rank_slice(2)]
    first = np.flatnonzero(a["kind"] == K.code("waitall"))[0]
    posted = a["request"][:first][np.isin(a["kind"][:first], [K.code("irecv"), K.code("isend")])]
    assert sorted(out.vector(out.rank_offsets[2] + first)) == sorted(posted.tolist())


def test_recorded_per_direction_posts_on_the_applications_grid(programs, tmp_path, capsys):
    exe = programs("clover2d")
    paths = []
    for p, mesh in ((4, (128, 128)), (8, (256, 128)), (12, (256, 192)), (16, (256, 256))):
        paths.append(str(tmp_path / f"c{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "10", *map(str, mesh)])
    runs = C.load_runs(paths)
    # its own choice, x fastest: 2x2, 4x2, 4x3, 4x4 (x, y) are C-order 2x2, 2x4, 3x4, 4x4
    assert [r.grid.dims for r in runs] == [(2, 2), (2, 4), (3, 4), (4, 4)]
    assert not any(any(r.grid.periods) for r in runs)
    assert "(mid,mid)" not in runs[0].classes and "(mid,mid)" not in runs[1].classes
    assert main(["extrapolate", *paths, "--check", "--force"]) == 0
    printed = capsys.readouterr().out
    assert "structure at 16 ranks: identical to the recorded run" in printed
    assert any("composed from the skeleton" in line and "(mid,mid)" in line
               for line in printed.splitlines())


def _waitany_line(nranks: int) -> "TraceColumns":
    """miniGhost's exchange on a line: an irecv from each neighbour, an isend to each, then
    one waitany per request, unpacking after each; which request each waitany returned is the
    arrival order's, here rank-dependent (odd ranks see their sends complete first)."""
    b = TraceBuilder(nranks, meta={"volume_unit": "flops"})
    for r in range(nranks):
        nb = [q for q in (r - 1, r + 1) if 0 <= q < nranks]
        b.add(r, "init", t_start=0, t_end=1)
        for it in range(3):
            recvs, sends = [], []
            for q in nb:
                recvs.append(10 * it + len(recvs))
                b.add(r, "irecv", peer=q, tag=1, bytes_recv=80, request=recvs[-1],
                      t_start=1, t_end=2)
            for q in nb:
                sends.append(10 * it + 5 + len(sends))
                b.add(r, "isend", peer=q, tag=1, bytes_sent=80, request=sends[-1],
                      t_start=1, t_end=2)
            for q in (sends + recvs[::-1] if r % 2 else recvs + sends):
                b.add(r, "waitany", request=q, t_start=2, t_end=3)
                b.add(r, "compute", volume=1.0, t_start=3, t_end=4)
        b.add(r, "finalize", t_start=4, t_end=5)
    return b.build()


def test_waitany_completions_in_arrival_order_become_one_program():
    data = _waitany_line(6)
    assert len(ST.load("raw", data).classes) > 3              # odd and even ranks differ
    out, moved = canonical(data)
    assert moved > 0 and validate(out).ok
    assert sorted(ST.load("c", out).classes) == ["-1", "0", "bulk"]
    a = out.actions[out.rank_slice(3)]
    posted = a["request"][np.isin(a["kind"], [K.code("irecv"), K.code("isend")])]
    waited = a["request"][a["kind"] == K.code("waitany")]
    assert posted.tolist() == waited.tolist()       # each completed once, in posting order


def test_recorded_waitany_in_arrival_order_extrapolates(programs, tmp_path, capsys):
    """tests/programs/waitany2d.c (miniGhost's exchange: one waitany per request, in the order
    they complete) on its own x-fastest grid, 4, 8, 12 -> 16 ranks, the interior composed."""
    exe = programs("waitany2d")
    paths = []
    for p, (px, py) in ((4, (2, 2)), (8, (4, 2)), (12, (4, 3)), (16, (4, 4))):
        paths.append(str(tmp_path / f"w{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "10", str(px), str(py), "64"])
    runs = C.load_runs(paths)
    assert [r.grid.dims for r in runs] == [(2, 2), (2, 4), (3, 4), (4, 4)]
    assert main(["extrapolate", *paths, "--check", "--force"]) == 0
    assert "structure at 16 ranks: identical to the recorded run" in capsys.readouterr().out
