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


ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t

cdef enum:
    MAX_NODES = 64
    MAX_DIMS = 12

cdef struct NodeList:
    int n                        # number of nodes (>= 1)
    int64_t ext[MAX_NODES]
    int64_t ss[MAX_NODES]        # src stride, elements
    int64_t ds[MAX_NODES]        # dst stride, elements
    int dim[MAX_NODES]           # logical dim of a bounds-checked node, else -1
    int64_t w[MAX_NODES]         # logical step of the node along its dim
    int nchecked
    int checked[MAX_DIMS]        # dims whose iteration space exceeds their logical size
    int64_t valid[MAX_DIMS]      # per dim: logical size (copy below it)
    int64_t alloc[MAX_DIMS]      # per dim: dst padded size (write zeros below it, skip above)


cdef inline int64_t _count_below(int64_t limit, int64_t base, int64_t w, int64_t n) noexcept nogil:
    """How many of base, base+w, ..., base+(n-1)w are < limit."""
    if limit <= base:
        return 0
    cdef int64_t k = (limit - base + w - 1) // w
    return k if k < n else n


cdef void _generic_chunk(const word_t* src, word_t* dst, const NodeList* p,
                         int64_t lo, int64_t hi) noexcept nogil:
    cdef int64_t idx[MAX_NODES]
    cdef int64_t coord[MAX_DIMS]
    cdef int last = p.n - 1
    cdef int k, c, e
    cdef int64_t so = 0, do = 0, rem = lo, it, j, nvalid, nwrite
    cdef int64_t n = p.ext[last], sI = p.ss[last], dI = p.ds[last], wI = p.w[last]
    cdef int dI_dim = p.dim[last]
    for k in range(MAX_DIMS):
        coord[k] = 0
    for k in range(last - 1, -1, -1):
        idx[k] = rem % p.ext[k]
        rem = rem // p.ext[k]
        so += idx[k] * p.ss[k]
        do += idx[k] * p.ds[k]
        if p.dim[k] >= 0:
            coord[p.dim[k]] += idx[k] * p.w[k]
    for it in range(lo, hi):
        nvalid = n
        nwrite = n
        for c in range(p.nchecked):
            e = p.checked[c]
            if e == dI_dim:
                continue
            if coord[e] >= p.alloc[e]:
                nwrite = 0
                break
            if coord[e] >= p.valid[e]:
                nvalid = 0
        if dI_dim >= 0 and nwrite > 0:
            nwrite = _count_below(p.alloc[dI_dim], coord[dI_dim], wI, n)
            j = _count_below(p.valid[dI_dim], coord[dI_dim], wI, n)
            if j < nvalid:
                nvalid = j
        if nvalid > nwrite:
            nvalid = nwrite
        if sI == 1 and dI == 1:
            memcpy(dst + do, src + so, nvalid * sizeof(word_t))
            memset(dst + do + nvalid, 0, (nwrite - nvalid) * sizeof(word_t))
        else:
            for j in range(nvalid):
                dst[do + j * dI] = src[so + j * sI]
            for j in range(nvalid, nwrite):
                dst[do + j * dI] = 0
        # advance the odometer over the outer nodes
        k = last - 1
        while k >= 0:
            idx[k] += 1
            so += p.ss[k]
            do += p.ds[k]
            if p.dim[k] >= 0:
                coord[p.dim[k]] += p.w[k]
            if idx[k] < p.ext[k]:
                break
            so -= p.ss[k] * p.ext[k]
            do -= p.ds[k] * p.ext[k]
            if p.dim[k] >= 0:
                coord[p.dim[k]] -= p.w[k] * p.ext[k]
            idx[k] = 0
            k -= 1


cdef void _generic(const word_t* src, word_t* dst, const NodeList* p, int nthreads) noexcept nogil:
    # Threads take contiguous ranges of outer iterations: a static split, so every thread
    # streams through its own part of dst and results do not depend on the thread count.
    cdef int64_t outer = 1
    cdef int k, t, nchunks
    for k in range(p.n - 1):
        outer *= p.ext[k]
    if outer == 0 or p.ext[p.n - 1] == 0:
        return
    nchunks = nthreads if outer >= nthreads else <int>outer
    if nchunks <= 1:
        _generic_chunk(src, dst, p, 0, outer)
        return
    for t in prange(nchunks, num_threads=nchunks, schedule="static"):
        _generic_chunk(src, dst, p, outer * t // nchunks, outer * (t + 1) // nchunks)


cdef int _fill_nodes(NodeList* p, const int64_t[:, ::1] nodes, const int64_t[:, ::1] dims) except -1:
    cdef int k
    if nodes.shape[0] < 1 or nodes.shape[0] > MAX_NODES or nodes.shape[1] != 5:
        raise ValueError(f"node list must be (1..{MAX_NODES}) x 5, got {nodes.shape[0]} x {nodes.shape[1]}")
    if dims.shape[0] > MAX_DIMS or dims.shape[1] != 3:
        raise ValueError("checked dims must be (<= 12) x 3")
    p.n = nodes.shape[0]
    for k in range(p.n):
        p.ext[k] = nodes[k, 0]
        p.ss[k] = nodes[k, 1]
        p.ds[k] = nodes[k, 2]
        p.dim[k] = <int>nodes[k, 3]
        p.w[k] = nodes[k, 4]
    p.nchecked = dims.shape[0]
    for k in range(p.nchecked):
        p.checked[k] = <int>dims[k, 0]
        p.valid[p.checked[k]] = dims[k, 1]
        p.alloc[p.checked[k]] = dims[k, 2]
    return 0


def generic(uintptr_t src, uintptr_t dst, int itemsize, const int64_t[:, ::1] nodes,
            const int64_t[:, ::1] checked, int nthreads):
    """Run the generic kernel.

    src, dst  -- addresses of logical element (0, ..., 0) of each side          # IN / OUT
    nodes     -- rows (extent, src stride, dst stride, dim or -1, weight)        # IN
    checked   -- rows (dim, logical size, dst padded size) for padded dims       # IN
    """
    cdef NodeList p
    _fill_nodes(&p, nodes, checked)
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
