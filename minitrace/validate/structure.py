"""Structure: every rank has one ``init``, first among its MPI actions, and one ``finalize``,
after which it does nothing but close user regions (a replay would time the work after it)."""
import numpy as np

from .. import kinds as K
from .report import CheckContext, ValidationReport

#: What may follow finalize: the end of user regions (an OTF2 trace's main ends after it).
_AFTER_FINALIZE = {"region_begin", "region_end"}


def check_structure(ctx: CheckContext, rep: ValidationReport) -> None:
    mpi = ~K.mask(K.NON_MPI)[ctx.kind]
    late = ~K.mask(_AFTER_FINALIZE)[ctx.kind]
    init, fin = ctx.kind == K.CODE["init"], ctx.kind == K.CODE["finalize"]
    rep.phase((2,))
    for local in range(ctx.d.nranks):  # one pass per rank, vectorised within it
        s, r = ctx.d.rank_slice(local), local + ctx.rank_base
        rows = np.nonzero(mpi[s])[0]
        inits, fins = np.nonzero(init[s])[0], np.nonzero(fin[s])[0]
        if not len(inits):
            rep.add(r, -1, "missing-init", "no init")
        elif rows[0] != inits[0]:
            rep.add(r, int(rows[0]), "init-not-first",
                    f"{K.NAME[int(ctx.kind[s][rows[0]])]} before init")
        if len(inits) > 1:
            rep.add(r, int(inits[1]), "repeated-init", "a second init (MPI is initialized once)")
        if not len(fins):
            rep.add(r, -1, "missing-finalize", "no finalize (the run may have been cut short)")
            continue
        if len(fins) > 1:
            rep.add(r, int(fins[1]), "repeated-finalize",
                    "a second finalize (MPI is finalized once)")
        after = fins[0] + 1 + np.nonzero(late[s][fins[0] + 1:])[0]
        if len(after):
            rep.add(r, int(after[0]), "finalize-not-last",
                    f"{K.NAME[int(ctx.kind[s][after[0]])]} after finalize")
