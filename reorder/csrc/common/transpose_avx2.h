/* AVX2 register transposes, shared by the move tiles (move/simd_dispatch.h, tiles_narrow_avx2.h), the block
 * kernel (move/blocks.h) and the conversion tiles (convert/simd_dispatch.h); the AVX-512 ones are in
 * common/transpose_avx512.h. Each takes rows in registers and returns columns in the same array.
 * Compiled for AVX2 only, so they inline into any AVX2 (or wider) caller; callers dispatch
 * at run time. Suffixes follow the intrinsics: ps/epi32 32-bit, epi16 words, epi8 bytes;
 * "_lanes" ones transpose each 128-bit lane on its own (lane k of r[i] is row i of block k).
 *
 *   avx2_tr8x8_ps            8x8 f32, 24 shuffles
 *   avx2_tr4x4_epi64         4x4 64-bit, 8 shuffles
 *   avx2_tr8x8_epi32         the same for integer registers
 *   avx2_tr4x4_epi32_lanes   4x4 32-bit units per lane
 *   avx2_tr16x16_epi16       16x16 words (rows of 16 words), in-lane unpacks + one lane exchange
 *   avx2_tr8x8_epi16_lanes   8x8 words per lane
 *   avx2_tr16x16_epi8        16x16 bytes in eight registers (two rows a register)
 *   avx2_tr16x16_epi8_lanes  16x16 bytes per lane
 *   avx2_store_tr16x16_epi8  avx2_tr16x16_epi8's columns to their rows
 */
#ifndef REORDER_TRANSPOSE_AVX2_H
#define REORDER_TRANSPOSE_AVX2_H
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <stdint.h>

/* Arrays of registers stay in registers only when inlined. */
#define REORDER_TR_AVX2 __attribute__((target("avx2"), always_inline)) static inline

REORDER_TR_AVX2 void avx2_tr4x4_epi64(__m256i r[4]) {
    const __m256i t0 = _mm256_unpacklo_epi64(r[0], r[1]), t1 = _mm256_unpackhi_epi64(r[0], r[1]);
    const __m256i t2 = _mm256_unpacklo_epi64(r[2], r[3]), t3 = _mm256_unpackhi_epi64(r[2], r[3]);
    r[0] = _mm256_permute2x128_si256(t0, t2, 0x20);
    r[1] = _mm256_permute2x128_si256(t1, t3, 0x20);
    r[2] = _mm256_permute2x128_si256(t0, t2, 0x31);
    r[3] = _mm256_permute2x128_si256(t1, t3, 0x31);
}

REORDER_TR_AVX2 void avx2_tr8x8_ps(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g+j], 128-bit half k = column 4k+j of rows 4g..4g+3 */
    for (int g = 0; g < 2; g++) {
        u[4 * g + 0] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm256_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
        r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
}

REORDER_TR_AVX2 void avx2_tr8x8_epi32(__m256i r[8]) {
    __m256 f[8];
    for (int i = 0; i < 8; i++) f[i] = _mm256_castsi256_ps(r[i]);
    avx2_tr8x8_ps(f);
    for (int i = 0; i < 8; i++) r[i] = _mm256_castps_si256(f[i]);
}

REORDER_TR_AVX2 void avx2_tr4x4_epi32_lanes(__m256i x[4]) {
    __m256i t0 = _mm256_unpacklo_epi32(x[0], x[1]), t1 = _mm256_unpackhi_epi32(x[0], x[1]);
    __m256i t2 = _mm256_unpacklo_epi32(x[2], x[3]), t3 = _mm256_unpackhi_epi32(x[2], x[3]);
    x[0] = _mm256_unpacklo_epi64(t0, t2);
    x[1] = _mm256_unpackhi_epi64(t0, t2);
    x[2] = _mm256_unpacklo_epi64(t1, t3);
    x[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* r[i] = row i (16 words); on return r[j] = column j (16 words). */
REORDER_TR_AVX2 void avx2_tr16x16_epi16(__m256i r[16]) {
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

/* Eight registers in and eight temporaries: no spills, unlike the 16x16 word transpose. */
REORDER_TR_AVX2 void avx2_tr8x8_epi16_lanes(__m256i r[8]) {
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

/* The first two levels of a byte transpose of n rows (8 or 16) in each lane: on return
 * r[4g+m] holds columns 4m..4m+3 of rows 4g..4g+3 (t: n temporaries). */
REORDER_TR_AVX2 void avx2_tr_epi8_levels12(__m256i* r, __m256i* t, int n) {
    for (int k = 0; k < n / 2; k++) {       /* columns 0-7 / 8-15 of rows 2k, 2k+1 */
        t[2 * k] = _mm256_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
    }
    for (int g = 0; g < n / 4; g++) {
        r[4 * g + 0] = _mm256_unpacklo_epi16(t[4 * g], t[4 * g + 2]);
        r[4 * g + 1] = _mm256_unpackhi_epi16(t[4 * g], t[4 * g + 2]);
        r[4 * g + 2] = _mm256_unpacklo_epi16(t[4 * g + 1], t[4 * g + 3]);
        r[4 * g + 3] = _mm256_unpackhi_epi16(t[4 * g + 1], t[4 * g + 3]);
    }
}

/* Lane 0 of r[i] is row i, lane 1 row 8 + i (16 bytes each); on return r[q] holds column 2q
 * in lane 0 and column 2q + 1 in lane 1. Three levels of in-lane unpacks leave each lane
 * with two 8-row half columns, and one qword permute a register joins the halves: eight
 * registers in and eight temporaries, where the 16-register byte transpose below needs 32. */
REORDER_TR_AVX2 void avx2_tr16x16_epi8(__m256i r[8]) {
    __m256i t[8];
    avx2_tr_epi8_levels12(r, t, 8);
    for (int m = 0; m < 4; m++) {           /* t[q]: columns 2q, 2q+1 of rows 0..7 (lane 1: 8..15) */
        t[2 * m] = _mm256_unpacklo_epi32(r[m], r[4 + m]);
        t[2 * m + 1] = _mm256_unpackhi_epi32(r[m], r[4 + m]);
    }
    for (int q = 0; q < 8; q++) r[q] = _mm256_permute4x64_epi64(t[q], 0xD8);
}

REORDER_TR_AVX2 void avx2_tr16x16_epi8_lanes(__m256i r[16]) {
    __m256i t[16];
    avx2_tr_epi8_levels12(r, t, 16);
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

/* The columns of avx2_tr16x16_epi8 (r[q]: columns 2q, 2q + 1 in its lanes) to 16-byte rows
 * `step` bytes apart: two rows a 32-byte store when they are adjacent, streamed when `nt`
 * and d is 64-byte aligned (the eight stores are then four whole lines). */
REORDER_TR_AVX2 void avx2_store_tr16x16_epi8(uint8_t* d, int64_t step, const __m256i r[8], int nt) {
    if (step == 16 && nt && ((uintptr_t)d & 63) == 0)
        for (int q = 0; q < 8; q++) _mm256_stream_si256((__m256i*)(d + 32 * q), r[q]);
    else if (step == 16)
        for (int q = 0; q < 8; q++) _mm256_storeu_si256((__m256i*)(d + 32 * q), r[q]);
    else
        for (int q = 0; q < 8; q++) {
            _mm_storeu_si128((__m128i*)(d + 2 * q * step), _mm256_castsi256_si128(r[q]));
            _mm_storeu_si128((__m128i*)(d + (2 * q + 1) * step), _mm256_extracti128_si256(r[q], 1));
        }
}

#endif
#endif
