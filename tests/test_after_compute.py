"""The after-compute call cost (minitrace/predict/after_compute.py): its conventions, where it is
added in a trace, its fit from calibration runs, and a prediction with it, on traces and tables
whose right answer is known.  The measurement itself runs in test_calibrate.py (a real job)."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.predict import after_compute as ac

TABLE = {"seconds": [20e-6, 100e-6, 500e-6, 2e-3],
         "registers": [0.0, 0.2e-6, 1e-6, 3e-6], "memory": [0.4e-6, 2e-6, 10e-6, 12e-6]}


def test_penalty_conventions():
    d = np.array([1e-6, 19.9e-6, 20e-6, 100e-6, np.sqrt(100e-6 * 500e-6), 2e-3, 1.0])
    mean = (np.array(TABLE["registers"]) + np.array(TABLE["memory"])) / 2
    got = ac.penalty(TABLE, d)
    assert got[:2].tolist() == [0.0, 0.0]                  # shorter than the first duration
    assert got[2] == pytest.approx(mean[0]) and got[3] == pytest.approx(mean[1])
    assert got[4] == pytest.approx((mean[1] + mean[2]) / 2)    # linear in log duration
    assert got[5] == pytest.approx(mean[3]) and got[6] == pytest.approx(mean[3])   # held
    assert ac.penalty(TABLE, d, kernel="memory")[3] == pytest.approx(2e-6)
    assert ac.penalty(TABLE, d, kernel="registers")[5] == pytest.approx(3e-6)
    # a table of 8-byte exchanges only (calibrations before sizes): the same at any size
    assert ac.penalty(TABLE, d, np.full(len(d), 1e6)) == pytest.approx(got)


#: a table with sizes (calibrations since 2026-11-28, session 10): rows are sizes
SIZED = {"seconds": TABLE["seconds"], "bytes": [8, 8192, 65536],
         "registers": [TABLE["registers"], [0.0, 1e-6, 4e-6, 9e-6], [0.0, 2e-6, 5e-6, 10e-6]],
         "memory": [TABLE["memory"], [1e-6, 4e-6, 20e-6, 24e-6], [2e-6, 6e-6, 28e-6, 30e-6]]}


def test_penalty_is_linear_in_size_between_the_sizes_measured_and_held_beyond():
    rows = (np.array(SIZED["registers"]) + np.array(SIZED["memory"])) / 2    # (size, duration)
    sizes = np.array([1, 8, 4100, 8192, 36864, 65536, 1e9])
    got = ac.penalty(SIZED, np.full(len(sizes), 500e-6), sizes)
    w = (4100 - 8) / (8192 - 8)
    want = [rows[0, 2], rows[0, 2], (1 - w) * rows[0, 2] + w * rows[1, 2], rows[1, 2],
            (rows[1, 2] + rows[2, 2]) / 2, rows[2, 2], rows[2, 2]]
    assert got == pytest.approx(want)
    # in duration as before, per size; nothing below the first duration at any size
    two = ac.penalty(SIZED, np.array([10e-6, np.sqrt(100e-6 * 500e-6)]), 8192, kernel="memory")
    assert two == pytest.approx([0.0, (4e-6 + 20e-6) / 2])
    assert ac.valid(SIZED)
    for bad in ({**SIZED, "bytes": [8, 8192]}, {**SIZED, "bytes": [8192, 8, 65536]},
                {**SIZED, "bytes": [0, 8, 16]}, {**SIZED, "bytes": [8.5, 16, 32]},
                {**SIZED, "memory": [[1e-6] * 4] * 2 + [[-1e-6] * 4]},
                {**SIZED, "registers": [[1e-6] * 3] * 3}):
        assert not ac.valid(bad)


def test_each_compute_takes_the_bytes_its_calls_move():
    """Each rank: a 1 ms compute, then receives and sends 8 KiB with the other (and as much to
    and from MPI_PROC_NULL, which moves nothing) across a 1 us compute (too short to evict
    anything: the same stretch), waitall; a 1 ms compute, an 8-byte allreduce; a 1 ms compute,
    a non-periodic shift by sendrecv of 4 KiB each way (rank 0 sends to MPI_PROC_NULL and
    receives, rank 1 sends and receives from MPI_PROC_NULL: 2 KiB each way for both).  The
    first compute's calls move 8 KiB each way, the second's 8 bytes, the third's 2 KiB."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "compute", volume=1e-3)
        b.add(r, "irecv", peer=1 - r, tag=0, bytes_recv=8192, request=1)
        b.add(r, "compute", volume=1e-6)
        b.add(r, "irecv", peer=-1, tag=0, bytes_recv=8192, request=2)
        b.add(r, "isend", peer=1 - r, tag=0, bytes_sent=8192, request=3)
        b.add(r, "isend", peer=-1, tag=0, bytes_sent=8192, request=4)
        b.add(r, "waitall")
        b.add(r, "compute", volume=1e-3)
        b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
        b.add(r, "compute", volume=1e-3)
        b.add(r, "sendrecv", peer=-1 if r == 0 else 0, tag=1, bytes_sent=4096, bytes_recv=4096,
              vector=[1 if r == 0 else -1, 1])
        b.add(r, "finalize")
    data = b.build()
    comp = np.flatnonzero(data.actions["kind"] == K.code("compute"))
    rows = comp[data.actions["volume"][comp] > 1e-5]
    assert ac.stretch_bytes(data, rows, 20e-6, 1.0).tolist() == [8192, 8, 2048] * 2
    got, _ = ac.add_to_compute(data, SIZED, speed=1.0)
    added = got.actions["volume"][rows] - data.actions["volume"][rows]
    # the 2 KiB shift's bytes part: by the 2 ms since the 8 KiB exchange (since_warm)
    shift = (ac.penalty(SIZED, np.array([1e-3]))[0] + ac.penalty(SIZED, np.array([2e-3 + 1e-6]),
             2048)[0] - ac.penalty(SIZED, np.array([2e-3 + 1e-6]))[0])
    want = [ac.penalty(SIZED, np.array([1e-3]), s)[0] for s in (8192, 8)] + [shift]
    assert added == pytest.approx(want * 2)
    assert want[0] > want[1] and want[2] > want[1]     # (the table's larger exchanges cost more)


def test_a_message_s_part_is_by_the_compute_since_one_as_large_moved():
    """Each rank, as a CG iteration: a 400 us compute, a 64 KiB halo exchange; a 300 us compute,
    an 8-byte allreduce; a 100 us compute, the 64 KiB halo again; a 50 us compute, a 16 KiB
    exchange (the larger halo right before warmed its path: its own 50 us), a 60 us compute, a
    40 KiB exchange (the 16 KiB one, less than half, warmed nothing of it: by the 110 us since
    the second halo).  The library's path (the 8-byte part) is by
    the compute right before each call; a message's own part by the compute since the rank's
    calls last moved one at least half as large, the first of its size by its own compute."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    steps = [(400e-6, 65536), (300e-6, 8), (100e-6, 65536), (50e-6, 16384), (60e-6, 40960)]
    for r in range(2):
        b.add(r, "init")
        for seconds, size in steps:
            b.add(r, "compute", volume=seconds)
            if size == 8:
                b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
            else:
                b.add(r, "sendrecv", peer=1 - r, tag=0, bytes_sent=size, bytes_recv=size,
                      vector=[1 - r, 0])
        b.add(r, "finalize")
    data = b.build()
    rows = np.flatnonzero(data.actions["kind"] == K.code("compute"))
    assert ac.stretch_bytes(data, rows, 20e-6, 1.0).tolist() == [s for _, s in steps] * 2
    cold = ac.since_warm(data, rows, ac.stretch_bytes(data, rows, 20e-6, 1.0), 1.0)
    assert cold == pytest.approx([400e-6, 300e-6, 400e-6, 50e-6, 110e-6] * 2)
    got, per_rank = ac.add_to_compute(data, SIZED, speed=1.0)
    added = got.actions["volume"][rows] - data.actions["volume"][rows]

    def p(seconds, size=8):
        return ac.penalty(SIZED, np.array([seconds]), size)[0]
    want = [p(400e-6, 65536), p(300e-6), p(100e-6) + p(400e-6, 65536) - p(400e-6),
            p(50e-6, 16384), p(60e-6) + p(110e-6, 40960) - p(110e-6)]
    assert added == pytest.approx(want * 2)
    assert want[2] > p(100e-6, 65536)         # (more than by its own 100 us: the halo is colder)
    assert per_rank == pytest.approx([sum(want)] * 2)
    # a table of 8-byte exchanges only (calibrations before sizes): each by its own compute
    old, _ = ac.add_to_compute(data, TABLE, speed=1.0)
    assert old.actions["volume"][rows] - data.actions["volume"][rows] == pytest.approx(
        ac.penalty(TABLE, data.actions["volume"][rows]))


def _trace(unit: str, scale: float):
    """Rank 0: compute 1 ms, send, compute 10 us, compute 2 ms, a marker, recv, compute 5 ms;
    rank 1: recv, compute 0.5 ms, marker-free send (volumes in ``unit``, seconds x ``scale``)."""
    b = TraceBuilder(2, {"volume_unit": unit})
    for r in range(2):
        b.add(r, "init")
    b.add(0, "compute", volume=1e-3 * scale)
    b.add(0, "send", peer=1, tag=0, bytes_sent=8)
    b.add(0, "compute", volume=10e-6 * scale)
    b.add(0, "compute", volume=2e-3 * scale)
    b.add(0, "region_begin")                    # (a marker: the recv still follows the compute)
    b.add(0, "recv", peer=1, tag=0, bytes_recv=8)
    b.add(0, "compute", volume=5e-3 * scale)
    b.add(1, "recv", peer=0, tag=0, bytes_recv=8)
    b.add(1, "compute", volume=0.5e-3 * scale)
    b.add(1, "send", peer=0, tag=0, bytes_sent=8)
    return b.build()


@pytest.mark.parametrize("unit, scale", [("seconds", 1.0), ("flops", 3e9)])
def test_added_to_each_compute_an_mpi_call_follows(unit, scale):
    data = _trace(unit, scale)
    got, per_rank = ac.add_to_compute(data, TABLE, speed=3e9)
    comp = data.actions["kind"] == K.code("compute")
    added = (got.actions["volume"] - data.actions["volume"]) / scale
    want = {1e-3: ac.penalty(TABLE, np.array([1e-3]))[0],
            2e-3: ac.penalty(TABLE, np.array([2e-3]))[0],
            0.5e-3: ac.penalty(TABLE, np.array([0.5e-3]))[0]}
    seconds = data.actions["volume"] / scale
    for i in np.flatnonzero(comp):
        expect = want.get(round(float(seconds[i]), 9), 0.0)   # followed by compute or the end: 0
        assert added[i] == pytest.approx(expect, abs=1e-15)
    assert (added[~comp] == 0).all()
    assert per_rank == pytest.approx([want[1e-3] + want[2e-3], want[0.5e-3]])
    assert (data.actions["volume"] == _trace(unit, scale).actions["volume"]).all()   # a copy


def test_fit_is_the_median_over_the_runs_that_measured_it():
    cols = lambda k: {"after_compute_seconds": np.array(ac.SECONDS),         # noqa: E731
                      "after_compute_registers": np.full(4, k * 1e-6),
                      "after_compute_memory": np.full(4, 10 * k * 1e-6)}
    runs = [{"columns": cols(k)} for k in (1, 2, 6)] + [{"columns": {}}]
    got = ac.fit(runs)
    assert got["seconds"] == list(ac.SECONDS)
    assert got["registers"] == pytest.approx([2e-6] * 4)
    assert got["memory"] == pytest.approx([20e-6] * 4)
    assert ac.fit([{"columns": {}}]) == {}
    assert ac.valid(got) and ac.valid({})
    # runs with sizes (rows: sizes outer, durations inner) are fitted from those alone
    n = len(ac.BYTES)
    sized = lambda k: {"after_compute_seconds": np.tile(ac.SECONDS, n),       # noqa: E731
                       ac.BYTES_COLUMN: np.repeat(ac.BYTES, len(ac.SECONDS)),
                       "after_compute_registers": np.arange(4 * n) * k * 1e-6,
                       "after_compute_memory": np.full(4 * n, k * 1e-6)}
    both = ac.fit(runs + [{"columns": sized(k)} for k in (1, 3)])
    assert both["bytes"] == list(ac.BYTES) and both["seconds"] == list(ac.SECONDS)
    assert np.allclose(both["registers"], (np.arange(4 * n) * 2e-6).reshape(n, 4), atol=1e-15)
    assert np.allclose(both["memory"], np.full((n, 4), 2e-6)) and ac.valid(both)
    for bad in ({"seconds": [1e-5]}, {**got, "memory": [-1.0] * 4},
                {**got, "registers": [1e-6]}, {**got, "memory": [float("nan")] * 4},
                {**got, "memory": [10 ** 400] * 4}, {**got, "seconds": [2e-3, 2e-5, 1e-4, 5e-4]},
                {**got, "seconds": [0.0, 2e-5, 1e-4, 5e-4]}):
        assert not ac.valid(bad)


def test_a_prediction_adds_it_and_gives_the_kernels_range(tmp_path, demo):
    """The demo's calibration with a known table: the prediction of a 2-rank ping-pong trace
    whose ranks compute at once before every exchange grows by one rank's penalties, and the two
    kernels' predictions bracket it (the memory kernel's costs are the larger here)."""
    import json
    import shutil
    import h5py
    from minitrace import storage
    from minitrace.predict import predict, report
    cal = tmp_path / "cal.h5"
    shutil.copyfile(demo.out / "machine.h5", cal)
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        for i in range(10):
            b.add(r, "compute", volume=1e-3)
            if (i + r) % 2 == 0:
                b.add(r, "send", peer=1 - r, tag=0, bytes_sent=8)
            else:
                b.add(r, "recv", peer=1 - r, tag=0, bytes_recv=8)
        b.add(r, "finalize")
    trace = tmp_path / "pingpong.h5"
    storage.write_trace(str(trace), b.build())

    def with_table(table):
        with h5py.File(cal, "r+") as f:
            stored = json.loads(f["calibration/fit"].attrs["calibration"])
            stored["after_compute"] = table
            stored["background"] = 0.0          # (the after-compute cost alone)
            f["calibration/fit"].attrs["calibration"] = json.dumps(stored)
        return predict(str(trace), str(cal))
    without = with_table({})
    assert without.after_compute is None and "after a compute" not in report(without)
    p = with_table(TABLE)
    step = ac.penalty(TABLE, np.array([1e-3]))[0]
    assert p.after_compute == pytest.approx([10 * step, 10 * step])
    # both ranks compute, then exchange: each exchange waits for both ranks' penalties, at once
    assert p.predicted_time - without.predicted_time == pytest.approx(10 * step, rel=0.05)
    lo, hi = p.after_compute_range
    assert lo < p.predicted_time < hi
    assert "MPI calls after a compute" in report(p)
    one = predict(str(trace), str(cal), ranges=False)         # --no-range: one replay
    assert one.predicted_time == p.predicted_time and one.after_compute == p.after_compute
    assert one.after_compute_range is None and "not replayed (--no-range)" in report(one)


def test_the_last_earlier_row_at_least_a_floor_is_found_as_by_a_scan():
    """since_warm's search (binary lifting over power-of-two windows) against a plain scan,
    on random values, rows and floors (ties, no earlier row, the first row included)."""
    from minitrace.predict.after_compute import _last_at_least
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 70))
        values = rng.choice([0, 8, 16, 100, 1000, 4096], n).astype(float)
        rows = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False))
        floor = rng.choice([1, 8, 50, 500, 2048, 5000], len(rows)).astype(float)
        scan = [max([j for j in range(r) if values[j] >= f], default=-1)
                for r, f in zip(rows, floor)]
        assert _last_at_least(values, rows, floor).tolist() == scan
