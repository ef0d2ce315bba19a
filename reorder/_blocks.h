/* Block kernel: conv weights with small spatial dims (oihw <-> OIhw16i16o, OIhw4i16o4i, ...).
 *
 * One block is R rows x C columns of elements. On the plain side, row r is C contiguous
 * elements at r * rs (oihw: r = o within the O block, column c = i * h*w + hw within the I
 * block). On the blocked side the block is R * C contiguous elements; column c goes to
 * "scratch row" q[c], and scratch rows come in groups of il that interleave with r:
 *     blocked offset of (r, c) = (q[c] / il) * (R * il) + r * il + q[c] % il
 * (OIhw16i16o: il = 1, q[c] = hw * 16 + i; OIhw4i16o4i: il = 4, q = (hw * 4 + i / 4) * 4 + i % 4).
 *
 * A block moves in two stages through a scratch T (C rows of R elements, in L1):
 *   plain -> blocked: (1) register transposes of R x W tiles of the plain rows into T,
 *                     each column to its row q[c]; (2) the groups of il rows of T interleaved
 *                     into the blocked block (il = 1: T *is* the blocked block).
 *   blocked -> plain: (1) the blocked block de-interleaved into T (il = 1: T is the source
 *                     block itself); (2) register transposes of W x R tiles of T into the
 *                     plain rows.
 * Only rows r < rv and columns c < cv hold data. Plain -> blocked writes zeros for the rest
 * (destination padding) in the same pass; blocked -> plain skips them. A block that lies
 * wholly in the destination's padding of a dim outside the block is all zeros either way
 * (blk_plain_zeros on the plain side).
 *
 * Runs (coff set): the plain side's rows are contiguous instead, and column c is the run of
 * R elements at coff[c] (hwio: the 16 o of one i and one spatial position). A run goes whole
 * to (or from) its scratch row, with the interleave stage as above; nothing to transpose.
 *
 * Streaming (nt): the destination is first built in a second scratch and then copied out
 * with non-temporal stores of whole 64-byte lines (the caller issues the sfence).
 *
 * simd = 1 takes the AVX2 paths where the shape has them (R a multiple of 4 for 8-byte
 * elements, of 8 or 16 for the others; il 1, 2 or 4); simd = 2 also takes the AVX-512 byte
 * permutes for the il = 4 interleave of 16- and 32-byte rows, 16 x 16 tiles and an AVX-512
 * il = 4 interleave for 4-byte elements where R is a multiple of 16, and moves blocks of 16
 * rows of 1- and 2-byte elements in registers, a segment of columns at a time (the register
 * path, below: no tiles, no interleave pass); everything else, and simd = 0, runs portable
 * loops that write the same bytes.
 */
#ifndef REORDER_BLOCKS_H
#define REORDER_BLOCKS_H
#include <stdint.h>
#include <string.h>
#include "_cpu.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define REORDER_BLK_X86 1
#include <immintrin.h>
#include "_transpose_avx2.h"
#ifndef REORDER_TR16_ALWAYS_INLINE
#define REORDER_TR16_ALWAYS_INLINE 1     /* _transpose_avx512.h: the move kernels' many sites */
#endif
#include "_transpose_avx512.h"
#else
#define REORDER_BLK_X86 0
#endif

/* Largest block (bytes) the scratch holds; bigger blocks are left to the transpose kernel. */
#define BLK_MAX_BYTES (32 * 1024)

typedef struct {
    int64_t R, C, il;       /* rows, columns, interleave width of the blocked side */
    int64_t rs;             /* plain-side row stride, elements (may be negative) */
    const int32_t* q;       /* C entries: scratch row of each column */
    const int64_t* coff;    /* runs: C entries, column c's plain offset (elements); else NULL */
    int esize;              /* bytes per element: 1, 2, 4 or 8 */
    /* il = 4, groups of 64 or 128 bytes: the byte permutes to the blocked order ([0]) and
     * back ([1]), set by blk_prepare; ix_bytes is 0 where they do not apply */
    int ix_bytes;
    uint8_t ix[2][128];
    /* 1- and 2-byte elements, R = 16, il * esize at most 8, and the columns in segments of
     * vw (a multiple of il, at most 320 bytes) that q permutes alike, each within itself: the
     * block moves a segment at a time in registers (blk_*_regs), set by blk_prepare; vk = 0
     * where it does not, else the segment's count of 64-byte registers.
     * rx[0][k]: chunk k of a segment in scratch order from its 64-byte registers, pairs
     * (0, 1), (2, 3) and (4), rm[0][k][p - 1] marking the bytes of pair p; rx[1], rm[1]: the
     * row's register k back from the chunks. lx: a 64-byte group of [r][a dword of scratch
     * rows] (4i16o4i bytes, 8i16o2i words) to the blocked order of il ([0]) and back ([1]). */
    int64_t vk, vw;
    int vid;                /* q is the identity within a segment: no permutes, no T */
    uint8_t rx[2][5][3][64];
    uint64_t rm[2][5][2];
    uint8_t lx[2][64];
} blk_t;

static inline int blk_have_avx2(void) { return reorder_cpu.avx2; }
static inline int blk_have_avx512(void) { return reorder_cpu.avx2 && reorder_cpu.avx512_vbmi; }

/* The plan-time part of a block: for il = 4 with groups of 4 rows of 16 or 32 bytes, the
 * byte permutes between scratch order (j * R + r) * e + x and blocked order (r * 4 + j) * e + x. */
static void blk_prepare_regs(blk_t* b);
static void blk_prepare(blk_t* b) {
    const int64_t e = b->esize, R = b->R, row = R * e;
    blk_prepare_regs(b);
    if (b->coff) b->vk = b->vid = 0;     /* runs: the columns are not rows' segments */
    b->ix_bytes = 0;
    if (b->il != 4 || (row != 16 && row != 32)) return;
    b->ix_bytes = (int)(4 * row);
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < 4; j++)
            for (int64_t x = 0; x < e; x++) {
                const int64_t blocked = (r * 4 + j) * e + x, scratch = (j * R + r) * e + x;
                b->ix[0][blocked] = (uint8_t)scratch;
                b->ix[1][scratch] = (uint8_t)blocked;
            }
}

/* The tables of the register path: a row's byte c goes to scratch byte q[c]. */
static void blk_prepare_regs(blk_t* b) {
    const int64_t C = b->C, il = b->il, e = b->esize;
    int64_t W = 0;
    b->vk = b->vw = 0;
    /* a dword holds 4 / e elements of a row, and il of them at most interleave (or two
     * dwords: 4i16o4i words) */
    if ((e != 1 && e != 2) || b->R != 16 || (il != 1 && il != 2 && il != 4))
        return;
    /* of the segments of columns that every segment permutes alike, within itself, the one
     * of the fewest shuffles a column: a row's permute per 64 bytes (1 from one or two
     * registers, 2 from three, 3 from four, 4 from five), a transpose per 16 dwords (64, or
     * 20 for at most 4), and about 20 more a segment */
    int64_t best = 0;
    for (int64_t w = il; w * e <= 320; w += il) {
        if (C % w) continue;
        int64_t c = 0;
        while (c < C && b->q[c] == c / w * w + b->q[c % w]) c++;
        if (c < C) continue;
        const int64_t k = (w * e + 63) / 64, last = w * e - 64 * (k - 1);
        const int64_t ops = 16 * k * (k <= 2 ? 1 : k - 1) + 64 * (k - 1) + (last <= 16 ? 20 : 64) + 20;
        if (!W || ops * W < best * w) {
            W = w;
            best = ops;
        }
    }
    if (!W) return;
    b->vid = 1;
    for (int64_t c = 0; c < W; c++) b->vid &= b->q[c] == c;
    /* 2-byte rows that need both the permutes and a relabel (OIhw16i16o) measured level
     * with the AVX2 tiles: 8i16o2i and 4i16o4i weights and the identity (activations, 1x1
     * weights) take it */
    if (e == 2 && il == 1 && !b->vid) return;
    b->vw = W;
    b->vk = (W * e + 63) / 64;
    memset(b->rx, 0, sizeof b->rx);
    memset(b->rm, 0, sizeof b->rm);
    for (int64_t c = 0; c < W; c++)
        for (int64_t x = 0; x < e; x++) {
            const int64_t cb = c * e + x, qb = b->q[c] * e + x;
            b->rx[0][qb / 64][cb / 128][qb % 64] = (uint8_t)(cb & 127);
            if (cb >= 128) b->rm[0][qb / 64][cb / 128 - 1] |= 1ULL << (qb % 64);
            b->rx[1][cb / 64][qb / 128][cb % 64] = (uint8_t)(qb & 127);
            if (qb >= 128) b->rm[1][cb / 64][qb / 128 - 1] |= 1ULL << (cb % 64);
        }
    for (int64_t r = 0; r < 16 && il * e <= 4; r++)
        for (int64_t j = 0; j < 4 / e; j++)
            for (int64_t x = 0; x < e; x++) {
                const int64_t dw = r * 4 + j * e + x;
                const int64_t blocked = ((j / il) * (16 * il) + r * il + j % il) * e + x;
                b->lx[0][blocked] = (uint8_t)dw;
                b->lx[1][dw] = (uint8_t)blocked;
            }
}

/* ---- portable loops, one set per element size ------------------------------------------ */
/* gather: T[q[c]][r] = plain (r, c) for rows [0, R) x columns [c0, C), zeros outside rv x cv;
 *   rows outer so the plain side is read in order (T is in L1).
 * scatter: plain (r, c) = T[q[c]][r] for rows [0, rv) x columns [c0, cv).
 * (de)interleave: groups of il rows of T (each R elements) <-> blocked order [r][il]. */
#define REORDER_BLK_SCALAR(W, SFX)                                                          \
static void blk_gather_##SFX(const blk_t* b, const char* rows_, char* T_, int64_t rv,     \
                             int64_t cv, int64_t c0) {                                    \
    const W* rows = (const W*)rows_;                                                      \
    W* T = (W*)T_;                                                                        \
    const int64_t R = b->R, C = b->C;                                                     \
    const int32_t* q = b->q;                                                              \
    for (int64_t r = 0; r < R; r++) {                                                     \
        const W* s = rows + r * b->rs;                                                    \
        if (r < rv)                                                                       \
            for (int64_t c = c0; c < cv; c++) T[(int64_t)q[c] * R + r] = s[c];            \
        else                                                                              \
            for (int64_t c = c0; c < cv; c++) T[(int64_t)q[c] * R + r] = 0;               \
    }                                                                                     \
    for (int64_t c = cv > c0 ? cv : c0; c < C; c++)                                       \
        memset(T + (int64_t)q[c] * R, 0, R * sizeof(W));                                  \
}                                                                                         \
static void blk_scatter_##SFX(const blk_t* b, const char* T_, char* rows_, int64_t ros,   \
                              int64_t rv, int64_t cv, int64_t c0) {                       \
    const W* T = (const W*)T_;                                                            \
    W* rows = (W*)rows_;                                                                  \
    const int64_t R = b->R;                                                               \
    const int32_t* q = b->q;                                                              \
    for (int64_t r = 0; r < rv; r++) {                                                    \
        W* d = rows + r * ros;                                                            \
        for (int64_t c = c0; c < cv; c++) d[c] = T[(int64_t)q[c] * R + r];                \
    }                                                                                     \
}                                                                                         \
static void blk_interleave_##SFX(const blk_t* b, const char* T_, char* out_) {            \
    const W* T = (const W*)T_;                                                            \
    W* out = (W*)out_;                                                                    \
    const int64_t R = b->R, il = b->il, n = R * b->C;                                     \
    for (int64_t g = 0; g < n; g += il * R)                                               \
        for (int64_t j = 0; j < il; j++)                                                  \
            for (int64_t r = 0; r < R; r++) out[g + r * il + j] = T[g + j * R + r];       \
}                                                                                         \
static void blk_deinterleave_##SFX(const blk_t* b, const char* in_, char* T_) {           \
    const W* in = (const W*)in_;                                                          \
    W* T = (W*)T_;                                                                        \
    const int64_t R = b->R, il = b->il, n = R * b->C;                                     \
    for (int64_t g = 0; g < n; g += il * R)                                               \
        for (int64_t j = 0; j < il; j++)                                                  \
            for (int64_t r = 0; r < R; r++) T[g + j * R + r] = in[g + r * il + j];        \
}
REORDER_BLK_SCALAR(uint8_t, u8)
REORDER_BLK_SCALAR(uint16_t, u16)
REORDER_BLK_SCALAR(uint32_t, u32)
REORDER_BLK_SCALAR(uint64_t, u64)

#define REORDER_BLK_BY_SIZE(e, CALL)                                                        \
    switch (e) {                                                                          \
    case 1: CALL(u8); break;                                                              \
    case 2: CALL(u16); break;                                                             \
    case 4: CALL(u32); break;                                                             \
    default: CALL(u64); break;                                                            \
    }

static void blk_gather_scalar(const blk_t* b, const char* rows, char* T, int64_t rv, int64_t cv,
                              int64_t c0) {
#define BLK_CALL(S) blk_gather_##S(b, rows, T, rv, cv, c0)
    REORDER_BLK_BY_SIZE(b->esize, BLK_CALL)
#undef BLK_CALL
}

static void blk_scatter_scalar(const blk_t* b, const char* T, char* rows, int64_t ros,
                               int64_t rv, int64_t cv, int64_t c0) {
#define BLK_CALL(S) blk_scatter_##S(b, T, rows, ros, rv, cv, c0)
    REORDER_BLK_BY_SIZE(b->esize, BLK_CALL)
#undef BLK_CALL
}

static void blk_interleave_scalar(const blk_t* b, const char* T, char* out) {
#define BLK_CALL(S) blk_interleave_##S(b, T, out)
    REORDER_BLK_BY_SIZE(b->esize, BLK_CALL)
#undef BLK_CALL
}

static void blk_deinterleave_scalar(const blk_t* b, const char* in, char* T) {
#define BLK_CALL(S) blk_deinterleave_##S(b, in, T)
    REORDER_BLK_BY_SIZE(b->esize, BLK_CALL)
#undef BLK_CALL
}

/* n bytes; whole aligned 64-byte lines with non-temporal stores when nt. */
static void blk_copy_out(char* d, const char* s, int64_t n, int nt, int simd);

#if REORDER_BLK_X86
/* N x N tiles of N-element registers V (8 dwords or 4 qwords in __m256i, 16 floats in
 * __m512) through the transpose TR: plain rows to scratch rows (gather; rows past rv load as
 * zeros), and back (scatter). LD(p), ST(p, v), ZERO: the register's unaligned load, store
 * and zero. */
#define BLK_LD256(p) _mm256_loadu_si256((const __m256i*)(p))
#define BLK_ST256(p, x) _mm256_storeu_si256((__m256i*)(p), x)
#define BLK_GATHER_SQUARE(W, N, TR, V, LD, ST, ZERO)                                       \
    const W* s = (const W*)rows;                                                            \
    W* t = (W*)T;                                                                           \
    V v[N];                                                                                 \
    for (; c0 + N <= cv; c0 += N)                                                           \
        for (int64_t g = 0; g < R; g += N) {                                                \
            for (int i = 0; i < N; i++)                                                     \
                v[i] = g + i < rv ? LD(s + (g + i) * rs + c0) : ZERO;                       \
            TR(v);                                                                          \
            for (int j = 0; j < N; j++) ST(t + (int64_t)q[c0 + j] * R + g, v[j]);           \
        }
#define BLK_SCATTER_SQUARE(W, N, TR, V, LD, ST)                                             \
    const W* t = (const W*)T;                                                               \
    W* d = (W*)rows;                                                                        \
    V v[N];                                                                                 \
    for (; c0 + N <= cv; c0 += N)                                                           \
        for (int64_t g = 0; g < rv; g += N) {                                               \
            for (int i = 0; i < N; i++) v[i] = LD(t + (int64_t)q[c0 + i] * R + g);          \
            TR(v);                                                                          \
            for (int j = 0; j < N && g + j < rv; j++) ST(d + (g + j) * ros + c0, v[j]);     \
        }

/* Stage 1, plain -> blocked, AVX2: full tiles of valid columns (4x4 qwords, 8x8 dwords,
 * 16x8 words in 128-bit lanes, 16x16 bytes); returns the first column left for the
 * portable loop. */
__attribute__((target("avx2")))
static int64_t blk_gather_avx2(const blk_t* b, const char* rows, char* T, int64_t rv, int64_t cv,
                               int64_t c0) {
    const int64_t R = b->R, rs = b->rs;
    const int32_t* q = b->q;
    if (b->esize == 4 && R % 8 == 0) {
        BLK_GATHER_SQUARE(uint32_t, 8, avx2_tr8x8_epi32, __m256i, BLK_LD256, BLK_ST256, _mm256_setzero_si256());
    } else if (b->esize == 8 && R % 4 == 0) {
        BLK_GATHER_SQUARE(uint64_t, 4, avx2_tr4x4_epi64, __m256i, BLK_LD256, BLK_ST256, _mm256_setzero_si256());
    } else if (b->esize == 2 && R % 16 == 0) {
        const uint16_t* s = (const uint16_t*)rows;
        uint16_t* t = (uint16_t*)T;
        __m256i v[8];
        const __m128i z = _mm_setzero_si128();
        for (; c0 + 8 <= cv; c0 += 8)
            for (int64_t g = 0; g < R; g += 16) {
                for (int i = 0; i < 8; i++) {
                    __m128i lo = g + i < rv ? _mm_loadu_si128((const __m128i*)(s + (g + i) * rs + c0)) : z;
                    __m128i hi = g + 8 + i < rv ? _mm_loadu_si128((const __m128i*)(s + (g + 8 + i) * rs + c0)) : z;
                    v[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
                }
                avx2_tr8x8_epi16_lanes(v);
                for (int j = 0; j < 8; j++)
                    _mm256_storeu_si256((__m256i*)(t + (int64_t)q[c0 + j] * R + g), v[j]);
            }
    } else if (b->esize == 1 && R % 16 == 0) {
        /* 16 x 16 byte tiles in eight registers (lane 0 row i, lane 1 row 8 + i): no spills */
        const uint8_t* s = (const uint8_t*)rows;
        uint8_t* t = (uint8_t*)T;
        __m256i v[8];
        const __m128i z = _mm_setzero_si128();
        for (; c0 + 16 <= cv; c0 += 16)
            for (int64_t g = 0; g < R; g += 16) {
                for (int i = 0; i < 8; i++) {
                    __m128i lo = g + i < rv ? _mm_loadu_si128((const __m128i*)(s + (g + i) * rs + c0)) : z;
                    __m128i hi = g + 8 + i < rv ? _mm_loadu_si128((const __m128i*)(s + (g + 8 + i) * rs + c0)) : z;
                    v[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
                }
                avx2_tr16x16_epi8(v);
                for (int j = 0; j < 8; j++) {
                    _mm_storeu_si128((__m128i*)(t + (int64_t)q[c0 + 2 * j] * R + g), _mm256_castsi256_si128(v[j]));
                    _mm_storeu_si128((__m128i*)(t + (int64_t)q[c0 + 2 * j + 1] * R + g),
                                     _mm256_extracti128_si256(v[j], 1));
                }
            }
    }
    return c0;
}

/* Stage 2, blocked -> plain, AVX2: plain rows [0, rv) x full tiles of columns [0, cv) from
 * T, rows at stride ros; returns the first column left for the portable loop. */
__attribute__((target("avx2")))
static int64_t blk_scatter_avx2(const blk_t* b, const char* T, char* rows, int64_t ros,
                                int64_t rv, int64_t cv, int64_t c0) {
    const int64_t R = b->R;
    const int32_t* q = b->q;
    if (b->esize == 4 && R % 8 == 0) {
        BLK_SCATTER_SQUARE(uint32_t, 8, avx2_tr8x8_epi32, __m256i, BLK_LD256, BLK_ST256);
    } else if (b->esize == 8 && R % 4 == 0) {
        BLK_SCATTER_SQUARE(uint64_t, 4, avx2_tr4x4_epi64, __m256i, BLK_LD256, BLK_ST256);
    } else if (b->esize == 2 && R % 16 == 0) {
        const uint16_t* t = (const uint16_t*)T;
        uint16_t* d = (uint16_t*)rows;
        __m256i v[8];
        for (; c0 + 8 <= cv; c0 += 8)
            for (int64_t g = 0; g < rv; g += 16) {
                for (int i = 0; i < 8; i++)
                    v[i] = _mm256_loadu_si256((const __m256i*)(t + (int64_t)q[c0 + i] * R + g));
                avx2_tr8x8_epi16_lanes(v);
                for (int j = 0; j < 8; j++) {
                    if (g + j < rv)
                        _mm_storeu_si128((__m128i*)(d + (g + j) * ros + c0), _mm256_castsi256_si128(v[j]));
                    if (g + 8 + j < rv)
                        _mm_storeu_si128((__m128i*)(d + (g + 8 + j) * ros + c0), _mm256_extracti128_si256(v[j], 1));
                }
            }
    } else if (b->esize == 1 && R % 16 == 0) {
        const uint8_t* t = (const uint8_t*)T;
        uint8_t* d = (uint8_t*)rows;
        __m256i v[8];
        for (; c0 + 16 <= cv; c0 += 16)
            for (int64_t g = 0; g < rv; g += 16) {
                for (int i = 0; i < 8; i++)
                    v[i] = _mm256_loadu2_m128i((const __m128i*)(t + (int64_t)q[c0 + 8 + i] * R + g),
                                               (const __m128i*)(t + (int64_t)q[c0 + i] * R + g));
                avx2_tr16x16_epi8(v);
                for (int j = 0; j < 8; j++) {
                    if (g + 2 * j < rv)
                        _mm_storeu_si128((__m128i*)(d + (g + 2 * j) * ros + c0), _mm256_castsi256_si128(v[j]));
                    if (g + 2 * j + 1 < rv)
                        _mm_storeu_si128((__m128i*)(d + (g + 2 * j + 1) * ros + c0),
                                         _mm256_extracti128_si256(v[j], 1));
                }
            }
    }
    return c0;
}

/* il = 4: 32-bit units (an f32, a pair of words, a quad of bytes) per (r-unit, j); the
 * byte-shuffles turn 16 bytes of [r-unit][j] into [j][r-unit] within each unit group. */
__attribute__((target("avx2")))
static inline __m256i blk_fix(__m256i v, int e, int to_blocked) {
    if (e == 2)
        return _mm256_shuffle_epi8(v, to_blocked
            ? _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15,
                               0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15)
            : _mm256_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15,
                               0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15));
    if (e == 1)
        return _mm256_shuffle_epi8(v, _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15,
                                                       0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    return v;
}

/* R * esize a multiple of 32 (else returns 0 and the portable loop runs). */
__attribute__((target("avx2")))
static int blk_interleave4_avx2(const blk_t* b, const char* T, char* out) {
    const int64_t row = b->R * b->esize, groups = b->C / 4;
    if (row % 32) return 0;
    for (int64_t g = 0; g < groups; g++) {
        const char* t = T + g * 4 * row;
        char* o = out + g * 4 * row;
        for (int64_t k = 0; k < row; k += 32) {
            __m256i x[4];
            for (int j = 0; j < 4; j++) x[j] = _mm256_loadu_si256((const __m256i*)(t + j * row + k));
            avx2_tr4x4_epi32_lanes(x);   /* x[m]: unit m | unit m+4, each as [j][r-unit] */
            __m256i o0 = _mm256_permute2x128_si256(x[0], x[1], 0x20);
            __m256i o1 = _mm256_permute2x128_si256(x[2], x[3], 0x20);
            __m256i o2 = _mm256_permute2x128_si256(x[0], x[1], 0x31);
            __m256i o3 = _mm256_permute2x128_si256(x[2], x[3], 0x31);
            _mm256_storeu_si256((__m256i*)(o + 4 * k), blk_fix(o0, b->esize, 1));
            _mm256_storeu_si256((__m256i*)(o + 4 * k + 32), blk_fix(o1, b->esize, 1));
            _mm256_storeu_si256((__m256i*)(o + 4 * k + 64), blk_fix(o2, b->esize, 1));
            _mm256_storeu_si256((__m256i*)(o + 4 * k + 96), blk_fix(o3, b->esize, 1));
        }
    }
    return 1;
}

__attribute__((target("avx2")))
static int blk_deinterleave4_avx2(const blk_t* b, const char* in, char* T) {
    const int64_t row = b->R * b->esize, groups = b->C / 4;
    if (row % 32) return 0;
    for (int64_t g = 0; g < groups; g++) {
        const char* s = in + g * 4 * row;
        char* t = T + g * 4 * row;
        for (int64_t k = 0; k < row; k += 32) {
            __m256i v[4], x[4];
            for (int m = 0; m < 4; m++)
                v[m] = blk_fix(_mm256_loadu_si256((const __m256i*)(s + 4 * k + 32 * m)), b->esize, 0);
            x[0] = _mm256_permute2x128_si256(v[0], v[2], 0x20);
            x[1] = _mm256_permute2x128_si256(v[0], v[2], 0x31);
            x[2] = _mm256_permute2x128_si256(v[1], v[3], 0x20);
            x[3] = _mm256_permute2x128_si256(v[1], v[3], 0x31);
            avx2_tr4x4_epi32_lanes(x);
            for (int j = 0; j < 4; j++) _mm256_storeu_si256((__m256i*)(t + j * row + k), x[j]);
        }
    }
    return 1;
}

/* il = 4 for 8-byte elements: a 4x4 qword transpose takes 4 r of 4 scratch rows to the
 * 4 [r][j] runs of 32 bytes (to_blocked: from the scratch s to the block d), or back. */
__attribute__((target("avx2")))
static int blk_interleave4_q(const blk_t* b, const char* s, char* d, int to_blocked) {
    const int64_t R = b->R, n = R * b->C;
    if (R % 4) return 0;
    const uint64_t* src = (const uint64_t*)s;
    uint64_t* dst = (uint64_t*)d;
    __m256i x[4];
    for (int64_t g = 0; g < n; g += 4 * R)
        for (int64_t r = 0; r < R; r += 4) {
            /* scratch rows g + i * R, elements r..r+3 <-> blocked runs g + (r + i) * 4 */
            for (int i = 0; i < 4; i++)
                x[i] = _mm256_loadu_si256((const __m256i*)(src + (to_blocked ? g + i * R + r
                                                                            : g + (r + i) * 4)));
            avx2_tr4x4_epi64(x);
            for (int i = 0; i < 4; i++) {
                uint64_t* o = dst + (to_blocked ? g + (r + i) * 4 : g + i * R + r);
                _mm256_storeu_si256((__m256i*)o, x[i]);
            }
        }
    return 1;
}

/* The same with 16-byte rows (16 bytes of R = 16). */
__attribute__((target("avx2")))
static int blk_interleave4_sse(const blk_t* b, const char* T, char* out) {
    const int64_t row = b->R * b->esize, groups = b->C / 4;
    if (row != 16 || b->esize != 1) return 0;
    const __m128i fix = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int64_t g = 0; g < groups; g++) {
        const char* t = T + g * 64;
        char* o = out + g * 64;
        __m128i a0 = _mm_loadu_si128((const __m128i*)t), a1 = _mm_loadu_si128((const __m128i*)(t + 16));
        __m128i a2 = _mm_loadu_si128((const __m128i*)(t + 32)), a3 = _mm_loadu_si128((const __m128i*)(t + 48));
        __m128i t0 = _mm_unpacklo_epi32(a0, a1), t1 = _mm_unpackhi_epi32(a0, a1);
        __m128i t2 = _mm_unpacklo_epi32(a2, a3), t3 = _mm_unpackhi_epi32(a2, a3);
        _mm_storeu_si128((__m128i*)o, _mm_shuffle_epi8(_mm_unpacklo_epi64(t0, t2), fix));
        _mm_storeu_si128((__m128i*)(o + 16), _mm_shuffle_epi8(_mm_unpackhi_epi64(t0, t2), fix));
        _mm_storeu_si128((__m128i*)(o + 32), _mm_shuffle_epi8(_mm_unpacklo_epi64(t1, t3), fix));
        _mm_storeu_si128((__m128i*)(o + 48), _mm_shuffle_epi8(_mm_unpackhi_epi64(t1, t3), fix));
    }
    return 1;
}

__attribute__((target("avx2")))
static int blk_deinterleave4_sse(const blk_t* b, const char* in, char* T) {
    const int64_t row = b->R * b->esize, groups = b->C / 4;
    if (row != 16 || b->esize != 1) return 0;
    const __m128i fix = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    for (int64_t g = 0; g < groups; g++) {
        const char* s = in + g * 64;
        char* t = T + g * 64;
        __m128i a0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)s), fix);
        __m128i a1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(s + 16)), fix);
        __m128i a2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(s + 32)), fix);
        __m128i a3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i*)(s + 48)), fix);
        __m128i t0 = _mm_unpacklo_epi32(a0, a1), t1 = _mm_unpackhi_epi32(a0, a1);
        __m128i t2 = _mm_unpacklo_epi32(a2, a3), t3 = _mm_unpackhi_epi32(a2, a3);
        _mm_storeu_si128((__m128i*)t, _mm_unpacklo_epi64(t0, t2));
        _mm_storeu_si128((__m128i*)(t + 16), _mm_unpackhi_epi64(t0, t2));
        _mm_storeu_si128((__m128i*)(t + 32), _mm_unpacklo_epi64(t1, t3));
        _mm_storeu_si128((__m128i*)(t + 48), _mm_unpackhi_epi64(t1, t3));
    }
    return 1;
}

/* Byte shuffle, within each 16-byte lane, of pairs of e-byte elements: `join` 0 gathers
 * the pairs' first elements into the low 8 bytes and the second into the high 8; 1 undoes it. */
__attribute__((target("avx2")))
static inline __m256i blk_pair_mask(int e, int join) {
    uint8_t m[32];
    for (int p = 0; p < 16; p++) {
        int half = p / 8, k = p % 8;
        int from = (k / e) * 2 * e + half * e + k % e;
        if (join) m[from] = m[16 + from] = (uint8_t)p;
        else m[p] = m[16 + p] = (uint8_t)from;
    }
    return _mm256_loadu_si256((const __m256i*)m);
}

/* il = 2 (OIhw8i16o2i): rows j = 0, 1 of each group zipped element by element. Within each
 * 16-byte lane the pairs' first elements gather into the low 8 bytes and the second into
 * the high 8 (one byte shuffle), and 64-bit unpacks with a qword permute put the halves of
 * the two rows in order; the interleave runs the same steps backwards. R * esize a
 * multiple of 32 (else returns 0 and the portable loop runs). */
__attribute__((target("avx2")))
static int blk_interleave2_avx2(const blk_t* b, const char* T, char* out) {
    const int64_t row = b->R * b->esize, groups = b->C / 2;
    const int e = b->esize;
    if (row % 32) return 0;
    const __m256i join = blk_pair_mask(e, 1);
    for (int64_t g = 0; g < groups; g++) {
        const char* t = T + g * 2 * row;
        char* o = out + g * 2 * row;
        for (int64_t k = 0; k < row; k += 32) {
            __m256i x = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i*)(t + k)), 0xD8);
            __m256i y = _mm256_permute4x64_epi64(_mm256_loadu_si256((const __m256i*)(t + row + k)), 0xD8);
            __m256i v0 = _mm256_unpacklo_epi64(x, y), v1 = _mm256_unpackhi_epi64(x, y);
            if (e < 8) {
                v0 = _mm256_shuffle_epi8(v0, join);
                v1 = _mm256_shuffle_epi8(v1, join);
            }
            _mm256_storeu_si256((__m256i*)(o + 2 * k), v0);
            _mm256_storeu_si256((__m256i*)(o + 2 * k + 32), v1);
        }
    }
    return 1;
}

__attribute__((target("avx2")))
static int blk_deinterleave2_avx2(const blk_t* b, const char* in, char* T) {
    const int64_t row = b->R * b->esize, groups = b->C / 2;
    const int e = b->esize;
    if (row % 32) return 0;
    const __m256i split = blk_pair_mask(e, 0);
    for (int64_t g = 0; g < groups; g++) {
        const char* s = in + g * 2 * row;
        char* t = T + g * 2 * row;
        for (int64_t k = 0; k < row; k += 32) {
            __m256i v0 = _mm256_loadu_si256((const __m256i*)(s + 2 * k));
            __m256i v1 = _mm256_loadu_si256((const __m256i*)(s + 2 * k + 32));
            if (e < 8) {
                v0 = _mm256_shuffle_epi8(v0, split);
                v1 = _mm256_shuffle_epi8(v1, split);
            }
            _mm256_storeu_si256((__m256i*)(t + k),
                                _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(v0, v1), 0xD8));
            _mm256_storeu_si256((__m256i*)(t + row + k),
                                _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(v0, v1), 0xD8));
        }
    }
    return 1;
}

/* ---- AVX-512 (F, BW, VBMI) --------------------------------------------------------------
 * il = 4, groups of 4 scratch rows of 16 or 32 bytes: one (two) byte permutes per 64 bytes,
 * through the tables of blk_prepare. (16 x 64 byte tiles in four in-lane unpack rounds were
 * measured slower than the AVX2 16 x 16 tiles on Zen 4 and are not here: docs/kernels.md.) */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static int blk_interleave4_vbmi(const blk_t* b, const char* in, char* out, int to_blocked) {
    const int64_t gsize = b->ix_bytes, n = b->R * b->C * b->esize;
    const uint8_t* ix = b->ix[to_blocked ? 0 : 1];
    if (gsize == 0) return 0;
    const __m512i i0 = _mm512_loadu_si512((const void*)ix);
    if (gsize == 64) {
        for (int64_t k = 0; k < n; k += 64) {
            const __m512i v = _mm512_loadu_si512((const void*)(in + k));
            _mm512_storeu_si512((void*)(out + k), _mm512_permutexvar_epi8(i0, v));
        }
    } else {
        const __m512i i1 = _mm512_loadu_si512((const void*)(ix + 64));
        for (int64_t k = 0; k < n; k += 128) {
            __m512i lo = _mm512_loadu_si512((const void*)(in + k));
            __m512i hi = _mm512_loadu_si512((const void*)(in + k + 64));
            _mm512_storeu_si512((void*)(out + k), _mm512_permutex2var_epi8(lo, i0, hi));
            _mm512_storeu_si512((void*)(out + k + 64), _mm512_permutex2var_epi8(lo, i1, hi));
        }
    }
    return 1;
}

/* 4-byte elements, R a multiple of 16: 16 x 16 tiles in zmm registers (half the loads and
 * stores of the AVX2 8 x 8 ones). Gather and scatter as the AVX2 stages; each returns the
 * first column left. */
__attribute__((target("avx512f")))
static int64_t blk_gather_avx512(const blk_t* b, const char* rows, char* T, int64_t rv, int64_t cv) {
    const int64_t R = b->R, rs = b->rs;
    const int32_t* q = b->q;
    int64_t c0 = 0;
    if (b->esize != 4 || R % 16) return 0;
    BLK_GATHER_SQUARE(float, 16, tr16x16, __m512, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_setzero_ps());
    return c0;
}

__attribute__((target("avx512f")))
static int64_t blk_scatter_avx512(const blk_t* b, const char* T, char* rows, int64_t ros,
                                  int64_t rv, int64_t cv) {
    const int64_t R = b->R;
    const int32_t* q = b->q;
    int64_t c0 = 0;
    if (b->esize != 4 || R % 16) return 0;
    BLK_SCATTER_SQUARE(float, 16, tr16x16, __m512, _mm512_loadu_ps, _mm512_storeu_ps);
    return c0;
}

/* il = 4 for 4-byte elements, R a multiple of 16: four scratch rows of 16 elements (one zmm
 * each) to 16 [r][4] quads by in-lane 4 x 4 transposes and then a 4 x 4 transpose of lanes;
 * back, the same two in the other order. */
__attribute__((target("avx512f")))
static inline void blk_lanes4(__m512i v[4]) {
    const __m512i a = _mm512_shuffle_i32x4(v[0], v[1], 0x44), c = _mm512_shuffle_i32x4(v[0], v[1], 0xEE);
    const __m512i e = _mm512_shuffle_i32x4(v[2], v[3], 0x44), f = _mm512_shuffle_i32x4(v[2], v[3], 0xEE);
    v[0] = _mm512_shuffle_i32x4(a, e, 0x88);
    v[1] = _mm512_shuffle_i32x4(a, e, 0xDD);
    v[2] = _mm512_shuffle_i32x4(c, f, 0x88);
    v[3] = _mm512_shuffle_i32x4(c, f, 0xDD);
}

/* in-lane 4 x 4 dword transposes across v[0..3] (dword j of lane g of v[l] <-> dword l of
 * lane g of v[j]) */
__attribute__((target("avx512f")))
static inline void blk_inlane4(__m512i v[4]) {
    const __m512i t0 = _mm512_unpacklo_epi32(v[0], v[1]), t1 = _mm512_unpackhi_epi32(v[0], v[1]);
    const __m512i t2 = _mm512_unpacklo_epi32(v[2], v[3]), t3 = _mm512_unpackhi_epi32(v[2], v[3]);
    v[0] = _mm512_unpacklo_epi64(t0, t2);
    v[1] = _mm512_unpackhi_epi64(t0, t2);
    v[2] = _mm512_unpacklo_epi64(t1, t3);
    v[3] = _mm512_unpackhi_epi64(t1, t3);
}

__attribute__((target("avx512f")))
static int blk_interleave4_avx512(const blk_t* b, const char* in, char* out, int to_blocked) {
    const int64_t R = b->R, n = R * b->C * 4;
    if (b->esize != 4 || R % 16) return 0;
    for (int64_t g = 0; g < n; g += 4 * R * 4)
        for (int64_t r = 0; r < R; r += 16) {
            __m512i v[4];
            /* scratch row j's 16 elements at (j * R + r) * 4, their quads at r * 16 + 64 j */
            for (int j = 0; j < 4; j++)
                v[j] = _mm512_loadu_si512((const void*)(in + g + (to_blocked ? (j * R + r) * 4 : r * 16 + 64 * j)));
            if (to_blocked) {
                blk_inlane4(v);
                blk_lanes4(v);
            } else {
                blk_lanes4(v);
                blk_inlane4(v);
            }
            for (int j = 0; j < 4; j++)
                _mm512_storeu_si512((void*)(out + g + (to_blocked ? r * 16 + 64 * j : (j * R + r) * 4)), v[j]);
        }
    return 1;
}

/* The register path (blk_prepare_regs), for blocks of 16 rows of 1- or 2-byte elements, a
 * segment of columns at a time: each plain row's segment, in at most five registers, is
 * permuted into scratch order (two-source byte permutes and blends, at most four shuffles a
 * 64 bytes; none where the column map is the identity: activations); then a 16 x 16 dword
 * transpose across the rows turns 64 bytes of scratch order, 16 scratch rows, into groups of
 * [r][a dword of scratch rows], which is the 4i16o4i order of bytes and the 8i16o2i order of
 * words (other il: one more byte permute a register; 4i16o4i words: pairs of registers
 * interleaved dword by dword, blk_regs_pair_out). The rows' chunks wait in T between the
 * two stages, as whole registers, so the loads forward from the stores.
 * A chunk of at most 4 dwords (3x3 blocks end with one) takes an in-lane 4 x 4 transpose
 * of four registers of four rows each in place of the 16 x 16; going to the blocked side
 * those four registers are built as the rows are permuted and never pass through T (a zmm
 * store and the load it forwards to cost about 2 cycles here, against 1 for a store). A
 * segment whose width is not a multiple of 4 (il 1 and 2: 7x7 planes) ends in a register
 * stored, or loaded, in part. */
#define BLK_REGS_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi")))
#define BLK_REGS_INLINE BLK_REGS_TARGET static inline __attribute__((always_inline))

/* The K chunks' tables in registers (K, a constant, is the row's count of 64-byte registers). */
typedef struct {
    __m512i i0[5], i1[5], i2[5];
    __mmask64 m1[5], m2[5];
} blk_regs_ix;

BLK_REGS_INLINE void blk_regs_tables(const blk_t* b, int dir, const int K, blk_regs_ix* x) {
    for (int k = 0; k < K; k++) {
        x->i0[k] = _mm512_loadu_si512((const void*)b->rx[dir][k][0]);
        if (K >= 3) {
            x->i1[k] = _mm512_loadu_si512((const void*)b->rx[dir][k][1]);
            x->m1[k] = (__mmask64)b->rm[dir][k][0];
        }
        if (K >= 5) {
            x->i2[k] = _mm512_loadu_si512((const void*)b->rx[dir][k][2]);
            x->m2[k] = (__mmask64)b->rm[dir][k][1];
        }
    }
}

/* chunk k of the output from the K source registers s */
BLK_REGS_INLINE __m512i blk_regs_permute(const blk_regs_ix* x, const int K, int k, const __m512i* s) {
    if (K == 1) return _mm512_permutexvar_epi8(x->i0[k], s[0]);
    __m512i v = _mm512_permutex2var_epi8(s[0], x->i0[k], s[1]);
    if (K == 2) return v;
    if (K == 3) return _mm512_mask_permutexvar_epi8(v, x->m1[k], x->i1[k], s[2]);
    v = _mm512_mask_blend_epi8(x->m1[k], v, _mm512_permutex2var_epi8(s[2], x->i1[k], s[3]));
    if (K == 4) return v;
    return _mm512_mask_permutexvar_epi8(v, x->m2[k], x->i2[k], s[4]);
}

static inline __mmask64 blk_regs_mask(int64_t n) {
    return n >= 64 ? ~(__mmask64)0 : n <= 0 ? 0 : (((__mmask64)1 << n) - 1);
}

/* The relabel of a block's transposed registers: 0 none (4i16o4i bytes, 8i16o2i words), 1 a
 * byte permute a register (lx), 2 pairs of registers, each a dword of 16 rows, interleaved
 * dword by dword into 16 [r][2 dwords] (4i16o4i words) and back. */
static inline int blk_regs_relabel(const blk_t* b) {
    return b->il * b->esize == 8 ? 2 : b->il * b->esize != 4;
}

BLK_REGS_INLINE void blk_regs_pair_out(char* o, __m512i a, __m512i c) {
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    _mm512_storeu_si512((void*)o, _mm512_permutex2var_epi32(a, lo, c));
    _mm512_storeu_si512((void*)(o + 64), _mm512_permutex2var_epi32(a, hi, c));
}

BLK_REGS_INLINE void blk_regs_pair_in(const char* in, __m512i* a, __m512i* c) {
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i x = _mm512_loadu_si512((const void*)in), y = _mm512_loadu_si512((const void*)(in + 64));
    *a = _mm512_permutex2var_epi32(x, ev, y);
    *c = _mm512_permutex2var_epi32(x, od, y);
}

/* one blocked register, n of its bytes (n < 64: a segment's last, part of it past C) */
BLK_REGS_INLINE void blk_regs_put(char* o, int64_t n, int relabel, __m512i lx, __m512i v) {
    if (relabel) v = _mm512_permutexvar_epi8(lx, v);
    if (n >= 64) _mm512_storeu_si512((void*)o, v);
    else _mm512_mask_storeu_epi8(o, blk_regs_mask(n), v);
}

BLK_REGS_INLINE __m512i blk_regs_get(const char* in, int64_t n, int relabel, __m512i lx) {
    const __m512i v = n >= 64 ? _mm512_loadu_si512((const void*)in) : _mm512_maskz_loadu_epi8(blk_regs_mask(n), in);
    return relabel ? _mm512_permutexvar_epi8(lx, v) : v;
}

/* transposed registers v[0..n) -> their nb bytes of the blocked block at o, relabelled
 * (nb: whole pairs for relabel 2) */
BLK_REGS_INLINE void blk_regs_store(char* o, int64_t nb, int relabel, __m512i lx, const __m512i* v,
                                    const int n) {
    for (int u = 0; u < n; u++) {
        if (64 * u >= nb) break;
        if (relabel != 2) blk_regs_put(o + u * 64, nb - 64 * u, relabel, lx, v[u]);
        else if (u % 2 == 0) blk_regs_pair_out(o + u * 64, v[u], v[u + 1]);
    }
}

/* nb bytes of the blocked block at in -> transposed registers v[0..16), zeros past nb */
BLK_REGS_INLINE void blk_regs_load(const char* in, int64_t nb, int relabel, __m512i lx, __m512i* v) {
    for (int u = 0; u < 16; u++) {
        if (relabel != 2)
            v[u] = 64 * u < nb ? blk_regs_get(in + u * 64, nb - 64 * u, relabel, lx) : _mm512_setzero_si512();
        else if (u % 2 == 0 && 64 * u < nb)
            blk_regs_pair_in(in + u * 64, &v[u], &v[u + 1]);
        else if (u % 2 == 0)
            v[u] = v[u + 1] = _mm512_setzero_si512();
    }
}

/* the chunk at t (16 rows 64 bytes apart) -> its nb bytes of the blocked block at o */
BLK_REGS_INLINE void blk_regs_chunk_out(const char* t, char* o, int64_t nb, int relabel, __m512i lx) {
    __m512i v[16];
    for (int r = 0; r < 16; r++) v[r] = _mm512_load_si512((const void*)(t + r * 64));
    tr16x16((__m512*)v);
    blk_regs_store(o, nb, relabel, lx, v, 16);
}

/* nb bytes of the blocked block at in -> the chunk's 16 rows at t */
BLK_REGS_INLINE void blk_regs_chunk_in(const char* in, char* t, int64_t nb, int relabel, __m512i lx) {
    __m512i v[16];
    if (nb == 1024) {
        /* a whole chunk, as most are: no bounds to test (the constant folds them away) */
        blk_regs_load(in, 1024, relabel, lx, v);
        tr16x16((__m512*)v);
        for (int r = 0; r < 16; r++) _mm512_store_si512((void*)(t + r * 64), v[r]);
        return;
    }
    blk_regs_load(in, nb, relabel, lx, v);
    if (nb <= 256) {
        blk_inlane4(v);
        for (int l = 0; l < 4; l++) {
            _mm_store_si128((__m128i*)(t + l * 64), _mm512_castsi512_si128(v[l]));
            _mm_store_si128((__m128i*)(t + (4 + l) * 64), _mm512_extracti32x4_epi32(v[l], 1));
            _mm_store_si128((__m128i*)(t + (8 + l) * 64), _mm512_extracti32x4_epi32(v[l], 2));
            _mm_store_si128((__m128i*)(t + (12 + l) * 64), _mm512_extracti32x4_epi32(v[l], 3));
        }
    } else {
        tr16x16((__m512*)v);
        for (int r = 0; r < 16; r++) _mm512_store_si512((void*)(t + r * 64), v[r]);
    }
}

/* A segment's tables (dir 0 to the blocked side, 1 back) and its rows' chunk masks for cv
 * valid columns; returns cv in bytes, at most the segment's. */
BLK_REGS_INLINE int64_t blk_regs_segment(const blk_t* b, int dir, const int K, int64_t cv,
                                         blk_regs_ix* x, __mmask64* lm) {
    const int64_t C = b->vw * b->esize;
    cv = cv * b->esize < C ? cv * b->esize : C;
    blk_regs_tables(b, dir, K, x);
    for (int k = 0; k < K; k++) lm[k] = blk_regs_mask(cv - 64 * k);
    return cv;
}

/* plain rows (rs apart, rows [0, rv) x columns [0, cv) valid) -> the blocked block at out;
 * chunk k of row r waits in T at (k * 16 + r) * 64 */
BLK_REGS_INLINE void blk_to_blocked_regs_k(const blk_t* b, const int K, const char* rows,
                                           char* out, int64_t rv, int64_t cv, char* T) {
    const int64_t e = b->esize, C = b->vw * e, rs = b->rs * e;
    const int relabel = blk_regs_relabel(b);
    blk_regs_ix x;
    __mmask64 lm[5];
    __m512i s[5];
    cv = blk_regs_segment(b, 0, K, cv, &x, lm);
    /* a last chunk of at most 4 dwords stays in registers: w[l], lane g = row 4g + l */
    const int short_last = C - 64 * (K - 1) <= 16;
    const int KT = short_last ? K - 1 : K;
    __m512i w[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
    for (int64_t g = 0; g < 4; g++) {
        const __mmask16 lane = (__mmask16)(0xF << (4 * g));
        for (int l = 0; l < 4; l++) {
            const int64_t r = 4 * g + l;
            if (r < rv) {
                const char* row = rows + r * rs;
                for (int k = 0; k < K; k++) s[k] = _mm512_maskz_loadu_epi8(lm[k], row + 64 * k);
                for (int k = 0; k < KT; k++)
                    _mm512_store_si512((void*)(T + (k * 16 + r) * 64), blk_regs_permute(&x, K, k, s));
                if (short_last)
                    w[l] = _mm512_mask_broadcast_i32x4(
                        w[l], lane, _mm512_castsi512_si128(blk_regs_permute(&x, K, K - 1, s)));
            } else {
                for (int k = 0; k < KT; k++)
                    _mm512_store_si512((void*)(T + (k * 16 + r) * 64), _mm512_setzero_si512());
            }
        }
    }
    const __m512i lx = _mm512_loadu_si512((const void*)b->lx[0]);
    for (int k = 0; k < KT; k++) {
        const int64_t nb = k < K - 1 ? 1024 : 16 * (C - 64 * k);
        blk_regs_chunk_out(T + k * 16 * 64, out + k * 16 * 64, nb, relabel, lx);
    }
    if (short_last) {
        const int64_t nb = 16 * (C - 64 * (K - 1));
        char* o = out + (K - 1) * 16 * 64;
        blk_inlane4(w);
        blk_regs_store(o, nb, relabel, lx, w, 4);
    }
}

/* the blocked block at src -> plain rows [0, rv) x columns [0, cv), ros apart */
BLK_REGS_INLINE void blk_to_plain_regs_k(const blk_t* b, const int K, const char* src, char* rows,
                                         int64_t ros, int64_t rv, int64_t cv, char* T) {
    const int64_t e = b->esize, C = b->vw * e;
    const int relabel = blk_regs_relabel(b);
    const __m512i lx = _mm512_loadu_si512((const void*)b->lx[1]);
    ros *= e;
    for (int k = 0; k < K; k++) {
        /* (every chunk but the last is whole: a constant, so one copy of the code a chunk) */
        const int64_t nb = k < K - 1 ? 1024 : 16 * (C - 64 * k);
        blk_regs_chunk_in(src + k * 16 * 64, T + k * 16 * 64, nb, relabel, lx);
    }
    blk_regs_ix x;
    __mmask64 lm[5];
    __m512i s[5];
    cv = blk_regs_segment(b, 1, K, cv, &x, lm);
    const int short_last = C - 64 * (K - 1) <= 16;
    for (int64_t r = 0; r < rv; r++) {
        for (int k = 0; k < K; k++) {
            const char* t = T + (k * 16 + r) * 64;
            s[k] = k == K - 1 && short_last ? _mm512_zextsi128_si512(_mm_load_si128((const __m128i*)t))
                                            : _mm512_load_si512((const void*)t);
        }
        char* row = rows + r * ros;
        for (int k = 0; k < K; k++)
            if (lm[k]) _mm512_mask_storeu_epi8(row + 64 * k, lm[k], blk_regs_permute(&x, K, k, s));
    }
}

/* The identity map (activations): the rows are the scratch rows, each chunk straight from
 * them into the transposes (to the blocked side) or from the transposes into them (back);
 * C and cv in bytes, rs the rows' stride in bytes. */
BLK_REGS_INLINE void blk_regs_identity_dir(const blk_t* b, const char* in, char* out, int64_t rs,
                                           int64_t rv, int64_t cv, int64_t C, const int to_blocked) {
    const int relabel = blk_regs_relabel(b);
    const __m512i lx = _mm512_loadu_si512((const void*)b->lx[to_blocked ? 0 : 1]);
    if (cv > C) cv = C;
    for (int64_t k = 0; 64 * k < (to_blocked ? C : cv); k++) {
        const __mmask64 m = blk_regs_mask(cv - 64 * k);
        const int64_t nb = 16 * (C - 64 * k) < 1024 ? 16 * (C - 64 * k) : 1024;
        __m512i v[16];
        if (to_blocked)
            for (int r = 0; r < 16; r++)
                v[r] = r < rv ? _mm512_maskz_loadu_epi8(m, in + r * rs + 64 * k) : _mm512_setzero_si512();
        else
            blk_regs_load(in + k * 1024, nb, relabel, lx, v);
        tr16x16((__m512*)v);
        if (to_blocked)
            blk_regs_store(out + k * 1024, nb, relabel, lx, v, 16);
        else
            for (int r = 0; r < 16 && r < rv; r++) _mm512_mask_storeu_epi8(out + r * rs + 64 * k, m, v[r]);
    }
}

BLK_REGS_TARGET
static void blk_regs_identity(const blk_t* b, const char* in, char* out, int64_t rs, int64_t rv,
                              int64_t cv, int64_t C, int to_blocked) {
    if (to_blocked) blk_regs_identity_dir(b, in, out, rs, rv, cv, C, 1);
    else blk_regs_identity_dir(b, in, out, rs, rv, cv, C, 0);
}

/* CALL(K) for the block's count of registers a segment row, a constant in each */
#define BLK_REGS_BY_K(vk, CALL)                                                             \
    switch (vk) {                                                                           \
    case 1: CALL(1); break;                                                                 \
    case 2: CALL(2); break;                                                                 \
    case 3: CALL(3); break;                                                                 \
    case 4: CALL(4); break;                                                                 \
    default: CALL(5); break;                                                                \
    }

/* the block, a segment of vw columns at a time (a segment past cv is all padding) */
BLK_REGS_TARGET
static void blk_to_blocked_regs(const blk_t* b, const char* rows, char* out, int64_t rv,
                                int64_t cv, char* T) {
    const int64_t e = b->esize;
    if (b->vid) {
        blk_regs_identity(b, rows, out, b->rs * e, rv, cv * e, b->C * e, 1);
        return;
    }
    for (int64_t c = 0; c < b->C; c += b->vw) {
#define BLK_CALL(K) blk_to_blocked_regs_k(b, K, rows + c * e, out + c * 16 * e, rv, cv - c, T)
        BLK_REGS_BY_K(b->vk, BLK_CALL)
#undef BLK_CALL
    }
}

BLK_REGS_TARGET
static void blk_to_plain_regs(const blk_t* b, const char* src, char* rows, int64_t ros,
                              int64_t rv, int64_t cv, char* T) {
    const int64_t e = b->esize;
    if (b->vid) {
        blk_regs_identity(b, src, rows, ros * e, rv, cv * e, b->C * e, 0);
        return;
    }
    for (int64_t c = 0; c < cv; c += b->vw) {
#define BLK_CALL(K) blk_to_plain_regs_k(b, K, src + c * 16 * e, rows + c * e, ros, rv, cv - c, T)
        BLK_REGS_BY_K(b->vk, BLK_CALL)
#undef BLK_CALL
    }
}

__attribute__((target("avx2")))
static void blk_stream_avx2(char* d, const char* s, int64_t n) {
    int64_t head = (64 - ((uintptr_t)d & 63)) & 63;
    if (head > n) head = n;
    memcpy(d, s, head);
    int64_t k = head;
    for (; k + 64 <= n; k += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i*)(s + k));
        __m256i c = _mm256_loadu_si256((const __m256i*)(s + k + 32));
        _mm256_stream_si256((__m256i*)(d + k), a);
        _mm256_stream_si256((__m256i*)(d + k + 32), c);
    }
    memcpy(d + k, s + k, n - k);
}
#endif

static void blk_copy_out(char* d, const char* s, int64_t n, int nt, int simd) {
#if REORDER_BLK_X86
    if (nt && simd) {
        blk_stream_avx2(d, s, n);
        return;
    }
#endif
    (void)nt;
    (void)simd;
    memcpy(d, s, n);
}

static inline void blk_interleave(const blk_t* b, const char* T, char* out, int simd) {
#if REORDER_BLK_X86
    if (simd >= 2 && b->il == 4 && (blk_interleave4_vbmi(b, T, out, 1) || blk_interleave4_avx512(b, T, out, 1)))
        return;
    if (simd && b->il == 4 && b->esize <= 4 && (blk_interleave4_avx2(b, T, out) || blk_interleave4_sse(b, T, out)))
        return;
    if (simd && b->il == 4 && b->esize == 8 && blk_interleave4_q(b, T, out, 1))
        return;
    if (simd && b->il == 2 && blk_interleave2_avx2(b, T, out))
        return;
#endif
    (void)simd;
    blk_interleave_scalar(b, T, out);
}

static inline void blk_deinterleave(const blk_t* b, const char* in, char* T, int simd) {
#if REORDER_BLK_X86
    if (simd >= 2 && b->il == 4 && (blk_interleave4_vbmi(b, in, T, 0) || blk_interleave4_avx512(b, in, T, 0)))
        return;
    if (simd && b->il == 4 && b->esize <= 4 && (blk_deinterleave4_avx2(b, in, T) || blk_deinterleave4_sse(b, in, T)))
        return;
    if (simd && b->il == 4 && b->esize == 8 && blk_interleave4_q(b, in, T, 0))
        return;
    if (simd && b->il == 2 && blk_deinterleave2_avx2(b, in, T))
        return;
#endif
    (void)simd;
    blk_deinterleave_scalar(b, in, T);
}

/* Plain -> blocked, the scratch filled: the interleave into dst, through T2 when streamed
 * (il = 1: the scratch was dst itself unless streamed). */
static inline void blk_scratch_out(const blk_t* b, const char* T, char* T2, char* dst,
                                   int64_t n, int nt, int simd) {
    if (b->il == 1) {
        if (nt) blk_copy_out(dst, T, n, 1, simd);
    } else if (nt) {
        blk_interleave(b, T, T2, simd);
        blk_copy_out(dst, T2, n, 1, simd);
    } else {
        blk_interleave(b, T, dst, simd);
    }
}

/* n bytes of a run; the sizes of 16 rows of 1-, 2-, 4- and 8-byte elements as constants */
static inline void blk_run_copy(char* d, const char* s, int64_t n) {
    switch (n) {
    case 16: memcpy(d, s, 16); return;
    case 32: memcpy(d, s, 32); return;
    case 64: memcpy(d, s, 64); return;
    case 128: memcpy(d, s, 128); return;
    default: memcpy(d, s, (size_t)n);
    }
}

/* Runs, plain -> blocked: each valid column's run into its scratch row (zeros around the
 * valid part), then the interleave into dst, streamed through T2 when nt. */
static void blk_runs_to_blocked(const blk_t* b, const char* rows, char* dst, int64_t rv,
                                int64_t cv, char* T, char* T2, int nt, int simd) {
    const int64_t e = b->esize, row = b->R * e, n = b->C * row;
    char* t = (b->il == 1 && !nt) ? dst : T;
    const int32_t* q = b->q;
    const int64_t* coff = b->coff;
    int64_t c = 0;
    if (rv < b->R || cv < b->C) memset(t, 0, n);
#if REORDER_BLK_X86
    if (simd && rv * e == 16) {
        /* 16-byte runs (bytes): eight loads in flight, then their stores */
        for (; c + 8 <= cv; c += 8) {
            __m128i v[8];
            for (int k = 0; k < 8; k++)
                v[k] = _mm_loadu_si128((const __m128i*)(rows + coff[c + k] * e));
            for (int k = 0; k < 8; k++)
                _mm_storeu_si128((__m128i*)(t + (int64_t)q[c + k] * row), v[k]);
        }
    }
#endif
    for (; c < cv; c++)
        blk_run_copy(t + (int64_t)q[c] * row, rows + coff[c] * e, rv * e);
    blk_scratch_out(b, T, T2, dst, n, nt, simd);
}

/* Runs, blocked -> plain: the block de-interleaved into T, each valid column's valid part
 * out to its run (cached stores: a run is at most a few lines). */
static void blk_runs_to_plain(const blk_t* b, const char* src, char* rows, int64_t rv,
                              int64_t cv, char* T, int simd) {
    const int64_t e = b->esize, row = b->R * e;
    const char* t = src;
    if (b->il != 1) {
        blk_deinterleave(b, src, T, simd);
        t = T;
    }
    for (int64_t c = 0; c < cv; c++)
        blk_run_copy(rows + b->coff[c] * e, t + (int64_t)b->q[c] * row, rv * e);
}

/* One block, plain -> blocked. rows: plain row 0 of the block; dst: the blocked block.
 * T, T2: scratch of BLK_MAX_BYTES each (the caller's stack), 64-byte aligned. */
static void blk_to_blocked(const blk_t* b, const char* rows, char* dst, int64_t rv, int64_t cv,
                           char* T, char* T2, int nt, int simd) {
    const int64_t n = b->R * b->C * b->esize;
    /* il = 1 and cached stores: the scratch is the destination block itself */
    char* t = (b->il == 1 && !nt) ? dst : T;
    int64_t c0 = 0;
    if (rv <= 0) {
        memset(dst, 0, n);
        return;
    }
    if (b->coff) {
        blk_runs_to_blocked(b, rows, dst, rv, cv, T, T2, nt, simd);
        return;
    }
#if REORDER_BLK_X86
    if (simd >= 2 && b->vk) {
        blk_to_blocked_regs(b, rows, nt ? T2 : dst, rv, cv, T);
        if (nt) blk_copy_out(dst, T2, n, 1, simd);
        return;
    }
    if (simd >= 2) c0 = blk_gather_avx512(b, rows, t, rv, cv);
    if (simd) c0 = blk_gather_avx2(b, rows, t, rv, cv, c0);
#endif
    blk_gather_scalar(b, rows, t, rv, cv, c0);
    blk_scratch_out(b, T, T2, dst, n, nt, simd);
}

/* One block's place on the plain side, rows [0, rv) x columns [0, cv), set to zero: blocked ->
 * plain into a destination that is padded in a dim outside the block (its padding is part of
 * the result, whatever the output held). */
static void blk_plain_zeros(const blk_t* b, char* rows, int64_t rv, int64_t cv) {
    const int64_t e = b->esize;
    if (rv <= 0 || cv <= 0) return;
    if (b->coff) {
        for (int64_t c = 0; c < cv; c++) memset(rows + b->coff[c] * e, 0, (size_t)(rv * e));
        return;
    }
    for (int64_t r = 0; r < rv; r++) memset(rows + r * b->rs * e, 0, (size_t)(cv * e));
}

/* One block, blocked -> plain. src: the blocked block; rows: plain row 0 of the block. */
static void blk_to_plain(const blk_t* b, const char* src, char* rows, int64_t rv, int64_t cv,
                         char* T, char* T2, int nt, int simd) {
    const int e = b->esize;
    const char* t = src;
    if (rv <= 0 || cv <= 0) return;
    if (b->coff) {
        blk_runs_to_plain(b, src, rows, rv, cv, T, simd);
        return;
    }
#if REORDER_BLK_X86
    if (simd >= 2 && b->vk) {
        blk_to_plain_regs(b, src, nt ? T2 : rows, nt ? b->C : b->rs, rv, cv, T);
        if (nt)
            for (int64_t r = 0; r < rv; r++)
                blk_copy_out(rows + r * b->rs * e, T2 + r * b->C * e, cv * e, 1, simd);
        return;
    }
#endif
    if (b->il != 1) {
        blk_deinterleave(b, src, T, simd);
        t = T;
    }
    char* out = nt ? T2 : rows;
    int64_t ros = nt ? b->C : b->rs;
    int64_t c0 = 0;
#if REORDER_BLK_X86
    if (simd >= 2) c0 = blk_scatter_avx512(b, t, out, ros, rv, cv);
    if (simd) c0 = blk_scatter_avx2(b, t, out, ros, rv, cv, c0);
#endif
    blk_scatter_scalar(b, t, out, ros, rv, cv, c0);
    /* streamed: the plain rows were built whole in T2 and leave as contiguous runs */
    if (nt)
        for (int64_t r = 0; r < rv; r++)
            blk_copy_out(rows + r * b->rs * e, T2 + r * b->C * e, cv * e, 1, simd);
}

#endif
