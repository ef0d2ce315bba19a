# cython: language_level=3
"""Low-bit kernels: f32 -> f8 / s4 / u4 / s8 / u8 codes with grouped scales and zero points
(nibble pairs packed on the way), nibble packing and unpacking, and codes -> f32. The
arithmetic lives in lowbit/lowbit.h; these loops cut the work into rows for OpenMP. The planner
side (lowbit.py) has checked every size and address; nothing here raises."""
from libc.stdint cimport int32_t, int64_t, uint8_t, uintptr_t
from cython.parallel cimport threadid
from cython.parallel cimport prange
import numpy as np

from omp cimport omp_get_max_threads

cdef extern from "lowbit/lowbit.h" nogil:
    ctypedef struct lb_q_t:
        int code
        int pair
        const float* inv
        const float* zp
        const int64_t* colidx
        int64_t colstep
        int nt
    int lb_simd
    int lb_simd512
    void lb_detect()
    void lb_quant_row(const lb_q_t* q, const float* s0, const float* s1, int64_t b0, int64_t b1,
                      uint8_t* out, int64_t L)
    ctypedef struct lb_tile_t:
        const float* src
        const int64_t* row_off
        const int64_t* qbase
        const int32_t* tab
        int64_t Ta, Tb, K, N
        int nib
        int fast
        int stream
    void lb_quant_tile(const lb_q_t* q0, const lb_tile_t* T, int64_t row0, int64_t col0,
                       uint8_t* dst, uint8_t* buf)
    void lb_quant_strip(const lb_q_t* q0, const lb_tile_t* T, int64_t row0, const int64_t* toff,
                        const int64_t* tcol, int64_t nt, uint8_t* dst, uint8_t* stage,
                        int64_t stage_cols, uint8_t* buf)
    void lb_pack(const uint8_t* c, uint8_t* out, int64_t n)
    void lb_unpack(const uint8_t* p, uint8_t* out, int64_t n, int is_signed)
    void lb_dequant_row(int code, const uint8_t* c, float* out, int64_t L, const float* sc,
                        const float* zp, const int64_t* colidx, int64_t base)
    ctypedef struct lb_dq_t:
        int code
        const float* sc
        const float* zp
        const int64_t* colidx
        int64_t colstep
        int stream
    int LB_CHUNK
    void lb_dequant_plain_row(const lb_dq_t* d, const uint8_t* src, int nib, int64_t e0, int64_t L,
                              float* out, int64_t base, uint8_t* buf)
    void lb_dequant_strip(const lb_dq_t* d, const lb_tile_t* T, const uint8_t* src, int64_t row0,
                          const int64_t* toff, const int64_t* tcol, int64_t nt, float* out,
                          int64_t ld, uint8_t* stage, int64_t stage_cols, uint8_t* buf)

lb_detect()

CODES = {"s4": 0, "u4": 1, "s8": 2, "u8": 3, "f8_e4m3": 4, "f8_e5m2": 5}


def simd_available():
    """True when the AVX2 + F16C rows run (detected once, at import)."""
    return bool(lb_simd)


def simd512_available():
    """True when the AVX-512 rows for integer codes run as well."""
    return bool(lb_simd512)


def set_simd(on):
    """The rows to run: True (the widest this CPU has), "avx2" (not the AVX-512 ones), or
    False (scalar); tests compare the paths."""
    global lb_simd, lb_simd512
    if on not in (True, False, "avx2"):
        raise ValueError(f"set_simd takes True, False or 'avx2', got {on!r}")
    lb_detect()
    if on == "avx2":
        lb_simd512 = 0
    elif not on:
        lb_simd = 0
        lb_simd512 = 0


cdef inline const float* _fptr(a):
    return NULL if a is None else <const float*><uintptr_t>a.ctypes.data


cdef inline const int64_t* _iptr(a):
    return NULL if a is None else <const int64_t*><uintptr_t>a.ctypes.data


cdef inline uint8_t* _bytes(a):
    return <uint8_t*><uintptr_t>a.ctypes.data


def quant_rows(uintptr_t src, const int64_t[::1] row0, const int64_t[::1] row1,
               const int64_t[::1] base0, const int64_t[::1] base1, uintptr_t out,
               int64_t out_row, int64_t L, str code, int pair, inv, zp, colidx, int64_t colstep,
               bint stream, int nthreads):
    """Output row o (out + o * out_row bytes) from the f32 rows at element offsets row0[o] (and
    row1[o] for pairs across rows, -1 for a zero nibble); scale-table row bases base0/base1.
    `stream`: rows of one code a byte are written with streaming stores."""
    cdef lb_q_t q
    q.code = CODES[code]
    q.pair = pair
    q.inv = _fptr(inv)
    q.zp = _fptr(zp)
    q.colidx = _iptr(colidx)
    q.colstep = colstep
    q.nt = stream
    cdef int64_t n = row0.shape[0], o
    cdef const float* s = <const float*>src
    cdef uint8_t* d = <uint8_t*>out
    with nogil:
        for o in prange(n, num_threads=nthreads, schedule="static", use_threads_if=nthreads > 1):
            lb_quant_row(&q, s + row0[o], (s + row1[o]) if row1[o] >= 0 else NULL,
                         base0[o], base1[o], d + o * out_row, L)


def quant_tiles(uintptr_t src, const int64_t[::1] row_off, qbase, str code, inv, zp, colidx,
                int64_t colstep, const int32_t[::1] tab, int64_t Ta, int64_t Tb, int64_t K,
                int64_t N, bint nib, int fast, const int64_t[::1] tile_off, const int64_t[::1] tile_row,
                const int64_t[::1] tile_col, uintptr_t out, bint stream, int nthreads):
    """Quantize f32 rows straight into a blocked destination, one tile (Ta x Tb logical
    elements, contiguous in the destination) at a time: tile t starts at byte tile_off[t] of
    out, at logical row tile_row[t] (C order over dims[:-1]) and column tile_col[t]. `stream`:
    the nibble tiles written from registers use streaming stores."""
    cdef lb_q_t q
    q.code = CODES[code]
    q.pair = 0
    q.inv = _fptr(inv)
    q.zp = _fptr(zp)
    q.colidx = _iptr(colidx)
    q.colstep = colstep
    q.nt = 0                 # the rows go to a stage; the tiles stream (T.stream)
    cdef lb_tile_t T
    T.src = <const float*>src
    T.row_off = &row_off[0] if row_off.shape[0] else NULL
    T.qbase = _iptr(qbase)
    T.tab = &tab[0]
    T.Ta, T.Tb, T.K, T.N = Ta, Tb, K, N
    T.nib = nib
    T.fast = fast
    T.stream = stream
    cdef int64_t n = tile_off.shape[0], t
    cdef uint8_t* d = <uint8_t*>out
    if n == 0:
        return
    # strips of Ta rows (the tiles come in source row order): lb_quant_strip quantizes whole
    # rows into a stage; the vector tiles need it, other tiles take it when every thread
    # gets a strip
    rows = np.asarray(tile_row)
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]).astype(np.int64)
    if fast or len(starts) >= nthreads:
        return _quant_strips(&q, &T, tile_off, tile_row, tile_col, np.r_[starts, n], d, nthreads)
    nthreads = max(1, min(nthreads, n))
    scratch = np.empty(nthreads * Ta * Tb, np.uint8)     # one L1 tile buffer per thread
    cdef uint8_t* bufs = _bytes(scratch)
    with nogil:
        for t in prange(n, num_threads=nthreads, schedule="static", use_threads_if=nthreads > 1):
            lb_quant_tile(&q, &T, tile_row[t], tile_col[t], d + tile_off[t],
                          bufs + threadid() * Ta * Tb)


cdef int64_t STAGE_BYTES = 262144     # per thread: Ta rows of codes, a run of tiles wide (in L2)


cdef _quant_strips(const lb_q_t* q, const lb_tile_t* T, const int64_t[::1] tile_off,
                   const int64_t[::1] tile_row, const int64_t[::1] tile_col,
                   const int64_t[::1] bounds, uint8_t* d, int nthreads):
    cdef int64_t ns = bounds.shape[0] - 1, k, a
    cdef int64_t tile = T.Ta * T.Tb
    cdef int64_t stage_cols = max(T.Tb, (STAGE_BYTES // T.Ta) // T.Tb * T.Tb)
    cdef int64_t per = stage_cols * T.Ta + tile
    nthreads = max(1, min(nthreads, ns))
    scratch = np.empty(nthreads * per, np.uint8)
    cdef uint8_t* bufs = _bytes(scratch)
    with nogil:
        for k in prange(ns, num_threads=nthreads, schedule="static", use_threads_if=nthreads > 1):
            a = bounds[k]
            lb_quant_strip(q, T, tile_row[a], &tile_off[a], &tile_col[a], bounds[k + 1] - a,
                           d, bufs + threadid() * per, stage_cols,
                           bufs + threadid() * per + stage_cols * T.Ta)


def pack(uintptr_t codes, uintptr_t out, int64_t n, int nthreads):
    """n one-per-byte codes -> (n + 1) // 2 bytes, element i in byte i // 2 (low nibble first)."""
    cdef int64_t chunk = ((n // max(nthreads, 1)) | 1) + 1, t, nch = (n + chunk - 1) // chunk if n else 0
    cdef const uint8_t* c = <const uint8_t*>codes
    cdef uint8_t* d = <uint8_t*>out
    with nogil:
        for t in prange(nch, num_threads=nthreads, schedule="static", use_threads_if=nthreads > 1):
            lb_pack(c + t * chunk, d + t * chunk // 2, min(chunk, n - t * chunk))


def unpack(uintptr_t packed, uintptr_t out, int64_t n, bint is_signed, int nthreads):
    """The inverse of pack(); s4 values are sign-extended bytes."""
    cdef int64_t chunk = ((n // max(nthreads, 1)) | 1) + 1, t, nch = (n + chunk - 1) // chunk if n else 0
    cdef const uint8_t* p = <const uint8_t*>packed
    cdef uint8_t* d = <uint8_t*>out
    with nogil:
        for t in prange(nch, num_threads=nthreads, schedule="static", use_threads_if=nthreads > 1):
            lb_unpack(p + t * chunk // 2, d + t * chunk, min(chunk, n - t * chunk), is_signed)


def dequant_rows(str code, uintptr_t src, int64_t rows, int64_t L, uintptr_t out, scales, zp,
                 colidx, const int64_t[::1] base, int nthreads):
    """rows x L codes (contiguous) -> rows x L f32: v = scale * (code - zp)."""
    cdef int c = CODES[code]
    cdef const float* sc = _fptr(scales)
    cdef const float* z = _fptr(zp)
    cdef const int64_t* ci = _iptr(colidx)
    cdef const uint8_t* s = <const uint8_t*>src
    cdef float* d = <float*>out
    cdef int64_t o
    with nogil:
        for o in prange(rows, num_threads=nthreads, schedule="static", use_threads_if=nthreads > 1):
            lb_dequant_row(c, s + o * L, d + o * L, L, sc, z, ci, base[o] if sc != NULL or z != NULL else 0)


cdef lb_dq_t _dq(str code, scales, zp, colidx, int64_t colstep, bint stream):
    cdef lb_dq_t d
    d.stream = stream
    d.code = CODES[code]
    d.sc = _fptr(scales)
    d.zp = _fptr(zp)
    d.colidx = _iptr(colidx)
    d.colstep = colstep
    return d


def dequant_plain(str code, uintptr_t src, bint nib, int64_t rows, int64_t L, uintptr_t out,
                  scales, zp, colidx, int64_t colstep, base, bint stream, int nthreads):
    """rows x L codes in C order (two a byte when nib, rows starting at element o * L, so a row
    may begin in a high nibble) -> rows x L f32; scale-table row bases `base` (or None);
    `stream`: streaming stores."""
    cdef lb_dq_t d = _dq(code, scales, zp, colidx, colstep, stream)
    cdef const int64_t* b = _iptr(base)
    cdef const uint8_t* s = <const uint8_t*>src
    cdef float* o_ = <float*>out
    cdef int64_t o
    nthreads = max(1, min(nthreads, rows))
    scratch = np.empty(nthreads * LB_CHUNK, np.uint8)
    cdef uint8_t* bufs = _bytes(scratch)
    with nogil:
        for o in prange(rows, num_threads=nthreads, schedule="static", use_threads_if=nthreads > 1):
            lb_dequant_plain_row(&d, s, nib, o * L, L, o_ + o * L, b[o] if b != NULL else 0,
                                 bufs + threadid() * LB_CHUNK)


def dequant_tiles(str code, uintptr_t src, bint nib, int fast, const int32_t[::1] tab, int64_t Ta,
                  int64_t Tb, int64_t K, int64_t N, const int64_t[::1] tile_off,
                  const int64_t[::1] tile_row, const int64_t[::1] tile_col, uintptr_t out,
                  int64_t ld, scales, zp, colidx, int64_t colstep, base, bint stream,
                  int nthreads):
    """The inverse of quant_tiles without the quantizing: tile t (byte tile_off[t] of src, at
    logical row tile_row[t] and column tile_col[t]; the tiles in row, then column order) ->
    the f32 rows out + r * ld, a strip of Ta rows at a time through a per-thread stage."""
    cdef lb_dq_t d = _dq(code, scales, zp, colidx, colstep, stream)
    cdef lb_tile_t T
    T.src = NULL
    T.row_off = NULL
    T.qbase = _iptr(base)
    T.tab = &tab[0]
    T.Ta, T.Tb, T.K, T.N = Ta, Tb, K, N
    T.nib = nib
    T.fast = fast
    T.stream = 0             # this side's streaming is the lb_dq_t's
    cdef int64_t n = tile_off.shape[0], k, a
    if n == 0:
        return
    rows = np.asarray(tile_row)
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]).astype(np.int64)
    cdef int64_t[::1] bounds = np.r_[starts, n].astype(np.int64)
    cdef int64_t ns = bounds.shape[0] - 1
    cdef int64_t stage_cols = max(Tb, (STAGE_BYTES // Ta) // Tb * Tb)
    cdef int64_t per = stage_cols * Ta + Ta * Tb
    nthreads = max(1, min(nthreads, ns))
    scratch = np.empty(nthreads * per, np.uint8)
    cdef uint8_t* bufs = _bytes(scratch)
    cdef const uint8_t* s = <const uint8_t*>src
    cdef float* o_ = <float*>out
    with nogil:
        for k in prange(ns, num_threads=nthreads, schedule="static", use_threads_if=nthreads > 1):
            a = bounds[k]
            lb_dequant_strip(&d, &T, s, tile_row[a], &tile_off[a], &tile_col[a], bounds[k + 1] - a,
                             o_, ld, bufs + threadid() * per, stage_cols,
                             bufs + threadid() * per + stage_cols * Ta)
