"""Which algorithm an MPI library runs for a collective: one table for the lowering of
sub-communicator collectives and the SMPI options of world ones, so that a prediction does not
depend on the communicator or the command.

Libraries (``--collectives``):

* ``mpich``: MPICH's flat-communicator rules (``MPIR_*_intra_auto``) as SimGrid 4.1 transcribes
  them in ``src/smpi/colls/smpi_mpich_selector.cpp``, without its SMP-aware branches (a replay
  of one rank per host has no node-local step) and with MPICH's documented pairwise/ring choice
  for long alltoalls (SimGrid tests ``p % 2`` where MPICH's comment says power of two);
* ``ompi``: Open MPI 4's ``coll_tuned_decision_fixed.c`` tables as SimGrid 4.1 transcribes them
  (``smpi_openmpi_selector.cpp``, extracted by ``scripts/collective_rules.py`` into
  ``minitrace/data/ompi_collectives.json``), for builtin (commutative) reductions;
* ``simgrid``: world collectives left to SimGrid's replay defaults (no option); SimGrid's replay
  has no sub-communicator collective, so those follow the ``mpich`` rules.

``auto`` is the family of the MPI that ran the program (the trace's ``mpi_library``), else
``simgrid``.  An algorithm the lowering cannot write message for message is lowered as the one
``nearest`` names, and said so.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files

import numpy as np

from .. import kinds as K
from ..errors import MinitraceError
from .algorithms import ALGORITHMS
from .algorithms.common import pof2_below

LIBRARIES = ("simgrid", "mpich", "ompi")
CHOICES = ("auto", *LIBRARIES)
#: Collectives SimGrid's replay selects by an ``smpi/<kind>`` option.
OPTION_KINDS = frozenset({"barrier", "bcast", "reduce", "allreduce", "allgather", "allgatherv",
                          "alltoall", "alltoallv", "gather", "scatter", "reduce_scatter"})
#: Algorithms whose SimGrid implementation needs a power-of-two communicator.
_POWER_OF_TWO = frozenset({("allgather", "rdb"), ("allgather", "pair"), ("alltoall", "pair"),
                           ("alltoallv", "pair"), ("alltoallw", "pair")})


def library_of(meta: dict) -> str | None:
    """The MPI family of the library a recorded trace ran on (its ``mpi_library``), or None."""
    lib = str(meta.get("mpi_library", ""))
    if "Open MPI" in lib:
        return "ompi"
    if any(name in lib for name in ("MPICH", "MVAPICH", "Intel(R) MPI")):
        return "mpich"
    return None


def resolve(choice: str, meta: dict) -> str:
    """The library ``--collectives choice`` means for a trace with metadata ``meta``."""
    if choice not in CHOICES:
        raise MinitraceError(f"unknown --collectives {choice!r} (choose from {', '.join(CHOICES)})")
    return (library_of(meta) or "simgrid") if choice == "auto" else choice


def nearest(kind: str, p: int, nbytes: int = 0) -> str:
    """The lowered algorithm closest to what MPICH runs, for algorithms the lowering lacks."""
    pow2 = p & (p - 1) == 0
    return {"barrier": "ompi_bruck", "bcast": "binomial_tree", "reduce": "binomial",
            "allreduce": "rab_rdb" if nbytes > 2048 and nbytes >= pof2_below(p) else "rdb",
            "allgather": "ring", "allgatherv": "ring", "alltoall": "pair" if pow2 else "ring",
            "alltoallv": "pair" if pow2 else "ring", "alltoallw": "pair" if pow2 else "ring",
            "gather": "ompi_basic_linear", "gatherv": "linear", "scatter": "ompi_basic_linear",
            "scatterv": "linear", "scan": "recursive doubling", "exscan": "recursive doubling",
            "reduce_scatter": "binomial reduce + linear scatterv",
            "reduce_scatter_block": "binomial reduce + linear scatterv"}[kind]


def _mpich(kind: str, p: int, bs: int, br: int) -> str | None:
    pof2, pow2 = pof2_below(p), p & (p - 1) == 0
    n = max(bs, br)
    if kind == "allreduce":
        return "rab_rdb" if bs > 2048 and bs >= pof2 else "rdb"
    if kind == "barrier":
        return "ompi_bruck"
    if kind == "bcast":
        if n < 12288 or p <= 8:
            return "binomial_tree"
        return "scatter_rdb_allgather" if n < 524288 and p % 2 == 0 else "scatter_LR_allgather"
    if kind == "reduce":
        return "binomial" if bs < 2048 or bs < pof2 else "scatter_gather"
    if kind == "alltoall":
        block = bs // p
        if block < 256 and p >= 8:
            return "bruck"
        return "mvapich2_scatter_dest" if block < 32768 else ("pair" if pow2 else "ring")
    if kind == "alltoallv":
        return "bruck"
    if kind in ("allgather", "allgatherv"):
        total = bs * p if kind == "allgather" else br
        v = kind == "allgatherv"
        if pow2 and total < 524288:
            return "mpich_rdb" if v else "rdb"
        if total <= 81920:
            return "ompi_bruck" if v else "bruck"
        return "mpich_ring" if v else "ring"
    if kind in ("gather", "scatter"):
        return "ompi_binomial"
    if kind == "reduce_scatter":
        return "mpich_pair" if bs > 524288 else "mpich_rdb"
    return None


@lru_cache(maxsize=1)
def _ompi_rules() -> dict:
    text = files("minitrace").joinpath("data/ompi_collectives.json").read_text()
    return json.loads(text)["rules"]


def _walk(stmts: list, env: dict, alg: str | None) -> str | None:
    for s in stmts:
        if isinstance(s, str):
            alg = s
            continue
        var, op, n = s["if"]
        hit = env[var] < n if op == "<" else env[var] == n
        alg = _walk(s["then"] if hit else s["else"], env, alg)
    return alg


def _ompi(kind: str, p: int, bs: int, br: int) -> str | None:
    rules = _ompi_rules().get(kind)
    if rules is None:
        return None
    size = {"alltoall": bs // p, "bcast": max(bs, br), "gather": max(bs, br // p),
            "scatter": max(bs // p, br), "allgatherv": br}.get(kind, bs)
    return _walk(rules, {"communicator_size": p, "total_dsize": size,
                         "per_rank_dsize": size // p}, None)


def select(library: str, kind: str, p: int, bs: int = 0, br: int = 0) -> str | None:
    """SimGrid's name of the algorithm ``library`` runs for a ``kind`` on ``p`` members that
    sends ``bs`` and receives ``br`` bytes (per member, as the trace records them); None where
    it has no rule (scan, the v/w forms it leaves to a default)."""
    if p < 2:
        return None
    return _ompi(kind, p, bs, br) if library == "ompi" else _mpich(kind, p, bs, br)


def lowered_as(library: str, kind: str, p: int, bs: int = 0, br: int = 0) -> tuple[str, str]:
    """(the algorithm the library runs, the one the lowering writes: the same when it can)."""
    algo = select(library, kind, p, bs, br)
    pow2 = p & (p - 1) == 0
    if algo is None or (kind, algo) not in ALGORITHMS or ((kind, algo) in _POWER_OF_TWO
                                                          and not pow2):
        low = nearest(kind, p, bs)
        return algo or low, low
    return algo, algo


def _writable(kind: str, algo: str | None, p: int) -> bool:
    """Whether the lowering writes ``algo`` itself on ``p`` ranks: the algorithms whose SimGrid
    option the tests replay (others abort SimGrid 4.1's replay in its buffer copies, e.g. bcast
    ``mvapich2_knomial_intra_node``: "munmap_chunk(): invalid pointer")."""
    return algo is not None and (kind, algo) in ALGORITHMS and \
        not ((kind, algo) in _POWER_OF_TWO and p & (p - 1))


def world_plan(rows: np.ndarray, p: int, library: str, config: dict) -> tuple[dict, set]:
    """SMPI options for the blocking world collectives of ``rows`` (fields kind, flags, comm,
    bytes_sent, bytes_recv) and the kinds whose world calls must be lowered instead: a kind
    whose calls the library runs with more than one algorithm (an option holds one), or with
    one the lowering does not write itself (its option may abort SimGrid's replay; lowered, it
    is the nearest one, said so).  Kinds given in ``config`` are left to it; ``simgrid`` sets
    nothing.  SimGrid's ``redbcast`` allreduce runs the replay's reduce and bcast: when the
    trace has none of its own, they are set to the library's choice for the allreduce's sizes
    when the lowering writes it (Open MPI's non-overlapping allreduce calls its own tuned
    reduce and bcast), else to the nearest one it writes: SimGrid's defaults there are a
    linear reduce and bcast, which hide late ranks behind rank 0's serialized receives at
    scale."""
    options: dict[str, str] = {}
    lowered: set[str] = set()
    if library == "simgrid" or not len(rows):
        return options, lowered
    world = (K.mask(K.COLLECTIVES)[rows["kind"]] & (rows["comm"] == 0)
             & ((rows["flags"] & K.FLAG_INTERCOMM) == 0))
    w = rows[world]
    sizes = {K.NAME[code]: np.unique(np.stack([w["bytes_sent"], w["bytes_recv"]], axis=1)[
        w["kind"] == code], axis=0).tolist() for code in np.unique(w["kind"]).tolist()}
    if "allreduce" in sizes:
        for part in ("reduce", "bcast"):
            sizes.setdefault(part, [])
    for kind, pairs in sizes.items():
        if kind not in OPTION_KINDS or f"smpi/{kind}" in config:
            continue
        companion = not pairs       # a reduce or bcast only inside a redbcast allreduce
        if companion:
            if options.get("smpi/allreduce") != "redbcast":
                continue
            pairs = [(bs, bs) for bs, _ in sizes["allreduce"]]
        algos = {lowered_as(library, kind, p, int(bs), int(br))[1] if companion
                 else select(library, kind, p, int(bs), int(br)) for bs, br in pairs}
        algo = algos.pop() if len(algos) == 1 else None
        if _writable(kind, algo, p):
            options[f"smpi/{kind}"] = algo
        elif not companion:
            lowered.add(kind)
    return options, lowered
