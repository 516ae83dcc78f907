"""A collective whose blocks exceed the calibrated message sizes is flagged (issue 35): NPB FT
class A on 2 ranks exchanges 32 MiB blocks in its all-to-all (64 MiB sent per call), where
calibrate measures messages up to 16 MiB; its time is extrapolated and the prediction must say
so, as it does for a point-to-point message (test_predict)."""
from __future__ import annotations

import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.predict import predict
from minitrace.predict.calibration import load

pytestmark = pytest.mark.timeout(600)


def _alltoall_trace(path, block: int, flags: int = 0) -> str:
    """2 ranks, one MPI_Alltoall of ``block`` bytes to each rank (the rank's own included)."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "alltoall", bytes_sent=2 * block, bytes_recv=2 * block, flags=flags)
        b.add(r, "finalize")
    minitrace.storage.write_trace(str(path), b.build())
    return str(path)


def test_alltoall_blocks_beyond_the_calibrated_range_are_flagged(demo, tmp_path):
    cal = demo.out / "machine.h5"
    hi = load(str(cal)).size_range[1]
    big = predict(_alltoall_trace(tmp_path / "big.h5", 2 * hi), str(cal), ranges=False)
    said = [w for w in big.warnings if "collective call(s) exchange blocks" in w]
    assert len(said) == 1, big.warnings
    assert f"up to {2 * hi} B" in said[0] and "2 collective call(s)" in said[0]
    assert np.isfinite(big.predicted_time)
    # in place, the same blocks: the same warning
    inplace = predict(_alltoall_trace(tmp_path / "inplace.h5", 2 * hi, K.FLAG_IN_PLACE),
                      str(cal), ranges=False)
    assert [w for w in inplace.warnings if "collective call(s) exchange blocks" in w] == said
    # blocks within the range: no such warning (nor a point-to-point one)
    small = predict(_alltoall_trace(tmp_path / "small.h5", hi // 4), str(cal), ranges=False)
    assert not any("calibrated range" in w for w in small.warnings), small.warnings


# == a collective's buffers beyond a rank's share of the caches: from memory ==================

def _runs(*curves):
    """Calibration runs holding only copies by working set: each curve {MiB: B/s}."""
    return [{"columns": {"cache_size": np.array([w << 20 for w in c], np.int64),
                         "cache_copy_rate": np.array(list(c.values()), float)}}
            for c in curves]


def test_cache_share_is_the_last_working_set_above_the_geometric_mean():
    from minitrace.predict.calibration import cache_share
    # 2-core VM's shape: 13.5 GB/s up to 32 MiB, 10 at 64, 6.5 from 128 (mean: 9.37)
    curve = {4: 13.5e9, 8: 13.5e9, 16: 13.5e9, 32: 13.5e9, 64: 10e9, 128: 6.5e9, 256: 6.5e9}
    assert cache_share(_runs(curve)) == (64 << 20, 6.5e9)
    # the median over runs per working set: 64 MiB at 9 (below the mean) in two of three
    low = {**curve, 64: 9e9}
    assert cache_share(_runs(curve, low, low)) == (32 << 20, 6.5e9)
    # the memory rate is the slowest working set's: the VM's 256 MiB copies ran faster than
    # its 64-128 MiB ones (session 15's calibrations; the largest one's rate saw no fall)
    vm = {4: 13.2e9, 8: 13.5e9, 16: 13.2e9, 32: 10.2e9, 64: 5.8e9, 128: 6.2e9, 256: 10.1e9}
    assert cache_share(_runs(vm)) == (32 << 20, 5.8e9)
    # no fall (every working set in cache), one working set, none measured: unknown
    assert cache_share(_runs({4: 13e9, 256: 12e9})) == (0, 0.0)
    assert cache_share(_runs({4: 13e9})) == (0, 0.0)
    assert cache_share([{"columns": {}}]) == (0, 0.0)


def _block_trace(block: int, compute: float = 1e-3, flags: int = 0):
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init")
        b.add(r, "alltoall", bytes_sent=2 * block, bytes_recv=2 * block, flags=flags)
        b.add(r, "compute", volume=compute)
        b.add(r, "finalize")
    return b.build()


def test_collective_buffers_beyond_the_share_copy_and_exchange_from_memory():
    from minitrace.replay.work import copy_seconds, own_block_copies
    hot, cold, l2, share, memory = 30e9, 13e9, 2 << 20, 64 << 20, 6.5e9
    comp = K.code("compute")
    for block, deep in ((32 << 20, True), (4 << 20, False)):  # buffers 128 MiB / 16 MiB
        data = _block_trace(block)
        a = data.actions.copy()
        counts = own_block_copies(data, a, (hot, cold, l2, share, memory), 1.0)
        added = a["volume"][a["kind"] == comp] - 1e-3
        # from memory: the own block copied at the memory's rate (block / memory), the other
        # rank's block sent and one received, each once through memory (2 block / 2 / memory)
        want = 2 * block / memory if deep else float(copy_seconds(block, (hot, cold, l2)))
        assert added == pytest.approx([want, want], rel=1e-12)
        assert counts["from_memory"] == (2 if deep else 0) and counts["copies"] == 2
    # in place: no own block to copy, but the blocks still cross memory (the same traffic:
    # the own block's part of the buffer is read and written in place)
    for block, deep in ((32 << 20, True), (4 << 20, False)):
        data = _block_trace(block, flags=K.FLAG_IN_PLACE)
        a = data.actions.copy()
        counts = own_block_copies(data, a, (hot, cold, l2, share, memory), 1.0)
        added = a["volume"][a["kind"] == comp] - 1e-3
        assert added == pytest.approx([2 * block / memory if deep else 0.0] * 2, rel=1e-12)
        assert counts.get("from_memory", 0) == (2 if deep else 0)
        assert counts.get("copies", 0) == 0
    # no share measured (0), or a calibration without it (three rates): the copy alone
    for copies in ((hot, cold, l2, 0, 0.0), (hot, cold, l2)):
        data = _block_trace(32 << 20)
        a = data.actions.copy()
        assert own_block_copies(data, a, copies, 1.0)["from_memory"] == 0
        assert a["volume"][a["kind"] == comp] - 1e-3 == pytest.approx(
            [float(copy_seconds(32 << 20, (hot, cold, l2)))] * 2, rel=1e-12)


def test_calibrate_measures_copies_by_working_set(demo, tmp_path):
    import shutil

    import h5py

    from minitrace.errors import MinitraceError
    from minitrace.predict.calibration import cache_share, read_runs
    from minitrace.predict.measure import CACHE_SIZES
    path = str(demo.out / "machine.h5")
    runs = read_runs(path)
    cols = runs[-1]["columns"]
    assert list(cols["cache_size"]) == list(CACHE_SIZES[:len(cols["cache_size"])])
    assert len(cols["cache_size"]) >= 2 and (cols["cache_copy_rate"] > 0).all()
    cal = load(path)
    assert (cal.cache_share, cal.memory_copy_rate) == cache_share(runs)
    assert cal.copies()[3:] == (cal.cache_share, cal.memory_copy_rate, cal.fresh_page_rate)
    assert cal.fresh_page_rate > 0                       # (measured: the fresh pages' rate)
    # one of the pair without the other: refused in one line
    bad = tmp_path / "bad.h5"
    shutil.copy(path, bad)
    with h5py.File(bad, "a") as f:
        del f[f"calibration/runs/{sorted(f['calibration/runs'])[-1]}/cache_copy_rate"]
    with pytest.raises(MinitraceError, match="cache_size and cache_copy_rate"):
        read_runs(str(bad))
    # a fresh pages' rate that is not one (0, damaged): refused in one line
    zero = tmp_path / "zero.h5"
    shutil.copy(path, zero)
    with h5py.File(zero, "a") as f:
        f[f"calibration/runs/{sorted(f['calibration/runs'])[-1]}/fresh_page_rate"][0] = 0.0
    with pytest.raises(MinitraceError, match="fresh_page_rate must be finite and positive"):
        read_runs(str(zero))
    # a fit holding a cache share without the memory's rate (or the reverse): refused on load
    import json
    for share, rate in ((64 << 20, 0.0), (0, 6e9)):
        half = tmp_path / f"half{share}.h5"
        shutil.copy(path, half)
        with h5py.File(half, "r+") as f:
            stored = json.loads(f["calibration/fit"].attrs["calibration"])
            stored["cache_share"], stored["memory_copy_rate"] = share, rate
            f["calibration/fit"].attrs["calibration"] = json.dumps(stored)
        with pytest.raises(MinitraceError, match="both measured or neither"):
            load(str(half))


def test_copies_by_working_set_on_nodes_of_other_sizes_end(tmp_path):
    """Ranks whose nodes hold other rank counts keep other working sets; each working set is a
    Barrier, so every rank measures the sizes every node can hold (a rank with more sizes
    waited for ever in a Barrier the other never called)."""
    from tests.support.mpiutil import run_python_mpi
    script = tmp_path / "uneven.py"
    script.write_text(
        "import json, os\n"
        "from mpi4py import MPI\n"
        "from minitrace.predict import measure\n"
        "comm = MPI.COMM_WORLD\n"
        "memory = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')\n"
        "# rank 1 as on a node shared by enough ranks to hold one working set fewer\n"
        "local = 1 if comm.rank == 0 else memory // 4 // measure.CACHE_SIZES[-2]\n"
        "got = measure._cache_copies(comm, local, reps=1)\n"
        "if comm.rank == 0:\n"
        "    print(json.dumps([len(v) for v in got.values()]))\n")
    p = run_python_mpi(2, str(script), timeout=300)
    assert p.returncode == 0, p.stderr
    from minitrace.predict.measure import CACHE_SIZES
    assert p.stdout.strip().splitlines()[-1] == f"[{len(CACHE_SIZES) - 1}, " \
                                                f"{len(CACHE_SIZES) - 1}]"
