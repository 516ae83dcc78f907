"""The point-to-point steps of each collective algorithm minitrace can lower, one module per
collective and one entry per algorithm, named as SimGrid names them (``src/smpi/colls/<kind>/
<kind>-<algorithm>.cpp``), message for message.

Every entry is ``steps(me, p, root, bytes_sent, bytes_recv, vector) -> list`` in communicator
ranks, in the order the algorithm makes them: ``("send", to, bytes)``, ``("recv", from, bytes)``,
``("sendrecv", to, bytes, from, bytes)``, or ``("all", [(to, bytes)...], [(from, bytes)...])``:
receives and sends posted together and waited for together.  Exchanges with itself are local
copies: left out.
"""
from __future__ import annotations

from . import allgather, allreduce, alltoall, barrier, bcast, gather, reduce, reduce_scatter, scan

#: (kind, algorithm) -> its steps
ALGORITHMS = {(kind, name): fn
              for module in (allgather, allreduce, alltoall, barrier, bcast, gather, reduce,
                             reduce_scatter, scan)
              for kind, table in module.STEPS.items() for name, fn in table.items()}
