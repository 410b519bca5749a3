/* The lowering's synchronisation walk (`stc_mlir.passes.lowering.sync.Sync.order` and
 * `Sync.barrier`) in C: the same algorithm over the same logs, kept as C arrays.
 *
 * `Sync(threads, readonly, semaphores, channels, host, reads)` keeps
 *   - per buffer and thread, the accesses since the last barrier (the conflict log: seq,
 *     pos, bytes, frame, box, the thread's clock after the command and the command), and
 *   - per buffer, the writes in program order (the expected-writer log, kept across
 *     barriers; a write over exactly the bytes of an earlier one it covers kills it);
 * `order(cmd, thread, accesses)` records `cmd.expects`, adds its waits (and the producers'
 * signals) and logs its accesses, exactly as the Python `Sync.order`; `barrier()` forgets
 * the conflict log. Frames are compared by equality (each distinct frame gets a number on
 * first use); a frame matters only with a box, as in the Python version.
 *
 * `readonly` (a set of buffer names) and `semaphores` (a dict) are the Python `Sync`'s own:
 * the first wait on a channel enters `channels[src * threads + dst]` in `semaphores`, homed
 * on the waiting core. `host` is the writer of model inputs and constants, `reads` maps an
 * op to its read slots (`OpSpec.reads`).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SYNC_INTERFACE 2
#define UNITS 4 /* threads per core (sync.UNITS) */

/* Make room for `need` items of `size` bytes in the array `*items` of capacity `*cap`
 * (doubling, from `first`); -1 with MemoryError. */
static int grow(void *items, Py_ssize_t *cap, Py_ssize_t need, size_t size, Py_ssize_t first) {
    if (need <= *cap) return 0;
    Py_ssize_t n = *cap ? 2 * *cap : first;
    while (n < need) n *= 2;
    void *p = realloc(*(void **)items, n * size);
    if (!p) { PyErr_NoMemory(); return -1; }
    *(void **)items = p;
    *cap = n;
    return 0;
}

/* ------------------------------------------------------------------ arena */

typedef struct { char *data; size_t size; } Block;
typedef struct { Block *blocks; Py_ssize_t n, cap, cur; size_t used; } Arena;

static void *arena_alloc(Arena *a, size_t n) {
    n = (n + 7) & ~(size_t)7;
    if (n == 0) n = 8;
    while (a->cur < a->n) {
        Block *b = &a->blocks[a->cur];
        if (a->used + n <= b->size) {
            void *p = b->data + a->used;
            a->used += n;
            return p;
        }
        a->cur++;
        a->used = 0;
    }
    if (grow(&a->blocks, &a->cap, a->n + 1, sizeof(Block), 16) < 0) return NULL;
    size_t size = n > (1 << 16) ? n : (1 << 16);
    char *d = malloc(size);
    if (!d) { PyErr_NoMemory(); return NULL; }
    a->blocks[a->n].data = d;
    a->blocks[a->n].size = size;
    a->cur = a->n++;
    a->used = n;
    return d;
}

static void arena_reset(Arena *a) { a->cur = 0; a->used = 0; }

static void arena_free(Arena *a) {
    for (Py_ssize_t i = 0; i < a->n; i++) free(a->blocks[i].data);
    free(a->blocks);
    memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------------ boxes */

/* A box is `rank` (lo, hi) pairs; frame < 0: no frame or no box (the box is then unused). */

static int meets(const int64_t *a, int ra, const int64_t *b, int rb) {
    int r = ra < rb ? ra : rb;
    for (int d = 0; d < r; d++) {
        int64_t x0 = a[2 * d], x1 = a[2 * d + 1], y0 = b[2 * d], y1 = b[2 * d + 1];
        if (x1 <= y0 || y1 <= x0 || x1 <= x0 || y1 <= y0) return 0;
    }
    return 1;
}

static int contains(const int64_t *outer, int ro, const int64_t *inner, int ri) {
    int r = ro < ri ? ro : ri;
    for (int d = 0; d < r; d++)
        if (inner[2 * d] < outer[2 * d] || outer[2 * d + 1] < inner[2 * d + 1]) return 0;
    return 1;
}

/* ------------------------------------------------------------------ logs */

typedef struct {
    int64_t seq, pos, lo, hi;
    int64_t *box, *clock; /* in the phase arena */
    PyObject *cmd;        /* owned */
    int32_t frame, rank;
    char write;
} Rec;

typedef struct { Rec *r; Py_ssize_t n, cap; } RecList;

typedef struct {
    int64_t lo, hi;
    int64_t *box; /* in the program arena */
    PyObject *one; /* ((core, index),), owned; NULL once overwritten */
    int32_t frame, rank;
    char dense;
} Entry;

typedef struct { int64_t lo, hi; Py_ssize_t idx; } AtSlot; /* idx < 0: empty */

typedef struct {
    RecList *threads; /* the conflict log: `threads` lists, NULL until used */
    Py_ssize_t size;  /* records in it */
    char active;      /* logged since the last barrier */
    Entry *e;         /* the expected-writer log */
    Py_ssize_t ne, cap_e, dead;
    AtSlot *at;       /* (lo, hi) -> index of its latest write */
    Py_ssize_t at_cap, at_n;
} Buf;

typedef struct {
    PyObject *buffer;
    Py_ssize_t buf;
    int64_t lo, hi;
    int64_t *box; /* in the scratch array (an offset until all are parsed) */
    Py_ssize_t box_at;
    int32_t frame, rank;
    char write, dense, readonly;
} Acc;

typedef struct {
    PyObject_HEAD
    int T;
    int64_t *seq, *known; /* T; T x T */
    int64_t pos;
    PyObject *readonly, *semaphores, *channels, *host, *reads, *bufids, *frameids;
    char *channel_used;   /* T x T */
    Buf *bufs;
    Py_ssize_t nbufs, cap_bufs;
    Py_ssize_t *activel;  /* buffers logged since the barrier */
    Py_ssize_t nactive, cap_active;
    Arena phase, program;
    Acc *acc;
    Py_ssize_t cap_acc;
    int64_t *scratch;
    Py_ssize_t cap_scratch;
    /* per order() call, T each */
    int64_t *need_seq, *found_i, *found_pos;
    int64_t **need_clock;
    PyObject **need_cmd;
    int *need_list;
    /* writers of a read */
    int64_t *wr;          /* (core, index) pairs */
    PyObject **wobj;
    Py_ssize_t cap_wr;
} SyncObject;

static PyObject *s_core, *s_op, *s_tiles, *s_index, *s_waits, *s_signals, *s_expects;

static uint64_t at_hash(int64_t lo, int64_t hi) {
    uint64_t h = (uint64_t)lo * 0x9E3779B97F4A7C15ull ^ ((uint64_t)hi + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
}

static Py_ssize_t at_get(Buf *b, int64_t lo, int64_t hi) {
    if (!b->at_cap) return -1;
    size_t mask = (size_t)b->at_cap - 1;
    for (size_t i = at_hash(lo, hi) & mask;; i = (i + 1) & mask) {
        AtSlot *s = &b->at[i];
        if (s->idx < 0) return -1;
        if (s->lo == lo && s->hi == hi) return s->idx;
    }
}

static void at_put_nogrow(Buf *b, int64_t lo, int64_t hi, Py_ssize_t idx) {
    size_t mask = (size_t)b->at_cap - 1;
    for (size_t i = at_hash(lo, hi) & mask;; i = (i + 1) & mask) {
        AtSlot *s = &b->at[i];
        if (s->idx < 0) { s->lo = lo; s->hi = hi; s->idx = idx; b->at_n++; return; }
        if (s->lo == lo && s->hi == hi) { s->idx = idx; return; }
    }
}

static int at_alloc(Buf *b, Py_ssize_t cap) {
    AtSlot *n = malloc(cap * sizeof(AtSlot));
    if (!n) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < cap; i++) n[i].idx = -1;
    free(b->at);
    b->at = n;
    b->at_cap = cap;
    b->at_n = 0;
    return 0;
}

static int at_put(Buf *b, int64_t lo, int64_t hi, Py_ssize_t idx) {
    if (2 * (b->at_n + 1) > b->at_cap) {
        AtSlot *old = b->at;
        Py_ssize_t oldcap = b->at_cap;
        b->at = NULL;
        if (at_alloc(b, oldcap ? 2 * oldcap : 16) < 0) { b->at = old; return -1; }
        for (Py_ssize_t i = 0; i < oldcap; i++)
            if (old[i].idx >= 0) at_put_nogrow(b, old[i].lo, old[i].hi, old[i].idx);
        free(old);
    }
    at_put_nogrow(b, lo, hi, idx);
    return 0;
}

/* ------------------------------------------------------------------ the object */

static void clear_log(SyncObject *self) {
    for (Py_ssize_t k = 0; k < self->nactive; k++) {
        Buf *b = &self->bufs[self->activel[k]];
        for (int t = 0; t < self->T; t++) {
            RecList *L = &b->threads[t];
            for (Py_ssize_t j = 0; j < L->n; j++) Py_DECREF(L->r[j].cmd);
            L->n = 0;
        }
        b->size = 0;
        b->active = 0;
    }
    self->nactive = 0;
    arena_reset(&self->phase);
}

static void Sync_dealloc(SyncObject *self) {
    if (self->bufs) {
        clear_log(self);
        for (Py_ssize_t i = 0; i < self->nbufs; i++) {
            Buf *b = &self->bufs[i];
            if (b->threads) {
                for (int t = 0; t < self->T; t++) free(b->threads[t].r);
                free(b->threads);
            }
            for (Py_ssize_t j = 0; j < b->ne; j++) Py_XDECREF(b->e[j].one);
            free(b->e);
            free(b->at);
        }
        free(self->bufs);
    }
    free(self->seq); free(self->known); free(self->channel_used); free(self->activel);
    free(self->acc); free(self->scratch);
    free(self->need_seq); free(self->found_i); free(self->found_pos); free(self->need_clock);
    free(self->need_cmd); free(self->need_list); free(self->wr); free(self->wobj);
    arena_free(&self->phase);
    arena_free(&self->program);
    Py_XDECREF(self->readonly); Py_XDECREF(self->semaphores); Py_XDECREF(self->channels);
    Py_XDECREF(self->host); Py_XDECREF(self->reads); Py_XDECREF(self->bufids);
    Py_XDECREF(self->frameids);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Sync_init(SyncObject *self, PyObject *args, PyObject *kwds) {
    int T;
    PyObject *readonly, *semaphores, *channels, *host, *reads;
    if (self->seq) {
        PyErr_SetString(PyExc_RuntimeError, "Sync is initialised once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "iO!O!O!OO!", &T, &PySet_Type, &readonly, &PyDict_Type, &semaphores,
                          &PyList_Type, &channels, &host, &PyDict_Type, &reads))
        return -1;
    if (T <= 0 || PyList_GET_SIZE(channels) != (Py_ssize_t)T * T) {
        PyErr_Format(PyExc_ValueError, "Sync: %d threads need %d channel names, got %zd", T, T * T,
                     PyList_GET_SIZE(channels));
        return -1;
    }
    self->T = T;
    self->seq = calloc(T, sizeof(int64_t));
    self->known = malloc((size_t)T * T * sizeof(int64_t));
    self->channel_used = calloc((size_t)T * T, 1);
    self->need_seq = malloc(T * sizeof(int64_t));
    self->found_i = malloc(T * sizeof(int64_t));
    self->found_pos = malloc(T * sizeof(int64_t));
    self->need_clock = malloc(T * sizeof(int64_t *));
    self->need_cmd = malloc(T * sizeof(PyObject *));
    self->need_list = malloc(T * sizeof(int));
    self->bufids = PyDict_New();
    self->frameids = PyDict_New();
    if (!self->seq || !self->known || !self->channel_used || !self->need_seq || !self->found_i
        || !self->found_pos || !self->need_clock || !self->need_cmd || !self->need_list) {
        PyErr_NoMemory();
        return -1;
    }
    if (!self->bufids || !self->frameids) return -1;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)T * T; i++) self->known[i] = -1;
    for (int t = 0; t < T; t++) self->need_seq[t] = -1;
    Py_INCREF(readonly); self->readonly = readonly;
    Py_INCREF(semaphores); self->semaphores = semaphores;
    Py_INCREF(channels); self->channels = channels;
    Py_INCREF(host); self->host = host;
    Py_INCREF(reads); self->reads = reads;
    return 0;
}

/* The number of `buffer` (a new entry on first sight). */
static Py_ssize_t buffer_id(SyncObject *self, PyObject *buffer) {
    PyObject *id = PyDict_GetItemWithError(self->bufids, buffer);
    if (id) return PyLong_AsSsize_t(id);
    if (PyErr_Occurred()) return -1;
    if (grow(&self->bufs, &self->cap_bufs, self->nbufs + 1, sizeof(Buf), 256) < 0) return -1;
    Py_ssize_t n = self->nbufs;
    PyObject *v = PyLong_FromSsize_t(n);
    if (!v || PyDict_SetItem(self->bufids, buffer, v) < 0) { Py_XDECREF(v); return -1; }
    Py_DECREF(v);
    memset(&self->bufs[n], 0, sizeof(Buf));
    self->nbufs++;
    return n;
}

static int frame_id(SyncObject *self, PyObject *frame, int32_t *out) {
    PyObject *id = PyDict_GetItemWithError(self->frameids, frame);
    if (id) { *out = (int32_t)PyLong_AsLong(id); return 0; }
    if (PyErr_Occurred()) return -1;
    Py_ssize_t n = PyDict_GET_SIZE(self->frameids);
    if (n >= INT32_MAX) { PyErr_SetString(PyExc_OverflowError, "Sync: too many frames"); return -1; }
    PyObject *v = PyLong_FromSsize_t(n);
    if (!v || PyDict_SetItem(self->frameids, frame, v) < 0) { Py_XDECREF(v); return -1; }
    Py_DECREF(v);
    *out = (int32_t)n;
    return 0;
}

static int as_int64(PyObject *o, int64_t *out) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

/* Parse `accesses` (sync.Access tuples) into self->acc; returns their number or -1. */
static Py_ssize_t parse(SyncObject *self, PyObject *seq) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    if (grow(&self->acc, &self->cap_acc, n, sizeof(Acc), 8) < 0) return -1;
    Py_ssize_t used = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *a = items[k];
        Acc *c = &self->acc[k];
        if (!PyTuple_Check(a) || PyTuple_GET_SIZE(a) != 7) {
            PyErr_SetString(PyExc_TypeError, "Sync.order: an access is a sync.Access");
            return -1;
        }
        PyObject *buffer = PyTuple_GET_ITEM(a, 0), *frame = PyTuple_GET_ITEM(a, 4),
                 *box = PyTuple_GET_ITEM(a, 5);
        c->buffer = buffer;
        if ((c->buf = buffer_id(self, buffer)) < 0) return -1;
        int ro = PySet_Contains(self->readonly, buffer);
        if (ro < 0) return -1;
        c->readonly = (char)ro;
        if (as_int64(PyTuple_GET_ITEM(a, 1), &c->lo) < 0 || as_int64(PyTuple_GET_ITEM(a, 2), &c->hi) < 0)
            return -1;
        int w = PyObject_IsTrue(PyTuple_GET_ITEM(a, 3)), d = PyObject_IsTrue(PyTuple_GET_ITEM(a, 6));
        if (w < 0 || d < 0) return -1;
        c->write = (char)w;
        c->dense = (char)d;
        c->frame = -1;
        c->rank = 0;
        c->box_at = 0;
        if (frame == Py_None || box == Py_None) continue;
        PyObject *fast = PySequence_Fast(box, "Sync.order: a box is a sequence of (lo, hi)");
        if (!fast) return -1;
        Py_ssize_t r = PySequence_Fast_GET_SIZE(fast);
        if (r > INT32_MAX / 2 || grow(&self->scratch, &self->cap_scratch, used + 2 * r, sizeof(int64_t), 64) < 0) { Py_DECREF(fast); if (!PyErr_Occurred()) PyErr_NoMemory(); return -1; }
        for (Py_ssize_t dd = 0; dd < r; dd++) {
            PyObject *pair = PySequence_Fast_GET_ITEM(fast, dd);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
                Py_DECREF(fast);
                PyErr_SetString(PyExc_TypeError, "Sync.order: a box is a tuple of (lo, hi) tuples");
                return -1;
            }
            if (as_int64(PyTuple_GET_ITEM(pair, 0), &self->scratch[used + 2 * dd]) < 0
                || as_int64(PyTuple_GET_ITEM(pair, 1), &self->scratch[used + 2 * dd + 1]) < 0) {
                Py_DECREF(fast);
                return -1;
            }
        }
        Py_DECREF(fast);
        if (frame_id(self, frame, &c->frame) < 0) return -1;
        c->rank = (int32_t)r;
        c->box_at = used;
        used += 2 * r;
    }
    for (Py_ssize_t k = 0; k < n; k++) self->acc[k].box = self->scratch + self->acc[k].box_at;
    return n;
}

/* `_covers_within`: write `a` (over the same bytes) overwrites an access in `frame` of `box`. */
static int covers_within(const Acc *a, int32_t frame, const int64_t *box, int32_t rank) {
    if (a->dense) return 1;
    return a->frame >= 0 && a->frame == frame && contains(a->box, a->rank, box, rank);
}

/* A log's copy of `a`'s bytes, frame and box (the box into `arena`). */
static int copy_span(Arena *arena, const Acc *a, int64_t *lo, int64_t *hi, int32_t *frame, int32_t *rank,
                     int64_t **box) {
    *lo = a->lo;
    *hi = a->hi;
    *frame = a->frame;
    *rank = a->rank;
    *box = NULL;
    if (a->frame < 0) return 0;
    if (!(*box = arena_alloc(arena, 2 * a->rank * sizeof(int64_t)))) return -1;
    memcpy(*box, a->box, 2 * a->rank * sizeof(int64_t));
    return 0;
}

/* `_Writes.add`: log write `a` of writer `one` ((core, index),). */
static int writes_add(SyncObject *self, Buf *b, const Acc *a, PyObject *one) {
    Py_ssize_t i = at_get(b, a->lo, a->hi);
    if (i >= 0) {
        Entry *old = &b->e[i];
        if (old->one && covers_within(a, old->frame, old->box, old->rank)) {
            Py_CLEAR(old->one);
            b->dead++;
        }
    }
    if (grow(&b->e, &b->cap_e, b->ne + 1, sizeof(Entry), 8) < 0) return -1;
    if (at_put(b, a->lo, a->hi, b->ne) < 0) return -1;
    Entry *e = &b->e[b->ne];
    e->dense = a->dense;
    if (copy_span(&self->program, a, &e->lo, &e->hi, &e->frame, &e->rank, &e->box) < 0) return -1;
    Py_INCREF(one);
    e->one = one;
    b->ne++;
    if (b->dead > 16 && 2 * b->dead > b->ne) { /* drop the overwritten */
        Py_ssize_t k = 0;
        for (Py_ssize_t j = 0; j < b->ne; j++)
            if (b->e[j].one) b->e[k++] = b->e[j];
        b->ne = k;
        b->dead = 0;
        if (at_alloc(b, b->at_cap) < 0) return -1;
        for (Py_ssize_t j = 0; j < k; j++) at_put_nogrow(b, b->e[j].lo, b->e[j].hi, j);
    }
    return 0;
}

static int writer_cmp(const void *x, const void *y) {
    const int64_t *a = x, *b = y;
    if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
    if (a[1] != b[1]) return a[1] < b[1] ? -1 : 1;
    return 0;
}

static int wr_grow(SyncObject *self, Py_ssize_t need) {
    Py_ssize_t cap = self->cap_wr;
    return grow(&self->wr, &cap, need, 3 * sizeof(int64_t), 16) < 0
           || grow(&self->wobj, &self->cap_wr, need, sizeof(PyObject *), 16) < 0 ? -1 : 0;
}

/* The writers read `a` expects (`Sync._expect`, one read): a new reference. */
static PyObject *expect_read(SyncObject *self, const Acc *a) {
    Buf *b = &self->bufs[a->buf];
    Py_ssize_t nw = 0;
    PyObject *alone = NULL;
    int covered = 0, boxed = a->frame >= 0;
    int64_t lo = a->lo, hi = a->hi;
    for (Py_ssize_t j = b->ne - 1; j >= 0; j--) {
        Entry *e = &b->e[j];
        if (!e->one || e->lo >= hi || lo >= e->hi) continue;
        int same = boxed && e->frame == a->frame;
        if (same && !meets(a->box, a->rank, e->box, e->rank)) continue;
        PyObject *writer = PyTuple_GET_ITEM(e->one, 0);
        int64_t core = PyLong_AsLongLong(PyTuple_GET_ITEM(writer, 0)),
                index = PyLong_AsLongLong(PyTuple_GET_ITEM(writer, 1));
        if (nw == 0) alone = e->one;
        int dup = 0;
        for (Py_ssize_t k = 0; k < nw && !dup; k++)
            dup = self->wr[3 * k] == core && self->wr[3 * k + 1] == index;
        if (!dup) {
            if (wr_grow(self, nw + 1) < 0) return NULL;
            self->wr[3 * nw] = core;
            self->wr[3 * nw + 1] = index;
            self->wr[3 * nw + 2] = nw;
            self->wobj[nw] = writer;
            nw++;
        }
        if (e->lo <= lo && hi <= e->hi && (e->dense || (same && contains(e->box, e->rank, a->box, a->rank)))) {
            covered = 1;
            break;
        }
    }
    if (!covered && a->readonly) {
        if (wr_grow(self, nw + 1) < 0) return NULL;
        PyObject *h = self->host;
        if (!PyTuple_Check(h) || PyTuple_GET_SIZE(h) != 2) {
            PyErr_SetString(PyExc_TypeError, "Sync: host is a (core, index) pair");
            return NULL;
        }
        self->wr[3 * nw] = PyLong_AsLongLong(PyTuple_GET_ITEM(h, 0));
        self->wr[3 * nw + 1] = PyLong_AsLongLong(PyTuple_GET_ITEM(h, 1));
        self->wr[3 * nw + 2] = nw;
        self->wobj[nw] = h;
        nw++;
    }
    if (PyErr_Occurred()) return NULL;
    if (nw == 1) {
        if (alone) { Py_INCREF(alone); return alone; }
        return PyTuple_Pack(1, self->wobj[0]);
    }
    qsort(self->wr, nw, 3 * sizeof(int64_t), writer_cmp);
    PyObject *out = PyTuple_New(nw);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < nw; k++) {
        PyObject *w = self->wobj[self->wr[3 * k + 2]];
        Py_INCREF(w);
        PyTuple_SET_ITEM(out, k, w);
    }
    return out;
}

/* `Sync._expect`: `cmd.expects`, then the writes logged. */
static int expect(SyncObject *self, PyObject *cmd, Py_ssize_t n) {
    PyObject *op = PyObject_GetAttr(cmd, s_op);
    if (!op) return -1;
    PyObject *reads = PyDict_GetItemWithError(self->reads, op);
    Py_DECREF(op);
    if (!reads) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_KeyError, "Sync.order: an op without read slots");
        return -1;
    }
    PyObject *tiles = PyObject_GetAttr(cmd, s_tiles);
    if (!tiles) return -1;
    PyObject *expects = PyDict_New();
    if (!expects || PyObject_SetAttr(cmd, s_expects, expects) < 0) goto fail;
    Py_ssize_t nr = 0;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(reads); k++) {
        PyObject *slot = PyTuple_GET_ITEM(reads, k);
        int has = PyDict_Contains(tiles, slot);
        if (has < 0) goto fail;
        if (!has) continue;
        if (nr < n) {
            PyObject *w = expect_read(self, &self->acc[nr]);
            if (!w) goto fail;
            int rc = PyDict_SetItem(expects, slot, w);
            Py_DECREF(w);
            if (rc < 0) goto fail;
        }
        nr++;
    }
    if (n > nr) {
        PyObject *core = PyObject_GetAttr(cmd, s_core), *index = PyObject_GetAttr(cmd, s_index);
        PyObject *at = core && index ? PyTuple_Pack(2, core, index) : NULL;
        Py_XDECREF(core);
        Py_XDECREF(index);
        PyObject *one = at ? PyTuple_Pack(1, at) : NULL;
        Py_XDECREF(at);
        if (!one) goto fail;
        for (Py_ssize_t k = nr; k < n; k++) {
            if (writes_add(self, &self->bufs[self->acc[k].buf], &self->acc[k], one) < 0) {
                Py_DECREF(one);
                goto fail;
            }
        }
        Py_DECREF(one);
    }
    Py_DECREF(tiles);
    Py_DECREF(expects);
    return 0;
fail:
    Py_DECREF(tiles);
    Py_XDECREF(expects);
    return -1;
}

/* `_Log.forget_covered`: drop the records write `a` overwrites entirely. */
static void forget_covered(SyncObject *self, Buf *b, const Acc *a) {
    for (int t = 0; t < self->T; t++) {
        RecList *L = &b->threads[t];
        Py_ssize_t k = 0;
        for (Py_ssize_t j = 0; j < L->n; j++) {
            Rec *r = &L->r[j];
            if (a->lo <= r->lo && r->hi <= a->hi
                && (a->dense || (a->frame >= 0 && a->frame == r->frame
                                 && contains(a->box, a->rank, r->box, r->rank)))) {
                Py_DECREF(r->cmd);
                continue;
            }
            if (k != j) L->r[k] = *r;
            k++;
        }
        b->size -= L->n - k;
        L->n = k;
    }
}

static int append_signal(PyObject *cmd, PyObject *attr, PyObject *name) {
    PyObject *list = PyObject_GetAttr(cmd, attr);
    if (!list) return -1;
    int rc = PyList_Check(list) ? PyList_Append(list, name) : -1;
    if (rc < 0 && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "Sync.order: waits and signals are lists");
    Py_DECREF(list);
    return rc;
}

static PyObject *Sync_order(SyncObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "Sync.order(cmd, thread, accesses)");
        return NULL;
    }
    PyObject *cmd = args[0];
    long thread = PyLong_AsLong(args[1]);
    if (thread == -1 && PyErr_Occurred()) return NULL;
    int T = self->T;
    if (thread < 0 || thread >= T) {
        PyErr_Format(PyExc_ValueError, "Sync.order: thread %ld of %d", thread, T);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(args[2], "Sync.order: accesses are a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = parse(self, seq);
    if (n < 0 || expect(self, cmd, n) < 0) { Py_DECREF(seq); return NULL; }

    int64_t *known = self->known + (Py_ssize_t)thread * T;
    int nl = 0;
    Py_ssize_t i = 0; /* among the accesses to written buffers */
    for (Py_ssize_t k = 0; k < n; k++) {
        const Acc *a = &self->acc[k];
        if (a->readonly) continue;
        Py_ssize_t ai = i++;
        Buf *b = &self->bufs[a->buf];
        if (!b->active) continue;
        int write = a->write, boxed = a->frame >= 0;
        int64_t lo = a->lo, hi = a->hi;
        for (int t = 0; t < T; t++) {
            RecList *L = &b->threads[t];
            if (L->n == 0 || t == thread) continue;
            int64_t seen = known[t];
            if (L->r[L->n - 1].seq <= seen) continue;
            Py_ssize_t x = 0, y = L->n; /* bisect_right(seqs, seen) */
            while (x < y) {
                Py_ssize_t m = (x + y) / 2;
                if (seen < L->r[m].seq) y = m; else x = m + 1;
            }
            Rec *first = NULL, *last = NULL;
            for (Py_ssize_t j = x; j < L->n; j++) {
                Rec *r = &L->r[j];
                if (!(write || r->write) || lo >= r->hi || r->lo >= hi) continue;
                if (boxed && a->frame == r->frame && !meets(a->box, a->rank, r->box, r->rank)) continue;
                if (!first) first = r;
                last = r;
            }
            if (!last) continue;
            if (self->need_seq[t] < 0) {
                self->need_seq[t] = last->seq;
                self->need_clock[t] = last->clock;
                self->need_cmd[t] = last->cmd;
                self->found_i[t] = ai;
                self->found_pos[t] = first->pos;
                self->need_list[nl++] = t;
            } else if (self->need_seq[t] < last->seq) {
                self->need_seq[t] = last->seq;
                self->need_clock[t] = last->clock;
                self->need_cmd[t] = last->cmd;
            }
        }
    }
    /* the latest first; equal sequence numbers in the order the conflicts were found */
    for (int p = 1; p < nl; p++) {
        int t = self->need_list[p], q = p - 1;
        while (q >= 0) {
            int u = self->need_list[q];
            int before = self->need_seq[t] > self->need_seq[u]
                || (self->need_seq[t] == self->need_seq[u]
                    && (self->found_i[t] < self->found_i[u]
                        || (self->found_i[t] == self->found_i[u] && self->found_pos[t] < self->found_pos[u])));
            if (!before) break;
            self->need_list[q + 1] = u;
            q--;
        }
        self->need_list[q + 1] = t;
    }
    int failed = 0;
    for (int p = 0; p < nl; p++) {
        int t = self->need_list[p];
        int64_t r_seq = self->need_seq[t];
        self->need_seq[t] = -1;
        if (failed || r_seq <= known[t]) continue; /* implied by a wait taken above */
        Py_ssize_t c = (Py_ssize_t)t * T + thread;
        PyObject *name = PyList_GET_ITEM(self->channels, c);
        if (!self->channel_used[c]) {
            PyObject *home = PyLong_FromLong(thread / UNITS);
            PyObject *got = home ? PyDict_SetDefault(self->semaphores, name, home) : NULL;
            Py_XDECREF(home);
            if (!got) { failed = 1; continue; }
            self->channel_used[c] = 1;
        }
        if (append_signal(self->need_cmd[t], s_signals, name) < 0 || append_signal(cmd, s_waits, name) < 0) {
            failed = 1;
            continue;
        }
        const int64_t *clock = self->need_clock[t];
        for (int j = 0; j < T; j++)
            if (clock[j] > known[j]) known[j] = clock[j];
    }
    if (failed) { Py_DECREF(seq); return NULL; }
    int64_t s = self->seq[thread]++;
    known[thread] = s;
    int64_t *clock = arena_alloc(&self->phase, T * sizeof(int64_t));
    if (!clock) { Py_DECREF(seq); return NULL; }
    memcpy(clock, known, T * sizeof(int64_t));
    for (Py_ssize_t k = 0; k < n; k++) {
        const Acc *a = &self->acc[k];
        if (a->readonly) continue;
        Buf *b = &self->bufs[a->buf];
        if (!b->threads && !(b->threads = calloc(T, sizeof(RecList)))) {
            Py_DECREF(seq);
            return PyErr_NoMemory();
        }
        if (!b->active) {
            if (grow(&self->activel, &self->cap_active, self->nactive + 1, sizeof(Py_ssize_t), 64) < 0) {
                Py_DECREF(seq);
                return NULL;
            }
            self->activel[self->nactive++] = a->buf;
            b->active = 1;
        } else if (a->write && b->size > 4) {
            forget_covered(self, b, a);
        }
        RecList *L = &b->threads[thread];
        if (grow(&L->r, &L->cap, L->n + 1, sizeof(Rec), 8) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        Rec *r = &L->r[L->n];
        r->seq = s;
        r->pos = ++self->pos;
        r->write = a->write;
        r->clock = clock;
        if (copy_span(&self->phase, a, &r->lo, &r->hi, &r->frame, &r->rank, &r->box) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
        Py_INCREF(cmd);
        r->cmd = cmd;
        L->n++;
        b->size++;
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

static PyObject *Sync_barrier(SyncObject *self, PyObject *Py_UNUSED(ignored)) {
    clear_log(self);
    int T = self->T;
    for (int t = 0; t < T; t++)
        for (int u = 0; u < T; u++) self->known[(Py_ssize_t)t * T + u] = self->seq[u] - 1;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ Emitter.emit */

/* `setup(Ref, Cmd, specs, local_spaces)`: the classes and tables `emit` uses; `specs` maps
 * an op to (reads, outs, unit) of its OpSpec. */
static PyObject *g_ref_type, *g_cmd_type, *g_specs, *g_local;
static PyObject *s_tile, *s_buffer, *s_offset, *s_shape, *s_strides, *s_dtype, *s_read, *s_write,
    *s_access, *s_share, *s_tiles_attr, *s_cmds, *s_origin_of, *s_origin_attr, *s_origin_m, *s_sync,
    *s_order, *s_phase, *s_live, *s_program, *s_buffers, *s_space, *s_wb_bufs, *s_narrow, *s_staged,
    *s_readonly, *s_touches, *s_reads_attr, *s_writes_attr, *s_memory_key, *s_dma, *s_wb;
static const char *const UNIT_NAMES[UNITS] = {"dma_in", "dma_out", "matrix", "vector"};

static PyObject *emit_setup(PyObject *module, PyObject *args) {
    PyObject *ref, *cmd, *specs, *local;
    if (!PyArg_ParseTuple(args, "O!O!O!O", &PyType_Type, &ref, &PyType_Type, &cmd, &PyDict_Type, &specs, &local))
        return NULL;
    Py_INCREF(ref); Py_XSETREF(g_ref_type, ref);
    Py_INCREF(cmd); Py_XSETREF(g_cmd_type, cmd);
    Py_INCREF(specs); Py_XSETREF(g_specs, specs);
    Py_INCREF(local); Py_XSETREF(g_local, local);
    Py_RETURN_NONE;
}

/* d.setdefault(key, []) for a list (a new reference). */
static PyObject *list_in(PyObject *d, PyObject *key) {
    PyObject *got = PyDict_GetItemWithError(d, key);
    if (got) { Py_INCREF(got); return got; }
    if (PyErr_Occurred()) return NULL;
    PyObject *l = PyList_New(0);
    if (!l || PyDict_SetItem(d, key, l) < 0) { Py_XDECREF(l); return NULL; }
    return l;
}

/* `Touches.add(phase, core, key, write)`: key into the set of (phase, core). */
static int touch(PyObject *touches, PyObject *phase_core, PyObject *key, int write) {
    PyObject *d = PyObject_GetAttr(touches, write ? s_writes_attr : s_reads_attr);
    if (!d) return -1;
    int rc = -1;
    PyObject *set = PyDict_GetItemWithError(d, phase_core);
    if (set) {
        rc = PySet_Add(set, key);
    } else if (!PyErr_Occurred() && (set = PySet_New(NULL))) {
        rc = PyDict_SetItem(d, phase_core, set) < 0 ? -1 : PySet_Add(set, key);
        Py_DECREF(set);
    }
    Py_DECREF(d);
    return rc;
}

/* The accesses of `cmd`'s operands for `Sync`, and what the narrowed barriers need. */
static int emit_touches(PyObject *em, PyObject *core, PyObject *phase, PyObject *accesses) {
    PyObject *staged = PyObject_GetAttr(em, s_staged), *touches = PyObject_GetAttr(em, s_touches),
             *sync = PyObject_GetAttr(em, s_sync);
    PyObject *readonly = sync ? PyObject_GetAttr(sync, s_readonly) : NULL;
    PyObject *phase_core = PyTuple_Pack(2, phase, core);
    int rc = -1;
    if (!staged || !touches || !readonly || !phase_core) goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(accesses); k++) {
        PyObject *a = PyList_GET_ITEM(accesses, k);
        PyObject *buffer = PyTuple_GET_ITEM(a, 0);
        int write = PyObject_IsTrue(PyTuple_GET_ITEM(a, 3));
        if (write < 0) goto done;
        PyObject *writers = PyDict_GetItemWithError(staged, buffer);
        if (writers) { /* per writing core: the copies' rows are disjoint */
            Py_INCREF(writers);
            int bad = 0;
            if (write) {
                PyObject *key = PyTuple_Pack(2, buffer, core);
                bad = !key || PySet_Add(writers, core) < 0 || touch(touches, phase_core, key, 1) < 0;
                Py_XDECREF(key);
            } else {
                PyObject *it = PyObject_GetIter(writers), *w;
                bad = !it;
                while (!bad && (w = PyIter_Next(it))) {
                    PyObject *key = PyTuple_Pack(2, buffer, w);
                    bad = !key || touch(touches, phase_core, key, 0) < 0;
                    Py_XDECREF(key);
                    Py_DECREF(w);
                }
                Py_XDECREF(it);
                bad = bad || PyErr_Occurred();
            }
            Py_DECREF(writers);
            if (bad) goto done;
            continue;
        }
        if (PyErr_Occurred()) goto done;
        int ro = PySet_Contains(readonly, buffer);
        if (ro < 0) goto done;
        if (ro) continue;
        PyObject *key = PyObject_CallMethodOneArg(em, s_memory_key, buffer); /* em.memory_key */
        if (!key) goto done;
        int r = touch(touches, phase_core, key, write);
        Py_DECREF(key);
        if (r < 0) goto done;
    }
    rc = 0;
done:
    Py_XDECREF(staged); Py_XDECREF(touches); Py_XDECREF(sync); Py_XDECREF(readonly);
    Py_XDECREF(phase_core);
    return rc;
}

/* `Emitter.emit(core, op, **operands)` when nothing is being hoisted: `emit(em, core, op,
 * operands)` (emitter.py, `_emit_python`, is the same in Python). */
static PyObject *emit(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "emit(emitter, core, op, operands: dict)");
        return NULL;
    }
    if (!g_specs) {
        PyErr_SetString(PyExc_RuntimeError, "emit: setup() first");
        return NULL;
    }
    PyObject *em = args[0], *core = args[1], *op = args[2], *operands = args[3];
    PyObject *spec = PyDict_GetItemWithError(g_specs, op);
    if (!spec) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, op);
        return NULL;
    }
    PyObject *reads = PyTuple_GET_ITEM(spec, 0), *outs = PyTuple_GET_ITEM(spec, 1),
             *unit = PyTuple_GET_ITEM(spec, 2);
    PyObject *refs = PyDict_New(), *tiles = PyDict_New(), *params = PyDict_New();
    PyObject *shared = PyObject_GetAttr(em, s_tiles_attr);
    PyObject *cmd = NULL, *accesses = NULL, *result = NULL, *buffers = NULL, *stream = NULL,
             *origins = NULL, *phase = NULL, *live = NULL, *cmds = NULL, *origin_of = NULL;
    if (!refs || !tiles || !params || !shared) goto done;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(operands, &pos, &k, &v)) {
        if (PyObject_TypeCheck(v, (PyTypeObject *)g_ref_type)) {
            if (PyDict_SetItem(refs, k, v) < 0) goto done;
            PyObject *t = PyObject_GetAttr(v, s_tile);
            if (!t) goto done;
            PyObject *key = PyTuple_New(5);
            static PyObject **fields[5] = {&s_buffer, &s_offset, &s_shape, &s_strides, &s_dtype};
            for (int f = 0; key && f < 5; f++) {
                PyObject *x = PyObject_GetAttr(t, *fields[f]);
                if (!x) { Py_CLEAR(key); break; }
                PyTuple_SET_ITEM(key, f, x);
            }
            PyObject *tile = NULL;
            if (key) {
                tile = PyDict_GetItemWithError(shared, key);
                if (tile && PyObject_IsTrue(tile) == 1) Py_INCREF(tile);
                else if (!PyErr_Occurred()) tile = PyObject_CallMethodObjArgs(em, s_share, key, t, NULL);
                else tile = NULL;
            }
            Py_XDECREF(key);
            Py_DECREF(t);
            if (!tile) goto done;
            int rc = PyDict_SetItem(tiles, k, tile);
            Py_DECREF(tile);
            if (rc < 0) goto done;
        } else if (v != Py_None) {
            if (PyDict_SetItem(params, k, v) < 0) goto done;
        }
    }
    {
        PyObject *cargs[4] = {core, op, tiles, params};
        cmd = PyObject_Vectorcall(g_cmd_type, cargs, 4, NULL);
    }
    if (!cmd || !(accesses = PyList_New(0))) goto done;
    for (int w = 0; w < 2; w++) {
        PyObject *slots = w ? outs : reads;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(slots); j++) {
            PyObject *slot = PyTuple_GET_ITEM(slots, j);
            PyObject *ref = PyDict_GetItemWithError(refs, slot);
            if (!ref) {
                if (PyErr_Occurred()) goto done;
                if (!w) continue;
                PyErr_SetObject(PyExc_KeyError, slot);
                goto done;
            }
            PyObject *a = PyObject_GetAttr(ref, w ? s_write : s_read); /* Ref.access's cache */
            if (a == Py_None) {
                Py_DECREF(a);
                a = PyObject_CallMethodOneArg(ref, s_access, w ? Py_True : Py_False);
            }
            if (!a) goto done;
            int rc = PyList_Append(accesses, a);
            Py_DECREF(a);
            if (rc < 0) goto done;
        }
    }
    /* the thread: Emitter.unit */
    long c = PyLong_AsLong(core);
    if (c == -1 && PyErr_Occurred()) goto done;
    int u = -1;
    PyObject *program = PyObject_GetAttr(em, s_program);
    if (!program) goto done;
    buffers = PyObject_GetAttr(program, s_buffers);
    Py_DECREF(program);
    if (!buffers) goto done;
    if (PyUnicode_Compare(unit, s_dma) == 0) {
        PyObject *t = PyDict_GetItemWithError(tiles, PyTuple_GET_ITEM(outs, 0));
        if (!t) { if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, PyTuple_GET_ITEM(outs, 0)); goto done; }
        PyObject *name = PyObject_GetAttr(t, s_buffer);
        PyObject *dst = name ? PyObject_GetItem(buffers, name) : NULL;
        Py_XDECREF(name);
        if (!dst) goto done;
        PyObject *space = PyObject_GetAttr(dst, s_space), *dcore = PyObject_GetAttr(dst, s_core);
        int local = space ? PySequence_Contains(g_local, space) : -1;
        int same = local == 1 && dcore ? PyObject_RichCompareBool(dcore, core, Py_EQ) : 0;
        Py_XDECREF(space); Py_XDECREF(dcore); Py_DECREF(dst);
        if (local < 0 || same < 0) goto done;
        u = local && same ? 0 : 1;
    } else {
        for (int x = 0; x < UNITS; x++)
            if (PyUnicode_CompareWithASCIIString(unit, UNIT_NAMES[x]) == 0) u = x;
        if (u < 0) { PyErr_Format(PyExc_ValueError, "%R is not in list", unit); goto done; }
    }
    cmds = PyObject_GetAttr(em, s_cmds);
    if (!cmds || !(stream = list_in(cmds, core))) goto done;
    {
        PyObject *index = PyLong_FromSsize_t(PyList_GET_SIZE(stream));
        int rc = index ? PyObject_SetAttr(cmd, s_index, index) : -1;
        Py_XDECREF(index);
        if (rc < 0) goto done;
        PyObject *sync = PyObject_GetAttr(em, s_sync);
        PyObject *order = sync ? PyObject_GetAttr(sync, s_order) : NULL;
        Py_XDECREF(sync);
        PyObject *thread = order ? PyLong_FromLong(c * UNITS + u) : NULL;
        PyObject *oargs[3] = {cmd, thread, accesses};
        PyObject *r = thread ? PyObject_Vectorcall(order, oargs, 3, NULL) : NULL;
        Py_XDECREF(order); Py_XDECREF(thread);
        if (!r) goto done;
        Py_DECREF(r);
    }
    origin_of = PyObject_GetAttr(em, s_origin_of);
    if (!origin_of || !(origins = list_in(origin_of, core)) || PyList_Append(stream, cmd) < 0) goto done;
    {
        PyObject *o = PyObject_GetAttr(em, s_origin_attr); /* Emitter.origin()'s cache */
        if (o == Py_None) {
            Py_DECREF(o);
            o = PyObject_CallMethodNoArgs(em, s_origin_m);
        }
        int rc = o ? PyList_Append(origins, o) : -1;
        Py_XDECREF(o);
        if (rc < 0) goto done;
    }
    /* live ranges */
    if (!(phase = PyObject_GetAttr(em, s_phase)) || !(live = PyObject_GetAttr(em, s_live))) goto done;
    pos = 0;
    while (PyDict_Next(tiles, &pos, &k, &v)) {
        PyObject *name = PyObject_GetAttr(v, s_buffer);
        if (!name) goto done;
        PyObject *span = PyDict_GetItemWithError(live, name);
        int rc = 0;
        if (span) {
            Py_INCREF(phase);
            rc = PyList_SetItem(span, 1, phase);
        } else if (PyErr_Occurred()) {
            rc = -1;
        } else {
            PyObject *l = PyList_New(2);
            if (l) {
                Py_INCREF(phase); PyList_SET_ITEM(l, 0, phase);
                Py_INCREF(phase); PyList_SET_ITEM(l, 1, phase);
            }
            rc = l ? PyDict_SetItem(live, name, l) : -1;
            Py_XDECREF(l);
            PyObject *b = rc < 0 ? NULL : PyObject_GetItem(buffers, name);
            PyObject *space = b ? PyObject_GetAttr(b, s_space) : NULL;
            Py_XDECREF(b);
            int wb = space ? PyObject_RichCompareBool(space, s_wb, Py_EQ) : -1;
            Py_XDECREF(space);
            if (wb < 0) rc = -1;
            else if (wb) {
                PyObject *bufs = PyObject_GetAttr(em, s_wb_bufs);
                PyObject *list = bufs ? list_in(bufs, core) : NULL;
                rc = list ? PyList_Append(list, name) : -1;
                Py_XDECREF(list);
                Py_XDECREF(bufs);
            }
        }
        Py_DECREF(name);
        if (rc < 0) goto done;
    }
    {
        PyObject *narrow = PyObject_GetAttr(em, s_narrow);
        int on = narrow ? PyObject_IsTrue(narrow) : -1;
        Py_XDECREF(narrow);
        if (on < 0 || (on && emit_touches(em, core, phase, accesses) < 0)) goto done;
    }
    Py_INCREF(cmd);
    result = cmd;
done:
    Py_XDECREF(refs); Py_XDECREF(tiles); Py_XDECREF(params); Py_XDECREF(shared); Py_XDECREF(cmd);
    Py_XDECREF(accesses); Py_XDECREF(buffers); Py_XDECREF(stream); Py_XDECREF(origins);
    Py_XDECREF(phase); Py_XDECREF(live); Py_XDECREF(cmds); Py_XDECREF(origin_of);
    return result;
}

static PyMethodDef module_methods[] = {
    {"setup", (PyCFunction)emit_setup, METH_VARARGS, "setup(Ref, Cmd, specs, local_spaces): for emit."},
    {"emit", (PyCFunction)(void (*)(void))emit, METH_FASTCALL,
     "emit(emitter, core, op, operands): Emitter.emit when nothing is being hoisted."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef Sync_methods[] = {
    {"order", (PyCFunction)(void (*)(void))Sync_order, METH_FASTCALL,
     "order(cmd, thread, accesses): `cmd.expects`, its waits and the producers' signals; logs its accesses."},
    {"barrier", (PyCFunction)Sync_barrier, METH_NOARGS, "barrier(): forget the accesses (not the writes)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SyncType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stc_mlir.passes.lowering._sync.Sync",
    .tp_basicsize = sizeof(SyncObject),
    .tp_dealloc = (destructor)Sync_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The conflict and expected-writer logs of sync.Sync, in C.",
    .tp_methods = Sync_methods,
    .tp_init = (initproc)Sync_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sync", "The lowering's Sync.order and Emitter.emit in C.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sync(void) {
    if (PyType_Ready(&SyncType) < 0) return NULL;
    s_core = PyUnicode_InternFromString("core");
    s_op = PyUnicode_InternFromString("op");
    s_tiles = PyUnicode_InternFromString("tiles");
    s_index = PyUnicode_InternFromString("index");
    s_waits = PyUnicode_InternFromString("waits");
    s_signals = PyUnicode_InternFromString("signals");
    s_expects = PyUnicode_InternFromString("expects");
    if (!s_core || !s_op || !s_tiles || !s_index || !s_waits || !s_signals || !s_expects) return NULL;
    struct { PyObject **at; const char *name; } names[] = {
        {&s_tile, "tile"}, {&s_buffer, "buffer"}, {&s_offset, "offset"}, {&s_shape, "shape"},
        {&s_strides, "strides"}, {&s_dtype, "dtype"}, {&s_read, "_read"}, {&s_write, "_write"},
        {&s_access, "access"}, {&s_share, "_share"}, {&s_tiles_attr, "_tiles"}, {&s_cmds, "cmds"},
        {&s_origin_of, "origin_of"}, {&s_origin_attr, "_origin"}, {&s_origin_m, "origin"},
        {&s_sync, "sync"}, {&s_order, "order"}, {&s_phase, "phase"}, {&s_live, "live"},
        {&s_program, "program"}, {&s_buffers, "buffers"}, {&s_space, "space"}, {&s_wb_bufs, "_wb_bufs"},
        {&s_narrow, "narrow"}, {&s_staged, "staged"}, {&s_readonly, "readonly"}, {&s_touches, "touches"},
        {&s_reads_attr, "reads"}, {&s_writes_attr, "writes"}, {&s_memory_key, "memory_key"}, {&s_dma, "dma"},
        {&s_wb, "wb"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!(*names[i].at = PyUnicode_InternFromString(names[i].name))) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&SyncType);
    if (PyModule_AddObject(m, "Sync", (PyObject *)&SyncType) < 0
        || PyModule_AddIntConstant(m, "INTERFACE", SYNC_INTERFACE) < 0) {
        Py_DECREF(&SyncType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
