/* fp16 <-> fp32 conversion of contiguous buffers with the x86 F16C instructions.

   An optional accelerator for stc_mlir/emulator/halves.py, which falls back to numpy's
   casts when this module is missing (not built, not x86, no F16C). The results are the
   bits numpy's casts give (numpy 2.x npy_halfbits_to_floatbits / npy_floatbits_to_halfbits):
   round to nearest even, subnormals exact, overflow to signed infinity; NaN lanes, which
   F16C would quiet, are redone the way numpy does them (payload shifted, kept a NaN).
   Only the hardware rounding mode "nearest even" is used (the immediate, not MXCSR). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define HAVE_F16C_PATH 1
#include <immintrin.h>
#else
#define HAVE_F16C_PATH 0
#endif

/* numpy's npy_halfbits_to_floatbits for a NaN half */
static uint32_t nan_half_to_float(uint16_t h) {
    return (((uint32_t)h & 0x8000u) << 16) + 0x7f800000u + (((uint32_t)(h & 0x03ffu)) << 13);
}

/* numpy's npy_floatbits_to_halfbits for a NaN float */
static uint16_t nan_float_to_half(uint32_t f) {
    uint16_t sign = (uint16_t)((f & 0x80000000u) >> 16);
    uint16_t ret = (uint16_t)(0x7c00u + ((f & 0x007fffffu) >> 13));
    if (ret == 0x7c00u) {
        ret++;
    }
    return (uint16_t)(sign + ret);
}

#if HAVE_F16C_PATH

#define F16C __attribute__((target("avx,f16c")))

/* 8 halves -> 8 floats */
F16C static inline void block_to_f32(const void *src, void *dst) {
    const uint16_t *s = (const uint16_t *)src;
    float *d = (float *)dst;
    __m128i h = _mm_loadu_si128((const __m128i *)s);
    _mm256_storeu_ps(d, _mm256_cvtph_ps(h));
    __m128i nan = _mm_cmpgt_epi16(_mm_and_si128(h, _mm_set1_epi16(0x7fff)), _mm_set1_epi16(0x7c00));
    if (_mm_movemask_epi8(nan)) {
        for (int k = 0; k < 8; k++) {
            if ((s[k] & 0x7fffu) > 0x7c00u) {
                uint32_t bits = nan_half_to_float(s[k]);
                memcpy(d + k, &bits, 4);
            }
        }
    }
}

/* 8 floats -> 8 halves, rounded to nearest even */
F16C static inline void block_to_f16(const void *src, void *dst) {
    const float *s = (const float *)src;
    uint16_t *d = (uint16_t *)dst;
    __m256 x = _mm256_loadu_ps(s);
    _mm_storeu_si128((__m128i *)d, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    int nan = _mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    for (int k = 0; nan && k < 8; k++) {
        if (nan & (1 << k)) {
            uint32_t bits;
            memcpy(&bits, s + k, 4);
            d[k] = nan_float_to_half(bits);
        }
    }
}

/* n elements in blocks of 8; the last partial block through zero-filled scratch */
F16C static inline __attribute__((always_inline)) void blocks(
        void (*block)(const void *, void *), const char *src, char *dst, Py_ssize_t n,
        size_t in_size, size_t out_size) {
    Py_ssize_t full = n / 8 * 8;
    for (Py_ssize_t i = 0; i < full; i += 8) {
        block(src + i * in_size, dst + i * out_size);
    }
    if (n > full) {
        char in[32] = {0}, out[32];
        memcpy(in, src + full * in_size, (size_t)(n - full) * in_size);
        block(in, out);
        memcpy(dst + full * out_size, out, (size_t)(n - full) * out_size);
    }
}

F16C static void halves_to_floats(const uint16_t *src, float *dst, Py_ssize_t n) {
    blocks(block_to_f32, (const char *)src, (char *)dst, n, 2, 4);
}

/* halves_to_floats of a run among others: its last n % 8 elements one by one (the same
   bits: F16C, numpy's NaNs) rather than through scratch */
F16C static void run_to_floats(const uint16_t *src, float *dst, Py_ssize_t n) {
    Py_ssize_t full = n / 8 * 8;
    for (Py_ssize_t i = 0; i < full; i += 8) {
        block_to_f32(src + i, dst + i);
    }
    for (Py_ssize_t i = full; i < n; i++) {
        if ((src[i] & 0x7fffu) > 0x7c00u) {
            uint32_t bits = nan_half_to_float(src[i]);
            memcpy(dst + i, &bits, 4);
        } else {
            dst[i] = _cvtsh_ss(src[i]);
        }
    }
}

F16C static void floats_to_halves(const float *src, uint16_t *dst, Py_ssize_t n) {
    blocks(block_to_f16, (const char *)src, (char *)dst, n, 4, 2);
}

/* The matrix unit's epilogue and the store in one pass, in chunks of CHUNK elements:
   out = fp16(act((acc + bias[channel]) + residual)), the same float operations in the same
   order as numpy's `acc += bias; acc += residual; np.maximum(acc, 0) or np.clip(acc, 0, 6)`,
   with numpy's zero signs (np.maximum(-0., 0.) is +0., np.clip(-0., 0., 6.) is -0.). A NaN
   before the activation stops it (returns 0): the caller then takes numpy's path, whose NaN
   payloads this does not promise to follow. */
#define CHUNK 512

/* Where the elements of a tile are: element e (in C order of its shape) at
   base + (i / n1) * s0 + (i % n1) * s1 + (e % inner) * itemsize with i = e / inner (bytes);
   runs of `inner` elements are contiguous (a tile of whole planes or rows in a larger one). */
typedef struct {
    char *base;
    Py_ssize_t inner, n1, s0, s1, itemsize;
} layout;

static inline void *layout_at(const layout *l, Py_ssize_t e) {
    Py_ssize_t i = e / l->inner;
    return l->base + i / l->n1 * l->s0 + i % l->n1 * l->s1 + e % l->inner * l->itemsize;
}

/* a C-contiguous buffer of n elements */
static layout contiguous(void *buf, Py_ssize_t n, Py_ssize_t itemsize) {
    layout l = {(char *)buf, n > 0 ? n : 1, 1, 0, 0, itemsize};
    return l;
}

/* The end of a chunk v (len elements, acc + bias): + the residual's elements from `at`
   (fp32, or fp16 converted exactly as to_f32 does), the activation, the store into out's
   from `at` (all of them in one contiguous run of both), rounded to fp16 or (an fp32 out)
   as they are; 0 on a NaN. */
F16C static int finish_chunk(float *v, Py_ssize_t len, const layout *res, int act,
                             const layout *out, Py_ssize_t at) {
    if (res) {
        float rs[CHUNK];
        const float *r = (const float *)layout_at(res, at);
        if (res->itemsize == 2) {
            halves_to_floats((const uint16_t *)r, rs, len);
            r = rs;
        }
        for (Py_ssize_t k = 0; k < len; k++) {
            v[k] = v[k] + r[k];
        }
    }
    int nan = 0;
    for (Py_ssize_t k = 0; k < len; k++) {
        nan |= v[k] != v[k];
    }
    if (nan) {
        return 0;
    }
    if (act == 1) {
        for (Py_ssize_t k = 0; k < len; k++) {
            v[k] = v[k] > 0.0f ? v[k] : 0.0f;
        }
    } else if (act == 2) {
        for (Py_ssize_t k = 0; k < len; k++) {
            float x = v[k] < 0.0f ? 0.0f : v[k];
            v[k] = x > 6.0f ? 6.0f : x;
        }
    }
    if (out->itemsize == 2) {
        floats_to_halves(v, (uint16_t *)layout_at(out, at), len);
    } else {  /* an fp32 output (a partial sum): stored as it is */
        memcpy(layout_at(out, at), v, (size_t)len * sizeof(float));
    }
    return 1;
}

/* the elements from `at` a chunk of at most `len` may take: within one contiguous run of
   out and of the residual */
static inline Py_ssize_t in_runs(Py_ssize_t len, Py_ssize_t at, const layout *out, const layout *res) {
    Py_ssize_t run = out->inner - at % out->inner;
    if (res && res->inner - at % res->inner < run) {
        run = res->inner - at % res->inner;
    }
    return len < run ? len : run;
}

/* bias one value per channel of acc (..., channels, inner); or, batch > 0, acc (channels,
   batch, inner) stored as out (batch, channels, inner); out's and the residual's elements
   from `first` on (the residual laid out as out) */
F16C static int epilogue_halves(const float *acc, const float *bias, Py_ssize_t channels,
                                Py_ssize_t inner, const layout *res, int act, const layout *out,
                                Py_ssize_t n, Py_ssize_t batch, Py_ssize_t first) {
    float v[CHUNK];
    Py_ssize_t channel = 0, pos = 0;  /* where `start` is: channel plane, place in it */
    Py_ssize_t image = 0;  /* channels first (batch > 0): the plane's image */
    for (Py_ssize_t start = 0; start < n;) {
        Py_ssize_t len = n - start < CHUNK ? n - start : CHUNK;
        if ((bias || batch) && len > inner - pos) {
            len = inner - pos;  /* one bias value (and one output plane) per chunk */
        }
        Py_ssize_t at = first + (batch ? (image * channels + channel) * inner + pos : start);
        len = in_runs(len, at, out, res);
        const float *a = acc + start;
        if (bias) {
            const float b = bias[channel];
            for (Py_ssize_t k = 0; k < len; k++) {
                v[k] = a[k] + b;
            }
        } else {
            memcpy(v, a, (size_t)len * sizeof(float));
        }
        pos += len;
        if (pos == inner) {
            pos = 0;
            if (!batch) {
                channel = channel + 1 == channels ? 0 : channel + 1;
            } else if (++image == batch) {
                image = 0;
                channel++;
            }
        }
        if (!finish_chunk(v, len, res, act, out, at)) {
            return 0;
        }
        start += len;
    }
    return 1;
}

/* The same with the bias one value per column of acc (..., columns) (a matmul's: numpy's
   `acc += bias` of a bias of shape (columns,)), residual and out laid out as acc. */
F16C static int rows_epilogue(const float *acc, const float *bias, Py_ssize_t columns,
                              const layout *res, int act, const layout *out, Py_ssize_t n,
                              Py_ssize_t first) {
    float v[CHUNK];
    for (Py_ssize_t start = 0; start < n;) {
        Py_ssize_t len = in_runs(n - start < CHUNK ? n - start : CHUNK, first + start, out, res);
        const float *a = acc + start;
        if (bias) {
            Py_ssize_t j = start % columns;
            for (Py_ssize_t k = 0; k < len; k++) {
                v[k] = a[k] + bias[j];
                j = j + 1 == columns ? 0 : j + 1;
            }
        } else {
            memcpy(v, a, (size_t)len * sizeof(float));
        }
        if (!finish_chunk(v, len, res, act, out, first + start)) {
            return 0;
        }
        start += len;
    }
    return 1;
}

static int cpu_has_f16c(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
}

#else

static int cpu_has_f16c(void) { return 0; }

#endif

/* whether a buffer's format is the one-letter type `type` (native or little-endian order) */
static int format_is(const Py_buffer *b, char type) {
    const char *f = b->format;
    if (f == NULL) {
        return 0;
    }
    if (f[0] == '@' || f[0] == '=' || f[0] == '<') {
        f++;
    }
    return f[0] == type && f[1] == 0;
}

/* The C-contiguous buffers of an input and a writable output; 0 (an exception set, nothing
   held) if either is not one. */
static int in_and_out(PyObject *in_obj, Py_buffer *in, PyObject *out_obj, Py_buffer *out) {
    if (PyObject_GetBuffer(in_obj, in, PyBUF_C_CONTIGUOUS) < 0) {
        return 0;
    }
    if (PyObject_GetBuffer(out_obj, out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(in);
        return 0;
    }
    return 1;
}

/* The outputs q of a window column whose input column q * sw + first is inside [0, w):
   [*qlo, *qhi). */
static inline void window_span(Py_ssize_t first, Py_ssize_t sw, Py_ssize_t w, Py_ssize_t wo,
                               Py_ssize_t *qlo, Py_ssize_t *qhi) {
    Py_ssize_t lo = 0, hi = wo;
    while (lo < wo && lo * sw + first < 0) {
        lo++;
    }
    while (hi > lo && (hi - 1) * sw + first >= w) {
        hi--;
    }
    *qlo = lo;
    *qhi = hi;
}

/* One output row of windows: dst[q] = plane[r][q * sw + first] for q in [qlo, qhi), +0.0
   elsewhere, all of it for a row r outside the plane (h x w fp32). */
static inline void window_row(float *dst, const float *plane, Py_ssize_t r, Py_ssize_t h, Py_ssize_t w,
                              Py_ssize_t first, Py_ssize_t sw, Py_ssize_t qlo, Py_ssize_t qhi,
                              Py_ssize_t wo) {
    if (r < 0 || r >= h) {
        memset(dst, 0, (size_t)wo * sizeof(float));
        return;
    }
    const float *src = plane + r * w + first;
    for (Py_ssize_t q = 0; q < qlo; q++) {
        dst[q] = 0.0f;
    }
    if (sw == 1) {
        memcpy(dst + qlo, src + qlo, (size_t)(qhi - qlo) * sizeof(float));
    } else {
        for (Py_ssize_t q = qlo; q < qhi; q++) {
            dst[q] = src[q * sw];
        }
    }
    for (Py_ssize_t q = qhi; q < wo; q++) {
        dst[q] = 0.0f;
    }
}

/* A conv's windows: out (c, kh, kw, n, ho, wo) (a depthwise conv's) or, `columns`, (n, c, kh,
   kw, ho, wo) (im2col) from x (n, c, h, w), all fp32 C-contiguous, +0.0 where a window sees
   padding (the copy numpy's slices make into zeros). */
static void conv_windows(const float *x, float *out, int columns, Py_ssize_t n, Py_ssize_t c, Py_ssize_t h,
                              Py_ssize_t w, Py_ssize_t kh, Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw,
                              Py_ssize_t pt, Py_ssize_t pl, Py_ssize_t dh, Py_ssize_t dw,
                              Py_ssize_t ho, Py_ssize_t wo) {
    for (Py_ssize_t ch = 0; ch < c; ch++) {
        for (Py_ssize_t i = 0; i < kh; i++) {
            for (Py_ssize_t j = 0; j < kw; j++) {
                Py_ssize_t first = j * dw - pl, qlo, qhi;
                window_span(first, sw, w, wo, &qlo, &qhi);
                for (Py_ssize_t ni = 0; ni < n; ni++) {
                    for (Py_ssize_t p = 0; p < ho; p++) {
                        float *dst = out + (columns ? (((ni * c + ch) * kh + i) * kw + j) * ho * wo
                                                    : ((((ch * kh + i) * kw + j) * n + ni) * ho) * wo) + p * wo;
                        window_row(dst, x + (ni * c + ch) * h * w, p * sh + i * dh - pt, h, w, first, sw,
                                   qlo, qhi, wo);
                    }
                }
            }
        }
    }
}

#if HAVE_F16C_PATH
/* The im2col columns (n, c, kh, kw, ho, wo) fp32 of fp16 x (n, c, h, w), C-contiguous: each
   (image, channel) plane converted once into `plane` (h * w floats, the bits of to_f32),
   then its windows copied out of it as conv_windows copies them from an fp32 x (the same
   values, zeros in the padding), the output written in order. */
F16C static void conv_columns_halves(const uint16_t *x, float *out, float *plane, Py_ssize_t n,
                                     Py_ssize_t c, Py_ssize_t h, Py_ssize_t w, Py_ssize_t kh,
                                     Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t pt,
                                     Py_ssize_t pl, Py_ssize_t dh, Py_ssize_t dw, Py_ssize_t ho,
                                     Py_ssize_t wo) {
    for (Py_ssize_t nc = 0; nc < n * c; nc++) {
        halves_to_floats(x + nc * h * w, plane, h * w);
        float *dst = out + nc * kh * kw * ho * wo;
        for (Py_ssize_t i = 0; i < kh; i++) {
            for (Py_ssize_t j = 0; j < kw; j++) {
                Py_ssize_t first = j * dw - pl, qlo, qhi;
                window_span(first, sw, w, wo, &qlo, &qhi);
                for (Py_ssize_t p = 0; p < ho; p++, dst += wo) {
                    window_row(dst, plane, p * sh + i * dh - pt, h, w, first, sw, qlo, qhi, wo);
                }
            }
        }
    }
}
#endif

/* windows(x, out, columns, n, c, h, w, kh, kw, sh, sw, pt, pl, dh, dw, ho, wo): see conv_windows;
   columns == 2: x is fp16 (the im2col columns of conv_columns_halves) */
static PyObject *windows(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *x_obj, *out_obj;
    Py_ssize_t d[14];
    int columns;
    if (!PyArg_ParseTuple(args, "OOinnnnnnnnnnnnnn", &x_obj, &out_obj, &columns, d, d + 1, d + 2, d + 3, d + 4,
                          d + 5, d + 6, d + 7, d + 8, d + 9, d + 10, d + 11, d + 12, d + 13)) {
        return NULL;
    }
    for (int k = 0; k < 14; k++) {
        if (d[k] < (k == 8 || k == 9 ? 0 : 1)) {  /* pads may be 0, the rest >= 1 */
            PyErr_Format(PyExc_ValueError, "windows: argument %d is %zd", k + 2, d[k]);
            return NULL;
        }
    }
    Py_ssize_t n = d[0], c = d[1], h = d[2], w = d[3], kh = d[4], kw = d[5], sh = d[6], sw = d[7];
    Py_ssize_t pt = d[8], pl = d[9], dh = d[10], dw = d[11], ho = d[12], wo = d[13];
    if (columns < 0 || columns > 2 || (columns == 2 && !cpu_has_f16c())) {
        PyErr_Format(PyExc_ValueError, "windows: layout %d (0-2; 2 needs F16C)", columns);
        return NULL;
    }
    Py_buffer x, out;
    if (!in_and_out(x_obj, &x, out_obj, &out)) {
        return NULL;
    }
    /* every read is checked against h and w in the loops: only the sizes need checking */
    int ok = x.len == n * c * h * w * (columns == 2 ? 2 : 4) && out.len == c * kh * kw * n * ho * wo * 4;
    float *plane = NULL;
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "windows: buffers of %zd and %zd bytes do not fit the "
                     "shapes given", x.len, out.len);
    } else if (columns == 2 && (plane = PyMem_RawMalloc((size_t)(h * w) * sizeof(float))) == NULL) {
        PyErr_NoMemory();
        ok = 0;
    } else {
        Py_BEGIN_ALLOW_THREADS
        if (columns < 2) {
            conv_windows((const float *)x.buf, (float *)out.buf, columns, n, c, h, w, kh, kw, sh, sw,
                         pt, pl, dh, dw, ho, wo);
        }
#if HAVE_F16C_PATH
        else {
            conv_columns_halves((const uint16_t *)x.buf, (float *)out.buf, plane, n, c, h, w, kh,
                                kw, sh, sw, pt, pl, dh, dw, ho, wo);
        }
#endif
        Py_END_ALLOW_THREADS
        PyMem_RawFree(plane);
    }
    PyBuffer_Release(&x);
    PyBuffer_Release(&out);
    if (!ok) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- a conv's or a matmul's whole command: product, epilogue and store in one call ----

   The product is numpy's np.matmul of float32 operands (numpy 2.x FLOAT_matmul in
   numpy/_core/src/umath/matmul.c.src) for C-contiguous 2-d slices, calling the BLAS numpy
   calls (its sgemm and sgemv, handed over once by `set_blas`) with the same arguments, so
   the same bits: per slice m x n @ n x p, numpy's "noblas" loop for n == 1, sgemv for a
   vector (m == 1 or p == 1), sgemm otherwise; m == p == 1 (numpy's dot) is not mirrored
   (the caller takes numpy's path). Single-threaded BLAS or not is the library's setting,
   numpy's too. The GIL is released for the whole command. */

typedef void (*sgemm_fn)(int order, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                         float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                         float beta, float *c, int64_t ldc);
typedef void (*sgemv_fn)(int order, int trans, int64_t m, int64_t n, float alpha, const float *a,
                         int64_t lda, const float *x, int64_t incx, float beta, float *y,
                         int64_t incy);
static sgemm_fn blas_sgemm = NULL;  /* ILP64 cblas_sgemm / cblas_sgemv of numpy's BLAS */
static sgemv_fn blas_sgemv = NULL;
enum { ROW_MAJOR = 101, COL_MAJOR = 102, NO_TRANS = 111, TRANS = 112 };

/* c (m x p) = a (m x n) @ b (n x p), all C-contiguous, as numpy's FLOAT_matmul does one
   slice (not m == p == 1). Not compiled for FMA: numpy's loop multiplies, then adds. */
static void slice_product(const float *a, const float *b, float *c, Py_ssize_t m, Py_ssize_t n,
                          Py_ssize_t p) {
    if (n == 1) {  /* numpy's noblas loop (its scalar_vec and column @ row cases) */
        for (Py_ssize_t i = 0; i < m; i++) {
            for (Py_ssize_t j = 0; j < p; j++) {
                float sum = 0.0f;
                sum += a[i] * b[j];
                c[i * p + j] = sum;
            }
        }
    } else if (m == 1) {  /* vector @ matrix: gemv of b transposed (numpy's arguments) */
        memset(c, 0, (size_t)p * sizeof(float));
        blas_sgemv(ROW_MAJOR, TRANS, n, p, 1.0f, b, p, a, 1, 0.0f, c, 1);
    } else if (p == 1) {  /* matrix @ vector */
        memset(c, 0, (size_t)m * sizeof(float));
        blas_sgemv(COL_MAJOR, TRANS, n, m, 1.0f, a, n, b, 1, 0.0f, c, 1);
    } else {
        blas_sgemm(ROW_MAJOR, NO_TRANS, NO_TRANS, m, p, n, 1.0f, a, n, b, p, 0.0f, c, p);
    }
}

/* set_blas(sgemm, sgemv): the addresses (ints) of numpy's ILP64 cblas_sgemm and
   cblas_sgemv; 0, 0 forgets them. */
static PyObject *set_blas(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long gemm, gemv;
    if (!PyArg_ParseTuple(args, "KK", &gemm, &gemv)) {
        return NULL;
    }
    blas_sgemm = (sgemm_fn)(uintptr_t)gemm;
    blas_sgemv = (sgemv_fn)(uintptr_t)gemv;
    Py_RETURN_NONE;
}

/* The operands of a command: a, b and bias C-contiguous; out and the residual tiles whose
   elements are in runs (`layout`); all aligned, of the formats wanted. */
typedef struct {
    Py_buffer view[5];  /* a, b, out, bias, residual */
    int held[5];
    layout a, b, out, res;  /* (a: depthwise's x, a and b: a matmul's, fp32 or fp16, in runs) */
} operands;

static void release(operands *ops) {
    for (int i = 0; i < 5; i++) {
        if (ops->held[i]) {
            PyBuffer_Release(&ops->view[i]);
            ops->held[i] = 0;
        }
    }
}

/* The layout of a strided buffer: 0 if its elements are not in runs at two strides at most
   (after merging the dimensions that can be) or not aligned. */
static int strided_layout(const Py_buffer *v, layout *l) {
    Py_ssize_t item = v->itemsize, inner = 1, dims[2] = {1, 1}, strides[2] = {0, 0};
    int d = v->ndim, k = 0;
    while (d > 0 && (v->shape[d - 1] == 1 || v->strides[d - 1] == inner * item)) {
        inner *= v->shape[--d];
    }
    for (int i = 0; i < d; i++) {
        if (v->shape[i] == 1) {
            continue;
        }
        if (v->strides[i] % item) {
            return 0;
        }
        if (k > 0 && strides[k - 1] == v->shape[i] * v->strides[i]) {
            dims[k - 1] *= v->shape[i];
            strides[k - 1] = v->strides[i];
        } else if (k == 2) {
            return 0;
        } else {
            dims[k] = v->shape[i];
            strides[k++] = v->strides[i];
        }
    }
    l->base = (char *)v->buf;
    l->inner = inner > 0 ? inner : 1;
    l->itemsize = item;
    l->n1 = k == 2 ? dims[1] : k == 1 ? dims[0] : 1;
    l->s0 = k == 2 ? strides[0] : 0;
    l->s1 = k == 2 ? strides[1] : k == 1 ? strides[0] : 0;
    return 1;
}

/* the bytes [lo, hi) a layout of n elements spans: its runs i < ceil(n / inner) at
   (i / n1) * s0 + (i % n1) * s1 (strides may be < 0) make a grid, whose extremes are its
   corners' (a last row of fewer runs counted whole) */
static void span(const layout *l, Py_ssize_t n, char **lo, char **hi) {
    Py_ssize_t runs = (n + l->inner - 1) / l->inner;
    Py_ssize_t rows = (runs + l->n1 - 1) / l->n1, cols = runs < l->n1 ? runs : l->n1;
    Py_ssize_t down = rows > 0 ? (rows - 1) * l->s0 : 0, across = cols > 0 ? (cols - 1) * l->s1 : 0;
    *lo = l->base + (down < 0 ? down : 0) + (across < 0 ? across : 0);
    *hi = l->base + (down > 0 ? down : 0) + (across > 0 ? across : 0) + (runs ? l->inner * l->itemsize : 0);
}

static int overlap(const layout *x, Py_ssize_t xn, const layout *y, Py_ssize_t yn) {
    char *xl, *xh, *yl, *yh;
    span(x, xn, &xl, &xh);
    span(y, yn, &yl, &yh);
    return xl < yh && yl < xh;
}

/* Takes a, b (fp32), out (fp16 or fp32, writable), bias (None or fp32), residual (None, fp32 or
   fp16): 1, or 0 (nothing held, no error) when one is not such a buffer, or out overlaps a,
   b or (laid out otherwise) the residual (numpy's path then works on copies). `a_runs` 1: a
   may be fp16 too, and laid out in runs as out may (ops->a); 2: a and b both (ops->a,
   ops->b), and the bias fp16 too. */
static int take(PyObject *const *objs, operands *ops, int a_runs) {
    memset(ops, 0, sizeof(*ops));
    for (int i = 0; i < 5; i++) {
        if (objs[i] == Py_None && i >= 3) {
            continue;
        }
        int runs = i == 2 || i == 4 || (i == 0 && a_runs) || (i == 1 && a_runs == 2);
        int flags = PyBUF_FORMAT | (runs ? PyBUF_STRIDES : PyBUF_C_CONTIGUOUS) | (i == 2 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &ops->view[i], flags) < 0) {
            PyErr_Clear();
            release(ops);
            return 0;
        }
        ops->held[i] = 1;
        Py_buffer *v = &ops->view[i];
        int halves = (runs || (i == 3 && a_runs == 2)) && format_is(v, 'e') && v->itemsize == 2;
        int ok = halves || (format_is(v, 'f') && v->itemsize == 4);
        if (ok && runs) {
            ok = strided_layout(v, i == 2 ? &ops->out : i == 4 ? &ops->res : i == 1 ? &ops->b : &ops->a);
        }
        if (!ok || (uintptr_t)v->buf % (uintptr_t)v->itemsize) {
            release(ops);
            return 0;
        }
    }
    Py_ssize_t n = ops->view[2].len / ops->out.itemsize;
    for (int i = 0; i < 2; i++) {
        Py_ssize_t in_n = ops->view[i].len / ops->view[i].itemsize;
        layout in = i == 0 && a_runs ? ops->a : i == 1 && a_runs == 2 ? ops->b
                    : contiguous(ops->view[i].buf, in_n, 4);
        if (overlap(&ops->out, n, &in, in_n)) {
            release(ops);
            return 0;
        }
    }
    if (ops->held[4] && overlap(&ops->out, n, &ops->res, ops->view[4].len / ops->res.itemsize)
            && memcmp(&ops->out, &ops->res, sizeof(layout))) {
        release(ops);
        return 0;
    }
    return 1;
}

/* the element count of operand i (0 for none) */
static Py_ssize_t count(const operands *ops, int i) {
    return ops->held[i] ? ops->view[i].len / ops->view[i].itemsize : 0;
}

static PyObject *size_error(const char *what, const operands *ops) {
    PyErr_Format(PyExc_ValueError, "%s: operands of %zd, %zd, %zd, %zd and %zd elements do not "
                 "fit the sizes given", what, count(ops, 0), count(ops, 1), count(ops, 2),
                 count(ops, 3), count(ops, 4));
    return NULL;
}

/* A command's arguments: the five operands (`take`, a_runs passed on), an activation 0-2 and
   `n` sizes >= 1 (0 allowed from `zero_from` on), then optionally a `Pool` (or None), set in
   *pool (NULL for none): 1 (the operands held), 0 (declined: an operand not of its kind, no
   BLAS, no F16C; nothing held) or -1 (an error set, nothing held). */
static PyTypeObject PoolType;
static int begin(const char *what, PyObject *const *args, Py_ssize_t nargs, Py_ssize_t n,
                 Py_ssize_t zero_from, int a_runs, int *act, Py_ssize_t *d, operands *ops,
                 PyObject **pool) {
    if (nargs != 6 + n && nargs != 7 + n) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (and a pool), not %zd", what, 6 + n, nargs);
        return -1;
    }
    *pool = nargs == 7 + n && args[6 + n] != Py_None ? args[6 + n] : NULL;
    if (*pool != NULL && !PyObject_TypeCheck(*pool, &PoolType)) {
        PyErr_Format(PyExc_TypeError, "%s: the last argument is not a Pool", what);
        return -1;
    }
    long a = PyLong_AsLong(args[5]);
    if (a == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (a < 0 || a > 2) {
        PyErr_Format(PyExc_ValueError, "%s: activation %ld (0-2)", what, a);
        return -1;
    }
    *act = (int)a;
    for (Py_ssize_t k = 0; k < n; k++) {
        d[k] = PyLong_AsSsize_t(args[6 + k]);
        if (d[k] == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (d[k] < (k >= zero_from ? 0 : 1)) {
            PyErr_Format(PyExc_ValueError, "%s: size %zd is %zd", what, k, d[k]);
            return -1;
        }
    }
    return cpu_has_f16c() && blas_sgemm != NULL && take(args, ops, a_runs);
}

/* what a command returns when `begin` did not give it its operands */
static PyObject *not_begun(int begun) {
    if (begun < 0) {
        return NULL;
    }
    Py_RETURN_FALSE;
}

#if HAVE_F16C_PATH
/* `batch` slices: acc_s = a[s % a_mod] (m x n) @ b[s % b_mod] (n x p), then the epilogue of
   its m * p outputs, out's (and the residual's) elements from s * m * p on (conv: bias per
   row, (s % groups) * m on; matmul: `rows`, bias per column); 0 on a NaN (out partly
   written). */
F16C static int batched(const float *a, const float *b, const float *bias, const layout *res,
                        int act, const layout *out, Py_ssize_t m, Py_ssize_t n, Py_ssize_t p,
                        Py_ssize_t batch, Py_ssize_t a_mod, Py_ssize_t b_mod, Py_ssize_t groups,
                        int rows, float *acc) {
    for (Py_ssize_t s = 0; s < batch; s++) {
        slice_product(a + s % a_mod * m * n, b + s % b_mod * n * p, acc, m, n, p);
        int ok = rows ? rows_epilogue(acc, bias, p, res, act, out, m * p, s * m * p)
                      : epilogue_halves(acc, bias ? bias + s % groups * m : NULL, m, p, res, act, out,
                                        m * p, 0, s * m * p);
        if (!ok) {
            return 0;
        }
    }
    return 1;
}
#endif

/* A command's product once its operands are held (`begin`) and their sizes checked: a
   conv's or matmul's slices (`batched`) or a depthwise conv; `compute` works it out without
   the GIL (and without Python: PyMem_Raw* only), on the caller's thread (`now`) or on a
   pool's (`handed`, a `Job`). */
enum { SLICES, DEPTHWISE, ELEMENTWISE };
typedef struct {
    int kind, act, rows, laid;  /* laid: a, b (and the bias) as `take` with a_runs 2 took them */
    operands ops;
    Py_ssize_t d[14];  /* SLICES: m, n, p, batch, a_mod, b_mod, groups; DEPTHWISE: depthwise's sizes;
                          ELEMENTWISE: op, the element counts of a, b and out, in place */
} product;

static int compute(product *pr);

/* the product worked out here with the GIL released, its operands let go: True, or False
   (the caller's numpy path) for m == p == 1 or a NaN met */
static PyObject *now(product *pr) {
    int done;
    Py_BEGIN_ALLOW_THREADS
    done = compute(pr);
    Py_END_ALLOW_THREADS
    release(&pr->ops);
    return done < 0 ? PyErr_NoMemory() : PyBool_FromLong(done);
}

static PyObject *handed(product *pr, PyObject *pool);

/* `now`, or `handed` to `pool` (not NULL) */
static PyObject *finish(product *pr, PyObject *pool) {
    return pool != NULL ? handed(pr, pool) : now(pr);
}

#if HAVE_F16C_PATH
F16C static void x_elements(const layout *x, Py_ssize_t e, Py_ssize_t count, float *dst);

/* the count elements of x (laid out as `take` took it) as C-contiguous fp32: where they lie,
   or converted into *into (which moves on past them) */
static const float *as_floats(const layout *x, Py_ssize_t count, float **into) {
    if (x->itemsize == 4 && x->inner >= count) {
        return (const float *)x->base;
    }
    float *dst = *into;
    x_elements(x, 0, count, dst);
    *into += count;
    return dst;
}
#endif

/* the slices' products and epilogues: 1, 0 (m == p == 1, a NaN met) or -1 (no memory); laid
   out or fp16 operands are converted first (as to_f32 converts them: the same fp32 values) */
static int slices(product *pr) {
    int done = 0;
#if HAVE_F16C_PATH
    const Py_ssize_t *d = pr->d;
    Py_ssize_t m = d[0], n = d[1], p = d[2], a_n = d[4] * m * n, b_n = d[5] * n * p;
    if (m == 1 && p == 1) {
        return 0;
    }
    operands *ops = &pr->ops;
    Py_ssize_t bias_n = ops->held[3] ? count(ops, 3) : 0, extra = 0;
    int bias_halves = bias_n && ops->view[3].itemsize == 2;
    if (pr->laid) {
        extra = (ops->a.itemsize == 4 && ops->a.inner >= a_n ? 0 : a_n)
                + (ops->b.itemsize == 4 && ops->b.inner >= b_n ? 0 : b_n) + (bias_halves ? bias_n : 0);
    }
    float *acc = PyMem_RawMalloc((size_t)(m * p + extra) * sizeof(float));
    if (acc == NULL) {
        return -1;
    }
    float *into = acc + m * p;
    const float *a = (const float *)ops->view[0].buf, *b = (const float *)ops->view[1].buf;
    const float *bias = bias_n ? (const float *)ops->view[3].buf : NULL;
    if (pr->laid) {
        a = as_floats(&ops->a, a_n, &into);
        b = as_floats(&ops->b, b_n, &into);
        if (bias_halves) {
            run_to_floats((const uint16_t *)ops->view[3].buf, into, bias_n);
            bias = into;
        }
    }
    done = batched(a, b, bias, ops->held[4] ? &ops->res : NULL, pr->act, &ops->out, m, n, p, d[3], d[4],
                   d[5], d[6], pr->rows, acc);
    PyMem_RawFree(acc);
#else
    (void)pr;
#endif
    return done;
}

/* The shared end of conv and matmul: their sizes checked, the slices computed (`finish`). */
static PyObject *run_batched(const char *what, product *pr, PyObject *pool, Py_ssize_t m,
                             Py_ssize_t n, Py_ssize_t p, Py_ssize_t batch, Py_ssize_t a_mod,
                             Py_ssize_t b_mod, Py_ssize_t groups, int rows) {
    operands *ops = &pr->ops;
    Py_ssize_t out_n = batch * m * p;
    if (count(ops, 0) != a_mod * m * n || count(ops, 1) != b_mod * n * p || count(ops, 2) != out_n
            || (ops->held[3] && count(ops, 3) != (rows ? p : groups * m))
            || (ops->held[4] && count(ops, 4) != out_n)) {
        PyObject *err = size_error(what, ops);
        release(ops);
        return err;
    }
    if (m == 1 && p == 1) {  /* (numpy's dot) */
        release(ops);
        Py_RETURN_FALSE;
    }
    pr->kind = SLICES;
    pr->rows = rows;
    Py_ssize_t sizes[7] = {m, n, p, batch, a_mod, b_mod, groups};
    memcpy(pr->d, sizes, sizeof(sizes));
    return finish(pr, pool);
}

/* conv(w, columns, out, bias, residual, act, n, groups, og, k, p[, pool]) -> bool: a conv's
   product np.matmul(w (groups, og, k), columns (n, groups, k, p)), + bias (one per output
   channel), + residual (fp32 or fp16, out's shape), act, into out (n, groups * og, p) fp16 or
   fp32; w, columns and the bias fp32 or fp16 as matmul's operands. False (nothing held): an operand not of that kind, m == p == 1, no BLAS, a NaN (out
   partly written). With a pool: a Job computing it there (its `wait` says True or False),
   or False (declined as above, nothing queued). */
static PyObject *conv(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t d[5];
    product pr;
    PyObject *pool;
    int begun = begin("conv", args, nargs, 5, 5, 2, &pr.act, d, &pr.ops, &pool);
    pr.laid = 1;
    if (begun <= 0) {
        return not_begun(begun);
    }
    Py_ssize_t n = d[0], groups = d[1], og = d[2], k = d[3], p = d[4];
    return run_batched("conv", &pr, pool, og, k, p, n * groups, groups, n * groups, groups, 0);
}

/* matmul(a, b, out, bias, residual, act, batch, a_batch, b_batch, m, k, p[, pool]) -> bool:
   np.matmul(a (a_batch, m, k), b (b_batch, k, p)) with a_batch and b_batch each batch or 1
   (broadcast), + bias (p values), + residual (out's shape), act, into out (batch, m, p) fp16 or
   fp32; a, b and the bias fp32 or fp16 (a and b views in runs as out may be: converted to
   fp32 as to_f32 converts them, inside the product); False, or with a pool a Job, as conv. */
static PyObject *matmul(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    Py_ssize_t d[6];
    product pr;
    PyObject *pool;
    int begun = begin("matmul", args, nargs, 6, 6, 2, &pr.act, d, &pr.ops, &pool);
    pr.laid = 1;
    if (begun <= 0) {
        return not_begun(begun);
    }
    Py_ssize_t batch = d[0], a_batch = d[1], b_batch = d[2], m = d[3], k = d[4], p = d[5];
    if ((a_batch != 1 && a_batch != batch) || (b_batch != 1 && b_batch != batch)) {
        release(&pr.ops);
        PyErr_Format(PyExc_ValueError, "matmul: operand batches %zd and %zd do not broadcast "
                     "to %zd", a_batch, b_batch, batch);
        return NULL;
    }
    return run_batched("matmul", &pr, pool, m, k, p, batch, a_batch, b_batch, 1, 1);
}

/* ---- a depthwise conv's product straight from its input, numpy's sgemv mirrored ----

   Per channel, a depthwise conv's product is np.matmul(w (1 x k), windows (k x p)), which
   numpy hands to its sgemv (`slice_product`, m == 1): OpenBLAS's sgemv_n kernel of p rows
   and k columns, alpha 1, into y = +0 (beta 0). `gemv_rows` does that product with the
   kernel's float operations in its order, lane by lane (kernel/x86_64/sgemv_n_4.c with
   sgemv_n_microk_haswell-4.c and, for SkylakeX, sgemv_n_microk_skylakex-8.c, OpenBLAS
   0.3.2x-0.3.3x), so `depthwise_direct` needs neither the windows array nor a BLAS call per
   channel. Which rows a kernel computes how:
   - SkylakeX, k <= 48, k != 4, p <= 16384 (sgemv_kernel_n_128): every row one FMA chain
     over the k columns from +0, then y + sum.
   - otherwise (Haswell; SkylakeX's other sizes) the last p % 4 rows (the C tail) one chain
     over the k columns from +0: FMAs in SkylakeX's build, each product then its sum (not
     contracted) in Haswell's; the other rows in blocks of 4096, each block's first
     (NB & 4) + (NB & 8) rows ("head") as two FMA chains, of the even and of the odd columns
     of each group of 8 (then 4) columns, added, then added to y; the rest ("body") one FMA
     chain per group, added to y; after the groups of 8 and of 4, a pair of columns and a
     single column: Haswell multiplies, then adds each (SSE), SkylakeX chains them from +0
     with FMAs and adds the sum (sgemv_kernel_n_64).
   The kernels' last step, y (+0) + alpha (1) * sum, is left out: a sum that starts at +0 is
   never -0 (round to nearest), so adding +0 changes no bit. Threads would split the rows
   otherwise: products of k * p >= GEMV_SINGLE (OpenBLAS's single-thread bound with the
   smallest GEMM_MULTITHREAD_THRESHOLD, 1) are left to the BLAS. `halves` checks both
   mirrors against np.matmul at import and sets the one that agrees (`set_gemv`); none:
   the windows and numpy's sgemv as before. */

enum { GEMV_NONE, GEMV_HASWELL, GEMV_SKYLAKEX };
enum { ROWS_CHAIN, ROWS_HEAD, ROWS_BODY, ROWS_TAIL };
#define GEMV_MAX_K 49       /* the widest product mirrored (a 7x7 kernel), as checked at import */
#define GEMV_SINGLE 115200  /* k * p below which OpenBLAS's sgemv runs on one thread */
#define GEMV_LANES 8        /* what gemv_rows may read and write past a run's end */

static int gemv_kind = GEMV_NONE;

/* whether the mirror `kind` takes a product of k columns and p rows (k == 1 is numpy's loop,
   not sgemv; the kernels' tails of fewer than 4 rows, with lda < 4, group columns otherwise) */
static int gemv_takes(int kind, Py_ssize_t k, Py_ssize_t p) {
    return kind != GEMV_NONE && k >= 2 && k <= GEMV_MAX_K && p >= 4 && k * p < GEMV_SINGLE;
}

/* How row i of a product of k columns and p rows is computed; *end: where that run ends. */
static int gemv_row_kind(int kind, Py_ssize_t k, Py_ssize_t p, Py_ssize_t i, Py_ssize_t *end) {
    Py_ssize_t tail = p & -4;
    if ((kind == GEMV_SKYLAKEX && k <= 48 && k != 4 && p <= 16384) || i >= tail) {
        *end = p;
        return kind == GEMV_HASWELL ? ROWS_TAIL : ROWS_CHAIN;
    }
    Py_ssize_t last = tail / 4096 * 4096, nb = tail - last, head = last + (nb & 4) + (nb & 8);
    if (i >= last && i < head) {
        *end = head;
        return ROWS_HEAD;
    }
    *end = i < last ? last : tail;
    return ROWS_BODY;
}

#if HAVE_F16C_PATH
#define FMA_AVX2 __attribute__((target("avx2,fma")))

/* a value the compiler cannot see into: a product kept apart from the sum after it (no FMA) */
FMA_AVX2 static inline __m256 opaque(__m256 v) {
    __asm__("" : "+x"(v));
    return v;
}

/* one group of `width` columns from j of 8 rows at `at`, added to y: head (two
   accumulators, even and odd columns) or body (one chain) */
FMA_AVX2 static inline __m256 gemv_group(int head, const float *const *col, const float *x,
                                         Py_ssize_t j, int width, Py_ssize_t at, __m256 y) {
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    if (head) {
        for (int c = 0; c < width; c += 2) {
            even = _mm256_fmadd_ps(_mm256_loadu_ps(col[j + c] + at), _mm256_broadcast_ss(x + j + c), even);
            odd = _mm256_fmadd_ps(_mm256_loadu_ps(col[j + c + 1] + at), _mm256_broadcast_ss(x + j + c + 1), odd);
        }
        return _mm256_add_ps(_mm256_add_ps(odd, even), y);
    }
    for (int c = 0; c < width; c++) {
        even = _mm256_fmadd_ps(_mm256_loadu_ps(col[j + c] + at), _mm256_broadcast_ss(x + j + c), even);
    }
    return _mm256_add_ps(y, even);
}

/* y[t] for t in [0, len) (and up to GEMV_LANES - 1 more, read and written past the run) =
   row at + t of the product of columns col[j] (element at + t of each) by x, all rows
   computed as `rows` (gemv_row_kind) says, the kernel `kind`'s */
FMA_AVX2 static void gemv_lanes(int kind, int rows, const float *const *col, const float *x,
                                Py_ssize_t k, Py_ssize_t at, Py_ssize_t len, float *y) {
    const __m256 zero = _mm256_setzero_ps();
    Py_ssize_t t = 0;
    if (rows == ROWS_CHAIN) {  /* (two chains at a time: their latencies overlap) */
        for (; t + GEMV_LANES < len; t += 2 * GEMV_LANES, at += 2 * GEMV_LANES) {
            __m256 v0 = zero, v1 = zero;
            for (Py_ssize_t j = 0; j < k; j++) {
                const __m256 xj = _mm256_broadcast_ss(x + j);
                v0 = _mm256_fmadd_ps(_mm256_loadu_ps(col[j] + at), xj, v0);
                v1 = _mm256_fmadd_ps(_mm256_loadu_ps(col[j] + at + GEMV_LANES), xj, v1);
            }
            _mm256_storeu_ps(y + t, v0);
            _mm256_storeu_ps(y + t + GEMV_LANES, v1);
        }
    }
    for (; t < len; t += GEMV_LANES, at += GEMV_LANES) {
        __m256 v = zero;
        if (rows == ROWS_CHAIN) {
            for (Py_ssize_t j = 0; j < k; j++) {
                v = _mm256_fmadd_ps(_mm256_loadu_ps(col[j] + at), _mm256_broadcast_ss(x + j), v);
            }
        } else if (rows == ROWS_TAIL) {
            for (Py_ssize_t j = 0; j < k; j++) {
                v = _mm256_add_ps(v, opaque(_mm256_mul_ps(_mm256_loadu_ps(col[j] + at), _mm256_broadcast_ss(x + j))));
            }
        } else {
            Py_ssize_t j = 0;
            for (; j + 8 <= k; j += 8) {
                v = gemv_group(rows == ROWS_HEAD, col, x, j, 8, at, v);
            }
            if (k & 4) {
                v = gemv_group(rows == ROWS_HEAD, col, x, j, 4, at, v);
                j += 4;
            }
            for (int width = 2; width >= 1; width--) {  /* a pair of columns, then one */
                if (!(k & width)) {
                    continue;
                }
                if (kind == GEMV_HASWELL) {
                    for (int c = 0; c < width; c++) {
                        v = _mm256_add_ps(v, opaque(_mm256_mul_ps(_mm256_loadu_ps(col[j + c] + at),
                                                                  _mm256_broadcast_ss(x + j + c))));
                    }
                } else {
                    __m256 acc = zero;
                    for (int c = 0; c < width; c++) {
                        acc = _mm256_fmadd_ps(_mm256_loadu_ps(col[j + c] + at), _mm256_broadcast_ss(x + j + c), acc);
                    }
                    v = _mm256_add_ps(v, acc);
                }
                j += width;
            }
        }
        _mm256_storeu_ps(y + t, v);
    }
}

/* y[t] = row i + t of a product of k columns and p rows (col[j][t]: its column j's), t in
   [0, len), by the kernel `kind`, the rows' runs as gemv_row_kind says; reads and writes
   as gemv_lanes */
FMA_AVX2 static void gemv_rows(int kind, const float *const *col, const float *x, Py_ssize_t k,
                               Py_ssize_t p, Py_ssize_t i, Py_ssize_t len, float *y) {
    for (Py_ssize_t t = 0; t < len;) {
        Py_ssize_t end;
        int rows = gemv_row_kind(kind, k, p, i + t, &end);
        Py_ssize_t run = end - i - t < len - t ? end - i - t : len - t;
        gemv_lanes(kind, rows, col, x, k, t, run, y + t);
        t += run;
    }
}

/* The zero-padded plane of one (image, channel) of x (h x w fp32), split by column phase for
   a stride sw: plane[(phase * hp + r) * u + v] = x[r - pt][phase + v * sw - pl], +0.0 outside
   x (the windows' zeros), r < hp, v < u. A stride of 2 pads each row once into `row` (2 * u
   floats) and splits it into its even and odd columns 8 at a time. */
FMA_AVX2 static void padded_phases(const float *x, float *plane, float *row, Py_ssize_t h, Py_ssize_t w,
                                   Py_ssize_t hp, Py_ssize_t u, Py_ssize_t sw, Py_ssize_t pt, Py_ssize_t pl) {
    if (sw == 2) {
        Py_ssize_t qlo, qhi;
        window_span(-pl, 1, w, 2 * u, &qlo, &qhi);
        for (Py_ssize_t r = 0; r < hp; r++) {
            float *even = plane + r * u, *odd = plane + (hp + r) * u;
            window_row(row, x, r - pt, h, w, -pl, 1, qlo, qhi, 2 * u);
            Py_ssize_t v = 0;
            for (; v + 8 <= u; v += 8) {
                __m256 a = _mm256_loadu_ps(row + 2 * v), b = _mm256_loadu_ps(row + 2 * v + 8);
                __m256d e = _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
                __m256d o = _mm256_castps_pd(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
                _mm256_storeu_ps(even + v, _mm256_castpd_ps(_mm256_permute4x64_pd(e, _MM_SHUFFLE(3, 1, 2, 0))));
                _mm256_storeu_ps(odd + v, _mm256_castpd_ps(_mm256_permute4x64_pd(o, _MM_SHUFFLE(3, 1, 2, 0))));
            }
            for (; v < u; v++) {
                even[v] = row[2 * v];
                odd[v] = row[2 * v + 1];
            }
        }
        return;
    }
    for (Py_ssize_t phase = 0; phase < sw; phase++) {
        Py_ssize_t first = phase - pl, qlo, qhi;
        window_span(first, sw, w, u, &qlo, &qhi);
        for (Py_ssize_t r = 0; r < hp; r++) {
            window_row(plane + (phase * hp + r) * u, x, r - pt, h, w, first, sw, qlo, qhi, u);
        }
    }
}

/* x's elements [e, e + count) (fp32 or fp16 in runs, `layout`) as fp32 into dst, run by run
   (fp16 converted as to_f32 converts it) */
F16C static void x_elements(const layout *x, Py_ssize_t e, Py_ssize_t count, float *dst) {
    for (Py_ssize_t end = e + count; e < end;) {
        Py_ssize_t run = x->inner - e % x->inner < end - e ? x->inner - e % x->inner : end - e;
        if (x->itemsize == 2) {
            run_to_floats((const uint16_t *)layout_at(x, e), dst, run);
        } else {
            memcpy(dst, layout_at(x, e), (size_t)run * sizeof(float));
        }
        e += run;
        dst += run;
    }
}

/* A depthwise conv's product from x (n, c, h, w: fp32 or fp16, in runs of whole rows) and
   weights (c, kh * kw), channel by
   channel: each image's plane (where it lies if fp32 in one run, else as fp32 in `scratch`:
   h * w floats) padded (`padded_phases`, into `plane`: sw * hp * u + u + GEMV_LANES floats,
   then 2 * u for a row), each output row's columns (its windows' rows, views of the plane) by
   gemv_rows into acc (n * ho * wo + GEMV_LANES floats), then the channel's epilogue
   (epilogue_halves: bias, residual, act, store into out); 0 on a NaN (out partly written). */
FMA_AVX2 static int depthwise_direct(const layout *x, const float *weights, const float *bias,
                                     const layout *res, int act, const layout *out, Py_ssize_t n,
                                     Py_ssize_t c, Py_ssize_t h, Py_ssize_t w, Py_ssize_t kh,
                                     Py_ssize_t kw, Py_ssize_t sh, Py_ssize_t sw, Py_ssize_t dh,
                                     Py_ssize_t dw, Py_ssize_t ho, Py_ssize_t wo, Py_ssize_t pt,
                                     Py_ssize_t pl, Py_ssize_t hp, Py_ssize_t u, float *plane, float *acc,
                                     float *scratch) {
    Py_ssize_t k = kh * kw, plane_n = ho * wo, p = n * plane_n, tap[GEMV_MAX_K];
    const float *col[GEMV_MAX_K];
    for (Py_ssize_t j = 0; j < k; j++) {  /* where tap j of output row 0 starts in the plane */
        Py_ssize_t across = j % kw * dw;  /* (its column in the padded plane) */
        tap[j] = (across % sw * hp + j / kw * dh) * u + across / sw;
    }
    for (Py_ssize_t ch = 0; ch < c; ch++) {
        for (Py_ssize_t ni = 0; ni < n; ni++) {
            Py_ssize_t first = (ni * c + ch) * h * w;
            const float *xp = (const float *)layout_at(x, first);
            if (x->itemsize != 4 || x->inner - first % x->inner < h * w) {
                x_elements(x, first, h * w, scratch);
                xp = scratch;
            }
            padded_phases(xp, plane, plane + sw * hp * u + u + GEMV_LANES, h, w, hp, u, sw, pt, pl);
            for (Py_ssize_t r = 0; r < ho; r++) {
                for (Py_ssize_t j = 0; j < k; j++) {
                    col[j] = plane + tap[j] + r * sh * u;
                }
                Py_ssize_t i = ni * plane_n + r * wo;
                gemv_rows(gemv_kind, col, weights + ch * k, k, p, i, wo, acc + i);
            }
        }
        for (Py_ssize_t ni = 0; ni < n; ni++) {
            if (!epilogue_halves(acc + ni * plane_n, bias ? bias + ch : NULL, 1, plane_n, res, act, out,
                                 plane_n, 0, (ni * c + ch) * plane_n)) {
                return 0;
            }
        }
    }
    return 1;
}

static int cpu_has_fma(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
static int cpu_has_fma(void) { return 0; }
#endif

/* set_gemv(kind): which mirror of OpenBLAS's sgemv_n the depthwise convs use (1 Haswell,
   2 SkylakeX; 0 none: numpy's sgemv on the windows); False (none set) for a kind this CPU
   cannot run. */
static PyObject *set_gemv(PyObject *self, PyObject *args) {
    (void)self;
    int kind;
    if (!PyArg_ParseTuple(args, "i", &kind)) {
        return NULL;
    }
    if (kind < GEMV_NONE || kind > GEMV_SKYLAKEX) {
        PyErr_Format(PyExc_ValueError, "set_gemv: kind %d (0-2)", kind);
        return NULL;
    }
    gemv_kind = kind == GEMV_NONE || cpu_has_fma() ? kind : GEMV_NONE;
    return PyBool_FromLong(gemv_kind == kind);
}

/* gemv(kind, a, x, y): y (p) = x (k) @ a (k, p), all fp32 C-contiguous, by the mirror `kind`
   of OpenBLAS's sgemv_n (numpy's np.matmul of those, if it is that kernel): for the check at
   import; a product the mirror does not take (gemv_takes) is a ValueError. */
static PyObject *gemv(PyObject *self, PyObject *args) {
    (void)self;
    int kind;
    PyObject *objs[3];
    if (!PyArg_ParseTuple(args, "iOOO", &kind, objs, objs + 1, objs + 2)) {
        return NULL;
    }
    if (kind < GEMV_HASWELL || kind > GEMV_SKYLAKEX || !cpu_has_fma()) {
        PyErr_Format(PyExc_ValueError, "gemv: kind %d (1-2; needs AVX2 and FMA)", kind);
        return NULL;
    }
    Py_buffer v[3];
    for (int i = 0; i < 3; i++) {
        if (PyObject_GetBuffer(objs[i], &v[i], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (i == 2 ? PyBUF_WRITABLE : 0)) < 0) {
            while (i--) {
                PyBuffer_Release(&v[i]);
            }
            return NULL;
        }
    }
    Py_ssize_t k = v[1].len / 4, p = v[2].len / 4;
    int ok = format_is(&v[0], 'f') && format_is(&v[1], 'f') && format_is(&v[2], 'f') && v[0].len == k * p * 4
             && gemv_takes(kind, k, p);
    float *buf = ok ? PyMem_RawMalloc((size_t)(k * p + p + 2 * GEMV_LANES) * sizeof(float)) : NULL;
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "gemv: fp32 buffers of %zd, %zd and %zd bytes: not a product "
                     "the mirror takes", v[0].len, v[1].len, v[2].len);
    } else if (buf == NULL) {
        PyErr_NoMemory();
        ok = 0;
    }
#if HAVE_F16C_PATH
    if (ok) {
        const float *col[GEMV_MAX_K];
        float *y = buf + k * p + GEMV_LANES;
        memcpy(buf, v[0].buf, (size_t)(k * p) * sizeof(float));
        memset(buf + k * p, 0, GEMV_LANES * sizeof(float));
        for (Py_ssize_t j = 0; j < k; j++) {
            col[j] = buf + j * p;
        }
        gemv_rows(kind, col, (const float *)v[1].buf, k, p, 0, p, y);
        memcpy(v[2].buf, y, (size_t)p * sizeof(float));
    }
#endif
    PyMem_RawFree(buf);
    for (int i = 0; i < 3; i++) {
        PyBuffer_Release(&v[i]);
    }
    if (!ok) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* a depthwise conv's windows, product and epilogue (`depthwise`'s sizes in pr->d): 1, 0 (a
   NaN met) or -1 (no memory) */
static int depthwise_product(product *pr) {
    int done = 0;
#if HAVE_F16C_PATH
    const Py_ssize_t *d = pr->d;
    Py_ssize_t n = d[0], c = d[1], h = d[2], w = d[3], kh = d[4], kw = d[5], sh = d[6], sw = d[7];
    Py_ssize_t dh = d[8], dw = d[9], ho = d[10], wo = d[11], pt = d[12], pl = d[13];
    Py_ssize_t k = kh * kw, p = n * ho * wo, out_n = c * p;
    operands *ops = &pr->ops;
    const float *bias = ops->held[3] ? (const float *)ops->view[3].buf : NULL;
    const layout *res = ops->held[4] ? &ops->res : NULL;
    if (gemv_takes(gemv_kind, k, p)) {  /* (the usual case) straight from x, numpy's sgemv mirrored */
        Py_ssize_t hp = (ho - 1) * sh + (kh - 1) * dh + 1, u = ((wo - 1) * sw + (kw - 1) * dw + sw) / sw;
        Py_ssize_t planes = sw * hp * u + u + GEMV_LANES + 2 * u;  /* (the planes, what is read past them, a row) */
        float *plane = PyMem_RawMalloc((size_t)(planes + p + GEMV_LANES + h * w) * sizeof(float));
        if (plane == NULL) {
            return -1;
        }
        float *acc = plane + planes;
        memset(plane + sw * hp * u, 0, (size_t)(u + GEMV_LANES) * sizeof(float));
        done = depthwise_direct(&ops->a, (const float *)ops->view[1].buf, bias, res, pr->act, &ops->out, n, c,
                                h, w, kh, kw, sh, sw, dh, dw, ho, wo, pt, pl, hp, u, plane, acc,
                                acc + p + GEMV_LANES);
        PyMem_RawFree(plane);
        return done;
    }
    if (p == 1) {
        return 0;
    }
    int x_f32 = ops->a.itemsize == 4 && ops->a.inner >= n * c * h * w;  /* (else converted into xf) */
    float *win = PyMem_RawMalloc((size_t)(c * k * p + out_n + (x_f32 ? 0 : n * c * h * w)) * sizeof(float));
    if (win == NULL) {
        return -1;
    }
    float *acc = win + c * k * p, *xf = acc + out_n;
    const float *weights = (const float *)ops->view[1].buf;
    if (!x_f32) {
        x_elements(&ops->a, 0, n * c * h * w, xf);
    }
    conv_windows(x_f32 ? (const float *)ops->view[0].buf : xf, win, 0, n, c, h, w, kh, kw, sh, sw, pt, pl,
                 dh, dw, ho, wo);
    for (Py_ssize_t ch = 0; ch < c; ch++) {
        slice_product(weights + ch * k, win + ch * k * p, acc + ch * p, 1, k, p);
    }
    done = epilogue_halves(acc, bias, c, ho * wo, res, pr->act, &ops->out, out_n, n, 0);
    PyMem_RawFree(win);
#else
    (void)pr;
#endif
    return done;
}

/* `binary`'s work: out (view 2) = op (d[0]) of a and b (views 0, 1), each repeating along
   out, in chunks of CHUNK; 1, or 0 for a NaN met (out partly written; the operands whole:
   an in-place out, d[4], is written through a copy) or no memory for that copy */
static int elementwise(product *pr) {
    int done = 0;
#if HAVE_F16C_PATH
    const Py_buffer *v = pr->ops.view;
    const Py_ssize_t op = pr->d[0], *size = pr->d + 1, n = pr->d[3];
    float x[2][CHUNK], r[CHUNK];
    char *dst = pr->d[4] ? PyMem_RawMalloc((size_t)v[2].len) : v[2].buf;
    done = dst != NULL;
    for (Py_ssize_t start = 0; done && start < n; start += CHUNK) {
        Py_ssize_t len = n - start < CHUNK ? n - start : CHUNK;
        for (int i = 0; i < 2; i++) {  /* the operand's elements from start % size, repeating */
            for (Py_ssize_t k = 0; k < len;) {
                Py_ssize_t at = (start + k) % size[i], run = size[i] - at < len - k ? size[i] - at : len - k;
                if (v[i].itemsize == 2) {
                    run_to_floats((const uint16_t *)v[i].buf + at, x[i] + k, run);
                } else {
                    memcpy(x[i] + k, (const float *)v[i].buf + at, (size_t)run * sizeof(float));
                }
                k += run;
            }
        }
        const float *p = x[0], *q = x[1];
        switch (op) {
        case 0: for (Py_ssize_t k = 0; k < len; k++) r[k] = p[k] + q[k]; break;
        case 1: for (Py_ssize_t k = 0; k < len; k++) r[k] = p[k] - q[k]; break;
        case 2: for (Py_ssize_t k = 0; k < len; k++) r[k] = p[k] * q[k]; break;
        default: for (Py_ssize_t k = 0; k < len; k++) r[k] = p[k] / q[k]; break;
        }
        int nan = 0;
        for (Py_ssize_t k = 0; k < len; k++) {
            nan |= (p[k] != p[k]) | (q[k] != q[k]) | (r[k] != r[k]);
        }
        if (nan) {
            done = 0;
        } else if (v[2].itemsize == 2) {
            floats_to_halves(r, (uint16_t *)dst + start, len);
        } else {
            memcpy((float *)dst + start, r, (size_t)len * sizeof(float));
        }
    }
    if (pr->d[4] && dst != NULL) {
        if (done) {
            memcpy(v[2].buf, dst, (size_t)v[2].len);
        }
        PyMem_RawFree(dst);
    }
#else
    (void)pr;
#endif
    return done;
}

static int compute(product *pr) {
    return pr->kind == SLICES ? slices(pr) : pr->kind == ELEMENTWISE ? elementwise(pr) : depthwise_product(pr);
}

/* depthwise(x, w, out, bias, residual, act, n, c, h, w, kh, kw, sh, sw, dh, dw, ho, wo, pt, pl[, pool])
   -> bool: a depthwise conv of x (n, c, h, w; fp32 or fp16, a view in runs of whole rows as
   out may be) with w (c, 1, kh, kw): its windows
   (c, kh * kw, n * ho * wo) (conv_windows), the product np.matmul(w (c, 1, kh * kw),
   windows) (c, n * ho * wo), + bias per channel, + residual (out's shape), act, into out
   (n, c, ho, wo) fp16 or fp32; False, or with a pool a Job, as conv. */
static PyObject *depthwise(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    product pr;
    PyObject *pool;
    int begun = begin("depthwise", args, nargs, 14, 12, 1, &pr.act, pr.d, &pr.ops, &pool);
    pr.laid = 0;
    if (begun <= 0) {
        return not_begun(begun);
    }
    const Py_ssize_t *d = pr.d;
    Py_ssize_t n = d[0], c = d[1], h = d[2], w = d[3], k = d[4] * d[5], out_n = c * n * d[10] * d[11];
    if (count(&pr.ops, 0) != n * c * h * w || count(&pr.ops, 1) != c * k || count(&pr.ops, 2) != out_n
            || (pr.ops.held[3] && count(&pr.ops, 3) != c) || (pr.ops.held[4] && count(&pr.ops, 4) != out_n)) {
        PyObject *err = size_error("depthwise", &pr.ops);
        release(&pr.ops);
        return err;
    }
    if (pr.ops.a.inner % w || (n * d[10] * d[11] == 1 && !gemv_takes(gemv_kind, k, 1))) {
        /* (x's rows not whole in its runs, or one output per channel: numpy's path) */
        release(&pr.ops);
        Py_RETURN_FALSE;
    }
    pr.kind = DEPTHWISE;
    return finish(&pr, pool);
}

/* ---- products on a pool's threads: the event loop hands a command's product over ----

   A `Job` is a command's product with its operands held (`conv`, `matmul` or `depthwise`
   given a `Pool`): the pool's threads, which never touch Python (no GIL), take the queued
   jobs in order; `Job.wait` (the event loop's thread, with the GIL) waits for one, working
   out queued jobs itself meanwhile (the one waited for first, if no thread has taken it),
   then lets its operands go. Each job is computed by one thread as `now` computes it: the
   same calls, the same bits. An idle thread spins `spin_us` before it sleeps (a wake from a
   condition variable costs ~0.1 ms in these VMs; a product, tens of microseconds). */

#include <pthread.h>
#include <structmember.h>
#include <time.h>

#define POOL_MAX 16
enum { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

typedef struct Job {
    PyObject_HEAD
    product pr;
    int state, result, held;  /* held: pr.ops not yet let go */
    struct Job *prev, *next;  /* the queue's links (while queued) */
    struct Pool *pool;
} Job;

typedef struct Pool {
    PyObject_HEAD
    pthread_mutex_t lock;
    pthread_cond_t work, done;  /* a job queued (or stop); a job done */
    Job *head, *tail;
    int queued, stop, sleepers, waiters, threads, started;
    long spin_ns;
    long long by_threads, by_waiters, idle_ns;  /* jobs computed by the pool's threads, by waiters; waiters' idle time */
    pthread_t thread[POOL_MAX];
} Pool;

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* until *flag != value (read without the lock) or spin_ns passed: whether it changed */
static int spin_while(const int *flag, int value, long spin_ns) {
    long until = spin_ns > 0 ? now_ns() + spin_ns : 0;
    for (unsigned i = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE) == value; i++) {
        if (spin_ns <= 0 || (i % 64 == 0 && now_ns() > until)) {  /* (the clock read now and then) */
            return 0;
        }
#if HAVE_F16C_PATH
        _mm_pause();
#endif
    }
    return 1;
}

/* (the lock held) */
static void unlink_job(Pool *p, Job *j) {
    if (j->prev) j->prev->next = j->next; else p->head = j->next;
    if (j->next) j->next->prev = j->prev; else p->tail = j->prev;
    j->prev = j->next = NULL;
    __atomic_store_n(&p->queued, p->queued - 1, __ATOMIC_RELEASE);
}

/* computes j, taken off the queue by this thread (the lock held on entry and on return) */
static void run_job(Pool *p, Job *j) {
    j->state = JOB_RUNNING;
    pthread_mutex_unlock(&p->lock);
    int result = compute(&j->pr);
    pthread_mutex_lock(&p->lock);
    j->result = result;
    __atomic_store_n(&j->state, JOB_DONE, __ATOMIC_RELEASE);
    if (p->waiters) {
        pthread_cond_broadcast(&p->done);
    }
}

static void *pool_thread(void *arg) {
    Pool *p = arg;
    pthread_setname_np(pthread_self(), "stc-products");  /* (as top and perf show it) */
    pthread_mutex_lock(&p->lock);
    for (;;) {
        if (p->head != NULL) {
            Job *j = p->head;
            unlink_job(p, j);
            p->by_threads++;
            run_job(p, j);
            continue;
        }
        if (p->stop) {
            break;
        }
        pthread_mutex_unlock(&p->lock);
        spin_while(&p->queued, 0, p->spin_ns);
        pthread_mutex_lock(&p->lock);
        if (p->head == NULL && !p->stop) {
            p->sleepers++;
            pthread_cond_wait(&p->work, &p->lock);
            p->sleepers--;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* stops and joins the threads once the queue is empty (the GIL released) */
static void pool_stop(Pool *p) {
    if (!p->started) {
        return;
    }
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->threads; i++) {
        pthread_join(p->thread[i], NULL);
    }
    Py_END_ALLOW_THREADS
    p->threads = 0;
    p->started = 0;
}

static PyObject *pool_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    int threads;
    double spin_us = 100.0;
    static char *names[] = {"threads", "spin_us", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "i|d", names, &threads, &spin_us)) {
        return NULL;
    }
    if (threads < 1 || threads > POOL_MAX) {
        PyErr_Format(PyExc_ValueError, "Pool: %d threads (1-%d)", threads, POOL_MAX);
        return NULL;
    }
    Pool *p = (Pool *)type->tp_alloc(type, 0);
    if (p == NULL) {
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->spin_ns = (long)(spin_us * 1000.0);
    p->started = 1;
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&p->thread[i], NULL, pool_thread, p) != 0) {
            pool_stop(p);
            Py_DECREF(p);
            PyErr_SetString(PyExc_RuntimeError, "Pool: a thread could not be started");
            return NULL;
        }
        p->threads = i + 1;
    }
    return (PyObject *)p;
}

static void pool_dealloc(Pool *p) {
    pool_stop(p);  /* (no job is queued: each holds its pool) */
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *pool_close(Pool *p, PyObject *unused) {
    (void)unused;
    pool_stop(p);
    Py_RETURN_NONE;
}

static PyObject *pool_stats(Pool *p, PyObject *unused) {
    (void)unused;
    long long by_threads, by_waiters, idle_ns;
    pthread_mutex_lock(&p->lock);
    by_threads = p->by_threads;
    by_waiters = p->by_waiters;
    idle_ns = p->idle_ns;
    pthread_mutex_unlock(&p->lock);
    return Py_BuildValue("{sLsLsd}", "by_threads", by_threads, "by_waiters", by_waiters, "waiters_idle_s",
                         (double)idle_ns * 1e-9);
}

static PyMethodDef pool_methods[] = {
    {"close", (PyCFunction)pool_close, METH_NOARGS,
     "close(): stop the threads once every queued job is done (the pool takes no more)."},
    {"stats", (PyCFunction)pool_stats, METH_NOARGS,
     "stats() -> {by_threads, by_waiters, waiters_idle_s}: the jobs the pool's threads and the "
     "waiters computed, and the seconds waiters spent waiting for a thread's job."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef pool_members[] = {
    {"threads", T_INT, offsetof(Pool, threads), READONLY, "the threads running (0 once closed)"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject PoolType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stc_mlir.emulator._f16.Pool",
    .tp_basicsize = sizeof(Pool),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_members = pool_members,
    .tp_doc = "Pool(threads, spin_us=100): threads computing the products handed to them "
              "(conv, matmul or depthwise given the pool: a Job).",
    .tp_new = pool_new,
    .tp_dealloc = (destructor)pool_dealloc,
    .tp_methods = pool_methods,
};

/* waits for j (the GIL released), computing queued jobs meanwhile; its result */
static int job_settle(Job *j) {
    Pool *p = j->pool;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&p->lock);
    while (j->state != JOB_DONE) {
        if (j->state == JOB_QUEUED) {
            unlink_job(p, j);
            p->by_waiters++;
            run_job(p, j);
        } else if (p->head != NULL) {
            Job *other = p->head;
            unlink_job(p, other);
            p->by_waiters++;
            run_job(p, other);
        } else {
            long idle = now_ns();
            pthread_mutex_unlock(&p->lock);
            int changed = spin_while(&j->state, JOB_RUNNING, p->spin_ns);
            pthread_mutex_lock(&p->lock);
            if (!changed && j->state == JOB_RUNNING && p->head == NULL) {
                p->waiters++;
                pthread_cond_wait(&p->done, &p->lock);
                p->waiters--;
            }
            p->idle_ns += now_ns() - idle;
        }
    }
    pthread_mutex_unlock(&p->lock);
    Py_END_ALLOW_THREADS
    if (j->held) {
        release(&j->pr.ops);
        j->held = 0;
    }
    return j->result;
}

static PyObject *job_wait(Job *j, PyObject *unused) {
    (void)unused;
    int result = job_settle(j);
    return result < 0 ? PyErr_NoMemory() : PyBool_FromLong(result);
}

static void job_dealloc(Job *j) {
    job_settle(j);  /* (a job dropped unwaited: its operands are in use until it is done) */
    Py_DECREF(j->pool);
    Py_TYPE(j)->tp_free((PyObject *)j);
}

static PyMethodDef job_methods[] = {
    {"wait", (PyCFunction)job_wait, METH_NOARGS,
     "wait() -> bool: once the product is done (computed here if no thread has taken it), "
     "True, or False (nothing more done: the caller's numpy path) for a NaN met."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject JobType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stc_mlir.emulator._f16.Job",
    .tp_basicsize = sizeof(Job),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A command's product handed to a Pool (see its wait).",
    .tp_dealloc = (destructor)job_dealloc,
    .tp_methods = job_methods,
};

/* pr (its operands held) as a Job queued on pool */
static PyObject *handed(product *pr, PyObject *pool) {
    Pool *p = (Pool *)pool;
    if (!p->started) {
        release(&pr->ops);
        PyErr_SetString(PyExc_ValueError, "the pool is closed");
        return NULL;
    }
    Job *j = PyObject_New(Job, &JobType);
    if (j == NULL) {
        release(&pr->ops);
        return NULL;
    }
    j->pr = *pr;
    j->held = 1;
    j->result = 0;
    j->pool = (Pool *)Py_NewRef(pool);
    j->next = NULL;
    pthread_mutex_lock(&p->lock);
    j->state = JOB_QUEUED;
    j->prev = p->tail;
    if (p->tail) p->tail->next = j; else p->head = j;
    p->tail = j;
    __atomic_store_n(&p->queued, p->queued + 1, __ATOMIC_RELEASE);
    if (p->sleepers) {
        pthread_cond_signal(&p->work);
    }
    pthread_mutex_unlock(&p->lock);
    return (PyObject *)j;
}

/* convert(src, dst, itemsize of src): both C-contiguous buffers with the same element count */
static PyObject *convert(PyObject *args, Py_ssize_t in_size, Py_ssize_t out_size) {
    PyObject *src_obj, *dst_obj;
    if (!PyArg_ParseTuple(args, "OO", &src_obj, &dst_obj)) {
        return NULL;
    }
    if (!cpu_has_f16c()) {
        PyErr_SetString(PyExc_RuntimeError, "this CPU has no F16C instructions");
        return NULL;
    }
    Py_buffer src, dst;
    if (!in_and_out(src_obj, &src, dst_obj, &dst)) {
        return NULL;
    }
    Py_ssize_t n = src.len / in_size;
    if (src.len % in_size || dst.len != n * out_size) {
        PyBuffer_Release(&src);
        PyBuffer_Release(&dst);
        PyErr_Format(PyExc_ValueError, "buffers of %zd and %zd bytes do not hold the same "
                     "number of %zd- and %zd-byte elements", src.len, dst.len, in_size, out_size);
        return NULL;
    }
#if HAVE_F16C_PATH
    Py_BEGIN_ALLOW_THREADS
    if (in_size == 2) {
        halves_to_floats((const uint16_t *)src.buf, (float *)dst.buf, n);
    } else {
        floats_to_halves((const float *)src.buf, (uint16_t *)dst.buf, n);
    }
    Py_END_ALLOW_THREADS
#endif
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    Py_RETURN_NONE;
}

/* to_f32(src, dst) -> bool: convert's, src fp16 and C-contiguous or a view of it whose
   elements are in runs of 8 or more at two strides at most (`strided_layout`), converted
   where they are (no contiguous copy first); False (nothing done) for another view. */
static PyObject *to_f32(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *src_obj, *dst_obj;
    Py_buffer src, dst;
    layout l;
    if (!PyArg_ParseTuple(args, "OO", &src_obj, &dst_obj)) {
        return NULL;
    }
    if (PyObject_GetBuffer(src_obj, &src, PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
        return NULL;
    }
    if (PyBuffer_IsContiguous(&src, 'C')) {
        PyBuffer_Release(&src);
        PyObject *done = convert(args, 2, 4);
        Py_XDECREF(done);
        return done == NULL ? NULL : Py_NewRef(Py_True);
    }
    int runs = cpu_has_f16c() && format_is(&src, 'e') && src.itemsize == 2 && (uintptr_t)src.buf % 2 == 0
               && strided_layout(&src, &l) && l.inner >= 8;
    if (!runs) {
        PyBuffer_Release(&src);
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(dst_obj, &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    Py_ssize_t n = src.len / 2;
    if (dst.len != n * 4) {
        PyErr_Format(PyExc_ValueError, "to_f32: %zd halves into %zd bytes", n, dst.len);
        runs = 0;
    }
#if HAVE_F16C_PATH
    if (runs) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t e = 0; e < n; e += l.inner) {
            run_to_floats((const uint16_t *)layout_at(&l, e), (float *)dst.buf + e, l.inner);
        }
        Py_END_ALLOW_THREADS
    }
#endif
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return runs ? Py_NewRef(Py_True) : NULL;
}

static PyObject *to_f16(PyObject *self, PyObject *args) {
    (void)self;
    return convert(args, 4, 2);
}

/* epilogue(acc, bias, residual, act, inner, out, channels, batch[, residual_halves]) -> bool:
   see epilogue_halves. acc: fp32, n elements laid out (..., channels, inner) or, batch > 0,
   (channels, batch, inner), stored as (batch, channels, inner); bias: None or `channels`
   fp32; residual: None or n fp32 (fp16 with residual_halves; batch 0 only); act: 0 none, 1 relu, 2 relu6; out: n fp16
   (all C-contiguous). False: a NaN was met, out is partly written. */
static PyObject *epilogue(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *acc_obj, *bias_obj, *res_obj, *out_obj;
    int act, res_halves = 0;
    Py_ssize_t inner, channels, batch;
    if (!PyArg_ParseTuple(args, "OOOinOnn|p", &acc_obj, &bias_obj, &res_obj, &act, &inner, &out_obj,
                          &channels, &batch, &res_halves)) {
        return NULL;
    }
    if (!cpu_has_f16c()) {
        PyErr_SetString(PyExc_RuntimeError, "this CPU has no F16C instructions");
        return NULL;
    }
    if (act < 0 || act > 2 || inner < 1 || channels < 1 || batch < 0 ||
            (batch && res_obj != Py_None)) {
        PyErr_Format(PyExc_ValueError, "activation %d (0-2), inner size %zd, channels %zd (>= 1), "
                     "batch %zd (>= 0, 0 with a residual) out of range", act, inner, channels, batch);
        return NULL;
    }
    Py_buffer acc, bias = {0}, res = {0}, out;
    int have_bias = bias_obj != Py_None, have_res = res_obj != Py_None, ok = 1;
    if (!in_and_out(acc_obj, &acc, out_obj, &out)) {
        return NULL;
    }
    if (have_bias && PyObject_GetBuffer(bias_obj, &bias, PyBUF_C_CONTIGUOUS) < 0) {
        ok = 0, have_bias = 0;
    }
    if (ok && have_res && PyObject_GetBuffer(res_obj, &res, PyBUF_C_CONTIGUOUS) < 0) {
        ok = 0, have_res = 0;
    }
    Py_ssize_t n = acc.len / 4;
    if (ok && (acc.len % 4 || out.len != n * 2 || (have_res && res.len != (res_halves ? acc.len / 2 : acc.len)) ||
               (have_bias && bias.len != channels * 4) || n % (channels * inner) ||
               (batch && n != batch * channels * inner))) {
        PyErr_Format(PyExc_ValueError, "buffers of %zd (acc), %zd (bias), %zd (residual) and "
                     "%zd (out) bytes do not fit %zd-element channels", acc.len, bias.len,
                     res.len, out.len, inner);
        ok = 0;
    }
    int done = 0;
#if HAVE_F16C_PATH
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        layout o = contiguous(out.buf, n, 2), r = contiguous(res.buf, n, res_halves ? 2 : 4);
        done = epilogue_halves((const float *)acc.buf, have_bias ? (const float *)bias.buf : NULL,
                               channels, inner, have_res ? &r : NULL, act, &o, n, batch, 0);
        Py_END_ALLOW_THREADS
    }
#endif
    if (have_res) {
        PyBuffer_Release(&res);
    }
    if (have_bias) {
        PyBuffer_Release(&bias);
    }
    PyBuffer_Release(&acc);
    PyBuffer_Release(&out);
    if (!ok) {
        return NULL;
    }
    return PyBool_FromLong(done);
}

/* store(value, out, small) -> bool: fp32 `value` rounded into fp16 `out` when both are
   C-contiguous buffers of the same element count, at least `small` of them (as to_f16);
   False (nothing done, no error) otherwise. */
static PyObject *store(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "store(value, out, small)");
        return NULL;
    }
    Py_ssize_t small = PyLong_AsSsize_t(args[2]);
    if (small == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer src, dst;
    if (!cpu_has_f16c() || PyObject_GetBuffer(args[0], &src, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    if (PyObject_GetBuffer(args[1], &dst, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&src);
        Py_RETURN_FALSE;
    }
    Py_ssize_t n = src.len / 4;
    int ok = format_is(&src, 'f') && src.itemsize == 4 && format_is(&dst, 'e') && dst.itemsize == 2
             && dst.len == 2 * n && n >= small;
#if HAVE_F16C_PATH
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        floats_to_halves((const float *)src.buf, (uint16_t *)dst.buf, n);
        Py_END_ALLOW_THREADS
    }
#else
    ok = 0;
#endif
    PyBuffer_Release(&src);
    PyBuffer_Release(&dst);
    return PyBool_FromLong(ok);
}

/* binary(op, a, b, out[, pool]) -> bool: out = op(a, b) elementwise in fp32 (op 0 add, 1 sub,
   2 mul, 3 div), a and b fp16 (converted exactly) or fp32, each repeating with its own
   element count along out's (numpy's broadcasting of an operand whose shape is a suffix of
   the result's: the caller checks the shapes), out fp16 (rounded to nearest even, as numpy's
   store) or fp32; all C-contiguous. The IEEE operation numpy's float32 loop does, so the
   same bits. out may be an operand itself (an in-place add), else apart from both. False
   (out partly written, the operands whole, no error): another type, sizes that do not
   divide out's, out overlapping an operand in part, or a NaN in an operand or the result
   (numpy's business: its payloads); with a pool, a Job (`elementwise` on its thread) whose
   wait answers that. */
#define BINARY_OPS 4
static PyObject *binary(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4 && nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "binary(op, a, b, out[, pool])");
        return NULL;
    }
    PyObject *pool = nargs == 5 && args[4] != Py_None ? args[4] : NULL;
    if (pool != NULL && !PyObject_TypeCheck(pool, &PoolType)) {
        PyErr_SetString(PyExc_TypeError, "binary: the last argument is not a Pool");
        return NULL;
    }
    long op = PyLong_AsLong(args[0]);
    if (op == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (op < 0 || op >= BINARY_OPS) {
        PyErr_Format(PyExc_ValueError, "binary: op %ld (0-%d)", op, BINARY_OPS - 1);
        return NULL;
    }
    product pr;
    memset(&pr, 0, sizeof(pr));
    pr.kind = ELEMENTWISE;
    pr.d[0] = op;
    Py_buffer *v = pr.ops.view;
    int ok = cpu_has_f16c();
    for (int i = 0; ok && i < 3; i++) {  /* a, b, out in views 0, 1, 2 */
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (i == 2 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[1 + i], &v[i], flags) < 0) {
            PyErr_Clear();
            ok = 0;
            break;
        }
        pr.ops.held[i] = 1;
        int half = format_is(&v[i], 'e') && v[i].itemsize == 2, single = format_is(&v[i], 'f') && v[i].itemsize == 4;
        pr.d[1 + i] = v[i].len / (v[i].itemsize ? v[i].itemsize : 1);
        ok = (half || single) && pr.d[1 + i] > 0;
    }
    ok = ok && pr.d[3] % pr.d[1] == 0 && pr.d[3] % pr.d[2] == 0;
    for (int i = 0; ok && i < 2; i++) {  /* out an operand itself: written through a copy (d[4]), */
        const char *o = v[2].buf, *a = v[i].buf;  /* so that a NaN met late leaves the operands whole */
        int same = o == a && v[2].len == v[i].len && v[2].itemsize == v[i].itemsize;
        pr.d[4] |= same;
        ok = same || o + v[2].len <= a || a + v[i].len <= o;
    }
    if (!ok) {
        release(&pr.ops);
        Py_RETURN_FALSE;
    }
    return finish(&pr, pool);
}

static PyMethodDef methods[] = {
    {"windows", windows, METH_VARARGS,
     "windows(x, out, columns, n, c, h, w, kh, kw, sh, sw, pt, pl, dh, dw, ho, wo): a conv's "
     "windows of fp32 x (n, c, h, w), (c, kh, kw, n, ho, wo) (depthwise) or, columns 1, (n, c, kh, "
     "kw, ho, wo) (im2col), zeros in the padding; columns 2: the im2col columns of fp16 x."},
    {"epilogue", epilogue, METH_VARARGS,
     "epilogue(acc, bias, residual, act, inner, out, channels, batch[, residual_halves]) -> bool: "
     "fp16(act((acc + bias) + residual)) into out in one pass (batch > 0: acc channels "
     "first); False (out partly written) if a NaN was met."},
    {"set_blas", set_blas, METH_VARARGS,
     "set_blas(sgemm, sgemv): the addresses of numpy's ILP64 cblas_sgemm and cblas_sgemv (0, 0: none)."},
    {"conv", (PyCFunction)(void (*)(void))conv, METH_FASTCALL,
     "conv(w, columns, out, bias, residual, act, n, groups, og, k, p[, pool]) -> bool: a conv command's "
     "product (fp32 or fp16 operands), epilogue and fp16 store in one call (False: the caller's numpy path)."},
    {"depthwise", (PyCFunction)(void (*)(void))depthwise, METH_FASTCALL,
     "depthwise(x, w, out, bias, residual, act, n, c, h, w, kh, kw, sh, sw, dh, dw, ho, wo, pt, pl) "
     "-> bool: a depthwise conv command's windows, product, epilogue and store in one call."},
    {"set_gemv", set_gemv, METH_VARARGS,
     "set_gemv(kind) -> bool: the mirror of OpenBLAS's sgemv_n the depthwise convs use instead of "
     "the windows and numpy's sgemv (1 Haswell, 2 SkylakeX, 0 none); False: not on this CPU."},
    {"gemv", gemv, METH_VARARGS,
     "gemv(kind, a, x, y): y = x @ a (fp32 (k,), (k, p), (p,)) by the sgemv_n mirror `kind` (the check "
     "at import)."},
    {"matmul", (PyCFunction)(void (*)(void))matmul, METH_FASTCALL,
     "matmul(a, b, out, bias, residual, act, batch, a_batch, b_batch, m, k, p[, pool]) -> bool: a matmul "
     "command's product (fp32 or fp16 operands), epilogue and fp16 store in one call."},
    {"binary", (PyCFunction)(void (*)(void))binary, METH_FASTCALL,
     "binary(op, a, b, out[, pool]) -> bool: an elementwise add, sub, mul or div (op 0-3) of fp16 or "
     "fp32 operands repeating along out (fp16 or fp32), numpy's float32 bits; False: numpy's path; "
     "with a pool, a Job."},
    {"to_f32", to_f32, METH_VARARGS,
     "to_f32(src, dst) -> bool: the fp16 elements of src (C-contiguous, or a view in runs of rows or "
     "planes, 8 elements or more) as fp32 into contiguous dst; False (nothing done) for another view."},
    {"to_f16", to_f16, METH_VARARGS,
     "to_f16(src, dst): the fp32 elements of contiguous buffer src as fp16 into dst "
     "(round to nearest even)."},
    {"store", (PyCFunction)(void (*)(void))store, METH_FASTCALL,
     "store(value, out, small) -> bool: to_f16(value, out) if value is a C-contiguous fp32 and out "
     "a C-contiguous fp16 buffer of the same element count, at least small; else False."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_f16",
    "fp16 <-> fp32 conversion with F16C (see stc_mlir/emulator/halves.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

/* Bumped whenever a function's arguments or meaning change: halves.py uses a build whose
   INTERFACE is its own and falls back to numpy for any other (an older build in a source
   tree would otherwise read fp16 columns as fp32). */
#define F16_INTERFACE 7

PyMODINIT_FUNC PyInit__f16(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyType_Ready(&PoolType) < 0 || PyType_Ready(&JobType) < 0
        || PyModule_AddObjectRef(m, "Pool", (PyObject *)&PoolType) < 0
        || PyModule_AddIntConstant(m, "available", cpu_has_f16c()) < 0
        || PyModule_AddIntConstant(m, "INTERFACE", F16_INTERFACE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
