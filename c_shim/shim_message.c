/* Receives whose message is decided apart from the call: matched probes (the message handles
 * MPI_Mprobe/MPI_Improbe hand out, kept until MPI_Mrecv/MPI_Imrecv consumes them) and
 * MPI_Isendrecv's receive half.
 *
 * A matched receive names no communicator, source or tag: they are those of the probe that
 * dequeued the message, so the probe remembers them (and the message's size) under the handle's
 * bytes, with a message id that the probe and its receive both carry as their vector [id].
 * Only the matched-probe wrappers touch this table (its own lock; nothing on the path of the
 * other calls).  Pending messages are few (mpi4py receives each one right after probing it): a
 * small array searched from its newest entry.  Included by generate.py after shim_runtime.c.
 */

typedef struct {
    uint64_t key;               /* the MPI_Message handle's bytes */
    int64_t id;                 /* message id: this rank's probes number their messages 0, 1, ... */
    int32_t comm_id, peer, tag; /* communicator, world rank of the source, tag */
    int64_t bytes;              /* the message's size (from the probe's status) */
} mt_msg;

static mt_msg *mt_msgs;
static size_t mt_nmsgs, mt_msgs_cap;
static int64_t mt_msg_next;
static pthread_mutex_t mt_msg_lock = PTHREAD_MUTEX_INITIALIZER;

/* Remember a probed message; its id, or -1 (MPI_MESSAGE_NO_PROC, or out of memory). */
static int64_t mt_msg_put(MPI_Message m, int32_t comm_id, int32_t peer, int32_t tag,
                          int64_t bytes) {
    if (m == MPI_MESSAGE_NULL || m == MPI_MESSAGE_NO_PROC) return -1;
    mt_msg v = {.key = mt_key(m), .comm_id = comm_id, .peer = peer, .tag = tag, .bytes = bytes};
    int64_t id = -1;
    pthread_mutex_lock(&mt_msg_lock);
    if (mt_nmsgs == mt_msgs_cap) {
        size_t cap = mt_msgs_cap ? 2 * mt_msgs_cap : 16;
        mt_msg *p = (mt_msg *)mt_realloc(mt_msgs, cap * sizeof *p);
        if (p) {
            mt_msgs = p;
            mt_msgs_cap = cap;
        }
    }
    if (mt_nmsgs < mt_msgs_cap) {
        v.id = id = mt_msg_next++;
        mt_msgs[mt_nmsgs++] = v;
    }
    pthread_mutex_unlock(&mt_msg_lock);
    return id;
}

/* Take (forget) the message of handle m: 1 if it was probed while recording, else 0. */
static int mt_msg_take(MPI_Message m, mt_msg *out) {
    if (m == MPI_MESSAGE_NULL || m == MPI_MESSAGE_NO_PROC) return 0;
    uint64_t key = mt_key(m);
    int found = 0;
    pthread_mutex_lock(&mt_msg_lock);
    for (size_t i = mt_nmsgs; i-- > 0;)
        if (mt_msgs[i].key == key) {
            *out = mt_msgs[i];
            mt_msgs[i] = mt_msgs[--mt_nmsgs];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&mt_msg_lock);
    return found;
}

/* ---- recipes (see mpi.spec) ---- */
#define MT_MSG_ID(id) do { int64_t id_ = (id); if (id_ >= 0) mt_vec1(T, &R, id_); } while (0)
#define MT_MPROBE(src, tg, comm, msg, st) do { MT_PROBE(src, tg, comm, st); \
    MT_MSG_ID(mt_msg_put(*(msg), R.comm, R.peer, R.tag, mt_status_bytes(st))); } while (0)
#define MT_IMPROBE(src, tg, comm, flag, msg, st) do { MT_IPROBE(src, tg, comm, flag, st); \
    if (*(flag)) MT_MSG_ID(mt_msg_put(*(msg), R.comm, R.peer, R.tag, mt_status_bytes(st))); \
    } while (0)
/* before the receive (MPI nulls the handle): the probed message, or why there is none */
#define MT_MSG_TAKE(msg) mt_msg M_; int have_msg_ = mt_msg_take(*(msg), &M_); \
    int no_proc_ = *(msg) == MPI_MESSAGE_NO_PROC
/* a matched receive gets its probe's communicator, source, tag and size; a message probed
 * while not recording is unresolved; one from MPI_PROC_NULL has no peer */
#define MT_MRECV() do { if (have_msg_) { R.comm = M_.comm_id; R.peer = M_.peer; R.tag = M_.tag; \
    R.bytes_recv = M_.bytes; MT_MSG_ID(M_.id); } else if (!no_proc_) R.flags |= MT_UNRESOLVED; \
    } while (0)
#define MT_IMRECV(req) do { MT_MRECV(); \
    R.request = MT_REQ_NEW((req), have_msg_ && M_.comm_id >= 0 ? mt_comms[M_.comm_id] : NULL, \
                           R.comm, 0, 0, 0); \
    } while (0)
/* MPI-4 non-blocking sendrecv: the send half as a send, the receive half as posted in the
 * vector [source, tag] with the posted size.  Its completion's status is not used: MPICH 5.0
 * does not describe the receive there (it runs the sendrecv as a schedule); a wildcard source or
 * tag stays -1 and the action UNRESOLVED. */
#define MT_ISENDRECV(dest, stag, scount, stype, src, rtag, rcount, rtype, comm, req) do { \
    MT_SEND(dest, stag, comm, scount, stype); R.bytes_recv = MT_BYTES(rcount, rtype); \
    MT_WILD(src, rtag); if (R.flags & (MT_ANY_SOURCE | MT_ANY_TAG)) R.flags |= MT_UNRESOLVED; \
    mt_vec2(T, &R, (src) == MPI_ANY_SOURCE ? -1 : mt_world(CI, src), \
            (rtag) == MPI_ANY_TAG ? -1 : (rtag)); \
    R.request = MT_REQ_NEW((req), CI, R.comm, 0, 0, 0); } while (0)
