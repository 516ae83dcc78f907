"""``minitrace simulate-tasks FILE --threads N``: predict an OpenMP task program's run time."""
from __future__ import annotations

import json

from ..errors import MinitraceError
from ..options import MAX_RANKS, MAX_THREADS, choice_list, number
from ..outputs import check_disjoint, check_output_file
from . import COMMANDS


def register(sub) -> None:
    from ..tasks.simulate import MODELS, SCHEDULERS
    p = sub.add_parser(
        "simulate-tasks", help=COMMANDS["simulate-tasks"],
        description="Replay a recorded task graph (minitrace record --openmp) on N simulated "
                    "threads of a NUMA platform with a libomp-like scheduler, and print the "
                    "predicted time of its task region (first parallel region's start to the "
                    "last one's end).  Models: task (recorded task times), comm (plus each "
                    "task's data flowing between its home memory and the core), cache (plus an "
                    "LRU model of each L3).  docs/TASKS.md.")
    p.add_argument("file", help="minitrace file with a /tasks group")
    p.add_argument("--threads", type=number("--threads", 1, MAX_THREADS, integer=True),
                   required=True, metavar="N", help="threads to simulate")
    p.add_argument("--rank", type=number("--rank", 0, MAX_RANKS, integer=True), metavar="R",
                   help="the MPI rank whose task graph to simulate (an MPI+OpenMP recording "
                        "holds one per rank; required then)")
    p.add_argument("--model", default="task", metavar="M",
                   help=f"comma list of {', '.join(MODELS)}, or all (default task)")
    p.add_argument("--platform", metavar="XML",
                   help="SimGrid platform (minitrace numa-platform); default: the recording "
                        "machine's, from its lstopo XML, when it has N cores, else one NUMA "
                        "node and one L3 for N cores")
    p.add_argument("--scheduler", choices=SCHEDULERS, default="libomp",
                   help="task scheduler (default libomp: docs/TASKS.md)")
    p.add_argument("--overlap", type=number("--overlap", 0), metavar="R",
                   help="fraction r of a task's compute its data traffic overlaps, comm and "
                        "cache models, for every task (default: fitted per kernel from the "
                        "recording, docs/TASKS.md; 0 where it cannot be)")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--plot", metavar="PNG", help="per-thread timeline of the (last) model")
    p.add_argument("--perfetto", metavar="JSON",
                   help="the predicted timelines as Perfetto/Chrome trace-event JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..tasks.simulate import MODELS, simulate
    from ..tasks.taskfile import read_tasks
    from ..tasks.validate import check_graph
    models = choice_list(args.model, MODELS, "simulate-tasks", "--model", every="all")
    for path in (args.plot, args.perfetto):
        if path:
            check_output_file(path)
    check_disjoint([args.file, args.platform], [args.plot, args.perfetto])
    if args.plot:
        from ..analysis.plotting import check_plot_path
        check_plot_path(args.plot)
    graph = read_tasks(args.file, args.rank)
    check_graph(graph, args.file)
    with _platform(args) as platform:
        results = [simulate(graph, args.threads, m, platform, args.overlap, args.scheduler)
                   for m in models]
    recorded = recorded_region(graph)
    notes = list(dict.fromkeys(f"{r.model}: {n}" for r in results for n in r.notes))
    if args.json:
        print(json.dumps({**results[0].as_dict(),
                          "models": {r.model: r.predicted_time for r in results},
                          "notes": notes, "recorded_time": recorded["time"],
                          "recorded_threads": recorded["threads"],
                          "recorded_task_seconds": graph.summary()["task_seconds"]}, indent=1))
    else:
        print(f"recorded: {recorded['time']:.6g} s (wall) on {recorded['threads']} threads, "
              f"tasks computing {graph.summary()['task_seconds']:.6g} s (their threads' CPU "
              "time: more wall time means waiting, or a loaded machine)")
        for r in results:
            print(f"predicted ({r.model}, {r.threads} threads): {r.predicted_time:.6g} s")
        for note in notes:
            print(f"note: {note}")
    if args.plot:
        from ..tasks.timeline_plot import plot_timeline
        plot_timeline(results[-1], args.plot)
    if args.perfetto:
        from ..tasks.timeline_plot import write_perfetto
        write_perfetto(results, args.perfetto)
    return 0


def recorded_region(graph) -> dict:
    """The recorded task region (first implicit task's start to the last one's end) and the
    recorded team size."""
    imp = graph.tasks[graph.tasks["kind"] == "implicit"]
    if not len(imp):
        ex = graph.explicit()
        return {"time": float(ex["t_end"].max() - ex["t_start"].min()) if len(ex) else 0.0,
                "threads": int(ex["thread"].nunique())}
    return {"time": float(imp["t_end"].max() - imp["t_start"].min()),
            "threads": int(imp.groupby("region").size().max())}


class _platform:
    """The platform file to use: the given one, or the recording machine's (its lstopo XML)
    written to a temporary when it has enough cores, or None (the simulator's default)."""

    def __init__(self, args):
        self.args, self.tmp = args, None

    def __enter__(self):
        import os
        import tempfile

        from ..storage import read_provenance
        from ..tasks.numa_platform import parse_lstopo, platform_xml
        if self.args.platform:
            if not os.path.isfile(self.args.platform):
                raise MinitraceError("no such platform file", self.args.platform)
            return self.args.platform
        xml = (read_provenance(self.args.file) or {}).get("lstopo_xml")
        if not xml:
            return None
        top = parse_lstopo(xml, self.args.file)
        if len(top.cores) < self.args.threads:
            return None
        fd, self.tmp = tempfile.mkstemp(suffix=".xml", prefix="minitrace-numa-")
        with os.fdopen(fd, "w") as f:
            f.write(platform_xml(top))
        return self.tmp

    def __exit__(self, *exc):
        import os
        if self.tmp:
            os.unlink(self.tmp)
