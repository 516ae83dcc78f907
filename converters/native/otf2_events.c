/* OTF2 events -> rows of one growable array, through the OTF2 C library's global event reader.
 *
 * Reading events with the otf2 Python bindings builds a Python object per event (~0.1 M
 * events/s); here C callbacks append the events minitrace's OTF2 reader uses (Enter with its
 * attributes, Leave, the MPI message, request and collective events, the I/O handle, operation
 * and seek events, the one-sided (RMA) events, the chosen counter's Metric values) as fixed-size rows, and count every other event, which converters/otf2_columns.py then turns into actions
 * with numpy.  The OTF2 functions come from the otf2 package's own extension, which exports
 * them; build_otf2.py declares them and generates a counting callback for every other event
 * type (from the bindings' own callback signatures) so that each location's events are counted
 * exactly as the bindings deliver them.
 *
 * Checked while reading (the reader stops with the reason in mt_state.stop): events of a rank
 * going back in time or more numerous than its definition announces (the library decoding a
 * damaged chunk over again), an event of an undefined location, memory exhausted.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { CB_SUCCESS = 0, CB_INTERRUPT = 1 };   /* OTF2_CallbackCode */

/* The OTF2 API used (OTF2_ErrorCode is an int-sized enum; references are plain integers). */
typedef struct OTF2_Reader_struct OTF2_Reader;
typedef struct OTF2_DefReader_struct OTF2_DefReader;
typedef struct OTF2_EvtReader_struct OTF2_EvtReader;
typedef struct OTF2_GlobalEvtReader_struct OTF2_GlobalEvtReader;
typedef struct OTF2_GlobalEvtReaderCallbacks_struct OTF2_GlobalEvtReaderCallbacks;
OTF2_Reader* OTF2_Reader_Open(const char* anchor);
int OTF2_Reader_Close(OTF2_Reader*);
int OTF2_Reader_SetSerialCollectiveCallbacks(OTF2_Reader*);
int OTF2_Reader_SelectLocation(OTF2_Reader*, uint64_t);
int OTF2_Reader_OpenDefFiles(OTF2_Reader*);
int OTF2_Reader_CloseDefFiles(OTF2_Reader*);
int OTF2_Reader_OpenEvtFiles(OTF2_Reader*);
int OTF2_Reader_CloseEvtFiles(OTF2_Reader*);
OTF2_DefReader* OTF2_Reader_GetDefReader(OTF2_Reader*, uint64_t);
int OTF2_Reader_ReadAllLocalDefinitions(OTF2_Reader*, OTF2_DefReader*, uint64_t*);
int OTF2_Reader_CloseDefReader(OTF2_Reader*, OTF2_DefReader*);
OTF2_EvtReader* OTF2_Reader_GetEvtReader(OTF2_Reader*, uint64_t);
OTF2_GlobalEvtReader* OTF2_Reader_GetGlobalEvtReader(OTF2_Reader*);
int OTF2_Reader_CloseGlobalEvtReader(OTF2_Reader*, OTF2_GlobalEvtReader*);
OTF2_GlobalEvtReaderCallbacks* OTF2_GlobalEvtReaderCallbacks_New(void);
void OTF2_GlobalEvtReaderCallbacks_Delete(OTF2_GlobalEvtReaderCallbacks*);
int OTF2_Reader_RegisterGlobalEvtCallbacks(OTF2_Reader*, OTF2_GlobalEvtReader*,
                                           const OTF2_GlobalEvtReaderCallbacks*, void*);
int OTF2_Reader_ReadAllGlobalEvents(OTF2_Reader*, OTF2_GlobalEvtReader*, uint64_t*);
uint32_t OTF2_AttributeList_GetNumberOfElements(const void*);
int OTF2_AttributeList_GetAttributeByIndex(const void*, uint32_t, uint32_t*, uint8_t*, uint64_t*);
const char* OTF2_Error_GetName(int);
const char* OTF2_Error_GetDescription(int);

/* one stored event; converters/otf2_events.py mirrors it as a numpy dtype */
typedef struct {
    uint64_t time;
    uint64_t d;        /* message length, collective bytes sent, metric value bits, I/O bytes
                          or offset, attribute value bits */
    uint64_t f;        /* collective bytes received, I/O operation flags */
    uint64_t e;        /* request id, I/O matching id */
    uint32_t rank;     /* index of the location in the MPI location group */
    uint32_t a;        /* region, peer (receiver/sender), root, metric, I/O handle, attribute,
                          RMA target (remote) or group */
    uint32_t b;        /* communicator, RMA window */
    uint32_t c;        /* message tag, collective operation, metric value type, I/O operation
                          mode, attribute type, RMA atomic, lock, sync type or sync level */
    uint32_t type;     /* MT_* */
    uint32_t pad;
} mt_event;

enum {
    MT_ENTER = 1, MT_LEAVE, MT_SEND, MT_ISEND, MT_ISEND_COMPLETE, MT_IRECV_REQUEST, MT_RECV,
    MT_IRECV, MT_REQUEST_TEST, MT_REQUEST_CANCELLED, MT_COLLECTIVE_END, MT_NBC_REQUEST,
    MT_NBC_COMPLETE, MT_METRIC, MT_IO_CREATE_HANDLE, MT_IO_DESTROY_HANDLE, MT_IO_BEGIN,
    MT_IO_COMPLETE, MT_IO_TEST, MT_IO_SEEK, MT_ATTRIBUTE, MT_RMA_WIN_CREATE,
    MT_RMA_WIN_DESTROY, MT_RMA_PUT, MT_RMA_GET, MT_RMA_ATOMIC, MT_RMA_OP_COMPLETE, MT_RMA_OP_TEST,
    MT_RMA_COLLECTIVE_END, MT_RMA_SYNC, MT_RMA_GROUP_SYNC, MT_RMA_LOCK, MT_RMA_RELEASE_LOCK
};
enum { MT_OK = 0, MT_STOP_DAMAGED = 1, MT_STOP_UNKNOWN_LOCATION = 2, MT_STOP_MEMORY = 3 };

typedef struct {
    mt_event* ev;                 /* rows, malloc'ed: freed with mt_free */
    uint64_t n, cap;
    const uint64_t* loc_ref;      /* every defined location, sorted */
    const int32_t* loc_rank;      /* its rank, or -1 (events counted, not stored) */
    uint64_t* loc_seen;           /* events delivered per location */
    uint64_t nloc;
    const uint64_t* expected;     /* per rank: events its definition announces */
    uint64_t* last_time;          /* per rank */
    const int32_t* metric_member; /* per metric ref: member index of the counter, or -1 */
    uint64_t nmetric;
    int32_t stop;                 /* MT_STOP_* */
    int32_t stop_rank;
    uint64_t stop_loc;            /* ... and the location (or whose local definitions failed) */
    int32_t in_local_defs;        /* the error came from reading stop_loc's local definitions */
} mt_state;

static int64_t mt_loc_index(const mt_state* s, uint64_t loc)
{
    if (loc < s->nloc && s->loc_ref[loc] == loc)
        return (int64_t)loc;
    uint64_t lo = 0, hi = s->nloc;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (s->loc_ref[mid] < loc) lo = mid + 1; else hi = mid;
    }
    return lo < s->nloc && s->loc_ref[lo] == loc ? (int64_t)lo : -1;
}

/* Count the event of ``loc``; its rank (>= 0) when it is to be stored, -1 when it is not (a
 * location that is no rank), -2 when reading must stop. */
static int32_t mt_see(mt_state* s, uint64_t loc, uint64_t t)
{
    int64_t i = mt_loc_index(s, loc);
    if (i < 0) {
        s->stop = MT_STOP_UNKNOWN_LOCATION;
        s->stop_loc = loc;
        return -2;
    }
    uint64_t seen = ++s->loc_seen[i];
    int32_t r = s->loc_rank[i];
    if (r < 0)
        return -1;
    if (t < s->last_time[r] || seen > s->expected[r]) {
        s->stop = MT_STOP_DAMAGED;
        s->stop_rank = r;
        s->stop_loc = loc;
        return -2;
    }
    s->last_time[r] = t;
    return r;
}

static mt_event* mt_push(mt_state* s, int32_t r, uint64_t t, uint32_t type)
{
    if (s->n == s->cap) {
        uint64_t cap = s->cap ? 2 * s->cap : 1 << 16;
        mt_event* ev = realloc(s->ev, cap * sizeof(mt_event));
        if (!ev) {
            s->stop = MT_STOP_MEMORY;
            return NULL;
        }
        s->ev = ev;
        s->cap = cap;
    }
    mt_event* e = &s->ev[s->n++];
    memset(e, 0, sizeof *e);
    e->time = t;
    e->rank = (uint32_t)r;
    e->type = type;
    return e;
}

/* The start of every storing callback: count, then get a row (or return). */
#define MT_ROW(type_)                                              \
    mt_state* s = ud;                                              \
    int32_t r = mt_see(s, loc, t);                                 \
    if (r == -1) return CB_SUCCESS;                                \
    if (r < 0) return CB_INTERRUPT;                                \
    mt_event* e = mt_push(s, r, t, type_);                         \
    if (!e) return CB_INTERRUPT;                                   \
    (void)attrs;

/* An Enter, then a row per attribute of its attribute list (not events: not counted). */
static int mt_enter(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t region)
{
    MT_ROW(MT_ENTER)
    e->a = region;
    uint32_t n = attrs ? OTF2_AttributeList_GetNumberOfElements(attrs) : 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t ref;
        uint8_t type;
        uint64_t value;
        if (OTF2_AttributeList_GetAttributeByIndex(attrs, i, &ref, &type, &value) != 0)
            continue;
        mt_event* x = mt_push(s, r, t, MT_ATTRIBUTE);
        if (!x)
            return CB_INTERRUPT;
        x->a = ref; x->c = type; x->d = value;
    }
    return CB_SUCCESS;
}

static int mt_leave(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t region)
{ MT_ROW(MT_LEAVE) e->a = region; return CB_SUCCESS; }

static int mt_send(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t peer,
                   uint32_t comm, uint32_t tag, uint64_t length)
{ MT_ROW(MT_SEND) e->a = peer; e->b = comm; e->c = tag; e->d = length; return CB_SUCCESS; }

static int mt_isend(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t peer,
                    uint32_t comm, uint32_t tag, uint64_t length, uint64_t req)
{
    MT_ROW(MT_ISEND)
    e->a = peer; e->b = comm; e->c = tag; e->d = length; e->e = req;
    return CB_SUCCESS;
}

static int mt_recv(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t peer,
                   uint32_t comm, uint32_t tag, uint64_t length)
{ MT_ROW(MT_RECV) e->a = peer; e->b = comm; e->c = tag; e->d = length; return CB_SUCCESS; }

static int mt_irecv(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t peer,
                    uint32_t comm, uint32_t tag, uint64_t length, uint64_t req)
{
    MT_ROW(MT_IRECV)
    e->a = peer; e->b = comm; e->c = tag; e->d = length; e->e = req;
    return CB_SUCCESS;
}

#define MT_REQUEST_EVENT(fn, type_)                                              \
    static int fn(uint64_t loc, uint64_t t, void* ud, void* attrs, uint64_t req) \
    { MT_ROW(type_) e->e = req; return CB_SUCCESS; }
MT_REQUEST_EVENT(mt_isend_complete, MT_ISEND_COMPLETE)
MT_REQUEST_EVENT(mt_irecv_request, MT_IRECV_REQUEST)
MT_REQUEST_EVENT(mt_request_test, MT_REQUEST_TEST)
MT_REQUEST_EVENT(mt_request_cancelled, MT_REQUEST_CANCELLED)
MT_REQUEST_EVENT(mt_nbc_request, MT_NBC_REQUEST)

static int mt_collective_end(uint64_t loc, uint64_t t, void* ud, void* attrs, uint8_t op,
                             uint32_t comm, uint32_t root, uint64_t sent, uint64_t received)
{
    MT_ROW(MT_COLLECTIVE_END)
    e->a = root; e->b = comm; e->c = op; e->d = sent; e->f = received;
    return CB_SUCCESS;
}

static int mt_nbc_complete(uint64_t loc, uint64_t t, void* ud, void* attrs, uint8_t op,
                           uint32_t comm, uint32_t root, uint64_t sent, uint64_t received,
                           uint64_t req)
{
    MT_ROW(MT_NBC_COMPLETE)
    e->a = root; e->b = comm; e->c = op; e->d = sent; e->f = received; e->e = req;
    return CB_SUCCESS;
}

static int mt_io_create_handle(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t handle,
                               uint8_t mode, uint32_t creation, uint32_t status)
{ MT_ROW(MT_IO_CREATE_HANDLE) e->a = handle; (void)mode; (void)creation; (void)status;
  return CB_SUCCESS; }

static int mt_io_destroy_handle(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t handle)
{ MT_ROW(MT_IO_DESTROY_HANDLE) e->a = handle; return CB_SUCCESS; }

static int mt_io_begin(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t handle,
                       uint8_t mode, uint32_t flags, uint64_t bytes, uint64_t matching)
{
    MT_ROW(MT_IO_BEGIN)
    e->a = handle; e->c = mode; e->f = flags; e->d = bytes; e->e = matching;
    return CB_SUCCESS;
}

static int mt_io_complete(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t handle,
                          uint64_t bytes, uint64_t matching)
{ MT_ROW(MT_IO_COMPLETE) e->a = handle; e->d = bytes; e->e = matching; return CB_SUCCESS; }

static int mt_io_test(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t handle,
                      uint64_t matching)
{ MT_ROW(MT_IO_TEST) e->a = handle; e->e = matching; return CB_SUCCESS; }

static int mt_io_seek(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t handle,
                      int64_t request, uint8_t whence, uint64_t result)
{ MT_ROW(MT_IO_SEEK) e->a = handle; e->d = result; (void)request; (void)whence;
  return CB_SUCCESS; }

/* One-sided (RMA) events: window in b, target (remote, a comm rank of the window's
 * communicator) or group in a, the atomic/lock/sync type or the sync level in c, bytes in d
 * (an atomic's received bytes in f), matching or lock id in e.  An RmaOpComplete* keeps which
 * one in f (0 blocking, 1 non-blocking, 2 remote); a lock request's f says request (0),
 * acquire (1) or try (2). */
static int mt_rma_win_create(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t win)
{ MT_ROW(MT_RMA_WIN_CREATE) e->b = win; return CB_SUCCESS; }

static int mt_rma_win_destroy(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t win)
{ MT_ROW(MT_RMA_WIN_DESTROY) e->b = win; return CB_SUCCESS; }

#define MT_RMA_TRANSFER(fn, type_)                                                    \
    static int fn(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t win,      \
                  uint32_t remote, uint64_t bytes, uint64_t matching)                 \
    { MT_ROW(type_) e->b = win; e->a = remote; e->d = bytes; e->e = matching;         \
      return CB_SUCCESS; }
MT_RMA_TRANSFER(mt_rma_put, MT_RMA_PUT)
MT_RMA_TRANSFER(mt_rma_get, MT_RMA_GET)

static int mt_rma_atomic(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t win,
                         uint32_t remote, uint8_t type, uint64_t sent, uint64_t received,
                         uint64_t matching)
{
    MT_ROW(MT_RMA_ATOMIC)
    e->b = win; e->a = remote; e->c = type; e->d = sent; e->f = received; e->e = matching;
    return CB_SUCCESS;
}

#define MT_RMA_COMPLETE(fn, type_, which)                                             \
    static int fn(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t win,      \
                  uint64_t matching)                                                  \
    { MT_ROW(type_) e->b = win; e->e = matching; e->f = which; return CB_SUCCESS; }
MT_RMA_COMPLETE(mt_rma_op_complete_blocking, MT_RMA_OP_COMPLETE, 0)
MT_RMA_COMPLETE(mt_rma_op_complete_non_blocking, MT_RMA_OP_COMPLETE, 1)
MT_RMA_COMPLETE(mt_rma_op_complete_remote, MT_RMA_OP_COMPLETE, 2)
MT_RMA_COMPLETE(mt_rma_op_test, MT_RMA_OP_TEST, 0)

static int mt_rma_collective_end(uint64_t loc, uint64_t t, void* ud, void* attrs, uint8_t op,
                                 uint32_t level, uint32_t win, uint32_t root, uint64_t sent,
                                 uint64_t received)
{
    MT_ROW(MT_RMA_COLLECTIVE_END)
    e->b = win; e->a = root; e->c = op; e->e = level; e->d = sent; e->f = received;
    return CB_SUCCESS;
}

static int mt_rma_sync(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t win,
                       uint32_t remote, uint8_t type)
{ MT_ROW(MT_RMA_SYNC) e->b = win; e->a = remote; e->c = type; return CB_SUCCESS; }

static int mt_rma_group_sync(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t level,
                             uint32_t win, uint32_t group)
{ MT_ROW(MT_RMA_GROUP_SYNC) e->b = win; e->a = group; e->c = level; return CB_SUCCESS; }

#define MT_RMA_LOCK_EVENT(fn, which)                                                  \
    static int fn(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t win,      \
                  uint32_t remote, uint64_t lock, uint8_t type)                       \
    { MT_ROW(MT_RMA_LOCK) e->b = win; e->a = remote; e->e = lock; e->c = type;        \
      e->f = which; return CB_SUCCESS; }
MT_RMA_LOCK_EVENT(mt_rma_request_lock, 0)
MT_RMA_LOCK_EVENT(mt_rma_acquire_lock, 1)
MT_RMA_LOCK_EVENT(mt_rma_try_lock, 2)

static int mt_rma_release_lock(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t win,
                               uint32_t remote, uint64_t lock)
{ MT_ROW(MT_RMA_RELEASE_LOCK) e->b = win; e->a = remote; e->e = lock; return CB_SUCCESS; }

static int mt_metric(uint64_t, uint64_t, void*, void*, uint32_t, uint8_t, void*, void*);

/* Generated by build_otf2.py: a typedef and the OTF2 setter of every event callback, a counting
 * callback for each event type not stored above, and mt_register() setting them all. */
#include "_generated_callbacks.h"

static int mt_metric(uint64_t loc, uint64_t t, void* ud, void* attrs, uint32_t metric,
                     uint8_t n, void* types, void* values)
{
    const mt_state* ms = ud;
    int32_t m = metric < ms->nmetric ? ms->metric_member[metric] : -1;
    if (m < 0 || m >= n)        /* another metric: counted only */
        return mt_see(ud, loc, t) < -1 ? CB_INTERRUPT : CB_SUCCESS;
    MT_ROW(MT_METRIC)
    e->a = metric;
    e->c = ((const uint8_t*)types)[m];
    memcpy(&e->d, (const char*)values + 8 * (size_t)m, 8);   /* OTF2_MetricValue: 8 bytes */
    return CB_SUCCESS;
}

/* Read the events of every location of ``anchor`` into ``s`` (opened as the otf2 bindings do:
 * serial collectives, every location selected, local definitions read for their mapping tables
 * and clock offsets).  Returns 0, -1 when the archive cannot be opened, else the OTF2 error code
 * (OTF2_ERROR_INTERRUPTED_BY_CALLBACK when ``s->stop`` says why the callbacks stopped). */
int mt_read(const char* anchor, mt_state* s, uint64_t* n_read)
{
    *n_read = 0;
    OTF2_Reader* rd = OTF2_Reader_Open(anchor);
    if (!rd)
        return -1;
    int err = OTF2_Reader_SetSerialCollectiveCallbacks(rd);
    for (uint64_t i = 0; !err && i < s->nloc; i++)
        err = OTF2_Reader_SelectLocation(rd, s->loc_ref[i]);
    OTF2_GlobalEvtReader* g = NULL;
    if (!err) {
        int defs_open = OTF2_Reader_OpenDefFiles(rd) == 0;
        OTF2_Reader_OpenEvtFiles(rd);          /* errors show when reading, as in the bindings */
        for (uint64_t i = 0; !err && i < s->nloc; i++) {
            if (defs_open) {
                OTF2_DefReader* dr = OTF2_Reader_GetDefReader(rd, s->loc_ref[i]);
                if (dr) {
                    uint64_t ndefs;
                    err = OTF2_Reader_ReadAllLocalDefinitions(rd, dr, &ndefs);
                    int closed = OTF2_Reader_CloseDefReader(rd, dr);
                    err = err ? err : closed;
                    if (err) {
                        s->in_local_defs = 1;
                        s->stop_loc = s->loc_ref[i];
                    }
                }
            }
            OTF2_Reader_GetEvtReader(rd, s->loc_ref[i]);
        }
        if (defs_open)
            OTF2_Reader_CloseDefFiles(rd);
    }
    if (!err) {
        g = OTF2_Reader_GetGlobalEvtReader(rd);
        OTF2_GlobalEvtReaderCallbacks* cb = OTF2_GlobalEvtReaderCallbacks_New();
        if (!g || !cb)
            err = -1;
        else {
            mt_register(cb);
            err = OTF2_Reader_RegisterGlobalEvtCallbacks(rd, g, cb, s);
        }
        if (cb)
            OTF2_GlobalEvtReaderCallbacks_Delete(cb);
        if (!err)
            err = OTF2_Reader_ReadAllGlobalEvents(rd, g, n_read);
    }
    if (g)
        OTF2_Reader_CloseGlobalEvtReader(rd, g);
    OTF2_Reader_CloseEvtFiles(rd);
    OTF2_Reader_Close(rd);
    return err;
}

/* Whether the OTF2 library can open ``anchor`` (it reads the anchor file only). */
int mt_can_open(const char* anchor)
{
    OTF2_Reader* rd = OTF2_Reader_Open(anchor);
    if (!rd)
        return 0;
    OTF2_Reader_Close(rd);
    return 1;
}

int mt_free(void* p)
{
    free(p);
    return 0;
}
