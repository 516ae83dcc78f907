/* One-sided communication: the windows this rank has, and the recipes of the RMA calls.
 *
 * A window is known by its handle's bytes: its id (this rank's windows numbered 0, 1, ... in
 * creation order), its communicator's id and membership (target ranks are ranks of it; they
 * are recorded as world ranks).  Every one-sided action has the window id in its tag and the
 * window's communicator in comm.  Only the one-sided wrappers touch this table (its own lock);
 * windows are few, so it is a small array.  Included by generate.py after shim_runtime.c.
 */

typedef struct {
    uint64_t key;
    int32_t id, comm_id;
    const mt_comm *comm;
} mt_win;

static mt_win *mt_wins;
static size_t mt_nwins, mt_wins_cap;
static int32_t mt_win_next;
static pthread_mutex_t mt_win_lock = PTHREAD_MUTEX_INITIALIZER;

static int32_t mt_win_new(MPI_Win w, int32_t comm_id, const mt_comm *comm) {
    if (w == MPI_WIN_NULL) return -1;
    int32_t id = -1;
    pthread_mutex_lock(&mt_win_lock);
    if (mt_nwins == mt_wins_cap) {
        size_t cap = mt_wins_cap ? 2 * mt_wins_cap : 8;
        mt_win *p = (mt_win *)realloc(mt_wins, cap * sizeof *p);
        if (p) {
            mt_wins = p;
            mt_wins_cap = cap;
        }
    }
    if (mt_nwins < mt_wins_cap) {
        id = mt_win_next++;
        mt_wins[mt_nwins++] = (mt_win){.key = mt_key(w), .id = id, .comm_id = comm_id,
                                       .comm = comm};
    }
    pthread_mutex_unlock(&mt_win_lock);
    return id;
}

/* The window of handle w (removed from the table when drop): 1 if known. */
static int mt_win_find(MPI_Win w, mt_win *out, int drop) {
    uint64_t key = mt_key(w);
    int found = 0;
    pthread_mutex_lock(&mt_win_lock);
    for (size_t i = mt_nwins; i-- > 0;)
        if (mt_wins[i].key == key) {
            *out = mt_wins[i];
            if (drop) mt_wins[i] = mt_wins[--mt_nwins];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&mt_win_lock);
    return found;
}

/* The world ranks of a group's members, as R's vector. */
static void mt_group_vec(mt_thread *T, mt_rec *R, MPI_Group g) {
    int n = 0;
    if (g == MPI_GROUP_NULL || PMPI_Group_size(g, &n) != MPI_SUCCESS || n <= 0) return;
    int *in = (int *)mt_scratch(T, sizeof(int) * 2 * (size_t)n), *out = in + n;
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Group_translate_ranks(g, n, in, mt_world_group, out);
    int64_t *v = mt_vec(T, R, n);
    if (R->vec_len != n) return;
    for (int i = 0; i < n; i++) v[i] = out[i] == MPI_UNDEFINED ? -1 : out[i];
}

/* ---- recipes (see mpi.spec) ---- */
#define MT_WIN_NEW(comm, win, size, unit) do { MT_ON(comm); R.tag = mt_win_new(*(win), R.comm, CI); \
    int64_t *v_ = mt_vec(T, &R, 2); v_[0] = (int64_t)(size); v_[1] = (int64_t)(unit); } while (0)
#define MT_WIN_DYNAMIC(comm, win) do { MT_ON(comm); R.tag = mt_win_new(*(win), R.comm, CI); } while (0)
/* the window an action is on: its id, communicator (and CI, to translate target ranks) */
#define MT_ON_WIN(win) do { mt_win w_; if (mt_win_find((win), &w_, 0)) { R.tag = w_.id; \
    R.comm = w_.comm_id; CI = w_.comm; } else R.comm = -1; } while (0)
#define MT_WIN_FREE_PRE(win) mt_win W_; int have_win_ = mt_win_find(*(win), &W_, 1)
#define MT_WIN_FREE() do { if (have_win_) { R.tag = W_.id; R.comm = W_.comm_id; } \
    else R.comm = -1; } while (0)
#define MT_RMA(win, target, disp, SENT, RECV) do { MT_ON_WIN(win); MT_PEER(target); \
    R.bytes_sent = (SENT); R.bytes_recv = (RECV); mt_vec(T, &R, 1)[0] = (int64_t)(disp); } while (0)
#define MT_WIN_TARGET(win, target) do { MT_ON_WIN(win); MT_PEER(target); } while (0)
#define MT_WIN_LOCK(type, target, win) do { MT_WIN_TARGET(win, target); \
    mt_vec(T, &R, 1)[0] = (type) == MPI_LOCK_EXCLUSIVE; } while (0)
#define MT_WIN_GROUP(group, win) do { MT_ON_WIN(win); mt_group_vec(T, &R, (group)); } while (0)
#define MT_WIN_TEST(win, flag) do { MT_ON_WIN(win); if (*(flag)) R.flags |= MT_COMPLETED; } while (0)
