/* Helpers of the emulator's event loop in C (stc_mlir/emulator/native.py has their
   Python fallbacks, which give the same results).

   join(dst, src): dst[i] = max(dst[i], src[i]) over two C-contiguous int64 buffers of the
   same length, in place: `numpy.maximum(dst, src, out=dst)` for the 33-element clocks the
   emulator joins ~150,000 times per ResNet-50 run, without a ufunc call's set-up (~1 us
   there against ~0.1 us here).

   settled(starts, values, lo, hi, seen, writers, bits): what a read or a write of the
   granules [lo, hi) of a memory learns from its writer runs (`Memory.starts` / `values`)
   before looking at any granule: `native.settled`'s docstring.

   command(task, clock, code_of, bytes_read, bytes_written, hooks): a command's hazard and
   provenance checks, `native.python_command` step for step. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

static PyObject *join(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "join(dst, src) takes two arguments");
        return NULL;
    }
    Py_buffer dst, src;
    if (PyObject_GetBuffer(args[0], &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &src, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&dst);
        return NULL;
    }
    int ok = dst.itemsize == 8 && src.itemsize == 8 && dst.len == src.len && dst.format && src.format
             && (dst.format[0] == 'l' || dst.format[0] == 'q') && (src.format[0] == 'l' || src.format[0] == 'q')
             && dst.format[1] == 0 && src.format[1] == 0;
    if (ok) {
        int64_t *d = (int64_t *)dst.buf;
        const int64_t *s = (const int64_t *)src.buf;
        Py_ssize_t n = dst.len / 8;
        for (Py_ssize_t i = 0; i < n; i++)
            if (s[i] > d[i])
                d[i] = s[i];
    }
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "join: two int64 buffers of one length expected");
        return NULL;
    }
    Py_RETURN_NONE;
}


/* Index of the first element of the sorted list `a` greater than (right) or not less than
   (left) x. */
static Py_ssize_t bisect(PyObject *a, long long x, int right, int *err) {
    Py_ssize_t lo = 0, hi = PyList_GET_SIZE(a);
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        long long v = PyLong_AsLongLong(PyList_GET_ITEM(a, mid));
        if (v == -1 && PyErr_Occurred()) {
            *err = 1;
            return 0;
        }
        if (right ? x < v : x <= v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static PyObject *settled(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "settled(starts, values, lo, hi, seen, writers, bits) takes 7 arguments");
        return NULL;
    }
    PyObject *starts = args[0], *values = args[1], *seen = args[4];
    if (!PyList_Check(starts) || !PyList_Check(values) || !PyList_Check(seen)) {
        PyErr_SetString(PyExc_TypeError, "settled: starts, values and seen must be lists");
        return NULL;
    }
    long long lo = PyLong_AsLongLong(args[2]), hi = PyLong_AsLongLong(args[3]);
    long long bits = PyLong_AsLongLong(args[6]);
    if (PyErr_Occurred())
        return NULL;
    int writers = PyObject_IsTrue(args[5]);
    if (writers < 0)
        return NULL;
    if (lo >= hi)
        return Py_BuildValue("(OOO)", Py_None, Py_False, Py_False);
    int err = 0;
    Py_ssize_t i = bisect(starts, lo, 1, &err) - 1;
    Py_ssize_t k = err ? 0 : bisect(starts, hi, 0, &err);
    if (err)
        return NULL;
    if (i < 0 || k > PyList_GET_SIZE(values) || i > k) {
        PyErr_SetString(PyExc_ValueError, "settled: runs out of range");
        return NULL;
    }
    long long mask = (1LL << bits) - 1;
    Py_ssize_t n_seen = PyList_GET_SIZE(seen);
    int any_zero = 0, unseen = 0;
    for (Py_ssize_t j = i; j < k; j++) {
        long long v = PyLong_AsLongLong(PyList_GET_ITEM(values, j));
        if (v == -1 && PyErr_Occurred())
            return NULL;
        if (v < 0)  /* an unknown run: nothing is settled */
            return Py_BuildValue("(OOO)", Py_None, Py_False, Py_False);
        if (v == 0)
            any_zero = 1;
        else if (writers && !unseen) {
            long long t = v & mask;
            if (t >= n_seen) {
                PyErr_SetString(PyExc_IndexError, "settled: a code's thread is not in the clock");
                return NULL;
            }
            long long e = PyLong_AsLongLong(PyList_GET_ITEM(seen, t));
            if (e == -1 && PyErr_Occurred())
                return NULL;
            if ((v >> bits) > e)
                unseen = 1;
        }
    }
    if (i == k)  /* no run at all (cannot happen for lo < hi) */
        return Py_BuildValue("(OOO)", Py_None, Py_False, Py_False);
    PyObject *known = PyList_GetSlice(values, i, k);
    if (known == NULL)
        return NULL;
    PyObject *w = unseen ? Py_False : Py_True;
    PyObject *r = (unseen || any_zero) ? Py_False : Py_True;
    PyObject *out = PyTuple_Pack(3, known, w, r);
    Py_DECREF(known);
    return out;
}


/* ---- command(task, clock, code_of, bytes_read, bytes_written, hooks): `native.python_command`
   in C, the same steps in the same order; what the writer runs do not settle goes to the
   same hooks. */

static PyObject *S_reads, *S_writes, *S_expect, *S_tid, *S_number, *S_starts, *S_values,
    *S_writers, *S_level, *S_rows, *S_where, *S_pruned_at, *S_readers, *S_by, *S_size,
    *S_token, *S_code, *S_granule, *S_macs, *S_full, *S_BLOCK, *S_passed, *S_pending, *S_pending_at;

#define TID_BITS 8
#define MAX_SEEN 256

static int intern_names(void) {
#define NAME(var, text) if (!(var = PyUnicode_InternFromString(text))) return -1;
    NAME(S_reads, "reads") NAME(S_writes, "writes") NAME(S_expect, "expect") NAME(S_tid, "tid")
    NAME(S_number, "number") NAME(S_starts, "starts") NAME(S_values, "values")
    NAME(S_writers, "writers") NAME(S_level, "level") NAME(S_rows, "rows") NAME(S_where, "where")
    NAME(S_pruned_at, "pruned_at") NAME(S_readers, "readers") NAME(S_by, "by")
    NAME(S_size, "size") NAME(S_token, "token") NAME(S_code, "code") NAME(S_granule, "granule") NAME(S_macs, "macs")
    NAME(S_full, "full") NAME(S_BLOCK, "BLOCK") NAME(S_passed, "passed") NAME(S_pending, "pending")
    NAME(S_pending_at, "pending_at")
#undef NAME
    return 0;
}

/* an int attribute of `obj` (-1 with an exception set on failure: check PyErr_Occurred) */
static long long int_attr(PyObject *obj, PyObject *name) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    long long x = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return x;
}

static inline long long item_ll(PyObject *seq, Py_ssize_t i) {  /* tuple or list item */
    PyObject *v = PyTuple_Check(seq) ? PyTuple_GET_ITEM(seq, i) : PyList_GET_ITEM(seq, i);
    return PyLong_AsLongLong(v);
}

/* ---- Log: an access log kept as C numbers, `width` int64 fields per entry (a read log's rows
   (epoch, lo, hi, thread), a thread's write log (epoch, lo, hi)): appending one makes no
   Python object and a new run frees one block per log, not a tuple per access. Python reads it
   as a sequence of tuples (made when read: the tracker's slow paths, hazard messages, tests);
   `Log(width, entries=())`, `append(entry)`. Holds no objects: not tracked by the GC. */

typedef struct {
    PyObject_HEAD
    Py_ssize_t n, cap;
    int width;
    int64_t *v;
} Log;

static PyTypeObject LogType;

#define LOG_MAX_WIDTH 8

static Log *log_new(int width) {
    Log *l = PyObject_New(Log, &LogType);
    if (l != NULL) {
        l->n = l->cap = 0;
        l->width = width;
        l->v = NULL;
    }
    return l;
}

/* One entry (`width` numbers) appended. 0; -1 on error. */
static int log_push(Log *l, const int64_t *e) {
    if (l->n == l->cap) {
        Py_ssize_t cap = l->cap ? 2 * l->cap : 16;
        int64_t *more = PyMem_Realloc(l->v, (size_t)cap * (size_t)l->width * sizeof(int64_t));
        if (more == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        l->v = more;
        l->cap = cap;
    }
    memcpy(l->v + l->n * l->width, e, (size_t)l->width * sizeof(int64_t));
    l->n++;
    return 0;
}

/* `o` as a Log of at least `width` fields (borrowed), else NULL with a TypeError. */
static Log *as_log(PyObject *o, int width) {
    if (!Py_IS_TYPE(o, &LogType) || ((Log *)o)->width < width) {
        PyErr_SetString(PyExc_TypeError, "command: an access log must be a _loop.Log");
        return NULL;
    }
    return (Log *)o;
}

/* An entry from a Python sequence of `width` ints. 0; -1 on error. */
static int log_push_obj(Log *l, PyObject *entry) {
    PyObject *seq = PySequence_Fast(entry, "Log: an entry is a sequence of ints");
    if (seq == NULL)
        return -1;
    int64_t e[LOG_MAX_WIDTH];
    int rc = -1;
    if (PySequence_Fast_GET_SIZE(seq) != l->width)
        PyErr_Format(PyExc_ValueError, "Log: an entry has %d numbers", l->width);
    else {
        for (int q = 0; q < l->width; q++)
            e[q] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, q));
        if (!PyErr_Occurred())
            rc = log_push(l, e);
    }
    Py_DECREF(seq);
    return rc;
}

static PyObject *log_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    int width;
    PyObject *entries = NULL;
    static char *kw[] = {"width", "entries", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "i|O:Log", kw, &width, &entries))
        return NULL;
    if (width < 1 || width > LOG_MAX_WIDTH) {
        PyErr_Format(PyExc_ValueError, "Log: width %d not in 1..%d", width, LOG_MAX_WIDTH);
        return NULL;
    }
    Log *l = (Log *)type->tp_alloc(type, 0);
    if (l == NULL)
        return NULL;
    l->width = width;
    if (entries != NULL) {
        PyObject *it = PyObject_GetIter(entries), *e;
        if (it == NULL) {
            Py_DECREF(l);
            return NULL;
        }
        while ((e = PyIter_Next(it)) != NULL) {
            int rc = log_push_obj(l, e);
            Py_DECREF(e);
            if (rc < 0)
                break;
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) {
            Py_DECREF(l);
            return NULL;
        }
    }
    return (PyObject *)l;
}

static void log_dealloc(PyObject *self) {
    PyMem_Free(((Log *)self)->v);
    Py_TYPE(self)->tp_free(self);
}

static Py_ssize_t log_len(PyObject *self) {
    return ((Log *)self)->n;
}

static PyObject *log_item(PyObject *self, Py_ssize_t i) {  /* (a negative i made positive by Python) */
    Log *l = (Log *)self;
    if (i < 0 || i >= l->n) {
        PyErr_SetString(PyExc_IndexError, "Log index out of range");
        return NULL;
    }
    PyObject *t = PyTuple_New(l->width);
    for (int q = 0; t != NULL && q < l->width; q++) {
        PyObject *v = PyLong_FromLongLong(l->v[i * l->width + q]);
        if (v == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, q, v);
    }
    return t;
}

static PyObject *log_list(PyObject *self) {  /* the entries as a list of tuples (new reference) */
    Log *l = (Log *)self;
    PyObject *out = PyList_New(l->n);
    for (Py_ssize_t i = 0; out != NULL && i < l->n; i++) {
        PyObject *t = log_item(self, i);
        if (t == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, t);
    }
    return out;
}

static PyObject *log_richcompare(PyObject *self, PyObject *other, int op) {  /* as the list of its entries */
    if ((op != Py_EQ && op != Py_NE) || !(Py_IS_TYPE(other, &LogType) || PyList_Check(other)))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *a = log_list(self), *b = Py_IS_TYPE(other, &LogType) ? log_list(other) : Py_NewRef(other);
    PyObject *out = a != NULL && b != NULL ? PyObject_RichCompare(a, b, op) : NULL;
    Py_XDECREF(a);
    Py_XDECREF(b);
    return out;
}

static PyObject *log_repr(PyObject *self) {
    PyObject *a = log_list(self);
    if (a == NULL)
        return NULL;
    PyObject *out = PyObject_Repr(a);
    Py_DECREF(a);
    return out;
}

static PyObject *log_append(PyObject *self, PyObject *entry) {
    if (log_push_obj((Log *)self, entry) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *log_clear(PyObject *self, PyObject *unused) {
    (void)unused;
    ((Log *)self)->n = 0;
    Py_RETURN_NONE;
}

static PyObject *log_reduce(PyObject *self, PyObject *unused) {  /* (copy, deepcopy, pickle) */
    (void)unused;
    PyObject *a = log_list(self);
    return a == NULL ? NULL : Py_BuildValue("O(iN)", (PyObject *)Py_TYPE(self), ((Log *)self)->width, a);
}

static PyMethodDef log_methods[] = {
    {"append", log_append, METH_O, "append(entry): one entry (width ints) at the end."},
    {"clear", log_clear, METH_NOARGS, "clear(): no entries (the memory kept)."},
    {"__reduce__", log_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods log_as_sequence = {.sq_length = log_len, .sq_item = log_item};

static PyTypeObject LogType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stc_mlir.emulator._loop.Log",
    .tp_basicsize = sizeof(Log),
    .tp_dealloc = log_dealloc,
    .tp_repr = log_repr,
    .tp_as_sequence = &log_as_sequence,
    .tp_hash = PyObject_HashNotImplemented,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Log(width, entries=()): an access log of int64 entries of `width` fields, read as tuples.",
    .tp_richcompare = log_richcompare,
    .tp_methods = log_methods,
    .tp_new = log_tp_new,
};

/* dict[tid] (a Log of `width` fields, made if new), borrowed; NULL on error. */
static Log *log_in(PyObject *dict, long long tid, int width) {
    PyObject *key = PyLong_FromLongLong(tid);
    if (key == NULL)
        return NULL;
    PyObject *mine = PyDict_GetItemWithError(dict, key);
    if (mine == NULL && !PyErr_Occurred()) {
        Log *l = log_new(width);
        if (l != NULL && PyDict_SetItem(dict, key, (PyObject *)l) == 0)
            mine = (PyObject *)l;
        Py_XDECREF(l);  /* (the dict holds it) */
    }
    Py_DECREF(key);
    return mine == NULL ? NULL : as_log(mine, width);
}

/* What the writer runs over granules [lo, hi) say (`python_settled`): *i, *k the runs'
   slice of `values`, *known whether all are known (lo < hi, none negative), *write_ok
   and *read_ok as its two flags. Returns -1 on error. */
static int runs_over(PyObject *starts, PyObject *values, long long lo, long long hi,
                     const long long *seen, Py_ssize_t n_seen, int writers, Py_ssize_t *i,
                     Py_ssize_t *k, int *known, int *write_ok, int *read_ok) {
    *known = *write_ok = *read_ok = 0;
    *i = *k = 0;
    if (!PyList_Check(starts) || !PyList_Check(values)) {
        PyErr_SetString(PyExc_TypeError, "command: a memory's runs must be lists");
        return -1;
    }
    if (lo >= hi)
        return 0;
    int err = 0;
    Py_ssize_t a = bisect(starts, lo, 1, &err) - 1;
    Py_ssize_t b = err ? 0 : bisect(starts, hi, 0, &err);
    if (err)
        return -1;
    if (a < 0 || b > PyList_GET_SIZE(values) || a >= b) {
        PyErr_SetString(PyExc_ValueError, "command: runs out of range");
        return -1;
    }
    const long long mask = (1LL << TID_BITS) - 1;
    int any_zero = 0, unseen = 0;
    for (Py_ssize_t j = a; j < b; j++) {
        long long v = PyLong_AsLongLong(PyList_GET_ITEM(values, j));
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (v < 0)
            return 0;
        if (v == 0)
            any_zero = 1;
        else if (writers && !unseen) {
            long long t = v & mask;
            if (t >= n_seen) {
                PyErr_SetString(PyExc_IndexError, "command: a code's thread is not in the clock");
                return -1;
            }
            if ((v >> TID_BITS) > seen[t])
                unseen = 1;
        }
    }
    *i = a;
    *k = b;
    *known = 1;
    *write_ok = !unseen;
    *read_ok = !unseen && !any_zero;
    return 0;
}

/* `memory._wrote_since`: whether a thread's accesses after epoch `seen` (its `Log` of (epoch,
   lo, hi) entries, or of a read log's (epoch, lo, hi, thread)) may touch [lo, hi) (beyond 32
   of them: yes). -1 on error. */
static int wrote_since(PyObject *log, long long seen, long long lo, long long hi) {
    const Log *l = as_log(log, 3);
    if (l == NULL)
        return -1;
    const Py_ssize_t limit = 32, n = l->n, w = l->width;
    Py_ssize_t stop = n - 1 - limit;
    if (stop < -1)
        stop = -1;
    for (Py_ssize_t i = n - 1; i > stop; i--) {
        const int64_t *e = l->v + i * w;
        if (e[0] <= seen)
            return 0;
        if (e[1] < hi && e[2] > lo)
            return 1;
    }
    return n > limit && l->v[(n - 1 - limit) * w] > seen;
}

/* summary[tid] = [epoch, lo, hi] or the existing one updated (`memory._note`); `o_epoch`,
   `o_lo`, `o_hi` are those values as ints (put in, none made: `Acc.o_base`, `o_end`). */
static int note(PyObject *summary, long long tid, long long lo, long long hi, PyObject *o_epoch, PyObject *o_lo,
                PyObject *o_hi) {
    PyObject *key = PyLong_FromLongLong(tid);
    if (key == NULL)
        return -1;
    PyObject *mine = PyDict_GetItemWithError(summary, key);
    if (mine == NULL) {
        if (PyErr_Occurred()) {
            Py_DECREF(key);
            return -1;
        }
        PyObject *row = PyList_New(3);
        if (row != NULL) {
            PyObject *r3[3] = {o_epoch, o_lo, o_hi};
            for (int q = 0; q < 3; q++) {
                Py_INCREF(r3[q]);
                PyList_SET_ITEM(row, q, r3[q]);
            }
        }
        int rc = row == NULL ? -1 : PyDict_SetItem(summary, key, row);
        Py_XDECREF(row);
        Py_DECREF(key);
        return rc;
    }
    Py_DECREF(key);
    if (!PyList_Check(mine) || PyList_GET_SIZE(mine) != 3) {
        PyErr_SetString(PyExc_TypeError, "command: a summary is [epoch, lo, hi]");
        return -1;
    }
    long long mlo = item_ll(mine, 1), mhi = item_ll(mine, 2);
    if (PyErr_Occurred())
        return -1;
    Py_INCREF(o_epoch);
    PyList_SetItem(mine, 0, o_epoch);  /* (a list of 3: cannot fail) */
    if (lo < mlo) {
        Py_INCREF(o_lo);
        PyList_SetItem(mine, 1, o_lo);
    }
    if (hi > mhi) {
        Py_INCREF(o_hi);
        PyList_SetItem(mine, 2, o_hi);
    }
    return 0;
}

/* counts[level] += n */
static int count_dict(PyObject *counts, PyObject *level, PyObject *n) {
    PyObject *old = PyDict_GetItemWithError(counts, level);
    if (old == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, level);
        return -1;
    }
    PyObject *sum = PyNumber_Add(old, n);
    if (sum == NULL)
        return -1;
    int rc = PyDict_SetItem(counts, level, sum);
    Py_DECREF(sum);
    return rc;
}

/* A report's byte counts (level -> bytes, a dict) as `count` adds to them: straight into
   the dict (`tally` 0), or (the C loop) summed in C per level object and added to the dict
   by `counts_flush` at the end of the run (or before a count that is not a small int), so
   the dict ends with the very ints the per-access additions make, in no Python int per
   access. */
#define TALLY_LEVELS 8
#define TALLY_ALIASES 64
typedef struct {
    PyObject *dict;
    int tally, n, n_alias;
    PyObject *level[TALLY_LEVELS];  /* keys the dict holds (checked when first seen) */
    long long sum[TALLY_LEVELS];
    PyObject *alias[TALLY_ALIASES];  /* level objects seen (memories' levels, equal or not): */
    int alias_of[TALLY_ALIASES];     /* their `level` entry */
} Counts;

static int counts_flush(Counts *c) {
    int rc = 0;
    for (int i = 0; i < c->n; i++) {
        PyObject *n = PyLong_FromLongLong(c->sum[i]);
        if (n == NULL || (rc == 0 && count_dict(c->dict, c->level[i], n) < 0))
            rc = -1;
        Py_XDECREF(n);
        Py_DECREF(c->level[i]);
    }
    for (int i = 0; i < c->n_alias; i++)
        Py_DECREF(c->alias[i]);
    c->n = c->n_alias = 0;
    return rc;
}

/* The entry of `level` (an alias of an equal one, or new), -1 if none (the tally full, or
   the dict's count of it not an int), -2 on error. */
static int tally_entry(Counts *c, PyObject *level) {
    for (int a = 0; a < c->n_alias; a++)
        if (c->alias[a] == level)
            return c->alias_of[a];
    if (c->n_alias == TALLY_ALIASES)
        return -1;
    int i = 0;
    for (; i < c->n; i++) {
        int eq = PyObject_RichCompareBool(c->level[i], level, Py_EQ);
        if (eq < 0)
            return -2;
        if (eq)
            break;
    }
    if (i == c->n) {
        if (i == TALLY_LEVELS)
            return -1;
        PyObject *now = PyDict_GetItemWithError(c->dict, level);
        if (now == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, level);
            return -2;
        }
        if (!PyLong_CheckExact(now))  /* (summed onto an int only: the additions' order is moot) */
            return -1;
        Py_INCREF(level);
        c->level[i] = level;
        c->sum[i] = 0;
        c->n = i + 1;
    }
    Py_INCREF(level);
    c->alias[c->n_alias] = level;
    c->alias_of[c->n_alias++] = i;
    return i;
}

/* Whether `n` is an int `count` may sum in C (its value in *v). */
static int small_count(PyObject *n, long long *v) {
    int overflow;
    if (!PyLong_CheckExact(n))
        return 0;
    *v = PyLong_AsLongLongAndOverflow(n, &overflow);
    return !overflow && *v >= 0 && *v < (1LL << 48);
}

/* counts[level] += n; `small` whether n is a small int (`small_count`), its value `v`. */
static int count_of(Counts *c, PyObject *level, PyObject *n, int small, long long v) {
    if (c->tally && small) {
        int i = tally_entry(c, level);
        if (i == -2)
            return -1;
        if (i >= 0 && c->sum[i] < (1LL << 60)) {
            c->sum[i] += v;
            return 0;
        }
    }
    if (counts_flush(c) < 0)  /* the sums so far first: the dict adds in access order */
        return -1;
    return count_dict(c->dict, level, n);
}

static int count(Counts *c, PyObject *level, PyObject *n) {
    long long v = 0;
    int small = c->tally && small_count(n, &v);
    return count_of(c, level, n, small, v);
}

/* ---- a memory as the checks read it: its attributes read once a run (a `Memory` keeps the
   same lists, dicts, read log and arrays from `clear` to `clear`, so a run's checks need not
   read them per access), its granule codes and `full` flags as buffers opened when first
   looked at and held to the end of the run (or of a `command` call). */

typedef struct {
    Py_buffer buf;
    int32_t *code;
    Py_ssize_t n;
    long long g;
} Codes;

/* A write as a run's write log has it: when (the run's order of commands), its bytes, by which
   command number. */
typedef struct {
    long long seq, lo, hi, number;
    PyObject *fp;  /* its footprint (borrowed from the plan's checks) */
} Wrote;

typedef struct {
    PyObject *obj, *starts, *values, *writers, *writes, *reads, *passed, *level, *pending, *pending_at;
    PyObject *log_rows, *log_where, *log_readers, *log_by;  /* the read log's, while `log_known` */
    int log_known;
    long long size;
    Codes codes;
    Py_buffer full;
    int codes_open, full_open;
    long long block;
    Wrote *wrote;  /* the writes of this run so far, in order (while `Mems.seq`) */
    Py_ssize_t n_wrote, cap_wrote;
} Mem;

struct Checks;

/* The memories a run's checks looked at, and (`seq` not NULL: in `simulate`, where every
   write of the run goes through `command_of`) what settles a read's provenance without its
   granule codes (`covered_since`): per command number, when it started (its place in the
   run's order) if all its writes were recorded in C, else -1; the plan's checks per command
   number, to find an expected writer's writes. */
typedef struct {
    Mem **m;
    Py_ssize_t n, cap;
    long long *seq, next;
    Py_ssize_t n_seq;
    struct Checks *const *by_number;
} Mems;

/* The read log's lists and dicts are looked up again (a pruning replaces them; so may the
   Python code a hook runs). */
static void mem_forget_log(Mem *m) {
    Py_CLEAR(m->log_rows);
    Py_CLEAR(m->log_where);
    Py_CLEAR(m->log_readers);
    Py_CLEAR(m->log_by);
    m->log_known = 0;
}

static void mems_forget_logs(Mems *ms) {
    for (Py_ssize_t i = 0; i < ms->n; i++)
        mem_forget_log(ms->m[i]);
}

static void mems_free(Mems *ms) {
    for (Py_ssize_t i = 0; i < ms->n; i++) {
        Mem *m = ms->m[i];
        mem_forget_log(m);
        Py_XDECREF(m->obj); Py_XDECREF(m->starts); Py_XDECREF(m->values); Py_XDECREF(m->writers);
        Py_XDECREF(m->writes); Py_XDECREF(m->reads); Py_XDECREF(m->passed); Py_XDECREF(m->level);
        Py_XDECREF(m->pending);
        Py_XDECREF(m->pending_at);
        if (m->codes_open)
            PyBuffer_Release(&m->codes.buf);
        if (m->full_open)
            PyBuffer_Release(&m->full);
        PyMem_Free(m->wrote);
        PyMem_Free(m);
    }
    PyMem_Free(ms->m);
    ms->m = NULL;
    ms->n = ms->cap = 0;
}

/* The memory `obj` as `ms` has it (read the first time; NULL on error). */
static Mem *mem_of(Mems *ms, PyObject *obj) {
    for (Py_ssize_t i = 0; i < ms->n; i++)
        if (ms->m[i]->obj == obj)
            return ms->m[i];
    if (ms->n == ms->cap) {
        Py_ssize_t cap = ms->cap ? 2 * ms->cap : 8;
        Mem **more = PyMem_Realloc(ms->m, (size_t)cap * sizeof(Mem *));
        if (more == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        ms->m = more;
        ms->cap = cap;
    }
    Mem *m = PyMem_Calloc(1, sizeof(Mem));
    if (m == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    ms->m[ms->n++] = m;  /* freed with the others from here on */
    Py_INCREF(obj);
    m->obj = obj;
    if ((m->starts = PyObject_GetAttr(obj, S_starts)) == NULL || (m->values = PyObject_GetAttr(obj, S_values)) == NULL
        || (m->writers = PyObject_GetAttr(obj, S_writers)) == NULL || (m->writes = PyObject_GetAttr(obj, S_writes)) == NULL
        || (m->reads = PyObject_GetAttr(obj, S_reads)) == NULL || (m->passed = PyObject_GetAttr(obj, S_passed)) == NULL
        || (m->level = PyObject_GetAttr(obj, S_level)) == NULL || (m->pending = PyObject_GetAttr(obj, S_pending)) == NULL
        || (m->pending_at = PyObject_GetAttr(obj, S_pending_at)) == NULL)
        return NULL;
    if (!Py_IS_TYPE(m->pending, &LogType) || ((Log *)m->pending)->width != 3 || !PyList_Check(m->pending_at)
        || PyList_GET_SIZE(m->pending_at) != ((Log *)m->pending)->n) {
        PyErr_SetString(PyExc_TypeError, "command: a memory's pending codes must be a Log of 3 and a list");
        return NULL;
    }
    m->size = int_attr(obj, S_size);
    if (PyErr_Occurred())
        return NULL;
    return m;
}

/* list[i:k] = items[:n] (n <= 2; the items borrowed), in place: no list of the new items made. */
static int set_slice(PyObject *list, Py_ssize_t i, Py_ssize_t k, PyObject *const *items, Py_ssize_t n) {
    Py_ssize_t q = 0;
    for (; q < n && i + q < k; q++) {
        Py_INCREF(items[q]);
        PyList_SetItem(list, i + q, items[q]);  /* (in range: cannot fail; the old item an int) */
    }
    if (i + q < k)
        return PyList_SetSlice(list, i + q, k, NULL);
    for (; q < n; q++)
        if (PyList_Insert(list, i + q, items[q]) < 0)
            return -1;
    return 0;
}

/* `Memory.mark(lo, hi, code)`, `unknown` standing for None (a new unknown token); `o_lo`,
   `o_hi`, `o_code`: lo, hi, code as ints (`o_code` unused if `unknown`). */
static int mark(Mem *m, long long lo, long long hi, long long code, int unknown, PyObject *o_lo, PyObject *o_hi,
                PyObject *o_code) {
    PyObject *mem = m->obj, *starts = m->starts, *values = m->values, *token = NULL;
    if (lo >= hi)
        return 0;
    if (!PyList_Check(starts) || !PyList_Check(values)) {
        PyErr_SetString(PyExc_TypeError, "command: a memory's starts and values must be lists");
        return -1;
    }
    if (unknown) {
        long long t = int_attr(mem, S_token);
        if (t == -1 && PyErr_Occurred())
            return -1;
        code = t - 1;
        if ((token = PyLong_FromLongLong(code)) == NULL || PyObject_SetAttr(mem, S_token, token) < 0) {
            Py_XDECREF(token);
            return -1;
        }
        o_code = token;
    }
    long long size = m->size;
    int err = 0, rc = -1;
    Py_ssize_t k = bisect(starts, hi, 1, &err);
    Py_ssize_t i = err ? 0 : bisect(starts, lo, 0, &err);
    if (err)
        goto done;
    if (k < 1 || k > PyList_GET_SIZE(values) || i > k) {
        PyErr_SetString(PyExc_ValueError, "command: runs out of range");
        goto done;
    }
    PyObject *o_tail = PyList_GET_ITEM(values, k - 1);  /* (what continues after hi) */
    Py_INCREF(o_tail);  /* (held: the slices below drop the list's reference) */
    long long tail = PyLong_AsLongLong(o_tail);
    long long before = i > 0 ? PyLong_AsLongLong(PyList_GET_ITEM(values, i - 1)) : 0;
    if (!PyErr_Occurred()) {
        PyObject *new_s[2], *new_v[2];
        Py_ssize_t n = 0;
        if (i == 0 || before != code) {
            new_s[n] = o_lo;
            new_v[n++] = o_code;
        }
        if (hi < size && tail != code) {
            new_s[n] = o_hi;
            new_v[n++] = o_tail;
        }
        if (set_slice(starts, i, k, new_s, n) == 0 && set_slice(values, i, k, new_v, n) == 0)
            rc = 0;
    }
    Py_DECREF(o_tail);
done:
    Py_XDECREF(token);
    return rc;
}

/* A read logged (`_ReadLog.add`), then `prune(mem)` if the log has doubled; `o_lo`, `o_hi`,
   `o_epoch`: lo, hi, epoch as ints (put in the reader's summary, none made per read). */
static int log_read(Mem *m, PyObject *fp, long long lo, long long hi, long long tid, long long epoch,
                    PyObject *o_lo, PyObject *o_hi, PyObject *o_epoch, PyObject *prune) {
    PyObject *log = m->reads;
    if (!m->log_known) {  /* (looked up once until a pruning or a hook) */
        if ((m->log_rows = PyObject_GetAttr(log, S_rows)) == NULL
            || (m->log_where = PyObject_GetAttr(log, S_where)) == NULL
            || (m->log_readers = PyObject_GetAttr(log, S_readers)) == NULL
            || (m->log_by = PyObject_GetAttr(log, S_by)) == NULL) {
            mem_forget_log(m);
            return -1;
        }
        if (as_log(m->log_rows, 4) == NULL || !PyList_Check(m->log_where) || !PyDict_Check(m->log_readers)
            || !PyDict_Check(m->log_by)) {
            mem_forget_log(m);
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "command: a read log's rows, where, readers, by");
            return -1;
        }
        m->log_known = 1;
    }
    Log *rows = (Log *)m->log_rows, *mine;
    const int64_t row[4] = {epoch, lo, hi, tid};  /* in the rows and the thread's own log */
    if (log_push(rows, row) < 0 || PyList_Append(m->log_where, fp) < 0)
        return -1;
    if (note(m->log_readers, tid, lo, hi, o_epoch, o_lo, o_hi) < 0)
        return -1;
    if ((mine = log_in(m->log_by, tid, 4)) == NULL || log_push(mine, row) < 0)
        return -1;
    long long pruned_at = int_attr(log, S_pruned_at);
    if (pruned_at == -1 && PyErr_Occurred())
        return -1;
    if (rows->n >= 2 * pruned_at) {
        mem_forget_log(m);
        PyObject *r = PyObject_CallOneArg(prune, m->obj);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

/* Whether some thread read [start, stop) of `log` after what `seen` has of it (the
   summary test of `HazardTracker._check_readers`). -1 on error. */
/* Whether a logged reader `r` (just read with item_ll) cannot be used: an error is set
   (its numbers did not read, or it is not a thread of the clock `seen`). */
static inline int reader_fails(long long r, Py_ssize_t n_seen) {
    if (PyErr_Occurred())
        return 1;
    if (r < 0 || r >= n_seen) {
        PyErr_SetString(PyExc_IndexError, "command: a reader is not in the clock");
        return 1;
    }
    return 0;
}

static int readers_unseen(PyObject *log, const long long *seen, Py_ssize_t n_seen, long long tid,
                          long long start, long long stop) {
    PyObject *readers = PyObject_GetAttr(log, S_readers);
    if (readers == NULL)
        return -1;
    if (!PyDict_Check(readers)) {
        Py_DECREF(readers);
        PyErr_SetString(PyExc_TypeError, "command: a read log's readers must be a dict");
        return -1;
    }
    PyObject *key, *summary, *by = NULL;
    Py_ssize_t pos = 0;
    int out = 0;
    while (PyDict_Next(readers, &pos, &key, &summary)) {
        long long r = PyLong_AsLongLong(key);
        if (!PyList_Check(summary) || PyList_GET_SIZE(summary) != 3) {
            PyErr_SetString(PyExc_TypeError, "command: a summary is [epoch, lo, hi]");
            out = -1;
            break;
        }
        long long e = item_ll(summary, 0), rlo = item_ll(summary, 1), rhi = item_ll(summary, 2);
        if (reader_fails(r, n_seen)) {
            out = -1;
            break;
        }
        if (!(e > seen[r] && rlo < stop && rhi > start && r != tid))
            continue;
        if (by == NULL && (by = PyObject_GetAttr(log, S_by)) == NULL) {
            out = -1;
            break;
        }
        PyObject *mine = PyDict_GetItemWithError(by, key);
        if (mine == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, key);
            out = -1;
            break;
        }
        int w = wrote_since(mine, seen[r], start, stop);
        if (w != 0) {
            out = w;
            break;
        }
    }
    Py_XDECREF(by);
    Py_DECREF(readers);
    return out;
}


/* A footprint (base, shape, strides, run, span) as numbers. */
typedef struct {
    long long base, run, span, dims[16], steps[16];
    int nd;
} Foot;

static int foot_of(PyObject *fp, Foot *f) {
    if (!PyTuple_Check(fp) || PyTuple_GET_SIZE(fp) != 5) {
        PyErr_SetString(PyExc_TypeError, "command: a footprint is (base, shape, strides, run, span)");
        return -1;
    }
    PyObject *shape = PyTuple_GET_ITEM(fp, 1), *strides = PyTuple_GET_ITEM(fp, 2);
    if (!PyTuple_Check(shape) || !PyTuple_Check(strides) || PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides)
        || PyTuple_GET_SIZE(shape) > 16) {
        PyErr_SetString(PyExc_TypeError, "command: a footprint's shape and strides");
        return -1;
    }
    f->base = item_ll(fp, 0);
    f->run = item_ll(fp, 3);
    f->span = item_ll(fp, 4);
    f->nd = (int)PyTuple_GET_SIZE(shape);
    for (int d = 0; d < f->nd; d++) {
        f->dims[d] = item_ll(shape, d);
        f->steps[d] = item_ll(strides, d);
    }
    return PyErr_Occurred() ? -1 : 0;
}

/* `each(ctx, first byte)` for every row of footprint `f` in order (none if it is empty), up to
   the first that does not return 0: what it returned (else 0). */
static int for_rows(const Foot *f, int (*each)(void *, long long), void *ctx) {
    long long idx[16] = {0};
    if (f->span <= 0 || f->run <= 0)
        return 0;
    for (int d = 0; d < f->nd; d++)
        if (f->dims[d] <= 0)
            return 0;
    for (;;) {
        long long at = f->base;
        for (int d = 0; d < f->nd; d++)
            at += idx[d] * f->steps[d];
        int rc = each(ctx, at);
        if (rc != 0)
            return rc;
        int d = f->nd - 1;
        while (d >= 0 && ++idx[d] == f->dims[d])
            idx[d--] = 0;
        if (d < 0)
            return 0;
    }
}

/* ---- granule codes (`Memory.code`, int32 per granule) */

/* The memory's granule codes (opened the first time: `Memory.code`, int32 per granule). */
static Codes *codes_of(Mem *m) {
    if (m->codes_open)
        return &m->codes;
    Codes *c = &m->codes;
    PyObject *mem = m->obj, *arr = PyObject_GetAttr(mem, S_code);
    if (arr == NULL)
        return NULL;
    long long g = int_attr(mem, S_granule);
    if (g == -1 && PyErr_Occurred()) {
        Py_DECREF(arr);
        return NULL;
    }
    int rc = PyObject_GetBuffer(arr, &c->buf, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT);
    Py_DECREF(arr);
    if (rc < 0)
        return NULL;
    if (c->buf.itemsize != 4 || c->buf.format == NULL || !(c->buf.format[0] == 'i' || c->buf.format[0] == 'l')
        || c->buf.format[1] != 0 || g <= 0) {
        PyBuffer_Release(&c->buf);
        PyErr_SetString(PyExc_TypeError, "command: a memory's codes must be int32");
        return NULL;
    }
    c->code = (int32_t *)c->buf.buf;
    c->n = c->buf.len / 4;
    c->g = g;
    m->codes_open = 1;
    return c;
}

/* The slice [*j, *k) of a memory's runs (`starts`, `values`) over granules [lo, hi). 0; -1 on
   error. */
static int runs_slice(PyObject *starts, PyObject *values, long long lo, long long hi, Py_ssize_t *j,
                      Py_ssize_t *k) {
    int err = 0;
    *k = bisect(starts, hi, 0, &err);
    *j = err ? 0 : bisect(starts, lo, 1, &err) - 1;
    if (err)
        return -1;
    if (*j < 0 || *k > PyList_GET_SIZE(values)) {
        PyErr_SetString(PyExc_ValueError, "command: runs out of range");
        return -1;
    }
    return 0;
}

/* Each known written run (code > 0) over granules [lo, hi), clipped to it, in order:
   `each(ctx, a, b, code)`. 0; -1 on error. */
static int known_runs(PyObject *starts, PyObject *values, long long lo, long long hi,
                      int (*each)(void *, long long, long long, long long), void *ctx) {
    Py_ssize_t j, k;
    if (lo >= hi)
        return 0;
    if (runs_slice(starts, values, lo, hi, &j, &k) < 0)
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(starts);
    for (; j < k; j++) {
        long long v = PyLong_AsLongLong(PyList_GET_ITEM(values, j));
        long long a = PyLong_AsLongLong(PyList_GET_ITEM(starts, j));
        long long b = j + 1 < n ? PyLong_AsLongLong(PyList_GET_ITEM(starts, j + 1)) : hi;
        if (PyErr_Occurred())
            return -1;
        if (v > 0 && each(ctx, a < lo ? lo : a, b > hi ? hi : b, v) < 0)
            return -1;
    }
    return 0;
}

static int fill_one(void *codes, long long a, long long b, long long v) {
    int32_t *code = ((Codes *)codes)->code;
    for (long long q = a; q < b; q++)
        code[q] = (int32_t)v;
    return 0;
}

/* `Memory._fill(lo, hi)`: the code of each known written run over [lo, hi) into `code`. */
static int fill_runs(Codes *c, PyObject *starts, PyObject *values, long long lo, long long hi) {
    if (hi > c->n) {
        PyErr_SetString(PyExc_ValueError, "command: runs out of range");
        return -1;
    }
    return known_runs(starts, values, lo, hi, fill_one, c);
}

/* A row's granules set to one code (`flush`). */
typedef struct {
    Codes *c;
    long long g, per;
    int32_t v;
} Fill;

static int fill_row(void *fill, long long at) {
    Fill *x = fill;
    int32_t *p = x->c->code + at / x->g;
    for (long long q = 0; q < x->per; q++)
        p[q] = x->v;
    return 0;
}

/* `Memory._flush`: the codes of the writes still pending (`Memory.pending`: (lo, hi, code), and
   `pending_at`: the footprint, or None for every granule of [lo, hi), in order) into `code`,
   both emptied (in place: the memory keeps them). 0; -1 on error. */
static int flush(Mem *m) {
    Log *pending = (Log *)m->pending;
    if (pending->n == 0)
        return 0;
    Codes *c = codes_of(m);  /* (its first opening reads `Memory.code`, which flushes them itself) */
    if (c == NULL)
        return -1;
    Py_ssize_t n = pending->n;
    if (PyList_GET_SIZE(m->pending_at) != n) {
        PyErr_SetString(PyExc_TypeError, "command: a memory's pending codes and footprints differ in length");
        return -1;
    }
    for (Py_ssize_t e = 0; e < n; e++) {
        const int64_t *p = pending->v + 3 * e;
        long long lo = p[0], hi = p[1], v = p[2];
        PyObject *fp = PyList_GET_ITEM(m->pending_at, e);
        if (lo < 0 || hi > c->n) {
            PyErr_SetString(PyExc_ValueError, "command: a pending write out of its memory");
            return -1;
        }
        Foot f;
        if (fp == Py_None)
            fill_one(c, lo, hi, v);
        else if (foot_of(fp, &f) < 0)
            return -1;
        else {
            Fill fill = {c, c->g, f.run / c->g, (int32_t)v};
            for_rows(&f, fill_row, &fill);
        }
    }
    pending->n = 0;
    return PyList_SetSlice(m->pending_at, 0, n, NULL);
}

/* (lo, hi, code) onto `Memory.pending`, `fp` onto `pending_at` (`m`: the Mem). */
static int pend(void *m, long long lo, long long hi, PyObject *fp, long long code) {
    const int64_t e[3] = {lo, hi, code};
    if (log_push((Log *)((Mem *)m)->pending, e) < 0)
        return -1;
    if (PyList_Append(((Mem *)m)->pending_at, fp) < 0) {
        ((Log *)((Mem *)m)->pending)->n--;
        return -1;
    }
    return 0;
}

static int pend_fill(void *m, long long a, long long b, long long v) {
    return pend(m, a, b, Py_None, v);
}

/* A strided write's codes left pending (`Memory.pending`, applied by `flush` when some check or
   Python looks at the codes; most never are): first, the known runs over its hull [lo, hi) as
   `Memory._fill` would bring them into `code` (its hull's runs become unknown), then its own. */
static int defer(Mem *m, PyObject *fp, long long lo, long long hi, long long code) {
    if (known_runs(m->starts, m->values, lo, hi, pend_fill, m) < 0)
        return -1;
    return pend(m, lo, hi, fp, code);
}

/* Whether none of p[0..n) is 0; in blocks the compiler vectorises (no exit inside one). */
static inline int none_zero(const int32_t *p, long long n) {
    long long q = 0;
    for (; q + 64 <= n; q += 64) {
        int zero = 0;
        for (int i = 0; i < 64; i++)
            zero |= p[q + i] == 0;
        if (zero)
            return 0;
    }
    for (; q < n; q++)
        if (p[q] == 0)
            return 0;
    return 1;
}

/* Whether each of p[0..n) is 0 or one of `allowed` (sorted: `sorted_codes`; `*last` the last
   one found there). */
static inline int all_expected_any(const int32_t *p, long long n, const long long *allowed, Py_ssize_t n_allowed,
                                   int32_t *last) {
    long long q = 0;
    while (q < n) {
        long long end = q + 64 < n ? q + 64 : n;
        const int32_t l = *last;
        int other = 0;
        for (long long i = q; i < end; i++)
            other |= p[i] != 0 && p[i] != l;
        if (other) {
            for (long long i = q; i < end; i++) {
                int32_t v = p[i];
                if (v == 0 || v == *last)
                    continue;
                Py_ssize_t lo = 0, hi = n_allowed;  /* (a search: a read may expect a hundred writers) */
                while (lo < hi) {
                    Py_ssize_t mid = (lo + hi) / 2;
                    if (allowed[mid] < v)
                        lo = mid + 1;
                    else
                        hi = mid;
                }
                if (lo == n_allowed || allowed[lo] != v)
                    return 0;
                *last = v;
            }
        }
        q = end;
    }
    return 1;
}

#define N_WIDE 8  /* up to this many expected writers: `all_expected`'s branch-free test */

/* `all_expected_any` with the allowed codes as int32 in `wide` (N_WIDE of them, padded with
   0, which is allowed anyway): each element compared with all of them, in blocks the
   compiler vectorises (a read over tiles of several writers changes code every few
   granules, where the one-code test above falls back to a search per granule). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* a version per vector width, chosen when the module loads (the scan is ~15% of a run) */
__attribute__((target_clones("avx2", "default")))
#endif
static int all_expected_wide(const int32_t *p, long long n, const int32_t *wide) {
    const int32_t a0 = wide[0], a1 = wide[1], a2 = wide[2], a3 = wide[3], a4 = wide[4], a5 = wide[5],
                  a6 = wide[6], a7 = wide[7];
    long long q = 0;
    for (; q < n; q += 256) {
        long long end = q + 256 < n ? q + 256 : n;
        int bad = 0;
        for (long long i = q; i < end; i++) {
            int32_t v = p[i];
            bad |= !((v == 0) | (v == a0) | (v == a1) | (v == a2) | (v == a3) | (v == a4) | (v == a5) | (v == a6)
                     | (v == a7));
        }
        if (bad)
            return 0;
    }
    return 1;
}

/* Whether each of p[0..n) is 0 or one of `allowed` (`wide`: them as `all_expected_wide`
   takes them, or NULL if they are more than N_WIDE or one is not an int32 code). */
static inline int all_expected(const int32_t *p, long long n, const long long *allowed, Py_ssize_t n_allowed,
                               const int32_t *wide, int32_t *last) {
    return wide != NULL ? all_expected_wide(p, n, wide) : all_expected_any(p, n, allowed, n_allowed, last);
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* `allowed` sorted, as `all_expected_any` takes them: in `buf` (of 128) or allocated (free it
   if not `buf`); NULL when out of memory. */
static long long *sorted_codes(const long long *allowed, Py_ssize_t n_allowed, long long *buf) {
    long long *out = n_allowed <= 128 ? buf : PyMem_Malloc((size_t)n_allowed * sizeof(long long));
    if (out == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    memcpy(out, allowed, (size_t)n_allowed * sizeof(long long));
    qsort(out, (size_t)n_allowed, sizeof(long long), cmp_ll);
    return out;
}

/* `allowed` as `all_expected_wide` takes them into `wide`; NULL if they do not fit. */
static const int32_t *widen(const long long *allowed, Py_ssize_t n_allowed, int32_t *wide) {
    if (n_allowed > N_WIDE)
        return NULL;
    for (Py_ssize_t a = 0; a < N_WIDE; a++) {
        long long v = a < n_allowed ? allowed[a] : 0;
        if (v < INT32_MIN || v > INT32_MAX)
            return NULL;
        wide[a] = (int32_t)v;
    }
    return wide;
}

#define G_ZERO 0  /* whether none is 0 (never written) */
#define G_SET 1   /* set them all to `value` (left pending: `defer`) */
#define G_EXPECTED 2  /* whether each is 0 (never written: the tracker's case) or one of `allowed` */
#define G_WRITERS 3  /* whether none is a code `v` with v >= allowed[v & (2^TID_BITS - 1)]: written by a
                        thread after the epoch the accessing thread has seen of it (`_check_writers`) */

/* Over granules [lo, hi) of a memory (its codes `c`, runs `starts` / `values`), whether
   each is nonzero (G_ZERO) or 0 or one of `allowed` (G_EXPECTED), from the runs where they
   are known (a known run's code is its granules'; a run of 0 is never written) and from
   the codes only under unknown runs, which `code` holds up to date: nothing filled in
   (`_granules_dense`). 1 / 0, -1 on error. */
static int dense_scan(Codes *c, PyObject *starts, PyObject *values, long long lo, long long hi, int mode,
                      const long long *allowed, Py_ssize_t n_allowed) {
    Py_ssize_t j, k;
    if (runs_slice(starts, values, lo, hi, &j, &k) < 0)
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(starts);
    int out = 1;
    int32_t last_ok = 0, wbuf[N_WIDE];
    const int32_t *wide = mode == G_EXPECTED ? widen(allowed, n_allowed, wbuf) : NULL;
    long long sbuf[128], *sorted = NULL;
    if (mode == G_EXPECTED && wide == NULL && (sorted = sorted_codes(allowed, n_allowed, sbuf)) == NULL)
        return -1;
    for (; j < k && out == 1; j++) {
        long long v = PyLong_AsLongLong(PyList_GET_ITEM(values, j));
        if (v == -1 && PyErr_Occurred()) {
            out = -1;
            break;
        }
        if (v >= 0) {
            if (mode == G_ZERO) {
                out = v != 0;
            } else if (v != 0 && v != last_ok) {
                int found = 0;
                for (Py_ssize_t a = 0; a < n_allowed && !found; a++)
                    found = v == allowed[a];
                if (found)
                    last_ok = (int32_t)v;
                else
                    out = 0;
            }
            continue;
        }
        long long a = PyLong_AsLongLong(PyList_GET_ITEM(starts, j));
        long long b = j + 1 < n ? PyLong_AsLongLong(PyList_GET_ITEM(starts, j + 1)) : hi;
        if (PyErr_Occurred()) {
            out = -1;
            break;
        }
        if (a < lo)
            a = lo;
        if (b > hi)
            b = hi;
        if (a < b)
            out = mode == G_ZERO ? none_zero(c->code + a, b - a)
                                 : all_expected(c->code + a, b - a, sorted, n_allowed, wide, &last_ok);
    }
    if (sorted != sbuf)
        PyMem_Free(sorted);
    return out;
}

/* Whether every granule of [lo, hi) has been written, from the memory's `full` flags (per
   block of `BLOCK` granules, `Memory.hull_written`'s): a block not yet flagged is looked at
   (`dense_scan`) and flagged if it is all written (codes never return to 0 in a run); the
   first block that is not says 0. 1 / 0, -1 on error. */
static int hull_full(Mem *m, Codes *c, long long lo, long long hi) {
    PyObject *starts = m->starts, *values = m->values;
    if (lo >= hi)
        return 0;
    if (!m->full_open) {  /* the flags and their block, read once */
        long long block = int_attr(m->obj, S_BLOCK);
        if (block == -1 && PyErr_Occurred())
            return -1;
        PyObject *full = PyObject_GetAttr(m->obj, S_full);
        if (full == NULL)
            return -1;
        int rc = PyObject_GetBuffer(full, &m->full, PyBUF_WRITABLE);
        Py_DECREF(full);
        if (rc < 0)
            return -1;
        m->full_open = 1;
        m->block = block;
    }
    const Py_buffer b = m->full;
    const long long block = m->block;
    int out = 1;
    long long b0 = lo / block, b1 = (hi - 1) / block + 1;
    if (block <= 0 || b1 > b.len) {
        PyErr_SetString(PyExc_ValueError, "command: a memory's full flags do not cover its codes");
        out = -1;
    }
    unsigned char *flag = (unsigned char *)b.buf;
    for (long long q = b0; q < b1 && out == 1; q++) {
        if (flag[q])
            continue;
        long long e = (q + 1) * block < c->n ? (q + 1) * block : c->n;
        out = dense_scan(c, starts, values, q * block, e, G_ZERO, NULL, 0);
        if (out == 1)
            flag[q] = 1;
    }
    return out;
}


/* Over the granules of footprint `fp` (base, shape, strides, run, span), with `code`
   brought up to date over its hull first (`Memory.codes`): per `mode`, whether they are
   fine (1) or not (0); -1 on error. An empty footprint is never fine. */
static int granules(Mem *m, PyObject *fp, int mode, long long value, const long long *allowed,
                    Py_ssize_t n_allowed) {
    PyObject *starts = m->starts, *values = m->values;
    if (!PyTuple_Check(fp) || PyTuple_GET_SIZE(fp) != 5) {
        PyErr_SetString(PyExc_TypeError, "command: a footprint is (base, shape, strides, run, span)");
        return -1;
    }
    long long base = item_ll(fp, 0), run = item_ll(fp, 3), span = item_ll(fp, 4);
    PyObject *shape = PyTuple_GET_ITEM(fp, 1), *strides = PyTuple_GET_ITEM(fp, 2);
    if (PyErr_Occurred())
        return -1;
    if (span <= 0 || run <= 0)
        return 0;
    if (!PyTuple_Check(shape) || !PyTuple_Check(strides) || PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides)
        || PyTuple_GET_SIZE(shape) > 16) {
        PyErr_SetString(PyExc_TypeError, "command: a footprint's shape and strides");
        return -1;
    }
    int nd = (int)PyTuple_GET_SIZE(shape);
    long long dims[16], steps[16], idx[16];
    for (int d = 0; d < nd; d++) {
        dims[d] = item_ll(shape, d);
        steps[d] = item_ll(strides, d);
        idx[d] = 0;
    }
    if (PyErr_Occurred())
        return -1;
    Codes *cp = codes_of(m);
    if (cp == NULL)
        return -1;
    Codes c = *cp;
    const long long g = c.g;
    int out = 1;
    long long lo = base / g, hi = (base + span + g - 1) / g;
    if (base < 0 || hi > c.n) {
        PyErr_SetString(PyExc_ValueError, "command: a footprint out of its memory");
        out = -1;
        goto end;
    }
    if (mode == G_SET) {
        out = defer(m, fp, lo, hi, value) < 0 ? -1 : 1;
        goto end;
    }
    if (flush(m) < 0) {  /* (the codes as they are now) */
        out = -1;
        goto end;
    }
    if (mode == G_ZERO) {
        int f = hull_full(m, &c, lo, hi);
        if (f != 0) {
            out = f;  /* 1: every granule of the hull written, so are the footprint's; -1 error */
            goto end;
        }
    }
    if (run == span && mode != G_WRITERS) {
        out = dense_scan(&c, starts, values, lo, hi, mode, allowed, n_allowed);
        goto end;
    }
    if (fill_runs(&c, starts, values, lo, hi) < 0) {
        out = -1;
        goto end;
    }
    for (int d = 0; d < nd; d++)
        if (dims[d] <= 0)
            goto end;  /* no granule at all */
    const long long per = run / g;
    int32_t last_ok = 0, wbuf[N_WIDE];
    const int32_t *wide = mode == G_EXPECTED ? widen(allowed, n_allowed, wbuf) : NULL;
    long long sbuf[128], *sorted = NULL;
    if (mode == G_EXPECTED && wide == NULL && (sorted = sorted_codes(allowed, n_allowed, sbuf)) == NULL) {
        out = -1;
        goto end;
    }
    for (;;) {
        long long at = base;
        for (int d = 0; d < nd; d++)
            at += idx[d] * steps[d];
        int32_t *p = c.code + at / g;
        if (mode == G_EXPECTED) {
            if (!all_expected(p, per, sorted, n_allowed, wide, &last_ok)) {
                out = 0;
                break;
            }
        } else if (mode == G_WRITERS) {
            int bad = 0;
            for (long long q = 0; q < per; q++)
                bad |= p[q] >= allowed[p[q] & ((1 << TID_BITS) - 1)];
            if (bad) {
                out = 0;
                break;
            }
        } else if (!none_zero(p, per)) {
            out = 0;
            break;
        }
        int d = nd - 1;
        while (d >= 0 && ++idx[d] == dims[d])
            idx[d--] = 0;
        if (d < 0)
            break;
    }
    if (sorted != sbuf)
        PyMem_Free(sorted);
end:
    return out;
}

/* `Memory.state(lo, hi)`: the runs over granules [lo, hi) as a tuple (new reference). */
static PyObject *runs_state(PyObject *starts, PyObject *values, long long lo, long long hi) {
    int err = 0;
    Py_ssize_t i = bisect(starts, lo, 1, &err);
    Py_ssize_t k = err ? 0 : bisect(starts, hi, 0, &err);
    if (err)
        return NULL;
    if (i < 1 || k < i || k > PyList_GET_SIZE(values)) {
        PyErr_SetString(PyExc_ValueError, "command: runs out of range");
        return NULL;
    }
    PyObject *out = PyTuple_New((k - i) + (k - i + 1));
    if (out == NULL)
        return NULL;
    Py_ssize_t at = 0;
    for (Py_ssize_t j = i; j < k; j++, at++) {
        PyObject *v = PyList_GET_ITEM(starts, j);
        Py_INCREF(v);
        PyTuple_SET_ITEM(out, at, v);
    }
    for (Py_ssize_t j = i - 1; j < k; j++, at++) {
        PyObject *v = PyList_GET_ITEM(values, j);
        Py_INCREF(v);
        PyTuple_SET_ITEM(out, at, v);
    }
    return out;
}

/* `_granules_expected` for a read `fp` (hull granules [lo, hi)) with `allowed` codes
   (`n_allowed`), through the memory's `passed` cache: (fp, *allowed) -> the runs' state
   over its hull when its granules were last found all expected (the same state again: no
   look at them). 1 / 0, -1 on error. */
static int expected_cached(Mem *m, PyObject *fp, long long lo, long long hi, const long long *allowed,
                           Py_ssize_t n_allowed) {
    PyObject *starts = m->starts, *values = m->values;
    long long run = item_ll(fp, 3), span = item_ll(fp, 4);
    if (PyErr_Occurred())
        return -1;
    if (span <= 0 || run <= 0)
        return 0;
    PyObject *passed = m->passed, *key = NULL, *state = NULL;
    int out = -1;
    if (!PyDict_Check(passed)) {
        PyErr_SetString(PyExc_TypeError, "command: a memory's passed cache must be a dict");
        goto end;
    }
    if ((state = runs_state(starts, values, lo, hi)) == NULL || (key = PyTuple_New(1 + n_allowed)) == NULL)
        goto end;
    Py_INCREF(fp);
    PyTuple_SET_ITEM(key, 0, fp);
    for (Py_ssize_t q = 0; q < n_allowed; q++) {
        PyObject *v = PyLong_FromLongLong(allowed[q]);
        if (v == NULL)
            goto end;
        PyTuple_SET_ITEM(key, 1 + q, v);
    }
    PyObject *was = PyDict_GetItemWithError(passed, key);
    if (was == NULL && PyErr_Occurred())
        goto end;
    if (was != NULL) {
        int same = PyObject_RichCompareBool(was, state, Py_EQ);
        if (same != 0) {
            out = same < 0 ? -1 : 1;
            goto end;
        }
    }
    out = granules(m, fp, G_EXPECTED, 0, allowed, n_allowed);
    if (out == 1 && PyDict_SetItem(passed, key, state) < 0)
        out = -1;
end:
    Py_XDECREF(key);
    Py_XDECREF(state);
    return out;
}

/* `_granules_fine`'s second test: the threads that wrote `mem` after the epoch `seen` has
   of them near [lo, hi) (`HazardTracker._check_writers`'s candidates): per thread t in
   limit[t], the first code of t the accessing thread has not seen, (seen[t] + 1) <<
   TID_BITS, for a candidate, else one no code reaches. How many candidates; -1 on error. */
static int writers_unseen(Mem *m, const long long *seen, Py_ssize_t n_seen, long long lo, long long hi,
                          long long *limit) {
    for (Py_ssize_t t = 0; t < (1 << TID_BITS); t++)
        limit[t] = LLONG_MAX;
    PyObject *wr = m->writers, *logs = m->writes;
    int out = 0;
    if (!PyDict_Check(wr)) {
        PyErr_SetString(PyExc_TypeError, "command: a memory's writers must be a dict");
        out = -1;
        goto end;
    }
    PyObject *key, *summary;
    Py_ssize_t pos = 0;
    while (PyDict_Next(wr, &pos, &key, &summary)) {
        long long w = PyLong_AsLongLong(key);
        if (!PyList_Check(summary) || PyList_GET_SIZE(summary) != 3) {
            PyErr_SetString(PyExc_TypeError, "command: a summary is [epoch, lo, hi]");
            out = -1;
            break;
        }
        long long e = item_ll(summary, 0), wlo = item_ll(summary, 1), whi = item_ll(summary, 2);
        if (PyErr_Occurred()) {
            out = -1;
            break;
        }
        if (w < 0 || w >= n_seen) {
            PyErr_SetString(PyExc_IndexError, "command: a writer is not in the clock");
            out = -1;
            break;
        }
        if (!(e > seen[w] && wlo < hi && whi > lo))
            continue;
        if (!PyDict_Check(logs)) {
            PyErr_SetString(PyExc_TypeError, "command: a memory's writes must be a dict");
            out = -1;
            break;
        }
        PyObject *mine = PyDict_GetItemWithError(logs, key);
        if (mine == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, key);
            out = -1;
            break;
        }
        int u = wrote_since(mine, seen[w], lo, hi);
        if (u < 0) {
            out = u;
            break;
        }
        if (u) {
            limit[w] = (seen[w] + 1) << TID_BITS;
            out++;
        }
    }
end:
    return out;
}

/* `_granules_fine` (1 fine, 0 not, -1 error): with `zero`, none of `fp`'s granules never
   written; no candidate writer (`writers_unseen`), or else none of its granules by one of
   them after what `seen` has of it (`code` brought up to date over its hull first, as
   `Memory.codes`). */
static int granules_fine(Mem *m, PyObject *fp, const long long *seen, Py_ssize_t n_seen, int zero) {
    long long base = item_ll(fp, 0), run = item_ll(fp, 3), span = item_ll(fp, 4);
    if (PyErr_Occurred())
        return -1;
    if (span <= 0 || run <= 0)
        return 0;
    if (zero) {
        int f = granules(m, fp, G_ZERO, 0, NULL, 0);
        if (f <= 0)
            return f;
    }
    long long limit[1 << TID_BITS];
    int u = writers_unseen(m, seen, n_seen, base, base + span, limit);
    if (u <= 0)
        return u < 0 ? -1 : 1;
    return granules(m, fp, G_WRITERS, 0, limit, 1 << TID_BITS);
}

/* The reads' runs, per read: (i, k, known, read_ok) */
typedef struct {
    Py_ssize_t i, k;
    int known, read_ok;
    const struct Exp *cover;  /* an expectation `covered_since` settled it with, or NULL */
    Mem *m;  /* the memory read */
    PyObject *values;  /* its runs' codes (borrowed from m) */
} ReadRuns;

static PyObject *call_hook(PyObject *hook, const char *format, ...) {
    va_list va;
    va_start(va, format);
    PyObject *args = Py_VaBuildValue(format, va);
    va_end(va);
    if (args == NULL)
        return NULL;
    PyObject *r = PyObject_Call(hook, args, NULL);
    Py_DECREF(args);
    return r;
}

static PyObject *nones(Py_ssize_t n) {  /* [None] * n (new reference) */
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(out, i, Py_None);
    }
    return out;
}

static PyObject *runs_list(ReadRuns *rr) {  /* the known codes, or None (new reference) */
    if (!rr->known)
        Py_RETURN_NONE;
    return PyList_GetSlice(rr->values, rr->i, rr->k);
}

static PyObject *clock_list(const long long *seen, Py_ssize_t n) {
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t t = 0; t < n; t++) {
        PyObject *v = PyLong_FromLongLong(seen[t]);
        if (v == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, t, v);
    }
    return out;
}

/* What the checks read of a task's accesses and expectations, unpacked once (the plan
   keeps them per task: a run reads them from one block instead of from the task's tuples
   scattered over the heap). The objects are borrowed from the task's lists. */
typedef struct {
    PyObject *mem, *fp, *n;  /* the access's memory, footprint, bytes counted */
    long long base, span, lo, hi;  /* the footprint's first byte and span; its granule hull */
    long long nv;  /* n's value if `small` (`small_count`) */
    int dense, small;
    PyObject *o_base, *o_end;  /* base and base + span as ints (owned: what the logs of a run put in) */
    PyObject *o_lo, *o_hi;  /* lo and hi as ints (owned: what the writer runs put in) */
} Acc;

typedef struct Exp {
    PyObject *x;  /* (i, host, writers) */
    Py_ssize_t i, n_writers;
    int host;
    long long *writers;  /* their command numbers (into `Checks.pool`) */
    int covered;  /* whether the writers' writes cover every granule of the read (-1: not looked at yet) */
} Exp;

/* A read `a` of memory `m` whose granules `covered_since` found all last written by the
   commands `x` expects (so none is 0): `granules_fine`'s test (none by a thread after the
   epoch `seen` has of it) from those commands' codes alone, when all pass it. 1 fine, 0 not
   settled so (look at the granules), -1 on error. */
static int cover_fine(Mem *m, const Acc *a, const Exp *x, PyObject *code_of, const long long *seen,
                      Py_ssize_t n_seen) {
    long long limit[1 << TID_BITS];
    int u = writers_unseen(m, seen, n_seen, a->base, a->base + a->span, limit);
    if (u <= 0)
        return u < 0 ? -1 : 1;
    for (Py_ssize_t q = 0; q < x->n_writers; q++) {
        long long w = x->writers[q];
        if (w < 0)
            continue;  /* (the host: its codes were all written over) */
        if (w >= PyList_GET_SIZE(code_of))
            return 0;
        long long c = PyLong_AsLongLong(PyList_GET_ITEM(code_of, w));
        if (c == -1 && PyErr_Occurred())
            return -1;
        if (c <= 0 || c >= limit[c & ((1 << TID_BITS) - 1)])
            return 0;
    }
    return 1;
}

typedef struct Checks {
    Py_ssize_t n_reads, n_writes, n_expect;
    Acc *acc;  /* the reads, then the writes */
    Exp *exp;
    long long *pool;
} Checks;

static void checks_free(Checks *k) {
    if (k != NULL) {
        if (k->acc != NULL)
            for (Py_ssize_t i = 0; i < k->n_reads + k->n_writes; i++) {
                Py_CLEAR(k->acc[i].o_base);
                Py_CLEAR(k->acc[i].o_end);
                Py_CLEAR(k->acc[i].o_lo);
                Py_CLEAR(k->acc[i].o_hi);
            }
        PyMem_Free(k->acc);
        PyMem_Free(k->exp);
        PyMem_Free(k->pool);
        k->acc = NULL;
        k->exp = NULL;
        k->pool = NULL;
    }
}

static int acc_of(PyObject *a, Acc *out) {
    if (!PyTuple_Check(a) || PyTuple_GET_SIZE(a) != 7) {
        PyErr_SetString(PyExc_TypeError, "command: an access is a 7-tuple");
        return -1;
    }
    PyObject *fp = PyTuple_GET_ITEM(a, 2), *hull = PyTuple_GET_ITEM(a, 5);
    if (!PyTuple_Check(fp) || PyTuple_GET_SIZE(fp) != 5) {
        PyErr_SetString(PyExc_TypeError, "command: a footprint is (base, shape, strides, run, span)");
        return -1;
    }
    if (!PyTuple_Check(hull) || PyTuple_GET_SIZE(hull) != 3) {
        PyErr_SetString(PyExc_TypeError, "command: a hull is (lo, hi, dense)");
        return -1;
    }
    out->mem = PyTuple_GET_ITEM(a, 1);
    out->fp = fp;
    out->n = PyTuple_GET_ITEM(a, 4);
    out->small = small_count(out->n, &out->nv);
    out->base = item_ll(fp, 0);
    out->span = item_ll(fp, 4);
    out->lo = item_ll(hull, 0);
    out->hi = item_ll(hull, 1);
    out->dense = PyObject_IsTrue(PyTuple_GET_ITEM(hull, 2));
    if (PyErr_Occurred() || out->dense < 0)
        return -1;
    out->o_base = PyLong_FromLongLong(out->base);
    out->o_end = PyLong_FromLongLong(out->base + out->span);
    out->o_lo = PyLong_FromLongLong(out->lo);
    out->o_hi = PyLong_FromLongLong(out->hi);
    return out->o_base == NULL || out->o_end == NULL || out->o_lo == NULL || out->o_hi == NULL ? -1 : 0;
}

/* A task's reads and writes lists and expect tuple as `Checks` (0; -1 with the error). */
static int checks_of(PyObject *reads, PyObject *writes, PyObject *expect, Checks *k) {
    memset(k, 0, sizeof(*k));
    if (!PyList_Check(reads) || !PyList_Check(writes) || !PyTuple_Check(expect)) {
        PyErr_SetString(PyExc_TypeError, "command: a task's reads and writes lists, expect tuple");
        return -1;
    }
    k->n_reads = PyList_GET_SIZE(reads);
    k->n_writes = PyList_GET_SIZE(writes);
    k->n_expect = PyTuple_GET_SIZE(expect);
    Py_ssize_t n_pool = 0;
    for (Py_ssize_t e = 0; e < k->n_expect; e++) {
        PyObject *x = PyTuple_GET_ITEM(expect, e);
        if (!PyTuple_Check(x) || PyTuple_GET_SIZE(x) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(x, 2))) {
            PyErr_SetString(PyExc_TypeError, "command: an expectation is (i, host, writers)");
            return -1;
        }
        n_pool += PyTuple_GET_SIZE(PyTuple_GET_ITEM(x, 2));
    }
    k->acc = PyMem_Calloc((size_t)(k->n_reads + k->n_writes + 1), sizeof(Acc));  /* (no ints yet) */
    k->exp = PyMem_Malloc((size_t)(k->n_expect + 1) * sizeof(Exp));
    k->pool = PyMem_Malloc((size_t)(n_pool + 1) * sizeof(long long));
    if (k->acc == NULL || k->exp == NULL || k->pool == NULL) {
        checks_free(k);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < k->n_reads + k->n_writes; i++)
        if (acc_of(i < k->n_reads ? PyList_GET_ITEM(reads, i) : PyList_GET_ITEM(writes, i - k->n_reads),
                   &k->acc[i]) < 0) {
            checks_free(k);
            return -1;
        }
    long long *at = k->pool;
    for (Py_ssize_t e = 0; e < k->n_expect; e++) {
        Exp *x = &k->exp[e];
        x->x = PyTuple_GET_ITEM(expect, e);
        PyObject *wlist = PyTuple_GET_ITEM(x->x, 2);
        x->i = (Py_ssize_t)PyLong_AsLongLong(PyTuple_GET_ITEM(x->x, 0));
        x->host = PyObject_IsTrue(PyTuple_GET_ITEM(x->x, 1));
        x->n_writers = PyTuple_GET_SIZE(wlist);
        x->writers = at;
        x->covered = -1;
        for (Py_ssize_t q = 0; q < x->n_writers; q++)
            *at++ = PyLong_AsLongLong(PyTuple_GET_ITEM(wlist, q));
        if (PyErr_Occurred() || x->host < 0) {
            checks_free(k);
            return -1;
        }
        if (x->i < 0 || x->i >= k->n_reads) {
            checks_free(k);
            PyErr_SetString(PyExc_IndexError, "command: an expectation's read is not the task's");
            return -1;
        }
    }
    return 0;
}

/* The rows of footprint `f` that touch [lo, hi), as (first byte, end) pairs in order, added to
   `rows` (`n` pairs; grown as needed, `cap`); a row starting inside the last pair or at its end
   extends it (their union, all `merge_rows` and its readers look at, is the same; rows that
   touch make one pair, not one each to sort). */
typedef struct {
    long long lo, hi, run, *rows;
    Py_ssize_t n, cap;
} Near;

static int near_row(void *near, long long at) {
    Near *r = near;
    if (at >= r->hi || at + r->run <= r->lo)
        return 0;
    long long *last = r->n > 0 ? r->rows + 2 * (r->n - 1) : NULL;
    if (last != NULL && last[0] <= at && at <= last[1]) {
        if (at + r->run > last[1])
            last[1] = at + r->run;
        return 0;
    }
    if (r->n == r->cap) {
        Py_ssize_t more = r->cap ? 2 * r->cap : 256;
        long long *grown = PyMem_Realloc(r->rows, (size_t)(2 * more) * sizeof(long long));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        r->rows = grown;
        r->cap = more;
    }
    r->rows[2 * r->n] = at;
    r->rows[2 * r->n + 1] = at + r->run;
    r->n++;
    return 0;
}

/* The period of footprint `f`'s rows: its innermost stride if every stride is a multiple of
   it and its rows fit in it (each row then starts at its base plus a multiple of it); else 0. */
static long long period_of(const Foot *f) {
    if (f->nd == 0)
        return 0;
    long long s = f->steps[f->nd - 1];
    if (s <= 0 || f->run > s)
        return 0;
    for (int d = 0; d < f->nd; d++)
        if (f->steps[d] % s != 0)
            return 0;
    return s;
}

/* Whether footprints `a` and `b` share no byte, from their periods alone (equal periods, and
   their rows' offsets in it apart); 0 when that does not tell. */
static int apart(const Foot *a, const Foot *b) {
    long long s = period_of(a);
    if (s == 0 || period_of(b) != s)
        return 0;
    long long d = ((b->base - a->base) % s + s) % s;  /* b's rows start d after a's, in the period */
    return a->run <= d && d + b->run <= s;
}

/* Whether footprints `a` and `b` have the same grid (shape and strides: `b` is `a` moved
   and its rows' length changed). */
static int same_grid(const Foot *a, const Foot *b) {
    if (a->nd != b->nd)
        return 0;
    for (int d = 0; d < a->nd; d++)
        if (a->dims[d] != b->dims[d] || a->steps[d] != b->steps[d])
            return 0;
    return 1;
}

/* The writes of the commands an expectation names to one memory, in order (`next_write`). */
typedef struct {
    struct Checks *const *by_number;  /* the plan's checks per command number */
    Py_ssize_t n_numbers, q, j;  /* at the q-th expected writer's j-th write */
    const Exp *x;
    PyObject *mem;
} WritesOf;

/* The next write of `it` (NULL after the last). */
static const Acc *next_write(WritesOf *it) {
    for (; it->q < it->x->n_writers; it->q++, it->j = 0) {
        long long w = it->x->writers[it->q];
        const Checks *k = w >= 0 && w < it->n_numbers ? it->by_number[w] : NULL;
        while (k != NULL && it->j < k->n_writes) {
            const Acc *o = &k->acc[k->n_reads + it->j++];
            if (o->mem == it->mem)
                return o;
        }
    }
    return NULL;
}

/* Sort the `n` (first, end) pairs of `iv` by first: a natural merge sort (the rows of one
   footprint come in order, so the rows of a few come as a few runs: a few passes). 0; -1 on
   error. */
static int sort_rows(long long *iv, Py_ssize_t n) {
    long long *tmp = PyMem_Malloc((size_t)(2 * n + 2) * sizeof(long long)), *src = iv, *dst = tmp;
    if (tmp == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (;;) {
        Py_ssize_t runs = 0, i = 0, o = 0;
        while (i < n) {  /* the next two runs [i, b) and [b, c) merged into dst */
            Py_ssize_t b = i + 1, c;
            while (b < n && src[2 * (b - 1)] <= src[2 * b])
                b++;
            for (c = b < n ? b + 1 : b; c < n && src[2 * (c - 1)] <= src[2 * c]; c++)
                ;
            Py_ssize_t p = i, q = b;
            while (p < b || q < c) {
                Py_ssize_t from = q < c && (p >= b || src[2 * q] < src[2 * p]) ? q++ : p++;
                dst[2 * o] = src[2 * from];
                dst[2 * o + 1] = src[2 * from + 1];
                o++;
            }
            runs++;
            i = c;
        }
        long long *t = src;
        src = dst;
        dst = t;
        if (runs <= 1)
            break;
    }
    if (src != iv)
        memcpy(iv, src, (size_t)(2 * n) * sizeof(long long));
    PyMem_Free(tmp);
    return 0;
}

/* Sort the `n` intervals (first, end pairs) of `iv` and merge those that touch or overlap, in
   place: disjoint and in order after it. How many are left; -1 on error. */
static Py_ssize_t merge_rows(long long *iv, Py_ssize_t n) {
    if (n == 0)
        return 0;
    if (sort_rows(iv, n) < 0)
        return -1;
    Py_ssize_t m = 0;
    for (Py_ssize_t e = 0; e < n; e++) {
        if (m > 0 && iv[2 * e] <= iv[2 * m - 1]) {
            if (iv[2 * e + 1] > iv[2 * m - 1])
                iv[2 * m - 1] = iv[2 * e + 1];
        } else {
            iv[2 * m] = iv[2 * e];
            iv[2 * m + 1] = iv[2 * e + 1];
            m++;
        }
    }
    return m;
}

/* Whether [lo, hi) lies inside one of the `m` merged intervals `iv` (`merge_rows`). */
static int rows_hold(const long long *iv, Py_ssize_t m, long long lo, long long hi) {
    Py_ssize_t a0 = 0, a1 = m;  /* the last one starting at or before lo */
    while (a0 < a1) {
        Py_ssize_t mid = (a0 + a1) / 2;
        if (iv[2 * mid] <= lo)
            a0 = mid + 1;
        else
            a1 = mid;
    }
    return a0 > 0 && iv[2 * (a0 - 1) + 1] >= hi;
}

/* Whether a row [at, at + run) shares a byte with the `m` merged intervals `iv` (`merge_rows`). */
typedef struct {
    const long long *iv;
    Py_ssize_t m;
    long long run;
} Hits;

static int hits_row(void *hits, long long at) {
    const Hits *x = hits;
    Py_ssize_t a0 = 0, a1 = x->m;  /* the last one starting before the row's end: the one reaching furthest */
    while (a0 < a1) {
        Py_ssize_t mid = (a0 + a1) / 2;
        if (x->iv[2 * mid] < at + x->run)
            a0 = mid + 1;
        else
            a1 = mid;
    }
    return a0 > 0 && x->iv[2 * (a0 - 1) + 1] > at;
}

/* `native.read_overlapping` (found or not): whether a read of `log` by a thread other
   than `tid`, after the epoch `seen` has of it, shares a byte with footprint `fp` (the
   write's rows merged once, each row of such a read against them: no pass over bytes).
   1 / 0, -1 on error. */
static int reads_overlap(PyObject *log, PyObject *fp, long long tid, const long long *seen, Py_ssize_t n_seen) {
    Foot w;
    if (foot_of(fp, &w) < 0)
        return -1;
    const long long end = w.base + w.span;
    Near mine = {w.base, end, w.run, NULL, 0, 0};  /* the write's rows, merged when first needed (`hits`) */
    Hits hits = {NULL, 0, 0};
    PyObject *rows = PyObject_GetAttr(log, S_rows), *where = NULL;
    int out = 0;
    if (rows == NULL || (where = PyObject_GetAttr(log, S_where)) == NULL) {
        out = -1;
        goto end;
    }
    const Log *l = as_log(rows, 4);
    if (l == NULL || l->width != 4 || !PyList_Check(where) || PyList_GET_SIZE(where) != l->n) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "command: a read log's rows and where");
        out = -1;
        goto end;
    }
    for (Py_ssize_t i = 0; i < l->n && out == 0; i++) {
        const int64_t *row = l->v + 4 * i;
        long long e = row[0], lo = row[1], hi = row[2], r = row[3];
        if (reader_fails(r, n_seen)) {
            out = -1;
            break;
        }
        if (!(lo < end && hi > w.base && r != tid && e > seen[r]))
            continue;
        Foot o;
        if (foot_of(PyList_GET_ITEM(where, i), &o) < 0) {
            out = -1;
            break;
        }
        if (hits.iv == NULL) {
            if (for_rows(&w, near_row, &mine) < 0) {
                out = -1;
                break;
            }
            if (mine.n == 0)
                break;  /* (an empty write overlaps nothing) */
            hits.iv = mine.rows;
            if ((hits.m = merge_rows(mine.rows, mine.n)) < 0) {
                out = -1;
                break;
            }
        }
        hits.run = o.run;
        out = for_rows(&o, hits_row, &hits);
    }
end:
    PyMem_Free(mine.rows);
    Py_XDECREF(rows);
    Py_XDECREF(where);
    return out;
}

/* The writes of `it` touching [lo, hi) when they have one grid (`u`: the first's footprint; at
   most 32 of them): their first rows merged (`firsts`: how many pairs). Their rows of each
   index are then those pairs moved to that index: their rows' union is that of the
   footprints `u` with each pair as its first row. 0 when they have not, -1 on error. */
static Py_ssize_t one_grid(WritesOf *it, long long lo, long long hi, Foot *u, long long firsts[64]) {
    int k = 0;
    const Acc *o;
    Foot f;
    while ((o = next_write(it)) != NULL) {
        if (o->base >= hi || o->base + o->span <= lo)
            continue;
        if (k == 32)
            return 0;
        if (foot_of(o->fp, &f) < 0)
            return -1;
        if (f.run <= 0 || (k > 0 && !same_grid(u, &f)))
            return 0;
        if (k == 0)
            *u = f;
        firsts[2 * k] = f.base;
        firsts[2 * k + 1] = f.base + f.run;
        k++;
    }
    return merge_rows(firsts, k);
}

/* Whether the writes of the commands `x` expects (`by_number`: their checks) to the memory of
   read `a` cover every byte of it (so every granule: all accesses to a memory are aligned to
   its granule). 1 / 0 (also for an empty read), -1 on error. */
static int writers_cover(struct Checks *const *by_number, Py_ssize_t n_numbers, const Exp *x, const Acc *a) {
    Foot r;
    if (foot_of(a->fp, &r) < 0)
        return -1;
    if (r.span <= 0 || r.run <= 0)
        return 0;
    for (int d = 0; d < r.nd; d++)
        if (r.dims[d] <= 0)
            return 0;
    const long long lo = r.base, hi = r.base + r.span;
    /* the writes on the read's grid: each of its rows covered by their rows of the same index
       (their first rows against its first) */
    Near grid = {LLONG_MIN, LLONG_MAX, 0, NULL, 0, 0}, theirs = {lo, hi, 0, NULL, 0, 0},
         mine = {lo, hi, r.run, NULL, 0, 0};
    WritesOf it = {by_number, n_numbers, 0, 0, x, a->mem};
    const Acc *o;
    Foot f;
    int out = 0;
    while (out == 0 && (o = next_write(&it)) != NULL) {
        if (foot_of(o->fp, &f) < 0)
            out = -1;
        else if (same_grid(&r, &f) && f.run > 0) {
            grid.run = f.run;
            out = near_row(&grid, f.base);
        }
    }
    if (out == 0) {
        Py_ssize_t m = merge_rows(grid.rows, grid.n);
        out = m < 0 ? -1 : rows_hold(grid.rows, m, r.base, r.base + r.run);
    }
    PyMem_Free(grid.rows);
    if (out != 0)
        return out;
    /* else their rows near the read, merged, against each of its rows (when they have one grid,
       those of a footprint per merged first row: `one_grid`; rows that touch make one pair) */
    WritesOf again = {by_number, n_numbers, 0, 0, x, a->mem};
    long long firsts[64];
    Py_ssize_t n_firsts = one_grid(&again, lo, hi, &f, firsts);
    if (n_firsts < 0)
        return -1;
    for (Py_ssize_t e = 0; e < n_firsts && out == 0; e++) {
        f.span += firsts[2 * e + 1] - firsts[2 * e] - f.run;  /* (its last row as far from its base) */
        f.base = firsts[2 * e];
        theirs.run = f.run = firsts[2 * e + 1] - firsts[2 * e];
        out = for_rows(&f, near_row, &theirs);
    }
    if (n_firsts == 0)
        again = (WritesOf){by_number, n_numbers, 0, 0, x, a->mem};
    while (out == 0 && (o = next_write(&again)) != NULL) {
        if (o->base >= hi || o->base + o->span <= lo)
            continue;
        if (foot_of(o->fp, &f) < 0)
            out = -1;
        else {
            theirs.run = f.run;
            out = for_rows(&f, near_row, &theirs);
        }
    }
    if (out == 0)
        out = for_rows(&r, near_row, &mine);
    if (out == 0 && mine.n > 0) {
        Py_ssize_t m = merge_rows(theirs.rows, theirs.n);
        out = m < 0 ? -1 : 1;
        for (Py_ssize_t e = 0; e < mine.n && out == 1; e++)
            out = rows_hold(theirs.rows, m, mine.rows[2 * e], mine.rows[2 * e + 1]);
    }
    PyMem_Free(theirs.rows);
    PyMem_Free(mine.rows);
    return out;
}

/* Whether read `a` of memory `m` is settled as expected (every granule 0 or by one of the
   writers `x` expects) without a look at its codes, in a run (`ms->seq`): every expected
   command started and its writes recorded (the host aside; at least one command), their
   writes cover every granule of the read (`writers_cover`, found once per plan), and no
   other command wrote bytes of the read's span since the first of them started. Then each
   granule was last written by one of them: its code is that writer's. 1 / 0, -1 on error. */
static int covered_since(Mems *ms, Mem *m, const Acc *a, Exp *x) {
    if (ms->seq == NULL || x->covered == 0)
        return 0;
    long long first = LLONG_MAX;
    for (Py_ssize_t q = 0; q < x->n_writers; q++) {
        long long w = x->writers[q];
        if (w < 0)
            continue;  /* the host */
        if (w >= ms->n_seq || ms->seq[w] < 0)
            return 0;
        if (ms->seq[w] < first)
            first = ms->seq[w];
    }
    if (first == LLONG_MAX)
        return 0;
    const long long lo = a->base, hi = a->base + a->span;
    Foot r;
    int have_r = 0;
    for (Py_ssize_t j = m->n_wrote - 1; j >= 0 && m->wrote[j].seq > first; j--) {
        const Wrote *w = &m->wrote[j];
        if (w->lo >= hi || w->hi <= lo)
            continue;
        int expected = 0;
        for (Py_ssize_t q = 0; q < x->n_writers && !expected; q++)
            expected = x->writers[q] == w->number;
        if (expected)
            continue;
        if (!have_r && foot_of(a->fp, &r) < 0)
            return -1;
        have_r = 1;
        Foot f;
        if (foot_of(w->fp, &f) < 0)
            return -1;
        if (!apart(&r, &f))
            return 0;  /* another command may have written some of its granules since */
    }
    if (x->covered < 0) {
        int cov = writers_cover(ms->by_number, ms->n_seq, x, a);
        if (cov < 0)
            return -1;
        x->covered = cov;
    }
    return x->covered;
}

/* A write of this run logged in its memory (`Mem.wrote`). */
static int log_write(Mem *m, long long seq, long long lo, long long hi, long long number, PyObject *fp) {
    if (m->n_wrote == m->cap_wrote) {
        Py_ssize_t cap = m->cap_wrote ? 2 * m->cap_wrote : 64;
        Wrote *more = PyMem_Realloc(m->wrote, (size_t)cap * sizeof(Wrote));
        if (more == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        m->wrote = more;
        m->cap_wrote = cap;
    }
    m->wrote[m->n_wrote++] = (Wrote){seq, lo, hi, number, fp};
    return 0;
}

static PyObject *command_of(PyObject *task, long long tid, long long number, Checks *k,
                            const int64_t *clock, Py_ssize_t n_seen, PyObject *code_of,
                            Counts *bytes_read, Counts *bytes_written, PyObject *hooks, Mems *mems);

/* command(task, clock, code_of, bytes_read, bytes_written, hooks): a command's hazard checks
   (`command_of`) with the task's fields read from it and the counts added to the dicts. */
static PyObject *command(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "command(task, clock, code_of, bytes_read, bytes_written, hooks) takes 6 arguments");
        return NULL;
    }
    PyObject *task = args[0], *clock = args[1], *code_of = args[2], *hooks = args[5];
    if (!PyList_Check(code_of) || !PyDict_Check(args[3])
        || !PyDict_Check(args[4]) || !PyTuple_Check(hooks) || PyTuple_GET_SIZE(hooks) != 4) {
        PyErr_SetString(PyExc_TypeError, "command: a code_of list, two count dicts, four hooks");
        return NULL;
    }
    int64_t seen[MAX_SEEN];
    Py_ssize_t n_seen;
    {  /* the thread's clock: an int64 row */
        Py_buffer b;
        if (PyObject_GetBuffer(clock, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            return NULL;
        int ok = b.itemsize == 8 && b.format && (b.format[0] == 'l' || b.format[0] == 'q') && b.format[1] == 0
                 && b.len / 8 <= MAX_SEEN;
        n_seen = b.len / 8;
        if (ok)
            memcpy(seen, b.buf, (size_t)b.len);
        PyBuffer_Release(&b);
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "command: the clock must be an int64 row of at most 256");
            return NULL;
        }
    }
    long long tid = int_attr(task, S_tid), number = int_attr(task, S_number);
    if (PyErr_Occurred())
        return NULL;
    PyObject *reads = PyObject_GetAttr(task, S_reads), *writes = reads ? PyObject_GetAttr(task, S_writes) : NULL,
             *expect = writes ? PyObject_GetAttr(task, S_expect) : NULL, *result = NULL;
    Counts br = {.dict = args[3]}, bw = {.dict = args[4]};
    Mems mems = {NULL, 0, 0};
    Checks k;
    if (expect != NULL && checks_of(reads, writes, expect, &k) == 0) {
        result = command_of(task, tid, number, &k, seen, n_seen, code_of, &br, &bw, hooks, &mems);
        checks_free(&k);
    }
    mems_free(&mems);
    Py_XDECREF(reads);
    Py_XDECREF(writes);
    Py_XDECREF(expect);
    return result;
}

/* The checks of `task` (its thread `tid`, number, reads, writes and expectations given) by
   the thread whose clock is `clock` (`n_seen` threads). */
static PyObject *command_of(PyObject *task, long long tid, long long number, Checks *k,
                            const int64_t *clock, Py_ssize_t n_seen, PyObject *code_of,
                            Counts *bytes_read, Counts *bytes_written, PyObject *hooks, Mems *mems) {
    PyObject *h_prov = PyTuple_GET_ITEM(hooks, 0), *h_read = PyTuple_GET_ITEM(hooks, 1),
             *h_write = PyTuple_GET_ITEM(hooks, 2), *h_prune = PyTuple_GET_ITEM(hooks, 3);
    long long seen[MAX_SEEN];
    if (n_seen > MAX_SEEN) {
        PyErr_SetString(PyExc_ValueError, "command: the clock must be an int64 row of at most 256");
        return NULL;
    }
    for (Py_ssize_t t = 0; t < n_seen; t++)
        seen[t] = clock[t];
    PyObject *seen_list = NULL;  /* the clock as a list, made for the first hook that takes it */

    PyObject *codes = NULL, *result = NULL, *o_epoch = NULL, *o_code = NULL;
    ReadRuns *rr = NULL;
    Py_ssize_t n_reads = 0;
    if (tid < 0 || tid >= n_seen) {
        PyErr_SetString(PyExc_IndexError, "command: the task's thread is not in the clock");
        return NULL;
    }
    const long long epoch = seen[tid], code = (epoch << TID_BITS) | tid;
    {  /* 1. the command's code */
        if (number < 0 || number >= PyList_GET_SIZE(code_of)) {
            PyErr_SetString(PyExc_IndexError, "command: the task's number is not in code_of");
            return NULL;
        }
        PyObject *c = PyLong_FromLongLong(code);
        if (c == NULL)
            return NULL;
        Py_INCREF(c);
        o_code = c;  /* (the int the writer runs put in) */
        if (PyList_SetItem(code_of, number, c) < 0) {
            Py_DECREF(o_code);
            return NULL;
        }
    }
    if ((o_epoch = PyLong_FromLongLong(epoch)) == NULL) {  /* (the one int of it every log entry shares) */
        Py_DECREF(o_code);
        return NULL;
    }
    n_reads = k->n_reads;
    rr = PyMem_Calloc(n_reads ? n_reads : 1, sizeof(ReadRuns));
    if (rr == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* 2. per read, its hull's runs */
    for (Py_ssize_t i = 0; i < n_reads; i++) {
        const Acc *a = &k->acc[i];
        Mem *m = rr[i].m = mem_of(mems, a->mem);
        if (m == NULL)
            goto done;
        rr[i].values = m->values;
        int writers = PyObject_IsTrue(m->writers);
        int w_ok, rc = -1;
        if (writers >= 0)
            rc = runs_over(m->starts, m->values, a->lo, a->hi, seen, n_seen, writers, &rr[i].i, &rr[i].k,
                           &rr[i].known, &w_ok, &rr[i].read_ok);
        if (rc < 0)
            goto done;
    }
    /* 3. the provenance expectations */
    for (Py_ssize_t e = 0; e < k->n_expect; e++) {
        Exp *x = &k->exp[e];
        Py_ssize_t i = x->i;
        const Acc *a = &k->acc[i];
        PyObject *fp = a->fp;
        if (x->host) {
            long long lo = a->base, hi = lo + a->span;
            PyObject *wr = rr[i].m->writers;
            if (!PyDict_Check(wr)) {
                PyErr_SetString(PyExc_TypeError, "command: a memory's writers must be a dict");
                goto done;
            }
            PyObject *key, *summary;
            Py_ssize_t pos = 0;
            int wrote = 0;
            while (PyDict_Next(wr, &pos, &key, &summary)) {
                long long wlo = item_ll(summary, 1), whi = item_ll(summary, 2);
                if (PyErr_Occurred())
                    goto done;
                if (wlo < hi && whi > lo) {
                    wrote = 1;
                    break;
                }
            }
            if (!wrote)
                continue;
        }
        {  /* every run (else every granule) by an expected writer (not started: matches nothing) */
            long long stack[16], *allowed = stack;
            Py_ssize_t n_allowed = x->n_writers;
            if (n_allowed > 16 && (allowed = PyMem_Malloc(n_allowed * sizeof(long long))) == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            int fine = 1;
            for (Py_ssize_t q = 0; q < n_allowed && fine == 1; q++) {
                long long w = x->writers[q];
                if (w < 0)
                    allowed[q] = 1LL << TID_BITS;
                else if (w >= PyList_GET_SIZE(code_of)) {
                    PyErr_SetString(PyExc_IndexError, "command: an expected writer is not in code_of");
                    fine = -1;
                } else {
                    allowed[q] = PyLong_AsLongLong(PyList_GET_ITEM(code_of, w));
                    if (allowed[q] == 0)
                        allowed[q] = -1;
                    else if (allowed[q] == -1 && PyErr_Occurred())
                        fine = -1;
                }
            }
            if (fine == 1 && rr[i].known) {
                for (Py_ssize_t j = rr[i].i; j < rr[i].k && fine == 1; j++) {
                    long long v = PyLong_AsLongLong(PyList_GET_ITEM(rr[i].values, j));
                    int found = 0;
                    for (Py_ssize_t q = 0; q < n_allowed && !found; q++)
                        found = v == allowed[q];
                    fine = found;
                }
                if (PyErr_Occurred())
                    fine = -1;
            } else if (fine == 1)
                fine = 0;
            if (fine == 0 && (fine = covered_since(mems, rr[i].m, a, x)) == 1)  /* (`covered_since`) */
                rr[i].cover = x;
            if (fine == 0)  /* else every granule 0 or by an expected writer (`_granules_expected`) */
                fine = expected_cached(rr[i].m, fp, a->lo, a->hi, allowed, n_allowed);
            if (allowed != stack)
                PyMem_Free(allowed);
            if (fine < 0)
                goto done;
            if (fine)
                continue;
        }
        PyObject *runs = runs_list(&rr[i]);
        if (runs == NULL || (codes == NULL && (codes = nones(n_reads)) == NULL)) {
            Py_XDECREF(runs);
            goto done;
        }
        mems_forget_logs(mems);  /* (what a hook's Python code does to the read logs is looked up again) */
        PyObject *r = call_hook(h_prov, "(OnOOOO)", task, i, PyTuple_GET_ITEM(x->x, 1), PyTuple_GET_ITEM(x->x, 2),
                                codes, runs);
        Py_DECREF(runs);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    /* 4. the reads: logged, or the slow path; counted */
    for (Py_ssize_t i = 0; i < n_reads; i++) {
        const Acc *a = &k->acc[i];
        PyObject *fp = a->fp;
        Mem *m = rr[i].m;
        int fine = rr[i].read_ok;
        if (!fine && rr[i].cover != NULL && (fine = cover_fine(m, a, rr[i].cover, code_of, seen, n_seen)) < 0)
            goto done;
        if (!fine && (fine = granules_fine(m, fp, seen, n_seen, 1)) < 0)
            goto done;
        if (fine) {
            if (log_read(m, fp, a->base, a->base + a->span, tid, epoch, a->o_base, a->o_end, o_epoch, h_prune) < 0)
                goto done;
        } else {
            PyObject *runs = runs_list(&rr[i]);
            if (runs == NULL || (codes == NULL && (codes = nones(n_reads)) == NULL)) {
                Py_XDECREF(runs);
                goto done;
            }
            if (seen_list == NULL && (seen_list = clock_list(seen, n_seen)) == NULL) {
                Py_DECREF(runs);
                goto done;
            }
            mems_forget_logs(mems);
            PyObject *r = call_hook(h_read, "(OnOOO)", task, i, PyList_GET_ITEM(codes, i), runs, seen_list);
            Py_DECREF(runs);
            if (r == NULL)
                goto done;
            Py_DECREF(r);
        }
        if (count_of(bytes_read, m->level, a->n, a->small, a->nv) < 0)
            goto done;
    }
    /* 5. the writes, in order (in a run: each logged, `Mem.wrote`) */
    const long long order = mems->seq != NULL ? mems->next++ : -1;
    int hooked = 0;  /* some write went to the hook */
    for (Py_ssize_t j = 0; j < k->n_writes; j++) {
        const Acc *a = &k->acc[k->n_reads + j];
        PyObject *fp = a->fp;
        Mem *m = mem_of(mems, a->mem);
        if (m == NULL)
            goto done;
        long long lo = a->lo, hi = a->hi, start = a->base, stop = a->base + a->span;
        int dense = a->dense;
        if (order >= 0 && log_write(m, order, start, stop, number, fp) < 0)
            goto done;
        PyObject *starts = m->starts, *values = m->values, *wr = m->writers, *log = m->reads;
        int ok = 0;
        int writers = PyObject_IsTrue(wr);
        if (writers < 0)
            goto done;
        Py_ssize_t i0, k0;
        int known, r_ok;
        if (runs_over(starts, values, lo, hi, seen, n_seen, writers, &i0, &k0, &known, &ok, &r_ok) < 0)
            goto done;
        ok = ok && known;
        if (!ok && (ok = granules_fine(m, fp, seen, n_seen, 0)) < 0)
            goto done;
        if (ok) {
            int u = readers_unseen(log, seen, n_seen, tid, start, stop);
            if (u > 0)  /* some may overlap it: looked at row by row */
                u = reads_overlap(log, fp, tid, seen, n_seen);
            if (u < 0)
                goto done;
            ok = !u;
        }
        if (ok) {
            if (!dense && granules(m, fp, G_SET, code, NULL, 0) < 0)
                goto done;  /* its hull's codes are kept per granule from now on */
            if (mark(m, lo, hi, code, !dense, a->o_lo, a->o_hi, o_code) < 0)
                goto done;
            if (!PyDict_Check(wr)) {
                PyErr_SetString(PyExc_TypeError, "command: a memory's writers must be a dict");
                goto done;
            }
            if (note(wr, tid, start, stop, o_epoch, a->o_base, a->o_end) < 0)
                goto done;
            if (!PyDict_Check(m->writes)) {
                PyErr_SetString(PyExc_TypeError, "command: a memory's writes must be a dict");
                goto done;
            }
            const int64_t entry[3] = {epoch, start, stop};
            Log *wlog = log_in(m->writes, tid, 3);
            if (wlog == NULL || log_push(wlog, entry) < 0)
                goto done;
        } else {
            if (seen_list == NULL && (seen_list = clock_list(seen, n_seen)) == NULL)
                goto done;
            mems_forget_logs(mems);
            hooked = 1;
            PyObject *r = call_hook(h_write, "(OnO)", task, j, seen_list);
            if (r == NULL)
                goto done;
            Py_DECREF(r);
        }
        if (count_of(bytes_written, m->level, a->n, a->small, a->nv) < 0)
            goto done;
    }
    if (order >= 0 && !hooked && number < mems->n_seq)
        mems->seq[number] = order;
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_Free(rr);
    Py_XDECREF(seen_list);
    Py_XDECREF(codes);
    Py_XDECREF(o_epoch);
    Py_XDECREF(o_code);
    return result;
}

/* ---- prune(log, vc, active): `HazardTracker._prune` of a memory's read log (`_ReadLog`):
   keep the reads some thread that still has commands (`active`) has not synchronised with
   (epoch above the least its clocks, the rows of `vc`, have of the reader), the threads'
   summaries rebuilt over them (`_ReadLog.keep`), `pruned_at` = max(64, n). */

static PyObject *prune(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "prune(log, vc, active) takes 3 arguments");
        return NULL;
    }
    PyObject *log = args[0];
    Py_buffer bvc, bact;
    if (PyObject_GetBuffer(args[1], &bvc, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[2], &bact, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&bvc);
        return NULL;
    }
    PyObject *rows = NULL, *where = NULL, *new_rows = NULL, *new_where = NULL, *readers = NULL, *result = NULL;
    Py_ssize_t nt = bact.len;
    long long known[MAX_SEEN], sum_e[MAX_SEEN], sum_lo[MAX_SEEN], sum_hi[MAX_SEEN];
    char has[MAX_SEEN];
    if (bact.itemsize != 1 || nt > MAX_SEEN || bvc.itemsize != 8 || bvc.len != nt * nt * 8 || !bvc.format
        || !(bvc.format[0] == 'l' || bvc.format[0] == 'q') || bvc.format[1] != 0) {
        PyErr_SetString(PyExc_ValueError, "prune: an n x n int64 clock array and n active flags");
        goto done;
    }
    const int64_t *vc = bvc.buf;
    const unsigned char *active = bact.buf;
    int any = 0;
    for (Py_ssize_t t = 0; t < nt; t++) {
        has[t] = 0;
        if (!active[t])
            continue;
        const int64_t *row = vc + t * nt;
        for (Py_ssize_t u = 0; u < nt; u++)
            if (!any || row[u] < known[u])
                known[u] = row[u];
        any = 1;
    }
    rows = PyObject_GetAttr(log, S_rows);
    where = PyObject_GetAttr(log, S_where);
    if (rows == NULL || where == NULL)
        goto done;
    const Log *l = Py_IS_TYPE(rows, &LogType) ? (const Log *)rows : NULL;
    if (l == NULL || l->width != 4 || !PyList_Check(where) || l->n != PyList_GET_SIZE(where)) {
        PyErr_SetString(PyExc_TypeError, "prune: a log's rows (a Log of 4) and footprints (a list) of one length");
        goto done;
    }
    if ((new_rows = (PyObject *)log_new(4)) == NULL || (new_where = PyList_New(0)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; any && i < l->n; i++) {
        const int64_t *r = l->v + 4 * i;
        long long epoch = r[0], lo = r[1], hi = r[2], tid = r[3];
        if (tid < 0 || tid >= nt) {
            PyErr_SetString(PyExc_IndexError, "prune: a reader is not in the clocks");
            goto done;
        }
        if (!(epoch > known[tid]))
            continue;
        if (log_push((Log *)new_rows, r) < 0 || PyList_Append(new_where, PyList_GET_ITEM(where, i)) < 0)
            goto done;
        if (!has[tid]) {  /* `_note_max` */
            has[tid] = 1;
            sum_e[tid] = epoch;
            sum_lo[tid] = lo;
            sum_hi[tid] = hi;
        } else {
            if (epoch > sum_e[tid])
                sum_e[tid] = epoch;
            if (lo < sum_lo[tid])
                sum_lo[tid] = lo;
            if (hi > sum_hi[tid])
                sum_hi[tid] = hi;
        }
    }
    if ((readers = PyDict_New()) == NULL)
        goto done;
    for (Py_ssize_t t = 0; t < nt; t++) {  /* by thread, in order */
        if (!has[t])
            continue;
        PyObject *key = PyLong_FromSsize_t(t), *summary = Py_BuildValue("[LLL]", sum_e[t], sum_lo[t], sum_hi[t]);
        int rc = key && summary ? PyDict_SetItem(readers, key, summary) : -1;
        Py_XDECREF(key);
        Py_XDECREF(summary);
        if (rc < 0)
            goto done;
    }
    Py_ssize_t n = ((Log *)new_rows)->n;
    PyObject *at = PyLong_FromSsize_t(n > 64 ? n : 64);
    int rc = at && PyObject_SetAttr(log, S_rows, new_rows) == 0 && PyObject_SetAttr(log, S_where, new_where) == 0
             && PyObject_SetAttr(log, S_readers, readers) == 0 && PyObject_SetAttr(log, S_pruned_at, at) == 0;
    Py_XDECREF(at);
    if (rc) {
        result = Py_None;
        Py_INCREF(result);
    }
done:
    Py_XDECREF(rows);
    Py_XDECREF(where);
    Py_XDECREF(new_rows);
    Py_XDECREF(new_where);
    Py_XDECREF(readers);
    PyBuffer_Release(&bvc);
    PyBuffer_Release(&bact);
    return result;
}

/* ---- the event loop: `plan(rows)` and `simulate(plan, state)`, `Simulator._simulate` step
   for step over the prepared tasks (simulator.py's Python loop is the authority and the
   fallback). Times keep Python's int / float distinction (an int time plus an int stays an
   int; a DMA's end, a division, makes it a float), so the timeline's values are the same
   objects as the Python loop's. */

typedef struct {
    double v;
    int isint;
} Time;

static inline Time t_add(Time a, Time b) {
    Time r = {a.v + b.v, a.isint && b.isint};
    return r;
}

static int t_of(PyObject *o, Time *t) {
    if (PyLong_Check(o)) {
        long long x = PyLong_AsLongLong(o);
        if (x == -1 && PyErr_Occurred())
            return -1;
        t->v = (double)x;
        t->isint = 1;
        return 0;
    }
    t->v = PyFloat_AsDouble(o);
    t->isint = 0;
    return (t->v == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *t_obj(Time t) {
    return t.isint ? PyLong_FromLongLong((long long)t.v) : PyFloat_FromDouble(t.v);
}

typedef struct {
    PyObject *task, *who, *core, *index, *unit, *label, *wait_label, *kind, *macs, *count_r, *count_w;
    PyObject *reads, *writes, *expect;  /* the task's (what `command` reads of it), or NULL */
    Checks checks;  /* them unpacked (with `reads`) */
    long long number;
    int tid, is_dma, nwaits, ngroups, first_leg, nlegs, kind_id;
    Time ready, dur;  /* when its issue completes; its duration (compute) or latency (DMA) */
    double nbytes;
    int *wait_sem;
    long long *wait_n;
    Time *delay;  /* per signal group */
    int *group_at;  /* ngroups + 1 offsets into sems */
    int *sems;
    int *legs;  /* a fence's first leg: every leg's task number */
} CTask;

typedef struct {
    Py_ssize_t n_tasks, n_threads, n_kinds;
    CTask *tasks;
    PyObject *kind_ids, *kinds;  /* the distinct DMA kinds: kind -> number, and the list of them */
    PyObject *memo;  /* (kind number, count) pairs, as bytes -> their rates (doubles, as bytes) */
    Py_ssize_t *first;  /* per thread: its first task number; first[n_threads] = n_tasks */
    Checks **by_number;  /* per command number: its task's checks (NULL: none) */
    Py_ssize_t n_numbers;
} Plan;

static void plan_free(PyObject *capsule) {
    Plan *p = (Plan *)PyCapsule_GetPointer(capsule, "stc_mlir.emulator._loop.plan");
    if (p == NULL)
        return;
    for (Py_ssize_t i = 0; i < p->n_tasks; i++) {
        CTask *t = &p->tasks[i];
        Py_XDECREF(t->task); Py_XDECREF(t->who); Py_XDECREF(t->core); Py_XDECREF(t->index);
        Py_XDECREF(t->unit); Py_XDECREF(t->label); Py_XDECREF(t->wait_label); Py_XDECREF(t->kind);
        Py_XDECREF(t->macs); Py_XDECREF(t->count_r); Py_XDECREF(t->count_w);
        if (t->expect != NULL)
            checks_free(&t->checks);
        Py_XDECREF(t->reads); Py_XDECREF(t->writes); Py_XDECREF(t->expect);
        PyMem_Free(t->wait_sem); PyMem_Free(t->wait_n); PyMem_Free(t->delay); PyMem_Free(t->group_at);
        PyMem_Free(t->sems); PyMem_Free(t->legs);
    }
    PyMem_Free(p->tasks);
    PyMem_Free(p->first);
    PyMem_Free(p->by_number);
    Py_XDECREF(p->kind_ids);
    Py_XDECREF(p->kinds);
    Py_XDECREF(p->memo);
    PyMem_Free(p);
}

#define PLAN_FIELDS 17

/* plan(threads): threads is a list (per thread) of lists of per-task tuples
   (task, core, index, unit, label, wait_label, tid, ready, duration or latency, is_dma,
    nbytes, kind, macs, waits ((sem, n), ...), signals ((delay, (sem, ...)), ...),
    legs (task numbers of a fence's legs, on its first leg; else None), counts
    (((level, n), ...) read, ((level, n), ...) written) or None) */
static PyObject *plan(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 1 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "plan(threads) takes a list of lists of task tuples");
        return NULL;
    }
    PyObject *threads = args[0];
    Plan *p = PyMem_Calloc(1, sizeof(Plan));
    if (p == NULL)
        return PyErr_NoMemory();
    PyObject *capsule = PyCapsule_New(p, "stc_mlir.emulator._loop.plan", plan_free);
    if (capsule == NULL) {
        PyMem_Free(p);
        return NULL;
    }
    p->n_threads = PyList_GET_SIZE(threads);
    Py_ssize_t total = 0;
    for (Py_ssize_t t = 0; t < p->n_threads; t++) {
        PyObject *q = PyList_GET_ITEM(threads, t);
        if (!PyList_Check(q)) {
            PyErr_SetString(PyExc_TypeError, "plan: a list of tasks per thread");
            goto fail;
        }
        total += PyList_GET_SIZE(q);
    }
    if ((p->kind_ids = PyDict_New()) == NULL || (p->kinds = PyList_New(0)) == NULL || (p->memo = PyDict_New()) == NULL)
        goto fail;
    p->first = PyMem_Calloc((size_t)p->n_threads + 1, sizeof(Py_ssize_t));
    p->tasks = PyMem_Calloc((size_t)total + 1, sizeof(CTask));
    if (p->first == NULL || p->tasks == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t k = 0;
    for (Py_ssize_t t = 0; t < p->n_threads; t++) {
        PyObject *q = PyList_GET_ITEM(threads, t);
        p->first[t] = k;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(q); j++, k++) {
            PyObject *row = PyList_GET_ITEM(q, j);
            CTask *c = &p->tasks[k];
            p->n_tasks = k + 1;  /* freed from here on */
            c->first_leg = -1;
            if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != PLAN_FIELDS) {
                PyErr_SetString(PyExc_TypeError, "plan: a task is a tuple of 17");
                goto fail;
            }
#define OBJ(field, i) c->field = PyTuple_GET_ITEM(row, i); Py_INCREF(c->field);
            OBJ(task, 0) OBJ(core, 1) OBJ(index, 2) OBJ(unit, 3) OBJ(label, 4) OBJ(wait_label, 5)
            OBJ(kind, 11) OBJ(macs, 12)
#undef OBJ
            if (!(c->who = PyTuple_Pack(2, c->core, c->index)))
                goto fail;
            {  /* what the hazard checks read of the task, read once (none: `command` reads them) */
                PyObject *n = PyObject_GetAttr(c->task, S_number), *r = PyObject_GetAttr(c->task, S_reads),
                         *w = PyObject_GetAttr(c->task, S_writes), *e = PyObject_GetAttr(c->task, S_expect);
                c->number = n != NULL && PyLong_Check(n) ? PyLong_AsLongLong(n) : -1;
                int ok = c->number >= 0 && !PyErr_Occurred() && r != NULL && w != NULL && e != NULL
                         && checks_of(r, w, e, &c->checks) == 0;
                if (ok) {  /* (tuples of the lists' accesses: the objects `checks` borrows stay alive) */
                    c->expect = e;
                    e = NULL;
                    c->reads = PyList_AsTuple(r);
                    c->writes = PyList_AsTuple(w);
                    ok = c->reads != NULL && c->writes != NULL ? 1 : -1;
                } else
                    PyErr_Clear();
                Py_XDECREF(n); Py_XDECREF(r); Py_XDECREF(w); Py_XDECREF(e);
                if (ok < 0)
                    goto fail;
            }
            {  /* its kind's number */
                PyObject *id = PyDict_GetItemWithError(p->kind_ids, c->kind);
                if (id == NULL) {
                    if (PyErr_Occurred())
                        goto fail;
                    PyObject *n = PyLong_FromSsize_t(PyList_GET_SIZE(p->kinds));
                    int rc = n == NULL ? -1 : PyDict_SetItem(p->kind_ids, c->kind, n);
                    Py_XDECREF(n);
                    if (rc < 0 || PyList_Append(p->kinds, c->kind) < 0)
                        goto fail;
                    c->kind_id = (int)(PyList_GET_SIZE(p->kinds) - 1);
                } else
                    c->kind_id = (int)PyLong_AsLong(id);
            }
            c->tid = (int)PyLong_AsLong(PyTuple_GET_ITEM(row, 6));
            if (t_of(PyTuple_GET_ITEM(row, 7), &c->ready) < 0 || t_of(PyTuple_GET_ITEM(row, 8), &c->dur) < 0)
                goto fail;
            c->is_dma = PyObject_IsTrue(PyTuple_GET_ITEM(row, 9));
            c->nbytes = PyFloat_AsDouble(PyTuple_GET_ITEM(row, 10));
            if (PyErr_Occurred())
                goto fail;
            if (c->tid != t) {
                PyErr_SetString(PyExc_ValueError, "plan: a task is not in its thread's list");
                goto fail;
            }
            PyObject *waits = PyTuple_GET_ITEM(row, 13), *signals = PyTuple_GET_ITEM(row, 14),
                     *legs = PyTuple_GET_ITEM(row, 15), *counts = PyTuple_GET_ITEM(row, 16);
            if (!PyTuple_Check(waits) || !PyTuple_Check(signals)) {
                PyErr_SetString(PyExc_TypeError, "plan: waits and signals are tuples");
                goto fail;
            }
            c->nwaits = (int)PyTuple_GET_SIZE(waits);
            c->wait_sem = PyMem_Calloc((size_t)c->nwaits + 1, sizeof(int));
            c->wait_n = PyMem_Calloc((size_t)c->nwaits + 1, sizeof(long long));
            if (c->wait_sem == NULL || c->wait_n == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            for (int w = 0; w < c->nwaits; w++) {
                PyObject *sn = PyTuple_GET_ITEM(waits, w);
                c->wait_sem[w] = (int)PyLong_AsLong(PyTuple_GET_ITEM(sn, 0));
                c->wait_n[w] = PyLong_AsLongLong(PyTuple_GET_ITEM(sn, 1));
            }
            c->ngroups = (int)PyTuple_GET_SIZE(signals);
            Py_ssize_t n_sems = 0;
            for (int g = 0; g < c->ngroups; g++)
                n_sems += PyTuple_GET_SIZE(PyTuple_GET_ITEM(PyTuple_GET_ITEM(signals, g), 1));
            c->delay = PyMem_Calloc((size_t)c->ngroups + 1, sizeof(Time));
            c->group_at = PyMem_Calloc((size_t)c->ngroups + 1, sizeof(int));
            c->sems = PyMem_Calloc((size_t)n_sems + 1, sizeof(int));
            if (c->delay == NULL || c->group_at == NULL || c->sems == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            int at = 0;
            for (int g = 0; g < c->ngroups; g++) {
                PyObject *grp = PyTuple_GET_ITEM(signals, g), *sems = PyTuple_GET_ITEM(grp, 1);
                if (t_of(PyTuple_GET_ITEM(grp, 0), &c->delay[g]) < 0)
                    goto fail;
                c->group_at[g] = at;
                for (Py_ssize_t s = 0; s < PyTuple_GET_SIZE(sems); s++)
                    c->sems[at++] = (int)PyLong_AsLong(PyTuple_GET_ITEM(sems, s));
            }
            c->group_at[c->ngroups] = at;
            if (legs != Py_None) {
                c->nlegs = (int)PyTuple_GET_SIZE(legs);
                c->legs = PyMem_Calloc((size_t)c->nlegs + 1, sizeof(int));
                if (c->legs == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                for (int l = 0; l < c->nlegs; l++)
                    c->legs[l] = (int)PyLong_AsLong(PyTuple_GET_ITEM(legs, l));
            }
            if (counts != Py_None) {
                c->count_r = PyTuple_GET_ITEM(counts, 0);
                c->count_w = PyTuple_GET_ITEM(counts, 1);
                Py_INCREF(c->count_r);
                Py_INCREF(c->count_w);
            }
            if (PyErr_Occurred())
                goto fail;
        }
    }
    p->first[p->n_threads] = k;
    p->n_kinds = PyList_GET_SIZE(p->kinds);
    /* every leg names its fence's first leg */
    for (Py_ssize_t i = 0; i < p->n_tasks; i++) {
        CTask *c = &p->tasks[i];
        for (int l = 0; l < c->nlegs; l++) {
            if (c->legs[l] < 0 || c->legs[l] >= p->n_tasks) {
                PyErr_SetString(PyExc_ValueError, "plan: a fence leg out of range");
                goto fail;
            }
            p->tasks[c->legs[l]].first_leg = (int)i;
        }
    }
    for (Py_ssize_t i = 0; i < p->n_tasks; i++) {
        CTask *c = &p->tasks[i];
        for (int w = 0; w < c->nwaits; w++)
            if (c->wait_sem[w] < 0) {
                PyErr_SetString(PyExc_ValueError, "plan: a negative semaphore");
                goto fail;
            }
    }
    for (Py_ssize_t i = 0; i < p->n_tasks; i++)  /* the checks by command number */
        if (p->tasks[i].expect != NULL && p->tasks[i].number >= p->n_numbers)
            p->n_numbers = p->tasks[i].number + 1;
    if ((p->by_number = PyMem_Calloc((size_t)p->n_numbers + 1, sizeof(Checks *))) == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < p->n_tasks; i++) {
        CTask *c = &p->tasks[i];
        if (c->expect != NULL) {
            if (p->by_number[c->number] != NULL) {
                PyErr_SetString(PyExc_ValueError, "plan: two tasks of one command number");
                goto fail;
            }
            p->by_number[c->number] = &c->checks;
        }
    }
    return capsule;
fail:
    Py_DECREF(capsule);
    return NULL;
}

enum { E_KICK, E_DONE, E_SIGNAL, E_FLOW, E_FLOWS };

typedef struct {
    Time t;
    long long seq;
    int kind, group;
    Py_ssize_t a;  /* thread, task number or flow generation */
    int64_t *clock;  /* a signal's clock (owned) */
} Event;

typedef struct {
    Py_ssize_t task;
    double bytes, remaining, rate;
} Flow;

typedef struct {
    Plan *p;
    Py_ssize_t nt, n_sems, words;  /* threads, semaphores, 64-bit words of a thread set */
    Time now, flow_time;
    Event *heap;
    Py_ssize_t n_events, cap_events;
    long long seq, generation;
    Py_ssize_t *pos;  /* per thread: its head's task number */
    char *busy;
    Time *blocked;
    char *is_blocked;
    Time *start;
    uint64_t *waiting;  /* per semaphore: the threads blocked on it */
    long long *sem_count;
    int64_t *vc, *sem_clock;  /* rows of nt */
    unsigned char *active;
    Flow *flows;
    Py_ssize_t n_flows, cap_flows;
    Py_ssize_t *done;
    long long *kind_count;  /* per kind number, in a reflow */
    int *kind_order, *kind_pos;
    long long macs_int;
    PyObject *macs;  /* the sum of the tasks' macs (their objects, as the report adds them) */
    PyObject *timeline, *who, *rows, *code_of, *bytes_read, *bytes_written, *hooks, *compute,
        *command_done, *shares, *slice_type, *sync, *fence, *counts_dict;
    Counts counts_read, counts_written;  /* the report's byte counts, summed in C (`count`) */
    Mems mems;  /* the memories the checks looked at, read once a run */
    Time last;  /* the latest end of a slice added (`any_slice`) */
    int any_slice;
    PyObject *t_seen[2];  /* the last two times slices were given as objects, the latest first */
    Time t_was[2];
} Loop;

static inline int ev_less(const Event *a, const Event *b) {
    return a->t.v < b->t.v || (a->t.v == b->t.v && a->seq < b->seq);
}

static int push(Loop *L, Time t, int kind, Py_ssize_t a, int group, int64_t *clock) {
    if (L->n_events == L->cap_events) {
        Py_ssize_t cap = L->cap_events ? 2 * L->cap_events : 1024;
        Event *h = PyMem_Realloc(L->heap, (size_t)cap * sizeof(Event));
        if (h == NULL) {
            PyMem_Free(clock);
            PyErr_NoMemory();
            return -1;
        }
        L->heap = h;
        L->cap_events = cap;
    }
    Event e = {t, ++L->seq, kind, group, a, clock};
    Py_ssize_t i = L->n_events++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!ev_less(&e, &L->heap[parent]))
            break;
        L->heap[i] = L->heap[parent];
        i = parent;
    }
    L->heap[i] = e;
    return 0;
}

static Event pop(Loop *L) {
    Event top = L->heap[0];
    Event last = L->heap[--L->n_events];
    Py_ssize_t n = L->n_events, i = 0;
    while (1) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_less(&L->heap[c + 1], &L->heap[c]))
            c++;
        if (!ev_less(&L->heap[c], &last))
            break;
        L->heap[i] = L->heap[c];
        i = c;
    }
    if (n > 0)
        L->heap[i] = last;
    return top;
}

static inline void join_rows(int64_t *d, const int64_t *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] > d[i])
            d[i] = s[i];
}

/* timeline.append(Slice(core, unit, index, label, start, end, wait)) */
/* Time `t` as a Python number for a slice: the object of one of the last two such times if
   equal (a wait's end is its command's start; commands end together), else a new one. */
static PyObject *slice_time(Loop *L, Time t) {
    for (int q = 0; q < 2; q++)
        if (L->t_seen[q] != NULL && L->t_was[q].isint == t.isint && memcmp(&L->t_was[q].v, &t.v, sizeof(double)) == 0)
            return Py_NewRef(L->t_seen[q]);
    PyObject *o = t_obj(t);
    if (o != NULL) {
        Py_XDECREF(L->t_seen[1]);
        L->t_seen[1] = L->t_seen[0];
        L->t_was[1] = L->t_was[0];
        L->t_seen[0] = Py_NewRef(o);
        L->t_was[0] = t;
    }
    return o;
}

static int add_slice(Loop *L, CTask *c, PyObject *unit, PyObject *label, Time start, Time end, int wait) {
    PyTypeObject *type = (PyTypeObject *)L->slice_type;
    PyObject *s = type->tp_alloc(type, 7);
    if (s == NULL)
        return -1;
    PyObject *a = slice_time(L, start), *b = a == NULL ? NULL : slice_time(L, end);
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_DECREF(s);
        return -1;
    }
    Py_INCREF(c->core); Py_INCREF(unit); Py_INCREF(c->index); Py_INCREF(label);
    PyTuple_SET_ITEM(s, 0, c->core);
    PyTuple_SET_ITEM(s, 1, unit);
    PyTuple_SET_ITEM(s, 2, c->index);
    PyTuple_SET_ITEM(s, 3, label);
    PyTuple_SET_ITEM(s, 4, a);
    PyTuple_SET_ITEM(s, 5, b);
    PyObject *w = wait ? Py_True : Py_False;
    Py_INCREF(w);
    PyTuple_SET_ITEM(s, 6, w);
    int rc = PyList_Append(L->timeline, s);
    Py_DECREF(s);
    if (!L->any_slice || end.v > L->last.v) {  /* (the first of equal ends, as `max` keeps) */
        L->last = end;
        L->any_slice = 1;
    }
    return rc;
}

static inline int head_is(Loop *L, Py_ssize_t tid, Py_ssize_t k) {
    return L->pos[tid] < L->p->first[tid + 1] && L->pos[tid] == k;
}

static int block(Loop *L, Py_ssize_t tid, CTask *c) {  /* the short semaphores wait for tid */
    if (!L->is_blocked[tid]) {
        L->is_blocked[tid] = 1;
        L->blocked[tid] = L->now;
    }
    for (int w = 0; w < c->nwaits; w++) {
        int s = c->wait_sem[w];
        if (L->sem_count[s] < c->wait_n[w])
            L->waiting[(Py_ssize_t)s * L->words + tid / 64] |= (uint64_t)1 << (tid % 64);
    }
    return 0;
}

static int short_of(Loop *L, CTask *c) {
    for (int w = 0; w < c->nwaits; w++)
        if (L->sem_count[c->wait_sem[w]] < c->wait_n[w])
            return 1;
    return 0;
}

static int end_wait(Loop *L, Py_ssize_t tid, CTask *c, PyObject *unit) {
    if (L->is_blocked[tid]) {
        if (L->now.v > L->blocked[tid].v && add_slice(L, c, unit, c->wait_label, L->blocked[tid], L->now, 1) < 0)
            return -1;
        L->is_blocked[tid] = 0;
    }
    return 0;
}

static int begin(Loop *L, Py_ssize_t tid, CTask *c) {  /* the tracker's begin */
    return PyList_Append(PyList_GET_ITEM(L->who, tid), c->who);
}

static int apply(Loop *L, CTask *c) {
    if (L->hooks != Py_None) {
        PyObject *r;
        if (c->reads != NULL)
            r = command_of(c->task, c->tid, c->number, &c->checks, L->vc + (Py_ssize_t)c->tid * L->nt,
                           L->nt, L->code_of, &L->counts_read, &L->counts_written, L->hooks, &L->mems);
        else {  /* (a task without its lists: `command` reads them, and reports what is wrong; its
                   writes are not in the run's log, so nothing is settled from the log from now on) */
            PyMem_Free(L->mems.seq);
            L->mems.seq = NULL;
            PyObject *args[6] = {c->task, PyList_GET_ITEM(L->rows, c->tid), L->code_of, L->bytes_read,
                                 L->bytes_written, L->hooks};
            r = counts_flush(&L->counts_read) < 0 || counts_flush(&L->counts_written) < 0 ? NULL
                                                                                         : command(NULL, args, 6);
        }
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    } else if (c->count_r != NULL) {
        for (int w = 0; w < 2; w++) {
            PyObject *counts = w ? c->count_w : c->count_r;
            Counts *into = w ? &L->counts_written : &L->counts_read;
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(counts); i++) {
                PyObject *lv = PyTuple_GET_ITEM(counts, i);
                if (count(into, PyTuple_GET_ITEM(lv, 0), PyTuple_GET_ITEM(lv, 1)) < 0)
                    return -1;
            }
        }
    }
    if (L->compute != Py_None) {
        PyObject *r = PyObject_CallOneArg(L->compute, c->task);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

static int try_start(Loop *L, Py_ssize_t tid);

static int try_fence(Loop *L, CTask *c) {
    CTask *first = &L->p->tasks[c->first_leg];
    for (int l = 0; l < first->nlegs; l++) {
        Py_ssize_t k = first->legs[l];
        Py_ssize_t lt = L->p->tasks[k].tid;
        if (L->busy[lt] || !head_is(L, lt, k))
            return 0;  /* that unit resumes the fence when it reaches it */
    }
    Py_ssize_t ft = first->tid;
    if (short_of(L, c))
        return block(L, ft, c);
    if (L->is_blocked[ft]) {
        if (L->now.v > L->blocked[ft].v && add_slice(L, c, L->sync, c->wait_label, L->blocked[ft], L->now, 1) < 0)
            return -1;
        L->is_blocked[ft] = 0;
    }
    Py_ssize_t nt = L->nt;
    int64_t joint[MAX_SEEN];
    memcpy(joint, L->vc + (Py_ssize_t)first->tid * nt, (size_t)nt * 8);
    for (int l = 1; l < first->nlegs; l++)
        join_rows(joint, L->vc + (Py_ssize_t)L->p->tasks[first->legs[l]].tid * nt, nt);
    for (int w = 0; w < c->nwaits; w++) {
        int s = c->wait_sem[w];
        L->sem_count[s] -= c->wait_n[w];
        join_rows(joint, L->sem_clock + (Py_ssize_t)s * nt, nt);
    }
    for (int l = 0; l < first->nlegs; l++) {
        CTask *leg = &L->p->tasks[first->legs[l]];
        L->pos[leg->tid]++;
        L->busy[leg->tid] = 1;
        join_rows(L->vc + (Py_ssize_t)leg->tid * nt, joint, nt);
        if (begin(L, leg->tid, leg) < 0)
            return -1;
    }
    L->start[ft] = L->now;
    return push(L, L->now, E_DONE, c->first_leg, 0, NULL);
}

static int try_start(Loop *L, Py_ssize_t tid) {
    if (L->busy[tid])
        return 0;
    Py_ssize_t k = L->pos[tid];
    if (k >= L->p->first[tid + 1])
        return 0;
    CTask *c = &L->p->tasks[k];
    if (c->ready.v > L->now.v)
        return push(L, c->ready, E_KICK, tid, 0, NULL);
    if (c->first_leg >= 0)
        return try_fence(L, c);
    if (c->nwaits && short_of(L, c))
        return block(L, tid, c);
    if (end_wait(L, tid, c, c->unit) < 0)
        return -1;
    Py_ssize_t nt = L->nt;
    int64_t *row = L->vc + tid * nt;
    for (int w = 0; w < c->nwaits; w++) {
        int s = c->wait_sem[w];
        L->sem_count[s] -= c->wait_n[w];
        join_rows(row, L->sem_clock + (Py_ssize_t)s * nt, nt);  /* the tracker's acquire */
    }
    L->pos[tid]++;
    L->busy[tid] = 1;
    L->start[tid] = L->now;
    if (begin(L, tid, c) < 0 || apply(L, c) < 0)
        return -1;
    return push(L, t_add(L->now, c->dur), c->is_dma ? E_FLOW : E_DONE, k, 0, NULL);
}

static int signal_all(Loop *L, Py_ssize_t k, const int64_t *clock) {
    CTask *c = &L->p->tasks[k];
    for (int g = 0; g < c->ngroups; g++) {
        int64_t *copy = PyMem_Malloc((size_t)L->nt * 8);
        if (copy == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        memcpy(copy, clock, (size_t)L->nt * 8);
        if (push(L, t_add(L->now, c->delay[g]), E_SIGNAL, k, g, copy) < 0)
            return -1;
    }
    return 0;
}

static int complete(Loop *L, Py_ssize_t k) {
    CTask *c = &L->p->tasks[k];
    if (L->command_done != Py_None) {
        PyObject *r = PyObject_CallNoArgs(L->command_done);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    Py_ssize_t nt = L->nt;
    if (c->nlegs) {  /* a fence (its first leg) */
        if (add_slice(L, c, L->sync, L->fence, L->start[c->tid], L->now, 0) < 0)
            return -1;
        int64_t clock[MAX_SEEN];
        for (int l = 0; l < c->nlegs; l++) {  /* the tracker's release of each leg */
            Py_ssize_t lt = L->p->tasks[c->legs[l]].tid;
            if (l == 0)
                memcpy(clock, L->vc + lt * nt, (size_t)nt * 8);
            L->vc[lt * nt + lt] += 1;
        }
        if (signal_all(L, k, clock) < 0)
            return -1;
        for (int l = 0; l < c->nlegs; l++) {
            Py_ssize_t lt = L->p->tasks[c->legs[l]].tid;
            L->busy[lt] = 0;
            if (L->pos[lt] >= L->p->first[lt + 1])
                L->active[lt] = 0;
        }
        for (int l = 0; l < c->nlegs; l++)
            if (try_start(L, L->p->tasks[c->legs[l]].tid) < 0)
                return -1;
        return 0;
    }
    Py_ssize_t tid = c->tid;
    L->busy[tid] = 0;
    if (add_slice(L, c, c->unit, c->label, L->start[tid], L->now, 0) < 0)
        return -1;
    if (PyLong_CheckExact(c->macs)) {
        int overflow = 0;
        long long m = PyLong_AsLongLongAndOverflow(c->macs, &overflow);
        if (overflow || m > (1LL << 60) || L->macs_int > (1LL << 61)) {
            PyErr_SetString(PyExc_OverflowError, "simulate: macs out of range");
            return -1;
        }
        L->macs_int += m;
    } else {
        PyObject *sum = PyNumber_Add(L->macs, c->macs);
        if (sum == NULL)
            return -1;
        Py_SETREF(L->macs, sum);
    }
    int64_t *row = L->vc + tid * nt;
    if (c->ngroups && signal_all(L, k, row) < 0)  /* the tracker's release: the clock, then a new epoch */
        return -1;
    row[tid] += 1;
    if (L->pos[tid] >= L->p->first[tid + 1])
        L->active[tid] = 0;
    return try_start(L, tid);
}

static int reflow(Loop *L, Py_ssize_t new_task, Py_ssize_t *n_done) {
    double dt = L->now.v - L->flow_time.v;
    L->flow_time = L->now;
    *n_done = 0;
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < L->n_flows; i++) {
        Flow f = L->flows[i];
        f.remaining -= f.rate * dt;
        /* finished, or so nearly that its end would not move the clock (as `_reflow`) */
        if (new_task < 0 && (f.remaining <= 1e-9 * f.bytes || L->now.v + f.remaining / f.rate <= L->now.v)) {
            L->done[(*n_done)++] = f.task;
        } else {
            L->flows[kept++] = f;
        }
    }
    L->n_flows = kept;
    if (new_task >= 0) {
        if (L->n_flows == L->cap_flows) {
            Py_ssize_t cap = L->cap_flows ? 2 * L->cap_flows : 64;
            Flow *fl = PyMem_Realloc(L->flows, (size_t)cap * sizeof(Flow));
            Py_ssize_t *dn = PyMem_Realloc(L->done, (size_t)cap * sizeof(Py_ssize_t));
            if (fl != NULL)
                L->flows = fl;
            if (dn != NULL)
                L->done = dn;
            if (fl == NULL || dn == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            L->cap_flows = cap;
        }
        CTask *c = &L->p->tasks[new_task];
        Flow f = {new_task, c->nbytes, c->nbytes, 0.0};
        L->flows[L->n_flows++] = f;
    }
    /* the kinds counted in the flows' order (the order `_reflow` counts them in) */
    int n_order = 0;
    for (Py_ssize_t i = 0; i < L->n_flows; i++) {
        int id = L->p->tasks[L->flows[i].task].kind_id;
        if (L->kind_count[id]++ == 0)
            L->kind_order[n_order++] = id;
    }
    L->generation++;
    if (L->n_flows == 0)
        return 0;
    /* the memo's key: (kind number, count) pairs by kind number */
    int32_t key_buf[128], *key = key_buf;
    if (2 * n_order > 128 && (key = PyMem_Malloc((size_t)n_order * 2 * sizeof(int32_t))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int *sorted_ids = L->kind_order + L->p->n_kinds;  /* scratch after the order */
    memcpy(sorted_ids, L->kind_order, (size_t)n_order * sizeof(int));
    for (int a = 1; a < n_order; a++) {  /* insertion sort: a few kinds */
        int v = sorted_ids[a], b = a - 1;
        while (b >= 0 && sorted_ids[b] > v) {
            sorted_ids[b + 1] = sorted_ids[b];
            b--;
        }
        sorted_ids[b + 1] = v;
    }
    for (int a = 0; a < n_order; a++) {
        key[2 * a] = sorted_ids[a];
        key[2 * a + 1] = (int32_t)L->kind_count[sorted_ids[a]];
        L->kind_pos[sorted_ids[a]] = a;
    }
    PyObject *key_obj = PyBytes_FromStringAndSize((const char *)key, (Py_ssize_t)n_order * 2 * sizeof(int32_t));
    if (key != key_buf)
        PyMem_Free(key);
    for (int a = 0; a < n_order; a++)
        L->kind_count[L->kind_order[a]] = 0;  /* (the counts are in the key now) */
    if (key_obj == NULL)
        return -1;
    PyObject *value = PyDict_GetItemWithError(L->p->memo, key_obj);
    if (value != NULL)
        Py_INCREF(value);
    else if (PyErr_Occurred()) {
        Py_DECREF(key_obj);
        return -1;
    } else {  /* a new set of kinds: `cost.shares` of them as `_reflow` asks (its memo decides) */
        PyObject *counts = L->counts_dict;
        PyDict_Clear(counts);
        for (Py_ssize_t i = 0; i < L->n_flows; i++) {
            PyObject *kind = L->p->tasks[L->flows[i].task].kind;
            PyObject *old = PyDict_GetItemWithError(counts, kind);
            if (old == NULL && PyErr_Occurred()) {
                Py_DECREF(key_obj);
                return -1;
            }
            PyObject *n = PyLong_FromLong(old == NULL ? 1 : PyLong_AsLong(old) + 1);
            if (n == NULL || PyDict_SetItem(counts, kind, n) < 0) {
                Py_XDECREF(n);
                Py_DECREF(key_obj);
                return -1;
            }
            Py_DECREF(n);
        }
        PyObject *items = PyDict_Items(counts);
        PyObject *kinds = items ? PyFrozenSet_New(items) : NULL;
        Py_XDECREF(items);
        PyObject *rates = kinds ? PyObject_CallOneArg(L->shares, kinds) : NULL;
        Py_XDECREF(kinds);
        value = rates ? PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n_order * sizeof(double)) : NULL;
        for (int a = 0; value != NULL && a < n_order; a++) {
            PyObject *r = PyObject_GetItem(rates, PyList_GET_ITEM(L->p->kinds, sorted_ids[a]));
            double x = r ? PyFloat_AsDouble(r) : -1.0;
            Py_XDECREF(r);
            if (r == NULL || (x == -1.0 && PyErr_Occurred()))
                Py_CLEAR(value);
            else
                ((double *)PyBytes_AS_STRING(value))[a] = x;
        }
        Py_XDECREF(rates);
        if (value == NULL || PyDict_SetItem(L->p->memo, key_obj, value) < 0) {
            Py_XDECREF(value);
            Py_DECREF(key_obj);
            return -1;
        }
    }
    Py_DECREF(key_obj);
    const double *rate_of = (const double *)PyBytes_AS_STRING(value);
    double finish = INFINITY;
    for (Py_ssize_t i = 0; i < L->n_flows; i++) {
        Flow *f = &L->flows[i];
        f->rate = rate_of[L->kind_pos[L->p->tasks[f->task].kind_id]];
        double left = f->remaining;
        if (f->rate == 0.0) {
            Py_DECREF(value);
            PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero");
            return -1;
        }
        double t = (left > 0.0 ? left : 0.0) / f->rate;
        if (t < finish)
            finish = t;
    }
    Py_DECREF(value);
    Time tf = {finish, 0};
    return push(L, t_add(L->now, tf), E_FLOWS, (Py_ssize_t)L->generation, 0, NULL);
}

static int buffer_of(PyObject *arr, Py_buffer *b, Py_ssize_t itemsize, Py_ssize_t len) {
    if (PyObject_GetBuffer(arr, b, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return -1;
    if (b->itemsize != itemsize || b->len != len * itemsize) {
        PyBuffer_Release(b);
        PyErr_SetString(PyExc_ValueError, "simulate: an array of the wrong size");
        return -1;
    }
    return 0;
}

/* simulate(plan, vc, sem_clocks, sem_count, active, timeline, who, rows, code_of,
            bytes_read, bytes_written, hooks, compute, command_done, shares, slice_type, sync, fence,
            report) -> (per thread, the number of its tasks started; the latest end of a slice
   it added, None if none: the cycles' figure); `report.macs` gets the macs
   of the commands completed (also when a hook raises). `hooks` None: no hazard
   checks (the byte counts from the plan); `compute` None: no numerics. */
static PyObject *simulate(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 19) {
        PyErr_SetString(PyExc_TypeError, "simulate takes 19 arguments");
        return NULL;
    }
    Plan *p = (Plan *)PyCapsule_GetPointer(args[0], "stc_mlir.emulator._loop.plan");
    if (p == NULL)
        return NULL;
    PyObject *sem_count = args[3];
    if (!PyList_Check(sem_count) || !PyList_Check(args[5]) || !PyList_Check(args[6]) || !PyList_Check(args[7])
        || PyList_GET_SIZE(args[6]) != p->n_threads || PyList_GET_SIZE(args[7]) != p->n_threads
        || p->n_threads > MAX_SEEN || !PyDict_Check(args[9]) || !PyDict_Check(args[10])
        || !PyType_Check(args[15]) || !PyType_IsSubtype((PyTypeObject *)args[15], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "simulate: bad arguments");
        return NULL;
    }
    Loop L;
    memset(&L, 0, sizeof(L));
    L.p = p;
    L.nt = p->n_threads;
    L.n_sems = PyList_GET_SIZE(sem_count);
    L.words = (L.nt + 63) / 64;
    L.timeline = args[5]; L.who = args[6]; L.rows = args[7]; L.code_of = args[8];
    L.bytes_read = args[9]; L.bytes_written = args[10]; L.hooks = args[11]; L.compute = args[12];
    L.command_done = args[13]; L.shares = args[14]; L.slice_type = args[15]; L.sync = args[16];
    L.fence = args[17];
    L.counts_read.dict = L.bytes_read;
    L.counts_written.dict = L.bytes_written;
    L.counts_read.tally = L.counts_written.tally = 1;
    if (L.hooks != Py_None && !PyList_Check(L.code_of)) {
        PyErr_SetString(PyExc_TypeError, "simulate: code_of must be a list");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < p->n_tasks; i++) {
        CTask *c = &p->tasks[i];
        for (int w = 0; w < c->nwaits; w++)
            if (c->wait_sem[w] >= L.n_sems) {
                PyErr_SetString(PyExc_ValueError, "simulate: a semaphore out of range");
                return NULL;
            }
        for (int s = 0; s < c->group_at[c->ngroups]; s++)
            if (c->sems[s] < 0 || c->sems[s] >= L.n_sems) {
                PyErr_SetString(PyExc_ValueError, "simulate: a semaphore out of range");
                return NULL;
            }
    }
    Py_buffer bvc, bsem, bact;
    if (buffer_of(args[1], &bvc, 8, L.nt * L.nt) < 0)
        return NULL;
    if (buffer_of(args[2], &bsem, 8, L.n_sems * L.nt) < 0) {
        PyBuffer_Release(&bvc);
        return NULL;
    }
    if (buffer_of(args[4], &bact, 1, L.nt) < 0) {
        PyBuffer_Release(&bvc);
        PyBuffer_Release(&bsem);
        return NULL;
    }
    L.vc = bvc.buf;
    L.sem_clock = bsem.buf;
    L.active = bact.buf;
    PyObject *result = NULL;
    L.macs = PyLong_FromLong(0);
    L.counts_dict = PyDict_New();
    L.pos = PyMem_Calloc((size_t)L.nt + 1, sizeof(Py_ssize_t));
    L.busy = PyMem_Calloc((size_t)L.nt + 1, 1);
    L.is_blocked = PyMem_Calloc((size_t)L.nt + 1, 1);
    L.blocked = PyMem_Calloc((size_t)L.nt + 1, sizeof(Time));
    L.start = PyMem_Calloc((size_t)L.nt + 1, sizeof(Time));
    L.waiting = PyMem_Calloc((size_t)(L.n_sems * L.words) + 1, sizeof(uint64_t));
    L.sem_count = PyMem_Calloc((size_t)L.n_sems + 1, sizeof(long long));
    L.kind_count = PyMem_Calloc((size_t)p->n_kinds + 1, sizeof(long long));
    L.kind_order = PyMem_Calloc((size_t)(2 * p->n_kinds) + 1, sizeof(int));
    L.kind_pos = PyMem_Calloc((size_t)p->n_kinds + 1, sizeof(int));
    if (L.hooks != Py_None && (L.mems.seq = PyMem_Malloc((size_t)p->n_numbers * sizeof(long long) + 1)) != NULL) {
        for (Py_ssize_t i = 0; i < p->n_numbers; i++)
            L.mems.seq[i] = -1;
        L.mems.n_seq = p->n_numbers;
        L.mems.by_number = p->by_number;
    }
    if ((L.hooks != Py_None && L.mems.seq == NULL)
        || L.macs == NULL || L.counts_dict == NULL || !L.pos || !L.busy || !L.is_blocked || !L.blocked
        || !L.start || !L.waiting || !L.sem_count || !L.kind_count || !L.kind_order || !L.kind_pos) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < L.n_sems; s++) {
        L.sem_count[s] = PyLong_AsLongLong(PyList_GET_ITEM(sem_count, s));
        if (PyErr_Occurred())
            goto done;
    }
    L.now.isint = 1;
    L.flow_time.isint = 0;  /* Python's 0.0 */
    for (Py_ssize_t t = 0; t < L.nt; t++) {
        L.pos[t] = p->first[t];
        if (p->first[t] < p->first[t + 1] && push(&L, p->tasks[p->first[t]].ready, E_KICK, t, 0, NULL) < 0)
            goto done;
    }
    while (L.n_events) {
        Event e = pop(&L);
        L.now = e.t;
        int rc = 0;
        switch (e.kind) {
        case E_KICK:
            rc = try_start(&L, e.a);
            break;
        case E_DONE:
            rc = complete(&L, e.a);
            break;
        case E_SIGNAL: {  /* the signals of one command that land at the same time, in order */
            CTask *c = &p->tasks[e.a];
            for (int i = c->group_at[e.group]; i < c->group_at[e.group + 1] && rc == 0; i++) {
                int s = c->sems[i];
                L.sem_count[s] += 1;
                join_rows(L.sem_clock + (Py_ssize_t)s * L.nt, e.clock, L.nt);
                uint64_t blocked[MAX_SEEN / 64];
                uint64_t *w = L.waiting + (Py_ssize_t)s * L.words;
                memcpy(blocked, w, (size_t)L.words * 8);
                memset(w, 0, (size_t)L.words * 8);
                for (Py_ssize_t word = 0; word < L.words && rc == 0; word++)
                    for (uint64_t bits = blocked[word]; bits && rc == 0; bits &= bits - 1)
                        rc = try_start(&L, word * 64 + __builtin_ctzll(bits));
            }
            PyMem_Free(e.clock);
            break;
        }
        case E_FLOW: {
            Py_ssize_t n_done;
            rc = reflow(&L, e.a, &n_done);
            break;
        }
        default:  /* E_FLOWS */
            if (e.a == L.generation) {
                Py_ssize_t n_done;
                rc = reflow(&L, -1, &n_done);
                /* `done` is reused by the next reflow: completing may start a DMA */
                Py_ssize_t finished[MAX_SEEN * 4];
                Py_ssize_t *list = n_done <= MAX_SEEN * 4 ? finished : PyMem_Malloc((size_t)n_done * sizeof(Py_ssize_t));
                if (list == NULL) {
                    PyErr_NoMemory();
                    rc = -1;
                }
                if (rc == 0) {
                    memcpy(list, L.done, (size_t)n_done * sizeof(Py_ssize_t));
                    for (Py_ssize_t i = 0; i < n_done && rc == 0; i++)
                        rc = complete(&L, list[i]);
                }
                if (list != NULL && list != finished)
                    PyMem_Free(list);
            }
        }
        if (rc < 0)
            goto done;
    }
    for (Py_ssize_t s = 0; s < L.n_sems; s++) {
        PyObject *v = PyLong_FromLongLong(L.sem_count[s]);
        if (v == NULL || PyList_SetItem(sem_count, s, v) < 0)
            goto done;
    }
    {  /* (threads' tasks started, the latest end of a slice or None) */
        PyObject *started = PyTuple_New(L.nt), *last = L.any_slice ? t_obj(L.last) : Py_None;
        if (L.any_slice == 0)
            Py_INCREF(last);
        for (Py_ssize_t t = 0; started != NULL && t < L.nt; t++) {
            PyObject *v = PyLong_FromSsize_t(L.pos[t] - p->first[t]);
            if (v == NULL)
                Py_CLEAR(started);
            else
                PyTuple_SET_ITEM(started, t, v);
        }
        if (started != NULL && last != NULL)
            result = PyTuple_Pack(2, started, last);
        Py_XDECREF(started);
        Py_XDECREF(last);
    }
done:
    if (L.macs != NULL) {  /* report.macs += the macs of the commands completed, hazard or not */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        if (counts_flush(&L.counts_read) < 0 || counts_flush(&L.counts_written) < 0)  /* the bytes, too */
            Py_CLEAR(result);
        PyObject *mi = PyLong_FromLongLong(L.macs_int), *old = PyObject_GetAttr(args[18], S_macs);
        PyObject *sum = mi && old ? PyNumber_Add(old, L.macs) : NULL;
        PyObject *total = sum ? PyNumber_Add(sum, mi) : NULL;
        if (total == NULL || PyObject_SetAttr(args[18], S_macs, total) < 0)
            Py_CLEAR(result);
        Py_XDECREF(mi); Py_XDECREF(old); Py_XDECREF(sum); Py_XDECREF(total);
        if (type != NULL)
            PyErr_Restore(type, value, tb);
    }
    for (Py_ssize_t i = 0; i < L.n_events; i++)
        PyMem_Free(L.heap[i].clock);
    PyMem_Free(L.heap);
    PyMem_Free(L.flows);
    PyMem_Free(L.done);
    PyMem_Free(L.pos);
    PyMem_Free(L.busy);
    PyMem_Free(L.is_blocked);
    PyMem_Free(L.blocked);
    PyMem_Free(L.start);
    PyMem_Free(L.waiting);
    PyMem_Free(L.sem_count);
    PyMem_Free(L.kind_count);
    PyMem_Free(L.kind_order);
    PyMem_Free(L.kind_pos);
    Py_XDECREF(L.macs);
    Py_XDECREF(L.counts_dict);
    Py_XDECREF(L.t_seen[0]);
    Py_XDECREF(L.t_seen[1]);
    mems_free(&L.mems);
    PyMem_Free(L.mems.seq);
    PyBuffer_Release(&bvc);
    PyBuffer_Release(&bsem);
    PyBuffer_Release(&bact);
    return result;
}

static PyMethodDef methods[] = {
    {"join", (PyCFunction)(void (*)(void))join, METH_FASTCALL,
     "join(dst, src): dst = max(dst, src) element-wise, in place (int64, C-contiguous)."},
    {"settled", (PyCFunction)(void (*)(void))settled, METH_FASTCALL,
     "settled(starts, values, lo, hi, seen, writers, bits) -> (known, write settled, read settled)."},
    {"command", (PyCFunction)(void (*)(void))command, METH_FASTCALL,
     "command(task, clock, code_of, bytes_read, bytes_written, hooks): a command's hazard checks (native.python_command)."},
    {"prune", (PyCFunction)(void (*)(void))prune, METH_FASTCALL,
     "prune(log, vc, active): HazardTracker._prune of a read log (native.python_prune)."},
    {"plan", (PyCFunction)(void (*)(void))plan, METH_FASTCALL,
     "plan(threads): the prepared tasks as C arrays, for simulate (simulator._native_plan)."},
    {"simulate", (PyCFunction)(void (*)(void))simulate, METH_FASTCALL,
     "simulate(plan, ...): Simulator._simulate's event loop over a plan (simulator._simulate_native)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_loop",
    "Helpers of the emulator's event loop (optional; see stc_mlir/emulator/native.py).", -1, methods,
};

/* Bumped whenever a function's arguments or meaning change: native.py uses a build whose
   INTERFACE is its own and falls back to Python for any other. */
#define LOOP_INTERFACE 5

PyMODINIT_FUNC PyInit__loop(void) {
    if (intern_names() < 0)
        return NULL;
    if (PyType_Ready(&LogType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && (PyModule_AddIntConstant(m, "INTERFACE", LOOP_INTERFACE) < 0
                      || PyModule_AddObjectRef(m, "Log", (PyObject *)&LogType) < 0)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
