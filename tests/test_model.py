"""TraceBuilder (the one way to assemble a TraceColumns) and TraceColumns's vector accessors."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.model import (ACTION_DTYPE, EMPTY_ROW, NONE, TraceBuilder, assign_vec_offsets,
                             empty_actions, vec_offsets)


def _mixed(b: TraceBuilder) -> None:
    """Two ranks added out of order, with vectors on some actions."""
    b.add(1, "init")
    b.add(0, "init")
    b.add(0, "waitall", vector=[3, 4])
    b.add(1, "alltoallv", bytes_sent=3, bytes_recv=7, vector=np.array([1, 2, 3, 4]))
    b.add(0, "send", peer=1, tag=2, bytes_sent=8)
    b.add(1, "recv", peer=0, tag=2, bytes_recv=8)
    b.add(0, "startall", vector=[5])
    for r in range(2):
        b.add(r, "finalize")


def test_rank_major_rows_and_vectors_in_action_order():
    b = TraceBuilder(2, {"volume_unit": "flops"})
    _mixed(b)
    d = b.build()
    assert d.rank_offsets.tolist() == [0, 5, 9]
    assert [K.NAME[int(k)] for k in d.actions["kind"]] == [
        "init", "waitall", "send", "startall", "finalize",
        "init", "alltoallv", "recv", "finalize"]
    assert d.vectors.tolist() == [3, 4, 5, 1, 2, 3, 4]
    assert d.actions["vec_off"].tolist() == [-1, 0, -1, 2, -1, -1, 3, -1, -1]
    assert d.vector(1).tolist() == [3, 4] and d.vector(6).tolist() == [1, 2, 3, 4]
    assert d.vector(0).tolist() == [] and d.vector(0).dtype == np.int64
    assert d.meta == {"volume_unit": "flops", "nranks": 2}
    row = d.actions[2]
    assert (row["peer"], row["tag"], row["bytes_sent"], row["request"]) == (1, 2, 8, NONE)
    assert np.isnan(row["t_start"]) and np.isnan(row["t_end"])


def test_chunked_rows_build_the_same_trace():
    """Rows become numpy blocks every CHUNK_ROWS actions; the result does not depend on it."""
    whole, small = TraceBuilder(2), TraceBuilder(2)
    small.CHUNK_ROWS = 2
    for b in (whole, small):
        _mixed(b)
    x, y = whole.build(), small.build()
    assert x.actions.tobytes() == y.actions.tobytes()
    assert x.vectors.tolist() == y.vectors.tolist()
    assert x.rank_offsets.tolist() == y.rank_offsets.tolist()


def test_extend_takes_mutable_rows_after_added_ones():
    b = TraceBuilder(1)
    b.add(0, "init")
    rows = [list(EMPTY_ROW) for _ in range(3)]
    rows[0][0], rows[1][0], rows[2][0] = K.CODE["irecv"], K.CODE["waitall"], K.CODE["sendrecv"]
    rows[0][ACTION_DTYPE.names.index("peer")] = 4
    vectors = {2: [1, 9], 1: [0], 0: []}
    b.extend(0, rows, vectors)
    rows[0][0] = K.CODE["send"]                     # the builder copied the rows
    b.add(0, "finalize")
    d = b.build()
    assert [K.NAME[int(k)] for k in d.actions["kind"]] == ["init", "irecv", "waitall",
                                                           "sendrecv", "finalize"]
    assert d.actions["peer"][1] == 4
    assert d.actions["vec_len"].tolist() == [0, 0, 1, 2, 0]
    assert d.vector(2).tolist() == [0] and d.vector(3).tolist() == [1, 9]


def test_strings_comms_and_errors():
    b = TraceBuilder(3)
    assert [b.string("a"), b.string("b"), b.string("a")] == [0, 1, 0]
    b.add_comm(2, [2, 0])
    with pytest.raises(KeyError, match="unknown action kind 'sned'"):
        b.add(0, "sned")
    d = b.build()
    assert d.strings == ["a", "b"] and len(d.actions) == 0 and len(d.vectors) == 0
    assert {k: v.tolist() for k, v in d.comms.items()} == {0: [0, 1, 2], 2: [2, 0]}
    assert d.rank_offsets.tolist() == [0, 0, 0, 0]


def test_vector_entries_and_items():
    b = TraceBuilder(2)
    _mixed(b)
    b.add(0, "sendrecv", peer=1, tag=0, vector=[1, 6])
    b.add(1, "sendrecv", peer=0, tag=0, vector=[0])          # a vector too short for a tag
    d = b.build()
    rows, values = d.vector_entries(np.array([7, 1, 0, 3]))
    assert rows.tolist() == [7, 7, 7, 7, 1, 1, 3]
    assert values.tolist() == [1, 2, 3, 4, 3, 4, 5]
    assert [x.tolist() for x in d.vector_entries(np.array([0, 2]))] == [[], []]
    sr = np.nonzero(d.actions["kind"] == K.CODE["sendrecv"])[0]
    assert d.vector_item(sr, 0).tolist() == [1, 0]
    assert d.vector_item(sr, 1).tolist() == [6, NONE]
    assert d.vector_item(sr, 5, default=-7).tolist() == [-7, -7]


def test_offsets_follow_from_lengths():
    assert vec_offsets(np.array([0, 2, 0, 3, 1]), base=10).tolist() == [-1, 10, -1, 12, 15]
    a = empty_actions(4)
    assert (a["peer"] == NONE).all() and (a["vec_off"] == NONE).all() and (a["comm"] == 0).all()
    assert np.isnan(a["t_start"]).all() and np.isnan(a["t_end"]).all()
    a["vec_len"] = [1, 0, 2, 0]
    assign_vec_offsets(a)
    assert a["vec_off"].tolist() == [0, -1, 1, -1]
