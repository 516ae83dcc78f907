"""Collectives: the members of a communicator call the same collectives (blocking,
non-blocking, persistent initializations, neighborhood) in the same order, with the same root
and consistent sizes; in a neighborhood collective each neighbour receives what is sent to it
(on an intercommunicator, FLAG_INTERCOMM, only the order: roots and sizes follow other
rules)."""
import numpy as np
import pandas as pd

from .. import kinds as K
from .report import CheckContext, ValidationReport


def collective_frame(ctx: CheckContext) -> pd.DataFrame:
    """Every collective action (global rows) with what the checks of its communicator need:
    its position ``seq`` among its rank's collectives on that communicator, its ``index``."""
    rows = ctx.rows(K.ORDERED_COLLECTIVES)
    a = ctx.a
    df = pd.DataFrame({"comm": a["comm"][rows], "rank": ctx.rank[rows],
                       "row": rows + ctx.row_base, "kind": a["kind"][rows],
                       "peer": a["peer"][rows], "bs": a["bytes_sent"][rows],
                       "br": a["bytes_recv"][rows],
                       "inter": (a["flags"][rows] & K.FLAG_INTERCOMM) != 0,
                       "index": ctx.index[rows]})
    df["seq"] = df.groupby(["comm", "rank"], sort=False).cumcount()
    return df


class CollectiveRows:
    """What the collective checks read of a trace (``CheckContext``'s index, kind, rank, vectors,
    communicators, world size) for the rows of a ``collective_frame`` alone: the parallel
    validate checks each communicator on the worker its collectives were sent to."""

    def __init__(self, df: pd.DataFrame, vectors: dict, comms: dict, world: int):
        df = df.sort_values("row")
        self._rows = df["row"].to_numpy(np.int64)
        self.index, self.kind, self.rank = (self._by_row(df[c].to_numpy())
                                            for c in ("index", "kind", "rank"))
        self._vectors, self.comms, self.world = vectors, comms, world
        self.d = self

    def _by_row(self, values: np.ndarray):
        rows = self._rows

        class ByRow:
            def __getitem__(self, row):
                return values[np.searchsorted(rows, row)]
        return ByRow()

    def vector(self, row: int) -> np.ndarray:
        return self._vectors.get(int(row), np.zeros(0, np.int64))


def check_collectives_of(ctx, rep: ValidationReport, df: pd.DataFrame) -> None:
    """The collective checks of every communicator of ``df`` (``collective_frame`` rows,
    all of the communicator's members)."""
    for comm, g in df.groupby("comm", sort=True):
        rep.phase((5, int(comm)))
        members = ctx.d.comms.get(int(comm))
        if members is None:
            r0 = g.iloc[0]
            rep.add(r0["rank"], r0["index"], "unknown-comm",
                    f"{K.NAME[int(r0['kind'])]} on communicator {comm}, which the "
                    "communicator table does not list")
            continue
        members = np.asarray(members, dtype=np.int64)
        is_inter = bool(g["inter"].any())
        if is_inter and (members < 0).any():
            continue        # its other group was not traced (spawned processes)
        pos = np.full(ctx.world, -1, np.int64)
        pos[members[(members >= 0) & (members < ctx.world)]] = \
            np.nonzero((members >= 0) & (members < ctx.world))[0]
        outsider = pos[g["rank"].to_numpy()] < 0
        for r, sub in g[outsider].groupby("rank"):
            rep.add(r, sub["index"].iloc[0], "collective-mismatch",
                    f"{len(sub)} collective(s) on communicator {comm} of which rank {r} "
                    "is not a member")
        g = g[~outsider]
        _check_comm_collectives(ctx, rep, int(comm), members, g, is_inter)


def check_collectives(ctx: CheckContext, rep: ValidationReport) -> None:
    df = collective_frame(ctx)
    if len(df):
        check_collectives_of(ctx, rep, df)


_ROOTED = K.mask(n for n, b in K.BLOCKING_FORM.items() if b in K.ROOTED)


def _check_comm_collectives(ctx, rep, comm, members, g, inter: bool = False) -> None:
    """Counts and kinds per position; roots and sizes too on an intracommunicator (an
    intercommunicator's follow its own rules: MPI_ROOT, MPI_PROC_NULL, the remote group)."""
    size = len(members)
    # 1. every member calls the same number of collectives on this comm
    n_of = g.groupby("rank").size().reindex(members, fill_value=0)
    if n_of.nunique() > 1:
        most = int(n_of.max())
        for r, n in n_of.items():
            if n < most:
                rep.add(int(r), -1, "collective-mismatch",
                        f"calls {n} collective(s) on communicator {comm}, other members "
                        f"up to {most}")
    # 2. same kind and root at each position
    first = g.groupby("seq").agg(kmin=("kind", "min"), kmax=("kind", "max"),
                                 pmin=("peer", "min"), pmax=("peer", "max"), n=("kind", "size"))
    g = g.join(first, on="seq")
    kinds_bad = first.index[first.kmin != first.kmax]
    for seq in kinds_bad:
        sub = g[g.seq == seq]
        ref = sub.iloc[0]
        odd = sub[sub.kind != ref.kind]
        for t in odd.itertuples(index=False):
            rep.add(t.rank, ctx.index[t.row], "collective-mismatch",
                    f"collective {seq} on communicator {comm} is {K.NAME[int(t.kind)]} here but "
                    f"{K.NAME[int(ref.kind)]} on rank {ref['rank']}")
    if inter:
        return
    same = g[(g.kmin == g.kmax)]
    rooted = same[_ROOTED[same.kind.to_numpy()]]
    for seq in rooted.loc[rooted.pmin != rooted.pmax, "seq"].unique():
        sub = rooted[rooted.seq == seq]
        ref = sub.iloc[0]
        for t in sub[sub.peer != ref.peer].itertuples(index=False):
            rep.add(t.rank, ctx.index[t.row], "collective-mismatch",
                    f"{K.NAME[int(t.kind)]} (collective {seq} on communicator {comm}) has root "
                    f"{t.peer} here but {ref.peer} on rank {ref['rank']}")
    # 3. sizes, for complete groups of one kind and one root
    same = same[(same.n == size) & (same.pmin == same.pmax)]
    if len(same):
        _check_sizes(ctx, rep, comm, members, same)


#: Blocking form of each collective kind code (a lookup, not a Python call per row).
_BASE = np.array([K.BLOCKING_FORM.get(K.NAME.get(k, ""), "") for k in range(256)], object)


def _check_sizes(ctx, rep, comm, members, g) -> None:
    P = len(members)
    g = g.copy()
    g["base"] = _BASE[g.kind.to_numpy()]
    g["is_root"] = g["rank"].to_numpy() == g["peer"].to_numpy()
    # The value each member contributes, which must be the same on every member.
    rules = {
        "bcast": lambda t: np.where(t.is_root, t.bs, t.br),
        "reduce": lambda t: t.bs, "allreduce": lambda t: t.bs, "scan": lambda t: t.bs,
        "exscan": lambda t: t.bs, "gather": lambda t: t.bs, "allgather": lambda t: t.bs,
        "scatter": lambda t: t.br, "alltoall": lambda t: t.bs,
        "reduce_scatter_block": lambda t: t.br,
    }
    for base, sub in g.groupby("base"):
        if base in rules:
            sub = sub.assign(v=np.asarray(rules[base](sub)))
            spread = sub.groupby("seq")["v"].agg(["min", "max"])
            for seq in spread.index[spread["min"] != spread["max"]]:
                grp = sub[sub.seq == seq]
                ref = grp.v.mode().iloc[0]
                for t in grp[grp.v != ref].itertuples(index=False):
                    rep.add(t.rank, ctx.index[t.row], "collective-size-mismatch",
                            f"{K.NAME[int(t.kind)]} (collective {seq} on communicator {comm}) "
                            f"with {t.v} B here but {ref} B on the other members")
            # totals that follow from the common value
            ok_seq = spread.index[spread["min"] == spread["max"]]
            sub = sub[sub.seq.isin(ok_seq)]
            total = {"gather": ("br", "is_root"), "scatter": ("bs", "is_root"),
                     "allgather": ("br", None), "alltoall": ("br", None),
                     "reduce": ("br", "is_root")}.get(base)
            if total:
                col, only = total
                t2 = sub[sub[only]] if only else sub
                want = t2.v * (1 if base in ("alltoall", "reduce") else P)
                for t, w in zip(t2[t2[col] != want].itertuples(index=False), want[t2[col] != want]):
                    rep.add(t.rank, ctx.index[t.row], "collective-size-mismatch",
                            f"{K.NAME[int(t.kind)]} (collective {t.seq} on communicator "
                            f"{comm}) {'receives' if col == 'br' else 'sends'} "
                            f"{getattr(t, col)} B, expected {int(w)} B")
        elif base in K.VECTOR_KINDS:
            _check_vectors(ctx, rep, comm, members, base, sub)
        elif base in K.NEIGHBOR_COLLECTIVES:
            _check_neighbors(ctx, rep, comm, sub)


def _check_neighbors(ctx, rep, comm, g) -> None:
    """Neighborhood collectives: what a member sends to an out-neighbour is what that member
    receives from it as an in-neighbour (as many times, with the same bytes)."""
    edges: dict[str, list] = {"out": [], "in": []}
    for t in g.itertuples(index=False):
        v = ctx.d.vector(int(t.row)).tolist()
        ni, no = (v + [0, 0])[:2]
        if len(v) != 2 + 2 * (ni + no):
            rep.add(t.rank, ctx.index[t.row], "collective-size-mismatch",
                    f"{K.NAME[int(t.kind)]} (collective {t.seq} on communicator {comm}) has no "
                    "neighbour vector")
            continue
        ins, outs = v[2:2 + ni], v[2 + ni:2 + ni + no]
        inb, outb = v[2 + ni + no:2 + 2 * ni + no], v[2 + 2 * ni + no:]
        edges["out"] += [(t.seq, t.rank, j, b, t.row) for j, b in zip(outs, outb) if j >= 0]
        edges["in"] += [(t.seq, i, t.rank, b, t.row) for i, b in zip(ins, inb) if i >= 0]
    key = ["seq", "src", "dst"]
    f = {side: pd.DataFrame(e, columns=key + ["bytes", "row"]).sort_values(key + ["bytes"])
         for side, e in edges.items()}
    for side in f.values():
        side["occ"] = side.groupby(key).cumcount()
    m = f["out"].merge(f["in"], on=key + ["occ"], how="outer", suffixes=("_s", "_r"))
    for t in m[m.bytes_s.isna() | m.bytes_r.isna() | (m.bytes_s != m.bytes_r)].itertuples():
        sender = not np.isnan(t.row_s)
        row = int(t.row_s if sender else t.row_r)
        what = (f"sends {int(t.bytes_s)} B to {t.dst}" if sender else
                f"receives {int(t.bytes_r)} B from {t.src}")
        expect = ("which expects " + (f"{int(t.bytes_r)} B" if sender else
                                      f"{int(t.bytes_s)} B")
                  if not (np.isnan(t.bytes_s) or np.isnan(t.bytes_r)) else
                  "which does not list this exchange")
        rep.add(ctx.rank[row], ctx.index[row], "collective-size-mismatch",
                f"{K.NAME[int(ctx.kind[row])]} (collective {t.seq} on communicator {comm}) "
                f"{what} {expect}")


def _check_vectors(ctx, rep, comm, members, base, g) -> None:
    """Per-peer byte vectors against what the peers themselves declare."""
    P = len(members)
    pos = {int(r): i for i, r in enumerate(members)}
    # numpy slices per call, not a pandas group each (public Intel MPI Benchmarks IMB-MPI1,
    # 2 ranks: 87% of validate's 34 s went to 3,472 of them)
    cols = {c: g[c].to_numpy() for c in ("seq", "row", "kind", "bs", "br", "is_root")}
    at = np.lexsort((np.array([pos[int(r)] for r in g["rank"]], np.int64), cols["seq"]))
    cols = {c: v[at] for c, v in cols.items()}
    seqs = cols["seq"]
    bounds = np.flatnonzero(np.r_[True, seqs[1:] != seqs[:-1], True]) if len(seqs) else []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        seq, rows = seqs[lo], cols["row"][lo:hi]
        bs, br, is_root = cols["bs"][lo:hi], cols["br"][lo:hi], cols["is_root"][lo:hi]
        vecs = [ctx.d.vector(int(r)) for r in rows]
        name = K.NAME[int(cols["kind"][lo])]
        where = f"{name} (collective {seq} on communicator {comm})"
        bad: list[tuple[int, str]] = []
        if base in ("gatherv", "scatterv"):
            roots = np.nonzero(is_root)[0]
            if len(roots):
                v = vecs[int(roots[0])]
                mine = bs if base == "gatherv" else br
                if len(v) != P:
                    bad.append((int(rows[roots[0]]), f"{where}: root vector has {len(v)} "
                                f"entries for {P} members"))
                else:
                    for i in np.nonzero(v != mine)[0]:
                        bad.append((int(rows[i]), f"{where}: "
                                    f"{'sends' if base == 'gatherv' else 'receives'} "
                                    f"{int(mine[i])} B but the root expects {int(v[i])} B"))
        elif base in ("allgatherv", "reduce_scatter"):
            mine = bs if base == "allgatherv" else br
            for i, v in enumerate(vecs):
                if len(v) != P:
                    bad.append((int(rows[i]), f"{where}: vector has {len(v)} entries "
                                f"for {P} members"))
                elif not np.array_equal(v, vecs[0]) or \
                        (base == "allgatherv" and not np.array_equal(v, mine)) or \
                        (base == "reduce_scatter" and v[i] != mine[i]):
                    bad.append((int(rows[i]), f"{where}: per-member bytes "
                                f"{v.tolist()[:8]} disagree with the other members"))
        else:  # alltoallv / alltoallw: what i sends to j is what j receives from i
            if any(len(v) != 2 * P for v in vecs):
                for i, v in enumerate(vecs):
                    if len(v) != 2 * P:
                        bad.append((int(rows[i]), f"{where}: vector has {len(v)} "
                                    f"entries, expected {2 * P}"))
            else:
                m = np.stack(vecs)
                send, recv = m[:, :P], m[:, P:]
                for i, j in zip(*np.nonzero(send != recv.T)):
                    bad.append((int(rows[i]), f"{where}: sends {int(send[i, j])} B to "
                                f"member {j} which expects {int(recv[j, i])} B"))
        for row, msg in bad:
            rep.add(ctx.rank[row], ctx.index[row], "collective-size-mismatch", msg)
