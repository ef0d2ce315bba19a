# cython: language_level=3
"""Reorder kernels. Everything here runs without the GIL and never raises: the planner has
validated shapes, strides and buffer sizes in Python before any call.

Pure moves are typed by element size (`word_t`), not meaning: f32 and s32 move as uint32,
f16 and bf16 as uint16, s8 and u8 as uint8.

The generic kernel walks a list of loop nodes (extent, src stride, dst stride), outermost
first; the innermost node is the contiguous run. Nodes of a dim whose iteration space is
padded also carry (dim, weight), so the kernel knows the logical coordinate of each run and
writes zeros into the destination's padding (or skips positions beyond the destination's
allocation, when only the source is padded) in the same pass.
"""
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memcpy, memset
from cython.parallel cimport prange
import numpy as np

from reorder._omp cimport (REORDER_OPENMP, REORDER_OPENMP_VERSION, REORDER_BUILD_FLAGS,
                           omp_get_max_threads, omp_get_num_procs)

OPENMP = bool(REORDER_OPENMP)
OPENMP_VERSION = REORDER_OPENMP_VERSION
BUILD_FLAGS = REORDER_BUILD_FLAGS.decode()


def omp_max_threads():
    return omp_get_max_threads()


def omp_num_procs():
    return omp_get_num_procs()


from reorder._nodes cimport (NodeList, Walk, count_below, fill_nodes, outer_count, walk_start,
                             walk_bounds, walk_next)

ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

cdef extern from "_simd.h" nogil:
    ctypedef struct rows_t:
        int64_t nlo, dlo, dhi
    int reorder_simd_disabled
    const char* reorder_simd_name()
    void reorder_sfence()
    void tile_t1(const uint8_t*, int64_t, uint8_t*, const rows_t*, int64_t, int64_t, int64_t, int64_t, int64_t, int)
    void tile_t2(const uint16_t*, int64_t, uint16_t*, const rows_t*, int64_t, int64_t, int64_t, int64_t, int64_t, int)
    void tile_t4(const uint32_t*, int64_t, uint32_t*, const rows_t*, int64_t, int64_t, int64_t, int64_t, int64_t, int)
    void tile_t8(const uint64_t*, int64_t, uint64_t*, const rows_t*, int64_t, int64_t, int64_t, int64_t, int64_t, int)
    void copy_bytes(void*, const void*, int64_t, int)


def simd_name():
    return reorder_simd_name().decode()


def set_simd(bint enabled):
    """Use the portable C paths instead of the SIMD ones (for tests of both)."""
    global reorder_simd_disabled
    reorder_simd_disabled = 0 if enabled else 1


cdef inline void _tile(const word_t* s, int64_t sA, word_t* d, const rows_t* rows, int64_t bs,
                       int64_t nav, int64_t naw, int64_t nbv, int64_t nbw, int nt) noexcept nogil:
    if word_t is uint8_t:
        tile_t1(s, sA, d, rows, bs, nav, naw, nbv, nbw, nt)
    elif word_t is uint16_t:
        tile_t2(s, sA, d, rows, bs, nav, naw, nbv, nbw, nt)
    elif word_t is uint32_t:
        tile_t4(s, sA, d, rows, bs, nav, naw, nbv, nbw, nt)
    else:
        tile_t8(s, sA, d, rows, bs, nav, naw, nbv, nbw, nt)


cdef void _generic_chunk(const word_t* src, word_t* dst, const NodeList* p,
                         int64_t lo, int64_t hi) noexcept nogil:
    cdef Walk w
    cdef int last = p.n - 1
    cdef int64_t it, j, nvalid, nwrite
    cdef int64_t sI = p.ss[last], dI = p.ds[last]
    walk_start(p, &w, lo)
    for it in range(lo, hi):
        walk_bounds(p, &w, &nvalid, &nwrite)
        if sI == 1 and dI == 1:
            memcpy(dst + w.do, src + w.so, nvalid * sizeof(word_t))
            memset(dst + w.do + nvalid, 0, (nwrite - nvalid) * sizeof(word_t))
        else:
            for j in range(nvalid):
                dst[w.do + j * dI] = src[w.so + j * sI]
            for j in range(nvalid, nwrite):
                dst[w.do + j * dI] = 0
        walk_next(p, &w)


cdef void _generic(const word_t* src, word_t* dst, const NodeList* p, int nthreads) noexcept nogil:
    # Threads take contiguous ranges of outer iterations: a static split, so every thread
    # streams through its own part of dst and results do not depend on the thread count.
    cdef int64_t outer = outer_count(p)
    cdef int t, nchunks
    if outer == 0 or p.ext[p.n - 1] == 0:
        return
    nchunks = nthreads if outer >= nthreads else <int>outer
    if nchunks <= 1:
        _generic_chunk(src, dst, p, 0, outer)
        return
    for t in prange(nchunks, num_threads=nchunks, schedule="static"):
        _generic_chunk(src, dst, p, outer * t // nchunks, outer * (t + 1) // nchunks)


# ---------------------------------------------------------------------------------------------
# transpose: the innermost node A is dst-contiguous, another node B is src-contiguous
# (nchw -> nChw16c: A = c16, B = h*w; nChw16c -> nchw: A = h*w, B = c16; nchw -> nhwc:
# A = c, B = h*w). B may be two nodes that chain in src (oihw -> OIhw16i16o: B = hw then
# i16, 144 contiguous floats). Each outer position moves an A x B tile with register
# transposes; the work items are (outer position, slice of B), split statically.

cdef struct TileB:
    int64_t n, w, valid, alloc, slice
    int dim                     # logical dim of B's bounds-checked node, else -1
    rows_t rows                 # dst offset of B row b


cdef void _transpose_items(const word_t* src, word_t* dst, const NodeList* p, const TileB* B,
                           int64_t lo, int64_t hi, int nt) noexcept nogil:
    cdef Walk w
    cdef int64_t nslices = (B.n + B.slice - 1) // B.slice
    cdef int64_t outer = lo // nslices, item, b0, b1, nav, naw, nbv, nbw, base
    cdef int last = p.n - 1
    walk_start(p, &w, outer)
    for item in range(lo, hi):
        if item // nslices != outer:
            walk_next(p, &w)
            outer += 1
        walk_bounds(p, &w, &nav, &naw)
        if naw == 0:
            continue
        b0 = (item % nslices) * B.slice
        b1 = b0 + B.slice if b0 + B.slice < B.n else B.n
        nbw = b1 - b0
        nbv = nbw
        if B.dim >= 0:
            # B's checked node is its only node, or its outer one when B spans two
            if B.rows.nlo == 0:
                base = w.coord[B.dim] + b0 * B.w
                nbw = count_below(B.alloc, base, B.w, nbw)
                nbv = count_below(B.valid, base, B.w, nbw)
            else:   # slices start on outer-node boundaries (slice is a multiple of nlo)
                base = w.coord[B.dim] + (b0 // B.rows.nlo) * B.w
                nbw = count_below(B.alloc, base, B.w, nbw // B.rows.nlo) * B.rows.nlo
                nbv = count_below(B.valid, base, B.w, nbw // B.rows.nlo) * B.rows.nlo
        if nbw > 0:
            _tile(src + w.so + b0, p.ss[last], dst + w.do, &B.rows, b0, nav, naw, nbv, nbw, nt)
    if nt:
        reorder_sfence()


cdef void _transpose(const word_t* src, word_t* dst, const NodeList* p, const TileB* B,
                     int nthreads, int nt) noexcept nogil:
    cdef int64_t items = outer_count(p) * ((B.n + B.slice - 1) // B.slice)
    cdef int t, nchunks = nthreads if items >= nthreads else <int>items
    if items == 0:
        return
    if nchunks <= 1:
        _transpose_items(src, dst, p, B, 0, items, nt)
        return
    for t in prange(nchunks, num_threads=nchunks, schedule="static"):
        _transpose_items(src, dst, p, B, items * t // nchunks, items * (t + 1) // nchunks, nt)


cdef class Transpose:
    """Tile-transpose kernel, prepared once per plan.

    nodes    -- outer nodes, then A (dst stride 1) last                         # IN
    checked  -- rows (dim, logical size, dst padded size)                       # IN
    b        -- B as (extent, weight, logical size, dst padded size, dim or -1, slice length,
                nlo, dlo, dhi): row b of B is at dst (b // nlo) * dhi + (b % nlo) * dlo,
                or b * dlo when nlo is 0; weight/dim belong to the checked node    # IN
    nt       -- stream (non-temporal) stores                                    # IN
    """
    cdef NodeList p
    cdef TileB B
    cdef int itemsize, nt

    def __init__(self, int itemsize, const int64_t[:, ::1] nodes, const int64_t[:, ::1] checked,
                 const int64_t[::1] b, bint nt):
        _check_itemsize(itemsize)
        fill_nodes(&self.p, nodes, checked)
        if self.p.ds[self.p.n - 1] != 1 or b.shape[0] != 9 or b[5] < 1 or b[6] < 0 \
                or (b[6] and b[5] % b[6]):
            raise ValueError("transpose needs A (dst stride 1) last and B as 9 numbers")
        self.B.n, self.B.w, self.B.valid, self.B.alloc = b[0], b[1], b[2], b[3]
        self.B.dim, self.B.slice = <int>b[4], b[5]
        self.B.rows.nlo, self.B.rows.dlo, self.B.rows.dhi = b[6], b[7], b[8]
        self.itemsize, self.nt = itemsize, nt

    def run(self, uintptr_t src, uintptr_t dst, int nthreads):
        with nogil:
            if self.itemsize == 1:
                _transpose(<const uint8_t*>src, <uint8_t*>dst, &self.p, &self.B, nthreads, self.nt)
            elif self.itemsize == 2:
                _transpose(<const uint16_t*>src, <uint16_t*>dst, &self.p, &self.B, nthreads, self.nt)
            elif self.itemsize == 4:
                _transpose(<const uint32_t*>src, <uint32_t*>dst, &self.p, &self.B, nthreads, self.nt)
            else:
                _transpose(<const uint64_t*>src, <uint64_t*>dst, &self.p, &self.B, nthreads, self.nt)


# ---------------------------------------------------------------------------------------------
# direct copy: the innermost node is contiguous on both sides and nothing is padded; runs are
# cut into equal byte ranges across threads (a single huge run is split too).

cdef void _copy_items(const char* src, char* dst, const NodeList* p, int64_t size, int64_t piece,
                      int64_t lo, int64_t hi, int nt) noexcept nogil:
    cdef Walk w
    cdef int last = p.n - 1
    cdef int64_t run = p.ext[last], npieces = (run + piece - 1) // piece
    cdef int64_t outer = lo // npieces, item, k0, k1
    walk_start(p, &w, outer)
    for item in range(lo, hi):
        if item // npieces != outer:
            walk_next(p, &w)
            outer += 1
        k0 = (item % npieces) * piece
        k1 = k0 + piece if k0 + piece < run else run
        copy_bytes(dst + (w.do + k0) * size, src + (w.so + k0) * size, (k1 - k0) * size, nt)
    if nt:
        reorder_sfence()


cdef class Copy:
    """Block-copy kernel, prepared once per plan: nodes as for Generic, the last one with
    strides 1 on both sides; runs are cut into pieces of `piece` elements."""
    cdef NodeList p
    cdef int itemsize, nt
    cdef int64_t piece

    def __init__(self, int itemsize, const int64_t[:, ::1] nodes, int64_t piece, bint nt):
        _check_itemsize(itemsize)
        fill_nodes(&self.p, nodes, np.zeros((0, 3), dtype=np.int64))
        if self.p.ss[self.p.n - 1] != 1 or self.p.ds[self.p.n - 1] != 1 or piece < 1:
            raise ValueError("copy needs a contiguous innermost node")
        self.itemsize, self.piece, self.nt = itemsize, piece, nt

    def run(self, uintptr_t src, uintptr_t dst, int nthreads):
        cdef int64_t items = outer_count(&self.p) * ((self.p.ext[self.p.n - 1] + self.piece - 1)
                                                     // self.piece)
        cdef int t, nchunks = nthreads if items >= nthreads else <int>items
        if items == 0:
            return
        with nogil:
            if nchunks <= 1:
                _copy_items(<const char*>src, <char*>dst, &self.p, self.itemsize, self.piece, 0,
                            items, self.nt)
            else:
                for t in prange(nchunks, num_threads=nchunks, schedule="static"):
                    _copy_items(<const char*>src, <char*>dst, &self.p, self.itemsize, self.piece,
                                items * t // nchunks, items * (t + 1) // nchunks, self.nt)


cdef class Generic:
    """Generic kernel, prepared once per plan.

    nodes     -- rows (extent, src stride, dst stride, dim or -1, weight)        # IN
    checked   -- rows (dim, logical size, dst padded size) for padded dims       # IN
    """
    cdef NodeList p
    cdef int itemsize

    def __init__(self, int itemsize, const int64_t[:, ::1] nodes, const int64_t[:, ::1] checked):
        _check_itemsize(itemsize)
        fill_nodes(&self.p, nodes, checked)
        self.itemsize = itemsize

    def run(self, uintptr_t src, uintptr_t dst, int nthreads):
        """src, dst: addresses of logical element (0, ..., 0) of each side."""
        with nogil:
            if self.itemsize == 1:
                _generic(<const uint8_t*>src, <uint8_t*>dst, &self.p, nthreads)
            elif self.itemsize == 2:
                _generic(<const uint16_t*>src, <uint16_t*>dst, &self.p, nthreads)
            elif self.itemsize == 4:
                _generic(<const uint32_t*>src, <uint32_t*>dst, &self.p, nthreads)
            else:
                _generic(<const uint64_t*>src, <uint64_t*>dst, &self.p, nthreads)


cdef int _check_itemsize(int itemsize) except -1:
    if itemsize not in (1, 2, 4, 8):
        raise ValueError(f"element size {itemsize} is not 1, 2, 4 or 8")
    return 0
