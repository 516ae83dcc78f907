"""The share of a loop's iterations that make its commonest calls, which decides whether a
nested loop is the step loop (sampling._finer): iterations that differ only by trailing calls
of signature 0 are different iterations (a numpy bytes array, which drops trailing zero
bytes, took them for one)."""
import numpy as np

from minitrace.replay.sampling import _repeats


def test_trailing_zero_ids_are_other_calls():
    ids = np.array([5, 0, 5, 5, 0, 5], np.int64)       # [5, 0], [5], [5, 0], [5]
    bounds = np.array([[0, 2, 3, 5, 6]])
    assert _repeats(ids, bounds) == 0.5


def test_least_share_over_ranks():
    ids = np.array([1, 2, 1, 2, 1, 2, 3, 3, 3, 4], np.int64)
    bounds = np.array([[0, 2, 4, 6], [6, 7, 8, 10]])   # rank 0 all alike; rank 1: 2 of 3
    assert _repeats(ids, bounds) == 2 / 3
