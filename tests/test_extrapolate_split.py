"""MPI_Comm_split whose color and key are laws of the rank (extrapolate's split_comms.py): NPB
FT splits its world with key = rank and into its grid's rows and columns; the recorded
``[color, key]`` differed on every rank, which made every rank a class of its own (refused:
'rank classes differ', with --force too)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace import storage
from minitrace.cli import main
from minitrace.errors import MinitraceError
from minitrace.extrapolate import build as B
from minitrace.extrapolate import check as C
from minitrace.extrapolate import structure as ST
from minitrace.model import TraceBuilder
from tests.support.record_util import record


def splitting(P: int, laws, steps: int = 3, roots: bool = False):
    """Each rank splits the world once per law (``laws``: functions of (rank, P) giving
    ``(color, key)``), then ``steps`` times computes and allreduces on each communicator
    made (``roots``: broadcasts from its first rank and reduces to its last instead);
    communicator ids as the recorder gives them (one per communicator)."""
    b = TraceBuilder(P)
    made, next_id = [], 1
    for law in laws:
        values = [law(r, P) for r in range(P)]
        ids = {}
        for c in sorted({c for c, _ in values}):
            ranks = sorted((k, r) for r, (cc, k) in enumerate(values) if cc == c)
            ids[c] = next_id
            b.add_comm(next_id, [r for _, r in ranks])
            next_id += 1
        made.append([(ids[c], [c, k]) for c, k in values])
    for r in range(P):
        b.add(r, "init")
        for comms in made:
            b.add(r, "comm_split", comm=0, request=comms[r][0], vector=comms[r][1])
        for _ in range(steps):
            b.add(r, "compute", volume=1e-3)
            for comms in made:
                members = b.comms[comms[r][0]].tolist()
                if roots:
                    b.add(r, "bcast", comm=comms[r][0], peer=members[0], bytes_sent=8,
                          bytes_recv=8)
                    b.add(r, "reduce", comm=comms[r][0], peer=members[-1], bytes_sent=8,
                          bytes_recv=8)
                else:
                    b.add(r, "allreduce", comm=comms[r][0], bytes_sent=8, bytes_recv=8)
        b.add(r, "finalize")
    return b.build()


#: NPB FT's two splits on 1 x P: its row (color 0, key = rank) and its column (one rank each)
FT = [lambda r, P: (0, r), lambda r, P: (r, 0)]


def runs_of(laws, sizes=(2, 3, 4)):
    return C.runs_of([f"s{p}.h5" for p in sizes], [splitting(p, laws) for p in sizes])


def split_vectors(data) -> np.ndarray:
    """(ranks, splits, 2): each rank's [color, key] of each of its comm_splits."""
    a = data.actions
    rows = np.flatnonzero(a["kind"] == K.CODE["comm_split"])
    return np.array([data.vector(i).tolist() for i in rows]).reshape(data.nranks, -1, 2)


def test_splits_whose_color_and_key_follow_the_rank_make_one_class():
    for run in runs_of(FT):
        assert list(run.classes) == ["bulk"]


def test_each_rank_gets_its_color_key_and_communicators_at_the_target():
    data, _, forced = B.extrapolate(runs_of(FT), 8)
    assert not forced
    want = np.array([[[0, r], [r, 0]] for r in range(8)])
    assert np.array_equal(split_vectors(data), want)
    a = data.actions
    made = a["request"][a["kind"] == K.CODE["comm_split"]].reshape(8, 2)
    assert data.comms[int(made[0, 0])].tolist() == list(range(8))
    assert (made[:, 0] == made[0, 0]).all()
    assert [data.comms[int(c)].tolist() for c in made[:, 1]] == [[r] for r in range(8)]
    used = a["comm"][a["kind"] == K.CODE["allreduce"]].reshape(8, 3, 2)
    assert (used == made[:, None, :]).all()      # each rank's calls on its own communicators


def test_rows_and_columns_of_a_grid():
    """Rows and columns of MPI_Dims_create(P, 2)'s grid (color and key its coordinates),
    recorded at 4, 8, 9 (2x2, 4x2, 3x3; at 4, 6, 8 a row is one of P/2 x 2's too, at 4, 6, 9
    one of MPI_Dims_create(P, 3)'s: refused) and extrapolated to 12 (4x3)."""
    def rows(r, P):
        return r // minitrace.extrapolate.grid.dims_create(P, 2)[1], \
            r % minitrace.extrapolate.grid.dims_create(P, 2)[1]
    laws = [rows, lambda r, P: rows(r, P)[::-1]]
    data, _, _ = B.extrapolate(runs_of(laws, (4, 8, 9)), 12)
    got = split_vectors(data)
    assert np.array_equal(got[:, 0], [[r // 3, r % 3] for r in range(12)])
    assert np.array_equal(got[:, 1], [[r % 3, r // 3] for r in range(12)])
    row_of = data.actions["request"][data.actions["kind"] == K.CODE["comm_split"]][::2]
    assert [data.comms[int(c)].tolist() for c in row_of[::3]] == \
        [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]


def test_parity_colors_at_any_size():
    """color = rank % 2 (even and odd ranks), at 2, 3, 4 ranks: a row of P/2 x 2 rounded up."""
    data, _, _ = B.extrapolate(runs_of([lambda r, P: (r % 2, -r)]), 7)
    assert np.array_equal(split_vectors(data)[:, 0], [[r % 2, -r] for r in range(7)])
    made = data.actions["request"][data.actions["kind"] == K.CODE["comm_split"]]
    assert data.comms[int(made[0])].tolist() == [6, 4, 2, 0]     # by key, -rank


def test_a_color_that_no_law_gives_is_refused_naming_the_files():
    laws = [lambda r, P: ((r * r) % 3, r)]
    with pytest.raises(MinitraceError, match=r"^s3\.h5, s4\.h5: the color of comm_split 1 "
                       r"of each rank is no law of the rank"):
        B.extrapolate(runs_of(laws), 8, force=True)


def test_the_self_check_compares_colors_and_the_order_of_keys():
    """Keys r and -r make other communicators; -r and P-1-r the same (MPI uses their order)."""
    one, other, same = (C.runs_of(["a.h5"], [splitting(4, [law])])[0]
                        for law in (lambda r, P: (0, r), lambda r, P: (0, -r),
                                    lambda r, P: (0, P - 1 - r)))
    assert C.same_structure(one, one) == []
    assert C.same_structure(one, other) == ["comm_split 1 of each rank: [color, key] differ "
                                            "(its color or its place in its communicator): "
                                            "rank 0"]
    assert C.same_structure(other, same) == []


def test_laws_that_fit_every_run_but_differ_at_the_target_are_refused(tmp_path, capsys):
    """Halves of the world (color = rank >= P/2) at 2, 4, 8 ranks are coordinate 0 of 2 x P/2
    and of MPI_Dims_create(P, 3) (2x1x1, 2x2x1, 2x2x2); at 16 the one makes 2 communicators,
    the other 4 (4x2x2): refused in one line, saying a run at 6 ranks tells them apart.
    --force takes the first, 2 x P/2's, and says so (before: MPI_Dims_create(P, 3)'s, exit
    0, with a note only)."""
    def halves(r, P):
        return int(r >= P // 2), r
    runs = runs_of([halves], (2, 4, 8))
    paths = [str(tmp_path / f"s{p}.h5") for p in (2, 4, 8)]
    for path, p in zip(paths, (2, 4, 8)):
        storage.write_trace(path, splitting(p, [halves]))
    assert main(["extrapolate", *paths, "--ranks", "16", "-o", str(tmp_path / "x.h5")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "may be coordinate 0 on 2 x P/2 or" in err
    with pytest.raises(MinitraceError, match=(
            r"^s2\.h5, s4\.h5, s8\.h5: the color of comm_split 1 of each rank may be "
            r"coordinate 0 on 2 x P/2 or coordinate 0 on MPI_Dims_create\(P, 3\): each fits "
            r"every run, but they make other communicators at 16 ranks \(2 and 4 "
            r"communicators\); a run at 6 ranks would tell them apart \(--force takes "
            r"coordinate 0 on 2 x P/2\)$")):
        B.extrapolate(runs, 16)
    data, _, forced = B.extrapolate(runs, 16, force=True)
    assert np.array_equal(split_vectors(data)[:, 0], [halves(r, 16) for r in range(16)])
    assert [s for s in forced if "may be" in s] == [
        "s2.h5, s4.h5, s8.h5: the color of comm_split 1 of each rank may be coordinate 0 on "
        "2 x P/2 or coordinate 0 on MPI_Dims_create(P, 3): each fits every run, but they make "
        "other communicators at 16 ranks (2 and 4 communicators); a run at 6 ranks would tell "
        "them apart"]


def test_a_key_is_fitted_by_its_order():
    """key = P-1-r (no law of the rank: its offset grows with P) orders each color's ranks
    as -r does, the same communicators (refused before); at 7 ranks the even and odd ranks
    each in descending order, the keys written -r's."""
    data, _, forced = B.extrapolate(runs_of([lambda r, P: (r % 2, P - 1 - r)]), 7)
    assert not forced
    assert np.array_equal(split_vectors(data)[:, 0], [[r % 2, -r] for r in range(7)])
    made = data.actions["request"][data.actions["kind"] == K.CODE["comm_split"]]
    assert [data.comms[int(made[r])].tolist() for r in (0, 1)] == [[6, 4, 2, 0], [5, 3, 1]]


def test_mpi_undefined_on_some_ranks_is_refused_naming_the_file():
    """Odd ranks pass MPI_UNDEFINED (MPICH's -32766) and get no communicator: refused."""
    laws = [lambda r, P: (-32766 if r % 2 else 0, r)]
    with pytest.raises(MinitraceError, match=r"^s2\.h5: the color of comm_split 1 of each "
                       r"rank is MPI_UNDEFINED \(negative\) on some ranks only \(rank 1\)"):
        B.extrapolate(runs_of(laws), 8, force=True)


def test_recorded_splits_extrapolate_and_check(programs, tmp_path, capsys):
    """tests/programs/split_laws.c (key = rank; a grid's rows and columns) at 2, 3, 4 -> 8
    ranks, and --check of 6 from 2, 3, 4 (refused before: 'rank classes differ')."""
    exe = programs("split_laws")
    paths = {}
    for p in (2, 3, 4, 6):
        paths[p] = str(tmp_path / f"s{p}.h5")
        record(Path(paths[p]), p, [str(exe), "4"])
    out = str(tmp_path / "s8.h5")
    # --force: compute gaps that the load makes noisy must not make this test flaky; and at
    # 2, 3, 4 ranks a row of MPI_Dims_create(P, 2)'s grid is one of (P, 3)'s (refused alone)
    assert main(["extrapolate", paths[2], paths[3], paths[4], "--ranks", "8", "-o", out,
                 "--force"]) == 0
    data = minitrace.open(out).data()
    got = split_vectors(data)
    assert np.array_equal(got, [[[0, r], [r // 2, r % 2], [r % 2, r // 2]] for r in range(8)])
    capsys.readouterr()
    assert main(["extrapolate", *paths.values(), "--check", "--force"]) == 0
    assert "structure at 6 ranks: identical to the recorded run" in capsys.readouterr().out



def test_roots_on_a_split_communicator_are_places_in_it():
    """A broadcast from each row's first rank and a reduction to its last (world ranks, one
    per row) on the rows of MPI_Dims_create(P, 2)'s grid: one class (before: one a row), and
    at the target each row's own first and last ranks."""
    def row(r, P):
        q = minitrace.extrapolate.grid.dims_create(P, 2)[1]
        return r // q, r % q
    runs = C.runs_of([f"r{p}.h5" for p in (4, 8, 9)],
                     [splitting(p, [row], roots=True) for p in (4, 8, 9)])
    assert [list(r.classes) for r in runs] == [["bulk"]] * 3
    data, _, _ = B.extrapolate(runs, 12)
    a = data.actions
    for kind, first in (("bcast", 0), ("reduce", 2)):
        roots = a["peer"][a["kind"] == K.CODE[kind]].reshape(12, 3)
        assert (roots == (np.arange(12) // 3 * 3 + first)[:, None]).all(), kind


def test_a_split_of_a_sub_communicator_is_refused_naming_the_file():
    """The second split divides the first one's communicator (even and odd ranks): the
    rank of a law would be the rank in it, not in the world; refused."""
    def nested(P):
        b = TraceBuilder(P)
        for parity in (0, 1):
            b.add_comm(1 + parity, list(range(parity, P, 2)))
            b.add_comm(3 + parity, list(range(parity, P, 2)))
        for r in range(P):
            b.add(r, "init")
            b.add(r, "comm_split", comm=0, request=1 + r % 2, vector=[r % 2, r])
            b.add(r, "comm_split", comm=1 + r % 2, request=3 + r % 2, vector=[0, r // 2])
            b.add(r, "allreduce", comm=3 + r % 2, bytes_sent=8, bytes_recv=8)
            b.add(r, "finalize")
        return b.build()
    runs = C.runs_of([f"n{p}.h5" for p in (2, 3, 4)], [nested(p) for p in (2, 3, 4)])
    with pytest.raises(MinitraceError, match=r"^n2\.h5: comm_split 2 of each rank splits "
                       r"communicator 1, not the world"):
        B.extrapolate(runs, 8, force=True)


def test_rows_of_the_runs_grid_that_other_laws_fit_name_a_scale_that_tells():
    """Rows of a periodic 2-D grid (MPI_Dims_create's, a halo exchange with the row and
    column neighbours) made by a split: at 4, 6, 8 ranks (2x2, 3x2, 4x2) a row is one of
    P/2 x 2's too; refused, naming 2 ranks (2x1: the run's grid is MPI_Dims_create's in
    every run, so known there), not only the target."""
    def on_grid(P):
        d0, d1 = minitrace.extrapolate.grid.dims_create(P, 2)
        b = TraceBuilder(P)
        for row in range(d0):
            b.add_comm(1 + row, list(range(row * d1, (row + 1) * d1)))
        for r in range(P):
            i, j = divmod(r, d1)
            b.add(r, "init")
            b.add(r, "comm_split", comm=0, request=1 + i, vector=[i, j])
            for _ in range(3):
                b.add(r, "compute", volume=1e-3)
                for k, (to, back) in enumerate(
                        [(((i + 1) % d0) * d1 + j, ((i - 1) % d0) * d1 + j),
                         (i * d1 + (j + 1) % d1, i * d1 + (j - 1) % d1)]):
                    b.add(r, "sendrecv", peer=to, tag=k, bytes_sent=800, bytes_recv=800,
                          vector=[back, k])
                b.add(r, "allreduce", comm=1 + i, bytes_sent=8, bytes_recv=8)
            b.add(r, "finalize")
        return b.build()
    runs = C.runs_of([f"g{p}.h5" for p in (4, 6, 8)], [on_grid(p) for p in (4, 6, 8)])
    assert all(r.grid is not None for r in runs)
    with pytest.raises(MinitraceError, match=r"may be coordinate 0 on the run's grid or "
                       r"coordinate 0 on P/2 x 2: .* at 12 ranks \(4 and 6 communicators\); a "
                       r"run at 2 ranks would tell them apart"):
        B.extrapolate(runs, 12)
