/* Tiles of 4- and 8-byte elements (f32, s32, f64 moves): AVX-512 16x16 and 8x8 register
 * transposes, and AVX2 8x8 and 4x4 ones for CPUs without AVX-512, following the tile contract
 * of tile_rows.h. */
#ifndef REORDER_MOVE_TILES_WIDE_H
#define REORDER_MOVE_TILES_WIDE_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"
#include "move/tile_rows.h"

#if REORDER_X86
/* ---- AVX-512 tiles, with the 16x16 register transpose of common/transpose_avx512.h ------------ */
/* The uniform rows of tile_avx512_u32 (below): pointer strides alone. `nt`: every store is
 * a whole aligned line, streamed; each kind of store has its own loop, as a branch inside
 * the loop cost the cached one its gain. */
#define UNIFORM_U32_512_TILE(STORE)                                                         \
    {                                                                                       \
        const int64_t a0 = UNIFORM_BLOCK(k, 16, afast, tail);                               \
        const uint32_t* s = src + a0 * slo + b0;                                            \
        for (int i = 0; i < 16; i++) t[i] = _mm512_loadu_ps(s + i * slo);                   \
        tr16x16(t);                                                                         \
        uint32_t* d = dst + (bs + b0) * dlo + a0;                                           \
        for (int j = 0; j < 16; j++) STORE((float*)(d + j * dlo), t[j]);                    \
    }
#define UNIFORM_U32_512_LOOP(STORE)                                                         \
    for (int64_t k = 0; k < afast; k += 16)                                                 \
        for (int64_t b0 = 0; b0 < bfull; b0 += 16) UNIFORM_U32_512_TILE(STORE)
#define UNIFORM_U32_512_COLS_FIRST(STORE)                                                   \
    for (int64_t b0 = 0; b0 < bfull; b0 += 16)                                              \
        for (int64_t k = 0; k < afast; k += 16) UNIFORM_U32_512_TILE(STORE)
__attribute__((target("avx512f"))) REORDER_ROW_LOOP
static void uniform_u32_512(const uint32_t* src, int64_t slo, int64_t afast, int64_t tail,
                            uint32_t* dst, int64_t dlo, int64_t bs, int64_t bfull, int nt,
                            int cols_first) {
    __m512 t[16];
    if (nt && cols_first) {
        UNIFORM_U32_512_COLS_FIRST(_mm512_stream_ps)
    } else if (nt) {
        UNIFORM_U32_512_LOOP(_mm512_stream_ps)
    } else if (cols_first) {
        UNIFORM_U32_512_COLS_FIRST(_mm512_storeu_ps)
    } else {
        UNIFORM_U32_512_LOOP(_mm512_storeu_ps)
    }
}
#undef UNIFORM_U32_512_COLS_FIRST
#undef UNIFORM_U32_512_TILE
#undef UNIFORM_U32_512_LOOP

/* A blocks of 16 rows are outermost (each streams through B with 16 read streams). With
 * cached stores, the uniform rows (uniform_rows: one level, all data) and full B blocks run
 * with pointer strides alone, no offset tables or masks: a third less time a tile on
 * nChw16c -> nchw in the L3 (docs/kernels.md). Elsewhere full B blocks run straight-line:
 * the 16 dst row offsets cost one division, rows without data load as zero vectors
 * (padding), rows not written are masked off. Ragged B edges use masked loads. */
__attribute__((target("avx512f")))
static void tile_avx512_u32(const uint32_t* src, const arows_t* A, int64_t na, uint32_t* dst,
                            const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    __m512 r[16];
    int64_t soff[16], off[16];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)15;
    int dst_aligned = ((uintptr_t)dst & 63) == 0;
    /* streamed only where every store of the uniform rows is a whole aligned line */
    int64_t tail = -1;
    int uniform_nt = nt && dst_aligned && (rows->dlo & 15) == 0;
    int64_t afast = bfull && nt == uniform_nt
        ? uniform_rows_tail(A, rows, na, 16, bfull == nbw, nt, &tail) : 0;
    if (afast) uniform_u32_512(src, A->slo, afast, tail, dst, rows->dlo, bs, bfull, nt,
                               cols_first_on(rows, nt));
    /* the rows the uniform loop took need only their ragged columns, if any */
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        __mmask16 wmask = (__mmask16)wm;
        int allw = wm == 0xFFFFu;
        for (int64_t b0 = a0 < afast ? bfull : 0; b0 < bfull; b0 += 16) {
            int stream = nt && dst_aligned && allw;
            if (rows->nlo == 0) {
                for (int j = 0; j < 16; j++) off[j] = (bs + b0 + j) * rows->dlo;
                stream &= (rows->dlo & 15) == 0;
            } else {
                int64_t q = (bs + b0) / rows->nlo, m = (bs + b0) % rows->nlo;
                for (int j = 0; j < 16; j++) {
                    off[j] = q * rows->dhi + m * rows->dlo;
                    stream &= (off[j] & 15) == 0;
                    if (++m == rows->nlo) { m = 0; q++; }
                }
            }
            for (int i = 0; i < 16; i++)
                r[i] = (vm >> i) & 1u ? _mm512_loadu_ps(src + soff[i] + b0) : _mm512_setzero_ps();
            tr16x16(r);
            if (stream)
                for (int j = 0; j < 16; j++) _mm512_stream_ps((float*)(dst + off[j] + a0), r[j]);
            else if (allw)
                for (int j = 0; j < 16; j++) _mm512_storeu_ps((float*)(dst + off[j] + a0), r[j]);
            else
                for (int j = 0; j < 16; j++)
                    _mm512_mask_storeu_ps((float*)(dst + off[j] + a0), wmask, r[j]);
        }
        for (int64_t b0 = bfull; b0 < nbw; b0 += 16) {
            int64_t nb = nbw - b0 < 16 ? nbw - b0 : 16;
            int64_t nbd = nbv - b0 < 0 ? 0 : (nbv - b0 < nb ? nbv - b0 : nb);
            __mmask16 lmask = (__mmask16)((1u << nbd) - 1u);
            for (int i = 0; i < 16; i++)
                r[i] = (vm >> i) & 1u ? _mm512_maskz_loadu_ps(lmask, src + soff[i] + b0)
                                      : _mm512_setzero_ps();
            tr16x16(r);
            for (int64_t j = 0; j < nb; j++)
                _mm512_mask_storeu_ps((float*)(dst + row_off(rows, bs + b0 + j) + a0), wmask, r[j]);
        }
    }
}

/* The uniform rows of tile_avx512_u64 (below). */
__attribute__((target("avx512f"))) REORDER_ROW_LOOP
static void uniform_u64_512(const uint64_t* src, int64_t slo, int64_t afast, int64_t tail,
                            uint64_t* dst, int64_t dlo, int64_t bs, int64_t bfull) {
    __m512i r[8];
    for (int64_t k = 0; k < afast; k += 8)
        for (int64_t b0 = 0; b0 < bfull; b0 += 8) {
            const int64_t a0 = UNIFORM_BLOCK(k, 8, afast, tail);
            const uint64_t* s = src + a0 * slo + b0;
            for (int i = 0; i < 8; i++) r[i] = _mm512_loadu_si512(s + i * slo);
            tr8x8_q(r);
            uint64_t* d = dst + (bs + b0) * dlo + a0;
            for (int j = 0; j < 8; j++) _mm512_storeu_si512(d + j * dlo, r[j]);
        }
}

/* 64-bit elements: the same walk over 8 x 8 tiles of qwords (tr8x8_q), each dst row piece
 * one 64-byte line, streamed as the 32-bit tiles stream theirs (AVX2: tile_avx2_u64). */
__attribute__((target("avx512f")))
static void tile_avx512_u64(const uint64_t* src, const arows_t* A, int64_t na, uint64_t* dst,
                            const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    __m512i r[8];
    int64_t soff[8], off[8];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)7;
    int dst_aligned = ((uintptr_t)dst & 63) == 0;
    int64_t tail = -1;
    int64_t afast = bfull && !nt ? uniform_rows_tail(A, rows, na, 8, bfull == nbw, 0, &tail) : 0;
    if (afast) uniform_u64_512(src, A->slo, afast, tail, dst, rows->dlo, bs, bfull);
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 8) {
        int n = na - a0 < 8 ? (int)(na - a0) : 8;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        __mmask8 wmask = (__mmask8)wm;
        int allw = wm == 0xFFu;
        for (int64_t b0 = a0 < afast ? bfull : 0; b0 < bfull; b0 += 8) {
            int stream = nt && dst_aligned && allw;
            row_offsets(rows, bs + b0, 8, off, -1);
            for (int j = 0; j < 8; j++) stream &= (off[j] & 7) == 0;
            for (int i = 0; i < 8; i++)
                r[i] = (vm >> i) & 1u ? _mm512_loadu_si512(src + soff[i] + b0)
                                      : _mm512_setzero_si512();
            tr8x8_q(r);
            if (stream)
                for (int j = 0; j < 8; j++) _mm512_stream_si512((__m512i*)(dst + off[j] + a0), r[j]);
            else if (allw)
                for (int j = 0; j < 8; j++) _mm512_storeu_si512(dst + off[j] + a0, r[j]);
            else
                for (int j = 0; j < 8; j++) _mm512_mask_storeu_epi64(dst + off[j] + a0, wmask, r[j]);
        }
        for (int64_t b0 = bfull; b0 < nbw; b0 += 8) {
            int64_t nb = nbw - b0 < 8 ? nbw - b0 : 8;
            int64_t nbd = nbv - b0 < 0 ? 0 : (nbv - b0 < nb ? nbv - b0 : nb);
            __mmask8 lmask = (__mmask8)((1u << nbd) - 1u);
            for (int i = 0; i < 8; i++)
                r[i] = (vm >> i) & 1u ? _mm512_maskz_loadu_epi64(lmask, src + soff[i] + b0)
                                      : _mm512_setzero_si512();
            tr8x8_q(r);
            for (int64_t j = 0; j < nb; j++)
                _mm512_mask_storeu_epi64(dst + row_off(rows, bs + b0 + j) + a0, wmask, r[j]);
        }
    }
}

/* ---- AVX2: 8x8 f32 register transposes, the SIMD path for CPUs without AVX-512 ---------
 * Stores are always cached: a 32-byte streaming store fills only half a line (docs/kernels.md). */
__attribute__((target("avx2")))
static void tile_avx2_u32(const uint32_t* src, const arows_t* A, int64_t na, uint32_t* dst,
                          const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    __m256 r[8];
    int64_t soff[8], off[8];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)7;
    int64_t tail;
    int64_t afast = uniform_rows_tail(A, rows, na, 8, bfull == nbw, 0, &tail);
    const int64_t slo = A->slo, dlo = rows->dlo;    /* locals: stores may alias the structs */
    /* A short A (nchw -> nChw16c: c16) is walked inside each column block, so every dst
     * line is finished while it is in L1; a long A outside, so src lines are. */
    int64_t a_in = afast <= 32 ? afast : 8;
    for (int64_t a1 = 0; a1 < afast; a1 += a_in)
        for (int64_t b0 = 0; b0 < bfull; b0 += 8)
            for (int64_t k = a1; k < a1 + a_in && k < afast; k += 8) {
                const int64_t a0 = UNIFORM_BLOCK(k, 8, afast, tail);
                const uint32_t* s = src + a0 * slo + b0;
                for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps((const float*)(s + i * slo));
                avx2_tr8x8_ps(r);
                uint32_t* d = dst + (bs + b0) * dlo + a0;
                for (int j = 0; j < 8; j++) _mm256_storeu_ps((float*)(d + j * dlo), r[j]);
            }
    /* the rows the uniform loop took need only their edge columns, if any */
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 8) {
        int n = na - a0 < 8 ? (int)(na - a0) : 8;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int64_t bvec = wm == 0xFFu ? bfull : 0;     /* partial row blocks go element-wise */
        for (int64_t b0 = a0 < afast ? bvec : 0; b0 < bvec; b0 += 8) {
            row_offsets(rows, bs + b0, 8, off, 0);
            for (int i = 0; i < 8; i++)
                r[i] = (vm >> i) & 1u ? _mm256_loadu_ps((const float*)(src + soff[i] + b0))
                                      : _mm256_setzero_ps();
            avx2_tr8x8_ps(r);
            for (int j = 0; j < 8; j++) _mm256_storeu_ps((float*)(dst + off[j] + a0), r[j]);
        }
        REORDER_EDGE_COLUMNS(uint32_t, bvec);
    }
}

/* 64-bit elements: 8 A rows x 4 B columns a step, two 4x4 transposes, so each dst row piece
 * is one 64-byte line in two stores; otherwise the same walk as the 32-bit tile. */
__attribute__((target("avx2")))
static void tile_avx2_u64(const uint64_t* src, const arows_t* A, int64_t na, uint64_t* dst,
                          const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    __m256i r[8];
    int64_t soff[8], off[4];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)3;
    int64_t tail;
    int64_t afast = uniform_rows_tail(A, rows, na, 8, bfull == nbw, 0, &tail);
    const int64_t slo = A->slo, dlo = rows->dlo;    /* locals: stores may alias the structs */
    int64_t a_in = afast <= 32 ? afast : 8;
    for (int64_t a1 = 0; a1 < afast; a1 += a_in)
        for (int64_t b0 = 0; b0 < bfull; b0 += 4)
            for (int64_t k = a1; k < a1 + a_in && k < afast; k += 8) {
                const int64_t a0 = UNIFORM_BLOCK(k, 8, afast, tail);
                const uint64_t* s = src + a0 * slo + b0;
                for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_si256((const __m256i*)(s + i * slo));
                avx2_tr4x4_epi64(r);
                avx2_tr4x4_epi64(r + 4);
                uint64_t* d = dst + (bs + b0) * dlo + a0;
                for (int j = 0; j < 4; j++) {
                    _mm256_storeu_si256((__m256i*)(d + j * dlo), r[j]);
                    _mm256_storeu_si256((__m256i*)(d + j * dlo + 4), r[4 + j]);
                }
            }
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 8) {
        int n = na - a0 < 8 ? (int)(na - a0) : 8;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int64_t bvec = wm == 0xFFu ? bfull : 0;     /* partial row blocks go element-wise */
        for (int64_t b0 = a0 < afast ? bvec : 0; b0 < bvec; b0 += 4) {
            row_offsets(rows, bs + b0, 4, off, 0);
            for (int i = 0; i < 8; i++)
                r[i] = (vm >> i) & 1u ? _mm256_loadu_si256((const __m256i*)(src + soff[i] + b0))
                                      : _mm256_setzero_si256();
            avx2_tr4x4_epi64(r);
            avx2_tr4x4_epi64(r + 4);
            for (int j = 0; j < 4; j++) {
                _mm256_storeu_si256((__m256i*)(dst + off[j] + a0), r[j]);
                _mm256_storeu_si256((__m256i*)(dst + off[j] + a0 + 4), r[4 + j]);
            }
        }
        REORDER_EDGE_COLUMNS(uint64_t, bvec);
    }
}
#endif

#endif
