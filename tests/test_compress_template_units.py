"""Model templates matched on each stretch between two anchors where epochs are merged (format
version 11, ``model/template_unit_offsets``).  UK-MAC TeaLeaf's CG iteration completes its
halo's MPI_Testall or not by arrival (tests/programs/testall_halo.c): merged 8 iterations to an
epoch, each epoch's pattern of completions was a template of its own, 32-36 calls long (public
TeaLeaf 2r: 1,496 means a rank, a quarter of its model file), where an iteration's template
holds a handful."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import MinitraceError, kinds as K, storage
from minitrace.compress import epochs as E, signatures as SG, volumes as V
from minitrace.compress.files import write_compressed
from tests.support.record_util import record
from tests.support.versions import assert_refused_as_newer

ITERATIONS = 400


@pytest.fixture(scope="module")
def halo(tmp_path_factory, programs):
    """A recording of testall_halo.c at 2 ranks and its model file with the stretches'
    templates (a trace this small is fitted both ways, the smaller kept: either here)."""
    where = tmp_path_factory.mktemp("units")
    rec, out = where / "halo.h5", where / "m.h5"
    record(rec, 2, [programs("testall_halo"), str(ITERATIONS), "100"])
    with minitrace.open(rec) as t:
        d = t.data()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(E, "BOTH_UP_TO", 0)
        write_compressed(str(out), d, "model")
    return d, out


def stretch_calls(d) -> int:
    """The most volume calls a rank makes between two of its collectives."""
    most = 0
    for r in range(d.nranks):
        a = d.actions[d.rank_slice(r)]
        coll = np.isin(a["kind"], K.codes(K.ALL_COLLECTIVES))
        stretch = np.cumsum(coll) - coll
        vol = a["volume"] != 0
        most = max(most, int(np.bincount(stretch[vol]).max()))
    return most


def test_merged_epochs_keep_templates_of_one_iteration(halo):
    d, out = halo
    with minitrace.open(out) as t:
        back = t.data()
        c = t._reader.c
    assert c.attrs["epoch_anchor"] == "collectives" and c.attrs["epoch_merge"] > 1
    units = c.side[E.TEMPLATE_UNIT_OFFSETS]
    per_rank = [int((np.isin(d.actions[d.rank_slice(r)]["kind"],
                             K.codes(K.ALL_COLLECTIVES))).sum()) + 1 for r in range(d.nranks)]
    assert np.diff(units).tolist() == per_rank
    t = c.side["templates"]
    assert len(t) and t["length"].max() <= stretch_calls(d)      # (merged epochs': 32-33)
    label = c.side.get("epoch_variant")           # (one label a stretch, where kept)
    assert label is None or len(label) == units[-1]
    for r in range(d.nranks):                      # (each rank's total exact, as before)
        want, got = d.actions[d.rank_slice(r)], back.actions[back.rank_slice(r)]
        assert got["volume"].sum() == pytest.approx(want["volume"].sum(), rel=1e-9)
        assert np.array_equal(got["kind"], want["kind"])
    with h5py.File(out, "r") as f:
        assert f.attrs["format_version"] == storage.TEMPLATE_UNITS_VERSION == 11


def test_a_version_10_reader_refuses_them_and_damaged_offsets_are_named(halo):
    _, out = halo
    with minitrace.open(out) as t:
        c = t._reader.c
    side = dict(c.side)
    side[E.TEMPLATE_UNIT_OFFSETS] = side[E.TEMPLATE_UNIT_OFFSETS] + np.array([0, 100, 100])
    assert E.check(side, c.attrs, len(c.table), c.nranks) == \
        f"model/{E.TEMPLATE_UNIT_OFFSETS} inconsistent"
    assert assert_refused_as_newer(out) == 11


def test_a_small_trace_keeps_the_templates_that_deflate_smaller_and_move_no_more(halo, monkeypatch):
    d, _ = halo
    ids = SG.encode(d, SG.action_columns(d.actions), completions_apart=True)
    volume = np.asarray(d.actions["volume"])
    has = np.zeros(len(ids.table), bool)                # (as compress takes them)
    has[ids.ids[V.volume_rows(volume)]] = True
    fit_args = (volume, has[ids.ids], ids.ids, np.asarray(d.rank_offsets), ids.table["kind"],
                0.01)
    both = [E._fit(E._epochs(*fit_args), 0.01, units, True) for units in (True, False)]
    assert E.TEMPLATE_UNIT_OFFSETS in both[0][0] and E.TEMPLATE_UNIT_OFFSETS not in both[1][0]
    sizes = [E.side_bytes(side) for side, _, _ in both]
    monkeypatch.setattr(E, "BOTH_UP_TO", len(ids.ids))
    chosen = E.fit(*fit_args)[0]
    # (the epochs' fit only where it moves no more of the work: E.DISPLACED_TIE)
    kept = sizes[1] < sizes[0] and both[1][2] <= both[0][2] + E.DISPLACED_TIE
    assert E.side_bytes(chosen) == sizes[1 if kept else 0]
    monkeypatch.setattr(E, "BOTH_UP_TO", len(ids.ids) - 1)     # (larger: the stretches')
    assert E.TEMPLATE_UNIT_OFFSETS in E.fit(*fit_args)[0]


def test_offsets_a_stretch_short_on_a_rank_are_named(halo, tmp_path):
    """One stretch fewer (or more) on the last rank, the merged epochs' count the same,
    passes the tables' check and is caught where the rank's anchors are read: one line naming
    the file, not an IndexError (a reviewer's find: the guard had no test)."""
    d, _ = halo
    out = tmp_path / "u.h5"
    with pytest.MonkeyPatch.context() as m:
        m.setattr(E, "BOTH_UP_TO", 0)
        write_compressed(str(out), d, "model", pack=False)
    with h5py.File(out, "r+") as f:
        ds = f[f"trace/model/{E.TEMPLATE_UNIT_OFFSETS}"]
        units, merge = ds[...], int(f["trace"].attrs["epoch_merge"])
        n = int(units[-1] - units[-2])                 # (the last rank's stretches)
        step = -1 if (n - 1) % merge else 1            # (its merged epochs' count kept)
        units[-1] += step
        ds[...] = units
        if "epoch_variant" in f["trace/model"]:        # (one label a stretch, as many)
            label = f["trace/model/epoch_variant"][...]
            del f["trace/model/epoch_variant"]
            f["trace/model"].create_dataset(
                "epoch_variant", data=label[:-1] if step < 0 else np.r_[label, 0])
    with minitrace.open(out) as t:
        c = t._reader.c
        assert E.check(c.side, c.attrs, len(c.table), c.nranks) is None
        with pytest.raises(MinitraceError, match="do not fit the rank's anchors") as e:
            t.data()
    assert str(out) in str(e.value)
