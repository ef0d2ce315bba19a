/* Tiles of 2-byte elements (bf16, f16) with AVX-512 F+BW register transposes
 * (common/transpose_avx512.h). They follow the tile contract of tile_rows.h:
 * rows a of the tile are dst-contiguous, columns b src-contiguous. Each tile moves 1 KiB:
 *
 *   words 16x32  16 rows of 32 words (whole 64-byte loads), two 16x16 word transposes; a
 *                register holds two dst rows of 16 words, so when dst rows are adjacent
 *                (nchw -> nChw16c) the tile is 1 KiB of dst in 16 full-line stores.
 *   words 32x16  32 rows of 16 words, two a register (one 64-byte load when they are
 *                adjacent in src), two 16x16 transposes; each dst row gets 32 words, a
 *                whole 64-byte line (nchw -> nhwc, nhwc -> nchw, OIhw16i16o -> oihw).
 *
 *   bytes 64x16  64 rows of 16 bytes, four a register (lane k: rows 16k..16k+15), a 16 x 16
 *                byte transpose inside each lane; each dst row gets a whole 64-byte line
 *                (nchw -> nhwc, 2-D transposes), where A has 64 rows or more and the dst
 *                rows are whole lines apart. Other byte tiles keep AVX2: a 16 x 16 AVX-512
 *                byte tile measured no faster on a Zen 4, whose 512-bit shuffles run at half
 *                the rate of 256-bit ones (docs/kernels.md).
 *
 * Everything ragged is masked, not element-wise: columns past the data load as zeros
 * (masked loads do not fault on masked-off elements), rows without data load nothing, rows
 * not written are masked off in the stores, and dst rows past the tile are not stored.
 * Streaming stores only where a store is a whole, aligned 64-byte line of a fully written
 * row block.
 */
#ifndef REORDER_MOVE_TILES_NARROW_AVX512_H
#define REORDER_MOVE_TILES_NARROW_AVX512_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/tile_rows.h"
#include "move/tiles_narrow_avx2.h"   /* its AVX2 byte tiles: the shapes without an AVX-512 one */

#if REORDER_X86

#define N512_TARGET __attribute__((target("avx512f,avx512bw")))

/* Rows a0 .. a0+n-1 (n <= 64) in blocks of 16: offsets (0 past n) and 64-bit masks. */
static inline void arow_block64(const arows_t* A, int64_t a0, int n, int64_t* soff,
                                uint64_t* vm, uint64_t* wm) {
    uint64_t v = 0, w = 0;
    for (int k = 0; k < 64; k += 16) {
        int m = n - k < 16 ? n - k : 16;
        uint32_t vk = 0, wk = 0;
        if (m > 0) arow_block(A, a0 + k, m, soff + k, &vk, &wk);
        for (int i = m < 0 ? 0 : m; i < 16; i++) soff[k + i] = 0;
        v |= (uint64_t)vk << k;
        w |= (uint64_t)wk << k;
    }
    *vm = v;
    *wm = w;
}

/* The data columns of a block starting at b0, as a count in [0, nb]. */
static inline int64_t data_cols(int64_t nbv, int64_t b0, int64_t nb) {
    int64_t k = nbv - b0;
    return k < 0 ? 0 : k < nb ? k : nb;
}

/* dst rows of the tile are adjacent rows of `len` elements (one level, dlo == len) */
static inline int rows_adjacent(const rows_t* rows, int64_t len) {
    return rows->nlo == 0 && rows->dlo == len;
}

N512_TARGET
static inline void store_line(void* d, __m512i v, int nt) {
    if (nt && ((uintptr_t)d & 63) == 0) _mm512_stream_si512((__m512i*)d, v);
    else _mm512_storeu_si512(d, v);
}

/* ---- the uniform rows (uniform_rows: one level, all data, whole row blocks) and whole
 * column blocks, with pointer strides: no offset arrays, masks or per-row branches, which
 * cost as much as the transposes themselves here (docs/kernels.md). ---------------------- */
N512_TARGET REORDER_ROW_LOOP
static void wide_u16_uniform(const uint16_t* src, int64_t slo, int64_t na, uint16_t* dst,
                             const rows_t* rows, int64_t b0s, int64_t bfull, int nt) {
    const int64_t dlo = rows->dlo;
    __m512i x[16], p[8], q[8];
    for (int64_t a0 = 0; a0 < na; a0 += 16)
        for (int64_t b0 = 0; b0 < bfull; b0 += 32) {
            const uint16_t* s = src + a0 * slo + b0;
            for (int i = 0; i < 16; i++) x[i] = _mm512_loadu_si512(s + i * slo);
            for (int k = 0; k < 8; k++) {
                p[k] = _mm512_shuffle_i64x2(x[2 * k], x[2 * k + 1], 0x44);
                q[k] = _mm512_shuffle_i64x2(x[2 * k], x[2 * k + 1], 0xEE);
            }
            tr16x16_w16(p);
            tr16x16_w16(q);
            uint16_t* d = dst + (b0s + b0) * dlo + a0;
            if (dlo == 16) {
                int st = nt && ((uintptr_t)d & 63) == 0;
                for (int j = 0; j < 8; j++) {
                    if (st) {
                        _mm512_stream_si512((__m512i*)(d + 32 * j), p[j]);
                        _mm512_stream_si512((__m512i*)(d + 256 + 32 * j), q[j]);
                    } else {
                        _mm512_storeu_si512(d + 32 * j, p[j]);
                        _mm512_storeu_si512(d + 256 + 32 * j, q[j]);
                    }
                }
            } else
                for (int j = 0; j < 8; j++) {
                    _mm256_storeu_si256((__m256i*)(d + 2 * j * dlo), _mm512_castsi512_si256(p[j]));
                    _mm256_storeu_si256((__m256i*)(d + (2 * j + 1) * dlo),
                                        _mm512_extracti64x4_epi64(p[j], 1));
                    _mm256_storeu_si256((__m256i*)(d + (16 + 2 * j) * dlo),
                                        _mm512_castsi512_si256(q[j]));
                    _mm256_storeu_si256((__m256i*)(d + (17 + 2 * j) * dlo),
                                        _mm512_extracti64x4_epi64(q[j], 1));
                }
        }
}

/* One 32 x 16 tile of tall_u16_uniform512, rows a0.. and columns b0.. */
N512_TARGET static inline __attribute__((always_inline)) void
tall_u16_tile512(const uint16_t* src, int64_t slo, int64_t a0, int64_t b0, uint16_t* dst,
                 int64_t dlo, int64_t b0s, int st) {
    __m512i r[16];
    const uint16_t* s = src + a0 * slo + b0;
    if (slo == 16)
        for (int k = 0; k < 16; k++) r[k] = _mm512_loadu_si512(s + 32 * k);
    else
        for (int k = 0; k < 16; k++)
            r[k] = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)(s + 2 * k * slo))),
                _mm256_loadu_si256((const __m256i*)(s + (2 * k + 1) * slo)), 1);
    tr16x16_w16(r);
    tr16x16_w16(r + 8);
    uint16_t* d = dst + (b0s + b0) * dlo + a0;
    if (st && ((uintptr_t)d & 63) == 0)
        for (int j = 0; j < 8; j++) {
            _mm512_stream_si512((__m512i*)(d + 2 * j * dlo), _mm512_shuffle_i64x2(r[j], r[8 + j], 0x44));
            _mm512_stream_si512((__m512i*)(d + (2 * j + 1) * dlo), _mm512_shuffle_i64x2(r[j], r[8 + j], 0xEE));
        }
    else
        for (int j = 0; j < 8; j++) {
            _mm512_storeu_si512(d + 2 * j * dlo, _mm512_shuffle_i64x2(r[j], r[8 + j], 0x44));
            _mm512_storeu_si512(d + (2 * j + 1) * dlo, _mm512_shuffle_i64x2(r[j], r[8 + j], 0xEE));
        }
}

/* NAME walks TILE's tiles of H rows x 16 columns columns first (rows_t.cols_first): the
   columns of B outermost, rows 0..na of A at each. A function of its own, so that the
   rows-first loop beside it compiles as it did alone (with both loops in one body the byte
   tiles' rows-first loop read 8% slower on 2 threads). */
#define N512_COLS_FIRST(NAME, T, TILE, H)                                                      \
N512_TARGET REORDER_ROW_LOOP __attribute__((noinline))                                         \
static void NAME(const T* src, int64_t slo, int64_t na, T* dst, int64_t dlo, int64_t b0s,      \
                 int64_t bfull, int nt) {                                                      \
    for (int64_t b0 = 0; b0 < bfull; b0 += 16)                                                 \
        for (int64_t a = 0; a < na; a += (H))                                                  \
            TILE(src, slo, a, b0, dst, dlo, b0s, nt);                                          \
}
N512_COLS_FIRST(tall_u16_cols_first512, uint16_t, tall_u16_tile512, 32)

N512_TARGET REORDER_ROW_LOOP
static void tall_u16_uniform512(const uint16_t* src, int64_t slo, int64_t na, uint16_t* dst,
                                const rows_t* rows, int64_t b0s, int64_t bfull, int nt) {
    const int64_t dlo = rows->dlo;
    const int st = nt && ((dlo * 2) & 63) == 0;
    if (cols_first_on(rows, nt)) {
        tall_u16_cols_first512(src, slo, na, dst, dlo, b0s, bfull, st);
        return;
    }
    for (int64_t a0 = 0; a0 < na; a0 += 32)
        for (int64_t b0 = 0; b0 < bfull; b0 += 16)
            tall_u16_tile512(src, slo, a0, b0, dst, dlo, b0s, st);
}

/* ---- bytes ------------------------------------------------------------------------------ */
/* 64 rows x 16 columns of bytes, A of 64 rows or more: lane k of row register i is tile row
 * 16k + i (four 16-byte loads), a 16 x 16 byte transpose inside every lane in four rounds of
 * unpacks, and column register o then holds column rev4(o) of all 64 rows: one whole 64-byte
 * line of its dst row (nchw -> nhwc: 64 channels of a pixel). The AVX2 tiles give a dst row
 * 16 bytes a store, four stores a line (docs/kernels.md). Rows past the last 64 take those. */
/* one round of the transpose: rows 2i and 2i + 1 interleaved in units of W bits */
#define N512_UNPACK_ROUND(W, IN, OUT)                                                          \
    for (int i = 0; i < 8; i++) {                                                              \
        OUT[i] = _mm512_unpacklo_epi##W(IN[2 * i], IN[2 * i + 1]);                             \
        OUT[i + 8] = _mm512_unpackhi_epi##W(IN[2 * i], IN[2 * i + 1]);                         \
    }
N512_TARGET
static inline void tr16x16_u8_lanes(__m512i* v) {
    __m512i t[16];
    N512_UNPACK_ROUND(8, v, t)
    N512_UNPACK_ROUND(16, t, v)
    N512_UNPACK_ROUND(32, v, t)
    N512_UNPACK_ROUND(64, t, v)
}

/* column register o of tr16x16_u8_lanes holds column n512_rev4[o] */
static const int n512_rev4[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};

/* One 64 x 16 tile of lines_u8_uniform512, rows a1.. and columns b0.. */
N512_TARGET static inline __attribute__((always_inline)) void
lines_u8_tile512(const uint8_t* src, int64_t slo, int64_t a1, int64_t b0, uint8_t* dst,
                 int64_t dlo, int64_t b0s, int nt) {
    __m512i r[16];
    const uint8_t* s = src + a1 * slo + b0;
    for (int i = 0; i < 16; i++) {
        __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)(s + i * slo)));
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(s + (16 + i) * slo)), 1);
        v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(s + (32 + i) * slo)), 2);
        r[i] = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(s + (48 + i) * slo)), 3);
    }
    tr16x16_u8_lanes(r);
    uint8_t* d = dst + (b0s + b0) * dlo + a1;
    for (int o = 0; o < 16; o++)
        store_line(d + n512_rev4[o] * dlo, r[o], nt);
}

N512_COLS_FIRST(lines_u8_cols_first512, uint8_t, lines_u8_tile512, 64)
#undef N512_COLS_FIRST

N512_TARGET REORDER_ROW_LOOP
static void lines_u8_uniform512(const uint8_t* src, int64_t slo, int64_t na, uint8_t* dst,
                                const rows_t* rows, int64_t b0s, int64_t bfull, int nt) {
    const int64_t dlo = rows->dlo, a1 = na & ~(int64_t)63;
    if (cols_first_on(rows, nt))
        lines_u8_cols_first512(src, slo, a1, dst, dlo, b0s, bfull, nt);
    else
        for (int64_t a = 0; a < a1; a += 64)
            for (int64_t b0 = 0; b0 < bfull; b0 += 16)
                lines_u8_tile512(src, slo, a, b0, dst, dlo, b0s, nt);
    if (a1 < na)
        square_u8_grouped(src + a1 * slo, slo, na - a1, dst + a1, rows, b0s, bfull, nt);
}

/* The ragged last columns bfull .. nbw of the uniform rows (nbw - bfull < 16; nChw16c ->
 * nchw at C = 24: the last block's 8 channels of 16), 64 rows at a time: each row's data
 * columns by a masked load (nothing past them is read; padding columns load as zeros), a
 * 16 x 16 transpose in the lanes, and each written column's 64 rows in one store (masked for
 * the last rows). The AVX2 tiles took these columns element-wise: 0.11-0.20 of a copy at
 * C = 20, 24 and 40 against 0.66-0.82 at multiples of 16. Returns 0 for wider edges. */
N512_TARGET REORDER_ROW_LOOP
static int edges_u8_uniform512(const uint8_t* src, int64_t slo, int64_t na, uint8_t* dst,
                               const rows_t* rows, int64_t b0s, int64_t bfull, int64_t nbv,
                               int64_t nbw) {
    const int64_t dlo = rows->dlo, nv = (nbv < nbw ? nbv : nbw) - bfull, nw = nbw - bfull;
    if (nw > 16 || nv < 0) return 0;
    const __mmask64 m = ((__mmask64)1 << nv) - 1;
    __m512i r[16];
    for (int64_t a1 = 0; a1 < na; a1 += 64) {
        const uint8_t* s = src + a1 * slo + bfull;
        for (int i = 0; i < 16; i++) {
            __m128i q[4];                       /* the lanes: rows i, 16 + i, 32 + i, 48 + i */
            for (int k = 0; k < 4; k++)
                q[k] = a1 + 16 * k + i < na ? _mm512_castsi512_si128(
                           _mm512_maskz_loadu_epi8(m, s + (16 * k + i) * slo))
                                            : _mm_setzero_si128();
            r[i] = _mm512_inserti32x4(_mm512_inserti32x4(_mm512_inserti32x4(
                       _mm512_castsi128_si512(q[0]), q[1], 1), q[2], 2), q[3], 3);
        }
        tr16x16_u8_lanes(r);
        const int64_t left = na - a1;
        const __mmask64 sm = left >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << left) - 1;
        uint8_t* d = dst + (b0s + bfull) * dlo + a1;
        for (int o = 0; o < 16; o++)
            if (n512_rev4[o] < nw) _mm512_mask_storeu_epi8(d + n512_rev4[o] * dlo, sm, r[o]);
    }
    return 1;
}

/* The tall byte tile with the uniform rows' ragged columns through edges_u8_uniform512. */
static void tile_avx512_u8_tall(const uint8_t* src, const arows_t* A, int64_t na, uint8_t* dst,
                                const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    tile_avx2_u8_tall_with(edges_u8_uniform512, src, A, na, dst, rows, bs, nbv, nbw);
}

/* Whether the byte tiles take lines_u8_uniform512: A of 64 rows or more and dst rows one
   level, a whole number of lines apart (a 64-byte store into rows 16 bytes off a line splits
   in two: 2000 x 2000 on 2 threads read 0.67-0.77 of the AVX2 tiles' speed), and not the
   tall AVX2 tile's shape. */
static inline int narrow512_bytes(const arows_t* A, int64_t na, int64_t nb, const rows_t* rows) {
    return na >= 64 && rows->nlo == 0 && (rows->dlo & 63) == 0 && !narrow_tall(A, na, nb, 1);
}

/* The square byte tile with A's uniform rows through lines_u8_uniform512, the rest as the
   AVX2 tile takes them. */
static void tile_avx512_u8_square(const uint8_t* src, const arows_t* A, int64_t na, uint8_t* dst,
                                  const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw,
                                  int nt) {
    tile_avx2_u8_square_with(lines_u8_uniform512, src, A, na, dst, rows, bs, nbv, nbw, nt);
}

/* ---- words ----------------------------------------------------------------------------- */
N512_TARGET
static void tile_avx512_u16_wide(const uint16_t* src, const arows_t* A, int64_t na,
                                 uint16_t* dst, const rows_t* rows, int64_t bs, int64_t nbv,
                                 int64_t nbw, int nt) {
    __m512i x[16], p[8], q[8];
    int64_t soff[16], off[32];
    uint32_t vm, wm;
    int adjacent = rows_adjacent(rows, 16);
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)31;
    int64_t afast = bfull ? uniform_rows_run_uint16_t(wide_u16_uniform, 16, src, A, na, dst,
                                                      rows, bs, bfull, nbw, nt) : 0;
    /* the rows the uniform loop took need only their edge columns, if any */
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        for (int i = n; i < 16; i++) soff[i] = 0;
        for (int64_t b0 = a0 < afast ? bfull : 0; b0 < nbw; b0 += 32) {
            int nb = nbw - b0 < 32 ? (int)(nbw - b0) : 32;
            int64_t nbd = data_cols(nbv, b0, nb);
            if (nbd == 32 && vm == 0xFFFFu)
                for (int i = 0; i < 16; i++) x[i] = _mm512_loadu_si512(src + soff[i] + b0);
            else if (nbd == 32)     /* padding rows (C = 3 of c16) are zeros, not masked loads */
                for (int i = 0; i < 16; i++)
                    x[i] = (vm >> i) & 1u ? _mm512_loadu_si512(src + soff[i] + b0) : _mm512_setzero_si512();
            else {
                __mmask32 cm = (__mmask32)low_bits(nbd, 32);
                for (int i = 0; i < 16; i++)
                    x[i] = _mm512_maskz_loadu_epi16((vm >> i) & 1u ? cm : 0, src + soff[i] + b0);
            }
            for (int k = 0; k < 8; k++) {       /* rows 2k, 2k+1: columns 0..15, 16..31 */
                p[k] = _mm512_shuffle_i64x2(x[2 * k], x[2 * k + 1], 0x44);
                q[k] = _mm512_shuffle_i64x2(x[2 * k], x[2 * k + 1], 0xEE);
            }
            tr16x16_w16(p);                     /* p[j]: dst rows b0 + 2j, 2j + 1 */
            tr16x16_w16(q);                     /* q[j]: dst rows b0 + 16 + 2j, 2j + 1 */
            if (adjacent && nb == 32 && wm == 0xFFFFu) {
                uint16_t* d = dst + (bs + b0) * 16 + a0;
                int s = nt && ((uintptr_t)d & 63) == 0;
                for (int j = 0; j < 8; j++) {
                    if (s) {
                        _mm512_stream_si512((__m512i*)(d + 32 * j), p[j]);
                        _mm512_stream_si512((__m512i*)(d + 256 + 32 * j), q[j]);
                    } else {
                        _mm512_storeu_si512(d + 32 * j, p[j]);
                        _mm512_storeu_si512(d + 256 + 32 * j, q[j]);
                    }
                }
                continue;
            }
            row_offsets(rows, bs + b0, nb, off, 0);
            for (int b = 0; b < nb; b++) {
                __m512i v = b < 16 ? p[b >> 1] : q[(b - 16) >> 1];
                __m256i h = b & 1 ? _mm512_extracti64x4_epi64(v, 1) : _mm512_castsi512_si256(v);
                uint16_t* d = dst + off[b] + a0;
                if (wm == 0xFFFFu) _mm256_storeu_si256((__m256i*)d, h);
                else _mm512_mask_storeu_epi16(d, (__mmask32)wm, _mm512_castsi256_si512(h));
            }
        }
    }
}

N512_TARGET
static void tile_avx512_u16_tall(const uint16_t* src, const arows_t* A, int64_t na,
                                 uint16_t* dst, const rows_t* rows, int64_t bs, int64_t nbv,
                                 int64_t nbw, int nt) {
    __m512i r[16];
    int64_t soff[64], off[16];
    uint64_t vm64, wm64;
    /* rows 2k, 2k+1 adjacent in src: one 64-byte load a pair */
    int pairs = A->nlo == 0 && A->slo == 16;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)15;
    int64_t afast = bfull ? uniform_rows_run_uint16_t(tall_u16_uniform512, 32, src, A, na, dst,
                                                      rows, bs, bfull, nbw, nt) : 0;
    /* the rows the uniform loop took need only their edge columns, if any */
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 32) {
        int n = na - a0 < 32 ? (int)(na - a0) : 32;
        arow_block64(A, a0, n, soff, &vm64, &wm64);
        uint32_t vm = (uint32_t)vm64, wm = (uint32_t)wm64;
        if (!wm) continue;
        for (int64_t b0 = a0 < afast ? bfull : 0; b0 < nbw; b0 += 16) {
            int nb = nbw - b0 < 16 ? (int)(nbw - b0) : 16;
            int64_t nbd = data_cols(nbv, b0, nb);
            if (nbd == 16 && vm == 0xFFFFFFFFu && pairs)
                for (int k = 0; k < 16; k++) r[k] = _mm512_loadu_si512(src + soff[2 * k] + b0);
            else {
                __mmask32 cm = (__mmask32)low_bits(nbd, 16);
                for (int k = 0; k < 16; k++) {
                    __m512i lo = _mm512_maskz_loadu_epi16((vm >> (2 * k)) & 1u ? cm : 0,
                                                          src + soff[2 * k] + b0);
                    __m512i hi = _mm512_maskz_loadu_epi16((vm >> (2 * k + 1)) & 1u ? cm : 0,
                                                          src + soff[2 * k + 1] + b0);
                    r[k] = _mm512_inserti64x4(lo, _mm512_castsi512_si256(hi), 1);
                }
            }
            tr16x16_w16(r);                     /* r[j]: dst rows 2j, 2j+1 of tile rows 0..15 */
            tr16x16_w16(r + 8);                 /* r[8+j]: the same of tile rows 16..31 */
            row_offsets(rows, bs + b0, nb, off, 0);
            for (int b = 0; b < nb; b++) {
                int j = b >> 1;
                __m512i v = b & 1 ? _mm512_shuffle_i64x2(r[j], r[8 + j], 0xEE)
                                  : _mm512_shuffle_i64x2(r[j], r[8 + j], 0x44);
                uint16_t* d = dst + off[b] + a0;
                if (wm == 0xFFFFFFFFu) store_line(d, v, nt);
                else _mm512_mask_storeu_epi16(d, (__mmask32)wm, v);
            }
        }
    }
}

/* Which AVX-512 word tile moves this A x B tile: 1 the 16x32, 2 the 32x16 (A long), or 0
 * for the AVX2 tile. With A's rows close together in src (nChw16c -> nchw: one pixel's 16
 * channels) and cached stores, the AVX2 16x8 tile is faster (docs/kernels.md); the 32x16
 * tile wins there only by streaming whole lines. */
static inline int narrow512_words(const arows_t* A, int64_t na, int nt) {
    if (na < 32) return 1;
    if (A->nlo == 0 && A->slo >= -32 && A->slo <= 32 && !nt) return 0;
    return 2;
}

N512_TARGET
static void tile_avx512_u16(const uint16_t* src, const arows_t* A, int64_t na, uint16_t* dst,
                            const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    if (narrow512_words(A, na, nt) == 2)
        tile_avx512_u16_tall(src, A, na, dst, rows, bs, nbv, nbw, nt);
    else
        tile_avx512_u16_wide(src, A, na, dst, rows, bs, nbv, nbw, nt);
}

#endif
#endif
