"""Requests under constant handle reuse (issue 15): a million requests per rank, 256 in flight,
completed by Wait, Waitall, Testany and Waitsome, are recorded with every request linked to the
call that completed it, and the shim's request table keeps short probes (its own counters,
MINITRACE_STATS) however many requests share one handle.  Counts and links, not timings: a
table that degrades with handle reuse shows as long probes, and as a run that cannot finish
within the timeouts (the previous table needed O(window^2) steps per completed request)."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.merge import merge_dir
from minitrace.record import shim_env
from tests.support.mpiutil import run_mpi
from tests.support.record_util import shim_stats

pytestmark = pytest.mark.timeout(600)
WINDOWS, W = 4096, 256          # 1,048,576 requests per rank
STYLES = 4                      # window k is completed by style k % 4 (see reqwindow.c)


def completions(data, rank: int) -> np.ndarray:
    """Request ids completed on a rank, in completion order (vectors in their order)."""
    sl = data.rank_slice(rank)
    a = data.actions[sl]
    rows = np.arange(sl.start, sl.stop)
    done = (a["flags"] & K.FLAG_COMPLETED) != 0
    single = rows[np.isin(a["kind"], [K.CODE["wait"]]) | ((a["kind"] == K.CODE["testany"]) & done)]
    multi = rows[np.isin(a["kind"], [K.CODE["waitall"]]) | ((a["kind"] == K.CODE["waitsome"]) & done)]
    mrows, mids = data.vector_entries(multi)
    at = np.concatenate([single, mrows])
    ids = np.concatenate([data.actions["request"][single], mids])
    return ids[np.argsort(at, kind="stable")]


@pytest.fixture(scope="module")
def run(programs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("reqwindow")
    exe = programs("reqwindow")
    env = shim_env(str(tmp / "raw"), "walltime")
    env["MINITRACE_STATS"] = "1"
    p = run_mpi(2, [exe, str(WINDOWS), str(W), str(tmp)], env=env, timeout=300)
    order = {r: np.fromfile(tmp / f"order-{r}.bin", dtype=np.int32) for r in range(2)}
    return merge_dir(str(tmp / "raw")), shim_stats(p.stderr), order


@pytest.mark.parametrize("rank, posting", [(0, "isend"), (1, "irecv")])
def test_every_request_linked_to_its_completion(run, rank, posting):
    data, _, order = run
    a = data.actions[data.rank_slice(rank)]
    posted = a["request"][a["kind"] == K.CODE[posting]]
    n = WINDOWS * W
    assert len(posted) == n and len(np.unique(posted)) == n
    assert (a["kind"] == K.CODE["wait"]).sum() == WINDOWS // STYLES * W
    assert (a["kind"] == K.CODE["waitall"]).sum() == WINDOWS // STYLES
    done = completions(data, rank)
    assert len(done) == n
    # the request each completion names: the one posted at the position the program saw complete
    assert len(order[rank]) == n
    expect = posted.reshape(WINDOWS, W)[np.repeat(np.arange(WINDOWS), W), order[rank]]
    got = done.reshape(WINDOWS, W)
    expect = expect.reshape(WINDOWS, W)
    # every style, MPI_Wait on one handle at a time included: a handle shared by requests that
    # completed at once is told apart by the variable it was written to (r[i])
    assert (got == expect).all()
    if posting == "irecv":
        irecv = a[a["kind"] == K.CODE["irecv"]].reshape(WINDOWS, W)
        assert (irecv["peer"][:, ::2] == 0).all() and (irecv["bytes_recv"][:, ::2] == 8).all()
        assert (irecv["peer"][:, 1::2] == -1).all()
        assert not (irecv["flags"] & K.FLAG_UNRESOLVED).any()


def test_probes_stay_short_with_shared_handles(run):
    data, st, _ = run
    assert sorted(st) == [0, 1]
    for rank in (0, 1):
        s = st[rank]
        assert s["requests"] == WINDOWS * W
        assert s["live-max"] <= W
        # one slot per handle: the probe length does not grow with the entries of a handle
        # (the previous table probed past every live entry of the shared handle: up to W)
        assert s["probe-max"] <= 32
    if "MPICH" in data.meta["mpi_library"]:
        # MPICH shares one handle between the requests that completed at once: every
        # MPI_PROC_NULL one of a window (W / 2) at least
        assert st[0]["per-handle-max"] >= W // 2 and st[1]["per-handle-max"] >= W // 2
