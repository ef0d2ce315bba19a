/* The 16x16 f32 register transpose of the move tiles (_simd.h) and the conversion tiles
 * (_convert_simd.h): r[a][b] -> r[b][a] in 64 shuffles. Compiled for AVX-512F only, so it
 * inlines into any AVX-512 caller; callers dispatch at run time. */
#ifndef REORDER_TRANSPOSE16_H
#define REORDER_TRANSPOSE16_H
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

__attribute__((target("avx512f")))
static inline void tr16x16(__m512 r[16]) {
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    /* u[4g+j], 128-bit lane k = column 4k+j of rows 4g..4g+3 */
    for (int g = 0; g < 4; g++) {
        u[4 * g + 0] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0x44);
        u[4 * g + 1] = _mm512_shuffle_ps(t[4 * g], t[4 * g + 2], 0xEE);
        u[4 * g + 2] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0x44);
        u[4 * g + 3] = _mm512_shuffle_ps(t[4 * g + 1], t[4 * g + 3], 0xEE);
    }
    /* 4x4 transpose of 128-bit lanes across u[j], u[4+j], u[8+j], u[12+j] */
    for (int j = 0; j < 4; j++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);
        __m512 v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
        __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
        __m512 v3 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
        r[j] = _mm512_shuffle_f32x4(v0, v2, 0x88);
        r[4 + j] = _mm512_shuffle_f32x4(v1, v3, 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
        r[12 + j] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
    }
}

#endif
#endif
