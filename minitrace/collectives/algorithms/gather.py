"""Gather(v) and scatter(v) algorithms (SimGrid's ``colls/gather/``, ``colls/scatter/``)."""
from __future__ import annotations


def gather_linear(me, p, root, bs, br, vec):
    if me != root:
        return [("send", root, bs)]
    return [("recv", i, br // p) for i in range(p) if i != root]


def gatherv_linear(me, p, root, bs, br, vec):
    if me != root:
        return [("send", root, bs)]
    return [("recv", i, vec[i]) for i in range(p) if i != root]


def scatter_linear(me, p, root, bs, br, vec):
    if me != root:
        return [("recv", root, br)]
    return [("send", i, bs // p) for i in range(p) if i != root]


def scatterv_linear(me, p, root, bs, br, vec):
    if me != root:
        return [("recv", root, br)]
    return [("send", i, vec[i]) for i in range(p) if i != root]


def _in_order_bmtree(vrank: int, p: int) -> tuple[int | None, list[int]]:
    """Open MPI's in-order binomial tree on ranks relative to the root: (parent, children)."""
    children, mask = [], 1
    while mask < p:
        remote = vrank ^ mask
        if remote < vrank:
            return remote, children
        if remote < p:
            children.append(remote)
        mask <<= 1
    return None, children


def _subtree(vrank: int, vkid: int, p: int) -> int:
    """Blocks of the subtree below ``vkid``, a child of ``vrank``."""
    return min(vkid - vrank, p - vkid)


def gather_binomial(me, p, root, bs, br, vec):
    """Children's subtrees gathered up an in-order binomial tree, then sent to the parent."""
    vrank = (me - root) % p
    block = br // p if me == root else bs
    parent, children = _in_order_bmtree(vrank, p)
    out, total = [], 1
    for vk in children:
        out.append(("recv", (vk + root) % p, _subtree(vrank, vk, p) * block))
        total += _subtree(vrank, vk, p)
    if parent is not None:
        out.append(("send", (parent + root) % p, total * block))
    return out


def scatter_binomial(me, p, root, bs, br, vec):
    """The parent's share received, then each child's subtree sent down."""
    vrank = (me - root) % p
    block = bs // p if me == root else br
    parent, children = _in_order_bmtree(vrank, p)
    out = []
    if parent is not None:
        mine = 1 + sum(_subtree(vrank, vk, p) for vk in children)
        out.append(("recv", (parent + root) % p, mine * block))
    for vk in children:
        out.append(("send", (vk + root) % p, _subtree(vrank, vk, p) * block))
    return out


STEPS = {"gather": {"ompi_basic_linear": gather_linear, "ompi_binomial": gather_binomial},
         "gatherv": {"linear": gatherv_linear},
         "scatter": {"ompi_basic_linear": scatter_linear, "ompi_binomial": scatter_binomial},
         "scatterv": {"linear": scatterv_linear}}
