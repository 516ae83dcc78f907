"""Request-heavy MPI patterns, traced against untraced (issue 15), with benchmarks/bench_requests.c.

Each process runs the C program on 1 or 2 ranks (1 rank: it sends to itself, so the shim's
cost is measured without waiting on a peer); inside it, blocks of every pattern alternate
paused / recording / recording / paused (ABBA quartets), so an added cost is a difference
inside one run, robust to the load of a shared machine.  Processes of up to three kinds
alternate, their order rotating between repetitions: no shim (the untraced reference; also
checks that a paused shim costs nothing), the current shim, and with ``--baseline REV`` the
shim of commit REV (built from ``git archive``): before and after in the same run.

Reported per pattern: ns added per MPI call and per request (median and IQR over quartets),
the traced/untraced time ratio, bandwidth for ``bw``; records per second per rank (the
``rate`` pattern, checked against the records in the raw files); and the shim's own counters
(MINITRACE_STATS: longest probe, most entries on one handle, chunk swaps the helper thread
was behind for).  Usage: python benchmarks/bench_requests.py [--baseline REV] [--reps 3]
[--quartets 6] [--block-ms 20] [--ranks 1,2] [--only PATTERN|SPEC,...]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from minitrace import rawlayout  # noqa: E402
from minitrace.record import shim_env, shim_path  # noqa: E402
from tests.support.mpiutil import tool  # noqa: E402

MACHINE = "2-core shared VM, Debian 12, CPython 3.11, MPICH 5.0.2 wheel"
KIB, MIB = 1 << 10, 1 << 20


def specs() -> list[str]:
    """pattern:bytes:window, 8 B to 1 MiB (a window's buffers stay <= 64 MiB per rank)."""
    out = [f"bw:{b}:{w}" for b in (8, 4 * KIB, 64 * KIB, MIB) for w in (1, 8, 64, 256)
           if b * w <= 64 * MIB]
    out += [f"{p}:{b}:{w}" for p in ("testany", "waitsome") for b in (8, 4 * KIB)
            for w in (8, 64, 256)]
    out += [f"persist:{b}:{w}" for b in (8, 4 * KIB) for w in (8, 64, 256)] + [f"persist:{MIB}:8"]
    out += [f"iallreduce:{b}:{w}" for b in (8, 4 * KIB, 64 * KIB) for w in (1, 8, 64)]
    return out + ["rate:8:1"]


def build_shim(rev: str, work: Path) -> str:
    """The shim of commit rev as a plain preloadable library (no Python module around it)."""
    src = work / f"shim-{rev}"
    src.mkdir()
    tar = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "c_shim", "minitrace/kinds.py",
                          "minitrace/rawlayout.py"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=tar, check=True)
    gen = ("import sys; sys.path.insert(0, 'c_shim'); import generate; "
           "getattr(generate, 'write_raw_layout_header', lambda: None)(); "
           "open('tu.c', 'w').write(generate.translation_unit())")
    subprocess.run([sys.executable, "-c", gen], cwd=src, check=True)
    out = work / f"shim-{rev}.so"
    subprocess.run([tool("mpicc"), "-O2", "-std=gnu11", "-shared", "-fPIC", "-I", "c_shim",
                    "tu.c", "-o", str(out), "-lpthread"], cwd=src, check=True,
                   capture_output=True)
    return str(out)


def raw_records(raw: Path) -> dict[int, int]:
    """Records (with continuation records) per rank in a raw directory, from the chunk headers."""
    out = {}
    for f in sorted(raw.glob("rank-*.mtr")):
        data = np.fromfile(f, dtype=np.uint8)
        n = 0
        for off in range(rawlayout.HEADER_BYTES, len(data), rawlayout.CHUNK_BYTES):
            n += int(data[off:off + 8].view(np.uint64)[0])
        out[int(f.stem.split("-")[1])] = n
    return out


def run_one(exe: str, nranks: int, spec_list: list[str], quartets: int, block_ms: float,
            shim: str | None, raw: Path) -> tuple[dict, str]:
    """One process: {spec: {block: (traced, seconds_max, iters, calls_mean, reqs_mean, [s per rank])}}."""
    env = dict(os.environ)
    if shim:
        env = shim_env(str(raw), "auto")
        env["LD_PRELOAD"] = ":".join([shim] + env["LD_PRELOAD"].split(":")[1:])
        env["MINITRACE_STATS"] = "1"
    p = subprocess.run([tool("mpiexec"), "-n", str(nranks), exe, str(quartets), str(block_ms),
                        *spec_list], capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode:
        raise SystemExit(f"benchmark job failed ({p.returncode}): {p.stderr[-2000:]}")
    rows = defaultdict(list)
    for line in p.stdout.splitlines():
        f = line.split()
        if f and f[0] == "blk":
            rows[(f[1], int(f[2]))].append((int(f[3]), float(f[4]), int(f[5]), int(f[6]),
                                             int(f[7])))
    res: dict = defaultdict(dict)
    for (spec, b), r in rows.items():
        res[spec][b] = (r[0][0], max(x[1] for x in r), r[0][2], np.mean([x[3] for x in r]),
                        np.mean([x[4] for x in r]), [x[1] for x in r])
    return res, p.stderr


def quartet_stats(blocks: dict) -> dict:
    """Per quartet: paused and recording seconds per iteration (each the mean of its two
    blocks), the added ns per iteration; calls and requests per iteration (paused blocks)."""
    b = sorted(blocks)
    it = blocks[b[0]][2]
    sec = np.array([blocks[i][1] for i in b]).reshape(-1, 4) / it
    calls = np.mean([blocks[i][3] for i in b if i % 4 in (0, 3)]) / it
    reqs = np.mean([blocks[i][4] for i in b if i % 4 in (0, 3)]) / it
    paused, rec = sec[:, [0, 3]].mean(axis=1), sec[:, 1:3].mean(axis=1)
    return {"paused": paused, "rec": rec, "added_ns": (rec - paused) * 1e9, "calls": calls,
            "reqs": reqs, "all": sec.ravel()}


def med_iqr(x) -> str:
    q1, m, q3 = np.percentile(x, [25, 50, 75])
    return f"{m:.0f} ({q1:.0f}..{q3:.0f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="also run the shim of this git revision (before/after)")
    ap.add_argument("--reps", type=int, default=3, help="processes of each kind")
    ap.add_argument("--quartets", type=int, default=6, help="ABBA quartets per pattern and process")
    ap.add_argument("--block-ms", type=float, default=20, help="length of a block")
    ap.add_argument("--ranks", default="1,2", help="comma list of rank counts (1 and/or 2)")
    ap.add_argument("--only", help="comma list of patterns (bw) or specs (bw:4096:64) to run "
                                   "(default: all)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-requests-"))
    exe = str(work / "bench_requests")
    subprocess.run([tool("mpicc"), "-O2", "-o", exe, str(ROOT / "benchmarks" / "bench_requests.c"),
                    "-ldl"], check=True)
    todo = specs()
    if args.only:
        keep = set(args.only.split(","))
        todo = [s for s in todo if s.split(":")[0] in keep or s in keep]
    kinds = {"untraced": None, "after": shim_path()}
    if args.baseline:
        kinds["before"] = build_shim(args.baseline, work)
    print(f"Machine: {MACHINE}; {args.reps} processes of each kind ({', '.join(kinds)}) per "
          f"rank count, their order rotating; {args.quartets} ABBA quartets of {args.block_ms:g} ms "
          f"blocks per pattern in each process.")
    for nranks in (int(x) for x in args.ranks.split(",")):
        report(nranks, measure(exe, nranks, todo, kinds, args, work), kinds, todo)
    shutil.rmtree(work)


def measure(exe: str, nranks: int, todo: list[str], kinds: dict, args, work: Path) -> dict:
    """Run the rotation: one process per pattern family and kind (its raw files removed before
    the next: a run of every pattern writes ~20 GB of records, and the page cache's writeback
    would then slow the later patterns); per kind: quartet figures per spec, the shim's
    counters per process, the record rates of whole runs (from the raw files), the loads."""
    # the previous table is O(w^3) per drained window: its Testany/Waitsome at w=256 take minutes
    skip = {"before": {s for s in todo if re.match(r"(testany|waitsome):\d+:256$", s)}}
    out = {"results": {k: defaultdict(list) for k in kinds}, "stats": {k: [] for k in kinds},
           "rates": {k: [] for k in kinds}, "load": [os.getloadavg()[0]]}
    names = list(kinds)
    groups = list(dict.fromkeys(s.split(":")[0] for s in todo))
    turn = 0
    for rep in range(args.reps):
        for g in groups:
            turn += 1
            for k in names[turn % len(names):] + names[:turn % len(names)]:
                raw = work / f"raw-{k}-{nranks}-{rep}-{g}"
                run_specs = [s for s in todo if s.startswith(g + ":") and s not in skip.get(k, ())]
                if not run_specs:
                    continue
                res, err = run_one(exe, nranks, run_specs, args.quartets, args.block_ms, kinds[k],
                                   raw)
                for spec, blocks in res.items():
                    out["results"][k][spec].append(quartet_stats(blocks))
                if kinds[k] and raw.exists():
                    recs = raw_records(raw)
                    traced_s = {r: sum(bl[5][r] for sp in res.values() for bl in sp.values()
                                       if bl[0] == 1) for r in recs}
                    out["rates"][k].append({r: recs[r] / traced_s[r] / 1e6 for r in recs})
                    for r, c in re.findall(r"rank (\d+): stats: (.*)", err):
                        c = dict(zip(c.split()[::2], map(float, c.split()[1::2])))
                        c["records"] = recs[int(r)]
                        out["stats"][k].append(c)
                    shutil.rmtree(raw)
                out["load"].append(os.getloadavg()[0])
    # sustained: 2 x 2 s of recording in a row (the blocks above alternate with paused ones,
    # during which the helper thread catches up)
    out["sustained"] = {}
    if "rate" in groups:
        for k in (k for k in names if kinds[k]):
            runs = []
            for i in range(args.reps):
                raw = work / f"raw-sustained-{k}-{nranks}-{i}"
                res, err = run_one(exe, nranks, ["rate:8:1"], 1, 2000, kinds[k], raw)
                b = res["rate:8:1"]
                runs.append([2 * b[1][2] / (b[1][5][r] + b[2][5][r]) / 1e6   # 1 call = 1 record
                             for r in range(nranks)])
                shutil.rmtree(raw, ignore_errors=True)
            out["sustained"][k] = runs
    return out


def report(nranks: int, m: dict, kinds: dict, todo: list[str]) -> None:
    """Markdown table of the added costs, bandwidths, record rates and shim counters."""
    def merged(k, spec):
        q = m["results"][k].get(spec)
        if not q:
            return None
        return {f: (np.concatenate([x[f] for x in q]) if isinstance(q[0][f], np.ndarray)
                    else np.mean([x[f] for x in q])) for f in q[0]}

    load = m["load"]
    shown = [k for k in ("after", "before") if k in kinds]
    print(f"\n### {nranks} rank{'s' if nranks > 1 else ''}: load average {min(load):.1f}..."
          f"{max(load):.1f} (1-minute, sampled between processes)")
    if nranks == 2:
        print("Both ranks poll on the 2 cores: no core is free for the shim's helper thread.")
    cols = ["pattern", "untraced us/iter", "calls/iter"]
    for k in shown:
        cols += [f"{k}: ns added per call", f"{k}: per request", f"{k}: traced/untraced"]
    print("\n| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for spec in todo:
        a = merged("after", spec)
        if a is None:
            continue
        u = merged("untraced", spec)
        row = [spec, f"{np.median(u['all']) * 1e6:.2f}" if u else "-", f"{a['calls']:.1f}"]
        for k in shown:
            q = merged(k, spec)
            if q is None:
                row += ["skipped"] * 3
                continue
            row += [med_iqr(q["added_ns"] / q["calls"]),
                    med_iqr(q["added_ns"] / q["reqs"]) if q["reqs"] else "-",
                    f"{np.median(q['rec'] / q['paused']):.2f}"]
        print("| " + " | ".join(row) + " |")
    print("\nbw, MB/s (bytes x window / time per iteration; medians): untraced (no shim) / "
          "paused / recording (recording vs paused, median of the quartets' ratios)")
    for spec in todo:
        u = merged("untraced", spec)
        if not spec.startswith("bw:") or u is None:
            continue
        _, b, w = spec.split(":")
        vol = int(b) * int(w) / 1e6
        line = [spec]
        for k in shown:
            q = merged(k, spec)
            if q is not None:
                line.append(f"{k}: {vol / np.median(u['all']):.1f} / "
                            f"{vol / np.median(q['paused']):.1f} / {vol / np.median(q['rec']):.1f} "
                            f"({100 * (np.median(q['paused'] / q['rec']) - 1):+.0f}%)")
        print("  " + "; ".join(line))
    for k in shown:
        q = merged(k, "rate:8:1")
        if q is not None:
            print(f"\nrecord rate ({k}), MPI_Comm_size loop on each rank: "
                  f"{np.median(1 / q['rec']) / 1e6:.2f} M records/s per rank while recording "
                  f"(IQR {np.percentile(1 / q['rec'], 25) / 1e6:.2f}.."
                  f"{np.percentile(1 / q['rec'], 75) / 1e6:.2f}; untraced "
                  f"{np.median(1 / q['paused']) / 1e6:.1f} M calls/s); added "
                  f"{med_iqr(q['added_ns'])} ns per call")
        if m["sustained"].get(k):
            r = [v for run in m["sustained"][k] for v in run]
            print(f"sustained ({k}): MPI_Comm_size recorded for 4 s in a row: "
                  f"{min(r):.2f}..{max(r):.2f} M records/s per rank ({len(r)} runs x ranks)")
        if m["rates"].get(k):
            r = [v for d in m["rates"][k] for v in d.values()]
            print(f"records written per second of recording, whole runs ({k}): "
                  f"{min(r):.2f}..{max(r):.2f} M/s per rank")
        st = m["stats"][k]
        if st:   # the chunk swaps' time spread over the records, per process and rank
            per = [c["swap-ms"] * 1e6 / c["records"] for c in st if c["records"]]
            print(f"shim counters ({k}, {len(st)} process ranks): "
                  f"{sum(c['records'] for c in st) / 1e6:.0f} M records, chunk swaps "
                  f"{sum(c['chunk-swaps'] for c in st):.0f} (the helper behind at "
                  f"{sum(c['helper-behind'] for c in st):.0f}), their time {min(per):.0f}.."
                  f"{max(per):.0f} ns per record (median {np.median(per):.0f}); longest probe "
                  f"{max(c['probe-max'] for c in st):.0f}, most entries on one handle "
                  f"{max(c['per-handle-max'] for c in st):.0f}, live requests at most "
                  f"{max(c['live-max'] for c in st):.0f}")


if __name__ == "__main__":
    main()
