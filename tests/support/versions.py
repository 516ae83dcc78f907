"""A file of a new format version and the reader of the version before it: that reader must
refuse the file as written by a newer minitrace (one line naming the file), not misread it or
call it corrupt.  One check for every version's test."""
from __future__ import annotations

import h5py
import pytest

import minitrace
from minitrace import MinitraceError, storage


def assert_refused_as_newer(path) -> int:
    """The reader of the version before the file's refuses it as newer; returns the file's
    format version (for the caller's check of which version was written)."""
    path = str(path)
    with h5py.File(path, "r") as f:
        version = int(f.attrs["format_version"])
    with pytest.MonkeyPatch.context() as m:
        m.setattr(storage, "FORMAT_VERSION", version - 1)
        with pytest.raises(MinitraceError,
                           match=rf"newer minitrace \(format version {version}\)") as e:
            minitrace.open(path)
    assert path in str(e.value) and "\n" not in str(e.value)
    return version
