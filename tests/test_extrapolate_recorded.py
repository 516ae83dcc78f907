"""A real MPI 1-D halo (benchmarks/apps/halo1d.c, strong scaling) recorded at 2, 3, 4 and 5
ranks: --check predicts the 5-rank run from the others with the structure identical."""
from pathlib import Path

from minitrace.cli import main
from tests.support.mpiutil import mpicc
from tests.support.record_util import record

APP = Path(__file__).resolve().parent.parent / "benchmarks" / "apps" / "halo1d.c"


def test_recorded_halo_self_check(tmp_path, capsys):
    exe = mpicc(APP, tmp_path / "halo1d")
    paths = []
    for p in (2, 3, 4, 5):
        paths.append(str(tmp_path / f"halo{p}.h5"))
        record(Path(paths[-1]), p, [str(exe), "6", "2000000", "strong"])
    # --force: a compute gap that the load makes noisy must not make this test flaky; the
    # structure is what is checked here (the times: benchmarks/RESULTS.md)
    assert main(["extrapolate", *paths, "--check", "--scaling", "strong", "--force"]) == 0
    printed = capsys.readouterr().out
    assert "structure at 5 ranks: identical to the recorded run" in printed
    assert "replayed time: extrapolated" in printed
    assert "loop 1" not in printed                 # 6 iterations at every scale: not fitted
