"""storage.dataset makes its chunked 1-D datasets itself (h5py's low-level calls, session 25):
what it makes must be what h5py's create_dataset made before, or files change and readers
that look at the filters (any HDF5 tool) see another dataset."""
import h5py
import numpy as np
import pytest

from minitrace import storage as S


def _properties(ds: h5py.Dataset) -> dict:
    """What a dataset's creation property list and type say of it."""
    p = ds.id.get_create_plist()
    return {"layout": p.get_layout(), "chunk": p.get_chunk(),
            "filters": [p.get_filter(i)[:3] for i in range(p.get_nfilters())],
            "times": p.get_obj_track_times(), "fill_time": p.get_fill_time(),
            "alloc_time": p.get_alloc_time(), "order": p.get_attr_creation_order(),
            "dtype": ds.dtype, "shape": ds.shape, "maxshape": ds.maxshape}


@pytest.mark.parametrize("dtype,n,level", [(np.int8, 5, 1), (np.int64, S.CHUNK + 3, 6),
                                           (np.float64, 1000, 1), (">i4", 70, 4)])
def test_chunked_dataset_as_h5py_makes_it(tmp_path, dtype, n, level):
    data = np.arange(n).astype(dtype)
    with h5py.File(tmp_path / "a.h5", "w", libver=("v110", "v110")) as f:
        mine = S.dataset(f, "x", data, level=level, encoding="delta")
        theirs = f.create_dataset("y", shape=data.shape, dtype=data.dtype,
                                  chunks=(min(S.CHUNK, n),),
                                  **{**S.COMPRESSION, "compression_opts": level})
        assert _properties(mine) == _properties(theirs)
        assert mine.attrs["encoding"] == "delta"
    with h5py.File(tmp_path / "a.h5", "r") as f:
        assert np.array_equal(f["x"][()], data)
        assert f["x"].compression == "gzip" and f["x"].shuffle
