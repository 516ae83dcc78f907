"""Predict a trace's run time from a calibration, and check the prediction against the recording.

``predict`` replays the trace with everything a calibration file measured (SMPI options, the
platform of the machine, the compute and reduction rates): there is no knob to guess.  On the
calibrated machine itself (no ``platform``, no ``hosts``) and when the trace is timed, it also
makes the self-check: the replayed time against the recorded one (less the recorder's own
time, its CPU-clock reads, which an untraced run does not spend), total and per rank, with the
relative error and where the time went, measured and predicted.

Recorded time is counted from the last rank's return from ``MPI_Init`` (the replay starts every
rank there) to each rank's call of ``MPI_Finalize``; ``MPI_Init`` itself (and the launch before
it, which the trace does not see) is reported as its own term.  A recording is not comparable
when ranks were descheduled (a loaded or oversubscribed machine), since a replay runs every
rank on a core of its own: a rank lost more than MAX_LOST_SHARE of the recorded time to wall
time above its CPU time, between its MPI calls or inside them (``in_mpi_seconds``; older
recordings: a share of a core inside reductions): MPI libraries busy-poll while they wait, so
a rank that kept its core spends about as much CPU as wall time there, and a rank beside
co-runners loses its core there more than between calls; or more ranks ran on a node than it
has cores.

Where the time goes is split alike on both sides: compute, point-to-point calls, completions
(waiting: wait, waitall, test...), collectives and other MPI calls; measured from the recorded
durations, predicted from the replay's timeline (:mod:`minitrace.replay.timeline`, native
replayer).  The costs of MPI calls the replay executes as compute (the after-compute cost, the
posting and completion costs, the first calls' set-up, a collective's own-block copy and its
buffers' trips through memory) are counted in the part of the call they are the cost of
(``predicted_parts``; ``predicted`` is the replay's timeline as it is), and the recorder's own
time is taken out of the measured part it fell in (:func:`_recorder_parts`): the recording's
compute is what the replay executes as compute (issue 35: before, NPB IS's compute was
predicted 6% above the measured, its collectives 5x below, stencil27's p2p 4x below).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .. import kinds as K
from ..collectives import library_of
from . import after_compute, call_costs, character, first_calls as first_calls_, \
    under_load
from .calibration import Calibration, load, node_share
from .first_calls import with_first_calls
from ..model import TraceColumns
from ..rawlayout import CPU_READ_GATE_NS
from ..replay import invalid_flag
from ..replay.run_to_run import bounds
from ..errors import MinitraceError
from ..provenance import mpi_version

#: Above this share of the recorded time lost by a rank to descheduling (wall time above CPU
#: time, between its MPI calls or inside them), a recording is not comparable with a replay.
#: Idle recordings of 11 programs lost at most 3.4% (inside calls: blocking waits, cache
#: misses) and were predicted within a few percent; disturbed ones 8-43% (errors -11..-40%).
MAX_LOST_SHARE = 0.05
#: Recordings without the in-call times (before raw format 5): below this share of a core
#: inside reductions, not comparable.
MIN_CORE_SHARE = 0.8
PARTS = ("compute", "p2p", "waiting", "collectives")
#: minitrace.replay.timeline's category of each part
_CATEGORY = {"compute": "compute", "p2p": "point-to-point", "waiting": "waiting",
             "collectives": "collectives"}
#: the part of each kind of MPI call (other calls: "other_mpi")
_PART_KINDS = {"collectives": K.ALL_COLLECTIVES | K.ALL_NEIGHBOR_COLLECTIVES,
               "p2p": K.SENDS | K.RECVS | K.SENDRECVS | K.STARTS, "waiting": K.COMPLETIONS}
#: the recorder reads the thread CPU clock at a call's entry after a gap, and at its exit after
#: a call, longer than this (the shim's MT_GATE_NS, generated from rawlayout)
RECORDER_GATE = CPU_READ_GATE_NS * 1e-9


@dataclass
class Prediction:
    """A prediction, and its check against the recording when there is one."""

    trace: str
    calibration: str
    platform: str
    nranks: int
    predicted_time: float                 # s, when the last rank finished (replay)
    rank_end_times: list[float]           # s, per rank (replay)
    predicted: dict | None                # part -> seconds per rank (None: python engine):
    #                                       the replay's timeline as it is
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # the replay's notes
    invalid: str = ""                     # what validate found wrong with the trace, if anything
    recorded_time: float | None = None    # s, from the last MPI_Init return to the last finalize
    recorded_rank_end_times: list[float] | None = None
    error: float | None = None            # (predicted - recorded) / recorded, the recorded
    #                                        times less the recorder's own time when known
    recorder_time: list[float] | None = None  # s, per rank: the recorder's CPU-clock reads
    error_as_recorded: float | None = None    # the error against the recording as it is
    rank_errors: list[float] | None = None
    measured: dict | None = None          # part -> seconds per rank, + compute_cpu, descheduled
    init_time: list[float] | None = None  # s, per rank in MPI_Init
    finalize_time: list[float] | None = None
    core_share: list[float] | None = None  # CPU / wall of each rank's compute
    in_call_share: list[float] | None = None  # CPU / wall inside each rank's MPI calls
    comparable: bool | None = None
    descheduled_share: float | None = None   # the last rank's wall time between MPI calls
    #                                          above its CPU time, over the recorded time
    lost_between: list[float] | None = None  # per rank: compute wall above CPU time, over
    #                                          the recorded time (descheduled between calls)
    lost_inside: list[float] | None = None   # the same inside its MPI calls (in_mpi_seconds)
    error_without_lost: float | None = None  # the error with the ranks' lost time (between
    #                                          and inside calls, summed over the ranks) out of
    #                                          the recorded time and the background out of the
    #                                          prediction: the replay's own miss (_self_check)
    last_rank: int | None = None          # the rank whose end is the recorded time
    in_call_measure: str | None = None    # what in_call_share is over: "MPI calls" (the
    #                                       trace's in_mpi_seconds; a rank with < 1 ms there:
    #                                       1.0) or "reductions" (older recordings)
    timeline: str | None = None
    translated: str | None = None         # "from A to B" when compute was translated
    interval: list[float] | None = None   # s, the translation's interval (probe: 95%; kernel
    #                                       set: its range of ratios)
    translation: dict | None = None       # the rule for compute no probe measured, its share
    #                                       of the compute and its kernel mix (flagged)
    measured_time: float | None = None    # s, a run measured on the target (``measured``)
    after_compute: list[float] | None = None  # s per rank added to computes that an MPI call
    #                                           follows (the calibration's after-compute cost)
    after_compute_range: list[float] | None = None  # s, the prediction with the register-only
    #                                           and the memory-streaming kernel's cost alone
    after_compute_mix: dict | None = None   # kernel -> weight of the after-compute cost fitted
    #                                         on the recording (character.fit; None: the mean)
    background: float | None = None       # share the compute was stretched by: the calibrated
    #                                       machine's background (same machine only)
    recorded_background: float | None = None  # the same share in the recording: each rank's
    #                                       compute wall time above its CPU time over that wall
    #                                       time, summed over a node's ranks (mean over nodes)
    background_runs: int | None = None    # calibration runs the background is the median of
    first_calls: list[float] | None = None  # s per rank added before its first call of each
    #                                         kind: the trace's set-up costs (same machine)
    call_costs: list[float] | None = None   # s per rank added for posting receives and
    #                                         completing requests (the calibration's)
    predicted_parts: dict | None = None   # part (and other_mpi) -> s per rank: ``predicted``
    #                                       with the calls' modelled costs (replayed as compute)
    #                                       in the calls' parts: what compares with ``measured``
    modelled_calls: dict | None = None    # part -> s per rank of those costs (first calls,
    #                                       after-compute, posting and completion costs, own
    #                                       blocks and buffers in memory)

    def to_dict(self) -> dict:
        return asdict(self)


def predict(trace: str, calibration: str | Calibration, *, platform: str | None = None,
            hostfile: str | None = None, hosts: int | None = None,
            ranks_per_host: int | None = None, timeline: str | None = None,
            timeout: float = 600.0, engine: str = "auto", lossy: bool = False,
            collectives: str = "auto", recorded_on: str | Calibration | None = None,
            probe: str | None = None, measured: float | None = None,
            ranges: bool = True) -> Prediction:
    """Replay ``trace`` (a minitrace file) with ``calibration`` (a file or a loaded one).

    ``platform``/``hostfile``: another machine's SimGrid platform (the calibrated SMPI options
    still apply); ``hosts``/``ranks_per_host``: a generated cluster of the calibrated machine's
    hosts (default: as many as the trace needs, ranks per host as calibrated).  ``timeline``:
    a PNG of the recorded and replayed time per rank (self-check only).  ``collectives``: whose
    collective algorithms (default: the MPI library that ran the program).

    A calibration of a machine the trace was not recorded on needs ``recorded_on``, the
    recording machine's calibration, to translate the compute (:mod:`.translate`; ``probe``: a
    short run of the program on the calibrated machine, for per-call-site ratios); then no
    self-check is made against the recording, and ``measured`` (seconds, a run on the target)
    is what the prediction is compared with.  ``ranges``: replay twice more for the range of the
    after-compute cost (each of its kernels alone) and twice more for a translation's interval
    (its low and high ratios); False saves those replays of a large trace."""
    from ..replay import replay
    from ..replay.api import checked, invalid_note
    from ..replay.replayer_build import binary
    from ..trace import open as open_trace
    cal = calibration if isinstance(calibration, Calibration) else load(calibration)
    if isinstance(recorded_on, str):
        recorded_on = load(recorded_on)
    with open_trace(trace) as t:
        data = t.data()
    invalid = checked(data, True)
    warnings = ([invalid_note(invalid)] if invalid else []) + _range_warnings(data, cal) + (
        _library_warnings(data, cal) if recorded_on is None else []) + load_flags(
        cal, recorded_on)
    raw = data
    data, translation, where = translated(data, cal, recorded_on, probe, trace)
    recorded = data
    terms = with_modelled_terms(data, cal, translation)
    data, plain, background, first, mix, after, posted = (
        terms.data, terms.plain, terms.background, terms.first, terms.mix, terms.after,
        terms.posted)
    weights = mix.weights
    own = platform is None and hosts is None and translation is None
    notes = [] if translation is None else list(translation.notes)
    timed = engine == "native" or (engine == "auto" and binary() is not None)
    if engine == "auto" and not timed:
        notes.append("the native replayer is not built: replayed by SimGrid's Python bindings, "
                     "without the predicted breakdown (python -m minitrace.replay.replayer_build "
                     "build --include DIR builds it; README, 'install into another "
                     "environment')" + (", and without the timeline figure" if timeline
                                        else ""))
    options = replay_options(data, cal, trace, platform=platform, hostfile=hostfile, hosts=hosts,
                             ranks_per_host=ranks_per_host, timeout=timeout, engine=engine,
                             lossy=lossy, collectives=collectives)
    res = replay(data, timeline=timed, **options)
    predicted = spans = None
    if timed:
        table = res.breakdown()
        predicted = {p: table[c].tolist() for p, c in _CATEGORY.items()}
        spans = res.timeline
        modelled = modelled_calls(recorded, cal, translation, weights) \
            if data.meta.get("volume_unit", "flops") == "seconds" else None
    out = Prediction(trace=trace, calibration=cal.path, platform=res.platform,
                     nranks=res.nranks, predicted_time=res.simulated_time,
                     rank_end_times=res.rank_end_times, predicted=predicted,
                     warnings=warnings, notes=notes + res.notes, invalid=invalid)
    out.translated = where
    out.background = background
    if predicted is not None and modelled is not None:
        out.modelled_calls = {k: v.tolist() for k, v in modelled.items()}
        parts = {k: np.asarray(v) for k, v in predicted.items()}
        parts["other_mpi"] = table["other"].to_numpy()
        for k, v in modelled.items():
            parts[k] = parts[k] + v
        parts["compute"] = np.maximum(parts["compute"] - sum(modelled.values()), 0.0)
        out.predicted_parts = {k: v.tolist() for k, v in parts.items()}
    if background is not None:
        out.background_runs = cal.runs
    if translation is None and first.any():
        out.first_calls = first.tolist()
    if posted is not None:
        out.call_costs = posted.tolist()
    if after is not None:
        out.after_compute = after.tolist()
        out.after_compute_mix = weights
        out.notes.append(f"after-compute cost: {mix.summary()}")
        out.after_compute_range = [
            replay(with_call_costs(plain, cal, k)[0], **options).simulated_time
            for k in after_compute.KERNELS] if ranges else None
    if translation is not None:
        out.translation = translation.summary()
        if not ranges:
            out.notes.append("the translation's interval not replayed (--no-range)")
        elif not np.array_equal(translation.low, translation.high):
            out.interval = sorted(replay(with_call_costs(translation.apply(raw, b), cal)[0],
                                         **options).simulated_time for b in ("low", "high"))
    if measured is not None:
        out.measured_time = float(measured)
        out.error = (out.predicted_time - out.measured_time) / out.measured_time
    elif own and _timed(data):
        _self_check(out, recorded, cal, timeline, spans)
    elif own:
        out.warnings.append("the trace has no timestamps: no self-check")
    return out


def translated(data, cal: Calibration, recorded_on, probe: str | None, source: str):
    """(the trace with its compute in the calibrated machine's seconds, the translation or
    None, "from A to B" or None).  A calibration of another machine without the recording
    machine's is refused: its answer would be the recording machine's run time."""
    from .translate import by_probe, by_rates, recording_hosts, same_machine
    src = recorded_on if isinstance(recorded_on, Calibration) or recorded_on is None \
        else load(recorded_on)
    hosts = ", ".join(recording_hosts(data)) or "?"
    if src is None:
        if same_machine(data, cal.hostname) is False:
            raise MinitraceError(
                f"recorded on {hosts}, and {cal.path} calibrates {cal.hostname}: its compute is "
                f"{hosts}'s CPU time; give the recording machine's calibration to translate it "
                f"(--recorded-on A.h5), and a short run on {cal.hostname} for per-call-site "
                f"speeds (--probe)", source)
        if probe:
            raise MinitraceError("--probe goes with --recorded-on (a calibration of the "
                                 "machine the trace was recorded on)", source)
        return data, None, None
    if same_machine(data, src.hostname) is False:
        raise MinitraceError(f"--recorded-on {src.path} calibrates {src.hostname}, but the "
                             f"trace was recorded on {hosts}", source)
    if src.hostname == cal.hostname and not probe:
        return data, None, None
    if data.meta.get("volume_unit") != "seconds":
        raise MinitraceError("only compute timed in CPU seconds can be translated to another "
                             "machine (record with --volume cputime)", source)
    where = f"from {src.hostname} to {cal.hostname}"
    if probe:
        from ..trace import open as open_trace
        with open_trace(probe) as t:
            probed = t.data()
        tr = by_probe(data, probed, src, cal, where, probe)
    else:
        tr = by_rates(data, src, cal, where)
    return tr.apply(data), tr, where


def with_background(data, cal: Calibration, translation=None):
    """(``data`` with every compute stretched by the calibration's background, the share
    stretched by; or ``data``, None).  The background is the share of a node's compute time
    that other work took while the calibrated ranks computed
    (:func:`minitrace.predict.calibration.background`): for a prediction on the calibrated
    machine.  A translated trace (``translation``, from :func:`translated`) does not take it:
    its ratios are B's wall rates already."""
    if translation is not None or not cal.background > 0:
        return data, None
    a = data.actions.copy()
    comp = a["kind"] == K.code("compute")
    a["volume"][comp] *= 1.0 + cal.background
    return replace(data, actions=a), cal.background


@dataclass
class ModelledTerms:
    """A trace as :func:`predict` replays it (``data``) and the terms added to get it."""

    data: TraceColumns            # plain, then the calls' costs
    plain: TraceColumns           # with the background and the first calls' set-up alone
    background: float | None      # the compute's stretch (:func:`with_background`)
    first: np.ndarray | None      # s per rank of the first calls' set-up (same machine)
    mix: character.Character      # the after-compute character (:func:`fitted_mix`)
    after: np.ndarray | None      # s per rank of the after-compute cost
    posted: np.ndarray | None     # s per rank of the posting and completion costs


def with_modelled_terms(data, cal: Calibration, translation=None) -> ModelledTerms:
    """``data`` (a recorded trace, translated to the calibrated machine or not) with every
    term the calibration models added, in order: the background, each kind's first-call
    set-up (on the recording's machine only), the after-compute cost at the fitted mix, the
    posting and completion costs: what plain, ``--replicas`` and ``--sample`` predictions all
    replay (the last two once lacked the first calls: BT on 4 ranks sampled -1.19% against a
    0.83% bound)."""
    plain, background = with_background(data, cal, translation)
    first = None
    if translation is None:
        plain, first = with_first_calls(plain)
    mix = fitted_mix(data, cal, translation)
    out, after, posted = with_call_costs(plain, cal, mix.weights)
    return ModelledTerms(out, plain, background, first, mix, after, posted)


def fitted_mix(data, cal: Calibration, translation=None) -> character.Character:
    """The after-compute character :func:`predict` replays (:func:`.character.fit` on a timed
    trace, on the machine it was recorded on: no ``translation``), else none, and why (the
    kernels' mean); also what its ``--replicas`` and ``--sample`` replays take."""
    if translation is not None:
        return character.Character(None, reason="the trace was recorded on another machine")
    if not _timed(data):
        return character.Character(None, reason="the trace has no timestamps")
    return character.fit(data, cal)


def with_call_costs(data, cal: Calibration, kernel: str | dict | None = None):
    """(``data`` with the calibration's after-compute call cost added to each compute that an
    MPI call follows, then its posting and completion costs (:mod:`.call_costs`); the
    seconds each added per rank, None for a calibration without it).  ``kernel``: that
    kernel's after-compute cost alone (the range), the kernels' weighted by it (``{kernel:
    weight}``: the program's character, :func:`.character.fit`), else the kernels' mean."""
    after = posted = None
    if cal.after_compute:
        data, after = after_compute.add_to_compute(data, cal.after_compute, cal.speed, kernel)
    if cal.call_costs:
        data, posted = call_costs.add_to_compute(data, cal.call_costs, cal.speed)
    return data, after, posted


def part_of(kinds: np.ndarray) -> np.ndarray:
    """The part (:data:`PARTS`, or "other_mpi") each MPI call kind of ``kinds`` counts in."""
    out = np.full(len(kinds), "other_mpi", dtype=object)
    for part, names in _PART_KINDS.items():
        out[K.mask(names)[kinds]] = part
    return out


def modelled_calls(data, cal: Calibration, translation=None,
                   kernel: str | dict | None = None) -> dict:
    """Part -> seconds per rank of the MPI calls' costs that :func:`predict` adds to ``data``
    (a trace in seconds, as recorded) as compute, each in the part of the call it is the
    cost of: each kind's first-call set-up (same machine: no ``translation``) in its part, the
    after-compute cost in the part of the first call after the compute that moves bytes (its
    part for their size in the call that moves the most: :func:`after_compute.added_seconds`),
    the posting and completion
    costs in the receive's and the completion's, a collective's own-block copy and its
    buffers' trips through memory (:func:`minitrace.replay.work.own_block_seconds`) in the
    collectives.  Summed over the parts, the seconds :func:`predict` adds (before its
    background stretch: computed on the stretched trace, as it is)."""
    from ..replay.work import own_block_seconds
    n = data.nranks
    out = {p: np.zeros(n) for p in (*PARTS[1:], "other_mpi")}
    kinds = data.actions["kind"]

    def put(rows, seconds, parts):
        for p in set(parts):
            sel = np.asarray(parts) == p
            np.add.at(out[p], data.rank_of(np.asarray(rows)[sel]), np.asarray(seconds)[sel])
    plain, _ = with_background(data, cal, translation)
    if translation is None:
        places = first_calls_.placed(plain)
        if places:
            rows, k, c = (np.array(x) for x in zip(*places))
            put(rows, c, part_of(k))
        plain, _ = with_first_calls(plain)
    if cal.after_compute:
        rows, added, (calls, largest), sized = after_compute.added_seconds(
            plain, cal.after_compute, 1.0, kernel)
        put(rows, added - sized, part_of(kinds[calls]))
        put(rows, sized, part_of(kinds[largest]))
    if cal.call_costs:
        cost = call_costs.per_call(plain, cal.call_costs)
        has = np.bincount(data.rank_of(np.flatnonzero(kinds == K.code("compute"))),
                          minlength=n) > 0                   # (none added without a compute)
        rows = np.flatnonzero((cost > 0) & has[data.rank_of(np.arange(len(kinds)))])
        put(rows, cost[rows], part_of(kinds[rows]))
    copies = cal.copies()
    if copies is not None:
        rows, seconds, _, _, ok = own_block_seconds(data, copies)
        put(rows[ok], seconds[ok], part_of(kinds[rows[ok]]))
    return out


def replay_options(data, cal: Calibration, source: str | None = None, *,
                   platform: str | None = None, hostfile: str | None = None,
                   hosts: int | None = None, ranks_per_host: int | None = None,
                   timeout: float = 600.0, engine: str = "auto", lossy: bool = False,
                   collectives: str = "auto") -> dict:
    """The keyword arguments of :func:`minitrace.replay.replay` that replay ``data`` as the
    calibration says (also what sampled and replicated predictions pass to every replay);
    ``collectives``: whose collective algorithms (:mod:`minitrace.collectives`); ``auto``: the
    MPI that ran the program, else the calibrated job's (the machine's MPI)."""
    unit = data.meta.get("volume_unit", "flops")
    if unit == "instructions":
        raise MinitraceError("the trace's compute is in instructions and a calibration "
                             "measures seconds: record it with --volume cputime", source)
    seconds = unit == "seconds"
    return dict(platform=platform, hostfile=hostfile,
                cluster=None if platform else cal.cluster(hosts, ranks_per_host),
                config=dict(cal.config), compute_rate=cal.compute_rate if seconds else None,
                reduction_rate=cal.reduction_rate if seconds else None,
                copy_rates=cal.copies() if seconds else None, lossy=lossy, timeout=timeout,
                engine=engine, collectives=collectives if collectives != "auto" else
                library_of(data.meta) or library_of({"mpi_library": cal.mpi_library}) or "auto")


def load_flags(*cals: Calibration | None) -> list[str]:
    """The flag of each calibration a prediction uses that was measured under load
    (:func:`.under_load.flag`): its rates are a slower machine's."""
    return [f for c in cals if c is not None and (f := under_load.flag(c))]


def _range_warnings(data, cal: Calibration) -> list[str]:
    """Messages larger than the calibration measured are extrapolated: point-to-point ones,
    and the blocks a collective exchanges with each peer (its own block's size; NPB FT's
    all-to-all of 32 MiB blocks against a calibration up to 16 MiB, issue 35)."""
    from ..replay.work import block_bytes
    a = data.actions
    p2p = K.mask(K.SENDS | K.RECVS | K.SENDRECVS | K.SEND_INITS | K.RECV_INITS)[a["kind"]]
    sizes = np.maximum(a["bytes_sent"][p2p], a["bytes_recv"][p2p])
    sizes = sizes[sizes > 0]
    lo, hi = cal.size_range
    out = []
    if len(sizes) and sizes.max() > hi:
        n = int((sizes > hi).sum())
        out.append(f"{n} point-to-point message(s) up to {int(sizes.max())} B exceed the "
                   f"calibrated range ({lo}..{hi} B): their time is extrapolated")
    blocks = block_bytes(data)
    if blocks.max(initial=0) > hi:
        n = int((blocks > hi).sum())
        out.append(f"{n} collective call(s) exchange blocks of up to {int(blocks.max())} B "
                   f"with each peer, beyond the calibrated range ({lo}..{hi} B): their time "
                   f"is extrapolated (calibrate --max-size measures larger messages)")
    return out


def _library_warnings(data, cal: Calibration) -> list[str]:
    """A program that ran on another MPI library than the calibrated job: the calls' costs
    replayed are the calibrated library's (Debian's MPICH 4.0.2 answers a small message in
    0.4 us, the mpich wheel's 5.0.2 in 1.1 us, on the same machine)."""
    ran, measured = mpi_version(data.meta.get("mpi_library", "")), mpi_version(cal.mpi_library)
    if not ran or not measured or ran == measured:
        return []
    from ..shims import program_of
    command = str(data.meta.get("command_line", ""))
    program = (program_of(command.split()) if command else None) or "PROGRAM"
    return [f"the program ran on {ran}, the calibration measured {measured}: the calls' costs "
            f"are the calibrated library's (minitrace calibrate --libmpi {program} measures "
            f"the program's)"]


def _timed(data) -> bool:
    return bool(len(data.actions)) and bool(np.isfinite(data.actions["t_start"]).all())


def _self_check(out: Prediction, data, cal: Calibration, timeline: str | None, spans) -> None:
    """Recorded against replayed, per rank and in total, and whether they are comparable."""
    a = data.actions
    n = data.nranks
    init, fin = K.code("init"), K.code("finalize")
    init_end, fin_start, _ = bounds(data)   # (a rank without the record: its first/last action)
    init_time, fin_time = np.zeros(n), np.zeros(n)
    measured = {p: np.zeros(n) for p in (*PARTS, "other_mpi", "compute_cpu", "descheduled")}
    coll, p2p, waiting = (K.mask(_PART_KINDS[k]) for k in ("collectives", "p2p", "waiting"))
    non_mpi = K.mask(K.NON_MPI)
    reductions = K.mask(K.REDUCTIONS)
    in_call = np.ones(n)
    in_mpi = data.meta.get("in_mpi_seconds")
    in_mpi = in_mpi if in_mpi is not None and len(in_mpi) == n else None
    for r in range(n):
        ra = a[data.rank_slice(r)]
        kind, dur = ra["kind"], ra["t_end"] - ra["t_start"]
        i = np.nonzero(kind == init)[0]
        f = np.nonzero(kind == fin)[0]
        init_time[r] = dur[i[0]] if len(i) else 0.0
        fin_time[r] = dur[f[-1]] if len(f) else 0.0
        if not len(i):
            init_end[r] = ra["t_start"][0]
        if not len(f):
            fin_start[r] = ra["t_end"][-1]
        comp = kind == K.code("compute")
        measured["compute"][r] = dur[comp].sum()
        measured["compute_cpu"][r] = ra["volume"][comp].sum()
        if in_mpi is not None:
            in_call[r] = in_mpi[r][0] / in_mpi[r][1] if in_mpi[r][1] > 1e-3 else 1.0
        else:
            red = reductions[kind]
            in_call[r] = (ra["volume"][red].sum() / dur[red].sum() if dur[red].sum() > 1e-3
                          else 1.0)
        measured["collectives"][r] = dur[coll[kind]].sum()
        measured["p2p"][r] = dur[p2p[kind]].sum()
        measured["waiting"][r] = dur[waiting[kind]].sum()
        other = ~(coll | p2p | waiting | non_mpi)[kind] & (kind != init) & (kind != fin)
        measured["other_mpi"][r] = dur[other].sum()
    own = data.meta.get("recorder_seconds")
    own = np.asarray(own, float) if own is not None and len(own) == n else None
    if own is not None:                  # (the recorder's clock reads are in these parts)
        for part, seconds in _recorder_parts(data, own).items():
            measured[part] = np.maximum(measured[part] - seconds, 0.0)
    measured["descheduled"] = np.maximum(measured["compute"] - measured["compute_cpu"], 0.0)
    origin = float(init_end.max())
    ends = fin_start - origin
    out.recorded_rank_end_times = ends.tolist()
    out.recorded_time = float(ends.max())
    if not out.recorded_time > 0 or not (ends > 0).all():     # (damaged times: all zero)
        raise MinitraceError("the recorded times put no time between init and finalize on "
                             "some rank: nothing to check the prediction against",
                             str(out.trace))
    out.error_as_recorded = (out.predicted_time - out.recorded_time) / out.recorded_time
    # the recorder's own time (its clock reads, measured by the shim) is in the recording and
    # not in an untraced run, which is what the replay predicts: taken out of each rank's end
    last = out.last_rank = int(np.argmax(ends))        # the rank whose end is the recorded time
    if own is not None:
        out.recorder_time = [float(x) for x in own]
        ends = ends - np.asarray(out.recorder_time)
        if not (ends > 0).all():
            raise MinitraceError("the recorder's own time (recorder_seconds) is not below "
                                 "every rank's recorded time: a damaged attribute",
                                 str(out.trace))
    out.error = (out.predicted_time - ends[last]) / ends[last]
    pred = np.asarray(out.rank_end_times)
    out.rank_errors = ((pred - ends) / ends).tolist()
    out.measured = {k: v.tolist() for k, v in measured.items()}
    out.init_time, out.finalize_time = init_time.tolist(), fin_time.tolist()
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(measured["compute"] > 0, measured["compute_cpu"] / measured["compute"],
                         1.0)
    out.core_share, out.in_call_share = share.tolist(), in_call.tolist()
    out.in_call_measure = "MPI calls" if in_mpi is not None else "reductions"
    out.descheduled_share = float(measured["descheduled"][last] / out.recorded_time)
    nodes = list(data.meta.get("rank_to_node") or [])
    crowded = max((nodes.count(x) for x in set(nodes)), default=0)
    out.lost_between = (measured["descheduled"] / out.recorded_time).tolist()
    out.recorded_background = _recorded_background(measured, nodes)
    if in_mpi is not None:
        lost = np.array([max(w - c, 0.0) for c, w in in_mpi]) / out.recorded_time
        out.lost_inside = lost.tolist()
        inside_ok = bool(lost.max() <= MAX_LOST_SHARE)
    else:
        inside_ok = bool(in_call.min() >= MIN_CORE_SHARE)
    between_ok = max(out.lost_between) <= MAX_LOST_SHARE
    out.comparable = bool(between_ok and inside_ok and crowded <= cal.cores_per_host)
    if out.comparable:
        out.error_without_lost = _error_without_lost(out, ends[last],
                                                     measured["compute_cpu"][last])
    why = "the recording machine was loaded or oversubscribed (other programs, or the " \
          "application's own threads, e.g. a multithreaded BLAS in every rank), and the " \
          "replay gives every rank a core"
    if crowded > cal.cores_per_host:
        out.warnings.append(f"not comparable: {crowded} ranks ran on a node of "
                            f"{cal.cores_per_host} cores (oversubscribed)")
    if not between_ok:
        worst = int(np.argmax(out.lost_between))
        out.warnings.append(
            f"not comparable: rank {worst} got {share[worst]:.0%} of a core between MPI calls "
            f"({measured['descheduled'][worst]:.3g} s of wall time above the CPU time "
            f"measured there, {out.lost_between[worst]:.1%} of the recorded time): {why}")
    if not inside_ok:
        worst = int(np.argmax(out.lost_inside) if in_mpi is not None else np.argmin(in_call))
        lost = (f" (wall time above CPU time there: {out.lost_inside[worst]:.1%} of the "
                f"recorded time)" if in_mpi is not None else "")
        out.warnings.append(
            f"not comparable: rank {worst} got {in_call[worst]:.0%} of a core inside its "
            f"{out.in_call_measure}, where the MPI library busy-polls{lost}: {why}")
    if timeline and spans is not None:
        _timeline(out, data, origin, spans, timeline)
        out.timeline = timeline


def _recorder_parts(data, seconds: np.ndarray) -> dict:
    """Part -> seconds per rank of the recorder's own time (``seconds`` per rank, its clock
    reads: ``recorder_seconds``) in each measured part.  The recorder reads the thread CPU
    clock after taking a call's entry time when the gap before the call is longer than
    :data:`RECORDER_GATE` (the read is in the call's duration) and after taking its exit time
    when the call is (the read is in the wall time of the compute after it, when one follows:
    not CPU time, it was counted as descheduled); each rank's time is split evenly over its
    reads.  A rank's first call (MPI_Init) reads at exit only."""
    a = data.actions
    out = {p: np.zeros(data.nranks) for p in (*PARTS, "other_mpi")}
    compute, finalize = K.code("compute"), K.code("finalize")
    for r in range(data.nranks):
        ra = a[data.rank_slice(r)]
        kind = ra["kind"]
        dur = ra["t_end"] - ra["t_start"]
        at = np.flatnonzero(~K.mask(K.NON_MPI)[kind])
        gaps = np.r_[0.0, ra["t_start"][at][1:] - ra["t_end"][at][:-1]]   # (since the last call)
        entry = at[1:][gaps[1:] > RECORDER_GATE]
        leave = at[(dur[at] > RECORDER_GATE) & (at + 1 < len(ra))]
        if not len(entry) + len(leave) or not seconds[r] > 0:
            continue
        each = seconds[r] / (len(entry) + len(leave))
        # (a read at exit followed by a call, not a compute, is in no part; nor one at
        # MPI_Finalize's entry: the measured parts leave it out)
        out["compute"][r] += each * int((kind[leave + 1] == compute).sum())
        for p in part_of(kind[entry][kind[entry] != finalize]):
            out[p][r] += each
    return out


#: The calibrated and the recorded background differ "much" beyond this factor and these
#: points: three calibrations three minutes apart on an idle 2-core VM measured 0.37, 1.09 and
#: 3.40% (session 12's idle pass), the recordings between them 0.0-10% (most 0.2-2.5%)
BUSIER_FACTOR, BUSIER_POINTS = 2.0, 0.01


def _busier(calibrated: float, recorded: float) -> str:
    """A note when the machine was much busier at calibration or at recording: the replay
    stretches the compute by the calibration's state, not the recording's."""
    hi, lo = max(calibrated, recorded), min(calibrated, recorded)
    if hi - lo < BUSIER_POINTS or hi < BUSIER_FACTOR * lo:
        return ""
    when = "calibrated" if calibrated > recorded else "recorded"
    return f" (the machine was busier when {when}; the replay stretches the compute by the " \
           f"calibration's)"


def _recorded_background(measured: dict, nodes: list) -> float | None:
    """The recording's own background, as the calibration measures the machine's
    (:func:`minitrace.predict.calibration.background`): per rank, its compute's wall time
    above its CPU time over that wall time, summed over a node's ranks, the mean over the
    nodes (one node when the trace does not say); None without compute."""
    wall = measured["compute"]
    if not (wall > 0).any():
        return None
    lost = np.where(wall > 0, measured["descheduled"] / np.where(wall > 0, wall, 1.0), 0.0)
    return float(node_share(lost, nodes if len(nodes) == len(lost) else [""] * len(lost)))


def _error_without_lost(out: Prediction, recorded: float, cpu_last: float) -> float | None:
    """The self-check's error with the recording's own descheduling taken out of both sides:
    every rank's wall time above its CPU time, between its MPI calls and inside them, summed
    over the ranks, out of ``recorded`` (the last rank's recorded time less the recorder's),
    and the calibrated background's stretch of the last rank's compute (``cpu_last`` CPU
    seconds) out of the prediction.  Summed, because a code whose ranks wait for each other
    loses every rank's lost time (the background is a node's sum for the same reason); for
    ranks that seldom wait for each other it takes out too much, and so it does where ranks
    lose time at the same moments (a loaded machine): only comparable recordings get it.
    What remains is the replay's own miss, where the error itself also holds the run's noise
    (issue 35).  None when the summed lost time is half the recorded time or more (many
    ranks each losing a little): the correction then says nothing about the replay."""
    lost = (sum(out.lost_between) + sum(out.lost_inside or ())) * out.recorded_time
    stretch = (out.background or 0.0) * cpu_last
    return (out.predicted_time - stretch) / (recorded - lost) - 1.0 if lost < recorded / 2 \
        else None


def _timeline(out: Prediction, data, origin: float, spans, path: str) -> None:
    """Per rank: the recorded run above the replayed one, each action coloured by what it is
    (compute, point-to-point, waiting, collectives), on one time axis."""
    from ..analysis.plotting import plt, save
    colours = {"compute": "tab:blue", "p2p": "tab:orange", "waiting": "tab:grey",
               "collectives": "tab:red"}
    masks = {"compute": K.mask({"compute"}),
             **{part: K.mask(kinds) for part, kinds in _PART_KINDS.items()}}
    n = data.nranks
    fig, ax = plt.subplots(figsize=(11, 1.0 + 0.8 * n))
    for r in range(n):
        ra = data.actions[data.rank_slice(r)]
        t0, t1 = ra["t_start"] - origin, ra["t_end"] - origin
        mine = spans[spans["rank"] == r]
        for part, m in masks.items():
            sel = m[ra["kind"]] & (t1 > 0)
            ax.broken_barh(list(zip(t0[sel], (t1 - t0)[sel])), (2 * r + 0.55, 0.4),
                           color=colours[part], lw=0)
            sel = (mine["category"] == _CATEGORY[part]).to_numpy()
            ax.broken_barh(list(zip(mine["start"].to_numpy()[sel],
                                    mine["duration"].to_numpy()[sel])), (2 * r + 0.05, 0.4),
                           color=colours[part], lw=0)
    ax.set_yticks([2 * r + y for r in range(n) for y in (0.25, 0.75)])
    ax.set_yticklabels([f"rank {r} {w}" for r in range(n) for w in ("replayed", "recorded")])
    ax.set_xlabel("seconds after the last rank left MPI_Init")
    for part, c in colours.items():
        ax.plot([], [], color=c, lw=6, label=part)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_title(f"recorded {out.recorded_time:.4g} s, predicted {out.predicted_time:.4g} s "
                 f"({out.error:+.1%})")
    fig.tight_layout()
    save(fig, path)


def report(p: Prediction) -> str:
    """The prediction as text."""
    span = (f" (interval {p.interval[0]:.6g}-{p.interval[1]:.6g} s, the translation's)"
            if p.interval else "")
    lines = [f"predicted run time: {p.predicted_time:.6g} s{span}  ({p.trace}, {p.nranks} "
             f"ranks, calibration {p.calibration}{invalid_flag(p.invalid)})",
             f"  platform: {p.platform}",
             "  rank end times (s): " + " ".join(f"{t:.6g}" for t in p.rank_end_times)]
    if p.translated:
        lines.append(f"  compute translated {p.translated}: no self-check against the "
                     f"recording (another machine's run)")
        t = p.translation or {}
        if t.get("fallback_share"):
            mix = ", ".join(f"{k} {w:.0%}" for k, w in t["mix"].items())
            lines.append(f"  FLAGGED: {t['fallback_share']:.0%} of the compute translated by "
                         f"the {t['fallback']}" + (f" ({mix})" if mix else "")
                         + ", not measured by a probe")
    if p.measured_time is not None:
        lines.append(f"  measured {p.measured_time:.6g} s, predicted {p.predicted_time:.6g} s, "
                     f"error {p.error:+.2%}")
    if p.recorded_time is not None:
        own = ""
        if p.recorder_time is not None:
            own = (f" less the recorder's own {p.recorder_time[p.last_rank]:.3g} s (its clock "
                   f"reads, not in an untraced run; {p.error_as_recorded:+.2%} against the "
                   f"recording as it is)")
        lines.append(f"  self-check: recorded {p.recorded_time:.6g} s{own}, predicted "
                     f"{p.predicted_time:.6g} s, error {p.error:+.2%}"
                     + ("" if p.comparable else "  (NOT COMPARABLE, see warning)"))
        ends = np.asarray(p.recorded_rank_end_times) - np.asarray(p.recorder_time or 0.0)
        lines.append("  per rank" + (" (recorded less the recorder's own time)" if own else "")
                     + ": " + "  ".join(f"{r}: {m:.4g} vs {q:.4g} ({e:+.1%})" for r, (m, q, e)
                                        in enumerate(zip(ends, p.rank_end_times,
                                                         p.rank_errors))))
        lines.append("  MPI_Init (not replayed; launch before it not recorded): "
                     + " ".join(f"{t:.3g}" for t in p.init_time) + " s; MPI_Finalize: "
                     + " ".join(f"{t:.3g}" for t in p.finalize_time) + " s")
        lines.append("  where the time goes, mean over ranks (s)    measured   predicted"
                     + (" (the recorder's own time out of the measured; the calls' costs "
                        "replayed as compute in their calls)" if p.predicted_parts else ""))
        m, q = p.measured, p.predicted_parts or p.predicted or {}
        for part, label in (("compute", "compute"), ("p2p", "point-to-point calls"),
                            ("waiting", "completions (wait, waitall, test...)"),
                            ("collectives", "collectives"), ("other_mpi", "other MPI calls")):
            pred = f"{np.mean(q[part]):>9.4g}" if part in q else f"{'-':>9}"
            lines.append(f"    {label:<40} {np.mean(m[part]):>9.4g}  {pred}")
        lines.append(f"    {'compute CPU time (what is replayed)':<40} "
                     f"{np.mean(m['compute_cpu']):>9.4g}")
        lines.append("  core share between MPI calls: " + " ".join(f"{s:.2f}"
                                                                for s in p.core_share)
                     + f"; inside {p.in_call_measure}: "
                     + " ".join(f"{s:.2f}" for s in p.in_call_share))
        if min(p.in_call_share) < 0.98 and p.lost_inside is not None:
            lost = p.lost_inside[p.last_rank]
            lines.append(f"  the last rank's wall time inside MPI calls above its CPU time "
                         f"(busy-polling MPI: descheduled; not replayed) is {lost:.2%} of the "
                         f"recorded time: at most {-lost:+.2%} of the {p.error:+.2%} error")
        if min(p.core_share) < 0.98 and p.descheduled_share is not None:
            added = (p.background or 0.0) * p.measured["compute_cpu"][p.last_rank] \
                / p.recorded_time
            lines.append(f"  the last rank's wall time between MPI calls above its CPU time "
                         f"is {p.descheduled_share:.2%} of the recorded time, the calibrated "
                         f"background replayed {added:.2%}: about "
                         f"{added - p.descheduled_share:+.2%} of the {p.error:+.2%} error")
        if p.error_without_lost is not None:
            lost = sum(p.lost_between) + sum(p.lost_inside or ())
            lines.append(f"  the ranks' wall time above their CPU time, between and inside MPI "
                         f"calls, summed over the ranks (what ranks that wait for each other "
                         f"lose): {lost:.2%} of the recorded time; without it and without the "
                         f"background: error {p.error_without_lost:+.2%} (the replay's own "
                         f"miss; too high a correction for ranks that seldom wait)")
    elif p.predicted:
        q = p.predicted
        lines.append("  where the time goes, mean over ranks (s): " + ", ".join(
            f"{k} {np.mean(q[k]):.4g}" for k in PARTS))
    if p.background is not None:
        runs = f"the median of {p.background_runs} calibration runs" \
            if (p.background_runs or 1) > 1 else \
            "one calibration run: that minute's state; calibrate again into the same file " \
            "for the median of several"
        lines.append(f"  compute stretched by {p.background:.2%}: the calibrated machine's "
                     f"background (wall time other work took from its computing ranks, summed "
                     f"over a node's ranks; {runs})")
        rec = p.recorded_background
        if rec is not None:
            lines.append(f"  the recording's own background, measured the same way: {rec:.2%}"
                         + _busier(p.background, rec))
    if p.first_calls is not None:
        lines.append(f"  first calls: up to {max(p.first_calls):.3g} s added to a rank (the "
                     f"set-up the recording shows in each kind's first call; per rank in "
                     f"--json)")
    if p.call_costs is not None:
        lines.append(f"  posting receives and completing requests: up to "
                     f"{max(p.call_costs):.3g} s added to a rank (the calibration's costs of "
                     f"calls SMPI gives no time; per rank in --json)")
    if p.after_compute is not None:
        alone = "not replayed (--no-range)" if p.after_compute_range is None else \
            "{:.6g} / {:.6g} s".format(*p.after_compute_range)
        lines.append(f"  MPI calls after a compute: up to {max(p.after_compute):.3g} s added "
                     f"to a rank (the calibration's after-compute cost, "
                     + ("the mean of its kernels" if p.after_compute_mix is None else " + ".join(
                         f"{w:.0%} {k}" for k, w in p.after_compute_mix.items())) + "; "
                     f"predicted with the register-only / memory-streaming one alone: "
                     f"{alone}; per rank in --json)")
    if p.timeline:
        lines.append(f"  timeline: {p.timeline}")
    lines += [f"  warning: {w}" for w in p.warnings]
    lines += [f"  note: {n}" for n in p.notes]
    return "\n".join(lines)
