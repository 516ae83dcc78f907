/* Neighborhood collectives: who the neighbours are, and the persistent collectives' requests.
 *
 * A neighborhood collective's vector is [n_in, n_out, in-neighbours, out-neighbours, bytes
 * received from each in-neighbour, bytes sent to each out-neighbour] (world ranks, -1 for
 * MPI_PROC_NULL), in the order MPI defines for the communicator's topology: Cartesian, per
 * dimension the negative then the positive direction (in = out); graph, the graph's neighbours
 * (in = out); distributed graph, its sources and destinations.  The neighbours are asked of MPI
 * at each call (a few PMPI calls, on these calls only).  Included by generate.py after
 * shim_runtime.c.
 */

typedef struct {
    int nin, nout;
    int64_t *in_bytes, *out_bytes;
} mt_nbrs;

/* Fill the neighbour part of R's vector; 0 when comm has no topology (or no memory). */
static int mt_neighbors(mt_thread *T, mt_rec *R, MPI_Comm comm, const mt_comm *CI, mt_nbrs *N) {
    int st = MPI_UNDEFINED, nin = 0, nout = 0, weighted = 0, me = 0;
    if (PMPI_Topo_test(comm, &st) != MPI_SUCCESS) return 0;
    if (st == MPI_CART) {
        int nd = 0;
        PMPI_Cartdim_get(comm, &nd);
        nin = nout = 2 * nd;
    } else if (st == MPI_GRAPH) {
        PMPI_Comm_rank(comm, &me);
        PMPI_Graph_neighbors_count(comm, me, &nin);
        nout = nin;
    } else if (st == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(comm, &nin, &nout, &weighted);
    } else {
        return 0;
    }
    int n = nin + nout;
    int *ranks = (int *)mt_scratch(T, sizeof(int) * 2 * (size_t)(n ? n : 1));
    if (!ranks) {   /* no memory: the action without its vector */
        R->vec_len = MT_VEC_DROPPED;
        return 0;
    }
    int *weights = ranks + n;
    if (st == MPI_CART) {
        for (int d = 0; d < nin / 2; d++)
            PMPI_Cart_shift(comm, d, 1, &ranks[2 * d], &ranks[2 * d + 1]);
        memcpy(ranks + nin, ranks, sizeof(int) * (size_t)nin);
    } else if (st == MPI_GRAPH) {
        PMPI_Graph_neighbors(comm, me, nin, ranks);
        memcpy(ranks + nin, ranks, sizeof(int) * (size_t)nin);
    } else {
        PMPI_Dist_graph_neighbors(comm, nin, ranks, weighted ? weights : MPI_UNWEIGHTED, nout,
                                  ranks + nin, weighted ? weights + nin : MPI_UNWEIGHTED);
    }
    int64_t len = 2 + 2 * (int64_t)n;
    int64_t *v = mt_vec(T, R, len);
    if (!v) return 0;   /* no memory: the action without its vector (mt_vec says so) */
    v[0] = nin;
    v[1] = nout;
    for (int i = 0; i < n; i++) v[2 + i] = mt_world(CI, ranks[i]);
    N->nin = nin;
    N->nout = nout;
    N->in_bytes = v + 2 + n;
    N->out_bytes = v + 2 + n + nin;
    return 1;
}

/* Totals over the neighbours that exist (MPI_PROC_NULL ones move no data). */
static void mt_nb_totals(mt_rec *R, const mt_nbrs *N) {
    const int64_t *who = N->in_bytes - (N->nin + N->nout);
    for (int i = 0; i < N->nin; i++) if (who[i] >= 0) R->bytes_recv += N->in_bytes[i];
    for (int j = 0; j < N->nout; j++) if (who[N->nin + j] >= 0) R->bytes_sent += N->out_bytes[j];
}

/* ---- recipes (see mpi.spec): SEND may use j_ (out-neighbour), RECV i_ (in-neighbour) ---- */
#define MT_NB(comm, SEND, RECV) do { MT_ON(comm); mt_nbrs N_; \
    if (mt_neighbors(T, &R, (comm), CI, &N_)) { \
        for (int j_ = 0; j_ < N_.nout; j_++) N_.out_bytes[j_] = (SEND); \
        for (int i_ = 0; i_ < N_.nin; i_++) N_.in_bytes[i_] = (RECV); \
        mt_nb_totals(&R, &N_); } } while (0)
/* a persistent collective's request: inactive until MPI_Start(all) */
#define MT_PINIT(req) (R.request = MT_REQ_NEW((req), CI, R.comm, 0, MT_PERSISTENT, 1))
