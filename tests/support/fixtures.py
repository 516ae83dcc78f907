"""Where test inputs live: the repository's own (``tests/data``), and the third-party traces.

Traces made by other tools on other machines sit in ``../shared/fixtures`` beside the checkout
(its README says where each comes from); a fresh clone has no such folder.  Tests reading them
are extra cross-checks marked ``@pytest.mark.thirdparty``: conftest.py skips them when the folder
is absent and ends the run with how many ran.  ``MINITRACE_SHARED_FIXTURES`` names another
folder; one that does not exist runs the suite as a fresh clone would.
"""
from __future__ import annotations

import os
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
_DEFAULT = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
SHARED = Path(os.environ.get("MINITRACE_SHARED_FIXTURES") or _DEFAULT)
#: How the folder is named in messages: as the README names it, or as the variable set it.
SHARED_SHOWN = "../shared/fixtures" if SHARED == _DEFAULT else str(SHARED)
PRESENT = SHARED.is_dir()

#: Our SimGrid TI traces (tests/data/ti: every action SimGrid replays, a list of per-rank
#: traces) and SimGrid's own example traces (examples/smpi/replay, third-party).
OWN_TI = ["types.txt", "collectives.txt", "p2p.txt", "split_traces"]
SIMGRID_EXAMPLES = ["actions_allgatherv.txt", "actions_allreduce.txt", "actions_alltoall.txt",
                    "actions_alltoallv.txt", "actions_barrier.txt", "actions_bcast.txt",
                    "actions_bcast_reduce_datatypes.txt", "actions_gather.txt",
                    "actions_reducescatter.txt", "actions_waitall.txt", "actions_with_isend.txt"]


def ti_traces() -> list:
    """Both sets as pytest parameters named by file, SimGrid's marked ``thirdparty``."""
    import pytest
    return [pytest.param(DATA / "ti" / n, id=n) for n in OWN_TI] + [
        pytest.param(SHARED / "simgrid_ti" / n, id=n, marks=pytest.mark.thirdparty)
        for n in SIMGRID_EXAMPLES]
