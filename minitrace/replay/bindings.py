"""The replay child through SimGrid's Python bindings (``python -m minitrace.replay.bindings
JOB``), used when the compiled replayer is not built: SimGrid's engine is a process-wide singleton
that may abort() on bad input, so it never runs in the caller's process."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from .child import QUIET, RESULT_TAG
from .libsimgrid import load_simgrid

_INSTANCE = "minitrace"


def _child(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())

    def answer(payload: dict) -> int:
        print(RESULT_TAG + json.dumps(payload), flush=True)
        return 0 if "error" not in payload else 3

    try:
        simgrid = load_simgrid()
    except ImportError as e:
        return answer({"error": f"SimGrid (with SMPI) is not installed: {e}"})
    args = ["minitrace-replay", *QUIET, *(f"--cfg={k}:{v}" for k, v in job["config"].items())]
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
