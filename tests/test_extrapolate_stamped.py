"""The signatures an extrapolated trace stamps per rank class (extrapolate/stamped.py) are
what encoding every action gives, on a ring, a line, open 2-D and 3-D grids; where a class's
ranks differ (a torus's wrapped peers) it encodes every action; the written file reads back
the same either way."""
import numpy as np
import pytest

import minitrace
from minitrace import kinds as K
from minitrace.compress import signatures as SG
from minitrace.compress.files import write_compressed
from minitrace.extrapolate import build as B
from minitrace.extrapolate import check as C
from minitrace.extrapolate import stamped as SS
from minitrace.model import empty_actions
from tests.support import synthetic


def _decoded(sig: SG.Signatures) -> tuple:
    """Each action's signature with its vector's content in place of the content's id (the
    table's and the contents' order are the encoder's own)."""
    contents = [tuple(sig.vec_values[sig.vec_offsets[v]:sig.vec_offsets[v + 1]])
                for v in range(len(sig.vec_offsets) - 1)]
    rows = sig.table[sig.ids]
    fields = [f for f in SG.SIGNATURE_DTYPE.names if f != "vec"]
    return ([tuple(r) for r in rows[fields].tolist()],
            [contents[v] if v >= 0 else () for v in rows["vec"]],
            sig.new_requests.tolist(), sig.new_request_offsets.tolist())


def _extrapolated(ndims, periodic, scales, target):
    if ndims == 1:
        datas = [synthetic.halo_1d_trace(p, periodic=periodic, seed=p) for p in scales]
    else:
        datas = [synthetic.halo_grid_trace(p, ndims, "weak", periodic, seed=p) for p in scales]
    data, _, _ = B.extrapolate(C.runs_of([f"{p}.h5" for p in scales], datas), target, "weak",
                               force=True)
    return data


@pytest.mark.parametrize("ndims, periodic, scales, target", [
    (1, True, (2, 4, 8), 64), (1, False, (4, 8, 16), 64), (2, False, (4, 8, 16), 64),
    (2, True, (4, 8, 16), 64), (3, False, (8, 16, 32), 128), (3, True, (4, 8, 16), 64)])
def test_stamped_signatures_are_the_encoded_ones(ndims, periodic, scales, target):
    data = _extrapolated(ndims, periodic, scales, target)
    full = SG.encode(data)
    if periodic and ndims > 1:              # one torus class whose ranks wrap differently
        assert data.signatures is None
        return
    assert len(data.signatures.ids) == len(data.actions)
    assert _decoded(data.signatures) == _decoded(full)


def test_open_grids_are_stamped():
    """The case the stamping is for (no wrap): it must not fall back."""
    assert _extrapolated(3, False, (8, 16, 32), 128).signatures is not None
    assert _extrapolated(1, True, (2, 4, 8), 64).signatures is not None


def test_a_class_whose_ranks_differ_is_not_stamped():
    """Four ranks of one class each send to a peer: +1 on a ring is one signature (stamped,
    rank 2's ids are rank 0's); the last rank sending back to its left neighbour is not."""
    a = empty_actions(1)
    a["kind"], a["bytes_sent"], a["tag"], a["comm"] = K.CODE["send"], 8, 0, 0
    ranks, vec = np.arange(4), np.zeros((4, 0), np.int64)
    ring = (ranks + 1) % 4
    sig = SS.signatures([(a, ring[:, None], vec)], [ranks], np.zeros(4, np.int64), 4)
    assert sig is not None and sig.ids.tolist() == [0, 0, 0, 0]
    back = np.array([1, 2, 3, 2])
    assert SS.signatures([(a, back[:, None], vec)], [ranks], np.zeros(4, np.int64), 4) is None


def test_a_class_no_rank_has_is_left_out():
    """A class with no rank at the target (a small target: the anchored ranks fill it) is
    neither sampled nor counted: the others are stamped as without it."""
    a = empty_actions(1)
    a["kind"], a["bytes_sent"], a["tag"], a["comm"] = K.CODE["send"], 8, 0, 0
    ranks, vec = np.arange(4), np.zeros((4, 0), np.int64)
    ring = (ranks + 1) % 4
    one = SS.signatures([(a, ring[:, None], vec)], [ranks], np.zeros(4, np.int64), 4)
    two = SS.signatures([(a, ring[:, None], vec), (a, np.zeros((0, 1), np.int64), vec[:0])],
                        [ranks, np.zeros(0, np.int64)], np.zeros(4, np.int64), 4)
    assert two is not None and two.ids.tolist() == one.ids.tolist()
    assert two.new_request_offsets.tolist() == one.new_request_offsets.tolist()


def test_the_file_reads_back_the_same_stamped_or_not(tmp_path):
    data = _extrapolated(3, False, (8, 16, 32), 128)
    assert data.signatures is not None          # (else both files would be encoded)
    B.write(str(tmp_path / "stamped.h5"), data)
    write_compressed(str(tmp_path / "encoded.h5"), data, volumes="exact")
    with minitrace.open(str(tmp_path / "stamped.h5")) as s, \
            minitrace.open(str(tmp_path / "encoded.h5")) as e:
        x, y = s.data(), e.data()
    for field in ("kind", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "request",
                  "vec_len", "volume"):
        assert np.array_equal(x.actions[field], y.actions[field]), field
    assert np.array_equal(x.vectors, y.vectors)
