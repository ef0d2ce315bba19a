# cython: language_level=3
"""Conversion kernels: a reorder that changes the data type, applies scales, zero points and
`sum`, and accumulates int8 compensation, all in one pass over memory.

Everything here runs without the GIL and never raises inside a kernel: the Python side
(`reorder.attrs` and the planner) has checked dtypes, masks, scale lengths and buffer sizes.

Per element, in f32 (spec §3.2, the oneDNN order):

    v = src_scale[k] * (float(src) - src_zp)
    v = v + beta * float(dst_old)                  (sum)
    v = v * (1 / dst_scale[k]) + dst_zp            (reciprocal precomputed in f32, like jit:uni)
    v = v * scale_adjust                           (compensated weights)
    dst = convert(v)                               (saturate, then round half to even)

The portable code here specialises per element type, never per pair: a run is loaded into
an f32 row by its source type's loader, the arithmetic runs on that row, and the row is
stored by the destination type's storer; the walkers between them move bytes and know the
types by code. The type pairs that need code of their own are the SIMD kernels'. The type
conversions are branch-free C (selects), so gcc vectorises the typed loops.

Compensation (spec §4): the kernel adds every stored s8 value q into acc[comp index], the
comp index being walked through the per-node strides `cs` of common/nodes.pxd. Threads split one
node that carries a comp index, so each accumulator is owned by one thread and the result
is the same for any thread count. A final step turns the sums into -128*sum (s8s8) and
-sum (zero point).

Three runners share this arithmetic (the SIMD ones are written in the headers convert/entry_points.h lists and
chosen at run time in convert/simd_dispatch.h, each with a portable twin here that writes the same
bytes):
  Convert          the strided walk over any node list;
  ConvertTile      16 dst-contiguous lanes x a src-contiguous node, register transposes;
  ConvertW4i16o4i  int8 weights with `4i16o4i` inner blocks (OIhw4i16o4i and relatives).
"""
from libc.stdint cimport (int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t,
                          uint64_t, uintptr_t)
from libc.string cimport memset, memcpy
from libc.stdlib cimport malloc, free
from cython.parallel cimport prange

from omp cimport REORDER_OPENMP
from nodes cimport (NodeList, Walk, MAX_NODES, MAX_DIMS, fill_nodes, outer_count,
                             mask_lanes,
                             walk_start, walk_bounds, walk_next, count_below)

from cpu_features cimport cpu_feature_flags, reorder_cpu_detect

# before anything can run a kernel
reorder_cpu_detect()


def cpu_features():
    """The CPU features the SIMD paths use, as detected once at import (common/cpu_features.h)."""
    return cpu_feature_flags()


cdef extern from "convert/simd_dispatch.h" nogil:
    ctypedef struct rq_math_t:
        float szp, dzp, beta, adj
        int has_sscale, has_dscale, has_szp, has_dzp, has_sum, has_adj
        int nt
        int b8mask
        int dst_u8
        int scode, dcode
    int RQ_B8MASK_s8, RQ_B8MASK_u8
    ctypedef struct rq_block_t:
        int64_t ngroups, dB, nbv, nbw, last, nt, groups, common, cols_first
        const int64_t* soff
        const uint16_t* lanes
        const float* ssc
        const float* dinv
        int32_t* acc
    ctypedef void (*rq_block_fn)(const void* src, void* dst, const rq_block_t* blk,
                                 const rq_math_t* m) noexcept nogil
    rq_block_fn rq_block_kernel(int scode, int dcode)
    ctypedef struct rq_w_t:
        int64_t so, S, nvo, nvi
        const float* ssc
        const float* dinv
        int32_t* acc
        const uint8_t* idx
    ctypedef void (*rq_w_fn)(const void* src, void* dst, const rq_w_t* k,
                             const rq_math_t* m) noexcept nogil
    rq_w_fn rq_w_kernel(int scode, int dcode)
    ctypedef void (*rq_row_fn)(const void* s, void* d, int64_t n, const float* ssc, int64_t sk,
                               const float* dinv, int64_t dk, const rq_math_t* m) noexcept nogil
    rq_row_fn rq_row_kernel(int scode, int dcode)
    ctypedef struct rq_grid_t:
        int64_t cols, rows, L, nv, nw, nvl, nwl
        int64_t css, cds, rss, rds, rks
        const float* ssc
        const float* dinv
        int64_t sk, dk
    ctypedef void (*rq_grid_fn)(const void* s, void* d, const rq_grid_t* g,
                                const rq_math_t* m) noexcept nogil
    rq_grid_fn rq_grid_kernel(int scode, int dcode)
    int rq_isa(int scode, int dcode)
    int rq_simd_available()
    int rq_avx2_available()
    void rq_set_simd(int on)
    int rq_row_f32_to_f16(const void*, void*, int64_t)
    int rq_row_f32_to_bf16(const void*, void*, int64_t)
    int rq_row_f16_to_f32(const void*, void*, int64_t)
    int rq_row_bf16_to_f32(const void*, void*, int64_t)

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>

    static inline uint32_t rq_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
    static inline float rq_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

    /* f32 -> f16, IEEE round half to even; overflow -> inf, NaN -> quiet NaN, f16
       subnormals produced, f32 denormals -> signed 0. Equals numpy's astype(float16)
       (NaN payloads aside). Branch-free so that loops over it vectorise. */
    static inline uint16_t rq_f32_to_f16(float fv) {
        uint32_t x = rq_f2u(fv);
        uint32_t sign = x & 0x80000000u;
        x ^= sign;
        /* NaN stays NaN, made quiet, top payload bits kept (as vcvtps2ph does) */
        uint32_t infnan = (x > 0x7f800000u) ? (0x7e00u | ((x >> 13) & 0x3ffu)) : 0x7c00u;
        /* below 2^-14: align the 10 mantissa bits with an FP add of 0.5f (RNE) */
        uint32_t sub = rq_f2u(rq_u2f(x) + 0.5f) - 0x3f000000u;
        uint32_t odd = (x >> 13) & 1u;
        uint32_t nrm = (x - 0x38000000u + 0xfffu + odd) >> 13;
        uint32_t o = (x >= 0x47800000u) ? infnan : ((x < 0x38800000u) ? sub : nrm);
        return (uint16_t)(o | (sign >> 16));
    }

    /* f16 -> f32, exact (a NaN comes out quiet, as vcvtph2ps does). */
    static inline float rq_f16_to_f32(uint16_t h) {
        uint32_t o = ((uint32_t)h & 0x7fffu) << 13;
        uint32_t e = o & 0x0f800000u;
        o += 0x38000000u;                                   /* rebias 15 -> 127 */
        uint32_t infnan = (o + 0x38000000u) | ((o & 0x007fe000u) ? 0x00400000u : 0u);
        uint32_t sub = rq_f2u(rq_u2f(o + 0x00800000u) - rq_u2f(0x38800000u));
        uint32_t r = (e == 0x0f800000u) ? infnan : ((e == 0u) ? sub : o);
        return rq_u2f(r | (((uint32_t)h & 0x8000u) << 16));
    }

    /* f32 -> bf16 as oneDNN: f32 denormals and zeros -> signed 0, NaN -> quiet NaN
       (mantissa bit 6 set), inf kept, otherwise round half to even (overflow -> inf). */
    static inline uint16_t rq_f32_to_bf16(float fv) {
        uint32_t x = rq_f2u(fv);
        uint32_t e = x & 0x7f800000u;
        uint32_t rne = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
        uint32_t special = ((x & 0x007fffffu) != 0u) ? ((x >> 16) | 0x40u) : (x >> 16);
        uint32_t r = (e == 0u) ? ((x >> 16) & 0x8000u) : ((e == 0x7f800000u) ? special : rne);
        return (uint16_t)r;
    }

    static inline float rq_bf16_to_f32(uint16_t b) { return rq_u2f((uint32_t)b << 16); }

    /* f32 -> integer: saturate, then round half to even (current rounding mode, which is
       round-to-nearest-even unless the caller changed it, like nearbyintf). The clamps are
       written so that NaN takes the bound tested first, exactly as oneDNN's x64 kernels
       (vminps/vmaxps) do: NaN -> 127 (s8), 0 (u8), 2147483520 (s32). */
    static inline int8_t rq_to_s8(float v) {
        v = (v < 127.0f) ? v : 127.0f;           /* NaN -> 127 */
        v = (v > -128.0f) ? v : -128.0f;
        v = (v + 12582912.0f) - 12582912.0f;     /* 1.5 * 2^23: exact RNE for |v| < 2^22 */
        return (int8_t)(int32_t)v;
    }
    static inline uint8_t rq_to_u8(float v) {
        v = (v > 0.0f) ? v : 0.0f;               /* NaN -> 0 */
        v = (v < 255.0f) ? v : 255.0f;
        v = (v + 12582912.0f) - 12582912.0f;
        return (uint8_t)(int32_t)v;
    }
    static inline int32_t rq_to_s32(float v) {
        v = (v < 2147483520.0f) ? v : 2147483520.0f;  /* 0x4EFFFFFF: INT_MAX is not a float */
        v = (v > -2147483648.0f) ? v : -2147483648.0f;
        uint32_t sgn = rq_f2u(v) & 0x80000000u;
        float c = rq_u2f(sgn | 0x4b000000u);           /* +-2^23 */
        float r = (v + c) - c;
        v = ((rq_f2u(v) & 0x7fffffffu) < 0x4b000000u) ? r : v;
        return (int32_t)v;
    }
    """
    uint16_t rq_f32_to_f16(float) noexcept nogil
    float rq_f16_to_f32(uint16_t) noexcept nogil
    uint16_t rq_f32_to_bf16(float) noexcept nogil
    float rq_bf16_to_f32(uint16_t) noexcept nogil
    int8_t rq_to_s8(float) noexcept nogil
    uint8_t rq_to_u8(float) noexcept nogil
    int32_t rq_to_s32(float) noexcept nogil


ctypedef struct f16_t:
    uint16_t bits

ctypedef struct bf16_t:
    uint16_t bits

# The element types; f16 and bf16 are distinct one-field structs so that the compiler sees
# distinct types. Only the leaves that touch elements specialise on it, once per type; the
# walkers move bytes and name the types by code (QCtx.scode, dcode).
ctypedef fused any_t:
    float
    double
    f16_t
    bf16_t
    int8_t
    uint8_t
    int32_t

# dtype codes shared with reorder/conversion.py
CODES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3, "s8": 4, "u8": 5, "s32": 6}
DSIZE = (4, 8, 2, 2, 1, 1, 4)       # element bytes by code

cdef enum:
    CH = 256            # elements per chunk of the f32 scratch row
    C_S8 = 4            # the code of int8_t, whose stores compensation sums


cdef struct QCtx:
    const float* sscale     # src scales (1 value when common)
    const float* dinv       # 1 / dst scales, f32
    int sscale_masked       # index the src scales with the walker's scale index
    int dscale_masked
    int has_sscale
    int has_dscale
    int has_szp
    int has_dzp
    int has_sum
    int has_adj
    float szp
    float dzp
    float beta
    float adj
    int32_t* acc            # compensation accumulator, or NULL
    rq_row_fn row           # SIMD conversion of contiguous runs for this dtype pair, or NULL
    rq_grid_fn grid         # SIMD conversion of a grid of short runs, or NULL
    const rq_math_t* m      # the same arithmetic, as the SIMD code takes it
    int scode               # the element types (CODES), set per call
    int dcode
    int64_t ssz             # their sizes in bytes: the walkers' offsets are in elements
    int64_t dsz


cdef inline float to_f32(any_t v) noexcept nogil:
    if any_t is f16_t:
        return rq_f16_to_f32(v.bits)
    elif any_t is bf16_t:
        return rq_bf16_to_f32(v.bits)
    else:
        return <float>v


cdef inline void from_f32(float v, any_t* out) noexcept nogil:
    if any_t is f16_t:
        out[0].bits = rq_f32_to_f16(v)
    elif any_t is bf16_t:
        out[0].bits = rq_f32_to_bf16(v)
    elif any_t is int8_t:
        out[0] = rq_to_s8(v)
    elif any_t is uint8_t:
        out[0] = rq_to_u8(v)
    elif any_t is int32_t:
        out[0] = rq_to_s32(v)
    elif any_t is double:
        out[0] = <double>v
    else:
        out[0] = v


# ---------------------------------------------------------------------------------------------
# leaves: one element type each, between its elements and f32 rows. A conversion is a load
# row, the arithmetic on f32, a store row: a pair of types costs no code of its own here.

cdef inline void _load_row(const any_t* s, int64_t sI, float* t, int64_t m) noexcept nogil:
    cdef int64_t j
    if sI == 1 and any_t is f16_t:
        if rq_row_f16_to_f32(s, t, m):
            return
    elif sI == 1 and any_t is bf16_t:
        if rq_row_bf16_to_f32(s, t, m):
            return
    if sI == 1:
        for j in range(m):
            t[j] = to_f32(s[j])
    else:
        for j in range(m):
            t[j] = to_f32(s[j * sI])


cdef inline void _store_row(const float* t, any_t* d, int64_t dI, int64_t m) noexcept nogil:
    cdef int64_t j
    if dI == 1 and any_t is f16_t:
        if rq_row_f32_to_f16(t, d, m):
            return
    elif dI == 1 and any_t is bf16_t:
        if rq_row_f32_to_bf16(t, d, m):
            return
    if dI == 1:
        for j in range(m):
            from_f32(t[j], &d[j])
    else:
        for j in range(m):
            from_f32(t[j], &d[j * dI])


cdef inline void _sum_row(float* t, const any_t* d, int64_t dI, float beta,
                          int64_t m) noexcept nogil:
    cdef int64_t j
    if dI == 1:
        for j in range(m):
            t[j] = t[j] + beta * to_f32(d[j])
    else:
        for j in range(m):
            t[j] = t[j] + beta * to_f32(d[j * dI])


cdef inline void _gather16(const any_t* s, const int64_t* off, int64_t b, uint32_t lanes,
                           float* t) noexcept nogil:
    """t[a] = s[off[a] + b] for the lanes set in `lanes`; 0 for the others, not read."""
    cdef int a
    for a in range(16):
        # a statement, not `x if c else 0.0`: that expression is a double, and the float ->
        # double -> float trip quietens a signalling NaN where the compiler keeps it (-O1)
        if (lanes >> a) & 1:
            t[a] = to_f32(s[off[a] + b])
        else:
            t[a] = 0


# the same leaves by type code (the walkers' view of an element: bytes and a code)

cdef inline void _load_any(int code, const char* s, int64_t sI, float* t, int64_t m) noexcept nogil:
    if code == 0:
        _load_row(<const float*>s, sI, t, m)
    elif code == 1:
        _load_row(<const double*>s, sI, t, m)
    elif code == 2:
        _load_row(<const f16_t*>s, sI, t, m)
    elif code == 3:
        _load_row(<const bf16_t*>s, sI, t, m)
    elif code == 4:
        _load_row(<const int8_t*>s, sI, t, m)
    elif code == 5:
        _load_row(<const uint8_t*>s, sI, t, m)
    else:
        _load_row(<const int32_t*>s, sI, t, m)


cdef inline void _store_any(int code, const float* t, char* d, int64_t dI, int64_t m) noexcept nogil:
    if code == 0:
        _store_row(t, <float*>d, dI, m)
    elif code == 1:
        _store_row(t, <double*>d, dI, m)
    elif code == 2:
        _store_row(t, <f16_t*>d, dI, m)
    elif code == 3:
        _store_row(t, <bf16_t*>d, dI, m)
    elif code == 4:
        _store_row(t, <int8_t*>d, dI, m)
    elif code == 5:
        _store_row(t, <uint8_t*>d, dI, m)
    else:
        _store_row(t, <int32_t*>d, dI, m)


cdef inline void _sum_any(int code, float* t, const char* d, int64_t dI, float beta,
                   int64_t m) noexcept nogil:
    if code == 0:
        _sum_row(t, <const float*>d, dI, beta, m)
    elif code == 1:
        _sum_row(t, <const double*>d, dI, beta, m)
    elif code == 2:
        _sum_row(t, <const f16_t*>d, dI, beta, m)
    elif code == 3:
        _sum_row(t, <const bf16_t*>d, dI, beta, m)
    elif code == 4:
        _sum_row(t, <const int8_t*>d, dI, beta, m)
    elif code == 5:
        _sum_row(t, <const uint8_t*>d, dI, beta, m)
    else:
        _sum_row(t, <const int32_t*>d, dI, beta, m)


cdef void _gather16_any(int code, const char* s, const int64_t* off, int64_t b, uint32_t lanes,
                        float* t) noexcept nogil:
    if code == 0:
        _gather16(<const float*>s, off, b, lanes, t)
    elif code == 1:
        _gather16(<const double*>s, off, b, lanes, t)
    elif code == 2:
        _gather16(<const f16_t*>s, off, b, lanes, t)
    elif code == 3:
        _gather16(<const bf16_t*>s, off, b, lanes, t)
    elif code == 4:
        _gather16(<const int8_t*>s, off, b, lanes, t)
    elif code == 5:
        _gather16(<const uint8_t*>s, off, b, lanes, t)
    else:
        _gather16(<const int32_t*>s, off, b, lanes, t)


cdef inline void _zero_run(char* d, int64_t n, int64_t dI, int64_t dsz) noexcept nogil:
    """n zero elements of dsz bytes, dI elements apart."""
    cdef int64_t j
    if n <= 0:
        return
    if dI == 1:
        memset(d, 0, n * dsz)
        return
    for j in range(n):
        memset(d + j * dI * dsz, 0, dsz)


cdef inline void _arith_row(float* t, const char* d, int64_t dI, const QCtx* c,
                            const float* ssc, int64_t sk, const float* dsc, int64_t dk,
                            int64_t m) noexcept nogil:
    """The arithmetic of m elements on their f32 row t, in the oneDNN order (d: the dst
    elements a sum reads)."""
    cdef int64_t j
    cdef float zp
    if c.has_szp:
        zp = c.szp
        for j in range(m):
            t[j] = t[j] - zp
    if c.has_sscale:
        _scale_row(t, ssc, sk, m)
    if c.has_sum:
        _sum_any(c.dcode, t, d, dI, c.beta, m)
    if c.has_dscale:
        _scale_row(t, dsc, dk, m)
    if c.has_dzp:
        zp = c.dzp
        for j in range(m):
            t[j] = t[j] + zp
    if c.has_adj:
        zp = c.adj
        for j in range(m):
            t[j] = t[j] * zp


cdef inline void _scale_row(float* t, const float* sc, int64_t kI, int64_t m) noexcept nogil:
    """t[j] *= sc[j * kI]; one value when kI == 0."""
    cdef int64_t j
    cdef float s
    if kI == 0:
        s = sc[0]
        for j in range(m):
            t[j] = t[j] * s
    elif kI == 1:
        for j in range(m):
            t[j] = t[j] * sc[j]
    else:
        for j in range(m):
            t[j] = t[j] * sc[j * kI]


cdef inline void _run(const char* s, char* d, int64_t n, int64_t sI, int64_t dI,
                      const QCtx* c, int64_t ko, int64_t kI, int64_t co, int64_t cI) noexcept nogil:
    """Convert one inner run of n valid elements (strides sI, dI elements; scale index
    ko + j*kI; comp index co + j*cI) through an f32 scratch row, CH elements at a time; a run
    that is contiguous on both sides goes through the SIMD row in one pass instead."""
    cdef float t[CH]
    cdef int64_t b, m, j
    cdef int32_t racc = 0
    cdef const int8_t* q
    # element j's scales: ssc[j * sk], dsc[j * dk] (one value when unmasked)
    cdef int64_t sk = kI if c.sscale_masked else 0
    cdef int64_t dk = kI if c.dscale_masked else 0
    cdef const float* ssc = c.sscale + ko if c.sscale_masked else c.sscale
    cdef const float* dsc = c.dinv + ko if c.dscale_masked else c.dinv
    if c.row != NULL and sI == 1 and dI == 1 and (c.dcode != C_S8 or c.acc == NULL):
        if sk <= 1 and dk <= 1:
            c.row(s, d, n, ssc, sk, dsc, dk, c.m)
            return
    b = 0
    while b < n:
        m = n - b if n - b < CH else CH
        _load_any(c.scode, s + b * sI * c.ssz, sI, t, m)
        _arith_row(t, d + b * dI * c.dsz, dI, c, ssc + b * sk, sk, dsc + b * dk, dk, m)
        _store_any(c.dcode, t, d + b * dI * c.dsz, dI, m)
        if c.dcode == C_S8 and c.acc != NULL:
            q = <const int8_t*>d + b * dI
            if cI == 0:
                if dI == 1:
                    for j in range(m):
                        racc = racc + q[j]
                else:
                    for j in range(m):
                        racc = racc + q[j * dI]
            else:
                for j in range(m):
                    c.acc[co + (b + j) * cI] += q[j * dI]
        b += m
    if c.dcode == C_S8 and c.acc != NULL and cI == 0:
        c.acc[co] += racc


cdef inline void _walk_start_split(const NodeList* p, Walk* w, int64_t lo, int split,
                                   int64_t base) noexcept nogil:
    """walk_start at outer iteration lo. When split >= 0, p is a thread's copy whose node
    `split` starts at digit `base` (see _part): the logical coordinate of that node's dim is
    shifted to where the copy starts."""
    walk_start(p, w, lo)
    if split >= 0 and p.dim[split] >= 0:
        w.coord[p.dim[split]] += base * p.w[split]


# a slab masks its converted output SLAB_CHUNK bytes at a time, while they are in cache
cdef enum:
    SLAB_CHUNK = 8192


cdef void _slab(const char* s, char* d, const QCtx* c, const QCtx* cc, const Walk* w,
                int64_t R, int64_t L, int64_t nvalid) noexcept nogil:
    """R rows of L lanes from walk position w, dense on both sides, as one run: every lane
    converts (the source holds the padding lanes: the plan checked it), then the lanes from
    nvalid on are zeroed, a chunk at a time while it is in cache (cc: the context with
    cached stores)."""
    cdef int64_t r, m
    cdef int64_t step = SLAB_CHUNK // (L * c.dsz)
    cdef const char* sw = s + w.so * c.ssz
    cdef char* dw = d + w.do * c.dsz
    if nvalid == L:
        _run(sw, dw, R * L, 1, 1, c, w.ko, 0, w.co, 0)
        return
    if step < 1:
        step = 1
    r = 0
    while r < R:
        m = R - r if R - r < step else step
        _run(sw + r * L * c.ssz, dw + r * L * c.dsz, m * L, 1, 1, cc, w.ko, 0, w.co, 0)
        mask_lanes(dw + r * L * c.dsz, dw + r * L * c.dsz, m, L * c.dsz, nvalid * c.dsz)
        r += m


cdef inline int64_t _alike_rows(const NodeList* p, const Walk* w, int64_t nvalid,
                                int64_t rem) noexcept nogil:
    """How many rows of node p.n - 2, from walk position w on (at most rem), share this
    row's bounds (nvalid of the inner run's lanes are data): the rows one grid call takes."""
    cdef int q = p.n - 2, last = p.n - 1
    cdef int rd = p.dim[q]
    cdef int64_t c
    if rd < 0:
        return rem
    c = w.coord[rd]
    if rd == p.dim[last]:
        # rows and lanes along one dim (the blocks of a channel dim): alike while every lane
        # is data
        if nvalid < p.ext[last]:
            return 1
        return count_below(p.valid[rd] - (p.ext[last] - 1) * p.w[last], c, p.w[q], rem)
    if c < p.valid[rd]:
        return count_below(p.valid[rd], c, p.w[q], rem)
    return count_below(p.alloc[rd], c, p.w[q], rem)


cdef inline void _skip_rows(const NodeList* p, Walk* w, int64_t k) noexcept nogil:
    """On k rows of node p.n - 2 (not past its end): to the last row a slab or grid took,
    from where walk_next carries."""
    cdef int q = p.n - 2
    w.idx[q] += k
    w.so += k * p.ss[q]
    w.do += k * p.ds[q]
    w.ko += k * p.ks[q]
    w.co += k * p.cs[q]
    if p.dim[q] >= 0:
        w.coord[p.dim[q]] += k * p.w[q]


cdef inline void _bounds_at(const NodeList* p, const Walk* w, int64_t r, int64_t* nvalid,
                            int64_t* nwrite) noexcept nogil:
    """walk_bounds of row r of node p.n - 2, counted from walk position w."""
    cdef Walk v
    cdef int q = p.n - 2
    memcpy(v.coord, w.coord, sizeof(w.coord))
    if p.dim[q] >= 0:
        v.coord[p.dim[q]] += r * p.w[q]
    walk_bounds(p, &v, nvalid, nwrite)


cdef inline void _grid(const char* s, char* d, const NodeList* p, const QCtx* c,
                       const Walk* w, int64_t cols, int64_t rows, int64_t nvalid, int64_t nwrite,
                       int64_t nvl, int64_t nwl) noexcept nogil:
    """From walk position w: `cols` steps of node p.n - 3 (1: none) of `rows` rows of node
    p.n - 2, in one call of the SIMD grid; the last row's bounds are nvl, nwl."""
    cdef int last = p.n - 1, q = p.n - 2
    cdef rq_grid_t g
    g.cols, g.rows, g.L = cols, rows, p.ext[last]
    g.nv, g.nw, g.nvl, g.nwl = nvalid, nwrite, nvl, nwl
    g.css = p.ss[q - 1] if cols > 1 else 0
    g.cds = p.ds[q - 1] if cols > 1 else 0
    g.rss, g.rds, g.rks = p.ss[q], p.ds[q], p.ks[q]
    g.sk = p.ks[last] if c.sscale_masked else 0
    g.dk = p.ks[last] if c.dscale_masked else 0
    g.ssc = c.sscale + w.ko if c.sscale_masked else c.sscale
    g.dinv = c.dinv + w.ko if c.dscale_masked else c.dinv
    c.grid(s + w.so * c.ssz, d + w.do * c.dsz, &g, c.m)


cdef inline int64_t _grid_at(const char* s, char* d, const NodeList* p, const QCtx* c,
                             Walk* w, int64_t left, int cross, int split, int64_t base,
                             int64_t it, int64_t nvalid, int64_t nwrite) noexcept nogil:
    """Runs a grid from walk position w when one fits in the `left` iterations of the range
    and moves w past it; returns the iterations it took (0: none fits here). With `cross`,
    whole steps of node p.n - 3 go in one call when w is at the start of one, their last
    row's bounds apart from the rest (the last, partial block of channels)."""
    cdef int q = p.n - 2
    cdef int64_t R = p.ext[q], k, cols, nvl, nwl
    if cross and w.idx[q] == 0 and left >= R:
        cols = p.ext[q - 1] - w.idx[q - 1]
        if cols > left // R:
            cols = left // R
        k = _alike_rows(p, w, nvalid, R)
        if k >= R - 1:
            if k == R:
                nvl, nwl = nvalid, nwrite
            else:
                _bounds_at(p, w, R - 1, &nvl, &nwl)
            _grid(s, d, p, c, w, cols, R, nvalid, nwrite, nvl, nwl)
            _walk_start_split(p, w, it + cols * R, split, base)
            return cols * R
    k = R - w.idx[q]
    k = _alike_rows(p, w, nvalid, k if k < left else left)
    if k < 2:
        return 0
    _grid(s, d, p, c, w, 1, k, nvalid, nwrite, nvalid, nwrite)
    _skip_rows(p, w, k - 1)
    walk_next(p, w)
    return k


cdef void _walk_range(const char* s, char* d, const NodeList* p, const QCtx* c,
                      int64_t lo, int64_t hi, int split, int64_t base, int64_t slab,
                      int grid) noexcept nogil:
    """Outer iterations [lo, hi) of node list p. When split >= 0, p is a thread's copy whose
    node `split` starts at digit `base`; the pointers in s, d and c are already offset, and
    the logical coordinate of that node's dim is shifted here.

    slab = L > 0: the inner run is L lanes of a padded block and the next node its rows,
    dense on both sides (see Convert); the rows up to the end of that node or of the range
    then go as one run (_slab).
    grid = 1: the inner run is a multiple of 16 lanes, contiguous on both sides, and the next
    node its rows, with any strides (see Convert); the rows that share their bounds go in
    one call of c.grid. grid = 2: so do whole steps of the node before the rows (_grid_at)."""
    cdef Walk w
    cdef int last = p.n - 1
    cdef int64_t it, nvalid, nwrite, R = 0, k = 0
    cdef int64_t sI = p.ss[last], dI = p.ds[last], kI = p.ks[last], cI = p.cs[last]
    cdef int64_t ssz = c.ssz, dsz = c.dsz
    cdef QCtx cc
    cdef rq_math_t mc
    if slab > 0:
        R = p.ext[last - 1]
        memcpy(&cc, c, sizeof(QCtx))
        memcpy(&mc, c.m, sizeof(rq_math_t))
        mc.nt = 0
        cc.m = &mc
    _walk_start_split(p, &w, lo, split, base)
    it = lo
    while it < hi:
        walk_bounds(p, &w, &nvalid, &nwrite)
        if R > 0:
            k = R - w.idx[last - 1]
            if k > hi - it:
                k = hi - it
        elif grid and nwrite > 0:
            k = _grid_at(s, d, p, c, &w, hi - it, grid == 2, split, base, it, nvalid, nwrite)
            if k > 0:
                it += k
                continue
        if k > 1 and nwrite == slab and nvalid > 0:
            _slab(s, d, c, &cc, &w, k, slab, nvalid)
            _skip_rows(p, &w, k - 1)
            walk_next(p, &w)
            it += k
            continue
        if nvalid > 0:
            _run(s + w.so * ssz, d + w.do * dsz, nvalid, sI, dI, c, w.ko, kI, w.co, cI)
        if nwrite > nvalid:
            _zero_run(d + (w.do + nvalid * dI) * dsz, nwrite - nvalid, dI, dsz)
        walk_next(p, &w)
        it += 1


# ---------------------------------------------------------------------------------------------
# tile kernel: 16 destination-contiguous lanes x a source-contiguous node B
#
# The planner hands over the outer nodes (with a trailing dummy node of extent 1, so the
# walker treats them all as outer) and, for the destination-dense block of innermost nodes
# (G groups of 16 lanes), per-lane tables: src offset, scale index, comp index and the
# lane's coordinate along each checked dim of the block. Per outer position and group the
# SIMD tile (or the portable loop below) converts the whole run of B.

cdef struct TileSpec:
    int64_t nt                   # stream (non-temporal) full 64-byte lines
    int64_t groups               # lane groups converted at once (rq_block_t)
    int64_t ngroups
    int64_t last                 # dst lane of the last group's first lane: (G-1)*16, or less
                                 # when the lanes are not whole groups (it then overlaps the
                                 # group before and ends at the last lane)
    const int64_t* soff          # [G*16] lane src offsets (elements)
    const int64_t* koff          # [G*16] lane scale index offsets
    const int64_t* coff          # [G*16] lane comp index offsets
    const int64_t* acoord        # [nck][G*16] lane coordinate along checked dim ckdim[k]
    int nck
    int ckdim[MAX_DIMS]
    int64_t bext                 # B: extent, dst stride (its src stride is 1), weight, dim
    int64_t bds
    int64_t bw
    int bdim
    int64_t copy_lanes           # cached stores into far B rows: this many lanes at a time
                                 # built in the scratch, each row's part copied out; or 0
    int64_t dsize                # the output's element size
    int64_t cols_first           # the widening chunks walk the columns outermost (rq_block_t)


cdef void _tile_scalar(const char* s, const int64_t* soff, char* d, int64_t dB, int64_t nbv,
                       int64_t nbw, uint32_t lanes, const float* ssc, const float* dinv,
                       const QCtx* c, int32_t* acc) noexcept nogil:
    """Portable version of the SIMD tile (same arithmetic, same order), 16 lanes of a row
    of B at a time."""
    cdef int64_t b, a
    cdef float t[16]
    cdef char* row
    for b in range(nbv):
        row = d + b * dB * c.dsz
        _gather16_any(c.scode, s, soff, b, lanes, t)
        # every lane of the row is converted and stored (a sum reads the whole dst row, which
        # the tile writes), then the lanes outside `lanes` are zeroed
        _arith_row(t, row, 1, c, ssc, 1, dinv, 1, 16)
        _store_any(c.dcode, t, row, 1, 16)
        for a in range(16):
            if not (lanes >> a) & 1:
                memset(row + a * c.dsz, 0, c.dsz)
        if c.dcode == C_S8 and acc != NULL:
            for a in range(16):
                if (lanes >> a) & 1:
                    acc[a] += (<const int8_t*>row)[a]
    b = nbv if nbv > 0 else 0
    while b < nbw:
        memset(d + b * dB * c.dsz, 0, 16 * c.dsz)
        b += 1


cdef inline int64_t _tile_vectors_bytes(const TileSpec* T) noexcept nogil:
    """Bytes of one thread's scale vectors, sums and lane masks, whole lines."""
    cdef int64_t n = T.ngroups * 16
    return (n * (2 * sizeof(float) + sizeof(int32_t)) + T.ngroups * sizeof(uint16_t) + 63) // 64 * 64


cdef inline int64_t _tile_scratch_bytes(const TileSpec* T) noexcept nogil:
    """Bytes of one thread's tile scratch: the vectors, then the rows a copy-out builds
    (copy_lanes x B), whole lines."""
    return _tile_vectors_bytes(T) + (T.copy_lanes * T.bext * T.dsize + 63) // 64 * 64


cdef void _tile_copied(const char* s, char* d, const rq_block_t* blk, const rq_math_t* m,
                       rq_block_fn fn, int64_t cl, char* scr, int64_t dsz) noexcept nogil:
    """One position's lane groups, cl lanes (a multiple of 16) at a time: built in `scr`, B's
    rows cl apart, then each row's part copied to its far dst row in turn. The last chunk
    ends at the last group, which may overlap the chunk before (blk.last)."""
    cdef rq_block_t b = blk[0]
    cdef int64_t G = blk.ngroups, g0 = 0, ng, start, r
    b.dB = cl
    while g0 < G:
        ng = cl // 16 if G - g0 > cl // 16 else G - g0
        if g0 + ng == G:
            start = blk.last if blk.last < g0 * 16 else g0 * 16
            b.last = blk.last - start
        else:
            start = g0 * 16
            b.last = (ng - 1) * 16
        b.ngroups = ng
        b.soff = blk.soff + g0 * 16
        b.lanes = blk.lanes + g0
        b.ssc = blk.ssc + g0 * 16
        b.dinv = blk.dinv + g0 * 16
        b.acc = blk.acc + g0 * 16 if blk.acc != NULL else NULL
        fn(s, scr, &b, m)
        for r in range(blk.nbw):
            memcpy(d + (r * blk.dB + start) * dsz, scr + r * cl * dsz, (b.last + 16) * dsz)
        g0 += ng


cdef void _tile_range(const char* s, char* d, const NodeList* p, const TileSpec* T,
                      const QCtx* c, const rq_math_t* m, rq_block_fn fn, int64_t lo, int64_t hi,
                      int split, int64_t base, char* mem) noexcept nogil:
    """Outer positions [lo, hi): per position, all lane groups in one call. Scale vectors are
    refilled only when the scale index or the lane mask changes, and the per-lane comp sums
    are flushed only when the comp index of the position changes. `mem`: this thread's
    scratch (_tile_scratch_bytes), allocated by the caller, which can raise."""
    cdef Walk w
    cdef rq_block_t blk
    cdef int64_t G = T.ngroups, n = T.ngroups * 16
    cdef int64_t it, g, a, k, j, nvalid, nwrite, nbv, nbw
    cdef int64_t last_ko = -1, last_co = 0
    cdef int64_t ssz = c.ssz, dsz = c.dsz
    cdef int e, have_co = 0, fresh
    cdef uint32_t lane
    cdef float* ssc
    cdef float* dinv
    cdef int32_t* acc
    cdef uint16_t* lanes
    cdef char* rows = mem + _tile_vectors_bytes(T)
    ssc = <float*>mem
    dinv = ssc + n
    acc = <int32_t*>(dinv + n)
    lanes = <uint16_t*>(acc + n)
    for j in range(n):
        ssc[j] = c.sscale[0]
        dinv[j] = c.dinv[0]
        acc[j] = 0
    for g in range(G):
        lanes[g] = 0xffff
    blk.ngroups, blk.dB, blk.soff, blk.nt, blk.groups = G, T.bds, T.soff, T.nt, T.groups
    blk.cols_first = T.cols_first
    blk.lanes, blk.ssc, blk.dinv = lanes, ssc, dinv
    blk.acc = acc if c.acc != NULL else NULL
    blk.last = T.last
    blk.common = not (c.sscale_masked or c.dscale_masked)
    _walk_start_split(p, &w, lo, split, base)
    fresh = 1                       # lane masks must be (re)computed
    for it in range(lo, hi):
        walk_bounds(p, &w, &nvalid, &nwrite)
        if nwrite == 0:
            walk_next(p, &w)
            continue
        nbv = T.bext
        nbw = T.bext
        if T.bdim >= 0:
            nbw = count_below(p.alloc[T.bdim], w.coord[T.bdim], T.bw, T.bext)
            nbv = count_below(p.valid[T.bdim], w.coord[T.bdim], T.bw, T.bext)
            if nbv > nbw:
                nbv = nbw
        if nvalid == 0:
            nbv = 0
        if T.nck > 0 or fresh or nbv == 0:
            for g in range(G):
                lane = 0xffff if nbv > 0 else 0
                for k in range(T.nck):
                    e = T.ckdim[k]
                    for a in range(16):
                        if w.coord[e] + T.acoord[k * n + g * 16 + a] >= p.valid[e]:
                            lane &= ~(1u << a)
                lanes[g] = <uint16_t>lane
            fresh = nbv == 0 or T.nck > 0
            last_ko = -1
        if (c.sscale_masked or c.dscale_masked) and w.ko != last_ko:
            for j in range(n):
                lane = (lanes[j // 16] >> (j % 16)) & 1
                if c.sscale_masked:
                    ssc[j] = c.sscale[w.ko + T.koff[j]] if lane else 0.0
                if c.dscale_masked:
                    dinv[j] = c.dinv[w.ko + T.koff[j]] if lane else 0.0
            last_ko = w.ko
        if c.acc != NULL and (not have_co or w.co != last_co):
            if have_co:
                for j in range(n):
                    c.acc[last_co + T.coff[j]] += acc[j]
                    acc[j] = 0
            last_co = w.co
            have_co = 1
        blk.nbv, blk.nbw = nbv, nbw
        if fn != NULL and T.copy_lanes and not T.nt:
            _tile_copied(s + w.so * ssz, d + w.do * dsz, &blk, m, fn, T.copy_lanes, rows, dsz)
        elif fn != NULL:
            fn(s + w.so * ssz, d + w.do * dsz, &blk, m)
        else:
            for g in range(G):
                _tile_scalar(s + w.so * ssz, &T.soff[g * 16],
                             d + (w.do + (T.last if g == G - 1 else g * 16)) * dsz, T.bds, nbv,
                             nbw, lanes[g], &ssc[g * 16], &dinv[g * 16], c,
                             &acc[g * 16] if c.acc != NULL else NULL)
        walk_next(p, &w)
    if c.acc != NULL and have_co:
        for j in range(n):
            c.acc[last_co + T.coff[j]] += acc[j]


# ---------------------------------------------------------------------------------------------
# int8 weights with `4i16o4i` inner blocks: see rq_w_t in convert/kernel_args.h. The outer nodes
# (with a trailing dummy node) are walked as for the tile kernel; per position the AVX-512
# VBMI kernel, or the portable loop below, writes S blocks of 256 bytes.

cdef struct WSpec:
    int64_t so, S, ow, ks, cs
    int odim, idim


cdef void _w_scalar(const char* s, char* d, const rq_w_t* k, const QCtx* c) noexcept nogil:
    """Portable version of the `4i16o4i` kernel: same arithmetic, same bytes. The
    destination is s8 or u8 (the kernel takes no other); a row of 16 i is loaded at once."""
    cdef int64_t o, i, sp, S = k.S
    cdef float t[16]
    cdef float v
    cdef char* q
    for o in range(16):
        for sp in range(S):
            if o < k.nvo and k.nvi > 0:
                _load_any(c.scode, s + (o * k.so + sp) * c.ssz, S, t, k.nvi)
                # scales and scale_adjust only (the kernel takes no zero point or sum)
                _arith_row(t, d, 1, c, &k.ssc[o], 0, &k.dinv[o], 0, k.nvi)
            for i in range(16):
                q = d + sp * 256 + (i // 4) * 64 + o * 4 + i % 4
                if o >= k.nvo or i >= k.nvi:
                    q[0] = 0
                    continue
                v = t[i]
                if c.dcode == C_S8:
                    (<int8_t*>q)[0] = rq_to_s8(v)
                    if k.acc != NULL:
                        k.acc[o] += (<int8_t*>q)[0]
                else:
                    (<uint8_t*>q)[0] = rq_to_u8(v)


cdef void _w_range(const char* s, char* d, const NodeList* p, const WSpec* W, const QCtx* c,
                   const rq_math_t* m, rq_w_fn fn, const uint8_t* idx, int64_t lo, int64_t hi,
                   int split, int64_t base) noexcept nogil:
    cdef Walk w
    cdef rq_w_t k
    cdef float ssc[16]
    cdef float dinv[16]
    cdef int32_t acc[16]
    cdef int64_t it, o, nvalid, nwrite, last_ko = -1, last_co = 0
    cdef int have_co = 0
    for o in range(16):
        ssc[o] = c.sscale[0]
        dinv[o] = c.dinv[0]
        acc[o] = 0
    k.so, k.S, k.ssc, k.dinv, k.idx = W.so, W.S, ssc, dinv, idx
    k.acc = acc if c.acc != NULL else NULL
    _walk_start_split(p, &w, lo, split, base)
    for it in range(lo, hi):
        walk_bounds(p, &w, &nvalid, &nwrite)
        if nwrite == 0:
            walk_next(p, &w)
            continue
        k.nvo = 16 if nvalid > 0 else 0
        k.nvi = 16
        if W.odim >= 0 and k.nvo:
            k.nvo = count_below(p.valid[W.odim], w.coord[W.odim], W.ow, 16)
        if W.idim >= 0:
            k.nvi = count_below(p.valid[W.idim], w.coord[W.idim], 1, 16)
        if (c.sscale_masked or c.dscale_masked) and (w.ko != last_ko or k.nvo < 16):
            for o in range(16):
                if c.sscale_masked:
                    ssc[o] = c.sscale[w.ko + o * W.ks] if o < k.nvo else 0.0
                if c.dscale_masked:
                    dinv[o] = c.dinv[w.ko + o * W.ks] if o < k.nvo else 0.0
            last_ko = w.ko if k.nvo == 16 else -1
        if c.acc != NULL and (not have_co or w.co != last_co):
            if have_co:
                for o in range(16):
                    c.acc[last_co + o * W.cs] += acc[o]
                    acc[o] = 0
            last_co = w.co
            have_co = 1
        if fn != NULL:
            fn(s + w.so * c.ssz, d + w.do * c.dsz, &k, m)
        else:
            _w_scalar(s + w.so * c.ssz, d + w.do * c.dsz, &k, c)
        walk_next(p, &w)
    if c.acc != NULL and have_co:
        for o in range(16):
            c.acc[last_co + o * W.cs] += acc[o]


# ---------------------------------------------------------------------------------------------
# one driver for the three runners: the strided walk, the tile and the `4i16o4i` weights

cdef enum:
    K_WALK = 0
    K_TILE = 1
    K_W = 2


cdef struct Job:
    int kind
    const TileSpec* T
    const WSpec* W
    const rq_math_t* m
    rq_block_fn bfn              # SIMD tile for this dtype pair, or NULL (portable loops)
    rq_w_fn wfn                  # SIMD `4i16o4i` kernel, or NULL
    const uint8_t* idx
    char* scratch                # tile scratch: one part of scratch_bytes per thread
    int64_t scratch_bytes
    int64_t slab                 # the walk's padded-block lanes taken a slab at a time, or 0
    int grid                     # the walk's grids (c.grid): 0 none, 1 rows, 2 rows and columns


cdef void _range(const char* s, char* d, const NodeList* p, const QCtx* c, const Job* J,
                 int64_t lo, int64_t hi, int split, int64_t base, int slot) noexcept nogil:
    """Outer iterations [lo, hi) on thread `slot` (which owns that part of the scratch)."""
    if J.kind == K_TILE:
        _tile_range(s, d, p, J.T, c, J.m, J.bfn, lo, hi, split, base,
                    J.scratch + slot * J.scratch_bytes)
    elif J.kind == K_W:
        _w_range(s, d, p, J.W, c, J.m, J.wfn, J.idx, lo, hi, split, base)
    else:
        _walk_range(s, d, p, c, lo, hi, split, base, J.slab, J.grid)


cdef void _part(const char* s, char* d, const NodeList* p, const QCtx* c, const Job* J,
                int split, int64_t lo, int64_t hi, int slot) noexcept nogil:
    """A thread's share when node `split` is divided: its digits [lo, hi), on a private copy
    of the node list whose pointers start at digit lo."""
    cdef NodeList q
    cdef QCtx qc
    if hi <= lo:
        return
    memcpy(&q, p, sizeof(NodeList))
    memcpy(&qc, c, sizeof(QCtx))
    q.ext[split] = hi - lo
    if qc.sscale_masked:
        qc.sscale = qc.sscale + lo * p.ks[split]
    if qc.dscale_masked:
        qc.dinv = qc.dinv + lo * p.ks[split]
    if qc.acc != NULL:
        qc.acc = qc.acc + lo * p.cs[split]
    _range(s + lo * p.ss[split] * c.ssz, d + lo * p.ds[split] * c.dsz, &q, &qc, J, 0,
           outer_count(&q), split, lo, slot)


cdef enum:
    RUN_PIECE = 4096    # elements: the smallest piece of a run a thread takes


cdef void _run_pieces(const char* s, char* d, const NodeList* p, const QCtx* c,
                      int nthreads) noexcept nogil:
    """The single run of node list p (outer count 1) in nthreads pieces, each a multiple of
    64 elements but the last, so vectors and cache lines stay whole inside a piece."""
    cdef int last = p.n - 1
    cdef int64_t n = p.ext[last], lo, hi
    cdef int64_t sI = p.ss[last], dI = p.ds[last], kI = p.ks[last], cI = p.cs[last]
    cdef int t
    for t in prange(nthreads, num_threads=nthreads, schedule="static"):
        lo = (n * t // nthreads) // 64 * 64
        hi = n if t == nthreads - 1 else (n * (t + 1) // nthreads) // 64 * 64
        if hi > lo:
            _run(s + lo * sI * c.ssz, d + lo * dI * c.dsz, hi - lo, sI, dI, c, lo * kI, kI,
                 lo * cI, cI)


cdef void _drive(const char* s, char* d, const NodeList* p, const QCtx* c, const Job* J,
                 int split, int nthreads) noexcept nogil:
    """Threads take a static split of the outer iterations; with compensation they split node
    `split` instead (one that carries a comp index), so every sum is owned by one thread."""
    cdef int64_t outer = outer_count(p)
    cdef int64_t ext
    cdef int t, nchunks
    if outer == 0 or p.ext[p.n - 1] == 0 or (J.kind == K_TILE and J.T.bext == 0):
        return
    if split < 0 and J.kind == K_WALK and outer == 1 and p.dim[p.n - 1] < 0 \
            and p.ext[p.n - 1] >= 2 * RUN_PIECE and nthreads > 1:
        # one long run (a plain layout, fused): threads take pieces of it
        _run_pieces(s, d, p, c, nthreads)
        return
    if split < 0:
        nchunks = nthreads if outer >= nthreads else <int>outer
        if nchunks <= 1:
            _range(s, d, p, c, J, 0, outer, -1, 0, 0)
            return
        for t in prange(nchunks, num_threads=nchunks, schedule="static"):
            _range(s, d, p, c, J, outer * t // nchunks, outer * (t + 1) // nchunks, -1, 0, t)
        return
    ext = p.ext[split]
    nchunks = nthreads if ext >= nthreads else <int>ext
    if nchunks <= 1:
        _range(s, d, p, c, J, 0, outer, -1, 0, 0)
        return
    for t in prange(nchunks, num_threads=nchunks, schedule="static"):
        _part(s, d, p, c, J, split, ext * t // nchunks, ext * (t + 1) // nchunks, t)


# Simulates a failed scratch allocation, which no test could otherwise produce.
cdef bint _fail_alloc = False
# The scale the runners read when there is none (they fill their vectors from it).
cdef float _ONE = 1.0


def set_alloc_failure(bint fail):
    """Tests: make the runners' scratch allocation fail as malloc does when memory runs out."""
    global _fail_alloc
    _fail_alloc = fail


cdef class Arith:
    """The per-element arithmetic of a conversion, shared by the three runners (keywords):

    src_scales       f32 src scales (>= 1 value), or None
    src_scale_masked index them with the walk's scale index (False: one common value)
    dst_inv_scales   f32 reciprocals of the dst scales, or None
    dst_scale_masked as for the src scales
    src_zp, dst_zp, beta   common zero points and the sum factor, or None
    adj              scale_adjust (1.0: none)
    """
    cdef QCtx c
    cdef rq_math_t m
    cdef object keep            # the arrays the context points into
    cdef float one_s, one_d     # a common scale and dst reciprocal held here (with_values)
    cdef float* own             # reciprocals of per-dim dst scales (with_values), or NULL

    def __dealloc__(self):
        free(self.own)

    def with_values(self, src_scales, dst_scales, src_zp, dst_zp, beta):
        """A copy of this arithmetic with one call's values: src_scales / dst_scales a float
        or a flat contiguous float32 array (the dst ones as given; their f32 reciprocals are
        taken here, 1.0f / s as the plan does), zero points and beta numbers. The caller has
        checked that the same operations are present and the counts match."""
        cdef Arith a = Arith.__new__(Arith)
        cdef const float[::1] v
        cdef Py_ssize_t i, n
        cdef float one = 1.0, f
        a.c = self.c
        a.m = self.m
        a.keep = (src_scales, dst_scales)
        if self.c.has_sscale:
            if type(src_scales) is float:
                a.one_s = src_scales
                a.c.sscale = &a.one_s
            else:
                v = src_scales
                a.c.sscale = &v[0]
        if self.c.has_dscale:
            if type(dst_scales) is float:
                f = dst_scales
                a.one_d = one / f
                a.c.dinv = &a.one_d
            else:
                v = dst_scales
                n = v.shape[0]
                a.own = <float*>malloc(n * sizeof(float))
                if a.own == NULL:
                    raise MemoryError("cannot allocate the dst scale reciprocals")
                for i in range(n):
                    a.own[i] = one / v[i]
                a.c.dinv = a.own
        if self.c.has_szp:
            a.c.szp = a.m.szp = src_zp
        if self.c.has_dzp:
            a.c.dzp = a.m.dzp = dst_zp
        if self.c.has_sum:
            a.c.beta = a.m.beta = beta
        return a

    def __init__(self, *, const float[::1] src_scales=None, bint src_scale_masked=False,
                 const float[::1] dst_inv_scales=None, bint dst_scale_masked=False,
                 src_zp=None, dst_zp=None, beta=None, float adj=1.0):
        if (src_scales is not None and src_scales.shape[0] < 1) \
                or (dst_inv_scales is not None and dst_inv_scales.shape[0] < 1):
            raise ValueError("scale arrays must hold at least one value")
        self.keep = (src_scales, dst_inv_scales)
        self.c.sscale = &_ONE
        self.c.dinv = &_ONE
        if src_scales is not None:
            self.c.sscale = &src_scales[0]
        if dst_inv_scales is not None:
            self.c.dinv = &dst_inv_scales[0]
        self.c.sscale_masked = src_scale_masked and src_scales is not None
        self.c.dscale_masked = dst_scale_masked and dst_inv_scales is not None
        self.c.has_sscale = self.m.has_sscale = src_scales is not None
        self.c.has_dscale = self.m.has_dscale = dst_inv_scales is not None
        self.c.has_szp = self.m.has_szp = src_zp is not None
        self.c.has_dzp = self.m.has_dzp = dst_zp is not None
        self.c.has_sum = self.m.has_sum = beta is not None
        self.c.has_adj = self.m.has_adj = adj != 1.0
        self.c.szp = self.m.szp = 0.0 if src_zp is None else src_zp
        self.c.dzp = 0.0 if dst_zp is None else dst_zp
        # -0.0: what the SIMD bodies of any arithmetic add where there is no zero point
        self.m.dzp = -0.0 if dst_zp is None else dst_zp
        self.c.beta = self.m.beta = 0.0 if beta is None else beta
        self.c.adj = self.m.adj = adj
        self.m.b8mask = 0     # the source type's, set by Convert.run
        self.m.dst_u8 = 0     # the destination type's, set by Convert.run
        self.m.scode = self.m.dcode = 0     # the types, set by Convert.run
        self.c.acc = NULL


cdef class Convert:
    """The strided-walk conversion kernel, prepared once per plan (the base of the others).

    scode, dcode    -- dtype codes: f32 0, f64 1, f16 2, bf16 3, s8 4, u8 5, s32 6
    nodes           -- rows (extent, src stride, dst stride, dim or -1, weight, scale
                       index stride, comp index stride), outermost first             # IN
    checked         -- rows (dim, logical size, dst padded size)                    # IN
    arith           -- an Arith: scales, zero points, sum, scale_adjust             # IN
    split           -- the node threads split when compensation is accumulated (one
                       that carries a comp index), or -1 (then one thread does it)
    slab            -- L > 0: the innermost node is L lanes of a padded block (strides 1,
                       a checked dim) and the next its rows (strides L, unchecked), with no
                       scale or comp index along either; the walk converts a slab of
                       whole rows in one run and zeroes the padding lanes after. The plan
                       vouches that the source holds every lane (its padding is read, never
                       kept). With a grid, the slab is the walk where the grid code does
                       not run (compensation, or no AVX-512 now)
    grid            -- 1: the innermost node is a multiple of 16 lanes, strides 1 on both
                       sides, scale index stride 0 or 1 (and 1 when the next node has
                       one), no comp index; the next node is its rows; the walk converts
                       rows that share their bounds in one SIMD call (not with
                       compensation, or without AVX-512). 2: so are whole steps of the node
                       before the rows as columns (unchecked, no scale or comp index)
    grid_split      -- with grid 2, the rows' node (n - 2) when threads split that node
                       rather than the outer iterations (their columns share dst lines:
                       nChw16c -> nhwc at C=64), or -1
    """
    cdef NodeList p
    cdef QCtx c
    cdef rq_math_t m
    cdef TileSpec T
    cdef WSpec W
    cdef uint8_t idx[192]
    cdef int scode, dcode, split, kind
    cdef readonly int grid_split  # the node threads split without compensation, or -1
    cdef readonly int64_t slab  # lanes of the padded block the walk converts whole, or 0
    cdef readonly int grid      # the walk's grids: 0 none, 1 rows, 2 rows and columns
    cdef readonly bint nt       # streaming stores, as the plan decided (the tile runner)
    cdef object keep            # the arrays the context and tables point into

    def __init__(self, int scode, int dcode, const int64_t[:, ::1] nodes,
                 const int64_t[:, ::1] checked, Arith arith not None, int split,
                 bint nt=False, int64_t slab=0, int grid=0, int grid_split=-1):
        cdef int n
        if not (0 <= scode <= 6 and 0 <= dcode <= 6):
            raise ValueError(f"bad dtype codes {scode}, {dcode}")
        if nodes.shape[1] != 7:
            raise ValueError("conversion nodes need 7 columns")
        fill_nodes(&self.p, nodes, checked)
        if not -1 <= split < self.p.n:
            raise ValueError(f"bad split node {split}")
        n = self.p.n
        if slab and not (n >= 2 and slab > 0 and (self.p.ext[n - 1], self.p.ss[n - 1],
                         self.p.ds[n - 1], self.p.ss[n - 2], self.p.ds[n - 2]) ==
                         (slab, 1, 1, slab, slab) and self.p.dim[n - 1] >= 0
                         and self.p.dim[n - 2] < 0 and self.p.ks[n - 1] == 0
                         and self.p.cs[n - 1] == 0 and self.p.ks[n - 2] == 0
                         and self.p.cs[n - 2] == 0):
            raise ValueError(f"slab {slab}: the two inner nodes are not a padded block's "
                             f"lanes and rows")
        if grid and not (0 < grid <= 2 and n >= grid + 1 and (not slab or grid == 1)
                         and self.p.ext[n - 1] >= 16 and self.p.ext[n - 1] % 16 == 0
                         and self.p.ss[n - 1] == 1 and self.p.ds[n - 1] == 1
                         and self.p.ks[n - 1] in (0, 1) and self.p.cs[n - 1] == 0
                         and (self.p.ks[n - 2] == 0 or self.p.ks[n - 1] == 1)
                         and self.p.cs[n - 2] == 0
                         and (grid == 1 or (self.p.dim[n - 3] < 0 and self.p.ks[n - 3] == 0
                                            and self.p.cs[n - 3] == 0))):
            raise ValueError(f"grid {grid}: the inner node is not a multiple of 16 lanes "
                             f"contiguous on both sides, or its rows or columns carry an "
                             f"index the grid cannot follow")
        if not (grid_split == -1 or (grid == 2 and grid_split == n - 2)):
            raise ValueError(f"grid_split {grid_split}: only a grid's rows (node {n - 2}) split")
        self.slab = slab
        self.grid = grid
        self.grid_split = grid_split
        self.keep = arith
        self.c = arith.c
        self.m = arith.m
        self.scode, self.dcode, self.split, self.kind = scode, dcode, split, K_WALK
        self.nt = nt

    @property
    def walked(self):
        """The nodes the runner walks, outermost first, as (extent, src stride, dst stride):
        the strided walk's in its own order (a grid's columns and rows last, then the lanes),
        the tiles' and weights' outer positions."""
        return tuple((self.p.ext[i], self.p.ss[i], self.p.ds[i]) for i in range(self.p.n))

    @property
    def simd(self):
        """True when this CPU runs this kernel's AVX-512 code for its dtype pair."""
        if self.kind == K_TILE:
            return rq_block_kernel(self.scode, self.dcode) != NULL
        if self.kind == K_W:
            return rq_w_kernel(self.scode, self.dcode) != NULL
        return False

    @property
    def path(self):
        """The code this runner takes on this CPU now: 'avx512-bf16', 'avx512', 'avx2' or
        'portable' (the strided walk: for its runs that are contiguous on both sides; the
        `4i16o4i` weights: 'avx512-vbmi' or 'portable')."""
        if self.kind == K_W:
            return "avx512-vbmi" if rq_w_kernel(self.scode, self.dcode) != NULL else "portable"
        return ("portable", "avx2", "avx512", "avx512-bf16")[rq_isa(self.scode, self.dcode)]

    def run(self, uintptr_t src, uintptr_t dst, int nthreads, uintptr_t acc=0,
            Arith values=None, bint stream=True):
        """src, dst: addresses of logical element (0, ..., 0) of each side. acc: a zeroed
        int32 buffer over the compensation layout that receives the sums of the stored s8
        values, or 0. values: an Arith with this call's scales, zero points and beta (the
        plan's own when None); it must ask for the same operations as the plan's.
        stream=False keeps this call's stores cached where the runner would stream.
        Raises MemoryError when the tile scratch cannot be allocated."""
        cdef QCtx c = self.c
        cdef rq_math_t m = self.m
        cdef TileSpec T = self.T
        cdef Job J
        cdef int split = self.split
        if acc != 0 and self.dcode != 4:
            raise ValueError("compensation needs an s8 destination")
        if acc != 0 and self.kind == K_TILE and T.last != (T.ngroups - 1) * 16:
            raise ValueError("compensation cannot take tile lanes that overlap their last group")
        if values is not None:
            if (values.c.has_sscale, values.c.has_dscale, values.c.has_szp, values.c.has_dzp,
                    values.c.has_sum, values.c.sscale_masked, values.c.dscale_masked) != (
                    c.has_sscale, c.has_dscale, c.has_szp, c.has_dzp, c.has_sum,
                    c.sscale_masked, c.dscale_masked) or values.m.adj != m.adj:
                raise ValueError("the call's conversion values ask for other operations than "
                                 "the plan was made for")
            c = values.c
            m = values.m
        m.nt = self.nt and stream and self.kind == K_WALK
        # the SIMD families' one 1-byte source body widens by this mask, and their one 1-byte
        # destination body stores the type this flag says (convert/kernel_args.h)
        m.b8mask = RQ_B8MASK_s8 if self.scode == 4 else RQ_B8MASK_u8 if self.scode == 5 else 0
        m.dst_u8 = self.dcode == 5
        m.scode, m.dcode = self.scode, self.dcode     # the AVX2 family's one body reads them
        T.nt = T.nt and stream
        c.m = &m
        c.scode, c.dcode = self.scode, self.dcode
        c.ssz, c.dsz = DSIZE[self.scode], DSIZE[self.dcode]
        c.row = rq_row_kernel(self.scode, self.dcode) if self.kind == K_WALK else NULL
        c.grid = rq_grid_kernel(self.scode, self.dcode) if self.kind == K_WALK else NULL
        J.kind, J.T, J.W, J.m, J.idx = self.kind, &T, &self.W, &m, self.idx
        J.bfn = rq_block_kernel(self.scode, self.dcode) if self.kind == K_TILE else NULL
        J.wfn = rq_w_kernel(self.scode, self.dcode) if self.kind == K_W else NULL
        J.scratch, J.scratch_bytes = NULL, 0
        J.grid = self.grid if self.kind == K_WALK and acc == 0 and c.grid != NULL else 0
        J.slab = self.slab if self.kind == K_WALK and acc == 0 and J.grid == 0 else 0
        c.acc = <int32_t*>acc
        if acc == 0:
            split = self.grid_split
        elif split < 0:
            nthreads = 1          # no node to split: one thread owns every sum
        if nthreads < 1:
            nthreads = 1
        if self.kind == K_TILE:
            J.scratch_bytes = _tile_scratch_bytes(&T)
            J.scratch = NULL if _fail_alloc else <char*>malloc(J.scratch_bytes * nthreads)
            if J.scratch == NULL:
                raise MemoryError(f"cannot allocate {J.scratch_bytes * nthreads} bytes of "
                                  f"conversion tile scratch")
        try:
            with nogil:
                _drive(<const char*>src, <char*>dst, &self.p, &c, &J, split, nthreads)
        finally:
            free(J.scratch)


cdef class ConvertTile(Convert):
    """Tile conversion kernel (see the tile section).

    nodes     -- outer nodes (7 columns, as for Convert), then a dummy node of extent 1
    soff, koff, coff -- [G*16] lane tables (int64)
    nlanes    -- the lanes (G*16 when None): with fewer, at least 16, the tables' last group
                 holds lanes nlanes-16 .. nlanes-1 and overlaps the group before, whose
                 shared lanes it writes again with the same values; a sum with dst and
                 compensation sums, which that would count twice, are refused
    acoord    -- [nck, G*16] lane coordinates along the checked dims in `ckdims`
    b         -- B as (extent, dst stride, weight, checked dim or -1)
    nt        -- stream full 64-byte lines
    groups    -- lane groups converted at once: 4 of 1-byte outputs, 2 of 16-bit ones, so
                 that each column's 64 bytes are one store; 1 for one at a time (the
                 planner's choice)
    copy_lanes -- with cached stores, the SIMD tiles build this many lanes (a multiple of 16
                 and of 16 x groups) of a position's B rows at a time in a scratch and copy
                 each row's part out in turn; 0 to store into dst directly. Not with a sum
                 with dst, which reads dst
    cols_first -- the widening chunks (16-bit and 1-byte sources to f32, scaled 1-byte ones
                 to 16-bit outputs) walk B's columns outermost, every lane group at each, so
                 each dst row is written whole and in order (the planner's choice)
    """
    cdef readonly int groups
    cdef readonly bint cols_first  # the widening chunks walk B's columns outermost
    cdef readonly int64_t nlanes

    def __init__(self, int scode, int dcode, const int64_t[:, ::1] nodes,
                 const int64_t[:, ::1] checked, Arith arith not None, int split,
                 const int64_t[::1] soff, const int64_t[::1] koff, const int64_t[::1] coff,
                 const int64_t[:, ::1] acoord, const int64_t[::1] ckdims, const int64_t[::1] b,
                 bint nt, int groups=1, nlanes=None, int64_t copy_lanes=0,
                 bint cols_first=False):
        Convert.__init__(self, scode, dcode, nodes, checked, arith, split)
        cdef int k
        n = soff.shape[0]
        if n == 0 or n % 16 or koff.shape[0] != n or coff.shape[0] != n \
                or acoord.shape[1] != n or acoord.shape[0] != ckdims.shape[0] \
                or ckdims.shape[0] > MAX_DIMS or b.shape[0] != 4:
            raise ValueError("inconsistent tile tables")
        nlanes = n if nlanes is None else nlanes
        if not (n - 16 < nlanes <= n and nlanes >= 16):
            raise ValueError(f"{nlanes} lanes do not fill the tables' {n // 16} groups of 16")
        if nlanes != n and arith.c.has_sum:
            raise ValueError(f"{nlanes} lanes overlap their last group, which a sum with dst "
                             f"cannot take")
        if self.p.ext[self.p.n - 1] != 1:
            raise ValueError("tile nodes must end with a dummy node of extent 1")
        if groups not in (1, 2, 4):
            raise ValueError(f"a tile converts 1, 2 or 4 lane groups at once, not {groups}")
        if copy_lanes < 0 or copy_lanes % (16 * groups) or (copy_lanes and arith.c.has_sum):
            raise ValueError(f"copy_lanes {copy_lanes} must be a multiple of {16 * groups} "
                             f"lanes, and 0 with a sum with dst")
        self.keep = (self.keep, soff, koff, coff, acoord)
        self.nt = nt
        self.T.nt = nt
        self.groups = groups
        self.T.groups = groups
        self.T.cols_first = cols_first
        self.cols_first = cols_first
        self.T.ngroups = n // 16
        self.T.last = nlanes - 16
        self.nlanes = nlanes
        self.T.soff = &soff[0]
        self.T.koff = &koff[0]
        self.T.coff = &coff[0]
        self.T.acoord = &acoord[0, 0] if acoord.shape[0] else NULL
        self.T.nck = ckdims.shape[0]
        for k in range(self.T.nck):
            self.T.ckdim[k] = <int>ckdims[k]
        self.T.bext, self.T.bds, self.T.bw, self.T.bdim = b[0], b[1], b[2], <int>b[3]
        self.T.copy_lanes = copy_lanes
        self.T.dsize = DSIZE[dcode]
        self.kind = K_TILE

    @property
    def copy_lanes(self):
        """Lanes a position's B rows are built in a scratch at a time before each row's part
        is copied out, or 0 (the plan's choice; cached stores only)."""
        return self.T.copy_lanes


cdef class ConvertW4i16o4i(Convert):
    """int8 weights kernel for `4i16o4i` destinations (see the weights section). It has no
    streaming stores.

    nodes  -- outer nodes (7 columns), then a dummy node of extent 1
    w      -- (S, o row stride, o lane weight, o scale stride, o comp stride, o checked dim or
              -1, i checked dim or -1)
    """
    def __init__(self, int scode, int dcode, const int64_t[:, ::1] nodes,
                 const int64_t[:, ::1] checked, Arith arith not None, int split,
                 const int64_t[::1] w):
        Convert.__init__(self, scode, dcode, nodes, checked, arith, split)
        cdef int q, j, i
        cdef int64_t nat, v, e
        if dcode not in (4, 5) or arith.c.has_szp or arith.c.has_dzp or arith.c.has_sum \
                or w.shape[0] != 7 or not 1 <= w[0] <= 12 or self.p.ext[self.p.n - 1] != 1:
            raise ValueError("the 4i16o4i kernel takes s8/u8 weights, scales only, 1..12 "
                             "spatial points, and outer nodes ending with a dummy node")
        self.W.S, self.W.so, self.W.ow, self.W.ks, self.W.cs = w[0], w[1], w[2], w[3], w[4]
        self.W.odim, self.W.idim = <int>w[5], <int>w[6]
        for q in range(3):
            for j in range(4):
                for i in range(16):
                    # natural row byte i*S + s -> its position after the packs (see RQ_W)
                    nat = i * self.W.S + 4 * q + j if 4 * q + j < self.W.S else 0
                    v, e = nat // 16, nat % 16
                    self.idx[q * 64 + j * 16 + i] = <uint8_t>(
                        (v // 4) * 64 + (e // 4) * 16 + (v % 4) * 4 + e % 4)
        self.kind = K_W


def simd_available():
    """True when the AVX-512 conversion tiles can run on this CPU."""
    return bool(rq_simd_available())


def avx2_available():
    """True when the AVX2 (+F16C) conversion tiles and rows can run on this CPU."""
    return bool(rq_avx2_available())


def set_simd(int mode):
    """1: the widest SIMD the CPU has (AVX-512 with hardware bf16 when present, else AVX2),
    2: AVX-512 with the emulated bf16, 3: AVX2 even where AVX-512 exists, 0: portable loops
    only. Tests compare every path with the reference."""
    if mode not in (0, 1, 2, 3):
        raise ValueError(f"bad SIMD mode {mode}")
    rq_set_simd(mode)


def finish_compensation(uintptr_t acc, uintptr_t s8s8, uintptr_t zp, int64_t n):
    """Turn sums of q into compensation: s8s8 = -128 * sum, zp = -sum (int32, wrapping).
    acc may be the same buffer as s8s8 or zp."""
    cdef int32_t* a = <int32_t*>acc
    cdef int32_t* s = <int32_t*>s8s8
    cdef int32_t* z = <int32_t*>zp
    cdef int64_t i
    cdef uint32_t q
    with nogil:
        for i in range(n):
            q = <uint32_t>a[i]
            if z != NULL:
                z[i] = <int32_t>(0u - q)
            if s != NULL:
                s[i] = <int32_t>(0u - (q << 7))


# ---------------------------------------------------------------------------------------------
# single-value conversions, for tests and for the docs' rounding table

def convert_values(values, int dcode):
    """f32 values -> the bit pattern (as Python ints) the kernels store for dtype `dcode`."""
    cdef float v
    cdef f16_t h
    cdef bf16_t b
    out = []
    for x in values:
        v = x
        if dcode == 0:
            out.append(v)
        elif dcode == 1:
            out.append(<double>v)
        elif dcode == 2:
            from_f32(v, &h)
            out.append(h.bits)
        elif dcode == 3:
            from_f32(v, &b)
            out.append(b.bits)
        elif dcode == 4:
            out.append(rq_to_s8(v))
        elif dcode == 5:
            out.append(rq_to_u8(v))
        elif dcode == 6:
            out.append(rq_to_s32(v))
        else:
            raise ValueError(f"bad dtype code {dcode}")
    return out
