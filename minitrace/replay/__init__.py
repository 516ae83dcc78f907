"""Predict a run time by replaying a time-independent trace on a SimGrid platform (SMPI replay).

SimGrid's engine is a process-wide singleton that may abort() on bad input, so every replay
runs in a child process that loads the platform, starts one SMPI replay actor per rank on its
host and prints the engine clock as one JSON line.  The child is the compiled replayer of
:mod:`minitrace.replay.replayer_build` when set-up built it (SimGrid's fast contexts, native speed), else
``python -m minitrace.replay.bindings JOB`` through SimGrid's Python bindings (thread contexts, ~6x
slower); both run the same SimGrid code and give the same simulated times.  The
parent prepares the inputs (one trace file per rank, platform, host of each rank), enforces a
timeout and turns any failure into a one-line :class:`MinitraceError`.

Inputs: a minitrace HDF5 file, a ``TraceColumns`` or ``Trace`` (exported with the SimGrid TI
converter), a SimGrid TI trace file holding every rank (``<rank> <action> ...`` lines), or a
list file naming one TI trace per rank (smpirun ``-replay`` convention).
"""
from .api import DEFAULT_CONFIG, ENGINES, ReplayResult, invalid_flag, replay

__all__ = ["DEFAULT_CONFIG", "ENGINES", "ReplayResult", "invalid_flag", "replay"]
