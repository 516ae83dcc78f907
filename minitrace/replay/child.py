"""The replay child: its job file, running it under a timeout (with a progress bar fed by its
progress lines) and turning its answer, or SimGrid's last words, into a result or one
:class:`MinitraceError`.  Both children (the compiled replayer and :mod:`.bindings`) answer with
one ``MINITRACE-REPLAY {json}`` line."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from ..errors import MinitraceError

#: Silence notices that do not apply to a replay (host-speed benchmarking, config echo).
QUIET = ["--log=smpi_config.thres:warning", "--log=xbt_cfg.thres:warning", "--log=no_loc"]
RESULT_TAG = "MINITRACE-REPLAY "
_LOG_TAIL = 20

#: Replays of more actions than this show a progress bar (when stderr is a terminal).
PROGRESS_FROM = 200_000


def show_progress(total: int) -> bool:
    return total >= PROGRESS_FROM and sys.stderr.isatty()


def count_lines(paths: list[str]) -> int:
    """Actions in the per-rank traces (one per line), for the progress bar."""
    n = 0
    for p in paths:
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                n += block.count(b"\n")
    return n



def write_native_job(path: Path, platform: str, traces: list[str], hosts: list[str] | None,
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



def run_child(cmd: list[str], timeout: float, total: int = 0) -> dict:
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
        if line.startswith(RESULT_TAG):
            result = json.loads(line[len(RESULT_TAG):])
    if result is not None and "error" in result:
        why = f"; SimGrid: {_last_message(log)}" if result.get("why") else ""
        raise MinitraceError(result["error"] + why, result.get("path"))
    if p.returncode != 0 or result is None:
        said = _last_message(log)
        hint = ("; a message larger than the receive posted for it: `minitrace validate` "
                "lists the size mismatches (which a forced extrapolation may write)"
                if "MPI_ERR_TRUNCATE" in said else "")
        raise MinitraceError(f"SimGrid failed (exit status {p.returncode}): {said}{hint}")
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
