"""Damage to a written file and what reading it must say: a one-line ``corrupt trace`` error
naming the file (the standard for every reader path), checked the same way by every test."""
from __future__ import annotations

import h5py
import numpy as np
import pytest

import minitrace
from minitrace import MinitraceError


def replace(path: str, name: str, array: np.ndarray) -> None:
    """Dataset ``name`` of the file at ``path`` replaced by ``array`` (its type and shape)."""
    with h5py.File(path, "r+") as f:
        del f[name]
        f[name] = array


def assert_corrupt(path: str) -> None:
    """Reading the whole trace at ``path`` fails with one line that names the file."""
    with pytest.raises(MinitraceError, match="corrupt trace") as e:
        with minitrace.open(path) as t:
            t.data()
    assert path in str(e.value) and "\n" not in str(e.value)
