"""Structure: every rank has ``init`` first and ``finalize`` last among its MPI actions."""
import numpy as np

from .. import kinds as K
from .report import CheckContext, ValidationReport


# -- structure --------------------------------------------------------------------------------
def check_structure(ctx: CheckContext, rep: ValidationReport) -> None:
    mpi = ~K.mask(K.NON_MPI)[ctx.kind]
    init, fin = ctx.kind == K.CODE["init"], ctx.kind == K.CODE["finalize"]
    rep.phase((2,))
    for local in range(ctx.d.nranks):  # one pass per rank, vectorised within it
        s, r = ctx.d.rank_slice(local), local + ctx.rank_base
        rows = np.nonzero(mpi[s])[0]
        if not init[s].any():
            rep.add(r, -1, "missing-init", "no init")
        elif rows[0] != np.argmax(init[s]):
            rep.add(r, int(rows[0]), "init-not-first",
                    f"{K.NAME[int(ctx.kind[s][rows[0]])]} before init")
        if not fin[s].any():
            rep.add(r, -1, "missing-finalize", "no finalize (the run may have been cut short)")
        elif rows[-1] != len(fin[s]) - 1 - np.argmax(fin[s][::-1]):
            rep.add(r, int(rows[-1]), "finalize-not-last",
                    f"{K.NAME[int(ctx.kind[s][rows[-1]])]} after finalize")
