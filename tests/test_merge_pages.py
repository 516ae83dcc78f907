"""The merge fills its arrays on small pages (``merge.small_pages``: numpy's transparent huge
pages off while it runs) and gives numpy its setting back, also when it fails."""
from __future__ import annotations

import pytest

from minitrace.errors import MinitraceError
from minitrace.merge import _set_madvise_hugepage, merge_dir, small_pages


@pytest.fixture
def huge_pages_on():
    before = _set_madvise_hugepage(True)
    yield
    _set_madvise_hugepage(before)


def test_small_pages_inside_restored_after(huge_pages_on):
    with small_pages():
        assert _set_madvise_hugepage(False) is False      # (returns the setting it replaces)
    assert _set_madvise_hugepage(True) is True


def test_failed_merge_restores_the_setting(huge_pages_on, tmp_path):
    with pytest.raises(MinitraceError):
        merge_dir(str(tmp_path / "no-such-run"))
    assert _set_madvise_hugepage(True) is True
