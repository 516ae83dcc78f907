"""Where the time goes, predicted and measured alike (minitrace/predict/prediction.py): the MPI
calls' costs a prediction replays as compute counted in the parts of the calls they are the
costs of, and the recorder's own time out of the measured part it fell in (issue 35), on
traces whose answer is known."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from minitrace.model import TraceBuilder
from minitrace.predict import predict
from minitrace.predict.calibration import load
from minitrace.predict.prediction import (RECORDER_GATE, _recorder_parts, modelled_calls,
                                          with_call_costs)
from minitrace.replay.work import copy_seconds

US = 1e-6
#: an after-compute cost of C seconds after any compute of 1 us or more, at any size
C = 5 * US
TABLE = {"seconds": [1e-6, 1.0], "registers": [C, C], "memory": [C, C]}
COSTS = {"post": 0.3 * US, "complete": 0.2 * US}
BLOCK = 1 << 16


def _calibration(demo):
    return replace(load(str(demo.out / "machine.h5")), background=0.0, after_compute=TABLE,
                   call_costs=COSTS, copy_rates=[2e10, 1e10], cold_from=1 << 20,
                   cache_share=0, memory_copy_rate=0.0)


def _trace():
    """Each rank: MPI_Init, compute 1 ms, an 8-byte allreduce, compute 1 ms, an irecv and an
    isend of 8 bytes, compute 10 us, their waitall, compute 1 ms, an all-to-all of BLOCK-byte
    blocks, compute 1 ms, MPI_Finalize."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=1e-3)
        b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
        b.add(r, "compute", volume=1e-3)
        b.add(r, "irecv", peer=1 - r, bytes_recv=8, request=0)
        b.add(r, "isend", peer=1 - r, bytes_sent=8, request=1)
        b.add(r, "compute", volume=10 * US)
        b.add(r, "waitall", vector=[0, 1])
        b.add(r, "compute", volume=1e-3)
        b.add(r, "alltoall", bytes_sent=2 * BLOCK, bytes_recv=2 * BLOCK)
        b.add(r, "compute", volume=1e-3)
        b.add(r, "finalize")
    return b.build()


def test_each_modelled_cost_is_in_its_calls_part(demo):
    cal = _calibration(demo)
    data = _trace()
    got = modelled_calls(data, cal)
    own = float(copy_seconds(np.array([BLOCK]), cal.copies())[0])
    for r in range(2):
        # the after-compute cost before the allreduce, the all-to-all's and its own block
        assert got["collectives"][r] == pytest.approx(2 * C + own)
        # before the irecv, and its posting
        assert got["p2p"][r] == pytest.approx(C + COSTS["post"])
        # before the waitall, and its one receive's completion
        assert got["waiting"][r] == pytest.approx(C + COSTS["complete"])
        # before MPI_Finalize
        assert got["other_mpi"][r] == pytest.approx(C)
    # in all, what the prediction adds to the compute before replaying it
    added = with_call_costs(data, cal)[0].actions["volume"] - data.actions["volume"]
    assert sum(v.sum() for v in got.values()) == pytest.approx(added.sum() + 2 * own)


def test_the_predicted_parts_move_those_costs_out_of_the_replayed_compute(demo, tmp_path):
    from minitrace import storage
    cal = _calibration(demo)
    trace = tmp_path / "parts.h5"
    storage.write_trace(str(trace), _trace())
    p = predict(str(trace), cal, ranges=False)
    moved = {k: np.asarray(v) for k, v in p.modelled_calls.items()}
    for r in range(2):
        assert p.predicted_parts["compute"][r] == pytest.approx(
            p.predicted["compute"][r] - sum(v[r] for v in moved.values()))
        for k in ("p2p", "waiting", "collectives"):
            assert p.predicted_parts[k][r] == pytest.approx(p.predicted[k][r] + moved[k][r])
        # the recorded CPU time is what is left as compute
        assert p.predicted_parts["compute"][r] == pytest.approx(4 * 1e-3 + 10 * US, rel=1e-6)


def test_the_recorders_reads_are_taken_out_of_the_parts_they_fell_in():
    """Rank 0: MPI_Init (1 ms: a read at its exit, in the compute after it), compute 10 us, a
    send of 100 us (no read at entry: the gap is under the gate; one at exit, in the compute
    after), compute 1 ms, an allreduce of 10 us (a read at entry, in it), compute 5 us, a
    recv of 100 us (a read at exit, followed by a call: in no part), MPI_Finalize.  Rank 1:
    MPI_Init of 10 us, compute 1 ms, MPI_Finalize (a read at its entry: in no part, as the
    measured parts leave MPI_Finalize out)."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    t = 0.0

    def add(r, kind, seconds, **kw):
        nonlocal t
        b.add(r, kind, volume=seconds if kind == "compute" else 0.0, t_start=t,
              t_end=t + seconds, **kw)
        t += seconds
    for kind, s in (("init", 1e-3), ("compute", 10 * US), ("send", 100 * US),
                    ("compute", 1e-3), ("allreduce", 10 * US), ("compute", 5 * US),
                    ("recv", 100 * US), ("finalize", 1 * US)):
        add(0, kind, s, **({"peer": 1} if kind in ("send", "recv") else {}))
    t = 0.0
    for kind, s in (("init", 10 * US), ("compute", 1e-3), ("finalize", 1 * US)):
        add(1, kind, s)
    assert 5 * US < RECORDER_GATE < 100 * US
    got = _recorder_parts(b.build(), np.array([4e-6, 1e-6]))
    assert got["compute"] == pytest.approx([2e-6, 0.0])     # (4 reads on rank 0: 1 us each)
    assert got["collectives"] == pytest.approx([1e-6, 0.0])
    assert got["p2p"] == pytest.approx([0.0, 0.0])
    assert got["other_mpi"] == pytest.approx([0.0, 0.0])


def test_the_after_compute_cost_of_a_stretchs_bytes_is_in_the_call_that_moves_them(demo):
    """Each rank: compute 1 ms, MPI_Comm_size (moves nothing), an irecv and an isend of 8 KiB,
    compute 1 us (too short to evict anything: the same stretch), their waitall, compute 1 ms.
    Both the 8-byte cost (the first call that moves bytes: not MPI_Comm_size) and the part
    the stretch's 8 KiB each way add are the point-to-point calls'; the compute before
    MPI_Finalize gets the 8-byte cost, in other calls."""
    sized = {"seconds": [20e-6, 1.0], "bytes": [8, 65536],
             **{k: [[C, C], [C + 64 * US, C + 64 * US]] for k in ("registers", "memory")}}
    cal = replace(_calibration(demo), after_compute=sized, call_costs={}, copy_rates=[])
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=1e-3)
        b.add(r, "comm_size")
        b.add(r, "irecv", peer=1 - r, bytes_recv=8192, request=0)
        b.add(r, "isend", peer=1 - r, bytes_sent=8192, request=1)
        b.add(r, "compute", volume=1 * US)
        b.add(r, "waitall", vector=[0, 1])
        b.add(r, "compute", volume=1e-3)
        b.add(r, "finalize")
    got = modelled_calls(b.build(), cal)
    extra = 64 * US * (8192 - 8) / (65536 - 8)
    for r in range(2):
        assert got["other_mpi"][r] == pytest.approx(C)
        assert got["p2p"][r] == pytest.approx(C + extra)
        assert got["waiting"][r] == 0.0 and got["collectives"][r] == 0.0
