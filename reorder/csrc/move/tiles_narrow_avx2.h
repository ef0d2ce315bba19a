/* Tiles of 1- and 2-byte elements (bf16, f16, s8, u8 moves) with AVX2 register transposes.
 * They follow the tile contract of tile_rows.h: rows a of the tile are
 * dst-contiguous, columns b src-contiguous.
 *
 *   tile_avx2_u16   16 rows x 16 columns of words: 16 loads of 32 bytes, a 16x16 word
 *                   transpose (in-lane unpacks, then one 128-bit lane exchange), 16 stores.
 *   tile_avx2_u8    Two shapes of tile:
 *                   16 rows x 16 columns, two rows a register (rows i and 8 + i), through
 *                   the eight-register byte transpose; a column register is two dst rows of
 *                   16 bytes, one 32-byte store when they are adjacent (nchw -> nChw16c).
 *                   The default: nchw -> nChw16c, nchw -> nhwc, OIhw16i16o -> oihw.
 *                   With 64 rows or more, four row blocks a column step, so a dst row
 *                   gets a whole line at a time (nchw -> nhwc).
 *                   32 rows x 16 columns (lane k holds rows 16k..16k+15, a 16x16 byte
 *                   transpose inside each lane; each dst row gets 32 bytes), when A is long
 *                   and its rows close together (nChw16c -> nchw).
 *
 * Rows written only in part of a block (a C tail in nchw -> nhwc) go through a small buffer;
 * ragged column edges and blocks whose written rows are not a prefix run element-wise.
 * Streaming stores are used only where one tile writes whole 64-byte lines: its dst rows are
 * adjacent and as long as a row block (nchw -> nChw16c), so no line is left half written
 * for a later tile (docs/kernels.md).
 */
#ifndef REORDER_MOVE_TILES_NARROW_AVX2_H
#define REORDER_MOVE_TILES_NARROW_AVX2_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/tile_rows.h"

#if REORDER_X86

/* The tall tiles (rows of two blocks in one register): for words whenever A is long; for
 * bytes when A is long and its rows lie close together in src (nChw16c -> nchw: one pixel's
 * 16 channels each), where each dst row gets 32 bytes a tile. With A's rows far apart
 * (nchw -> nhwc: whole channel planes), 32 rows would be 32 read streams, and the 16x16 byte
 * tile takes them, as it takes a narrow B (OIhw16i16o -> oihw: B = o16). */
static inline int narrow_tall(const arows_t* A, int64_t na, int64_t nb, int size) {
    (void)nb;
    return na >= 32 && (size == 2 || (A->nlo == 0 && A->slo <= 64));
}

/* The number of written rows when they are a prefix of the block, else -1. */
static inline int prefix_rows(uint32_t wm) {
    return (wm & (wm + 1u)) == 0 ? __builtin_popcount(wm) : -1;
}

__attribute__((target("avx2")))
static inline void store_part(void* d, __m256i v, int nbytes) {
    if (nbytes == 32) {
        _mm256_storeu_si256((__m256i*)d, v);
    } else {
        uint8_t buf[32];
        _mm256_storeu_si256((__m256i*)buf, v);
        memcpy(d, buf, (size_t)nbytes);
    }
}

__attribute__((target("avx2")))
static inline void store_part128(void* d, __m128i v, int nbytes) {
    if (nbytes == 16) {
        _mm_storeu_si128((__m128i*)d, v);
    } else {
        uint8_t buf[16];
        _mm_storeu_si128((__m128i*)buf, v);
        memcpy(d, buf, (size_t)nbytes);
    }
}

/* Element-wise rows a0 .. a0+n-1 (masks and offsets from arow_block), columns b0 .. nbw-1. */
#define REORDER_EDGE(T)                                                                     \
static inline void edge_##T(const T* src, const int64_t* soff, uint32_t vm, uint32_t wm,   \
                            int n, int64_t a0, T* dst, const rows_t* rows, int64_t bs,     \
                            int64_t b0, int64_t nbv, int64_t nbw) {                        \
    for (int64_t b = b0; b < nbw; b++) {                                                   \
        T* d = dst + row_off(rows, bs + b) + a0;                                           \
        for (int i = 0; i < n; i++)                                                        \
            if ((wm >> i) & 1u) d[i] = (b < nbv && ((vm >> i) & 1u)) ? src[soff[i] + b] : 0; \
    }                                                                                      \
}
REORDER_EDGE(uint8_t)
REORDER_EDGE(uint16_t)

/* The rows a < afast (uniform_rows: whole blocks of `blk`, one level, all data) go through
 * `run` with pointer strides, and their columns from bfull on through `edges` where it takes
 * them (it returns 0 where it does not), else element-wise; returns afast, where the
 * general loop of the tile takes over. */
#define REORDER_NARROW_UNIFORM(T)                                                           \
typedef void (*uniform_##T##_fn)(const T* src, int64_t slo, int64_t na, T* dst,          \
                                 const rows_t* rows, int64_t b0s, int64_t bfull, int nt);  \
typedef int (*uniform_edges_##T##_fn)(const T* src, int64_t slo, int64_t na, T* dst,     \
                                      const rows_t* rows, int64_t b0s, int64_t bfull,      \
                                      int64_t nbv, int64_t nbw);                           \
/* `run` over the uniform rows, and over the overlapping tail block (uniform_tail) when    \
 * there is one; returns the rows done (0 or na when nothing is left for the tile). */     \
static inline int64_t uniform_rows_run_##T(uniform_##T##_fn run, int blk, const T* src,    \
                                           const arows_t* A, int64_t na, T* dst,           \
                                           const rows_t* rows, int64_t bs, int64_t bfull,  \
                                           int64_t nbw, int nt) {                          \
    int64_t afast = uniform_rows(A, rows, na, blk);                                        \
    if (!afast) return 0;                                                                  \
    run(src, A->slo, afast, dst, rows, bs, bfull, nt);                                     \
    int64_t tail = uniform_tail(A, na, afast, blk, bfull == nbw, nt);                      \
    if (tail < 0) return afast;                                                            \
    run(src + tail * A->slo, A->slo, blk, dst + tail, rows, bs, bfull, nt);                \
    return na;                                                                             \
}                                                                                          \
static inline int64_t narrow_uniform_edges_##T(uniform_##T##_fn run,                     \
                                               uniform_edges_##T##_fn edges, int blk,      \
                                               const T* src, const arows_t* A, int64_t na, \
                                               T* dst, const rows_t* rows, int64_t bs,     \
                                               int64_t bfull, int64_t nbv, int64_t nbw,    \
                                               int nt) {                                   \
    int64_t soff[16];                                                                      \
    uint32_t vm, wm;                                                                       \
    int64_t afast = uniform_rows_run_##T(run, blk, src, A, na, dst, rows, bs, bfull, nbw, nt); \
    if (!afast) return 0;                                                                  \
    if (bfull < nbw && !(edges && edges(src, A->slo, afast, dst, rows, bs, bfull, nbv, nbw))) \
        for (int64_t a0 = 0; a0 < afast; a0 += 16) {                                       \
            arow_block(A, a0, 16, soff, &vm, &wm);                                         \
            edge_##T(src, soff, vm, wm, 16, a0, dst, rows, bs, bfull, nbv, nbw);           \
        }                                                                                  \
    return afast;                                                                          \
}                                                                                          \
static inline int64_t narrow_uniform_##T(uniform_##T##_fn run, int blk, const T* src,      \
                                         const arows_t* A, int64_t na, T* dst,             \
                                         const rows_t* rows, int64_t bs, int64_t bfull,    \
                                         int64_t nbv, int64_t nbw, int nt) {               \
    return narrow_uniform_edges_##T(run, 0, blk, src, A, na, dst, rows, bs, bfull, nbv,    \
                                    nbw, nt);                                              \
}
REORDER_NARROW_UNIFORM(uint8_t)
REORDER_NARROW_UNIFORM(uint16_t)

/* r[i] = 32 bytes of row i (i < n) at byte offset (soff[i] + b0) * es; rows without data
 * (bit i of vm clear) read as zeros. */
__attribute__((target("avx2")))
static inline void load_rows(__m256i* r, int n, const void* src, const int64_t* soff, int64_t b0,
                             int es, uint32_t vm) {
    const char* s = (const char*)src;
    if (vm == low_bits(n, n))
        for (int i = 0; i < n; i++) r[i] = _mm256_loadu_si256((const __m256i*)(s + (soff[i] + b0) * es));
    else
        for (int i = 0; i < n; i++)
            r[i] = (vm >> i) & 1u ? _mm256_loadu_si256((const __m256i*)(s + (soff[i] + b0) * es))
                                  : _mm256_setzero_si256();
}

/* 16 bytes of rows i and h + i in the two lanes of r[i] (i < h), rows `stride` bytes apart. */
__attribute__((target("avx2")))
static inline void load_row_pairs_strided(__m256i* r, int h, const void* src, int64_t stride) {
    const char* s = (const char*)src;
    for (int i = 0; i < h; i++)
        r[i] = _mm256_inserti128_si256(
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(s + i * stride))),
            _mm_loadu_si128((const __m128i*)(s + (h + i) * stride)), 1);
}

/* The same at offsets soff (elements of es bytes); rows without data read as zeros. */
__attribute__((target("avx2")))
static inline void load_row_pairs(__m256i* r, int h, const void* src, const int64_t* soff,
                                  int64_t b0, int es, uint32_t vm) {
    const char* s = (const char*)src;
    if (vm == low_bits(2 * h, 2 * h))
        for (int i = 0; i < h; i++)
            r[i] = _mm256_inserti128_si256(
                _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(s + (soff[i] + b0) * es))),
                _mm_loadu_si128((const __m128i*)(s + (soff[h + i] + b0) * es)), 1);
    else
        for (int i = 0; i < h; i++) {
            __m128i lo = (vm >> i) & 1u
                ? _mm_loadu_si128((const __m128i*)(s + (soff[i] + b0) * es)) : _mm_setzero_si128();
            __m128i hi = (vm >> (h + i)) & 1u
                ? _mm_loadu_si128((const __m128i*)(s + (soff[h + i] + b0) * es)) : _mm_setzero_si128();
            r[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
        }
}

__attribute__((target("avx2"))) REORDER_ROW_LOOP
static void square_u16_uniform(const uint16_t* src, int64_t slo, int64_t na, uint16_t* dst,
                               const rows_t* rows, int64_t b0s, int64_t bfull, int nt) {
    const int64_t dlo = rows->dlo;
    __m256i r[16];
    for (int64_t a0 = 0; a0 < na; a0 += 16)
        for (int64_t b0 = 0; b0 < bfull; b0 += 16) {
            const uint16_t* s = src + a0 * slo + b0;
            for (int i = 0; i < 16; i++) r[i] = _mm256_loadu_si256((const __m256i*)(s + i * slo));
            avx2_tr16x16_epi16(r);
            uint16_t* d = dst + (b0s + b0) * dlo + a0;
            if (nt && dlo == 16 && ((uintptr_t)d & 63) == 0)
                for (int j = 0; j < 16; j++) _mm256_stream_si256((__m256i*)(d + 16 * j), r[j]);
            else
                for (int j = 0; j < 16; j++) _mm256_storeu_si256((__m256i*)(d + j * dlo), r[j]);
        }
}

__attribute__((target("avx2")))
static void tile_avx2_u16_square(const uint16_t* src, const arows_t* A, int64_t na, uint16_t* dst,
                                 const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    __m256i r[16];
    int64_t soff[16], off[16];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)15;
    int64_t afast = narrow_uniform_uint16_t(square_u16_uniform, 16, src, A, na, dst, rows, bs, bfull,
                                              nbv, nbw, nt);
    for (int64_t a0 = afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int nw = prefix_rows(wm);
        int64_t bvec = nw > 0 ? bfull : 0;
        for (int64_t b0 = 0; b0 < bvec; b0 += 16) {
            int adjacent = row_offsets(rows, bs + b0, 16, off, 16);
            load_rows(r, 16, src, soff, b0, 2, vm);
            avx2_tr16x16_epi16(r);
            uint16_t* d0 = dst + off[0] + a0;
            if (nt && nw == 16 && adjacent && ((uintptr_t)d0 & 63) == 0)
                for (int j = 0; j < 16; j++) _mm256_stream_si256((__m256i*)(d0 + 16 * j), r[j]);
            else
                for (int j = 0; j < 16; j++) store_part(dst + off[j] + a0, r[j], 2 * nw);
        }
        edge_uint16_t(src, soff, vm, wm, n, a0, dst, rows, bs, bvec, nbv, nbw);
    }
}

/* 16 rows x 8 columns of words, for long A: lane k of row register i is tile row 8k + i, so
 * column register j is 16 words of dst row b0 + j. */
__attribute__((target("avx2"))) REORDER_ROW_LOOP
static void tall_u16_uniform(const uint16_t* src, int64_t slo, int64_t na, uint16_t* dst,
                             const rows_t* rows, int64_t b0s, int64_t bfull, int nt) {
    const int64_t dlo = rows->dlo;
    __m256i r[8];
    (void)nt;
    for (int64_t a0 = 0; a0 < na; a0 += 16)
        for (int64_t b0 = 0; b0 < bfull; b0 += 8) {
            load_row_pairs_strided(r, 8, src + a0 * slo + b0, 2 * slo);
            avx2_tr8x8_epi16_lanes(r);
            uint16_t* d = dst + (b0s + b0) * dlo + a0;
            for (int j = 0; j < 8; j++) _mm256_storeu_si256((__m256i*)(d + j * dlo), r[j]);
        }
}

__attribute__((target("avx2")))
static void tile_avx2_u16_tall(const uint16_t* src, const arows_t* A, int64_t na, uint16_t* dst,
                               const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    __m256i r[8];
    int64_t soff[16], off[8];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)7;
    int64_t afast = narrow_uniform_uint16_t(tall_u16_uniform, 16, src, A, na, dst, rows, bs, bfull,
                                              nbv, nbw, 0);
    for (int64_t a0 = afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int nw = prefix_rows(wm);
        int64_t bvec = nw > 0 ? bfull : 0;
        for (int64_t b0 = 0; b0 < bvec; b0 += 8) {
            row_offsets(rows, bs + b0, 8, off, 0);
            load_row_pairs(r, 8, src, soff, b0, 2, vm);
            avx2_tr8x8_epi16_lanes(r);
            if (nw == 16)
                for (int j = 0; j < 8; j++) _mm256_storeu_si256((__m256i*)(dst + off[j] + a0), r[j]);
            else
                for (int j = 0; j < 8; j++) store_part(dst + off[j] + a0, r[j], 2 * nw);
        }
        edge_uint16_t(src, soff, vm, wm, n, a0, dst, rows, bs, bvec, nbv, nbw);
    }
}


/* 16 rows x 16 columns: row register i holds tile rows i and 8 + i. */
__attribute__((target("avx2"))) REORDER_ROW_LOOP
static void square_u8_uniform(const uint8_t* src, int64_t slo, int64_t na, uint8_t* dst,
                              const rows_t* rows, int64_t b0s, int64_t bfull, int nt) {
    const int64_t dlo = rows->dlo;
    __m256i r[8];
    for (int64_t a0 = 0; a0 < na; a0 += 16)
        for (int64_t b0 = 0; b0 < bfull; b0 += 16) {
            load_row_pairs_strided(r, 8, src + a0 * slo + b0, slo);
            avx2_tr16x16_epi8(r);
            avx2_store_tr16x16_epi8(dst + (b0s + b0) * dlo + a0, dlo, r, nt);
        }
}

/* The same tiles for an A of 64 rows or more (nchw -> nhwc: the channels). Four row blocks
 * go together at each column step, so each dst row gets a whole 64-byte line at once rather
 * than 16 bytes of it a pass over the B slice; with rows->ahead each group fetches the
 * next one's lines first (docs/kernels.md). */
__attribute__((target("avx2"))) REORDER_ROW_LOOP
static void square_u8_grouped(const uint8_t* src, int64_t slo, int64_t na, uint8_t* dst,
                              const rows_t* rows, int64_t b0s, int64_t bfull, int nt) {
    const int64_t dlo = rows->dlo;
    __m256i r[8];
    if (na < 64) {
        square_u8_uniform(src, slo, na, dst, rows, b0s, bfull, nt);
        return;
    }
    for (int64_t a1 = 0; a1 < na; a1 += 64) {
        int64_t ae = na - a1 < 64 ? na : a1 + 64;
        const int ahead = rows->ahead && a1 + 128 <= na;
        for (int64_t b0 = 0; b0 < bfull; b0 += 16) {
            if (ahead)              /* the next group's 16 lines at these columns */
                for (int j = 0; j < 16; j++)
                    _mm_prefetch((const char*)(dst + (b0s + b0 + j) * dlo + a1 + 64), _MM_HINT_T0);
            for (int64_t a0 = a1; a0 < ae; a0 += 16) {
                load_row_pairs_strided(r, 8, src + a0 * slo + b0, slo);
                avx2_tr16x16_epi8(r);
                avx2_store_tr16x16_epi8(dst + (b0s + b0) * dlo + a0, dlo, r, nt);
            }
        }
    }
}

/* `uniform` moves the rows uniform_rows finds (square_u8_grouped here, or the AVX-512 one
   of tiles_narrow_avx512.h); the rest go through offsets and masks. */
__attribute__((target("avx2")))
static void tile_avx2_u8_square_with(uniform_uint8_t_fn uniform, const uint8_t* src,
                                     const arows_t* A, int64_t na, uint8_t* dst,
                                     const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw,
                                     int nt) {
    __m256i r[8];
    int64_t soff[16], off[16];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)15;
    int64_t afast = narrow_uniform_uint8_t(uniform, 16, src, A, na, dst, rows, bs, bfull,
                                             nbv, nbw, nt);
    for (int64_t a0 = afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int nw = prefix_rows(wm);
        int64_t bvec = nw > 0 ? bfull : 0;
        for (int64_t b0 = 0; b0 < bvec; b0 += 16) {
            int adjacent = row_offsets(rows, bs + b0, 16, off, 16);
            load_row_pairs(r, 8, src, soff, b0, 1, vm);
            avx2_tr16x16_epi8(r);
            if (nw == 16 && adjacent)
                avx2_store_tr16x16_epi8(dst + off[0] + a0, 16, r, nt);
            else
                for (int q = 0; q < 8; q++) {
                    store_part128(dst + off[2 * q] + a0, _mm256_castsi256_si128(r[q]), nw);
                    store_part128(dst + off[2 * q + 1] + a0, _mm256_extracti128_si256(r[q], 1), nw);
                }
        }
        edge_uint8_t(src, soff, vm, wm, n, a0, dst, rows, bs, bvec, nbv, nbw);
    }
}

__attribute__((target("avx2")))
static void tile_avx2_u8_square(const uint8_t* src, const arows_t* A, int64_t na, uint8_t* dst,
                                const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    tile_avx2_u8_square_with(square_u8_grouped, src, A, na, dst, rows, bs, nbv, nbw, nt);
}

/* 32 rows x 16 columns: lane k of row register i is tile row 16k + i, so column register j
 * is 32 bytes of dst row b0 + j. */
__attribute__((target("avx2"))) REORDER_ROW_LOOP
static void tall_u8_uniform(const uint8_t* src, int64_t slo, int64_t na, uint8_t* dst,
                            const rows_t* rows, int64_t b0s, int64_t bfull, int nt) {
    const int64_t dlo = rows->dlo;
    __m256i r[16];
    (void)nt;
    for (int64_t a0 = 0; a0 < na; a0 += 32)
        for (int64_t b0 = 0; b0 < bfull; b0 += 16) {
            load_row_pairs_strided(r, 16, src + a0 * slo + b0, slo);
            avx2_tr16x16_epi8_lanes(r);
            uint8_t* d = dst + (b0s + b0) * dlo + a0;
            for (int j = 0; j < 16; j++) _mm256_storeu_si256((__m256i*)(d + j * dlo), r[j]);
        }
}

/* `edges` takes the uniform rows' ragged columns where it can (the AVX-512 one of
   tiles_narrow_avx512.h), or 0: element-wise. */
__attribute__((target("avx2")))
static void tile_avx2_u8_tall_with(uniform_edges_uint8_t_fn edges, const uint8_t* src,
                                   const arows_t* A, int64_t na, uint8_t* dst,
                                   const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    __m256i r[16];
    int64_t soff[32], off[16];
    uint32_t vlo, wlo, vhi = 0, whi = 0;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)15;
    int64_t afast = narrow_uniform_edges_uint8_t(tall_u8_uniform, edges, 32, src, A, na, dst,
                                                 rows, bs, bfull, nbv, nbw, 0);
    for (int64_t a0 = afast; a0 < na; a0 += 32) {
        int n = na - a0 < 32 ? (int)(na - a0) : 32;
        int nlo = n < 16 ? n : 16;
        arow_block(A, a0, nlo, soff, &vlo, &wlo);
        whi = vhi = 0;
        if (n > 16) arow_block(A, a0 + 16, n - 16, soff + 16, &vhi, &whi);
        uint32_t vm = vlo | (vhi << 16), wm = wlo | (whi << 16);
        if (!wm) continue;
        int nw = prefix_rows(wm);
        int64_t bvec = nw > 0 ? bfull : 0;
        for (int64_t b0 = 0; b0 < bvec; b0 += 16) {
            row_offsets(rows, bs + b0, 16, off, 0);
            load_row_pairs(r, 16, src, soff, b0, 1, vm);
            avx2_tr16x16_epi8_lanes(r);
            if (nw == 32)
                for (int j = 0; j < 16; j++) _mm256_storeu_si256((__m256i*)(dst + off[j] + a0), r[j]);
            else
                for (int j = 0; j < 16; j++) store_part(dst + off[j] + a0, r[j], nw);
        }
        edge_uint8_t(src, soff, vm, wm, n, a0, dst, rows, bs, bvec, nbv, nbw);
    }
}

__attribute__((target("avx2")))
static void tile_avx2_u8_tall(const uint8_t* src, const arows_t* A, int64_t na, uint8_t* dst,
                              const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    tile_avx2_u8_tall_with(0, src, A, na, dst, rows, bs, nbv, nbw);
}

__attribute__((target("avx2")))
static void tile_avx2_u16(const uint16_t* src, const arows_t* A, int64_t na, uint16_t* dst,
                          const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    if (narrow_tall(A, na, nbw, 2))
        tile_avx2_u16_tall(src, A, na, dst, rows, bs, nbv, nbw);
    else
        tile_avx2_u16_square(src, A, na, dst, rows, bs, nbv, nbw, nt);
}

__attribute__((target("avx2")))
static void tile_avx2_u8(const uint8_t* src, const arows_t* A, int64_t na, uint8_t* dst,
                         const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    if (narrow_tall(A, na, nbw, 1))
        tile_avx2_u8_tall(src, A, na, dst, rows, bs, nbv, nbw);
    else
        tile_avx2_u8_square(src, A, na, dst, rows, bs, nbv, nbw, nt);
}

#endif
#endif
