"""The replay API and its result: prepare one TI trace per rank, a platform and the hosts, run
the child (:mod:`.child`) and return what SimGrid predicted."""
from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np

from .. import kinds as K
from ..collectives import resolve, world_plan
from ..errors import MinitraceError, naming
from .child import (QUIET, count_lines, run_child, show_progress, write_native_job)
from .platforms import Cluster, parse_quantity, read_hostfile
from .ti_split import list_traces, seconds_as_flops, text_traces
from .work import in_flops

#: ``--cfg`` options set unless the caller overrides them (a value of None drops one).  Two are
#: what ``smpirun`` sets: the SMPI network model (piecewise-linear latency/bandwidth factors
#: fitted to MPI on real clusters; SimGrid's own default, LV08, is a generic TCP model) and a
#: timing precision of 1 ns (default 1e-5 s would round short messages away).  And no time
#: injected into an MPI_Test or MPI_Iprobe (SimGrid sleeps 100 us in each by default, to slow
#: a live program's polling loop): a recorded trace holds its polling loop's compute between
#: the polls, and SNAP's 16,608 tests on 2 ranks replayed 44-59% above its runs (session 15).
DEFAULT_CONFIG: dict[str, str] = {"network/model": "SMPI", "precision/timing": "1e-9",
                                  "smpi/test": "0", "smpi/iprobe": "0"}


#: Said when a replay that deadlocked with the tests that completed written as waits is run
#: again with them as tests: a test that succeeded says the message had come in the run, not
#: that the program waited for it (an isend tested, then a receive: the run's MPI sent the
#: isend's 100 KB eagerly, SimGrid's replay waits for its receive above 64 KiB: the reviewer).
TESTS_NOTE = ("the replay deadlocked with the tests that completed written as waits: replayed "
              "again with them as tests (a rank may then go on before its message comes)")
#: Said when a replay is run again with receives written as ``posted_sizes`` says.
POSTED_NOTE = ("receives of the tags whose messages straddle smpi/async-small-thresh written as "
               "large as the tag's largest message: SMPI's two mailboxes let such messages "
               "overtake each other (which MPI forbids) and gave a smaller receive a larger "
               "message (MPI_ERR_TRUNCATE); SMPI charges smpi/or of their eager messages by "
               "that size")


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
    #: see :mod:`minitrace.replay.timeline`; ``"times"``: without the messages' endpoints),
    #: else None
    timeline: object = None
    #: what ``validate`` found wrong with the trace (its summary), "" when nothing or unchecked
    invalid: str = ""

    def breakdown(self):
        """Where each rank's simulated time went (:func:`minitrace.replay.timeline.breakdown`)."""
        if self.timeline is None:
            raise MinitraceError("no timeline: replay with timeline=True (native engine)")
        from .timeline import breakdown
        return breakdown(self.timeline, self.rank_end_times)

    def critical_path(self):
        """The actions that determined the end time (:func:`minitrace.replay.timeline.critical_path`)."""
        if self.timeline is None or "src" not in self.timeline:
            raise MinitraceError("no timeline with messages: replay with timeline=True (native "
                                 "engine)")
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
           timeout: float = 600.0, engine: str = "auto", timeline: bool | str = False,
           reduction_rate: str | float | None = None,
           copy_rates: tuple | None = None,
           collectives: str = "auto", check: bool | None = None) -> ReplayResult:
    """Replay ``trace`` on SimGrid and return the predicted (simulated) run time.

    ``platform``: SimGrid XML; without it a :class:`~minitrace.replay.platforms.Cluster` is generated
    (``cluster``, or one host per rank with the defaults of :mod:`minitrace.replay.platforms`).
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
    ``copy_rates``: (B/s in cache, B/s packed to unpacked, a core's L2 in bytes[, a rank's
    share of the caches in bytes, B/s from memory]) of the recording machine's memory copies
    (:func:`minitrace.replay.work.copy_seconds`), to model the copy of a rank's own block in
    collectives and, past that share, their blocks' trips through memory
    (:func:`minitrace.replay.work.own_block_copies`), which SimGrid does not, as work after
    the call
    (traces timed in seconds; ``Calibration.copies()``); without them no copy is modelled.
    ``lossy``: replay a minitrace trace even if SimGrid's format must drop some of its actions.
    ``collectives``: whose collective algorithms (:mod:`minitrace.collectives`): ``auto`` (the
    MPI library that ran the program, else SimGrid's defaults), ``mpich``, ``ompi`` or
    ``simgrid``; world collectives get the SMPI options of the library's choice (not those
    ``config`` sets), sub-communicator ones are lowered with it.  SimGrid TI text is replayed as
    it is.
    ``engine``: ``"native"`` (the compiled replayer), ``"python"`` (SimGrid's Python bindings)
    or ``"auto"`` (native when built).
    ``timeline``: also record when each replayed action started and ended (native engine),
    with each message's endpoints (``True``) or without (``"times"``: what iteration sampling
    reads; the endpoints read every TI line again, 0.55 s of Nekbone 2r's sampled replay).
    ``check``: validate the trace first (:mod:`minitrace.validate`), and where it finds a
    problem say so in the result (``invalid``, and a note): a replay runs a trace as it is, so
    an invalid one (a message no rank receives, a receive of a message never sent) predicts a
    run the program did not make.  Default: a minitrace file's trace is checked, a trace in
    memory not (the sampled replay's windows, the replicas' copies); SimGrid TI text never.
    A replay SMPI aborts with MPI_ERR_TRUNCATE under ``smpi/async-small-thresh`` runs again with
    the receives ``converters.simgrid_ti.posted_sizes`` names written larger (a note says so).
    """
    args = dict(locals())
    if check is None:
        args["check"] = isinstance(trace, (str, os.PathLike))
    try:
        return _replay(False, **args)
    except MinitraceError as e:
        from ..converters.simgrid_ti import eager_mailboxes
        if getattr(e, "tests_as_waits", False):     # a deadlock where completed tests waited
            res = _replay(False, **args, waits=False)
            res.notes.append(TESTS_NOTE)
            return res
        if "MPI_ERR_TRUNCATE" not in str(e) or not eager_mailboxes(   # SMPI gave a small
                {**DEFAULT_CONFIG, **(config or {})}):            # receive a larger message
            raise
    res = _replay(True, **args)
    res.notes.append(POSTED_NOTE)
    return res


def invalid_note(summary: str) -> str:
    """The note of a prediction made from a trace whose validation found problems
    (``summary``: the report's)."""
    return (f"the trace is not valid ({summary}; `minitrace validate` lists them): "
            f"the replay runs it as it is, so this prediction is of a run the program did not "
            f"make")


def invalid_flag(invalid: str) -> str:
    """What the first line of a prediction adds when made from an invalid trace (``invalid``:
    the validation's summary, "" for a valid or unchecked trace)."""
    return "; from an invalid trace, see below" if invalid else ""


#: Problems of ``validate`` that leave a replay's matching and timing as the run's: a request
#: never completed (public SNAP leaves the isends of each sweep so; SimGrid's own example
#: actions_with_isend.txt one), a file never closed.
HARMLESS = frozenset({"incomplete-request", "io-not-closed"})


def checked(data, check: bool) -> str:
    """validate's summary of ``data`` (a TraceColumns) when ``check`` and it finds problems
    other than the :data:`HARMLESS` ones, else ""."""
    if not check:
        return ""
    from ..validate import validate
    report = validate(data)
    return "" if set(report.counts) <= HARMLESS else report.summary()


def _replay(posted: bool, trace, platform, hostfile, np, config, cluster, compute_rate, lossy,
            timeout, engine, timeline, reduction_rate, copy_rates,
            collectives, check, waits: bool = True) -> ReplayResult:
    """``replay``; ``posted``: receives written as ``posted_sizes`` says; ``waits``: the tests
    that completed written as waits (converters.simgrid_ti's ``TEST_AS_WAIT``)."""
    native = _engine(engine)
    resolve(collectives, {})                  # an unknown choice is refused before any work
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
        feeder, options = _feeder(trace, Path(work), rate, red, copy_rates, native, timeline,
                                  collectives, cfg, posted, waits, lossy)
        unchecked = None
        if feeder is not None:   # a compressed trace: TI lines made as the replayer reads them
            traces, notes = feeder.paths, []
            unchecked = _too_big_to_check(feeder.nactions) if check else None
            invalid = checked(_expanded(trace), True) if check and not unchecked else ""
        else:
            traces, notes, options, invalid = _rank_traces(
                trace, Path(work), rate, red, lossy, copy_rates,
                (collectives, cfg, posted, waits),
                check)
        cfg = {**options, **cfg}
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
                        if cluster.ranks_per_host > 1 else "")
                     + (f" (a SimGrid host each, sharing {cluster.node_bandwidth} of memory)"
                        if cluster.shares_memory() else ""))
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
            total = feeder.nactions if feeder is not None else count_lines(traces)
            write_native_job(job_path, os.path.abspath(platform), traces, hosts, timed,
                              progress=max(total // 200, 10_000) if show_progress(total) else 0)
            cmd = [str(native), str(job_path), *QUIET, *(f"--cfg={k}:{v}" for k, v in cfg.items())]
        else:
            job = {"platform": os.path.abspath(platform), "traces": traces, "hosts": hosts,
                   "config": cfg}
            job_path = Path(work) / "job.json"
            job_path.write_text(json.dumps(job))
            cmd = [sys.executable, "-m", "minitrace.replay.bindings", str(job_path)]
            total = 0
        threads = _threads_note(trace)
        with feeder if feeder is not None else contextlib.nullcontext(), \
                naming(trace if isinstance(trace, (str, os.PathLike)) else None):
            try:
                out = run_child(cmd, timeout, total if show_progress(total) else 0)
            except MinitraceError as e:     # say what may have made it fail
                why = [w for w in (threads if "unfinished" in str(e) else None,
                                   invalid and f"the trace is not valid ({invalid})") if w]
                err = MinitraceError("; ".join([e.message, *why]), e.path) if why else e
                # (replay() runs it again with the tests as tests)
                err.tests_as_waits = "unfinished" in str(e) and _waited_tests(notes, feeder)
                raise err from None
        if feeder is not None:
            notes = feeder.finish(lossy)
        if threads is not None:
            notes = [*notes, threads]
        if invalid:
            notes = [*notes, invalid_note(invalid)]
        if unchecked:
            notes = [*notes, unchecked]
        table = None
        if timeline:
            from .timeline import attach_messages, read_timed_log
            table = read_timed_log(timed, out["action_names"])
            if timeline != "times":
                table = attach_messages(table, traces)
    return ReplayResult(simulated_time=out["clock"], rank_end_times=out["rank_end_times"],
                        nranks=nranks, hosts=out["hosts"], platform=shown, config=cfg,
                        command=cmd, log_tail=out["log_tail"], wall_time=out["wall_time"],
                        engine="python" if native is None else "native", notes=notes,
                        timeline=table, invalid=invalid)


ENGINES = ("auto", "native", "python")


def _threads_note(trace) -> str | None:
    """What a recording whose ranks' calls overlapped in several threads
    (``mpi_overlapping_calls``, or before them ``mpi_threads``: e.g. public OSU
    osu_latency_mt) means for its replay, or None: SimGrid replays each rank's calls in one
    sequence, in the order they started, where the threads' calls overlapped, so one thread's
    wait for a message another thread's later call sends can deadlock.  Threads that took
    turns (MPI_THREAD_SERIALIZED) made a sequential program: nothing to say."""
    meta = getattr(trace, "meta", None)
    if meta is None and isinstance(trace, (str, os.PathLike)) and os.path.isfile(trace):
        with open(trace, "rb") as fh:
            if fh.read(8) != b"\x89HDF\r\n\x1a\n":
                return None
        from ..trace import open as open_trace
        with open_trace(trace) as t:
            meta = t.meta
    meta = meta or {}
    per = list(meta.get("mpi_threads") or [])
    overlaps = meta.get("mpi_overlapping_calls")
    many = [r for r, n in enumerate(per) if n > 1
            and (overlaps is None or r >= len(overlaps) or overlaps[r] > 0)]
    if not many:
        return None
    return (f"rank(s) {', '.join(map(str, many[:8]))}{' ...' if len(many) > 8 else ''} called "
            f"MPI from {max(per)} threads whose calls overlapped: the replay runs a rank's "
            f"calls in one sequence, in the order they started, so calls that overlapped in "
            f"threads (a wait in one for what another sends) are serialized, and may deadlock")


def _engine(engine: str):
    """Path of the compiled replayer to use, or None for the Python-bindings child."""
    from .replayer_build import binary
    if engine not in ENGINES:
        raise MinitraceError(f"unknown replay engine {engine!r} (choose from {', '.join(ENGINES)})")
    if engine == "python":
        return None
    native = binary()
    if native is None and engine == "native":
        raise MinitraceError("the native replayer is not built (scripts/setup.sh builds it; "
                             "python -m minitrace.replay.replayer_build --include DIR)")
    return native



def _feeder(trace, work: Path, rate, red, copies, native, timeline: bool | str,
            collectives: str, cfg: dict, posted: bool = False, waits: bool = True,
            lossy: bool = False):
    """The named pipes that feed a compressed trace to the compiled replayer range by range
    (:mod:`minitrace.replay.stream`) and the SMPI options of its world collectives, or
    (None, {}): another input, the Python engine, a timeline (its messages are read from the TI
    files) or a trace whose export needs all of it at once; a replay that is not ``lossy``
    of kinds the export drops is refused here, counted from the grammar (nothing expanded)."""
    if native is None or timeline:
        return None, {}
    c = None
    if isinstance(trace, (str, os.PathLike)) and os.path.isfile(trace):
        with open(trace, "rb") as fh:
            if fh.read(8) != b"\x89HDF\r\n\x1a\n":
                return None, {}
        from ..trace import open as open_trace
        with open_trace(trace) as t:
            c = t.compressed_form if t.has_trace else None
            meta = t.meta
    elif getattr(trace, "has_trace", False) and trace.compressed:
        c, meta = trace.compressed_form, trace.meta
    from ..converters.simgrid_ti import never_written, refuse_dropped
    from .stream import Feeder, streamable
    source = os.fspath(trace) if isinstance(trace, (str, os.PathLike)) else None
    if c is not None and not lossy:
        from ..compress.store import kind_counts
        codes, counts = kind_counts(c)
        refuse_dropped(never_written(codes, counts=counts.sum(axis=0)), source, False,
                       "cannot replay: ")
    if c is None or streamable(c) is not None:
        return None, {}
    library = resolve(collectives, meta)
    options, mixed = world_plan(c.table, len(c.comms.get(0, range(c.nranks))), library, cfg)
    if mixed:
        return None, {}
    c.meta = dict(meta)
    from .work import flops_actions
    flops_actions(_empty_like(c.meta), rate, red, source, copies)   # the rates' errors first
    feeder = Feeder(c, work, rate, red, copies, source, cfg if posted else None,
                    _tests_free(cfg, waits), library)
    return feeder, options


def _waited_tests(notes: list[str], feeder) -> bool:
    """Whether the replay's text wrote a test that completed as a wait (the export's notes,
    or the streamed text's so far)."""
    from ..converters.simgrid_ti import TEST_AS_WAIT
    lines = notes + (feeder.report.lines() if feeder is not None else [])
    return any(TEST_AS_WAIT in line for line in lines)


def _tests_free(cfg: dict, waits: bool = True) -> bool | str:
    """Whether a test takes no time in this replay (``smpi/test`` 0, :data:`DEFAULT_CONFIG`'s):
    its text may then leave out the tests that did not complete a request a wait completes
    later, on which SimGrid's replay aborts when it completes the request earlier
    (converters.simgrid_ti's ``_WAITED_TEST``), and write those that completed as waits
    (``TEST_AS_WAIT``; ``waits`` False: "tests", kept tests); with a cost, SimGrid replays
    them as given."""
    try:
        free = float(cfg.get("smpi/test", "0")) == 0
    except ValueError:
        return False
    return (True if waits else "tests") if free else False


def _empty_like(meta: dict):
    from ..model import TraceColumns, empty_actions
    return TraceColumns(empty_actions(0), [0], meta=dict(meta))


def _rank_traces(trace, work: Path, rate: float | None, red: float | None,
                 lossy: bool, copies, colls: tuple[str, dict, bool, bool], check: bool
                 ) -> tuple[list[str], list[str], dict, str]:
    """One TI trace file per rank (absolute paths), whatever form the trace came in, the
    exporter's notes on approximations, the SMPI options of the world collectives
    (``colls``: the ``collectives`` choice, the replay's own options and whether receives are
    written as ``posted_sizes`` says), and what validating the trace found (:func:`checked`)."""
    if isinstance(trace, (str, os.PathLike)):
        path = os.fspath(trace)
        if not os.path.isfile(path):
            raise MinitraceError("no such trace file", path)
        with open(path, "rb") as fh:
            magic = fh.read(8)
        if magic == b"\x89HDF\r\n\x1a\n":
            from ..trace import open as open_trace
            with open_trace(path) as t:
                data = t.data()
            _refuse_dropped(data.actions, path, lossy)
            invalid = checked(data, check)
            data, notes = in_flops(data, rate, red, path, copies)
            return (*_export_ti(data, work, notes, path, lossy, colls), invalid)
        if rate is not None or red is not None or copies is not None:
            raise MinitraceError("a SimGrid TI trace is in flops already: no compute, "
                                 "reduction or copy rate applies", path)
        files = text_traces(path, work)
        return files, seconds_as_flops(files), {}, ""
    data = trace.data() if hasattr(trace, "data") and callable(trace.data) else trace
    if not hasattr(data, "rank_offsets"):
        raise MinitraceError(f"cannot replay a {type(trace).__name__}: give a path, a Trace or "
                             f"a TraceColumns")
    _refuse_dropped(data.actions, None, lossy)
    invalid = checked(data, check)
    data, notes = in_flops(data, rate, red, None, copies)
    return (*_export_ti(data, work, notes, None, lossy, colls), invalid)


def _refuse_dropped(actions: np.ndarray, source: str | None, lossy: bool) -> None:
    """Refuse, before validating or exporting, a replay that is not lossy of a trace (or of
    the distinct actions of a compressed one) with kinds SimGrid's format has no line for."""
    from ..converters.simgrid_ti import never_written, refuse_dropped
    refuse_dropped(never_written(actions["kind"], actions["flags"]), source, lossy,
                   "cannot replay: ")


def _too_big_to_check(nactions: int) -> str | None:
    """Why a compressed trace replayed streamed is not validated first, or None: expanded for
    ``validate`` (~200-340 bytes an action) it could take more than half the memory this
    machine has free, where the streamed replay holds a few ranges per rank (a 4 M-action
    trace: 968 MB checked, 145 MB not)."""
    from ..merge import BYTES_PER_ACTION, available_memory
    free = available_memory()
    if free is None or nactions * BYTES_PER_ACTION[1] <= free / 2:
        return None
    return (f"the trace was not validated: expanding its {nactions:,} actions for it could take "
            f"more than half the memory free here, where the streamed replay holds a few "
            f"ranges a rank (`minitrace validate` checks it)")


def _expanded(trace):
    """The TraceColumns of a compressed trace the replayer is fed range by range (a path or
    an open Trace), expanded (to validate it)."""
    if isinstance(trace, (str, os.PathLike)):
        from ..trace import open as open_trace
        with open_trace(trace) as t:
            return t.data()
    return trace.data()


def _export_ti(data, work: Path, notes: list[str], source: str | None,
            lossy: bool, colls: tuple[str, dict, bool, bool]) -> tuple[list[str], list[str], dict]:
    """Per-rank TI files written by the SimGrid TI exporter, its notes on what SimGrid's
    format could not say exactly, and the SMPI options of the world collectives."""
    from ..converters.simgrid_ti import write_ti
    listfile = work / "ti" / "trace.txt"
    try:
        report = write_ti(data, listfile, layout="per-rank", lossy=lossy,
                          collectives=colls[0], config=colls[1], replay=colls[2],
                          free_tests=_tests_free(colls[1], colls[3]))
    except MinitraceError as e:   # it names our temporary file: name the user's instead
        raise MinitraceError(f"cannot replay: {e.message}", source) from None
    options, report.options = report.options, {}     # (applied, not advice: out of the notes)
    lost = dropped_time(data, report.dropped)
    return list_traces(str(listfile), work), notes + report.lines() + lost, options


def dropped_time(data, dropped) -> list[str]:
    """A note of the recorded time of the calls a lossy replay left out (``dropped``: kind ->
    actions, the export's), where every call of their kinds was (public IOR's MPI-IO calls:
    0.026 s of rank 0's 0.156 s, dropped without a word on it), or []: the prediction has
    none of it."""
    a = data.actions
    kinds = [k for k, n in dropped.items() if k in K.CODE
             and n == int(np.count_nonzero(a["kind"] == K.CODE[k]))]
    if not kinds or not np.isfinite(a["t_start"]).any():
        return []
    rows = np.flatnonzero(K.mask(kinds)[a["kind"]])
    took = np.nan_to_num(a["t_end"][rows] - a["t_start"][rows])
    per_rank = np.bincount(data.rank_of()[rows], weights=took, minlength=data.nranks)
    span = np.array([np.nanmax(a["t_end"][data.rank_slice(r)]) -
                     np.nanmin(a["t_start"][data.rank_slice(r)])
                     if data.rank_offsets[r + 1] > data.rank_offsets[r] else 0.0
                     for r in range(data.nranks)])
    r = int(np.argmax(per_rank))
    return [f"the calls left out ({', '.join(sorted(kinds))}) took {per_rank[r]:.3g} s of rank "
            f"{r}'s recorded {span[r]:.3g} s (the most of any rank), which the prediction does "
            f"not hold"]

