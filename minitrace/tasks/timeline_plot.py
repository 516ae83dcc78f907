"""A simulated task timeline as a figure (one row per thread, a bar per task, coloured by
task construct) and as Perfetto/Chrome trace-event JSON (one process group per model, a track
per thread), written whole or not at all."""
from __future__ import annotations

from ..converters.perfetto import slices_events, write_json
from .simulate import SimResult


def plot_timeline(result: SimResult, path: str) -> None:
    from ..analysis.plotting import plt, save
    tl = result.timeline
    kernels = sorted(tl["kernel"].unique())
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(10, 1 + 0.5 * result.threads))
    for k, kernel in enumerate(kernels):
        rows = tl[tl["kernel"] == kernel]
        ax.barh(rows["thread"], rows["end"] - rows["start"], left=rows["start"], height=0.8,
                color=colours(k % 10), label=kernel or "task", edgecolor="none")
    ax.set_yticks(range(result.threads), [f"thread {i}" for i in range(result.threads)])
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (s)")
    ax.set_title(f"{result.model} model, {result.threads} threads: "
                 f"{result.predicted_time:.4g} s predicted")
    if len(kernels) <= 12:
        ax.legend(fontsize=7, loc="upper right")
    save(fig, path)


def write_perfetto(results: list[SimResult], path: str) -> int:
    """Every model's timeline, a process group each; returns the number of events."""
    events = []
    for pid, r in enumerate(results):
        per_thread = [[(kernel or f"task {task}", s, e, {"task": int(task)})
                       for task, kernel, s, e in zip(g["task"], g["kernel"], g["start"], g["end"])]
                      for _, g in r.timeline.groupby("thread")]
        evs = slices_events(pid, f"{r.model} model, {r.threads} threads", per_thread, cat="task")
        for e in evs:   # its tracks are threads, not ranks
            if e["name"] == "thread_name":
                e["args"] = {"name": f"thread {e['tid']}"}
        events += evs
    return write_json(path, events)
