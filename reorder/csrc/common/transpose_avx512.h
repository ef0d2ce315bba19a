/* AVX-512 16x16 register transposes, shared by the move tiles (move/simd_dispatch.h) and the conversion
 * tiles (convert/simd_dispatch.h); the AVX2 ones are in common/transpose_avx2.h. Compiled for the least
 * AVX-512 subset each needs, so they inline into any AVX-512 caller; callers dispatch at
 * run time.
 *   tr16x16      f32 (or any 32-bit) elements, 16 registers, in 64 shuffles;
 *   tr16x16_w16  16-bit elements, two rows per register, in 24 two-source word permutes;
 *   tr8x8_q      64-bit elements, 8 registers, in 24 shuffles. */
#ifndef REORDER_TRANSPOSE_AVX512_H
#define REORDER_TRANSPOSE_AVX512_H
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <stdint.h>

/* The move kernels call tr16x16 from many sites (the tiles, the block kernel's stages): past
 * some count gcc keeps one copy out of line, whose 16 registers then pass through memory
 * (22% of a 7x7 block's time). Their module asks for it inline everywhere. */
#ifdef REORDER_TR16_ALWAYS_INLINE
#define REORDER_TR16_INLINE inline __attribute__((always_inline))
#else
#define REORDER_TR16_INLINE inline
#endif

__attribute__((target("avx512f")))
static REORDER_TR16_INLINE void tr16x16(__m512 r[16]) {
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

/* 64-bit elements: row i in r[i] on entry, column i on return. */
__attribute__((target("avx512f")))
static inline void tr8x8_q(__m512i r[8]) {
    __m512i t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_epi64(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi64(r[2 * i], r[2 * i + 1]);
    }
    /* u[4h+j], 128-bit lane k: columns of rows 4h..4h+3 (j 0: 0 and 4, 1: 2 and 6, 2: 1 and
       5, 3: 3 and 7) */
    for (int h = 0; h < 2; h++) {
        u[4 * h + 0] = _mm512_shuffle_i64x2(t[4 * h], t[4 * h + 2], 0x88);
        u[4 * h + 1] = _mm512_shuffle_i64x2(t[4 * h], t[4 * h + 2], 0xDD);
        u[4 * h + 2] = _mm512_shuffle_i64x2(t[4 * h + 1], t[4 * h + 3], 0x88);
        u[4 * h + 3] = _mm512_shuffle_i64x2(t[4 * h + 1], t[4 * h + 3], 0xDD);
    }
    static const int col[4] = {0, 2, 1, 3};
    for (int j = 0; j < 4; j++) {
        r[col[j]] = _mm512_shuffle_i64x2(u[j], u[4 + j], 0x88);
        r[col[j] + 4] = _mm512_shuffle_i64x2(u[j], u[4 + j], 0xDD);
    }
}

/* 16-bit elements: r[k] holds row 2k in words 0..15 and row 2k+1 in words 16..31; on return
 * r[j] holds column 2j in words 0..15 and column 2j+1 in words 16..31 (word = 16*(c&1) + row).
 * Element (row, col) starts in register row>>1 at word bits (r0 c3 c2 c1 c0). Each of three
 * levels of vpermt2w exchanges one register bit with one word bit: r1<->c1, r2<->c2, r3<->c3;
 * the last also swaps word bits 4 and 0 to reach (c0 r3 r2 r1 r0). Output t of a level (the
 * pair's member with the exchanged register bit = t) takes word q from the member whose bit
 * is q's bit p, at q with bit p set to t: index (q & ~(1<<p)) | t<<p | ((q>>p)&1)<<5. */
#define TR16_IX(q, p, t) ((((q) & ~(1 << (p))) | ((t) << (p))) | ((((q) >> (p)) & 1) << 5))
#define TR16_SWAP40(q) (((q) & 14) | (((q) & 1) << 4) | (((q) >> 4) & 1))
#define TR16_L3(q, p, t) TR16_IX(TR16_SWAP40(q), p, t)
#define TR16_ROW(F, p, t)                                                                        \
    { F(0, p, t), F(1, p, t), F(2, p, t), F(3, p, t), F(4, p, t), F(5, p, t), F(6, p, t),        \
      F(7, p, t), F(8, p, t), F(9, p, t), F(10, p, t), F(11, p, t), F(12, p, t), F(13, p, t),    \
      F(14, p, t), F(15, p, t), F(16, p, t), F(17, p, t), F(18, p, t), F(19, p, t),              \
      F(20, p, t), F(21, p, t), F(22, p, t), F(23, p, t), F(24, p, t), F(25, p, t),              \
      F(26, p, t), F(27, p, t), F(28, p, t), F(29, p, t), F(30, p, t), F(31, p, t) }
static const uint16_t tr16_w16_ix[6][32] __attribute__((aligned(64))) = {
    TR16_ROW(TR16_IX, 1, 0), TR16_ROW(TR16_IX, 1, 1),
    TR16_ROW(TR16_IX, 2, 0), TR16_ROW(TR16_IX, 2, 1),
    TR16_ROW(TR16_L3, 3, 0), TR16_ROW(TR16_L3, 3, 1) };

__attribute__((target("avx512f,avx512bw")))
static inline void tr16x16_w16(__m512i r[8]) {
    for (int lv = 0; lv < 3; lv++) {
        const __m512i i0 = _mm512_load_si512(tr16_w16_ix[2 * lv]);
        const __m512i i1 = _mm512_load_si512(tr16_w16_ix[2 * lv + 1]);
        const int j = 1 << lv;                          /* the register bit exchanged */
        for (int a = 0; a < 8; a++) {
            if (a & j) continue;
            __m512i x = r[a], y = r[a | j];
            r[a] = _mm512_permutex2var_epi16(x, i0, y);
            r[a | j] = _mm512_permutex2var_epi16(x, i1, y);
        }
    }
}

#endif
#endif
