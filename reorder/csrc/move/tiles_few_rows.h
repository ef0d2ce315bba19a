/* Tiles of a padded block with few data rows: 1- and 2-byte elements whose A is one block of
 * 16, 32 or 64 bytes per dst row (nChw16c, nChw32c, ...) of which only the first nv rows hold
 * data, nv * size <= 8 (nchw C=3 -> nChw16c: 3 of 16 channels). They follow the tile
 * contract of tile_rows.h.
 *
 * The transpose tiles move all 16 rows through their shuffles, zeros included. Here each
 * pixel's nv data elements are gathered into one 4- or 8-byte word instead (the source rows
 * zero-extended and shifted into place, an OR each), and one permute a register drops those
 * words into their dst rows with zeros around them, so a 64-byte store costs one permute
 * whatever the block size:
 *
 *   words of 4 bytes (nv * size <= 4): 16 pixels a step on AVX-512, 8 on AVX2;
 *   words of 8 bytes (nv * size <= 8):  8 pixels a step on AVX-512, 4 on AVX2.
 *
 * The dst rows must be adjacent (a pixel's block follows the last one's) and all written;
 * ragged and padding columns go through a zeroed stage and the same step. Streaming stores
 * (AVX-512 only) where a store is a whole, aligned 64-byte line.
 */
#ifndef REORDER_MOVE_TILES_FEW_ROWS_H
#define REORDER_MOVE_TILES_FEW_ROWS_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/tile_rows.h"

#if REORDER_X86

/* Data rows of a tile the few-rows path takes, else 0. */
static inline int few_rows(const arows_t* A, int64_t na, const rows_t* rows, int size) {
    int64_t slot = na * size, nv = A->nv_lo < A->nw_lo ? A->nv_lo : A->nw_lo;
    if (A->nlo != 0 || A->nw_hi <= 0 || A->nv_hi <= 0 || A->nw_lo < na) return 0;
    if ((slot != 16 && slot != 32 && slot != 64) || rows->nlo != 0 || rows->dlo != na) return 0;
    return nv >= 1 && nv * size <= 8 ? (int)nv : 0;
}

/* The permutes of one step: the 32-bit lanes of dst chunk q (vb bytes a register) take
 * lane idx[q][j] of the gathered words where mask bit j is set, else zero. */
static inline int few_layout(int size, int nv, int64_t na, int vb, int32_t (*idx)[16],
                             uint16_t* mask) {
    int w = nv * size <= 4 ? 4 : 8, slot = (int)(na * size), nout = slot / w;
    for (int q = 0; q < nout; q++) {
        mask[q] = 0;
        for (int j = 0; j < vb / 4; j++) {
            int pos = q * vb + 4 * j, pixel = pos / slot, off = pos % slot;
            idx[q][j] = off < w ? pixel * (w / 4) + off / 4 : 0;
            if (off < w) mask[q] |= (uint16_t)(1u << j);
        }
    }
    return nout;
}

/* The columns b0 .. b0+nb-1 of a ragged step (nd of them data): each row's data copied into
 * a zeroed stage row, sr[i] pointing at it, and the number of dst bytes the step writes. */
static inline int64_t few_stage(const char* const* r, int nv, int size, int64_t b0, int64_t px,
                                int64_t nbv, int64_t nbw, int64_t slot, char (*stage)[64],
                                const char** sr) {
    int64_t nb = nbw - b0 < px ? nbw - b0 : px, nd = nbv - b0 < 0 ? 0 : nbv - b0;
    nd = nd < nb ? nd : nb;
    for (int i = 0; i < nv; i++) {
        memset(stage[i], 0, 64);
        memcpy(stage[i], r[i] + b0 * size, (size_t)(nd * size));
        sr[i] = stage[i];
    }
    return nb * slot;
}

/* ---- AVX-512 F+BW ---------------------------------------------------------------------- */
#define FEW512_TARGET __attribute__((target("avx512f,avx512bw")))

FEW512_TARGET __attribute__((always_inline))
static inline __m512i few_widen512(const char* p, int size, int w) {
    if (w == 4)
        return size == 1 ? _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)p))
                         : _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)p));
    return size == 1 ? _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i*)p))
                     : _mm512_cvtepu16_epi64(_mm_loadu_si128((const __m128i*)p));
}

/* One step: the words of `64 / w` pixels from rows r[i] + off, out as `nout` 64-byte stores. */
FEW512_TARGET __attribute__((always_inline))
static inline void few_step512(const char* const* r, int64_t off, int nv, int size, int w,
                               const __m512i* idx, const __mmask16* mask, int nout, char* d,
                               int nt) {
    __m512i v = few_widen512(r[0] + off, size, w);
    for (int i = 1; i < nv; i++) {
        __m512i x = few_widen512(r[i] + off, size, w);
        v = _mm512_or_si512(v, w == 4 ? _mm512_slli_epi32(x, (unsigned)(8 * size * i))
                                      : _mm512_slli_epi64(x, (unsigned)(8 * size * i)));
    }
    for (int q = 0; q < nout; q++) {
        __m512i o = _mm512_maskz_permutexvar_epi32(mask[q], idx[q], v);
        if (nt) _mm512_stream_si512((__m512i*)(d + 64 * q), o);
        else _mm512_storeu_si512(d + 64 * q, o);
    }
}

FEW512_TARGET __attribute__((always_inline))
static inline void few_run512(const char* src, const arows_t* A, int64_t na, char* dst,
                              int64_t bs, int64_t nbv, int64_t nbw, int nt, int size, int nv,
                              int w) {
    int32_t li[16][16];
    uint16_t lm[16];
    __m512i idx[16];
    __mmask16 mask[16];
    int nout = few_layout(size, nv, na, 64, li, lm);
    for (int q = 0; q < nout; q++) {
        idx[q] = _mm512_loadu_si512(li[q]);
        mask[q] = (__mmask16)lm[q];
    }
    const char* r[8] = {0};
    for (int i = 0; i < nv; i++) r[i] = src + i * A->slo * size;
    int64_t px = 64 / w, slot = na * size, bfull = (nbv < nbw ? nbv : nbw) / px * px;
    char* d = dst + bs * slot;
    int stream = nt && ((uintptr_t)d & 63) == 0;
    for (int64_t b0 = 0; b0 < bfull; b0 += px)
        few_step512(r, b0 * size, nv, size, w, idx, mask, nout, d + b0 * slot, stream);
    for (int64_t b0 = bfull; b0 < nbw; b0 += px) {
        char stage[8][64], out[16 * 64];
        const char* sr[8] = {0};
        int64_t n = few_stage(r, nv, size, b0, px, nbv, nbw, slot, stage, sr);
        few_step512(sr, 0, nv, size, w, idx, mask, nout, out, 0);
        memcpy(d + b0 * slot, out, (size_t)n);
    }
}

/* nv: the data rows few_rows found */
FEW512_TARGET
static void tile_few512(const char* src, const arows_t* A, int64_t na, char* dst, int64_t bs,
                        int64_t nbv, int64_t nbw, int nt, int size, int nv) {
    if (size == 1 && nv <= 4) few_run512(src, A, na, dst, bs, nbv, nbw, nt, 1, nv, 4);
    else if (size == 1) few_run512(src, A, na, dst, bs, nbv, nbw, nt, 1, nv, 8);
    else if (nv <= 2) few_run512(src, A, na, dst, bs, nbv, nbw, nt, 2, nv, 4);
    else few_run512(src, A, na, dst, bs, nbv, nbw, nt, 2, nv, 8);
}

/* ---- AVX2: the same steps at half the width, cached stores ------------------------------ */
#define FEW2_TARGET __attribute__((target("avx2")))

FEW2_TARGET __attribute__((always_inline))
static inline __m256i few_widen2(const char* p, int size, int w) {
    if (w == 4)
        return size == 1 ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p))
                         : _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    int32_t lo;
    memcpy(&lo, p, 4);
    return size == 1 ? _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(lo))
                     : _mm256_cvtepu16_epi64(_mm_loadl_epi64((const __m128i*)p));
}

FEW2_TARGET __attribute__((always_inline))
static inline void few_step2(const char* const* r, int64_t off, int nv, int size, int w,
                             const __m256i* idx, const __m256i* keep, int nout, char* d) {
    __m256i v = few_widen2(r[0] + off, size, w);
    for (int i = 1; i < nv; i++) {
        __m256i x = few_widen2(r[i] + off, size, w);
        v = _mm256_or_si256(v, w == 4 ? _mm256_slli_epi32(x, 8 * size * i)
                                      : _mm256_slli_epi64(x, 8 * size * i));
    }
    for (int q = 0; q < nout; q++)
        _mm256_storeu_si256((__m256i*)(d + 32 * q),
                            _mm256_and_si256(_mm256_permutevar8x32_epi32(v, idx[q]), keep[q]));
}

FEW2_TARGET __attribute__((always_inline))
static inline void few_run2(const char* src, const arows_t* A, int64_t na, char* dst,
                            int64_t bs, int64_t nbv, int64_t nbw, int size, int nv, int w) {
    int32_t li[16][16];
    uint16_t lm[16];
    __m256i idx[16], keep[16];
    int nout = few_layout(size, nv, na, 32, li, lm);
    for (int q = 0; q < nout; q++) {
        int32_t k[8];
        for (int j = 0; j < 8; j++) k[j] = (lm[q] >> j) & 1u ? -1 : 0;
        idx[q] = _mm256_loadu_si256((const __m256i*)li[q]);
        keep[q] = _mm256_loadu_si256((const __m256i*)k);
    }
    const char* r[8] = {0};
    for (int i = 0; i < nv; i++) r[i] = src + i * A->slo * size;
    int64_t px = 32 / w, slot = na * size, bfull = (nbv < nbw ? nbv : nbw) / px * px;
    char* d = dst + bs * slot;
    for (int64_t b0 = 0; b0 < bfull; b0 += px)
        few_step2(r, b0 * size, nv, size, w, idx, keep, nout, d + b0 * slot);
    for (int64_t b0 = bfull; b0 < nbw; b0 += px) {
        char stage[8][64], out[16 * 32];
        const char* sr[8] = {0};
        int64_t n = few_stage(r, nv, size, b0, px, nbv, nbw, slot, stage, sr);
        few_step2(sr, 0, nv, size, w, idx, keep, nout, out);
        memcpy(d + b0 * slot, out, (size_t)n);
    }
}

FEW2_TARGET
static void tile_few2(const char* src, const arows_t* A, int64_t na, char* dst, int64_t bs,
                      int64_t nbv, int64_t nbw, int size, int nv) {
    if (size == 1 && nv <= 4) few_run2(src, A, na, dst, bs, nbv, nbw, 1, nv, 4);
    else if (size == 1) few_run2(src, A, na, dst, bs, nbv, nbw, 1, nv, 8);
    else if (nv <= 2) few_run2(src, A, na, dst, bs, nbv, nbw, 2, nv, 4);
    else few_run2(src, A, na, dst, bs, nbv, nbw, 2, nv, 8);
}

#endif
#endif
