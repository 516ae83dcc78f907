"""Vector collectives whose sizes depend on the data (tests/programs/bucket_exchange.c, NPB IS's
exchange: keys bucketed by destination, their counts by alltoall, the keys by alltoallv; then
an allgatherv, a gatherv and a scatterv at rank 0 and a reduce_scatter of data-dependent
counts).  Each call's vector, one size per member, made every rank a class of its own and
every step another call: "every rank of is4.h5 runs a program of its own".  Their totals are
now fitted and the vectors made at the target (minitrace/extrapolate/per_member.py); an
alltoallv that sends to its neighbours only is refused unless forced."""
from pathlib import Path

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.cli import main
from tests.support.record_util import record


@pytest.fixture(scope="module")
def buckets(tmp_path_factory, programs):
    where = tmp_path_factory.mktemp("buckets")
    paths = []
    for p in (2, 3, 4, 8):
        paths.append(str(where / f"b{p}.h5"))
        record(Path(paths[-1]), p, [programs("bucket_exchange"), "65536", "4"])
    return where, paths


def test_data_dependent_vector_collectives_extrapolate(buckets, capsys):
    where, paths = buckets
    # --force: the compute between the calls is microseconds of noise on a loaded machine;
    # the structure and the sizes are what is checked here
    code = main(["extrapolate", *paths, "--check", "--scaling", "strong", "--force"])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "structure at 8 ranks: identical to the recorded run" in printed
    out = where / "b16.h5"
    assert main(["extrapolate", *paths[:3], "--ranks", "16", "-o", str(out), "--scaling",
                 "strong", "--force"]) == 0
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0, capsys.readouterr().out  # (vectors vs peers)
    with minitrace.open(str(out)) as t:
        d = t.data()
    a = d.actions
    rows = np.flatnonzero(a["kind"] == K.CODE["alltoallv"])
    assert len(rows) == 16 * 4
    for row in rows:
        v = d.vector(int(row))
        assert len(v) == 32 and (v[:16] == v[0]).all() and v[0] > 0     # (an even share)
        assert a["bytes_sent"][row] == v[:16].sum() and a["bytes_recv"][row] == v[16:].sum()
    for kind, n in (("allgatherv", 16 * 4), ("reduce_scatter", 16 * 4), ("gatherv", 4),
                    ("scatterv", 4)):
        have = np.flatnonzero((a["kind"] == K.CODE[kind]) & (a["vec_len"] > 0))
        assert len(have) == n and (a["vec_len"][have] == 16).all(), kind


def test_an_alltoallv_to_neighbours_is_refused_unless_forced(tmp_path, capsys, programs):
    paths = []
    for p in (4, 5, 6):
        paths.append(str(tmp_path / f"n{p}.h5"))
        record(Path(paths[-1]), p, [programs("bucket_exchange"), "65536", "2", "neighbours"])
    out = str(tmp_path / "n8.h5")
    args = ["extrapolate", *paths, "--ranks", "8", "-o", out, "--scaling", "strong"]
    assert main(args) != 0
    said = capsys.readouterr()
    assert "12 of 12 all-to-all calls send to fewer than all other members" in said.err, said
    assert main(args + ["--force"]) == 0
    assert "send to fewer than all other members" in capsys.readouterr().out
    assert main(["validate", out]) == 0


def test_a_split_after_vector_collectives_keeps_its_colours_and_keys(tmp_path, capsys,
                                                                     programs):
    # the made vectors are laid out again at the target (an alltoallv's grows from 2 P
    # entries): a comm_split after them keeps its colour and key entries where they moved
    paths = []
    for p in (2, 3, 4):
        paths.append(str(tmp_path / f"s{p}.h5"))
        record(Path(paths[-1]), p, [programs("bucket_exchange"), "65536", "4", "split"])
    out = str(tmp_path / "s16.h5")
    assert main(["extrapolate", *paths, "--ranks", "16", "-o", out, "--scaling", "strong",
                 "--force"]) == 0
    capsys.readouterr()
    assert main(["validate", out]) == 0, capsys.readouterr().out
    with minitrace.open(out) as t:
        d = t.data()
    rows = np.flatnonzero(d.actions["kind"] == K.CODE["comm_split"])
    assert [d.vector(int(r)).tolist() for r in rows] == [[0, r] for r in range(16)]
    assert (d.rank_of()[rows] == np.arange(16)).all()
    assert len(d.comms[1]) == 16 and rows.min() > \
        np.flatnonzero(d.actions["kind"] == K.CODE["alltoallv"]).min()
