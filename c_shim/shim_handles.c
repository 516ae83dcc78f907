/* Handles of MPI objects some wrappers must recognise later (one-sided windows, files): each
 * known by its handle's bytes, with an id (this rank's objects of a table numbered 0, 1, ... in
 * creation order) and its communicator (id and membership, to translate ranks).  Only the
 * wrappers of those objects touch a table (its own lock); such objects are few, so a table is a
 * small array searched from its newest entry.  Included by generate.py after shim_runtime.c.
 */

typedef struct {
    uint64_t key;
    int32_t id, comm_id;
    const mt_comm *comm;
} mt_obj;

typedef struct {
    mt_obj *e;
    size_t n, cap;
    int32_t next;
    pthread_mutex_t lock;
} mt_objs;

#define MT_OBJS_INIT {NULL, 0, 0, 0, PTHREAD_MUTEX_INITIALIZER}

/* A new object: its id, or -1 (no memory). */
static int32_t mt_obj_new(mt_objs *t, uint64_t key, int32_t comm_id, const mt_comm *comm) {
    int32_t id = -1;
    pthread_mutex_lock(&t->lock);
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        mt_obj *p = (mt_obj *)mt_realloc(t->e, cap * sizeof *p);
        if (p) {
            t->e = p;
            t->cap = cap;
        }
    }
    if (t->n < t->cap) {
        id = t->next++;
        t->e[t->n++] = (mt_obj){.key = key, .id = id, .comm_id = comm_id, .comm = comm};
    }
    pthread_mutex_unlock(&t->lock);
    return id;
}

/* The object of handle bytes key (removed from the table when drop): 1 if known. */
static int mt_obj_find(mt_objs *t, uint64_t key, mt_obj *out, int drop) {
    int found = 0;
    pthread_mutex_lock(&t->lock);
    for (size_t i = t->n; i-- > 0;)
        if (t->e[i].key == key) {
            *out = t->e[i];
            if (drop) t->e[i] = t->e[--t->n];
            found = 1;
            break;
        }
    pthread_mutex_unlock(&t->lock);
    return found;
}

/* The recipes' view of an object: its id in the tag, its communicator (and CI, to translate
 * ranks); comm -1 when the object was not seen created (e.g. while paused). */
#define MT_ON_OBJ(table, h) do { mt_obj o_; if (mt_obj_find(&(table), mt_key(h), &o_, 0)) { \
    R.tag = o_.id; R.comm = o_.comm_id; CI = o_.comm; } else R.comm = -1; } while (0)
#define MT_OBJ_NEW(table, comm, h, null) do { MT_ON(comm); if ((h) != (null)) \
    R.tag = mt_obj_new(&(table), mt_key(h), R.comm, CI); } while (0)
/* freeing: taken before the call (MPI nulls the handle), recorded after */
#define MT_OBJ_FREE_PRE(table, hp) mt_obj O_; int have_obj_ = mt_obj_find(&(table), mt_key(*(hp)), &O_, 1)
#define MT_OBJ_FREE() do { if (have_obj_) { R.tag = O_.id; R.comm = O_.comm_id; } \
    else R.comm = -1; } while (0)
