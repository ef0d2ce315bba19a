/* The arguments of the conversion kernels: the arithmetic of a call (rq_math_t) and the work of
 * each kernel family (a tile's outer position rq_block_t, a weight block rq_w_t, a row, a grid
 * rq_grid_t), with their function types. Shared by the kernels (the headers convert/entry_points.h
 * lists), their run-time choice (convert/simd_dispatch.h) and convert/convert.pyx.
 */
#ifndef REORDER_CONVERT_ARGS_H
#define REORDER_CONVERT_ARGS_H
#include <stdint.h>


typedef struct {
    float szp, dzp, beta, adj;     /* absent: +0, -0, 0, 1 (x - +0, x + -0 and x * 1 are x) */
    int has_sscale, has_dscale, has_szp, has_dzp, has_sum, has_adj;
    int nt;                /* rows: stream 64-byte-aligned stores (the plan's choice) */
    int b8mask;            /* a 1-byte source's widening (RQ_SRC_VARS): RQ_B8MASK_s8 / _u8,
                              set from the source type by the caller */
    int dst_u8;            /* a 1-byte destination's type (RQ_DST_VARS): 1 u8, 0 s8 */
    int scode, dcode;      /* the element types (RQ_CODE_*), for the bodies that serve
                              several: the AVX2 family's, and the AVX-512 b8 and h16 ones */
} rq_math_t;
/* the element type codes, as convert/convert.pyx numbers them */
enum { RQ_CODE_F32, RQ_CODE_F64, RQ_CODE_F16, RQ_CODE_BF16, RQ_CODE_S8, RQ_CODE_U8,
       RQ_CODE_S32 };
/* A byte sign-extended to 32 bits is its s8 value; the low 8 bits of that are its u8 value.
   So sign extension and a mask widen either (the SIMD families' "b8": one body for both) */
#define RQ_B8MASK_s8 (-1)
#define RQ_B8MASK_u8 0xff


/* One outer position: G lane groups (group g at dst + 16*g, the last at dst + last, lanes
   soff[16g..], scale vectors ssc/dinv[16g..], lane mask lanes[g], accumulators acc[16g..] or
   NULL). `last` is 16*(G-1) but where the lanes are not whole groups: the last group then
   ends at the last lane and overlaps the one before, whose shared lanes it writes again with
   the same values (never with a sum with dst or sums, which would count them twice). */
typedef struct {
    int64_t ngroups, dB, nbv, nbw, last;
    int64_t nt;            /* stream full 64-byte lines (large dst) */
    int64_t common;        /* the scales are one value each (no mask): ssc[0] and dinv[0] stand
                              for every lane */
    int64_t groups;        /* lane groups converted at once, the plan's choice: 4 of 1-byte
                              outputs (rq_tile4), 2 of 16-bit ones (rq_tile2), else 1; each
                              column's 64 bytes are then one store */
    int64_t cols_first;    /* the widening chunks (rq_singles) walk the columns outermost,
                              every group at each, so each dst row is written whole and in
                              order (the plan's choice) */
    const int64_t* soff;
    const uint16_t* lanes;
    const float* ssc;
    const float* dinv;
    int32_t* acc;
} rq_block_t;
typedef void rq_block_f(const void* src, void* dst, const rq_block_t* blk, const rq_math_t* m);
typedef rq_block_f* rq_block_fn;

typedef struct {
    int64_t so;            /* source stride between the o rows (elements) */
    int64_t S;             /* spatial points per row, 1..12 */
    int64_t nvo, nvi;      /* valid o rows and valid i (prefixes) at this position */
    const float* ssc;      /* 16 per-o scales (or the common one repeated) */
    const float* dinv;     /* 16 per-o reciprocal dst scales */
    int32_t* acc;          /* 16 per-o sums of the stored bytes, added to; or NULL */
    const uint8_t* idx;    /* 3 x 64 vpermi2b indices: packed position of byte i*S + s, for
                              output (s, i) (see RQ_W) */
} rq_w_t;
typedef void rq_w_f(const void* src, void* dst, const rq_w_t* k, const rq_math_t* m);
typedef rq_w_f* rq_w_fn;

/* A contiguous run of n elements on both sides (the strided walk's inner run): scales are
   one value (sk / dk 0) or one per element (1). */
typedef void rq_row_f(const void* s, void* d, int64_t n, const float* ssc, int64_t sk,
                      const float* dinv, int64_t dk, const rq_math_t* m);
typedef rq_row_f* rq_row_fn;

/* A grid of short runs (the strided walk's rows of a block): `cols` columns of `rows` runs
   of L lanes, run (c, r) at s + c * css + r * rss and d + c * cds + r * rds (elements). In
   every row but the last lanes [0, nv) convert and [nv, nw) are written as zeros, in the last
   [0, nvl) and [nvl, nwl); lanes past those are left alone. L is a multiple of 16, nv <= nw
   <= L. Scales are one value (sk / dk 0) or one per lane (1), those of row r from
   ssc + r * rks. */
typedef struct {
    int64_t cols, rows, L, nv, nw, nvl, nwl;
    int64_t css, cds, rss, rds, rks;
    const float* ssc;
    const float* dinv;
    int64_t sk, dk;
} rq_grid_t;
typedef void rq_grid_f(const void* s, void* d, const rq_grid_t* g, const rq_math_t* m);
typedef rq_grid_f* rq_grid_fn;

#endif
