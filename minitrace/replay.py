"""Predict a run time by replaying a time-independent trace on a SimGrid platform (SMPI replay).

SimGrid's engine is a process-wide singleton that may abort() on bad input, so every replay
runs in a child process that loads the platform, starts one SMPI replay actor per rank on its
host and prints the engine clock as one JSON line.  The child is the compiled replayer of
:mod:`minitrace.replay_native` when set-up built it (SimGrid's fast contexts, native speed), else
``python -m minitrace.replay JOB`` through SimGrid's Python bindings (thread contexts, ~6x
slower); both run the same SimGrid code and give the same simulated times.  The
parent prepares the inputs (one trace file per rank, platform, host of each rank), enforces a
timeout and turns any failure into a one-line :class:`MinitraceError`.

Inputs: a minitrace HDF5 file, a ``TraceData`` or ``Trace`` (exported with the SimGrid TI
converter), a SimGrid TI trace file holding every rank (``<rank> <action> ...`` lines), or a
list file naming one TI trace per rank (smpirun ``-replay`` convention).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from . import kinds as K
from .converters.ti_files import (first_tokens, is_trace, list_entries, meaningful_lines,
                                  rank_token)
from .errors import MinitraceError
from .platforms import Cluster, parse_quantity, read_hostfile

#: ``--cfg`` options set unless the caller overrides them (a value of None drops one).  They are
#: what ``smpirun`` sets: the SMPI network model (piecewise-linear latency/bandwidth factors
#: fitted to MPI on real clusters; SimGrid's own default, LV08, is a generic TCP model) and a
#: timing precision of 1 ns (default 1e-5 s would round short messages away).
DEFAULT_CONFIG: dict[str, str] = {"network/model": "SMPI", "precision/timing": "1e-9"}
#: Silence notices that do not apply to a replay (host-speed benchmarking, config echo).
_QUIET = ["--log=smpi_config.thres:warning", "--log=xbt_cfg.thres:warning", "--log=no_loc"]
_RESULT_TAG = "MINITRACE-REPLAY "
_INSTANCE = "minitrace"
_LOG_TAIL = 20


@dataclass
class ReplayResult:
    """What a replay predicts, and how it was obtained."""

    simulated_time: float            # seconds: the engine clock when the last rank finished
    rank_end_times: list[float]      # seconds: when each rank's replay returned
    nranks: int
    hosts: list[str]                 # host of each rank
    platform: str                    # platform XML replayed on ("generated: ..." when made up)
    config: dict[str, str]           # every --cfg option passed to SimGrid
    command: list[str]               # the child command line (its job file is deleted after)
    log_tail: list[str] = field(default_factory=list)  # last lines SimGrid logged
    wall_time: float = 0.0           # seconds of host time spent in the simulation loop
    engine: str = "python"           # "native" (compiled replayer) or "python" (bindings)
    notes: list[str] = field(default_factory=list)  # what the TI export dropped/approximated
    #: every replayed action's simulated start and end (``timeline=True``, native engine;
    #: see :mod:`minitrace.timeline`), else None
    timeline: object = None

    def breakdown(self):
        """Where each rank's simulated time went (:func:`minitrace.timeline.breakdown`)."""
        if self.timeline is None:
            raise MinitraceError("no timeline: replay with timeline=True (native engine)")
        from .timeline import breakdown
        return breakdown(self.timeline, self.rank_end_times)

    def critical_path(self):
        """The actions that determined the end time (:func:`minitrace.timeline.critical_path`)."""
        if self.timeline is None:
            raise MinitraceError("no timeline: replay with timeline=True (native engine)")
        from .timeline import critical_path
        return critical_path(self.timeline, self.rank_end_times)

    def to_dict(self) -> dict:
        """Plain dict of every field (the timeline as its per-rank breakdown), for ``--json``."""
        out = asdict(replace(self, timeline=None))
        del out["timeline"]
        if self.timeline is not None:
            out["breakdown"] = self.breakdown().reset_index().to_dict(orient="records")
        return out


def replay(trace, platform: str | os.PathLike | None = None,
           hostfile: str | os.PathLike | None = None, np: int | None = None,
           config: dict | None = None, *, cluster: Cluster | None = None,
           compute_rate: str | float | None = None, lossy: bool = False,
           timeout: float = 600.0, engine: str = "auto", timeline: bool = False,
           reduction_rate: str | float | None = None,
           copy_rates: tuple[float, float, int] | None = None) -> ReplayResult:
    """Replay ``trace`` on SimGrid and return the predicted (simulated) run time.

    ``platform``: SimGrid XML; without it a :class:`~minitrace.platforms.Cluster` is generated
    (``cluster``, or one host per rank with the defaults of :mod:`minitrace.platforms`).
    ``hostfile``: host of each rank, one per line (``host:N`` for N ranks); default: the
    platform's hosts in order.  ``np``: expected number of ranks (checked against the trace).
    ``config``: extra SimGrid ``--cfg`` options, ``{"network/model": "LV08"}``.
    ``compute_rate``: flops per unit of a minitrace trace's compute volume, required when that
    unit is not flops: the recording machine's flop/s for ``seconds`` ("2.5Gf"), flops per
    instruction for ``instructions``.
    ``reduction_rate``: bytes per second at which the recording machine combines reduction
    data (``MPI_SUM`` on doubles), to model the work of reductions for traces whose volumes
    were measured (seconds, instructions): what such a trace holds inside an MPI call is mostly
    waiting, which the simulation models itself, so it is never replayed as work; without a
    rate the reductions do no work (said in the notes).
    ``copy_rates``: (B/s in cache, B/s out of the caches, size above which a block is out of
    them) of the recording machine's memory copies, to model the copy of a rank's own block in
    collectives (:mod:`minitrace.copies`), which SimGrid does not, as work after the call
    (traces timed in seconds; ``Calibration.copies()``); without them no copy is modelled.
    ``lossy``: replay a minitrace trace even if SimGrid's format must drop some of its actions.
    ``engine``: ``"native"`` (the compiled replayer), ``"python"`` (SimGrid's Python bindings)
    or ``"auto"`` (native when built).
    ``timeline``: also record when each replayed action started and ended (native engine).
    """
    native = _engine(engine)
    if timeline and native is None:
        raise MinitraceError("a replay timeline needs the native replayer (--engine native)")
    if platform is not None and cluster is not None:
        raise MinitraceError("give either a platform file or a generated cluster, not both")
    if platform is None and hostfile is not None:
        raise MinitraceError("a hostfile needs the platform file that defines its hosts",
                             str(hostfile))
    cfg = {**DEFAULT_CONFIG, **{str(k): v for k, v in (config or {}).items()}}
    cfg = {k: str(v) for k, v in cfg.items() if v is not None}
    for k, v in cfg.items():
        if not k or ":" in k or any(c.isspace() for c in k + v):
            raise MinitraceError(f"bad SimGrid option {k!r}: {v!r} (expected key:value, no spaces)")
    with tempfile.TemporaryDirectory(prefix="minitrace-replay-") as work:
        rate = None if compute_rate is None else parse_quantity(compute_rate, "speed")
        red = None if reduction_rate is None else parse_quantity(reduction_rate, "bandwidth")
        traces, notes = _rank_traces(trace, Path(work), rate, red, lossy, copy_rates)
        nranks = len(traces)
        if np is not None and int(np) != nranks:
            raise MinitraceError(f"the trace has {nranks} ranks but {np} were asked for (--np)")
        hosts = None
        if platform is None:
            cluster = cluster or Cluster()
            if cluster.hosts is None:
                cluster = replace(cluster, hosts=cluster.hosts_for(nranks))
            platform, _ = cluster.write(Path(work) / "platform")
            hosts = cluster.rank_hosts()
            shown = (f"generated: cluster of {cluster.hosts} hosts, {cluster.speed}, "
                     f"{cluster.bandwidth}, {cluster.latency}"
                     + (f", {cluster.ranks_per_host} ranks per host"
                        if cluster.ranks_per_host > 1 else ""))
        else:
            platform = os.fspath(platform)
            if not os.path.isfile(platform):
                raise MinitraceError("no such platform file", platform)
            shown = platform
            if hostfile is not None:
                hosts = read_hostfile(hostfile)
        if hosts is not None and len(hosts) < nranks:
            if hostfile is None:
                raise MinitraceError(f"the trace has {nranks} ranks but the generated cluster "
                                     f"has only {len(hosts)} hosts")
            raise MinitraceError(f"the trace has {nranks} ranks but only {len(hosts)} hosts are "
                                 f"listed (list a host several times to share it)", str(hostfile))
        hosts = hosts[:nranks] if hosts else None
        if native is not None:
            job_path = Path(work) / "job.txt"
            timed = Path(work) / "timed.bin" if timeline else None
            total = _count_lines(traces)
            _write_native_job(job_path, os.path.abspath(platform), traces, hosts, timed,
                              progress=max(total // 200, 10_000) if _show_progress(total) else 0)
            cmd = [str(native), str(job_path), *_QUIET, *(f"--cfg={k}:{v}" for k, v in cfg.items())]
        else:
            job = {"platform": os.path.abspath(platform), "traces": traces, "hosts": hosts,
                   "config": cfg}
            job_path = Path(work) / "job.json"
            job_path.write_text(json.dumps(job))
            cmd = [sys.executable, "-m", "minitrace.replay", str(job_path)]
            total = 0
        out = _run_child(cmd, timeout, total if _show_progress(total) else 0)
        table = None
        if timeline:
            from .timeline import attach_messages, read_timed_log
            table = attach_messages(read_timed_log(timed, out["action_names"]), traces)
    return ReplayResult(simulated_time=out["clock"], rank_end_times=out["rank_end_times"],
                        nranks=nranks, hosts=out["hosts"], platform=shown, config=cfg,
                        command=cmd, log_tail=out["log_tail"], wall_time=out["wall_time"],
                        engine="python" if native is None else "native", notes=notes,
                        timeline=table)


#: Replays of more actions than this show a progress bar (when stderr is a terminal).
PROGRESS_FROM = 200_000


def _show_progress(total: int) -> bool:
    return total >= PROGRESS_FROM and sys.stderr.isatty()


def _count_lines(paths: list[str]) -> int:
    """Actions in the per-rank traces (one per line), for the progress bar."""
    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                n += block.count(b"\n")
    return n


ENGINES = ("auto", "native", "python")


def _engine(engine: str):
    """Path of the compiled replayer to use, or None for the Python-bindings child."""
    from .replay_native import binary
    if engine not in ENGINES:
        raise MinitraceError(f"unknown replay engine {engine!r} (choose from {', '.join(ENGINES)})")
    if engine == "python":
        return None
    native = binary()
    if native is None and engine == "native":
        raise MinitraceError("the native replayer is not built (scripts/setup.sh builds it; "
                             "python -m minitrace.replay_native --include DIR)")
    return native


def _write_native_job(path: Path, platform: str, traces: list[str], hosts: list[str] | None,
                      timed: Path | None = None, progress: int = 0) -> None:
    """The compiled replayer's job: the platform, its options (``#key<tab>value``: the timed
    log's path, how often to report progress), then ``TRACE<tab>HOST`` per rank."""
    for p in [platform, *traces, *(hosts or []), str(timed or "")]:
        if "\n" in p or "\t" in p:
            raise MinitraceError(f"a tab or newline in {p!r} cannot be passed to the replayer")
    lines = [platform]
    if timed is not None:
        lines.append(f"#timed-log\t{timed}")
    if progress:
        lines.append(f"#progress\t{progress}")
    lines += [f"{t}\t{hosts[r] if hosts else ''}" for r, t in enumerate(traces)]
    path.write_text("\n".join(lines) + "\n")


def _rank_traces(trace, work: Path, rate: float | None, red: float | None,
                 lossy: bool, copies=None) -> tuple[list[str], list[str]]:
    """One TI trace file per rank (absolute paths), whatever form the trace came in, and the
    exporter's notes on approximations."""
    if isinstance(trace, (str, os.PathLike)):
        path = os.fspath(trace)
        if not os.path.isfile(path):
            raise MinitraceError("no such trace file", path)
        with open(path, "rb") as fh:
            magic = fh.read(8)
        if magic == b"\x89HDF\r\n\x1a\n":
            from .trace import open as open_trace
            with open_trace(path) as t:
                data, notes = _in_flops(t.data(), rate, red, path, copies)
                return _export(data, work, notes, path, lossy)
        if rate is not None or red is not None or copies is not None:
            raise MinitraceError("a SimGrid TI trace is in flops already: no compute, "
                                 "reduction or copy rate applies", path)
        return _text_traces(path, work), []
    data = trace.data() if hasattr(trace, "data") and callable(trace.data) else trace
    if not hasattr(data, "rank_offsets"):
        raise MinitraceError(f"cannot replay a {type(trace).__name__}: give a path, a Trace or "
                             f"a TraceData")
    data, notes = _in_flops(data, rate, red, None, copies)
    return _export(data, work, notes, None, lossy)


def _in_flops(data, rate: float | None, red: float | None, source: str | None, copies=None):
    """The trace with compute volumes in flops, what SimGrid executes at a host's speed (sleeps
    stay in seconds), and a note on how reductions were modelled.

    A measured volume (seconds, instructions, cycles) on an MPI call is what the rank spent inside it,
    mostly busy-polling while it waited: the simulation models that waiting, so it is never
    replayed as work.  Reductions do ``bytes / red`` seconds of work at the recording
    machine's speed when a reduction rate is known, none otherwise."""
    unit = data.meta.get("volume_unit", "flops")
    if unit == "flops":
        if rate is not None or red is not None or copies is not None:
            raise MinitraceError("the trace's compute volumes are in flops already: no compute, "
                                 "reduction or copy rate applies", source)
        return data, []
    if rate is None:
        how = ("the flop/s of the machine that recorded it" if unit == "seconds"
               else f"flops per {unit.removesuffix('s')}")
        raise MinitraceError(f"the trace's compute volumes are in {unit}: give a compute rate "
                             f"to turn them into flops ({how}, e.g. --compute-rate "
                             f"{'1Gf' if unit == 'seconds' else '1'})", source)
    if (red is not None or copies is not None) and unit != "seconds":
        raise MinitraceError(f"reduction and copy rates apply to traces timed in seconds, not "
                             f"{unit}", source)
    actions = data.actions.copy()
    kind = actions["kind"]
    compute = kind == K.code("compute")
    actions["volume"][compute] *= rate
    in_call = ~compute & (kind != K.code("sleep"))
    reductions = K.mask(K.REDUCTIONS)[kind]
    measured = float(actions["volume"][reductions].sum())
    actions["volume"][in_call] = 0.0
    n = int(reductions.sum())
    if not n:
        notes = []
    elif red is None:
        notes = [f"{n} reduction calls do no work: no reduction rate given (the {measured:.3g} "
                 f"{unit} measured inside them is waiting, which the simulation models)"]
    else:
        actions["volume"][reductions] = actions["bytes_sent"][reductions] / red * rate
        notes = [f"{n} reduction calls do bytes / {red:.4g} B/s of work at {rate:.4g} flop/s (not "
                 f"the {measured:.3g} {unit} measured inside them, which is mostly waiting)"]
    if copies is not None:
        notes += _own_block_copies(data, actions, copies, rate)
    return replace(data, actions=actions, meta={**data.meta, "volume_unit": "flops"}), notes


def _own_block_copies(data, actions, copies, rate: float) -> list[str]:
    """Add each collective's copy of the rank's own block (:mod:`minitrace.copies`) as work
    to the compute action after it (every MPI action of a recorded trace has one); returns
    the note saying so."""
    import numpy as np           # (``np`` is also replay()'s rank count)

    from .copies import own_block_bytes
    hot, cold, cold_from = copies
    nbytes = own_block_bytes(data)
    rows = np.flatnonzero(nbytes)
    if not len(rows):
        return []
    seconds = nbytes[rows] / np.where(nbytes[rows] > cold_from, cold, hot)
    after = rows + 1
    last = data.rank_offsets[data.rank_of(rows) + 1]
    ok = (after < last) & (actions["kind"][np.minimum(after, len(actions) - 1)]
                           == K.code("compute"))
    np.add.at(actions["volume"], after[ok], seconds[ok] * rate)
    note = (f"{int(ok.sum())} collective calls copy the rank's own block ({int(nbytes.sum())} "
            f"B) at {hot:.4g} B/s in cache, {cold:.4g} B/s above {cold_from} B")
    if not ok.all():
        note += f"; {int((~ok).sum())} not modelled (no compute action after them)"
    return [note]


def _export(data, work: Path, notes: list[str], source: str | None,
            lossy: bool) -> tuple[list[str], list[str]]:
    """Per-rank TI files written by the SimGrid TI exporter, and its notes on what SimGrid's
    format could not say exactly."""
    from .converters.simgrid_ti import write_ti
    listfile = work / "ti" / "trace.txt"
    try:
        report = write_ti(data, listfile, layout="per-rank", lossy=lossy)
    except MinitraceError as e:   # it names our temporary file: name the user's instead
        msg = str(e)[len(e.path) + 2:] if e.path and str(e).startswith(e.path) else str(e)
        raise MinitraceError(f"cannot replay: {msg}", source) from None
    return _list_traces(str(listfile), work), notes + report.lines()


def _text_traces(path: str, work: Path) -> list[str]:
    """One file per rank from a TI trace holding every rank or from a list file."""
    if is_trace(path):
        return _split_shared(path, work)
    return _list_traces(path, work)


def _list_traces(path: str, work: Path) -> list[str]:
    """Traces named by a list file, line i for rank i (one line: a trace shared by all ranks,
    as smpirun reads it)."""
    named = list_entries(path)
    if len(named) == 1:
        return _split_shared(named[0], work)
    for rank, trace in enumerate(named):
        _check_start(first_tokens(trace), rank, trace)
    return [_ends_with_newline(trace, work, rank) for rank, trace in enumerate(named)]


def _check_start(tokens: list[str] | None, rank: int, path: str) -> None:
    """Rank ``rank``'s trace must begin with its ``init`` (SimGrid's replay crashes without)."""
    if not tokens or tokens[0] != str(rank) or tokens[1:2] != ["init"]:
        got = " ".join(tokens[:3]) if tokens else "nothing"
        raise MinitraceError(f"the trace of rank {rank} must start with '{rank} init', "
                             f"found {got!r}", path)


def _ends_with_newline(path: str, work: Path, rank: int) -> str:
    """SimGrid's trace reader drops a last line that lacks its newline: give it one."""
    with open(path, "rb") as fh:
        fh.seek(0, os.SEEK_END)
        if fh.tell() == 0:
            return path
        fh.seek(-1, os.SEEK_END)
        if fh.read(1) == b"\n":
            return path
        fh.seek(0)
        body = fh.read()
    fixed = work / f"rank{rank}.txt"
    fixed.write_bytes(body + b"\n")
    return str(fixed)


def _split_shared(path: str, work: Path) -> list[str]:
    """Split a trace holding all ranks into one file per rank (SimGrid's shared-trace mode is
    not reachable from Python, and per-rank files let each actor read only its own lines)."""
    outs: dict[int, list[str]] = {}
    for lineno, line in meaningful_lines(path):
        tok = line.split(None, 1)
        rank = rank_token(tok[0])
        if rank is None or len(tok) < 2:
            raise MinitraceError(f"line {lineno}: expected '<rank> <action> ...', got "
                                 f"{line[:60]!r}", path)
        outs.setdefault(rank, []).append(f"{rank} {tok[1]}\n")
    ranks = sorted(outs)
    if ranks != list(range(len(ranks))):
        missing = sorted(set(range(ranks[-1] + 1)) - set(ranks))
        raise MinitraceError(f"ranks must be 0..N-1; rank {missing[0]} has no action", path)
    files = []
    for r in ranks:
        _check_start(outs[r][0].split(), r, path)
        f = work / f"rank{r}.txt"
        f.write_text("".join(outs[r]))
        files.append(str(f))
    return files


def _run_child(cmd: list[str], timeout: float, total: int = 0) -> dict:
    """Run the replay child; with ``total`` actions, show its progress lines as a bar."""
    try:
        p = _progress_child(cmd, timeout, total) if total else \
            subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, errors="replace")
    except subprocess.TimeoutExpired:
        raise MinitraceError(f"the SimGrid replay did not finish within {timeout:g} s of wall "
                             f"time (raise the timeout for a long trace)") from None
    log = [ln for ln in p.stderr.splitlines() if ln.strip()]
    result = None
    for line in p.stdout.splitlines():
        if line.startswith(_RESULT_TAG):
            result = json.loads(line[len(_RESULT_TAG):])
    if result is not None and "error" in result:
        why = f"; SimGrid: {_last_message(log)}" if result.get("why") else ""
        raise MinitraceError(result["error"] + why, result.get("path"))
    if p.returncode != 0 or result is None:
        raise MinitraceError(f"SimGrid failed (exit status {p.returncode}): "
                             f"{_last_message(log)}")
    result["log_tail"] = log[-_LOG_TAIL:]
    return result


def _progress_child(cmd: list[str], timeout: float, total: int) -> subprocess.CompletedProcess:
    """The child run with a progress bar of replayed actions and simulated time, fed by its
    ``MINITRACE-PROGRESS <actions> <clock>`` lines (which are kept out of its log)."""
    import threading

    from tqdm import tqdm
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            errors="replace")
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    err: list[str] = []
    deadline = time.monotonic() + timeout
    with tqdm(total=total, unit=" actions", unit_scale=True, desc="replay", leave=False) as bar:
        for line in proc.stderr:
            if line.startswith("MINITRACE-PROGRESS "):
                done, clock = line.split()[1:3]
                bar.update(int(done) - bar.n)
                bar.set_postfix_str(f"simulated {float(clock):.6g} s")
            else:
                err.append(line)
            if time.monotonic() > deadline:
                proc.kill()
                raise subprocess.TimeoutExpired(cmd, timeout)
    try:
        proc.wait(max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    reader.join()
    return subprocess.CompletedProcess(cmd, proc.returncode, "".join(out), "".join(err))


def _last_message(log: list[str]) -> str:
    """What SimGrid said went wrong: an uncaught exception's message (with the lines after it,
    up to its Python location), else its last error line, else its last line."""
    for i, line in enumerate(log):
        if "Uncaught exception" in line:
            tail = []
            for more in log[i + 1:]:
                if more.startswith("At:") or "CRITICAL]" in more:
                    break
                tail.append(more.strip())
            head = line.split("Uncaught exception", 1)[1].strip(" :")
            return " ".join([head, *tail])
    for line in reversed(log):
        if "Current backtrace" in line:
            continue
        if any(w in line for w in ("CRITICAL]", "ERROR]", "Error", "error:", "Assertion")):
            return line.strip()
    return log[-1].strip() if log else "no output"


# ---- the child process -------------------------------------------------------------------

def _load_simgrid():
    """Import SimGrid's Python module; the wheel leaves libsimgrid where the loader does not
    look, so load it first, globally."""
    import ctypes
    import sysconfig
    for d in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *sys.path}:
        lib = os.path.join(d or ".", "libsimgrid.so.4.1")
        if os.path.exists(lib):
            ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            break
    import simgrid
    return simgrid


def _child(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())

    def answer(payload: dict) -> int:
        print(_RESULT_TAG + json.dumps(payload), flush=True)
        return 0 if "error" not in payload else 3

    try:
        simgrid = _load_simgrid()
    except ImportError as e:
        return answer({"error": f"SimGrid (with SMPI) is not installed: {e}"})
    args = ["minitrace-replay", *_QUIET, *(f"--cfg={k}:{v}" for k, v in job["config"].items())]
    try:
        engine = simgrid.Engine(args)
    except Exception as e:  # an unknown --cfg key
        return answer({"error": f"SimGrid refused the options: {str(e).splitlines()[0]}"})
    simgrid.smpi.init()
    try:
        engine.load_platform(job["platform"])
    except Exception as e:  # SimGrid raises its own exception types for XML errors
        return answer({"error": f"cannot load platform: {e}", "path": job["platform"]})
    traces = job["traces"]
    if job["hosts"] is None:
        hosts = engine.all_hosts
        if len(hosts) < len(traces):
            return answer({"error": f"the trace has {len(traces)} ranks but the platform has "
                                    f"only {len(hosts)} hosts (give a hostfile listing a host "
                                    f"several times to share it)", "path": job["platform"]})
        hosts = hosts[:len(traces)]
    else:
        hosts = []
        for name in job["hosts"]:
            try:
                host = engine.host_by_name(name)
            except Exception:
                host = None
            if host is None:
                return answer({"error": f"host {name!r} of the hostfile is not in the platform",
                               "path": job["platform"]})
            hosts.append(host)
    ends: list[float | None] = [None] * len(traces)

    def rank_main():
        rank = int(simgrid.this_actor.get_name().rsplit("#", 1)[1])
        simgrid.smpi.replay_run(_INSTANCE, rank, 0.0, traces[rank])
        ends[rank] = simgrid.Engine.clock

    simgrid.smpi.app_instance_start(_INSTANCE, rank_main, hosts)
    t0 = time.perf_counter()
    engine.run()
    wall = time.perf_counter() - t0
    if any(e is None for e in ends):
        stuck = [r for r, e in enumerate(ends) if e is None]
        return answer({"error": f"the replay stopped at {simgrid.Engine.clock:.9g} s with "
                                f"rank(s) {stuck[:8]} unfinished", "why": True})
    answer({"clock": simgrid.Engine.clock, "rank_end_times": ends,
            "hosts": [h.name for h in hosts], "wall_time": wall})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # skip SimGrid/Python teardown of actor threads: nothing is left to save


if __name__ == "__main__":
    sys.exit(_child(sys.argv[1]))
