"""A compressed recording samples as its uncompressed trace: the same loops, cuts and
prediction.  Its stored grammar's loops cut iterations elsewhere, where a non-blocking
collective's request crosses them, and the sampled replay deadlocked in SimGrid (public OSU
osu_ialltoallw; tests/data/sampling/nbc_poll_z.h5: tests/programs/nbc_poll.c, which has its
shape, recorded on 2 ranks and compressed, exact)."""
from __future__ import annotations

from pathlib import Path

from minitrace.replay.sampling import load_trace, sampled_replay
from minitrace.storage import write_trace

Z = Path(__file__).parent / "data" / "sampling" / "nbc_poll_z.h5"


def test_a_compressed_recording_samples_as_its_trace(tmp_path):
    data = load_trace(str(Z))
    write_trace(tmp_path / "plain.h5", data)
    packed = sampled_replay(load_trace(str(Z)), None, "auto", compute_rate="1Gf")
    plain = sampled_replay(load_trace(str(tmp_path / "plain.h5")), None, "auto",
                           compute_rate="1Gf")
    assert packed.phases and packed.skipped_share > 0
    assert packed.simulated_time == plain.simulated_time and packed.bound == plain.bound
    assert packed.replayed_share == plain.replayed_share
