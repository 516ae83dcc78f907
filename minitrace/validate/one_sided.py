"""One-sided: every RMA operation (and flush) lies in an access epoch to its target on a window
the rank created (after a fence, inside lock/unlock of the target or lock_all/unlock_all,
inside start/complete naming it), and epochs close (no unlock without lock, every lock,
lock_all, start and post closed before the window is freed or the rank ends)."""
from collections import Counter

from .. import kinds as K
from .report import CheckContext, ValidationReport


class _Window:
    """The epochs open on one window of one rank."""

    def __init__(self):
        self.fence = False            # a fence was called: active-target epochs from then on
        self.locks: Counter = Counter()   # target -> locks held
        self.lock_all = False
        self.start: set | None = None     # the targets of an open start/complete epoch
        self.post = False

    def open_epochs(self) -> list[str]:
        return ([f"lock of {t}" for t, n in sorted(self.locks.items()) if n] +
                ["lock_all"] * self.lock_all + ["start"] * (self.start is not None) +
                ["post"] * self.post)

    def reaches(self, target: int) -> bool:
        return self.fence or self.lock_all or self.locks[target] > 0 or \
            (self.start is not None and target in self.start)


def check_one_sided(ctx: CheckContext, rep: ValidationReport) -> None:
    """Epochs per rank and window, walking the rank's one-sided actions in order (few)."""
    rows = ctx.rows(K.ONE_SIDED | {"finalize"})
    if not len(ctx.rows(K.ONE_SIDED)):
        return
    a = ctx.a
    creations, ops, syncs = (K.mask(s) for s in (K.WINDOW_CREATIONS, K.RMA_OPS, K.RMA_SYNCS))
    passive_only = {"win_flush", "win_flush_local"}
    wins: dict[tuple, _Window] = {}
    rep.phase((6,))

    def add(row, cat, msg):
        rep.add(ctx.rank[row], ctx.index[row], cat, f"{K.NAME[int(ctx.kind[row])]} {msg}")

    def not_closed(row, key, w, what):
        if w.open_epochs():
            add(row, "rma-epoch-not-closed", f"{what} window {key[1]} while epochs are open: "
                f"{', '.join(w.open_epochs())}")

    for row in rows.tolist():
        rank, k = int(ctx.rank[row]), int(ctx.kind[row])
        name, key, peer = K.NAME[k], (int(ctx.rank[row]), int(a["tag"][row])), int(a["peer"][row])
        if name == "finalize":
            for (r, wid), w in list(wins.items()):
                if r == rank:
                    not_closed(row, (r, wid), w, "ends the rank with")
            continue
        if creations[k]:
            wins[key] = _Window()
            continue
        w = wins.get(key)
        if w is None:
            add(row, "rma-unknown-window", f"on window {key[1]}, which this rank did not create "
                "(or freed)")
            continue
        if name == "win_free":
            not_closed(row, key, w, "frees")
            del wins[key]
        elif ops[k] or name in passive_only:
            ok = w.reaches(peer) if name not in passive_only else \
                (w.lock_all or w.locks[peer] > 0)
            if peer >= 0 and not ok:
                add(row, "rma-outside-epoch", f"to {peer} on window {key[1]} outside any access "
                    "epoch to it")
        elif name in ("win_flush_all", "win_flush_local_all"):
            if not (w.lock_all or any(w.locks.values())):
                add(row, "rma-outside-epoch", f"on window {key[1]} outside a passive epoch")
        elif syncs[k]:
            bad = _epoch_step(ctx, w, name, row, peer)
            if bad:
                add(row, "rma-epoch-mismatch", f"on window {key[1]}: {bad}")


def _epoch_step(ctx: CheckContext, w: _Window, name: str, row: int, peer: int) -> str:
    """Apply one synchronization to ``w``; what is wrong with it, or ''."""
    if name == "win_fence":
        w.fence = True
    elif name == "win_lock":
        if w.locks[peer]:
            return f"{peer} is already locked"
        w.locks[peer] += 1
    elif name == "win_unlock":
        if not w.locks[peer]:
            return f"{peer} is not locked"
        w.locks[peer] -= 1
    elif name in ("win_lock_all", "win_unlock_all"):
        if w.lock_all == (name == "win_lock_all"):
            return "lock_all is " + ("already" if w.lock_all else "not") + " held"
        w.lock_all = not w.lock_all
    elif name == "win_start":
        if w.start is not None:
            return "a start epoch is already open"
        w.start = set(ctx.d.vector(row).tolist())
    elif name == "win_complete":
        if w.start is None:
            return "no start epoch is open"
        w.start = None
    elif name == "win_post":
        if w.post:
            return "an exposure epoch is already open"
        w.post = True
    elif name == "win_wait" or (name == "win_test" and ctx.a["flags"][row] & K.FLAG_COMPLETED):
        if not w.post:
            return "no exposure epoch (post) is open"
        w.post = False
    return ""
