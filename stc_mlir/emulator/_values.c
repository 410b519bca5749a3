/* The bookkeeping of the emulator's derived-value cache (stc_mlir/emulator/tile_cache.py)
   and its dense byte copies, in C.

   An optional accelerator: `TileCache` has the same operations in Python (`_written`,
   `_copied`, `origin`), used when this module is missing and as the reference its tests
   compare this one with. The functions here work on the very dicts the Python code uses
   (`memories`, `aliases`, `sources`), in the same order, with the same results: a cache
   may be handled by either, call by call. Each public function takes the cache's lock as
   the Python methods do (the GIL alone is not enough: a thread may hold the lock between
   two bytecodes).

   `hook` goes one step further: the per-command values hook of a run (what the event
   loop calls for each command started): a dense DMA (`_Task.copy` set) is copied and
   booked here, any other command is computed by `computer`'s callable (its `derived`
   and the bookkeeping of what it writes here too, `execute` in Python), or handed to a
   helper thread by the Python `offload`. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <math.h>
#include <string.h>

static PyObject *s_memories, *s_aliases, *s_sources, *s_dropped, *s_nbytes, *s_lock, *s_acquire,
    *s_release, *s_copy, *s_pending, *s_seen, *s_wait, *s_data, *s_budget, *s_per_memory, *s_flags,
    *s_writeable, *s_views, *s_cmd, *s_dtype, *s_f32_what, *s_hand, *s_strided;

#define BAD(x) ((x) == -1 && PyErr_Occurred())

/* obj.name (a Python int attribute) in *n */
static int int_attr(PyObject *obj, PyObject *name, Py_ssize_t *n) {
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) {
        return -1;
    }
    *n = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    return BAD(*n) ? -1 : 0;
}

/* obj.name += delta (a Python int attribute) */
static int add_to(PyObject *obj, PyObject *name, Py_ssize_t delta) {
    if (delta == 0) {
        return 0;
    }
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL) {
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(v);
    Py_DECREF(v);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    PyObject *w = PyLong_FromSsize_t(n + delta);
    if (w == NULL) {
        return -1;
    }
    int r = PyObject_SetAttr(obj, name, w);
    Py_DECREF(w);
    return r;
}

/* item i of a tuple as a Py_ssize_t (-1 with an error set on failure: callers check) */
static inline Py_ssize_t item(PyObject *t, Py_ssize_t i) {
    return PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i));
}

typedef struct {
    PyObject *memories, *aliases, *sources, *lock; /* new references */
} Cache;

static int cache_open(PyObject *cache, Cache *c) {
    c->memories = PyObject_GetAttr(cache, s_memories);
    c->aliases = PyObject_GetAttr(cache, s_aliases);
    c->sources = PyObject_GetAttr(cache, s_sources);
    c->lock = PyObject_GetAttr(cache, s_lock);
    if (c->memories == NULL || c->aliases == NULL || c->sources == NULL || c->lock == NULL) {
        return -1;
    }
    if (!PyDict_Check(c->memories) || !PyDict_Check(c->aliases) || !PyDict_Check(c->sources)) {
        PyErr_SetString(PyExc_TypeError, "not a TileCache");
        return -1;
    }
    return 0;
}

static void cache_close(Cache *c) {
    Py_XDECREF(c->memories);
    Py_XDECREF(c->aliases);
    Py_XDECREF(c->sources);
    Py_XDECREF(c->lock);
}

static int lock_call(PyObject *lock, PyObject *method) {
    PyObject *r = PyObject_CallMethodNoArgs(lock, method);
    if (r == NULL) {
        return -1;
    }
    Py_DECREF(r);
    return 0;
}

/* releases the cache's lock after a call that gave `r` (an error it raised kept) */
static int unlock(Cache *c, int r) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (lock_call(c->lock, s_release) < 0) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return -1;
    }
    PyErr_Restore(type, value, tb);
    return r;
}

/* TileCache._written: bytes [lo, hi) of `memory` change */
static int written(PyObject *cache, Cache *c, PyObject *memory, Py_ssize_t lo, Py_ssize_t hi) {
    PyObject *entries = PyDict_GetItemWithError(c->memories, memory); /* borrowed */
    if (entries == NULL && PyErr_Occurred()) {
        return -1;
    }
    if (entries != NULL && PyDict_GET_SIZE(entries) > 0) {
        PyObject *gone = NULL, *key, *e;
        Py_ssize_t pos = 0;
        while (PyDict_Next(entries, &pos, &key, &e)) {
            Py_ssize_t elo = item(e, 0), ehi = item(e, 1);
            if (BAD(elo) || BAD(ehi)) {
                Py_XDECREF(gone);
                return -1;
            }
            if (elo < hi && lo < ehi) {
                if (gone == NULL && (gone = PyList_New(0)) == NULL) {
                    return -1;
                }
                if (PyList_Append(gone, key) < 0) {
                    Py_DECREF(gone);
                    return -1;
                }
            }
        }
        if (gone != NULL) {
            Py_ssize_t freed = 0;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(gone); i++) {
                key = PyList_GET_ITEM(gone, i);
                e = PyDict_GetItemWithError(entries, key);
                PyObject *nb = e == NULL ? NULL : PyObject_GetAttr(PyTuple_GET_ITEM(e, 2), s_nbytes);
                Py_ssize_t n = nb == NULL ? -1 : PyLong_AsSsize_t(nb);
                Py_XDECREF(nb);
                if (nb == NULL || BAD(n) || PyDict_DelItem(entries, key) < 0) {
                    if (!PyErr_Occurred()) {
                        PyErr_SetString(PyExc_KeyError, "a cache entry went");
                    }
                    Py_DECREF(gone);
                    return -1;
                }
                freed += n;
            }
            Py_DECREF(gone);
            if (add_to(cache, s_nbytes, -freed) < 0) {
                return -1;
            }
        }
    }
    PyObject *aliases = PyDict_GetItemWithError(c->aliases, memory);
    if (aliases == NULL && PyErr_Occurred()) {
        return -1;
    }
    PyObject *sources = PyDict_GetItemWithError(c->sources, memory);
    if (sources == NULL && PyErr_Occurred()) {
        return -1;
    }
    if ((aliases == NULL || PyDict_GET_SIZE(aliases) == 0) && (sources == NULL || PyDict_GET_SIZE(sources) == 0)) {
        return 0;
    }
    PyObject *stale = PyList_New(0), *a, *none;
    if (stale == NULL) {
        return -1;
    }
    Py_ssize_t pos = 0;
    while (aliases != NULL && PyDict_Next(aliases, &pos, &a, &none)) {
        Py_ssize_t a1 = item(a, 1), a2 = item(a, 2);
        if (BAD(a1) || BAD(a2)) {
            goto fail;
        }
        if (a1 < hi && lo < a2 && PyList_Append(stale, a) < 0) {
            goto fail;
        }
    }
    pos = 0;
    while (sources != NULL && PyDict_Next(sources, &pos, &a, &none)) {
        Py_ssize_t a1 = item(a, 1), a2 = item(a, 2), a4 = item(a, 4);
        if (BAD(a1) || BAD(a2) || BAD(a4)) {
            goto fail;
        }
        if (a4 < hi && lo < a4 + a2 - a1 && PyList_Append(stale, a) < 0) {
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(stale); i++) {
        a = PyList_GET_ITEM(stale, i);
        PyObject *into = PyDict_GetItemWithError(c->aliases, PyTuple_GET_ITEM(a, 0));
        PyObject *from = into == NULL ? NULL : PyDict_GetItemWithError(c->sources, PyTuple_GET_ITEM(a, 3));
        if (from == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_KeyError, "an alias's memory is not indexed");
            }
            goto fail;
        }
        /* (pop(alias, None): a copy within one memory is in both lists) */
        if ((PyDict_Contains(into, a) == 1 && PyDict_DelItem(into, a) < 0)
            || (PyDict_Contains(from, a) == 1 && PyDict_DelItem(from, a) < 0) || PyErr_Occurred()) {
            goto fail;
        }
    }
    Py_ssize_t n = PyList_GET_SIZE(stale);
    Py_DECREF(stale);
    return add_to(cache, s_dropped, n);
fail:
    Py_DECREF(stale);
    return -1;
}

/* TileCache.origin: where bytes [lo, hi) of `memory` were copied from; *source a new
   reference */
static int origin(Cache *c, PyObject *memory, Py_ssize_t lo, Py_ssize_t hi, PyObject **source,
                  Py_ssize_t *at) {
    PyObject *aliases = PyDict_GetItemWithError(c->aliases, memory);
    if (aliases == NULL && PyErr_Occurred()) {
        return -1;
    }
    *source = memory;
    *at = lo;
    if (aliases != NULL) {
        PyObject *a, *none;
        Py_ssize_t pos = 0;
        while (PyDict_Next(aliases, &pos, &a, &none)) { /* (the copies into one memory do not overlap) */
            Py_ssize_t a1 = item(a, 1), a2 = item(a, 2), a4 = item(a, 4);
            if (BAD(a1) || BAD(a2) || BAD(a4)) {
                return -1;
            }
            if (!(a1 <= lo && lo < a2)) {
                continue;
            }
            PyObject *from = PyTuple_GET_ITEM(a, 3);
            Py_ssize_t end = a2, next = a4 + a2 - a1;
            while (end < hi) { /* the next piece: from where this one ended, to where it ended */
                PyObject *p;
                Py_ssize_t ppos = 0;
                int found = 0;
                while (PyDict_Next(aliases, &ppos, &p, &none)) {
                    Py_ssize_t p1 = item(p, 1), p2 = item(p, 2), p4 = item(p, 4);
                    if (BAD(p1) || BAD(p2) || BAD(p4)) {
                        return -1;
                    }
                    if (p1 == end && p4 == next) {
                        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(p, 3), from, Py_EQ);
                        if (same < 0) {
                            return -1;
                        }
                        if (same) {
                            next += p2 - p1;
                            end = p2;
                            found = 1;
                            break;
                        }
                    }
                }
                if (!found) {
                    Py_INCREF(memory);
                    return 0;
                }
            }
            *source = from;
            *at = a4 + lo - a1;
            break;
        }
    }
    Py_INCREF(*source);
    return 0;
}

/* dict.setdefault(key, {})[alias] = None */
static int index_alias(PyObject *dict, PyObject *key, PyObject *alias) {
    PyObject *fresh = PyDict_New();
    if (fresh == NULL) {
        return -1;
    }
    PyObject *d = PyDict_SetDefault(dict, key, fresh); /* borrowed */
    Py_DECREF(fresh);
    return d == NULL ? -1 : PyDict_SetItem(d, alias, Py_None);
}

/* TileCache._copied: bytes [lo, hi) of `memory` were just written as a copy of `source`
   from `source_lo` on */
static int copied(Cache *c, PyObject *memory, Py_ssize_t lo, Py_ssize_t hi, PyObject *source,
                  Py_ssize_t source_lo) {
    PyObject *from;
    Py_ssize_t at;
    if (origin(c, source, source_lo, source_lo + hi - lo, &from, &at) < 0) {
        return -1;
    }
    int same = at == lo ? PyObject_RichCompareBool(from, memory, Py_EQ) : 0;
    if (same != 0) {
        Py_DECREF(from);
        return same < 0 ? -1 : 0;
    }
    PyObject *alias = Py_BuildValue("(OnnOn)", memory, lo, hi, from, at);
    Py_DECREF(from);
    if (alias == NULL) {
        return -1;
    }
    int r = index_alias(c->aliases, memory, alias) < 0 || index_alias(c->sources, PyTuple_GET_ITEM(alias, 3), alias) < 0
                ? -1 : 0;
    Py_DECREF(alias);
    return r;
}

static int parse_range(PyObject *const *args, Py_ssize_t *lo, Py_ssize_t *hi) {
    *lo = PyLong_AsSsize_t(args[0]);
    *hi = PyLong_AsSsize_t(args[1]);
    return BAD(*lo) || BAD(*hi) ? -1 : 0;
}

/* the contiguous bytes of a uint8 array (a memory's data) */
static int bytes_of(PyObject *array, Py_buffer *view) {
    return PyObject_GetBuffer(array, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS);
}

/* a dense copy: the bytes, then the cache's bookkeeping (lock held by the caller) */
static int dense(PyObject *cache, Cache *c, PyObject *dst, Py_ssize_t lo, Py_ssize_t hi, PyObject *dst_key,
                 PyObject *src, Py_ssize_t src_lo, PyObject *src_key) {
    Py_buffer d, s;
    if (bytes_of(dst, &d) < 0) {
        return -1;
    }
    if (bytes_of(src, &s) < 0) {
        PyBuffer_Release(&d);
        return -1;
    }
    Py_ssize_t n = hi - lo;
    int ok = lo >= 0 && src_lo >= 0 && n >= 0 && hi <= d.len && src_lo + n <= s.len;
    if (ok) {
        memmove((char *)d.buf + lo, (char *)s.buf + src_lo, (size_t)n);
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&d);
    if (!ok) {
        PyErr_SetString(PyExc_IndexError, "a dense copy out of its memories' bytes");
        return -1;
    }
    if (written(cache, c, dst_key, lo, hi) < 0) {
        return -1;
    }
    return copied(c, dst_key, lo, hi, src_key, src_lo);
}

/* written(cache, memory, lo, hi) */
static PyObject *py_written(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t lo, hi;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "written(cache, memory, lo, hi)");
        return NULL;
    }
    if (parse_range(args + 2, &lo, &hi) < 0) {
        return NULL;
    }
    Cache c;
    int r = -1;
    if (cache_open(args[0], &c) == 0 && lock_call(c.lock, s_acquire) == 0) {
        r = unlock(&c, written(args[0], &c, args[1], lo, hi));
    }
    cache_close(&c);
    return r < 0 ? NULL : Py_NewRef(Py_None);
}

/* copied(cache, memory, lo, hi, source, source_lo) */
static PyObject *py_copied(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t lo, hi, source_lo;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "copied(cache, memory, lo, hi, source, source_lo)");
        return NULL;
    }
    if (parse_range(args + 2, &lo, &hi) < 0 || BAD(source_lo = PyLong_AsSsize_t(args[5]))) {
        return NULL;
    }
    Cache c;
    int r = -1;
    if (cache_open(args[0], &c) == 0 && lock_call(c.lock, s_acquire) == 0) {
        r = unlock(&c, copied(&c, args[1], lo, hi, args[4], source_lo));
    }
    cache_close(&c);
    return r < 0 ? NULL : Py_NewRef(Py_None);
}

/* origin(cache, memory, lo, hi) -> (memory, lo) (the caller holds the lock) */
static PyObject *py_origin(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t lo, hi, at;
    PyObject *source;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "origin(cache, memory, lo, hi)");
        return NULL;
    }
    if (parse_range(args + 2, &lo, &hi) < 0) {
        return NULL;
    }
    Cache c;
    int r = cache_open(args[0], &c) == 0 ? origin(&c, args[1], lo, hi, &source, &at) : -1;
    cache_close(&c);
    if (r < 0) {
        return NULL;
    }
    PyObject *out = Py_BuildValue("(On)", source, at);
    Py_DECREF(source);
    return out;
}

/* copy(cache, dst, lo, hi, dst_key, src, src_lo, src_key): dst[lo:hi] = src[src_lo:...],
   then written and copied for those bytes */
static PyObject *py_copy(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t lo, hi, src_lo;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "copy(cache, dst, lo, hi, dst_key, src, src_lo, src_key)");
        return NULL;
    }
    if (parse_range(args + 2, &lo, &hi) < 0 || BAD(src_lo = PyLong_AsSsize_t(args[6]))) {
        return NULL;
    }
    Cache c;
    int r = -1;
    if (cache_open(args[0], &c) == 0 && lock_call(c.lock, s_acquire) == 0) {
        r = unlock(&c, dense(args[0], &c, args[1], lo, hi, args[4], args[5], src_lo, args[7]));
    }
    cache_close(&c);
    return r < 0 ? NULL : Py_NewRef(Py_None);
}

/* TileCache._drop: entries.pop(key), its bytes no longer counted */
static int drop(PyObject *cache, PyObject *entries, PyObject *key) {
    PyObject *e = PyDict_GetItemWithError(entries, key);
    if (e == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_KeyError, "a cache entry went");
        }
        return -1;
    }
    Py_ssize_t n;
    if (int_attr(PyTuple_GET_ITEM(e, 2), s_nbytes, &n) < 0 || PyDict_DelItem(entries, key) < 0) {
        return -1;
    }
    return add_to(cache, s_nbytes, -n);
}

/* the first key of a non-empty dict (next(iter(d))), borrowed */
static PyObject *first_key(PyObject *d) {
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    if (!PyDict_Next(d, &pos, &key, &value)) {
        PyErr_SetString(PyExc_KeyError, "an empty cache memory");
        return NULL;
    }
    return key;
}

/* TileCache._keep (lock held): `value` of `nbytes` bytes kept for `key` */
static int keep(PyObject *cache, Cache *c, PyObject *entries, PyObject *key, Py_ssize_t lo, Py_ssize_t hi,
                PyObject *value, Py_ssize_t nbytes) {
    PyObject *old = PyDict_GetItemWithError(entries, key); /* (made meanwhile by another thread) */
    if (old == NULL && PyErr_Occurred()) {
        return -1;
    }
    if (old != NULL && drop(cache, entries, key) < 0) {
        return -1;
    }
    PyObject *entry = Py_BuildValue("(nnO)", lo, hi, value);
    int r = entry == NULL ? -1 : PyDict_SetItem(entries, key, entry);
    Py_XDECREF(entry);
    Py_ssize_t per_memory, budget, total;
    if (r < 0 || add_to(cache, s_nbytes, nbytes) < 0 || int_attr(cache, s_per_memory, &per_memory) < 0
        || int_attr(cache, s_budget, &budget) < 0) {
        return -1;
    }
    if (PyDict_GET_SIZE(entries) > per_memory) {
        PyObject *oldest = first_key(entries);
        if (oldest == NULL || drop(cache, entries, oldest) < 0) {
            return -1;
        }
    }
    while (1) {
        if (int_attr(cache, s_nbytes, &total) < 0) {
            return -1;
        }
        if (total <= budget) {
            return 0;
        }
        PyObject *fullest = NULL, *m, *d, *oldest; /* max(memories.values(), key=len): the first longest */
        Py_ssize_t pos = 0;
        while (PyDict_Next(c->memories, &pos, &m, &d)) {
            if (fullest == NULL || PyDict_GET_SIZE(d) > PyDict_GET_SIZE(fullest)) {
                fullest = d;
            }
        }
        if (fullest == NULL || (oldest = first_key(fullest)) == NULL || drop(cache, fullest, oldest) < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_KeyError, "nothing to drop");
            }
            return -1;
        }
    }
}

/* dict look-ups with the key's hash computed once (CPython's own calls where it has them) */
#if PY_VERSION_HEX < 0x030D0000
#define dict_get(d, k, h) _PyDict_GetItem_KnownHash(d, k, h)
#define dict_del(d, k, h) _PyDict_DelItem_KnownHash(d, k, h)
#define dict_set(d, k, v, h) _PyDict_SetItem_KnownHash(d, k, v, h)
#else
#define dict_get(d, k, h) PyDict_GetItemWithError(d, k)
#define dict_del(d, k, h) PyDict_DelItem(d, k)
#define dict_set(d, k, v, h) PyDict_SetItem(d, k, v)
#endif

/* TileCache.get: the value kept for the tile at `lo` (`key`) or for the bytes it was copied
   from, else make() (make(arg) if arg is not NULL; kept, read-only); a new reference. With
   `held` not NULL the caller holds the cache's lock (*held 1) and keeps it, unless an error
   leaves it released (*held 0); make() still runs without it. */
static PyObject *get(PyObject *cache, Cache *cp, PyObject *memory, Py_ssize_t lo, Py_ssize_t hi, PyObject *key,
                     PyObject *make, PyObject *arg, int *held) {
#define c (*cp)
    PyObject *entries = NULL, *value = NULL;
    Py_ssize_t dropped = 0;
    int aliased = 0;
    if (held == NULL && lock_call(c.lock, s_acquire) < 0) {
        return NULL;
    }
    Py_INCREF(memory);
    Py_INCREF(key);
    PyObject *aliases = PyDict_GetItemWithError(c.aliases, memory);
    if (aliases == NULL && PyErr_Occurred()) {
        goto locked;
    }
    aliased = aliases != NULL && PyDict_GET_SIZE(aliases) > 0;
    if (aliased) { /* (no copy into this memory: the bytes are their own) */
        PyObject *from;
        Py_ssize_t at;
        if (int_attr(cache, s_dropped, &dropped) < 0 || origin(&c, memory, lo, hi, &from, &at) < 0) {
            goto locked;
        }
        Py_SETREF(memory, from);
        if (at != lo) { /* (key[0] + at - lo, *key[1:]) */
            Py_ssize_t base = PyLong_AsSsize_t(PyTuple_GET_ITEM(key, 0));
            PyObject *at_key = BAD(base) ? NULL : PyTuple_New(PyTuple_GET_SIZE(key)), *first;
            if (at_key == NULL || (first = PyLong_FromSsize_t(base + at - lo)) == NULL) {
                Py_XDECREF(at_key);
                goto locked;
            }
            PyTuple_SET_ITEM(at_key, 0, first);
            for (Py_ssize_t i = 1; i < PyTuple_GET_SIZE(key); i++) {
                PyTuple_SET_ITEM(at_key, i, Py_NewRef(PyTuple_GET_ITEM(key, i)));
            }
            Py_SETREF(key, at_key);
            hi += at - lo;
            lo = at;
        }
    }
    entries = PyDict_GetItemWithError(c.memories, memory);
    if (entries != NULL) {
        Py_INCREF(entries);
    } else if (PyErr_Occurred() || (entries = PyDict_New()) == NULL || PyDict_SetItem(c.memories, memory, entries) < 0) {
        goto locked;
    }
    Py_hash_t hash = PyObject_Hash(key); /* (once: a key is a tuple, its hash not kept) */
    PyObject *hit = hash == -1 ? NULL : dict_get(entries, key, hash);
    if (hit != NULL) { /* most recently used: to the end */
        Py_INCREF(hit);
        if (dict_del(entries, key, hash) == 0 && dict_set(entries, key, hit, hash) == 0) {
            value = Py_NewRef(PyTuple_GET_ITEM(hit, 2));
        }
        Py_DECREF(hit);
        goto locked;
    }
    if (PyErr_Occurred()) {
        goto locked;
    }
    if (held != NULL) {
        *held = 0;
    }
    if (lock_call(c.lock, s_release) < 0) {
        goto out;
    }
    value = arg == NULL ? PyObject_CallNoArgs(make) : PyObject_CallOneArg(make, arg); /* (outside the lock) */
    PyObject *flags = value == NULL ? NULL : PyObject_GetAttr(value, s_flags);
    int r = flags == NULL ? -1 : PyObject_SetAttr(flags, s_writeable, Py_False);
    Py_XDECREF(flags);
    if (r < 0 || lock_call(c.lock, s_acquire) < 0) {
        Py_CLEAR(value);
        goto out;
    }
    if (held != NULL) {
        *held = 1;
    }
    Py_ssize_t nbytes, budget, now = dropped;
    if (int_attr(value, s_nbytes, &nbytes) < 0 || int_attr(cache, s_budget, &budget) < 0
        || (aliased && int_attr(cache, s_dropped, &now) < 0)) {
        Py_CLEAR(value);
    } else if (nbytes <= budget && now == dropped && keep(cache, &c, entries, key, lo, hi, value, nbytes) < 0) {
        Py_CLEAR(value);
    }
locked:
    if (held == NULL && unlock(&c, 0) < 0) {
        Py_CLEAR(value);
    }
out:
    if (value == NULL && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_SystemError, "TileCache.get made no value");
    }
    Py_XDECREF(entries);
    Py_DECREF(memory);
    Py_DECREF(key);
    return value;
#undef c
}

/* get(cache, memory, lo, hi, key, make) -> TileCache.get's value */
static PyObject *py_get(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t lo, hi;
    if (nargs != 6 || !PyTuple_Check(args[4]) || PyTuple_GET_SIZE(args[4]) < 1) {
        PyErr_SetString(PyExc_TypeError, "get(cache, memory, lo, hi, key tuple, make)");
        return NULL;
    }
    if (parse_range(args + 2, &lo, &hi) < 0) {
        return NULL;
    }
    Cache c;
    PyObject *value = cache_open(args[0], &c) < 0 ? NULL : get(args[0], &c, args[1], lo, hi, args[4], args[5], NULL, NULL);
    cache_close(&c);
    return value;
}

/* derived(slot, what, make), the `derived` of `execute` for one command: TileCache.get
   for the tile in `slot` (places: slot -> (memory, lo, hi, tile key)), keyed (*tile key,
   what); the cache's dicts and lock looked up once, when it is made */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *cache, *places, *to_f32, *f16;
    Cache c;
} Derived;

static void derived_dealloc(Derived *d) {
    Py_XDECREF(d->cache);
    Py_XDECREF(d->places);
    Py_XDECREF(d->to_f32);
    Py_XDECREF(d->f16);
    cache_close(&d->c);
    PyObject_Free(d);
}

/* get for the tile in `slot` keyed (*tile key, what) */
static PyObject *derive(Derived *d, PyObject *slot, PyObject *what, PyObject *make, PyObject *arg, int *held) {
    PyObject *place = PyDict_GetItemWithError(d->places, slot);
    if (place == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetObject(PyExc_KeyError, slot);
        }
        return NULL;
    }
    if (!PyTuple_Check(place) || PyTuple_GET_SIZE(place) != 4 || !PyTuple_Check(PyTuple_GET_ITEM(place, 3))
        || PyTuple_GET_SIZE(PyTuple_GET_ITEM(place, 3)) < 1) {
        PyErr_SetString(PyExc_TypeError, "a place: (memory, lo, hi, tile key tuple)");
        return NULL;
    }
    Py_ssize_t lo = item(place, 1), hi = item(place, 2);
    if (BAD(lo) || BAD(hi)) {
        return NULL;
    }
    PyObject *tile = PyTuple_GET_ITEM(place, 3);
    Py_ssize_t n = PyTuple_GET_SIZE(tile);
    PyObject *key = PyTuple_New(n + 1);
    if (key == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTuple_SET_ITEM(key, i, Py_NewRef(PyTuple_GET_ITEM(tile, i)));
    }
    PyTuple_SET_ITEM(key, n, Py_NewRef(what));
    PyObject *value = get(d->cache, &d->c, PyTuple_GET_ITEM(place, 0), lo, hi, key, make, arg, held);
    Py_DECREF(key);
    return value;
}

static PyObject *derived_call(Derived *d, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 3 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "derived(slot, what, make)");
        return NULL;
    }
    return derive(d, args[0], args[1], args[2], NULL, NULL);
}

/* dtypes seen not to be float16 (numpy's dtypes of the builtin types are one object each): an
   identity test instead of numpy's comparison for them */
static PyObject *other_types[8];

static int other_type(PyObject *dtype) {
    for (int i = 0; i < 8 && other_types[i] != NULL; i++) {
        if (other_types[i] == dtype) {
            return 1;
        }
    }
    return 0;
}

static void not_half(PyObject *dtype) {
    for (int i = 0; i < 8; i++) {
        if (other_types[i] == dtype) {
            return;
        }
        if (other_types[i] == NULL) {
            other_types[i] = Py_NewRef(dtype);
            return;
        }
    }
}

/* derived.upcast(ins, keep): functional._upcast(ins, derived, keep), each fp16 view's
   fp32 copy made by to_f32(view) */
static PyObject *derived_upcast(Derived *d, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "upcast(ins dict, keep)");
        return NULL;
    }
    PyObject *out = PyDict_New(), *slot, *view;
    Py_ssize_t pos = 0;
    int held = 0; /* (the cache's lock, taken at the first look-up, kept over the rest) */
    if (out == NULL) {
        return NULL;
    }
    while (PyDict_Next(args[0], &pos, &slot, &view)) {
        PyObject *dtype = PyObject_GetAttr(view, s_dtype), *value;
        if (dtype == NULL) {
            goto fail;
        }
        int half = dtype == d->f16 ? 1 : other_type(dtype) ? 0 : PyObject_RichCompareBool(dtype, d->f16, Py_EQ);
        if (half == 0) {
            not_half(dtype);
        }
        Py_DECREF(dtype);
        if (half > 0) {
            int kept = PySequence_Contains(args[1], slot);
            if (kept < 0) {
                goto fail;
            }
            half = !kept;
        }
        if (half < 0 || (half && !held && (held = lock_call(d->c.lock, s_acquire) == 0) == 0)) {
            goto fail;
        }
        value = half ? derive(d, slot, s_f32_what, d->to_f32, view, &held) : Py_NewRef(view);
        if (value == NULL || PyDict_SetItem(out, slot, value) < 0) {
            Py_XDECREF(value);
            goto fail;
        }
        Py_DECREF(value);
    }
    if (held && unlock(&d->c, 0) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
fail:
    if (held) {
        unlock(&d->c, -1);
    }
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef derived_methods[] = {
    {"upcast", (PyCFunction)(void (*)(void))derived_upcast, METH_FASTCALL,
     "upcast(ins, keep) -> functional._upcast(ins, self, keep): the inputs by slot, each float16 one but "
     "those in keep as its float32 copy (this derived's (\"f32\",), made by to_f32)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DerivedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stc_mlir.emulator._values.Derived",
    .tp_basicsize = sizeof(Derived),
    .tp_dealloc = (destructor)derived_dealloc,
    .tp_vectorcall_offset = offsetof(Derived, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "derived(slot, what, make): TileCache.get for a command's tile in slot",
    .tp_methods = derived_methods,
};

/* a Derived of `cache` for `places` (to_f32 and the float16 dtype: what `upcast` uses): a
   new reference */
static PyObject *derived_new(PyObject *cache, PyObject *places, PyObject *to_f32, PyObject *f16) {
    Derived *d = PyObject_New(Derived, &DerivedType);
    if (d == NULL) {
        return NULL;
    }
    d->vectorcall = (vectorcallfunc)derived_call;
    d->cache = Py_NewRef(cache);
    d->places = Py_NewRef(places);
    d->to_f32 = Py_NewRef(to_f32);
    d->f16 = Py_NewRef(f16);
    if (cache_open(cache, &d->c) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return (PyObject *)d;
}

/* n runs of `run` bytes, `ds` and `ss` apart (a run of an element's size: copied inline) */
static void copy_line(char *d, const char *s, Py_ssize_t n, Py_ssize_t ds, Py_ssize_t ss, Py_ssize_t run) {
#define LINE(size) for (Py_ssize_t k = 0; k < n; k++) memcpy(d + k * ds, s + k * ss, size)
    switch (run) {
    case 2: LINE(2); break;
    case 4: LINE(4); break;
    case 8: LINE(8); break;
    default: LINE((size_t)run);
    }
#undef LINE
}

/* the runs of `dims` (count, dst stride, src stride; outer first) from `s` to `d` */
static void copy_runs(char *d, const char *s, Py_ssize_t ndims, Py_ssize_t i, const Py_ssize_t *n,
                      const Py_ssize_t *ds, const Py_ssize_t *ss, Py_ssize_t run) {
    if (i == ndims) {
        memcpy(d, s, (size_t)run);
    } else if (i == ndims - 1) {
        copy_line(d, s, n[i], ds[i], ss[i], run);
    } else {
        for (Py_ssize_t k = 0; k < n[i]; k++) {
            copy_runs(d + k * ds[i], s + k * ss[i], ndims, i + 1, n, ds, ss, run);
        }
    }
}

#define MAX_DIMS 32

/* a strided DMA (task.strided: (dst Memory, dst first byte, src Memory, src first byte, run
   bytes, dims, dst hull, src hull)): its runs copied, hulls checked against the bytes */
static int strided(PyObject *plan) {
    if (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 8 || !PyTuple_Check(PyTuple_GET_ITEM(plan, 5))
        || PyTuple_GET_SIZE(PyTuple_GET_ITEM(plan, 5)) > MAX_DIMS) {
        PyErr_SetString(PyExc_TypeError, "a task's strided: (Memory, at, Memory, at, run, dims, hull, hull)");
        return -1;
    }
    PyObject *dims = PyTuple_GET_ITEM(plan, 5), *hulls[2] = {PyTuple_GET_ITEM(plan, 6), PyTuple_GET_ITEM(plan, 7)};
    Py_ssize_t n[MAX_DIMS], ds[MAX_DIMS], ss[MAX_DIMS], at = item(plan, 1), from = item(plan, 3), run = item(plan, 4);
    if (BAD(at) || BAD(from) || BAD(run)) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(dims); i++) {
        PyObject *dim = PyTuple_GET_ITEM(dims, i);
        if (!PyTuple_Check(dim) || PyTuple_GET_SIZE(dim) != 3 || BAD(n[i] = item(dim, 0)) || BAD(ds[i] = item(dim, 1))
            || BAD(ss[i] = item(dim, 2))) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "a strided dimension: (count, dst stride, src stride)");
            }
            return -1;
        }
    }
    PyObject *dst = PyObject_GetAttr(PyTuple_GET_ITEM(plan, 0), s_data);
    PyObject *src = dst == NULL ? NULL : PyObject_GetAttr(PyTuple_GET_ITEM(plan, 2), s_data);
    Py_buffer d, s;
    int r = -1;
    if (src != NULL && bytes_of(dst, &d) == 0) {
        if (PyObject_GetBuffer(src, &s, PyBUF_C_CONTIGUOUS) == 0) {
            Py_ssize_t lens[2] = {d.len, s.len}, lo, hi;
            r = 0;
            for (int k = 0; k < 2 && r == 0; k++) {
                if (!PyTuple_Check(hulls[k]) || PyTuple_GET_SIZE(hulls[k]) != 2 || BAD(lo = item(hulls[k], 0))
                    || BAD(hi = item(hulls[k], 1)) || lo < 0 || hi > lens[k]) {
                    if (!PyErr_Occurred()) {
                        PyErr_SetString(PyExc_IndexError, "a strided copy out of its memories' bytes");
                    }
                    r = -1;
                }
            }
            if (r == 0) {
                copy_runs((char *)d.buf + at, (const char *)s.buf + from, PyTuple_GET_SIZE(dims), 0, n, ds, ss, run);
            }
            PyBuffer_Release(&s);
        }
        PyBuffer_Release(&d);
    }
    Py_XDECREF(dst);
    Py_XDECREF(src);
    return r;
}

/* the values of one computed command (state: (cache, execute, fail, to_f32, float16 dtype)): task.views = (ins,
   outs, places, spans); execute(task.cmd, ins, outs, derived) (task.strided's runs copied
   instead, if set), fail(task, error) for an IndexError it raises, then TileCache.written
   for each span (memory, lo, hi), under one hold of the lock */
static PyObject *compute_call(PyObject *state, PyObject *task) {
    PyObject *cache = PyTuple_GET_ITEM(state, 0);
    PyObject *views = PyObject_GetAttr(task, s_views), *cmd = NULL, *derived = NULL, *r = NULL;
    if (views == NULL) {
        return NULL;
    }
    if (!PyTuple_Check(views) || PyTuple_GET_SIZE(views) != 4 || !PyDict_Check(PyTuple_GET_ITEM(views, 2))
        || !PyTuple_Check(PyTuple_GET_ITEM(views, 3))) {
        PyErr_SetString(PyExc_TypeError, "a task's views: (ins, outs, places dict, spans tuple)");
        goto out;
    }
    if ((cmd = PyObject_GetAttr(task, s_cmd)) == NULL
        || (derived = derived_new(cache, PyTuple_GET_ITEM(views, 2), PyTuple_GET_ITEM(state, 3),
                                  PyTuple_GET_ITEM(state, 4))) == NULL) {
        goto out;
    }
    PyObject *plan = PyObject_GetAttr(task, s_strided);
    if (plan == NULL) {
        goto out;
    }
    if (plan != Py_None) {
        int copied = strided(plan);
        Py_DECREF(plan);
        r = copied < 0 ? NULL : Py_NewRef(Py_None);
    } else {
        Py_DECREF(plan);
        PyObject *call[4] = {cmd, PyTuple_GET_ITEM(views, 0), PyTuple_GET_ITEM(views, 1), derived};
        r = PyObject_Vectorcall(PyTuple_GET_ITEM(state, 1), call, 4, NULL);
    }
    if (r == NULL) {
        if (PyErr_ExceptionMatches(PyExc_IndexError)) {
            PyObject *type, *err, *tb;
            PyErr_Fetch(&type, &err, &tb);
            PyErr_NormalizeException(&type, &err, &tb);
            if (tb != NULL) {
                PyException_SetTraceback(err, tb);
            }
            r = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(state, 2), task, err, NULL);
            Py_XDECREF(type);
            Py_XDECREF(err);
            Py_XDECREF(tb);
            if (r != NULL) {
                Py_CLEAR(r);
                PyErr_SetString(PyExc_SystemError, "fail(task, error) returned");
            }
        }
        goto out;
    }
    Py_CLEAR(r);
    PyObject *spans = PyTuple_GET_ITEM(views, 3);
    Cache *c = &((Derived *)derived)->c;
    int ok = -1;
    if (lock_call(c->lock, s_acquire) == 0) {
        ok = 0; /* (after the command: its inputs may be its outputs, in place) */
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(spans) && ok == 0; i++) {
            PyObject *span = PyTuple_GET_ITEM(spans, i);
            Py_ssize_t lo, hi;
            if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 3) {
                PyErr_SetString(PyExc_TypeError, "a span: (memory, lo, hi)");
                ok = -1;
            } else if (BAD(lo = item(span, 1)) || BAD(hi = item(span, 2))
                       || written(cache, c, PyTuple_GET_ITEM(span, 0), lo, hi) < 0) {
                ok = -1;
            }
        }
        ok = unlock(c, ok);
    }
    if (ok == 0) {
        r = Py_NewRef(Py_None);
    }
out:
    Py_XDECREF(derived);
    Py_XDECREF(cmd);
    Py_DECREF(views);
    return r;
}

static PyMethodDef compute_def = {"compute", (PyCFunction)compute_call, METH_O,
                                  "compute(task): the values of a computed command (see _values.computer)"};

/* computer(cache, execute, fail, to_f32, float16 dtype) -> a callable of one task */
static PyObject *py_computer(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "computer(cache, execute, fail, to_f32, float16 dtype)");
        return NULL;
    }
    PyObject *state = PyTuple_Pack(5, args[0], args[1], args[2], args[3], args[4]);
    if (state == NULL) {
        return NULL;
    }
    PyObject *f = PyCFunction_New(&compute_def, state);
    Py_DECREF(state);
    return f;
}

/* Values.completed(timeline): wait (Values._wait) for the values of the commands whose
   slices (core, unit, index, ...) the timeline got since the last call */
static int completed(PyObject *values, PyObject *timeline) {
    PyObject *pending = PyObject_GetAttr(values, s_pending), *seen = NULL;
    if (pending == NULL) {
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(timeline), i = 0;
    if (!PyDict_Check(pending)) {
        PyErr_SetString(PyExc_TypeError, "Values.pending is not a dict");
        goto fail;
    }
    if (PyDict_GET_SIZE(pending) > 0) {
        if ((seen = PyObject_GetAttr(values, s_seen)) == NULL || BAD(i = PyLong_AsSsize_t(seen))) {
            goto fail;
        }
        for (; i < n; i++) {
            PyObject *slice = PyList_GET_ITEM(timeline, i);
            if (!PyTuple_Check(slice) || PyTuple_GET_SIZE(slice) < 3) {
                PyErr_SetString(PyExc_TypeError, "a timeline slice is not (core, unit, index, ...)");
                goto fail;
            }
            PyObject *key = PyTuple_Pack(2, PyTuple_GET_ITEM(slice, 0), PyTuple_GET_ITEM(slice, 2)), *job;
            if (key == NULL) {
                goto fail;
            }
            job = PyDict_GetItemWithError(pending, key); /* (pending.pop(key, None)) */
            Py_XINCREF(job);
            if (job != NULL && PyDict_DelItem(pending, key) < 0) {
                Py_CLEAR(job);
            }
            Py_DECREF(key);
            if (PyErr_Occurred()) {
                Py_XDECREF(job);
                goto fail;
            }
            if (job != NULL) {
                PyObject *r = PyObject_CallMethodOneArg(values, s_wait, job);
                Py_DECREF(job);
                if (r == NULL) {
                    goto fail;
                }
                Py_DECREF(r);
            }
        }
    }
    Py_XDECREF(seen);
    Py_DECREF(pending);
    PyObject *at = PyLong_FromSsize_t(n);
    int r = at == NULL ? -1 : PyObject_SetAttr(values, s_seen, at);
    Py_XDECREF(at);
    return r;
fail:
    Py_XDECREF(seen);
    Py_DECREF(pending);
    return -1;
}

/* the hook's call: with `values` (helper threads), the values of the commands completed
   since the last start first (`Values.completed`); then task.copy None -> compute(task), or
   offload(task) with `values` for host work (task.hand) of offload_macs or more; else (dst
   Memory, lo, hi, dst key, src Memory, src lo, src key): the copy */
static PyObject *hook_call(PyObject *state, PyObject *task) {
    PyObject *cache = PyTuple_GET_ITEM(state, 0), *values = PyTuple_GET_ITEM(state, 2),
             *timeline = PyTuple_GET_ITEM(state, 3);
    if (!PyList_Check(timeline)) {
        PyErr_SetString(PyExc_TypeError, "the timeline is not a list");
        return NULL;
    }
    if (values != Py_None && completed(values, timeline) < 0) {
        return NULL;
    }
    PyObject *copy = PyObject_GetAttr(task, s_copy);
    if (copy == NULL) {
        return NULL;
    }
    if (copy == Py_None) { /* (with values, host work of offload_macs or more: offload(task)) */
        Py_DECREF(copy);
        PyObject *to = PyTuple_GET_ITEM(state, 1);
        if (values != Py_None) {
            Py_ssize_t work, least = PyLong_AsSsize_t(PyTuple_GET_ITEM(state, 5));
            if (BAD(least) || int_attr(task, s_hand, &work) < 0) {
                return NULL;
            }
            if (work >= least) {
                to = PyTuple_GET_ITEM(state, 4);
            }
        }
        return PyObject_CallOneArg(to, task);
    }
    if (!PyTuple_Check(copy) || PyTuple_GET_SIZE(copy) != 7) {
        Py_DECREF(copy);
        PyErr_SetString(PyExc_TypeError, "a task's copy: (memory, lo, hi, key, memory, lo, key)");
        return NULL;
    }
    PyObject *dst = PyObject_GetAttr(PyTuple_GET_ITEM(copy, 0), s_data);
    PyObject *src = dst == NULL ? NULL : PyObject_GetAttr(PyTuple_GET_ITEM(copy, 4), s_data);
    Py_ssize_t lo = item(copy, 1), hi = item(copy, 2), src_lo = item(copy, 5);
    int r = -1;
    Cache c = {NULL, NULL, NULL, NULL};
    if (src != NULL && !BAD(lo) && !BAD(hi) && !BAD(src_lo) && cache_open(cache, &c) == 0) {
        if (lock_call(c.lock, s_acquire) == 0) {
            r = unlock(&c, dense(cache, &c, dst, lo, hi, PyTuple_GET_ITEM(copy, 3), src, src_lo,
                                 PyTuple_GET_ITEM(copy, 6)));
        }
    }
    cache_close(&c);
    Py_XDECREF(dst);
    Py_XDECREF(src);
    Py_DECREF(copy);
    return r < 0 ? NULL : Py_NewRef(Py_None);
}

static PyMethodDef hook_def = {"hook", (PyCFunction)hook_call, METH_O, "the values hook of a run (see _values.hook)"};

/* hook(cache, compute, values, timeline, offload, offload_macs) -> a callable of one task */
static PyObject *py_hook(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyLong_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "hook(cache, compute, values, timeline, offload, offload_macs int)");
        return NULL;
    }
    PyObject *state = PyTuple_New(6);
    if (state == NULL) {
        return NULL;
    }
    for (int i = 0; i < 6; i++) {
        PyTuple_SET_ITEM(state, i, Py_NewRef(args[i]));
    }
    PyObject *f = PyCFunction_New(&hook_def, state);
    Py_DECREF(state);
    return f;
}

/* kernels.erf and the exact kernels.gelu (Abramowitz & Stegun 7.1.26 in float64) in two
   passes around numpy's exp, each step the float operation of the numpy kernel's step with
   its operands in the same order (IEEE float64 and float32 operations, no contraction into
   FMAs: the same bits). `erf_start` fills e with -(a a) (numpy's exp makes it exp(-a a)),
   `erf_finish` computes the rest (the polynomial again: cheaper than a third array). A
   NaN or infinity in x (a NaN's sign bit depends on numpy's operand order, an infinity in
   gelu makes one) is left to numpy: erf_start then says False. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static int float_buffer(PyObject *obj, Py_buffer *v, char format, Py_ssize_t itemsize, int writable) {
    if (PyObject_GetBuffer(obj, v, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        return -1;
    }
    const char *f = v->format == NULL ? "B" : v->format;
    if (f[0] == '<' || f[0] == '=' || f[0] == '@') {
        f++;
    }
    if (f[0] != format || f[1] != '\0' || v->itemsize != itemsize) {
        PyBuffer_Release(v);
        PyErr_SetString(PyExc_TypeError, "erf_start/erf_finish: float32 x and out, float64 e, C-contiguous");
        return -1;
    }
    return 0;
}

/* the argument of the erf: x itself, or x / sqrt 2 rounded to float32 (gelu's `x / math.sqrt(2.0)`:
   numpy 2 divides by the float32 nearest sqrt 2) */
static inline float erf_arg(float x, int gelu) {
    return gelu ? x / (float)1.4142135623730951 : x;
}

static inline double erf_poly(double a) {
    double t = 0.3275911 * a;
    t = 1.0 + t;
    t = 1.0 / t;
    double poly = t * 1.061405429;
    poly = -1.453152027 + poly;
    poly = t * poly;
    poly = 1.421413741 + poly;
    poly = t * poly;
    poly = -0.284496736 + poly;
    poly = t * poly;
    poly = 0.254829592 + poly;
    return t * poly;
}

/* The loops, compiled for AVX-512 and AVX2 too where GCC can dispatch at load time
   (`target_clones`): the same IEEE operations four or eight at a time (no FMAs: contraction
   is off, and the objdump of the build has none; the same bits). On BERT-base's gelu tiles
   (64 x 3072) a whole `functional._erf` takes 0.26 ms, 0.64 with the scalar loops. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define ERF_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ERF_CLONES
#endif

/* e = -(a a) of x's n elements; whether all are finite */
ERF_CLONES static int erf_start_loop(const float *restrict x, double *restrict e, Py_ssize_t n, int gelu) {
    int finite = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        float xi = x[i];
        finite &= xi - xi == 0.0f;
        double a = fabs((double)erf_arg(xi, gelu));
        a = a * a;
        e[i] = -a;
    }
    return finite;
}

/* out = erf(x) or gelu(x) from e = exp(-a a) (inlined per `gelu`, a constant at each call) */
ERF_CLONES static void erf_finish_loop(const float *restrict x, const double *restrict e, float *restrict out,
                                       Py_ssize_t n, int gelu) {
    for (Py_ssize_t i = 0; i < n; i++) {
        float xi = x[i], h = erf_arg(xi, gelu);
        double sign = h > 0.0f ? 1.0 : h < 0.0f ? -1.0 : 0.0; /* (np.sign; no NaN here) */
        double r = erf_poly(fabs((double)h)) * e[i];
        r = 1.0 - r;
        r = sign * r;
        float f = (float)r;
        if (gelu) { /* 0.5 x (1 + erf): float32 steps */
            f = 1.0f + f;
            f = (0.5f * xi) * f;
        }
        out[i] = f;
    }
}

static int erf_operands(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, Py_buffer *v, int *gelu) {
    if (nargs != want) {
        PyErr_SetString(PyExc_TypeError, "erf_start(x, e, gelu) / erf_finish(x, e, out, gelu)");
        return -1;
    }
    if ((*gelu = PyObject_IsTrue(args[want - 1])) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < want - 1; i++) {
        if (float_buffer(args[i], &v[i], i == 1 ? 'd' : 'f', i == 1 ? 8 : 4, i > 0) < 0) {
            while (i-- > 0) {
                PyBuffer_Release(&v[i]);
            }
            return -1;
        }
        if (v[i].len / v[i].itemsize != v[0].len / 4) {
            PyErr_SetString(PyExc_ValueError, "erf_start/erf_finish: operands of different sizes");
            for (; i >= 0; i--) {
                PyBuffer_Release(&v[i]);
            }
            return -1;
        }
    }
    return 0;
}

/* erf_start(x, e, gelu) -> bool: e = -(a a), a = |erf's argument| in float64; False (e partly
   written) for a NaN or an infinity in x */
static PyObject *py_erf_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer v[2];
    int gelu, finite;
    if (erf_operands(args, nargs, 3, v, &gelu) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    finite = erf_start_loop(v[0].buf, v[1].buf, v[0].len / 4, gelu);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&v[0]);
    PyBuffer_Release(&v[1]);
    return PyBool_FromLong(finite);
}

/* erf_finish(x, e, out, gelu): with e = exp(-a a) (erf_start's e through np.exp), out = erf(x)
   (kernels.erf) or gelu(x) (kernels.gelu, exact), in float32 */
static PyObject *py_erf_finish(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer v[3];
    int gelu;
    if (erf_operands(args, nargs, 4, v, &gelu) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (gelu) {
        erf_finish_loop(v[0].buf, v[1].buf, v[2].buf, v[0].len / 4, 1);
    } else {
        erf_finish_loop(v[0].buf, v[1].buf, v[2].buf, v[0].len / 4, 0);
    }
    Py_END_ALLOW_THREADS
    for (int i = 0; i < 3; i++) {
        PyBuffer_Release(&v[i]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"written", (PyCFunction)(void (*)(void))py_written, METH_FASTCALL,
     "written(cache, memory, lo, hi): TileCache.written."},
    {"copied", (PyCFunction)(void (*)(void))py_copied, METH_FASTCALL,
     "copied(cache, memory, lo, hi, source, source_lo): TileCache.copied."},
    {"origin", (PyCFunction)(void (*)(void))py_origin, METH_FASTCALL,
     "origin(cache, memory, lo, hi) -> (memory, lo): TileCache.origin (lock held by the caller)."},
    {"copy", (PyCFunction)(void (*)(void))py_copy, METH_FASTCALL,
     "copy(cache, dst, lo, hi, dst_key, src, src_lo, src_key): the bytes [lo, hi) of uint8 array dst "
     "copied from src at src_lo, then TileCache.written and TileCache.copied for them."},
    {"get", (PyCFunction)(void (*)(void))py_get, METH_FASTCALL,
     "get(cache, memory, lo, hi, key, make) -> TileCache.get(memory, lo, hi, key, make): the look-up, "
     "make() outside the cache's lock, what is kept and dropped, all as the Python method does."},
    {"computer", (PyCFunction)(void (*)(void))py_computer, METH_FASTCALL,
     "computer(cache, execute, fail, to_f32, float16 dtype) -> f: f(task) computes a command that is not "
     "a dense copy: with (ins, outs, places, spans) = task.views, execute(task.cmd, ins, outs, derived) "
     "(or, task.strided set, the bytes of its runs copied) "
     "where derived(slot, what, make) is get(cache, *places[slot][:3], (*places[slot][3], what), make) "
     "(and derived.upcast(ins, keep) functional._upcast's, with to_f32), fail(task, error) "
     "for an IndexError it raises (which must raise), then TileCache.written for each span (memory, "
     "lo, hi) under one hold of the cache's lock."},
    {"hook", (PyCFunction)(void (*)(void))py_hook, METH_FASTCALL,
     "hook(cache, compute, values, timeline, offload, offload_macs) -> f: f(task) does "
     "values.completed(timeline) if values is not None, then a dense DMA's copy (task.copy: (dst Memory, "
     "lo, hi, dst key, src Memory, src lo, src key)) as TileCache.copy does, or for any other task "
     "offload(task) if values is not None and task.hand >= offload_macs, else compute(task)."},
    {"erf_start", (PyCFunction)(void (*)(void))py_erf_start, METH_FASTCALL,
     "erf_start(x, e, gelu) -> bool: float64 e = -(a a) for a = |x| (gelu: |x / sqrt 2| in float32), "
     "kernels.erf's steps; False for a NaN or infinity in float32 x (numpy's business)."},
    {"erf_finish", (PyCFunction)(void (*)(void))py_erf_finish, METH_FASTCALL,
     "erf_finish(x, e, out, gelu): with e = np.exp of erf_start's, float32 out = kernels.erf(x) "
     "(gelu: kernels.gelu(x)), the same bits."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_values",
    "The derived-value cache's bookkeeping and dense copies in C (see stc_mlir/emulator/tile_cache.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__values(void) {
#define NAME(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    NAME(s_memories, "memories");
    NAME(s_aliases, "aliases");
    NAME(s_sources, "sources");
    NAME(s_dropped, "dropped");
    NAME(s_nbytes, "nbytes");
    NAME(s_lock, "lock");
    NAME(s_acquire, "acquire");
    NAME(s_release, "release");
    NAME(s_copy, "copy");
    NAME(s_pending, "pending");
    NAME(s_seen, "seen");
    NAME(s_wait, "_wait");
    NAME(s_data, "data");
    NAME(s_budget, "budget");
    NAME(s_per_memory, "per_memory");
    NAME(s_flags, "flags");
    NAME(s_writeable, "writeable");
    NAME(s_views, "views");
    NAME(s_cmd, "cmd");
    NAME(s_dtype, "dtype");
    NAME(s_hand, "hand");
    NAME(s_strided, "strided");
    if ((s_f32_what = Py_BuildValue("(s)", "f32")) == NULL) {
        return NULL;
    }
#undef NAME
    if (PyType_Ready(&DerivedType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", 7) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
