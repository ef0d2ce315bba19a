# cython: language_level=3
"""Reorder kernels. Everything here runs without the GIL and never raises: the planner has
validated shapes, strides and buffer sizes in Python before any call.

Pure moves are typed by element size (`word_t`), not meaning: f32 and s32 move as uint32,
f16 and bf16 as uint16, s8 and u8 as uint8.

The walker kernel walks a list of loop nodes (extent, src stride, dst stride), outermost
first; the innermost node is the contiguous run. Nodes of a dim whose iteration space is
padded also carry (dim, weight), so the kernel knows the logical coordinate of each run and
writes zeros into the destination's padding (or skips positions beyond the destination's
allocation, when only the source is padded) in the same pass.
"""
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, getenv
from libc.string cimport memcpy, memset
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_STRIDES
from cython.parallel cimport prange
import numpy as np

from omp cimport (REORDER_OPENMP, REORDER_OPENMP_VERSION, REORDER_BUILD_FLAGS,
                           omp_get_max_threads, omp_get_num_procs, reorder_omp_library)

cdef extern from "<stdlib.h>" nogil:
    int posix_memalign(void** memptr, size_t alignment, size_t size)

OPENMP = bool(REORDER_OPENMP)
OPENMP_VERSION = REORDER_OPENMP_VERSION
BUILD_FLAGS = REORDER_BUILD_FLAGS.decode()


def omp_max_threads():
    return omp_get_max_threads()


def omp_num_procs():
    return omp_get_num_procs()


def omp_library():
    """Path of the OpenMP runtime library the kernels call, or "" (serial build, unknown)."""
    return reorder_omp_library().decode("utf-8", "surrogateescape")


def environ_value(str name):
    """The environment variable `name`, or None when unset, read with C getenv. os.environ
    writes go through putenv, so both see the same value; os.environ.get costs a microsecond
    per call for an unset name (a KeyError inside), and every call resolves threads."""
    cdef bytes key = name.encode()
    cdef const char* v = getenv(key)
    return None if v == NULL else (<bytes>v).decode("utf-8", "surrogateescape")


def data_address(a):
    """Address of a buffer's first element (0 for None): the buffer protocol, ten times
    cheaper than ndarray.ctypes, which matters at a few microseconds per call."""
    cdef Py_buffer v
    cdef uintptr_t p
    if a is None:
        return 0
    PyObject_GetBuffer(a, &v, PyBUF_STRIDES)
    p = <uintptr_t>v.buf
    PyBuffer_Release(&v)
    return p


from nodes cimport (MAX_DIMS, NodeList, Walk, count_below, fill_nodes, outer_count,
                             walk_start, mask_lanes,
                             walk_bounds, walk_next)

ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

from cpu_features cimport cpu_feature_flags, reorder_cpu_detect

# before anything can run a kernel
reorder_cpu_detect()


def cpu_features():
    """The CPU features the SIMD paths use, as detected once at import (common/cpu_features.h)."""
    return cpu_feature_flags()


cdef extern from "move/simd_dispatch.h" nogil:
    ctypedef struct rows_t:
        int64_t nlo, dlo, dhi
        int ahead, cols_first
    ctypedef struct arows_t:
        int64_t nlo, slo, shi, nv_lo, nw_lo, nv_hi, nw_hi
    int reorder_simd_disabled
    int reorder_tile_bits
    int reorder_have_avx512()
    int reorder_have_avx2()
    const char* reorder_simd_name()
    const char* reorder_tile_name(int, const arows_t*, int64_t, int64_t, const rows_t*, int)
    void reorder_sfence()
    void tile_t1(const uint8_t*, const arows_t*, int64_t, uint8_t*, const rows_t*, int64_t, int64_t, int64_t, int)
    void tile_t2(const uint16_t*, const arows_t*, int64_t, uint16_t*, const rows_t*, int64_t, int64_t, int64_t, int)
    void tile_t4(const uint32_t*, const arows_t*, int64_t, uint32_t*, const rows_t*, int64_t, int64_t, int64_t, int)
    void tile_t8(const uint64_t*, const arows_t*, int64_t, uint64_t*, const rows_t*, int64_t, int64_t, int64_t, int)
    void copy_bytes(void*, const void*, int64_t, int)
    void copy_grid(char*, const char*, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int)
    int copy_grid_pair_padded(char*, const char*, int64_t, int64_t, int64_t, int64_t, int64_t,
                              int64_t, int64_t, int64_t, int)
    void copy_part(char*, const char*, int64_t, int64_t, int64_t, int64_t, int64_t)
    int copy_part_masked()


def simd_name():
    return reorder_simd_name().decode()


def set_simd(enabled=True):
    """Choose the tile path: True (the default for this CPU), "avx512", "avx2", or False for
    the portable C loops. Every path writes the same bytes; tests run each one."""
    global reorder_simd_disabled, reorder_tile_bits
    reorder_simd_disabled = 0 if enabled else 1
    if enabled is True:
        reorder_tile_bits = DEFAULT_TILE_BITS
    elif enabled in ("avx512", "avx2"):
        reorder_tile_bits = 512 if enabled == "avx512" else 256
    elif enabled is not False:
        raise ValueError(f"set_simd takes True, False, 'avx512' or 'avx2', got {enabled!r}")


def simd_paths():
    """The tile paths this CPU can run, for tests."""
    return [p for p, ok in (("avx512", reorder_have_avx512()), ("avx2", reorder_have_avx2())) if ok]


# 16x16 AVX-512 transposes where available, even on CPUs that split 512-bit shuffles
# (docs/kernels.md), else AVX2.
DEFAULT_TILE_BITS = 512 if reorder_have_avx512() else 256
reorder_tile_bits = DEFAULT_TILE_BITS


cdef inline void _tile(const word_t* s, const arows_t* A, int64_t na, word_t* d, const rows_t* rows,
                       int64_t bs, int64_t nbv, int64_t nbw, int nt) noexcept nogil:
    if word_t is uint8_t:
        tile_t1(s, A, na, d, rows, bs, nbv, nbw, nt)
    elif word_t is uint16_t:
        tile_t2(s, A, na, d, rows, bs, nbv, nbw, nt)
    elif word_t is uint32_t:
        tile_t4(s, A, na, d, rows, bs, nbv, nbw, nt)
    else:
        tile_t8(s, A, na, d, rows, bs, nbv, nbw, nt)


# ---------------------------------------------------------------------------------------------
# transpose: the innermost node A is dst-contiguous, another node B is src-contiguous
# (nchw -> nChw16c: A = c16, B = h*w; nChw16c -> nchw: A = h*w, B = c16; nchw -> nhwc:
# A = c, B = h*w). B may be two nodes that chain in src (oihw -> OIhw16i16o: B = hw then
# i16, 144 contiguous floats), and A two nodes that chain in dst (OIhw4i16o4i: A = i4 then
# o16, 64 contiguous floats). Each outer position moves an A x B tile with register
# transposes; the work items are (outer position, slice of B), split statically.

cdef struct TileA:
    int64_t n_hi, s_hi, w, valid, alloc
    int dim                     # A's outer node's logical dim when bounds-checked, else -1
    bint two                    # A spans two nodes (the walker's last node is its inner one)

cdef struct TileB:
    int64_t n, w, valid, alloc, slice
    int dim                     # logical dim of B's bounds-checked node, else -1
    rows_t rows                 # dst offset of B row b
    bint copy_out               # a work item's rows go through a scratch (Transpose)
    int64_t copy_lanes          # 0: the rows lie back to back, copied out whole; else far
                                # apart, copied out this many lanes of A at a time


cdef void _transpose_items(const word_t* src, word_t* dst, const NodeList* p, const TileA* TA,
                           const TileB* B, int64_t lo, int64_t hi, int nt) noexcept nogil:
    cdef Walk w
    cdef arows_t A
    cdef int64_t nslices = (B.n + B.slice - 1) // B.slice
    cdef int64_t item, sl = lo % nslices, b0, b1, nav, naw, nbv, nbw, base, na
    cdef int last = p.n - 1
    cdef void* scratch = NULL
    cdef word_t* scr = NULL
    cdef rows_t srows
    cdef arows_t Ac
    cdef int64_t a0, ca, r
    srows.nlo, srows.dhi, srows.ahead, srows.cols_first = 0, 0, 0, 0
    srows.dlo = B.copy_lanes if B.copy_lanes else p.ext[last]
    if B.copy_out and not nt and posix_memalign(
            &scratch, 64, B.slice * srows.dlo * sizeof(word_t)) == 0:
        scr = <word_t*>scratch          # else (no memory) the tiles write dst directly
    A.slo = p.ss[last]
    A.shi = TA.s_hi
    A.nlo = p.ext[last] if TA.two else 0
    walk_start(p, &w, lo // nslices)
    walk_bounds(p, &w, &nav, &naw)
    for item in range(lo, hi):      # item = outer * nslices + sl
        if naw > 0:
            A.nv_lo, A.nw_lo, A.nv_hi, A.nw_hi = nav, naw, 1, 1
            na = naw
            if TA.two:
                na = p.ext[last] * TA.n_hi
                A.nv_hi = TA.n_hi
                A.nw_hi = TA.n_hi
                if TA.dim >= 0:
                    A.nw_hi = count_below(TA.alloc, w.coord[TA.dim], TA.w, TA.n_hi)
                    A.nv_hi = count_below(TA.valid, w.coord[TA.dim], TA.w, A.nw_hi)
            b0 = sl * B.slice
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
            if nbw > 0 and scr != NULL and naw == p.ext[last] and B.copy_lanes == 0:
                # the slice's rows lie back to back in dst: built in the scratch (in L2),
                # then copied out whole, in sequence
                _tile(src + w.so + b0, &A, na, scr, &B.rows, 0, nbv, nbw, 0)
                memcpy(dst + w.do + b0 * naw, scr, nbw * naw * sizeof(word_t))
            elif nbw > 0 and scr != NULL and nav == naw == p.ext[last]:
                # the rows lie far apart in dst: a chunk of A at a time is built in the
                # scratch (in L1), then each row's part is copied out in turn, so the stores
                # never go to all the rows at once
                Ac = A
                a0 = 0
                while a0 < na:
                    ca = B.copy_lanes if na - a0 > B.copy_lanes else na - a0
                    Ac.nv_lo, Ac.nw_lo = ca, ca
                    _tile(src + w.so + b0 + a0 * A.slo, &Ac, ca, scr, &srows, 0, nbw, nbw, 0)
                    for r in range(nbw):
                        memcpy(dst + w.do + (b0 + r) * B.rows.dlo + a0, scr + r * srows.dlo,
                               ca * sizeof(word_t))
                    a0 += ca
            elif nbw > 0:
                _tile(src + w.so + b0, &A, na, dst + w.do, &B.rows, b0, nbv, nbw, nt)
        sl += 1
        if sl == nslices:
            sl = 0
            if item + 1 < hi:
                walk_next(p, &w)
                walk_bounds(p, &w, &nav, &naw)
    if nt:
        reorder_sfence()
    free(scratch)


cdef void _transpose(const word_t* src, word_t* dst, const NodeList* p, const TileA* A,
                     const TileB* B, int nthreads, int nt) noexcept nogil:
    cdef int64_t items = outer_count(p) * ((B.n + B.slice - 1) // B.slice)
    cdef int t, nchunks = nthreads if items >= nthreads else <int>items
    if items == 0:
        return
    if nchunks <= 1:
        _transpose_items(src, dst, p, A, B, 0, items, nt)
        return
    for t in prange(nchunks, num_threads=nchunks, schedule="static"):
        _transpose_items(src, dst, p, A, B, items * t // nchunks, items * (t + 1) // nchunks, nt)


cdef class Transpose:
    """Tile-transpose kernel, prepared once per plan.

    nodes    -- outer nodes, then A (dst stride 1) last                         # IN
    checked  -- rows (dim, logical size, dst padded size)                       # IN
    a        -- A's outer node when A spans two: (extent, src stride, weight, logical size,
                dst padded size, dim or -1), or extent 0 when A is one node      # IN
    b        -- B as (extent, weight, logical size, dst padded size, dim or -1, slice length,
                nlo, dlo, dhi): row b of B is at dst (b // nlo) * dhi + (b % nlo) * dlo,
                or b * dlo when nlo is 0; weight/dim belong to the checked node    # IN
    nt       -- stream (non-temporal) stores                                    # IN
    ahead    -- byte tiles fetch the dst lines of their next row group early     # IN
    cols_first  the AVX-512 tiles' uniform rows walk B's columns outermost: 1 with
                cached stores, 2 with streaming ones, 3 with both            # IN
    copy_out -- with cached stores, each work item's B rows (nlo 0, B unchecked, A one
                node) are built in a scratch: where they lie back to back in dst (dlo =
                A's extent), slice x A elements copied out whole; else         # IN
    copy_lanes  slice x copy_lanes elements at a time (a multiple of 16), each row's
                part copied out in turn                                          # IN
    """
    cdef NodeList p
    cdef TileA A
    cdef TileB B
    cdef int itemsize
    cdef readonly bint nt       # streaming stores, as the plan decided

    def __init__(self, int itemsize, const int64_t[:, ::1] nodes, const int64_t[:, ::1] checked,
                 const int64_t[::1] a, const int64_t[::1] b, bint nt, bint ahead=False,
                 bint copy_out=False, int64_t copy_lanes=0, int cols_first=0):
        _check_itemsize(itemsize)
        fill_nodes(&self.p, nodes, checked)
        if self.p.ds[self.p.n - 1] != 1 or b.shape[0] != 9 or b[5] < 1 or b[6] < 0 \
                or (b[6] and b[5] % b[6]) or a.shape[0] != 6 or a[0] < 0:
            raise ValueError("transpose needs A (dst stride 1) last, A's outer node as 6 numbers "
                             "and B as 9")
        self.A.two = a[0] > 0
        self.A.n_hi, self.A.s_hi, self.A.w, self.A.valid, self.A.alloc = a[0], a[1], a[2], a[3], a[4]
        self.A.dim = <int>a[5]
        self.B.n, self.B.w, self.B.valid, self.B.alloc = b[0], b[1], b[2], b[3]
        self.B.dim, self.B.slice = <int>b[4], b[5]
        self.B.rows.nlo, self.B.rows.dlo, self.B.rows.dhi = b[6], b[7], b[8]
        self.B.rows.ahead = ahead
        self.B.rows.cols_first = cols_first
        self.itemsize, self.nt = itemsize, nt
        if copy_out and (self.A.two or b[6] or b[4] >= 0 or copy_lanes < 0 or copy_lanes % 16
                         or (copy_lanes == 0 and b[7] != self.p.ext[self.p.n - 1])
                         or (copy_lanes and self.p.ext[self.p.n - 1] % 16)):
            raise ValueError("copy_out needs B's rows on one level, B unchecked, A one node, "
                             "and the rows back to back in dst (A's extent apart) or "
                             "copy_lanes a positive multiple of 16, with A whole groups of 16 "
                             "(no chunk shorter than a tile)")
        if cols_first < 0 or cols_first > 3:
            raise ValueError("cols_first must be 0-3 (1 cached, 2 streamed)")
        self.B.copy_out = copy_out
        self.B.copy_lanes = copy_lanes if copy_out else 0

    @property
    def ahead(self):
        """Whether byte tiles fetch the dst lines of their next row group early (the plan's
        choice)."""
        return bool(self.B.rows.ahead)

    @property
    def cols_first(self):
        """The stores with which the AVX-512 tiles walk B's columns outermost, all of A's rows
        at each: a tuple of "cached" and "streamed" (the plan's choice)."""
        return tuple(m for bit, m in ((1, "cached"), (2, "streamed")) if self.B.rows.cols_first & bit)

    @property
    def slice(self):
        """The columns of B one work item moves (the plan's choice)."""
        return self.B.slice

    @property
    def copy_out(self):
        """Whether a work item's rows are built in a scratch and copied out whole (the
        plan's choice; cached stores only)."""
        return bool(self.B.copy_out)

    @property
    def copy_lanes(self):
        """The lanes of A a far-rows copy-out builds at a time, or 0 (rows back to back, or
        no copy-out)."""
        return self.B.copy_lanes

    @property
    def tile(self):
        """The register-tile path this runner takes now (it follows set_simd), for a full
        slice of B at the first outer position."""
        cdef int last = self.p.n - 1
        cdef arows_t A
        cdef Walk w
        cdef int64_t nav, naw
        walk_start(&self.p, &w, 0)
        walk_bounds(&self.p, &w, &nav, &naw)
        A.nlo = self.p.ext[last] if self.A.two else 0
        A.slo, A.shi = self.p.ss[last], self.A.s_hi
        A.nv_lo, A.nw_lo, A.nv_hi, A.nw_hi = nav, naw, 1, 1
        if self.A.two:
            A.nv_hi = A.nw_hi = self.A.n_hi
        cdef int64_t na = self.p.ext[last] * self.A.n_hi if self.A.two else naw
        cdef int64_t nb = self.B.n if self.B.n < self.B.slice else self.B.slice
        return reorder_tile_name(self.itemsize, &A, na, nb, &self.B.rows, self.nt).decode()

    def run(self, uintptr_t src, uintptr_t dst, int nthreads, bint stream=True):
        """stream=False keeps this call's stores cached where the runner would stream."""
        cdef bint nt = self.nt and stream
        with nogil:
            if self.itemsize == 1:
                _transpose(<const uint8_t*>src, <uint8_t*>dst, &self.p, &self.A, &self.B, nthreads, nt)
            elif self.itemsize == 2:
                _transpose(<const uint16_t*>src, <uint16_t*>dst, &self.p, &self.A, &self.B, nthreads, nt)
            elif self.itemsize == 4:
                _transpose(<const uint32_t*>src, <uint32_t*>dst, &self.p, &self.A, &self.B, nthreads, nt)
            else:
                _transpose(<const uint64_t*>src, <uint64_t*>dst, &self.p, &self.A, &self.B, nthreads, nt)


# ---------------------------------------------------------------------------------------------
# walk: the generic kernel, and the direct copy. Outer nodes are walked, an unchecked row node
# (the one before the run) is looped directly, and the run is copied (memcpy or fixed-size
# vector moves when contiguous on both sides, a strided loop otherwise) with its padding
# zeroed. Work items are (outer position, slice of rows, piece of the run), so even a single
# long run spreads over threads.

cdef struct Rows:
    int64_t n, ss, ds, slice, piece
    int slab                    # the run is a padded block's lanes, the rows dense (Walker)
    # the cross node, looped whole inside each row (extent 1 when absent); cdim >= 0 when
    # its positions are bounds-checked along that dim, cw apart
    int64_t cn, css, cds, cw
    int cdim
    # a grid with padded columns makes one pass per column: this many rows a pass (0: all)
    int64_t chunk


cdef void _slab_rows(const word_t* s, word_t* d, int64_t rows, int64_t L, int64_t nvalid,
                     int nt) noexcept nogil:
    """`rows` rows of L lanes, dense on both sides, nvalid of them data: one copy when every
    lane is data, else one masked pass: masked loads (rows of 16 bytes four to a store)
    where the CPU has them, else 8-byte ANDs, whose speed depended on whether the compiler
    inlined them (docs/kernels.md)."""
    cdef int64_t rb = L * sizeof(word_t)
    if nvalid == L:
        copy_bytes(d, s, rows * L * sizeof(word_t), nt)
    elif copy_part_masked():
        copy_part(<char*>d, <const char*>s, rows, rb, rb, nvalid * sizeof(word_t), rb)
    else:
        mask_lanes(<char*>d, <const char*>s, rows, L * sizeof(word_t), nvalid * sizeof(word_t))


cdef inline void _cross_bounds(const NodeList* p, Walk* w, const Rows* R, int64_t c,
                              int64_t* nvalid, int64_t* nwrite) noexcept nogil:
    """walk_bounds for column c of the cross node."""
    if R.cdim >= 0:
        w.coord[R.cdim] += c * R.cw
    walk_bounds(p, w, nvalid, nwrite)
    if R.cdim >= 0:
        w.coord[R.cdim] -= c * R.cw


cdef void _grid_rows(const word_t* s, word_t* d, const NodeList* p, Walk* w, const Rows* R,
                     int64_t nr, int nt) noexcept nogil:
    """nr rows x the whole cross node of short runs, contiguous on both sides: the columns
    whose runs are all data as one grid of fixed-size copies, then the padded ones (two
    columns interleaved in dst, padded or not, as one masked pass)."""
    cdef int64_t run = p.ext[p.n - 1], c, full = 0, nvalid, nwrite, nv1, nw1
    # positions grow along the cross node, so the all-data columns come first
    while full < R.cn:
        _cross_bounds(p, w, R, full, &nvalid, &nwrite)
        if nvalid != run:
            break
        full += 1
    if full < R.cn and R.cn == 2 and nwrite == run:
        _cross_bounds(p, w, R, 1, &nv1, &nw1)
        if full == 1:
            nvalid, nwrite = run, run
        if nw1 == run and copy_grid_pair_padded(
                <char*>d, <const char*>s, nr, R.ss * sizeof(word_t), R.ds * sizeof(word_t),
                R.css * sizeof(word_t), R.cds * sizeof(word_t), run * sizeof(word_t),
                nvalid * sizeof(word_t), nv1 * sizeof(word_t), nt):
            return
    # the columns' passes go a chunk of rows at a time, so the later ones find the source
    # lines the first read still in L1
    cdef int64_t r0 = 0, m, chunk = R.chunk if 0 < R.chunk and full < R.cn else nr
    while r0 < nr:
        m = chunk if chunk < nr - r0 else nr - r0
        if full > 0:
            copy_grid(<char*>(d + r0 * R.ds), <const char*>(s + r0 * R.ss), m,
                      R.ss * sizeof(word_t), R.ds * sizeof(word_t), full, R.css * sizeof(word_t),
                      R.cds * sizeof(word_t), run * sizeof(word_t), nt)
        for c in range(full, R.cn):
            _cross_bounds(p, w, R, c, &nvalid, &nwrite)
            if nwrite > 0:
                copy_part(<char*>(d + r0 * R.ds + c * R.cds),
                          <const char*>(s + r0 * R.ss + c * R.css), m, R.ss * sizeof(word_t),
                          R.ds * sizeof(word_t), nvalid * sizeof(word_t), nwrite * sizeof(word_t))
        r0 += m


cdef void _walk_items(const word_t* src, word_t* dst, const NodeList* p, const Rows* R,
                      int64_t lo, int64_t hi, int nt) noexcept nogil:
    cdef Walk w
    cdef int last = p.n - 1
    cdef int64_t run = p.ext[last], sI = p.ss[last], dI = p.ds[last]
    cdef int64_t nps = (run + R.piece - 1) // R.piece, nrs = (R.n + R.slice - 1) // R.slice
    cdef int64_t item, ps, rs, r, r0, r1, k0, k1, v1, j, nvalid, nwrite
    cdef const word_t* s
    cdef word_t* d
    # item = (outer * nrs + rs) * nps + ps; counters advance without divisions
    ps = lo % nps
    rs = (lo // nps) % nrs
    walk_start(p, &w, lo // (nps * nrs))
    walk_bounds(p, &w, &nvalid, &nwrite)
    for item in range(lo, hi):
        k0 = ps * R.piece
        k1 = k0 + R.piece if k0 + R.piece < nwrite else nwrite
        if k0 < k1:
            v1 = nvalid if nvalid < k1 else k1
            if v1 < k0:
                v1 = k0
            r0 = rs * R.slice
            r1 = r0 + R.slice if r0 + R.slice < R.n else R.n
            if R.cn > 1:
                _grid_rows(src + w.so + r0 * R.ss, dst + w.do + r0 * R.ds, p, &w, R, r1 - r0, nt)
                r1 = r0
            if R.slab and k0 == 0 and k1 == run and v1 > 0 and (v1 == run or not nt):
                # (streamed stores keep the per-row path: the zeroing would read them back)
                _slab_rows(src + w.so + r0 * R.ss, dst + w.do + r0 * R.ds, r1 - r0, run, v1, nt)
                r1 = r0
            for r in range(r0, r1):
                s = src + w.so + r * R.ss
                d = dst + w.do + r * R.ds
                if sI == 1 and dI == 1:
                    copy_bytes(d + k0, s + k0, (v1 - k0) * sizeof(word_t), nt)
                    memset(d + v1, 0, (k1 - v1) * sizeof(word_t))
                else:
                    for j in range(k0, v1):
                        d[j * dI] = s[j * sI]
                    for j in range(v1, k1):
                        d[j * dI] = 0
        ps += 1
        if ps == nps:
            ps = 0
            rs += 1
            if rs == nrs:
                rs = 0
                if item + 1 < hi:
                    walk_next(p, &w)
                    walk_bounds(p, &w, &nvalid, &nwrite)
    if nt:
        reorder_sfence()


cdef void _walk(const word_t* src, word_t* dst, const NodeList* p, const Rows* R, int nthreads,
                int nt) noexcept nogil:
    # A static split into contiguous ranges of work items: each thread streams through its
    # own part of dst, and the bytes written do not depend on the thread count.
    cdef int64_t items = outer_count(p) * ((R.n + R.slice - 1) // R.slice) \
        * ((p.ext[p.n - 1] + R.piece - 1) // R.piece)
    cdef int t, nchunks = nthreads if items >= nthreads else <int>items
    if items == 0 or p.ext[p.n - 1] == 0 or R.cn == 0:
        return
    if nchunks <= 1:
        _walk_items(src, dst, p, R, 0, items, nt)
        return
    for t in prange(nchunks, num_threads=nchunks, schedule="static"):
        _walk_items(src, dst, p, R, items * t // nchunks, items * (t + 1) // nchunks, nt)


cdef class Walker:
    """The generic (and direct-copy) kernel, prepared once per plan.

    nodes    -- outer nodes, then the run; rows (extent, src stride, dst stride, dim or -1,
                weight)                                                          # IN
    checked  -- rows (dim, logical size, dst padded size) for padded dims        # IN
    rows     -- the row node looped inside a work item: (extent, src stride, dst stride,
                rows per item, run elements per item)                            # IN
    nt       -- stream (non-temporal) stores for contiguous runs                 # IN
    slab     -- the run is a padded block's lanes (strides 1, a checked dim) and the rows
                its rows (strides = the run's extent): whole rows move as one copy, the
                padding lanes zeroed after. The plan vouches that the source holds every
                lane (its padding is read, never kept)                           # IN
    cross    -- None, or a node (extent, src stride, dst stride, dim or -1, weight) looped
                whole inside each row, for short runs contiguous on both sides: nhwc ->
                nChw16c loops the pixels as rows and a pixel's channel blocks across them,
                so every item copies a grid of fixed-size runs. Positions must grow along
                it (weight >= 1)                                                 # IN
    grid_chunk -- rows a pass where the grid's padded columns take a pass each (0: all
                the item's rows at once)                                         # IN
    """
    cdef NodeList p
    cdef Rows R
    cdef int itemsize
    cdef readonly bint nt       # streaming stores, as the plan decided

    def __init__(self, int itemsize, const int64_t[:, ::1] nodes, const int64_t[:, ::1] checked,
                 const int64_t[::1] rows, bint nt, bint slab=False, cross=None,
                 int64_t grid_chunk=0):
        cdef int last
        cdef int64_t[::1] cr
        _check_itemsize(itemsize)
        fill_nodes(&self.p, nodes, checked)
        if rows.shape[0] != 5 or rows[0] < 1 or rows[3] < 1 or rows[4] < 1:
            raise ValueError("rows must be (extent >= 1, src stride, dst stride, slice >= 1, piece >= 1)")
        self.R.n, self.R.ss, self.R.ds, self.R.slice, self.R.piece = rows[0], rows[1], rows[2], rows[3], rows[4]
        last = self.p.n - 1
        if slab and not (self.p.ss[last] == 1 and self.p.ds[last] == 1 and self.p.dim[last] >= 0
                         and rows[1] == rows[2] == self.p.ext[last]):
            raise ValueError("slab: the run is not a padded block's lanes, or the rows are not "
                             "dense on both sides")
        self.R.slab = slab
        self.R.cn, self.R.css, self.R.cds, self.R.cdim, self.R.cw = 1, 0, 0, -1, 1
        if cross is not None:
            cr = np.ascontiguousarray(cross, dtype=np.int64)
            if cr.shape[0] != 5 or cr[0] < 0 or not -1 <= cr[3] < MAX_DIMS or cr[4] < 1:
                raise ValueError("cross must be (extent >= 0, src stride, dst stride, dim or -1, "
                                 "weight >= 1)")
            if slab or not (self.p.ss[last] == 1 and self.p.ds[last] == 1):
                raise ValueError("cross: the run is not contiguous on both sides, or a slab "
                                 "was asked too")
            self.R.cn, self.R.css, self.R.cds, self.R.cdim, self.R.cw = cr[0], cr[1], cr[2], cr[3], cr[4]
        if grid_chunk < 0:
            raise ValueError("grid_chunk must be >= 0 rows (0: all rows a pass)")
        self.R.chunk = grid_chunk
        self.itemsize, self.nt = itemsize, nt

    @property
    def slab(self):
        """True when padded blocks move a slab of whole rows at a time (see above)."""
        return bool(self.R.slab)

    @property
    def cross(self):
        """The cross node's extent (1: none)."""
        return self.R.cn

    def run(self, uintptr_t src, uintptr_t dst, int nthreads, bint stream=True):
        """src, dst: addresses of logical element (0, ..., 0) of each side; stream=False
        keeps this call's stores cached where the runner would stream."""
        cdef bint nt = self.nt and stream
        with nogil:
            if self.itemsize == 1:
                _walk(<const uint8_t*>src, <uint8_t*>dst, &self.p, &self.R, nthreads, nt)
            elif self.itemsize == 2:
                _walk(<const uint16_t*>src, <uint16_t*>dst, &self.p, &self.R, nthreads, nt)
            elif self.itemsize == 4:
                _walk(<const uint32_t*>src, <uint32_t*>dst, &self.p, &self.R, nthreads, nt)
            else:
                _walk(<const uint64_t*>src, <uint64_t*>dst, &self.p, &self.R, nthreads, nt)


cdef int _check_itemsize(int itemsize) except -1:
    if itemsize not in (1, 2, 4, 8):
        raise ValueError(f"element size {itemsize} is not 1, 2, 4 or 8")
    return 0


# ---------------------------------------------------------------------------------------------
# blocks: conv weights with small spatial dims (oihw <-> OIhw16i16o, OIhw4i16o4i, ...). Each
# outer position is one R x C block (an O block x an I block x h*w), moved in two stages
# through an L1 scratch (move/blocks.h). The blocks are split statically over the threads.

from libc.stdint cimport int32_t

cdef extern from "move/blocks.h" nogil:
    enum: BLK_MAX_BYTES
    ctypedef struct blk_t:
        int64_t R, C, il, rs
        const int32_t* q
        const int64_t* coff
        int esize
        int64_t vk
    int blk_have_avx2()
    int blk_have_avx512()
    void blk_prepare(blk_t*)
    void blk_to_blocked(const blk_t*, const char*, char*, int64_t, int64_t, char*, char*, int, int)
    void blk_to_plain(const blk_t*, const char*, char*, int64_t, int64_t, char*, char*, int, int)
    void blk_plain_zeros(const blk_t*, char*, int64_t, int64_t)



# the largest block (bytes) the kernel's scratch holds
BLOCK_MAX_BYTES = BLK_MAX_BYTES


cdef int _blocks_simd() noexcept nogil:
    """The block kernel's path under set_simd: 2 AVX-512 (F, BW, VBMI) where the tiles are
    512 bits wide, 1 AVX2, 0 portable."""
    if reorder_simd_disabled or not blk_have_avx2():
        return 0
    return 2 if reorder_tile_bits == 512 and blk_have_avx512() else 1


def block_paths():
    """The paths the block kernel can take on this CPU, for tests."""
    return [p for p, ok in (("avx512", blk_have_avx512()), ("avx2", blk_have_avx2())) if ok]


cdef struct BlockDims:
    int to_blocked
    int rdim                    # logical dim of the rows when bounds-checked, else -1
    int cdim                    # logical dim of the columns' checked part, else -1
    int64_t rw                  # logical step of a row along rdim
    int64_t cunit               # columns per step of cdim
    int prezeroed               # the run zeroed the destination: padding blocks are skipped


cdef void _blocks_items(const char* src, char* dst, const NodeList* p, const blk_t* b,
                        const BlockDims* D, int64_t lo, int64_t hi, int nt, int simd) noexcept nogil:
    cdef char buf[2 * BLK_MAX_BYTES + 64]
    cdef char* T = <char*>((<uintptr_t>buf + 63) & ~(<uintptr_t>63))
    cdef char* T2 = T + BLK_MAX_BYTES
    cdef Walk w
    cdef int64_t item, rv, cv, e = b.esize
    cdef int c, d
    cdef bint skip, pad
    walk_start(p, &w, lo)
    for item in range(lo, hi):
        rv = b.R
        cv = b.C
        skip = False
        pad = False
        for c in range(p.nchecked):
            d = p.checked[c]
            if d == D.rdim:
                rv = count_below(p.valid[d], w.coord[d], D.rw, b.R)
            elif d == D.cdim:
                cv = count_below(p.valid[d], w.coord[d], 1, b.C // D.cunit) * D.cunit
            elif w.coord[d] >= p.alloc[d]:
                skip = True             # beyond the destination: nothing to write
            elif w.coord[d] >= p.valid[d]:
                pad = True              # destination padding: zeros
        if pad and not skip:
            # the whole block is destination padding: zeros over the part dst holds (already
            # there when the run zeroed the destination first)
            if D.to_blocked:
                blk_to_blocked(b, src + w.so * e, dst + w.do * e, 0, 0, T, T2, nt, simd)
            elif not D.prezeroed:
                blk_plain_zeros(b, dst + w.do * e, rv, cv)
        elif not skip:
            if D.to_blocked:
                blk_to_blocked(b, src + w.so * e, dst + w.do * e, rv, cv, T, T2, nt, simd)
            else:
                blk_to_plain(b, src + w.so * e, dst + w.do * e, rv, cv, T, T2, nt, simd)
        if item + 1 < hi:
            walk_next(p, &w)
    if nt:
        reorder_sfence()


cdef class Blocks:
    """Block kernel, prepared once per plan.

    nodes    -- the outer nodes, one block per position: rows (extent, src stride, dst
                stride, dim or -1, weight)                                       # IN
    checked  -- rows (dim, logical size, dst padded size)                       # IN
    q        -- per plain column, its scratch row (int32, C entries)             # IN
    shape    -- (R, C, il, plain row stride, to_blocked, row dim or -1, row weight,
                column dim or -1, columns per column-dim step)                   # IN
    nt       -- stream (non-temporal) stores                                    # IN
    coff     -- runs: per plain column, its plain offset in elements (int64, C entries);
                the rows are contiguous (row stride 1) and each column is a run of R
                elements. None: the columns are contiguous.                     # IN
    zero_bytes -- blocked -> plain into a destination padded in a dim outside the block:
                the destination's size; each call zeroes it first and skips the blocks that
                lie wholly in that padding. 0: such blocks are zeroed one by one.   # IN
    """
    cdef NodeList p
    cdef blk_t b
    cdef BlockDims D
    cdef object q_keep, coff_keep
    cdef readonly bint nt       # streaming stores, as the plan decided
    cdef readonly int64_t zero_bytes

    def __init__(self, int itemsize, const int64_t[:, ::1] nodes, const int64_t[:, ::1] checked,
                 q, const int64_t[::1] shape, bint nt, coff=None, int64_t zero_bytes=0):
        cdef const int32_t[::1] qv = q
        cdef const int64_t[::1] cv
        cdef int64_t k
        if itemsize not in (1, 2, 4, 8):
            raise ValueError(f"block element size {itemsize} is not 1, 2, 4 or 8")
        if shape.shape[0] != 9:
            raise ValueError("block shape must be 9 numbers")
        R, C, il = shape[0], shape[1], shape[2]
        if R < 1 or C < 1 or il < 1 or C % il or qv.shape[0] != C or shape[8] < 1 \
                or C % shape[8] or R * C * itemsize > BLK_MAX_BYTES:
            raise ValueError(f"bad block: {R} x {C}, interleave {il}, {itemsize}-byte elements")
        for k in range(C):
            if not 0 <= qv[k] < C:
                raise ValueError(f"scratch row {qv[k]} of column {k} is outside 0..{C - 1}")
        taken = np.bincount(np.asarray(qv), minlength=C)
        if taken.max() > 1:
            raise ValueError(f"scratch row {int(taken.argmax())} takes more than one column")
        rows = np.concatenate([np.asarray(nodes), np.array([[1, 0, 0, -1, 1]], np.int64)])
        fill_nodes(&self.p, rows, checked)
        self.q_keep = qv
        self.b.R, self.b.C, self.b.il, self.b.rs = R, C, il, shape[3]
        self.b.q = &qv[0]
        self.b.coff = NULL
        if coff is not None:
            cv = coff
            if cv.shape[0] != C or shape[3] != 1:
                raise ValueError(f"runs need {C} column offsets and a row stride of 1")
            self.coff_keep = cv
            self.b.coff = &cv[0]
        self.b.esize = itemsize
        blk_prepare(&self.b)
        self.D.to_blocked = shape[4] != 0
        self.D.rdim, self.D.rw = <int>shape[5], shape[6]
        self.D.cdim, self.D.cunit = <int>shape[7], shape[8]
        if zero_bytes < 0 or (zero_bytes and self.D.to_blocked):
            raise ValueError(f"zero_bytes {zero_bytes}: only blocks to the plain side take a "
                             f"zeroed destination")
        self.D.prezeroed = zero_bytes > 0
        self.zero_bytes = zero_bytes
        self.nt = nt

    @property
    def path(self):
        """The path this runner takes now (it follows set_simd): 'avx512', 'avx2' or
        'portable'."""
        return ("portable", "avx2", "avx512")[_blocks_simd()]

    @property
    def runs(self):
        """Whether the plain side's columns are runs of R contiguous elements (hwio), moved
        whole to and from the scratch rows."""
        return self.b.coff != NULL

    @property
    def to_blocked(self):
        """Whether blocks move from the plain side to the blocked side (else back)."""
        return self.D.to_blocked != 0

    @property
    def in_registers(self):
        """Whether the AVX-512 path moves a block in registers, a segment of columns at a
        time (1- and 2-byte elements, 16 rows, see move/blocks.h) instead of through the tiles."""
        return self.b.vk > 0

    def run(self, uintptr_t src, uintptr_t dst, int nthreads, bint stream=True):
        """stream=False keeps this call's stores cached where the runner would stream."""
        cdef int64_t items = outer_count(&self.p)
        cdef bint nt = self.nt and stream
        cdef int t, nchunks = nthreads if items >= nthreads else <int>items
        cdef int simd = _blocks_simd()
        cdef int64_t zb = self.zero_bytes
        if items == 0:
            return
        with nogil:
            # the padding outside the blocks in one pass, before any block lands in it
            if zb and nchunks <= 1:
                memset(<char*>dst, 0, zb)
            elif zb:
                for t in prange(nchunks, num_threads=nchunks, schedule="static"):
                    memset(<char*>dst + zb * t // nchunks, 0, zb * (t + 1) // nchunks - zb * t // nchunks)
            if nchunks <= 1:
                _blocks_items(<const char*>src, <char*>dst, &self.p, &self.b, &self.D, 0, items,
                              nt, simd)
            else:
                for t in prange(nchunks, num_threads=nchunks, schedule="static"):
                    _blocks_items(<const char*>src, <char*>dst, &self.p, &self.b, &self.D,
                                  items * t // nchunks, items * (t + 1) // nchunks, nt, simd)


# ---------------------------------------------------------------------------------------------
# interleave: rows of pixels with a few channels side by side <-> one plane a channel (nhwc <->
# nchw of images), permuted in registers (move/interleave.h). Work items are (outer position,
# slice of the row), split statically over the threads.

cdef extern from "move/interleave.h" nogil:
    enum: ILV_MAX_C
    ctypedef struct ilv_t:
        int C, esize, to_planes
        int64_t ps
    void ilv_prepare(ilv_t*, int, int, int, int64_t)
    int ilv_have_avx512(int)
    void ilv_row(const ilv_t*, const char*, char*, int64_t, int, int)


# the most channels the interleave kernel's tables hold
INTERLEAVE_MAX_CHANNELS = ILV_MAX_C


cdef int _interleave_simd() noexcept nogil:
    """1: the AVX-512 permutes (where the CPU has them for the element size) while the tiles
    are 512 bits wide under set_simd; 0: the portable loop."""
    return 0 if reorder_simd_disabled or reorder_tile_bits != 512 else 1


def interleave_paths(int itemsize):
    """The paths the interleave kernel can take on this CPU for an element size, for tests
    and the planner."""
    return ["avx512"] if ilv_have_avx512(itemsize) else []


cdef void _interleave_items(const char* src, char* dst, const NodeList* p, const ilv_t* t,
                            int64_t n, int64_t piece, int64_t pieces, int64_t lo, int64_t hi,
                            int nt, int simd) noexcept nogil:
    cdef Walk w
    cdef int64_t item, pos = lo // pieces, first, m, e = t.esize, C = t.C
    walk_start(p, &w, pos)
    for item in range(lo, hi):
        if item // pieces != pos:
            pos += 1
            walk_next(p, &w)
        first = (item % pieces) * piece
        m = n - first if n - first < piece else piece
        if t.to_planes:
            ilv_row(t, src + (w.so + first * C) * e, dst + (w.do + first) * e, m, simd, nt)
        else:
            ilv_row(t, src + (w.so + first) * e, dst + (w.do + first * C) * e, m, simd, nt)
    if nt:
        reorder_sfence()


cdef class Interleave:
    """Interleave kernel, prepared once per plan.

    nodes    -- the outer nodes, one row per position (extent, src stride, dst stride, dim or
                -1, weight)                                                      # IN
    shape    -- (C channels, n pixels a row, plane stride of the planar side, to_planes,
                pixels a work item takes)                                        # IN
    nt       -- stream (non-temporal) stores                                    # IN
    The interleaved side holds a row's n * C elements contiguous, channel fastest; the
    planar side each channel's n pixels contiguous, planes the plane stride apart.
    """
    cdef NodeList p
    cdef ilv_t t
    cdef int64_t n, _piece
    cdef readonly bint nt       # streaming stores, as the plan decided

    def __init__(self, int itemsize, const int64_t[:, ::1] nodes, const int64_t[::1] shape, bint nt):
        _check_itemsize(itemsize)
        if shape.shape[0] != 5:
            raise ValueError("interleave shape must be 5 numbers")
        C, n, ps, to_planes, piece = shape[0], shape[1], shape[2], shape[3], shape[4]
        if not 2 <= C <= ILV_MAX_C or n < 1 or piece < 1 or to_planes not in (0, 1):
            raise ValueError(f"bad interleave: {C} channels, rows of {n} pixels, "
                             f"pieces of {piece}")
        rows = np.concatenate([np.asarray(nodes).reshape(-1, 5),
                               np.array([[1, 0, 0, -1, 1]], np.int64)])
        fill_nodes(&self.p, rows, np.zeros((0, 3), np.int64))
        ilv_prepare(&self.t, <int>C, itemsize, <int>to_planes, ps)
        self.n, self._piece = n, piece
        self.nt = nt

    @property
    def path(self):
        """The path this runner takes now (it follows set_simd): 'avx512' or 'portable'."""
        return "avx512" if _interleave_simd() and ilv_have_avx512(self.t.esize) else "portable"

    @property
    def channels(self):
        """C, the channels of a pixel."""
        return self.t.C

    @property
    def to_planes(self):
        """Whether the pixels are the source and the planes the destination."""
        return bool(self.t.to_planes)

    @property
    def piece(self):
        """Pixels a work item takes of a row."""
        return self._piece

    def run(self, uintptr_t src, uintptr_t dst, int nthreads, bint stream=True):
        """stream=False keeps this call's stores cached where the runner would stream."""
        cdef int64_t pieces = (self.n + self._piece - 1) // self._piece
        cdef int64_t items = outer_count(&self.p) * pieces
        cdef bint nt = self.nt and stream
        cdef int t, nchunks = nthreads if items >= nthreads else <int>items
        cdef int simd = _interleave_simd()
        if items == 0:
            return
        with nogil:
            if nchunks <= 1:
                _interleave_items(<const char*>src, <char*>dst, &self.p, &self.t, self.n,
                                  self._piece, pieces, 0, items, nt, simd)
            else:
                for t in prange(nchunks, num_threads=nchunks, schedule="static"):
                    _interleave_items(<const char*>src, <char*>dst, &self.p, &self.t, self.n,
                                      self._piece, pieces, items * t // nchunks,
                                      items * (t + 1) // nchunks, nt, simd)
