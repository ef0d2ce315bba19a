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

from reorder._omp cimport (REORDER_OPENMP, REORDER_OPENMP_VERSION, REORDER_BUILD_FLAGS,
                           omp_get_max_threads, omp_get_num_procs)

OPENMP = bool(REORDER_OPENMP)
OPENMP_VERSION = REORDER_OPENMP_VERSION
BUILD_FLAGS = REORDER_BUILD_FLAGS.decode()


def omp_max_threads():
    return omp_get_max_threads()


def omp_num_procs():
    return omp_get_num_procs()


from reorder._nodes cimport (NodeList, Walk, fill_nodes, outer_count, walk_start, walk_bounds,
                             walk_next)

ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


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


def generic(uintptr_t src, uintptr_t dst, int itemsize, const int64_t[:, ::1] nodes,
            const int64_t[:, ::1] checked, int nthreads):
    """Run the generic kernel.

    src, dst  -- addresses of logical element (0, ..., 0) of each side          # IN / OUT
    nodes     -- rows (extent, src stride, dst stride, dim or -1, weight)        # IN
    checked   -- rows (dim, logical size, dst padded size) for padded dims       # IN
    """
    cdef NodeList p
    fill_nodes(&p, nodes, checked)
    with nogil:
        if itemsize == 1:
            _generic(<const uint8_t*>src, <uint8_t*>dst, &p, nthreads)
        elif itemsize == 2:
            _generic(<const uint16_t*>src, <uint16_t*>dst, &p, nthreads)
        elif itemsize == 4:
            _generic(<const uint32_t*>src, <uint32_t*>dst, &p, nthreads)
        elif itemsize == 8:
            _generic(<const uint64_t*>src, <uint64_t*>dst, &p, nthreads)
    if itemsize not in (1, 2, 4, 8):
        raise ValueError(f"element size {itemsize} is not 1, 2, 4 or 8")
