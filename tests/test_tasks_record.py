"""The OMPT recorder: the dependence graph it rebuilds is the one the program declares
(tests/programs/omp_graph.c), with the sizes and modes of its depend clauses."""
from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from minitrace.tasks.graph import from_raw
from minitrace.tasks.ompt_raw import raw_files, read_raw

from minitrace.tasks.taskfile import read_tasks
from tests.support.tasks_util import PROGRAMS, clang_openmp, record_openmp

# omp_graph.c, tasks numbered 1..6 in creation order
DECLARED_EDGES = {(1, 3), (2, 3), (1, 4), (3, 6), (5, 6)}
DECLARED_DEPS = {1: [("A", "inout")], 2: [("B", "inout")],      # clang passes out as inout
                 3: [("A", "in"), ("B", "inout")], 4: [("A", "in")],
                 5: [("C", "mutexinoutset")], 6: [("B", "in"), ("C", "in")]}
SIZES = {"A": 800, "B": 1600, "C": 4000}


@pytest.mark.parametrize("threads", [1, 2])
def test_recorded_graph_is_the_declared_one(tmp_path, threads):
    exe = clang_openmp("omp_graph", tmp_path)
    out = tmp_path / "g.h5"
    p = record_openmp(out, [exe], threads)
    assert p.returncode == 0, p.stderr
    assert "6 tasks" in p.stdout and "5 dependences on 3 data handles" in p.stdout
    g = read_tasks(str(out))
    ex = g.explicit().sort_values("t_create")
    number = {t: i + 1 for i, t in enumerate(ex["task"])}
    assert ex["parent"].nunique() == 1
    edges = {(number[s], number[d]) for s, d in zip(g.edges["src"], g.edges["dst"])}
    assert edges == DECLARED_EDGES
    # libomp's own dependence callback reports no edge the rebuilt graph lacks
    assert g.meta["edges_ompt_not_rebuilt"] == 0
    ompt = {(number[s], number[d]) for s, d in zip(g.edges_ompt["src"], g.edges_ompt["dst"])}
    assert ompt <= DECLARED_EDGES
    size = dict(zip(g.handles["handle"], g.handles["size"]))
    name = {h: n for n, s in SIZES.items() for h, hs in size.items() if hs == s}
    deps = {}
    for t, h, m in zip(g.deps["task"], g.deps["handle"], g.deps["mode"].astype(str)):
        deps.setdefault(number[t], []).append((name[h], m))
    assert deps == DECLARED_DEPS
    assert sorted(size.values()) == sorted(SIZES.values())
    # each task spins ~1 ms; its own time is what it did, on a thread that ran it
    assert (ex["duration"] >= 0.9e-3).all()
    assert (ex["thread"] >= 0).all() and (ex["thread"] < threads).all()
    assert (ex["t_end"] > ex["t_start"]).all() and (ex["t_start"] >= ex["t_create"]).all()
    # the thread that ran `single` created the six tasks in order, then waited
    creator = ex["parent"].iloc[0]
    acts = g.actions[g.actions["task"] == creator]
    seq = [a for a in acts["action"] if a != "compute"]
    assert seq[:7] == ["create"] * 6 + ["taskwait"]
    assert [number[t] for t in acts.loc[acts["action"] == "create", "target"]] == list(range(1, 7))


def test_gcc_libgomp_program_is_refused_in_one_line(tmp_path):
    import shutil
    import subprocess
    if not shutil.which("gcc"):
        pytest.skip("no gcc")
    exe = tmp_path / "omp_gcc"
    subprocess.run(["gcc", "-fopenmp", str(PROGRAMS / "omp_graph.c"), "-o", str(exe)],
                   check=True)
    p = record_openmp(tmp_path / "g.h5", [str(exe)], 1)
    assert p.returncode == 1
    err = p.stderr.strip().splitlines()
    assert len(err) == 1 and "libgomp has no OMPT" in err[0] and "clang -fopenmp" in err[0]
    assert not (tmp_path / "g.h5").exists()
    assert not list(tmp_path.glob("g.h5.raw-*"))


def test_recorded_graph_simulates_within_its_bounds(tmp_path):
    """Recorded at 1 thread, simulated at 2: the prediction lies between the graph's critical
    path (with the producer's time before each task's creation) and the serial sum, both
    computed here from the recorded durations."""
    from minitrace.tasks.simulate import simulate
    exe = clang_openmp("omp_graph", tmp_path)
    out = tmp_path / "g.h5"
    assert record_openmp(out, [exe], 1).returncode == 0
    g = read_tasks(str(out))
    dur = dict(zip(g.tasks["task"], g.tasks["duration"]))
    ex = g.explicit().sort_values("t_create")
    creator = ex["parent"].iloc[0]
    acts = g.actions[g.actions["task"] == creator]
    ready, elapsed = {}, 0.0     # when the producer has created each task
    for a, d, t in zip(acts["action"], acts["duration"], acts["target"]):
        elapsed += d if a == "compute" else 0.0
        if a == "create":
            ready[t] = elapsed
    finish = {}
    for t in ex["task"]:         # creation order is a topological order
        preds = g.edges.loc[g.edges["dst"] == t, "src"]
        finish[t] = max([ready[t], *[finish[p] for p in preds]]) + dur[t]
    critical = max(finish.values())
    serial = sum(dur[t] for t in ex["task"]) + acts["duration"].sum()
    r = simulate(g, 2)
    tl = r.timeline.set_index("task")
    assert set(tl.index) == set(ex["task"])
    assert critical - 1e-9 <= r.predicted_time <= serial + 1e-9
    for s, d in zip(g.edges["src"], g.edges["dst"]):      # dependences respected
        assert tl.loc[s, "end"] <= tl.loc[d, "start"] + 1e-12


def test_nested_tasks_taskwait_taskgroup(tmp_path):
    """Task-recursive Fibonacci (taskwait in explicit tasks) and a taskgroup per thread: the
    recorded structure replays; on one thread the simulation is the sum of all the compute."""
    from minitrace.tasks.simulate import simulate
    exe = clang_openmp("omp_nested", tmp_path)
    out = tmp_path / "n.h5"
    p = record_openmp(out, [exe], 1)
    assert p.returncode == 0, p.stderr
    g = read_tasks(str(out))
    ex = g.explicit()
    assert len(ex) == 2 * 33 + 1          # fib(8) makes 67 calls, 66 of them tasks; + 1
    inner = ex[ex["parent"].isin(ex["task"])]
    assert len(inner) == 64               # tasks created by tasks
    waits = g.actions[g.actions["action"] == "taskwait"]
    assert set(waits["task"]) >= set(inner["parent"])      # each creating task waited
    region2 = g.tasks[(g.tasks["kind"] == "implicit") & (g.tasks["region"] ==
                                                          g.tasks["region"].max())]
    acts = [a for a in g.actions[g.actions["task"] == region2["task"].iloc[0]]["action"]
            if a != "compute"]
    assert acts[:3] == ["taskgroup_begin", "create", "taskgroup"]   # begin, body, its wait
    one = simulate(g, 1)
    assert one.total == pytest.approx(g.actions["duration"].sum(), rel=1e-9)
    two = simulate(g, 2)
    assert len(two.timeline) == len(ex)
    assert one.predicted_time / 2 - 1e-9 <= two.predicted_time <= one.predicted_time + 1e-9


def test_raw_records_omit_confirmed_dependences_and_share_clock_reads(tmp_path):
    """The tool writes OMPT's dependence records only when they differ from the sized ones
    libomp was given (here never), and its CPU times never run backwards on a thread although
    most are derived from an earlier read (ompt_tool.c: SHARE_NS)."""
    import numpy as np
    from minitrace.tasks import ompt_raw as R
    exe = clang_openmp("omp_graph", tmp_path)
    out = tmp_path / "g.h5"
    p = record_openmp(out, [exe], 1, extra=["--keep-raw"])
    assert p.returncode == 0, p.stderr
    raw = R.raw_files(p.stdout.split("raw files kept in ")[1].split()[0])
    records, _ = R.read_raw(raw[0])
    kinds = records["kind"]
    assert (kinds == R.DEP_SIZED).sum() == 8 and (kinds == R.DEP).sum() == 0
    for th in np.unique(records["thread"]):
        cpu = records["cpu"][(records["thread"] == th) & (records["cpu"] > 0)]
        assert (np.diff(cpu.astype(np.int64)) >= 0).all()


def test_taskgroup_and_taskwait_wait_as_openmp_defines(tmp_path):
    """tests/programs/omp_taskgroup.c recorded and simulated on one thread, which at a wait
    runs the newest ready task first: the order shows what each wait waited for.  A taskwait
    that waited for the grandchild G2 would run it before M; a taskgroup that waited for L
    (created before it) or G2 (no descendant of its tasks) would run them before N."""
    from minitrace.tasks.simulate import simulate
    exe = clang_openmp("omp_taskgroup", tmp_path)
    out = tmp_path / "tg.h5"
    assert record_openmp(out, [exe], 1).returncode == 0
    g = read_tasks(str(out))
    ex = g.explicit().sort_values("t_create")
    T2, G2, M, L, T, G, N = ex["task"]
    parent = dict(zip(ex["task"], ex["parent"]))
    assert parent[G2] == T2 and parent[G] == T
    creator = parent[T2]
    acts = g.actions[g.actions["task"] == creator]
    assert [a for a in acts["action"] if a != "compute"][:10] == [
        "create", "taskwait", "create", "taskwait", "create", "taskgroup_begin", "create",
        "taskgroup", "create", "taskwait"]
    order = simulate(g, 1).timeline["task"].tolist()
    assert order == [T2, M, T, G, N, L, G2]


def test_cpu_time_interpolated_between_clock_reads():
    """Task creations and switches that did not read the thread's CPU clock (cpu 0) get it
    interpolated in wall time between the reads around them on their thread, advanced by the
    wall time after the last one; other threads and untimed records are left alone."""
    import numpy as np
    from minitrace.tasks import ompt_raw as R
    from minitrace.tasks.graph import interpolate_cpu
    rows = [(R.SCHEDULE, 0, 0, 100), (R.TASK_CREATE, 0, 500, 0), (R.DEP_SIZED, 0, 0, 0),
            (R.SCHEDULE, 0, 1000, 600), (R.SCHEDULE, 0, 1500, 0), (R.SCHEDULE, 1, 200, 50),
            (R.SCHEDULE, 1, 400, 0), (R.SYNC_END, 1, 600, 150)]
    rec = np.zeros(len(rows), R.RECORD)
    for i, (k, th, t, c) in enumerate(rows):
        rec[i]["kind"], rec[i]["thread"], rec[i]["time"], rec[i]["cpu"] = k, th, t, c
    timed = rec["kind"] != R.DEP_SIZED
    out = interpolate_cpu(rec, timed)
    assert out["cpu"].tolist() == [100, 350, 0, 600, 1100, 50, 100, 150]
    assert rec["cpu"][1] == 0           # the input is not changed


@pytest.mark.parametrize("sig,rc,word", [(signal.SIGINT, 130, "interrupted"),
                                         (signal.SIGTERM, 143, "terminated")])
def test_interrupted_recording_keeps_its_raw_data(tmp_path, sig, rc, word):
    """``record --openmp`` runs its program through record's launcher (record.run_traced):
    interrupted, the program is stopped and the raw data kept, its place printed (as
    test_safety checks for an MPI recording)."""
    exe = clang_openmp("omp_graph", tmp_path)
    out = tmp_path / "g.h5"
    # the signal comes once the OpenMP program has returned (its raw file complete)
    script = f"{exe} > {tmp_path}/ran && touch {tmp_path}/returned && exec sleep 120"
    proc = subprocess.Popen([sys.executable, "-m", "minitrace", "record", "--openmp", "-o",
                             str(out), "--", "sh", "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, OMP_NUM_THREADS="2"),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    while not (tmp_path / "returned").exists():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == rc, err
    (raw,) = glob.glob(str(tmp_path / "g.h5.raw-*"))
    assert f"its raw data is kept in {raw}\n" in err and err.endswith(f"minitrace: {word}\n")
    (kept,) = raw_files(raw)
    assert len(from_raw(*read_raw(kept), kept).explicit()) == 6
    assert not out.exists()
