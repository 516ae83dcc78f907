"""The task simulator on small graphs whose makespans are computed by hand (docs/TASKS.md's
scheduler: the creating thread creates every task at no cost, then runs the newest task of its
deque; the other thread steals the oldest; a released task goes to the releasing thread)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from minitrace.errors import MinitraceError
from minitrace.tasks.graph import from_tasks
from minitrace.tasks.numa_platform import Topology, platform_xml
from minitrace.tasks.simulate import simple_platform, simulate
from minitrace.tasks.taskfile import read_tasks, write_tasks
from minitrace.tasks.validate import check_graph

# A 1 s, B 2 s, C 1 s after A, D 3 s after A and B
DIAMOND = dict(durations={1: 1.0, 2: 2.0, 3: 1.0, 4: 3.0}, edges=[(1, 3), (1, 4), (2, 4)])
BW = {"core": 12e9, "l3": 25e9, "memory": 20e9}


def test_task_model_hand_computed_makespan():
    g = from_tasks(**DIAMOND)
    # thread 0 runs B (newest) 0-2, thread 1 steals A 0-1, then runs C (released to it)
    # 1-2; B's end releases D to thread 0: 2-5
    r = simulate(g, 2)
    assert r.predicted_time == pytest.approx(5.0, abs=1e-9)
    tl = r.timeline.set_index("task")
    assert list(tl.loc[[1, 2, 3, 4], "thread"]) == [1, 0, 1, 0]
    assert list(tl.loc[[1, 2, 3, 4], "start"]) == pytest.approx([0, 0, 1, 2])
    assert simulate(g, 1).predicted_time == pytest.approx(7.0, abs=1e-9)


def test_mutexinoutset_members_never_run_at_once():
    mutex = from_tasks({1: 1.0, 2: 1.0}, deps=[(1, 0, "mutexinoutset"), (2, 0, "mutexinoutset")],
                       sizes={0: 8})
    inoutset = from_tasks({1: 1.0, 2: 1.0}, deps=[(1, 0, "inoutset"), (2, 0, "inoutset")],
                          sizes={0: 8})
    assert len(mutex.edges) == 0 and len(inoutset.edges) == 0   # a set: no order between them
    assert simulate(mutex, 2).predicted_time == pytest.approx(2.0)
    assert simulate(inoutset, 2).predicted_time == pytest.approx(1.0)


def test_comm_model_shares_the_memory_links(tmp_path):
    plat = tmp_path / "p.xml"
    plat.write_text(platform_xml(simple_platform(2), BW))
    # two independent 1 s tasks each reading 1.2 GB: alone, 1.2e9 / 12e9 = 0.1 s of traffic
    # (Tc = 0.9 s fitted, r = 0); together their flows share the 20 GB/s memory link
    # (10 GB/s each): 0.9 + 0.12 s
    g = from_tasks({1: 1.0, 2: 1.0}, deps=[(1, 0, "in"), (2, 1, "in")],
                   sizes={0: 1_200_000_000, 1: 1_200_000_000})
    assert simulate(g, 1, "comm", str(plat)).predicted_time == pytest.approx(2.0, rel=1e-6)
    assert simulate(g, 2, "comm", str(plat)).predicted_time == pytest.approx(1.02, rel=1e-6)
    assert simulate(g, 2, "task", str(plat)).predicted_time == pytest.approx(1.0, rel=1e-9)
    # with r = 1 the traffic hides behind the compute: D = max(Tc, Tm) = Tc
    assert simulate(g, 2, "comm", str(plat), overlap=1.0).predicted_time == \
        pytest.approx(1.0, rel=1e-6)


def test_cache_model_moves_only_misses(tmp_path):
    shared, private = tmp_path / "shared.xml", tmp_path / "private.xml"
    shared.write_text(platform_xml(simple_platform(2), BW))
    two_l3 = Topology(cores=[0, 1], l3_of={0: 0, 1: 1}, node_of={0: 0, 1: 0},
                      package_of_node={0: 0}, l3_size={0: 32 << 20, 1: 32 << 20},
                      l3_node={0: 0, 1: 0})
    private.write_text(platform_xml(two_l3, BW))
    # two 1 s tasks reading the same 12 MB (fits an L3): recorded one after the other, the
    # first missed (12e6 / 12e9 = 0.001 s of traffic alone: Tc 0.999 s), the second hit (Tc 1 s)
    g = from_tasks({1: 1.0, 2: 1.0}, deps=[(1, 0, "in"), (2, 0, "in")], sizes={0: 12_000_000})
    assert simulate(g, 1, "cache", str(shared)).predicted_time == pytest.approx(2.0, rel=1e-6)
    # two threads with an L3 each: both miss, at once: 10 GB/s each on the 20 GB/s memory
    # link, the second task's 1 s of compute then waits 0.0012 s
    assert simulate(g, 2, "cache", str(private)).predicted_time == \
        pytest.approx(1.0012, rel=1e-6)
    # sharing an L3, only the first to start misses: 1 + 0.001 s at most
    assert simulate(g, 2, "cache", str(shared)).predicted_time <= 1.001 + 1e-9
    # COMM moves the 12 MB for both, at once, wherever they run: 0.999 + 0.0012 s
    assert simulate(g, 2, "comm", str(shared)).predicted_time == pytest.approx(1.0002, rel=1e-6)


@pytest.mark.parametrize("edges, deps, message", [
    ([(1, 2), (2, 3), (3, 1)], [], "dependence cycle 1 -> 2 -> 3 -> 1"),
    ([(1, 9)], [], "dependence 1 -> 9 names unknown task 9"),
    ([], [(1, 5, "in")], "task 1 depends on data handle 5, which is not described"),
])
def test_bad_graphs_are_one_line_errors(tmp_path, edges, deps, message):
    g = from_tasks({1: 1.0, 2: 1.0, 3: 1.0}, edges=edges, deps=deps)
    with pytest.raises(MinitraceError, match=message):
        check_graph(g)
    path = tmp_path / "bad.h5"
    write_tasks(str(path), g)
    p = subprocess.run([sys.executable, "-m", "minitrace", "simulate-tasks", str(path),
                        "--threads", "2"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0]
    p = subprocess.run([sys.executable, "-m", "minitrace", "validate", str(path)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and message in p.stderr and len(p.stderr.splitlines()) == 1


def test_cli_json_and_outputs(tmp_path):
    path = tmp_path / "g.h5"
    write_tasks(str(path), from_tasks(**DIAMOND))
    assert [tuple(e) for e in read_tasks(str(path)).edges.values.tolist()] == DIAMOND["edges"]
    p = subprocess.run([sys.executable, "-m", "minitrace", "simulate-tasks", str(path),
                        "--threads", "2", "--model", "all", "--json", "--plot",
                        str(tmp_path / "t.png"), "--perfetto", str(tmp_path / "t.json")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["predicted_time"] == pytest.approx(5.0)
    assert set(out["models"]) == {"task", "comm", "cache"}
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert sum(e["ph"] == "X" for e in events) == 3 * 4
    assert (tmp_path / "t.png").stat().st_size > 0
    for cmd, says in (("info", "tasks: 4 tasks"), ("validate", "task graph sound: 4 tasks")):
        p = subprocess.run([sys.executable, "-m", "minitrace", cmd, str(path)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0 and says in p.stdout, p.stderr


def test_overlap_fitted_per_kernel_from_cached_and_missed_tasks(tmp_path):
    """Kernel k's tasks 1-3 read 10 MB each for the first time (missed: 10e6 / 12e9 s of
    traffic alone), 4-6 read them again (cached in the 32 MiB L3); their durations made with
    Tc = 1 ms and r = 0.4 (D = Tc + max(0, Tm - r Tc)) give r = 0.4 back.  Kernel j's tasks
    all hit nothing twice: its r cannot be fitted and stays --overlap's default."""
    plat = tmp_path / "p.xml"
    plat.write_text(platform_xml(simple_platform(2), BW))
    tc, r, tm = 1e-3, 0.4, 10e6 / 12e9
    dur = {t: tc + max(0.0, tm - r * tc) for t in (1, 2, 3)} | {t: tc for t in (4, 5, 6)}
    dur |= {7: 2e-3, 8: 2e-3}
    g = from_tasks(dur, deps=[(t, (t - 1) % 3, "in") for t in range(1, 7)] +
                   [(7, 5, "in"), (8, 6, "in")],
                   sizes={0: 10_000_000, 1: 10_000_000, 2: 10_000_000, 5: 1000, 6: 1000},
                   kernels={**{t: "k" for t in range(1, 7)}, 7: "j", 8: "j"})
    res = simulate(g, 1, "cache", str(plat))
    assert "r = 0.40 for kernel k (fitted: 3 tasks cached, 3 missed" in " ".join(res.notes)
    assert "r = 0 for kernel j (not fitted: 0 tasks cached, 2 missed" in " ".join(res.notes)
    # alone on one thread, the fitted model gives back the recorded durations
    assert res.predicted_time == pytest.approx(sum(dur.values()), rel=1e-6)
    fixed = simulate(g, 1, "cache", str(plat), overlap=0.0)
    assert not any("fitted" in n for n in fixed.notes)
