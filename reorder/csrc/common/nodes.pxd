# The loop-node walker shared by every kernel that runs a normalised node list.
#
# A NodeList is the planner's Problem in C: nodes outermost first, the last one being the
# run the kernel moves in its inner loop. Besides src/dst strides each node has a scale
# stride (ks) and a compensation stride (cs), 0 when unused, so conversion kernels can
# index per-channel scales and accumulate compensation while walking the same nodes.
#
# Walk over outer iterations [lo, hi) of a NodeList:
#     walk_start(p, &w, lo)
#     for it in range(lo, hi):
#         walk_bounds(p, &w, &nvalid, &nwrite)   # copy [0, nvalid), zero [nvalid, nwrite)
#         ... use w.so, w.do, w.ko, w.co ...
#         walk_next(p, &w)
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy, memset

cdef enum:
    MAX_NODES = 64
    MAX_DIMS = 12

cdef struct NodeList:
    int n                        # number of nodes (>= 1)
    int64_t ext[MAX_NODES]
    int64_t ss[MAX_NODES]        # src stride, elements
    int64_t ds[MAX_NODES]        # dst stride, elements
    int64_t ks[MAX_NODES]        # scale index stride
    int64_t cs[MAX_NODES]        # compensation index stride
    int dim[MAX_NODES]           # logical dim of a bounds-checked node, else -1
    int64_t w[MAX_NODES]         # logical step of the node along its dim
    int nchecked
    int checked[MAX_DIMS]        # dims whose iteration space exceeds their logical size
    int64_t valid[MAX_DIMS]      # per dim: logical size (copy below it)
    int64_t alloc[MAX_DIMS]      # per dim: dst padded size (zeros below it, skip above)

cdef struct Walk:
    int64_t idx[MAX_NODES]
    int64_t coord[MAX_DIMS]
    int64_t so, do, ko, co


cdef inline int64_t outer_count(const NodeList* p) noexcept nogil:
    cdef int64_t outer = 1
    cdef int k
    for k in range(p.n - 1):
        outer *= p.ext[k]
    return outer


cdef inline int64_t count_below(int64_t limit, int64_t base, int64_t w, int64_t n) noexcept nogil:
    """How many of base, base+w, ..., base+(n-1)w are < limit."""
    if limit <= base:
        return 0
    cdef int64_t k = (limit - base + w - 1) // w
    return k if k < n else n


cdef inline void walk_start(const NodeList* p, Walk* s, int64_t lo) noexcept nogil:
    cdef int k
    cdef int64_t rem = lo
    s.so = 0
    s.do = 0
    s.ko = 0
    s.co = 0
    for k in range(MAX_DIMS):
        s.coord[k] = 0
    for k in range(p.n - 2, -1, -1):
        s.idx[k] = rem % p.ext[k]
        rem = rem // p.ext[k]
        s.so += s.idx[k] * p.ss[k]
        s.do += s.idx[k] * p.ds[k]
        s.ko += s.idx[k] * p.ks[k]
        s.co += s.idx[k] * p.cs[k]
        if p.dim[k] >= 0:
            s.coord[p.dim[k]] += s.idx[k] * p.w[k]


cdef inline void walk_bounds(const NodeList* p, const Walk* s, int64_t* nvalid,
                             int64_t* nwrite) noexcept nogil:
    """Elements of the inner run at this position: the first nvalid are data, the next
    nwrite - nvalid are dst padding (zeros); the rest lie beyond dst and are skipped."""
    cdef int last = p.n - 1, c, e, d = p.dim[p.n - 1]
    cdef int64_t n = p.ext[last], v = n, wr = n, j
    for c in range(p.nchecked):
        e = p.checked[c]
        if e == d:
            continue
        if s.coord[e] >= p.alloc[e]:
            nvalid[0] = 0
            nwrite[0] = 0
            return
        if s.coord[e] >= p.valid[e]:
            v = 0
    if d >= 0:
        wr = count_below(p.alloc[d], s.coord[d], p.w[last], n)
        j = count_below(p.valid[d], s.coord[d], p.w[last], n)
        if j < v:
            v = j
    nvalid[0] = v if v < wr else wr
    nwrite[0] = wr


cdef inline void walk_next(const NodeList* p, Walk* s) noexcept nogil:
    cdef int k = p.n - 2
    while k >= 0:
        s.idx[k] += 1
        s.so += p.ss[k]
        s.do += p.ds[k]
        s.ko += p.ks[k]
        s.co += p.cs[k]
        if p.dim[k] >= 0:
            s.coord[p.dim[k]] += p.w[k]
        if s.idx[k] < p.ext[k]:
            return
        s.so -= p.ss[k] * p.ext[k]
        s.do -= p.ds[k] * p.ext[k]
        s.ko -= p.ks[k] * p.ext[k]
        s.co -= p.cs[k] * p.ext[k]
        if p.dim[k] >= 0:
            s.coord[p.dim[k]] -= p.w[k] * p.ext[k]
        s.idx[k] = 0
        k -= 1


cdef inline int fill_nodes(NodeList* p, const int64_t[:, ::1] nodes,
                           const int64_t[:, ::1] checked) except -1:
    """nodes: rows (extent, src stride, dst stride, dim or -1, weight[, scale stride,
    comp stride]); checked: rows (dim, logical size, dst padded size)."""
    cdef int k
    if not 1 <= nodes.shape[0] <= MAX_NODES or nodes.shape[1] not in (5, 7):
        raise ValueError(f"node list must be (1..{MAX_NODES}) x 5 or 7, got "
                         f"{nodes.shape[0]} x {nodes.shape[1]}")
    if checked.shape[0] > MAX_DIMS or checked.shape[1] != 3:
        raise ValueError("checked dims must be (<= 12) x 3")
    p.n = nodes.shape[0]
    for k in range(p.n):
        p.ext[k] = nodes[k, 0]
        p.ss[k] = nodes[k, 1]
        p.ds[k] = nodes[k, 2]
        p.dim[k] = <int>nodes[k, 3]
        p.w[k] = nodes[k, 4]
        p.ks[k] = nodes[k, 5] if nodes.shape[1] == 7 else 0
        p.cs[k] = nodes[k, 6] if nodes.shape[1] == 7 else 0
        if p.ext[k] < 0 or (p.dim[k] >= 0 and (p.dim[k] >= MAX_DIMS or p.w[k] < 1)):
            raise ValueError(f"bad node {k}")
    p.nchecked = checked.shape[0]
    for k in range(p.nchecked):
        if not 0 <= checked[k, 0] < MAX_DIMS:
            raise ValueError(f"bad checked dim {checked[k, 0]}")
        p.checked[k] = <int>checked[k, 0]
        p.valid[p.checked[k]] = checked[k, 1]
        p.alloc[p.checked[k]] = checked[k, 2]
    return 0


# A padded block's rows (the node before the run, dense on both sides) move a slab at a
# time: whole rows, padding lanes included, with the padding lanes masked to zero
# (mask_lanes); a conversion masks its own output in place.


cdef inline void _mask_words(char* d, const char* s, int64_t rows, const uint64_t* mask,
                             int nw) noexcept nogil:
    cdef int64_t r
    cdef int k
    cdef uint64_t v
    for r in range(rows):
        for k in range(nw):
            memcpy(&v, s + r * nw * 8 + k * 8, 8)
            v = v & mask[k]
            memcpy(d + r * nw * 8 + k * 8, &v, 8)


cdef inline void mask_lanes(char* d, const char* s, int64_t rows, int64_t rowbytes,
                            int64_t keep) noexcept nogil:
    """d = s with bytes [keep, rowbytes) of each of `rows` consecutive rows of rowbytes
    bytes zeroed (d == s zeroes in place): one pass of 8-byte ANDs for rows of 16, 32 or 64
    bytes, whose fixed word counts the compiler unrolls into vector moves."""
    cdef uint8_t mb[64]
    cdef uint64_t mask[8]
    cdef int64_t r, k
    if rowbytes not in (16, 32, 64):
        for r in range(rows):
            if d != s:
                memcpy(d + r * rowbytes, s + r * rowbytes, keep)
            memset(d + r * rowbytes + keep, 0, rowbytes - keep)
        return
    for k in range(rowbytes):
        mb[k] = 0xFF if k < keep else 0
    memcpy(mask, mb, rowbytes)
    if rowbytes == 16:
        _mask_words(d, s, rows, mask, 2)
    elif rowbytes == 32:
        _mask_words(d, s, rows, mask, 4)
    else:
        _mask_words(d, s, rows, mask, 8)
