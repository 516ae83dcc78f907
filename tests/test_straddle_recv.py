"""Messages of one (source, tag) whose sizes straddle SMPI's ``smpi/async-small-thresh``
(LLNL Quicksilver's particle buffers; tests/programs/straddle_recv.c).  With that option, which
every calibration sets, SMPI keeps two mailboxes per rank: a message below the threshold goes
to the small one unless a receive is already posted on the large one, a larger one to the large
one, and a receive below the threshold is posted on the small one.  Each receive was written
with the size of the message MPI gave it, so a small receive took a later large message
(SimGrid aborted: ``recv - returned MPI_ERR_TRUNCATE``; Quicksilver on 2 ranks, predicted with
a calibration).  A replay now writes every receive of a tag whose messages straddle the
threshold as large as the tag's largest message, as the program posts its buffers, when SMPI
reported a truncation (SMPI's replay charges ``smpi/or`` by the size a receive posted); other
tags and a conversion keep each receive's own size."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.converters.simgrid_ti import posted_sizes, read_ti, write_ti
from minitrace.compress.files import write_compressed
from minitrace.replay import replay
from minitrace.replay.api import POSTED_NOTE, _feeder
from minitrace.replay.replayer_build import binary
from minitrace.trace import open as open_trace
from tests.support.record_util import record

pytestmark = pytest.mark.timeout(300)

#: A calibration's eager options (the threshold between the program's two sizes).
EAGER = {"smpi/async-small-thresh": "8192", "smpi/send-is-detached-thresh": "8192"}


def _recorded(programs, where, cancel: str):
    out = where / f"sr{cancel}.h5"
    p = record(out, 2, [programs("straddle_recv"), "2", cancel])
    assert p.returncode == 0, p.stderr      # MPI gave each receive its message in order
    return out


@pytest.fixture(scope="module")
def straddle(programs, tmp_path_factory):
    return _recorded(programs, tmp_path_factory.mktemp("straddle"), "1")


@pytest.mark.parametrize("cancel", ["1", "0"])
def test_a_replay_with_eager_options_takes_messages_straddling_the_threshold(
        programs, tmp_path, cancel):
    out = _recorded(programs, tmp_path, cancel)
    with open_trace(str(out)) as t:
        assert t.validate().ok
        data = t.data()
    a = data.actions
    got = a[a["kind"] == K.code("irecv")]["bytes_recv"]
    assert got[:4].tolist() == [16384, 512, 16384, 512]
    assert got[4:].tolist() == ([0] if cancel == "1" else [])     # the cancelled one
    # tag 5 straddles the threshold (the barrier's messages, if any, do not)
    assert posted_sizes(a, EAGER) == {5: 16384} and posted_sizes(a, {}) == {}
    res = replay(str(out), compute_rate="1Gf", config=EAGER)
    assert res.simulated_time > 0 and POSTED_NOTE in res.notes     # the second attempt
    # the python engine reads the same text
    py = replay(str(out), compute_rate="1Gf", config=EAGER, engine="python")
    assert py.simulated_time == pytest.approx(res.simulated_time, rel=1e-9)
    # a compressed file is streamed to the compiled replayer range by range (unless, with the
    # cancel, the export lowers a call with the whole trace at hand): the same time
    packed = tmp_path / "packed.h5"
    write_compressed(str(packed), data)
    (tmp_path / "w").mkdir()
    fed = _feeder(str(packed), tmp_path / "w", 1e9, None, None, binary(), False, "auto", EAGER)
    assert (fed[0] is not None) == (cancel == "0")
    assert replay(str(packed), compute_rate="1Gf", config=EAGER).simulated_time \
        == res.simulated_time


def test_a_conversion_keeps_each_receives_own_size(straddle, tmp_path):
    with open_trace(str(straddle)) as t:
        data = t.data()
    write_ti(data, tmp_path / "ti.txt", config=EAGER)
    back = read_ti(tmp_path / "ti.txt").actions
    recv = back[np.isin(back["kind"], K.mask(K.RECVS).nonzero()[0])]
    assert sorted(recv["bytes_recv"].tolist()) == [512, 512, 16384, 16384]
