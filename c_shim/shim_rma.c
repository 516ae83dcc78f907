/* One-sided communication: the recipes of the RMA calls (mpi.spec) and this rank's windows.
 *
 * Every one-sided action has its window's id in the tag and the window's communicator in comm;
 * target ranks are recorded as world ranks.  Included by generate.py after shim_handles.c.
 */

static mt_objs mt_wins = MT_OBJS_INIT;

/* The world ranks of a group's members, as R's vector. */
static void mt_group_vec(mt_thread *T, mt_rec *R, MPI_Group g) {
    int n = 0;
    if (g == MPI_GROUP_NULL || PMPI_Group_size(g, &n) != MPI_SUCCESS || n <= 0) return;
    int *in = (int *)mt_scratch(T, sizeof(int) * 2 * (size_t)n);
    int64_t *v = in ? mt_vec(T, R, n) : NULL;
    if (!v) {       /* no memory: the action without its vector */
        R->vec_len = MT_VEC_DROPPED;
        return;
    }
    int *out = in + n;
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Group_translate_ranks(g, n, in, mt_world_grp(), out);
    for (int i = 0; i < n; i++) v[i] = out[i] == MPI_UNDEFINED ? -1 : out[i];
}

/* ---- recipes (see mpi.spec) ---- */
#define MT_WIN_NEW(comm, win, size, unit) do { MT_OBJ_NEW(mt_wins, comm, *(win), MPI_WIN_NULL); \
    mt_vec2(T, &R, (int64_t)(size), (int64_t)(unit)); } while (0)
#define MT_WIN_DYNAMIC(comm, win) MT_OBJ_NEW(mt_wins, comm, *(win), MPI_WIN_NULL)
#define MT_ON_WIN(win) MT_ON_OBJ(mt_wins, win)
#define MT_WIN_FREE_PRE(win) MT_OBJ_FREE_PRE(mt_wins, win)
#define MT_WIN_FREE() MT_OBJ_FREE()
#define MT_RMA(win, target, disp, SENT, RECV) do { MT_ON_WIN(win); MT_PEER(target); \
    R.bytes_sent = (SENT); R.bytes_recv = (RECV); mt_vec1(T, &R, (int64_t)(disp)); } while (0)
#define MT_WIN_TARGET(win, target) do { MT_ON_WIN(win); MT_PEER(target); } while (0)
#define MT_WIN_LOCK(type, target, win) do { MT_WIN_TARGET(win, target); \
    mt_vec1(T, &R, (type) == MPI_LOCK_EXCLUSIVE); } while (0)
#define MT_WIN_GROUP(group, win) do { MT_ON_WIN(win); mt_group_vec(T, &R, (group)); } while (0)
#define MT_WIN_TEST(win, flag) do { MT_ON_WIN(win); if (*(flag)) R.flags |= MT_COMPLETED; } while (0)
