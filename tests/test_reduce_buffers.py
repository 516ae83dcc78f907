"""MPICH's large reduce faults in the pages of its temporary buffers at every call on its
non-root ranks (collectives.buffers): the replay gives that work to those ranks, at the
calibrated rate of fresh pages, and none to the root, to small reduces or to other libraries."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace.collectives.buffers import MMAP_THRESHOLD, fresh_bytes
from minitrace.model import TraceBuilder
from minitrace.replay.work import flops_actions

MPICH = {"mpi_library": "MPICH Version: 4.0.2", "volume_unit": "seconds"}
OMPI = {"mpi_library": "Open MPI v4.1.4", "volume_unit": "seconds"}
#: (B/s in cache, packed, cold_from, cache share, from memory, fresh pages)
COPIES = (6e10, 4e10, 2 << 20, 16 << 20, 8e9, 1.6e9)


def test_the_non_root_faults_in_its_copy_and_the_half_it_receives():
    n = 8 << 20
    assert fresh_bytes("mpich", "reduce", 2, 1, 0, n) == n + n // 2
    assert fresh_bytes("mpich", "reduce", 2, 0, 0, n) == 0          # the root keeps its one
    assert fresh_bytes("mpich", "reduce", 2, 1, 0, MMAP_THRESHOLD // 2) == 0    # glibc's heap
    assert fresh_bytes("ompi", "reduce", 2, 1, 0, n) == 0
    assert fresh_bytes("mpich", "allreduce", 2, 1, 0, n) == 0
    # 3 ranks: rank 0 receives rank 1's whole copy, rank 1 sends it, rank 2 a half
    assert [fresh_bytes("mpich", "reduce", 3, r, 2, n) for r in range(3)] == [2 * n, n, 0]


def _reduces(meta: dict, nbytes: int):
    b = TraceBuilder(2, meta)
    for r in range(2):
        b.add(r, "compute", volume=1e-3)
        b.add(r, "reduce", peer=0, bytes_sent=nbytes, bytes_recv=nbytes if r == 0 else 0)
        b.add(r, "compute", volume=1e-3)
    return b.build()


@pytest.mark.parametrize("meta, nbytes, extra", [(MPICH, 8 << 20, True), (MPICH, 64 << 10, False),
                                                 (OMPI, 8 << 20, False)])
def test_the_replayed_work_of_a_reduce(meta, nbytes, extra):
    rate, red = 1e10, 2e10
    data = _reduces(meta, nbytes)
    out, counts = flops_actions(data, rate, red, None, COPIES)
    reduce_rows = np.flatnonzero(data.actions["kind"] == data.actions["kind"][1])
    work = out.actions["volume"][reduce_rows] / rate
    base = nbytes / red
    want = [base, base + (1.5 * nbytes / COPIES[5] if extra else 0.0)]
    assert work.tolist() == pytest.approx(want)
    assert counts.get("fresh", 0) == (1 if extra else 0)


def test_a_calibration_without_fresh_pages_adds_nothing():
    data = _reduces(MPICH, 8 << 20)
    out, _ = flops_actions(data, 1e10, 2e10, None, COPIES[:5])
    assert (out.actions["volume"][[1, 4]] / 1e10).tolist() == pytest.approx([(8 << 20) / 2e10] * 2)


def test_a_recorded_program_s_large_reduces_fault_in_pages_on_the_non_root(
        programs, demo, tmp_path):
    """tests/programs/reduce_sizes.c recorded at 2 ranks (MPICH) and read with the demo's
    calibration, which measures the rate of fresh pages: rank 1's reduces of 1 MiB get 1.5 MiB
    of it as work besides the reduction, its 64 KiB ones and rank 0's none."""
    from minitrace import kinds as K
    from minitrace import open as open_trace
    from minitrace.predict.calibration import load
    from tests.support.record_util import record
    out = tmp_path / "reduce.h5"
    record(out, 2, [str(programs("reduce_sizes")), "3"], volume="cputime")
    with open_trace(str(out)) as t:
        data = t.data()
    cal = load(str(demo.out / "machine.h5"))
    assert cal.fresh_page_rate > 0
    rate, red = 1e10, cal.reduction_rate
    got, counts = flops_actions(data, rate, red, None, cal.copies())
    rows = np.flatnonzero(data.actions["kind"] == K.code("reduce"))
    nbytes = data.actions["bytes_sent"][rows]
    extra = got.actions["volume"][rows] / rate - nbytes / red
    rank = data.rank_of(rows)
    assert sorted(set(nbytes.tolist())) == [64 << 10, 1 << 20] and len(rows) == 12
    want = np.where((rank == 1) & (nbytes == 1 << 20), 1.5 * (1 << 20) / cal.fresh_page_rate, 0)
    assert extra == pytest.approx(want, rel=1e-9, abs=1e-15)
    assert counts["fresh"] == 3
