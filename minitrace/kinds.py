"""The vocabulary of the trace model: every action kind, with a stable numeric code.

Codes are part of the file format (the ``kind`` column stores them) and must never be
renumbered; new kinds are appended.  Names are lower-case MPI names without the ``MPI_``
prefix, so ``MPI_Isend`` is ``isend``; the MPI-4 big-count ``_c`` forms map to the same kind.
"""
from __future__ import annotations

import numpy as np

# (code, name, category).  Categories drive validation and export:
#   meta     - program structure (init, finalize, compute, markers)
#   send     - a point-to-point send (blocking or non-blocking)
#   recv     - a point-to-point receive
#   p2p      - other point-to-point (sendrecv, probes)
#   persist  - persistent / partitioned request set-up and use
#   complete - request completion
#   coll     - a blocking collective
#   icoll    - a non-blocking collective (completes through a request)
#   comm     - communicator management
#   ncoll    - a blocking neighborhood collective (per-neighbour vector)
#   incoll   - a non-blocking neighborhood collective
#   pcoll    - a persistent collective's initialization (MPI-4; started by start/startall)
#   win      - one-sided window creation and freeing
#   rma      - a one-sided communication (put, get, accumulate...)
#   rsync    - one-sided synchronization (fence, lock/unlock, flush, post/start/complete/wait)
#   io       - MPI-IO (file open/close, view, sync, reads and writes)
KINDS: list[tuple[int, str, str]] = [
    (0, "init", "meta"), (1, "finalize", "meta"), (2, "compute", "meta"), (3, "sleep", "meta"),
    (4, "abort", "meta"), (5, "region_begin", "meta"), (6, "region_end", "meta"),
    (7, "pause", "meta"), (8, "resume", "meta"),
    (10, "send", "send"), (11, "ssend", "send"), (12, "bsend", "send"), (13, "rsend", "send"),
    (14, "isend", "send"), (15, "issend", "send"), (16, "ibsend", "send"), (17, "irsend", "send"),
    (20, "recv", "recv"), (21, "irecv", "recv"),
    (22, "sendrecv", "p2p"), (23, "sendrecv_replace", "p2p"), (24, "probe", "p2p"),
    (25, "iprobe", "p2p"), (26, "cancel", "p2p"),
    (30, "send_init", "persist"), (31, "ssend_init", "persist"), (32, "bsend_init", "persist"),
    (33, "rsend_init", "persist"), (34, "recv_init", "persist"), (35, "start", "persist"),
    (36, "startall", "persist"), (37, "request_free", "persist"),
    (38, "psend_init", "persist"), (39, "precv_init", "persist"), (40, "pready", "persist"),
    (41, "pready_range", "persist"), (42, "pready_list", "persist"), (43, "parrived", "persist"),
    (50, "wait", "complete"), (51, "waitall", "complete"), (52, "waitany", "complete"),
    (53, "waitsome", "complete"), (54, "test", "complete"), (55, "testall", "complete"),
    (56, "testany", "complete"), (57, "testsome", "complete"),
    (60, "barrier", "coll"), (61, "bcast", "coll"), (62, "reduce", "coll"),
    (63, "allreduce", "coll"), (64, "reduce_scatter", "coll"),
    (65, "reduce_scatter_block", "coll"), (66, "scan", "coll"), (67, "exscan", "coll"),
    (68, "gather", "coll"), (69, "gatherv", "coll"), (70, "scatter", "coll"),
    (71, "scatterv", "coll"), (72, "allgather", "coll"), (73, "allgatherv", "coll"),
    (74, "alltoall", "coll"), (75, "alltoallv", "coll"), (76, "alltoallw", "coll"),
    (80, "ibarrier", "icoll"), (81, "ibcast", "icoll"), (82, "ireduce", "icoll"),
    (83, "iallreduce", "icoll"), (84, "ireduce_scatter", "icoll"),
    (85, "ireduce_scatter_block", "icoll"), (86, "iscan", "icoll"), (87, "iexscan", "icoll"),
    (88, "igather", "icoll"), (89, "igatherv", "icoll"), (90, "iscatter", "icoll"),
    (91, "iscatterv", "icoll"), (92, "iallgather", "icoll"), (93, "iallgatherv", "icoll"),
    (94, "ialltoall", "icoll"), (95, "ialltoallv", "icoll"), (96, "ialltoallw", "icoll"),
    (100, "comm_split", "comm"), (101, "comm_split_type", "comm"), (102, "comm_dup", "comm"),
    (103, "comm_create", "comm"), (104, "comm_free", "comm"), (105, "comm_size", "comm"),
    (106, "comm_idup", "comm"), (107, "comm_create_group", "comm"), (108, "cart_create", "comm"),
    (110, "mprobe", "p2p"), (111, "improbe", "p2p"), (112, "mrecv", "recv"), (113, "imrecv", "recv"),
    (114, "cart_sub", "comm"), (115, "comm_create_from_group", "comm"),
    (116, "intercomm_create", "comm"), (117, "intercomm_create_from_groups", "comm"),
    (118, "intercomm_merge", "comm"), (119, "comm_spawn", "comm"),
    (120, "comm_spawn_multiple", "comm"), (121, "graph_create", "comm"),
    (122, "dist_graph_create", "comm"), (123, "dist_graph_create_adjacent", "comm"),
    (124, "neighbor_allgather", "ncoll"), (125, "neighbor_allgatherv", "ncoll"),
    (126, "neighbor_alltoall", "ncoll"), (127, "neighbor_alltoallv", "ncoll"),
    (128, "neighbor_alltoallw", "ncoll"), (129, "ineighbor_allgather", "incoll"),
    (130, "ineighbor_allgatherv", "incoll"), (131, "ineighbor_alltoall", "incoll"),
    (132, "ineighbor_alltoallv", "incoll"), (133, "ineighbor_alltoallw", "incoll"),
    (134, "barrier_init", "pcoll"), (135, "bcast_init", "pcoll"), (136, "reduce_init", "pcoll"),
    (137, "allreduce_init", "pcoll"), (138, "reduce_scatter_init", "pcoll"),
    (139, "reduce_scatter_block_init", "pcoll"), (140, "scan_init", "pcoll"),
    (141, "exscan_init", "pcoll"), (142, "gather_init", "pcoll"), (143, "gatherv_init", "pcoll"),
    (144, "scatter_init", "pcoll"), (145, "scatterv_init", "pcoll"),
    (146, "allgather_init", "pcoll"), (147, "allgatherv_init", "pcoll"),
    (148, "alltoall_init", "pcoll"), (149, "alltoallv_init", "pcoll"),
    (150, "alltoallw_init", "pcoll"), (151, "neighbor_allgather_init", "pcoll"),
    (152, "neighbor_allgatherv_init", "pcoll"), (153, "neighbor_alltoall_init", "pcoll"),
    (154, "neighbor_alltoallv_init", "pcoll"), (155, "neighbor_alltoallw_init", "pcoll"),
    (156, "win_create", "win"), (157, "win_allocate", "win"), (158, "win_allocate_shared", "win"),
    (159, "win_create_dynamic", "win"), (160, "win_free", "win"), (161, "put", "rma"),
    (162, "get", "rma"), (163, "accumulate", "rma"), (164, "get_accumulate", "rma"),
    (165, "fetch_and_op", "rma"), (166, "compare_and_swap", "rma"), (167, "rput", "rma"),
    (168, "rget", "rma"), (169, "raccumulate", "rma"), (170, "rget_accumulate", "rma"),
    (171, "win_fence", "rsync"), (172, "win_lock", "rsync"), (173, "win_unlock", "rsync"),
    (174, "win_lock_all", "rsync"), (175, "win_unlock_all", "rsync"), (176, "win_flush", "rsync"),
    (177, "win_flush_all", "rsync"), (178, "win_flush_local", "rsync"),
    (179, "win_flush_local_all", "rsync"), (180, "win_post", "rsync"), (181, "win_start", "rsync"),
    (182, "win_complete", "rsync"), (183, "win_wait", "rsync"), (184, "win_test", "rsync"),
    (185, "win_sync", "rsync"),
    (186, "file_open", "io"), (187, "file_close", "io"), (188, "file_set_view", "io"),
    (189, "file_sync", "io"), (190, "file_read", "io"), (191, "file_read_all", "io"),
    (192, "file_read_at", "io"), (193, "file_read_at_all", "io"), (194, "file_write", "io"),
    (195, "file_write_all", "io"), (196, "file_write_at", "io"), (197, "file_write_at_all", "io"),
    (198, "file_iread", "io"), (199, "file_iread_all", "io"), (200, "file_iread_at", "io"),
    (201, "file_iread_at_all", "io"), (202, "file_iwrite", "io"), (203, "file_iwrite_all", "io"),
    (204, "file_iwrite_at", "io"), (205, "file_iwrite_at_all", "io"),
    (206, "file_read_shared", "io"), (207, "file_read_ordered", "io"),
    (208, "file_iread_shared", "io"), (209, "file_write_shared", "io"),
    (210, "file_write_ordered", "io"), (211, "file_iwrite_shared", "io"),
    (212, "file_read_all_begin", "io"), (213, "file_read_all_end", "io"),
    (214, "file_read_at_all_begin", "io"), (215, "file_read_at_all_end", "io"),
    (216, "file_read_ordered_begin", "io"), (217, "file_read_ordered_end", "io"),
    (218, "file_write_all_begin", "io"), (219, "file_write_all_end", "io"),
    (220, "file_write_at_all_begin", "io"), (221, "file_write_at_all_end", "io"),
    (222, "file_write_ordered_begin", "io"), (223, "file_write_ordered_end", "io"),
    (224, "file_set_size", "io"), (225, "file_preallocate", "io"), (226, "file_delete", "io"),
    (227, "isendrecv", "p2p"), (228, "isendrecv_replace", "p2p"),
]

CODE: dict[str, int] = {name: code for code, name, _ in KINDS}
NAME: dict[int, str] = {code: name for code, name, _ in KINDS}
CATEGORY: dict[str, str] = {name: cat for _, name, cat in KINDS}


def _category(*cats: str) -> frozenset[str]:
    return frozenset(n for _, n, c in KINDS if c in cats)


# Named kind sets: every consumer (validation, converters, merge, export) uses these, never its own.
#: Blocking point-to-point sends.
BLOCKING_SENDS = frozenset({"send", "ssend", "bsend", "rsend"})
#: Non-blocking point-to-point sends (create a request).
NONBLOCKING_SENDS = frozenset({"isend", "issend", "ibsend", "irsend"})
#: Every point-to-point send, blocking or not.
SENDS = BLOCKING_SENDS | NONBLOCKING_SENDS
#: Matched probes (MPI_Mprobe/MPI_Improbe): a successful one dequeues a message, received later
#: by a matched receive; vector ``[message id]``.
MATCHED_PROBES = frozenset({"mprobe", "improbe"})
#: Receives of a probed message (MPI_Mrecv/MPI_Imrecv); vector ``[message id]`` of their probe.
MATCHED_RECVS = frozenset({"mrecv", "imrecv"})
#: Every point-to-point receive, blocking or not.
RECVS = frozenset({"recv", "irecv"}) | MATCHED_RECVS
#: Combined send-and-receive calls.
SENDRECVS = frozenset({"sendrecv", "sendrecv_replace"})
#: Their MPI-4 non-blocking forms, with a request; the receive half (vector ``[source, tag]``,
#: ``bytes_recv``) is as posted (a wildcard: -1 and FLAG_UNRESOLVED).
NONBLOCKING_SENDRECVS = frozenset({"isendrecv", "isendrecv_replace"})
#: Persistent send set-ups (``MPI_Send_init`` and its modes).
SEND_INITS = frozenset({"send_init", "ssend_init", "bsend_init", "rsend_init"})
#: Receiving persistent or partitioned request set-ups.
RECV_INITS = frozenset({"recv_init", "precv_init"})
#: Every persistent or partitioned request set-up (the sending ones are ``INITS - RECV_INITS``).
INITS = SEND_INITS | RECV_INITS | {"psend_init"}
#: Activations of persistent or partitioned requests (``start``: ``request``; ``startall``: the
#: vector of request ids).
STARTS = frozenset({"start", "startall"})
#: Blocking collectives.
COLLECTIVES = _category("coll")
#: Non-blocking collectives (complete through a request).
NONBLOCKING_COLLECTIVES = _category("icoll")
#: Every collective, blocking or not.
ALL_COLLECTIVES = COLLECTIVES | NONBLOCKING_COLLECTIVES
#: Reductions: the data is combined with an operator, so the collective also computes.
REDUCTIONS = frozenset({"reduce", "allreduce", "reduce_scatter", "reduce_scatter_block", "scan",
                        "exscan", "ireduce", "iallreduce", "ireduce_scatter",
                        "ireduce_scatter_block", "iscan", "iexscan"})
#: Request completions; the ``*_ANY``/single forms complete at most one request.
COMPLETIONS = _category("complete")
SINGLE_COMPLETIONS = frozenset({"wait", "waitany", "test", "testany"})
MULTI_COMPLETIONS = COMPLETIONS - SINGLE_COMPLETIONS
#: Completions of a whole list, all its requests or none: the list's order means nothing.
ALL_OR_NONE_COMPLETIONS = frozenset({"waitall", "testall"})
TESTS = frozenset({"test", "testany", "testall", "testsome"})
#: Communicator management.
COMM_KINDS = _category("comm")
#: Communicator creations whose ``request`` is the new communicator's id (``comm_idup``'s is its
#: request: its communicator is learned when first used).
NEW_COMM_KINDS = COMM_KINDS - {"comm_free", "comm_size", "comm_idup"}
#: Program structure that is not an MPI call.
NON_MPI = frozenset({"compute", "sleep", "region_begin", "region_end", "pause", "resume"})
#: Kinds whose volume is the program's own work; any other kind's volume is the CPU time
#: spent inside an MPI call (a reduction's, or a busy-polling wait's), which a replay does not
#: take for work.
WORK = frozenset({"compute", "sleep"})
#: Collectives with a root (the ``peer`` column holds the root's world rank).
ROOTED = frozenset({"bcast", "reduce", "gather", "gatherv", "scatter", "scatterv",
                    "ibcast", "ireduce", "igather", "igatherv", "iscatter", "iscatterv"})
#: Kinds with a per-peer vector in the side table (see docs/FORMAT.md for what each holds).
VECTOR_KINDS = frozenset({"gatherv", "scatterv", "allgatherv", "alltoallv", "alltoallw",
                          "reduce_scatter", "igatherv", "iscatterv", "iallgatherv",
                          "ialltoallv", "ialltoallw", "ireduce_scatter"})
#: Non-blocking kinds that create a request completed later by a wait/test.
REQUEST_KINDS = NONBLOCKING_SENDS | {"irecv", "imrecv", "comm_idup"} | NONBLOCKING_COLLECTIVES | \
    _category("incoll") | {"rput", "rget", "raccumulate", "rget_accumulate"} | \
    NONBLOCKING_SENDRECVS | \
    frozenset(n for _, n, c in KINDS if c == "io" and n.startswith("file_i"))
#: Blocking collective kind for each non-blocking one (``iallreduce`` -> ``allreduce``).
BLOCKING_OF = {n: n[1:] for n in NONBLOCKING_COLLECTIVES}
#: Neighborhood collectives, blocking, non-blocking and persistent: vector ``[n_in, n_out,
#: in-neighbours, out-neighbours, bytes from each in-neighbour, bytes to each out-neighbour]``.
NEIGHBOR_COLLECTIVES = _category("ncoll")
NONBLOCKING_NEIGHBOR_COLLECTIVES = _category("incoll")
#: Persistent collective initializations (``allreduce_init``, ``neighbor_alltoall_init``, ...):
#: collective calls that create an inactive persistent request.
PERSISTENT_COLLECTIVES = _category("pcoll")
ALL_NEIGHBOR_COLLECTIVES = NEIGHBOR_COLLECTIVES | NONBLOCKING_NEIGHBOR_COLLECTIVES | \
    frozenset(n + "_init" for n in NEIGHBOR_COLLECTIVES)
#: One-sided: window creations (``tag``: the window id, unique per rank; vector ``[size,
#: disp_unit]``), communications (``tag``: window, ``peer``: target, vector ``[target_disp]``;
#: ``r*`` forms create a request) and synchronizations (``tag``: window).
WINDOW_CREATIONS = _category("win") - {"win_free"}
RMA_OPS = _category("rma")
RMA_SYNCS = _category("rsync")
ONE_SIDED = _category("win", "rma", "rsync")
#: MPI-IO: ``tag`` the file id (unique per rank), ``comm`` the file's communicator; reads have
#: ``bytes_recv``, writes ``bytes_sent``, vector ``[offset]`` when known (see docs/FORMAT.md).
IO_KINDS = _category("io")
NONBLOCKING_IO = frozenset(n for n in IO_KINDS if n.startswith("file_i"))
#: Every collective call a communicator's members make in the same order.
ORDERED_COLLECTIVES = ALL_COLLECTIVES | NEIGHBOR_COLLECTIVES | \
    NONBLOCKING_NEIGHBOR_COLLECTIVES | PERSISTENT_COLLECTIVES
#: The blocking form of every collective kind (itself for a blocking one).
BLOCKING_FORM = {**{n: n for n in COLLECTIVES | NEIGHBOR_COLLECTIVES}, **BLOCKING_OF,
                 **{n: n[1:] for n in NONBLOCKING_NEIGHBOR_COLLECTIVES},
                 **{n: n[:-len("_init")] for n in PERSISTENT_COLLECTIVES}}


def codes(names) -> np.ndarray:
    """Sorted int array of the codes of ``names`` (for ``np.isin``)."""
    return np.array(sorted(CODE[n] for n in names), dtype=np.uint8)


def mask(names) -> np.ndarray:
    """Boolean lookup table over all 256 codes: ``mask(SENDS)[actions["kind"]]``."""
    m = np.zeros(256, dtype=bool)
    m[codes(names)] = True
    return m


# Bits of the ``flags`` column.
FLAG_ANY_SOURCE = 1      # receive posted with MPI_ANY_SOURCE, peer resolved from the status
FLAG_ANY_TAG = 2         # receive posted with MPI_ANY_TAG, tag resolved from the status
FLAG_IN_PLACE = 4        # collective called with MPI_IN_PLACE
FLAG_COMPLETED = 8       # a test* call that completed at least one request; a persistent
                         # receive's start that holds its message's source, tag and size
FLAG_UNRESOLVED = 16     # a receive whose completion was never seen (peer/size as posted)
FLAG_PERSISTENT = 32     # a start of a persistent (not partitioned) request
FLAG_PARTITIONED = 64    # a start of a partitioned request
FLAG_INTERCOMM = 128     # on an intercommunicator (or creating one): peers are world ranks of the
                         # remote group; collectives' roots and sizes follow intercomm rules


def code(name: str) -> int:
    """Code of a kind name; raises KeyError with the list of known kinds."""
    try:
        return CODE[name]
    except KeyError:
        raise KeyError(f"unknown action kind {name!r}") from None
