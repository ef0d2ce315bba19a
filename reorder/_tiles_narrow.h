/* Tiles of 1- and 2-byte elements (bf16, f16, s8, u8 moves) with AVX2 register transposes.
 * Included by _simd.h, whose tile contract they follow (see there): rows a of the tile are
 * dst-contiguous, columns b src-contiguous.
 *
 *   tile_avx2_u16   16 rows x 16 columns of words: 16 loads of 32 bytes, a 16x16 word
 *                   transpose (in-lane unpacks, then one 128-bit lane exchange), 16 stores.
 *   tile_avx2_u8    16 x 16 byte transposes inside each 128-bit lane. Two shapes of tile:
 *                   16 rows x 32 columns (lane k holds columns 16k..16k+15; each dst row
 *                   gets 16 bytes), used when A is short (nchw -> nChw16c: A = c16), and
 *                   32 rows x 16 columns (lane k holds rows 16k..16k+15; each dst row gets
 *                   32 bytes), used when A is long (nChw16c -> nchw, nchw -> nhwc).
 *
 * Rows written only in part of a block (a C tail in nchw -> nhwc) go through a small buffer;
 * ragged column edges and blocks whose written rows are not a prefix run element-wise.
 * Streaming stores are used only where one tile writes whole 64-byte lines: its dst rows are
 * adjacent and as long as a row block (nchw -> nChw16c), so no line is left half written
 * for a later tile (docs/kernels.md).
 */
#ifndef REORDER_TILES_NARROW_H
#define REORDER_TILES_NARROW_H

#if REORDER_X86

/* r[i] = row i (16 words); on return r[j] = column j (16 words). */
__attribute__((target("avx2")))
static inline void tr16x16_w16_avx2(__m256i r[16]) {
    __m256i t[16];
    for (int k = 0; k < 8; k++) {           /* t[2k], t[2k+1]: columns 0-3 / 4-7 of rows 2k, 2k+1 */
        t[2 * k] = _mm256_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
    }
    for (int g = 0; g < 4; g++) {           /* r[4g+m]: columns 2m, 2m+1 of rows 4g..4g+3 */
        r[4 * g + 0] = _mm256_unpacklo_epi32(t[4 * g], t[4 * g + 2]);
        r[4 * g + 1] = _mm256_unpackhi_epi32(t[4 * g], t[4 * g + 2]);
        r[4 * g + 2] = _mm256_unpacklo_epi32(t[4 * g + 1], t[4 * g + 3]);
        r[4 * g + 3] = _mm256_unpackhi_epi32(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int h = 0; h < 2; h++)             /* t[8h+c]: column c of rows 8h..8h+7 */
        for (int m = 0; m < 4; m++) {
            t[8 * h + 2 * m] = _mm256_unpacklo_epi64(r[8 * h + m], r[8 * h + 4 + m]);
            t[8 * h + 2 * m + 1] = _mm256_unpackhi_epi64(r[8 * h + m], r[8 * h + 4 + m]);
        }
    /* (all of the above per 128-bit lane: lane 1 holds columns 8..15) */
    for (int c = 0; c < 8; c++) {
        r[c] = _mm256_permute2x128_si256(t[c], t[8 + c], 0x20);
        r[8 + c] = _mm256_permute2x128_si256(t[c], t[8 + c], 0x31);
    }
}

/* In each 128-bit lane: r[i] = row i (8 words); on return r[j] = column j. Eight registers
 * in and eight temporaries: no spills, unlike the 16x16 tile. */
__attribute__((target("avx2")))
static inline void tr8x8_w16_lanes(__m256i r[8]) {
    __m256i t[8];
    for (int k = 0; k < 4; k++) {           /* columns 0-3 / 4-7 of rows 2k, 2k+1 */
        t[2 * k] = _mm256_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
    }
    for (int g = 0; g < 2; g++) {           /* r[4g+m]: columns 2m, 2m+1 of rows 4g..4g+3 */
        r[4 * g + 0] = _mm256_unpacklo_epi32(t[4 * g], t[4 * g + 2]);
        r[4 * g + 1] = _mm256_unpackhi_epi32(t[4 * g], t[4 * g + 2]);
        r[4 * g + 2] = _mm256_unpacklo_epi32(t[4 * g + 1], t[4 * g + 3]);
        r[4 * g + 3] = _mm256_unpackhi_epi32(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int m = 0; m < 4; m++) {
        t[2 * m] = _mm256_unpacklo_epi64(r[m], r[4 + m]);
        t[2 * m + 1] = _mm256_unpackhi_epi64(r[m], r[4 + m]);
    }
    for (int c = 0; c < 8; c++) r[c] = t[c];
}

/* In each 128-bit lane: r[i] = row i (16 bytes); on return r[j] = column j. */
__attribute__((target("avx2")))
static inline void tr16x16_u8_lanes(__m256i r[16]) {
    __m256i t[16];
    for (int k = 0; k < 8; k++) {           /* columns 0-7 / 8-15 of rows 2k, 2k+1 */
        t[2 * k] = _mm256_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
    }
    for (int g = 0; g < 4; g++) {           /* r[4g+m]: columns 4m..4m+3 of rows 4g..4g+3 */
        r[4 * g + 0] = _mm256_unpacklo_epi16(t[4 * g], t[4 * g + 2]);
        r[4 * g + 1] = _mm256_unpackhi_epi16(t[4 * g], t[4 * g + 2]);
        r[4 * g + 2] = _mm256_unpacklo_epi16(t[4 * g + 1], t[4 * g + 3]);
        r[4 * g + 3] = _mm256_unpackhi_epi16(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int h = 0; h < 2; h++)             /* t[8h+q]: columns 2q, 2q+1 of rows 8h..8h+7 */
        for (int m = 0; m < 4; m++) {
            t[8 * h + 2 * m] = _mm256_unpacklo_epi32(r[8 * h + m], r[8 * h + 4 + m]);
            t[8 * h + 2 * m + 1] = _mm256_unpackhi_epi32(r[8 * h + m], r[8 * h + 4 + m]);
        }
    for (int q = 0; q < 8; q++) {
        r[2 * q] = _mm256_unpacklo_epi64(t[q], t[8 + q]);
        r[2 * q + 1] = _mm256_unpackhi_epi64(t[q], t[8 + q]);
    }
}

/* The tall tiles (rows of two blocks in one register) when A is long and its rows lie close
 * together in src (nChw16c -> nchw: one pixel's 16 channels each), or B is too narrow for
 * the wide byte tile's 32 columns (OIhw16i16o -> oihw: B = o16). With A's rows far apart
 * (nchw -> nhwc: whole channel planes), 32 rows would be 32 read streams, and the byte tile
 * keeps to 16 rows. */
static inline int narrow_tall(const arows_t* A, int64_t na, int64_t nb, int size) {
    return na >= 32 && (size == 2 || nb < 32 || (A->nlo == 0 && A->slo * size <= 64));
}

/* The number of written rows when they are a prefix of the block, else -1. */
static inline int prefix_rows(uint32_t wm) {
    return (wm & (wm + 1u)) == 0 ? __builtin_popcount(wm) : -1;
}

/* dst offsets of rows bs .. bs+n-1; 1 when they are adjacent rows of `len` elements. */
static inline int row_offsets(const rows_t* rows, int64_t bs, int n, int64_t* off, int64_t len) {
    if (rows->nlo == 0) {
        for (int j = 0; j < n; j++) off[j] = (bs + j) * rows->dlo;
        return rows->dlo == len;
    }
    int64_t q = bs / rows->nlo, m = bs % rows->nlo;
    for (int j = 0; j < n; j++) {
        off[j] = q * rows->dhi + m * rows->dlo;
        if (++m == rows->nlo) { m = 0; q++; }
    }
    return 0;
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

__attribute__((target("avx2")))
static void square_u16_uniform(const uint16_t* src, int64_t slo, int64_t na, uint16_t* dst,
                               int64_t dlo, int64_t b0s, int64_t bfull, int nt) {
    __m256i r[16];
    for (int64_t a0 = 0; a0 < na; a0 += 16)
        for (int64_t b0 = 0; b0 < bfull; b0 += 16) {
            const uint16_t* s = src + a0 * slo + b0;
            for (int i = 0; i < 16; i++) r[i] = _mm256_loadu_si256((const __m256i*)(s + i * slo));
            tr16x16_w16_avx2(r);
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
    int64_t afast = uniform_rows(A, rows, na, 16);
    if (afast) {
        square_u16_uniform(src, A->slo, afast, dst, rows->dlo, bs, bfull, nt);
        if (bfull < nbw)
            for (int64_t a0 = 0; a0 < afast; a0 += 16) {
                arow_block(A, a0, 16, soff, &vm, &wm);
                edge_uint16_t(src, soff, vm, wm, 16, a0, dst, rows, bs, bfull, nbv, nbw);
            }
    }
    for (int64_t a0 = afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int nw = prefix_rows(wm);
        int64_t bvec = nw > 0 ? bfull : 0;
        for (int64_t b0 = 0; b0 < bvec; b0 += 16) {
            int adjacent = row_offsets(rows, bs + b0, 16, off, 16);
            if (vm == 0xffffu)
                for (int i = 0; i < 16; i++) r[i] = _mm256_loadu_si256((const __m256i*)(src + soff[i] + b0));
            else
                for (int i = 0; i < 16; i++)
                    r[i] = (vm >> i) & 1u ? _mm256_loadu_si256((const __m256i*)(src + soff[i] + b0))
                                          : _mm256_setzero_si256();
            tr16x16_w16_avx2(r);
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
__attribute__((target("avx2")))
static void tall_u16_uniform(const uint16_t* src, int64_t slo, int64_t na, uint16_t* dst,
                             int64_t dlo, int64_t b0s, int64_t bfull) {
    __m256i r[8];
    for (int64_t a0 = 0; a0 < na; a0 += 16)
        for (int64_t b0 = 0; b0 < bfull; b0 += 8) {
            const uint16_t* s = src + a0 * slo + b0;
            for (int i = 0; i < 8; i++)
                r[i] = _mm256_inserti128_si256(
                    _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(s + i * slo))),
                    _mm_loadu_si128((const __m128i*)(s + (8 + i) * slo)), 1);
            tr8x8_w16_lanes(r);
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
    int64_t afast = uniform_rows(A, rows, na, 16);
    if (afast) {
        tall_u16_uniform(src, A->slo, afast, dst, rows->dlo, bs, bfull);
        if (bfull < nbw)
            for (int64_t a0 = 0; a0 < afast; a0 += 16) {
                arow_block(A, a0, 16, soff, &vm, &wm);
                edge_uint16_t(src, soff, vm, wm, 16, a0, dst, rows, bs, bfull, nbv, nbw);
            }
    }
    for (int64_t a0 = afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int nw = prefix_rows(wm);
        int64_t bvec = nw > 0 ? bfull : 0;
        for (int64_t b0 = 0; b0 < bvec; b0 += 8) {
            row_offsets(rows, bs + b0, 8, off, 0);
            if (vm == 0xffffu)
                for (int i = 0; i < 8; i++)
                    r[i] = _mm256_inserti128_si256(
                        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(src + soff[i] + b0))),
                        _mm_loadu_si128((const __m128i*)(src + soff[8 + i] + b0)), 1);
            else
                for (int i = 0; i < 8; i++) {
                    __m128i lo = (vm >> i) & 1u
                        ? _mm_loadu_si128((const __m128i*)(src + soff[i] + b0)) : _mm_setzero_si128();
                    __m128i hi = (vm >> (8 + i)) & 1u
                        ? _mm_loadu_si128((const __m128i*)(src + soff[8 + i] + b0)) : _mm_setzero_si128();
                    r[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
                }
            tr8x8_w16_lanes(r);
            if (nw == 16)
                for (int j = 0; j < 8; j++) _mm256_storeu_si256((__m256i*)(dst + off[j] + a0), r[j]);
            else
                for (int j = 0; j < 8; j++) store_part(dst + off[j] + a0, r[j], 2 * nw);
        }
        edge_uint16_t(src, soff, vm, wm, n, a0, dst, rows, bs, bvec, nbv, nbw);
    }
}

/* 16 rows x 32 columns: lane k of column register j is dst row b0 + 16k + j. */
__attribute__((target("avx2")))
static void wide_u8_uniform(const uint8_t* src, int64_t slo, int64_t na, uint8_t* dst,
                            int64_t dlo, int64_t b0s, int64_t bfull, int nt) {
    __m256i r[16];
    for (int64_t a0 = 0; a0 < na; a0 += 16)
        for (int64_t b0 = 0; b0 < bfull; b0 += 32) {
            const uint8_t* s = src + a0 * slo + b0;
            for (int i = 0; i < 16; i++) r[i] = _mm256_loadu_si256((const __m256i*)(s + i * slo));
            tr16x16_u8_lanes(r);
            uint8_t* d = dst + (b0s + b0) * dlo + a0;
            if (nt && dlo == 16 && ((uintptr_t)d & 63) == 0) {
                for (int j = 0; j < 16; j++)
                    _mm_stream_si128((__m128i*)(d + 16 * j), _mm256_castsi256_si128(r[j]));
                for (int j = 0; j < 16; j++)
                    _mm_stream_si128((__m128i*)(d + 256 + 16 * j), _mm256_extracti128_si256(r[j], 1));
            } else {
                for (int j = 0; j < 16; j++)
                    _mm_storeu_si128((__m128i*)(d + j * dlo), _mm256_castsi256_si128(r[j]));
                for (int j = 0; j < 16; j++)
                    _mm_storeu_si128((__m128i*)(d + (16 + j) * dlo), _mm256_extracti128_si256(r[j], 1));
            }
        }
}

__attribute__((target("avx2")))
static void tile_avx2_u8_wide(const uint8_t* src, const arows_t* A, int64_t na, uint8_t* dst,
                              const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    __m256i r[16];
    int64_t soff[16], off[32];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)31;
    int64_t afast = uniform_rows(A, rows, na, 16);
    if (afast) {
        wide_u8_uniform(src, A->slo, afast, dst, rows->dlo, bs, bfull, nt);
        if (bfull < nbw)
            for (int64_t a0 = 0; a0 < afast; a0 += 16) {
                arow_block(A, a0, 16, soff, &vm, &wm);
                edge_uint8_t(src, soff, vm, wm, 16, a0, dst, rows, bs, bfull, nbv, nbw);
            }
    }
    for (int64_t a0 = afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int nw = prefix_rows(wm);
        int64_t bvec = nw > 0 ? bfull : 0;
        for (int64_t b0 = 0; b0 < bvec; b0 += 32) {
            int adjacent = row_offsets(rows, bs + b0, 32, off, 16);
            if (vm == 0xffffu)
                for (int i = 0; i < 16; i++) r[i] = _mm256_loadu_si256((const __m256i*)(src + soff[i] + b0));
            else
                for (int i = 0; i < 16; i++)
                    r[i] = (vm >> i) & 1u ? _mm256_loadu_si256((const __m256i*)(src + soff[i] + b0))
                                          : _mm256_setzero_si256();
            tr16x16_u8_lanes(r);
            uint8_t* d0 = dst + off[0] + a0;
            if (nt && nw == 16 && adjacent && ((uintptr_t)d0 & 63) == 0) {
                for (int j = 0; j < 16; j++)
                    _mm_stream_si128((__m128i*)(d0 + 16 * j), _mm256_castsi256_si128(r[j]));
                for (int j = 0; j < 16; j++)
                    _mm_stream_si128((__m128i*)(d0 + 256 + 16 * j), _mm256_extracti128_si256(r[j], 1));
            } else {
                for (int j = 0; j < 16; j++)
                    store_part128(dst + off[j] + a0, _mm256_castsi256_si128(r[j]), nw);
                for (int j = 0; j < 16; j++)
                    store_part128(dst + off[16 + j] + a0, _mm256_extracti128_si256(r[j], 1), nw);
            }
        }
        edge_uint8_t(src, soff, vm, wm, n, a0, dst, rows, bs, bvec, nbv, nbw);
    }
}

/* 32 rows x 16 columns: lane k of row register i is tile row 16k + i, so column register j
 * is 32 bytes of dst row b0 + j. */
__attribute__((target("avx2")))
static void tall_u8_uniform(const uint8_t* src, int64_t slo, int64_t na, uint8_t* dst,
                            int64_t dlo, int64_t b0s, int64_t bfull) {
    __m256i r[16];
    for (int64_t a0 = 0; a0 < na; a0 += 32)
        for (int64_t b0 = 0; b0 < bfull; b0 += 16) {
            const uint8_t* s = src + a0 * slo + b0;
            for (int i = 0; i < 16; i++)
                r[i] = _mm256_inserti128_si256(
                    _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(s + i * slo))),
                    _mm_loadu_si128((const __m128i*)(s + (16 + i) * slo)), 1);
            tr16x16_u8_lanes(r);
            uint8_t* d = dst + (b0s + b0) * dlo + a0;
            for (int j = 0; j < 16; j++) _mm256_storeu_si256((__m256i*)(d + j * dlo), r[j]);
        }
}

__attribute__((target("avx2")))
static void tile_avx2_u8_tall(const uint8_t* src, const arows_t* A, int64_t na, uint8_t* dst,
                              const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    __m256i r[16];
    int64_t soff[32], off[16];
    uint32_t vlo, wlo, vhi = 0, whi = 0;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)15;
    int64_t afast = uniform_rows(A, rows, na, 32);
    if (afast) {
        tall_u8_uniform(src, A->slo, afast, dst, rows->dlo, bs, bfull);
        if (bfull < nbw)
            for (int64_t a0 = 0; a0 < afast; a0 += 16) {
                arow_block(A, a0, 16, soff, &vlo, &wlo);
                edge_uint8_t(src, soff, vlo, wlo, 16, a0, dst, rows, bs, bfull, nbv, nbw);
            }
    }
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
            if (vm == 0xffffffffu)
                for (int i = 0; i < 16; i++)
                    r[i] = _mm256_inserti128_si256(
                        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(src + soff[i] + b0))),
                        _mm_loadu_si128((const __m128i*)(src + soff[16 + i] + b0)), 1);
            else
                for (int i = 0; i < 16; i++) {
                    __m128i lo = (vm >> i) & 1u
                        ? _mm_loadu_si128((const __m128i*)(src + soff[i] + b0)) : _mm_setzero_si128();
                    __m128i hi = (vm >> (16 + i)) & 1u
                        ? _mm_loadu_si128((const __m128i*)(src + soff[16 + i] + b0)) : _mm_setzero_si128();
                    r[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
                }
            tr16x16_u8_lanes(r);
            if (nw == 32)
                for (int j = 0; j < 16; j++) _mm256_storeu_si256((__m256i*)(dst + off[j] + a0), r[j]);
            else
                for (int j = 0; j < 16; j++) store_part(dst + off[j] + a0, r[j], nw);
        }
        edge_uint8_t(src, soff, vm, wm, n, a0, dst, rows, bs, bvec, nbv, nbw);
    }
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
        tile_avx2_u8_wide(src, A, na, dst, rows, bs, nbv, nbw, nt);
}

#endif
#endif
