"""Issue 38.3: the replay of each recording's model file against its exact file's (native
replayer, 1 Gf hosts, --compute-rate 1Gf: deterministic, any load), the model file's bytes per
action (written by compress.files.write_compressed, as `minitrace compress` writes it, without
the CLI's provenance; store.write until session 33, which wrote no finer epochs), its anchors
per epoch and the most variants a template kept.  Run with the code to measure first on the path (an old one:
``git archive COMMIT minitrace | tar -x -C DIR; PYTHONPATH=DIR python ...``):

    python benchmarks/bench_model_replay.py A.h5 B.h5 ...
"""
import os
import sys
import tempfile

import minitrace
from minitrace.compress import store as S
from minitrace.compress.files import write_compressed
from minitrace.replay import replay


def simulated(path: str) -> float:
    return replay(path, engine="native", compute_rate="1Gf").simulated_time


def main(paths: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        x, m = os.path.join(tmp, "exact.h5"), os.path.join(tmp, "model.h5")
        for src in paths:
            d = minitrace.open(src).data()
            tag = os.path.basename(os.path.dirname(src)) + "/" + os.path.basename(src)
            S.write(x, S.compress(d, "exact"))
            write_compressed(m, d, "model")
            with minitrace.open(m) as f:
                c = f._reader.c
            t = c.side["templates"]
            most = int(t["variants"].max()) if "variants" in t.columns else 1
            try:                # (one recording SimGrid refuses does not end the run)
                error = f"{100 * (simulated(m) / simulated(x) - 1):+7.2f}%"
            except minitrace.MinitraceError as e:
                error = f"replay failed: {str(e)[:80]}"
            print(f"{tag:40s} {c.nactions:8d} {os.path.getsize(m) / c.nactions:7.3f} B/action "
                  f"{error}  variants {most}  merge {c.attrs['epoch_merge']}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
